"""TD011 index-out-of-range: an index beyond a tensor dimension (indexing, gather, scatter)."""

from __future__ import annotations

import re

from torchdoctor.catalog.sdk import Clue, Pitfall, lazy_compile

PITFALL = Pitfall(
    code="TD011",
    name="index-out-of-range",
    title={"en": "Tensor index out of bounds", "zh": "张量索引越界"},
    messages={
        "": {
            "en": "an index used for indexing, `gather`, `scatter` or `index_select` is outside "
            "the size of the dimension it indexes",
            "zh": "用于索引、`gather`、`scatter` 或 `index_select` 的某个下标超出了它所索引的那一维的大小",
        }
    },
    fix_hint={
        "en": "Print the index tensor's min and max next to the indexed size "
        "(`idx.min(), idx.max(), x.shape[dim]`); on the GPU rerun with "
        "`CUDA_LAUNCH_BLOCKING=1` or on the CPU to get the plain `IndexError` at the "
        "right line. Look for off-by-one ranges, 1-based ids, and `-1` used as a "
        "placeholder.",
        "zh": "把索引张量的最小值、最大值和被索引的那一维的大小一起打印出来（`idx.min(), idx.max(), "
        "x.shape[dim]`）；在 GPU 上则设置 `CUDA_LAUNCH_BLOCKING=1` 或改到 CPU 上重新运行，"
        "在正确的行得到普通的 `IndexError`。重点找差一错误、从 1 开始的编号，以及被当作占位符的 `-1`。",
    },
    docs={
        "en": """
## What it catches
Out-of-bounds indices in tensor indexing (`x[idx]`, `x[:, idx]`), `gather`, `scatter`,
`index_select`, `index_add`, `take`: `index 5 is out of bounds for dimension 0 with size 3` on
the CPU, the `"index out of bounds"` assertions of the CUDA indexing and scatter/gather
kernels on the GPU; and Python's `list index out of range` raised in a Dataset's
`__getitem__`, whose `__len__` counts more items than the list it indexes. Class labels out of
range in a loss and embedding ids out of range have their own entries
(`cross-entropy-target-range`, `embedding-index-out-of-range`).

## Why is this bad?
An index refers to a position that does not exist. It usually comes from data rather than
from the failing line: ids numbered from 1, a `-1` placeholder for "none" where only valid
positions are expected, box or keypoint coordinates outside the image used as indices,
indices computed for one tensor and applied to a smaller one (after filtering or cropping),
or a batch whose last element is shorter. On the GPU the check is a device-side assert:
reported asynchronously, at a later line, and the process must be restarted.

## Symptoms
`IndexError: index 5 is out of bounds for dimension 0 with size 3`,
`RuntimeError: index 7 is out of bounds for dimension 1 with size 3` (gather/scatter);
GPU: `IndexKernel.cu:92: operator(): block: [0,0,0], thread: [0,0,0] Assertion
-sizes[i] <= index && index < sizes[i] && "index out of bounds" failed.` (older:
`index >= -sizes[i] && index < sizes[i] && "index out of bounds"`),
`ScatterGatherKernel.cu: ... Assertion idx_dim >= 0 && idx_dim < index_size && "index out of
bounds" failed.`, followed by `CUDA error: device-side assert triggered`.

## References
- https://pytorch.org/docs/stable/generated/torch.gather.html
- https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution
""",
        "zh": """
## What it catches
张量索引（`x[idx]`、`x[:, idx]`）、`gather`、`scatter`、`index_select`、`index_add`、`take`
中的越界下标：CPU 上的 `index 5 is out of bounds for dimension 0 with size 3`，GPU 上 CUDA 索引内核和
scatter/gather 内核的 `"index out of bounds"` 断言；以及 Dataset 的 `__getitem__` 中
Python 自己的 `list index out of range`（其 `__len__` 计数多于它所索引的列表）。
损失函数中的类别标签越界和 embedding id 越界有各自的条目
（`cross-entropy-target-range`、`embedding-index-out-of-range`）。

## Why is this bad?
下标指向了一个不存在的位置。它通常来自数据，而不是出错的那一行：从 1 开始编号的 id，用 `-1` 表示“无”
却被当作合法位置使用，超出图像范围的框或关键点坐标被拿来做索引，为一个张量算出的下标用在了更小的张量上
（过滤或裁剪之后），或者最后一个 batch 比较短。在 GPU 上，这个检查是 device-side assert：
错误异步报告，出现在后面的某一行，而且进程必须重启。

## Symptoms
`IndexError: index 5 is out of bounds for dimension 0 with size 3`、
`RuntimeError: index 7 is out of bounds for dimension 1 with size 3`（gather/scatter）；
GPU：`IndexKernel.cu:92: operator(): block: [0,0,0], thread: [0,0,0] Assertion
-sizes[i] <= index && index < sizes[i] && "index out of bounds" failed.`（旧版本：
`index >= -sizes[i] && index < sizes[i] && "index out of bounds"`）、
`ScatterGatherKernel.cu: ... Assertion idx_dim >= 0 && idx_dim < index_size && "index out of
bounds" failed.`，随后是 `CUDA error: device-side assert triggered`。

## References
- https://pytorch.org/docs/stable/generated/torch.gather.html
- https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution
""",
    },
    example="""
import torch

scores = torch.randn(4, 10)
labels = torch.tensor([1, 10, 3, 7])
picked = scores.gather(1, labels.unsqueeze(1))
""",
    use_instead="""
import torch

scores = torch.randn(4, 10)
labels = torch.tensor([1, 10, 3, 7]) - 1
assert labels.min() >= 0 and labels.max() < scores.shape[1]
picked = scores.gather(1, labels.unsqueeze(1))
""",
)

PITFALL.error(
    r"index (?P<index>-?\d+) is out of bounds for dimension (?P<dim>\d+) with size (?P<size>\d+)",
    types=("IndexError", "RuntimeError"),
    confidence=0.9,
    cause={
        "en": "Index {index} is used on dimension {dim}, which has only {size} elements "
        "(indices must be smaller than {size}): the index data and the indexed tensor "
        "disagree.",
        "zh": "下标 {index} 用在了第 {dim} 维上，而这一维只有 {size} 个元素（下标必须小于 {size}）："
        "索引数据和被索引的张量对不上。",
    },
)
# The same message with its numbers left out, as an issue's title retells it: "index is out of
# bounds for dimension 0 with size".
PITFALL.error(
    r"\bindex is out of bounds for dimension\b",
    types=("IndexError", "RuntimeError"),
    confidence=0.8,
    cause={
        "en": "An index is larger than (or as large as) the size of the dimension it indexes: "
        "the index data and the indexed tensor disagree.",
        "zh": "某个下标大于（或等于）它所索引的那一维的大小：索引数据和被索引的张量对不上。",
    },
)
PITFALL.error(
    r"index contains (?P<index>-?\d+) that is out of range for tensor of size",
    types=("IndexError", "RuntimeError"),
    confidence=0.9,
    cause={
        "en": "The index tensor contains {index}, outside the indexed dimension.",
        "zh": "索引张量中含有 {index}，超出了被索引的那一维。",
    },
)
# CUDA indexing and scatter/gather kernels: the check that failed names itself.
PITFALL.error(
    r"Assertion `?[^`\n]*index out of bounds\"|idx_dim >= 0 && idx_dim < index_size|"
    r"index >= -sizes\[i\] && index < sizes\[i\]|-sizes\[i\] <= index && index < sizes\[i\]",
    types=(),
    confidence=0.9,
    cause={
        "en": "A CUDA indexing, gather or scatter kernel got an index outside the size of the "
        "dimension it indexes; the Python traceback may point at a later line since "
        "kernels run asynchronously.",
        "zh": "CUDA 的索引、gather 或 scatter 内核收到了超出所索引那一维大小的下标；由于内核异步执行，"
        "Python 调用栈可能指向后面的某一行。",
    },
)
PITFALL.error(
    r"index (?P<index>-?\d+) is out of bounds for axis (?P<dim>\d+) with size (?P<size>\d+)",
    types=("IndexError",),
    confidence=0.7,
    cause={
        "en": "A numpy array was indexed with {index} on axis {dim}, which has {size} "
        "elements; in a Dataset this is often an index computed for a larger array.",
        "zh": "对 numpy 数组在第 {dim} 轴上用了下标 {index}，而这一轴只有 {size} 个元素；在 Dataset "
        "中这往往是按更大的数组算出来的下标。",
    },
)

_INDEX_SELECT = re.compile(r"^index out of range in self")


@PITFALL.error_check(types=("IndexError", "RuntimeError"), words=("index out of range in self",))
def check(block, report) -> Clue | None:
    """`index out of range in self` is index_select's; embedding-index-out-of-range explains it
    unless the traceback shows a plain index_select."""
    if not _INDEX_SELECT.search(block.message):
        return None
    sources = [(frame.source or "") + " " + (frame.function or "") for frame in block.frames]
    if any("embedding" in text.lower() for text in sources):
        return Clue(0.5, None)
    if any("index_select" in text for text in sources):
        return Clue(
            0.85,
            {
                "en": "`index_select` got an index outside the dimension it selects from.",
                "zh": "`index_select` 收到的下标超出了它所选取的那一维。",
            },
        )
    return Clue(0.55, None)


# Python's own `list index out of range`, raised in a Dataset's `__getitem__`: the sampler asks
# for every index below `len(dataset)`, so the list indexed there is shorter than `__len__`
# says (or empty: the data files were not found or not made). Anywhere else it is anyone's
# list, and not ours.
_LIST_INDEX = "list index out of range"
_LOADING_PATH = lazy_compile(r"[/\\]torch[/\\]utils[/\\]data[/\\]|[/\\]dataloader\.py$")
_LOADING_FUNCTIONS = frozenset({"_worker_loop", "fetch", "_next_data", "_get_data"})
# Told without a traceback: the data pipeline named in the text around the message.
_DATA_PIPELINE = lazy_compile(r"\bDataLoader\b|\bDataset\b|__getitem__")
_DATASET_CAUSE = {
    "en": "A list was indexed past its end in a Dataset's `__getitem__`. The DataLoader's "
    "sampler asks for every index below `len(dataset)`, so `__len__` reports more items than "
    "that list holds: the list is empty or short (files not found by the path or glob, data "
    "not generated yet, a subset of size 0), or two lists built apart (images and labels) "
    "differ in length.",
    "zh": "在 Dataset 的 `__getitem__` 中对列表的索引越过了末尾。DataLoader 的 sampler 会取遍 "
    "`len(dataset)` 以下的所有下标，所以 `__len__` 报告的数量比这个列表里的多：列表为空或太短"
    "（路径或 glob 没找到文件、数据还没有生成、子集大小为 0），或者分别构建的两个列表（图像和标签）"
    "长度不一致。",
}
_DATASET_FIX = {
    "en": "Make `__len__` return the length of the list `__getitem__` indexes "
    "(`return len(self.items)`), and check the lists right after building them: "
    "`assert len(self.images) == len(self.labels) > 0, self.root`.",
    "zh": "让 `__len__` 返回 `__getitem__` 所索引的那个列表的长度（`return len(self.items)`），"
    "并在构建列表后立即检查：`assert len(self.images) == len(self.labels) > 0, self.root`。",
}


@PITFALL.error_check(types=("IndexError",), words=("list index out of range",))
def dataset_list_index(block, report) -> Clue | None:
    if _LIST_INDEX not in block.message:
        return None
    if not block.frames:
        if report.search(_DATA_PIPELINE) is None:
            return None
        return Clue(0.45, _DATASET_CAUSE, _DATASET_FIX)
    if block.frames[-1].function != "__getitem__":
        return None  # raised deeper, in a transform or a helper: not the dataset's own list
    if not any(
        frame.function in _LOADING_FUNCTIONS or _LOADING_PATH.search(frame.path)
        for frame in block.frames
    ):
        return None  # some class's `__getitem__`, not shown to be a Dataset's
    return Clue(0.75, _DATASET_CAUSE, _DATASET_FIX)
