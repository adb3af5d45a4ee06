"""TD802 deprecated-loss-reduction-args: `size_average=` / `reduce=` on a loss instead of
`reduction=`, or the old spelling `reduction="elementwise_mean"`."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import (
    LOSS_BASE,
    attribute_values,
    is_self_attribute,
    moves_itself,
    unwrap_self_methods,
    Context,
    Edit,
    Finding,
    Pitfall,
    bindings,
    parameter_default,
    scope_of,
    top_level_classes,
)

PITFALL = Pitfall(
    code="TD802",
    name="deprecated-loss-reduction-args",
    title={
        "en": "Legacy `size_average=` / `reduce=` / `reduction='elementwise_mean'` of a loss",
        "zh": "损失函数使用了旧的 `size_average=` / `reduce=` / `reduction='elementwise_mean'` 参数",
    },
    messages={
        "": {
            "en": "legacy loss flags `{legacy}` (deprecated since PyTorch 0.4.1): "
            "use `reduction='{reduction}'`",
            "zh": "旧版损失参数 `{legacy}`（自 PyTorch 0.4.1 起弃用）：请改用 `reduction='{reduction}'`",
        },
        "unknown": {
            "en": "legacy loss flags `{legacy}` (deprecated since PyTorch 0.4.1): "
            "use `reduction=` ('mean', 'sum' or 'none')",
            "zh": "旧版损失参数 `{legacy}`（自 PyTorch 0.4.1 起弃用）：请改用 `reduction=`"
            "（'mean'、'sum' 或 'none'）",
        },
        "override": {
            "en": "legacy loss flags `{legacy}` win over `reduction=` in the same call: "
            "this loss uses `reduction='{reduction}'`",
            "zh": "旧版损失参数 `{legacy}` 优先于同一调用中的 `reduction=`：这个损失实际使用的是 "
            "`reduction='{reduction}'`",
        },
        "positional": {
            "en": "`{legacy}` is passed in the place of the legacy `size_average` flag "
            "(deprecated since PyTorch 0.4.1): pass `reduction=` ('mean', 'sum' or 'none') "
            "by keyword instead",
            "zh": "`{legacy}` 按位置传给了旧版的 `size_average` 参数（自 PyTorch 0.4.1 起弃用）："
            "请改为用关键字传 `reduction=`（'mean'、'sum' 或 'none'）",
        },
        "override-unknown": {
            "en": "legacy loss flags `{legacy}` win over `reduction=` in the same call: "
            "replace them with the `reduction=` you mean",
            "zh": "旧版损失参数 `{legacy}` 优先于同一调用中的 `reduction=`：请用你真正想要的 `reduction=` 替换它们",
        },
        "attribute": {
            "en": "`{legacy}` changes nothing: a loss reads `reduction`, fixed when it was built "
            "(PyTorch 0.4.1 and later); pass `reduction=` ('mean', 'sum' or 'none') to "
            "`{loss}(...)` instead",
            "zh": "`{legacy}` 不起任何作用：损失读取的是构造时就确定的 `reduction`（PyTorch 0.4.1 "
            "及以后）；请改为在 `{loss}(...)` 中传入 `reduction=`（'mean'、'sum' 或 'none'）",
        },
        "elementwise-mean": {
            "en": "`{legacy}` is the pre-0.4.1 name of `reduction='mean'` (deprecated: PyTorch "
            "warns when the loss is computed): use `reduction='mean'`",
            "zh": "`{legacy}` 是 PyTorch 0.4.1 之前 `reduction='mean'` 的名字（已弃用：计算这个损失时 "
            "PyTorch 会发出警告）：请改用 `reduction='mean'`",
        },
        "elementwise-mean-error": {
            "en": "`{legacy}` is the pre-0.4.1 name of `reduction='mean'`, and this loss does not "
            "accept it (ValueError: elementwise_mean is not valid): use `reduction='mean'`",
            "zh": "`{legacy}` 是 PyTorch 0.4.1 之前 `reduction='mean'` 的名字，而这个损失不接受它"
            "（ValueError: elementwise_mean is not valid）：请改用 `reduction='mean'`",
        },
    },
    fix_title={
        "en": 'Replace with `reduction="{reduction}"`',
        "zh": '替换为 `reduction="{reduction}"`',
    },
    fix_applicability="safe",
    fix_hint={
        "en": "Replace `size_average=` / `reduce=` with one `reduction=` argument: "
        "`'mean'` (the default), `'sum'`, or `'none'` (for `reduce=False`).",
        "zh": "用一个 `reduction=` 参数替换 `size_average=` / `reduce=`：`'mean'`（默认）、"
        "`'sum'`，或 `'none'`（对应 `reduce=False`）。",
    },
    docs={
        "en": """
## What it catches
The legacy `size_average=` and `reduce=` keyword arguments of PyTorch's losses: the loss
modules (`nn.MSELoss`, `nn.CrossEntropyLoss`, `nn.NLLLoss`, `nn.BCELoss`, `nn.KLDivLoss`,
`nn.SmoothL1Loss` and the other `torch.nn` losses that accept them) and the functional losses
(`F.mse_loss`, `F.cross_entropy`, `F.nll_loss`, ...), also when the flag is passed by
position (`nn.NLLLoss2d(weight, size_average)`, `F.kl_div(a, b, False)`), or passed on by a subclass
of a torch loss (`super().__init__(weight, reduce=False)`; also through a class of the file,
or of another module of the project, between them that defines no `__init__`: basic_unet_example's
`CrossentropyND(torch.nn.CrossEntropyLoss)`). Explicit `None` for
both (their default) is not reported. Also `reduction="elementwise_mean"`, the name `'mean'` had
in PyTorch 0.4.0, given by keyword to the same losses or to `nn.HuberLoss`, `nn.CTCLoss` and
`nn.GaussianNLLLoss` (and their functional forms), also through a name the function sets to it
first (`reduction = "elementwise_mean"`, then `reduction=reduction`) or a parameter defaulting to it
(`def __init__(self, reduction='elementwise_mean')` of a loss subclass). And the flags set as attributes of a loss
module once it is built (`criterion.size_average = False`, or `self.loss_fn.size_average = False`
on the one loss its class builds), which changes nothing.

## Why is this bad?
PyTorch 0.4.1 replaced the two booleans with one `reduction=` argument, and every loss built
with them prints a deprecation warning. The two flags are also easy to get wrong:
`reduce=False` makes `size_average` meaningless, and when either flag is given, PyTorch ignores
the `reduction=` argument of the same call entirely. Code such as
`nn.MSELoss(size_average=False, reduction="mean")` quietly sums instead of averaging, so the
loss and the gradients are larger than the author expects by the number of elements, and a
learning rate tuned for the mean makes training diverge.

The mapping PyTorch applies (a missing flag counts as `True`):
- `reduce=False` -> `reduction='none'`
- otherwise `size_average=True` -> `reduction='mean'`
- otherwise -> `reduction='sum'`

`reduction="elementwise_mean"` is still read as `'mean'` by most losses (PyTorch 2.13), with a
warning each time the loss runs, but `poisson_nll_loss` / `nn.PoissonNLLLoss` and
`multilabel_soft_margin_loss` / `nn.MultiLabelSoftMarginLoss` and `gaussian_nll_loss` /
`nn.GaussianNLLLoss` reject it with a ValueError.

## Symptoms
`UserWarning: size_average and reduce args will be deprecated, please use reduction='sum' instead.`
(with `'mean'` or `'none'` in place of `'sum'`, depending on the flags). A loss whose scale
does not follow `reduction=` because legacy flags in the same call override it.
`UserWarning: reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.`,
or `ValueError: elementwise_mean is not a valid value for reduction` (`poisson_nll_loss`) and
`ValueError: elementwise_mean is not valid` (`multilabel_soft_margin_loss`,
`gaussian_nll_loss`).
`explain` also reads `F.kl_div`'s warning that its `reduction='mean'` is deprecated:
`UserWarning: reduction: 'mean' divides the total loss by both the batch size and the support
size.'batchmean' divides only by the batch size, and aligns with the KL div math definition.`
The check does not report that argument: `'batchmean'` changes the loss's scale.

## Fix safety
The fix replaces the flags with the `reduction=` value PyTorch itself derives from them (and
rewrites an existing `reduction=` to that value), so the loss computes exactly what it
computed before. It is offered only when both flags are the literals `True`, `False` or
`None`, and not when the call passes `**kwargs` or enough positional arguments to reach the
flags. `reduction="elementwise_mean"` becomes `reduction="mean"`: the same computation where the
loss accepts the old name (PyTorch maps one to the other), and the mean that was meant where it
raises.

## Known problems
Flags passed by position (`F.mse_loss(a, b, False)`) are reported without a fix, and
`"elementwise_mean"` passed by position is not reported; loss classes derived from the
`torch.nn` ones are not reported.

## References
- `torch/nn/_reduction.py`, `legacy_get_string`: the mapping above.
""",
        "zh": """
## What it catches
PyTorch 损失函数的旧参数 `size_average=` 和 `reduce=`：包括损失模块（`nn.MSELoss`、
`nn.CrossEntropyLoss`、`nn.NLLLoss`、`nn.BCELoss`、`nn.KLDivLoss`、`nn.SmoothL1Loss` 以及其他接受这两个参数的
`torch.nn` 损失）和函数式损失（`F.mse_loss`、`F.cross_entropy`、`F.nll_loss` 等），按位置传入旧参数时也报告
（`nn.NLLLoss2d(weight, size_average)`、`F.kl_div(a, b, False)`），torch 损失的子类把它们
转交给父类时也报告（`super().__init__(weight, reduce=False)`；中间隔着本文件或项目其他模块中一个没有自己
`__init__` 的类时也一样：basic_unet_example 的 `CrossentropyND(torch.nn.CrossEntropyLoss)`）。两个参数都显式写成
`None`（即默认值）时不报告。同样报告对这些损失用关键字传入的 `reduction="elementwise_mean"`，
即 `'mean'` 在 PyTorch 0.4.0 中的名字；对 `nn.HuberLoss`、`nn.CTCLoss`、`nn.GaussianNLLLoss`
（及其函数式版本）也一样；先把某个名字设为这个值再传入（`reduction = "elementwise_mean"`，
然后 `reduction=reduction`），或参数默认值就是它（损失子类的
`def __init__(self, reduction='elementwise_mean')`），也报告。还报告在损失模块构造之后把这两个参数当作属性设置的写法
（`criterion.size_average = False`，或类中只构造了一个损失时的 `self.loss_fn.size_average = False`），它不起任何作用。

## Why is this bad?
PyTorch 0.4.1 用一个 `reduction=` 参数取代了这两个布尔开关，用旧参数构造的损失都会打印弃用警告。
这两个开关也很容易用错：`reduce=False` 时 `size_average` 不起作用；而只要给了其中任何一个，
PyTorch 就会完全忽略同一调用里的 `reduction=`。像 `nn.MSELoss(size_average=False, reduction="mean")`
这样的代码实际是在求和而不是求平均，损失和梯度都比作者以为的大了“元素个数”倍，按平均值调好的学习率
会让训练发散，却没有任何报错。

PyTorch 使用的对应关系（没给的开关按 `True` 处理）：
- `reduce=False` -> `reduction='none'`
- 否则 `size_average=True` -> `reduction='mean'`
- 否则 -> `reduction='sum'`

`reduction="elementwise_mean"` 在大多数损失中仍被当作 `'mean'`（PyTorch 2.13），但每次计算损失都会
发出警告；而 `poisson_nll_loss` / `nn.PoissonNLLLoss` 与 `multilabel_soft_margin_loss` /
`nn.MultiLabelSoftMarginLoss`、`gaussian_nll_loss` / `nn.GaussianNLLLoss` 会直接抛出 ValueError。

## Symptoms
`UserWarning: size_average and reduce args will be deprecated, please use reduction='sum' instead.`
（根据开关的取值，`'sum'` 也可能是 `'mean'` 或 `'none'`）。也可能表现为损失的量级与 `reduction=`
不符，因为同一调用中的旧参数覆盖了它。
`UserWarning: reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.`，
或者 `ValueError: elementwise_mean is not a valid value for reduction`（`poisson_nll_loss`）和
`ValueError: elementwise_mean is not valid`（`multilabel_soft_margin_loss`、`gaussian_nll_loss`）。
`explain` 也识别 `F.kl_div` 关于其 `reduction='mean'` 已弃用的警告：
`UserWarning: reduction: 'mean' divides the total loss by both the batch size and the support
size.'batchmean' divides only by the batch size, and aligns with the KL div math definition.`
静态检查不报告这个参数：`'batchmean'` 会改变损失的量级。

## Fix safety
修复用 PyTorch 自己从这两个开关推导出的 `reduction=` 取值替换它们（若已有 `reduction=`，则把它改成这个值），
所以损失的计算结果与修改前完全一致。只有当两个开关都是字面量 `True`、`False` 或 `None`，
并且调用中没有 `**kwargs`、位置参数也没有多到覆盖这两个开关时，才提供修复。
`reduction="elementwise_mean"` 会改成 `reduction="mean"`：对接受旧名字的损失，计算完全相同
（PyTorch 本来就把前者映射为后者）；对会报错的损失，得到的正是本来想要的平均值。

## Known problems
按位置传入的开关（`F.mse_loss(a, b, False)`）会被报告但不提供修复，按位置传入的
`"elementwise_mean"` 不会被报告；继承自 `torch.nn` 损失的自定义类也不会被报告。

## References
- `torch/nn/_reduction.py` 中的 `legacy_get_string`：即上面的对应关系。
""",
    },
    example="""
import torch.nn as nn

criterion = nn.CrossEntropyLoss(size_average=False)
""",
    use_instead="""
import torch.nn as nn

criterion = nn.CrossEntropyLoss(reduction="sum")
""",
)

PITFALL.error(
    # (from its second word: a terminal may wrap the warning inside "and")
    r"reduce args will be deprecated, please use reduction='(?P<reduction>\w+)' instead",
    types=(),
    confidence=0.95,
    cause={
        "en": "A loss is built with the legacy `size_average=` / `reduce=` flags; PyTorch "
        "maps them to `reduction='{reduction}'`.",
        "zh": "损失函数使用了旧的 `size_average=` / `reduce=` 参数；PyTorch 把它们换算成 "
        "`reduction='{reduction}'`。",
    },
    fix={
        "en": "Replace the flags with `reduction='{reduction}'` in the loss's constructor or call.",
        "zh": "在损失函数的构造或调用中，用 `reduction='{reduction}'` 替换这两个参数。",
    },
)
# The warning's first half alone (an issue title): which reduction it maps to is not said.
PITFALL.error(
    r"size_average and reduce args will be deprecated",
    types=(),
    confidence=0.9,
    cause={
        "en": "A loss is built with the legacy `size_average=` / `reduce=` flags, deprecated "
        "since PyTorch 0.4.1.",
        "zh": "损失函数使用了旧的 `size_average=` / `reduce=` 参数，它们自 PyTorch 0.4.1 起已弃用。",
    },
    fix={
        "en": "Replace the flags with `reduction=`: `'mean'` for the default, `'sum'` for "
        "`size_average=False`, `'none'` for `reduce=False`.",
        "zh": "用 `reduction=` 替换这两个参数：默认对应 `'mean'`，`size_average=False` 对应 `'sum'`，"
        "`reduce=False` 对应 `'none'`。",
    },
)

_OLD_MEAN_CAUSE = {
    "en": "A loss is given `reduction='elementwise_mean'`, the name `'mean'` had before "
    "PyTorch 0.4.1.",
    "zh": "损失函数收到了 `reduction='elementwise_mean'`，这是 PyTorch 0.4.1 之前 `'mean'` 的名字。",
}
_OLD_MEAN_FIX = {
    "en": "Write `reduction='mean'`: it computes the same mean without the warning.",
    "zh": "改写为 `reduction='mean'`：计算同样的平均值，且不再有警告。",
}
PITFALL.error(
    r"reduction='elementwise_mean' is deprecated",
    types=(),
    confidence=0.95,
    cause=_OLD_MEAN_CAUSE,
    fix=_OLD_MEAN_FIX,
)
PITFALL.error(
    r"^elementwise_mean is not (?:a )?valid",
    types=("ValueError",),
    confidence=0.95,
    cause=_OLD_MEAN_CAUSE,
    fix=_OLD_MEAN_FIX,
)
# `kl_div`'s `reduction='mean'`, whose meaning is deprecated: it averages over every element, not
# over the batch as the KL divergence does, and is to become `'batchmean'` (a warning per call).
PITFALL.error(
    r"'mean' divides the total loss by both the batch size and the support size"
    r"|'mean' will be changed to behave the same as 'batchmean'",
    types=(),
    confidence=0.85,
    cause={
        "en": "`F.kl_div` / `nn.KLDivLoss` is given `reduction='mean'` (the default), whose "
        "meaning is deprecated: it divides by the number of elements, not by the batch size as "
        "the KL divergence does, so the loss is smaller by the size of each distribution.",
        "zh": "`F.kl_div` / `nn.KLDivLoss` 使用了 `reduction='mean'`（默认值），它的含义已被弃用："
        "它除以元素总数，而不是像 KL 散度那样除以批大小，所以损失小了“每个分布的大小”倍。",
    },
    fix={
        "en": "Pass `reduction='batchmean'` for the KL divergence; the loss grows by the size of "
        "each distribution, so rescale its weight or the learning rate tuned for the old value.",
        "zh": "传入 `reduction='batchmean'` 得到真正的 KL 散度；损失会变大“每个分布的大小”倍，"
        "请相应调整它的权重或按旧值调好的学习率。",
    },
)

LEGACY = ("size_average", "reduce")
OLD_MEAN = "elementwise_mean"
# Losses that raise a ValueError for `reduction="elementwise_mean"` rather than warn (torch 2.13).
OLD_MEAN_REJECTED = frozenset(
    {
        "torch.nn.PoissonNLLLoss",
        "torch.nn.MultiLabelSoftMarginLoss",
        "torch.nn.modules.loss.PoissonNLLLoss",
        "torch.nn.modules.loss.MultiLabelSoftMarginLoss",
        "torch.nn.functional.poisson_nll_loss",
        "torch.nn.functional.multilabel_soft_margin_loss",
        "torch.nn.GaussianNLLLoss",
        "torch.nn.modules.loss.GaussianNLLLoss",
        "torch.nn.functional.gaussian_nll_loss",
    }
)
# Losses born after 0.4.1 (no legacy flags) that still read `reduction=` through torch's mapping.
_REDUCTION_ONLY_NAMES = ("HuberLoss", "CTCLoss", "GaussianNLLLoss")
_REDUCTION_ONLY_FUNCTIONS = ("huber_loss", "ctc_loss", "gaussian_nll_loss")
REDUCTION_ONLY = frozenset(
    {
        *(f"torch.nn.{name}" for name in _REDUCTION_ONLY_NAMES),
        *(f"torch.nn.modules.loss.{name}" for name in _REDUCTION_ONLY_NAMES),
        *(f"torch.nn.functional.{name}" for name in _REDUCTION_ONLY_FUNCTIONS),
    }
)
# Position of `size_average` among each loss's parameters (torch 2.13 signatures, self excluded):
# positional arguments up to it are safe to keep when the flags become `reduction=`.
LOSS_CLASSES = {
    "BCELoss": 1,
    "BCEWithLogitsLoss": 1,
    "CosineEmbeddingLoss": 1,
    "CrossEntropyLoss": 1,
    "HingeEmbeddingLoss": 1,
    "KLDivLoss": 0,
    "L1Loss": 0,
    "MSELoss": 0,
    "MarginRankingLoss": 1,
    "MultiLabelMarginLoss": 0,
    "MultiLabelSoftMarginLoss": 1,
    "MultiMarginLoss": 3,
    "NLLLoss": 1,
    "NLLLoss2d": 1,
    "PoissonNLLLoss": 2,
    "SmoothL1Loss": 0,
    "SoftMarginLoss": 0,
    "TripletMarginLoss": 4,
}
LOSS_FUNCTIONS = {
    "binary_cross_entropy": 3,
    "binary_cross_entropy_with_logits": 3,
    "cosine_embedding_loss": 4,
    "cross_entropy": 3,
    "hinge_embedding_loss": 3,
    "kl_div": 2,
    "l1_loss": 2,
    "margin_ranking_loss": 4,
    "mse_loss": 2,
    "multi_margin_loss": 5,
    "multilabel_margin_loss": 2,
    "multilabel_soft_margin_loss": 3,
    "nll_loss": 3,
    "poisson_nll_loss": 4,
    "smooth_l1_loss": 2,
    "soft_margin_loss": 2,
    "triplet_margin_loss": 7,
}
LEGACY_POSITION = {
    **{f"torch.nn.{name}": index for name, index in LOSS_CLASSES.items()},
    **{f"torch.nn.modules.loss.{name}": index for name, index in LOSS_CLASSES.items()},
    **{f"torch.nn.functional.{name}": index for name, index in LOSS_FUNCTIONS.items()},
}
_MISSING = object()


@PITFALL.static(
    ast.Call,
    names={*LOSS_CLASSES, *LOSS_FUNCTIONS, *_REDUCTION_ONLY_NAMES, *_REDUCTION_ONLY_FUNCTIONS},
)
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    yield from _check_loss_call(call, ctx.qualname(call.func), ctx)


@PITFALL.static(ast.Call, names={"__init__"})
def check_super_init(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    """`super().__init__(weight, False, ignore_index, reduce=False)` in a subclass of a torch loss
    (UNet++'s `TopKLoss(CrossEntropyLoss)`): the flags reach the torch class the same way."""
    func = call.func
    if not (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
    ):
        return
    cls = ctx.enclosing_class()
    if cls is None:
        return
    qualname = _torch_loss_base(cls, ctx)
    if qualname is not None:
        yield from _check_loss_call(call, qualname, ctx)


def _torch_loss_base(cls: ast.ClassDef, ctx: Context) -> str | None:
    """The torch loss class whose `__init__` a `super().__init__(...)` of `cls` runs: a base,
    or the base of a base of the file that defines no `__init__` of its own (nnUNet's
    `TopKLoss(RobustCrossEntropyLoss)`, itself a `CrossEntropyLoss` with its own `forward`)."""
    classes = top_level_classes(ctx)
    seen = {cls.name}
    while True:
        for base in cls.bases:
            qualname = ctx.qualname(base)
            if qualname in LEGACY_POSITION:
                return qualname
        if (
            len(cls.bases) == 1
            and isinstance(cls.bases[0], ast.Name)
            and cls.bases[0].id not in classes
        ):
            return _project_loss_base(cls.bases[0].id, ctx)
        own = [b for b in cls.bases if isinstance(b, ast.Name) and b.id in classes]
        if len(cls.bases) != 1 or len(own) != 1 or own[0].id in seen:
            return None
        cls = classes[own[0].id]
        seen.add(cls.name)
        if any(
            isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "__init__"
            for s in cls.body
        ):
            return None  # its own `__init__` takes other arguments


def _project_loss_base(name: str, ctx: Context) -> str | None:
    """The torch loss a class of another module of the project subclasses, when that class
    defines no `__init__` (basic_unet_example's `CrossentropyND(torch.nn.CrossEntropyLoss)`,
    base of `TopKLoss` in another file); by the project's facts."""
    for loss in LOSS_CLASSES:
        if ctx.project.has(f"{LOSS_BASE}{name}=nn.{loss}"):
            return f"torch.nn.{loss}"
    return None


def _check_loss_call(call: ast.Call, qualname: str | None, ctx: Context) -> Iterator[Finding]:
    """The legacy flags of a call that builds the torch loss `qualname` (or calls it)."""
    legacy = [k for k in call.keywords if k.arg in LEGACY]
    position = LEGACY_POSITION.get(qualname)  # type: ignore[arg-type]
    if position is None:
        if qualname in REDUCTION_ONLY:
            yield from _old_mean_name(call, qualname in OLD_MEAN_REJECTED, ctx)
        return
    if not legacy:
        yield from _old_mean_name(call, qualname in OLD_MEAN_REJECTED, ctx)
        # `nn.NLLLoss2d(weight, size_average, ignore_index)`: the flag passed by position.
        if len(call.args) > position and not any(
            isinstance(a, ast.Starred) for a in call.args[: position + 1]
        ):
            flag = call.args[position]
            # None is the default: no legacy path taken; nor by a parameter passed on.
            if _flag(flag) is not None and not _passed_on(flag, ctx):
                yield ctx.finding(PITFALL, flag, "positional", legacy=ctx.text(flag))
        return
    values = {k.arg: _flag(k.value) for k in legacy}
    if all(v is None or _passed_on(k.value, ctx) for k, v in zip(legacy, values.values())):
        # Both at their default, or passed on: no legacy path taken here; the old mean's
        # name may still be (a loss subclass's `reduction='elementwise_mean'` default).
        yield from _old_mean_name(call, qualname in OLD_MEAN_REJECTED, ctx)
        return
    reduction_keyword = next((k for k in call.keywords if k.arg == "reduction"), None)
    reduction = _legacy_reduction(values.get("size_average"), values.get("reduce"))
    variant = "override" if reduction_keyword else ""
    if reduction is None:
        variant = "override-unknown" if reduction_keyword else "unknown"
    fix = None
    if reduction is not None and _fixable(call, position):
        title = {lang: text.format(reduction=reduction) for lang, text in PITFALL.fix_title.items()}
        fix = ctx.fix(
            PITFALL, "safe", *_edits(call, legacy, reduction_keyword, reduction, ctx), title=title
        )
    text = ", ".join(" ".join(ctx.text(k).split()) for k in legacy)
    yield ctx.finding(
        PITFALL, legacy[0], variant, fix=fix, end_node=legacy[-1], legacy=text, reduction=reduction
    )


@PITFALL.static(ast.Attribute, names=LEGACY)
def check_attribute(target: ast.Attribute, ctx: Context) -> Iterator[Finding]:
    """`criterion.size_average = False` on a loss built from a torch class: the loss reads
    `reduction`, set once when it was built, so the flag changes nothing."""
    statement = ctx.parent()
    if not (
        isinstance(target.ctx, ast.Store)
        and isinstance(statement, ast.Assign)
        and any(t is target for t in statement.targets)
    ):
        return
    built = _built_loss(target.value, ctx)
    if built is None:
        return
    loss = ctx.qualname(built.func)
    if loss is None or loss.startswith("torch.nn.functional.") or loss not in LEGACY_POSITION:
        return
    yield ctx.finding(
        PITFALL,
        statement,
        "attribute",
        legacy=" ".join(ctx.text(statement).split()),
        loss=ctx.text(built.func),
    )


def _built_loss(owner: ast.AST, ctx: Context) -> ast.Call | None:
    """The one call that builds what `owner` names: a name bound once (`criterion =
    nn.MSELoss()`), or an attribute of `self` its class sets to one built object and perhaps
    moves (`self.loss_fn = nn.MSELoss()`, then `self.loss_fn = self.loss_fn.cuda()`: SentEval's
    `relatedness.py`)."""
    if isinstance(owner, ast.Name):
        found = bindings(ctx, scope_of(owner.id, ctx), owner.id) or ()
        built = [b.value for b in found if b.value is not None]
        if len(found) != 1 or len(built) != 1:
            return None
        return built[0] if isinstance(built[0], ast.Call) else None
    cls = ctx.enclosing_class()
    if not is_self_attribute(owner) or cls is None:
        return None
    name = f"self.{owner.attr}"  # type: ignore[attr-defined]
    made = [
        unwrap_self_methods(value)
        for value in attribute_values(ctx, cls, owner.attr)  # type: ignore[attr-defined]
        if not moves_itself(value, name)
    ]
    return made[0] if len(made) == 1 and isinstance(made[0], ast.Call) else None


def _old_mean_name(call: ast.Call, rejected: bool, ctx: Context) -> Iterator[Finding]:
    """`reduction="elementwise_mean"`: torch maps it to "mean" (or raises), so the fix is safe.
    Also through a name set to it first: reported at the call (what the loss is given), fixed
    where the name is given the old spelling."""
    for keyword in call.keywords:
        value = keyword.value
        if keyword.arg != "reduction":
            continue
        if isinstance(value, ast.Name):
            made = _old_mean_bound(value, ctx)
            if made is not None:
                yield _old_mean_finding(keyword, made, f"reduction={ctx.text(made)}", rejected, ctx)
        elif isinstance(value, ast.Constant) and value.value == OLD_MEAN:
            yield _old_mean_finding(keyword, value, ctx.text(keyword), rejected, ctx)


def _old_mean_finding(
    keyword: ast.keyword, literal: ast.Constant, legacy: str, rejected: bool, ctx: Context
) -> Finding:
    """The finding at `keyword`, with the safe fix of `literal` to "mean" (its quotes kept)."""
    quote = ctx.text(literal)[-1]
    title = {lang: text.format(reduction="mean") for lang, text in PITFALL.fix_title.items()}
    fix = ctx.fix(PITFALL, "safe", ctx.replace(literal, f"{quote}mean{quote}"), title=title)
    variant = "elementwise-mean-error" if rejected else "elementwise-mean"
    return ctx.finding(PITFALL, keyword, variant, fix=fix, legacy=legacy)


def _old_mean_bound(name: ast.Name, ctx: Context) -> ast.Constant | None:
    """`reduction = 'elementwise_mean'` in the function, before `reduction=reduction` (the
    default that a configuration may replace: openseg's losses), or the parameter's default
    (sentiment-discovery's loss subclasses): that literal."""
    function = ctx.enclosing_function()
    if function is None:
        return None
    found = bindings(ctx, function, name.id) or ()
    default = parameter_default(function, name.id)
    if (
        isinstance(default, ast.Constant)
        and default.value == OLD_MEAN
        and all(isinstance(b.node, ast.arg) for b in found)
    ):
        return default  # `def __init__(self, reduction='elementwise_mean')`, passed on as is
    for binding in found:
        value = binding.value
        if (
            isinstance(value, ast.Constant)
            and value.value == OLD_MEAN
            and binding.node.lineno < name.lineno
            and not binding.augmented
        ):
            return value
    return None


def _passed_on(value: ast.AST, ctx: Context) -> bool:
    """`value` is a parameter of the enclosing function that defaults to None, handed on as
    it came (`super().__init__(weight, size_average, reduction=reduction)` in a loss subclass):
    the legacy path is taken only where a caller sets it, and that call is where to report."""
    function = ctx.enclosing_function()
    if type(value) is not ast.Name or function is None:
        return False
    default = parameter_default(function, value.id)
    if not (isinstance(default, ast.Constant) and default.value is None):
        return False
    found = bindings(ctx, function, value.id) or ()
    return all(isinstance(b.node, ast.arg) for b in found)  # never rebound in the function


def _flag(value: ast.AST) -> object:
    """The literal True/False/None of a flag; _MISSING for anything else."""
    if isinstance(value, ast.Constant) and (value.value is None or isinstance(value.value, bool)):
        return value.value
    return _MISSING


def _legacy_reduction(size_average: object, reduce: object) -> str | None:
    """What torch.nn._reduction.legacy_get_string returns; None when a flag is not a literal."""
    if size_average is _MISSING or reduce is _MISSING:
        return None
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


def _fixable(call: ast.Call, position: int) -> bool:
    if any(k.arg is None for k in call.keywords):  # **kwargs may hold a reduction or a flag
        return False
    if any(isinstance(a, ast.Starred) for a in call.args):
        return False
    return len(call.args) <= position  # no positional argument lands on a flag


def _edits(
    call: ast.Call,
    legacy: list[ast.keyword],
    reduction_keyword: ast.keyword | None,
    reduction: str,
    ctx: Context,
) -> list[Edit]:
    """The first of the flags and `reduction=` becomes `reduction="..."`; the others go."""
    arguments = sorted([*call.args, *call.keywords], key=lambda n: (n.lineno, n.col_offset))
    involved = sorted(
        [*legacy, *([reduction_keyword] if reduction_keyword else [])], key=arguments.index
    )
    edits = [ctx.replace(involved[0], f'reduction="{reduction}"')]
    for keyword in involved[1:]:
        previous = arguments[arguments.index(keyword) - 1]
        edits.append(ctx.edit(*_deletion(previous, keyword, ctx), ""))
    return edits


def _deletion(previous: ast.AST, keyword: ast.keyword, ctx: Context) -> tuple[int, int]:
    """The span that removes `keyword` and one comma, keeping the comments of other lines."""
    start, end = ctx.span(keyword)
    source = ctx.source
    # Line bounds as Python counts lines: a form feed or U+2028 does not end one.
    line_start = ctx.offset(keyword.lineno, 0)
    line_end = ctx.offset(keyword.end_lineno + 1, 0)
    rest = source[end:line_end].strip()
    if (
        keyword.lineno == keyword.end_lineno > previous.end_lineno
        and not source[line_start:start].strip()
        and (rest in ("", ",") or rest.lstrip(",").lstrip().startswith("#"))
    ):
        return line_start, line_end  # the keyword's own line, with its comma and comment
    return ctx.span(previous)[1], end  # from the end of the previous argument: its comma goes
