"""Discovers catalog entries (every `catalog/<area>/td*.py` module that defines `PITFALL`) and
finds them by code or name, by role, or by the selectors of `--select`/`--ignore`."""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from pathlib import Path
from typing import Callable

from torchdoctor.catalog._model import ROLES, Pitfall
from torchdoctor.errors import UsageError

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


@lru_cache(maxsize=None)
def _roles() -> dict[str, Pitfall]:
    return {p.role: p for p in all_pitfalls() if p.role is not None}


def for_role(role: str) -> Pitfall:
    """The entry that stands for an engine-made finding (a key of _model.ROLES)."""
    if role not in ROLES:
        raise KeyError(f"unknown role {role!r}")
    return _roles()[role]


@lru_cache(maxsize=None)
def source_repairs() -> tuple[tuple[Pitfall, Callable], ...]:
    """Every entry's repairs of a source that does not parse, with the entry."""
    return tuple((p, repair) for p in all_pitfalls() for repair in p.source_repairs)


def engine_finding(role: str, *args, **kwargs):
    """The finding an engine makes itself for `role`, built by the entry that takes it."""
    return for_role(role).make_finding(*args, **kwargs)


def resolve(selectors: list[str]) -> set[str]:
    """Codes named by selectors: `ALL`, a code, a code prefix (`TD2`), or a rule name."""
    pitfalls = all_pitfalls()
    codes: set[str] = set()
    for raw in selectors:
        selector = raw.strip()
        if not selector:
            continue
        if selector.upper() == "ALL":
            codes |= {p.code for p in pitfalls}
            continue
        by_name = get(selector)
        if by_name is not None:
            codes.add(by_name.code)
            continue
        prefix = selector.upper()
        matched = (
            {p.code for p in pitfalls if p.code.startswith(prefix)}
            if prefix.startswith("TD")
            else set()
        )
        if not matched:
            raise UsageError(
                f"unknown rule selector {raw!r} (expected a code, a code prefix, "
                "a rule name or ALL; see `torchdoctor rules`)"
            )
        codes |= matched
    return codes
