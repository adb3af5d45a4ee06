"""TD106 inplace-modified-for-grad: a tensor saved for backward was changed in place."""

from __future__ import annotations

import re

from torchdoctor.catalog.sdk import Clue, Pitfall, lazy_compile

PITFALL = Pitfall(
    code="TD106",
    name="inplace-modified-for-grad",
    title={
        "en": "A tensor saved for the backward pass was modified in place",
        "zh": "反向传播需要的张量被原地修改了",
    },
    messages={
        "": {
            "en": "A tensor that autograd saved for the backward pass was changed by an in-place "
            "operation before `backward()` ran, so its gradient cannot be computed",
            "zh": "autograd 为反向传播保存的某个张量在 `backward()` 之前被原地操作修改了，"
            "因此无法计算梯度",
        }
    },
    fix_hint={
        "en": "Run once under `torch.autograd.set_detect_anomaly(True)` to see the forward line "
        "whose saved tensor was changed, then make the change out of place there "
        "(`x = x + y` instead of `x += y`, `inplace=False`, `x = x.clone()` before "
        "`x[idx] = ...`); in a GAN, call `optimizer.step()` only after every backward "
        "that uses the same forward pass.",
        "zh": "在 `torch.autograd.set_detect_anomaly(True)` 下运行一次，找到其保存的张量被改动的那行"
        "前向代码，把那里的原地操作改成非原地（用 `x = x + y` 代替 `x += y`，设 "
        "`inplace=False`，在 `x[idx] = ...` 之前先 `x = x.clone()`）；训练 GAN 时，"
        "要等用到同一次前向计算的所有 backward 都完成后再调用 `optimizer.step()`。",
    },
    docs={
        "en": """
## What it catches
The autograd error raised by `backward()` when a tensor that an operation saved for its
gradient was modified in place afterwards: `one of the variables needed for gradient
computation has been modified by an inplace operation`. The explainer reads the tensor's type
and shape, the operation that produced it and the version numbers out of the message.

## Why is this bad?
Many operations keep their input or output to compute the gradient later: `relu` and
`sigmoid` keep their output, `mul` and `matmul` keep their inputs. Every tensor carries a
version counter that each in-place operation increments; at backward time autograd compares
the counter with the value it recorded and refuses to use a tensor that has changed, since
the gradient would be silently wrong. The line that fails is always `backward()`, far from
the culprit, which is usually one of:

- an augmented assignment on an intermediate tensor: `x += residual`, `out *= mask`;
- `nn.ReLU(inplace=True)`, `F.relu(x, inplace=True)`, `x.relu_()`, `x.clamp_(...)`;
- an indexed assignment into a tensor that is needed for the gradient: `x[:, 0] = 0`;
- in a GAN or an actor-critic loop, `optimizer.step()` between two `backward()` calls that
  use the same forward pass: the step updates the weights in place, and the second backward
  needs their old values.

The message names the tensor (`[torch.FloatTensor [64, 128]]`) and, in recent versions, the
operation whose output it is (`output 0 of ReluBackward0`; `output 0 of Relu` in the newest
releases). `torch.autograd.set_detect_anomaly(True)` prints the forward traceback of the
operation whose backward failed, which points at the line to change.

## Symptoms
`RuntimeError: one of the variables needed for gradient computation has been modified by an
inplace operation: [torch.cuda.FloatTensor [64, 128]], which is output 0 of ReluBackward0, is
at version 2; expected version 1 instead. Hint: enable anomaly detection to find the operation
that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True).`

With anomaly detection on, the hint reads `Hint: the backtrace further above shows the
operation that failed to compute its gradient. The variable in question was changed in there
or anywhere later. Good luck!`, after a warning `Error detected in MulBackward0. Traceback of
forward call that caused the error: ...`. PyTorch 0.4 and 1.0 print only the first sentence,
without the tensor.

## References
- https://pytorch.org/docs/stable/notes/autograd.html#in-place-operations-with-autograd
- https://pytorch.org/docs/stable/autograd.html#torch.autograd.detect_anomaly
""",
        "zh": """
## What it catches
`backward()` 抛出的 autograd 错误：某个运算为计算梯度而保存的张量，之后被原地操作修改了，
即 `one of the variables needed for gradient computation has been modified by an inplace
operation`。解释器会从报错信息中读出该张量的类型和形状、产生它的运算以及版本号。

## Why is this bad?
很多运算会保留输入或输出，留待之后计算梯度：`relu`、`sigmoid` 保留输出，`mul`、`matmul`
保留输入。每个张量都有一个版本计数器，每次原地操作都会让它加一；反向传播时 autograd
会把计数器与当初记录的值比较，一旦张量被改过就拒绝使用，否则算出的梯度会悄无声息地出错。
报错的那一行总是 `backward()`，离真正的问题很远，罪魁祸首通常是下面几种之一：

- 对中间结果做增强赋值：`x += residual`、`out *= mask`；
- `nn.ReLU(inplace=True)`、`F.relu(x, inplace=True)`、`x.relu_()`、`x.clamp_(...)`；
- 对计算梯度还要用到的张量做索引赋值：`x[:, 0] = 0`；
- 在 GAN 或 actor-critic 的训练循环里，两次使用同一次前向计算的 `backward()` 之间调用了
  `optimizer.step()`：参数被原地更新，而第二次反向传播需要的是它们更新前的值。

报错信息会给出张量（`[torch.FloatTensor [64, 128]]`），较新的版本还会给出它是哪个运算的输出
（`output 0 of ReluBackward0`；最新版本写作 `output 0 of Relu`）。打开
`torch.autograd.set_detect_anomaly(True)` 后，PyTorch 会打印反向计算失败的那个运算在前向时的调用栈，
据此就能找到需要修改的代码行。

## Symptoms
`RuntimeError: one of the variables needed for gradient computation has been modified by an
inplace operation: [torch.cuda.FloatTensor [64, 128]], which is output 0 of ReluBackward0, is
at version 2; expected version 1 instead. Hint: enable anomaly detection to find the operation
that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True).`

打开异常检测后，提示变为 `Hint: the backtrace further above shows the operation that failed to
compute its gradient. The variable in question was changed in there or anywhere later. Good
luck!`，前面还有一条警告 `Error detected in MulBackward0. Traceback of forward call that caused
the error: ...`。PyTorch 0.4 和 1.0 只打印第一句，不包含张量信息。

## References
- https://pytorch.org/docs/stable/notes/autograd.html#in-place-operations-with-autograd
- https://pytorch.org/docs/stable/autograd.html#torch.autograd.detect_anomaly
""",
    },
    example="""
import torch

x = torch.randn(64, 128, requires_grad=True)
hidden = torch.relu(x)
out = hidden * 2
hidden += 1
out.sum().backward()
""",
    use_instead="""
import torch

x = torch.randn(64, 128, requires_grad=True)
hidden = torch.relu(x)
out = hidden * 2
hidden = hidden + 1
out.sum().backward()
""",
)

_MESSAGE = "needed for gradient computation has been modified by an inplace operation"
_DETAIL = re.compile(
    r"modified by an inplace operation:\s*\[(?P<type>[\w.]+) \[(?P<shape>[^\]]*)\]\]"
    r"(?:,\s+which is output (?P<index>\d+) of (?P<op>\w+),)?"
    r"\s+is at version (?P<version>\d+); expected version (?P<expected>\d+) instead"
)
# "Good luck!": anomaly detection is already on, its warning above shows the forward line.
_ANOMALY_ON = "backtrace further above shows the operation"

_CAUSE_OP = {
    "en": "A {type} of shape [{shape}], output {index} of `{op}`, was saved for the backward "
    "pass and then changed in place (it is at version {version}, autograd expected "
    "{expected}): look for `+=`, `inplace=True`, an indexed assignment or an "
    "`optimizer.step()` between the `{op}` line and `backward()`.",
    "zh": "一个形状为 [{shape}] 的 {type}（`{op}` 的第 {index} 个输出）被保存下来供反向传播使用，"
    "之后又被原地修改了（当前版本为 {version}，autograd 期望的是 {expected}）：请检查 `{op}` "
    "那一行与 `backward()` 之间的 `+=`、`inplace=True`、索引赋值或 `optimizer.step()`。",
}
_CAUSE_TENSOR = {
    "en": "A {type} of shape [{shape}] that autograd saved for the backward pass was changed "
    "in place before `backward()` (it is at version {version}, autograd expected "
    "{expected}): an input or a weight used in the forward pass was modified by `+=`, "
    "an indexed assignment, `inplace=True` or an `optimizer.step()`.",
    "zh": "autograd 为反向传播保存的一个形状为 [{shape}] 的 {type} 在 `backward()` 之前被原地修改了"
    "（当前版本为 {version}，autograd 期望的是 {expected}）：前向计算用到的某个输入或权重被 "
    "`+=`、索引赋值、`inplace=True` 或 `optimizer.step()` 改动过。",
}
_CAUSE_PLAIN = {
    "en": "A tensor that autograd saved for the backward pass was changed in place before "
    "`backward()`: an intermediate result modified by `+=`, `inplace=True` or an "
    "indexed assignment, or weights updated by `optimizer.step()` between two backward "
    "passes over the same forward.",
    "zh": "autograd 为反向传播保存的某个张量在 `backward()` 之前被原地修改了：中间结果被 `+=`、"
    "`inplace=True` 或索引赋值改动，或者在对同一次前向计算做两次反向传播之间，参数被 "
    "`optimizer.step()` 更新了。",
}
_FIX_ANOMALY_ON = {
    "en": "Anomaly detection is already on: the warning `Error detected in ...` above shows the "
    "forward line of the operation that saved the tensor; make the in-place change to "
    "that tensor after it out of place (`x = x + y`, `inplace=False`, `x.clone()`).",
    "zh": "异常检测已经打开：上方的警告 `Error detected in ...` 给出了保存该张量的运算在前向时的代码行；"
    "把之后对这个张量的原地修改改成非原地（`x = x + y`、`inplace=False`、`x.clone()`）。",
}


@PITFALL.error_check(types=("RuntimeError",), words=("has been modified by an inplace operation",))
def check_message(block, report):
    if _MESSAGE not in block.message:
        return None
    fix = _FIX_ANOMALY_ON if _ANOMALY_ON in block.message else None
    found = _DETAIL.search(block.message)
    if found is None:
        return Clue(0.95, _CAUSE_PLAIN, fix)
    fields = {k: v for k, v in found.groupdict().items() if v is not None}
    return Clue(0.95, _CAUSE_OP if "op" in fields else _CAUSE_TENSOR, fix, fields)


# The same message anywhere in the output: pasted logs sometimes glue it to the next line (anomaly
# mode's warning), and it is then not read as an exception of its own.
PITFALL.error(
    r"modified by an inplace operation:\s*\[(?P<type>[\w.]+) \[(?P<shape>[^\]]*)\]\],\s+which "
    r"is output (?P<index>\d+) of (?P<op>\w+),\s+is at version (?P<version>\d+); expected "
    r"version (?P<expected>\d+) instead",
    types=(),
    confidence=0.9,
    cause=_CAUSE_OP,
)
PITFALL.error(_MESSAGE, types=(), confidence=0.9, cause=_CAUSE_PLAIN)

# Retold in an issue's prose when the error itself is a screenshot: "there exists an inplace
# operation that modify the node in the computational graph". Not a leaf's in-place error
# ("a leaf Variable that requires grad is being used in an in-place operation"), and only
# where no exception was pasted: one that was is what to explain.
_RETOLD = lazy_compile(
    r"\bin-?place operations?\b[^.\n]{0,80}?\b(?:computation(?:al)? graph|gradient computation)"
)


@PITFALL.error_check(types=(), words=("place operation",))
def retold(block, report):
    if report.exceptions or report.search("leaf Variable"):
        return None
    if report.once(_retold) is None:
        return None
    return Clue(0.6, _CAUSE_PLAIN)


def _retold(report):
    return _RETOLD.search(report.text or "")
