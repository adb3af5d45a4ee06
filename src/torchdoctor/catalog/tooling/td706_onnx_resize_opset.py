"""TD706 onnx-resize-opset: exporting interpolation to ONNX with an opset older than 11."""

from __future__ import annotations

import ast
from bisect import bisect_left
import re
from typing import Iterator

from torchdoctor.catalog.sdk import (
    MODULE_SELF_METHODS,
    Clue,
    Context,
    Finding,
    Pitfall,
    index_of,
    per_file,
)

PITFALL = Pitfall(
    code="TD706",
    name="onnx-resize-opset",
    title={
        "en": "ONNX export of an interpolating model with opset below 11",
        "zh": "以低于 11 的 opset 导出包含插值的模型到 ONNX",
    },
    messages={
        "": {
            "en": "`{model}` resizes with `{op}`, and ONNX Resize before opset 11 does not compute what PyTorch does: "
            "export with `opset_version=11` or later",
            "zh": "`{model}` 使用 `{op}` 做插值，而 opset 11 之前的 ONNX Resize 与 PyTorch 的计算方式不同："
            "请使用 `opset_version=11` 或更高版本导出",
        }
    },
    fix_title={"en": "Export with `opset_version=11`", "zh": "改用 `opset_version=11` 导出"},
    fix_applicability="unsafe",
    fix_hint={
        "en": "Export with `opset_version=11` or later: ONNX `Resize` matches PyTorch's "
        "interpolation (`align_corners`, half-pixel centres) only from opset 11.",
        "zh": "使用 `opset_version=11` 或更高版本导出：ONNX 的 `Resize` 从 opset 11 起才与 "
        "PyTorch 的插值（`align_corners`、半像素中心）一致。",
    },
    docs={
        "en": """
## What it catches
`torch.onnx.export(model, ..., opset_version=N)` with a literal `N` below 11, where `model`
is an instance of a class defined in the same file that resizes: `F.interpolate`,
`F.upsample`, `F.upsample_nearest`, `F.upsample_bilinear`, `nn.Upsample`,
`nn.UpsamplingNearest2d` or `nn.UpsamplingBilinear2d`, in the class itself, in a local base
class or in a local submodule class it builds.

Without `opset_version` nothing is reported: the default opset of current PyTorch releases
is far above 11.

## Why is this bad?
ONNX's `Upsample`/`Resize` operators before opset 11 have no attributes for how pixel
coordinates map between the input and the output (`coordinate_transformation_mode`,
`nearest_mode`). The exported graph therefore cannot express PyTorch's `align_corners` and
half-pixel conventions, and the ONNX model returns values that differ from the PyTorch model
at the borders or everywhere, depending on the mode. The export itself succeeds with only a
warning, so the difference shows up later as worse accuracy in deployment.

## Symptoms
`UserWarning: You are trying to export the model with onnx:Resize for ONNX opset version 10.
This operator might cause results to not match the expected results by PyTorch. ONNX's
Upsample/Resize operator did not match Pytorch's Interpolation until opset 11.`
Older PyTorch releases refuse the export instead: `RuntimeError: ONNX export failed: Couldn't
export operator aten::upsample_bilinear2d` (after `UserWarning: ONNX export failed on
upsample_bilinear2d because align_corners == True not supported`), or
`Exporting the operator upsample_bilinear2d to ONNX opset version 9 is not supported`.

## Fix safety
The fix raises the opset to 11. It is unsafe: an older runtime that only supports the old
opset can no longer load the file.

## Known problems
Models built elsewhere (imported, loaded from a checkpoint, passed as parameters) are not
followed.
""",
        "zh": """
## What it catches
`torch.onnx.export(model, ..., opset_version=N)` 中 `N` 是小于 11 的字面量，并且 `model` 是本文件中定义的类的实例，
而这个类会做插值：`F.interpolate`、`F.upsample`、`F.upsample_nearest`、`F.upsample_bilinear`、`nn.Upsample`、
`nn.UpsamplingNearest2d` 或 `nn.UpsamplingBilinear2d`，出现在该类本身、本地基类或它构建的本地子模块类中都算。

没有写 `opset_version` 时不会报告：当前 PyTorch 版本的默认 opset 远高于 11。

## Why is this bad?
opset 11 之前 ONNX 的 `Upsample`/`Resize` 算子没有描述输入输出像素坐标如何对应的属性
（`coordinate_transformation_mode`、`nearest_mode`）。导出的计算图因此无法表达 PyTorch 的 `align_corners`
和半像素约定，ONNX 模型的输出会在边缘甚至所有位置上与 PyTorch 模型不同（取决于插值模式）。
导出本身只给出一条警告就成功了，所以问题往往到部署后才以精度下降的形式暴露出来。

## Symptoms
`UserWarning: You are trying to export the model with onnx:Resize for ONNX opset version 10.
This operator might cause results to not match the expected results by PyTorch. ONNX's
Upsample/Resize operator did not match Pytorch's Interpolation until opset 11.`
较早的 PyTorch 版本则直接拒绝导出：`RuntimeError: ONNX export failed: Couldn't
export operator aten::upsample_bilinear2d`（之前还有 `UserWarning: ONNX export failed on
upsample_bilinear2d because align_corners == True not supported`），或
`Exporting the operator upsample_bilinear2d to ONNX opset version 9 is not supported`。

## Fix safety
修复会把 opset 提高到 11。它是不安全的：只支持旧 opset 的旧版推理运行时将无法再加载导出的文件。

## Known problems
在别处构建的模型（从其他模块导入、从 checkpoint 加载、作为参数传入）不会被追踪。
""",
    },
    example="""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Decoder(nn.Module):
    def forward(self, x):
        return F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)


model = Decoder().eval()
torch.onnx.export(model, (torch.randn(1, 3, 8, 8),), "decoder.onnx", opset_version=10)
""",
    use_instead="""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Decoder(nn.Module):
    def forward(self, x):
        return F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)


model = Decoder().eval()
torch.onnx.export(model, (torch.randn(1, 3, 8, 8),), "decoder.onnx", opset_version=11)
""",
)

FIRST_RESIZE_OPSET = 11
_EXPORTS = frozenset({"torch.onnx.export", "torch.onnx.utils.export"})
_RESIZE_FUNCTIONS = frozenset({"interpolate", "upsample", "upsample_nearest", "upsample_bilinear"})
_RESIZE_MODULES = frozenset({"Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"})
_RESIZE_NAMES = _RESIZE_FUNCTIONS | _RESIZE_MODULES


@PITFALL.static(ast.Call, names={"export"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    opset = _old_opset(call)
    if opset is None or not call.args or ctx.qualname(call.func) not in _EXPORTS:
        return
    cls = _model_class(call.args[0], call, ctx)
    if cls is None:
        return
    op = _class_resize_op(ctx, cls)
    if op is None:
        return
    fix = ctx.fix(PITFALL, "unsafe", ctx.replace(opset, str(FIRST_RESIZE_OPSET)))
    yield ctx.finding(PITFALL, opset, fix=fix, model=ctx.text(call.args[0]), op=op)


def _old_opset(call: ast.Call) -> ast.Constant | None:
    for keyword in call.keywords:
        value = keyword.value
        if (
            keyword.arg == "opset_version"
            and isinstance(value, ast.Constant)
            and type(value.value) is int
            and value.value < FIRST_RESIZE_OPSET
        ):
            return value
    return None


def _model_class(model: ast.AST, call: ast.Call, ctx: Context) -> ast.ClassDef | None:
    """The local class `model` is an instance of: `Net()`, or a name last assigned one."""
    if isinstance(model, ast.Name):
        model = _last_assignment(model.id, call, ctx)
    model = _strip_module_methods(model)
    if not isinstance(model, ast.Call) or not isinstance(model.func, ast.Name):
        return None
    return _classes(ctx).get(model.func.id)


def _strip_module_methods(value: ast.AST | None) -> ast.AST | None:
    """`Net().eval().to(device)` -> `Net()`: these module methods return the module itself."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in MODULE_SELF_METHODS
    ):
        value = value.func.value
    return value


def _last_assignment(name: str, call: ast.Call, ctx: Context) -> ast.AST | None:
    """The value of the last plain `name = ...` before `call` in the same scope (of several on
    that line, the first)."""
    lines, values = _assignments(ctx, ctx.enclosing_function() or ctx.tree, name)
    before = bisect_left(lines, call.lineno)
    if not before:
        return None
    return values[bisect_left(lines, lines[before - 1])]


@per_file
def _assignments(ctx: Context, scope: ast.AST, name: str) -> tuple[list[int], list[ast.AST]]:
    """The lines of the assignments of `name` in the scope (nested scopes included), sorted,
    and their values, equal lines in source order."""
    assignments = sorted(
        index_of(ctx, scope).assignments(scope, name), key=lambda node: node.lineno
    )
    return [node.lineno for node in assignments], [node.value for node in assignments]


@per_file
def _classes(ctx: Context) -> dict[str, ast.ClassDef]:
    """Classes defined at the top level of the file, by name."""
    return {node.name: node for node in ctx.tree.body if type(node) is ast.ClassDef}


@per_file
def _class_resize_op(ctx: Context, cls: ast.ClassDef) -> str | None:
    """`_resize_op` of a class, found once however many exports name it."""
    return _resize_op(cls, ctx, set())


def _resize_op(cls: ast.ClassDef, ctx: Context, seen: set[str]) -> str | None:
    """The first torch resize function or module used by `cls`, its local bases and the local
    classes it instantiates; None when there is none."""
    seen.add(cls.name)
    local = _classes(ctx)
    own, used = _own_resize_op(ctx, cls)
    if own is not None:
        return own
    for name in used:
        if name in local and name not in seen:
            op = _resize_op(local[name], ctx, seen)
            if op is not None:
                return op
    return None


@per_file
def _own_resize_op(ctx: Context, cls: ast.ClassDef) -> tuple[str | None, list[str]]:
    """The first torch resize call in the class itself, else the names of the classes it may
    build on (its bases, then what it calls by name)."""
    used = [base.id for base in cls.bases if isinstance(base, ast.Name)]
    for node in ast.walk(cls):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in _RESIZE_NAMES and (ctx.qualname(func) or "").startswith("torch.nn"):
            return ctx.text(func), used
        if isinstance(func, ast.Name):
            used.append(func.id)
    return None, used


_RESIZE_CAUSE = {
    "en": "The model interpolates (`F.interpolate` / `nn.Upsample`) and is exported with ONNX "
    "opset {opset}; ONNX Upsample/Resize cannot express PyTorch's interpolation before "
    "opset 11.",
    "zh": "模型中有插值（`F.interpolate` / `nn.Upsample`），却以 ONNX opset {opset} 导出；opset 11 "
    "之前的 ONNX Upsample/Resize 无法表达 PyTorch 的插值方式。",
}
PITFALL.error(
    r"You are trying to export the model with onnx:(?:Upsample|Resize) for ONNX opset version "
    r"(?P<opset>\d+)",
    types=(),
    confidence=0.95,
    cause=_RESIZE_CAUSE,
)
PITFALL.error(
    r"ONNX export failed on (?:ATen operator )?(?P<op>upsample_\w+) because "
    r"(?:align_corners == True not supported|torch\.onnx\.symbolic_opset(?P<opset>\d+)\.)",
    types=(),
    confidence=0.9,
    cause={
        "en": "`{op}` (from `F.interpolate` / `nn.Upsample`) cannot be exported with this "
        "opset; ONNX supports PyTorch's interpolation modes from opset 11.",
        "zh": "`{op}`（来自 `F.interpolate` / `nn.Upsample`）无法用当前 opset 导出；ONNX 从 opset 11 "
        "起才支持 PyTorch 的插值方式。",
    },
)
PITFALL.error(
    r"Couldn't export operator aten::(?P<op>upsample_\w+)",
    types=(),
    confidence=0.8,
    cause={
        "en": "`{op}` (from `F.interpolate` / `nn.Upsample`) could not be exported; with "
        "an opset below 11 that is expected.",
        "zh": "`{op}`（来自 `F.interpolate` / `nn.Upsample`）无法导出；opset 低于 11 时这是预料之中的。",
    },
)


@PITFALL.error_check(
    types=("UnsupportedOperatorError", "RuntimeError"), words=("exporting the operator",)
)
def unsupported_resize(block, report) -> Clue | None:
    """`Exporting the operator upsample_bilinear2d to ONNX opset version 9 is not supported`:
    ours only below opset 11; above, raising the opset is no fix (antialiased resizes...)."""
    found = _UNSUPPORTED.search(block.message)
    if found is None or int(found.group("opset")) >= FIRST_RESIZE_OPSET:
        return None
    return Clue(0.95, _RESIZE_CAUSE, None, found.groupdict())


_UNSUPPORTED = re.compile(
    r"Exporting the operator '?(?:aten::)?(?P<op>_?upsample_\w+|interpolate|resize)'? to ONNX "
    r"opset version (?P<opset>\d+) is not supported"
)
