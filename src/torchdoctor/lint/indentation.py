"""Indentation that mixes tabs and spaces, read the way Python 2 read it.

Python 2 counted a tab in indentation as a move to the next multiple of eight columns; Python 3
refuses indentation whose meaning depends on the width of a tab (`TabError`). Research code of
2016-2018 often has both, and so does not parse at all today. Expanding the tabs of each line's
indentation gives the program its author ran, so that the rest of the file can still be checked.
Lines and the text after the indentation stay; columns on the lines with tabs move. A file
that does not parse so either (ADDA-PyTorch: a line of four tabs among lines of sixteen spaces,
which no Python ran) is read as its author's editor, set to four-column tabs, showed it.
"""

from __future__ import annotations

from torchdoctor.lint.lines import split_lines


def expand_indentation_tabs(source: str, width: int = 8) -> str | None:
    """`source` with the tabs of every line's indentation expanded as Python 2 did (`width` 8;
    4 reads it as an editor set to four-column tabs showed it), or None when no line is
    indented with a tab."""
    if "\t" not in source:
        return None
    lines = split_lines(source, keepends=True)
    changed = False
    for number, line in enumerate(lines):
        body = line.lstrip(" \t")
        indent = line[: len(line) - len(body)]
        if "\t" in indent:
            lines[number] = indent.expandtabs(width) + body
            changed = True
    return "".join(lines) if changed else None
