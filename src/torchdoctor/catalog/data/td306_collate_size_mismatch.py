"""TD306 collate-size-mismatch: the default collate cannot stack samples of different sizes."""

from __future__ import annotations


from torchdoctor.catalog.sdk import Clue, lazy_compile, Pitfall

PITFALL = Pitfall(
    code="TD306",
    name="collate-size-mismatch",
    title={
        "en": "DataLoader batches samples of different sizes with the default collate",
        "zh": "DataLoader 用默认的 collate 把大小不同的样本拼成 batch",
    },
    messages={
        "": {
            "en": "the default `collate_fn` stacks the samples of a batch into one tensor, and they "
            "do not all have the same shape",
            "zh": "默认的 `collate_fn` 会把一个 batch 中的样本堆叠成一个张量，而这些样本的形状并不都相同",
        }
    },
    fix_hint={
        "en": "Give every sample the same shape (e.g. `transforms.Resize((224, 224))` or a "
        "crop to a fixed size), or pass a `collate_fn` that pads variable-length data "
        "(`torch.nn.utils.rnn.pad_sequence`) or returns a list. `batch_size=1` runs "
        "if this is the cause.",
        "zh": "让每个样本的形状一致（例如 `transforms.Resize((224, 224))`，或裁剪到固定大小），"
        "或者传入一个 `collate_fn`，对变长数据做填充（`torch.nn.utils.rnn.pad_sequence`）"
        "或直接返回列表。若确是此原因，`batch_size=1` 时可以正常运行。",
    },
    docs={
        "en": """
## What it catches
A DataLoader whose samples differ in shape, batched by the default `collate_fn`, which calls
`torch.stack` on the samples' tensors. Typical cases: images of different sizes resized by
their shorter side (`transforms.Resize(256)`) but never cropped, sentences or audio clips of
different lengths, a variable number of boxes per image in detection.

## Why is this bad?
`torch.stack` needs tensors of one shape. The error comes from inside a DataLoader worker,
names no file and no sample, and appears only when two different sizes first meet in one
batch, so it can take a while (or a shuffle) to show up. It often hides the real design
question: should the samples be resized, padded, or kept as a list?

## Symptoms
`RuntimeError: stack expects each tensor to be equal size, but got [3, 224, 224] at entry 0
and [3, 224, 199] at entry 3`, often wrapped as `RuntimeError: Caught RuntimeError in
DataLoader worker process 0.` with `default_collate` / `collate.py` in the original
traceback. With workers, when the first sample of the batch is the largest, the same mistake
surfaces as `RuntimeError: Trying to resize storage that is not resizable` in
`collate_tensor_fn`. Older releases: `RuntimeError: invalid argument 0: Sizes of tensors must match
except in dimension 0. Got 224 and 199 in dimension 2 at
/pytorch/aten/src/TH/generic/THTensorMath.cpp:...`, or `Sizes of tensors must match except in
dimension 0. Got 224 and 199 in dimension 2 (The offending index is 1)`; before 0.4,
`RuntimeError: inconsistent tensor sizes at .../THTensorMath.c:...`. Samples that are lists
of different lengths (the annotations of each image): `RuntimeError: each element in list of
batch should be of equal size`.

## Known problems
`torch.stack` and `torch.cat` raise the same messages in model code (a U-Net skip
connection of an odd-sized image, for example); without collate frames in the traceback
that is shown only as a weak guess. With `num_workers > 0` on Windows or macOS, a lambda
`collate_fn` as above must become a top-level function (see `dataloader-worker-pickle`).
""",
        "zh": """
## What it catches
样本形状各不相同的 DataLoader，却使用默认的 `collate_fn` 组 batch，而它会对样本中的张量调用 `torch.stack`。
典型情况：按短边缩放（`transforms.Resize(256)`）却没有裁剪、尺寸不一的图像，长度不同的句子或音频片段，
目标检测中每张图像数量不等的框。

## Why is this bad?
`torch.stack` 要求所有张量形状相同。这个错误发生在 DataLoader worker 内部，不指出文件也不指出是哪个样本，
而且只有当两种不同尺寸第一次出现在同一个 batch 中时才会触发，所以可能要运行一阵（或换一次打乱顺序）才会出现。
它背后往往是一个需要想清楚的设计问题：这些样本应该缩放、填充，还是保持为列表？

## Symptoms
`RuntimeError: stack expects each tensor to be equal size, but got [3, 224, 224] at entry 0
and [3, 224, 199] at entry 3`，常被包装成 `RuntimeError: Caught RuntimeError in
DataLoader worker process 0.`，原始调用栈中可以看到 `default_collate` / `collate.py`。
使用 worker 且 batch 中第一个样本最大时，同一个错误会表现为 `collate_tensor_fn` 中的
`RuntimeError: Trying to resize storage that is not resizable`。
旧版本：`RuntimeError: invalid argument 0: Sizes of tensors must match
except in dimension 0. Got 224 and 199 in dimension 2 at
/pytorch/aten/src/TH/generic/THTensorMath.cpp:...`，或 `Sizes of tensors must match except in
dimension 0. Got 224 and 199 in dimension 2 (The offending index is 1)`；0.4 之前则是
`RuntimeError: inconsistent tensor sizes at .../THTensorMath.c:...`。样本是长度不同的列表时
（例如每张图像的标注）：`RuntimeError: each element in list of batch should be of equal size`。

## Known problems
模型代码中的 `torch.stack` 和 `torch.cat` 也会给出同样的报错（例如尺寸为奇数的图像经过 U-Net 的跳跃连接）；
如果调用栈里没有 collate 相关的帧，只会作为较弱的猜测给出。在 Windows 或 macOS 上使用 `num_workers > 0` 时，
上面那样的 lambda `collate_fn` 需要改成模块顶层函数（参见 `dataloader-worker-pickle`）。
""",
    },
    example="""
import torch
from torch.utils.data import DataLoader

sentences = [torch.randint(0, 1000, (n,)) for n in (5, 9, 7, 12)]
loader = DataLoader(sentences, batch_size=2)
for batch in loader:
    pass
""",
    use_instead="""
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

sentences = [torch.randint(0, 1000, (n,)) for n in (5, 9, 7, 12)]
loader = DataLoader(sentences, batch_size=2,
                    collate_fn=lambda batch: pad_sequence(batch, batch_first=True))
for batch in loader:
    pass
""",
)

# From "to be equal": the start is retold or machine-translated ("stack expectations each
# tense to be equal size"), the sizes and entries are kept.
# The second `at entry N` is sometimes cut off where an issue quotes the message.
_STACK = lazy_compile(
    r"to be equal size, but got \[(?P<first>[\d, ]*)\] at entry "
    r"(?P<first_entry>\d+) and \[(?P<other>[\d, ]*)\](?: at entry (?P<other_entry>\d+))?"
)
_CAT = lazy_compile(
    r"Sizes of tensors must match except in dimension (?P<cat_dim>\d+)\.\s+"
    r"(?:Got (?P<size>\d+) and (?P<other_size>\d+) in dimension (?P<dim>\d+)"
    r"|Expected size (?P<size2>\d+) but got size (?P<other_size2>\d+) for tensor number "
    r"(?P<other_entry>\d+))"
)
# (fastai warns "It's not possible to collate samples of your dataset together in a batch"
# before the collate's own error)
_COLLATE_TEXT = lazy_compile(
    r"in DataLoader worker process|default_collate|collate\.py|possible to collate samples"
)

# PyTorch before 0.4 (TH's cat and copy): "inconsistent tensor sizes at .../THTensorMath.c",
# "inconsistent tensor size at .../THTensorCopy.c". Issues retype it with a letter dropped
# ("incosistent tensor size"); "consistent tensor sizes" is prose, not the error.
_INCONSISTENT = lazy_compile(r"nco?n?sistent tensor sizes?\b")
_LOADER_TEXT = lazy_compile(r"DataLoader")

_STACK_CAUSE = {
    "en": "Collating a batch stacks its samples, which must have one shape: sample "
    "{first_entry} has [{first}] but sample {other_entry} has [{other}].",
    "zh": "组 batch（collate）时要把样本堆叠起来，它们的形状必须相同：第 {first_entry} 个样本是 "
    "[{first}]，第 {other_entry} 个却是 [{other}]。",
}
_CAT_CAUSE = {
    "en": "Collating a batch stacks its samples, which must have one shape, and they differ in "
    "size ({size} vs {other_size}).",
    "zh": "组 batch（collate）时要把样本堆叠起来，它们的形状必须相同，而这些样本的大小不同"
    "（{size} 与 {other_size}）。",
}
_RESIZE = "Trying to resize storage that is not resizable"
_RESIZE_CAUSE = {
    "en": "The samples of a batch differ in size: with workers, the collate stacks them into "
    "shared memory sized for all of them, and reshaping it to batch x (first sample's "
    "shape) fails. The message hides the real error, a stack of unequal shapes.",
    "zh": "一个 batch 中样本的大小不一致：使用 worker 时，collate 会把样本堆叠到按总大小分配的共享内存中，"
    "再按“batch x 第一个样本的形状”改变其大小，于是失败。这条报错掩盖了真正的问题：堆叠形状不同的张量。",
}
_INCONSISTENT_CAUSE = {
    "en": "Collating a batch stacks its samples, which must have one shape, and they differ "
    "in size (PyTorch before 0.4 said only `inconsistent tensor size`).",
    "zh": "组 batch（collate）时要把样本堆叠起来，它们的形状必须相同，而这些样本的大小不同"
    "（PyTorch 0.4 之前的报错只说 `inconsistent tensor size`）。",
}
_INCONSISTENT_GUESS = {
    "en": "Old PyTorch's `inconsistent tensor size` comes from a stack, a cat or a copy of "
    "tensors of different sizes; next to a DataLoader, most often its default collate "
    "stacking samples of different sizes.",
    "zh": "旧版 PyTorch 的 `inconsistent tensor size` 来自对大小不同的张量做 stack、cat 或"
    "复制；与 DataLoader 一起出现时，最常见的是默认的 collate 在堆叠大小不同的样本。",
}
_STACK_GUESS = {
    "en": "torch.stack got tensors of different shapes ([{first}] and [{other}]); if this "
    "comes from a DataLoader, its samples differ in size.",
    "zh": "torch.stack 收到了形状不同的张量（[{first}] 与 [{other}]）；如果它来自 DataLoader，"
    "说明各个样本的大小不一致。",
}


# default_collate's own check on samples that are sequences: it zips them element-wise, so the
# lists (or tuples) of a batch must be of one length. Raised nowhere else in torch.
PITFALL.error(
    r"list of batch should be of equal size",
    types=(),
    confidence=0.9,
    cause={
        "en": "The default collate batches samples that are lists (or tuples) by zipping them "
        "element by element, so every sample's list must have the same length, and here they "
        "differ: a variable number of items per sample, such as the annotations or boxes of "
        "each image in detection, or tokens kept as a Python list.",
        "zh": "默认的 collate 会把本身是列表（或元组）的样本逐个元素地组合成 batch，因此每个样本的列表"
        "必须一样长，而这里长度不同：每个样本的条目数不固定，例如目标检测中每张图像的标注或框，"
        "或者以 Python 列表保存的 token。",
    },
    fix={
        "en": "Pass a `collate_fn` that keeps such data as lists, e.g. "
        "`DataLoader(..., collate_fn=lambda batch: tuple(zip(*batch)))` (torchvision's "
        "detection references do this), or pad each sample's list to one length in the Dataset.",
        "zh": "传入一个把这类数据保留为列表的 `collate_fn`，例如 "
        "`DataLoader(..., collate_fn=lambda batch: tuple(zip(*batch)))`（torchvision 的检测示例"
        "就是这样做的），或者在 Dataset 中把每个样本的列表填充到相同长度。",
    },
)


# PyTorch before 0.4 could not stack an empty tensor: a sample with no items (an image without
# boxes) among samples of a variable number of items.
_EMPTY = "cannot unsqueeze empty tensor"
_EMPTY_CAUSE = {
    "en": "Collating a batch stacks its samples, which must have one shape, and one of them is "
    "empty: a variable number of items per sample (boxes of an image, tokens), some with none.",
    "zh": "组 batch（collate）时要把样本堆叠起来，它们的形状必须相同，而其中一个样本是空的："
    "每个样本的条目数不固定（图像的框、token），有的一个也没有。",
}
_WORKER_CAUGHT = "Caught RuntimeError in DataLoader worker process"
_ORIGINAL = "Original Traceback (most recent call last):"
_CUT_CAUSE = {
    "en": "A worker's RuntimeError was raised inside `default_collate` (the worker's traceback "
    "is cut before its message). There it almost always means the samples of a batch "
    "differ in size and cannot be stacked; if the message speaks of `unable to write to "
    "file` or shared memory, the shared memory is full instead.",
    "zh": "worker 中的 RuntimeError 是在 `default_collate` 内部抛出的（worker 的 traceback 在报错信息前"
    "被截断）。在那里几乎总是表示一个 batch 中样本的大小不同、无法堆叠；如果报错信息提到 "
    "`unable to write to file` 或共享内存，则是共享内存满了。",
}


def _worker_cut_in_default_collate(report) -> bool:
    """The worker's original traceback ends, cut before its exception line, on a frame whose
    source line calls `default_collate`."""
    text = report.text or ""
    at = text.rfind(_ORIGINAL)
    if at < 0:
        return False
    lines = [line.strip() for line in text[at:].split("\n")]
    while lines and (not lines[-1] or lines[-1].startswith("```")):
        lines.pop()
    if len(lines) < 3:
        return False
    return lines[-2].startswith('File "') and "default_collate(" in lines[-1]


@PITFALL.error_check(
    words=(
        "default_collate",
        "cannot unsqueeze empty tensor",
        "to be equal size",
        "trying to resize storage that is not resizable",
        "sistent tensor size",
        "sizes of tensors must match except in dimension",
    )
)
def stacked_samples(block, report) -> Clue | None:
    """Surely the collate when its frames, or the DataLoader's worker wrapper, are present;
    otherwise a guess, since model code stacks and concatenates too. Also reads output the
    parser could not split into blocks (a worker's traceback logged as one escaped line)."""
    if block.message.startswith(_WORKER_CAUGHT) and report.once(_worker_cut_in_default_collate):
        return Clue(0.6, _CUT_CAUSE)
    in_collate = _in_collate(block, report)
    if _EMPTY in block.message:
        framed = any("collate" in (frame.function or "") for frame in block.frames)
        return Clue(0.85, _EMPTY_CAUSE) if framed else None
    found = _STACK.search(block.message)
    if found is not None:
        fields = found.groupdict()
        fields["other_entry"] = fields["other_entry"] or "?"
        return Clue(
            0.95 if in_collate else 0.6,
            _STACK_CAUSE if in_collate else _STACK_GUESS,
            None,
            fields,
        )
    if _RESIZE in block.message:
        # In a worker the collate stacks into shared memory sized by the samples' total size;
        # when the first sample is the largest, resizing that storage fails before stack runs.
        if in_collate:
            return Clue(0.9, _RESIZE_CAUSE)
        # Told alone (a title, a chat line), it is the DataLoader's more often than not; with
        # frames that show other code, someone's own `resize_`.
        return None if block.frames else Clue(0.7, _RESIZE_CAUSE)
    if _INCONSISTENT.search(block.message):
        if in_collate:
            return Clue(0.9, _INCONSISTENT_CAUSE)
        # Frames elsewhere show model code's own cat or copy; without frames, only a DataLoader
        # in the text makes the collate likely.
        if block.frames or not report.search(_LOADER_TEXT):
            return None
        return Clue(0.6, _INCONSISTENT_GUESS)
    found = _CAT.search(block.message)
    if found is None:
        return None
    fields = {k: v for k, v in found.groupdict().items() if v is not None}
    fields.setdefault("size", fields.get("size2", "?"))
    fields.setdefault("other_size", fields.get("other_size2", "?"))
    if in_collate:
        return Clue(0.95, _CAT_CAUSE, None, fields)
    if fields["cat_dim"] != "0":
        return None  # a torch.cat along a feature dimension in model code: not a batch
    # Before PyTorch 1.5, default_collate's torch.stack reported this cat error; then it was
    # nearly always the collate. In newer code a bare cat along dim 0 is only a guess.
    old = "invalid argument 0" in block.message or "offending index" in block.message
    return Clue(0.75 if old else 0.45, _CAT_CAUSE, None, fields)


def _in_collate(block, report) -> bool:
    for frame in block.frames:
        if "collate" in (frame.function or "") or frame.path.endswith("collate.py"):
            return True
    return bool(_COLLATE_TEXT.search(block.message) or report.search(_COLLATE_TEXT))
