"""Discovers catalog entries (every `catalog/<area>/td*.py` module that defines `PITFALL`) and
finds them by code or name, by role, or by the selectors of `--select`/`--ignore`.

Finding one entry or reading the error signatures imports nothing else: the generated index
(`_index.py`) says which module holds which entry and what every signature searches for, so
`explain`, which starts in a fresh process, imports an entry only when one of its signatures may
match. The index is used only while it lists the entry files there are (a test keeps it equal to
the catalog; `python scripts/generate_catalog_index.py` rewrites it)."""

from __future__ import annotations

import importlib
import os
import re
from functools import cached_property, lru_cache
from typing import Callable

from torchdoctor.catalog import _index
from torchdoctor.catalog._model import ROLES, ErrorSignature, Pitfall, may_hold
from torchdoctor.errors import UsageError

_CATALOG_DIR = os.path.dirname(__file__)
_PACKAGE = "torchdoctor.catalog"


@lru_cache(maxsize=None)
def all_pitfalls() -> tuple[Pitfall, ...]:
    """Every entry, ordered by code."""
    found = [p for p in map(_load, _entry_modules()) if p is not None]
    return tuple(sorted(found, key=lambda p: p.code))


def _entry_modules() -> list[str]:
    """The names of the entry modules on disk (`td*.py` of every area), in area and file order."""
    names = []
    for area in sorted(os.listdir(_CATALOG_DIR)):
        directory = os.path.join(_CATALOG_DIR, area)
        if os.path.isfile(os.path.join(directory, "__init__.py")):
            names += [
                f"{_PACKAGE}.{area}.{name[:-3]}"
                for name in sorted(os.listdir(directory))
                if name.startswith("td") and name.endswith(".py")
            ]
    return names


@lru_cache(maxsize=None)
def _load(module_name: str) -> Pitfall | None:
    pitfall = getattr(importlib.import_module(module_name), "PITFALL", None)
    if not isinstance(pitfall, Pitfall):
        return None
    pitfall.module = module_name
    return pitfall


@lru_cache(maxsize=None)
def _index_is_current() -> bool:
    """Whether the generated index lists the entry files there are (a file added, renamed or
    removed since it was generated: it is not used, and the catalog is imported instead)."""
    return sorted(_entry_modules()) == list(_index.MODULES)


@lru_cache(maxsize=None)
def _modules_by_key() -> dict[str, str]:
    """Entry code and entry name -> the module that defines the entry."""
    entries = (
        _index.ENTRIES
        if _index_is_current()
        else [(p.code, p.name, p.module) for p in all_pitfalls()]
    )
    modules: dict[str, str] = {}
    for code, name, module in entries:
        modules[code] = modules[name] = module
    return modules


def get(code_or_name: str) -> Pitfall | None:
    """An entry by code (any case) or name."""
    key = code_or_name.strip()
    module = _modules_by_key().get(key.upper() if key[:2].lower() == "td" else key)
    return None if module is None else _load(module)


class IndexedSignature:
    """An error signature as the index has it: enough to tell that it cannot match a message
    without importing its entry. `load()` gives the entry and the signature itself.

    A plain class: a frozen dataclass would cost `explain` a millisecond of start-up to create."""

    def __init__(
        self,
        module: str,
        name: str,  # the entry's
        position: int,  # in the entry's `error_signatures`
        types: frozenset[str],
        regex: str | None,  # None: a function signature (`check`), which only its entry runs
        literals: tuple[str, ...],
    ) -> None:
        self.module, self.name, self.position = module, name, position
        self.types, self.regex, self.literals = types, regex, literals

    @cached_property
    def pattern(self) -> re.Pattern:
        return re.compile(self.regex or "", re.S)

    def search(self, text: str) -> re.Match | None:
        """As the signature's own `search`."""
        if not may_hold(self.literals, text):
            return None
        return self.pattern.search(text)

    def load(self) -> tuple[Pitfall, ErrorSignature]:
        pitfall = _load(self.module)
        assert pitfall is not None, self.module
        return pitfall, pitfall.error_signatures[self.position]


@lru_cache(maxsize=None)
def error_signatures() -> tuple[IndexedSignature, ...]:
    """Every error signature of the catalog, entries by code, each entry's in its order."""
    rows = _index.SIGNATURES if _index_is_current() else catalog_index()[2]
    return tuple(
        IndexedSignature(module, name, position, frozenset(types), regex, literals)
        for module, name, position, types, regex, literals in rows
    )


def catalog_index() -> tuple[tuple, tuple, tuple, tuple, tuple]:
    """What the generated index holds, read from the catalog itself: the entry modules, each
    entry's (code, name, module), each signature's (module, entry name, position, sorted types,
    regex, literals), the codes of the rules on by default, and of those that read the names
    next to the checked file."""
    pitfalls = all_pitfalls()
    signatures = tuple(
        (p.module, p.name, position, tuple(sorted(s.types)), s.regex, s.literals)
        for p in pitfalls
        for position, s in enumerate(p.error_signatures)
    )
    entries = tuple((p.code, p.name, p.module) for p in pitfalls)
    defaults = tuple(p.code for p in pitfalls if p.default)
    neighbours = tuple(p.code for p in pitfalls if p.reads_neighbours)
    return tuple(sorted(_entry_modules())), entries, signatures, defaults, neighbours


def neighbour_readers() -> frozenset[str]:
    """The codes of the rules whose findings depend on the names next to the checked file
    (the cache keys them on that listing), from the index when it is current."""
    if _index_is_current():
        return frozenset(_index.NEIGHBOUR_READERS)
    return frozenset(p.code for p in all_pitfalls() if p.reads_neighbours)


def default_codes() -> frozenset[str]:
    """The codes of the rules on by default, read from the generated index when it is current:
    a `check` whose every file is cached (a warm re-run) then imports no entry at all."""
    if _index_is_current():
        return frozenset(_index.DEFAULT_CODES)
    return frozenset(p.code for p in all_pitfalls() if p.default)


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
    codes: set[str] = set()
    if not any(raw.strip() for raw in selectors):
        return codes  # nothing to resolve: no need to import the catalog
    pitfalls = all_pitfalls()
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
