"""Which files to check: discovery under directories, respecting .gitignore and excludes."""
from __future__ import annotations

import os
from pathlib import Path

import pathspec

from torchdoctor.errors import UsageError

# Python, notebooks, and the C++/CUDA sources of extensions that live next to Python code.
SOURCE_SUFFIXES = (".py", ".ipynb", ".cpp", ".cc", ".cxx", ".cu", ".cuh", ".h", ".hpp")
# Never worth descending into: VCS data, caches, virtualenvs, build output.
SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".torchdoctor_cache", ".tox", ".nox", ".venv", "venv", ".eggs", "node_modules",
    "build", "site-packages", ".ipynb_checkpoints",
})


def discover(paths: list[str], exclude: list[str], root: Path, force_exclude: bool = False) -> list[Path]:
    """Absolute paths of the files to check, sorted. Explicit file arguments are always checked,
    unless `force_exclude` (pre-commit passes every changed file by name)."""
    excluded = pathspec.PathSpec.from_lines("gitwildmatch", exclude)
    root = root.resolve()
    found: dict[Path, None] = {}
    for raw in paths:
        path = Path(raw).resolve()
        if not path.exists():
            raise UsageError(f"{raw}: no such file or directory")
        if path.is_file():
            if not (force_exclude and _ignored(path, False, [], excluded, root)):
                found[path] = None
            continue
        for file in _walk(path, excluded, root):
            found[file] = None
    return sorted(found)


def _walk(top: Path, excluded: pathspec.PathSpec, root: Path):
    ignores = list(_gitignores_above(top))
    for dirpath, dirnames, filenames in os.walk(top):
        here = Path(dirpath)
        ignores = [(base, spec) for base, spec in ignores if base == here or base in here.parents]
        spec = _read_gitignore(here)
        if spec is not None:
            ignores.append((here, spec))
        kept = []
        for name in sorted(dirnames):
            child = here / name
            if name in SKIPPED_DIRS or (child / "pyvenv.cfg").exists():
                continue
            if not _ignored(child, True, ignores, excluded, root):
                kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES):
                child = here / name
                if not _ignored(child, False, ignores, excluded, root):
                    yield child


def _ignored(path: Path, is_dir: bool, ignores, excluded: pathspec.PathSpec, root: Path) -> bool:
    suffix = "/" if is_dir else ""
    if root == path or root in path.parents:
        if excluded.match_file(path.relative_to(root).as_posix() + suffix):
            return True
    return any(spec.match_file(path.relative_to(base).as_posix() + suffix) for base, spec in ignores)


def _read_gitignore(directory: Path) -> pathspec.PathSpec | None:
    try:
        text = (directory / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return pathspec.PathSpec.from_lines("gitwildmatch", text.splitlines())


def _gitignores_above(top: Path):
    """.gitignore files of the enclosing git repository, above `top` (top's own is read by the walk)."""
    chain = []
    for parent in top.parents:
        chain.append(parent)
        if (parent / ".git").exists():
            break
    else:
        return  # not inside a git repository: only .gitignore files under `top` count
    for parent in reversed(chain):
        spec = _read_gitignore(parent)
        if spec is not None:
            yield parent, spec
