"""TD111 optimize-non-leaf-tensor: an optimizer given a tensor made by an operation."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Clue, Pitfall, lazy_compile

PITFALL = Pitfall(
    code="TD111",
    name="optimize-non-leaf-tensor",
    title={"en": "Optimizer built over a non-leaf tensor", "zh": "用非叶子张量构造优化器"},
    messages={
        "": {
            "en": "The optimizer was given a tensor produced by an operation (a non-leaf), "
            "typically `requires_grad=True` followed by `.cuda()` or `.to(device)`",
            "zh": "传给优化器的是一个由运算得到的张量（非叶子张量），通常是先 `requires_grad=True` "
            "再 `.cuda()` 或 `.to(device)`",
        }
    },
    fix_hint={
        "en": "Create the tensor where it will live and only then make it require grad: "
        "`torch.randn(3, device=device, requires_grad=True)`, or "
        "`x = x.to(device).requires_grad_()`; for module weights, wrap them in "
        "`nn.Parameter` and move the module with `model.to(device)`.",
        "zh": "直接在目标设备上创建张量，然后再让它需要梯度：`torch.randn(3, device=device, "
        "requires_grad=True)`，或 `x = x.to(device).requires_grad_()`；模块的权重请用 "
        "`nn.Parameter` 包装，再通过 `model.to(device)` 迁移整个模块。",
    },
    docs={
        "en": """
## What it catches
The error raised when an optimizer is built over a tensor that is not a leaf of the autograd
graph: `ValueError: can't optimize a non-leaf Tensor`.

## Why is this bad?
An optimizer updates tensors in place using their `.grad`, and autograd fills `.grad` only for
leaf tensors. `torch.randn(3, requires_grad=True).cuda()` looks like a trainable tensor on the
GPU, but it is the result of a copy: the leaf is the CPU tensor created first and thrown away,
and the GPU copy is a non-leaf whose `.grad` would always be `None`. The same happens with
`.to(device)`, `.double()`, `.view(...)` or arithmetic (`torch.randn(3, requires_grad=True) *
0.01`) after `requires_grad=True`. PyTorch refuses the tensor rather than train nothing.

## Symptoms
`ValueError: can't optimize a non-leaf Tensor` (PyTorch 0.3: `can't optimize a non-leaf
Variable`).

## References
- https://pytorch.org/docs/stable/generated/torch.Tensor.is_leaf.html
""",
        "zh": """
## What it catches
用非叶子张量构造优化器时抛出的错误：`ValueError: can't optimize a non-leaf Tensor`。

## Why is this bad?
优化器根据 `.grad` 原地更新张量，而 autograd 只为叶子张量填充 `.grad`。
`torch.randn(3, requires_grad=True).cuda()` 看上去是一个 GPU 上可训练的张量，其实它是一次拷贝的结果：
真正的叶子是最先创建、随即被丢弃的那个 CPU 张量，而 GPU 上的这份拷贝不是叶子，它的 `.grad`
永远是 `None`。在 `requires_grad=True` 之后再做 `.to(device)`、`.double()`、`.view(...)`
或算术运算（`torch.randn(3, requires_grad=True) * 0.01`）也是一样。与其什么都训练不了，PyTorch
选择直接拒绝这个张量。

## Symptoms
`ValueError: can't optimize a non-leaf Tensor`（PyTorch 0.3：`can't optimize a non-leaf
Variable`）。

## References
- https://pytorch.org/docs/stable/generated/torch.Tensor.is_leaf.html
""",
    },
    example="""
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
weights = torch.randn(10, 3, requires_grad=True).to(device, torch.float64)
optimizer = torch.optim.SGD([weights], lr=0.1)
""",
    use_instead="""
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
weights = torch.randn(10, 3, device=device, dtype=torch.float64, requires_grad=True)
optimizer = torch.optim.SGD([weights], lr=0.1)
""",
)

PITFALL.error(
    r"can['\u2019]t optimize a non-leaf (?:Tensor|Variable)",
    types=("ValueError",),
    confidence=0.95,
    cause={
        "en": "A tensor given to the optimizer is the result of an operation, not a leaf: "
        "usually `requires_grad=True` set before `.cuda()`/`.to(device)`/`.double()` or "
        "an arithmetic operation, which return a new tensor that autograd never fills "
        "`.grad` for.",
        "zh": "传给优化器的某个张量是运算的结果而不是叶子张量：通常是先设了 `requires_grad=True`，"
        "再做 `.cuda()`/`.to(device)`/`.double()` 或算术运算，这些操作返回的新张量 "
        "autograd 永远不会为它填充 `.grad`。",
    },
)

# `itertools.chain(*model.parameters())`: the star hands each parameter to `chain` as an
# iterable of its own, so the optimizer gets the parameters' rows, views made by indexing
# (pytorch/pytorch#4957). The message may be cut off; the call and the optimizer's error are
# what the text shows.
_CHAIN_STARRED = lazy_compile(r"\bchain\(\s*\*\s*[\w.]{1,120}?\.parameters\(\)")
_OPTIMIZER_ERROR = lazy_compile(r"\bValueError\b|non-leaf|[/\\]optim[/\\]\w+\.py")


@PITFALL.error_check(types=(), words=("chain(",))
def chained_parameter_rows(block, report) -> Clue | None:
    """The text shows parameters star-unpacked into `chain` and an optimizer's error."""
    if block.short_type not in ("", "ValueError"):
        return None
    found = report.search(_CHAIN_STARRED)
    if found is None or not report.search(_OPTIMIZER_ERROR):
        return None
    return Clue(
        0.8,
        {
            "en": "`chain(*{call})` unpacks the parameters into separate iterables, so `chain` "
            "yields each parameter's rows (`weight[0]`, `weight[1]`, ...): views made by "
            "indexing, non-leaf tensors the optimizer refuses.",
            "zh": "`chain(*{call})` 把参数拆成一个个单独的可迭代对象，于是 `chain` 产出的是每个参数的行"
            "（`weight[0]`、`weight[1]`……）：这些是索引得到的视图，是优化器拒收的非叶子张量。",
        },
        {
            "en": "Drop the star: `itertools.chain({call}, [extra])`, or pass a list "
            "`[*{call}, extra]`.",
            "zh": "去掉星号：`itertools.chain({call}, [extra])`，或者传一个列表 "
            "`[*{call}, extra]`。",
        },
        {"call": found.group(0).partition("*")[2].strip()},
    )
