"""TD209 loss-batch-size-mismatch: the loss gets a different number of predictions and targets."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Pitfall

PITFALL = Pitfall(
    code="TD209",
    name="loss-batch-size-mismatch",
    title={
        "en": "Loss input and target have different batch sizes",
        "zh": "损失函数的输入与 target 的 batch 大小不一致",
    },
    messages={
        "": {
            "en": "The classification loss received a different number of predictions than "
            "targets: the model's output lost or gained rows on the way",
            "zh": "分类损失收到的预测个数与 target 个数不同：模型输出在某处多出或丢失了若干行",
        }
    },
    fix_hint={
        "en": "Print the shapes just before the loss and inside `forward`. Flatten with the batch "
        "dimension kept, `x = x.view(x.size(0), -1)` or `torch.flatten(x, 1)`, instead of "
        "`x.view(-1, n)` with a hard-coded `n`, and make `in_features` of the first "
        "`nn.Linear` match. For sequence outputs, flatten logits and targets together: "
        "`logits.reshape(-1, C)` with `targets.reshape(-1)`.",
        "zh": "在损失函数之前和 `forward` 内部打印形状。展平时保留 batch 维：用 "
        "`x = x.view(x.size(0), -1)` 或 `torch.flatten(x, 1)`，不要用写死 `n` 的 "
        "`x.view(-1, n)`，并让第一个 `nn.Linear` 的 `in_features` 与之匹配。对序列输出，"
        "logits 与 target 要一起展平：`logits.reshape(-1, C)` 配 `targets.reshape(-1)`。",
    },
    docs={
        "en": """
## What it catches
The error of `CrossEntropyLoss`/`NLLLoss` (and the losses built on them) when the input and
the target do not have the same number of samples: `Expected input batch_size (32) to match
target batch_size (64).`

## Why is this bad?
The loss pairs row `i` of the logits with label `i`, so both must have the same first
dimension. When they differ, the data loader is rarely at fault: the model changed the number
of rows. The classic culprit is a flatten before the classifier written as `x.view(-1, 16 * 5
* 5)`: when the feature map is larger than the hard-coded size (a different image size, an
extra pooling layer removed), `view` folds the extra values into new rows, and a batch of 32
comes out as 64 or 128 "samples". Flattening with the batch dimension kept, `x.view(x.size(0),
-1)`, turns the same mistake into a clear shape error at the next `nn.Linear`. Sequence
models hit it when logits of shape `(batch * time, C)` meet targets of shape `(batch, time)`,
or when the output is `(time, batch, C)` and the targets are batch-first.

## Symptoms
`ValueError: Expected input batch_size (128) to match target batch_size (32).`; for unbatched
input: `RuntimeError: size mismatch (got input: [10], target:
[256])`.

## References
- https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html
""",
        "zh": """
## What it catches
`CrossEntropyLoss`/`NLLLoss`（以及基于它们的损失）的输入与 target 样本数不一致时的报错：
`Expected input batch_size (32) to match target batch_size (64).`

## Why is this bad?
损失函数把 logits 的第 `i` 行与第 `i` 个标签配对，所以两者的第一维必须相同。两者不一致时，
问题很少出在数据加载器上，而是模型改变了行数。典型的元凶是分类器之前写成 `x.view(-1, 16 * 5 * 5)`
的展平：当特征图比写死的尺寸大时（换了图像尺寸、删掉了一个池化层），`view` 会把多出来的数值折叠成新的行，
32 个样本的 batch 就变成了 64 或 128 个“样本”。保留 batch 维来展平（`x.view(x.size(0), -1)`），
同样的错误就会在下一个 `nn.Linear` 处变成一目了然的形状报错。序列模型在 logits 形状为
`(batch * time, C)` 而 target 形状为 `(batch, time)` 时，或者输出是 `(time, batch, C)` 而 target
是 batch 在前时，也会遇到这个错误。

## Symptoms
`ValueError: Expected input batch_size (128) to match target batch_size (32).`；
输入不带 batch 维时：`RuntimeError: size mismatch (got input: [10], target:
[256])`。

## References
- https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html
""",
    },
    example="""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 8 * 8, 10)

    def forward(self, x):
        x = torch.max_pool2d(self.conv(x), 2)
        return self.fc(x.view(-1, 16 * 8 * 8))


images, labels = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))
loss = nn.CrossEntropyLoss()(Net()(images), labels)
""",
    use_instead="""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 16 * 16, 10)

    def forward(self, x):
        x = torch.max_pool2d(self.conv(x), 2)
        return self.fc(torch.flatten(x, 1))


images, labels = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))
loss = nn.CrossEntropyLoss()(Net()(images), labels)
""",
)

PITFALL.error(
    r"Expected input batch_size \((?P<input>\d+)\) to match target batch_size "
    r"\((?P<target>\d+)\)",
    types=("ValueError", "RuntimeError"),
    confidence=0.95,
    cause={
        "en": "The loss got {input} rows of logits for {target} targets. The model usually "
        "changed the number of rows: a `view(-1, n)` with a hard-coded `n` folds part of "
        "each sample into extra rows, or sequence logits and targets are flattened "
        "differently.",
        "zh": "损失函数收到了 {input} 行 logits，却只有 {target} 个 target。通常是模型改变了行数："
        "写死 `n` 的 `view(-1, n)` 把每个样本的一部分折叠成了额外的行，或者序列的 logits "
        "与 target 展平方式不一致。",
    },
)
# The message without its numbers: an issue title retyping it.
PITFALL.error(
    r"Expected input batch_size to match target batch_size",
    types=("ValueError", "RuntimeError"),
    confidence=0.85,
    cause={
        "en": "The loss got another number of rows of logits than of targets. The model usually "
        "changed the number of rows: a `view(-1, n)` with a hard-coded `n` folds part of each "
        "sample into extra rows, or sequence logits and targets are flattened differently.",
        "zh": "损失函数收到的 logits 行数与 target 个数不同。通常是模型改变了行数：写死 `n` 的 "
        "`view(-1, n)` 把每个样本的一部分折叠成了额外的行，或者序列的 logits 与 target "
        "展平方式不一致。",
    },
)
PITFALL.error(
    r"size mismatch \(got input: \[(?P<input>[^\]]*)\], target: \[(?P<target>[^\]]*)\]\)",
    confidence=0.8,
    cause={
        "en": "The loss got logits of shape [{input}] for targets of shape [{target}]: the "
        "logits have no batch dimension (a single sample, or the model's output was "
        "indexed with `[0]`), or the two come from different batches.",
        "zh": "损失函数收到的 logits 形状为 [{input}]，target 形状为 [{target}]：logits 没有 batch 维"
        "（只有一个样本，或者模型输出被 `[0]` 取了下标），或者两者来自不同的 batch。",
    },
)
