"""TD807 torchvision-pretrained-argument: a torchvision model built with `pretrained=`."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.deprecated._torchvision_weights import BUILDERS, NAMES, PARAMETERS
from torchdoctor.catalog.sdk import Context, Finding, Pitfall, in_compat_fallback, shorten

PITFALL = Pitfall(
    code="TD807",
    name="torchvision-pretrained-argument",
    title={
        "en": "A torchvision model built with the deprecated `pretrained=` instead of `weights=`",
        "zh": "构建 torchvision 模型时用了已弃用的 `pretrained=`，而不是 `weights=`",
    },
    messages={
        "": {
            "en": "`{old}=` is deprecated since torchvision 0.13: here it loads `{enum}`; pass "
            '`{new}="{member}"` for the same weights (`{new}="DEFAULT"` picks the best ones, '
            "which may differ)",
            "zh": "`{old}=` 自 torchvision 0.13 起已弃用：这里它加载的是 `{enum}`；传入 "
            '`{new}="{member}"` 得到相同的权重（`{new}="DEFAULT"` 选用最好的权重，可能与之不同）',
        },
        "flag": {
            "en": "`{old}=` is deprecated since torchvision 0.13: when `{flag}` is true it loads "
            '`{enum}`; pass `{new}="{member}" if {flag} else None` for the same weights',
            "zh": "`{old}=` 自 torchvision 0.13 起已弃用：当 `{flag}` 为真时它加载的是 `{enum}`；"
            '传入 `{new}="{member}" if {flag} else None` 得到相同的权重',
        },
        "false": {
            "en": "`{old}=` is deprecated since torchvision 0.13: `{old}=False` is `{new}=None`",
            "zh": "`{old}=` 自 torchvision 0.13 起已弃用：`{old}=False` 就是 `{new}=None`",
        },
        "positional": {
            "en": "`{value}` here is `pretrained={value}`, passed by position: deprecated since "
            'torchvision 0.13; it loads `{enum}`: pass `weights="{member}"` for the same weights',
            "zh": "这里的 `{value}` 就是按位置传入的 `pretrained={value}`：自 torchvision 0.13 起已弃用；"
            '它加载的是 `{enum}`：传入 `weights="{member}"` 得到相同的权重',
        },
        "positional-false": {
            "en": "`False` here is `pretrained=False`, passed by position: deprecated since "
            "torchvision 0.13; pass `weights=None`",
            "zh": "这里的 `False` 就是按位置传入的 `pretrained=False`：自 torchvision 0.13 起已弃用；"
            "请传入 `weights=None`",
        },
        "unknown": {
            "en": "`{old}=` is deprecated since torchvision 0.13: pass `{new}=` a member of the "
            "builder's weights enum (or a name of one, or `None`)",
            "zh": "`{old}=` 自 torchvision 0.13 起已弃用：请给 `{new}=` 传入该模型权重枚举的成员"
            "（或成员的名字，或 `None`）",
        },
    },
    fix_title={
        "en": "Pass `weights=` the weights `pretrained=` stands for",
        "zh": "改为给 `weights=` 传入 `pretrained=` 所代表的权重",
    },
    fix_applicability="safe",
    docs={
        "en": """
## What it catches
A torchvision model builder called with `pretrained=` or `pretrained_backbone=`: the
classification builders (`torchvision.models.resnet50`, `vgg16`, `efficientnet_b0`...), and
those of `torchvision.models.detection`, `segmentation`, `video`, `optical_flow` and
`quantization`, however they are imported (`torchvision.models.resnet50`,
`from torchvision import models; models.resnet50`, `from torchvision.models import resnet50`,
an alias, the defining module `torchvision.models.resnet`). Another library's `pretrained=`
(timm's `create_model(name, pretrained=True)`, a project's own builder) is not reported.

## Why is this bad?
torchvision 0.13 replaced the boolean by `weights=`, which names the weights it loads
(`ResNet50_Weights.IMAGENET1K_V1`, or its name as a string). `pretrained=` still works through
a compatibility wrapper that warns on every call and may be removed. What `pretrained=True`
loads is not `DEFAULT`: it is the old checkpoint of each model (`IMAGENET1K_V1` for ImageNet
classifiers, `COCO_V1` for detection, `COCO_WITH_VOC_LABELS_V1` for segmentation,
`KINETICS400_V1` for video), while `DEFAULT` is the best one torchvision has today, which for
`resnet50`, `resnet101`, `resnet152`, `resnext`, `wide_resnet`, `mobilenet_v2`,
`mobilenet_v3_large`, `efficientnet_b1` and the `regnet`s is `IMAGENET1K_V2`, trained with a
newer recipe and with other preprocessing (`weights.transforms()`). Swapping one for the
other silently changes a model's accuracy and the inputs it expects.

## Symptoms
`UserWarning: The parameter 'pretrained' is deprecated since 0.13 and may be removed in the
future, please use 'weights' instead.` then `UserWarning: Arguments other than a weight enum or
`None` for 'weights' are deprecated since 0.13 and may be removed in the future. The current
behavior is equivalent to passing `weights=ResNet50_Weights.IMAGENET1K_V1`. You can also use
`weights=ResNet50_Weights.DEFAULT` to get the most up-to-date weights.` On a future release
that drops the wrapper: `TypeError: ... got an unexpected keyword argument 'pretrained'`.

## Fix safety
The fix is safe: it passes exactly what torchvision's wrapper passes, the member's name as a
string (`weights="IMAGENET1K_V1"`), which every builder turns back into the enum member
(`Weights.verify`) on every release since 0.13, with no import to add. `pretrained=False`
becomes `weights=None`; a computed flag `pretrained=flag` becomes
`weights="IMAGENET1K_V1" if flag else None`, which the wrapper does too (it tests the flag's
truth). The quantized builders pick their member from `quantize=`: the fix is offered only when
`quantize=` is absent or a constant. There is no fix where the member depends on another
argument (`keypointrcnn_resnet50_fpn`, `resnet_fpn_backbone`), where the builder has no such
weights (`pretrained=True` raises `ValueError` for `regnet_y_128gf` and `vit_h_14`), or where
the call also passes `weights=` or `**kwargs`. Prefer `weights="DEFAULT"` by hand when you want
today's best weights, and take the preprocessing from `weights.transforms()`.

## Known problems
Nothing is reported where the project promises to run on a torchvision older than 0.13 (a lower
bound such as `torchvision>=0.8.1` in its requirements or packaging metadata, or else its
README): `weights=` does not exist there. An exact pin is no promise.

The positional form (`resnet50(True)`, `alexnet(False)`: the builders' first parameter was
`pretrained`) is reported too when the flag is written as `True` or `False`, and fixed in place
when it is the call's only positional argument. A project function or a wrapper that forwards
`pretrained=` to a torchvision builder is not reported; `torch.hub.load("pytorch/vision",
"resnet50", pretrained=True)` neither, nor a builder looked up at run time
(`torchvision.models.__dict__[name](pretrained=True)`). The table of builders is torchvision
0.29's. On 20 real projects (libraries, tutorials and research code) it reports 6 calls, all
true (PyTorch-GAN, pytorch-tutorial).

## References
- torchvision, `torchvision/models/_utils.py` `handle_legacy_interface`, and the "Models and
  pre-trained weights" page (the multi-weight support API).
- TorchFix TOR201, the same check (its fix writes `DEFAULT` or the enum, and needs an import).
""",
        "zh": """
## What it catches
调用 torchvision 的模型构建函数时传了 `pretrained=` 或 `pretrained_backbone=`：分类模型
（`torchvision.models.resnet50`、`vgg16`、`efficientnet_b0` 等），以及
`torchvision.models.detection`、`segmentation`、`video`、`optical_flow`、`quantization` 中的构建函数，
无论以何种方式导入（`torchvision.models.resnet50`、`from torchvision import models; models.resnet50`、
`from torchvision.models import resnet50`、别名、定义它的模块 `torchvision.models.resnet`）。其他库的
`pretrained=`（timm 的 `create_model(name, pretrained=True)`、项目自己的构建函数）不报告。

## Why is this bad?
torchvision 0.13 用 `weights=` 取代了这个布尔参数，`weights=` 点明加载的是哪份权重
（`ResNet50_Weights.IMAGENET1K_V1`，或者它的名字字符串）。`pretrained=` 目前仍能通过一个兼容包装工作，
但每次调用都会警告，将来可能被移除。`pretrained=True` 加载的并不是 `DEFAULT`：它是每个模型的旧权重
（ImageNet 分类模型是 `IMAGENET1K_V1`，检测是 `COCO_V1`，分割是 `COCO_WITH_VOC_LABELS_V1`，视频是
`KINETICS400_V1`）；而 `DEFAULT` 是 torchvision 现在最好的权重，对 `resnet50`、`resnet101`、`resnet152`、
`resnext`、`wide_resnet`、`mobilenet_v2`、`mobilenet_v3_large`、`efficientnet_b1` 和各个 `regnet` 来说是
`IMAGENET1K_V2`，用更新的训练方法得到，预处理也不同（`weights.transforms()`）。把一个换成另一个，
会悄悄改变模型的精度和它期望的输入。

## Symptoms
`UserWarning: The parameter 'pretrained' is deprecated since 0.13 and may be removed in the
future, please use 'weights' instead.`，接着是 `UserWarning: Arguments other than a weight enum or
`None` for 'weights' are deprecated since 0.13 and may be removed in the future. The current
behavior is equivalent to passing `weights=ResNet50_Weights.IMAGENET1K_V1`. You can also use
`weights=ResNet50_Weights.DEFAULT` to get the most up-to-date weights.`。在去掉兼容包装的未来版本中：
`TypeError: ... got an unexpected keyword argument 'pretrained'`。

## Fix safety
这个修复是安全的：它传入的正是 torchvision 兼容包装所传的值，即成员名字符串（`weights="IMAGENET1K_V1"`），
自 0.13 起每个版本的构建函数都会把它转换回枚举成员（`Weights.verify`），而且不需要添加导入。
`pretrained=False` 改为 `weights=None`；计算出来的标志 `pretrained=flag` 改为
`weights="IMAGENET1K_V1" if flag else None`，兼容包装也是这样做的（它检查标志的真值）。量化模型的构建函数
根据 `quantize=` 选择成员：只有 `quantize=` 没有传或者是常量时才提供修复。成员取决于其他参数时
（`keypointrcnn_resnet50_fpn`、`resnet_fpn_backbone`）、构建函数没有这样的权重时（`regnet_y_128gf` 和
`vit_h_14` 的 `pretrained=True` 会抛出 `ValueError`），或者调用同时传了 `weights=` 或 `**kwargs` 时，
不提供修复。想要现在最好的权重时，请手动改用 `weights="DEFAULT"`，并从 `weights.transforms()` 取得预处理。

## Known problems
项目声明支持早于 0.13 的 torchvision 时（其 requirements 或打包元数据中的下界，如
`torchvision>=0.8.1`；都没有时看 README）不报告：那些版本没有 `weights=`。精确固定的版本不算承诺。

按位置传入的形式（`resnet50(True)`、`alexnet(False)`：构建函数的第一个参数原本就是 `pretrained`）在标志写成
`True` 或 `False` 时也会报告；当它是调用中唯一的位置参数时会就地修复。转发 `pretrained=` 给
torchvision 构建函数的项目函数或包装不报告；`torch.hub.load("pytorch/vision", "resnet50",
pretrained=True)` 也不报告，运行时查找的构建函数（`torchvision.models.__dict__[name](pretrained=True)`）
也不报告。构建函数的列表取自 torchvision 0.29。在 20 个真实项目（库、教程和研究代码）上它报告了 6 处调用，
全部属实（PyTorch-GAN、pytorch-tutorial）。

## References
- torchvision `torchvision/models/_utils.py` 中的 `handle_legacy_interface`，以及文档
  “Models and pre-trained weights”（多权重支持 API）。
- TorchFix TOR201，同样的检查（它的修复写成 `DEFAULT` 或枚举，需要添加导入）。
""",
    },
    example="""
from torchvision import models

model = models.resnet50(pretrained=True)
""",
    use_instead="""
from torchvision import models

model = models.resnet50(weights="IMAGENET1K_V1")
""",
)


# The torchvision release that brought `weights=`.
WEIGHTS_SINCE = "0.13"


@PITFALL.static(ast.Call, names=NAMES, imported=True)
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if not call.keywords and not call.args:
        return
    func = call.func
    # Cheap gates before resolving: an attribute keeps the builder's own name (`models.vgg16`);
    # only a bare imported name can be an alias of it. The engine calls it only
    # for these names, bare or imported under another (see `imported`); the gates still turn
    # away a bare name of these that no import binds.
    if type(func) is ast.Attribute:
        if func.attr not in NAMES:
            return
    elif type(func) is not ast.Name or func.id not in ctx.imported:
        return
    if ctx.project.supports_before("torchvision", WEIGHTS_SINCE):
        return  # `weights=` would break the older torchvision the project promises to run on
    given = {k.arg: k for k in call.keywords}
    if "pretrained" not in given and "pretrained_backbone" not in given:
        yield from _positional(call, given, ctx)
        return
    members = BUILDERS.get(ctx.qualname(func) or "")
    if members is None or in_compat_fallback(ctx, call):
        return  # not a builder, or code kept for the torchvision that has no `weights=`
    spread = None in given  # `**kwargs` may hold the new argument
    for (old, new), spec in zip(PARAMETERS, members):
        keyword = given.get(old)
        if keyword is None:
            continue
        flag = keyword.value
        member = _member(spec, given.get("quantize"))
        enum, _, name = member.partition(".")
        fixable = not spread and new not in given
        if isinstance(flag, ast.Constant) and not flag.value:
            fix = ctx.fix(PITFALL, "safe", ctx.replace(keyword, f"{new}=None")) if fixable else None
            yield ctx.finding(PITFALL, keyword, "false", fix=fix, old=old, new=new)
            continue
        if not member:
            yield ctx.finding(PITFALL, keyword, "unknown", old=old, new=new)
            continue
        variant, shown = "", {}
        if isinstance(flag, ast.Constant):
            value = f'"{name}"'
        else:
            condition = ctx.text(flag)
            if type(flag) in (ast.IfExp, ast.Lambda, ast.NamedExpr):
                condition = f"({condition})"  # the condition of `a if b else c` is an or-test
            value = f'"{name}" if {condition} else None'
            # `pretrained=args.pretrained`: the weights load only when the flag is true
            variant, shown = "flag", {"flag": shorten(condition, limit=40)}
        fix = ctx.fix(PITFALL, "safe", ctx.replace(keyword, f"{new}={value}")) if fixable else None
        yield ctx.finding(
            PITFALL, keyword, variant, fix=fix, old=old, new=new, enum=member, member=name, **shown
        )


def _positional(call: ast.Call, given: dict, ctx: Context) -> Iterator[Finding]:
    """`models.alexnet(True)`: the builders' first parameter was `pretrained` before 0.13, and a
    bool passed there still is (lpips-pytorch's `tv.alexnet(True)`)."""
    flag = call.args[0] if call.args else None
    if not isinstance(flag, ast.Constant) or type(flag.value) is not bool:
        return
    members = BUILDERS.get(ctx.qualname(call.func) or "")
    if members is None or "weights" in given or in_compat_fallback(ctx, call):
        return
    (old, new), spec = PARAMETERS[0], members[0]
    if old != "pretrained":
        return
    # Only a lone positional argument becomes a keyword in place (`resnet50(True, True)` would
    # put a positional after it).
    fixable = len(call.args) == 1 and None not in given
    if not flag.value:
        fix = ctx.fix(PITFALL, "safe", ctx.replace(flag, f"{new}=None")) if fixable else None
        yield ctx.finding(PITFALL, flag, "positional-false", fix=fix)
        return
    member = _member(spec, given.get("quantize"))
    if not member:
        yield ctx.finding(PITFALL, flag, "unknown", old=old, new=new)
        return
    enum, _, name = member.partition(".")
    fix = ctx.fix(PITFALL, "safe", ctx.replace(flag, f'{new}="{name}"')) if fixable else None
    yield ctx.finding(PITFALL, flag, "positional", fix=fix, value="True", enum=member, member=name)


def _member(spec: str, quantize: ast.keyword | None) -> str:
    """The member `spec` stands for, given the call's `quantize=`; "" when it cannot be told."""
    plain, _, quantized = spec.partition("|")
    if not quantized:
        return plain
    if quantize is None:
        return plain
    if isinstance(quantize.value, ast.Constant):
        return quantized if quantize.value.value else plain
    return ""
