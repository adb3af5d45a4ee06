"""TD106 inplace-modified-for-grad: a tensor saved for backward was changed in place."""

from __future__ import annotations

import ast
import re
from bisect import bisect_right

from torchdoctor.catalog.autograd._graphs import (
    backward_receiver,
    graph_sources,
    is_model_call,
)
from torchdoctor.catalog.sdk import (
    BlockKey,
    Clue,
    Context,
    Finding,
    Kind,
    Pitfall,
    attribute_values,
    bindings,
    is_self_attribute,
    lazy_compile,
    per_file,
    scope_of,
)

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
        },
        "stepped": {
            "en": "`{loss}.backward()` goes back through `{model}(...)` on line {made}, whose input "
            "carries another model's graph, but `{optimizer}.step()` on line {stepped} has updated "
            "`{model}`'s weights in place since: since PyTorch 1.5 backward raises RuntimeError (a "
            "variable needed for gradient computation has been modified by an inplace operation); "
            "run this backward before that step, or compute `{model}(...)` again after it",
            "zh": "`{loss}.backward()` 要反向经过第 {made} 行的 `{model}(...)`（它的输入带着另一个模型的计算图），"
            "但第 {stepped} 行的 `{optimizer}.step()` 已经原地更新了 `{model}` 的权重：从 PyTorch 1.5 起 "
            "backward 会抛出 RuntimeError（梯度计算需要的变量被原地操作修改了）；请把这次 backward 放到那次 "
            "step 之前，或在 step 之后重新计算 `{model}(...)`",
        },
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

In the code (`check`), the case of actor-critic and GAN training loops: in one block, a model's
forward whose input carries another model's graph (`q_pi = critic(obs, actor(obs))`,
`netD(netG(z))`), then `optimizer.step()` of an optimizer every construction of which the file
gives that model's `parameters()`, then a `backward()` whose loss goes back through that
forward. The forward saved the model's weights for the gradient of its input, and the step
changed them in place: the backward raises since PyTorch 1.5 (DDPG, SAC and MADDPG
reimplementations written for 1.4 and earlier). A forward made again after the step, or a
backward before it, is right.

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

在代码中（`check`），检查 actor-critic 和 GAN 训练循环里的这种情况：同一个代码块中，先有一次输入带着另一个模型
计算图的前向计算（`q_pi = critic(obs, actor(obs))`、`netD(netG(z))`），然后是某个优化器的
`optimizer.step()`（文件中该优化器的每一次构造都传入了这个模型的 `parameters()`），再之后的 `backward()`
所用的 loss 要反向经过那次前向计算。那次前向为计算输入的梯度保存了模型权重，而 step 原地修改了它们：从
PyTorch 1.5 起这次 backward 会报错（为 1.4 及更早版本编写的 DDPG、SAC、MADDPG 复现代码常见）。在 step
之后重新做前向计算，或把 backward 放到 step 之前，都是正确的。

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
import torch.nn as nn

actor = nn.Linear(4, 2)
critic = nn.Linear(6, 1)
actor_optimizer = torch.optim.Adam(actor.parameters())
critic_optimizer = torch.optim.Adam(critic.parameters())

obs, acts, target = torch.randn(8, 4), torch.randn(8, 2), torch.randn(8, 1)
pi = actor(obs)
q_pi = critic(torch.cat([obs, pi], 1))
q = critic(torch.cat([obs, acts], 1))
critic_loss = ((q - target) ** 2).mean()
critic_optimizer.zero_grad()
critic_loss.backward()
critic_optimizer.step()
actor_loss = -q_pi.mean()
actor_optimizer.zero_grad()
actor_loss.backward()
actor_optimizer.step()
""",
    use_instead="""
import torch
import torch.nn as nn

actor = nn.Linear(4, 2)
critic = nn.Linear(6, 1)
actor_optimizer = torch.optim.Adam(actor.parameters())
critic_optimizer = torch.optim.Adam(critic.parameters())

obs, acts, target = torch.randn(8, 4), torch.randn(8, 2), torch.randn(8, 1)
q = critic(torch.cat([obs, acts], 1))
critic_loss = ((q - target) ** 2).mean()
critic_optimizer.zero_grad()
critic_loss.backward()
critic_optimizer.step()
pi = actor(obs)
q_pi = critic(torch.cat([obs, pi], 1))  # after the critic's step: its new weights
actor_loss = -q_pi.mean()
actor_optimizer.zero_grad()
actor_loss.backward()
actor_optimizer.step()
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


# ---- in the code: an optimizer step between a model's forward and a backward through it ----


@PITFALL.static(ast.Expr, names={"backward"})
def check_stepped_weights(statement: ast.Expr, ctx: Context) -> list[Finding] | None:
    """`q_pi = critic(obs, actor(obs))`, then `critic_optimizer.step()`, then
    `(-q_pi.mean()).backward()` (DDPG, SAC and MADDPG reimplementations, a GAN's generator step
    after the discriminator's): the critic's forward saved its weights for the gradient of its
    input, and the step changed them in place."""
    loss = backward_receiver(statement)
    if loss is None or not ctx.ancestors:
        return None
    located = ctx.block_position(statement, ctx.ancestors[-1])
    if located is None:
        return None
    block, index = located
    steps = _optimizer_steps(ctx, BlockKey(block))
    if not steps or min(positions[0] for positions, _ in steps.values()) >= index:
        return None
    for made in sorted(graph_sources(ctx, block, index, loss), reverse=True):
        for model in _models_fed_a_graph(ctx, block, made):
            for positions, optimizer in steps.values():
                at = bisect_right(positions, made)  # the optimizer's first step after the forward
                if at == len(positions) or positions[at] >= index:
                    continue
                if _optimizes(ctx, optimizer, model):
                    return [
                        ctx.finding(
                            PITFALL,
                            statement,
                            "stepped",
                            loss=ctx.text(loss),
                            model=ctx.text(model),
                            made=block[made].lineno,
                            optimizer=ctx.text(optimizer),
                            stepped=block[positions[at]].lineno,
                        )
                    ]
    return None


@per_file
def _optimizer_steps(ctx: Context, key: BlockKey) -> dict[str, tuple[list[int], ast.expr]]:
    """The block's `optimizer.step()` statements by optimizer (its text): their positions, in
    order, and the optimizer; read once per block however many backward calls it holds."""
    found: dict[str, tuple[list[int], ast.expr]] = {}
    for position, statement in enumerate(key.block):
        call = statement.value if type(statement) is ast.Expr else None
        if (
            type(call) is ast.Call
            and not call.args
            and not call.keywords
            and type(call.func) is ast.Attribute
            and call.func.attr == "step"
            and isinstance(call.func.value, (ast.Name, ast.Attribute))
        ):
            optimizer = call.func.value
            found.setdefault(ctx.text(optimizer), ([], optimizer))[0].append(position)
    return found


def _models_fed_a_graph(ctx: Context, block: list[ast.stmt], made: int) -> list[ast.expr]:
    """The models the statement at `made` runs on an input that carries another model's graph
    (`self.critic(obs1, pi)` after `pi = self.actor(obs1)`; `netD(netG(z))`)."""
    statement = block[made]
    found = []
    for node in ast.walk(statement):
        if type(node) is not ast.Call or not is_model_call(node, ctx):
            continue
        if not isinstance(node.func, (ast.Name, ast.Attribute)):
            continue
        inputs = [*node.args, *(k.value for k in node.keywords)]
        if any(
            is_model_call(inner, ctx)
            for value in inputs
            for inner in ast.walk(value)
            if type(inner) is ast.Call
        ) or any(graph_sources(ctx, block, made, value) for value in inputs):
            found.append(node.func)
    return found


def _optimizes(ctx: Context, optimizer: ast.expr, model: ast.expr) -> bool:
    """Every construction of `optimizer` the file holds is given `model.parameters()` (alone,
    in a list, or in a chain of them)."""
    made = _constructions(ctx, optimizer)
    wanted = f"{ctx.text(model)}.parameters()"
    return bool(made) and all(
        type(value) is ast.Call
        and (value.args or value.keywords)
        and any(
            ctx.text(node) == wanted
            for node in ast.walk(value.args[0] if value.args else value.keywords[0].value)
            if type(node) is ast.Call
        )
        and ctx.kind_of(value) is Kind.OPTIMIZER
        for value in made
    )


def _constructions(ctx: Context, optimizer: ast.expr) -> tuple[ast.expr, ...]:
    if is_self_attribute(optimizer):
        cls = ctx.enclosing_class()
        return attribute_values(ctx, cls, optimizer.attr) if cls is not None else ()  # type: ignore[attr-defined]
    if type(optimizer) is ast.Name:
        found = bindings(ctx, scope_of(optimizer.id, ctx), optimizer.id) or ()
        if any(b.value is None or b.augmented for b in found):
            return ()
        return tuple(b.value for b in found)  # type: ignore[misc]
    return ()
