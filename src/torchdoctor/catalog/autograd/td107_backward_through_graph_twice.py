"""TD107 backward-through-graph-twice: `backward()` reaches a graph an earlier backward freed."""

from __future__ import annotations

import ast
from bisect import bisect_left

from torchdoctor.catalog.autograd._graphs import backward_receiver, graph_sources
from torchdoctor.catalog.sdk import (
    BlockKey,
    Context,
    Finding,
    Pitfall,
    lazy_compile,
    per_file,
)

PITFALL = Pitfall(
    code="TD107",
    name="backward-through-graph-twice",
    title={
        "en": "Backward through a graph whose saved tensors were already freed",
        "zh": "对已释放中间结果的计算图再次做反向传播",
    },
    messages={
        "": {
            "en": "`backward()` reached a part of the graph that an earlier `backward()` already "
            "freed: some tensor still links this step to a graph that was used before",
            "zh": "`backward()` 走到了一段已经被之前的 `backward()` 释放的计算图："
            "某个张量仍把这一步和之前用过的计算图连在一起",
        },
        "shared": {
            "en": "`{second}` runs backward through the graph of `{shared}` (line {made}) a second "
            "time: `{first}` on line {line} already freed it (RuntimeError: Trying to backward "
            "through the graph a second time); if the first loss should not reach `{shared}`'s "
            "model (a GAN's discriminator step), give it `{shared}.detach()`, else add the "
            "losses and call `backward()` once",
            "zh": "`{second}` 再次对 `{shared}`（第 {made} 行）的计算图做反向传播：第 {line} 行的 "
            "`{first}` 已经把它释放了（RuntimeError: Trying to backward through the graph a "
            "second time）；如果第一个损失本不该传到 `{shared}` 的模型（GAN 的判别器那一步），"
            "请在那里用 `{shared}.detach()`，否则把两个损失相加后只调用一次 `backward()`",
        },
    },
    fix_hint={
        "en": "Cut the link to the previous graph instead of adding `retain_graph=True`: "
        "`hidden = hidden.detach()` for an RNN state carried between batches, "
        "`total += loss.item()` for a running loss, `fake.detach()` for the "
        "discriminator step of a GAN. Use `retain_graph=True` only when you really "
        "backpropagate twice through the same forward pass.",
        "zh": "不要急着加 `retain_graph=True`，而是切断与上一张计算图的联系：跨 batch 传递的 RNN "
        "隐状态用 `hidden = hidden.detach()`，累计损失用 `total += loss.item()`，GAN 的判别器"
        "那一步用 `fake.detach()`。只有确实要对同一次前向计算反向传播两次时，才使用 "
        "`retain_graph=True`。",
    },
    root_causes=("accumulated-loss-graph",),
    docs={
        "en": """
## What it catches
The autograd error raised when `backward()` (or `torch.autograd.grad`) needs intermediate
values that an earlier backward pass has already freed: `Trying to backward through the graph
a second time`, in all its phrasings since PyTorch 0.1.

Before the run, `check` finds the commonest way to it: two `.backward()` calls in one block
(a loop body, a function) whose losses both come from the same model output, made once before
the first of them, which has no `retain_graph=True`. The classic case is a GAN whose
discriminator step uses `netD(fake)` instead of `netD(fake.detach())`, and whose generator
step then backpropagates through `fake` again. The losses are followed through the block's
own assignments; a use under `.detach()`, `.data` or `.item()` does not count, nor an output
made a leaf before the first backward (`x.requires_grad = True`, allowed on leaves only: the
graph starts there).

## Why is this bad?
To save memory, a backward pass frees the tensors each operation saved for its gradient as
soon as it has used them. A second backward through the same operations then finds nothing
to work with. The message suggests `retain_graph=True`, but in a training loop that is rarely
the fix: the second pass usually happens by accident, because a tensor created in the
previous iteration still carries that iteration's graph into the current one:

- the hidden state of an RNN passed from one batch to the next without `.detach()`;
- a running sum `total_loss += loss` that is then backpropagated, or a value computed from
  the model outside the loop and reused in every iteration;
- in a GAN, `fake = generator(z)` used by the discriminator loss without `fake.detach()`:
  the discriminator's backward frees the generator's part of the graph, and the generator's
  backward then fails. `torchdoctor run` reports that case as `detach-missing-between-models`
  (TD115), also once `retain_graph=True` has hidden the error.

`retain_graph=True` hides the error but keeps every previous graph alive: memory grows with
each step and gradients flow into iterations that are long over (truncated backpropagation
through time becomes untruncated).

## Symptoms
`RuntimeError: Trying to backward through the graph a second time (or directly access saved
tensors after they have already been freed). Saved intermediate values of the graph are freed
when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward
through the graph a second time or if you need to access saved tensors after calling
backward.`

Older versions: `Trying to backward through the graph a second time, but the buffers have
already been freed. Specify retain_graph=True when calling backward the first time.`; the first
releases: `Trying to backward through the graph second time, but the buffers have already been
freed. Please specify retain_variables=True when calling backward for the first time.`

## References
- https://pytorch.org/docs/stable/generated/torch.Tensor.backward.html
""",
        "zh": """
## What it catches
当 `backward()`（或 `torch.autograd.grad`）需要的中间结果已被之前的一次反向传播释放时，
autograd 抛出的错误：`Trying to backward through the graph a second time`，涵盖 PyTorch 0.1
以来的各种措辞。

运行之前，`check` 会找出最常见的成因：同一代码块（循环体、函数）中的两次 `.backward()`，
它们的损失都来自同一个模型输出，而这个输出在第一次调用之前只算了一次，第一次调用又没有
`retain_graph=True`。典型的例子是 GAN：判别器那一步用了 `netD(fake)` 而不是
`netD(fake.detach())`，随后生成器那一步又经过 `fake` 反向传播。规则沿着代码块内的赋值追踪损失；
在 `.detach()`、`.data` 或 `.item()` 之下的使用不算在内；在第一次反向传播之前被设为叶子的输出
（`x.requires_grad = True`，只允许对叶子这样做：计算图从那里开始）也不算。

## Why is this bad?
为了节省内存，反向传播在用完每个运算为求梯度而保存的张量后会立即释放它们。再对同一批运算做
第二次反向传播时，就已经无从计算了。报错信息建议加 `retain_graph=True`，但在训练循环里这很少是
正确的做法：第二次反向传播通常是无意中发生的，原因是上一次迭代产生的某个张量仍带着那次迭代的
计算图进入了本次迭代：

- RNN 的隐状态从一个 batch 传给下一个 batch 时没有 `.detach()`；
- 累加 `total_loss += loss` 之后又对它做反向传播，或者在循环外用模型算出的某个值在每次迭代中被重复使用；
- GAN 中判别器的损失直接使用了 `fake = generator(z)` 而没有 `fake.detach()`：判别器的反向传播
  释放了生成器那部分计算图，随后生成器的反向传播就会失败。`torchdoctor run` 把这种情况报告为
  `detach-missing-between-models`（TD115），即使 `retain_graph=True` 已经让报错消失。

`retain_graph=True` 能让报错消失，却会把之前所有的计算图都留在内存里：显存每一步都在增长，
梯度还会流回早已结束的迭代（截断的时间反向传播变成了不截断）。

## Symptoms
`RuntimeError: Trying to backward through the graph a second time (or directly access saved
tensors after they have already been freed). Saved intermediate values of the graph are freed
when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward
through the graph a second time or if you need to access saved tensors after calling
backward.`

较早的版本：`Trying to backward through the graph a second time, but the buffers have
already been freed. Specify retain_graph=True when calling backward the first time.`；最早的几个版本：
`Trying to backward through the graph second time, but the buffers have already been
freed. Please specify retain_variables=True when calling backward for the first time.`

## References
- https://pytorch.org/docs/stable/generated/torch.Tensor.backward.html
""",
    },
    example="""
import torch
import torch.nn as nn

netG = nn.Linear(8, 4)
netD = nn.Linear(4, 1)
criterion = nn.BCEWithLogitsLoss()
for step in range(3):
    fake = netG(torch.randn(16, 8))
    errD = criterion(netD(fake), torch.zeros(16, 1))
    errD.backward()
    errG = criterion(netD(fake), torch.ones(16, 1))
    errG.backward()
""",
    use_instead="""
import torch
import torch.nn as nn

netG = nn.Linear(8, 4)
netD = nn.Linear(4, 1)
criterion = nn.BCEWithLogitsLoss()
for step in range(3):
    fake = netG(torch.randn(16, 8))
    errD = criterion(netD(fake.detach()), torch.zeros(16, 1))
    errD.backward()
    errG = criterion(netD(fake), torch.ones(16, 1))
    errG.backward()
""",
)

PITFALL.error(
    r"Trying to backward through the graph (?:a )?second time"
    r"|Specify retain_graph=True (?:when calling backward the first time|if you need to "
    r"backward through the graph a second time)",
    confidence=0.95,
    cause={
        "en": "`backward()` went through operations whose saved tensors an earlier backward "
        "had already freed. In a training loop this is usually a tensor carried over "
        "from the previous iteration (an RNN hidden state that is not detached, a "
        "running loss sum, a GAN's `fake` used without `.detach()`), not a real need "
        "for `retain_graph=True`.",
        "zh": "`backward()` 经过的运算所保存的中间结果已被之前的一次反向传播释放。在训练循环里，"
        "这通常是某个从上一次迭代带过来的张量（没有 detach 的 RNN 隐状态、累加的损失、"
        "GAN 中没有 `.detach()` 的 `fake`）造成的，而不是真的需要 `retain_graph=True`。",
    },
)


# The earlier backward calls of the block a backward call is compared with, at most (linear
# time in a block of thousands of backward calls).
_MAX_EARLIER = 8
# Parameters frozen somewhere in the file: a model's output may then carry no graph at all.
_FREEZES = lazy_compile(r"requires_grad_?\s*(?:=|\()\s*False")


@PITFALL.static(ast.Expr, names={"backward"})
def check(statement: ast.Expr, ctx: Context) -> list[Finding] | None:
    second = backward_receiver(statement)
    located = ctx.block_position(statement, ctx.ancestors[-1]) if ctx.ancestors else None
    if second is None or located is None or _freezes_parameters(ctx):
        return None
    block, index = located
    positions = _first_backwards(ctx, BlockKey(block))
    earlier = positions[
        max(0, bisect_left(positions, index) - _MAX_EARLIER) : bisect_left(positions, index)
    ]
    if not earlier:
        return None
    sources = graph_sources(ctx, block, index, second)
    if not sources:
        return None
    for position in reversed(earlier):
        first = backward_receiver(block[position], first=True)
        shared = sorted(sources & graph_sources(ctx, block, position, first))
        shared = [at for at in shared if at < position]  # made before the first backward
        if shared:
            made = block[shared[-1]]
            return [
                ctx.finding(
                    PITFALL,
                    statement,
                    "shared",
                    second=ctx.text(statement.value),
                    first=ctx.text(block[position].value),  # type: ignore[attr-defined]
                    line=block[position].lineno,
                    shared=_target_text(made, ctx),
                    made=made.lineno,
                )
            ]
    return None


@per_file
def _first_backwards(ctx: Context, key: BlockKey) -> list[int]:
    """The positions of the block's `x.backward()` statements that free the graph: found once
    per block, however many backward calls it holds."""
    return [
        position
        for position, statement in enumerate(key.block)
        if backward_receiver(statement, first=True) is not None
    ]


def _target_text(statement: ast.stmt, ctx: Context) -> str:
    targets = statement.targets  # type: ignore[attr-defined]
    return ctx.text(targets[0]) if len(targets) == 1 else ctx.text(targets[-1])


@per_file
def _freezes_parameters(ctx: Context) -> bool:
    return _FREEZES.search(ctx.source) is not None
