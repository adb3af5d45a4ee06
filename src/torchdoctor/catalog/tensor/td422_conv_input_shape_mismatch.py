"""TD422 conv-input-shape-mismatch: a convolution's input with another channel count than its
`in_channels`, or a dimension too few or too many (not the channels-last layout: TD413)."""

from __future__ import annotations


from torchdoctor.catalog.sdk import Clue, Pitfall, lazy_compile
from torchdoctor.catalog.tensor._conv_channels import channel_mismatch

PITFALL = Pitfall(
    code="TD422",
    name="conv-input-shape-mismatch",
    title={
        "en": "Convolution input with the wrong channel count or number of dimensions",
        "zh": "卷积层输入的通道数或维数不对",
    },
    messages={
        "": {
            "en": "the convolution's input does not have the channels or the dimensions its "
            "weight was built for",
            "zh": "卷积层的输入没有其权重所要求的通道数或维数",
        }
    },
    fix_hint={
        "en": "Print `x.shape` before the layer: a convolution reads `[N, C, H, W]` with `C` "
        "its `in_channels`. Convert grayscale or RGBA images to what the model was built for, "
        "set `in_channels` to the previous layer's `out_channels`, or add the missing batch "
        "dimension with `x.unsqueeze(0)`.",
        "zh": "在该层之前打印 `x.shape`：卷积读取 `[N, C, H, W]`，其中 `C` 是它的 `in_channels`。"
        "把灰度图或 RGBA 图转换成模型所要求的通道数，让 `in_channels` 等于上一层的 `out_channels`，"
        "或者用 `x.unsqueeze(0)` 补上缺少的 batch 维。",
    },
    docs={
        "en": """
## What it catches
The shape errors of `nn.Conv1d/2d/3d` (and `F.conv*`) that are not a channels-last layout
(that one is `conv-input-channels-last`): an input whose channel count in dimension 1 is not
the layer's `in_channels` while its last dimension is not the channel count either (a
grayscale image given to a model built for RGB, an RGBA PNG with its alpha channel, a layer
whose `in_channels` differs from the previous layer's `out_channels`), and an input with a
dimension too few or too many (a single image without its batch dimension, a grayscale image
without its channel dimension).

## Why is this bad?
A convolution's weight has the shape `[out_channels, in_channels, kH, kW]`, fixed when the layer
is built, and it reads dimension 1 of its input as channels. Images read from disk do not all
have three channels: PIL opens grayscale files in mode `L` (one channel) and PNGs in `RGBA`
(four), and a dataset mixing them fails on its first odd image. A batch dimension is added by
the DataLoader, so code that runs a single image by hand must add it itself.

## Symptoms
`RuntimeError: Given groups=1, weight of size [16, 3, 3, 3], expected input[8, 1, 32, 32] to
have 3 channels, but got 1 channels instead`, `RuntimeError: Expected 3D (unbatched) or 4D
(batched) input to conv2d, but got input of size: [28, 28]`, and with PyTorch 1.x `Expected
4-dimensional input for 4-dimensional weight [64, 3, 7, 7], but got 3-dimensional input of
size [3, 224, 224] instead`.

## Known problems
When the last dimension of the input happens to equal the expected channel count, the message
is read as a channels-last layout (`conv-input-channels-last`), which it then most likely is.
""",
        "zh": """
## What it catches
`nn.Conv1d/2d/3d`（以及 `F.conv*`）的形状错误中不属于通道在后（channels-last）排布的那些
（那种情况见 `conv-input-channels-last`）：输入第 1 维的通道数不等于该层的 `in_channels`，
而最后一维也不是通道数（灰度图送进按 RGB 构建的模型、带 alpha 通道的 RGBA PNG、某层的
`in_channels` 与上一层的 `out_channels` 不一致）；以及输入多了或少了一个维度（单张图像缺少
batch 维、灰度图缺少通道维）。

## Why is this bad?
卷积层的权重形状是 `[out_channels, in_channels, kH, kW]`，在构建时就固定了，并且它把输入的第 1 维
当作通道。从磁盘读取的图像并不都是三通道：PIL 以 `L` 模式（一个通道）打开灰度图，以 `RGBA`（四个
通道）打开 PNG，混有这类图像的数据集会在第一张“异类”图像上报错。batch 维由 DataLoader 添加，
所以手工处理单张图像的代码必须自己加上它。

## Symptoms
`RuntimeError: Given groups=1, weight of size [16, 3, 3, 3], expected input[8, 1, 32, 32] to
have 3 channels, but got 1 channels instead`、`RuntimeError: Expected 3D (unbatched) or 4D
(batched) input to conv2d, but got input of size: [28, 28]`，以及 PyTorch 1.x 中的 `Expected
4-dimensional input for 4-dimensional weight [64, 3, 7, 7], but got 3-dimensional input of
size [3, 224, 224] instead`。

## Known problems
如果输入的最后一维恰好等于期望的通道数，报错会被当作通道在后的排布（`conv-input-channels-last`），
而那时它多半也确实是。
""",
    },
    example="""
import torch
import torch.nn as nn

conv = nn.Conv2d(3, 16, kernel_size=3)
gray = torch.rand(8, 1, 32, 32)  # grayscale images
out = conv(gray)
""",
    use_instead="""
import torch
import torch.nn as nn

conv = nn.Conv2d(3, 16, kernel_size=3)
gray = torch.rand(8, 1, 32, 32)
out = conv(gray.expand(-1, 3, -1, -1))  # or build the layer with in_channels=1
""",
)

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


# The second half alone, without the sizes (retold in issues, the count sometimes a letter:
# "expected input to have 1 channels, but got B channels instead"): the layout cannot be told.
_CUT_CHANNELS = lazy_compile(
    r"to have (?P<expected>\d+) channels, but got (?P<got>\d+|[A-Z]\w{0,15}) channels instead"
)
_CUT_CAUSE = {
    "en": "The convolution was built for {expected} input channels but dimension 1 of its "
    "input holds {got}: a grayscale (1) or RGBA (4) image given to an RGB model, an "
    "`in_channels` that does not match the previous layer's `out_channels`, a dimension too "
    "many in front (the batch size read as channels), or a channels-last image whose width is "
    "read as channels. Without the input's size in the message these cannot be told apart.",
    "zh": "卷积层是按 {expected} 个输入通道构建的，而输入的第 1 维是 {got}：可能是把灰度图（1）或 "
    "RGBA 图（4）送进了 RGB 模型，该层的 `in_channels` 与上一层的 `out_channels` 不一致，前面多了一个"
    "维度（batch 大小被当成了通道数），或者通道在最后的图像的宽度被当成了通道数。消息里没有输入的大小，"
    "无法区分这几种情况。",
}
_CUT_FIX = {
    "en": "Print `x.shape` right before the layer: it must be `[N, {expected}, H, W]`; convert "
    'the images (`.convert("RGB")`), fix `in_channels`, remove an extra dimension '
    "(`x.squeeze(0)`, or no `unsqueeze(0)` on an already batched input), or "
    "`x.permute(0, 3, 1, 2)` a channels-last batch.",
    "zh": "在该层之前打印 `x.shape`：它应当是 `[N, {expected}, H, W]`；转换图像"
    '（`.convert("RGB")`），修正 `in_channels`，去掉多余的维度（`x.squeeze(0)`，或者不要对已经带 batch '
    "维的输入再 `unsqueeze(0)`），或者对通道在最后的 batch 使用 `x.permute(0, 3, 1, 2)`。",
}


# The first half alone, cut inside the input's sizes (a log or an issue truncates the long
# line: "Given groups=1, weight of size [128, 5, 3, 3], expected input[8, 4, 25"): the layer
# wants weight[1] * groups channels and dimension 1 of the input, when it is complete, shows
# what it got. Only an ordinary convolution's (a transposed one says `transposed=1` and reads
# its channels from weight[0]); the input's last size is cut, so channels-last is not ruled out.
_CUT_SIZES = lazy_compile(
    r"Given groups=(?P<groups>\d+), weight(?: of size)? ?\[?(?P<weight>\d+(?:,? \d+)+)\]?,"
    r"(?: so)? expected input\[\d+, (?P<got>\d+)[,\]]"
)


def _cut_sizes(message: str) -> Clue | None:
    found = _CUT_SIZES.search(message)
    if found is None:
        return None
    fields = found.groupdict()
    weight = fields["weight"].replace(",", " ").split()
    fields["expected"] = str(int(weight[1]) * int(fields["groups"]))
    if fields["expected"] == fields["got"]:
        return None  # the channels agree: the rest of the message, cut off, says what is wrong
    return Clue(0.7, _CUT_CAUSE, _CUT_FIX, fields)


@PITFALL.error_check(types=(), words=("channels instead", "expected input["))
def channel_count(block, report) -> Clue | None:
    """A channel count that is not the layer's, unless the input's last size is the expected
    count (then it is channels-last: TD413's)."""
    found = channel_mismatch(block.message)
    if found is None:
        cut = _CUT_CHANNELS.search(block.message)
        if cut is None:
            return _cut_sizes(block.message)
        return Clue(0.7, _CUT_CAUSE, _CUT_FIX, cut.groupdict())
    fields, sizes = found
    if sizes[-1] == int(fields["expected"]):
        return None
    return Clue(0.85, _COUNT_CAUSE, _COUNT_FIX, fields)


# A traceback cut off inside a convolution's call, before its message, under a report that
# says the images have four channels (`png为4个channel时报错`, "RGBA images fail"): the count
# is the report's, not the message's, so less sure than the message itself.
_FOUR_CHANNELS = lazy_compile(r"(?i)(?<![\d.])(?:4|four)[ -]?个?\s?channels?(?![a-z])|\bRGBA\b")
_CONV_CALL = lazy_compile(r"\bconv\w{0,30}\(|[/\\]conv\.py\b")
_TAIL = 1000  # characters: the last frames of the cut traceback
_FOUR_CHANNELS_CAUSE = {
    "en": "The images have four channels (RGBA: a PNG's alpha channel) and the traceback stops "
    "in a convolution built for three: its input's dimension 1 does not match `in_channels`.",
    "zh": "图像有四个通道（RGBA：PNG 的 alpha 通道），而回溯停在一个按三通道构建的卷积层里："
    "输入的第 1 维与 `in_channels` 不一致。",
}
_FOUR_CHANNELS_FIX = {
    "en": 'Convert the images to RGB when loading them (`Image.open(path).convert("RGB")`, or '
    "`x[:, :3]` on a tensor batch), or build the layer with `in_channels=4`.",
    "zh": '加载时把图像转换为 RGB（`Image.open(path).convert("RGB")`，或对张量 batch 用 '
    "`x[:, :3]`），或者把这一层设为 `in_channels=4`。",
}


@PITFALL.error_check(types=(), words=("channel", "rgba"))
def four_channel_images_retold(block, report) -> Clue | None:
    if not _FOUR_CHANNELS.search(block.message) or report.exceptions:
        return None  # a printed exception has a message to go by
    if not _CONV_CALL.search(report.text[-_TAIL:]):
        return None
    return Clue(0.6, _FOUR_CHANNELS_CAUSE, _FOUR_CHANNELS_FIX)


_BATCH_FIX = {
    "en": "Add the batch dimension with `x.unsqueeze(0)` for a single sample (or remove "
    "an extra one with `x.squeeze(...)`).",
    "zh": "单个样本用 `x.unsqueeze(0)` 加上 batch 维（多出来的维度用 `x.squeeze(...)` 去掉）。",
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
    fix=_BATCH_FIX,
)
# PyTorch 0.4-1.0 said only the input's size: "but got input of size [4, 10, 3, 320, 320]".
PITFALL.error(
    r"Expected (?P<want>\d+)-dimensional input for (?P=want)-dimensional weight "
    r"\[?(?P<weight>\d+(?:,? \d+)*)\]?, but got input of size \[(?P<input>[\d, ]*)\]",
    types=(),
    confidence=0.85,
    cause={
        "en": "The convolution (weight [{weight}]) needs a {want}-d batch but got a tensor of "
        "size [{input}]: a single sample without its batch dimension, or an extra dimension.",
        "zh": "卷积层（权重 [{weight}]）需要 {want} 维的 batch 输入，却收到了大小为 [{input}] 的"
        "张量：多半是单个样本缺少 batch 维，或者多了一个维度。",
    },
    fix=_BATCH_FIX,
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
