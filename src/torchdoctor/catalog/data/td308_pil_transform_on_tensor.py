"""TD308 pil-transform-on-tensor: a tensor handed to a transform that takes PIL images only."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Pitfall

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
        }
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

## Why is this bad?
`ToTensor` converts a PIL image or an HWC array into a CHW float tensor scaled to [0, 1]; it
does not accept a tensor, and `Compose` does not check the order of its steps. The error comes
from the dataset's `__getitem__`, often inside a DataLoader worker, far from the line that
built the pipeline.

## Symptoms
`TypeError: pic should be PIL Image or ndarray. Got <class 'torch.Tensor'>`; in older
torchvision, `TypeError: img should be PIL Image. Got <class 'torch.Tensor'>` from PIL-only
transforms such as `Resize` or `RandomCrop`.
""",
        "zh": """
## What it catches
张量传到 `ToTensor`（`to_tensor`）或其他只处理 PIL 图像的变换时 torchvision 抛出的错误：`ToTensor`
写了两次；数据集已经返回张量（`read_image`、`.pt` 缓存）却仍然加上 `ToTensor`；或者在 `Compose` 中
把只接受 PIL 的变换放在了 `ToTensor` 之后。

## Why is this bad?
`ToTensor` 把 PIL 图像或 HWC 数组转换成数值在 [0, 1] 的 CHW 浮点张量；它不接受张量，而 `Compose`
不检查各步骤的顺序。这个错误出现在数据集的 `__getitem__` 中，往往还是在 DataLoader worker 里，
离构建变换流水线的那一行很远。

## Symptoms
`TypeError: pic should be PIL Image or ndarray. Got <class 'torch.Tensor'>`；较旧的 torchvision 中，
`Resize`、`RandomCrop` 等只接受 PIL 的变换报 `TypeError: img should be PIL Image. Got <class
'torch.Tensor'>`。
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
