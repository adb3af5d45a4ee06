"""Every facet of every entry has its test input: each error signature a real explain fixture,
each monitor a fixture script and its fixed twin, each checkpoint check a ckpt case. Entries
that lack one are listed below with the reason, and show as skipped in the test output.
(Static rules: tests/test_catalog.py::test_static_rules_have_a_fixture.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import FIXTURES
from test_explain_fixtures import read_fixture
from torchdoctor.catalog import all_pitfalls

PITFALLS = all_pitfalls()
TESTS = Path(__file__).parent
WATCH = FIXTURES / "watch"

# A watch fixture names the entries it shows in a header line, `#| expect: TD201 ...`.
_WATCH_EXPECT = re.compile(r"^#\| expect: (.*)$", re.M)

WATCH_GAPS = {
    "accumulated-loss-graph": "no fixed twin",
    "cross-entropy-target-dtype": "the fixed twin is the same script run with --fixed",
    "cross-entropy-target-range": "the fixed twin is the same script run with --fixed",
    "loss-target-shape-mismatch": "the fixed twin is the same script run with --fixed",
    "batchnorm-single-sample-batch": "no fixed twin",
    "dataloader-shm-exhausted": "no fixed twin",
    "sampler-set-epoch-missing": "no fixed twin",
    "exploding-gradient": "no fixed twin",
    "vanishing-gradient": "tested with synthetic events only (test_watch_symptoms2.py)",
    "dead-relu": "tested with synthetic events only (test_watch_symptoms2.py)",
    "loss-plateau": "tested with synthetic events only (test_watch_symptoms2.py)",
}
CKPT_GAPS = {
    "state-dict-key-mismatch": "no ckpt test asserts this finding (explain fixtures cover the "
    "error, test_ckpt_diff_fix.py only the repaired nesting)",
}


def ids(pitfall):
    return pitfall.name


def _skip_if_known_gap(pitfall, gaps: dict[str, str]) -> None:
    if pitfall.name in gaps:
        pytest.skip(f"{pitfall.name}: {gaps[pitfall.name]}")


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


@pytest.mark.parametrize("pitfall", [p for p in PITFALLS if p.monitors], ids=ids)
def test_monitors_have_a_fixture_script_and_its_fixed_twin(pitfall):
    _skip_if_known_gap(pitfall, WATCH_GAPS)
    scripts = _watch_scripts(pitfall)
    assert scripts, (
        f"no tests/fixtures/watch/{pitfall.name.replace('-', '_')}.py and no "
        f"script with a `#| expect: {pitfall.code}` header"
    )
    assert any(script.with_name(f"{script.stem}_fixed.py").exists() for script in scripts), (
        f"no fixed twin of {', '.join(s.name for s in scripts)}"
    )


def _ckpt_tests() -> str:
    return "".join(
        path.read_text(encoding="utf-8") for path in sorted(TESTS.glob("test_ckpt_*.py"))
    )


@pytest.mark.parametrize("pitfall", [p for p in PITFALLS if p.checkpoint_checks], ids=ids)
def test_checkpoint_checks_have_a_case(pitfall):
    _skip_if_known_gap(pitfall, CKPT_GAPS)
    text = _ckpt_tests()
    assert f'"{pitfall.name}"' in text or f"'{pitfall.name}'" in text, (
        "no test in tests/test_ckpt_*.py asserts this finding by name"
    )


def test_the_gap_lists_hold_only_real_gaps():
    """An entry that gets its test input leaves the list (and names stay catalog names)."""
    by_name = {p.name: p for p in PITFALLS}
    assert set(WATCH_GAPS) <= {name for name, p in by_name.items() if p.monitors}
    assert set(CKPT_GAPS) <= {name for name, p in by_name.items() if p.checkpoint_checks}
    covered = [
        name
        for name in WATCH_GAPS
        if any(s.with_name(f"{s.stem}_fixed.py").exists() for s in _watch_scripts(by_name[name]))
    ]
    assert covered == [], f"remove from WATCH_GAPS: {covered}"
    text = _ckpt_tests()
    covered = [name for name in CKPT_GAPS if f'"{name}"' in text or f"'{name}'" in text]
    assert covered == [], f"remove from CKPT_GAPS: {covered}"
