"""flake8 plugin: torchdoctor's default rules as flake8 checks with the `TD` prefix.

Registered as a `flake8.extension` entry point; flake8's own select/ignore/noqa apply.
"""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor import __version__
from torchdoctor.catalog._registry import all_pitfalls, for_role
from torchdoctor.lint.checker import check_source


class Plugin:
    name = "torchdoctor"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        codes = frozenset(p.code for p in all_pitfalls() if p.default)
        result = check_source("".join(self.lines), self.filename, codes)
        unparsable = for_role("unparsable-source").code
        for finding in result.findings:
            if finding.code == unparsable:
                continue  # flake8 reports syntax errors itself (E999)
            yield finding.line, finding.column - 1, f"{finding.code} {finding.message}", type(self)
