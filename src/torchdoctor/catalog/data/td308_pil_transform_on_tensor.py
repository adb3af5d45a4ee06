"""TD308 pil-transform-on-tensor: a tensor handed to a transform that takes PIL images only."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import Context, Finding, Pitfall

PITFALL = Pitfall(
    code="TD308",
    name="pil-transform-on-tensor",
    title={
        "en": "A tensor given to a transform that takes only PIL images or arrays",
        "zh": "把张量传给了只接受 PIL 图像或数组的变换",
    },
    messages={
        "": {
            "en": "this transform takes a PIL image or a NumPy array, and it got a tensor: "
            "`ToTensor` ran before it, or twice",
            "zh": "这个变换接受 PIL 图像或 NumPy 数组，却收到了张量：`ToTensor` 在它之前执行了，或者执行了两次",
        },
        "compose": {
            "en": "`{transform}` takes a PIL image{or_array}, but `{producer}` before it in this "
            "`Compose` already made a tensor: `TypeError: {error}` on the first sample",
            "zh": "`{transform}` 只接受 PIL 图像{or_array}，但这个 `Compose` 中它前面的 `{producer}` "
            "已经把图像变成了张量：第一个样本就会报 `TypeError: {error}`",
        },
        "compose-float": {
            "en": "`{transform}` takes a PIL image or a `uint8` tensor, but `{producer}` before it "
            "in this `Compose` made a float tensor: `TypeError: Only torch.uint8 image tensors "
            "are supported` when it applies (put it before `{producer}`)",
            "zh": "`{transform}` 只接受 PIL 图像或 `uint8` 张量，但这个 `Compose` 中它前面的 `{producer}` "
            "已经生成了浮点张量：它生效时会报 `TypeError: Only torch.uint8 image tensors are "
            "supported`（请把它放到 `{producer}` 之前）",
        },
    },
    fix_hint={
        "en": "Put `transforms.ToTensor()` once, after the PIL-only transforms and before "
        "`Normalize`; drop it where the dataset already returns tensors (or use "
        "`transforms.v2.ToImage()` / `ToDtype(torch.float32, scale=True)`, which accept "
        "tensors).",
        "zh": "只放一次 `transforms.ToTensor()`，放在只接受 PIL 的变换之后、`Normalize` 之前；"
        "数据集已经返回张量时去掉它（或者改用接受张量的 `transforms.v2.ToImage()` / "
        "`ToDtype(torch.float32, scale=True)`）。",
    },
    docs={
        "en": """
## What it catches
The error torchvision raises when a tensor reaches `ToTensor` (`to_tensor`) or another
transform that works on PIL images only: `ToTensor` listed twice, a dataset that already
returns tensors (`read_image`, a `.pt` cache) still given `ToTensor`, or a PIL-only transform
placed after `ToTensor` in `Compose`.

`check` reads the list literal of a `torchvision.transforms.Compose([...])` in order and
reports a `ToTensor()` or `PILToTensor()` placed after a `ToTensor()` or `PILToTensor()`, with
only transforms that keep a tensor a tensor between them (`Resize`, crops, flips,
`Normalize`...). It also reports, after a `ToTensor()` (which makes a float tensor), a transform
that takes PIL images and `uint8` tensors only: `RandomEqualize`, `RandomPosterize`,
`AutoAugment`, `RandAugment`, `TrivialAugmentWide`, `AugMix`.

## Why is this bad?
`ToTensor` converts a PIL image or an HWC array into a CHW float tensor scaled to [0, 1]; it
does not accept a tensor, and `Compose` does not check the order of its steps. The error comes
from the dataset's `__getitem__`, often inside a DataLoader worker, far from the line that
built the pipeline.

## Symptoms
`TypeError: pic should be PIL Image or ndarray. Got <class 'torch.Tensor'>`
(`PILToTensor`: `TypeError: pic should be PIL Image. Got <class 'torch.Tensor'>`); in older
torchvision, `TypeError: img should be PIL Image. Got <class 'torch.Tensor'>` from PIL-only
transforms such as `Resize` or `RandomCrop`. A uint8-only transform given a float tensor:
`TypeError: Only torch.uint8 image tensors are supported, but found torch.float32`, only on
the samples where it applies (an `AutoAugment` policy that picked `Equalize` or `Posterize`).

## Known problems
Since torchvision 0.8 (2020) the geometric and colour transforms of `torchvision.transforms`
take tensors too; in today's torchvision only `ToTensor` and `PILToTensor` refuse a tensor, so
the static check reports those and the uint8-only ones above, not `Resize` or `RandomCrop`
after `ToTensor`, which fail only on torchvision older than 0.8. It reads list literals only
(not a list built elsewhere and passed to `Compose`), and an element it does not know
(`Lambda`, `RandomApply`, a project's transform, a v2 transform) ends what it can tell about
the image. The transforms of `torchvision.transforms.v2` pass tensors through and are not
checked.
""",
        "zh": """
## What it catches
张量传到 `ToTensor`（`to_tensor`）或其他只处理 PIL 图像的变换时 torchvision 抛出的错误：`ToTensor`
写了两次；数据集已经返回张量（`read_image`、`.pt` 缓存）却仍然加上 `ToTensor`；或者在 `Compose` 中
把只接受 PIL 的变换放在了 `ToTensor` 之后。

`check` 按顺序读取 `torchvision.transforms.Compose([...])` 的列表字面量，报告放在 `ToTensor()` 或
`PILToTensor()` 之后的 `ToTensor()` 或 `PILToTensor()`（两者之间只有让张量仍是张量的变换：`Resize`、
各种裁剪、翻转、`Normalize` 等）。它也报告放在 `ToTensor()`（生成浮点张量）之后、只接受 PIL 图像和
`uint8` 张量的变换：`RandomEqualize`、`RandomPosterize`、`AutoAugment`、`RandAugment`、
`TrivialAugmentWide`、`AugMix`。

## Why is this bad?
`ToTensor` 把 PIL 图像或 HWC 数组转换成数值在 [0, 1] 的 CHW 浮点张量；它不接受张量，而 `Compose`
不检查各步骤的顺序。这个错误出现在数据集的 `__getitem__` 中，往往还是在 DataLoader worker 里，
离构建变换流水线的那一行很远。

## Symptoms
`TypeError: pic should be PIL Image or ndarray. Got <class 'torch.Tensor'>`（`PILToTensor` 报
`TypeError: pic should be PIL Image. Got <class 'torch.Tensor'>`）；较旧的 torchvision 中，
`Resize`、`RandomCrop` 等只接受 PIL 的变换报 `TypeError: img should be PIL Image. Got <class
'torch.Tensor'>`。只接受 uint8 的变换收到浮点张量时：`TypeError: Only torch.uint8 image tensors are
supported, but found torch.float32`，只在它生效的样本上出现（`AutoAugment` 的策略选中了 `Equalize` 或
`Posterize` 时）。

## Known problems
自 torchvision 0.8（2020 年）起，`torchvision.transforms` 中的几何和颜色变换也接受张量；在现在的
torchvision 中只有 `ToTensor` 和 `PILToTensor` 拒绝张量，所以静态检查只报告这两个以及上面那些只接受 uint8
的变换，不报告 `ToTensor` 之后的 `Resize` 或 `RandomCrop`，它们只在早于 0.8 的 torchvision 中出错。
它只读列表字面量（不读在别处构建再传给 `Compose` 的列表）；遇到不认识的元素（`Lambda`、`RandomApply`、
项目自己的变换、v2 的变换）后，它就不再判断图像是什么。`torchvision.transforms.v2` 的变换会原样放行张量，
不检查。
""",
    },
    example="""
from torchvision import transforms

preprocess = transforms.Compose([
    transforms.ToTensor(),
    transforms.Resize(256),
    transforms.ToTensor(),
    transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
])
""",
    use_instead="""
from torchvision import transforms

preprocess = transforms.Compose([
    transforms.Resize(256),
    transforms.ToTensor(),
    transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
])
""",
)

PITFALL.error(
    r"(?:pic should be PIL Image or ndarray|img should be PIL Image)\. "
    r"Got <class '(?P<got>torch\.(?:\w+\.)*\w*Tensor|torch\.nn\.parameter\.Parameter)'>",
    types=("TypeError",),
    confidence=0.95,
    cause={
        "en": "A transform that takes a PIL image or a NumPy array got a `{got}`: the image "
        "was already converted, by a `ToTensor` earlier in the pipeline or by the dataset "
        "itself.",
        "zh": "只接受 PIL 图像或 NumPy 数组的变换收到了 `{got}`：图像已经被转换过了，可能是流水线中前面的 "
        "`ToTensor`，也可能是数据集本身。",
    },
)


# Reading a `Compose([...])` ----------------------------------------------------------------------

COMPOSE = frozenset({"torchvision.transforms.Compose", "torchvision.transforms.transforms.Compose"})
MODULES = ("torchvision.transforms.", "torchvision.transforms.transforms.")
AUTOAUGMENT = "torchvision.transforms.autoaugment."
# What each conversion makes, and the exact error of the conversion given a tensor.
TO_TENSOR = {
    "ToTensor": ("float", "pic should be PIL Image or ndarray. Got <class 'torch.Tensor'>"),
    "PILToTensor": ("uint8", "pic should be PIL Image. Got <class 'torch.Tensor'>"),
}
OR_ARRAY = {"en": " or a NumPy array", "zh": "或 NumPy 数组"}
# v1 transforms that take a tensor and give one of the same dtype (torchvision >= 0.8).
KEEP = frozenset(
    {
        "Normalize", "Resize", "CenterCrop", "Pad", "RandomCrop", "RandomHorizontalFlip",
        "RandomVerticalFlip", "RandomPerspective", "RandomResizedCrop", "ColorJitter",
        "RandomRotation", "RandomAffine", "Grayscale", "RandomGrayscale", "RandomErasing",
        "GaussianBlur", "RandomInvert", "RandomSolarize", "RandomAdjustSharpness",
        "RandomAutocontrast", "ElasticTransform", "LinearTransformation",
    }
)  # fmt: skip
# Transforms that take PIL images and uint8 tensors only (`_functional_tensor.equalize`,
# `posterize`, and the augmentation policies that apply them).
UINT8_ONLY = frozenset(
    {"RandomEqualize", "RandomPosterize", "AutoAugment", "RandAugment", "TrivialAugmentWide",
     "AugMix"}
)  # fmt: skip


@PITFALL.static(ast.Call, names={"Compose"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if not call.args or type(call.args[0]) not in (ast.List, ast.Tuple):
        return
    if ctx.qualname(call.func) not in COMPOSE:
        return
    made, producer = None, ""  # what the image is so far: None (PIL, or unknown), float, uint8
    for element in call.args[0].elts:
        name = _transform(element, ctx)
        if name in TO_TENSOR:
            if made is not None:
                error = TO_TENSOR[name][1]
                yield ctx.finding(
                    PITFALL,
                    element,
                    "compose",
                    transform=f"{name}()",
                    producer=producer,
                    error=error,
                    or_array=OR_ARRAY if name == "ToTensor" else {"en": "", "zh": ""},
                )
            made, producer = TO_TENSOR[name][0], f"{name}()"
        elif name in UINT8_ONLY:
            if made == "float":
                yield ctx.finding(
                    PITFALL, element, "compose-float", transform=name, producer=producer
                )
        elif name not in KEEP:
            made = None  # `ToPILImage`, `Lambda`, a project's transform: no longer known


def _transform(element: ast.expr, ctx: Context) -> str | None:
    """`ToTensor` for `transforms.ToTensor()`: the name of a v1 torchvision transform built in
    place, None for anything else."""
    if type(element) is not ast.Call:
        return None
    qualname = ctx.qualname(element.func) or ""
    for module in (*MODULES, AUTOAUGMENT):
        if qualname.startswith(module):
            name = qualname[len(module) :]
            if "." not in name:
                return name
    return None


# torchvision before 0.8 asserted it and named no type: the assertion's own line shows it.
PITFALL.error(
    r"assert _is_pil_image\(img\)[^\n]{0,200}\n[^\n]{0,200}AssertionError: img should be PIL Image",
    types=(),
    confidence=0.85,
    cause={
        "en": "A transform of torchvision before 0.8, which took PIL images only, got something "
        "else, usually a tensor made by `ToTensor` earlier in the pipeline or by the dataset.",
        "zh": "0.8 之前的 torchvision 变换只接受 PIL 图像，却收到了别的东西，通常是流水线中前面的 "
        "`ToTensor` 或数据集本身生成的张量。",
    },
)
