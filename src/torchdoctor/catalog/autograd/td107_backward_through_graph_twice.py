"""TD107 backward-through-graph-twice: `backward()` reaches a graph an earlier backward freed."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Pitfall

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
        }
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

rnn = nn.RNN(8, 16, batch_first=True)
optimizer = torch.optim.SGD(rnn.parameters(), lr=0.1)
hidden = torch.zeros(1, 4, 16)
for step in range(3):
    out, hidden = rnn(torch.randn(4, 5, 8), hidden)
    loss = out.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
""",
    use_instead="""
import torch
import torch.nn as nn

rnn = nn.RNN(8, 16, batch_first=True)
optimizer = torch.optim.SGD(rnn.parameters(), lr=0.1)
hidden = torch.zeros(1, 4, 16)
for step in range(3):
    hidden = hidden.detach()
    out, hidden = rnn(torch.randn(4, 5, 8), hidden)
    loss = out.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
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
