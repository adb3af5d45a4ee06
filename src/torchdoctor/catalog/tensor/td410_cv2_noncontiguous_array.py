"""TD410 cv2-noncontiguous-array: OpenCV drawing on a channel-reversed numpy view."""

from __future__ import annotations

import ast
from bisect import bisect_left
from typing import Iterator

from torchdoctor.catalog.sdk import Context, Finding, Pitfall, index_of, per_file, shorten

PITFALL = Pitfall(
    code="TD410",
    name="cv2-noncontiguous-array",
    title={
        "en": "OpenCV drawing on a non-contiguous (reversed or reindexed) array",
        "zh": "在不连续（反转或重新索引得到的）数组上调用 OpenCV 绘图函数",
    },
    messages={
        "": {
            "en": "`cv2.{function}` draws only into contiguous images, and `{view}` is not contiguous: "
            "use `cv2.cvtColor` or `np.ascontiguousarray`",
            "zh": "`cv2.{function}` 只能在内存连续的图像上绘制，而 `{view}` 不是连续数组："
            "请使用 `cv2.cvtColor` 或 `np.ascontiguousarray`",
        }
    },
    needs_torch=False,  # OpenCV scripts often never import torch
    docs={
        "en": """
## What it catches
An OpenCV drawing function (`cv2.rectangle`, `cv2.circle`, `cv2.line`, `cv2.putText`,
`cv2.polylines`, `cv2.fillPoly`, `cv2.drawContours`...) called on an image made by
reversing or reindexing numpy axes: `img[:, :, ::-1]`, `img[..., ::-1]`, `img[::-1]`,
`img[..., [2, 1, 0]]`, either directly or through a name last assigned such a view.

`img[..., ::-1].copy()`, `np.ascontiguousarray(img[..., ::-1])` and `cv2.cvtColor(...)` make
contiguous arrays and are not reported.

## Why is this bad?
Slicing with a negative step returns a view with negative strides, and indexing the channel
axis with a list returns a copy whose channels are not interleaved the way OpenCV expects.
Neither array is C-contiguous, so OpenCV cannot wrap it as a `cv::Mat` to draw into it.
Current OpenCV versions reject it with an error; older ones drew into a temporary copy, so
the boxes and labels silently never appeared on the image you display or save.

## Symptoms
`cv2.error: OpenCV(4.x) :-1: error: (-5:Bad argument) in function 'rectangle'`
`> Overload resolution failed:` `>  - Layout of the output array img is incompatible with cv::Mat`
`>  - Expected Ptr<cv::UMat> for argument 'img'`; with old OpenCV versions, boxes or text
that never show up on the image.

## Known problems
Only views made in the same function (or module) are followed; images made non-contiguous
by `transpose` or by `Tensor.permute(...).numpy()` are not recognized.
""",
        "zh": """
## What it catches
在通过反转或重新索引 numpy 维度得到的图像上调用 OpenCV 绘图函数（`cv2.rectangle`、`cv2.circle`、`cv2.line`、
`cv2.putText`、`cv2.polylines`、`cv2.fillPoly`、`cv2.drawContours` 等）：`img[:, :, ::-1]`、`img[..., ::-1]`、
`img[::-1]`、`img[..., [2, 1, 0]]`，直接传入，或者通过最后一次被赋值为这种视图的变量传入。

`img[..., ::-1].copy()`、`np.ascontiguousarray(img[..., ::-1])` 和 `cv2.cvtColor(...)` 得到的是连续数组，不会报告。

## Why is this bad?
步长为负的切片返回的是负步长的视图；用列表索引通道维得到的副本，其通道排布也不是 OpenCV 期望的交错方式。
这两种数组都不是 C 连续的，OpenCV 无法把它们包装成 `cv::Mat` 在上面绘图。
新版 OpenCV 会直接报错；旧版会画在一个临时副本上，于是你显示或保存的图像上，框和文字都悄无声息地消失了。

## Symptoms
`cv2.error: OpenCV(4.x) :-1: error: (-5:Bad argument) in function 'rectangle'`
`> Overload resolution failed:` `>  - Layout of the output array img is incompatible with cv::Mat`
`>  - Expected Ptr<cv::UMat> for argument 'img'`；旧版 OpenCV 下则表现为框或文字根本没有出现在图像上。

## Known problems
只追踪同一函数（或模块）中生成的视图；由 `transpose` 或 `Tensor.permute(...).numpy()` 造成的不连续数组无法识别。
""",
    },
    example="""
import cv2

image = cv2.imread("photo.jpg")
rgb = image[:, :, ::-1]
cv2.rectangle(rgb, (10, 10), (100, 100), (255, 0, 0), 2)
""",
    use_instead="""
import cv2

image = cv2.imread("photo.jpg")
rgb = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
cv2.rectangle(rgb, (10, 10), (100, 100), (255, 0, 0), 2)
""",
)

# OpenCV functions that draw into their first argument in place.
DRAWING = frozenset(
    """
rectangle circle line arrowedLine putText polylines fillPoly fillConvexPoly ellipse
drawContours drawMarker
""".split()
)


@PITFALL.static(ast.Call, names=DRAWING)
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    image = _image_argument(call)
    if image is None or not isinstance(image, (ast.Name, ast.Subscript)):
        return
    function = call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id
    if ctx.qualname(call.func) != f"cv2.{function}":
        return
    view = image if isinstance(image, ast.Subscript) else _last_value(image.id, call, ctx)
    if not _is_noncontiguous_view(view):
        return
    yield ctx.finding(PITFALL, image, function=function, view=shorten(ctx.text(view)))


def _image_argument(call: ast.Call) -> ast.AST | None:
    if call.args:
        return None if isinstance(call.args[0], ast.Starred) else call.args[0]
    return next((keyword.value for keyword in call.keywords if keyword.arg == "img"), None)


def _is_noncontiguous_view(value: ast.AST | None) -> bool:
    """`a[..., ::-1]`, `a[::-1]`, `a[:, :, [2, 1, 0]]`: negative steps or a list on a later axis."""
    if not isinstance(value, ast.Subscript):
        return False
    index = value.slice
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    if any(isinstance(part, ast.Slice) and _is_negative(part.step) for part in parts):
        return True
    return any(_is_int_list(part) for part in parts[1:])


def _is_negative(step: ast.AST | None) -> bool:
    return (
        isinstance(step, ast.UnaryOp)
        and isinstance(step.op, ast.USub)
        and isinstance(step.operand, ast.Constant)
        and type(step.operand.value) is int
        and step.operand.value > 0
    )


def _is_int_list(part: ast.AST) -> bool:
    return (
        isinstance(part, ast.List)
        and len(part.elts) > 1
        and all(isinstance(e, ast.Constant) and type(e.value) is int for e in part.elts)
    )


def _last_value(name: str, call: ast.Call, ctx: Context) -> ast.AST | None:
    """The value of the last binding of `name` before `call` in its scope, when that binding
    is a plain `name = value`; None for any other kind of binding (loop, `with`, unpacking)."""
    stores, latest = _bindings(ctx, ctx.enclosing_function() or ctx.tree, name)
    before = bisect_left(stores, (call.lineno, call.col_offset))
    return latest[before - 1] if before else None


@per_file
def _bindings(ctx: Context, scope: ast.AST, name: str) -> tuple[list, list]:
    """Where `name` is stored in `scope` (not in nested scopes), sorted; and for each store
    the value of the latest binding statement among it and those before it (None when that
    one is not a plain `name = value`)."""
    found = index_of(ctx, scope)
    bindings = []
    for node in found.names_in(scope, name):
        if not isinstance(node.ctx, ast.Store) or found.scopes[found.number[node]] is not scope:
            continue
        statement, value = node, None
        parent = found.parents[node]
        if (
            isinstance(parent, ast.Assign)
            and len(parent.targets) == 1
            and parent.targets[0] is node
        ):
            statement, value = parent, parent.value
        bindings.append(
            ((node.lineno, node.col_offset), (statement.lineno, statement.col_offset), value)
        )
    bindings.sort(key=lambda binding: binding[0])
    latest, best = [], None
    for binding in bindings:
        if best is None or binding[1] > best[1]:
            best = binding
        latest.append(best[2])
    return [binding[0] for binding in bindings], latest


# Also the message alone, cut short by an issue title (`... incompatible with cv:`).
PITFALL.error(
    r"Layout of the output array (?:\w+ )?is incompatible with cv\b",
    types=(),
    confidence=0.9,
    cause={
        "en": "OpenCV cannot draw into the image: it is not a C-contiguous array (a view made by "
        "`[..., ::-1]` or a channel reindex, or a tensor's `.permute(...).numpy()`).",
        "zh": "OpenCV 无法在该图像上绘制：它不是 C 连续数组（由 `[..., ::-1]` 或通道重排得到的视图，"
        "或张量 `.permute(...).numpy()` 的结果）。",
    },
    fix={
        "en": "Draw on `np.ascontiguousarray(img)` (or convert colours with `cv2.cvtColor`).",
        "zh": "在 `np.ascontiguousarray(img)` 上绘制（或用 `cv2.cvtColor` 转换颜色）。",
    },
)
# What OpenCV 4 says of the same output array (no overload took it): also of an argument that
# is not a numpy array at all (a tensor, a PIL image), hence the lower confidence.
PITFALL.error(
    r"Expected Ptr<cv::UMat> for argument '(?P<argument>\w+)'",
    types=(),
    confidence=0.6,
    cause={
        "en": "OpenCV could not take `{argument}` as an image: a numpy view that is not "
        "C-contiguous (a `transpose`, `[..., ::-1]`, a tensor's `.permute(...).numpy()`), or not "
        "a numpy array at all (a tensor, a PIL image).",
        "zh": "OpenCV 无法把 `{argument}` 当作图像：它是非 C 连续的 numpy 视图（`transpose`、"
        "`[..., ::-1]`、张量 `.permute(...).numpy()` 的结果），或者根本不是 numpy 数组（张量、PIL "
        "图像）。",
    },
    fix={
        "en": "Pass `np.ascontiguousarray(img)`; convert a tensor with `.cpu().numpy()` and a PIL "
        "image with `np.asarray(...)` first.",
        "zh": "传入 `np.ascontiguousarray(img)`；张量先用 `.cpu().numpy()`、PIL 图像先用 "
        "`np.asarray(...)` 转换。",
    },
)
