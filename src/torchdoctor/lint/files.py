"""Which files to check: discovery under directories, respecting .gitignore and excludes."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from torchdoctor.errors import UsageError
from torchdoctor.user_files import read_regular_file

if TYPE_CHECKING:  # imported where used: `explain` reaches this module and never needs it
    import pathspec

# Python, notebooks, and the C++/CUDA sources of extensions that live next to Python code.
SOURCE_SUFFIXES = (".py", ".ipynb", ".cpp", ".cc", ".cxx", ".cu", ".cuh", ".h", ".hpp")
# Never worth descending into: VCS data, caches, virtualenvs, build output.
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".torchdoctor_cache",
        ".tox",
        ".nox",
        ".venv",
        "venv",
        ".eggs",
        "node_modules",
        "build",
        "site-packages",
        ".ipynb_checkpoints",
    }
)


@dataclass
class Discovery:
    """What `check` was asked to look at, and what it found there."""

    # Absolute and sorted. Directories are resolved; a file keeps its own name, so a symbolic
    # link stays a link (a fix must not write through it out of the checked paths).
    files: list[Path]
    # Each directory searched (resolved) and each file named: what the cache may prune.
    scopes: list[Path]
    # One line per path that could not be searched; the files under it were not checked.
    errors: list[str]


class NoPatterns:
    """What `compile_patterns` gives for no pattern: matches nothing, and spares importing
    pathspec (whose import starts asyncio since 1.0: a tenth of a warm run)."""

    patterns: list = []

    def match_file(self, file: str) -> bool:
        return False


def compile_patterns(patterns: list[str], what: str) -> pathspec.PathSpec | NoPatterns:
    """Gitignore-style patterns given by the user; a bad one is a usage error naming it."""
    if not patterns:
        return NoPatterns()
    import pathspec

    try:
        return pathspec.PathSpec.from_lines("gitwildmatch", patterns)
    except ValueError:
        bad = next(pattern for pattern in patterns if not _parses(pattern))
        raise UsageError(f"{what}: invalid pattern {bad!r}") from None


def discover(
    paths: list[str], exclude: list[str], root: Path, force_exclude: bool = False
) -> Discovery:
    """The files to check. Explicit file arguments are always checked, unless `force_exclude`
    (pre-commit passes every changed file by name); what is not a regular file (a FIFO, a
    device) is kept for the reader to report."""
    excluded = compile_patterns(exclude, "exclude")
    root = root.resolve()
    found: dict[Path, None] = {}
    links: list[Path] = []
    scopes: list[Path] = []
    errors: list[str] = []
    for raw in paths:
        named = Path(raw).absolute()
        path = named.parent.resolve() / named.name
        try:
            is_dir = stat.S_ISDIR(os.stat(path).st_mode)
        except OSError as error:
            errors.append(f"{raw}: {_reason(error)}")
            continue
        if is_dir:
            path = path.resolve()
            scopes.append(path)
            for file, is_link in _walk(path, raw, excluded, root, errors):
                found[file] = None
                if is_link:
                    links.append(file)
            continue
        scopes.append(path)
        if not (force_exclude and _ignored(path, False, [], excluded, root)):
            found[path] = None
            if os.path.islink(path):
                links.append(path)
    for link in links:  # a file found under its own name too is checked (and fixed) once
        if Path(os.path.realpath(link)) in found:
            del found[link]
    return Discovery(sorted(found), scopes, sorted(set(errors)))  # paths named twice: once


def _walk(
    top: Path, raw: str, excluded: pathspec.PathSpec | NoPatterns, root: Path, errors: list[str]
):
    """(path, is a symbolic link) of each source file under `top`; a directory that cannot be
    listed is one line in `errors`, shown under the name the user gave (`raw`)."""
    pending = [(top, list(_gitignores_above(top)))]
    while pending:
        here, ignores = pending.pop()
        try:
            with os.scandir(here) as listing:
                entries = list(listing)
        except OSError as error:
            shown = os.path.normpath(os.path.join(raw, os.path.relpath(here, top)))
            errors.append(
                f"{shown}: cannot list this directory ({_reason(error)}); "
                "the files under it were not checked"
            )
            continue
        spec = _read_gitignore(here)
        if spec is not None:
            ignores = [*ignores, (here, spec)]
        for entry in entries:
            child = here / entry.name
            if _is_directory(entry):  # a link to a directory is neither walked nor checked
                if (
                    not entry.is_symlink()
                    and entry.name not in SKIPPED_DIRS
                    and not os.path.exists(child / "pyvenv.cfg")
                    and not _ignored(child, True, ignores, excluded, root)
                ):
                    pending.append((child, ignores))
            elif entry.name.endswith(SOURCE_SUFFIXES) and not _ignored(
                child, False, ignores, excluded, root
            ):
                yield child, entry.is_symlink()


def _is_directory(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # a link into a directory we may not look at
        return False


def _reason(error: OSError) -> str:
    reason = error.strerror or str(error)
    return reason[:1].lower() + reason[1:]


def _ignored(
    path: Path, is_dir: bool, ignores, excluded: pathspec.PathSpec | NoPatterns, root: Path
) -> bool:
    if not ignores and not excluded.patterns:  # the common case: nothing to match against
        return False
    suffix = "/" if is_dir else ""
    if excluded.patterns:
        below_root = relative_posix(path, root)
        if below_root is not None and excluded.match_file(below_root + suffix):
            return True
    return any(spec.match_file(relative_posix(path, base) + suffix) for base, spec in ignores)


def relative_posix(path: Path, base: Path) -> str | None:
    """`path` relative to `base` in posix form, or None when it is not under `base`; by string
    operations (pathlib's `relative_to` and `parents` cost more than the match itself)."""
    text, prefix = str(path), str(base)
    if text == prefix:
        return "."
    prefix = os.path.join(prefix, "")
    if not text.startswith(prefix):
        return None
    relative = text[len(prefix) :]
    return relative if os.sep == "/" else relative.replace(os.sep, "/")


def _read_gitignore(directory: Path) -> pathspec.PathSpec | None:
    try:
        lines = read_regular_file(directory / ".gitignore").decode("utf-8", "replace").splitlines()
    except OSError:  # none, unreadable, or not a regular file
        return None
    import pathspec

    try:
        return pathspec.PathSpec.from_lines("gitwildmatch", lines)
    except ValueError:  # git skips the patterns it cannot parse; so do we
        return pathspec.PathSpec.from_lines(
            "gitwildmatch", [line for line in lines if _parses(line)]
        )


def _parses(pattern: str) -> bool:
    import pathspec

    try:
        pathspec.PathSpec.from_lines("gitwildmatch", [pattern])
    except ValueError:
        return False
    return True


def _gitignores_above(top: Path):
    """.gitignore files of the enclosing git repository, above `top` (top's own is read by the walk)."""
    chain = []
    for parent in top.parents:
        chain.append(parent)
        if os.path.exists(parent / ".git"):
            break
    else:
        return  # not inside a git repository: only .gitignore files under `top` count
    for parent in reversed(chain):
        spec = _read_gitignore(parent)
        if spec is not None:
            yield parent, spec
