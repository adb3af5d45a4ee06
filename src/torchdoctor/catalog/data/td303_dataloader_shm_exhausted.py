"""TD303 dataloader-shm-exhausted: DataLoader workers run out of shared memory (/dev/shm)."""
from __future__ import annotations

import re

from torchdoctor.catalog._model import Clue, Pitfall

PITFALL = Pitfall(
    code="TD303",
    name="dataloader-shm-exhausted",
    title={"en": "DataLoader workers ran out of shared memory (/dev/shm)",
           "zh": "DataLoader 的 worker 进程耗尽了共享内存（/dev/shm）"},
    messages={"": {
        "en": "a DataLoader worker crashed with a bus error: the shared memory (/dev/shm) that "
              "carries batches from the workers to the main process is full",
        "zh": "DataLoader 的 worker 因总线错误（bus error）崩溃：在 worker 与主进程之间传递 batch "
              "的共享内存（/dev/shm）已满",
    }},
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

## Example
```python
import torch
from torch.utils.data import DataLoader, TensorDataset

# run inside `docker run --gpus all image python train.py` (64 MB of /dev/shm)
dataset = TensorDataset(torch.randn(10_000, 3, 224, 224))
loader = DataLoader(dataset, batch_size=64, num_workers=8)
for (images,) in loader:
    pass
```

## Use instead:
```python
import torch
from torch.utils.data import DataLoader, TensorDataset

# run with `docker run --gpus all --shm-size=8g image python train.py` (or --ipc=host)
dataset = TensorDataset(torch.randn(10_000, 3, 224, 224))
loader = DataLoader(dataset, batch_size=64, num_workers=8)
for (images,) in loader:
    pass
```

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

## Example
```python
import torch
from torch.utils.data import DataLoader, TensorDataset

# run inside `docker run --gpus all image python train.py` (64 MB of /dev/shm)
dataset = TensorDataset(torch.randn(10_000, 3, 224, 224))
loader = DataLoader(dataset, batch_size=64, num_workers=8)
for (images,) in loader:
    pass
```

## Use instead:
```python
import torch
from torch.utils.data import DataLoader, TensorDataset

# run with `docker run --gpus all --shm-size=8g image python train.py` (or --ipc=host)
dataset = TensorDataset(torch.randn(10_000, 3, 224, 224))
loader = DataLoader(dataset, batch_size=64, num_workers=8)
for (images,) in loader:
    pass
```

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

## References
- PyTorch issue #5040（bus error 报错信息的由来）以及 `docker run --shm-size` 的文档。
""",
    },
)

PITFALL.error(
    r"DataLoader worker \(pid (?P<pid>\d+)\) is killed by signal: Bus error",
    types=(), confidence=0.95,
    cause={"en": "DataLoader worker {pid} died of SIGBUS: the shared memory (/dev/shm) that "
                 "carries batches to the main process is full, typical of a Docker container "
                 "started without `--shm-size`.",
           "zh": "DataLoader 的 worker {pid} 因 SIGBUS 退出：在 worker 与主进程之间传递 batch 的共享内存"
                 "（/dev/shm）已满，这在未指定 `--shm-size` 启动的 Docker 容器中很常见。"})
PITFALL.error(
    r"Unexpected bus error encountered in worker\. This might be caused by insufficient "
    r"shared memory \(shm\)",
    types=(), confidence=0.95,
    cause={"en": "A DataLoader worker hit a bus error while writing a batch into shared memory: "
                 "/dev/shm is too small for num_workers x prefetch_factor batches.",
           "zh": "DataLoader 的 worker 在把 batch 写入共享内存时遇到总线错误：/dev/shm 容纳不下 "
                 "num_workers x prefetch_factor 个 batch。"})
PITFALL.error(
    r"unable to write to file <(?P<handle>/?torch_[\w]+)>: No space left on device",
    types=(), confidence=0.9,
    cause={"en": "Writing a batch into shared memory ({handle}) failed because /dev/shm is "
                 "full.",
           "zh": "把 batch 写入共享内存（{handle}）失败：/dev/shm 已满。"})

# A bare crash line with nothing around it: a guess, SIGBUS has other causes.
PITFALL.error(
    r"(?m)^Bus error \(core dumped\)", types=(), confidence=0.4,
    cause={"en": "A process died of SIGBUS. In training scripts that is most often a DataLoader "
                 "worker writing into a full /dev/shm (shared memory).",
           "zh": "某个进程因 SIGBUS 退出。在训练脚本中，最常见的原因是 DataLoader 的 worker "
                 "向已满的 /dev/shm（共享内存）写入数据。"})

_BUS_ERROR = re.compile(r"(?m)^.{0,80}\bBus error\b")
_LOADER_CONTEXT = re.compile(r"DataLoader|dataloader|num_workers|_worker_loop")
_KILLED = re.compile(r"DataLoader worker \(pid (?P<pid>\d+)\) is killed by signal: Killed")
_EXITED = "exited unexpectedly"


@PITFALL.error_check(types=())
def bus_error_in_loader(block, report) -> Clue | None:
    """`Bus error (core dumped)` or "worker exited unexpectedly" next to a DataLoader: shm;
    "killed by signal: Killed" is the out-of-memory killer, shown only as a weak guess."""
    text = report.text or block.message
    if not _LOADER_CONTEXT.search(text):
        return None
    if _BUS_ERROR.search(block.message) or (_EXITED in block.message and _BUS_ERROR.search(text)):
        return Clue(0.85, {
            "en": "A DataLoader worker crashed with a bus error: most likely /dev/shm, which "
                  "carries batches from the workers, is full.",
            "zh": "DataLoader 的 worker 因总线错误崩溃：最可能是用于传递 batch 的 /dev/shm 已满。",
        })
    killed = _KILLED.search(block.message)
    if killed is not None:
        return Clue(0.35, {
            "en": "Worker {pid} was killed by SIGKILL, usually the kernel's out-of-memory "
                  "killer: the machine ran out of RAM (not shared memory). Use fewer workers or "
                  "less memory per worker.",
            "zh": "worker {pid} 被 SIGKILL 杀掉，通常是内核的 OOM killer：机器的内存（RAM）耗尽了，"
                  "而不是共享内存。请减少 worker 数或每个 worker 占用的内存。",
        }, {
            "en": "Lower `num_workers` and `batch_size`, avoid large Python lists in the Dataset "
                  "(store numpy arrays instead), and check `dmesg` for `Out of memory: Killed "
                  "process`.",
            "zh": "减小 `num_workers` 和 `batch_size`，避免在 Dataset 中保存大型 Python 列表（改用 "
                  "numpy 数组），并用 `dmesg` 查看是否有 `Out of memory: Killed process`。",
        }, killed.groupdict())
    if _EXITED in block.message and not _other_errors(report):
        return Clue(0.35, {
            "en": "A DataLoader worker exited without a Python error; full shared memory "
                  "(/dev/shm) is a common cause, a crash in a C extension or the OOM killer are "
                  "others. Run with `num_workers=0` to see the real error.",
            "zh": "DataLoader 的 worker 没有抛出 Python 异常就退出了；常见原因是共享内存（/dev/shm）"
                  "已满，也可能是 C 扩展崩溃或被 OOM killer 杀掉。用 `num_workers=0` 运行可看到真正的错误。",
        }, {
            "en": "Run once with `num_workers=0`: if it then works, raise the shared memory "
                  "(Docker: `--shm-size=8g` or `--ipc=host`) or lower `num_workers`.",
            "zh": "先用 `num_workers=0` 运行一次：如果这样能正常运行，就增大共享内存（Docker："
                  "`--shm-size=8g` 或 `--ipc=host`）或减小 `num_workers`。",
        })
    return None


def _other_errors(report) -> bool:
    """An exception besides the DataLoader's own "worker exited" ones: it says why."""
    return any("DataLoader worker" not in block.message for block in report.exceptions)
