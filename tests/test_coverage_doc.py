"""docs/coverage.md is checked against the code: every rule it names exists and answers in the
engine column it stands in, every proof it cites exists and is about that rule, and its summary
is what its rows add up to."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from lint_expectations import (
    expected_findings,
    expected_native_findings,
    expected_notebook_findings,
)
from test_explain_fixtures import read_fixture
from torchdoctor.catalog import all_pitfalls

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "coverage.md"
VERDICTS = ("covered", "partly", "missing", "advice")
# Each engine column and the detector kind a rule needs to answer there. `check` also reports
# findings of its own that no detector makes (syntax-error, unreadable-file): their entries
# take a role the engine asks for.
ENGINES = {"check": "static", "explain": "explain", "run": "runtime", "ckpt": "ckpt"}
COLUMNS = ("id", "pitfall", "verdict", *ENGINES, "proof", "note")
SUMMARY = re.compile(
    r"^\*\*Summary:\*\* (?P<rows>\d+) rows: (?P<covered>\d+) covered, (?P<partly>\d+) partly, "
    r"(?P<missing>\d+) missing, (?P<advice>\d+) advice\.$",
    re.M,
)
CHECK_ROLES = ("unparsable-source", "unreadable-source")
ROW = re.compile(r"^\| \d+ \|.*\|$", re.M)
CODE = re.compile(r"^TD\d{3}$")
WATCH_EXPECT = re.compile(r"^#\| expect: (TD\d{3})\b", re.M)
BY_CODE = {p.code: p for p in all_pitfalls()}
BY_NAME = {p.name: p for p in all_pitfalls()}


@dataclass
class Row:
    id: int
    verdict: str
    codes: dict[str, list[str]]  # engine column -> rule codes named there
    proofs: list[str]
    note: str

    def all_codes(self) -> set[str]:
        return {code for codes in self.codes.values() for code in codes}


def parse_rows(text: str) -> list[Row]:
    rows = []
    for line in ROW.findall(text):
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert len(cells) == len(COLUMNS), f"{len(cells)} cells, not {len(COLUMNS)}: {line}"
        row = dict(zip(COLUMNS, cells))
        rows.append(
            Row(
                id=int(row["id"]),
                verdict=row["verdict"],
                codes={e: [c.strip() for c in row[e].split(",") if c.strip()] for e in ENGINES},
                proofs=re.findall(r"`([^`]+)`", row["proof"]),
                note=row["note"],
            )
        )
    return rows


TEXT = DOC.read_text(encoding="utf-8")
ROWS = parse_rows(TEXT)


def test_the_table_has_rows_with_unique_ids():
    assert len(ROWS) > 50
    ids = Counter(row.id for row in ROWS)
    assert [i for i, n in ids.items() if n > 1] == []


def test_the_summary_is_what_the_rows_add_up_to():
    match = SUMMARY.search(TEXT)
    assert match, "the summary line is missing or reworded"
    verdicts = Counter(row.verdict for row in ROWS)
    assert int(match["rows"]) == len(ROWS)
    assert {v: int(match[v]) for v in VERDICTS} == {v: verdicts[v] for v in VERDICTS}


@pytest.mark.parametrize("row", ROWS, ids=lambda r: str(r.id))
def test_row_verdict_names_and_proofs_agree(row):
    assert row.verdict in VERDICTS
    if row.verdict in ("covered", "partly"):
        assert row.all_codes(), "a caught pitfall names the rules that catch it"
        assert row.proofs, "a caught pitfall cites the test that proves it"
    else:
        assert not row.all_codes() and not row.proofs, "nothing catches it: no rule, no proof"
        assert row.note, "a missing or advice row says why"
    if row.verdict == "partly":
        assert row.note, "a partial answer says what is left out"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: str(r.id))
def test_rules_exist_and_answer_in_their_engine(row):
    for engine, codes in row.codes.items():
        for code in codes:
            assert CODE.match(code), f"{code!r} is not a rule code"
            assert code in BY_CODE, f"{code} is not in the catalog"
            kinds = BY_CODE[code].detector_kinds()
            engine_made = engine == "check" and BY_CODE[code].role in CHECK_ROLES
            assert ENGINES[engine] in kinds or engine_made, f"{code} has no {engine} detector"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: str(r.id))
def test_proofs_exist_and_are_about_the_rules_named(row):
    for proof in row.proofs:
        path, _, function = proof.partition("::")
        assert (ROOT / path).exists(), f"{proof}: no such file"
        parts = Path(path).parts
        if function:
            source = (ROOT / path).read_text(encoding="utf-8")
            assert re.search(rf"^def {re.escape(function)}\(", source, re.M), proof
        elif parts[:3] == ("tests", "fixtures", "lint"):
            _check_lint_fixture(ROOT / path, row.codes["check"])
        elif parts[:3] == ("tests", "fixtures", "explain"):
            _check_explain_fixture(ROOT / path, parts[3], row.codes["explain"])
        elif parts[:3] == ("tests", "fixtures", "watch"):
            found = set(WATCH_EXPECT.findall((ROOT / path).read_text(encoding="utf-8")))
            assert found & set(row.codes["run"]), f"{proof} expects {found}, not a run rule"
        else:
            pytest.fail(f"{proof}: not a lint, explain or watch fixture nor a test function")


def _check_lint_fixture(path: Path, codes: list[str]) -> None:
    """A lint fixture is named after its rule, which the row names under check, and marks at
    least one finding of it."""
    rule = BY_NAME.get(path.name.split(".")[0])
    assert rule is not None, f"{path.name} is named after no rule"
    assert rule.code in codes, f"{path.name} is {rule.code}'s fixture, not in the check column"
    source = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        found = {code for *_, code in expected_notebook_findings(source)}
    elif path.suffix in (".cu", ".cpp"):
        found = {code for _, code in expected_native_findings(source)}
    else:
        found = {code for _, code in expected_findings(source)}
    assert rule.code in found, f"{path.name} has no `# expect: {rule.code}` line"


def _check_explain_fixture(path: Path, directory: str, codes: list[str]) -> None:
    """An explain fixture directory is named after its rule, which the row names under
    explain; a single file cited must expect that rule too."""
    rule = BY_NAME.get(directory)
    assert rule is not None, f"explain/{directory} is named after no rule"
    assert rule.code in codes, f"explain/{directory} is {rule.code}'s, not in the explain column"
    cases = [path] if path.is_file() else sorted(path.glob("*.txt"))
    assert cases, f"explain/{directory} holds no error output"
    for case in cases:
        headers, _ = read_fixture(case)
        assert headers.get("expect", directory) == directory, f"{case.name} expects another rule"


def test_the_checks_fail_on_a_wrong_row():
    """The checks above can fail: a fixture of another rule, an engine the rule lacks, a
    proof that does not exist."""
    row = parse_rows(
        "| 1 | x | covered | TD415 | TD003 | | | `tests/fixtures/lint/transpose-1d.py` | |"
    )[0]
    with pytest.raises(AssertionError, match="transpose-1d.py is TD417's fixture"):
        test_proofs_exist_and_are_about_the_rules_named(row)
    with pytest.raises(AssertionError, match="TD003 has no check detector"):
        wrong_engine = parse_rows("| 1 | x | covered | TD003 | | | | `a` | |")[0]
        test_rules_exist_and_answer_in_their_engine(wrong_engine)
    missing = parse_rows("| 1 | x | covered | | TD003 | | | `tests/nope.py::test_x` | |")[0]
    with pytest.raises(AssertionError, match="no such file"):
        test_proofs_exist_and_are_about_the_rules_named(missing)
