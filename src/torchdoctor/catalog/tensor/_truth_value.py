"""Which Python construct asked a tensor for its truth value, read from the failing line."""

from __future__ import annotations

import ast
import re

from torchdoctor.catalog.sdk import lazy_compile

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
    """ "chained" (`0 < x < 1`), "boolean" (`and` / `or` / `not`), "other" (`if mask:`),
    "loss flags" (a loss class given tensors), or None when the failing line is not shown or
    does not parse alone."""
    if _loss_class_given_tensors(block, report):
        return "loss flags"
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


# PyTorch's loss classes take their legacy `size_average` / `reduce` flags positionally, after
# the class weight where there is one: `nn.CrossEntropyLoss(output, labels)` builds a loss
# instead of computing one, and torch's `_reduction.legacy_get_string` tests the tensors given
# as flags with `if size_average and reduce:`. Nothing in the user's code combines masks.
_LOSS_CLASSES = frozenset(
    f"{name}Loss"
    for name in (
        "CrossEntropy NLL MSE L1 SmoothL1 Huber BCE BCEWithLogits KLDiv PoissonNLL GaussianNLL "
        "MarginRanking HingeEmbedding MultiLabelMargin SoftMargin MultiLabelSoftMargin "
        "CosineEmbedding MultiMargin TripletMargin CTC"
    ).split()
)
_LEGACY_FLAGS = lazy_compile(r"torch[/\\]nn[/\\]_reduction\.py")
# A line quoted in a message told in prose: `I get this error in "loss = NLLLoss(out, y)"`.
_QUOTED = lazy_compile(r"[\"`\u201c]([^\"`\u201c\u201d\n]{6,300})[\"`\u201d]")


def _loss_class_given_tensors(block, report) -> bool:
    if any(_LEGACY_FLAGS.search(frame.path) for frame in block.frames):
        return True
    lines = [frame.source for frame in block.frames if frame.source]
    if not block.frames:
        commented = _commented_line(block, report)
        lines += [commented] if commented else []
        lines += [quoted.group(1) for quoted in _QUOTED.finditer(block.message)]
    return any("Loss(" in line and _builds_loss_from_tensors(line) for line in lines)


def _builds_loss_from_tensors(line: str) -> bool:
    """The line calls a loss class of PyTorch with two or more positional values that are not
    constants (its flags are booleans and its weight comes first)."""
    text = line.strip().removesuffix(":")
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        values = [a for a in node.args if not isinstance(a, (ast.Constant, ast.Starred))]
        if name in _LOSS_CLASSES and len(values) >= 2:
            return True
    return False
