"""Parsing an edited buffer again without parsing it all: the trees of its top-level blocks (a
function, a class, a run of statements) that the edit left unchanged are kept from the last
parse and moved to their new lines, so an edit costs the parse of the block it touched.

Why the pieces give the tree of the whole: a block starts at a line of code in column 0. If the
text before such a line parses on its own, the tokenizer is at a statement's boundary there (not
inside brackets, a string or a `\\` continuation, which make the shorter text fail to parse), so
the rest reads as it would in the whole file, and the module's body is the blocks' bodies one
after the other. Lines that continue a statement (`else:`, `except:`, ... ) or follow a
decorator never start a block; any block that does not parse sends the whole text to the
ordinary parse, which repairs or reports it. A test compares the result with `ast.parse` on
real code, node for node, positions included.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

# Lines in column 0 that belong to the statement above them.
_CONTINUING = ("else", "elif", "except", "finally", ")", "]", "}")
# The statements a decorator can stand before.
_DEFINITIONS = ("def ", "def\t", "class ", "class\t", "async ")
# How many pieces a block may be joined from: more would parse a long text many times.
_MAX_JOINED = 8


@dataclass
class _Block:
    statements: list[ast.stmt]
    positioned: list[ast.AST]  # the nodes with line numbers, to move the block
    first_line: int  # where the block starts now (1-based)


class BlockParser:
    """Parses successive versions of one buffer, reusing the trees of unchanged blocks. The
    trees it returns are shared with the next parse: use one before asking for the next."""

    def __init__(self) -> None:
        self._blocks: dict[str, list[_Block]] = {}  # by the block's text

    def parse(self, text: str) -> ast.Module | None:
        """The tree of `text`, as `ast.parse` gives it; None when some block does not parse on
        its own (the caller parses the whole text then)."""
        # A lone carriage return also ends a line (the copy only for a text holding one).
        if "\r" in text and "\r" in text.replace("\r\n", ""):
            return None
        pieces = _split(text)
        body: list[ast.stmt] = []
        kept: dict[str, list[_Block]] = {}
        at = 0
        while at < len(pieces):
            first_line, block_text = pieces[at]
            at += 1
            block = self._reused(block_text, first_line) or _parsed(block_text, first_line)
            # A string or brackets holding lines in column 0 span several pieces: a few are
            # joined (a syntax error elsewhere would join them all, each time re-parsed).
            for _ in range(_MAX_JOINED):
                if not isinstance(block, SyntaxError) or at == len(pieces):
                    break
                if not _cut_short(block):
                    break
                block_text += pieces[at][1]
                at += 1
                block = self._reused(block_text, first_line) or _parsed(block_text, first_line)
            if not isinstance(block, _Block):
                self._blocks = {}
                return None
            kept.setdefault(block_text, []).append(block)
            body += block.statements
        self._blocks = kept
        return ast.Module(body=body, type_ignores=[])

    def _reused(self, block_text: str, first_line: int) -> _Block | None:
        # A block whose text shows twice in the buffer takes each kept tree once.
        candidates = self._blocks.get(block_text)
        if not candidates:
            return None
        block = candidates.pop()
        _move(block, first_line)
        return block


def _split(text: str) -> list[tuple[int, str]]:
    """(first line, text) of each top-level block, in order; their texts add up to `text`."""
    lines = text.split("\n")
    starts = [0]
    decorated = False  # a decorator seen, its `def` or `class` not yet
    quote = None  # the triple quote of a string still open, as far as a quick scan tells
    for number, line in enumerate(lines):
        first = line[:1]
        if quote is None and first and first not in " \t#\f\\":
            if number and not decorated and not line.startswith(_CONTINUING):
                starts.append(number)
            if first == "@":
                decorated = True
            elif line.startswith(_DEFINITIONS):
                decorated = False
        if '"""' in line or "'''" in line:
            quote = _quote_after(line, quote)
    bounds = starts + [len(lines)]
    return [
        (start + 1, "\n".join(lines[start:end]) + ("\n" if end < len(lines) else ""))
        for start, end in zip(bounds, bounds[1:])
    ]


def _quote_after(line: str, quote: str | None) -> str | None:
    """The triple quote left open after `line`, given the one open before it. A guess (quotes
    in comments or escaped ones fool it): a wrong one only makes a block larger, or one that
    does not parse alone."""
    at = 0
    while True:
        if quote is None:
            found = [i for i in (line.find('"""', at), line.find("'''", at)) if i >= 0]
            if not found:
                return None
            at = min(found)
            quote = line[at : at + 3]
        else:
            at = line.find(quote, at)
            if at < 0:
                return quote
            quote = None
        at += 3


def _cut_short(error: SyntaxError) -> bool:
    """Whether the parse stopped because the text ended inside a string, brackets or after a
    `\\` continuation."""
    message = error.msg
    return message.startswith(("unterminated triple-quoted", "unexpected EOF")) or message.endswith(
        "never closed"
    )


def _parsed(block_text: str, first_line: int) -> _Block | SyntaxError | None:
    """The block's tree moved to `first_line`; the error when it does not parse alone."""
    try:
        module = ast.parse(block_text)
    except SyntaxError as error:
        return error
    except (ValueError, RecursionError, MemoryError):
        return None
    positioned = [
        node
        for node in ast.walk(module)
        if getattr(node, "lineno", None) is not None and node is not module
    ]
    block = _Block(module.body, positioned, 1)
    _move(block, first_line)
    return block


def _move(block: _Block, first_line: int) -> None:
    """Give the block's nodes the lines they have when it starts at `first_line`."""
    shift = first_line - block.first_line
    if shift:
        for node in block.positioned:
            node.lineno += shift  # type: ignore[attr-defined]
            node.end_lineno += shift  # type: ignore[attr-defined]
        block.first_line = first_line
