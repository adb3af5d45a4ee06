"""Regexes compiled on first use, for modules that `explain` imports in a fresh process: most of
a module's patterns serve inputs of one kind (a pytest report, an IPython cell, a C++ log), and
compiling all of them at import was a large share of the command's start-up."""

from __future__ import annotations

import re
from typing import overload


class LazyPattern:
    """Stands for `re.compile(pattern, flags)`; compiles it when an attribute is first asked for.

    Each attribute read through the compiled pattern (`match`, `search`...) is kept on the
    instance, so later reads find it there: a bound method of the pattern, with no call added."""

    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self._source = (pattern, flags)
        self._compiled: re.Pattern | None = None

    def __getattr__(self, name: str):
        # Only a pattern's own attributes, none private: copy and pickle probe for dunders.
        if name.startswith("_"):
            raise AttributeError(name)
        if self._compiled is None:
            self._compiled = re.compile(*self._source)
        value = getattr(self._compiled, name)
        self.__dict__[name] = value
        return value

    def __repr__(self) -> str:
        return f"lazy_compile({self._source[0]!r}, {self._source[1]!r})"


@overload
def lazy_compile(pattern: str, flags: int = 0) -> re.Pattern[str]: ...
@overload
def lazy_compile(pattern: bytes, flags: int = 0) -> re.Pattern[bytes]: ...
def lazy_compile(pattern, flags=0):
    """`re.compile(pattern, flags)`, done when the pattern is first used."""
    return LazyPattern(pattern, flags)
