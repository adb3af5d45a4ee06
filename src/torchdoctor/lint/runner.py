"""Check many files: cache look-ups in this process, the rest in parallel workers."""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from functools import lru_cache, partial
from typing import Callable, Literal

from torchdoctor.catalog._registry import engine_finding, neighbour_readers
from torchdoctor.lint import cache as cache_module
from torchdoctor.lint import notebook
from torchdoctor.lint.checker import check_source, fix_source, without_cyclic_gc
from torchdoctor.lint.config import Settings
from torchdoctor.lint.neighbours import directory_listing
from torchdoctor.lint.lines import split_lines
from torchdoctor.lint.native import check_native, fix_native, is_native
from torchdoctor.lint.pool import Failure, attempt, map_in_workers
from torchdoctor.lint.project import NO_FACTS, FactsReader, ProjectFacts, facts_for_check
from torchdoctor.lint.source import (
    SourceFile,
    UnreadableFile,
    UnwritableFile,
    decode,
    decode_native,
    encode,
    write_in_place,
)
from torchdoctor.report.finding import Finding
from torchdoctor.report.localize import localize
from torchdoctor.user_files import limit_for, read_regular_file

FixMode = Literal["check", "fix", "diff"]
# Below this many files a worker pool costs more than it saves.
MIN_FILES_FOR_POOL = 8
# How long a check interrupted during --fix waits for its workers to finish the file at hand.
FIX_WRITE_GRACE_SECONDS = 5.0


@dataclass
class Job:
    codes: frozenset[str]
    lang: str = "en"  # of the outcomes: findings are made in English, localized at the end
    mode: FixMode = "check"
    unsafe: bool = False
    # Where --fix may write through a symbolic link: the checked directories and the
    # directories of the checked files (see `_write_fix`).
    write_roots: tuple[str, ...] = ()
    # What the rest of the project says (lint/project.py), found before any file is checked.
    project: ProjectFacts = NO_FACTS


@dataclass
class FileOutcome:
    path: str  # as shown to the user
    findings: list[Finding]
    internal_errors: list[str] = field(default_factory=list)
    fixed: int = 0
    diff: str = ""
    warnings: list[str] = field(default_factory=list)  # one line each, e.g. a fix not written


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


@lru_cache(maxsize=8)
def _reads_neighbours(codes: frozenset[str]) -> bool:
    return not codes.isdisjoint(neighbour_readers())


def _neighbours(path: Path, job: Job) -> bytes:
    """The names next to a file, for the rules whose findings depend on them: a cached result
    is stale when they change."""
    if not _reads_neighbours(job.codes):
        return b""
    # Only what can be imported matters: modules and package directories, not dot-files (the
    # cache directory itself appears after the first run).
    names = [
        name
        for name in directory_listing(str(path.parent)) or ()
        if not name.startswith(".") and (name.endswith(".py") or "." not in name)
    ]
    return "\0".join(sorted(names)).encode()


def check_files(
    files: list[Path],
    settings: Settings,
    job: Job,
    jobs: int,
    use_cache: bool,
    cwd: Path,
    scopes: list[Path] | None = None,
    on_done: Callable[[int], None] = lambda count: None,
) -> list[FileOutcome]:
    """Outcomes for every file, in the order given. `scopes`: the directories and files the user
    named (resolved as by discovery; default: the files), which place the cache and bound
    where fixes may be written. `on_done(n)`: n more files are done (for a progress line)."""
    cwd = cwd.resolve()
    scopes = files if scopes is None else scopes
    if job.mode == "fix":
        job = replace(
            job,
            write_roots=tuple(
                os.path.realpath(s if os.path.isdir(s) else s.parent) for s in scopes
            ),
        )
    outcomes: dict[int, FileOutcome] = {}
    # Every file is read first: its digest for the cache, and what it tells of the project,
    # on which findings depend (so the cache key holds the project's facts). With a cache, the
    # bytes are let go and only the files it cannot answer are read again, to be checked;
    # without one, every file is checked, and its bytes are kept from this first read.
    use_store = use_cache and job.mode == "check"
    facts = FactsReader()
    config_dir = settings.root if settings.config_file is not None else None
    # What each unchanged file told of the project last time: not read from its text again.
    known_facts = cache_module.FactsCaches(scopes, config_dir) if use_store else None
    read: dict[int, tuple[str, int, bytes | None]] = {}  # index -> (digest, size, bytes kept)
    for index, path in enumerate(files):
        try:
            data = read_regular_file(path)
        except OSError as error:  # RefusedFile (a FIFO, a device, too large) says why
            outcomes[index] = _unreadable(display_path(path, cwd), error.strerror or str(error))
            continue
        if known_facts is None:
            if path.suffix == ".py":
                facts.add(data)
            read[index] = ("", len(data), data)
            continue
        file_digest = cache_module.digest(data + _neighbours(path, job))
        if path.suffix == ".py":
            known = known_facts.get(path, file_digest)
            if known is None:
                known_facts.put(path, file_digest, facts.add(data))
            else:
                facts.add_facts(known)
        read[index] = (file_digest, len(data), None)
    if known_facts is not None:
        known_facts.save()
    searched = [scope for scope in scopes if scope.is_dir()]
    job = replace(job, project=facts_for_check(files, scopes, facts, searched))
    store = (
        cache_module.ProjectCaches(
            scopes, config_dir, cache_module.settings_key(job.codes) + job.project.digest
        )
        if use_store
        else None
    )
    pending: list[_Pending] = []
    for index, (file_digest, size, data) in read.items():
        path = files[index]
        shown = display_path(path, cwd)
        if store is not None:  # the cache's answer, or the file read again to be checked
            cached = store.get(path, file_digest, shown, size)
            if cached is not None:
                outcomes[index] = FileOutcome(shown, cached)
                continue
            try:
                data = read_regular_file(path)
            except OSError as error:  # gone or changed since it was read above
                outcomes[index] = _unreadable(shown, error.strerror or str(error))
                continue
            # What is checked is what the cache will hold, if the file changed meanwhile.
            file_digest = cache_module.digest(data + _neighbours(path, job))
        pending.append(_Pending(index, file_digest, (str(path), shown, data)))

    on_done(len(files) - len(pending))
    for item, outcome in zip(pending, _map(job, [item.task for item in pending], jobs, on_done)):
        outcomes[item.index] = outcome
        if store is not None and not outcome.internal_errors:
            store.put(Path(item.task[0]), item.digest, outcome.findings)
    if store is not None:
        store.save()

    results = []
    for index, path in enumerate(files):
        outcome = outcomes[index]
        drop_per_file_ignores(outcome, path, settings)
        localize(outcome.findings, job.lang)  # checked and cached alike are in English
        results.append(outcome)
    return results


def drop_per_file_ignores(outcome: FileOutcome, path: Path, settings: Settings) -> None:
    """Remove the findings that `per-file-ignores` silences for this file."""
    if not settings.per_file_ignores:
        return
    ignored = settings.per_file_ignore_matcher(
        display_path(path.resolve(), settings.root.resolve())
    )
    outcome.findings = [f for f in outcome.findings if f.code not in ignored]


def check_bytes(data: bytes, shown: str, job: Job) -> tuple[FileOutcome, str, bytes]:
    """A source read from stdin, decoded like a file named `shown`: the outcome, the decoded
    text (for excerpts), and the bytes after the fixes, in the input's encoding (the input
    itself when nothing was fixed). More than the size limit for such a file is not checked."""
    outcome, text, fixed = _check_stdin(data, shown, job)
    localize(outcome.findings, job.lang)
    return outcome, text, fixed


def _check_stdin(data: bytes, shown: str, job: Job) -> tuple[FileOutcome, str, bytes]:
    limit = limit_for(shown)
    if len(data) > limit:
        return (
            _unreadable(shown, f"too large to check (over {limit // (1024 * 1024)} MiB)"),
            "",
            data,
        )
    try:
        outcome, source, fixed_text = _check_decoded(job, shown, shown, data)
    except UnreadableFile as error:
        return _unreadable(shown, str(error)), "", data
    if not outcome.fixed:
        return outcome, source.text, data
    try:
        return outcome, source.text, encode(fixed_text, source.encoding)
    except UnwritableFile as error:
        return _unfixed(job, shown, shown, data, str(error)), source.text, data


def _map(
    job: Job, tasks: list[tuple[str, str, bytes]], jobs: int, on_done: Callable[[int], None]
) -> list[FileOutcome]:
    """The outcome of every task; a file whose check failed (a bug, a worker killed) is an
    internal error of its own, and the others are still checked."""
    work = partial(_process, job)
    if jobs <= 1 or len(tasks) < MIN_FILES_FOR_POOL:
        results = []
        for task in tasks:
            results.append(attempt(work, task))
            on_done(1)
    else:
        # A worker stopped in the middle of --fix may be writing a file: it may finish that.
        grace = FIX_WRITE_GRACE_SECONDS if job.mode == "fix" else 0.0
        results = map_in_workers(work, tasks, min(jobs, len(tasks)), grace=grace, on_done=on_done)
    return [
        _not_checked(task[1], result.reason) if isinstance(result, Failure) else result
        for task, result in zip(tasks, results)
    ]


def _not_checked(shown: str, reason: str) -> FileOutcome:
    return FileOutcome(shown, [], internal_errors=[f"{shown}: not checked: {reason}"])


@without_cyclic_gc  # the notebook's parse and the fixes too, not only the check
def _process(job: Job, task: tuple[str, str, bytes]) -> FileOutcome:
    absolute, shown, data = task
    try:
        outcome, source, fixed_text = _check_decoded(job, absolute, shown, data)
    except UnreadableFile as error:
        return _unreadable(shown, str(error))
    if job.mode == "fix" and outcome.fixed:
        refusal = _write_fix(absolute, data, fixed_text, source.encoding, job.write_roots)
        if refusal is not None:
            return _unfixed(job, absolute, shown, data, refusal)
    return outcome


def _check_decoded(
    job: Job, name: str, shown: str, data: bytes
) -> tuple[FileOutcome, SourceFile, str]:
    """Decode a file's bytes by its kind (`name`) and check or fix it: the outcome, the source
    and the fixed text. Raises UnreadableFile."""
    if is_native(name):
        source = decode_native(data)
        process = _process_native
    else:
        source = decode(data)
        process = _process_notebook if name.endswith(".ipynb") else _process_source
    outcome, fixed_text = process(source, shown, job)
    return outcome, source, fixed_text


def _unfixed(job: Job, name: str, shown: str, data: bytes, reason: str) -> FileOutcome:
    """A file whose fixes were not written: all of its findings, and why in one line."""
    outcome, _, _ = _check_decoded(replace(job, mode="check"), name, shown, data)
    outcome.warnings.append(f"{shown}: not fixed: {reason}")
    return outcome


def _write_fix(
    absolute: str, original: bytes, text: str, encoding: str, write_roots: tuple[str, ...]
) -> str | None:
    """Write a fixed file in place; the reason in a few words when it was not written. A
    symbolic link is written through only to a file inside `write_roots`."""
    if os.path.islink(absolute):
        target = os.path.realpath(absolute)
        if not any(target.startswith(os.path.join(root, "")) for root in write_roots):
            return f"a symbolic link to {target}, outside the checked paths"
    try:
        write_in_place(Path(absolute), original, encode(text, encoding))
    except UnwritableFile as error:
        return str(error)
    except OSError as error:
        return error.strerror or str(error)
    return None


def _process_source(
    source: SourceFile, shown: str, job: Job, check=None, fix=None
) -> tuple[FileOutcome, str]:
    check = check or partial(check_source, project=job.project)
    fix = fix or partial(fix_source, project=job.project)
    if job.mode == "check":
        result = check(source.text, shown, job.codes)
        return FileOutcome(shown, result.findings, result.internal_errors), source.text
    fixed = fix(source.text, shown, job.codes, job.unsafe)
    outcome = FileOutcome(
        shown, fixed.remaining.findings, fixed.remaining.internal_errors, fixed=fixed.fixed
    )
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
    skipped, broken, tree = notebook.broken_cells(book, shown)
    notebook.join_cells(book, skipped)
    cells = [cell for cell, _ in book.line_map]  # what a cell's last statement shows
    # Parsed once, not again.
    check = partial(check_source, tree=tree, cells=cells, project=job.project)
    fix = partial(fix_source, cells=cells, project=job.project)
    outcome, fixed_source = _process_source(
        SourceFile(book.source, "utf-8"), shown, job, check, fix
    )
    outcome.findings = broken + [notebook.locate(f, book) for f in outcome.findings]
    outcome.findings.sort(key=Finding.sort_key)
    fixed_text = notebook.split_cells(book, fixed_source) if outcome.fixed else source.text
    if outcome.diff:
        outcome.diff = _diff(source.text, fixed_text, shown)
    return outcome, fixed_text


def _diff(old: str, new: str, shown: str) -> str:
    return "".join(
        difflib.unified_diff(
            split_lines(old, keepends=True),
            split_lines(new, keepends=True),
            fromfile=f"a/{shown}",
            tofile=f"b/{shown}",
        )
    )


def _unreadable(shown: str, reason: str) -> FileOutcome:
    return FileOutcome(shown, [engine_finding("unreadable-source", reason, shown)])
