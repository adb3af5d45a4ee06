"""TD212 batchnorm-single-sample-batch: BatchNorm in training mode gets one value per channel."""

from __future__ import annotations

import math
import weakref

from torchdoctor.catalog.sdk import Monitor, Pitfall

PITFALL = Pitfall(
    code="TD212",
    name="batchnorm-single-sample-batch",
    title={
        "en": "BatchNorm in training mode on a batch of one sample",
        "zh": "训练模式下的 BatchNorm 收到只有一个样本的 batch",
    },
    messages={
        "": {
            "en": "A BatchNorm layer in training mode received a single value per channel (a "
            "batch of one sample), from which no batch statistics can be computed",
            "zh": "训练模式下的 BatchNorm 层每个通道只收到一个值（batch 里只有一个样本），无法计算 batch 统计量",
        },
        "last-batch": {
            "en": "the last batch of every epoch will hold 1 sample ({samples} samples, "
            "batch_size={batch_size}, drop_last=False) and `{layer}` ({type}) gets one value "
            "per channel per sample: training will crash at the end of the epoch with "
            "`Expected more than 1 value per channel when training`; pass `drop_last=True` "
            "to the DataLoader",
            "zh": "每个 epoch 的最后一个 batch 只有 1 个样本（{samples} 个样本，batch_size={batch_size}，"
            "drop_last=False），而 `{layer}`（{type}）每个样本每个通道只有一个值：训练会在 epoch 末尾以 "
            "`Expected more than 1 value per channel when training` 崩溃；请给 DataLoader 传 "
            "`drop_last=True`",
        },
    },
    fix_hint={
        "en": "Drop the incomplete last batch with `DataLoader(..., drop_last=True)` (it has one "
        "sample when `len(dataset) % batch_size == 1`), train with `batch_size >= 2`, and "
        "call `model.eval()` before predicting on a single sample.",
        "zh": "用 `DataLoader(..., drop_last=True)` 丢弃不完整的最后一个 batch（当 "
        "`len(dataset) % batch_size == 1` 时它只有一个样本），训练时使用 `batch_size >= 2`，"
        "对单个样本做预测前先调用 `model.eval()`。",
    },
    docs={
        "en": """
## What it catches
The error of `nn.BatchNorm1d`/`nn.BatchNorm2d`/`nn.BatchNorm3d` (and `F.batch_norm`) in
training mode when every channel has a single value: `ValueError: Expected more than 1 value
per channel when training, got input size torch.Size([1, 256])`.

## Why is this bad?
In training mode, BatchNorm normalises each channel with the mean and variance of the current
batch. With one value per channel the variance is undefined, so PyTorch refuses. That happens
when:

- the last batch of an epoch holds one sample, because `len(dataset) % batch_size == 1`: the
  run crashes at the end of an epoch, sometimes only after the dataset changed size;
- training runs with `batch_size=1`, or per-GPU batches shrink to one sample under
  `DataParallel`/DDP;
- a single image is passed through a model still in training mode for a prediction;
- a layer after global pooling (`[N, C, 1, 1]`, such as the image-pooling branch of ASPP)
  sees one value per channel and per sample, so a batch of one is enough to fail.

Even batches of 2 to 4 samples give very noisy statistics; consider `GroupNorm` for models
that must train with tiny batches.

## Symptoms
`ValueError: Expected more than 1 value per channel when training, got input size
torch.Size([1, 256])` (`got input size [1, 256]` in old versions).

## References
- https://pytorch.org/docs/stable/generated/torch.nn.BatchNorm1d.html
- https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader
""",
        "zh": """
## What it catches
`nn.BatchNorm1d`/`nn.BatchNorm2d`/`nn.BatchNorm3d`（以及 `F.batch_norm`）在训练模式下每个通道只有一个值时的报错：
`ValueError: Expected more than 1 value per channel when training, got input size
torch.Size([1, 256])`。

## Why is this bad?
训练模式下，BatchNorm 用当前 batch 的均值和方差对每个通道做归一化。每个通道只有一个值时方差没有定义，
PyTorch 因此拒绝计算。出现这种情况的场景有：

- 由于 `len(dataset) % batch_size == 1`，一个 epoch 的最后一个 batch 只有一个样本：程序在 epoch 末尾崩溃，
  有时是在数据集大小变了之后才出现；
- 用 `batch_size=1` 训练，或者在 `DataParallel`/DDP 下每块 GPU 分到的 batch 只剩一个样本；
- 模型还处在训练模式，就拿单张图片去做预测；
- 全局池化之后的层（形状为 `[N, C, 1, 1]`，例如 ASPP 的图像池化分支）每个样本每个通道只有一个值，
  batch 里只有一个样本就足以出错。

即使 batch 有 2 到 4 个样本，统计量的噪声也非常大；必须用极小 batch 训练的模型可以考虑 `GroupNorm`。

## Symptoms
`ValueError: Expected more than 1 value per channel when training, got input size
torch.Size([1, 256])`（旧版本中为 `got input size [1, 256]`）。

## References
- https://pytorch.org/docs/stable/generated/torch.nn.BatchNorm1d.html
- https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader
""",
    },
    example="""
import torch
from torch.utils.data import DataLoader, TensorDataset

dataset = TensorDataset(torch.randn(65, 16), torch.randint(0, 2, (65,)))
loader = DataLoader(dataset, batch_size=32, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.BatchNorm1d(8))
for inputs, labels in loader:
    model(inputs)
""",
    use_instead="""
import torch
from torch.utils.data import DataLoader, TensorDataset

dataset = TensorDataset(torch.randn(65, 16), torch.randint(0, 2, (65,)))
loader = DataLoader(dataset, batch_size=32, shuffle=True, drop_last=True)
model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.BatchNorm1d(8))
for inputs, labels in loader:
    model(inputs)
""",
)

PITFALL.error(
    r"Expected more than 1 value per channel when training, got input size "
    r"(?P<size>torch\.Size\(\[[^\]]*\]\)|\[[^\]]*\])",
    types=("ValueError",),
    confidence=0.95,
    cause={
        "en": "A BatchNorm layer in training mode got an input of size {size}: one value per "
        "channel, so no batch statistics. Usually the last batch of the epoch has a "
        "single sample (`len(dataset) % batch_size == 1`), training runs with "
        "`batch_size=1`, or a single sample is predicted without `model.eval()`.",
        "zh": "训练模式下的 BatchNorm 层收到大小为 {size} 的输入：每个通道只有一个值，无法计算 batch "
        "统计量。通常是 epoch 的最后一个 batch 只有一个样本（`len(dataset) % batch_size == 1`）、"
        "用 `batch_size=1` 训练，或者预测单个样本前没有调用 `model.eval()`。",
    },
)
# The message cut before its size, as titles quote it; any type, since a title above a
# traceback cut before its exception line carries no type.
PITFALL.error(
    r"Expected more than 1 value per channel when training(?!, got input size [\[t])",
    types=(),
    confidence=0.9,
    cause={
        "en": "A BatchNorm layer in training mode got one value per channel, so no batch "
        "statistics: usually a last batch of one sample, `batch_size=1`, or a single sample "
        "predicted without `model.eval()`.",
        "zh": "训练模式下的 BatchNorm 层每个通道只收到一个值，无法计算 batch 统计量：通常是最后一个 "
        "batch 只有一个样本、用 `batch_size=1` 训练，或者预测单个样本前没有调用 `model.eval()`。",
    },
)
# A traceback cut before its exception line whose innermost frame is batch_norm's own check of the
# batch (`_verify_batch_size` raises nothing but this error); the call read from its source line.
PITFALL.error(
    r"_verify_batch_size\(input\.size\(\)\)\s*(?:```\s*)?$",
    types=(),
    confidence=0.85,
    cause={
        "en": "The traceback stops in `F.batch_norm`'s check of the batch size, which fails only "
        "when a BatchNorm layer in training mode gets one value per channel: usually a last "
        "batch of one sample, `batch_size=1`, or a single sample predicted without "
        "`model.eval()`.",
        "zh": "traceback 停在 `F.batch_norm` 对 batch 大小的检查处，这个检查只在训练模式下的 BatchNorm "
        "层每个通道只收到一个值时失败：通常是最后一个 batch 只有一个样本、用 `batch_size=1` 训练，"
        "或者预测单个样本前没有调用 `model.eval()`。",
    },
)
# The error retold in a title: "BatchNorm1d cannot work with batch size == 1", "batchnorm
# fails with a batch size of 1"; only a failure told of batch size one, not a question about it.
PITFALL.error(
    r"[Bb]atch ?[Nn]orm(?:[123][dD])? (?:layers? )?(?:can ?not|can't|doesn't|does not|fails?)"
    r"(?: to)?(?: work| run)? (?:with|on|for) (?:an? )?batch[ _]?size (?:of |== ?|= ?)?1\b",
    types=(),
    confidence=0.7,
    cause={
        "en": "A BatchNorm layer in training mode cannot normalise a batch of one sample (one "
        "value per channel, no batch statistics): usually the last batch of the epoch "
        "(`len(dataset) % batch_size == 1`), `batch_size=1`, or a single sample predicted "
        "without `model.eval()`.",
        "zh": "训练模式下的 BatchNorm 层无法归一化只有一个样本的 batch（每个通道只有一个值，没有 batch "
        "统计量）：通常是 epoch 的最后一个 batch（`len(dataset) % batch_size == 1`）、"
        "`batch_size=1`，或者预测单个样本前没有调用 `model.eval()`。",
    },
)

# ---- at run time -------------------------------------------------------------------------------


@PITFALL.monitor
class LastBatchOfOne(Monitor):
    """A training loader whose last batch holds one sample, feeding a BatchNorm that has one
    value per channel per sample: reported at the first epoch, long before the crash.

    The loader is known at `iter(loader)`; a model's BatchNorm layers are known at its first
    forward, where a one-shot pre-hook on each reads its input shape (a BatchNorm2d with more
    than one pixel normalises a single sample without error, so it is not reported). Whichever
    comes second reports, at the loop over the loader. A loader iterated while the BatchNorm is
    in eval mode (validation) is not reported."""

    def setup(self) -> None:
        self._fragile = weakref.WeakKeyDictionary()  # BatchNorm with 1 value/channel -> name
        self._pending = None  # (loader details, where, step) of the latest loader iterated

    def on_dataloader_iter(self, loader) -> None:
        details = _single_sample_last_batch(loader)
        self._pending = None
        if details:
            self._pending = (details, self.session.where(), self.session.step)
            for module in list(self._fragile.keys()):
                if module.training:
                    self._report(module)
                    return

    def on_model(self, model) -> None:
        from torch.nn.modules.batchnorm import _BatchNorm

        for name, module in model.named_modules():
            if isinstance(module, _BatchNorm):
                self._watch_first_input(module, name)

    def _watch_first_input(self, module, name: str) -> None:
        def hook(batchnorm, args):
            handle.remove()
            self._look(batchnorm, name, args)

        handle = self.session.add_module_hook(self, module.register_forward_pre_hook, hook)

    def _look(self, module, name: str, args) -> None:
        shape = getattr(args[0], "shape", None) if args else None
        if shape is None or len(shape) < 2 or math.prod(shape[2:]) != 1:
            return
        self._fragile[module] = name
        if self._pending is not None and module.training:
            self._report(module)

    def _report(self, module) -> None:
        (samples, batch_size), where, step = self._pending
        self.report(
            where,
            "last-batch",
            module=self._fragile[module],
            at=where,
            at_step=step,
            samples=samples,
            batch_size=batch_size,
            layer=self._fragile[module],
            type=type(module).__name__,
        )


def _single_sample_last_batch(loader) -> tuple[int, int] | None:
    """(samples per epoch, batch size) when the loader's last batch holds one sample."""
    from torch.utils.data import BatchSampler, IterableDataset

    batch_size = loader.batch_size
    if (
        batch_size is None
        or batch_size < 2
        or loader.drop_last
        or isinstance(loader.dataset, IterableDataset)
        or type(loader.batch_sampler) is not BatchSampler
    ):  # a custom batch_sampler
        return None
    try:
        samples = len(loader.sampler)  # a DistributedSampler's: this rank's share
    except TypeError:
        return None
    return (samples, batch_size) if samples % batch_size == 1 else None
