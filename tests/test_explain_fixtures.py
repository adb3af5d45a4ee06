"""Every real error output in tests/fixtures/explain is explained with the right top cause."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from torchdoctor.catalog import get
from torchdoctor.explain.match import diagnose
from torchdoctor.explain.parse import parse_text

EXPLAIN_FIXTURES = FIXTURES / "explain"
CASES = sorted(EXPLAIN_FIXTURES.glob("*/*.txt"))


def read_fixture(path):
    """(headers, raw text): `#| key: value` lines at the top, then the output as printed."""
    headers: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    body_start = 0
    for body_start, line in enumerate(lines):
        if not line.startswith("#| "):
            break
        key, _, value = line[3:].partition(":")
        headers[key.strip()] = value.strip()
    else:
        body_start = len(lines)
    return headers, "".join(lines[body_start:])


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_top_cause(path):
    headers, text = read_fixture(path)
    expected = headers.get("expect", path.parent.name)
    assert "source" in headers, "every fixture says where its text comes from"
    explanation = diagnose(parse_text(text), "en", link=False)
    names = [d.pitfall.name for d in explanation.diagnoses]
    if expected == "none":  # real errors that are none of ours: no guess dressed as an answer
        assert names == [], f"ranked: {names}"
        return
    assert get(expected) is not None, f"unknown catalog name {expected!r}"
    assert names and names[0] == expected, f"ranked: {names}"


# (`none`: errors that are none of ours, answered with nothing, as `_unrecognised`)
RECOGNISED = [p for p in CASES if p.parent.name not in ("_unrecognised", "none")]


@pytest.mark.parametrize("path", RECOGNISED[::7], ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_chinese_explanation(path):
    _, text = read_fixture(path)
    explanation = diagnose(parse_text(text), "zh", link=False)
    top = explanation.diagnoses[0]
    assert any("\u4e00" <= ch <= "\u9fff" for ch in top.cause + top.fix)


# The link to the user's code: error outputs next to the files that produced them ------------

LINKS = sorted(p for p in (FIXTURES / "explain_links").iterdir() if p.is_dir())


@pytest.mark.parametrize("case", LINKS, ids=lambda p: p.name)
def test_links_the_error_to_its_root_line(case):
    headers, text = read_fixture(case / "error.txt")
    explanation = diagnose(parse_text(text.replace("{DIR}", str(case))), "en", link=True)
    top = explanation.diagnoses[0]
    assert top.pitfall.name == headers["expect"], [d.pitfall.name for d in explanation.diagnoses]
    root_file, root_line = headers["root"].split(":")
    assert top.location.path == str(case / root_file)
    assert top.location.line == int(root_line)
    assert top.location.source  # the user's line, shown
