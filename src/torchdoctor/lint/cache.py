"""Content-hash cache of findings, so an unchanged tree re-checks near-instantly.

The cache lives in `.torchdoctor_cache/` at the project root of the checked paths
(`project_root`), one JSON file per (doctor build, enabled rules, project facts): a change to
any starts a fresh file. Beside them, one file per doctor build holds what each file tells of
its project (lint/project.py), so that a re-run reads only the changed files' text for it.
Entries are keyed by the path relative to that root and validated by a hash of the file's
bytes; an entry of the wrong shape is a miss, and entries of files that were not seen where
they should have been are dropped when the file is written.

The language is not part of the key: a finding is stored in English with what its text is
made from (report/localize.py), and the runner writes it in the language asked for when it is
shown, as it does a fresh one.

The cache touches nothing but its own directory: a `.torchdoctor_cache` (or cache file) that is
a symbolic link or not what it should be is not used, and the only files it deletes are its
own, by their exact names.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
import time
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Callable, Generic, TypeVar

from torchdoctor import __version__
from torchdoctor.lint.project import (
    FileFacts,
    ProjectFacts,
    facts_from_json,
    facts_to_json,
    is_file_facts,
)
from torchdoctor.report.finding import Finding
from torchdoctor.report.localize import portable
from torchdoctor.report.stream import write_stderr
from torchdoctor.user_files import read_regular_file

CACHE_DIR_NAME = ".torchdoctor_cache"
# What marks a project root when no configuration file does.
PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")
# The names of the cache's own files: one per settings key, and the temporary file of a write.
# (The key of the settings and of the project's facts; 16 digits: that of older versions.)
_SETTINGS_FILE = re.compile(r"[0-9a-f]{16}(?:[0-9a-f]{16})?\.json")
# ... and those of the project facts of each file, one per version of the doctor.
_FACTS_FILE = re.compile(r"facts-[0-9a-f]{16}\.json")
# A few settings files stay, this run's included (e.g. default rules and ALL); older ones go.
_KEPT_SETTINGS_FILES = 7
# Far above a real cache (transformers' 3,000 files: 0.4 MB): a larger file is not read.
MAX_CACHE_BYTES = 256 * 1024 * 1024
_PACKAGE_DIR = Path(__file__).resolve().parent.parent
_Store = TypeVar("_Store", bound="_CacheFile")


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def settings_key(codes: frozenset[str]) -> str:
    """Changes with the version, the rules, and any edit to the doctor's own code."""
    fingerprint = hashlib.blake2b(digest_size=8)
    fingerprint.update(f"{_package_fingerprint()}|{','.join(sorted(codes))}".encode())
    return fingerprint.hexdigest()


@lru_cache(maxsize=1)
def _package_fingerprint() -> str:
    """Changes with the version and any edit to the doctor's own code."""
    fingerprint = hashlib.blake2b(digest_size=8)
    fingerprint.update(__version__.encode())
    for source in sorted(_PACKAGE_DIR.rglob("*.py")):
        info = source.stat()
        fingerprint.update(f"{source.name}:{info.st_size}:{info.st_mtime_ns}".encode())
    return fingerprint.hexdigest()


def project_root(scope: Path, config_dir: Path | None) -> Path:
    """Where the cache of a checked path (a resolved directory, or a file) lives: the
    configuration file's directory when the path is inside it, else the nearest enclosing
    directory with a project marker, else the checked directory (a file's own directory)."""
    directory = scope if os.path.isdir(scope) else scope.parent
    if config_dir is not None and (directory == config_dir or config_dir in directory.parents):
        return config_dir
    for candidate in (directory, *directory.parents):
        if any(os.path.exists(candidate / marker) for marker in PROJECT_MARKERS):
            return candidate
    return directory


class _Roots(Generic[_Store]):
    """One store per project root of the checked paths (usually one root)."""

    def __init__(self, scopes: list[Path], config_dir: Path | None, make: Callable[[Path], _Store]):
        roots = {project_root(scope, config_dir) for scope in scopes}
        # Innermost first: a file belongs to the nearest root that holds it.
        self._caches = [
            make(root) for root in sorted(roots, key=lambda r: len(r.parts), reverse=True)
        ]
        self._scopes = scopes

    def save(self) -> None:
        for cache in self._caches:
            cache.save(self._scopes)

    def _cache_for(self, path: Path) -> _Store | None:
        text = str(path)
        return next((cache for cache in self._caches if text.startswith(cache.prefix)), None)


class ProjectCaches(_Roots["Cache"]):
    """The findings caches of the project roots of the checked paths, for one settings key."""

    def __init__(self, scopes: list[Path], config_dir: Path | None, key: str) -> None:
        super().__init__(scopes, config_dir, lambda root: Cache(root, key))

    def get(self, path: Path, file_digest: str, shown: str, size: int) -> list[Finding] | None:
        cache = self._cache_for(path)
        return cache.get(path, file_digest, shown, size) if cache else None

    def put(self, path: Path, file_digest: str, findings: list[Finding]) -> None:
        cache = self._cache_for(path)
        if cache:
            cache.put(path, file_digest, findings)


class FactsCaches(_Roots["FactsCache"]):
    """What each file tells of its project (lint/project.py), by the digest of its content: a
    re-run reads the facts of the files that did not change from here, not from their text.
    Each entry also holds what `os.stat` said of the file when it was read (`Signature`): a
    file that still says the same is not read again to know its digest. And the project's
    facts as a whole are kept by the digests they were added up from (a `FactsStore`)."""

    def __init__(self, scopes: list[Path], config_dir: Path | None) -> None:
        super().__init__(scopes, config_dir, FactsCache)
        self._started_ns = time.time_ns()

    def get(self, path: Path, file_digest: str) -> FileFacts | None:
        cache = self._cache_for(path)
        return cache.get(path, file_digest) if cache else None

    def put(
        self,
        path: Path,
        file_digest: str,
        facts: FileFacts | None,
        signature: Signature | None = None,
    ) -> None:
        """Keep `facts` (None for a file that is not a Python module: its signature only) of
        this content, and the signature taken before it was read unless the file may have
        changed since without the signature showing it (`_trusted`)."""
        cache = self._cache_for(path)
        if cache:
            cache.put(path, file_digest, facts, self._trusted(signature))

    def unchanged(self, path: Path, signature: Signature | None) -> str | None:
        """The digest of the content read when the file last had this signature, or None."""
        cache = self._cache_for(path)
        return cache.unchanged(path, signature) if cache and signature else None

    def project_facts(self, key: str) -> ProjectFacts | None:
        return self._caches[0].project_facts(key) if len(self._caches) == 1 else None

    def keep_project_facts(self, key: str, facts: ProjectFacts) -> None:
        if len(self._caches) == 1:
            self._caches[0].keep_project_facts(key, facts)

    def _trusted(self, signature: Signature | None) -> Signature | None:
        """The signature, unless the file changed too shortly before this run started: a
        change within the file system's clock tick could then leave it unchanged (git's
        "racy clean" files)."""
        if signature is None:
            return None
        if max(signature[1], signature[2]) >= self._started_ns - _RACY_NS:
            return None
        return signature


# What os.stat tells of a regular file: size, modification and change times (ns), inode.
Signature = list[int]
# A file changed less than this before the run is read again on the next (see `_trusted`).
_RACY_NS = 2_000_000_000


def signature(path: Path) -> Signature | None:
    """What `os.stat` tells of a regular file (a link is followed, as reading it does), or None
    for anything else."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]


class _CacheFile:
    """One JSON file in a project root's cache directory: an entry per file (by its path from
    the root), each the file's digest and what was learnt from that content. Files of the
    same family (`family`, a pattern of names) but other keys are old: `kept` of them stay."""

    family = _SETTINGS_FILE
    kept = _KEPT_SETTINGS_FILES
    entry_sizes: tuple[int, ...] = (2,)  # [digest, value]

    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.prefix = os.path.join(str(root), "")
        self.directory = root / CACHE_DIR_NAME
        self.file = self.directory / name
        self.entries: dict = {}
        self.seen: set[str] = set()
        self.dirty = False
        self.usable = self._load()

    def _stored(self, path: Path, file_digest: str) -> object:
        """What is stored for this content of `path`, or None."""
        key = self._key(path)
        self.seen.add(key)
        entry = self.entries.get(key)
        if isinstance(entry, list) and len(entry) in self.entry_sizes and entry[0] == file_digest:
            return entry[1]
        return None

    def _store(self, path: Path, file_digest: str, value: object) -> None:
        self.entries[self._key(path)] = [file_digest, value]
        self.dirty = True

    def save(self, scopes: list[Path]) -> None:
        """Write the entries, without those of files gone or no longer checked; a cache that
        cannot be written is silently skipped."""
        if not self.usable:
            return
        entries = self._pruned(scopes)
        if entries is None:
            return
        try:
            self._write(entries)
        except OSError:
            pass

    def _key(self, path: Path) -> str:
        return str(path)[len(self.prefix) :].replace(os.sep, "/")

    def _load(self) -> bool:
        """Read the cache file; False when the cache must not be used at all."""
        try:
            directory = os.lstat(self.directory)
        except FileNotFoundError:
            return True  # the first run here
        except OSError:
            return False
        if not stat.S_ISDIR(directory.st_mode):
            _warn_once(
                f"torchdoctor: warning: {self.directory} is {_kind(directory.st_mode)}, "
                "not a directory: the cache is not used\n"
            )
            return False
        try:
            file = os.lstat(self.file)
        except OSError:
            return True  # no cache for these settings yet
        if not stat.S_ISREG(file.st_mode):
            _warn_once(
                f"torchdoctor: warning: {self.file} is {_kind(file.st_mode)}, "
                "not a regular file: the cache is not used\n"
            )
            return False
        try:
            loaded = json.loads(read_regular_file(self.file, MAX_CACHE_BYTES))
        except (OSError, ValueError, RecursionError):
            return True  # unreadable or damaged: start afresh, it is rewritten
        if isinstance(loaded, dict):
            self.entries = loaded
        else:
            self.dirty = True
        return True

    def _pruned(self, scopes: list[Path]) -> dict | None:
        """The entries to write, or None when the file on disk is already right. An entry not
        looked up in this run is dropped when its file lies in a checked directory (it was
        deleted or excluded) or no longer exists."""
        directories, files = [], []
        for scope in scopes:
            if (str(scope) + os.sep).startswith(self.prefix):
                (directories if os.path.isdir(scope) else files).append(self._key(scope))
        in_scope = _scope_test(directories, files)
        unseen = [key for key in self.entries if key not in self.seen]
        gone = {key for key in unseen if in_scope(key)}
        if not self.dirty and not gone:
            return None
        gone |= {key for key in unseen if key not in gone and not os.path.exists(self.prefix + key)}
        return {key: entry for key, entry in self.entries.items() if key not in gone}

    def _write(self, entries: dict) -> None:
        try:
            os.mkdir(self.directory)
        except FileExistsError:
            if not stat.S_ISDIR(os.lstat(self.directory).st_mode):
                return  # something took its place since it was read
        _create_once(self.directory / ".gitignore", b"# Created by torchdoctor\n*\n")
        self._remove_old_files()
        # mkstemp creates a new file (O_EXCL: never through a link); os.replace swaps names.
        fd, temporary = tempfile.mkstemp(
            dir=self.directory, prefix=f"{self.file.name}.", suffix=".tmp"
        )
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(entries, handle, separators=(",", ":"))
            os.replace(temporary, self.file)
        except BaseException:
            os.unlink(temporary)
            raise

    def _remove_old_files(self) -> None:
        others = []
        with os.scandir(self.directory) as listing:
            for entry in listing:
                if (
                    self.family.fullmatch(entry.name)
                    and entry.name != self.file.name
                    and entry.is_file(follow_symlinks=False)
                ):
                    others.append((entry.stat(follow_symlinks=False).st_mtime, entry.path))
        for _, path in sorted(others, reverse=True)[self.kept - 1 :]:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass  # another run removed it first


class Cache(_CacheFile):
    """The findings of each file of one project root, for one settings key."""

    def __init__(self, root: Path, key: str) -> None:
        super().__init__(root, f"{key}.json")

    def get(self, path: Path, file_digest: str, shown: str, size: int) -> list[Finding] | None:
        """The findings stored for this content, or None (also for an entry of the wrong shape:
        it is checked again and replaced). `size` bounds the positions a finding can have."""
        stored = self._stored(path, file_digest)
        if not isinstance(stored, list):
            return None
        try:
            return [_restore(item, shown, size) for item in stored]
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def put(self, path: Path, file_digest: str, findings: list[Finding]) -> None:
        if not all(portable(f) for f in findings):
            return  # its text could not be written in another language: checked every time
        self._store(path, file_digest, [_strip_path(f) for f in findings])


class FactsCache(_CacheFile):
    """The project facts of each file of one project root, for this version of the doctor."""

    family = _FACTS_FILE
    kept = 2
    entry_sizes = (2, 3)  # [digest, facts], and the signature since this version

    def __init__(self, root: Path) -> None:
        super().__init__(root, f"facts-{_package_fingerprint()}.json")

    def get(self, path: Path, file_digest: str) -> FileFacts | None:
        stored = self._stored(path, file_digest)
        return stored if is_file_facts(stored) else None  # type: ignore[return-value]

    def put(
        self, path: Path, file_digest: str, facts: FileFacts | None, signature: Signature | None
    ) -> None:
        key = self._key(path)
        if self.entries.get(key) != [file_digest, facts, signature]:
            self.entries[key] = [file_digest, facts, signature]
            self.dirty = True

    def unchanged(self, path: Path, signature: Signature) -> str | None:
        key = self._key(path)
        entry = self.entries.get(key)
        if type(entry) is list and len(entry) == 3 and entry[2] == signature:
            self.seen.add(key)
            return entry[0] if type(entry[0]) is str else None
        return None

    def project_facts(self, key: str) -> ProjectFacts | None:
        self.seen.add(_PROJECT_KEY)
        entry = self.entries.get(_PROJECT_KEY)
        if isinstance(entry, list) and len(entry) == 2 and entry[0] == key:
            return facts_from_json(entry[1])
        return None

    def keep_project_facts(self, key: str, facts: ProjectFacts) -> None:
        self.seen.add(_PROJECT_KEY)
        self.entries[_PROJECT_KEY] = [key, facts_to_json(facts)]
        self.dirty = True

    def _pruned(self, scopes: list[Path]) -> dict | None:
        """Only the entries of files that no longer exist go: a run that checks part of a
        directory (files grouped by their configs) still keeps the other files' facts."""
        gone = {
            key
            for key in self.entries
            if key not in self.seen
            and key != _PROJECT_KEY
            and not os.path.exists(self.prefix + key)
        }
        if not self.dirty and not gone:
            return None
        return {key: entry for key, entry in self.entries.items() if key not in gone}


# The entry of a project's facts as a whole: no file's path from the root is this.
_PROJECT_KEY = "\0project"
_warned: set[str] = set()


def _warn_once(message: str) -> None:
    """A warning about the cache's directory, which both of a run's caches read, shown once."""
    if message not in _warned:
        _warned.add(message)
        write_stderr(message)


def _scope_test(directories: list[str], files: list[str]):
    """key -> whether it lies in one of the checked directories or is a checked file."""
    if "" in directories:
        return lambda key: True
    prefixes = tuple(directory + "/" for directory in directories)
    named = frozenset(files)
    return lambda key: key in named or key.startswith(prefixes)


def _create_once(path: Path, content: bytes) -> None:
    """Write a new file; one that exists (or a link in its place) is left alone."""
    try:
        fd = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644
        )
    except FileExistsError:
        return
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)


def _kind(mode: int) -> str:
    return (
        "a symbolic link"
        if stat.S_ISLNK(mode)
        else "a directory"
        if stat.S_ISDIR(mode)
        else "a regular file"
        if stat.S_ISREG(mode)
        else "a special file"
    )


# What a stored finding's text is made from (see report/localize.py): cache-only keys.
_TEMPLATE, _TITLES = "_template", "_titles"


def _strip_path(finding: Finding) -> dict:
    assert finding.template is not None  # `put` stores portable findings only
    data = finding.to_json()
    data.pop("path")
    data[_TEMPLATE] = list(finding.template)
    if finding.fix is not None and finding.fix.titles:
        data["fix"][_TITLES] = finding.fix.titles
    return data


def _restore(data: dict, shown: str, size: int) -> Finding:
    """A finding read back from the cache; ValueError (or KeyError, TypeError) when it is not
    one the checker could have written for a file of `size` bytes."""
    data = dict(data)
    template = data.pop(_TEMPLATE, None)
    titles = None
    if isinstance(data.get("fix"), dict) and _TITLES in data["fix"]:
        data["fix"] = dict(data["fix"])
        titles = data["fix"].pop(_TITLES)
    finding = Finding.from_json({**data, "path": shown})
    positions = (
        finding.line,
        finding.column,
        finding.end_line,
        finding.end_column,
        finding.cell or 0,
    )
    texts = (finding.code, finding.name, finding.message)
    if not (
        all(type(n) is int and 0 <= n <= size + 1 for n in positions)
        and all(isinstance(t, str) for t in texts)
        and (
            finding.fix is None
            or isinstance(finding.fix.title, str)
            and finding.fix.applicability in ("safe", "unsafe", "display")
        )
    ):
        raise ValueError("not a finding")
    if template is not None:
        variant, fields = template
        if not (isinstance(variant, str) and isinstance(fields, dict)):
            raise ValueError("not a template")
        finding.template = (variant, fields)
    if titles is not None:
        if not (
            isinstance(titles, dict)
            and finding.fix is not None
            and all(isinstance(text, str) for text in titles.values())
        ):
            raise ValueError("not a title")
        finding.fix = replace(finding.fix, titles=titles)
    return finding
