"""`torchdoctor check`: settings, discovery, checking, fixing and output, with exit codes."""
from __future__ import annotations

import gc
import os
import signal
import sys
import threading
from pathlib import Path

from torchdoctor.catalog import _registry
from torchdoctor.lint import config, files, notebook
from torchdoctor.lint.runner import (
    FileOutcome,
    Job,
    check_files,
    check_text,
    drop_per_file_ignores,
)
from torchdoctor.lint.source import decode
from torchdoctor.report import render
from torchdoctor.report.finding import Finding

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def run_check(args, lang_default: str) -> int:
    _tune_garbage_collector()
    _exit_cleanly_on_sigterm()
    cwd = Path.cwd()
    config_file = Path(args.config) if args.config else config.find_config(cwd)
    settings = config.load(config_file, cwd)
    if args.select is not None:
        settings.select = _split(args.select)
    settings.extend_select += _split(args.extend_select)
    settings.ignore += _split(args.ignore)
    settings.exclude += _split(args.exclude)
    lang = args.lang or settings.lang or lang_default
    codes = settings.enabled_codes()
    mode = "diff" if args.diff else "fix" if args.fix else "check"
    job = Job(codes=codes, lang=lang, mode=mode, unsafe=args.unsafe_fixes)

    if args.stdin_filename is not None:
        return _check_stdin(args, job, settings)

    paths = args.paths or ["."]
    targets = files.discover(paths, settings.exclude, settings.root, force_exclude=args.force_exclude)
    jobs = args.jobs or os.cpu_count() or 1
    outcomes = check_files(targets, settings, job, jobs, use_cache=not args.no_cache, cwd=cwd)
    return _report(outcomes, args, lang, {})


def _check_stdin(args, job: Job, settings: config.Settings) -> int:
    text = sys.stdin.read()
    outcome, fixed_text = check_text(text, args.stdin_filename, job)
    drop_per_file_ignores(outcome, Path(args.stdin_filename), settings)
    if job.mode == "fix":
        sys.stdout.write(fixed_text)
        # Findings that remain go to stderr so stdout stays the file's new content.
        stream = sys.stderr
    else:
        stream = sys.stdout
    return _report([outcome], args, job.lang, {args.stdin_filename: text}, stream=stream)


def _report(outcomes: list[FileOutcome], args, lang: str, texts: dict[str, str], stream=None) -> int:
    stream = stream or sys.stdout
    findings: list[Finding] = [f for o in outcomes for f in o.findings]
    fixed = sum(o.fixed for o in outcomes)
    for outcome in outcomes:
        for error in outcome.internal_errors:
            print(f"torchdoctor: warning: {error}", file=sys.stderr)

    if args.diff:
        diffs = "".join(o.diff for o in outcomes)
        stream.write(diffs)
        if not diffs:
            print(render.summary_text("none", lang), file=sys.stderr)
        return _exit_code(outcomes, EXIT_FINDINGS if diffs else EXIT_CLEAN)

    if args.statistics:
        stream.write(render.render_statistics(findings))
    elif args.format == "json":
        stream.write(render.render_json(findings))
    elif args.format == "sarif":
        stream.write(render.render_sarif(findings, _registry.all_pitfalls(), lang))
    elif args.format == "github":
        stream.write(render.render_github(findings))
    else:
        lines = _SourceLines(texts)
        color = _use_color(stream)
        stream.write(render.render_text(findings, lines.get, lang, color=color, fixed=fixed))
    return _exit_code(outcomes, EXIT_FINDINGS if findings else EXIT_CLEAN)


def _exit_code(outcomes: list[FileOutcome], code: int) -> int:
    return EXIT_ERROR if any(o.internal_errors for o in outcomes) else code


class _SourceLines:
    """Source lines for excerpts, read once per file that has findings (by cell in notebooks)."""

    def __init__(self, texts: dict[str, str]) -> None:
        self._lines = {(path, None): text.splitlines() for path, text in texts.items()}

    def get(self, finding: Finding) -> str | None:
        key = (finding.path, finding.cell)
        if key not in self._lines:
            self._read(finding.path)
        lines = self._lines.get(key, [])
        return lines[finding.line - 1] if 0 < finding.line <= len(lines) else None

    def _read(self, path: str) -> None:
        try:
            text = decode(Path(path).read_bytes()).text
            if path.endswith(".ipynb"):
                cells = notebook.load(text).data["cells"]
                for number, cell in enumerate(cells, start=1):
                    self._lines[(path, number)] = notebook.cell_source(cell).splitlines()
            else:
                self._lines[(path, None)] = text.splitlines()
        except Exception:  # unreadable files and broken notebooks have no excerpt
            pass


def _use_color(stream) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def _exit_cleanly_on_sigterm() -> None:
    """A killed check still stops its worker processes (they are ended on the way out)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def _tune_garbage_collector() -> None:
    """Checking makes millions of short-lived AST nodes and almost no reference cycles: move
    what start-up loaded out of the collector's sight and collect young objects less often
    (as mypy does). Worker processes inherit this through fork."""
    gc.freeze()
    gc.set_threshold(200_000, 50, 100)


def _split(values: list[str] | None) -> list[str]:
    """Repeated options with comma-separated values -> one flat list."""
    out: list[str] = []
    for value in values or []:
        out += [v.strip() for v in value.split(",") if v.strip()]
    return out

