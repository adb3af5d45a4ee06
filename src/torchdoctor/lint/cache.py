"""Content-hash cache of findings, so an unchanged tree re-checks near-instantly.

One JSON file per (doctor build, enabled rules, language): a change to any of them starts a
fresh file. Entries are keyed by absolute path and validated by a hash of the file's bytes.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from torchdoctor import __version__

CACHE_DIR_NAME = ".torchdoctor_cache"
_PACKAGE_DIR = Path(__file__).resolve().parent.parent


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def settings_key(codes: frozenset[str], lang: str) -> str:
    """Changes with the version, the rules and language, and any edit to the doctor's own code."""
    fingerprint = hashlib.blake2b(digest_size=8)
    fingerprint.update(f"{__version__}|{','.join(sorted(codes))}|{lang}".encode())
    for source in sorted(_PACKAGE_DIR.rglob("*.py")):
        stat = source.stat()
        fingerprint.update(f"{source.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return fingerprint.hexdigest()


class Cache:
    def __init__(self, root: Path, key: str) -> None:
        self.directory = root / CACHE_DIR_NAME
        self.file = self.directory / f"{key}.json"
        self.entries: dict[str, list] = {}
        self.dirty = False
        try:
            with open(self.file, encoding="utf-8") as handle:
                loaded = json.load(handle)
            if isinstance(loaded, dict):
                self.entries = loaded
        except (OSError, ValueError):
            pass  # no cache yet, or a damaged one: start afresh

    def get(self, path: str, file_digest: str) -> list[dict] | None:
        entry = self.entries.get(path)
        if entry and entry[0] == file_digest:
            return entry[1]
        return None

    def put(self, path: str, file_digest: str, findings: list[dict]) -> None:
        self.entries[path] = [file_digest, findings]
        self.dirty = True

    def save(self) -> None:
        """Write atomically; a cache that cannot be written is silently skipped."""
        if not self.dirty:
            return
        try:
            self.directory.mkdir(exist_ok=True)
            ignore = self.directory / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# Created by torchdoctor\n*\n", encoding="utf-8")
            self._remove_stale()
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(self.entries, handle, separators=(",", ":"))
            os.replace(tmp, self.file)
        except OSError:
            pass

    def _remove_stale(self) -> None:
        # Keep a few settings files (e.g. default rules and ALL); drop the oldest beyond that.
        files = sorted(self.directory.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in files[7:]:
            old.unlink(missing_ok=True)
