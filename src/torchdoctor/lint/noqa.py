"""Inline suppression: `# noqa`, `# noqa: TD001`, `# noqa: tensor-result-discarded, TD201`
(`// noqa: TD707` in C++/CUDA sources)."""

from __future__ import annotations

import re

from torchdoctor.report.finding import Finding

_NOQA = re.compile(
    r"(?:#|//)\s*noqa(?:\s*:\s*(?P<codes>[\w\-]+(?:\s*,\s*[\w\-]+)*))?", re.IGNORECASE
)


def suppressions(line: str) -> set[str] | None:
    """None when the line has no noqa; an empty set for a bare `# noqa` (suppress everything)."""
    if "noqa" not in line.lower():
        return None
    match = _NOQA.search(line)
    if match is None:
        return None
    codes = match.group("codes")
    if not codes:
        return set()
    return {
        c.strip().upper() if c.strip().upper().startswith("TD") else c.strip()
        for c in codes.split(",")
    }


def is_suppressed(finding: Finding, lines: list[str]) -> bool:
    """A finding is suppressed by a noqa on its first or its last line."""
    for number in {finding.line, finding.end_line}:
        if not 0 < number <= len(lines):
            continue
        wanted = suppressions(lines[number - 1])
        if wanted is not None and (not wanted or finding.code in wanted or finding.name in wanted):
            return True
    return False
