"""Code actions: a finding's own fix (safe, or unsafe and marked so), a `# noqa` comment for it,
and every safe fix of a Python file at once (`source.fixAll.torchdoctor`, as `check --fix`)."""

from __future__ import annotations

import re
from typing import Callable, Sequence

from lsprotocol import types

from torchdoctor.report.finding import Finding
from torchdoctor.server.diagnostics import diagnostic
from torchdoctor.server.positions import Lines, overlaps

FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.torchdoctor"
# The codes of a noqa comment already on the line, to which another code is added.
_NOQA_LIST = re.compile(r"#\s*noqa\s*:\s*[\w\-]+(?:\s*,\s*[\w\-]+)*", re.IGNORECASE)


def code_actions(
    uri: str,
    lines: Lines,
    findings: Sequence[Finding],
    span: tuple[tuple[int, int], tuple[int, int]],
    only: Sequence[str] | None,
    fix_all: Callable[[], str] | None,
) -> list[types.CodeAction]:
    """The actions for the findings that meet `span` (1-based (line, column) from, to). Only
    the kinds in `only`, when the editor names them. `fix_all()`: the text with every safe fix
    applied, asked for only when that action is wanted (None: not offered)."""
    actions: list[types.CodeAction] = []
    if _wanted(types.CodeActionKind.QuickFix, only):
        for finding in findings:
            if overlaps(finding, *span):
                actions += _quick_fixes(uri, lines, finding)
    if fix_all is not None and _wanted(FIX_ALL, only):
        if any(f.fix is not None and f.fix.applicability == "safe" for f in findings):
            edit = types.TextEdit(types.Range(types.Position(0, 0), lines.end()), fix_all())
            actions.append(
                types.CodeAction(
                    "Fix all safe torchdoctor findings",
                    kind=FIX_ALL,
                    edit=types.WorkspaceEdit(changes={uri: [edit]}),
                )
            )
    return actions


def _quick_fixes(uri: str, lines: Lines, finding: Finding) -> list[types.CodeAction]:
    shown = [diagnostic(finding, lines)]
    actions = []
    fix = finding.fix
    if fix is not None and fix.applicability in ("safe", "unsafe"):
        unsafe = " (unsafe fix: check the result)" if fix.applicability == "unsafe" else ""
        actions.append(
            types.CodeAction(
                f"{fix.title} ({finding.code}){unsafe}",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=shown,
                edit=types.WorkspaceEdit(changes={uri: [lines.text_edit(e) for e in fix.edits]}),
                is_preferred=fix.applicability == "safe",
            )
        )
    actions.append(
        types.CodeAction(
            f"Suppress {finding.code} on this line (# noqa: {finding.code})",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=shown,
            edit=types.WorkspaceEdit(changes={uri: [_noqa_edit(finding, lines)]}),
        )
    )
    return actions


def _noqa_edit(finding: Finding, lines: Lines) -> types.TextEdit:
    """Add the finding's code to the `# noqa` of its last line (a `# noqa` on the first or the
    last line silences it; after the last, the comment cannot fall inside a string the finding
    spans), or end that line with one."""
    line = min(finding.end_line, len(lines.lines))
    existing = _NOQA_LIST.search(lines.lines[line - 1])
    if existing is not None:
        at = lines.position(line, existing.end() + 1)
        return types.TextEdit(types.Range(at, at), f", {finding.code}")
    at = lines.line_end(line)
    return types.TextEdit(types.Range(at, at), f"  # noqa: {finding.code}")


def _wanted(kind: str, only: Sequence[str] | None) -> bool:
    """Whether the editor asked for this kind of action: `only` names kinds or their parents."""
    return not only or any(kind == k or kind.startswith(f"{k}.") for k in only)
