"""The dtypes PyTorch's error messages name, and the pairs of them a mismatch message reports:
read by the dtype-mismatch entries and, through them, by `explain`."""

from __future__ import annotations

import re

from torchdoctor._regex import lazy_compile

# Every spelling of a dtype in error messages -> its ScalarType name.
_DTYPES = {
    "float": "Float",
    "float32": "Float",
    "Float": "Float",
    "double": "Double",
    "float64": "Double",
    "Double": "Double",
    "half": "Half",
    "float16": "Half",
    "Half": "Half",
    "c10::Half": "Half",
    "bfloat16": "BFloat16",
    "BFloat16": "BFloat16",
    "c10::BFloat16": "BFloat16",
    "long": "Long",
    "int64": "Long",
    "Long": "Long",
    "int": "Int",
    "int32": "Int",
    "Int": "Int",
    "short": "Short",
    "int16": "Short",
    "Short": "Short",
    "char": "Char",
    "int8": "Char",
    "Char": "Char",
    "byte": "Byte",
    "uint8": "Byte",
    "unsigned char": "Byte",
    "Byte": "Byte",
    "bool": "Bool",
    "Bool": "Bool",
    "ComplexFloat": "ComplexFloat",
    "complex64": "ComplexFloat",
    "ComplexDouble": "ComplexDouble",
    "complex128": "ComplexDouble",
    # float8 storage formats (torch >= 2.1): weights kept in 8 bits and upcast to compute
    "Float8_e4m3fn": "Float8_e4m3fn",
    "c10::Float8_e4m3fn": "Float8_e4m3fn",
    "float8_e4m3fn": "Float8_e4m3fn",
    "Float8_e4m3fnuz": "Float8_e4m3fnuz",
    "float8_e4m3fnuz": "Float8_e4m3fnuz",
    "Float8_e5m2": "Float8_e5m2",
    "c10::Float8_e5m2": "Float8_e5m2",
    "float8_e5m2": "Float8_e5m2",
    "Float8_e5m2fnuz": "Float8_e5m2fnuz",
    "float8_e5m2fnuz": "Float8_e5m2fnuz",
}
INTEGERS = frozenset({"Long", "Int", "Short", "Char", "Byte", "Bool"})
HALVES = frozenset({"Half", "BFloat16"})
FLOAT8S = frozenset({"Float8_e4m3fn", "Float8_e4m3fnuz", "Float8_e5m2", "Float8_e5m2fnuz"})


def dtype_name(text: str) -> str | None:
    """`torch.cuda.HalfTensor`, `CUDAFloatType`, `CUDAHalfTensor`, `c10::Half`, `torch.float64`,
    `double`... -> `Half`, `Float`, `Half`, `Half`, `Double`, `Double`; None for what is not a
    dtype. MSVC's type names on Windows carry their keyword: `struct c10::Half`."""
    name = text.strip().removeprefix("struct ").removeprefix("class ").removeprefix("torch.")
    tensor_type = re.fullmatch(
        r"(?:cuda\.|mps\.)?(?:CPU|CUDA|MPS|XPU)?(\w+)Tensor|(?:CPU|CUDA|MPS|XPU)(\w+)Type", name
    )
    if tensor_type is not None:
        name = tensor_type.group(1) or tensor_type.group(2)
    return _DTYPES.get(name)


# Messages naming two dtypes, as groups a/b, or expected/found when they say which one the
# operation wanted. A pattern that starts with `\w+` starts at a word boundary (`\b`): searched
# in a long word, it would otherwise rescan the word from each of its letters.
_PAIRS = [
    lazy_compile(r"expected scalar type (?P<expected>\w+) but found (?P<found>\w+)"),
    lazy_compile(
        r"Expected object of scalar type (?P<expected>\w+) but got scalar type "
        r"(?P<found>\w+) for (?:argument|sequence element \d+ in sequence argument at "
        r"position)(?: (?:#\d+ )?'(?P<arg>\w+)'|$)"
    ),
    lazy_compile(r"\b\w+ and \w+ must have the same dtype, but got (?P<a>\w+) and (?P<b>\w+)"),
    # `but got: c10::Half != float`, retyped as `float!= c10::Half`
    lazy_compile(
        r"expected \w+ and \w+ to have the same dtype, but got: (?P<a>(?:c10::)?\w+) ?!= ?"
        r"(?P<b>(?:c10::)?\w+)"
    ),
    lazy_compile(
        r"Input type \((?P<a>[^()]+)\) and (?:weight|bias) type \((?P<b>[^()]+)\) "
        r"should be the same"
    ),
    lazy_compile(r"Found dtype (?P<found>\w+) but expected (?P<expected>\w+)"),
    # a loss's backward, torch 1.5-1.7
    lazy_compile(r"expected dtype (?P<expected>\w+) but got dtype (?P<found>\w+)"),
    # torch 0.3: `expected FloatTensor but found DoubleTensor`, `expected type
    # torch.cuda.FloatTensor but got torch.cuda.DoubleTensor`
    lazy_compile(
        r"expected (?:type )?(?P<expected>(?:torch\.)?(?:cuda\.)?\w+Tensor) but "
        r"(?:found|got) (?:type )?(?P<found>(?:torch\.)?(?:cuda\.)?\w+Tensor)"
    ),
    lazy_compile(
        r"RNN input dtype \((?P<a>[\w.]+)\) does not match weight dtype "
        r"\((?P<b>[\w.]+)\)"
    ),
    lazy_compile(
        r"Expected object of type (?P<expected>[\w.]+) but found type (?P<found>[\w.]+) "
        r"for argument #\d+ '(?P<arg>\w+)'"
    ),
    lazy_compile(
        r"to have the same type as tensor for argument #\d+ '\w+'; but type "
        r"(?P<a>[\w.]+) does not equal (?P<b>[\w.]+)"
    ),
    lazy_compile(r"have same dtype, but found (?P<a>\w+) and (?P<b>\w+)"),
    lazy_compile(r"\b\w+ \((?P<a>\w+)\) and \w+ \((?P<b>\w+)\) must have the same scalar type"),
    lazy_compile(
        r"dtypes match, got (?P<a>\w+) for the destination and (?P<b>\w+) for the "
        r"source"
    ),
]


def dtype_pair(message: str) -> tuple[str, str, dict] | None:
    """The two different dtypes a mismatch message names, as (first, second, groups); for
    messages that say which one was expected, first is the expected one."""
    for pattern in _PAIRS:
        found = pattern.search(message)
        if found is None:
            continue
        groups = found.groupdict()
        first = groups.get("expected") or groups.get("a")
        second = groups.get("found") or groups.get("b")
        first, second = dtype_name(first), dtype_name(second)
        if first and second and first != second:
            return first, second, groups
        return None
    return None


# Messages that say which dtype the layer's input has and which its weight (input first).
_INPUT_AND_WEIGHT = [
    lazy_compile(
        r"Input type \((?P<input>[^()]+)\) and (?:weight|bias) type \((?P<weight>[^()]+)\) "
        r"should be the same"
    ),
    lazy_compile(
        r"RNN input dtype \((?P<input>[\w.]+)\) does not match weight dtype "
        r"\((?P<weight>[\w.]+)\)"
    ),
]
# F.linear(input, weight) multiplies the input (mat1) by the transposed weight (mat2).
_LINEAR_OPERANDS = lazy_compile(
    r"mat1 and mat2 must have the same dtype, but got (?P<input>\w+) and (?P<weight>\w+)"
)
_LINEAR_FILE = lazy_compile(r"[\\/]torch[\\/]nn[\\/]modules[\\/]linear\.py$")


def through_linear_layer(frames) -> bool:
    """The traceback runs through `nn.Linear` (torch's `nn/modules/linear.py`): what the
    messages of `F.linear` mean by mat1 and mat2 is then known."""
    return any(_LINEAR_FILE.search(frame.path) for frame in frames)


# torch's own frames between a model's `forward` and the layer it calls.
_MODULE_CALL_FILE = lazy_compile(r"[\\/]torch[\\/]nn[\\/]modules[\\/]module\.py$")
# A layer of torch's (not a loss: `loss.py` holds those).
_LAYER_FILE = lazy_compile(
    r"[\\/]torch[\\/]nn[\\/]modules[\\/](?:linear|conv|rnn|normalization|batchnorm)\.py$"
)
# `x = self.fc(x)`: a submodule called with one argument, which no loss is (a loss takes the
# input and the target).
_ONE_ARGUMENT_CALL = lazy_compile(r"\bself\.\w+\(\s*[\w.]+\s*\)")


def inside_a_layer(block, report) -> bool:
    """The error was raised inside one of the model's layers: the innermost frame (past
    torch's module-call plumbing) is an `nn.Linear`/convolution/RNN of torch's, or a `forward`
    that calls a submodule with a single tensor, which no loss is. A traceback pasted without
    its exception line (the message given above it) is read from the input's text."""
    frames = [(f.path, f.function or "", f.source or "") for f in block.frames]
    if not frames and not report.exceptions[1:]:
        frames = report.once(_frames_in_text)
    for path, function, source in reversed(frames):
        if _MODULE_CALL_FILE.search(path):
            continue
        if _LAYER_FILE.search(path):
            return True
        return function.rsplit(".", 1)[-1] == "forward" and bool(_ONE_ARGUMENT_CALL.search(source))
    return False


# A frame as Python prints it (`File "x.py", line 3, in f` over its line) or IPython
# (`File ~/x.py:3, in C.f(self, x)`, then context lines and `---> 3 line`).
_TEXT_FRAME = lazy_compile(
    r'(?m)^[ \t]*File "?(?P<path>[^"\n]+?)"?(?:, line |:)\d+,? in (?P<function>[\w.<>]+)'
    r"(?![\w.<>])[^\n]*\n(?:[ \t]*\d+ [^\n]*\n){0,12}(?:-*> ?\d+|[ \t]+)(?P<source>[^\n]*)"
)


def _frames_in_text(report) -> list[tuple[str, str, str]]:
    return [
        (m["path"], m["function"], m["source"].strip())
        for m in _TEXT_FRAME.finditer(report.text or "")
    ]


def input_and_weight(message: str, frames) -> tuple[str, str] | None:
    """The dtypes of a layer's input and of its weight, when the error says which is which: a
    convolution's or an RNN's message, or an `nn.Linear`'s (its frame in the traceback);
    None when the message does not tell."""
    patterns = list(_INPUT_AND_WEIGHT)
    if through_linear_layer(frames):
        patterns.append(_LINEAR_OPERANDS)
    for pattern in patterns:
        found = pattern.search(message)
        if found is not None:
            first, second = dtype_name(found["input"]), dtype_name(found["weight"])
            if first and second and first != second:
                return first, second
    return None


# Methods that convert one tensor (or module) to another dtype, and nothing else.
_CONVERSIONS = frozenset({"to", "type", "float", "double", "half", "bfloat16"})


def raised_by_a_conversion(block, report) -> bool:
    """The line the error is quoted against converts one tensor's dtype and does nothing else:
    `c = b.to(torch.float32)` with `# RuntimeError: expected scalar type ...` as its comment or
    on the comment line below it, as issues show a reproduction. A conversion has no second
    operand to mix dtypes with, so the error is not the user's mix (a PyTorch bug)."""
    if block.frames:
        return False
    # A short input is also read whole, as one message without a line: its exception's line.
    lines = (report.text or "").split("\n")
    numbers = [block.line] if block.line else [b.line for b in report.blocks if not b.frames]
    return any(_under_a_conversion(lines, number) for number in numbers)


def _under_a_conversion(lines: list[str], number: int) -> bool:
    if not 0 < number <= len(lines):
        return False
    code, hash_sign, _ = lines[number - 1].partition("#")
    if not hash_sign:
        return False
    if not code.strip() and number > 1:
        code = lines[number - 2].partition("#")[0]
    return _converts_only(code.strip())


def _converts_only(code: str) -> bool:
    import ast

    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    if len(tree.body) != 1 or not isinstance(tree.body[0], (ast.Assign, ast.Expr)):
        return False
    call = tree.body[0].value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return False
    if call.func.attr not in _CONVERSIONS:
        return False
    values = [*call.args, *(k.value for k in call.keywords)]
    return all(_names_a_dtype(value) for value in values)


def _names_a_dtype(node) -> bool:
    """`torch.float32`, `'torch.FloatTensor'`, `torch.FloatTensor` or a keyword's constant."""
    import ast

    if isinstance(node, ast.Attribute):
        return isinstance(node.value, ast.Name) and node.value.id == "torch"
    return isinstance(node, ast.Constant)
