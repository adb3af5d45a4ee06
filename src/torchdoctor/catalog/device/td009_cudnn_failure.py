"""TD009 cudnn-failure: a cuDNN call failed (CUDNN_STATUS_*), usually for a reason outside cuDNN."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Pitfall

PITFALL = Pitfall(
    code="TD009",
    name="cudnn-failure",
    title={"en": "cuDNN call failed (CUDNN_STATUS_*)", "zh": "cuDNN 调用失败（CUDNN_STATUS_*）"},
    messages={
        "": {
            "en": "a cuDNN convolution, RNN or normalization failed; the status names the symptom, "
            "the cause is usually memory, the input, or the installation",
            "zh": "cuDNN 的卷积、RNN 或归一化运算失败了；状态码只描述了现象，原因通常在显存、输入或安装环境",
        }
    },
    fix_hint={
        "en": "Set `torch.backends.cudnn.enabled = False` once to see PyTorch's own, clearer "
        "error for the same input; then check free GPU memory (`nvidia-smi`), make inputs "
        "`.contiguous()`, and make sure the installed torch build supports this GPU and "
        "driver (`python -m torch.utils.collect_env`).",
        "zh": "先临时设置 `torch.backends.cudnn.enabled = False`，看看同样的输入下 PyTorch 自己报出的、"
        "更清楚的错误；然后检查剩余显存（`nvidia-smi`），把输入变成 `.contiguous()`，并确认安装的 "
        "torch 版本支持这块 GPU 和驱动（`python -m torch.utils.collect_env`）。",
    },
    docs={
        "en": """
## What it catches
Errors reported by cuDNN, the NVIDIA library behind PyTorch's GPU convolutions, RNNs and
batch normalization: `CUDNN_STATUS_INTERNAL_ERROR`, `CUDNN_STATUS_EXECUTION_FAILED`,
`CUDNN_STATUS_NOT_SUPPORTED`, `CUDNN_STATUS_BAD_PARAM`, `CUDNN_STATUS_MAPPING_ERROR`,
`CUDNN_STATUS_NOT_INITIALIZED`, `CUDNN_STATUS_ALLOC_FAILED`, and `Unable to find a valid
cuDNN algorithm to run convolution`.

## Why is this bad?
The status says where cuDNN gave up, rarely why. By status, the usual reasons are:

- `INTERNAL_ERROR`, `ALLOC_FAILED`, `NOT_INITIALIZED`, `Unable to find a valid cuDNN
  algorithm`: not enough GPU memory for cuDNN's workspace (an out-of-memory in disguise,
  often with another process on the GPU), or a torch/CUDA/driver combination that does not
  support this GPU;
- `EXECUTION_FAILED`, `MAPPING_ERROR`: an earlier asynchronous CUDA error (an index out of
  range, an illegal memory access) surfacing in cuDNN, tensors on a different GPU than the
  current device, or a driver too old for the installed CUDA;
- `NOT_SUPPORTED`, `BAD_PARAM`: an input cuDNN cannot handle: non-contiguous, a dtype it does
  not support for this operation, a batch too large for 32-bit indexing, an RNN input with
  the wrong shape or hidden state.

## Symptoms
`RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR`, `cuDNN error:
CUDNN_STATUS_EXECUTION_FAILED`, `cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear
if you passed in a non-contiguous input.`, `cuDNN error: CUDNN_STATUS_MAPPING_ERROR`,
`Unable to find a valid cuDNN algorithm to run convolution`, `GET was unable to find an engine
to execute this computation`; older versions:
`RuntimeError: CUDNN_STATUS_INTERNAL_ERROR`, `CuDNNError: 8: b'CUDNN_STATUS_EXECUTION_FAILED'`.

## References
- https://pytorch.org/docs/stable/backends.html#torch.backends.cudnn.enabled
- https://docs.nvidia.com/deeplearning/cudnn/latest/api/overview.html#cudnnstatus-t
""",
        "zh": """
## What it catches
cuDNN 报出的错误。cuDNN 是 PyTorch 在 GPU 上做卷积、RNN 和 batch normalization 时所用的 NVIDIA 库：
`CUDNN_STATUS_INTERNAL_ERROR`、`CUDNN_STATUS_EXECUTION_FAILED`、`CUDNN_STATUS_NOT_SUPPORTED`、
`CUDNN_STATUS_BAD_PARAM`、`CUDNN_STATUS_MAPPING_ERROR`、`CUDNN_STATUS_NOT_INITIALIZED`、
`CUDNN_STATUS_ALLOC_FAILED`，以及 `Unable to find a valid cuDNN algorithm to run convolution`。

## Why is this bad?
状态码只说明 cuDNN 在哪里放弃了，很少说明原因。按状态码，常见原因是：

- `INTERNAL_ERROR`、`ALLOC_FAILED`、`NOT_INITIALIZED`、`Unable to find a valid cuDNN algorithm`：
  显存不够 cuDNN 分配工作区（其实是换了个说法的显存不足，常常是有其他进程占着 GPU），或者
  torch/CUDA/驱动的组合不支持这块 GPU；
- `EXECUTION_FAILED`、`MAPPING_ERROR`：之前某个异步的 CUDA 错误（索引越界、非法内存访问）在 cuDNN
  里才暴露出来，张量所在的 GPU 不是当前设备，或者驱动版本低于安装的 CUDA 所要求的版本；
- `NOT_SUPPORTED`、`BAD_PARAM`：cuDNN 处理不了的输入：非连续张量、该运算不支持的 dtype、
  超出 32 位索引范围的大 batch、形状或隐状态不对的 RNN 输入。

## Symptoms
`RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR`、`cuDNN error:
CUDNN_STATUS_EXECUTION_FAILED`、`cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear
if you passed in a non-contiguous input.`、`cuDNN error: CUDNN_STATUS_MAPPING_ERROR`、
`Unable to find a valid cuDNN algorithm to run convolution`、`GET was unable to find an engine
to execute this computation`；旧版本：
`RuntimeError: CUDNN_STATUS_INTERNAL_ERROR`、`CuDNNError: 8: b'CUDNN_STATUS_EXECUTION_FAILED'`。

## References
- https://pytorch.org/docs/stable/backends.html#torch.backends.cudnn.enabled
- https://docs.nvidia.com/deeplearning/cudnn/latest/api/overview.html#cudnnstatus-t
""",
    },
    example="""
import torch
import torch.nn as nn

conv = nn.Conv2d(3, 64, 3).cuda()
images = torch.randn(8, 224, 224, 3, device="cuda").permute(0, 3, 1, 2)
features = conv(images)
""",
    use_instead="""
import torch
import torch.nn as nn

conv = nn.Conv2d(3, 64, 3).cuda()
images = torch.randn(8, 224, 224, 3, device="cuda").permute(0, 3, 1, 2).contiguous()
features = conv(images)
""",
)

_MEMORY_OR_INSTALL = (
    {
        "en": "cuDNN failed with {status}. Most often it could not get GPU memory for its "
        "workspace (an out-of-memory in disguise; another process may hold the GPU), or the "
        "installed torch/CUDA/cuDNN build does not support this GPU or driver.",
        "zh": "cuDNN 以 {status} 失败。最常见的是它拿不到工作区所需的显存（其实是换了个说法的显存不足，"
        "可能有其他进程占着 GPU），或者安装的 torch/CUDA/cuDNN 版本不支持这块 GPU 或驱动。",
    },
    {
        "en": "Lower the batch size and check `nvidia-smi` for other processes; if memory is "
        "plentiful, install a torch build for this GPU's CUDA version and driver. "
        "`torch.backends.cudnn.benchmark = False` also lowers workspace needs.",
        "zh": "减小 batch size，用 `nvidia-smi` 查看有没有其他进程；如果显存充足，就安装与这块 GPU 的 CUDA "
        "版本和驱动匹配的 torch。`torch.backends.cudnn.benchmark = False` 也能减少工作区的需求。",
    },
)
_EARLIER_ERROR = (
    {
        "en": "cuDNN failed with {status} while running a kernel. Usually an earlier asynchronous "
        "CUDA error surfacing here (an index out of range, an illegal memory access), "
        "tensors on another GPU than the current device, or a driver too old for the "
        "installed CUDA.",
        "zh": "cuDNN 在执行内核时以 {status} 失败。通常是之前某个异步的 CUDA 错误在这里才暴露出来"
        "（索引越界、非法内存访问），张量所在的 GPU 不是当前设备，或者驱动版本低于安装的 CUDA "
        "所要求的版本。",
    },
    {
        "en": "Rerun with `CUDA_LAUNCH_BLOCKING=1` (or with `torch.backends.cudnn.enabled = False`) "
        "to see the first real error; call `torch.cuda.set_device(rank)` in multi-GPU "
        "processes; update the NVIDIA driver.",
        "zh": "设置 `CUDA_LAUNCH_BLOCKING=1`（或 `torch.backends.cudnn.enabled = False`）重新运行，"
        "找到第一个真正的错误；多 GPU 进程中调用 `torch.cuda.set_device(rank)`；更新 NVIDIA 驱动。",
    },
)
_BAD_INPUT = (
    {
        "en": "cuDNN rejected the input with {status}: a non-contiguous tensor (after `permute`, "
        "`transpose` or slicing), a dtype it does not support here, a batch too large for "
        "32-bit indexing, or an RNN input or hidden state of the wrong shape.",
        "zh": "cuDNN 以 {status} 拒绝了输入：非连续的张量（`permute`、`transpose` 或切片之后），"
        "这里不支持的 dtype，超出 32 位索引范围的大 batch，或者形状不对的 RNN 输入或隐状态。",
    },
    {
        "en": "Pass `.contiguous()` inputs, split very large batches, check the RNN's input "
        "`(seq, batch, feature)` (or `batch_first=True`) and `h0` shapes; "
        "`torch.backends.cudnn.enabled = False` shows PyTorch's own error.",
        "zh": "传入 `.contiguous()` 的张量，拆分超大的 batch，检查 RNN 的输入 `(seq, batch, feature)`"
        "（或 `batch_first=True`）和 `h0` 的形状；`torch.backends.cudnn.enabled = False` 可以看到 "
        "PyTorch 自己的报错。",
    },
)
_STATUSES = {
    "INTERNAL_ERROR": _MEMORY_OR_INSTALL,
    "ALLOC_FAILED": _MEMORY_OR_INSTALL,
    "NOT_INITIALIZED": _MEMORY_OR_INSTALL,
    "ARCH_MISMATCH": _MEMORY_OR_INSTALL,
    "VERSION_MISMATCH": _MEMORY_OR_INSTALL,
    "EXECUTION_FAILED": _EARLIER_ERROR,
    "MAPPING_ERROR": _EARLIER_ERROR,
    "NOT_SUPPORTED": _BAD_INPUT,
    "BAD_PARAM": _BAD_INPUT,
}

for _status, (_cause, _fix) in _STATUSES.items():
    PITFALL.error(
        rf"(?P<status>CUDNN_STATUS_{_status})\b", types=(), confidence=0.9, cause=_cause, fix=_fix
    )
PITFALL.error(
    r"(?P<status>CUDNN_STATUS_[A-Z_]+)",
    types=(),
    confidence=0.85,
    cause={"en": "cuDNN failed with {status}.", "zh": "cuDNN 以 {status} 失败。"},
)
PITFALL.error(
    r"Unable to find a valid cuDNN algorithm to run convolution"
    r"|no valid convolution algorithms available in CuDNN",
    confidence=0.9,
    cause={
        "en": "cuDNN found no convolution algorithm it could run. Almost always "
        "an out-of-memory in disguise: no algorithm's workspace fits in the "
        "free GPU memory (another process may hold it); more rarely a "
        "torch/CUDA build that does not support this GPU.",
        "zh": "cuDNN 找不到能运行的卷积算法。几乎总是换了个说法的显存不足：没有哪个算法的工作区"
        "放得进剩余显存（可能有其他进程占着）；少数情况下是 torch/CUDA 版本不支持这块 GPU。",
    },
    fix=_MEMORY_OR_INSTALL[1],
)
# The cuDNN v8 API's convolutions (torch 1.12+): no engine of the loaded cuDNN runs this call.
PITFALL.error(
    r"(?:GET|FIND) was unable to find an engine to execute this computation",
    types=(),
    confidence=0.85,
    cause={
        "en": "cuDNN found no engine able to run this convolution. Most often the cuDNN that "
        "was loaded is not the one this torch build ships or expects (a system `libcudnn` "
        "package shadowing the wheel's, or cuDNN DLLs missing from `PATH` on Windows); "
        "otherwise no engine's workspace fits in the free GPU memory, or this torch/CUDA "
        "build does not support the GPU.",
        "zh": "cuDNN 找不到能运行这个卷积的引擎。最常见的是加载到的 cuDNN 不是这个 torch 版本自带或所要求的那个"
        "（系统安装的 `libcudnn` 覆盖了 wheel 自带的，或者 Windows 上 `PATH` 中缺少 cuDNN 的 DLL）；"
        "其次是剩余显存放不下任何引擎的工作区，或者这个 torch/CUDA 版本不支持这块 GPU。",
    },
    fix={
        "en": "Check which cuDNN torch loads (`torch.backends.cudnn.version()`; on Linux "
        "`ldd` or `LD_DEBUG=libs`): remove or stop preloading a system cuDNN "
        "(`apt-get remove libcudnn8`, `LD_LIBRARY_PATH`), or on Windows put the matching "
        "cuDNN DLLs on `PATH`; then check free GPU memory (`nvidia-smi`) and that the torch "
        "build supports this GPU.",
        "zh": "查看 torch 加载的是哪个 cuDNN（`torch.backends.cudnn.version()`；Linux 上用 `ldd` 或 "
        "`LD_DEBUG=libs`）：卸载或不再预加载系统的 cuDNN（`apt-get remove libcudnn8`、"
        "`LD_LIBRARY_PATH`），Windows 上把匹配的 cuDNN DLL 放进 `PATH`；再检查剩余显存"
        "（`nvidia-smi`），并确认 torch 版本支持这块 GPU。",
    },
)
PITFALL.error(
    r"cuDNN Frontend error",
    types=(),
    confidence=0.8,
    cause={
        "en": "cuDNN's graph API found no way to run this operation for these "
        "shapes and dtypes (often attention with an unusual head size or "
        "dtype).",
        "zh": "cuDNN 的图 API 找不到能在这些形状和 dtype 下运行该运算的方式（常见于 head "
        "大小或 dtype 不常见的注意力运算）。",
    },
    fix={
        "en": "Disable cuDNN for it (`torch.backends.cudnn.enabled = False`, or "
        "`torch.backends.cuda.enable_cudnn_sdp(False)` for attention) or "
        "update torch.",
        "zh": "为它禁用 cuDNN（`torch.backends.cudnn.enabled = False`，注意力运算可用 "
        "`torch.backends.cuda.enable_cudnn_sdp(False)`），或者升级 torch。",
    },
)
