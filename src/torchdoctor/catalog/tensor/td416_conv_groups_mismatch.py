"""TD416 conv-groups-mismatch: a convolution whose literal channel counts `groups` does not divide."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import Clue, Context, Finding, Pitfall, keyword_value, lazy_compile

PITFALL = Pitfall(
    code="TD416",
    name="conv-groups-mismatch",
    title={
        "en": "Convolution channels not divisible by `groups`",
        "zh": "卷积的通道数不能被 `groups` 整除",
    },
    messages={
        "": {
            "en": "{channels} = {count} is not divisible by groups = {groups}: `{layer}(...)` "
            "raises `ValueError: {channels} must be divisible by groups`; make both channel "
            "counts multiples of `groups`",
            "zh": "{channels} = {count} 不能被 groups = {groups} 整除：`{layer}(...)` 会抛出 "
            "`ValueError: {channels} must be divisible by groups`；请让两个通道数都是 `groups` 的倍数",
        },
    },
    fix_hint={
        "en": "Choose `groups` that divides both `in_channels` and `out_channels` (a depthwise "
        "convolution uses `groups=in_channels` and `out_channels = k * in_channels`).",
        "zh": "选择能同时整除 `in_channels` 和 `out_channels` 的 `groups`（深度可分离卷积用 "
        "`groups=in_channels`，且 `out_channels = k * in_channels`）。",
    },
    docs={
        "en": """
## What it catches
`nn.Conv1d/2d/3d` and `nn.ConvTranspose1d/2d/3d` built with integer literals for `groups`
and a channel count (`in_channels` or `out_channels`) that `groups` does not divide,
positionally or by keyword: `nn.Conv2d(6, 4, 3, groups=4)`.

## Why is this bad?
A grouped convolution splits the input channels into `groups` groups and gives each its own
share of the output channels, so both counts must be multiples of `groups`. The constructor
checks it, so the model cannot even be built.

## Symptoms
`ValueError: in_channels must be divisible by groups` or
`ValueError: out_channels must be divisible by groups` where the layer is created.

## Known problems
Only integer literals are compared: channel counts or groups held in variables or computed are
not followed. `nn.LazyConv2d` and the other lazy forms are not checked.
""",
        "zh": """
## What it catches
用整数字面量给出 `groups` 和某个通道数（`in_channels` 或 `out_channels`）、而该通道数不能被
`groups` 整除的 `nn.Conv1d/2d/3d` 和 `nn.ConvTranspose1d/2d/3d`，位置参数或关键字参数
均可：`nn.Conv2d(6, 4, 3, groups=4)`。

## Why is this bad?
分组卷积把输入通道分成 `groups` 组，每组得到同样份额的输出通道，所以两个通道数都必须是
`groups` 的倍数。构造函数会检查这一点，模型根本无法创建。

## Symptoms
在创建该层的地方出现 `ValueError: in_channels must be divisible by groups` 或
`ValueError: out_channels must be divisible by groups`。

## Known problems
只比较整数字面量：保存在变量中或经过计算的通道数和 groups 不会被追踪。`nn.LazyConv2d` 等延迟初始化的版本不检查。
""",
    },
    example="""
import torch.nn as nn

block = nn.Sequential(
    nn.Conv2d(32, 48, kernel_size=3, padding=1, groups=32),
    nn.ReLU(),
)
""",
    use_instead="""
import torch.nn as nn

block = nn.Sequential(
    nn.Conv2d(32, 64, kernel_size=3, padding=1, groups=32),
    nn.ReLU(),
)
""",
)

_CONVS = ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")
_CLASSES = frozenset(f"torch.nn.{name}" for name in _CONVS)
# Positional index of each argument, the same in every one of them.
_POSITIONS = {"in_channels": 0, "out_channels": 1, "groups": 6}


@PITFALL.static(ast.Call, names=_CONVS)
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if ctx.call_qualname(call) not in _CLASSES:
        return
    groups = _literal(call, "groups")
    if groups is None or groups <= 0:
        return  # a non-positive groups fails with another message
    for channels in ("in_channels", "out_channels"):  # the order torch checks them in
        count = _literal(call, channels)
        if count is not None and count % groups:
            layer = ctx.text(call.func)
            yield ctx.finding(
                PITFALL, call, channels=channels, count=count, groups=groups, layer=layer
            )
            return


def _literal(call: ast.Call, name: str) -> int | None:
    """The integer literal passed as argument `name`, by keyword or position."""
    value = keyword_value(call, name)
    at = _POSITIONS[name]
    if value is None and at < len(call.args):
        if any(isinstance(arg, ast.Starred) for arg in call.args[: at + 1]):
            return None
        value = call.args[at]
    if isinstance(value, ast.Constant) and type(value.value) is int:
        return value.value
    return None


PITFALL.error(
    r"(?P<channels>in_channels|out_channels) must be divisible by groups",
    types=(),
    confidence=0.95,
    cause={
        "en": "A convolution layer was built with `{channels}` not a multiple of `groups`: each "
        "of the `groups` groups must get the same number of input and output channels.",
        "zh": "创建卷积层时 `{channels}` 不是 `groups` 的倍数：`groups` 个分组中的每一组必须分到"
        "相同数量的输入和输出通道。",
    },
)
# The same mismatch met at call time, by a weight made by hand (`F.conv2d`, a dynamic or
# deformable convolution reshaping its weight): the weight's dimension 0, its output channels,
# is fewer than `groups` or not a multiple of it.
_WEIGHT_GROUPS = lazy_compile(
    r"Given groups=(?P<groups>\d+), expected weight to be (?:at least \d+|divisible by \d+) "
    r"at dimension 0, but got weight of size \[(?P<weight>[\d, ]*)\]"
)
# `F.conv2d(x, w, groups=c)` with `c` read off the input (`c = x.shape[1]`): groups follows the
# input's channels, so the weight is more likely right and the input of the wrong shape.
_GROUPS_FROM_INPUT = lazy_compile(r"groups\s*=\s*(?:[a-z]\b|[\w.\[\]]{0,40}(?:shape|size)\b)")
_WEIGHT_GROUPS_CAUSE = {
    "en": "The convolution ran with groups={groups} on a weight of size [{weight}], whose "
    "dimension 0 (output channels) is not a positive multiple of `groups`: a weight built or "
    "reshaped by hand must be (out_channels, in_channels // groups, *kernel), with "
    "out_channels a multiple of `groups`.",
    "zh": "卷积以 groups={groups} 运行，但权重大小为 [{weight}]，其第 0 维（输出通道数）不是 "
    "`groups` 的正整数倍：手工构造或 reshape 的权重必须是 (out_channels, in_channels // groups, "
    "*kernel)，且 out_channels 是 `groups` 的倍数。",
}


@PITFALL.error_check(types=(), words=("expected weight to be",))
def weight_groups(block, report) -> Clue | None:
    found = _WEIGHT_GROUPS.search(block.message)
    if found is None:
        return None
    frames = [frame for shown in report.blocks for frame in shown.frames]
    if any(_GROUPS_FROM_INPUT.search(frame.source or "") for frame in frames):
        return None
    return Clue(0.85, _WEIGHT_GROUPS_CAUSE, None, found.groupdict())
