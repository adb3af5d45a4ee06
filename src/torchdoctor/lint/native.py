"""C++/CUDA extension sources: scanned as text, with comments and literals blanked out.

There is no C++ parser here on purpose: the pitfalls are removed API names, which a token
scan finds reliably once comments and string literals can no longer match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchdoctor.catalog import _registry
from torchdoctor.lint.edits import fix_until_stable
from torchdoctor.lint.lines import line_starts, position, split_lines
from torchdoctor.lint.noqa import is_suppressed
from torchdoctor.lint.project import NO_FACTS, ProjectFacts
from torchdoctor.report.finding import Edit, Finding, Fix

if TYPE_CHECKING:
    from torchdoctor.catalog._model import Pitfall
    from torchdoctor.lint.checker import CheckResult, FixResult

NATIVE_SUFFIXES = (".cpp", ".cc", ".cxx", ".cu", ".cuh", ".h", ".hpp")

# A comment, a string or character literal (raw strings included), each matched whole, and
# the <header> of an include directive (a path, not code). An unterminated comment or raw string
# runs to the end of the file, as the compiler reads it: matching it whole keeps the scan linear
# (a failed match for each `R"(` would rescan the rest of the file).
_NOISE = re.compile(
    r"""
      (?P<include>^[ \t]*\#[ \t]*include[ \t]*)<[^>\n]*>
    | //[^\n]*
    | /\*.*?(?:\*/|\Z)
    | R"(?P<delim>[^()\\\s]{0,16})\(.*?(?:\)(?P=delim)"|\Z)
    | "(?:\\.|[^"\\\n])*"?
    | '(?:\\.|[^'\\\n])*'?
""",
    re.S | re.X | re.M,
)


def is_native(path: str) -> bool:
    return path.lower().endswith(NATIVE_SUFFIXES)


def blank_noise(text: str) -> str:
    """`text` with comments and literals replaced by spaces (line breaks kept): same length, same
    offsets, so a match in the result is a position in the file."""

    def blank(match: re.Match) -> str:
        keep = match.group("include") or ""
        return keep + re.sub(r"[^\r\n]", " ", match.group()[len(keep) :])

    return _NOISE.sub(blank, text)


@dataclass
class NativeSource:
    """One C++/CUDA file as scanners see it."""

    path: str
    text: str
    code: str  # comments and literals blanked
    project: ProjectFacts = NO_FACTS  # what the project around the file says (lint/project.py)

    def __post_init__(self) -> None:
        self._line_starts = line_starts(split_lines(self.text, keepends=True))

    @property
    def lines(self) -> list[str]:
        return split_lines(self.text)

    def position(self, offset: int) -> tuple[int, int]:
        return position(self._line_starts, offset)

    def edit(self, start: int, end: int, content: str) -> Edit:
        return Edit(start, end, content, *self.position(start), *self.position(end))

    def fix(self, pitfall: Pitfall, applicability: str, *edits: Edit) -> Fix:
        return Fix(applicability, pitfall.fix_title["en"], edits, titles=pitfall.fix_title)

    def finding(
        self,
        pitfall: Pitfall,
        start: int,
        end: int,
        variant: str = "",
        *,
        fix: Fix | None = None,
        **fields: object,
    ) -> Finding:
        line, column = self.position(start)
        end_line, end_column = self.position(end)
        return Finding(
            pitfall.code,
            pitfall.name,
            pitfall.message(variant, "en", **fields),
            path=self.path,
            line=line,
            column=column,
            end_line=end_line,
            end_column=end_column,
            fix=fix,
            template=(variant, fields),
        )


def check_native(
    text: str, path: str, codes: frozenset[str], project: ProjectFacts = NO_FACTS
) -> CheckResult:
    from torchdoctor.lint.checker import CheckResult

    result = CheckResult([])
    scanners = [
        (p, scan) for p in _registry.all_pitfalls() if p.code in codes for scan in p.native_scanners
    ]
    if not scanners:
        return result
    source = NativeSource(path, text, blank_noise(text), project)
    for pitfall, scan in scanners:
        try:
            result.findings.extend(scan(source))
        except Exception as error:  # a scanner's bug must not cost the other findings
            result.internal_errors.append(f"{path}: {pitfall.code} failed: {error!r}")
    lines = source.lines
    result.findings = [f for f in result.findings if not is_suppressed(f, lines)]
    result.findings.sort(key=Finding.sort_key)
    return result


def fix_native(
    text: str, path: str, codes: frozenset[str], unsafe: bool, project: ProjectFacts = NO_FACTS
) -> FixResult:
    """Apply fixes until none is left. C++ is not re-parsed: the fixes are token renames."""
    from torchdoctor.lint.checker import MAX_FIX_PASSES, FixResult

    return FixResult(
        *fix_until_stable(
            text, lambda source: check_native(source, path, codes, project), unsafe, MAX_FIX_PASSES
        )
    )
