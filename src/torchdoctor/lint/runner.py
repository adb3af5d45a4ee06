"""Check many files: cache look-ups in this process, the rest in parallel workers."""
from __future__ import annotations

import difflib
import multiprocessing
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from torchdoctor.catalog import all_pitfalls
from torchdoctor.catalog.tooling import td701_unreadable_file
from torchdoctor.lint import cache as cache_module
from torchdoctor.lint import notebook
from torchdoctor.lint.checker import check_source, fix_source
from torchdoctor.lint.config import Settings
from torchdoctor.lint.neighbours import directory_listing
from torchdoctor.lint.native import check_native, fix_native, is_native
from torchdoctor.lint.source import (
    SourceFile, UnreadableFile, decode, decode_native, write_atomically,
)
from torchdoctor.report.finding import Finding

FixMode = Literal["check", "fix", "diff"]
# Below this many files a worker pool costs more than it saves.
MIN_FILES_FOR_POOL = 8


@dataclass
class Job:
    codes: frozenset[str]
    lang: str = "en"
    mode: FixMode = "check"
    unsafe: bool = False


@dataclass
class FileOutcome:
    path: str  # as shown to the user
    findings: list[Finding]
    internal_errors: list[str] = field(default_factory=list)
    fixed: int = 0
    diff: str = ""


@dataclass
class _Pending:
    """A file the cache could not answer: checked by a worker."""

    index: int
    digest: str
    task: tuple[str, str, bytes]  # absolute path, path as shown, contents


def display_path(path: Path, cwd: Path) -> str:
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        return str(path)


def _neighbours(path: Path, job: Job) -> bytes:
    """The names next to a file, for the rules whose findings depend on them: a cached result
    is stale when they change."""
    if not any(p.reads_neighbours for p in all_pitfalls() if p.code in job.codes):
        return b""
    # Only what can be imported matters: modules and package directories, not dot-files (the
    # cache directory itself appears after the first run).
    names = [name for name in directory_listing(str(path.parent)) or ()
             if not name.startswith(".") and (name.endswith(".py") or "." not in name)]
    return "\0".join(sorted(names)).encode()


def check_files(files: list[Path], settings: Settings, job: Job, jobs: int, use_cache: bool,
                cwd: Path) -> list[FileOutcome]:
    """Outcomes for every file, in the order given."""
    cwd = cwd.resolve()
    store = (cache_module.Cache(settings.root, cache_module.settings_key(job.codes, job.lang))
             if use_cache and job.mode == "check" else None)
    outcomes: dict[int, FileOutcome] = {}
    pending: list[_Pending] = []
    for index, path in enumerate(files):
        shown = display_path(path, cwd)
        try:
            data = path.read_bytes()
        except OSError as error:
            outcomes[index] = _unreadable(shown, error.strerror or str(error), job.lang)
            continue
        file_digest = cache_module.digest(data + _neighbours(path, job)) if store is not None else ""
        cached = store.get(str(path), file_digest) if store is not None else None
        if cached is not None:
            outcomes[index] = FileOutcome(shown, [_restore(item, shown) for item in cached])
        else:
            pending.append(_Pending(index, file_digest, (str(path), shown, data)))

    for item, outcome in zip(pending, _map(job, [item.task for item in pending], jobs)):
        outcomes[item.index] = outcome
        if store is not None and not outcome.internal_errors:
            store.put(item.task[0], item.digest, [_strip_path(f) for f in outcome.findings])
    if store is not None:
        store.save()

    results = []
    for index, path in enumerate(files):
        outcome = outcomes[index]
        drop_per_file_ignores(outcome, path, settings)
        results.append(outcome)
    return results


def drop_per_file_ignores(outcome: FileOutcome, path: Path, settings: Settings) -> None:
    """Remove the findings that `per-file-ignores` silences for this file."""
    if not settings.per_file_ignores:
        return
    ignored = settings.per_file_ignore_matcher(display_path(path.resolve(), settings.root.resolve()))
    outcome.findings = [f for f in outcome.findings if f.code not in ignored]


def check_text(text: str, shown: str, job: Job) -> tuple[FileOutcome, str]:
    """One source read from stdin: the outcome, and the fixed text (the input when not fixing)."""
    process = _process_native if is_native(shown) else _process_source
    return process(SourceFile(text, "utf-8"), shown, job)


def _map(job: Job, tasks: list[tuple[str, str, bytes]], jobs: int) -> list[FileOutcome]:
    if jobs <= 1 or len(tasks) < MIN_FILES_FOR_POOL:
        return [_process(job, task) for task in tasks]
    workers = min(jobs, len(tasks))
    context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    chunk = max(1, len(tasks) // (workers * 16))
    # Pool's context manager terminates the workers on any exit, Ctrl-C and SIGTERM included
    # (the CLI turns SIGTERM into SystemExit), so no worker outlives the check.
    with context.Pool(workers) as pool:
        return pool.starmap(_process, [(job, task) for task in tasks], chunksize=chunk)


def _process(job: Job, task: tuple[str, str, bytes]) -> FileOutcome:
    absolute, shown, data = task
    try:
        if is_native(absolute):
            source = decode_native(data)
            process = _process_native
        else:
            source = decode(data)
            process = _process_notebook if absolute.endswith(".ipynb") else _process_source
        outcome, fixed_text = process(source, shown, job)
    except UnreadableFile as error:
        return _unreadable(shown, str(error), job.lang)
    if job.mode == "fix" and outcome.fixed:
        write_atomically(Path(absolute), fixed_text, source.encoding)
    return outcome


def _process_source(source: SourceFile, shown: str, job: Job, check=check_source,
                    fix=fix_source) -> tuple[FileOutcome, str]:
    if job.mode == "check":
        result = check(source.text, shown, job.codes, job.lang)
        return FileOutcome(shown, result.findings, result.internal_errors), source.text
    fixed = fix(source.text, shown, job.codes, job.lang, job.unsafe)
    outcome = FileOutcome(shown, fixed.remaining.findings, fixed.remaining.internal_errors,
                          fixed=fixed.fixed)
    if job.mode == "diff" and fixed.fixed:
        outcome.diff = _diff(source.text, fixed.source, shown)
    return outcome, fixed.source


def _process_native(source: SourceFile, shown: str, job: Job) -> tuple[FileOutcome, str]:
    """A C++/CUDA extension source: scanned as text, fixed without a re-parse."""
    return _process_source(source, shown, job, check_native, fix_native)


def _process_notebook(source: SourceFile, shown: str, job: Job) -> tuple[FileOutcome, str]:
    """Check (or fix) a notebook's code cells as one program; cells that don't parse are
    reported and left out. The fixed text is the notebook's JSON, only changed cells rewritten."""
    book = notebook.load(source.text)
    skipped, broken = notebook.broken_cells(book, shown, job.lang)
    notebook.join_cells(book, skipped)
    outcome, fixed_source = _process_source(SourceFile(book.source, "utf-8"), shown, job)
    outcome.findings = broken + [notebook.locate(f, book) for f in outcome.findings]
    outcome.findings.sort(key=Finding.sort_key)
    fixed_text = notebook.split_cells(book, fixed_source) if outcome.fixed else source.text
    if outcome.diff:
        outcome.diff = _diff(source.text, fixed_text, shown)
    return outcome, fixed_text


def _diff(old: str, new: str, shown: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=f"a/{shown}", tofile=f"b/{shown}"))


def _unreadable(shown: str, reason: str, lang: str) -> FileOutcome:
    return FileOutcome(shown, [td701_unreadable_file.finding_for(reason, shown, lang)])


def _strip_path(finding: Finding) -> dict:
    data = finding.to_json()
    data.pop("path")
    return data


def _restore(data: dict, shown: str) -> Finding:
    return Finding.from_json({**data, "path": shown})
