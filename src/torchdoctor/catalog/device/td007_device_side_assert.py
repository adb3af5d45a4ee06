"""TD007 device-side-assert: a CUDA kernel assertion failed; the real error is elsewhere."""

from __future__ import annotations

import re

from torchdoctor.catalog.sdk import Clue, ErrorBlock, ErrorReport, Pitfall

PITFALL = Pitfall(
    code="TD007",
    name="device-side-assert",
    title={
        "en": "CUDA device-side assert triggered",
        "zh": "CUDA 设备端断言失败（device-side assert triggered）",
    },
    messages={
        "": {
            "en": "a check inside a CUDA kernel failed; the Python traceback may point at a later, "
            "innocent line because kernels run asynchronously",
            "zh": "某个 CUDA 内核里的检查失败了；由于内核是异步执行的，Python 调用栈可能指向后面一行无辜的代码",
        }
    },
    fix_hint={
        "en": "Rerun with `CUDA_LAUNCH_BLOCKING=1` (the traceback then stops at the failing "
        "operation), or run the same batch on the CPU, where the operation raises a "
        "readable error. Most often a class label is >= the number of classes (or "
        "negative), a token id is >= the embedding size, or an index is out of range.",
        "zh": "设置 `CUDA_LAUNCH_BLOCKING=1` 重新运行（调用栈会停在真正出错的运算上），或者把同一个 batch "
        "放到 CPU 上运行，CPU 上会报出可读的错误。最常见的是类别标签 >= 类别数（或为负数）、"
        "token id >= embedding 的大小，或者索引越界。",
    },
    docs={
        "en": """
## What it catches
`device-side assert triggered` when nothing more specific is visible in the output: a CUDA
kernel checked its inputs, the check failed, and the CUDA context is now unusable. Entries
for the common asserts (class labels out of range, embedding ids out of range, index out of
bounds) take precedence when their assertion line is printed.

## Why is this bad?
CUDA kernels run asynchronously: the assertion fires inside a kernel launched some time
before, and Python only notices at the next synchronizing call (`loss.item()`, `.cpu()`,
`print(tensor)`, the next allocation). The traceback therefore often points at an innocent
line. Every later CUDA call fails too, so the process must be restarted. The assertion line
printed above the traceback (`Assertion ... failed.`), when present, names the real check.

Typical causes: a classification target outside `[0, num_classes)` (labels starting at 1,
`-1` used for padding without `ignore_index`), token ids larger than the embedding, a
gather/scatter/indexing with an index out of range, `BCELoss` inputs outside `[0, 1]`.

## Symptoms
`RuntimeError: CUDA error: device-side assert triggered`, followed by `CUDA kernel errors
might be asynchronously reported at some other API call, so the stacktrace below might be
incorrect. For debugging consider passing CUDA_LAUNCH_BLOCKING=1` and `Compile with
TORCH_USE_CUDA_DSA to enable device-side assertions.`; older versions:
`cuda runtime error (59) : device-side assert triggered at ...`,
`THCudaCheck FAIL file=... error=59 : device-side assert triggered`; from a C++ destructor:
`terminate called after throwing an instance of 'c10::CUDAError' what(): CUDA error:
device-side assert triggered`.

## References
- https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution
""",
        "zh": """
## What it catches
输出中看不到更具体信息时的 `device-side assert triggered`：某个 CUDA 内核检查了它的输入，检查失败，
CUDA 上下文随之不可再用。常见断言（类别标签越界、embedding id 越界、索引越界）各有专门的条目，
输出中打印了对应的断言行时优先由它们解释。

## Why is this bad?
CUDA 内核是异步执行的：断言是在之前某个时刻启动的内核里触发的，Python 要等到下一次同步调用
（`loss.item()`、`.cpu()`、`print(tensor)`、下一次分配显存）才会发现。因此调用栈经常指向一行无辜的代码。
之后所有的 CUDA 调用也都会失败，只能重启进程。调用栈上方打印的断言行（`Assertion ... failed.`）
如果有的话，才说明了真正失败的检查。

典型原因：分类目标不在 `[0, num_classes)` 范围内（标签从 1 开始，或用 `-1` 做填充却没有设置
`ignore_index`），token id 大于 embedding 的大小，gather/scatter/索引时下标越界，`BCELoss`
的输入不在 `[0, 1]` 之间。

## Symptoms
`RuntimeError: CUDA error: device-side assert triggered`，随后是 `CUDA kernel errors might be
asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1` 和 `Compile with TORCH_USE_CUDA_DSA to
enable device-side assertions.`；旧版本：`cuda runtime error (59) : device-side assert
triggered at ...`、`THCudaCheck FAIL file=... error=59 : device-side assert triggered`；
在 C++ 析构函数中：`terminate called after throwing an instance of 'c10::CUDAError' what():
CUDA error: device-side assert triggered`。

## References
- https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution
""",
    },
    example="""
import torch
import torch.nn as nn

logits = torch.randn(4, 3, device="cuda")
labels = torch.tensor([1, 2, 3, 0], device="cuda")
loss = nn.CrossEntropyLoss()(logits, labels)
print(loss.item())
""",
    use_instead="""
import torch
import torch.nn as nn

logits = torch.randn(4, 3, device="cuda")
labels = torch.tensor([1, 2, 3, 0], device="cuda")
assert 0 <= labels.min() and labels.max() < logits.shape[1], "labels out of range"
loss = nn.CrossEntropyLoss()(logits, labels)
print(loss.item())
""",
)

PITFALL.error(
    r"device-side assert triggered",
    types=(),
    confidence=0.6,
    cause={
        "en": "A check inside a CUDA kernel failed, and nothing in the output says which "
        "one; because kernels run asynchronously, the line in the traceback may not "
        "be the one that failed. Most often: a class label outside [0, num_classes), "
        "a token id beyond the embedding size, or an index out of range.",
        "zh": "某个 CUDA 内核里的检查失败了，但输出里没有说明是哪一个；由于内核异步执行，调用栈里的那一行"
        "未必是出错的地方。最常见的是：类别标签不在 [0, num_classes) 内、token id 超出 "
        "embedding 的大小，或者索引越界。",
    },
)
# A kernel assertion line whose text no more specific entry recognises. Read from `block:` on,
# the assertion up to its closing backtick (it may quote `inf` itself), and to the end of the
# line when a title cut ` failed` off: bounded, so linear in the input, which is the whole log.
PITFALL.error(
    r"(?m)block: \[[\d, ]*\], thread: \[[\d, ]*\] Assertion `(?P<assertion>[^\n]{1,300}?)`"
    r"(?: failed|[ \t.]*$)",
    types=(),
    confidence=0.65,
    cause={
        "en": "The CUDA kernel assertion `{assertion}` failed: an input of that operation "
        "is outside the range it accepts. The Python traceback may point at a later "
        "line, since kernels run asynchronously.",
        "zh": "CUDA 内核断言 `{assertion}` 失败：该运算的某个输入超出了它接受的范围。由于内核异步执行，"
        "Python 调用栈可能指向后面的某一行。",
    },
)
# The asynchronous-error note alone: some kernel failed with an error this catalog lacks. Not
# when the error says that no kernel could run at all: a torch build without code for this GPU
# (`no kernel image is available`, sm_120 on a build for sm_90) is not a kernel that failed.
_ASYNC_NOTE = re.compile(r"CUDA kernel errors might be asynchronously reported")
_NO_KERNEL = re.compile(r"no kernel image is available|is not compatible with the current PyTorch")
_KERNEL_FAILED = {
    "en": "A CUDA kernel failed, and the error was reported at a later call: the line in "
    "the traceback is probably not the one that failed.",
    "zh": "某个 CUDA 内核执行失败，错误在之后的调用中才被报告出来：调用栈里的那一行多半不是出错的地方。",
}


@PITFALL.error_check(types=(), words=("cuda kernel errors might be asynchronously reported",))
def asynchronous_note(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    if not _ASYNC_NOTE.search(block.message) or _NO_KERNEL.search(block.message):
        return None
    if report.search(_NO_KERNEL):
        return None
    return Clue(0.45, _KERNEL_FAILED)
