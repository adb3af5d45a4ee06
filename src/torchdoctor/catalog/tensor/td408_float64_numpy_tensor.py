"""TD408 float64-numpy-tensor: a float64 numpy array converted with `torch.from_numpy` fed to a model."""

from __future__ import annotations

import ast
import re
from functools import partial
from typing import Iterator

from torchdoctor.catalog.sdk import (
    assigned_name,
    from_project_class,
    Clue,
    Context,
    Finding,
    Kind,
    Pitfall,
    assigned_before,
    block_names,
    dtypes,
    first_in_walk,
    index,
    per_file,
    shorten,
)

# Messages quote at most 40 characters of source.
_short = partial(shorten, limit=40)

PITFALL = Pitfall(
    code="TD408",
    name="float64-numpy-tensor",
    title={
        "en": "float64 numpy data fed to a float32 model",
        "zh": "把 float64 的 numpy 数据送入 float32 模型",
    },
    messages={
        "weight": {
            "en": "`{source}` makes a float64 array, and `torch.from_numpy` keeps that dtype: "
            "`{weight}` becomes float64 while the layer's input is float32, and the layer raises a "
            "dtype mismatch; add `.float()`",
            "zh": "`{source}` 生成的是 float64 数组，`torch.from_numpy` 会保留这个 dtype："
            "`{weight}` 因此变成 float64，而该层的输入是 float32，运行时会报 dtype 不匹配的错误；"
            "请加上 `.float()`",
        },
        "": {
            "en": "`{source}` makes a float64 array, and `torch.from_numpy` keeps that dtype: "
            "`{model}` has float32 weights and raises; add `.float()`",
            "zh": "`{source}` 生成的是 float64 数组，`torch.from_numpy` 会保留这个类型：`{model}` 的权重是 "
            "float32，运行时会报错；请加上 `.float()`",
        },
    },
    fix_title={"en": "Convert the tensor with `.float()`", "zh": "用 `.float()` 转换张量"},
    fix_applicability="unsafe",
    fix_hint={
        "en": "Convert numpy data to float32 where it becomes a tensor: "
        "`torch.from_numpy(a).float()`, or `a.astype(np.float32)` in the Dataset's "
        "`__getitem__` (targets too); use `model.double()` only if you need float64.",
        "zh": "在 numpy 数据变成张量的地方转换为 float32：`torch.from_numpy(a).float()`，或在 Dataset "
        "的 `__getitem__` 中使用 `a.astype(np.float32)`（标签也一样）；只有确实需要 float64 时"
        "才用 `model.double()`。",
    },
    docs={
        "en": """
## What it catches
`torch.from_numpy(a)` where `a` is made by a numpy function that returns float64 by default
(`np.random.rand`, `np.random.randn`, `np.random.normal` ..., `np.zeros`, `np.ones`, `np.empty`,
`np.linspace`, `np.loadtxt`, `np.genfromtxt` without `dtype`, or `np.array` of a list holding
float literals), whose result is passed to a model or layer call without a `.float()` in
between: directly (`model(torch.from_numpy(a))`) or through a name assigned and used in the same
block; or that replaces a layer's weights (`fc.weight.data = torch.from_numpy(a)`,
`fc.bias = nn.Parameter(torch.from_numpy(a))`), which makes that parameter float64. Files
that use double-precision models on purpose (`.double()`, `torch.float64`,
`torch.set_default_dtype`) are skipped.

## Why is this bad?
numpy computes in float64 by default, PyTorch layers are created in float32, and
`torch.from_numpy` (like `torch.as_tensor`) keeps the array's dtype to share its memory. The
matrix product inside a layer then receives a double input and float weights and refuses to
mix them. The same data loaded with `torch.tensor([...])` from a Python list would have been
float32, which is why the bug appears only once the data comes from numpy.

## Symptoms
`RuntimeError: mat1 and mat2 must have the same dtype, but got Double and Float`
`RuntimeError: Input type (double) and bias type (float) should be the same`
Older versions: `RuntimeError: expected scalar type Double but found Float`,
`Input type (torch.cuda.DoubleTensor) and weight type (torch.cuda.FloatTensor) should be the same`.

## Fix safety
The fix appends `.float()` to the `torch.from_numpy(...)` call. It is unsafe because the tensor
no longer shares memory with the array (`.float()` copies), so later in-place changes to one are
not seen in the other, and float32 keeps fewer digits than the original data.

## Known problems
Only arrays made in the same expression, or assigned just before in the same block, are seen,
and only model calls in that block. A model converted to double elsewhere (in another file)
makes the float64 input correct; the rule cannot see that.
""",
        "zh": """
## What it catches
`torch.from_numpy(a)` 中的 `a` 由默认返回 float64 的 numpy 函数生成（`np.random.rand`、`np.random.randn`、
`np.random.normal` 等，以及未指定 `dtype` 的 `np.zeros`、`np.ones`、`np.empty`、`np.linspace`、`np.loadtxt`、
`np.genfromtxt`，或者由包含浮点字面量的列表构造的 `np.array`），并且结果在没有 `.float()` 的情况下被传给
模型或层：可以是直接传入（`model(torch.from_numpy(a))`），也可以是在同一代码块中先赋值给变量再使用；
或者用它替换某层的权重（`fc.weight.data = torch.from_numpy(a)`、
`fc.bias = nn.Parameter(torch.from_numpy(a))`），使该参数变成 float64。
有意使用双精度模型的文件（出现 `.double()`、`torch.float64` 或 `torch.set_default_dtype`）不做检查。

## Why is this bad?
numpy 默认用 float64 计算，而 PyTorch 的层默认以 float32 创建；`torch.from_numpy`（以及 `torch.as_tensor`）
为了共享内存会保留数组的 dtype。于是层内部的矩阵乘法拿到了 double 类型的输入和 float 类型的权重，
拒绝把两者混在一起计算。同样的数据如果用 `torch.tensor([...])` 从 Python 列表构造会是 float32，
所以这个问题往往在数据改为来自 numpy 之后才出现。

## Symptoms
`RuntimeError: mat1 and mat2 must have the same dtype, but got Double and Float`
`RuntimeError: Input type (double) and bias type (float) should be the same`
旧版本中的报错：`RuntimeError: expected scalar type Double but found Float`、
`Input type (torch.cuda.DoubleTensor) and weight type (torch.cuda.FloatTensor) should be the same`。

## Fix safety
修复在 `torch.from_numpy(...)` 调用后加上 `.float()`。这是不安全的：`.float()` 会拷贝数据，张量不再与数组
共享内存，之后对其中一个的原地修改在另一个上看不到；而且 float32 的有效位数比原始数据少。

## Known problems
只能识别在同一表达式中、或在同一代码块中刚刚赋值得到的数组，也只检查同一代码块中的模型调用。
如果模型在别处（例如另一个文件中）被转换成了 double，float64 输入反而是正确的，本规则看不到这一点。
""",
    },
    example="""
import numpy as np
import torch
import torch.nn as nn

model = nn.Linear(3, 1)
inputs = torch.from_numpy(np.random.rand(8, 3))
outputs = model(inputs)
""",
    use_instead="""
import numpy as np
import torch
import torch.nn as nn

model = nn.Linear(3, 1)
inputs = torch.from_numpy(np.random.rand(8, 3)).float()
outputs = model(inputs)
""",
)

# numpy functions whose result is float64 unless a dtype is given.
FLOAT64_DRAWS = frozenset(
    """
rand randn random random_sample ranf sample normal uniform standard_normal beta gamma exponential
""".split()
)
FLOAT64_FACTORIES = frozenset({"zeros", "ones", "empty", "linspace", "loadtxt", "genfromtxt"})
ARRAY_FACTORIES = frozenset({"array", "asarray"})
# Tensor methods that keep the dtype on the way from `from_numpy` to the model.
DTYPE_KEEPING = frozenset(
    {
        "cuda",
        "cpu",
        "unsqueeze",
        "squeeze",
        "view",
        "reshape",
        "permute",
        "transpose",
        "contiguous",
        "clone",
        "detach",
        "requires_grad_",
    }
)
# Attribute names that show double precision is used on purpose somewhere in the file.
DOUBLE_MARKERS = frozenset({"double", "float64", "set_default_dtype", "DoubleTensor"})


@PITFALL.static(ast.Call, names={"from_numpy"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if len(call.args) != 1 or ctx.qualname(call.func) != "torch.from_numpy":
        return
    block, index = ctx.statement_block() or ([], 0)
    source = _float64_source(call.args[0], block, index, ctx)
    if source is None or _uses_double(ctx):
        return
    _, end = ctx.span(call)
    fix = ctx.fix(PITFALL, "unsafe", ctx.edit(end, end, ".float()"))
    weight = _weight_replaced(call, block[index] if block else None, ctx)
    if weight is not None:
        yield ctx.finding(
            PITFALL, call, "weight", fix=fix, source=_short(ctx.text(source)), weight=weight
        )
        return
    model = _model_fed(call, block, index, ctx)
    if model is None:
        return
    yield ctx.finding(
        PITFALL, call, fix=fix, source=_short(ctx.text(source)), model=_short(ctx.text(model))
    )


def _weight_replaced(call: ast.Call, statement: ast.stmt | None, ctx: Context) -> str | None:
    """The parameter a layer's weights are replaced through: `fc.weight.data = <call>` or
    `self.fc.weight = nn.Parameter(<call>)` (the notes' hand-made initialisation)."""
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return None
    target, value = statement.targets[0], statement.value
    if not isinstance(target, ast.Attribute):
        return None
    if target.attr == "data" and value is call and isinstance(target.value, ast.Attribute):
        return _short(ctx.text(target.value))
    if (
        isinstance(value, ast.Call)
        and ctx.qualname(value.func) == "torch.nn.Parameter"
        and value.args[:1] == [call]
    ):
        return _short(ctx.text(target))
    return None


def _float64_source(
    array: ast.AST, block: list[ast.stmt], index: int, ctx: Context
) -> ast.AST | None:
    """The numpy call that made `array` when it surely is float64."""
    if isinstance(array, ast.Name):
        array, _ = assigned_before(array.id, block, index, ctx)
    if not isinstance(array, ast.Call) or any(k.arg == "dtype" for k in array.keywords):
        return None
    head, _, name = (ctx.qualname(array.func) or "").rpartition(".")
    if head == "numpy.random" and name in FLOAT64_DRAWS:
        return array
    if head != "numpy" or len(array.args) != 1:  # a second positional argument may be the dtype
        return None
    if name in FLOAT64_FACTORIES or name in ARRAY_FACTORIES and _holds_floats(array.args[0]):
        return array
    return None


def _holds_floats(literal: ast.AST) -> bool:
    """A (nested) list or tuple of number literals, at least one of them a float."""
    numbers = []
    todo = [literal]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.List, ast.Tuple)):
            todo.extend(node.elts)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            todo.append(node.operand)
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
            numbers.append(node.value)
        else:
            return False
    return any(type(number) is float for number in numbers)


def _model_fed(call: ast.Call, block: list[ast.stmt], index: int, ctx: Context) -> ast.AST | None:
    """The module the tensor made by `call` is passed to, directly or through a name assigned
    from it; None when it is not seen reaching a module or is converted first."""
    parents = ctx.statement_parents()
    tensor = _keep_dtype_upwards(call, parents)
    parent = parents.get(tensor)
    if isinstance(parent, ast.Call) and tensor in parent.args and _is_module_call(parent, ctx):
        return parent.func
    name = assigned_name(block[index] if block else None, tensor)
    if name is None:
        return None
    return _later_module_call(name, block, index, ctx)


def _keep_dtype_upwards(node: ast.AST, parents: dict) -> ast.AST:
    """From `from_numpy(...)` up through `.cuda()`, `.unsqueeze(0)` ...: the outermost expression
    that still has its dtype."""
    while True:
        attribute = parents.get(node)
        call = parents.get(attribute)
        if not (
            isinstance(attribute, ast.Attribute)
            and attribute.attr in DTYPE_KEEPING
            and isinstance(call, ast.Call)
            and call.func is attribute
        ):
            return node
        node = call


def _later_module_call(
    name: str, block: list[ast.stmt], index: int, ctx: Context
) -> ast.AST | None:
    """The first module called with `name` as a positional argument in the statements after
    `block[index]`, before `name` is bound again."""
    names = block_names(ctx, block)
    tree_parents = names.index.parents
    for position, nodes in names.mentions_after(name, index):
        calls: dict[int, ast.Call] = {}
        for node in nodes:
            call = tree_parents[node]
            if (
                isinstance(call, ast.Call)
                and any(arg is node for arg in call.args)
                and _is_module_call(call, ctx)
            ):
                calls[id(call)] = call
        if calls:
            return first_in_walk(ctx, block[position], list(calls.values())).func
        if any(not isinstance(node.ctx, ast.Load) for node in nodes):
            return None
    return None


def _is_module_call(call: ast.Call, ctx: Context) -> bool:
    """A call of a module with float32 weights: not one of another module of the project,
    whose weights (if any) cannot be seen from here."""
    return ctx.kind_of(call.func) is Kind.MODULE and not from_project_class(call.func, ctx)


@per_file
def _uses_double(ctx: Context) -> bool:
    return any(node.attr in DOUBLE_MARKERS for node in index(ctx).everywhere(ast.Attribute))


# Error signatures ---------------------------------------------------------------------------

# Arguments of layers and matrix products: a float64 tensor there is data fed to a model.
# (`other` of an elementwise op or `tensors` of torch.cat are anyone's tensors.)
LAYER_ARGUMENTS = frozenset(
    {"mat1", "mat2", "self", "input", "weight", "bias", "batch1", "batch2", "vec", "mat"}
)
LAYER_MESSAGE = re.compile(
    r"mat1 and mat2|m1 and m2|Input type|expected scalar type|"
    r"RNN input dtype|Expected object of scalar type"
)
NUMPY_EVIDENCE = ("numpy", "np.", "from_numpy", "pandas", "pd.", ".values", "astype(")
NOTEBOOK_PATHS = ("<ipython-input", "ipykernel_", "Cell In[")

_CAUSE = {
    "en": "A float64 (Double) tensor met float32 (Float) weights. float64 is numpy's default: "
    "arrays from `np.random`, `np.loadtxt`, pandas or a Dataset returning numpy keep it "
    "through `torch.from_numpy`/`torch.as_tensor`, while layers are created in float32.",
    "zh": "一个 float64（Double）张量遇上了 float32（Float）的权重。float64 是 numpy 的默认类型："
    "来自 `np.random`、`np.loadtxt`、pandas 或返回 numpy 数组的 Dataset 的数据，经过 "
    "`torch.from_numpy`/`torch.as_tensor` 后仍是 float64，而层默认以 float32 创建。",
}
_TARGET_CAUSE = {
    "en": "The loss got a float64 (Double) target for a float32 prediction: the labels were "
    "built with numpy (float64 by default) and converted with `torch.from_numpy` or by "
    "the DataLoader's collate.",
    "zh": "损失函数收到了 float64（Double）的 target，而预测值是 float32：标签是用 numpy 生成的"
    "（默认 float64），经 `torch.from_numpy` 或 DataLoader 的 collate 转成了张量。",
}


@PITFALL.error_check(types=("RuntimeError", "ValueError"), words=("double", "float64"))
def check_error(block, report) -> Clue | None:
    pair = dtypes.dtype_pair(block.message)
    if pair is None or {pair[0], pair[1]} != {"Double", "Float"}:
        return None
    if dtypes.raised_by_a_conversion(block, report):
        return None  # a conversion alone has no second dtype to mix with
    if "Found dtype Double but expected Float" in block.message:
        # A loss's target in float64: regression labels built with numpy, almost always; but
        # with neither a traceback nor numpy anywhere in the text, the general answer first.
        shown = block.frames or any(word in (report.text or "") for word in NUMPY_EVIDENCE)
        return Clue(0.9 if shown else 0.75, _TARGET_CAUSE)
    if dtypes.input_and_weight(block.message, block.frames) == ("Float", "Double"):
        return None  # the model is float64, its input is not: not numpy data (dtype-mismatch)
    likelihood = _numpy_likelihood(block, pair[2].get("arg"), report.text or "")
    return Clue(likelihood, _CAUSE, contradicted_by=_made_double_without_numpy)


_MADE_DOUBLE = ("double()", "float64", "DoubleTensor", "torch.double")


def _made_double_without_numpy(sources: list[str]) -> bool:
    """The user's code makes float64 tensors itself and never touches numpy: the data did not
    come from numpy (whatever other file the data may come from, this one says otherwise)."""
    text = "\n".join(sources)
    return any(word in text for word in _MADE_DOUBLE) and not any(
        word in text for word in NUMPY_EVIDENCE
    )


# A tensor built from an array: torch's own floats are float32, so a float64 one made this way
# was made from numpy data (an explicit float64 dtype aside).
ARRAY_BUILT = ("torch.tensor(", "as_tensor(")
TORCH_DOUBLE = ("torch.float64", "torch.double", "DoubleTensor", "set_default_dtype")


# Code that makes float64 tensors itself (not words of a message: `model.to(torch.float64)`).
MADE_DOUBLE_CODE = (
    "dtype=torch.double",
    "dtype=torch.float64",
    ".double()",
    "DoubleTensor(",
    "set_default_dtype(torch.float64)",
    "set_default_dtype(torch.double)",
)


def _numpy_likelihood(block, arg: str | None, text: str) -> float:
    """How likely the float64 side is numpy data: dtype-mismatch (0.8) is the general answer."""
    sources = " ".join(frame.source or "" for frame in block.frames)
    if any(word in sources for word in NUMPY_EVIDENCE):
        return 0.92
    if not LAYER_MESSAGE.search(block.message) or (arg is not None and arg not in LAYER_ARGUMENTS):
        return 0.7  # an elementwise op, torch.cat, index_add_...: anyone's tensors
    if not block.frames:
        # The message without its frames: numpy data is the most common origin. Unless the
        # text around it (the code of an issue, a traceback printed apart) shows the data
        # coming from numpy, the general answer (dtype-mismatch, which names numpy too) first.
        shown = any(word in text for word in NUMPY_EVIDENCE + ARRAY_BUILT)
        on_purpose = any(word in text for word in TORCH_DOUBLE)
        return 0.85 if shown and not on_purpose else 0.75
    if any(word in sources for word in ("double()", "float64", "DoubleTensor")):
        return 0.6  # made double on purpose in the user's code
    made_double = any(word in text for word in MADE_DOUBLE_CODE)
    if made_double and not any(word in text for word in NUMPY_EVIDENCE):
        return 0.6  # the code quoted with the traceback makes float64 tensors, and no numpy
    paths = [frame.path for frame in block.frames]
    if any(
        path.startswith(NOTEBOOK_PATHS) or "/nn/modules/" in path.replace("\\", "/")
        for path in paths
    ):
        return 0.85  # data fed to a model, or notebook code building its data with numpy
    return 0.7  # the user's own functional code mixing two of its tensors
