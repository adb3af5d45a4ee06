"""TD110 non-leaf-grad-access: `.grad` read on a tensor autograd never fills in (it stays None)."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Clue, Pitfall, lazy_compile

PITFALL = Pitfall(
    code="TD110",
    name="non-leaf-grad-access",
    title={
        "en": "`.grad` read on a non-leaf tensor, which stays `None`",
        "zh": "读取非叶子张量的 `.grad`，它始终是 `None`",
    },
    messages={
        "": {
            "en": "`.grad` is read on a tensor that is the result of an operation (not a leaf): "
            "autograd does not store its gradient, so it is `None`",
            "zh": "读取了一个由运算得到的张量（非叶子张量）的 `.grad`：autograd 不保存它的梯度，所以它是 `None`",
        }
    },
    fix_hint={
        "en": "Read `.grad` on the leaf tensor you created: make the tensor with "
        "`requires_grad=True` after any `.to(device)`/`.cuda()`/`* scale` (e.g. "
        "`torch.randn(3, device=device, requires_grad=True)`), or call `t.retain_grad()` "
        "before `backward()` if you want the gradient of an intermediate result.",
        "zh": "读取你自己创建的叶子张量的 `.grad`：在 `.to(device)`/`.cuda()`/`* scale` 之后再设置 "
        "`requires_grad=True`（例如 `torch.randn(3, device=device, requires_grad=True)`）；"
        "如果确实需要中间结果的梯度，请在 `backward()` 之前调用 `t.retain_grad()`。",
    },
    docs={
        "en": """
## What it catches
The warning PyTorch prints when `.grad` is read on a tensor that is not a leaf of the autograd
graph, `The .grad attribute of a Tensor that is not a leaf Tensor is being accessed`, and the
`TypeError`/`AttributeError` on `None` that usually follows it in the same output
(`unsupported operand type(s) for *: 'NoneType' and 'float'`, `'NoneType' object has no
attribute 'zero_'`).

## Why is this bad?
`backward()` stores gradients only in leaf tensors: tensors you created yourself with
`requires_grad=True`, and the parameters of modules. A tensor produced by an operation is not a
leaf, and its `.grad` stays `None` unless `retain_grad()` was called on it. The trap is that a
tensor looks like a leaf when it is not: `torch.randn(3, requires_grad=True).cuda()`,
`.to(device)`, `.double()` or `* 0.01` after `requires_grad=True` return a new, non-leaf tensor,
and the leaf you meant to train is the temporary one that was thrown away. Code that then
updates the tensor by hand (`w -= lr * w.grad`) or clears its gradient (`w.grad.zero_()`)
crashes on `None`.

## Symptoms
`UserWarning: The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its
.grad attribute won't be populated during autograd.backward(). If you indeed want the .grad
field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you
access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See
github.com/pytorch/pytorch/pull/30531 for more information.`

Then, where the gradient is used: `TypeError: unsupported operand type(s) for *: 'NoneType'
and 'float'` or `AttributeError: 'NoneType' object has no attribute 'zero_'`. Old versions
print no warning, only the error on `None`.

## References
- https://pytorch.org/docs/stable/generated/torch.Tensor.is_leaf.html
- https://pytorch.org/docs/stable/generated/torch.Tensor.retain_grad.html
""",
        "zh": """
## What it catches
读取非叶子张量的 `.grad` 时 PyTorch 打印的警告 `The .grad attribute of a Tensor that is not a
leaf Tensor is being accessed`，以及同一段输出中通常紧随其后的、对 `None` 操作引发的
`TypeError`/`AttributeError`（`unsupported operand type(s) for *: 'NoneType' and 'float'`、
`'NoneType' object has no attribute 'zero_'`）。

## Why is this bad?
`backward()` 只把梯度存进叶子张量：你自己用 `requires_grad=True` 创建的张量，以及模块的参数。
由运算得到的张量不是叶子，除非对它调用过 `retain_grad()`，否则它的 `.grad` 一直是 `None`。
陷阱在于有些张量看起来像叶子其实不是：在 `requires_grad=True` 之后再做 `.cuda()`、`.to(device)`、
`.double()` 或 `* 0.01`，得到的都是新的非叶子张量，而你本想训练的那个叶子只是一个被丢弃的临时张量。
之后手动更新它（`w -= lr * w.grad`）或清零梯度（`w.grad.zero_()`）的代码就会因为 `None` 而崩溃。

## Symptoms
`UserWarning: The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its
.grad attribute won't be populated during autograd.backward(). If you indeed want the .grad
field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you
access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See
github.com/pytorch/pytorch/pull/30531 for more information.`

随后在用到梯度的地方出现 `TypeError: unsupported operand type(s) for *: 'NoneType' and
'float'` 或 `AttributeError: 'NoneType' object has no attribute 'zero_'`。旧版本
没有这条警告，只有对 `None` 操作的报错。

## References
- https://pytorch.org/docs/stable/generated/torch.Tensor.is_leaf.html
- https://pytorch.org/docs/stable/generated/torch.Tensor.retain_grad.html
""",
    },
    example="""
import torch

w = torch.randn(3, requires_grad=True) * 0.01
loss = (w * torch.randn(3)).sum()
loss.backward()
print(w.grad)
""",
    use_instead="""
import torch

w = (torch.randn(3) * 0.01).requires_grad_()
loss = (w * torch.randn(3)).sum()
loss.backward()
print(w.grad)
""",
)

_WARNING = "attribute of a Tensor that is not a leaf Tensor is being accessed"

# Python shows the warning as a UserWarning; libtorch's C++ API (and bindings over it, such as
# DJL) logs the same text as c10's `[W TensorBody.h:491] Warning: ...`, a line of no type. The
# second half alone is how a cut-off paste or an issue title quotes it.
PITFALL.error(
    r"\.grad attribute of a Tensor that is not a leaf Tensor is being accessed"
    r"|\.grad attribute won't be populated during autograd\.backward\(\)",
    types=(),
    confidence=0.95,
    cause={
        "en": "`.grad` was read on a tensor produced by an operation, not on a leaf, so it is "
        "`None`: an intermediate activation without `.retain_grad()`, or a tensor made "
        "with `requires_grad=True` and then moved or scaled (`.cuda()`, `.to(device)`, "
        "`* 0.01`), which returns a new non-leaf tensor.",
        "zh": "读取了由运算得到的张量（而非叶子张量）的 `.grad`，所以它是 `None`：可能是没有调用 "
        "`.retain_grad()` 的中间激活，也可能是创建时设了 `requires_grad=True`、之后又做了迁移或缩放"
        "（`.cuda()`、`.to(device)`、`* 0.01`）的张量，这些操作返回的是新的非叶子张量。",
    },
)


@PITFALL.error_check(
    types=("TypeError", "AttributeError"), words=("not a leaf tensor is being accessed",)
)
def check_none_grad(block, report):
    """An error on None counts only when the non-leaf warning was printed in the same run."""
    if "NoneType" not in block.message:
        return None
    if not report.once(_warned):
        return None
    return Clue(
        0.9,
        {
            "en": "The `None` here is the `.grad` of a non-leaf tensor (see the warning above): "
            "autograd only fills `.grad` of leaf tensors, and this one is the result of an "
            "operation: an intermediate activation (call `.retain_grad()` on it before "
            "`backward()`), or a tensor moved or scaled (`.cuda()`, `.to(device)`, "
            "`* scale`) after `requires_grad=True`.",
            "zh": "这里的 `None` 是一个非叶子张量的 `.grad`（见上方警告）：autograd 只填充叶子张量的 "
            "`.grad`，而这个张量是某个运算的结果：可能是中间激活（需在 `backward()` 之前对它调用 "
            "`.retain_grad()`），也可能是在 `requires_grad=True` 之后又做了迁移或缩放（`.cuda()`、"
            "`.to(device)`、`* scale`）的张量。",
        },
    )


def _warned(report) -> bool:
    """The non-leaf warning is in the input (`report.once`: asked for every block)."""
    return _WARNING in report.text or any(_WARNING in b.message for b in report.blocks)


# Without the warning, the user may say it: "x.grad is None ... I find that x.is_leaf is False".
# A `.grad` read, and the tensor named a non-leaf in the same text: the premise shown.
_SAID_NOT_LEAF = lazy_compile(
    r"is_leaf`?(?: is|==| ==| returns?| was| gives?)? ?`?False|\b(?:is )?not a leaf\b|\bnon-leaf\b"
)
_GRAD_READ = lazy_compile(r"\.grad\b(?!_fn)")


@PITFALL.error_check(
    types=("TypeError", "AttributeError"), words=("is_leaf", "not a leaf", "non-leaf")
)
def check_said_not_leaf(block, report) -> Clue | None:
    if "NoneType" not in block.message:
        return None
    if report.search(_SAID_NOT_LEAF) is None or report.search(_GRAD_READ) is None:
        return None
    return Clue(
        0.8,
        {
            "en": "The `None` is the `.grad` of a tensor that is not a leaf (as `is_leaf` shows): "
            "it is the result of an operation on a tensor that requires grad, and autograd only "
            "fills `.grad` of leaf tensors.",
            "zh": "这个 `None` 是一个非叶子张量的 `.grad`（`is_leaf` 为 False）：它是对需要梯度的张量做运算"
            "得到的结果，而 autograd 只填充叶子张量的 `.grad`。",
        },
        {
            "en": "Make the tensor a leaf before the forward pass, `x = x.detach().requires_grad_()`, "
            "or call `x.retain_grad()` on it before `backward()`.",
            "zh": "在前向计算之前把它变成叶子张量：`x = x.detach().requires_grad_()`；或者在 "
            "`backward()` 之前对它调用 `x.retain_grad()`。",
        },
    )
