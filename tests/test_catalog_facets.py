"""Every facet of every entry has its test input: each error signature a real explain fixture,
each monitor a fixture script and its fixed twin, each checkpoint check a ckpt case.
(Static rules: tests/test_catalog.py::test_static_rules_have_a_fixture.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import FIXTURES
from test_explain_fixtures import read_fixture
from torchdoctor.catalog import all_pitfalls
from torchdoctor.catalog._registry import resolve

PITFALLS = all_pitfalls()
TESTS = Path(__file__).parent
WATCH = FIXTURES / "watch"

# A watch fixture names the entries it shows in a header line, `#| expect: TD201 ...`, and the
# checks its run enables, when not the default ones, in `#| select: TD901,TD902`.
_WATCH_EXPECT = re.compile(r"^#\| expect: (.*)$", re.M)
_WATCH_SELECT = re.compile(r"^#\| select: (.*)$", re.M)


def ids(pitfall):
    return pitfall.name


@pytest.mark.parametrize("pitfall", [p for p in PITFALLS if p.error_signatures], ids=ids)
def test_error_signatures_have_a_real_fixture(pitfall):
    fixtures = sorted((FIXTURES / "explain" / pitfall.name).glob("*.txt"))
    assert fixtures, f"no tests/fixtures/explain/{pitfall.name}/*.txt"
    headers = [read_fixture(path)[0] for path in fixtures]
    assert all(h.get("source") for h in headers), "every fixture says where its text comes from"
    assert any(h.get("expect", pitfall.name) == pitfall.name for h in headers), (
        "no fixture expects this entry as the top cause"
    )


def _watch_scripts(pitfall) -> list[Path]:
    named = WATCH / f"{pitfall.name.replace('-', '_')}.py"
    declared = [
        path
        for path in sorted(WATCH.glob("*.py"))
        if not path.stem.endswith("_fixed")
        and any(
            pitfall.code in line.split()
            for line in _WATCH_EXPECT.findall(path.read_text(encoding="utf-8"))
        )
    ]
    return ([named] if named.exists() else []) + [p for p in declared if p != named]


def _runs_monitor(script: Path, pitfall) -> bool:
    """Whether the fixture's run enables the entry's monitors (else a silent run proves nothing)."""
    selects = _WATCH_SELECT.findall(script.read_text(encoding="utf-8"))
    if not selects:
        return all(monitor.default for monitor in pitfall.monitors)
    return pitfall.code in resolve(selects[0].split(","))


@pytest.mark.parametrize("pitfall", [p for p in PITFALLS if p.monitors], ids=ids)
def test_monitors_have_a_fixture_script_and_its_fixed_twin(pitfall):
    scripts = _watch_scripts(pitfall)
    assert scripts, (
        f"no tests/fixtures/watch/{pitfall.name.replace('-', '_')}.py and no "
        f"script with a `#| expect: {pitfall.code}` header"
    )
    twins = [s.with_name(f"{s.stem}_fixed.py") for s in scripts]
    twins = [twin for twin in twins if twin.exists()]
    assert twins, f"no fixed twin of {', '.join(s.name for s in scripts)}"
    assert all(_runs_monitor(twin, pitfall) for twin in twins), (
        f"a fixed twin runs without {pitfall.code}: add `#| select: {pitfall.code}`"
    )


def _ckpt_tests() -> str:
    return "".join(
        path.read_text(encoding="utf-8") for path in sorted(TESTS.glob("test_ckpt_*.py"))
    )


@pytest.mark.parametrize("pitfall", [p for p in PITFALLS if p.checkpoint_checks], ids=ids)
def test_checkpoint_checks_have_a_case(pitfall):
    text = _ckpt_tests()
    assert f'"{pitfall.name}"' in text or f"'{pitfall.name}'" in text, (
        "no test in tests/test_ckpt_*.py asserts this finding by name"
    )
