"""TD108 no-grad-fn: `backward()` on a tensor that is not connected to any parameter."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Pitfall

PITFALL = Pitfall(
    code="TD108",
    name="no-grad-fn",
    title={
        "en": "`backward()` on a tensor with no autograd graph",
        "zh": "对没有计算图的张量调用 `backward()`",
    },
    messages={
        "": {
            "en": "The tensor passed to `backward()` does not require grad and has no `grad_fn`: "
            "nothing that requires grad was used to compute it",
            "zh": "传给 `backward()` 的张量不需要梯度，也没有 `grad_fn`：计算它时没有用到任何需要梯度的张量",
        }
    },
    fix_hint={
        "en": "Find where the loss lost its graph: compute it outside `torch.no_grad()` / "
        "`torch.inference_mode()`, keep it a tensor (no `.item()`, `.detach()`, `.numpy()` "
        "or `torch.tensor(...)` round trip), and check that some parameters still have "
        "`requires_grad=True`. Setting `loss.requires_grad = True` only hides the "
        "error: nothing gets trained.",
        "zh": "找出损失在哪里丢掉了计算图：不要在 `torch.no_grad()` / `torch.inference_mode()` 里计算它，"
        "让它始终是张量（不要经过 `.item()`、`.detach()`、`.numpy()` 或 `torch.tensor(...)` "
        "再转回来），并确认还有参数的 `requires_grad=True`。设置 `loss.requires_grad = True` "
        "只会掩盖错误：什么都没有被训练。",
    },
    docs={
        "en": """
## What it catches
The autograd error raised when `backward()` is called on a tensor that autograd did not
record: `element 0 of tensors does not require grad and does not have a grad_fn`.

## Why is this bad?
`backward()` follows the `grad_fn` chain from the loss back to the tensors that require grad,
usually the model's parameters. A loss without `grad_fn` was computed from nothing that
requires grad, so there is nothing to differentiate. Common ways to get there:

- the forward pass or the loss ran under `torch.no_grad()` or `torch.inference_mode()` (an
  evaluation helper reused for training, a `@torch.no_grad()` decorator on `forward`);
- the loss went through Python or numpy and back: `loss.item()`, `.detach()`, `.numpy()`,
  `torch.tensor(some_list)` or a metric library computed it;
- every parameter is frozen (`requires_grad=False` for a whole backbone, or a PEFT/LoRA model
  whose adapters were not attached), or the inputs of a gradient-checkpointed block do not
  require grad (Hugging Face: `model.enable_input_require_grads()`);
- the tensor was created by hand with the default `requires_grad=False`.

Setting `loss.requires_grad = True` makes the error go away, but the loss is still
disconnected from the model: the run "trains" and the weights never change.

## Symptoms
`RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn`
(PyTorch 0.3: `element 0 of variables does not require grad and does not have a grad_fn`).

## References
- https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation
""",
        "zh": """
## What it catches
对 autograd 没有记录的张量调用 `backward()` 时抛出的错误：`element 0 of tensors does not
require grad and does not have a grad_fn`。

## Why is this bad?
`backward()` 沿着 `grad_fn` 链从损失一路回溯到需要梯度的张量，通常就是模型参数。没有
`grad_fn` 的损失不是由任何需要梯度的张量算出来的，也就没有东西可求导。常见的原因有：

- 前向计算或损失是在 `torch.no_grad()` 或 `torch.inference_mode()` 中算的（把评估用的函数拿来训练，
  或者给 `forward` 加了 `@torch.no_grad()` 装饰器）；
- 损失经过 Python 或 numpy 又转了回来：`loss.item()`、`.detach()`、`.numpy()`、
  `torch.tensor(some_list)`，或者是用某个指标库算出来的；
- 所有参数都被冻结了（整个骨干网络设了 `requires_grad=False`，或者 PEFT/LoRA 模型的适配器没有挂上），
  或者做了梯度检查点的模块的输入不需要梯度（Hugging Face 中需要 `model.enable_input_require_grads()`）；
- 张量是手工创建的，`requires_grad` 保持默认的 `False`。

设置 `loss.requires_grad = True` 能让错误消失，但损失和模型之间仍然是断开的：训练照常“运行”，
权重却一点都不会变。

## Symptoms
`RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn`
（PyTorch 0.3：`element 0 of variables does not require grad and does not have a grad_fn`）。

## References
- https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation
""",
    },
    example="""
import torch
import torch.nn as nn

model = nn.Linear(4, 1)
x, y = torch.randn(8, 4), torch.randn(8, 1)
with torch.no_grad():
    prediction = model(x)
loss = nn.functional.mse_loss(prediction, y)
loss.backward()
""",
    use_instead="""
import torch
import torch.nn as nn

model = nn.Linear(4, 1)
x, y = torch.randn(8, 4), torch.randn(8, 1)
prediction = model(x)
loss = nn.functional.mse_loss(prediction, y)
loss.backward()
""",
)

PITFALL.error(
    # `element 0 or 1 of tensors ...`: a title retelling two runs' messages as one
    r"element \d+(?: or \d+)? of (?:tensors|variables) does not require grad and does not "
    r"have a grad_fn",
    confidence=0.95,
    cause={
        "en": "The tensor passed to `backward()` was computed from nothing that requires grad: "
        "the forward pass or the loss ran under `torch.no_grad()`/`inference_mode()`, "
        "the loss went through `.item()`/`.detach()`/`.numpy()` and back, or all "
        "parameters are frozen (`requires_grad=False`).",
        "zh": "传给 `backward()` 的张量不是由任何需要梯度的张量算出来的：前向计算或损失是在 "
        "`torch.no_grad()`/`inference_mode()` 中算的，损失经过 `.item()`/`.detach()`/"
        "`.numpy()` 又转了回来，或者所有参数都被冻结了（`requires_grad=False`）。",
    },
)
