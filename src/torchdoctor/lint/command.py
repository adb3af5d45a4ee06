"""`torchdoctor check`: settings, discovery, checking, fixing and output, with exit codes."""

from __future__ import annotations

import gc
import os
import shutil
import signal
import sys
import threading
from contextlib import nullcontext
from dataclasses import replace
from functools import partial
from pathlib import Path

from torchdoctor._output import OutputError, ReaderGone
from torchdoctor.catalog import _registry
from torchdoctor.errors import UsageError
from torchdoctor.lint import by_config, config, files, notebook
from torchdoctor.lint.runner import FileOutcome, Job, check_bytes, drop_per_file_ignores
from torchdoctor.lint.lines import split_lines
from torchdoctor.lint.progress import Progress
from torchdoctor.lint.project import facts_for_check
from torchdoctor.lint.source import decode
from torchdoctor.report import render
from torchdoctor.report.finding import Finding
from torchdoctor.user_files import limit_for, read_regular_file

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def run_check(args, lang_default: str) -> int:
    _tune_garbage_collector()
    _exit_cleanly_on_sigterm()
    cwd = Path.cwd()
    configs = config.NearestConfigs(
        cwd, partial(_apply_options, args), Path(args.config) if args.config else None
    )
    settings = configs.for_directory(cwd.resolve())  # the language, what the walk leaves out
    lang = args.lang or settings.lang or lang_default
    mode = "diff" if args.diff else "fix" if args.fix else "check"
    job = Job(codes=settings.enabled_codes(), lang=lang, mode=mode, unsafe=args.unsafe_fixes)

    if args.stdin_filename is not None:
        # An editor's buffer is configured as the file it names, on disk.
        settings = configs.for_directory(Path(args.stdin_filename).absolute().parent.resolve())
        return _check_stdin(args, replace(job, codes=settings.enabled_codes()), settings)

    paths = args.paths or ["."]
    found = files.discover(paths, settings.exclude, settings.root, force_exclude=args.force_exclude)
    groups, config_errors = by_config.group_files(found, configs, settings, args.force_exclude)
    errors = found.errors + config_errors
    for error in errors:  # the rest is still checked; the exit code says it was not all
        print(f"torchdoctor: error: {error}", file=sys.stderr)
    if errors and not groups:
        return EXIT_ERROR
    jobs = args.jobs or os.cpu_count() or 1
    with _progress_line(args, sum(len(group) for group in groups)) as on_done:
        outcomes = by_config.check_groups(
            groups,
            found,
            job,
            jobs,
            use_cache=not args.no_cache,
            cwd=cwd,
            on_done=on_done,
        )
    code = _report(outcomes, args, lang, {}, errors=len(errors))
    return EXIT_ERROR if errors else code


def _apply_options(args, settings: config.Settings) -> None:
    """The command line's options over a config's settings: they win over every config."""
    if args.select is not None:
        settings.select = _split(args.select)
    settings.extend_select += _split(args.extend_select)
    settings.ignore += _split(args.ignore)
    settings.exclude += _split(args.exclude)


def _check_stdin(args, job: Job, settings: config.Settings) -> int:
    """Source from stdin, read as bytes and decoded like the file it names (coding cookie, BOM);
    with --fix, stdout is the fixed source in the input's own encoding."""
    shown = args.stdin_filename
    if sys.stdin is None:  # `<&-`: python has no stdin to give
        raise UsageError(f"--stdin-filename {shown}: stdin is closed; pipe the source into it")
    data = sys.stdin.buffer.read(limit_for(shown) + 1)  # past the limit is too large: not read
    # An editor's buffer belongs to the project around the file it names, on disk.
    around = Path(shown).absolute().parent
    job = replace(job, project=facts_for_check([], [around if around.is_dir() else Path.cwd()]))
    outcome, text, fixed = check_bytes(data, shown, job)
    drop_per_file_ignores(outcome, Path(shown), settings)
    if job.mode == "fix":
        _write_stdout_bytes(fixed, sys.stdin.buffer)
        # Findings that remain go to stderr so stdout stays the file's new content.
        stream = sys.stderr
    else:
        stream = sys.stdout
    return _report([outcome], args, job.lang, {shown: text}, stream=stream)


def _write_stdout_bytes(data: bytes, rest) -> None:
    """Bytes as they are (the source's own encoding), then what is left in `rest` unchanged
    (the input beyond the size limit)."""
    sys.stdout.flush()
    try:
        sys.stdout.buffer.write(data)
        shutil.copyfileobj(rest, sys.stdout.buffer)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        raise ReaderGone from None
    except (OSError, ValueError) as error:
        raise OutputError(getattr(error, "strerror", None) or str(error)) from None


def _report(
    outcomes: list[FileOutcome],
    args,
    lang: str,
    texts: dict[str, str],
    stream=None,
    errors: int = 0,
) -> int:
    """Print the findings; `errors` counts the paths that could not be checked at all."""
    stream = stream or sys.stdout
    errors += sum(len(o.internal_errors) for o in outcomes)
    findings: list[Finding] = [f for o in outcomes for f in o.findings]
    fixed = sum(o.fixed for o in outcomes)
    for outcome in outcomes:
        for error in outcome.internal_errors:  # a file not (fully) checked: exit 2
            print(f"torchdoctor: error: {error}", file=sys.stderr)
        for warning in outcome.warnings:
            print(f"torchdoctor: warning: {warning}", file=sys.stderr)

    if args.diff:
        diffs = "".join(o.diff for o in outcomes)
        stream.write(diffs)
        if not diffs:
            print(render.summary([], lang, errors=errors), file=sys.stderr)
        return _exit_code(outcomes, EXIT_FINDINGS if diffs else EXIT_CLEAN)

    if args.statistics:
        stream.write(render.render_statistics(findings))
    elif args.format == "json":
        stream.write(render.render_json(findings))
    elif args.format == "sarif":
        rules = _registry.all_pitfalls()
        stream.write(render.render_sarif(findings, rules, lang, notebook.FileRegions(texts)))
    elif args.format == "github":
        stream.write(render.render_github(findings, notebook.FileRegions(texts)))
    else:
        lines = _SourceLines(texts)
        color = _use_color(stream)
        stream.write(
            render.render_text(findings, lines.get, lang, color=color, fixed=fixed, errors=errors)
        )
    return _exit_code(outcomes, EXIT_FINDINGS if findings else EXIT_CLEAN)


def _exit_code(outcomes: list[FileOutcome], code: int) -> int:
    return EXIT_ERROR if any(o.internal_errors for o in outcomes) else code


class _SourceLines:
    """Source lines for excerpts, read once per file that has findings (by cell in notebooks)."""

    def __init__(self, texts: dict[str, str]) -> None:
        self._lines = {(path, None): split_lines(text) for path, text in texts.items()}

    def get(self, finding: Finding) -> str | None:
        key = (finding.path, finding.cell)
        if key not in self._lines:
            self._read(finding.path)
        lines = self._lines.get(key, [])
        return lines[finding.line - 1] if 0 < finding.line <= len(lines) else None

    def _read(self, path: str) -> None:
        try:
            text = decode(read_regular_file(path)).text
            if path.endswith(".ipynb"):
                cells = notebook.load(text).data["cells"]
                for number, cell in enumerate(cells, start=1):
                    self._lines[(path, number)] = split_lines(notebook.cell_source(cell))
            else:
                self._lines[(path, None)] = split_lines(text)
        except Exception:  # unreadable files and broken notebooks have no excerpt
            pass


def _use_color(stream) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def _progress_line(args, total: int):
    """A context giving the callback told of files done: a progress line on stderr when a
    person watches it, else nothing."""
    if shows_progress(args, sys.stderr):
        return Progress(sys.stderr, total)
    return nullcontext(lambda count: None)


def shows_progress(args, stream) -> bool:
    """Progress is for a person at a terminal: never in a pipe, a file or a CI log, and not
    beside output meant for a program (json, sarif, github), which may be read from a pty."""
    if args.format != "text" or os.environ.get("TERM") == "dumb":
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def _exit_cleanly_on_sigterm() -> None:
    """SIGTERM ends the check as Ctrl-C does: workers stopped on the way out, exit 143, no
    traceback. Workers do not inherit this: they take SIGTERM's default action (lint/pool.py)."""
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
