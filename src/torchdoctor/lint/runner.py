"""Check many files: cache look-ups in this process, the rest in parallel workers."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import lru_cache, partial
from pathlib import Path
from typing import Callable

from torchdoctor.catalog._registry import neighbour_readers
from torchdoctor.lint import cache as cache_module
from torchdoctor.lint.config import Settings
from torchdoctor.lint.files import relative_posix
from torchdoctor.lint.job import FileOutcome, FixMode, Job, unreadable
from torchdoctor.lint.neighbours import directory_listing
from torchdoctor.lint.project import FactsReader, facts_for_check, file_facts, project_root
from torchdoctor.report.localize import localize
from torchdoctor.user_files import read_regular_file

__all__ = ["FileOutcome", "FixMode", "Job", "check_bytes", "check_files", "display_path"]

# Below this many files a worker pool costs more than it saves.
MIN_FILES_FOR_POOL = 8
# How long a check interrupted during --fix waits for its workers to finish the file at hand.
FIX_WRITE_GRACE_SECONDS = 5.0


@dataclass
class _Pending:
    """A file the cache could not answer: checked by a worker."""

    index: int
    digest: str
    task: tuple[str, str, bytes]  # absolute path, path as shown, contents


def display_path(path: Path, cwd: Path) -> str:
    """`path` relative to `cwd` in posix form when it lies under it, else as it is."""
    relative = relative_posix(path, cwd)
    return str(path) if relative is None else relative


@lru_cache(maxsize=8)
def _reads_neighbours(codes: frozenset[str]) -> bool:
    return not codes.isdisjoint(neighbour_readers())


class _Digests:
    """What a file's cached findings are valid for: its content, and for the rules whose
    findings depend on them, the names next to it (a cached result is stale when they change)."""

    def __init__(self, job: Job) -> None:
        self._reads_neighbours = _reads_neighbours(job.codes)
        self._neighbours: dict[str, str] = {}  # directory -> digest of the names that matter

    def of_file(self, path: Path, content: str) -> str:
        if not self._reads_neighbours:
            return content
        directory = os.path.dirname(path)
        names = self._neighbours.get(directory)
        if names is None:
            names = self._neighbours[directory] = cache_module.digest(_neighbour_names(directory))
        return cache_module.digest(f"{content}:{names}".encode())


def _neighbour_names(directory: str) -> bytes:
    # Only what can be imported matters: modules and package directories, not dot-files (the
    # cache directory itself appears after the first run).
    names = [
        name
        for name in directory_listing(directory) or ()
        if not name.startswith(".") and (name.endswith(".py") or "." not in name)
    ]
    # Whether the directory is a part of a package around it (TD703 reads it).
    above = directory_listing(os.path.dirname(directory)) or ()
    names.append("\0package above" if "__init__.py" in above else "")
    return "\0".join(sorted(names)).encode()


def _cached_facts(known_facts: cache_module.FactsCaches, path: Path, content: str):
    """The facts of a file whose content was known by its signature: from the cache, or read
    from the file when the cache's entry has not the right shape (None when the file changed
    or cannot be read)."""
    known = known_facts.get(path, content)
    if known is not None:
        return known
    try:
        data = read_regular_file(path)
    except OSError:
        return None
    if cache_module.digest(data) != content:
        return None
    found = file_facts(data)
    known_facts.put(path, content, found)
    return found


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
    """Outcomes for every file, in the order given (see `_check_project`). Files of different
    projects (scopes whose project roots are apart: `check projA projB`) are checked project
    by project, each with its own project's facts: one project's `train` method or clearing
    model says nothing of another's code."""
    scopes = files if scopes is None else scopes
    groups = _by_project(files, scopes)
    if len(groups) <= 1:
        return _check_project(files, settings, job, jobs, use_cache, cwd, scopes, on_done)
    outcomes: list[FileOutcome | None] = [None] * len(files)
    for indexes, group_scopes in groups:
        checked = _check_project(
            [files[i] for i in indexes], settings, job, jobs, use_cache, cwd, group_scopes, on_done
        )
        for index, outcome in zip(indexes, checked):
            outcomes[index] = outcome
    return [outcome for outcome in outcomes if outcome is not None]


def _by_project(files: list[Path], scopes: list[Path]) -> list[tuple[list[int], list[Path]]]:
    """The files (their indexes) and the scopes of each project among `scopes`: projects whose
    roots lie inside another's are that one's; a file under no root goes with the first."""
    rooted = [(project_root(Path(scope)), scope) for scope in scopes]
    roots = sorted({root for root, _ in rooted}, key=lambda root: len(root.parts))
    kept: list[Path] = []
    for root in roots:
        if not any(root == outer or outer in root.parents for outer in kept):
            kept.append(root)
    if len(kept) <= 1:
        return [(list(range(len(files))), scopes)]
    prefixes = [os.path.join(str(root), "") for root in kept]

    def owner(path: Path | str) -> int:
        real = os.path.join(os.path.realpath(path), "")
        return next((n for n, prefix in enumerate(prefixes) if real.startswith(prefix)), 0)

    groups: list[tuple[list[int], list[Path]]] = [([], []) for _ in kept]
    for root, scope in rooted:
        groups[owner(root)][1].append(scope)
    for index, path in enumerate(files):
        groups[owner(path)][0].append(index)
    return [group for group in groups if group[0]]


def _check_project(
    files: list[Path],
    settings: Settings,
    job: Job,
    jobs: int,
    use_cache: bool,
    cwd: Path,
    scopes: list[Path],
    on_done: Callable[[int], None],
) -> list[FileOutcome]:
    """Outcomes for the files of one project, in the order given. `scopes`: the directories and
    files the user named in it (resolved as by discovery; the files when none were), which
    place the cache and bound where fixes may be written. `on_done(n)`: n more files are done
    (for a progress line)."""
    cwd = cwd.resolve()
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
    digests = _Digests(job)

    def read_or_report(index: int, path: Path) -> bytes | None:
        try:
            return read_regular_file(path)
        except OSError as error:  # RefusedFile (a FIFO, a device, too large) says why
            outcomes[index] = unreadable(display_path(path, cwd), error.strerror or str(error))
            return None

    for index, path in enumerate(files):
        if known_facts is None:
            data = read_or_report(index, path)
            if data is None:
                continue
            if path.suffix == ".py":
                facts.add(data)
            read[index] = ("", len(data), data)
            continue
        # Taken before the file is read: a change after it shows on the next run.
        signature = cache_module.signature(path)
        content = known_facts.unchanged(path, signature)
        if content is None:
            data = read_or_report(index, path)
            if data is None:
                continue
            content = cache_module.digest(data)
            known = None
            if path.suffix == ".py":
                known = known_facts.get(path, content)
                if known is None:
                    known = facts.add(data, content)
                else:
                    facts.add_facts(known, content)
            known_facts.put(path, content, known, signature)
            size = len(data)
        else:
            assert signature is not None  # `unchanged` knows no content without one
            size = signature[0]
            if path.suffix == ".py":
                facts.add_later(content, partial(_cached_facts, known_facts, path, content))
        read[index] = (digests.of_file(path, content), size, None)
    job = replace(
        job,
        project=facts_for_check(
            files, scopes, facts, [scope for scope in scopes if scope.is_dir()], known_facts
        ),
    )
    if known_facts is not None:
        known_facts.save()
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
            data = read_or_report(index, path)  # gone or changed since it was read above
            if data is None:
                continue
            # What is checked is what the cache will hold, if the file changed meanwhile.
            file_digest = digests.of_file(path, cache_module.digest(data))
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
    from torchdoctor.lint.one_file import check_stdin

    outcome, text, fixed = check_stdin(data, shown, job)
    localize(outcome.findings, job.lang)
    return outcome, text, fixed


def _map(
    job: Job, tasks: list[tuple[str, str, bytes]], jobs: int, on_done: Callable[[int], None]
) -> list[FileOutcome]:
    """The outcome of every task; a file whose check failed (a bug, a worker killed) is an
    internal error of its own, and the others are still checked."""
    if not tasks:
        return []
    # Here: a re-run the cache answers whole needs neither the checker nor a pool.
    from torchdoctor.lint.one_file import process
    from torchdoctor.lint.pool import Failure, attempt, map_in_workers

    work = partial(process, job)
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
