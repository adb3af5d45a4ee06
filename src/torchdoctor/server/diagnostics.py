"""Findings as the editor shows them: LSP diagnostics."""

from __future__ import annotations

from lsprotocol import types

from torchdoctor.report.finding import Finding
from torchdoctor.server.positions import Lines

SOURCE = "torchdoctor"


def diagnostic(finding: Finding, lines: Lines) -> types.Diagnostic:
    return types.Diagnostic(
        range=lines.finding_range(finding),
        message=f"{finding.message} ({finding.name})",
        severity=types.DiagnosticSeverity.Warning,
        code=finding.code,
        source=SOURCE,
    )
