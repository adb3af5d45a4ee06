"""Every catalog entry is complete and consistent: identity, both languages, sections, examples."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from conftest import FIXTURES
from torchdoctor.catalog import all_pitfalls
from torchdoctor.catalog._model import (
    CODE_PATTERN,
    CODE_SECTIONS,
    LANGS,
    NAME_PATTERN,
    REQUIRED_SECTIONS,
    SECTIONS,
    Pitfall,
    pick,
    split_sections,
)
from torchdoctor.lint.checker import check_source

PITFALLS = all_pitfalls()
# The hundreds of a code say its area; the area is the entry's directory.
AREA_HUNDREDS = {
    "device": 0,
    "autograd": 1,
    "training": 2,
    "data": 3,
    "tensor": 4,
    "serialization": 5,
    "distributed": 6,
    "tooling": 7,
    "deprecated": 8,
    "experimental": 9,
}
# Entries that still write their Example / Use instead: code in each language's prose, until the
# change that reworks them (engine-made findings) writes it once.
CODE_IN_PROSE = {"TD700", "TD701"}


def ids(pitfall):
    return pitfall.name


def test_catalog_is_not_empty():
    assert len(PITFALLS) >= 3


def test_codes_and_names_are_unique():
    codes = Counter(p.code for p in PITFALLS)
    names = Counter(p.name for p in PITFALLS)
    assert [c for c, n in codes.items() if n > 1] == []
    assert [c for c, n in names.items() if n > 1] == []


@pytest.mark.parametrize("pitfall", PITFALLS, ids=ids)
def test_identity(pitfall):
    assert CODE_PATTERN.match(pitfall.code), pitfall.code
    assert NAME_PATTERN.match(pitfall.name), pitfall.name
    assert pitfall.area in AREA_HUNDREDS, f"unknown area {pitfall.area!r}"
    assert int(pitfall.code[2]) == AREA_HUNDREDS[pitfall.area], "code hundreds must match the area"
    module_file = pitfall.module.rsplit(".", 1)[1]
    assert module_file == f"td{pitfall.code[2:]}_{pitfall.name.replace('-', '_')}"


@pytest.mark.parametrize("pitfall", PITFALLS, ids=ids)
def test_both_languages(pitfall):
    for lang in LANGS:
        assert pitfall.title.get(lang, "").strip(), f"title[{lang}]"
        assert pitfall.docs.get(lang, "").strip(), f"docs[{lang}]"
        for variant, text in pitfall.messages.items():
            assert text.get(lang, "").strip(), f"message {variant!r} [{lang}]"
        if pitfall.fix_title:
            assert pitfall.fix_title.get(lang, "").strip(), f"fix_title[{lang}]"
    assert re.search(r"[\u4e00-\u9fff]", pitfall.docs["zh"]), "the zh explanation must be Chinese"
    assert "" in pitfall.messages, "a default message variant is required"


@pytest.mark.parametrize("pitfall", PITFALLS, ids=ids)
def test_sections(pitfall):
    en = list(pitfall.sections("en"))
    for lang in LANGS:
        headings = list(pitfall.sections(lang))
        unknown = [h for h in headings if h not in SECTIONS]
        assert not unknown, f"unknown sections in {lang}: {unknown}"
        missing = [h for h in REQUIRED_SECTIONS if h not in headings]
        assert not missing, f"missing sections in {lang}: {missing}"
        assert headings == sorted(headings, key=SECTIONS.index), f"sections out of order in {lang}"
        assert headings == en, "both languages must have the same sections"
        for heading, body in pitfall.sections(lang).items():
            assert body.strip(), f"empty section {heading!r} in {lang}"
    if pitfall.fix_applicability == "unsafe":
        assert "Fix safety" in en, "an unsafe fix must say why in `Fix safety`"
    assert pitfall.fix_applicability in (None, "safe", "unsafe", "display")
    if pitfall.fix_applicability:
        assert pitfall.fix_title, "a fix needs a title"


def _lint(code: str, pitfall) -> list[str]:
    result = check_source(code, "example.py", frozenset({pitfall.code}))
    assert not result.internal_errors
    return [f.code for f in result.findings]


@pytest.mark.parametrize("pitfall", PITFALLS, ids=ids)
def test_code_is_written_once(pitfall):
    if pitfall.code in CODE_IN_PROSE:
        assert not pitfall.example, "its code is written once now: drop it from CODE_IN_PROSE"
        return
    assert pitfall.example.strip() and pitfall.use_instead.strip(), "`example` and `use_instead`"
    for lang in LANGS:
        in_prose = set(CODE_SECTIONS) & set(split_sections(pick(pitfall.docs, lang)))
        assert not in_prose, f"{sorted(in_prose)} written again in the {lang} docs"


def test_code_sections_follow_the_prose_before_them():
    pitfall = Pitfall(
        code="TD999",
        name="made-up",
        title={"en": "t"},
        messages={"": {"en": "m"}},
        docs={"en": "## What it catches\nc\n\n## Why is this bad?\nw\n\n## Symptoms\ns\n"},
        example="\nx.cuda()\n",
        use_instead="\nx = x.cuda()\n",
    )
    assert list(pitfall.sections("en")) == list(SECTIONS[:5])
    assert pitfall.explanation("en") == (
        "## What it catches\nc\n\n## Why is this bad?\nw\n\n## Example\n```python\nx.cuda()\n```"
        "\n\n## Use instead:\n```python\nx = x.cuda()\n```\n\n## Symptoms\ns"
    )


@pytest.mark.parametrize(
    "pitfall", [p for p in PITFALLS if p.lint_example and p.static_detectors], ids=ids
)
def test_example_triggers_and_use_instead_does_not(pitfall):
    assert pitfall.code in _lint(pitfall.example, pitfall), (
        f"Example does not trigger:\n{pitfall.example}"
    )
    assert pitfall.code not in _lint(pitfall.use_instead, pitfall), (
        f"Use instead: triggers:\n{pitfall.use_instead}"
    )


@pytest.mark.parametrize(
    "pitfall", [p for p in PITFALLS if p.static_detectors or p.native_scanners], ids=ids
)
def test_static_rules_have_a_fixture(pitfall):
    suffixes = (".cu", ".cpp") if pitfall.native_scanners else (".py", ".ipynb")
    candidates = [FIXTURES / "lint" / f"{pitfall.name}{suffix}" for suffix in suffixes]
    fixture = next((c for c in candidates if c.exists()), candidates[0])
    assert fixture.exists(), f"missing fixture {fixture.name}"
    if pitfall.fix_applicability:
        assert Path(str(fixture) + ".fixed").exists(), "a rule with a fix needs a fix snapshot"
