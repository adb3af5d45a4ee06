"""TD413 conv-input-channels-last: an NHWC image batch fed to a convolution that reads NCHW."""

from __future__ import annotations


from torchdoctor.catalog.sdk import Clue, Pitfall
from torchdoctor.catalog.tensor._conv_channels import channel_mismatch

PITFALL = Pitfall(
    code="TD413",
    name="conv-input-channels-last",
    title={
        "en": "Channels-last (NHWC) image given to a convolution that expects NCHW",
        "zh": "把通道在最后（NHWC）的图像直接送进要求 NCHW 的卷积层",
    },
    messages={
        "": {
            "en": "the convolution reads dimension 1 as channels, but the input has its channels "
            "last: permute it to NCHW first",
            "zh": "卷积层把第 1 维当作通道，而输入的通道在最后一维：请先把它转换为 NCHW",
        }
    },
    fix_hint={
        "en": "Move the channels to dimension 1: `x = x.permute(0, 3, 1, 2)` for a batch of "
        "HWC images (or convert each image with `torchvision.transforms.ToTensor()`, "
        "which does it for you).",
        "zh": "把通道移到第 1 维：对一批 HWC 图像用 `x = x.permute(0, 3, 1, 2)`"
        "（或者对每张图像使用 `torchvision.transforms.ToTensor()`，它会自动完成这一步）。",
    },
    docs={
        "en": """
## What it catches
A batch of images laid out as `[N, H, W, C]`, the layout of numpy arrays, OpenCV and PIL
images and TensorFlow code, passed to an `nn.Conv1d/2d/3d` that reads its input as
`[N, C, H, W]`. The convolution then takes the image height as the number of channels. The
other shape errors of a convolution (a grayscale image into an RGB model, a missing batch
dimension) are `conv-input-shape-mismatch`.

## Why is this bad?
PyTorch convolutions always read dimension 1 as channels. Image libraries keep the channels
last, and `torch.from_numpy` keeps whatever layout the array had: it never reorders
dimensions. `transforms.ToTensor()` does reorder them (HWC -> CHW), so code that builds tensors
by hand from numpy or OpenCV is where this appears.

## Symptoms
`RuntimeError: Given groups=1, weight of size [64, 3, 7, 7], expected input[8, 224, 224, 3]
to have 3 channels, but got 224 channels instead` (the last number of `input[...]` equals the
expected channel count: the input is channels-last).

## Known problems
When the image height happens to equal the channel count the message cannot tell the layouts
apart. A permuted tensor is not contiguous; that is fine for convolutions, but a later
`.view()` on it may need `.contiguous()` or `.reshape()`.
""",
        "zh": """
## What it catches
按 `[N, H, W, C]` 排布的一批图像——这是 numpy 数组、OpenCV 和 PIL 图像以及 TensorFlow 代码的排布——
被直接送进按 `[N, C, H, W]` 读取输入的 `nn.Conv1d/2d/3d`，于是卷积层把图像高度当成了通道数。
卷积层的其他形状错误（灰度图送进 RGB 模型、缺少 batch 维）见 `conv-input-shape-mismatch`。

## Why is this bad?
PyTorch 的卷积层总是把第 1 维当作通道。图像库都把通道放在最后，而 `torch.from_numpy` 保持数组原有的排布，
从不调整维度顺序。`transforms.ToTensor()` 会做 HWC -> CHW 的转换，所以这个问题多出现在直接用 numpy
或 OpenCV 手工构造张量的代码里。

## Symptoms
`RuntimeError: Given groups=1, weight of size [64, 3, 7, 7], expected input[8, 224, 224, 3]
to have 3 channels, but got 224 channels instead`（`input[...]` 的最后一个数恰好等于期望的通道数：
输入是通道在后的排布）。

## Known problems
如果图像高度恰好等于通道数，仅凭报错无法区分两种排布。permute 之后的张量不再连续；卷积不受影响，
但之后对它调用 `.view()` 可能需要先 `.contiguous()` 或改用 `.reshape()`。
""",
    },
    example="""
import numpy as np
import torch
import torch.nn as nn

conv = nn.Conv2d(3, 64, kernel_size=7)
images = np.random.rand(8, 224, 224, 3).astype(np.float32)  # N, H, W, C
out = conv(torch.from_numpy(images))
""",
    use_instead="""
import numpy as np
import torch
import torch.nn as nn

conv = nn.Conv2d(3, 64, kernel_size=7)
images = np.random.rand(8, 224, 224, 3).astype(np.float32)
out = conv(torch.from_numpy(images).permute(0, 3, 1, 2))  # N, C, H, W
""",
)

# The dimension order that brings the last dimension to position 1, by input rank.
_TO_CHANNELS_FIRST = {3: "permute(0, 2, 1)", 4: "permute(0, 3, 1, 2)", 5: "permute(0, 4, 1, 2, 3)"}


@PITFALL.error_check(types=(), words=("channels instead",))
def channel_count(block, report) -> Clue | None:
    """`expected input[1, 224, 224, 3] to have 3 channels, but got 224`: channels-last when the
    last input size is the expected channel count (any other count: conv-input-shape-mismatch)."""
    found = channel_mismatch(block.message)
    if found is None:
        return None
    fields, sizes = found
    expected, got = int(fields["expected"]), int(fields["got"])
    if sizes[-1] == expected != got and len(sizes) in _TO_CHANNELS_FIRST:
        fields["permute"] = _TO_CHANNELS_FIRST[len(sizes)]
        return Clue(0.95, _NHWC_CAUSE, _NHWC_FIX, fields)
    return None


_NHWC_CAUSE = {
    "en": "The input [{input}] has its channels last: the convolution (weight [{weight}]) "
    "reads dimension 1 as channels and finds {got} there instead of {expected}.",
    "zh": "输入 [{input}] 的通道在最后一维：卷积层（权重 [{weight}]）把第 1 维当作通道，"
    "在那里读到的是 {got} 而不是 {expected}。",
}
_NHWC_FIX = {
    "en": "Move the channels to dimension 1 before the convolution: `x = x.{permute}`.",
    "zh": "在卷积之前把通道移到第 1 维：`x = x.{permute}`。",
}
