"""Which Python construct asked a tensor for its truth value, read from the failing line."""

from __future__ import annotations

import ast
import re

# `bool value` before torch 1.2; torch 0.3's Python `__bool__` refused any non-empty Variable
# or tensor: "bool value of Variable objects containing non-empty torch.cuda.FloatTensor is
# ambiguous", "bool value of non-empty torch.ByteTensor objects is ambiguous".
AMBIGUOUS = (
    r"(?:Boolean|bool) value of (?:Tensor with more than one value"
    r"|Variable objects containing non-empty [\w.]+|non-empty [\w.]+ objects) is ambiguous"
)

_AMBIGUOUS = re.compile(AMBIGUOUS)


def asks_a_tensors_truth_value(message: str) -> bool:
    """The error is torch's "value of Tensor with more than one value is ambiguous"."""
    return "is ambiguous" in message and _AMBIGUOUS.search(message) is not None


# A statement's keyword and colon, removed so that the rest parses as an expression.
_KEYWORD = re.compile(r"(?:el)?if |while |assert |return |yield ")


def truth_value_use(block, report) -> str | None:
    """ "chained" (`0 < x < 1`), "boolean" (`and` / `or` / `not`), "other" (`if mask:`), or
    None when the failing line is not shown or does not parse alone."""
    frames = block.frames
    if len(frames) > 1 and frames[-1].function == "__bool__":
        frames = frames[:-1]  # torch 0.3 raised in Python, inside `Variable.__bool__`
    source = frames[-1].source if frames else _commented_line(block, report)
    if not source:
        return None
    text = source.strip().removesuffix(":")
    keyword = _KEYWORD.match(text)
    if keyword:
        text = text[keyword.end() :]
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    nodes = list(ast.walk(tree))
    if any(isinstance(n, ast.Compare) and len(n.ops) > 1 for n in nodes):
        return "chained"
    if any(
        isinstance(n, ast.BoolOp) or (isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not))
        for n in nodes
    ):
        return "boolean"
    return "other"


def _commented_line(block, report) -> str | None:
    """The code of a line that carries the error as its comment, as examples in issues show
    it: `print(0 < x < 1)  # RuntimeError: bool value of Tensor ...`."""
    lines = report.once(_lines)
    if not 0 < block.line <= len(lines):
        return None
    code, hash_sign, comment = lines[block.line - 1].partition("#")
    if not hash_sign or not asks_a_tensors_truth_value(comment):
        return None
    return code.strip() or None


def _lines(report) -> list[str]:
    return (report.text or "").split("\n")
