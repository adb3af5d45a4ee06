"""TD008 cuda-illegal-memory-access: a CUDA kernel read or wrote outside its memory."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Pitfall

PITFALL = Pitfall(
    code="TD008",
    name="cuda-illegal-memory-access",
    title={"en": "CUDA illegal memory access", "zh": "CUDA 非法内存访问"},
    messages={
        "": {
            "en": "a CUDA kernel accessed memory it does not own; the traceback may point at a later "
            "line, and the process must be restarted",
            "zh": "某个 CUDA 内核访问了不属于它的显存；调用栈可能指向后面的某一行，并且进程必须重启",
        }
    },
    fix_hint={
        "en": "Rerun with `CUDA_LAUNCH_BLOCKING=1` to find the failing operation, then check its "
        "inputs: indices in range, `.contiguous()` tensors passed to custom CUDA "
        "extensions, all tensors on the same GPU. `compute-sanitizer python train.py` "
        "names the faulty kernel; if it is inside PyTorch, update torch and the driver.",
        "zh": "设置 `CUDA_LAUNCH_BLOCKING=1` 重新运行，找到出错的运算，再检查它的输入：索引是否越界，"
        "传给自定义 CUDA 扩展的张量是否 `.contiguous()`，所有张量是否在同一块 GPU 上。"
        "`compute-sanitizer python train.py` 能指出出错的内核；如果它在 PyTorch 内部，"
        "请升级 torch 和显卡驱动。",
    },
    docs={
        "en": """
## What it catches
`an illegal memory access was encountered`: a CUDA kernel read or wrote an address outside the
memory it was given.

## Why is this bad?
Unlike a device-side assert, nothing checked the access: the kernel simply went out of
bounds. Like every CUDA error, it is reported asynchronously, at a later call, and leaves the
CUDA context unusable. In PyTorch programs the usual causes are:

- custom CUDA extensions (detection/point-cloud ops, fused kernels) given non-contiguous
  tensors, tensors of another dtype than they were written for, or built for another GPU
  architecture or torch version;
- indices out of range in operations that do not check them, or int32 overflow in very large
  tensors;
- a tensor on one GPU used by a kernel running on another (`torch.cuda.set_device` not called
  in a multi-GPU process);
- bugs in PyTorch, cuDNN or the driver, fixed by upgrading.

## Symptoms
`RuntimeError: CUDA error: an illegal memory access was encountered` followed by `CUDA kernel
errors might be asynchronously reported at some other API call`; older versions:
`cuda runtime error (77) : an illegal memory access was encountered at
/pytorch/aten/src/THC/...`; in C++ logs `cudaErrorIllegalAddress`; after it, unrelated calls
fail with `CUBLAS_STATUS_EXECUTION_FAILED` or `CUDNN_STATUS_MAPPING_ERROR`.

## References
- https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution
- https://docs.nvidia.com/compute-sanitizer/ComputeSanitizer/index.html
""",
        "zh": """
## What it catches
`an illegal memory access was encountered`：某个 CUDA 内核读写了它所分配内存之外的地址。

## Why is this bad?
和 device-side assert 不同，这次访问没有经过任何检查：内核直接越界了。与所有 CUDA 错误一样，它是异步报告的，
出现在之后的某次调用中，并且会让 CUDA 上下文无法再使用。在 PyTorch 程序里，常见原因有：

- 自定义 CUDA 扩展（检测、点云算子、融合内核）收到了非连续的张量、与编写时不同 dtype 的张量，
  或者扩展是针对别的 GPU 架构或 torch 版本编译的；
- 在不做检查的运算中索引越界，或者超大张量中的 int32 溢出；
- 一块 GPU 上的张量被运行在另一块 GPU 上的内核使用（多 GPU 进程中没有调用 `torch.cuda.set_device`）；
- PyTorch、cuDNN 或驱动本身的 bug，升级即可解决。

## Symptoms
`RuntimeError: CUDA error: an illegal memory access was encountered`，随后是 `CUDA kernel errors
might be asynchronously reported at some other API call`；旧版本：`cuda runtime error (77) : an
illegal memory access was encountered at /pytorch/aten/src/THC/...`；C++ 日志中的
`cudaErrorIllegalAddress`；在它之后，无关的调用也会报 `CUBLAS_STATUS_EXECUTION_FAILED` 或
`CUDNN_STATUS_MAPPING_ERROR`。

## References
- https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution
- https://docs.nvidia.com/compute-sanitizer/ComputeSanitizer/index.html
""",
    },
    example="""
import torch

def scores(features, index, kernel):
    return kernel(features.t(), index)
""",
    use_instead="""
import torch

def scores(features, index, kernel):
    features = features.t().contiguous()
    assert index.max() < features.shape[0], "index out of range"
    return kernel(features, index)
""",
)

_CAUSE = {
    "en": "A CUDA kernel accessed memory outside its tensors. Usually a custom CUDA extension "
    "given non-contiguous or wrongly typed tensors, an unchecked index out of range, or "
    "tensors of two GPUs mixed; the traceback may point at a later line because the "
    "error is reported asynchronously.",
    "zh": "某个 CUDA 内核访问了张量之外的显存。通常是自定义 CUDA 扩展收到了非连续或类型不对的张量、"
    "未经检查的索引越界，或者混用了两块 GPU 上的张量；由于错误是异步报告的，调用栈可能指向后面的某一行。",
}

PITFALL.error(
    r"an illegal memory access was encountered|cudaErrorIllegalAddress",
    types=(),
    # What the error means, not which of its causes: in the held-out threads about half of
    # these were a library's or a driver's bug, none of the causes named here.
    confidence=0.6,
    cause=_CAUSE,
)
# Retold in a title or prose (`deform_conv2d causes CUDA illegal memory access`): the same
# error in the user's words, with no more said about its cause.
PITFALL.error(r"\bCUDA illegal memory access", types=(), confidence=0.55, cause=_CAUSE)
PITFALL.error(
    r"CUDA error: misaligned address|cudaErrorMisalignedAddress",
    types=(),
    confidence=0.7,
    cause={
        "en": "A CUDA kernel read memory at an address not aligned for its data "
        "type: usually a custom kernel or extension given a tensor view "
        "with an odd offset or stride (call `.contiguous()` first).",
        "zh": "某个 CUDA 内核读取的地址没有按其数据类型对齐：通常是自定义内核或扩展收到了"
        "偏移或步长不规整的张量视图（先调用 `.contiguous()`）。",
    },
)
