"""TD808 transforms-v2-totensor: the deprecated `torchvision.transforms.v2.ToTensor`."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import Context, Finding, Pitfall

PITFALL = Pitfall(
    code="TD808",
    name="transforms-v2-totensor",
    title={
        "en": "The deprecated `transforms.v2.ToTensor`",
        "zh": "使用了已弃用的 `transforms.v2.ToTensor`",
    },
    messages={
        "": {
            "en": "`{call}` is deprecated and will be removed: use "
            "`v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])`",
            "zh": "`{call}` 已弃用，将被移除：请改用 "
            "`v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])`",
        }
    },
    fix_title={
        "en": "Use `v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])`",
        "zh": "改用 `v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])`",
    },
    fix_applicability="unsafe",
    docs={
        "en": """
## What it catches
A call of `torchvision.transforms.v2.ToTensor()`, however it is imported
(`from torchvision.transforms import v2; v2.ToTensor()`, `import torchvision.transforms.v2 as
T`, `from torchvision.transforms.v2 import ToTensor`). The v1 `torchvision.transforms.ToTensor`
is not deprecated and is not reported.

## Why is this bad?
`v2.ToTensor` exists only to ease the move from the v1 API: torchvision deprecates it, warns
each time one is built and will remove it. It also does not fit the v2 API: it returns a plain
tensor rather than a `tv_tensors.Image`, so the v2 transforms after it cannot tell the image
from the other tensors of a sample (boxes, masks) by type. torchvision's replacement splits its
two jobs: `v2.ToImage()` converts a PIL image or an array to an `Image` tensor, and
`v2.ToDtype(torch.float32, scale=True)` converts it to floats in [0, 1].

## Symptoms
When the transform is built: `UserWarning: The transform `ToTensor()` is deprecated and will be
removed in a future release. Instead, please use `v2.Compose([v2.ToImage(), v2.ToDtype(torch.
float32, scale=True)])`.Output is equivalent up to float precision.`; on the release that drops
it, `AttributeError: module 'torchvision.transforms.v2' has no attribute 'ToTensor'`.

## Fix safety
The fix writes torchvision's replacement in place of the call, with the module prefix of the
call (`v2.`, `T.`), and only where the call goes through a module and `torch` is imported. It
is unsafe because the two are equivalent "up to float precision" for the usual inputs only
(8-bit PIL images and `uint8` arrays): `ToTensor` passes a tensor input through unchanged and
does not scale other integer types (a 16- or 32-bit PIL image or array stays integer), where
`ToImage` + `ToDtype(scale=True)` scales them to [0, 1]; `ToTensor` gives the default float
dtype, the fix `float32`; and the output is a `tv_tensors.Image`, not a plain tensor.

## Known problems
A class that derives from `v2.ToTensor`, or a reference to it that is not called
(`transforms = [v2.ToTensor]`), is not reported.

## References
- torchvision, `torchvision/transforms/v2/_deprecated.py` (the deprecation and its message).
- TorchFix TOR202, the same check.
""",
        "zh": """
## What it catches
调用 `torchvision.transforms.v2.ToTensor()`，无论以何种方式导入（`from torchvision.transforms import v2;
v2.ToTensor()`、`import torchvision.transforms.v2 as T`、`from torchvision.transforms.v2 import
ToTensor`）。v1 的 `torchvision.transforms.ToTensor` 没有弃用，不报告。

## Why is this bad?
`v2.ToTensor` 只是为了方便从 v1 API 迁移：torchvision 已将它弃用，每次构建都会警告，将来会移除。
它也不符合 v2 API：它返回普通张量而不是 `tv_tensors.Image`，于是后面的 v2 变换无法按类型把图像和样本中的
其他张量（框、掩码）区分开。torchvision 给出的替代把它的两件事拆开：`v2.ToImage()` 把 PIL 图像或数组转换成
`Image` 张量，`v2.ToDtype(torch.float32, scale=True)` 再把它转换成 [0, 1] 之间的浮点数。

## Symptoms
构建这个变换时：`UserWarning: The transform `ToTensor()` is deprecated and will be
removed in a future release. Instead, please use `v2.Compose([v2.ToImage(), v2.ToDtype(torch.
float32, scale=True)])`.Output is equivalent up to float precision.`；在移除它的版本中：
`AttributeError: module 'torchvision.transforms.v2' has no attribute 'ToTensor'`。

## Fix safety
修复用 torchvision 给出的替代写法替换这个调用，沿用调用的模块前缀（`v2.`、`T.`），并且只在调用经由模块、
且导入了 `torch` 时提供。它不安全，因为两者只对常见输入（8 位 PIL 图像和 `uint8` 数组）“在浮点精度内等价”：
`ToTensor` 对张量输入原样放行，对其他整数类型不做缩放（16 位或 32 位的 PIL 图像或数组仍是整数），而
`ToImage` + `ToDtype(scale=True)` 会把它们缩放到 [0, 1]；`ToTensor` 得到默认浮点类型，修复后是
`float32`；输出也是 `tv_tensors.Image`，而不是普通张量。

## Known problems
继承 `v2.ToTensor` 的类，或者没有被调用的引用（`transforms = [v2.ToTensor]`），不报告。

## References
- torchvision `torchvision/transforms/v2/_deprecated.py`（弃用及其警告信息）。
- TorchFix TOR202，同样的检查。
""",
    },
    example="""
import torch
from torchvision.transforms import v2

preprocess = v2.Compose([v2.RandomResizedCrop(224), v2.ToTensor()])
""",
    use_instead="""
import torch
from torchvision.transforms import v2

preprocess = v2.Compose([
    v2.RandomResizedCrop(224),
    v2.ToImage(),
    v2.ToDtype(torch.float32, scale=True),
])
""",
)

QUALNAMES = {
    "torchvision.transforms.v2.ToTensor",
    "torchvision.transforms.v2._deprecated.ToTensor",
}
TORCH = ast.Name(id="torch", ctx=ast.Load())


# Called for `x.ToTensor(...)`, `ToTensor(...)` and an alias of it an import binds.
@PITFALL.static(ast.Call, names={"ToTensor"}, imported=True)
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    func = call.func
    if type(func) is ast.Attribute:
        if func.attr != "ToTensor":
            return
    elif type(func) is not ast.Name or func.id not in ctx.imported:
        return
    if ctx.qualname(func) not in QUALNAMES:
        return
    fix = None
    # The replacement names `Compose`, `ToImage` and `ToDtype` through the call's own module.
    if type(func) is ast.Attribute and not call.args and ctx.qualname(TORCH) == "torch":
        module = ctx.text(func.value)
        new = f"{module}.Compose([{module}.ToImage(), {module}.ToDtype(torch.float32, scale=True)])"
        fix = ctx.fix(PITFALL, "unsafe", ctx.replace(call, new))
    yield ctx.finding(PITFALL, call, fix=fix, call=f"{ctx.text(func)}()")
