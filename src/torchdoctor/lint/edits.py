"""Applying fixes: text edits over source spans, never overlapping, re-parsed after."""

from __future__ import annotations

from torchdoctor.report.finding import Finding

APPLICABLE = {False: ("safe",), True: ("safe", "unsafe")}


def select_fixes(findings: list[Finding], unsafe: bool) -> list[Finding]:
    """The findings whose fixes can be applied together: allowed and not overlapping."""
    allowed = APPLICABLE[unsafe]
    chosen: list[Finding] = []
    taken: list[tuple[int, int]] = []
    for finding in sorted(
        (f for f in findings if f.fix and f.fix.applicability in allowed),
        key=lambda f: min(e.start for e in f.fix.edits),
    ):
        spans = [(e.start, e.end) for e in finding.fix.edits]
        if any(_overlaps(span, other) for span in spans for other in taken):
            continue  # applied on a later pass, once the first fix is in
        chosen.append(finding)
        taken.extend(spans)
    return chosen


def apply_edits(source: str, findings: list[Finding]) -> str:
    edits = sorted((e for f in findings for e in f.fix.edits), key=lambda e: (e.start, e.end))
    parts, cursor = [], 0
    for edit in edits:
        parts.append(source[cursor : edit.start])
        parts.append(edit.content)
        cursor = edit.end
    parts.append(source[cursor:])
    return "".join(parts)


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    # Two insertions at the same point also conflict: their order would be arbitrary.
    return a[0] < b[1] and b[0] < a[1] or a == b or (a[0] == a[1] == b[0]) or (b[0] == b[1] == a[0])


def fix_until_stable(source: str, check, unsafe: bool, passes: int, accept=None):
    """Apply fixes until none is left (overlapping ones wait for a later pass).

    `check(source) -> CheckResult`; `accept(candidate) -> bool` may refuse a pass's result (the
    Python checker re-parses it), which ends fixing there. Returns (source, fixed, result)."""
    fixed = 0
    result = check(source)
    for _ in range(passes):
        chosen = select_fixes(result.findings, unsafe)
        if not chosen:
            break
        candidate = apply_edits(source, chosen)
        if candidate == source or (accept is not None and not accept(candidate, chosen, result)):
            break
        source, fixed = candidate, fixed + len(chosen)
        result = check(source)
    return source, fixed, result
