"""Every lint fixture, matched both ways: a missing and an unexpected finding both fail.

A fixture is named after its rule (`fixtures/lint/<rule-name>.py`) and checked with that rule
alone. Rules with fixes also have `<rule-name>.py.fixed`: the fixture with every fix (safe and
unsafe) applied. Set TORCHDOCTOR_UPDATE_SNAPSHOTS=1 to rewrite snapshots.
"""
from __future__ import annotations

import ast
from collections import Counter

import pytest

from conftest import FIXTURES, UPDATE_SNAPSHOTS
from lint_expectations import expected_findings
from torchdoctor.catalog import get
from torchdoctor.lint.checker import check_source, fix_source

LINT_FIXTURES = sorted((FIXTURES / "lint").glob("*.py"))


def _pitfall(fixture):
    pitfall = get(fixture.stem)
    assert pitfall is not None, f"{fixture.name} is not named after a rule"
    return pitfall


@pytest.mark.parametrize("fixture", LINT_FIXTURES, ids=lambda p: p.stem)
def test_findings_match_expectations(fixture):
    pitfall = _pitfall(fixture)
    source = fixture.read_text(encoding="utf-8")
    result = check_source(source, fixture.name, frozenset({pitfall.code}))
    assert not result.internal_errors
    found = Counter((f.line, f.code) for f in result.findings)
    expected = expected_findings(source)
    missing = expected - found
    unexpected = found - expected
    assert not missing and not unexpected, (
        f"missing: {sorted(missing.elements())}\nunexpected: {sorted(unexpected.elements())}\n"
        + "\n".join(f"  {f.line}:{f.column} {f.code} {f.message}" for f in result.findings))
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
    fixed = fix_source(source, fixture.name, codes, "en", unsafe=True)
    assert fixed.fixed > 0, "a rule with a fix must fix something in its fixture"
    ast.parse(fixed.source)
    again = fix_source(fixed.source, fixture.name, codes, "en", unsafe=True)
    assert again.source == fixed.source, "fixing twice must change nothing"
    if UPDATE_SNAPSHOTS:
        snapshot.write_text(fixed.source, encoding="utf-8")
    assert snapshot.exists(), f"missing snapshot {snapshot.name} (TORCHDOCTOR_UPDATE_SNAPSHOTS=1)"
    assert fixed.source == snapshot.read_text(encoding="utf-8")


@pytest.mark.parametrize("fixture", LINT_FIXTURES, ids=lambda p: p.stem)
def test_safe_fixes_only_without_unsafe_flag(fixture):
    pitfall = _pitfall(fixture)
    source = fixture.read_text(encoding="utf-8")
    codes = frozenset({pitfall.code})
    safe = fix_source(source, fixture.name, codes, "en", unsafe=False)
    applied = check_source(source, fixture.name, codes).findings
    safe_count = sum(1 for f in applied if f.fix and f.fix.applicability == "safe")
    if safe_count == 0:
        assert safe.source == source
    else:
        ast.parse(safe.source)
