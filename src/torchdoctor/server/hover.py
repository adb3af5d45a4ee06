"""Hover on a finding: its message and the rule's explanation, in the configured language."""

from __future__ import annotations

from typing import Sequence

from lsprotocol import types

from torchdoctor.catalog import _docs, get
from torchdoctor.report.finding import Finding
from torchdoctor.server.positions import contains


def hover(findings: Sequence[Finding], line: int, column: int, lang: str) -> types.Hover | None:
    """The explanation of every finding at the 1-based (line, column); None when there is none."""
    parts = []
    for finding in findings:
        if not contains(finding, line, column):
            continue
        pitfall = get(finding.code)
        explanation = _docs.as_markdown(pitfall, lang) if pitfall is not None else ""
        parts.append(f"**{finding.code}** {finding.message}\n\n{explanation}")
    if not parts:
        return None
    text = "\n\n---\n\n".join(parts)
    return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, text))
