"""TD303 dataloader-shm-exhausted: DataLoader workers run out of shared memory (/dev/shm)."""

from __future__ import annotations

import os
import shutil

from torchdoctor.catalog.sdk import Clue, lazy_compile, Monitor, Pitfall

PITFALL = Pitfall(
    code="TD303",
    name="dataloader-shm-exhausted",
    title={
        "en": "DataLoader workers ran out of shared memory (/dev/shm)",
        "zh": "DataLoader 的 worker 进程耗尽了共享内存（/dev/shm）",
    },
    messages={
        "": {
            "en": "a DataLoader worker crashed with a bus error: the shared memory (/dev/shm) that "
            "carries batches from the workers to the main process is full",
            "zh": "DataLoader 的 worker 因总线错误（bus error）崩溃：在 worker 与主进程之间传递 batch "
            "的共享内存（/dev/shm）已满",
        },
        "runtime": {
            "en": "this DataLoader keeps up to {batches} batches of {batch} in shared memory "
            "(num_workers={workers} x prefetch_factor={prefetch}), about {total}, but {path} "
            "has only {free} free: its workers will die with a bus error; give the process "
            "more shared memory (Docker: `--shm-size=8g` or `--ipc=host`) or lower "
            "`num_workers`/`prefetch_factor`/`batch_size`",
            "zh": "这个 DataLoader 最多会在共享内存中保留 {batches} 个 {batch} 的 batch（num_workers={workers} "
            "x prefetch_factor={prefetch}），约 {total}，而 {path} 只剩 {free} 可用：它的 worker 会因总线错误"
            "崩溃；请给进程更多共享内存（Docker：`--shm-size=8g` 或 `--ipc=host`），或调小 "
            "`num_workers`/`prefetch_factor`/`batch_size`",
        },
    },
    fix_hint={
        "en": "Give the process more shared memory: in Docker run with `--shm-size=8g` (or "
        "`--ipc=host`), in Kubernetes mount an `emptyDir` with `medium: Memory` at "
        "/dev/shm. To confirm, set `num_workers=0`; fewer workers or a smaller "
        "`batch_size` / `prefetch_factor` also lower the peak.",
        "zh": "给进程更多共享内存：Docker 中用 `--shm-size=8g`（或 `--ipc=host`）启动容器，"
        "Kubernetes 中在 /dev/shm 挂载 `medium: Memory` 的 `emptyDir`。可先设 `num_workers=0` "
        "确认问题；减少 worker 数、调小 `batch_size` 或 `prefetch_factor` 也能降低峰值占用。",
    },
    docs={
        "en": """
## What it catches
A DataLoader with `num_workers > 0` whose workers die of `SIGBUS` because the shared memory
filesystem, `/dev/shm`, is full. It is nearly always a container: Docker gives a container
64 MB of `/dev/shm` unless told otherwise, and many Kubernetes and CI setups do the same.

## Why is this bad?
Each worker puts the batches it builds into shared memory, so the main process can take them
without a copy. With several workers, `prefetch_factor` batches in flight each, and large
samples (images, video, point clouds), that is easily gigabytes. When `/dev/shm` is full, the
worker touching a new page gets `SIGBUS` and dies; the main process only sees that a worker
exited. The same script runs fine outside the container, and fine with `num_workers=0`.

## Symptoms
`ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient
shared memory (shm).`, followed by `RuntimeError: DataLoader worker (pid 1234) is killed by
signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please
try to raise your shared memory limit.` (older releases: just `... is killed by signal: Bus
error.`), `RuntimeError: unable to write to file </torch_123_456>: No space left on device
(28)`, or simply `Bus error (core dumped)` and
`RuntimeError: DataLoader worker (pid(s) 1234) exited unexpectedly`.

## Known problems
`DataLoader worker (pid N) is killed by signal: Killed.` is different: that is the kernel's
out-of-memory killer ending a worker because the machine ran out of RAM, not of shared
memory. It is shown with low confidence; reduce `num_workers`, the memory each worker holds
(copies of large Python lists in the dataset grow with every worker), or the batch size.

A bus error is only a guess at a full `/dev/shm`: when the report says the shared memory is
large (64 GB or more, as with `--ipc=host` on a big host: "/dev/shm space of 254GB"), the
guesses stay silent. A worker also dies of `SIGBUS` reading a memory-mapped file whose volume
went away (a network or removable data disk), which no message tells apart.

## References
- PyTorch issue #5040 (the bus error message) and the `docker run --shm-size` documentation.
""",
        "zh": """
## What it catches
`num_workers > 0` 的 DataLoader，其 worker 进程因为共享内存文件系统 `/dev/shm` 已满而收到 `SIGBUS` 崩溃。
几乎总是发生在容器里：Docker 默认只给容器 64 MB 的 `/dev/shm`，很多 Kubernetes 和 CI 环境也一样。

## Why is this bad?
每个 worker 把组好的 batch 放进共享内存，主进程无需拷贝就能取走。worker 一多、每个 worker 又有
`prefetch_factor` 个 batch 在途，样本再大一些（图像、视频、点云），很容易就是好几个 GB。`/dev/shm`
写满后，访问新内存页的 worker 收到 `SIGBUS` 直接退出，主进程只知道有 worker 意外退出了。
同一个脚本在容器外、或者 `num_workers=0` 时都能正常运行。

## Symptoms
`ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient
shared memory (shm).`，随后是 `RuntimeError: DataLoader worker (pid 1234) is killed by
signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please
try to raise your shared memory limit.`（旧版本只有 `... is killed by signal: Bus error.`），
`RuntimeError: unable to write to file </torch_123_456>: No space left on device (28)`，
或者只有 `Bus error (core dumped)` 和
`RuntimeError: DataLoader worker (pid(s) 1234) exited unexpectedly`。

## Known problems
`DataLoader worker (pid N) is killed by signal: Killed.` 是另一回事：那是内核的 OOM killer
因为机器内存（RAM）耗尽而杀掉了 worker，与共享内存无关。这种情况只以较低的置信度给出；
应减少 `num_workers`、减少每个 worker 占用的内存（数据集中的大型 Python 列表会在每个 worker
中各复制一份），或调小 batch size。

bus error 只是对 `/dev/shm` 已满的猜测：如果报告中说共享内存很大（64 GB 或更多，例如在大内存主机上使用
`--ipc=host`："/dev/shm space of 254GB"），这些猜测不会给出。worker 读取内存映射文件时，如果文件所在的卷
消失了（网络盘或可移动数据盘），同样会收到 `SIGBUS`，而报错信息无法区分这两种情况。

## References
- PyTorch issue #5040（bus error 报错信息的由来）以及 `docker run --shm-size` 的文档。
""",
    },
    example="""
import torch
from torch.utils.data import DataLoader, TensorDataset

# run inside `docker run --gpus all image python train.py` (64 MB of /dev/shm)
dataset = TensorDataset(torch.randn(10_000, 3, 224, 224))
loader = DataLoader(dataset, batch_size=64, num_workers=8)
for (images,) in loader:
    pass
""",
    use_instead="""
import torch
from torch.utils.data import DataLoader, TensorDataset

# run with `docker run --gpus all --shm-size=8g image python train.py` (or --ipc=host)
dataset = TensorDataset(torch.randn(10_000, 3, 224, 224))
loader = DataLoader(dataset, batch_size=64, num_workers=8)
for (images,) in loader:
    pass
""",
)

# A bus error is a guess at a full /dev/shm (torch's own messages say "might", "It is
# possible"); the report that says the shared memory is large (64 GB or more: "/dev/shm space
# of 254GB", "--shm-size=128g", "100s of GB of /dev/shm") denies it. Messages that say the
# device is full are not guesses and do not ask.
_LARGE = r"(?:[1-9]\d{2,4}|6[4-9]|[7-9]\d|100s of|hundreds of) ?(?:[GT]i?B|[GgTt])\b"
_SHM_SAID_LARGE = lazy_compile(
    rf"(?:/dev/shm|\bshm)\b[^\n.]{{0,40}}?(?<![\d.]){_LARGE}"
    rf"|(?<![\d.]){_LARGE}(?: of)?(?: free| available)?(?: space)?(?: of| in| on| for)? "
    r"(?:/dev/)?shm\b"
)
PITFALL.error(
    r"DataLoader worker \(pid (?P<pid>\d+)\) is killed by signal: Bus\s+error",
    types=(),
    unless=_SHM_SAID_LARGE,
    confidence=0.95,
    cause={
        "en": "DataLoader worker {pid} died of SIGBUS: the shared memory (/dev/shm) that "
        "carries batches to the main process is full, typical of a Docker container "
        "started without `--shm-size`.",
        "zh": "DataLoader 的 worker {pid} 因 SIGBUS 退出：在 worker 与主进程之间传递 batch 的共享内存"
        "（/dev/shm）已满，这在未指定 `--shm-size` 启动的 Docker 容器中很常见。",
    },
)
PITFALL.error(
    # retyped with a comma for the full stop, or only its second half
    r"Unexpected bus error encountered in worker\W{1,3}This might be caused by insufficient "
    r"shared memory \(shm\)|caused by insufficient shared memory \(shm\)",
    types=(),
    unless=_SHM_SAID_LARGE,
    confidence=0.95,
    cause={
        "en": "A DataLoader worker hit a bus error while writing a batch into shared memory: "
        "/dev/shm is too small for num_workers x prefetch_factor batches.",
        "zh": "DataLoader 的 worker 在把 batch 写入共享内存时遇到总线错误：/dev/shm 容纳不下 "
        "num_workers x prefetch_factor 个 batch。",
    },
)
PITFALL.error(
    r"unable to write to file <(?P<handle>/?torch_[\w]+)>: No space left on device",
    types=(),
    confidence=0.9,
    cause={
        "en": "Writing a batch into shared memory ({handle}) failed because /dev/shm is full.",
        "zh": "把 batch 写入共享内存（{handle}）失败：/dev/shm 已满。",
    },
)
# Before torch 1.7 the message gave no reason (`unable to write to file </torch_1_2>`, maybe
# followed by ` at .../THAllocator.cpp:...`); a full /dev/shm is then the usual one. A message
# naming another reason after a colon is not this.
PITFALL.error(
    r"unable to write to file <(?P<handle>/?torch_\w+)>(?!:)",
    types=(),
    confidence=0.8,
    cause={
        "en": "Writing a tensor into shared memory ({handle}), as DataLoader workers do to pass "
        "batches, failed: most often /dev/shm is full (this release's message does not say "
        "why).",
        "zh": "把张量写入共享内存（{handle}）失败（DataLoader 的 worker 就是这样传递 batch 的）："
        "最常见的原因是 /dev/shm 已满（这个版本的报错没有说明原因）。",
    },
)
# torch >= 2.5 (`MapAllocator`): the segment cannot even be created.
PITFALL.error(
    r"unable to allocate shared memory\(shm\) for file <(?P<handle>[^>\n]*)>: "
    r"No space left on device",
    types=(),
    confidence=0.9,
    cause={
        "en": "Allocating a batch in shared memory ({handle}) failed because /dev/shm is full.",
        "zh": "在共享内存中分配 batch（{handle}）失败：/dev/shm 已满。",
    },
)

# A bare crash line with nothing around it: a guess, SIGBUS has other causes.
# Told in words, as issues and chats do: "shared memory不够（docker限制了shm）", "/dev/shm is
# too small", "not enough shared memory".
PITFALL.error(
    # (each alternative spells a literal, which the catalog's index looks for first)
    r"(?:[Ii]nsufficient|[Nn]ot enough)\s+shared\s+memory"
    r"|[Ss]hared\s+memory\s*(?:is\s+)?(?:不够|不足|满了|太小|too small|full)"
    r"|共享内存\s*(?:不够|不足|满了|太小)"
    r"|/dev/shm\s*(?:is\s+)?(?:不够|不足|满了|太小|too small|full)"
    r"|\bshm (?:is )?(?:不够|不足|满了|太小|too small|full)",
    types=(),
    unless=_SHM_SAID_LARGE,
    confidence=0.6,
    cause={
        "en": "The DataLoader's workers pass batches to the main process through shared memory "
        "(/dev/shm), and it is too small for them: Docker gives a container 64 MB unless told "
        "otherwise.",
        "zh": "DataLoader 的 worker 通过共享内存（/dev/shm）把 batch 交给主进程，而它太小了：Docker "
        "默认只给容器 64 MB。",
    },
)
PITFALL.error(
    r"(?m)^Bus error \(core dumped\)",
    types=(),
    unless=_SHM_SAID_LARGE,
    confidence=0.4,
    cause={
        "en": "A process died of SIGBUS. In training scripts that is most often a DataLoader "
        "worker writing into a full /dev/shm (shared memory).",
        "zh": "某个进程因 SIGBUS 退出。在训练脚本中，最常见的原因是 DataLoader 的 worker "
        "向已满的 /dev/shm（共享内存）写入数据。",
    },
)

_BUS_ERROR = lazy_compile(r"(?m)^.{0,80}\bBus error\b")
_LOADER_CONTEXT = lazy_compile(r"DataLoader|dataloader|num_workers|_worker_loop")
_KILLED = lazy_compile(r"DataLoader worker \(pid (?P<pid>\d+)\) is killed by signal: Killed")
_EXITED = "exited unexpectedly"


@PITFALL.error_check(types=(), words=("bus error", "exited unexpectedly", "killed by signal"))
def bus_error_in_loader(block, report) -> Clue | None:
    """`Bus error (core dumped)` or "worker exited unexpectedly" next to a DataLoader: shm;
    "killed by signal: Killed" is the out-of-memory killer, shown only as a weak guess."""

    def in_text(pattern):  # the whole input (read once for all blocks), else the message
        return report.search(pattern) if report.text else pattern.search(block.message)

    if not in_text(_LOADER_CONTEXT) or report.search(_SHM_SAID_LARGE):
        return None
    if _BUS_ERROR.search(block.message) or (_EXITED in block.message and in_text(_BUS_ERROR)):
        return Clue(
            0.85,
            {
                "en": "A DataLoader worker crashed with a bus error: most likely /dev/shm, which "
                "carries batches from the workers, is full.",
                "zh": "DataLoader 的 worker 因总线错误崩溃：最可能是用于传递 batch 的 /dev/shm 已满。",
            },
        )
    killed = _KILLED.search(block.message)
    if killed is not None:
        return Clue(
            0.35,
            {
                "en": "Worker {pid} was killed by SIGKILL, usually the kernel's out-of-memory "
                "killer: the machine ran out of RAM (not shared memory). Use fewer workers or "
                "less memory per worker.",
                "zh": "worker {pid} 被 SIGKILL 杀掉，通常是内核的 OOM killer：机器的内存（RAM）耗尽了，"
                "而不是共享内存。请减少 worker 数或每个 worker 占用的内存。",
            },
            {
                "en": "Lower `num_workers` and `batch_size`, avoid large Python lists in the Dataset "
                "(store numpy arrays instead), and check `dmesg` for `Out of memory: Killed "
                "process`.",
                "zh": "减小 `num_workers` 和 `batch_size`，避免在 Dataset 中保存大型 Python 列表（改用 "
                "numpy 数组），并用 `dmesg` 查看是否有 `Out of memory: Killed process`。",
            },
            killed.groupdict(),
        )
    if _EXITED in block.message and not report.once(_other_errors):
        return Clue(
            0.35,
            {
                "en": "A DataLoader worker exited without a Python error; full shared memory "
                "(/dev/shm) is a common cause, a crash in a C extension or the OOM killer are "
                "others. Run with `num_workers=0` to see the real error.",
                "zh": "DataLoader 的 worker 没有抛出 Python 异常就退出了；常见原因是共享内存（/dev/shm）"
                "已满，也可能是 C 扩展崩溃或被 OOM killer 杀掉。用 `num_workers=0` 运行可看到真正的错误。",
            },
            {
                "en": "Run once with `num_workers=0`: if it then works, raise the shared memory "
                "(Docker: `--shm-size=8g` or `--ipc=host`) or lower `num_workers`.",
                "zh": "先用 `num_workers=0` 运行一次：如果这样能正常运行，就增大共享内存（Docker："
                "`--shm-size=8g` 或 `--ipc=host`）或减小 `num_workers`。",
            },
        )
    return None


def _other_errors(report) -> bool:
    """An exception besides the DataLoader's own "worker exited" ones: it says why."""
    return any("DataLoader worker" not in block.message for block in report.exceptions)


# ---- at run time -------------------------------------------------------------------------------

SHM_PATH = "/dev/shm"
# Testing hook: a number of bytes taken as the free space of SHM_PATH (a test cannot mount a
# small tmpfs). Not meant for users.
SHM_FREE_ENV = "TORCHDOCTOR_SHM_FREE"


def shm_free() -> int | None:
    """Free bytes of the shared-memory filesystem; None where there is none (macOS, Windows)."""
    override = os.environ.get(SHM_FREE_ENV, "")
    if override.isdigit():
        return int(override)
    try:
        return shutil.disk_usage(SHM_PATH).free
    except OSError:
        return None


@PITFALL.monitor
class SharedMemoryTooSmall(Monitor):
    """Batches in flight from the workers larger than the free shared memory: reported at the
    first batch, before a worker touches a page past the end and dies of SIGBUS.

    Workers hand batches over in shared memory; up to `num_workers * prefetch_factor` of them
    are in flight. The first batch's tensor bytes (the batch the user's loop receives, never
    one fetched by the doctor) times that is compared with the free space of /dev/shm plus the
    batch already there. Once per loader."""

    def on_first_batch(self, loader, batch) -> None:
        workers = loader.num_workers
        if workers <= 0:
            return
        size = _tensor_bytes(batch)
        free = shm_free()
        if not size or free is None:
            return
        prefetch = loader.prefetch_factor or 2
        in_flight = size * workers * prefetch
        if in_flight <= free + size:  # this batch is already in shared memory
            return
        self.report(
            id(loader),
            "runtime",
            batches=workers * prefetch,
            batch=_bytes(size),
            workers=workers,
            prefetch=prefetch,
            total=_bytes(in_flight),
            path=SHM_PATH,
            free=_bytes(free),
        )


def _tensor_bytes(batch, depth: int = 0) -> int:
    """Bytes of the tensors in a (nested) batch: one multiplication per tensor."""
    if hasattr(batch, "element_size") and hasattr(batch, "numel"):
        return batch.element_size() * batch.numel()
    if depth > 3:
        return 0
    if isinstance(batch, dict):
        batch = list(batch.values())
    if isinstance(batch, (list, tuple)):
        return sum(_tensor_bytes(item, depth + 1) for item in batch[:1000])
    return 0


def _bytes(count: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} GB"
