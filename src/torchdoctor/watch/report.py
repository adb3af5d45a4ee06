"""What a watched run reports: live lines, the summary at exit, the JSON and HTML reports.

JSON report (`--report-json`), one object per process (schema: docs/json.md):
    {"tool": "torchdoctor", "version": "...", "command": "run",
     "script": "train.py", "argv": [...], "torch_version": "2.13.0", "duration_s": 12.3,
     "findings": [...], "crash": null | {explain result, "context": [...]},
     "exit_code": N, "rank": null | N, "internal_errors": ["..."],
     "metrics": {"step": [...], "loss": [...], "lr": [...],
                 "grad_norm_step": [...], "grad_norm": {"<module>": [...]}}}
Each finding is a Finding's JSON (origin "runtime") with `step`, `rank` and `module` added,
and a `location` of kind "run".
`loss`/`lr` line up with `step`; each `grad_norm` series lines up with `grad_norm_step`
(gradient norms are sampled). Non-finite values are the strings "NaN", "Infinity",
"-Infinity"; null means not recorded.

Under torchrun (RANK set) every rank writes its own files: `report.json` becomes
`report.rank0.json`, `report.rank1.json`, ... (the suffix goes before the extension).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

from torchdoctor.errors import UsageError
from torchdoctor.report import json_output, strings
from torchdoctor.report.stream import write_stderr


def _where(finding) -> str:
    rank = finding.extra.get("rank")
    parts = [f"[rank {rank}] " if rank is not None else ""]
    if finding.path:
        parts.append(f"{finding.path}:{finding.line}: ")
    return "".join(parts)


def live_line(finding, lang: str) -> str:
    """One line printed when a finding happens."""
    step = finding.extra.get("step")
    return (
        f"torchdoctor: {_where(finding)}{finding.code} {finding.name} "
        f"(step {step}): {finding.message}\n"
    )


def summary_text(session, lang: str) -> str:
    steps = session.step - 1
    if not session.findings:
        return strings.text("watch.none", lang, steps=steps) + "\n"
    lines = [strings.text("watch.some", lang, steps=steps, count=len(session.findings))]
    for finding in session.findings:
        module = finding.extra.get("module")
        at = f" [{module}]" if module else ""
        lines.append(
            f"  {_where(finding)}{finding.code} {finding.name}{at} "
            f"(step {finding.extra.get('step')}): {finding.message}"
        )
    return "\n".join(lines) + "\n"


def print_summary(session, lang: str) -> None:
    write_stderr(summary_text(session, lang))


def build(session, crash: dict | None = None, exit_code: int | None = None) -> dict:
    torch = sys.modules.get("torch")
    return json_output.envelope(
        "run",
        {
            "script": os.path.basename(session.argv[0]) if session.argv else None,
            "argv": session.argv,
            "torch_version": getattr(torch, "__version__", None),
            "duration_s": round(time.monotonic() - session.started, 3),
            "findings": json_output.findings_json(session.findings),
            "crash": crash,
            "exit_code": exit_code,
            "rank": session.rank,
            "internal_errors": list(session.internal_errors),
            "metrics": session.metrics.to_json() if session.metrics is not None else None,
        },
    )


def rank_path(path: str, rank: int | None) -> str:
    """`report.json` -> `report.rank1.json` under torchrun; unchanged otherwise."""
    if rank is None:
        return path
    p = Path(path)
    return str(p.with_name(f"{p.stem}.rank{rank}{p.suffix}"))


def prepare_path(path: str | None, rank: int | None) -> str | None:
    """The report's path made absolute (the program may change directory), once a file is
    known to be writable there; UsageError otherwise, before the program starts. A missing
    directory is made, as pytest does for --junitxml: the run keeps its exit code."""
    if path is None:
        return None
    absolute = os.path.abspath(path)
    target = rank_path(absolute, rank)
    directory = os.path.dirname(target)
    if os.path.isdir(target):
        problem = "it is a directory"
    else:
        try:
            os.makedirs(directory, exist_ok=True)
            with tempfile.TemporaryFile(dir=directory):
                problem = None
        except (FileExistsError, NotADirectoryError):  # a file stands where a directory must
            problem = f"{os.path.dirname(path)} is not a directory"
        except OSError as error:
            problem = error.strerror or str(error)
    if problem:
        raise UsageError(f"cannot write the report {path}: {problem}")
    return absolute


def write(result: dict, session, json_path: str | None, html_path: str | None, lang: str) -> None:
    """Write the reports; a failure is one line on stderr, and the run's exit code stays."""
    if json_path:
        _write_file(rank_path(json_path, session.rank), json_output.dumps(result))
    if html_path:
        from torchdoctor.watch.html import render_html

        _write_file(rank_path(html_path, session.rank), render_html(result, lang))


def _write_file(path: str, text: str) -> None:
    """Write atomically: a crash while writing leaves no half report."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError as error:
        write_stderr(
            f"torchdoctor: error: cannot write the report {path}: {error.strerror or error}\n"
        )
        with contextlib.suppress(OSError):
            os.remove(tmp)
