"""TD304 shared-memory-open-failed: DataLoader tensors shared by file descriptor hit `ulimit -n`."""

from __future__ import annotations

import re

from torchdoctor.catalog.sdk import Clue, Pitfall

PITFALL = Pitfall(
    code="TD304",
    name="shared-memory-open-failed",
    title={
        "en": "DataLoader cannot open shared memory: too many open file descriptors",
        "zh": "DataLoader 无法打开共享内存：打开的文件描述符过多",
    },
    messages={
        "": {
            "en": "tensors passed between DataLoader workers and the main process each hold a file "
            "descriptor, and the process hit its open-files limit",
            "zh": "DataLoader worker 与主进程之间传递的每个张量都占用一个文件描述符，进程已达到打开文件数的上限",
        }
    },
    fix_hint={
        "en": "Call `torch.multiprocessing.set_sharing_strategy('file_system')` at the start of "
        "the script, or raise the limit (`ulimit -n 65535` in the shell that starts "
        "training). Returning numpy arrays or fewer, larger tensors per sample also helps.",
        "zh": "在脚本开头调用 `torch.multiprocessing.set_sharing_strategy('file_system')`，"
        "或者提高上限（在启动训练的 shell 中执行 `ulimit -n 65535`）。让每个样本返回 numpy 数组，"
        "或返回更少但更大的张量，也有帮助。",
    },
    docs={
        "en": """
## What it catches
Errors of the DataLoader's inter-process tensor sharing on Linux: the main process cannot
open the shared memory a worker put a batch in, or cannot receive its file descriptor.

## Why is this bad?
With the default `file_descriptor` sharing strategy, every tensor a worker sends to the main
process travels as an open file descriptor of a shared memory segment. A sample made of many
small tensors (a list of boxes, one tensor per token or per frame), many workers, a large
`prefetch_factor`, or batches kept alive in a list (for metrics, for a cache) multiply the
descriptors in use until the process hits `ulimit -n`, often 1024. Training then dies at a
random step, often late in an epoch.

## Symptoms
`RuntimeError: unable to open shared memory object </torch_1234_5678> in read-write mode`
(newer releases add `: Too many open files (24)`), `RuntimeError: received 0 items of
ancdata`, `RuntimeError: Too many open files. Communication with the workers is no longer
possible. Please increase the limit using `ulimit -n` in the shell or change the sharing
strategy by calling `torch.multiprocessing.set_sharing_strategy('file_system')` at the
beginning of your code`, and `OSError: [Errno 24] Too many open files`.

## Known problems
The `file_system` strategy names segments by file instead; if the process is killed, those
files can stay in `/dev/shm` until removed. When the message ends in `No space left on
device`, `/dev/shm` itself is full: see `dataloader-shm-exhausted`.

## References
- PyTorch documentation, "Multiprocessing best practices" / "Sharing strategies".
- PyTorch issues #973 and #11201.
""",
        "zh": """
## What it catches
Linux 上 DataLoader 跨进程共享张量时的错误：主进程打不开 worker 放入 batch 的共享内存，
或者收不到它的文件描述符。

## Why is this bad?
在默认的 `file_descriptor` 共享策略下，worker 发给主进程的每个张量都以一个共享内存段的文件描述符传递。
如果每个样本由许多小张量组成（一串框、每个 token 或每一帧一个张量），worker 很多、`prefetch_factor`
很大，或者 batch 被保存在列表里（用于统计指标或缓存），占用的描述符就会不断累积，直到达到 `ulimit -n`
（通常是 1024）。训练会在某个随机的步骤崩溃，常常是一个 epoch 快结束的时候。

## Symptoms
`RuntimeError: unable to open shared memory object </torch_1234_5678> in read-write mode`
（新版本末尾还有 `: Too many open files (24)`），`RuntimeError: received 0 items of
ancdata`，`RuntimeError: Too many open files. Communication with the workers is no longer
possible. Please increase the limit using `ulimit -n` in the shell or change the sharing
strategy by calling `torch.multiprocessing.set_sharing_strategy('file_system')` at the
beginning of your code`，以及 `OSError: [Errno 24] Too many open files`。

## Known problems
`file_system` 策略改用文件名来标识共享内存段；如果进程被强行杀掉，这些文件可能残留在 `/dev/shm` 中，
需要手动删除。如果报错以 `No space left on device` 结尾，说明 `/dev/shm` 本身已满：
请参见 `dataloader-shm-exhausted`。

## References
- PyTorch 文档“Multiprocessing best practices”中的 “Sharing strategies” 一节。
- PyTorch issue #973 和 #11201。
""",
    },
    example="""
import torch
from torch.utils.data import DataLoader, Dataset


class Boxes(Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        return [torch.rand(4) for _ in range(50)]  # 50 small tensors per sample


loader = DataLoader(Boxes(), batch_size=None, num_workers=8)
kept = [sample for sample in loader]  # every tensor keeps a descriptor open
""",
    use_instead="""
import torch
import torch.multiprocessing
from torch.utils.data import DataLoader, Dataset

torch.multiprocessing.set_sharing_strategy("file_system")


class Boxes(Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        return torch.rand(50, 4)  # one tensor per sample


loader = DataLoader(Boxes(), batch_size=None, num_workers=8)
kept = [sample for sample in loader]
""",
)

# The segment's name in angle brackets as printed, or retold without them (`object XXX`).
PITFALL.error(
    r"unable to open shared memory object <?(?P<handle>[^<>\s]+)>? in read-write mode"
    r"(?!: No space left)"
    # cut short after the words (an issue's title)
    r"|unable to open shared memory object\s*$",
    types=(),
    confidence=0.95,
    cause={
        "en": "A process could not open the shared memory segment {handle} that another "
        "(a DataLoader worker, a torch.multiprocessing child) sent a tensor in: too "
        "many file descriptors are open, one per shared tensor.",
        "zh": "进程打不开另一个进程（DataLoader worker 或 torch.multiprocessing 子进程）用来传递张量的"
        "共享内存段 {handle}：打开的文件描述符过多，每个共享张量占用一个。",
    },
)
PITFALL.error(
    # (`[^<>\n]`: a handle never holds `<`, and a search from each `<` stops at the next one)
    r"unable to open shared memory object <(?P<handle>[^<>\n]+)> in read-write mode: "
    r"No space left on device",
    types=(),
    confidence=0.9,
    cause={
        "en": "The shared memory segment {handle} could not be created: /dev/shm is full.",
        "zh": "无法创建共享内存段 {handle}：/dev/shm 已满。",
    },
    fix={
        "en": "Give the process more shared memory (Docker: `--shm-size=8g` or `--ipc=host`), "
        "or lower `num_workers` / `batch_size`.",
        "zh": "给进程更多共享内存（Docker：`--shm-size=8g` 或 `--ipc=host`），或减小 `num_workers` / "
        "`batch_size`。",
    },
)
PITFALL.error(
    r"received (?P<items>\d+|%d) items of ancdata",
    types=(),
    confidence=0.95,
    cause={
        "en": "A DataLoader worker sent a tensor's file descriptor and none arrived: the "
        "main process is at its open-files limit (`ulimit -n`).",
        "zh": "DataLoader 的 worker 发送了张量的文件描述符，主进程却一个也没收到：主进程打开的文件数"
        "已达上限（`ulimit -n`）。",
    },
)
PITFALL.error(
    r"Too many open files\. Communication with the workers is no longer possible",
    types=(),
    confidence=0.95,
    cause={
        "en": "The main process reached its open-files limit: each tensor shared by a "
        "DataLoader worker holds a file descriptor.",
        "zh": "主进程达到了打开文件数的上限：DataLoader worker 共享的每个张量都占用一个文件描述符。",
    },
)

# Output the parser could not split into blocks (quoted): no context to go by.
PITFALL.error(
    r"\[Errno 24\] Too many open files",
    types=(),
    confidence=0.45,
    cause={
        "en": "The process hit its open-files limit (`ulimit -n`); with DataLoader workers, "
        "shared tensors are the usual consumer of descriptors.",
        "zh": "进程达到了打开文件数上限（`ulimit -n`）；使用 DataLoader worker 时，共享张量通常是"
        "描述符的主要消耗者。",
    },
)

_LOADER_CONTEXT = re.compile(r"DataLoader|dataloader|num_workers|multiprocessing|share_memory")


@PITFALL.error_check(types=("OSError", "RuntimeError"), words=("too many open files",))
def too_many_open_files(block, report) -> Clue | None:
    """`[Errno 24] Too many open files`: ours when a DataLoader, multiprocessing or
    `share_memory()` is around."""
    if "Too many open files" not in block.message:
        return None
    frames = " ".join(frame.path for frame in block.frames)
    if _LOADER_CONTEXT.search(frames) or report.search(_LOADER_CONTEXT):
        return Clue(
            0.85,
            {
                "en": "The process ran out of file descriptors while sharing tensors with other "
                "processes (DataLoader workers, torch.multiprocessing, `share_memory()`): each "
                "shared tensor holds one descriptor.",
                "zh": "与其他进程（DataLoader worker、torch.multiprocessing、`share_memory()`）共享张量时，"
                "进程耗尽了文件描述符：每个共享张量占用一个描述符。",
            },
        )
    return Clue(
        0.45,
        {
            "en": "The process hit its open-files limit (`ulimit -n`); with DataLoader workers, "
            "shared tensors are the usual consumer of descriptors.",
            "zh": "进程达到了打开文件数上限（`ulimit -n`）；使用 DataLoader worker 时，共享张量通常是"
            "描述符的主要消耗者。",
        },
    )
