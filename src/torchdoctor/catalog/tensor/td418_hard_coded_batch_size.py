"""TD418 hard-coded-batch-size: a batch size written into the code breaks on the last batch."""

from __future__ import annotations

import re
from math import prod

from torchdoctor.catalog.sdk import Clue, ErrorBlock, ErrorReport, lazy_compile, Pitfall
from torchdoctor.catalog.tensor._view_shapes import invalid_view

PITFALL = Pitfall(
    code="TD418",
    name="hard-coded-batch-size",
    title={
        "en": "A batch size written into the code meets the smaller last batch",
        "zh": "写死在代码里的 batch 大小遇到了更小的最后一个 batch",
    },
    messages={
        "": {
            "en": "the code assumes every batch has the configured batch size, but the last "
            "batch of an epoch is smaller: take the size from the tensor (`x.size(0)`)",
            "zh": "代码假定每个 batch 都是设定的大小，而 epoch 的最后一个 batch 更小："
            "请从张量本身取大小（`x.size(0)`）",
        }
    },
    fix_hint={
        "en": "Take the batch size from the data (`x.size(0)`, `expand(x.size(0), -1, -1)`) "
        "instead of the configured value, collect per-batch outputs with `torch.cat` rather "
        "than `torch.stack`, or drop the incomplete last batch with "
        "`DataLoader(..., drop_last=True)`.",
        "zh": "从数据本身取 batch 大小（`x.size(0)`、`expand(x.size(0), -1, -1)`），不要用配置里的值；"
        "收集各个 batch 的输出时用 `torch.cat` 而不是 `torch.stack`；或者用 "
        "`DataLoader(..., drop_last=True)` 丢弃不完整的最后一个 batch。",
    },
    docs={
        "en": """
## What it catches
The concatenation and stacking errors raised when a tensor made with the configured batch size
(`cls_token.expand(BATCH_SIZE, -1, -1)`, `torch.zeros(args.batch_size, ...)`) meets the last
batch of an epoch, which is smaller unless the loader drops it, or when the outputs of every
batch are stacked into one tensor (`torch.stack(all_logits)`); and the index errors of code that
takes a batch's samples by a fixed number (`image_batch[1]`, `for j in range(10): outputs[j]`).

## Why is this bad?
A dataset of 1000 samples in batches of 32 ends with a batch of 8. Code that assumes 32 runs
for a whole epoch, through every batch but the last, and then crashes, often after a long
training epoch or at the first evaluation.

## Symptoms
`RuntimeError: Sizes of tensors must match except in dimension 1. Expected size 32 but got
size 8 for tensor number 1 in the list.`; `RuntimeError: stack expects each tensor to be equal
size, but got [32, 10] at entry 0 and [8, 10] at entry 31`; before torch 1.5: `Sizes of tensors
must match except in dimension 0. Got 32 and 8 in dimension 1`; `IndexError: index 1 is out of
bounds for dimension 0 with size 1`.

## Known problems
The messages name sizes, not the batch dimension: a concatenation of feature maps of odd
sizes (a U-Net skip connection) gives the same text, so without a stack of equal-rank batches
differing only in their first size this is shown as a guess.
""",
        "zh": """
## What it catches
按配置的 batch 大小创建的张量（`cls_token.expand(BATCH_SIZE, -1, -1)`、`torch.zeros(args.batch_size, ...)`）
遇到 epoch 的最后一个 batch 时（除非 loader 丢弃它，否则它更小）引发的拼接和堆叠错误；以及把每个 batch 的输出
堆叠成一个张量（`torch.stack(all_logits)`）时的同类错误；以及用固定数字取 batch 中样本的代码
（`image_batch[1]`、`for j in range(10): outputs[j]`）引发的下标错误。

## Why is this bad?
1000 个样本、每个 batch 32 个，最后一个 batch 只有 8 个。假定 32 的代码会在整个 epoch 中正常运行，
直到最后一个 batch 才崩溃，往往是在一个很长的训练 epoch 之后，或第一次评估的时候。

## Symptoms
`RuntimeError: Sizes of tensors must match except in dimension 1. Expected size 32 but got
size 8 for tensor number 1 in the list.`；`RuntimeError: stack expects each tensor to be equal
size, but got [32, 10] at entry 0 and [8, 10] at entry 31`；torch 1.5 之前：`Sizes of tensors
must match except in dimension 0. Got 32 and 8 in dimension 1`；`IndexError: index 1 is out of
bounds for dimension 0 with size 1`。

## Known problems
这些报错只给出尺寸，不指出哪一维是 batch：拼接尺寸为奇数的特征图（U-Net 的跳跃连接）也会给出同样的文字，
所以除非是只有第一维不同的同阶张量的堆叠，否则只作为猜测给出。
""",
    },
    example="""
import torch
import torch.nn as nn

BATCH_SIZE = 32


class Encoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))

    def forward(self, x):
        cls = self.cls_token.expand(BATCH_SIZE, -1, -1)
        return torch.cat((cls, x), dim=1)
""",
    use_instead="""
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))

    def forward(self, x):
        cls = self.cls_token.expand(x.size(0), -1, -1)
        return torch.cat((cls, x), dim=1)
""",
)

_STACK = lazy_compile(
    r"stack expects each tensor to be equal size, but got \[(?P<first>[\d, ]*)\] at entry "
    r"(?P<first_entry>\d+) and \[(?P<other>[\d, ]*)\] at entry (?P<other_entry>\d+)"
)
_CAT = lazy_compile(
    r"Sizes of tensors must match except in dimension (?P<cat_dim>\d+)\. "
    r"(?:Got (?P<size>\d+) and (?P<other_size>\d+) in dimension (?P<dim>\d+)"
    r"|Expected size (?P<size2>\d+) but got size (?P<other_size2>\d+) for tensor number)"
)
_COLLATE = lazy_compile(r"in DataLoader worker process|default_collate|collate\.py")

_STACKED_BATCHES = {
    "en": "The stacked tensors differ only in their first size ([{first}] and [{other}]): "
    "the outputs of every batch are stacked, and the last batch of the epoch is smaller than "
    "the others.",
    "zh": "被堆叠的张量只有第一维不同（[{first}] 与 [{other}]）：代码把每个 batch 的输出堆叠在一起，"
    "而 epoch 的最后一个 batch 比其他 batch 小。",
}
_CONCATENATED = {
    "en": "Concatenated tensors differ in size ({size} vs {other_size}): often one was made "
    "with the configured batch size and the other is the last, smaller batch of the epoch.",
    "zh": "被拼接的张量大小不同（{size} 与 {other_size}）：常见原因是其中一个按配置的 batch "
    "大小创建，另一个是 epoch 最后那个更小的 batch。",
}
_CONCATENATED_BATCHES = {
    "en": "Concatenated tensors differ in their batch dimension ({size} vs {other_size} in "
    "dimension 0): one was made with the configured batch size and the other is the last, "
    "smaller batch of the epoch.",
    "zh": "被拼接的张量在 batch 维（第 0 维）上大小不同（{size} 与 {other_size}）：其中一个按配置的 "
    "batch 大小创建，另一个是 epoch 最后那个更小的 batch。",
}


@PITFALL.error_check(
    types=("RuntimeError",), words=("stack expects each tensor", "sizes of tensors must match")
)
def batch_sizes_differ(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    """Stacks and concatenations outside the collate whose sizes differ where batches do."""
    if "tensor" not in block.message or _in_collate(block, report):
        return None  # the collate stacks samples, not batches: collate-size-mismatch
    found = _STACK.search(block.message)
    if found is not None:
        first = _sizes(found["first"])
        other = _sizes(found["other"])
        later_is_smaller = int(found["other_entry"]) > int(found["first_entry"]) and (
            other[:1] < first[:1]
        )
        if len(first) >= 2 and len(first) == len(other) and first[1:] == other[1:]:
            return Clue(
                0.75 if later_is_smaller else 0.5, _STACKED_BATCHES, None, found.groupdict()
            )
        return None
    found = _CAT.search(block.message)
    if found is None or found["cat_dim"] == "0" and found["dim"] is None:
        return None
    fields = {
        "size": found["size"] or found["size2"],
        "other_size": found["other_size"] or found["other_size2"],
    }
    if found["dim"] is not None:
        if found["dim"] != "0":
            return None
        # Before torch 1.5 the message named the mismatched dimension: 0 is the batch.
        return Clue(0.75, _CONCATENATED_BATCHES, None, fields)
    # The mismatched dimension is not named: the batch one, or a feature map's height.
    return Clue(0.45, _CONCATENATED, None, fields)


_SMALLER_BATCH_VIEWED = {
    "en": "`view` / `reshape` to [{shape}] asks for {batch} rows of {row} elements, and the "
    "tensor holds {size} = {rows} x {row}: exactly {rows} rows, what a smaller batch gives. The "
    "batch size is written into the shape (or taken from the configuration), and this batch, "
    "usually the last of the epoch, is smaller.",
    "zh": "`view` / `reshape` 到 [{shape}] 要求 {batch} 行、每行 {row} 个元素，而张量有 {size} = "
    "{rows} x {row} 个元素：正好 {rows} 行，这是更小的 batch 给出的。batch 大小被写进了形状（或取自"
    "配置），而这个 batch（通常是 epoch 的最后一个）更小。",
}


@PITFALL.error_check(types=("RuntimeError",), words=("]' is invalid",))
def smaller_batch_viewed(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    """A shape whose first size is the batch: the tensor is a whole number of its rows, fewer
    than the shape asks for (the last batch); any other misfit is view-shape-mismatch's."""
    found = invalid_view(block.message)
    if found is None or found.size is None:
        return None
    sizes, size = found.sizes, found.size
    if -1 in sizes:  # a free dimension: the size cannot be a smaller batch of these rows
        return None
    row = prod(sizes[1:])
    if len(sizes) < 2 or row <= 1 or size % row or not 0 < size // row < sizes[0]:
        return None
    fields = {
        "shape": ", ".join(map(str, sizes)),
        "batch": str(sizes[0]),
        "row": str(row),
        "rows": str(size // row),
        "size": str(size),
    }
    return Clue(0.88, _SMALLER_BATCH_VIEWED, None, fields)


# `view(-1, row)` whose row holds the whole batch: the model's output collapses to one sample
# while the loss's target keeps the batch, and a smaller batch is no multiple of the row.
_ONE_SAMPLE_OUTPUT = lazy_compile(
    r"target size \(torch\.Size\(\[(?P<batch>\d+),(?P<rest>[\d, ]*)\]\)\) that is different "
    r"to the input size \(torch\.Size\(\[1,(?P<input_rest>[\d, ]*)\]\)\)"
)
_BATCH_IN_ROW = {
    "en": "`view(-1, {row})` makes rows of {row} = {batch} x {sample} elements: the batch size "
    "{batch} is written into the row, so a full batch becomes one row (the loss warned of an "
    "input of 1 sample against a target of {batch}) and this batch, {size} = {rows} x {sample} "
    "elements, is no multiple of it.",
    "zh": "`view(-1, {row})` 生成每行 {row} = {batch} x {sample} 个元素的行：batch 大小 {batch} "
    "被写进了行的大小，于是整个 batch 变成了一行（损失函数警告输入只有 1 个样本而 target 有 "
    "{batch} 个），而这个 batch 有 {size} = {rows} x {sample} 个元素，不是它的整数倍。",
}
_BATCH_IN_ROW_FIX = {
    "en": "Keep the batch dimension and flatten the rest: `x = x.view(x.size(0), -1)` "
    "(or `torch.flatten(x, 1)`).",
    "zh": "保留 batch 维、只展平其余维度：`x = x.view(x.size(0), -1)`（或 `torch.flatten(x, 1)`）。",
}


@PITFALL.error_check(types=("RuntimeError",), words=("]' is invalid",))
def batch_in_flat_row(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    """A flattening view whose row size carries the batch: its premise, an output of one sample
    against a target of a full batch, is the loss's warning printed earlier."""
    found = invalid_view(block.message)
    if found is None or found.size is None:
        return None
    flat = found.sizes
    if len(flat) != 2 or flat[0] != -1 or flat[1] < 0:
        return None
    warned = report.search(_ONE_SAMPLE_OUTPUT)
    if warned is None or _sizes(warned["rest"]) != _sizes(warned["input_rest"]):
        return None
    batch, row, size = int(warned["batch"]), flat[1], found.size
    if batch < 2 or row % batch:
        return None
    sample = row // batch
    if size % sample or not 0 < size // sample < batch:
        return None
    fields = {
        "row": str(row),
        "batch": str(batch),
        "sample": str(sample),
        "size": str(size),
        "rows": str(size // sample),
    }
    return Clue(0.9, _BATCH_IN_ROW, _BATCH_IN_ROW_FIX, fields)


# An RNN's initial state against its input: `(layers, batch, hidden)` each side.
_HIDDEN = lazy_compile(
    r"Expected hidden(?:\[\d\])? size \((?P<expected>[\d, ]+)\), got [\[(](?P<got>[\d, ]+)[\])]"
)
_HIDDEN_FOR_ANOTHER_BATCH = {
    "en": "The RNN's initial hidden state was made for a batch of {got} while this input holds "
    "{expected} (sizes {expected_shape} expected, {got_shape} given): the state is built with "
    "the configured batch size, and this batch, usually the last of the epoch, differs.",
    "zh": "RNN 的初始隐藏状态是按 {got} 的 batch 创建的，而这个输入只有 {expected} 个样本（期望 "
    "{expected_shape}，实际 {got_shape}）：隐藏状态用配置的 batch 大小创建，而这个 batch（通常是 "
    "epoch 的最后一个）大小不同。",
}
_HIDDEN_FIX = {
    "en": "Make the initial state from the input: `h0 = x.new_zeros(num_layers, x.size(0), "
    "hidden)` (`x.size(1)` unless `batch_first=True`), or pass none and let the RNN start from "
    "zeros; or drop the last batch with `DataLoader(..., drop_last=True)`.",
    "zh": "按输入创建初始状态：`h0 = x.new_zeros(num_layers, x.size(0), hidden)`（未设 "
    "`batch_first=True` 时用 `x.size(1)`），或者不传初始状态让 RNN 从零开始；也可以用 "
    "`DataLoader(..., drop_last=True)` 丢掉最后一个 batch。",
}


@PITFALL.error_check(types=("RuntimeError",), words=("expected hidden",))
def hidden_for_another_batch(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    """An initial hidden state that differs from the input only in its batch size."""
    found = _HIDDEN.search(block.message)
    if found is None:
        return None
    expected = _sizes(found["expected"])
    got = _sizes(found["got"])
    if len(expected) != 3 or len(got) != 3 or expected[::2] != got[::2] or expected == got:
        return None
    fields = {
        "expected": str(expected[1]),
        "got": str(got[1]),
        "expected_shape": f"({found['expected'].strip()})",
        "got_shape": f"({found['got'].strip()})",
    }
    return Clue(0.85, _HIDDEN_FOR_ANOTHER_BATCH, _HIDDEN_FIX, fields)


def _sizes(listed: str) -> list[int]:
    """`2, 16, 256` (a shape as a message lists it) as numbers."""
    return [int(size) for size in listed.split(",") if size.strip()]


def _in_collate(block: ErrorBlock, report: ErrorReport) -> bool:
    for frame in block.frames:
        if "collate" in (frame.function or "") or frame.path.endswith("collate.py"):
            return True
    return bool(_COLLATE.search(block.message) or report.search(_COLLATE))


# An index past the end of dimension 0, the batch's, by a number written into the code.
_PAST_BATCH = lazy_compile(
    r"index (?P<index>\d+) is out of bounds for dimension 0 with size (?P<size>\d+)"
)
# `image_batch[1, 0:1]`: a subscript by a number; starts only at a word's start (linear).
_NUMBER_SUBSCRIPT = lazy_compile(r"(?<!\w)(?P<name>[A-Za-z_]\w{0,40})\[\s*(?P<number>\d+)\s*[,\]]")
# `for j in range(10):` in code shown with the error, and the subscripts by a name after it.
_RANGE_LOOP = lazy_compile(r"\bfor (?P<var>[A-Za-z_]\w{0,30}) in range\((?P<count>\d{1,6})\)")
_NAME_SUBSCRIPT = lazy_compile(
    r"(?<!\w)(?P<name>[A-Za-z_]\w{0,40})\[\s*(?P<var>[A-Za-z_]\w{0,30})\s*[,\]]"
)
_BATCH_SIZE_TEXT = lazy_compile(r"batch[ _-]?size", re.I)
_LOOP_BODY = 2000  # characters after the loop's header read for its subscripts
_LOOPS_READ = 20

_NUMBERED_SAMPLE = {
    "en": "`{name}[{index}]` takes sample {index} of a batch by a number written into the code, "
    "assuming every batch holds more than {index} samples; this one holds {size}: the last "
    "batch of an epoch is smaller unless the loader drops it (or the batch size is smaller "
    "than the code expects).",
    "zh": "`{name}[{index}]` 用写死在代码里的数字取 batch 中的第 {index} 个样本，假定每个 batch 都有多于 "
    "{index} 个样本；而这个 batch 只有 {size} 个：除非 loader 丢弃它，epoch 的最后一个 batch 更小"
    "（或者 batch 大小比代码假定的小）。",
}
_NUMBERED_SAMPLE_FIX = {
    "en": "Index only samples the batch has (`{name}[0]`, or a loop over "
    "`range({name}.size(0))`), or drop the incomplete last batch with "
    "`DataLoader(..., drop_last=True)`.",
    "zh": "只取 batch 中确实存在的样本（`{name}[0]`，或者遍历 `range({name}.size(0))`），"
    "或者用 `DataLoader(..., drop_last=True)` 丢弃不完整的最后一个 batch。",
}
_COUNTED_LOOP = {
    "en": "`for {var} in range({count})` indexes `{name}[{var}]` on dimension 0, the batch, "
    "which holds {size}: the loop's count is written into the code for another batch size, "
    "and it runs off the end of this batch at {size}.",
    "zh": "`for {var} in range({count})` 在第 0 维（batch 维）上取 `{name}[{var}]`，而这一维只有 "
    "{size} 个：循环次数是按另一个 batch 大小写死在代码里的，到 {size} 时就越过了这个 batch 的末尾。",
}
_COUNTED_LOOP_FIX = {
    "en": "Loop over the batch's own size: `for {var} in range({name}.size(0))`.",
    "zh": "按 batch 自身的大小循环：`for {var} in range({name}.size(0))`。",
}


@PITFALL.error_check(types=("IndexError", "RuntimeError"), words=("out of bounds for dimension 0",))
def index_past_batch(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    """Dimension 0 indexed past its end by a number in the code: a batch's, when the failing
    line names the tensor a batch, or when a loop of a fixed count shown with the error walks
    a tensor's first dimension in a text that speaks of a batch size. Any other index past the
    end is index-out-of-range's."""
    found = _PAST_BATCH.search(block.message)
    if found is None:
        return None
    index, size = int(found["index"]), int(found["size"])
    if index < size:
        return None
    source = block.frames[-1].source if block.frames else None
    for subscript in _NUMBER_SUBSCRIPT.finditer(source or ""):
        if int(subscript["number"]) == index and "batch" in subscript["name"].lower():
            fields = {"name": subscript["name"], "index": str(index), "size": str(size)}
            return Clue(0.92, _NUMBERED_SAMPLE, _NUMBERED_SAMPLE_FIX, fields)
    # A loop that ran off the end stops at the first index past it: the size itself.
    if index != size or not report.search(_BATCH_SIZE_TEXT):
        return None
    return _counted_loop(report.text or "", size)


def _counted_loop(text: str, size: int) -> Clue | None:
    """A `for v in range(N)` loop, N larger than `size`, whose body subscripts a name by `v`."""
    for number, loop in enumerate(_RANGE_LOOP.finditer(text)):
        if number == _LOOPS_READ:
            return None
        if int(loop["count"]) <= size:
            continue
        body = text[loop.end() : loop.end() + _LOOP_BODY]
        for subscript in _NAME_SUBSCRIPT.finditer(body):
            if subscript["var"] == loop["var"]:
                fields = {
                    "var": loop["var"],
                    "count": loop["count"],
                    "name": subscript["name"],
                    "size": str(size),
                }
                return Clue(0.92, _COUNTED_LOOP, _COUNTED_LOOP_FIX, fields)
    return None
