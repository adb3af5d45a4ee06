"""docs/comparison.md is checked against the code: every row that names a torchdoctor rule names
it by its real code and name, and `torchdoctor check --select ALL` reports that rule on the row's
shared snippet."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.catalog import all_pitfalls

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "comparison.md"
ROW = re.compile(
    r"^\| (?P<tor>TOR\d{3}) \| (?P<what>.+?) \| (?P<ours>.+?) \| `(?P<snippet>[^`]+)` \|$"
)
RULE = re.compile(r"^(?P<code>TD\d{3}) (?P<name>[a-z0-9-]+)$")
BY_CODE = {p.code: p for p in all_pitfalls()}


def rows() -> list[dict[str, str]]:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    return [m.groupdict() for m in map(ROW.match, lines) if m]


def covered_rows() -> list[dict[str, str]]:
    return [row for row in rows() if not row["ours"].startswith("not yet")]


def test_every_row_parses_and_says_what_covers_it():
    table = [
        line for line in DOC.read_text(encoding="utf-8").splitlines() if line.startswith("| TOR")
    ]
    parsed = rows()
    assert len(parsed) == len(table), "a TorchFix row does not have the four columns"
    assert len({row["tor"] for row in parsed}) == len(parsed), "a TorchFix code has two rows"
    for row in parsed:
        assert row["ours"].startswith("not yet") or RULE.match(row["ours"]), row["ours"]
    assert covered_rows(), "no row names a torchdoctor rule"


@pytest.mark.parametrize("row", covered_rows(), ids=lambda row: row["tor"])
def test_the_named_rule_reports_the_shared_snippet(row, tmp_path):
    rule = RULE.match(row["ours"])
    assert rule, row["ours"]
    pitfall = BY_CODE.get(rule["code"])
    assert pitfall is not None, f"{rule['code']} is not in the catalog"
    assert pitfall.name == rule["name"], f"{rule['code']} is named {pitfall.name}"
    snippet = tmp_path / "snippet.py"
    snippet.write_text(row["snippet"] + "\n", encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchdoctor",
            "check",
            "--select",
            "ALL",
            "--no-cache",
            "snippet.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    reported = set(re.findall(r"^snippet\.py:\d+:\d+: (TD\d{3}) ", result.stdout, re.M))
    assert rule["code"] in reported, result.stdout + result.stderr
