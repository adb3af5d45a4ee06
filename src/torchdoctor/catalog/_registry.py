"""Discovers catalog entries: every `catalog/<area>/td*.py` module that defines `PITFALL`."""
from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from pathlib import Path

from torchdoctor.catalog._model import Pitfall

_CATALOG_DIR = Path(__file__).parent


@lru_cache(maxsize=None)
def all_pitfalls() -> tuple[Pitfall, ...]:
    """Every entry, ordered by code."""
    found = []
    for area in sorted(p for p in _CATALOG_DIR.iterdir() if (p / "__init__.py").exists()):
        for info in pkgutil.iter_modules([str(area)]):
            if not info.name.startswith("td"):
                continue
            module_name = f"torchdoctor.catalog.{area.name}.{info.name}"
            module = importlib.import_module(module_name)
            pitfall = getattr(module, "PITFALL", None)
            if isinstance(pitfall, Pitfall):
                pitfall.module = module_name
                found.append(pitfall)
    return tuple(sorted(found, key=lambda p: p.code))


@lru_cache(maxsize=None)
def _index() -> dict[str, Pitfall]:
    index: dict[str, Pitfall] = {}
    for pitfall in all_pitfalls():
        index[pitfall.code] = pitfall
        index[pitfall.name] = pitfall
    return index


def get(code_or_name: str) -> Pitfall | None:
    """An entry by code (any case) or name."""
    key = code_or_name.strip()
    return _index().get(key.upper() if key[:2].lower() == "td" else key)
