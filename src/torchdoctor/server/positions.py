"""Positions between the checker (1-based lines, columns in characters) and the editor (0-based
lines, columns in the code units the client and server agreed on: UTF-16 unless told otherwise).

Lines are Python's (and LSP's): broken at "\\n", "\\r\\n" and "\\r" only (lint/lines.py), never
where `str.splitlines` would also break (form feeds, U+2028), or a position lands on the wrong
line.
"""

from __future__ import annotations

from lsprotocol import types
from pygls.workspace import PositionCodec

from torchdoctor.lint.lines import ending, split_lines
from torchdoctor.report.finding import Edit, Finding


class Lines:
    """A text's lines, to convert positions within it."""

    def __init__(self, text: str, codec: PositionCodec) -> None:
        self.lines = split_lines(text)
        if not text or ending(text[-1]):  # the empty line after a final line break is a line
            self.lines.append("")
        self.codec = codec

    def position(self, line: int, column: int) -> types.Position:
        """The editor's position of a 1-based line and character column (clamped to the text)."""
        index = max(0, line - 1)
        if index >= len(self.lines):  # past the end: the end of the last line
            index = len(self.lines) - 1
            column = len(self.lines[index]) + 1
        text = self.lines[index]
        characters = min(max(0, column - 1), len(text))
        return types.Position(index, self._units(text[:characters]))

    def _units(self, text: str) -> int:
        """The length of `text` in the client's code units. ASCII is one unit per character in
        every encoding, and `isascii` runs at C speed where the codec counts each character in
        Python (most of the time the server spent sending a file's diagnostics)."""
        return len(text) if text.isascii() else self.codec.client_num_units(text)

    def range(self, line: int, column: int, end_line: int, end_column: int) -> types.Range:
        return types.Range(self.position(line, column), self.position(end_line, end_column))

    def finding_range(self, finding: Finding) -> types.Range:
        return self.range(finding.line, finding.column, finding.end_line, finding.end_column)

    def text_edit(self, edit: Edit) -> types.TextEdit:
        span = self.range(edit.line, edit.column, edit.end_line, edit.end_column)
        return types.TextEdit(span, edit.content)

    def end(self) -> types.Position:
        """The end of the text."""
        return self.line_end(len(self.lines))

    def line_end(self, line: int) -> types.Position:
        """The end of a 1-based line's text, before its line break."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return self.position(line, len(text) + 1)

    def to_checker(self, position: types.Position) -> tuple[int, int]:
        """The 1-based (line, character column) of an editor position."""
        if position.line >= len(self.lines):
            return position.line + 1, 1
        text, units, column = self.lines[position.line], 0, 0
        while column < len(text) and units < position.character:
            units += self.codec.client_num_units(text[column])
            column += 1
        return position.line + 1, column + 1


def contains(finding: Finding, line: int, column: int) -> bool:
    """Whether a 1-based (line, column) lies within the finding's span, its ends included."""
    return (
        (finding.line, finding.column) <= (line, column) <= (finding.end_line, finding.end_column)
    )


def overlaps(finding: Finding, start: tuple[int, int], end: tuple[int, int]) -> bool:
    """Whether the finding's span meets the 1-based span from `start` to `end`."""
    return (finding.line, finding.column) <= end and start <= (finding.end_line, finding.end_column)
