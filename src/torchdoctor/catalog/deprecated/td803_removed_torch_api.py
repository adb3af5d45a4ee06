"""TD803 removed-torch-api: PyTorch APIs that were renamed, removed, or that no longer do anything."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Iterator

from torchdoctor.catalog.deprecated._fallbacks import outside_compat_fallbacks
from torchdoctor.catalog.sdk import (
    TORCH_STAR_EXPORTS,
    lazy_compile,
    Clue,
    Context,
    Edit,
    Finding,
    Fix,
    Kind,
    Pitfall,
    dotted_name,
    index,
    index_of,
    only_identified,
    per_file,
)

_OUTSIDE_COMPAT_FALLBACKS = outside_compat_fallbacks(guarded_imports=True, defaults_replaced=False)

PITFALL = Pitfall(
    code="TD803",
    name="removed-torch-api",
    title={
        "en": "Renamed, removed or no-op PyTorch API",
        "zh": "使用了已改名、已移除或已不起作用的 PyTorch API",
    },
    messages={
        "": {"en": "`{old}` is deprecated: use `{new}`", "zh": "`{old}` 已弃用：请改用 `{new}`"},
        "removed": {
            "en": "`{old}` was removed from PyTorch and fails today: use `{new}`, "
            "whose arguments or results differ (check its documentation)",
            "zh": "`{old}` 已从 PyTorch 中移除，如今调用会直接报错：请改用 `{new}`，"
            "注意它的参数或返回值有所不同（请查阅文档）",
        },
        "keyword": {
            "en": "`{old}=` is deprecated: it is called `{new}=`",
            "zh": "`{old}=` 已弃用：现在叫 `{new}=`",
        },
        "keyword-removed": {
            "en": "`{old}=` was removed and raises a TypeError today: "
            "it is called `{new}=` since PyTorch 0.4",
            "zh": "`{old}=` 已被移除，如今会抛出 TypeError：自 PyTorch 0.4 起它叫 `{new}=`",
        },
    },
    fix_title={"en": "Use `{new}`", "zh": "改用 `{new}`"},
    fix_applicability="safe",
    fix_hint={
        "en": "Replace the removed name with its successor (the cause names it); when the "
        "import is inside an installed package, upgrade that package instead of "
        "editing it.",
        "zh": "用后继 API 替换已移除的名字（原因中已给出）；如果这条导入位于已安装的第三方包中，"
        "请升级该包，而不是修改它的源码。",
    },
    docs={
        "en": """
## What it catches
PyTorch APIs from before 1.0 that were renamed, removed, or kept only as no-ops:
- `loss.backward(retain_variables=True)`: renamed to `retain_graph=` in 0.4, removed since.
- `torch.autograd.backward(..., grad_variables=...)`: renamed to `grad_tensors=`.
- The in-place initialisers without their trailing underscore, `nn.init.xavier_uniform`,
  `xavier_normal`, `kaiming_uniform`, `kaiming_normal`, `uniform`, `normal`, `constant`,
  `orthogonal`, `sparse`, `eye`, `dirac`, and `nn.utils.clip_grad_norm`: deprecated aliases
  of `xavier_uniform_` ... `clip_grad_norm_`.
- `F.upsample`, `F.upsample_nearest`, `F.upsample_bilinear`: deprecated in favour of
  `F.interpolate`.
- Functions that are gone and fail when called: `torch.gels`, `torch.gesv`, `torch.potrf`,
  `torch.potrs`, `torch.trtrs`, `torch.btrifact`, `torch.btrisolve`, `torch.symeig`,
  `torch.eig`, `torch.solve`, `torch.lstsq`, `torch.matrix_rank`, `torch.rfft`,
  `torch.irfft`, `torch.ifft` (the `torch.linalg` and `torch.fft` modules replace them).

Names are resolved through imports, so `init.xavier_uniform`, `torch.nn.init.xavier_uniform`
and `from torch.nn.init import xavier_uniform` are all found; after `from torch.nn.init import
*`, where no import names it, a call of `orthogonal(w)` is reported where it is used. `Variable(x, volatile=True)` is
`variable-wrapper`'s (TD103) to report: the wrapper and its flag are both obsolete, and one
finding says so.

Code kept for older versions of torch is not reported: an `except ImportError` or `except
AttributeError` branch (and the `try` it guards), or a branch of an `if` that tests the
version (`if TORCH_GTE_1_7:`, `if hasattr(torch, "fft"):`, or a name the module binds to such
a test at its top level: `_native_complex = torch_version >= "1.7.0"`, then `if
_native_complex:`).

## Why is this bad?
Old tutorials and repositories are full of these names, and each fails differently. The
removed functions and `retain_variables=` crash the script, often only after the first
epoch, when the code path is reached. The deprecated aliases still work but print a warning
on every call, burying warnings that matter. `volatile=True` is the worst: it used to turn off
gradient recording for inference, and now it silently does nothing, so evaluation keeps the
whole autograd graph in memory and runs out of GPU memory at a batch size that used to fit.

## Symptoms
- `UserWarning: volatile was removed and now has no effect. Use `with torch.no_grad():` instead.`
- `TypeError: Tensor.backward() got an unexpected keyword argument 'retain_variables'`
- `FutureWarning: `nn.init.xavier_uniform` is now deprecated in favor of `nn.init.xavier_uniform_`.`
- `FutureWarning: `torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.`
- `UserWarning: `nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.`
- `RuntimeError: This function was deprecated since version 1.9 and is now removed.` (for
  `torch.symeig`, `torch.eig`, `torch.solve`, `torch.lstsq`, `torch.matrix_rank`)
- `AttributeError: module 'torch' has no attribute 'gels'` (and the other removed names)
- `ImportError: cannot import name '_update_worker_pids' from 'torch._C'` (a copy of the
  DataLoader of PyTorch 1.0, whose private helpers PyTorch 1.1 reorganised)
- `ImportError: cannot import name 'container_abcs' from 'torch._six'` (PyTorch 1.9+),
  `ModuleNotFoundError: No module named 'torch._six'`, `AttributeError: module 'torch' has no
  attribute '_six'` (PyTorch 2.0+): the Python 2 compatibility module is gone, usually
  imported by an old release of a library (apex, timm, mmcv...).
- `AttributeError: module 'torch' has no attribute 'Any'` (PyTorch 2.5+): `typing` names such as
  `Any` and `Optional` no longer leak into the `torch` namespace.
- `CUDA out of memory` during evaluation that still passes `volatile=True`.

## Fix safety
Pure renames are fixed safely: the underscore initialisers, `clip_grad_norm_`,
`F.interpolate` for `F.upsample` and `F.upsample_nearest` (the same parameters, and exactly
what the old names call), `retain_graph=` and `grad_tensors=`. For a name imported with
`from ... import`, the import becomes `new_name as old_name`, so every use keeps working.
`F.upsample_bilinear(...)` becomes `F.interpolate(..., mode="bilinear", align_corners=True)`:
that is what PyTorch runs for it, but the call changes shape, so the fix is unsafe; review
it. Removed functions whose replacements take their arguments in another order or return
something else (`torch.solve`, `torch.symeig`, ...) are reported without a fix: they need a
person.

## Known problems
Not reported: an import from torch in a `try` whose handler catches its failure (`except
ImportError:` with a fallback), and a deprecated alias read in a statement that assigns the
same attribute (`F.upsample = wrap(F.upsample)`: a tool wrapping torch's functions in place).

Calling these as tensor methods (`x.symeig()`) is not reported, nor is `F.upsample_bilinear`
passed as a value. `x.cuda(async=True)` from the same era is a syntax error since Python 3.7
and is reported by `syntax-error` (TD700), which offers the rename to `non_blocking=True`.

## References
- PyTorch 0.4.0 migration guide: `volatile`, `retain_graph`.
- `torch/nn/init.py` (`_make_deprecate`), `torch/nn/utils/clip_grad.py`,
  `torch/nn/functional.py` (`upsample*`) in PyTorch 2.13.
""",
        "zh": """
## What it catches
1.0 之前的 PyTorch 中已经改名、被移除，或只剩一个空壳的 API：
- `loss.backward(retain_variables=True)`：0.4 中改名为 `retain_graph=`，之后旧名被移除。
- `torch.autograd.backward(..., grad_variables=...)`：已改名为 `grad_tensors=`。
- 不带结尾下划线的原地初始化函数 `nn.init.xavier_uniform`、`xavier_normal`、`kaiming_uniform`、
  `kaiming_normal`、`uniform`、`normal`、`constant`、`orthogonal`、`sparse`、`eye`、`dirac`，以及
  `nn.utils.clip_grad_norm`：它们是 `xavier_uniform_` …… `clip_grad_norm_` 的已弃用别名。
- `F.upsample`、`F.upsample_nearest`、`F.upsample_bilinear`：已弃用，请使用 `F.interpolate`。
- 已经不存在、一调用就失败的函数：`torch.gels`、`torch.gesv`、`torch.potrf`、`torch.potrs`、
  `torch.trtrs`、`torch.btrifact`、`torch.btrisolve`、`torch.symeig`、`torch.eig`、`torch.solve`、
  `torch.lstsq`、`torch.matrix_rank`、`torch.rfft`、`torch.irfft`、`torch.ifft`（由 `torch.linalg`
  和 `torch.fft` 模块取代）。

名字会通过导入语句解析，所以 `init.xavier_uniform`、`torch.nn.init.xavier_uniform` 以及
`from torch.nn.init import xavier_uniform` 都能被发现；`from torch.nn.init import *` 之后没有哪条导入语句写出这个名字，
这时 `orthogonal(w)` 在使用处报告。`Variable(x, volatile=True)` 由
`variable-wrapper`（TD103）报告：包装器和它的参数都已过时，一条发现就说清楚了。

为旧版 torch 保留的代码不会报告：`except ImportError` 或 `except AttributeError` 分支（以及它保护的 `try`），
或者检查版本的 `if` 的分支（`if TORCH_GTE_1_7:`、`if hasattr(torch, "fft"):`，或者模块在顶层绑定为这种检查结果的名字：
`_native_complex = torch_version >= "1.7.0"` 之后的 `if _native_complex:`）。

## Why is this bad?
老教程和老仓库里到处都是这些名字，而它们出问题的方式各不相同。被移除的函数和 `retain_variables=`
会让脚本崩溃，而且往往要等到第一个 epoch 之后、真正走到那段代码时才崩。已弃用的别名虽然还能用，
但每次调用都打印警告，把真正重要的警告淹没。最糟糕的是 `volatile=True`：它原本用于在推理时关闭梯度记录，
现在却悄无声息地什么都不做，于是评估时整张计算图都留在显存里，原来能跑的 batch size 如今直接显存溢出。

## Symptoms
- `UserWarning: volatile was removed and now has no effect. Use `with torch.no_grad():` instead.`
- `TypeError: Tensor.backward() got an unexpected keyword argument 'retain_variables'`
- `FutureWarning: `nn.init.xavier_uniform` is now deprecated in favor of `nn.init.xavier_uniform_`.`
- `FutureWarning: `torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.`
- `UserWarning: `nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.`
- `RuntimeError: This function was deprecated since version 1.9 and is now removed.`（对应
  `torch.symeig`、`torch.eig`、`torch.solve`、`torch.lstsq`、`torch.matrix_rank`）
- `AttributeError: module 'torch' has no attribute 'gels'`（以及其他已移除的名字）
- `ImportError: cannot import name '_update_worker_pids' from 'torch._C'`（复制自 PyTorch 1.0 的
  DataLoader，其私有辅助函数在 PyTorch 1.1 中被重组）
- `ImportError: cannot import name 'container_abcs' from 'torch._six'`（PyTorch 1.9+）、
  `ModuleNotFoundError: No module named 'torch._six'`、`AttributeError: module 'torch' has no
  attribute '_six'`（PyTorch 2.0+）：这个 Python 2 兼容模块已被删除，导入它的通常是某个库的旧版本
  （apex、timm、mmcv 等）。
- `AttributeError: module 'torch' has no attribute 'Any'`（PyTorch 2.5+）：`Any`、`Optional` 等
  `typing` 中的名字不再出现在 `torch` 命名空间里。
- 评估代码仍在传 `volatile=True` 时出现 `CUDA out of memory`。

## Fix safety
纯改名的情况提供安全修复：带下划线的初始化函数、`clip_grad_norm_`、用 `F.interpolate` 替换 `F.upsample`
和 `F.upsample_nearest`（参数相同，旧名字内部调用的正是它）、`retain_graph=` 和 `grad_tensors=`。
对于通过 `from ... import` 导入的名字，导入语句会改成 `新名字 as 旧名字`，所有使用处都无需改动。
`F.upsample_bilinear(...)` 会被改写为 `F.interpolate(..., mode="bilinear", align_corners=True)`：
这正是 PyTorch 对它的实现，但调用的形式变了，所以该修复标记为不安全，请检查一遍。
替代函数参数顺序不同或返回值不同的已移除函数（`torch.solve`、`torch.symeig` 等）只报告、不修复：
它们需要人来改。

## Known problems
不报告：位于 `try` 中、其处理分支会捕获导入失败的 torch 导入（带后备方案的 `except ImportError:`），
以及在给同一属性赋值的语句中读取的已弃用别名（`F.upsample = wrap(F.upsample)`：就地包装 torch 函数的工具）。

以张量方法形式调用（`x.symeig()`）不会被报告；把 `F.upsample_bilinear` 当作值传递也不会被报告。
同一时代的 `x.cuda(async=True)` 自 Python 3.7 起是语法错误，由 `syntax-error`（TD700）报告，
并提供改为 `non_blocking=True` 的修复。

## References
- PyTorch 0.4.0 迁移指南：`volatile`、`retain_graph`。
- PyTorch 2.13 中的 `torch/nn/init.py`（`_make_deprecate`）、`torch/nn/utils/clip_grad.py`、
  `torch/nn/functional.py`（`upsample*`）。
""",
    },
    example="""
import torch.nn as nn

layer = nn.Linear(128, 64)
nn.init.xavier_uniform(layer.weight)
""",
    use_instead="""
import torch.nn as nn

layer = nn.Linear(128, 64)
nn.init.xavier_uniform_(layer.weight)
""",
)


@dataclass(frozen=True)
class Replacement:
    new: str  # qualified name of what to use instead
    # "safe": same parameters and meaning, renaming is the fix; "unsafe": a rewrite to review;
    # None: the replacement takes other arguments or returns something else, no fix.
    fix: str | None = "safe"
    removed: bool = False  # fails today, rather than a deprecated alias that still works
    keywords: str = ""  # arguments the new call needs to mean the same

    @property
    def last_name(self) -> str:
        """What replaces the old name's last part: renames that are fixed stay in their module."""
        return self.new.rpartition(".")[2]


def _gone(new: str) -> Replacement:
    return Replacement(new, None, removed=True)


_INIT = """uniform normal constant eye dirac xavier_uniform xavier_normal kaiming_uniform
kaiming_normal orthogonal sparse""".split()
# Checked against PyTorch 2.13: the aliases warn and forward, the removed names raise.
RENAMES: dict[str, Replacement] = {
    **{f"torch.nn.init.{name}": Replacement(f"torch.nn.init.{name}_") for name in _INIT},
    "torch.nn.utils.clip_grad_norm": Replacement("torch.nn.utils.clip_grad_norm_"),
    "torch.nn.utils.clip_grad.clip_grad_norm": Replacement(
        "torch.nn.utils.clip_grad.clip_grad_norm_"
    ),
    "torch.nn.functional.upsample": Replacement("torch.nn.functional.interpolate"),
    "torch.nn.functional.upsample_nearest": Replacement("torch.nn.functional.interpolate"),
    "torch.nn.functional.upsample_bilinear": Replacement(
        "torch.nn.functional.interpolate", "unsafe", keywords='mode="bilinear", align_corners=True'
    ),
    "torch.gels": _gone("torch.linalg.lstsq"),
    "torch.gesv": _gone("torch.linalg.solve"),
    "torch.potrf": _gone("torch.linalg.cholesky"),
    "torch.potrs": _gone("torch.cholesky_solve"),
    "torch.trtrs": _gone("torch.linalg.solve_triangular"),
    "torch.btrifact": _gone("torch.linalg.lu_factor"),
    "torch.btrisolve": _gone("torch.linalg.lu_solve"),
    "torch.symeig": _gone("torch.linalg.eigh"),
    "torch.eig": _gone("torch.linalg.eig"),
    "torch.solve": _gone("torch.linalg.solve"),
    "torch.lstsq": _gone("torch.linalg.lstsq"),
    "torch.matrix_rank": _gone("torch.linalg.matrix_rank"),
    "torch.rfft": _gone("torch.fft.rfft"),
    "torch.irfft": _gone("torch.fft.irfft"),
    "torch.ifft": _gone("torch.fft.ifft"),
}
# Renamed keyword arguments of backward: old -> (new, removed rather than deprecated).
BACKWARD_KEYWORDS = {
    "retain_variables": ("retain_graph", True),
    "grad_variables": ("grad_tensors", False),
}
AUTOGRAD_BACKWARD = "torch.autograd.backward"

_LAST_NAMES = {qualname.rpartition(".")[2] for qualname in RENAMES}
# A call rewrite needs the call: these are found on the call, not on the attribute.
_CALL_REWRITES = {q.rpartition(".")[2] for q, r in RENAMES.items() if r.keywords}


@PITFALL.static(ast.Attribute, names=_LAST_NAMES - _CALL_REWRITES)
@_OUTSIDE_COMPAT_FALLBACKS
def check_attribute(node: ast.Attribute, ctx: Context) -> Iterator[Finding]:
    """`nn.init.xavier_uniform`, `torch.symeig`: called or used as a value."""
    if not isinstance(node.ctx, ast.Load):
        return
    old = ctx.qualname(node)
    replacement = RENAMES.get(old)
    if replacement is None:
        return
    written = " ".join(ctx.text(node).split())
    if replacement.removed:
        yield ctx.finding(PITFALL, node, "removed", old=written, new=replacement.new)
        return
    if _patched_in_place(node, ctx):
        return  # `F.upsample = wrap(F.upsample)`: ptflops counts the calls of the alias itself
    if only_identified(node, ctx) or _listed_beside(node, replacement.new, ctx):
        return  # a deprecated alias that still exists, only told apart (a patch table): fine
    new_tail = replacement.last_name
    new = written[: -len(node.attr)] + new_tail
    end = ctx.span(node)[1]
    fix = _fix(ctx, replacement.fix, new, ctx.edit(end - len(node.attr), end, new_tail))
    yield ctx.finding(PITFALL, node, fix=fix, old=written, new=new)


def _patched_in_place(node: ast.Attribute, ctx: Context) -> bool:
    """The statement reading `node` assigns the same attribute (`F.upsample =
    wrapper(F.upsample, ...)`, `F.upsample = F.upsample.op`): a patch of the alias, which a
    tool that wraps torch's functions keeps for code still calling it."""
    statement = ctx.ancestors[-1] if ctx.ancestors else None
    if type(statement) is not ast.Assign:
        return False
    written = dotted_name(node)
    return written is not None and any(dotted_name(t) == written for t in statement.targets)


def _listed_beside(node: ast.Attribute, new: str, ctx: Context) -> bool:
    """`node` is an element of a list, tuple or set, or a value of a dict, that also holds its
    replacement: a table of both names (diffusers swaps every `nn.init` function, old and new,
    for a no-op while it loads a model), where renaming the old one would break the table."""
    parent = index_of(ctx, ctx.parent() or ctx.tree).parents.get(node)
    if isinstance(parent, ast.Dict):
        if not any(value is node for value in parent.values):
            return False
        siblings: list = parent.values
    elif isinstance(parent, (ast.List, ast.Tuple, ast.Set)):
        siblings = parent.elts
    else:
        return False
    return any(
        isinstance(other, ast.Attribute) and ctx.qualname(other) == new for other in siblings
    )


@PITFALL.static(ast.Call, names=_CALL_REWRITES)
@_OUTSIDE_COMPAT_FALLBACKS
def check_call_rewrite(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    """`F.upsample_bilinear(x)` -> `F.interpolate(x, mode="bilinear", align_corners=True)`."""
    func = call.func
    if not isinstance(func, ast.Attribute):  # a name imported from torch is reported at its import
        return
    old = ctx.qualname(func)
    replacement = RENAMES.get(old)
    if replacement is None:
        return
    new_tail = replacement.last_name
    written = " ".join(ctx.text(func).split())
    new = f"{written[: -len(func.attr)]}{new_tail}(..., {replacement.keywords})"
    fix = None
    arguments = [*call.args, *call.keywords]
    if arguments and not any(k.arg is None for k in call.keywords):
        end = ctx.span(func)[1]
        last = max(arguments, key=lambda n: (n.end_lineno, n.end_col_offset))
        last_end = ctx.span(last)[1]
        fix = _fix(
            ctx,
            replacement.fix,
            new,
            ctx.edit(end - len(func.attr), end, new_tail),
            ctx.edit(last_end, last_end, f", {replacement.keywords}"),
        )
    yield ctx.finding(PITFALL, func, fix=fix, old=written, new=new)


@PITFALL.static(ast.ImportFrom)
@_OUTSIDE_COMPAT_FALLBACKS
def check_import(node: ast.ImportFrom, ctx: Context) -> Iterator[Finding]:
    """`from torch.nn.init import xavier_uniform`: fixed as `xavier_uniform_ as xavier_uniform`."""
    module = node.module
    if node.level or not module or module.partition(".")[0] != "torch":
        return
    for alias in node.names:
        old = f"{module}.{alias.name}"
        replacement = RENAMES.get(old)
        if replacement is None:
            continue
        if replacement.removed:
            yield ctx.finding(PITFALL, alias, "removed", old=old, new=replacement.new)
            continue
        new = replacement.last_name
        if replacement.keywords:  # the calls need new arguments too: no fix at the import
            yield ctx.finding(
                PITFALL, alias, old=alias.name, new=f"{new}(..., {replacement.keywords})"
            )
            continue
        renamed = f"{new} as {alias.asname or alias.name}"
        fix = _fix(ctx, replacement.fix, renamed, ctx.replace(alias, renamed))
        yield ctx.finding(PITFALL, alias, fix=fix, old=alias.name, new=new)


@PITFALL.static(ast.Name, names=frozenset(TORCH_STAR_EXPORTS["torch.nn.init"]))
@_OUTSIDE_COMPAT_FALLBACKS
def check_star_imported(node: ast.Name, ctx: Context) -> Iterator[Finding]:
    """`orthogonal(w)` after `from torch.nn.init import *` (easyrl): no import names it to be
    reported at, so it is reported where it is used."""
    if type(node.ctx) is not ast.Load or node.id in _imported_by_name(ctx):
        return
    replacement = RENAMES.get(ctx.qualname(node) or "")
    if replacement is None or replacement.removed or only_identified(node, ctx):
        return
    new = replacement.last_name
    fix = None if replacement.keywords else _fix(ctx, replacement.fix, new, ctx.replace(node, new))
    yield ctx.finding(PITFALL, node, fix=fix, old=node.id, new=new)


@per_file
def _imported_by_name(ctx: Context) -> frozenset[str]:
    """The names the module's top-level `from ... import name` statements bind (reported at
    the import, when deprecated)."""
    return frozenset(
        alias.asname or alias.name
        for statement in ctx.tree.body
        if type(statement) is ast.ImportFrom
        for alias in statement.names
        if alias.name != "*"
    )


@PITFALL.static(ast.Call, names={"backward"}, imported=True)
@_OUTSIDE_COMPAT_FALLBACKS
def check_keywords(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    """`retain_variables=` / `grad_variables=` on a backward call. (`volatile=` on a Variable
    is variable-wrapper's to report, with the wrapper it belongs to.)"""
    if not call.keywords:
        return
    renamed = [k for k in call.keywords if k.arg in BACKWARD_KEYWORDS]
    if not renamed or not _is_backward(call, ctx):
        return
    present = {k.arg for k in call.keywords}
    for keyword in renamed:
        new, removed = BACKWARD_KEYWORDS[keyword.arg]
        if keyword.arg == "grad_variables" and ctx.qualname(call.func) != AUTOGRAD_BACKWARD:
            continue  # only torch.autograd.backward ever took it
        fix = None
        if new not in present:  # both given: a person must pick one
            start = ctx.span(keyword)[0]
            fix = _fix(ctx, "safe", f"{new}=", ctx.edit(start, start + len(keyword.arg), new))
        yield ctx.finding(
            PITFALL,
            keyword,
            "keyword-removed" if removed else "keyword",
            fix=fix,
            old=keyword.arg,
            new=new,
        )


def _is_backward(call: ast.Call, ctx: Context) -> bool:
    """`torch.autograd.backward(...)`, or `loss.backward(...)` on a tensor or in torch code."""
    if ctx.qualname(call.func) == AUTOGRAD_BACKWARD:
        return True
    if not isinstance(call.func, ast.Attribute) or call.func.attr != "backward":
        return False
    if ctx.kind_of(call.func.value) is Kind.TENSOR:
        return True
    # An unknown receiver: unless the file defines its own backward taking these keywords.
    return ctx.imports_torch and not _defines_backward_keywords(ctx)


@per_file
def _defines_backward_keywords(ctx: Context) -> bool:
    """A parameter of the file is named like one of the old backward keywords."""
    return any(node.arg in BACKWARD_KEYWORDS for node in index(ctx).everywhere(ast.arg))


def _fix(ctx: Context, applicability: str | None, new: str, *edits: Edit) -> Fix | None:
    if applicability is None:
        return None
    title = {lang: text.format(new=new) for lang, text in PITFALL.fix_title.items()}
    return ctx.fix(PITFALL, applicability, *edits, title=title)


# What `from torch._six import X` should become; torch._six was removed in PyTorch 2.0
# (container_abcs, int_classes and string_classes already in 1.9).
SIX_REPLACEMENTS = {
    "container_abcs": "import collections.abc as container_abcs",
    "string_classes": "string_classes = (str, bytes)",
    "int_classes": "int_classes = int",
    "inf": "from math import inf",
    "nan": "from math import nan",
    "PY3": "PY3 = True",
    "PY37": "PY37 = True",
    "FileNotFoundError": "the built-in FileNotFoundError (drop the import)",
}
_SIX_CAUSE = {
    "en": "`torch._six` (Python 2 compatibility helpers) was removed in PyTorch 2.0, and "
    "`{name}` with it; {where}.",
    "zh": "`torch._six`（Python 2 兼容工具）已在 PyTorch 2.0 中移除，`{name}` 也随之消失；{where_zh}。",
}
# Gone from `torch._six` two years before the module itself: the ImportError of PyTorch 1.9-1.13.
_SIX_GONE_IN_1_9 = frozenset({"container_abcs", "int_classes"})
_SIX_EARLY_CAUSE = {
    "en": "`{name}` was removed from `torch._six` (Python 2 compatibility helpers) in PyTorch "
    "1.9, and the module itself in 2.0; {where}.",
    "zh": "`{name}` 已在 PyTorch 1.9 中从 `torch._six`（Python 2 兼容工具）移除，该模块本身也在 2.0 中移除；"
    "{where_zh}。",
}
_SIX_MODULE_CAUSE = {
    "en": "`torch._six` (Python 2 compatibility helpers) was removed in PyTorch 2.0; {where}.",
    "zh": "`torch._six`（Python 2 兼容工具）已在 PyTorch 2.0 中移除；{where_zh}。",
}
_SIX_FIX = {
    "en": "Replace `from torch._six import {name}` with `{replacement}`, or upgrade the package "
    "that imports it.",
    "zh": "把 `from torch._six import {name}` 改为 `{replacement}`，或者升级导入它的第三方包。",
}
_SIX_IMPORT = lazy_compile(r"cannot import name '(?P<name>\w+)' from 'torch\._six'")
_SIX_ATTRIBUTE = lazy_compile(r"module 'torch\._six' has no attribute '(?P<name>\w+)'")
_SIX_MODULE = lazy_compile(r"No module named 'torch\._six'|module 'torch' has no attribute '_six'")
# Python 3.7 and older name no module: `cannot import name 'container_abcs'`, under the frame
# whose line is `from torch._six import container_abcs`.
_BARE_IMPORT = lazy_compile(r"cannot import name '(?P<name>\w+)'$")
_SIX_IMPORTED = lazy_compile(r"^from torch\._six import\b")
# (quoted as typed: `module ‘torch‘ has no attribute "rfft"`)
_NO_ATTRIBUTE = lazy_compile(
    r"module ['\u2018\u2019\"](?P<module>torch(?:\.\w+)*)['\u2018\u2019\"] has no attribute "
    # The closing quote is optional: a title cut short ("has no attribute 'irfft").
    r"['\u2018\u2019\"](?P<name>\w+)"
)
_SITE_PACKAGE = lazy_compile(r"(?:site|dist)-packages[/\\](?P<package>[A-Za-z_][\w.-]*)")


_SIX_MODULE_FIX = {
    "en": "Upgrade the package that imports `torch._six`, or in your own code replace its names "
    "(`container_abcs` -> `collections.abc`, `string_classes` -> `(str, bytes)`, `inf` -> "
    "`math.inf`).",
    "zh": "升级导入 `torch._six` 的第三方包；如果是自己的代码，替换其中的名字（`container_abcs` -> "
    "`collections.abc`，`string_classes` -> `(str, bytes)`，`inf` -> `math.inf`）。",
}


@PITFALL.error_check(
    types=("ImportError", "ModuleNotFoundError", "AttributeError"),
    words=("cannot import name", "has no attribute", "_six"),
)
def removed_name(block, report) -> Clue | None:
    """`torch._six` imports, and `module 'torch' has no attribute 'gels'` for names in RENAMES."""
    six = (
        _SIX_IMPORT.search(block.message)
        or _SIX_ATTRIBUTE.search(block.message)
        or _six_import_line(block)
    )
    if six is not None or _SIX_MODULE.search(block.message):
        name = six.group("name") if six else "_six"
        fields = {
            "name": name,
            **_importer(block),
            "replacement": SIX_REPLACEMENTS.get(name, "the standard-library equivalent"),
        }
        fix = _SIX_FIX if six else _SIX_MODULE_FIX
        cause = _SIX_EARLY_CAUSE if name in _SIX_GONE_IN_1_9 else _SIX_CAUSE
        return Clue(0.95, cause if six else _SIX_MODULE_CAUSE, fix, fields)
    return _private_import(block) or _removed_attribute(block.message, 0.95)


# Private helpers of the DataLoader of PyTorch 1.0 and older, which projects copied with its
# `dataloader.py` to customise it (EDSR's multi-scale `MSDataLoader` and its many forks).
# PyTorch 1.1 moved the DataLoader's internals into `torch.utils.data._utils`, renaming
# `torch._C._update_worker_pids` to `_set_worker_pids`, and 1.2 split `_DataLoaderIter` in two.
PRIVATE_GONE = {
    "_update_worker_pids": "torch._C",
    "_worker_loop": "torch.utils.data.dataloader",
    "_set_SIGCHLD_handler": "torch.utils.data.dataloader",
    "numpy_type_map": "torch.utils.data.dataloader",
    "pin_memory_batch": "torch.utils.data.dataloader",
    "_DataLoaderIter": "torch.utils.data.dataloader",
}
_PRIVATE_IMPORT = lazy_compile(r"cannot import name '(?P<name>\w+)'(?: from '(?P<module>[\w.]+)')?")
_FROM_IMPORT = lazy_compile(r"from (?P<module>[\w.]+) import (?P<names>[^#\n]*)")
_PRIVATE_CAUSE = {
    "en": "`{module}.{name}` is a private helper of the DataLoader of PyTorch 1.0 and older; "
    "PyTorch 1.1 reorganised the DataLoader's internals (into `torch.utils.data._utils`) and "
    "it is gone. Code that copied the old `dataloader.py` to customise it still imports it.",
    "zh": "`{module}.{name}` 是 PyTorch 1.0 及更早版本 DataLoader 的私有辅助函数；PyTorch 1.1 重组了 "
    "DataLoader 的内部实现（移到 `torch.utils.data._utils` 中），它已不复存在。复制了旧版 "
    "`dataloader.py` 来定制的代码仍在导入它。",
}
_PRIVATE_FIX = {
    "en": "Update the project's copied DataLoader for PyTorch 1.1+ (most such projects did: "
    "subclass `torch.utils.data.DataLoader` instead of copying it), or run it with the "
    "PyTorch 1.0 it was written for.",
    "zh": "把项目中复制的 DataLoader 更新到 PyTorch 1.1+（多数此类项目已经更新：改为继承 "
    "`torch.utils.data.DataLoader` 而不是复制它），或者在它所针对的 PyTorch 1.0 上运行。",
}


def _private_import(block) -> Clue | None:
    """`cannot import name '_update_worker_pids' from 'torch._C'`; before Python 3.8 the module
    is not named, the frame's `from torch._C import ...` line says it."""
    found = _PRIVATE_IMPORT.search(block.message)
    if found is None or found["name"] not in PRIVATE_GONE:
        return None
    name, module = found["name"], found["module"]
    if module is None and block.frames:
        source = _FROM_IMPORT.match((block.frames[-1].source or "").strip())
        if source is not None and name in re.findall(r"\w+", source["names"]):
            module = source["module"]
    if module != PRIVATE_GONE[name]:
        return None  # another module's name, or no module known: not this one for sure
    return Clue(0.9, _PRIVATE_CAUSE, _PRIVATE_FIX, {"module": module, "name": name})


@PITFALL.error_check(types=(), words=("has no attribute",))
def removed_name_in_text(block, report) -> Clue | None:
    """The same message where no exception was parsed: an issue's title above a notebook's
    traceback whose last line was not pasted."""
    if block.kind != "log":
        return None
    return _removed_attribute(block.message, 0.85)


# An issue that says it in words: "torch.rfft was removed", "the deprecated and now removed
# `pytorch.irfft`" (the name and the word in one sentence, either order).
_SAID_REMOVED = lazy_compile(
    r"(?<![\w.])(?:py)?torch\.(?P<name>\w+)\b[^.\n]{0,60}?"
    r"\b(?:was|were|is|are|has been|have been|got|been|now)\s+removed\b"
    r"|\bremoved\W{1,3}(?:py)?torch\.(?P<name2>\w+)"
)


@PITFALL.error_check(types=(), words=("removed",))
def removed_name_in_prose(block, report) -> Clue | None:
    """Prose without an error that names one of the removed functions as removed: an issue
    asking for a port to the PyTorch that dropped it."""
    if block.kind != "log" or block.short_type:
        return None
    if report.exceptions:
        return None  # an error shown is the story, not the words around it
    found = report.search(_SAID_REMOVED)
    if found is None:
        return None
    name = found.group("name") or found.group("name2")
    if name == "_six":  # "torch._six is removed in higher versions of PyTorch"
        return Clue(0.8, _SIX_TEXT_CAUSE, _SIX_MODULE_FIX)
    return _removed(f"torch.{name}", 0.8)


# The warning a release printed before removing the function: PyTorch 1.7's "The function
# torch.rfft is deprecated and will be removed in a future PyTorch release", 1.9-1.12's
# "torch.symeig is deprecated in favor of torch.linalg.eigh and will be removed ...". Only the
# names of RENAMES that are gone count: `torch.cholesky` warns the same way and still exists.
_WARNED_DEPRECATED = lazy_compile(
    r"(?<![\w.])torch\.(?P<name>\w+)(?:\(\))? is deprecated\b[^\n]{0,120}?\bwill be removed "
    # the warning's own words: prose asking about a port ("will be removed, should we...") is not
    r"in (?:a future PyTorch release|the next release|PyTorch \d)"
)
_FFT_FUNCTIONS = frozenset({"fft", "ifft", "rfft", "irfft"})


@PITFALL.error_check(types=(), words=("will be removed",))
def deprecated_then_removed(block, report) -> Clue | None:
    """The deprecation warning of a function that a later PyTorch removed: the code works on
    this version and fails on the next one."""
    if report.exceptions:
        return None  # a crash shown is the story: the function still ran
    found = _WARNED_DEPRECATED.search(block.message)
    if found is None:
        return None
    name = found.group("name")
    old = f"torch.{name}"
    replacement = RENAMES.get(old)
    if name in _FFT_FUNCTIONS:
        new = f"torch.fft.{name}"  # torch.fft, a function before 1.8, is a module since
    elif replacement is not None and replacement.removed:
        new = replacement.new
    else:
        return None
    return Clue(
        0.85,
        {
            "en": "`{old}` is deprecated in the PyTorch that runs this code and was removed in a "
            "later release, where calling it fails; its successor is `{new}`, whose arguments or "
            "results differ.",
            "zh": "`{old}` 在当前运行的 PyTorch 中已弃用，并在之后的版本中被移除，届时调用会直接报错；"
            "它的后继是 `{new}`，但参数或返回值有所不同。",
        },
        {
            "en": "Port the call to `{new}` (check its documentation for the new arguments), or "
            "upgrade the package that calls `{old}`.",
            "zh": "把调用改写为 `{new}`（请查阅文档了解新的参数），或者升级调用 `{old}` 的第三方包。",
        },
        {"old": old, "new": new},
    )


def _removed_attribute(message: str, confidence: float) -> Clue | None:
    found = _NO_ATTRIBUTE.search(message)
    if found is None:
        return None
    if found.group("module") == "torch" and found.group("name") in _TYPING_NAMES:
        return Clue(confidence - 0.05, _TYPING_CAUSE, _TYPING_FIX, {"name": found.group("name")})
    return _removed(f"{found.group('module')}.{found.group('name')}", confidence)


# Names that `torch/__init__.py` imported from `typing` and so leaked as `torch.Any`; PyTorch 2.5
# imports them under private names, and code annotated with `torch.Any` fails on import.
_TYPING_NAMES = frozenset(
    {"Any", "Callable", "Dict", "List", "Optional", "Set", "Tuple", "Type", "Union"}
)
_TYPING_CAUSE = {
    "en": "`torch.{name}` is `typing.{name}`, which PyTorch up to 2.4 exposed only because "
    "`torch/__init__.py` imported it; PyTorch 2.5 no longer does, so code annotated with "
    "`torch.{name}` fails when it loads.",
    "zh": "`torch.{name}` 其实是 `typing.{name}`，PyTorch 2.4 及以前只是因为 `torch/__init__.py` 导入了它"
    "才能这样访问；PyTorch 2.5 不再如此，于是用 `torch.{name}` 做类型注解的代码在加载时就会失败。",
}
_TYPING_FIX = {
    "en": "Import it from `typing` (`from typing import {name}`) and annotate with `{name}`, or "
    "upgrade the package that uses `torch.{name}`.",
    "zh": "改为从 `typing` 导入（`from typing import {name}`）并用 `{name}` 注解，或者升级使用 "
    "`torch.{name}` 的第三方包。",
}


def _removed(old: str, confidence: float) -> Clue | None:
    """The clue for `old`, one of the removed names of RENAMES."""
    replacement = RENAMES.get(old)
    if replacement is None or not replacement.removed:
        return None
    return Clue(
        confidence,
        {
            "en": "`{old}` was removed from PyTorch; its successor is `{new}`, whose arguments or "
            "results differ.",
            "zh": "`{old}` 已从 PyTorch 中移除；它的后继是 `{new}`，但参数或返回值有所不同。",
        },
        {
            "en": "Rewrite the call with `{new}` (check its documentation for the new arguments).",
            "zh": "改用 `{new}` 重写这次调用（请查阅文档了解新的参数）。",
        },
        {"old": old, "new": replacement.new},
    )


def _six_import_line(block) -> re.Match | None:
    """A bare `cannot import name 'X'` raised by the frame's `from torch._six import X`."""
    found = _BARE_IMPORT.match(block.message)
    if found is None or not block.frames:
        return None
    source = (block.frames[-1].source or "").strip()
    if not _SIX_IMPORTED.match(source):
        return None
    imported = source.partition(" import ")[2].strip("() ").split(",")
    return found if found["name"] in {name.split(" as ")[0].strip() for name in imported} else None


def _importer(block) -> dict[str, str]:
    """Who imports the removed name: an installed package (upgrade it) or the user's code."""
    for frame in reversed(block.frames):
        found = _SITE_PACKAGE.search(frame.path)
        if found is not None:
            package = found.group("package").removesuffix(".py")
            return {
                "where": f"the import is in the installed package `{package}`",
                "where_zh": f"这条导入位于已安装的包 `{package}` 中",
            }
    return {"where": "the code still imports it", "where_zh": "代码仍在导入它"}


# Output the parser could not split into blocks: the texts alone.
_SIX_TEXT_CAUSE = {
    "en": "`torch._six` (Python 2 compatibility helpers) was removed in PyTorch 2.0; code "
    "written for PyTorch 1.x, often an old release of a library, still imports it.",
    "zh": "`torch._six`（Python 2 兼容工具）已在 PyTorch 2.0 中移除；为 PyTorch 1.x 编写的代码"
    "（常常是某个库的旧版本）仍在导入它。",
}
PITFALL.error(
    # also retold without `name` and the quotes: "cannot import container_abcs from torch._six"
    r"cannot import (?:name )?['\"`]?(?P<name>\w+)['\"`]? from ['\"`]?torch\._six\b"
    # Python 3.7 and older do not name the module: the import statement shown above does
    r"|from torch\._six import (?P<imported>\w+)\W[^\n]{0,200}?cannot import name '(?P=imported)'",
    types=(),
    confidence=0.9,
    cause=_SIX_TEXT_CAUSE,
    fix={
        "en": "Replace `from torch._six import {name}` with its standard-library "
        "equivalent, or upgrade the package that imports it.",
        "zh": "把 `from torch._six import {name}` 换成标准库中的对应写法，或者升级导入它的第三方包。",
    },
)
PITFALL.error(
    r"No module named 'torch\._six'|module 'torch' has no attribute '_six'",
    types=(),
    confidence=0.9,
    cause=_SIX_TEXT_CAUSE,
)
PITFALL.error(
    r"This function was deprecated since version 1\.9 and is now removed",
    confidence=0.9,
    cause={
        "en": "A linear-algebra function removed in PyTorch 1.13 was called (`torch.symeig`, "
        "`torch.eig`, `torch.solve`, `torch.lstsq`, `torch.matrix_rank`); the message "
        "shows the `torch.linalg` call that replaces it.",
        "zh": "调用了在 PyTorch 1.13 中移除的线性代数函数（`torch.symeig`、`torch.eig`、`torch.solve`、"
        "`torch.lstsq`、`torch.matrix_rank`）；报错信息中给出了替代它的 `torch.linalg` 调用。",
    },
)
PITFALL.error(
    r"unexpected keyword argument '(?P<old>retain_variables|grad_variables)'",
    types=("TypeError",),
    confidence=0.95,
    cause={
        "en": "`{old}=` is the pre-0.4 name of a backward argument and no longer exists.",
        "zh": "`{old}=` 是 0.4 之前 backward 参数的旧名字，如今已不存在。",
    },
    fix={
        "en": "Rename it: `retain_variables=` -> `retain_graph=`, `grad_variables=` -> "
        "`grad_tensors=`.",
        "zh": "改名：`retain_variables=` -> `retain_graph=`，`grad_variables=` -> `grad_tensors=`。",
    },
)
PITFALL.error(
    r"volatile was removed and now has no effect",
    types=(),
    confidence=0.9,
    cause={
        "en": "`Variable(..., volatile=True)` does nothing since PyTorch 0.4: gradients "
        "are recorded, and evaluation keeps the whole graph in memory.",
        "zh": "自 PyTorch 0.4 起 `Variable(..., volatile=True)` 不再起作用：梯度照样被记录，"
        "评估时整张计算图都留在内存中。",
    },
    fix={
        "en": "Drop `volatile=True` and run the evaluation under `with torch.no_grad():`.",
        "zh": "去掉 `volatile=True`，把评估代码放进 `with torch.no_grad():` 中运行。",
    },
)
PITFALL.error(
    r"`?(?P<old>(?:torch\.)?nn\.(?:init|utils)\.\w+)`? is now deprecated in favor of "
    r"`?(?P<new>(?:torch\.)?nn\.(?:init|utils)\.\w+_)`?",
    types=(),
    confidence=0.9,
    cause={
        "en": "`{old}` is a deprecated alias of the in-place `{new}`.",
        "zh": "`{old}` 是原地版本 `{new}` 的已弃用别名。",
    },
    fix={"en": "Call `{new}` instead.", "zh": "改为调用 `{new}`。"},
)
PITFALL.error(
    r"nn\.functional\.(?P<old>upsample(?:_nearest|_bilinear)?) is deprecated\. Use "
    r"nn\.functional\.interpolate instead",
    types=(),
    confidence=0.9,
    cause={
        "en": "`F.{old}` is a deprecated alias of `F.interpolate`.",
        "zh": "`F.{old}` 是 `F.interpolate` 的已弃用别名。",
    },
    fix={
        "en": 'Call `F.interpolate` (for `upsample_bilinear` add `mode="bilinear", '
        "align_corners=True`).",
        "zh": '改为调用 `F.interpolate`（替换 `upsample_bilinear` 时加上 `mode="bilinear", '
        "align_corners=True`）。",
    },
)
# `torch.rfft(x, 2, onesided=False)` ported by renaming the call only: torch.fft's functions
# take no `onesided` (nor `signal_ndim`).
PITFALL.error(
    r"\bfft_i?r?fft[n2]?\(\) got an unexpected keyword argument '(?P<argument>onesided|"
    r"signal_ndim|normalized)'",
    types=("TypeError", ""),
    confidence=0.85,
    cause={
        "en": "The call was written for `torch.rfft`/`torch.irfft`/`torch.fft` of PyTorch 1.7 and "
        "older, removed in 1.8; the `torch.fft` module's functions that replaced them take no "
        "`{argument}`.",
        "zh": "这个调用是为 PyTorch 1.7 及更早版本的 `torch.rfft`/`torch.irfft`/`torch.fft` 写的，它们在 "
        "1.8 中被移除；取代它们的 `torch.fft` 模块中的函数没有 `{argument}` 参数。",
    },
    fix={
        "en": "Port the call: `torch.fft.rfft(x, dim=...)` (one-sided) or `torch.fft.fft` "
        '(two-sided), `torch.fft.rfftn` for several dimensions, `norm="ortho"` for '
        "`normalized=True`; the result is complex (`torch.view_as_real` gives the old layout).",
        "zh": "改写调用：`torch.fft.rfft(x, dim=...)`（单边）或 `torch.fft.fft`（双边），多维用 "
        '`torch.fft.rfftn`，`normalized=True` 对应 `norm="ortho"`；结果是复数张量（用 '
        "`torch.view_as_real` 得到旧的布局）。",
    },
)
