"""TD307 random-crop-too-large: a random crop asked for a size larger than the image."""

from __future__ import annotations

import re

from torchdoctor.catalog.sdk import Clue, lazy_compile, Pitfall

PITFALL = Pitfall(
    code="TD307",
    name="random-crop-too-large",
    title={"en": "Random crop larger than the image", "zh": "随机裁剪的尺寸大于图像本身"},
    messages={
        "": {
            "en": "a random crop is larger than the image it is applied to, so there is no "
            "position to pick the crop from",
            "zh": "随机裁剪的尺寸大于被裁剪的图像，因此找不到可以选取的裁剪位置",
        }
    },
    fix_hint={
        "en": "Resize before cropping so the shorter side is at least the crop size "
        "(`transforms.Resize(256)` then `RandomCrop(224)`), use "
        "`RandomCrop(size, pad_if_needed=True)`, or `RandomResizedCrop(size)`.",
        "zh": "先缩放再裁剪，保证短边不小于裁剪尺寸（先 `transforms.Resize(256)` 再 `RandomCrop(224)`），"
        "或者使用 `RandomCrop(size, pad_if_needed=True)`，或 `RandomResizedCrop(size)`。",
    },
    docs={
        "en": """
## What it catches
A random crop (torchvision's `RandomCrop`, a hand-written crop in a Dataset, an augmentation
library's crop) whose size is larger than one of the images it gets. The crop's offset is
drawn from `range(0, image_size - crop_size + 1)`, which is empty.

## Why is this bad?
Datasets collected from the wild have a few images smaller than the rest. Everything works
until one of them is drawn, possibly hours into training, and the error then talks about
`randrange()` or `random_` instead of image sizes. It also shows up when a crop size is
raised (224 -> 256) without changing the resize before it.

## Symptoms
`ValueError: Required crop size (224, 224) is larger then input image size (200, 300)`
(torchvision; "than" in its v2 transforms), `RuntimeError: random_ expects 'from' to be less
than 'to', but got from=0 >= to=-23` (torchvision before 0.8), and from hand-written crops
using `random.randint`: `ValueError: empty range for randrange() (0,-31, -31)` (Python 3.11 and
older) or `ValueError: empty range in randrange(0, -31)` (Python 3.12+), or numpy's
`ValueError: low >= high`. MONAI's crops of volumes: `ValueError: The size of the proposed
random crop ROI is larger than the image size.`

## Known problems
An empty `randrange` also comes from picking from an empty list (`random.randint(0,
len(items) - 1)`); without a crop in the traceback that is shown only as a weak guess.
""",
        "zh": """
## What it catches
随机裁剪（torchvision 的 `RandomCrop`、Dataset 中手写的裁剪、数据增强库里的裁剪）的尺寸大于它拿到的某张图像。
裁剪偏移量要从 `range(0, image_size - crop_size + 1)` 中随机选取，而这个区间是空的。

## Why is this bad?
从各处收集来的数据集里总有几张比其他图像小。在抽到它们之前一切正常，可能训练了几个小时才突然报错，
而且报错说的是 `randrange()` 或 `random_`，完全不提图像尺寸。把裁剪尺寸调大（224 -> 256）
却没有同步修改前面的缩放时，也会出现这个问题。

## Symptoms
`ValueError: Required crop size (224, 224) is larger then input image size (200, 300)`
（torchvision；其 v2 变换中拼写为 "than"），`RuntimeError: random_ expects 'from' to be less
than 'to', but got from=0 >= to=-23`（torchvision 0.8 之前），以及使用 `random.randint` 的手写裁剪给出的
`ValueError: empty range for randrange() (0,-31, -31)`（Python 3.11 及更早）或
`ValueError: empty range in randrange(0, -31)`（Python 3.12+），或 numpy 的 `ValueError: low >= high`。
MONAI 对体数据的裁剪：`ValueError: The size of the proposed random crop ROI is larger than the
image size.`

## Known problems
从空列表中随机选取（`random.randint(0, len(items) - 1)`）也会得到空的 `randrange`；
如果调用栈中没有裁剪相关的代码，只会作为较弱的猜测给出。
""",
    },
    example="""
from torchvision import transforms

transform = transforms.Compose([
    transforms.RandomCrop(224),  # fails on any image smaller than 224 pixels
    transforms.ToTensor(),
])
""",
    use_instead="""
from torchvision import transforms

transform = transforms.Compose([
    transforms.Resize(256),
    transforms.RandomCrop(224, pad_if_needed=True),
    transforms.ToTensor(),
])
""",
)

_LARGER_CROP = {
    "en": "The crop ({crop}) is larger than this image ({image}): one of the images in "
    "the dataset is smaller than the crop size.",
    "zh": "裁剪尺寸（{crop}）大于这张图像（{image}）：数据集中有图像比裁剪尺寸还小。",
}
PITFALL.error(
    r"Required crop size \((?P<crop>\d+, \d+)\) is larger th[ae]n (?:padded )?input image "
    r"size \((?P<image>\d+, \d+)\)",
    types=("ValueError",),
    confidence=0.95,
    cause=_LARGER_CROP,
)
# albumentations; torchvision's `FiveCrop`/`TenCrop`, which cannot pad ("is bigger than").
PITFALL.error(
    r"Requested crop size \((?P<crop>\d+, \d+)\) is (?:larger than the image|bigger than "
    r"input) size \((?P<image>\d+, \d+)\)",
    types=("ValueError",),
    confidence=0.95,
    cause=_LARGER_CROP,
)
# MONAI's crops of volumes (`RandCropByPosNegLabeld`, `RandCropByLabelClassesd`...), when the
# ROI (`spatial_size`) is larger than the volume along one axis and `allow_smaller` is off.
PITFALL.error(
    r"size of the proposed random crop ROI is larger than the image size",
    types=("ValueError", "RuntimeError"),
    confidence=0.95,
    cause={
        "en": "The random crop's ROI (`spatial_size`/`roi_size` of MONAI's crop transform) is "
        "larger than this image along at least one axis: some volumes of the dataset are "
        "smaller than the ROI (often few slices along z), so no crop centre can be chosen.",
        "zh": "随机裁剪的 ROI（MONAI 裁剪变换的 `spatial_size`/`roi_size`）至少在一个维度上大于这张图像："
        "数据集中有些体数据比 ROI 还小（常见的是 z 方向切片太少），因此无法选出裁剪中心。",
    },
    fix={
        "en": "Pad every volume to at least the ROI before the crop (`SpatialPadd(keys, "
        "spatial_size=roi)`), pass `allow_smaller=True` to the crop transform, or use a "
        "smaller ROI.",
        "zh": "在裁剪之前把每个体数据至少填充到 ROI 大小（`SpatialPadd(keys, spatial_size=roi)`），"
        "给裁剪变换传入 `allow_smaller=True`，或者使用更小的 ROI。",
    },
)

_EMPTY_RANGE = lazy_compile(
    r"empty range (?:for randrange\(\) \((?P<start>-?\d+), ?(?P<stop>-?\d+), ?-?\d+\)"
    r"|in randrange\((?P<start2>-?\d+), (?P<stop2>-?\d+)\))"
)
_RANDOM_ = lazy_compile(
    r"random_ expects 'from' to be less than 'to', but got "
    r"from=(?P<start>-?\d+) >= to=(?P<stop>-?\d+)"
)
_NUMPY = lazy_compile(r"^(?:low >= high|high <= 0|low is out of bounds)")
_CROP = lazy_compile(r"crop", re.I)

_CAUSE = {
    "en": "A random crop drew its offset from an empty range (up to {stop}): the crop is "
    "larger than the image by about {excess} pixels in one dimension.",
    "zh": "随机裁剪从一个空区间（上限 {stop}）中选取偏移量：裁剪尺寸在某个维度上比图像大了约 "
    "{excess} 个像素。",
}
_NUMPY_CAUSE = {
    "en": "A random crop drew its offset with numpy from an empty range: the crop is larger "
    "than the image in one dimension.",
    "zh": "随机裁剪用 numpy 从一个空区间中选取偏移量：裁剪尺寸在某个维度上大于图像。",
}
_GUESS = {
    "en": "A random integer was drawn from an empty range (up to {stop}). In data loading that "
    "is usually a random crop larger than the image, or a pick from an empty list.",
    "zh": "从一个空区间（上限 {stop}）中抽取随机整数。在数据加载中，这通常是随机裁剪大于图像，"
    "或者从空列表中随机选取。",
}


@PITFALL.error_check(
    types=("ValueError", "RuntimeError"),
    words=("empty range", "random_ expects", "low >= high", "high <= 0", "low is out of bounds"),
)
def empty_offset_range(block, report) -> Clue | None:
    """An empty random range: a crop when a crop is in the frames, a guess otherwise."""
    found = _EMPTY_RANGE.search(block.message) or _RANDOM_.search(block.message)
    numpy = found is None and _NUMPY.search(block.message) is not None
    if found is None and not numpy:
        return None
    fields = {}
    if found is not None:
        groups = found.groupdict()
        stop = int(groups.get("stop") or groups.get("stop2"))
        fields = {"stop": str(stop), "excess": str(max(1, 1 - stop))}
    in_crop = any(
        _CROP.search(f"{frame.path} {frame.function or ''} {frame.source or ''}")
        for frame in block.frames
    )
    if in_crop:
        return Clue(0.95, _CAUSE, None, fields) if fields else Clue(0.85, _NUMPY_CAUSE)
    if numpy or "stop" not in fields:
        return None
    return Clue(0.55 if int(fields["stop"]) < 0 else 0.35, _GUESS, None, fields)


_CROP_RANGE = {
    "en": "A random crop drew its offset from an empty range: the crop is larger than the "
    "image in one dimension.",
    "zh": "随机裁剪从一个空区间中选取偏移量：裁剪尺寸在某个维度上大于图像。",
}
_IN_TRANSFORM = {
    "en": "A random integer was drawn from an empty range inside a data transform (the "
    "traceback passes through one; its last line was not pasted). In a transform that is "
    "almost always a random crop larger than the image or frame in one dimension.",
    "zh": "在数据变换内部从一个空区间中抽取了随机整数（traceback 经过了一个变换，最后一行没有贴出）。"
    "在数据变换中，这几乎总是随机裁剪在某个维度上大于图像或帧。",
}


@PITFALL.error_check(types=(), words=("empty range for randrange()", "empty range in randrange("))
def empty_range_in_cut_traceback(block, report) -> Clue | None:
    """`random`'s empty-range error named only in the text (an issue's first line quoting
    random.py's `raise`), above a traceback cut before its exception line: the frames shown say
    whether a crop or a transform drew the number."""
    if block.short_type or report.exceptions:
        return None  # an exception shown is read by `empty_offset_range`, with its frames
    lowered = block.message.lower()
    if "empty range for randrange()" not in lowered and "empty range in randrange(" not in lowered:
        return None
    frames = _frame_lines(block.message)
    if any("crop" in line for line in frames):
        return Clue(0.85, _CROP_RANGE)
    if any("transform" in line for line in frames):
        return Clue(0.7, _IN_TRANSFORM)
    return None


def _frame_lines(text: str) -> list[str]:
    """The `File "..."` lines of the tracebacks in `text` and the source lines under them,
    lower case."""
    lines = text.split("\n")
    found = []
    for number, line in enumerate(lines):
        if line.lstrip().startswith('File "'):
            found.append(line.lower())
            after = lines[number + 1] if number + 1 < len(lines) else ""
            if not after.lstrip().startswith('File "'):
                found.append(after.lower())
    return found
