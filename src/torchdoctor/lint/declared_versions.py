"""The oldest torch and torchvision releases a project says it supports, read from its
requirement and packaging files and from its README's requirement lines (`PyTorch>=1.1.0`).

A rule that advises a newer API (`torch.linalg.vector_norm` for `torch.norm`, arrived in 1.9)
stays quiet in a project that promises to run on an older release (`torch>=1.7`): following the
advice would break that promise. Only lower bounds of a range count (`>=`, `>`, `~=`): an exact
pin (`torch==1.7.0`) records the release the authors used, and whoever installs the project
today runs a newer one, where the advice holds."""

from __future__ import annotations

import os
import re
from pathlib import Path

from torchdoctor._regex import lazy_compile

# The files read at a project's root: packaging metadata, requirement lists and conda
# environments; the README (where research code states what it needs) only when none of them
# gives a bound, since a README's requirements go stale while the metadata is enforced.
_METADATA_NAMES = ("setup.py", "setup.cfg", "pyproject.toml", "environment.yml", "environment.yaml")
# (an sdist carries its `install_requires` as `NAME.egg-info/requires.txt`)
_METADATA_PATTERNS = (
    "requirements*.txt",
    "requirements/*.txt",
    "*env*.yml",
    "*env*.yaml",
    "*.egg-info/requires.txt",
)
_README_NAMES = ("README.md", "README.rst", "README.txt", "README")
_MAX_BYTES = 1 << 20  # a README or requirements file larger than this is not one
_MAX_FILES = 32  # requirement files looked at, at most (a directory of hundreds is data)
_MAX_ENTRIES = 256  # entries of a root looked through for a package below it
_PACKAGE_MARKERS = ("setup.py", "setup.cfg", "pyproject.toml")

# `torch>=1.7`, `torchvision >= 0.8.1`, `PyTorch>=1.1.0`, `pytorch ≥ 1.4`, `torch~=2.1`, and
# as READMEs write it, `PyTorch 2.2+` or `PyTorch 1.4 or later`: the package's name not inside
# another name (`pytorch-lightning`, `libtorch`, `torch_geometric`), then a lower bound (a `+`
# before a local label, `1.7.0+cu110`, is not one). Case does not matter (pip and conda fold it).
_LOWER_BOUND = lazy_compile(
    rb"(?<![\w.\-/])(?:py)?torch(vision)?(?![\w.\-])"
    rb"(?:[ \t]*(?:>=|>|~=|\xe2\x89\xa5)[ \t]*v?(\d{1,3})\.(\d{1,3})(?:\.(\d{1,3}))?"
    rb"|[ \t]+v?(\d{1,3})\.(\d{1,3})(?:\.(\d{1,3}))?"
    rb"(?:\+(?![\w.])|[ \t]+(?:or|and)[ \t]+(?:later|newer|higher|above)))",
    re.IGNORECASE,
)


def declared_minimums(root: Path) -> tuple[tuple[str, str], ...]:
    """(package, "major.minor.patch") for torch and torchvision, each that some file at `root`
    gives a lower bound for: the lowest bound (the oldest release some part of the project
    supports)."""
    roots = [root, *_packages_below(root)]
    lowest = _lowest_bounds(
        [f for r in roots for f in _files(r, _METADATA_NAMES, _METADATA_PATTERNS)]
    )
    if not lowest:
        lowest = _lowest_bounds([f for r in roots for f in _files(r, _README_NAMES, ())])
    return tuple((package, ".".join(map(str, lowest[package]))) for package in sorted(lowest))


def _lowest_bounds(paths: list[str]) -> dict[str, tuple[int, int, int]]:
    lowest: dict[str, tuple[int, int, int]] = {}
    for path in paths:
        try:
            with open(path, "rb") as file:
                text = file.read(_MAX_BYTES)
        except OSError:
            continue
        for match in _LOWER_BOUND.finditer(text):
            package = "torchvision" if match.group(1) else "torch"
            major, minor, patch = match.group(2, 3, 4) if match.group(2) else match.group(5, 6, 7)
            version = (int(major), int(minor), int(patch or 0))
            if package not in lowest or version < lowest[package]:
                lowest[package] = version
    return lowest


def _packages_below(root: Path) -> list[Path]:
    """The one directory straight below `root` that holds packaging metadata, when `root` holds
    neither metadata nor code of its own: a project checked from the folder above it (an
    unpacked sdist). A folder with code beside its packages keeps them as vendored libraries
    (`src/apex/setup.py` beside `src/train.py`), whose bounds are not the project's."""
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)[:_MAX_ENTRIES]
    except OSError:
        return []
    packages = []
    for entry in entries:
        name = entry.name
        if name in _PACKAGE_MARKERS or name.endswith(".py"):
            return []
        if entry.is_dir(follow_symlinks=False) and any(
            os.path.isfile(os.path.join(entry.path, marker)) for marker in _PACKAGE_MARKERS
        ):
            packages.append(Path(entry.path))
    return packages if len(packages) == 1 else []


def _files(root: Path, names: tuple[str, ...], patterns: tuple[str, ...]) -> list[str]:
    found = [os.path.join(root, name) for name in names]
    for pattern in patterns:
        found += sorted(str(path) for path in root.glob(pattern))[:_MAX_FILES]
    return [path for path in dict.fromkeys(found) if os.path.isfile(path)]


def version_tuple(version: str) -> tuple[int, ...]:
    """`"1.9"` -> (1, 9, 0): releases compared by their numbers."""
    parts = [int(part) for part in version.split(".")[:3]]
    return tuple(parts + [0] * (3 - len(parts)))
