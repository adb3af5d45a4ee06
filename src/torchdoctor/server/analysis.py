"""Checking what the editor holds: a Python buffer, or a notebook's code cells as one program
(as `check` reads an .ipynb file), with the settings and project facts of the file's place."""

from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path

from torchdoctor._lang import default_lang
from torchdoctor.lint.checker import check_source, fix_source
from torchdoctor.lint.config import Settings
from torchdoctor.lint.runner import Job, check_bytes, display_path
from torchdoctor.report.finding import Finding
from torchdoctor.report.localize import localize
from torchdoctor.server.blocks import BlockParser
from torchdoctor.server.projects import ProjectFactsCache, settings_for
from torchdoctor.user_files import limit_for


class Analysis:
    """Checks buffers the way `check` checks files. `lang`: the server's `--lang`, which
    outranks the configured one. Each method returns the findings and the problems of the
    doctor itself (one line each, for the log)."""

    # The buffers whose top-level trees are kept for their next edit (the most recent ones).
    KEPT_BUFFERS = 8

    def __init__(self, lang: str | None) -> None:
        self.lang = lang
        self.projects = ProjectFactsCache()
        self._parsers: OrderedDict[str, BlockParser] = OrderedDict()

    def lang_for(self, path: Path | None) -> str:
        return self.lang or settings_for(path).lang or default_lang()

    def check_python(self, text: str, path: Path | None) -> tuple[list[Finding], list[str]]:
        shown = str(path) if path else "untitled.py"
        if len(text) > limit_for(shown):
            return [], [f"{shown}: too large to check"]
        settings = settings_for(path)
        facts = self.projects.facts_for_file(path)
        tree = self._parser_for(shown).parse(text)  # None: `check_source` parses it all
        result = check_source(text, shown, _codes(settings, path), tree=tree, project=facts)
        localize(result.findings, self._lang(settings))
        return result.findings, result.internal_errors

    def fix_python(self, text: str, path: Path | None) -> str:
        """The buffer with every safe fix applied, as `check --fix` would write it."""
        shown = str(path) if path else "untitled.py"
        settings = settings_for(path)
        facts = self.projects.facts_for_file(path)
        return fix_source(text, shown, _codes(settings, path), False, project=facts).source

    def check_notebook(
        self, cells: list[str], path: Path | None
    ) -> tuple[list[list[Finding]], list[str]]:
        """The findings of each code cell (in the order given), lines counted within the cell."""
        shown = str(path) if path else "untitled.ipynb"
        settings = settings_for(path)
        job = Job(
            codes=_codes(settings, path),
            lang=self._lang(settings),
            project=self.projects.facts_for_file(path),
        )
        # The cells as an .ipynb file holds them, so they are read exactly as `check` reads one;
        # indented, so that no cell's text lands on the first two lines, where a coding
        # declaration would be looked for.
        book = {"cells": [{"cell_type": "code", "source": text} for text in cells]}
        outcome = check_bytes(json.dumps(book, indent=1).encode("utf-8"), shown, job)[0]
        by_cell: list[list[Finding]] = [[] for _ in cells]
        problems = list(outcome.internal_errors)
        for finding in outcome.findings:
            if finding.cell is None:  # the whole notebook could not be checked
                problems.append(f"{shown}: {finding.message}")
            else:
                by_cell[finding.cell - 1].append(finding)
        return by_cell, problems

    def _parser_for(self, shown: str) -> BlockParser:
        parser = self._parsers.pop(shown, None) or BlockParser()
        self._parsers[shown] = parser
        if len(self._parsers) > self.KEPT_BUFFERS:
            self._parsers.popitem(last=False)
        return parser

    def _lang(self, settings: Settings) -> str:
        return self.lang or settings.lang or default_lang()


def _codes(settings: Settings, path: Path | None) -> frozenset[str]:
    """The rules enabled for a file: the configured ones less its `per-file-ignores`."""
    codes = settings.enabled_codes()
    if path is None or not settings.per_file_ignores:
        return codes
    shown = display_path(path.resolve(), settings.root.resolve())
    return codes - settings.per_file_ignore_matcher(shown)
