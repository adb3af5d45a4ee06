"""The JSON every command writes: one finding object, one envelope, one schema
(schema/findings.schema.json, documented in docs/json.md)."""

from __future__ import annotations

import json
from typing import Any, Sequence

from torchdoctor import __version__
from torchdoctor.report.finding import Finding

SCHEMA_FILE = "report/schema/findings.schema.json"  # inside the torchdoctor package


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


def envelope(command: str, body: dict) -> dict:
    """A command's JSON object: who wrote it, then its own fields."""
    return {"tool": "torchdoctor", "version": __version__, "command": command, **body}


def findings_json(findings: Sequence[Finding]) -> list[dict]:
    return [finding_json(f) for f in findings]


def finding_json(finding: Finding) -> dict:
    """A finding of check, run or ckpt: its flat fields, as before, plus the shared ones."""
    data = finding.to_json()
    data.update(
        shared_fields(
            location_of(finding),
            confidence=finding.confidence,
            fixable=finding.fix is not None and finding.fix.applicability != "display",
        )
    )
    return data


def shared_fields(
    location: dict | None,
    *,
    confidence: float | None = None,
    cause: str | None = None,
    fixable: bool = False,
) -> dict:
    """What every finding carries whichever command made it."""
    return {"location": location, "confidence": confidence, "cause": cause, "fixable": fixable}


def location_of(finding: Finding) -> dict:
    if finding.origin == "runtime":
        return run_site(
            finding.path,
            finding.line,
            finding.extra.get("step"),
            finding.extra.get("module"),
            finding.extra.get("rank"),
        )
    if finding.origin == "ckpt":
        return checkpoint_keys(finding.path, finding.extra.get("keys", ()))
    return span(
        finding.path,
        finding.line,
        finding.column,
        finding.end_line,
        finding.end_column,
        finding.cell,
    )


def span(
    path: str,
    line: int,
    column: int | None,
    end_line: int | None = None,
    end_column: int | None = None,
    cell: int | None = None,
    source: str | None = None,
) -> dict:
    """Characters in a file, or in a notebook's code cell (lines counted in the cell)."""
    data: dict = {"kind": "span", "path": path, "line": line, "column": column}
    if end_line is not None:
        data.update(end_line=end_line, end_column=end_column)
    if cell is not None:
        data["cell"] = cell
    if source is not None:
        data["source"] = source
    return data


def frame(path: str, line: int | None, function: str | None, source: str | None = None) -> dict:
    """A traceback frame, as the traceback printed it."""
    return {
        "kind": "frame",
        "path": path,
        "line": line,
        "column": None,
        "function": function,
        "source": source,
    }


def run_site(path: str, line: int, step: int | None, module: str | None, rank: int | None) -> dict:
    """Where in a watched run: the training step, the module, the rank, the user's line."""
    return {
        "kind": "run",
        "step": step,
        "module": module,
        "rank": rank,
        "path": path or None,
        "line": line if path else None,
    }


def checkpoint_keys(path: str, keys: Sequence[str]) -> dict:
    """Entries of a checkpoint's state dict (none: the finding is about the whole file)."""
    return {"kind": "checkpoint", "path": path, "keys": list(keys)}
