"""Every lint fixture, matched both ways: a missing and an unexpected finding both fail.

A fixture is named after its rule (`fixtures/lint/<rule-name>.py`, or `.ipynb` for rules about
notebooks, expectations then per cell) and checked with that rule alone. Rules with fixes also
have `<fixture>.fixed`: the fixture with every fix (safe and unsafe) applied. Set
TORCHDOCTOR_UPDATE_SNAPSHOTS=1 to rewrite snapshots.
"""

from __future__ import annotations

import ast
import json
from collections import Counter

import pytest

from conftest import FIXTURES, UPDATE_SNAPSHOTS
from lint_expectations import (
    expected_findings,
    expected_native_findings,
    expected_notebook_findings,
)
from torchdoctor.catalog import get
from torchdoctor.lint.checker import check_source, fix_source
from torchdoctor.lint.native import check_native, fix_native, is_native
from torchdoctor.lint.job import Job
from torchdoctor.lint.one_file import _process_notebook
from torchdoctor.lint.source import SourceFile

FIXTURE_SUFFIXES = (".py", ".ipynb", ".cpp", ".cu")
LINT_FIXTURES = sorted(p for p in (FIXTURES / "lint").iterdir() if p.suffix in FIXTURE_SUFFIXES)


def _checked_path(fixture, source: str) -> str:
    """The path a fixture is checked as: its name, or `# checked-as: DIR/NAME` (relative to the
    fixture) for rules that look at the files next to the checked one."""
    for line in source.splitlines()[:5]:
        if line.startswith("# checked-as: "):
            return str(fixture.parent / line.split(":", 1)[1].strip())
    return fixture.name


def _pitfall(fixture):
    pitfall = get(fixture.stem)
    assert pitfall is not None, f"{fixture.name} is not named after a rule"
    return pitfall


def _notebook_outcome(fixture, codes, mode="check"):
    text = fixture.read_text(encoding="utf-8")
    return _process_notebook(
        SourceFile(text, "utf-8"), fixture.name, Job(codes=codes, mode=mode, unsafe=True)
    )


@pytest.mark.parametrize("fixture", LINT_FIXTURES, ids=lambda p: p.stem)
def test_findings_match_expectations(fixture):
    pitfall = _pitfall(fixture)
    source = fixture.read_text(encoding="utf-8")
    codes = frozenset({pitfall.code})
    if fixture.suffix == ".ipynb":
        result, _ = _notebook_outcome(fixture, codes)
        found = Counter((f.cell, f.line, f.code) for f in result.findings)
        expected = expected_notebook_findings(source)
    elif is_native(fixture.name):
        result = check_native(source, fixture.name, codes)
        found = Counter((f.line, f.code) for f in result.findings)
        expected = expected_native_findings(source)
    else:
        result = check_source(source, _checked_path(fixture, source), codes)
        found = Counter((f.line, f.code) for f in result.findings)
        expected = expected_findings(source)
    assert not result.internal_errors
    missing = expected - found
    unexpected = found - expected
    assert not missing and not unexpected, (
        f"missing: {sorted(missing.elements())}\nunexpected: {sorted(unexpected.elements())}\n"
        + "\n".join(f"  {f.line}:{f.column} {f.code} {f.message}" for f in result.findings)
    )
    assert found, "a fixture must contain at least one positive case"


@pytest.mark.parametrize("fixture", LINT_FIXTURES, ids=lambda p: p.stem)
def test_fixes_match_snapshot(fixture):
    pitfall = _pitfall(fixture)
    snapshot = fixture.with_name(fixture.name + ".fixed")
    if pitfall.fix_applicability is None:
        assert not snapshot.exists(), f"{pitfall.name} offers no fix but has a snapshot"
        return
    source = fixture.read_text(encoding="utf-8")
    codes = frozenset({pitfall.code})
    if fixture.suffix == ".ipynb":
        outcome, fixed_text = _notebook_outcome(fixture, codes, mode="fix")
        assert outcome.fixed > 0, "a rule with a fix must fix something in its fixture"
        json.loads(fixed_text)
        again = fixed_text  # idempotence for notebooks is covered in tests/test_notebooks.py
    elif is_native(fixture.name):
        fixed = fix_native(source, fixture.name, codes, unsafe=True)
        assert fixed.fixed > 0, "a rule with a fix must fix something in its fixture"
        fixed_text = fixed.source
        again = fix_native(fixed_text, fixture.name, codes, unsafe=True).source
    else:
        fixed = fix_source(source, fixture.name, codes, unsafe=True)
        assert fixed.fixed > 0, "a rule with a fix must fix something in its fixture"
        ast.parse(fixed.source)
        fixed_text = fixed.source
        again = fix_source(fixed_text, fixture.name, codes, unsafe=True).source
    assert again == fixed_text, "fixing twice must change nothing"
    if UPDATE_SNAPSHOTS:
        snapshot.write_text(fixed_text, encoding="utf-8")
    assert snapshot.exists(), f"missing snapshot {snapshot.name} (TORCHDOCTOR_UPDATE_SNAPSHOTS=1)"
    assert fixed_text == snapshot.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "fixture", [f for f in LINT_FIXTURES if f.suffix == ".py"], ids=lambda p: p.stem
)
def test_safe_fixes_only_without_unsafe_flag(fixture):
    pitfall = _pitfall(fixture)
    source = fixture.read_text(encoding="utf-8")
    codes = frozenset({pitfall.code})
    safe = fix_source(source, fixture.name, codes, unsafe=False)
    applied = check_source(source, fixture.name, codes).findings
    safe_count = sum(1 for f in applied if f.fix and f.fix.applicability == "safe")
    if safe_count == 0:
        assert safe.source == source
    else:
        ast.parse(safe.source)
