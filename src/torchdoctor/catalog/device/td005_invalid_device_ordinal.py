"""TD005 invalid-device-ordinal: a GPU index that this process cannot see."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Pitfall

PITFALL = Pitfall(
    code="TD005",
    name="invalid-device-ordinal",
    title={
        "en": "GPU index beyond the GPUs this process can see",
        "zh": "GPU 编号超出了当前进程可见的 GPU 范围",
    },
    messages={
        "": {
            "en": "the code asks for a GPU number (`cuda:1`, `.cuda(2)`, `device_ids=[...]`) that "
            "does not exist in this process: GPUs are numbered from 0 among the visible ones",
            "zh": "代码请求的 GPU 编号（`cuda:1`、`.cuda(2)`、`device_ids=[...]`）在当前进程中不存在："
            "GPU 是在可见设备中从 0 开始编号的",
        }
    },
    fix_hint={
        "en": "Use an index below `torch.cuda.device_count()`: with "
        "`CUDA_VISIBLE_DEVICES=2` the only GPU is `cuda:0`. Take the device from "
        "`LOCAL_RANK` under torchrun, and launch no more processes per node than GPUs.",
        "zh": "使用小于 `torch.cuda.device_count()` 的编号：设置 `CUDA_VISIBLE_DEVICES=2` 后，"
        "唯一的 GPU 就是 `cuda:0`。用 torchrun 时从 `LOCAL_RANK` 取设备编号，"
        "每个节点启动的进程数不要超过 GPU 数。",
    },
    docs={
        "en": """
## What it catches
The error CUDA gives when a program selects a GPU number that this process does not have:
`torch.device("cuda:1")` or `.cuda(1)` on a one-GPU machine, `torch.cuda.set_device(rank)`
with more processes than GPUs, `nn.DataParallel(model, device_ids=[0, 1, 2, 3])` copied from
a bigger server, or a checkpoint's device index used as is.

## Why is this bad?
GPU numbers are not global: they count the GPUs visible to the process, from 0.
`CUDA_VISIBLE_DEVICES=3 python train.py` leaves exactly one GPU, and it is `cuda:0`, not
`cuda:3`. Hard-coded indices therefore break as soon as the script runs on another machine,
under a scheduler that sets `CUDA_VISIBLE_DEVICES`, or with `--nproc_per_node` larger than the
number of GPUs.

## Symptoms
`RuntimeError: CUDA error: invalid device ordinal` (often followed by `CUDA kernel errors might
be asynchronously reported at some other API call`); older versions:
`cuda runtime error (10) : invalid device ordinal at /pytorch/aten/src/THC/THCGeneral.cpp`,
`CUDA error (10): invalid device ordinal`;
`RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED`;
`AssertionError: Invalid device id` from `nn.DataParallel`.

## References
- https://pytorch.org/docs/stable/notes/cuda.html#cuda-semantics
- https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars
""",
        "zh": """
## What it catches
程序选择了当前进程没有的 GPU 编号时 CUDA 报出的错误：在单卡机器上写 `torch.device("cuda:1")` 或
`.cuda(1)`，进程数多于 GPU 数时调用 `torch.cuda.set_device(rank)`，从多卡服务器上照搬来的
`nn.DataParallel(model, device_ids=[0, 1, 2, 3])`，或者直接沿用 checkpoint 里记录的设备编号。

## Why is this bad?
GPU 编号不是全局的：它是对当前进程可见的 GPU 从 0 开始计数的。
`CUDA_VISIBLE_DEVICES=3 python train.py` 只留下一块 GPU，它的编号是 `cuda:0` 而不是 `cuda:3`。
因此写死的编号一换机器就会出错，在会设置 `CUDA_VISIBLE_DEVICES` 的作业调度系统下、或者
`--nproc_per_node` 大于 GPU 数时也会出错。

## Symptoms
`RuntimeError: CUDA error: invalid device ordinal`（后面常跟着 `CUDA kernel errors might be
asynchronously reported at some other API call`）；旧版本：
`cuda runtime error (10) : invalid device ordinal at /pytorch/aten/src/THC/THCGeneral.cpp`、
`CUDA error (10): invalid device ordinal`；
`RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED`；
`nn.DataParallel` 报出的 `AssertionError: Invalid device id`。

## References
- https://pytorch.org/docs/stable/notes/cuda.html#cuda-semantics
- https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars
""",
    },
    example="""
import torch
import torch.nn as nn

device = torch.device("cuda:1")
model = nn.Linear(10, 2).to(device)
""",
    use_instead="""
import os

import torch
import torch.nn as nn

local_rank = int(os.environ.get("LOCAL_RANK", 0))
device = torch.device("cuda", local_rank % torch.cuda.device_count())
model = nn.Linear(10, 2).to(device)
""",
)

_CAUSE = {
    "en": "The code selects a GPU index that this process does not have: a hard-coded "
    "`cuda:1`/`.cuda(1)`/`device_ids`, a rank used as a device with more processes than "
    "GPUs, or `CUDA_VISIBLE_DEVICES` leaving fewer GPUs (renumbered from 0) than the "
    "code expects.",
    "zh": "代码选择了当前进程没有的 GPU 编号：写死的 `cuda:1`/`.cuda(1)`/`device_ids`，进程数多于 GPU "
    "数时把 rank 当作设备编号，或者 `CUDA_VISIBLE_DEVICES` 留下的 GPU（从 0 重新编号）比代码"
    "预期的少。",
}

PITFALL.error(r"invalid device ordinal", types=(), confidence=0.95, cause=_CAUSE)
PITFALL.error(r"device >= 0 && device < num_gpus", types=(), confidence=0.9, cause=_CAUSE)
PITFALL.error(
    r"^Invalid device id",
    types=("AssertionError",),
    confidence=0.85,
    cause={
        "en": "`nn.DataParallel` got a `device_ids` entry that is not among the "
        "visible GPUs (`torch.cuda.device_count()`).",
        "zh": "`nn.DataParallel` 的 `device_ids` 里有不在可见 GPU 范围"
        "（`torch.cuda.device_count()`）内的编号。",
    },
    fix={
        "en": "Drop `device_ids` to use every visible GPU, or list only indices "
        "below `torch.cuda.device_count()`.",
        "zh": "去掉 `device_ids`，使用所有可见的 GPU；或者只列出小于 "
        "`torch.cuda.device_count()` 的编号。",
    },
)
