"""TD413 conv-input-channels-last: an NHWC image batch fed to a convolution that reads NCHW."""

from __future__ import annotations

import re

from torchdoctor.catalog.sdk import Clue, Pitfall

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
same entry explains the related shape errors of a convolution: a single image without its
batch dimension, and a channel count that does not match `in_channels` (a grayscale image
into an RGB model, an RGBA PNG, a layer whose `in_channels` differs from the previous layer's
`out_channels`).

## Why is this bad?
PyTorch convolutions always read dimension 1 as channels. Image libraries keep the channels
last, and `torch.from_numpy` keeps whatever layout the array had: it never reorders
dimensions. `transforms.ToTensor()` does reorder them (HWC -> CHW), so code that builds tensors
by hand from numpy or OpenCV is where this appears.

## Symptoms
`RuntimeError: Given groups=1, weight of size [64, 3, 7, 7], expected input[8, 224, 224, 3]
to have 3 channels, but got 224 channels instead` (the last number of `input[...]` equals the
expected channel count: the input is channels-last). Related: `expected input[1, 1, 224, 224]
to have 3 channels, but got 1 channels instead` (grayscale image, RGB model),
`Expected 4-dimensional input for 4-dimensional weight [64, 3, 7, 7], but got 3-dimensional
input of size [3, 224, 224] instead` (PyTorch 1.x, missing batch dimension), and
`Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [224, 224]`.

## Known problems
When the image height happens to equal the channel count the message cannot tell the layouts
apart. A permuted tensor is not contiguous; that is fine for convolutions, but a later
`.view()` on it may need `.contiguous()` or `.reshape()`.
""",
        "zh": """
## What it catches
按 `[N, H, W, C]` 排布的一批图像——这是 numpy 数组、OpenCV 和 PIL 图像以及 TensorFlow 代码的排布——
被直接送进按 `[N, C, H, W]` 读取输入的 `nn.Conv1d/2d/3d`，于是卷积层把图像高度当成了通道数。
本条目也解释卷积层相关的几种形状错误：单张图像缺少 batch 维；通道数与 `in_channels` 不符
（灰度图送进 RGB 模型、带 alpha 通道的 RGBA PNG、某层的 `in_channels` 与上一层的 `out_channels` 不一致）。

## Why is this bad?
PyTorch 的卷积层总是把第 1 维当作通道。图像库都把通道放在最后，而 `torch.from_numpy` 保持数组原有的排布，
从不调整维度顺序。`transforms.ToTensor()` 会做 HWC -> CHW 的转换，所以这个问题多出现在直接用 numpy
或 OpenCV 手工构造张量的代码里。

## Symptoms
`RuntimeError: Given groups=1, weight of size [64, 3, 7, 7], expected input[8, 224, 224, 3]
to have 3 channels, but got 224 channels instead`（`input[...]` 的最后一个数恰好等于期望的通道数：
输入是通道在后的排布）。相关的报错还有：`expected input[1, 1, 224, 224] to have 3 channels, but got 1
channels instead`（灰度图送进 RGB 模型），`Expected 4-dimensional input for 4-dimensional weight
[64, 3, 7, 7], but got 3-dimensional input of size [3, 224, 224] instead`（PyTorch 1.x，缺少 batch 维），
以及 `Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [224, 224]`。

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

_CHANNELS = re.compile(
    r"weight of size \[?(?P<weight>\d+(?:,? \d+)*)\]?, expected input\[(?P<input>\d+(?:, \d+)*)\] "
    r"to have (?P<expected>\d+) channels, but got (?P<got>\d+) channels instead"
)
# The dimension order that brings the last dimension to position 1, by input rank.
_TO_CHANNELS_FIRST = {3: "permute(0, 2, 1)", 4: "permute(0, 3, 1, 2)", 5: "permute(0, 4, 1, 2, 3)"}


@PITFALL.error_check(types=())
def channel_count(block, report) -> Clue | None:
    """`expected input[1, 224, 224, 3] to have 3 channels, but got 224`: channels-last when the
    last input size is the expected channel count, otherwise a plain channel-count mismatch."""
    found = _CHANNELS.search(block.message)
    if found is None:
        return None
    fields = found.groupdict()
    sizes = [int(s) for s in fields["input"].split(", ")]
    expected, got = int(fields["expected"]), int(fields["got"])
    if sizes[-1] == expected != got and len(sizes) in _TO_CHANNELS_FIRST:
        fields["permute"] = _TO_CHANNELS_FIRST[len(sizes)]
        return Clue(0.95, _NHWC_CAUSE, _NHWC_FIX, fields)
    return Clue(0.7, _COUNT_CAUSE, _COUNT_FIX, fields)


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
_COUNT_CAUSE = {
    "en": "The input [{input}] has {got} channels in dimension 1 but the convolution (weight "
    "[{weight}]) was built for {expected}: a grayscale (1) or RGBA (4) image given to an "
    "RGB model, or an `in_channels` that does not match the previous layer's "
    "`out_channels`.",
    "zh": "输入 [{input}] 第 1 维有 {got} 个通道，而卷积层（权重 [{weight}]）是按 {expected} "
    "个通道构建的：可能是把灰度图（1）或 RGBA 图（4）送进了 RGB 模型，或者该层的 "
    "`in_channels` 与上一层的 `out_channels` 不一致。",
}
_COUNT_FIX = {
    "en": 'Make the channel counts agree: convert images with `.convert("RGB")` (PIL) or '
    "`x.expand(-1, 3, -1, -1)` for grayscale, or set `in_channels={got}` in this layer.",
    "zh": '让通道数一致：用 `.convert("RGB")`（PIL）转换图像，灰度图可用 '
    "`x.expand(-1, 3, -1, -1)`，或者把这一层设为 `in_channels={got}`。",
}

# PyTorch 1.x: a single image without its batch dimension.
PITFALL.error(
    r"Expected (?P<want>\d+)-dimensional input for (?P=want)-dimensional weight "
    r"\[?(?P<weight>\d+(?:,? \d+)*)\]?, but got (?P<have>\d+)-dimensional input of size "
    r"\[(?P<input>[\d, ]*)\] instead",
    types=(),
    confidence=0.85,
    cause={
        "en": "The convolution (weight [{weight}]) needs a {want}-d batch but got a {have}-d "
        "tensor of size [{input}]: a single sample without its batch dimension, or "
        "an extra dimension.",
        "zh": "卷积层（权重 [{weight}]）需要 {want} 维的 batch 输入，却收到了大小为 [{input}] 的 "
        "{have} 维张量：多半是单个样本缺少 batch 维，或者多了一个维度。",
    },
    fix={
        "en": "Add the batch dimension with `x.unsqueeze(0)` for a single sample (or remove "
        "an extra one with `x.squeeze(...)`).",
        "zh": "单个样本用 `x.unsqueeze(0)` 加上 batch 维（多出来的维度用 `x.squeeze(...)` 去掉）。",
    },
)
PITFALL.error(
    r"Expected (?P<unbatched>\d)D \(unbatched\) or (?P<batched>\d)D \(batched\) input to "
    r"(?P<op>conv\w+), but got input of size: \[(?P<input>[\d, ]*)\]",
    types=(),
    confidence=0.85,
    cause={
        "en": "{op} takes a {unbatched}-d sample or a {batched}-d batch; the input has size "
        "[{input}]: a dimension is missing (often the channel dimension of a "
        "grayscale image) or one too many.",
        "zh": "{op} 接受 {unbatched} 维的单个样本或 {batched} 维的 batch，而输入大小是 [{input}]："
        "少了一个维度（常见于灰度图缺少通道维）或多了一个维度。",
    },
    fix={
        "en": "Add the missing dimension with `x.unsqueeze(0)` (channel or batch), or drop an "
        "extra one with `x.squeeze(...)`.",
        "zh": "用 `x.unsqueeze(0)` 补上缺少的维度（通道维或 batch 维），或用 `x.squeeze(...)` "
        "去掉多余的维度。",
    },
)
# Output the parser could not split into blocks (quoted, escaped): the channel count alone.
PITFALL.error(_CHANNELS.pattern, types=(), confidence=0.7, cause=_COUNT_CAUSE, fix=_COUNT_FIX)
