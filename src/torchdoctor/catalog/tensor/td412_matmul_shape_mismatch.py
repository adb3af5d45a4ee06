"""TD412 matmul-shape-mismatch: a matrix product of incompatible shapes, most often the features
reaching a Linear layer that are not its `in_features`."""

from __future__ import annotations

import re

from torchdoctor.catalog.sdk import Clue, Pitfall, dtypes

PITFALL = Pitfall(
    code="TD412",
    name="matmul-shape-mismatch",
    title={
        "en": "Matrix product of incompatible shapes (often a Linear layer's wrong `in_features`)",
        "zh": "矩阵乘法的形状不匹配（通常是 Linear 层的 `in_features` 写错了）",
    },
    messages={
        "": {
            "en": "the inner sizes of a matrix product differ: the input has a different number of "
            "features than the Linear layer (or the second matrix) expects",
            "zh": "矩阵乘法的内侧维度不一致：输入的特征数与 Linear 层（或第二个矩阵）期望的不同",
        }
    },
    fix_hint={
        "en": "Print `x.shape` right before the failing layer and set that Linear's "
        "`in_features` to the last number (or use `nn.LazyLinear(out_features)`, which "
        "infers it on the first batch).",
        "zh": "在出错的层之前打印 `x.shape`，把该 Linear 的 `in_features` 设为最后一维的大小"
        "（或改用 `nn.LazyLinear(out_features)`，它会在第一个 batch 时自动推断）。",
    },
    docs={
        "en": """
## What it catches
A matrix product whose inner sizes differ: `mat1` is `N x K`, `mat2` is `K' x M`, and
`K != K'`. In almost every report `mat2` is the (transposed) weight of an `nn.Linear`, `K` is
the number of features the input actually has and `K'` is the layer's `in_features`. The
same check covers `torch.mm`, `@`, `torch.matmul`, `torch.bmm` and `torch.mv`.

## Why is this bad?
The `in_features` of the first Linear after a flatten is usually computed by hand from the
image size and the layers before it. Change the input resolution, add a pooling layer,
change a stride or a padding, or copy a model written for 28x28 MNIST to 32x32 CIFAR, and the
hand-computed number is wrong. The model builds fine and fails at its first forward pass.

## Symptoms
`RuntimeError: mat1 and mat2 shapes cannot be multiplied (8x3600 and 4096x10)` (PyTorch 1.8
and later), `RuntimeError: size mismatch, m1: [8 x 3600], m2: [4096 x 10] at
/pytorch/aten/src/TH/generic/THTensorMath.cpp:...` (older releases),
`RuntimeError: Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got:
[2, 5].` (`torch.bmm`), `RuntimeError: size mismatch, got input (3), mat (3x4), vec (5)`
(`torch.mv`). In the first two, the second number of `mat1`/`m1` is what the input has and the
first number of `mat2`/`m2` is what the layer expects.

## Known problems
`mat1 and mat2 must have the same dtype` is a dtype problem, not a shape one, and is left to
`dtype-mismatch`. A wrong `view(-1, K)` that folds features into the batch dimension does not
fail here; it fails later as a batch-size mismatch in the loss.
""",
        "zh": """
## What it catches
内侧维度不一致的矩阵乘法：`mat1` 是 `N x K`，`mat2` 是 `K' x M`，而 `K != K'`。几乎所有报告中
`mat2` 都是某个 `nn.Linear` 的（转置后的）权重，`K` 是输入实际拥有的特征数，`K'` 是该层的
`in_features`。`torch.mm`、`@`、`torch.matmul`、`torch.bmm`、`torch.mv` 也是同一类错误。

## Why is this bad?
flatten 之后第一个 Linear 的 `in_features` 通常是根据图像尺寸和前面各层手工算出来的。只要改了输入分辨率、
加了一个池化层、改了 stride 或 padding，或者把为 28x28 的 MNIST 写的模型拿去跑 32x32 的 CIFAR，
这个手算的数就不对了。模型能正常构建，第一次前向传播时才报错。

## Symptoms
`RuntimeError: mat1 and mat2 shapes cannot be multiplied (8x3600 and 4096x10)`（PyTorch 1.8 及以后），
`RuntimeError: size mismatch, m1: [8 x 3600], m2: [4096 x 10] at
/pytorch/aten/src/TH/generic/THTensorMath.cpp:...`（更早的版本），
`RuntimeError: Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got:
[2, 5].`（`torch.bmm`），`RuntimeError: size mismatch, got input (3), mat (3x4), vec (5)`（`torch.mv`）。
前两种报错里，`mat1`/`m1` 的第二个数是输入实际的特征数，`mat2`/`m2` 的第一个数是该层期望的特征数。

## Known problems
`mat1 and mat2 must have the same dtype` 是 dtype 问题而不是形状问题，由 `dtype-mismatch` 处理。
用错误的 `view(-1, K)` 把特征折进 batch 维时这里不会报错，而是之后在损失函数里表现为 batch 大小不一致。
""",
    },
    example="""
import torch
import torch.nn as nn

model = nn.Sequential(
    nn.Conv2d(3, 16, 3),          # 32x32 -> 30x30
    nn.MaxPool2d(2),              # -> 15x15
    nn.Flatten(),                 # 16 * 15 * 15 = 3600 features
    nn.Linear(16 * 16 * 16, 10),  # expects 4096
)
model(torch.randn(8, 3, 32, 32))
""",
    use_instead="""
import torch
import torch.nn as nn

model = nn.Sequential(
    nn.Conv2d(3, 16, 3),
    nn.MaxPool2d(2),
    nn.Flatten(),
    nn.Linear(16 * 15 * 15, 10),  # or nn.LazyLinear(10)
)
model(torch.randn(8, 3, 32, 32))
""",
)

_LINEAR_CAUSE = {
    "en": "The input has {features} features per row (mat1 is {rows}x{features}) but the "
    "weight expects {in_features} (mat2 is {in_features}x{out_features}). In an "
    "nn.Linear, mat2 is the transposed weight: set in_features={features} in the Linear "
    "that follows the flatten (it is {in_features} now), or change the layers before it "
    "so that they produce {in_features} features.",
    "zh": "输入每行有 {features} 个特征（mat1 是 {rows}x{features}），而权重期望 {in_features} 个"
    "（mat2 是 {in_features}x{out_features}）。在 nn.Linear 中 mat2 就是转置后的权重：把 flatten "
    "之后那个 Linear 的 in_features 改成 {features}（现在是 {in_features}），或者调整它前面的层，"
    "让它们输出 {in_features} 个特征。",
}
_LINEAR_FIX = {
    "en": "Set `in_features={features}` in the Linear layer after the flatten (or use "
    "`nn.LazyLinear({out_features})`).",
    "zh": "把 flatten 之后那个 Linear 层设为 `in_features={features}`（或改用 "
    "`nn.LazyLinear({out_features})`）。",
}

_PRODUCT_CAUSE = {
    "en": "A matrix product of a {rows}x{features} matrix by a {in_features}x{out_features} "
    "one, in your code and not in a Linear layer: the first matrix's columns ({features}) must "
    "equal the second's rows ({in_features}).",
    "zh": "你的代码（而不是 Linear 层）把 {rows}x{features} 的矩阵与 {in_features}x{out_features} "
    "的矩阵相乘：第一个矩阵的列数（{features}）必须等于第二个矩阵的行数（{in_features}）。",
}
_PRODUCT_FIX = {
    "en": "Print both shapes before the product: `a @ b` needs (n, k) and (k, m). Transpose "
    "the operand stored the other way (`b.T`, or `b.transpose(-2, -1)` for batches), or "
    "check that the operands are the ones you meant.",
    "zh": "在相乘之前打印两个形状：`a @ b` 要求形状为 (n, k) 和 (k, m)。把存储方向相反的那个操作数"
    "转置（`b.T`，批量时用 `b.transpose(-2, -1)`），或者检查相乘的是否是你想要的两个张量。",
}
_SHAPES = re.compile(
    r"mat1 and mat2 shapes cannot be multiplied ?\((?P<rows>\d+)x(?P<features>\d+) and "
    r"(?P<in_features>\d+)x(?P<out_features>\d+)",  # no `)`: a message cut off in an issue title
    re.I,  # titles retype it: "Mat1 and Mat2 shapes cannot be multiplied"
)
# The message without its shapes: an issue title or a chat line that stops after the words.
_UNSHAPED = re.compile(r"mat1 and mat2 shapes cannot be multiplied", re.I)
_UNSHAPED_CAUSE = {
    "en": "A matrix product of incompatible shapes: the first operand's last dimension differs "
    "from the second's first. Most often it is an nn.Linear whose in_features is not the "
    "number of features its input has (the flattened size changes with the input's size).",
    "zh": "矩阵乘法的两个操作数形状不兼容：第一个的最后一维不等于第二个的第一维。最常见的是某个 "
    "nn.Linear 的 in_features 与其输入的特征数不一致（展平后的大小随输入尺寸变化）。",
}
_UNSHAPED_FIX = {
    "en": "The full message names both shapes, `(rows x features and in_features x "
    "out_features)`: set the Linear's `in_features` to the features it gets (or use "
    "`nn.LazyLinear`), or feed inputs of the size the model was built for.",
    "zh": "完整的报错会给出两个形状 `(rows x features and in_features x out_features)`："
    "把该 Linear 的 `in_features` 设为它实际收到的特征数（或改用 `nn.LazyLinear`），"
    "或者输入模型设计时的尺寸。",
}
# A product written in the failing line itself: `a @ b`, `torch.mm(a, b)`, `x.matmul(w)`.
_PRODUCT = re.compile(r"@|\b(?:mm|matmul|bmm|addmm|einsum)\(")


@PITFALL.error_check(types=(), words=("mat1 and mat2 shapes cannot be multiplied",))
def linear_or_product(block, report) -> Clue | None:
    """The premise of the Linear answer is a Linear: the traceback runs through
    `nn/modules/linear.py`. A traceback that ends in the user's own `a @ b` or `torch.mm` is a
    product of two of their tensors; a message without frames is most often a Linear's."""
    found = _SHAPES.search(block.message)
    if found is None:
        if _UNSHAPED.search(block.message):
            return Clue(0.7, _UNSHAPED_CAUSE, _UNSHAPED_FIX)
        return None
    fields = found.groupdict()
    frames = block.frames
    if not frames:  # most often a Linear's, but nothing here shows one: not a confident answer
        return Clue(0.75, _LINEAR_CAUSE, _LINEAR_FIX, fields)
    if dtypes.through_linear_layer(frames):
        return Clue(0.95, _LINEAR_CAUSE, _LINEAR_FIX, fields)
    if _PRODUCT.search(frames[-1].source or ""):
        return Clue(0.9, _PRODUCT_CAUSE, _PRODUCT_FIX, fields)
    return Clue(0.7, _LINEAR_CAUSE, _LINEAR_FIX, fields)  # a library's layer, perhaps


# PyTorch 1.x on a GPU (`addmm` behind nn.Linear) named no shapes.
_ADDMM_CAUSE = {
    "en": "A matrix product whose first operand has another number of columns than the "
    "second has rows: behind `torch.addmm(bias, input, weight.t())` it is an nn.Linear "
    "whose in_features differs from the features of its input, most often because the "
    "input has another size than the one the model was built for (the flattened "
    "features change with the image size).",
    "zh": "矩阵乘法中第一个操作数的列数与第二个的行数不同：在 `torch.addmm(bias, input, "
    "weight.t())` 背后是一个 nn.Linear，它的 in_features 与输入的特征数不一致，最常见的原因是"
    "输入尺寸与模型设计时的尺寸不同（展平后的特征数随图像尺寸变化）。",
}
_ADDMM_FIX = {
    "en": "Print `x.shape` just before the Linear layer and set its `in_features` to the "
    "last size (or use `nn.LazyLinear`), or feed inputs of the size the model expects.",
    "zh": "在该 Linear 层之前打印 `x.shape`，把 `in_features` 设为最后一维的大小（或改用 "
    "`nn.LazyLinear`），或者输入模型期望的尺寸。",
}
PITFALL.error(
    r"mat1 dim 1 must match mat2 dim 0",
    types=(),
    confidence=0.9,
    cause=_ADDMM_CAUSE,
    fix=_ADDMM_FIX,
)
# PyTorch 0.2-0.3 on a GPU: the matrix products of THC's BLAS file named neither shapes nor
# operands ("size mismatch at /pytorch/torch/lib/THC/generic/THCTensorMathBlas.cu:247").
PITFALL.error(
    r"size mismatch at \S{0,300}?TensorMathBlas\.cu",
    types=(),
    confidence=0.85,
    cause=_ADDMM_CAUSE,
    fix=_ADDMM_FIX,
)

# PyTorch before 1.8 (TH/THC): "size mismatch, m1: [64 x 9216], m2: [4608 x 128] at ...".
PITFALL.error(
    r"size mismatch, m1: \[(?P<rows>\d+) x (?P<features>\d+)\], "
    r"m2: \[(?P<in_features>\d+) x (?P<out_features>\d+)\]",
    types=(),
    confidence=0.95,
    cause=_LINEAR_CAUSE,
    fix=_LINEAR_FIX,
)
# The same message retyped in an issue's prose: "size mismatched. m1:[128,5148],m2:[64,42]".
PITFALL.error(
    r"size mismatch(?:ed)?[,.:]? ?m1: ?\[(?P<rows>\d+) ?[x,] ?(?P<features>\d+)\],? ?"
    r"m2: ?\[(?P<in_features>\d+) ?[x,] ?(?P<out_features>\d+)\]",
    types=(),
    confidence=0.85,
    cause=_LINEAR_CAUSE,
    fix=_LINEAR_FIX,
)
PITFALL.error(
    r"Expected size for first two dimensions of batch2 tensor to be: "
    r"\[(?P<expected>[\d, ]+)\] but got: \[(?P<got>[\d, ]+)\]",
    types=(),
    confidence=0.9,
    cause={
        "en": "In a batched matrix product (torch.bmm / baddbmm / matmul of 3-d tensors) "
        "batch2 must start with [batch, K] = [{expected}], where K is the last size of "
        "batch1; it starts with [{got}].",
        "zh": "在批量矩阵乘法（torch.bmm / baddbmm / 三维张量的 matmul）中，batch2 的前两维必须是 "
        "[batch, K] = [{expected}]（K 是 batch1 的最后一维），实际却是 [{got}]。",
    },
    fix={
        "en": "Print both shapes: batch1 is [B, N, K], batch2 must be [B, K, M]; transpose "
        "batch2 (`.transpose(1, 2)`) or fix the batch size so they agree.",
        "zh": "打印两个张量的形状：batch1 是 [B, N, K]，batch2 必须是 [B, K, M]；对 batch2 做 "
        "`.transpose(1, 2)`，或修正 batch 大小使二者一致。",
    },
)
PITFALL.error(
    r"size mismatch, got input \((?P<rows>\d+)\), mat \((?P<mat>\d+x\d+)\), "
    r"vec \((?P<vec>\d+)\)",
    types=(),
    confidence=0.9,
    cause={
        "en": "A matrix-vector product of a {mat} matrix with a vector of {vec} elements: "
        "the vector must have as many elements as the matrix has columns.",
        "zh": "{mat} 的矩阵与 {vec} 个元素的向量相乘：向量的元素个数必须等于矩阵的列数。",
    },
)
