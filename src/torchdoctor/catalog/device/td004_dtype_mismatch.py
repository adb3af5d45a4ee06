"""TD004 dtype-mismatch: one operation gets tensors of different dtypes (Double vs Float...)."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Clue, Pitfall, dtypes

PITFALL = Pitfall(
    code="TD004",
    name="dtype-mismatch",
    title={
        "en": "Tensors of different dtypes in one operation",
        "zh": "同一个运算中的张量 dtype 不一致",
    },
    messages={
        "": {
            "en": "an operation received tensors of two dtypes (for example float64 input and "
            "float32 weights): convert one side so that they match",
            "zh": "一个运算收到了两种 dtype 的张量（例如 float64 的输入和 float32 的权重）："
            "请转换其中一边，使二者一致",
        }
    },
    fix_hint={
        "en": "Convert the input to the model's dtype where it enters the model "
        "(`x = x.float()`, or `x.to(next(model.parameters()).dtype)`); for mixed "
        "precision use `torch.autocast` instead of calling `.half()` on some tensors.",
        "zh": "在输入进入模型的地方把它转换成模型的 dtype（`x = x.float()`，或 "
        "`x.to(next(model.parameters()).dtype)`）；混合精度请用 `torch.autocast`，"
        "而不是手动对部分张量调用 `.half()`。",
    },
    root_causes=(
        "float64-numpy-tensor",
        "tensor-result-discarded",
        "unregistered-tensor-attribute",
    ),
    docs={
        "en": """
## What it catches
The errors PyTorch raises when one operation mixes dtypes it will not convert implicitly:
a float64 input to a float32 layer, a half-precision input to a float32 model (or the
reverse), float indices passed to an embedding, or an in-place operation whose result cannot
be stored in an integer tensor.

## Why is this bad?
Layers do not cast their inputs: a `Linear` with float32 weights refuses a float64 input
instead of silently losing precision or doubling its cost. The mismatched side usually comes
from somewhere else than the failing line:

- numpy arrays are float64 by default, and `torch.from_numpy`/`torch.as_tensor` keep that;
  so does a Dataset that returns numpy arrays or pandas values;
- `model.half()` or `model.to(torch.bfloat16)` with inputs left in float32, or half-precision
  tensors produced under `torch.autocast` reaching code that runs outside it;
- in-place arithmetic on integer tensors (`x /= n`, `avg += p * w`), typical when averaging
  state dicts or metrics that contain counters such as `num_batches_tracked`.

## Symptoms
`RuntimeError: mat1 and mat2 must have the same dtype, but got Double and Float`,
`mat1 and mat2 must have the same dtype, but got Half and Float8_e4m3fn` (weights stored in
float8 and not upcast),
`expected mat1 and mat2 to have the same dtype, but got: double != float`,
`Input type (c10::Half) and bias type (float) should be the same`,
`Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) should be the
same`, `expected scalar type Float but found Double`,
`Found dtype Double but expected Float` (in `loss.backward()`),
`result type Float can't be cast to the desired output type Long`,
`RNN input dtype (torch.float64) does not match weight dtype (torch.float32)`,
`Expected tensor for argument #1 'indices' to have one of the following scalar types: Long,
Int; but got torch.FloatTensor instead (while checking arguments for embedding)`.

Older versions: `Expected object of scalar type Float but got scalar type Double for argument
#2 'mat2'`, `Expected object of type torch.FloatTensor but found type torch.DoubleTensor for
argument #2 'mat2'`.

## Known problems
`expected scalar type Long but found Float` from a loss is explained by
`cross-entropy-target-dtype`, and a float64/float32 mismatch by `float64-numpy-tensor` when
the float64 side most likely comes from numpy; this entry is the general answer.

## References
- https://pytorch.org/docs/stable/tensor_attributes.html#torch.dtype
- https://pytorch.org/docs/stable/amp.html
""",
        "zh": """
## What it catches
一个运算混用了 PyTorch 不会隐式转换的 dtype 时抛出的错误：float64 的输入送进 float32 的层，
半精度输入送进 float32 的模型（或者反过来），给 embedding 传了浮点类型的索引，
或者原地运算的结果无法存进整数张量。

## Why is this bad?
层不会替你转换输入的类型：权重是 float32 的 `Linear` 会直接拒绝 float64 的输入，而不是悄悄丢掉精度
或者多花一倍的计算量。类型不对的那一边，往往来自出错那一行之外的地方：

- numpy 数组默认是 float64，`torch.from_numpy`/`torch.as_tensor` 会保留这个类型；返回 numpy 数组或
  pandas 数值的 Dataset 也是如此；
- 调用了 `model.half()` 或 `model.to(torch.bfloat16)`，输入却仍是 float32；或者在 `torch.autocast`
  中产生的半精度张量被传到了 autocast 之外的代码里；
- 对整数张量做原地运算（`x /= n`、`avg += p * w`），在对 state dict 或指标求平均时很常见，
  因为其中有 `num_batches_tracked` 这样的计数器。

## Symptoms
`RuntimeError: mat1 and mat2 must have the same dtype, but got Double and Float`、
`mat1 and mat2 must have the same dtype, but got Half and Float8_e4m3fn`（权重以 float8 存储、
没有转换）、
`expected mat1 and mat2 to have the same dtype, but got: double != float`、
`Input type (c10::Half) and bias type (float) should be the same`、
`Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) should be the
same`、`expected scalar type Float but found Double`、
`Found dtype Double but expected Float`（出现在 `loss.backward()` 中）、
`result type Float can't be cast to the desired output type Long`、
`RNN input dtype (torch.float64) does not match weight dtype (torch.float32)`、
`Expected tensor for argument #1 'indices' to have one of the following scalar types: Long,
Int; but got torch.FloatTensor instead (while checking arguments for embedding)`。

旧版本：`Expected object of scalar type Float but got scalar type Double for argument #2
'mat2'`、`Expected object of type torch.FloatTensor but found type torch.DoubleTensor for
argument #2 'mat2'`。

## Known problems
损失函数报出的 `expected scalar type Long but found Float` 由 `cross-entropy-target-dtype` 解释；
float64 与 float32 不一致、而 float64 多半来自 numpy 时，由 `float64-numpy-tensor` 解释；
本条目是通用的解答。

## References
- https://pytorch.org/docs/stable/tensor_attributes.html#torch.dtype
- https://pytorch.org/docs/stable/amp.html
""",
    },
    example="""
import numpy as np
import torch
import torch.nn as nn

model = nn.Linear(3, 1)
features = torch.from_numpy(np.random.rand(8, 3))
outputs = model(features)
""",
    use_instead="""
import numpy as np
import torch
import torch.nn as nn

model = nn.Linear(3, 1)
features = torch.from_numpy(np.random.rand(8, 3)).float()
outputs = model(features)
""",
)

_CAUSE = {
    "en": "One operation got a {first} tensor and a {second} tensor, and PyTorch does not "
    "convert between the inputs of a layer: one side was made with another dtype than "
    "the model's weights.",
    "zh": "一个运算同时收到了 {first} 和 {second} 两种张量，而 PyTorch 不会在层的输入之间自动转换类型："
    "其中一边创建时用的 dtype 与模型权重不同。",
}
_DOUBLE_CAUSE = {
    "en": "One operation got a Double (float64) tensor and a Float (float32) one. float64 "
    "tensors usually come from numpy (`torch.from_numpy`, a Dataset returning numpy "
    "arrays, pandas) or an explicit `.double()`, while layers are float32.",
    "zh": "一个运算同时收到了 Double（float64）和 Float（float32）张量。float64 张量通常来自 numpy"
    "（`torch.from_numpy`、返回 numpy 数组的 Dataset、pandas）或显式的 `.double()`，"
    "而层的参数是 float32。",
}
_DOUBLE_FIX = {
    "en": "Convert the data to float32 where it enters the model: `x = x.float()`, "
    "`torch.from_numpy(a).float()` or `a.astype(np.float32)` in the Dataset "
    "(or `model.double()` if you really need float64).",
    "zh": "在数据进入模型的地方转换成 float32：`x = x.float()`、`torch.from_numpy(a).float()`，"
    "或在 Dataset 中使用 `a.astype(np.float32)`（确实需要 float64 时再用 `model.double()`）。",
}
_HALF_CAUSE = {
    "en": "One operation got a {half} tensor and a {other} one: the model was converted with "
    "`.half()`/`.to(torch.bfloat16)` but its input was not (or the reverse), or a "
    "half-precision tensor made under `torch.autocast` reached code that runs outside it.",
    "zh": "一个运算同时收到了 {half} 和 {other} 张量：模型用 `.half()`/`.to(torch.bfloat16)` 转换过，"
    "输入却没有（或者反过来），或者在 `torch.autocast` 中产生的半精度张量被传到了 autocast "
    "之外的代码里。",
}
_HALF_FIX = {
    "en": 'Let `torch.autocast(device_type="cuda", dtype=torch.float16)` choose the dtypes '
    "instead of calling `.half()` by hand, or convert the input to the model's dtype: "
    "`x = x.to(next(model.parameters()).dtype)`.",
    "zh": '用 `torch.autocast(device_type="cuda", dtype=torch.float16)` 来决定各处的 dtype，'
    "不要手动调用 `.half()`；或者把输入转换成模型的 dtype："
    "`x = x.to(next(model.parameters()).dtype)`。",
}


_MODEL_CAUSE = {
    "en": "The layer's weights are {weight} but its input is {input}: the model was converted "
    "(`model.double()`, `model.half()`, `model.to(torch.float64)`) or built from weights of "
    "that dtype, and the input was left as it was.",
    "zh": "该层的权重是 {weight}，而输入是 {input}：模型被转换过（`model.double()`、`model.half()`、"
    "`model.to(torch.float64)`）或由该 dtype 的权重构建，而输入保持原样。",
}
_MODEL_FIX = {
    "en": "Give the model and its input one dtype: convert the model back (`model.float()`) "
    "unless it must be {weight}, or convert the input to the model's dtype: "
    "`x = x.to(next(model.parameters()).dtype)`.",
    "zh": "让模型和输入使用同一种 dtype：除非模型必须是 {weight}，否则把它转回来（`model.float()`）；"
    "或者把输入转换成模型的 dtype：`x = x.to(next(model.parameters()).dtype)`。",
}

_FLOAT8_CAUSE = {
    "en": "One operation got a {stored} tensor and a {other} one. float8 is a storage format "
    "(weights loaded as fp8 to save memory): `F.linear`, `matmul` and convolutions do not "
    "compute with it, so the weights must be upcast to the compute dtype ({other}) before "
    "the layer runs, and here they were not.",
    "zh": "一个运算同时收到了 {stored} 和 {other} 张量。float8 是一种存储格式（为节省显存以 fp8 "
    "加载的权重）：`F.linear`、`matmul` 和卷积不能直接用它计算，权重必须在层运行之前转换成计算用的 "
    "dtype（{other}），而这里没有转换。",
}
_FLOAT8_FIX = {
    "en": "Load the weights in the compute dtype ({other}) instead of fp8, or turn on the "
    "loader's option that keeps fp8 storage and upcasts each layer's weights when it runs "
    "(a `weight_dtype`/fp8 setting of the tool or library); a model of your own can be "
    "converted after loading (`model.half()`, `model.float()`).",
    "zh": "以计算用的 dtype（{other}）而不是 fp8 加载权重，或者打开加载器的一个选项：权重以 fp8 "
    "存储、每层运行时再转换（工具或库的 `weight_dtype`/fp8 设置）；自己的模型可以在加载后转换"
    "（`model.half()`、`model.float()`）。",
}


@PITFALL.error_check(
    types=("RuntimeError", "ValueError", "TypeError"),
    words=(
        "expected scalar type",
        "expected object of scalar type",
        "must have the same dtype",
        "to have the same dtype",
        "input type",
        "found dtype",
        "expected dtype",
        "tensor but",
        "rnn input dtype",
        "expected object of type",
        "to have the same type as tensor for argument",
        "have same dtype",
        "must have the same scalar type",
        "dtypes match, got",
    ),
)
def check(block, report) -> Clue | None:
    pair = dtypes.dtype_pair(block.message)
    if pair is None:
        return None
    first, second, groups = pair
    if dtypes.raised_by_a_conversion(block, report):
        return None  # a conversion alone has no second dtype to mix with
    fields = {"first": first, "second": second}
    if groups.get("arg") == "target" or (groups.get("expected") and first in dtypes.INTEGERS):
        if groups.get("arg") != "target" and dtypes.inside_a_layer(block, report):
            # Raised inside a layer of the model (`self.fc(labels)`), not in a loss: an integer
            # tensor reached a float layer.
            return Clue(0.85, _CAUSE, None, fields)
        # Usually a classification loss's target of the wrong type: cross-entropy-target-dtype.
        return Clue(0.5, _CAUSE, None, fields)
    float8 = {first, second} & dtypes.FLOAT8S
    if float8:
        # float8 is a storage format: matmuls do not take it as an operand, whatever the other.
        stored = sorted(float8)[0]
        other = second if first == stored else first
        return Clue(0.85, _FLOAT8_CAUSE, _FLOAT8_FIX, {"stored": stored, "other": other})
    roles = dtypes.input_and_weight(block.message, block.frames)
    if roles is not None and roles[1] != "Float" and roles[0] == "Float":
        # The layer's weights are the odd ones: the model was converted, its input was not.
        return Clue(0.9, _MODEL_CAUSE, _MODEL_FIX, {"input": roles[0], "weight": roles[1]})
    if {first, second} == {"Double", "Float"}:
        # float64-numpy-tensor ranks above with the likelier root.
        return Clue(0.8, _DOUBLE_CAUSE, _DOUBLE_FIX, fields)
    halves = {first, second} & dtypes.HALVES
    if halves:
        half = sorted(halves)[0]
        other = second if first == half else first
        # Told without a traceback, a half/float clash is as often a library's or a version's
        # (apex, an old diffusers) as the user's conversion: shown, not asserted.
        confidence = 0.9 if block.frames else 0.7
        return Clue(confidence, _HALF_CAUSE, _HALF_FIX, {"half": half, "other": other})
    return Clue(0.85, _CAUSE, None, fields)


PITFALL.error(
    r"result type (?P<result>\w+) can't be cast to the desired output type (?P<output>\w+)",
    types=("RuntimeError", "TypeError"),
    confidence=0.9,
    cause={
        "en": "An in-place operation (`+=`, `/=`, `add_`, `mul_`...) or an `out=` "
        "computes a {result} result but must store it into a {output} tensor. "
        "Typical: averaging state dicts or metrics that contain integer tensors "
        "(`num_batches_tracked`, counters, labels), or `x /= n` on an integer tensor.",
        "zh": "一个原地运算（`+=`、`/=`、`add_`、`mul_` 等）或 `out=` 算出的是 {result}，"
        "却要存进 {output} 类型的张量。典型场景：对包含整数张量（`num_batches_tracked`、"
        "计数器、标签）的 state dict 或指标求平均，或者对整数张量做 `x /= n`。",
    },
    fix={
        "en": "Compute out of place (`x = x / n`) or convert first (`x = x.float()`); when "
        "averaging state dicts, copy integer entries such as `num_batches_tracked` "
        "instead of averaging them.",
        "zh": "改为非原地运算（`x = x / n`）或先转换类型（`x = x.float()`）；对 state dict 求平均时，"
        "`num_batches_tracked` 这类整数项直接复制，不要参与平均。",
    },
)
PITFALL.error(
    r"Expected tensor for argument #\d+ 'indices' to have (?:one of the following )?scalar "
    r"types?:? (?P<wanted>[\w, ]+?);? but got (?P<got>[\w.]+) instead",
    confidence=0.9,
    cause={
        "en": "The embedding got indices of type {got}: token ids must be integers "
        "({wanted}), but these were made as floats (`torch.Tensor(ids)`, a numpy "
        "float array, or arithmetic that produced floats).",
        "zh": "embedding 收到的索引类型是 {got}：token id 必须是整数（{wanted}），但它们被创建成了浮点数"
        "（`torch.Tensor(ids)`、numpy 浮点数组，或者某次运算产生了浮点结果）。",
    },
    fix={
        "en": "Make the ids integers: `torch.tensor(ids, dtype=torch.long)` or `ids.long()`.",
        "zh": "把 id 转成整数：`torch.tensor(ids, dtype=torch.long)` 或 `ids.long()`。",
    },
)
PITFALL.error(
    r"mixed dtype \(CPU\): all inputs must share same datatype",
    confidence=0.85,
    cause={
        "en": "A normalization layer (LayerNorm, BatchNorm, GroupNorm) got an input whose "
        "dtype differs from its weights, typically float64 data into a float32 model.",
        "zh": "归一化层（LayerNorm、BatchNorm、GroupNorm）收到的输入与其权重的 dtype 不同，"
        "典型情况是 float64 的数据送进了 float32 的模型。",
    },
)
# Messages without the dtypes (torch 2.0-2.1 said only "mat1 and mat2 must have the same dtype").
PITFALL.error(
    r"\b\w+ and \w+ must have the same dtype(?!, but got)",
    confidence=0.85,
    cause={
        "en": "The input and the weights of a layer have different dtypes "
        "(float64 or half-precision input into a float32 model, or the "
        "reverse).",
        "zh": "层的输入与权重 dtype 不同（float64 或半精度的输入送进了 float32 的"
        "模型，或者反过来）。",
    },
)
# scatter/gather/index_add keep one dtype: `counts.scatter_add_(0, labels, torch.ones_like(labels))`
# on a float `counts` adds Long ones.
PITFALL.error(
    r"\b(?P<op>\w+)\(\): Expected self\.dtype to be equal to src\.dtype",
    confidence=0.85,
    cause={
        "en": "`{op}` writes `src` into `self`, and both must have the same dtype: "
        "here they differ (often a float tensor filled from integer labels "
        "with `torch.ones_like(labels)`).",
        "zh": "`{op}` 把 `src` 写入 `self`，两者的 dtype 必须相同：这里不同（常见的是用 "
        "`torch.ones_like(labels)` 这样的整型张量去填一个浮点张量）。",
    },
    fix={
        "en": "Convert `src` to `self.dtype` (`src.to(self.dtype)`), or create it "
        "with the right dtype (`torch.ones_like(labels, dtype=counts.dtype)`).",
        "zh": "把 `src` 转成 `self.dtype`（`src.to(self.dtype)`），或者一开始就用正确的 "
        "dtype 创建它（`torch.ones_like(labels, dtype=counts.dtype)`）。",
    },
)
