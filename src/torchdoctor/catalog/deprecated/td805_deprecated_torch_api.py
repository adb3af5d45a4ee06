"""TD805 deprecated-torch-api: PyTorch functions that are deprecated but still exist."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Iterator

from torchdoctor.catalog.deprecated._torch_name import torch_name
from torchdoctor.catalog.deprecated._fallbacks import outside_compat_fallbacks
from torchdoctor.catalog.sdk import (
    Context,
    Edit,
    Finding,
    Fix,
    Pitfall,
    index,
    only_identified,
)

_OUTSIDE_COMPAT_FALLBACKS = outside_compat_fallbacks(
    guarded_imports=False, defaults_replaced=True, in_warning_tests=True
)

PITFALL = Pitfall(
    code="TD805",
    name="deprecated-torch-api",
    title={
        "en": "Deprecated PyTorch function (it still works, and warns or will be removed)",
        "zh": "使用了已弃用的 PyTorch 函数（目前仍可用，但会警告或将被移除）",
    },
    messages={
        "": {
            "en": "`{old}` is deprecated and will be removed: use `{new}`",
            "zh": "`{old}` 已弃用，将来会被移除：请改用 `{new}`",
        },
        "differs": {
            "en": "`{old}` is deprecated and will be removed: use `{new}` (its arguments or "
            "results differ: check its documentation)",
            "zh": "`{old}` 已弃用，将来会被移除：请改用 `{new}`（参数或返回值有所不同，请查阅文档）",
        },
        "documented": {
            "en": "`{old}` is deprecated in PyTorch's documentation (it does not warn, and may be "
            "removed in a later release): use `{new}`",
            "zh": "PyTorch 文档已将 `{old}` 标为弃用（运行时不会警告，以后的版本可能移除）：请改用 `{new}`",
        },
        "documented-differs": {
            "en": "`{old}` is deprecated in PyTorch's documentation (it does not warn, and may be "
            "removed in a later release): use `{new}` (its arguments or results differ: check "
            "its documentation)",
            "zh": "PyTorch 文档已将 `{old}` 标为弃用（运行时不会警告，以后的版本可能移除）：请改用 "
            "`{new}`（参数或返回值有所不同，请查阅文档）",
        },
    },
    fix_title={"en": "Use `{new}`", "zh": "改用 `{new}`"},
    fix_applicability="safe",
    fix_hint={
        "en": "Replace the deprecated function with the one the warning names; the `torch.amp` "
        'versions of `torch.cuda.amp.*` take the device (`"cuda"`) as first argument or as '
        "`device_type=`.",
        "zh": "用警告中给出的函数替换已弃用的函数；`torch.cuda.amp.*` 对应的 `torch.amp` 版本需要把设备"
        '（`"cuda"`）作为第一个参数或 `device_type=` 传入。',
    },
    docs={
        "en": """
## What it catches
Calls, references and imports of PyTorch functions that are deprecated but still exist. Each
of them warns when it is used with PyTorch 2.13 (`FutureWarning` or `UserWarning`), unless
marked *(documented)*: those are deprecated in their documentation only.
- Mixed precision: `torch.cuda.amp.autocast`, `torch.cuda.amp.GradScaler`,
  `torch.cuda.amp.custom_fwd`, `torch.cuda.amp.custom_bwd`, `torch.cpu.amp.autocast`,
  `torch.cpu.amp.GradScaler`: use `torch.amp.autocast("cuda", ...)`,
  `torch.amp.GradScaler("cuda", ...)`, `torch.amp.custom_fwd(device_type="cuda")`.
- Linear algebra: `torch.qr`, `torch.cholesky`, `torch.lu`, `torch.lu_solve`,
  `torch.triangular_solve`, `torch.chain_matmul` (`torch.linalg.*`); *(documented)*
  `torch.norm`, `torch.svd`, `torch.ger` (`torch.linalg.vector_norm` / `matrix_norm`,
  `torch.linalg.svd`, `torch.outer`).
- `torch.range` (its end is inclusive, unlike Python's `range`): `torch.arange`.
- `torch.nn.utils.weight_norm`: `torch.nn.utils.parametrizations.weight_norm`;
  *(documented)* `nn.UpsamplingNearest2d`, `nn.UpsamplingBilinear2d`: `nn.Upsample`.
- functorch: `functorch.vmap`, `grad`, `grad_and_value`, `vjp`, `jvp`, `jacrev`, `jacfwd`,
  `hessian`, `functionalize` (`torch.func.*`), `make_functional`,
  `make_functional_with_buffers` (`torch.func.functional_call`),
  `combine_state_for_ensemble` (`torch.func.stack_module_state`).
- Others: `torch.testing.assert_allclose` (`torch.testing.assert_close`),
  `torch.nn.utils.stateless.functional_call` (`torch.func.functional_call`),
  `torch.cuda.memory_cached` / `max_memory_cached` (`memory_reserved` /
  `max_memory_reserved`), `torch.backends.cuda.sdp_kernel`
  (`torch.nn.attention.sdpa_kernel`), `torch.library.impl_abstract`
  (`torch.library.register_fake`), `torch.set_default_tensor_type`
  (`torch.set_default_dtype` / `set_default_device`), `torch.has_cuda`, `torch.has_cudnn`,
  `torch.has_mps`, `torch.has_mkldnn`.

Names are resolved through imports (`from torch.cuda.amp import autocast` is reported at the
import). Code kept for older PyTorch versions is not reported: an `except ImportError` /
`except AttributeError` branch, or a branch of an `if` that tests a version or
`hasattr(torch, ...)`. Functions that are already gone are `removed-torch-api` (TD803).

## Why is this bad?
A deprecated function still runs, so nothing breaks today, but each release may be the one that
removes it, and most of them print a warning on every call: in a training loop the log fills
with `FutureWarning`s and the warnings that matter get lost. Some have a real cost beyond the
warning: `torch.range` includes its end point (`torch.range(0, 3)` has four elements, unlike
`range` and `torch.arange`), an off-by-one that the replacement makes visible; `torch.norm`'s
meaning depends on the input's dimensions and `p`, which `vector_norm` / `matrix_norm` spell out.

## Symptoms
- `FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated. Please use
  `torch.amp.autocast('cuda', args...)` instead.` (and the same for `GradScaler`,
  `custom_fwd`, `custom_bwd`, `torch.cpu.amp.*`)
- `FutureWarning: `torch.nn.utils.weight_norm` is deprecated in favor of
  `torch.nn.utils.parametrizations.weight_norm`.`
- `UserWarning: torch.range is deprecated and will be removed in a future release because its
  behavior is inconsistent with Python's range builtin. Instead, use torch.arange, which
  produces values in [start, end).`
- `UserWarning: torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a
  future PyTorch release.`
- `FutureWarning: We've integrated functorch into PyTorch. As the final step of the
  integration, `functorch.vmap` is deprecated as of PyTorch 2.0 and will be deleted in a future
  version of PyTorch >= 2.3. Please use `torch.vmap` instead`
- `FutureWarning: `torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed
  in a future release. Please use `torch.testing.assert_close()` instead.`

## Fix safety
Fixes are offered only where the new call computes exactly the same, and are safe:
`torch.cuda.amp.autocast(...)` / `GradScaler(...)` become `torch.amp.autocast("cuda", ...)` /
`torch.amp.GradScaler("cuda", ...)` when every argument is given by keyword (their positional
parameters are in another order), `torch.cpu.amp.*` likewise with `"cpu"` (the old autocast
passes its default dtype, `float16` on CUDA and `bfloat16` on CPU, where the new one reads
`torch.get_autocast_dtype(device)`: the same value unless the program changed it with
`torch.set_autocast_dtype`);
`@torch.cuda.amp.custom_fwd` becomes `@torch.amp.custom_fwd(device_type="cuda")`; the
functorch functions become their `torch.func` namesakes (the functorch ones only forward to
them), and `torch.ger`, `torch.cuda.memory_cached`, `max_memory_cached`,
`torch.library.impl_abstract` and `torch.nn.utils.stateless.functional_call` are renamed. A
rewrite that needs the name `torch` is offered only where `torch` names the module.
`torch.nn.utils.weight_norm` becomes `torch.nn.utils.parametrizations.weight_norm` with an
unsafe fix: the parametrized module has no `weight_g` / `weight_v` attributes (its magnitude
and direction are `parametrizations.weight.original0` / `original1`), `remove_weight_norm`
raises on it (use `torch.nn.utils.parametrize.remove_parametrizations(module, "weight")`), and
the state dicts it saves carry those new keys, which older code cannot load (it loads the old
keys itself). The others (`torch.range`, the `torch.linalg` successors, `torch.norm`,
`assert_allclose`, `sdp_kernel`...) take other arguments or return something else and are
reported without a fix.

## Known problems
Nothing is reported where the project promises to run on a torch older than the successor
(a lower bound such as `torch>=1.7` in its requirements, `setup.py`, `setup.cfg`,
`pyproject.toml` or conda environment, or else its README): `torch.linalg.vector_norm` came in
1.9, and advising it would break that promise. An exact pin (`torch==1.7.0`) is no promise.
Nor is a deprecated class a class of the file subclasses (`class QuantUpsample(
nn.UpsamplingBilinear2d)`, a drop-in for models that hold it), or its import when only such
classes use it. An import tried first in a `try` whose handler imports the successor is
reported: it succeeds on today's torch, which then runs the deprecated path.

Tensor methods (`x.norm()`, `x.qr()`) are not reported, nor are deprecated arguments of current
functions (`torch.cross` without `dim=`). `torch.nn.utils.spectral_norm` is not reported: its
documentation only announces a future deprecation, and it does not warn.

## References
- The warnings and docstrings of PyTorch 2.13 (`torch/cuda/amp/`, `torch/_functorch/deprecated.py`,
  `torch/_torch_docs.py`, `torch/functional.py`); `tests/test_deprecated_torch_api.py` checks
  the table against the installed torch.
- TorchFix TOR101 / TOR103 (`torchfix/deprecated_symbols.yaml`).
""",
        "zh": """
## What it catches
对已弃用但仍然存在的 PyTorch 函数的调用、引用和导入。在 PyTorch 2.13 中使用它们都会发出警告
（`FutureWarning` 或 `UserWarning`），标注 *(documented)* 的除外：它们只在文档中被标为弃用。
- 混合精度：`torch.cuda.amp.autocast`、`torch.cuda.amp.GradScaler`、`torch.cuda.amp.custom_fwd`、
  `torch.cuda.amp.custom_bwd`、`torch.cpu.amp.autocast`、`torch.cpu.amp.GradScaler`：请使用
  `torch.amp.autocast("cuda", ...)`、`torch.amp.GradScaler("cuda", ...)`、
  `torch.amp.custom_fwd(device_type="cuda")`。
- 线性代数：`torch.qr`、`torch.cholesky`、`torch.lu`、`torch.lu_solve`、`torch.triangular_solve`、
  `torch.chain_matmul`（改用 `torch.linalg.*`）；*(documented)* `torch.norm`、`torch.svd`、`torch.ger`
  （改用 `torch.linalg.vector_norm` / `matrix_norm`、`torch.linalg.svd`、`torch.outer`）。
- `torch.range`（它包含终点，和 Python 的 `range` 不同）：改用 `torch.arange`。
- `torch.nn.utils.weight_norm`：改用 `torch.nn.utils.parametrizations.weight_norm`；
  *(documented)* `nn.UpsamplingNearest2d`、`nn.UpsamplingBilinear2d`：改用 `nn.Upsample`。
- functorch：`functorch.vmap`、`grad`、`grad_and_value`、`vjp`、`jvp`、`jacrev`、`jacfwd`、`hessian`、
  `functionalize`（改用 `torch.func.*`），`make_functional`、`make_functional_with_buffers`
  （改用 `torch.func.functional_call`），`combine_state_for_ensemble`（改用 `torch.func.stack_module_state`）。
- 其他：`torch.testing.assert_allclose`（改用 `torch.testing.assert_close`）、
  `torch.nn.utils.stateless.functional_call`（改用 `torch.func.functional_call`）、
  `torch.cuda.memory_cached` / `max_memory_cached`（改用 `memory_reserved` / `max_memory_reserved`）、
  `torch.backends.cuda.sdp_kernel`（改用 `torch.nn.attention.sdpa_kernel`）、
  `torch.library.impl_abstract`（改用 `torch.library.register_fake`）、`torch.set_default_tensor_type`
  （改用 `torch.set_default_dtype` / `set_default_device`）、`torch.has_cuda`、`torch.has_cudnn`、
  `torch.has_mps`、`torch.has_mkldnn`。

名字会通过导入语句解析（`from torch.cuda.amp import autocast` 在导入处报告）。为旧版 PyTorch 保留的代码不报告：
`except ImportError` / `except AttributeError` 分支，或者检测版本号、`hasattr(torch, ...)` 的 `if` 分支。
已经不存在的函数由 `removed-torch-api`（TD803）报告。

## Why is this bad?
已弃用的函数仍然能运行，所以今天什么都不会坏；但任何一个新版本都可能把它删掉，而且大多数函数每次调用都打印警告：
在训练循环中日志被 `FutureWarning` 刷满，真正重要的警告反而被淹没。有些函数的代价不止是警告：`torch.range`
包含终点（`torch.range(0, 3)` 有四个元素，与 `range` 和 `torch.arange` 不同），换成新函数后这个差一错误就显而易见；
`torch.norm` 的含义取决于输入的维数和 `p`，而 `vector_norm` / `matrix_norm` 把它写明了。

## Symptoms
- `FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated. Please use
  `torch.amp.autocast('cuda', args...)` instead.` (and the same for `GradScaler`,
  `custom_fwd`, `custom_bwd`, `torch.cpu.amp.*`)
- `FutureWarning: `torch.nn.utils.weight_norm` is deprecated in favor of
  `torch.nn.utils.parametrizations.weight_norm`.`
- `UserWarning: torch.range is deprecated and will be removed in a future release because its
  behavior is inconsistent with Python's range builtin. Instead, use torch.arange, which
  produces values in [start, end).`
- `UserWarning: torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a
  future PyTorch release.`
- `FutureWarning: We've integrated functorch into PyTorch. As the final step of the
  integration, `functorch.vmap` is deprecated as of PyTorch 2.0 and will be deleted in a future
  version of PyTorch >= 2.3. Please use `torch.vmap` instead`
- `FutureWarning: `torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed
  in a future release. Please use `torch.testing.assert_close()` instead.`

## Fix safety
只在新调用的计算结果完全相同时提供修复，这些修复是安全的：当所有参数都以关键字传入时，
`torch.cuda.amp.autocast(...)` / `GradScaler(...)` 改为 `torch.amp.autocast("cuda", ...)` /
`torch.amp.GradScaler("cuda", ...)`（它们的位置参数顺序不同），`torch.cpu.amp.*` 同理改用 `"cpu"`
（旧的 autocast 显式传入默认 dtype：CUDA 上为 `float16`，CPU 上为 `bfloat16`；新的读取
`torch.get_autocast_dtype(device)`，除非程序用 `torch.set_autocast_dtype` 改过它，两者的值相同）；
`@torch.cuda.amp.custom_fwd` 改为 `@torch.amp.custom_fwd(device_type="cuda")`；functorch 的函数改为
`torch.func` 中的同名函数（functorch 版本只是转调它们）；`torch.ger`、`torch.cuda.memory_cached`、
`max_memory_cached`、`torch.library.impl_abstract` 和 `torch.nn.utils.stateless.functional_call` 直接改名。
需要用到 `torch` 这个名字的改写，只在 `torch` 确实指向该模块时提供。
`torch.nn.utils.weight_norm` 改为 `torch.nn.utils.parametrizations.weight_norm` 的修复是不安全的：
参数化后的模块没有 `weight_g` / `weight_v` 属性（幅度和方向改为
`parametrizations.weight.original0` / `original1`），对它调用 `remove_weight_norm` 会报错（改用
`torch.nn.utils.parametrize.remove_parametrizations(module, "weight")`），它保存的 state dict
也使用这些新键，旧代码无法加载（它自己能加载旧键）。其余函数（`torch.range`、`torch.linalg` 中的后继函数、`torch.norm`、
`assert_allclose`、`sdp_kernel` 等）的参数或返回值不同，只报告、不修复。

## Known problems
项目声明支持比替代函数更早的 torch 时（其 requirements、`setup.py`、`setup.cfg`、`pyproject.toml` 或 conda
环境中的下界，如 `torch>=1.7`；都没有时看 README）不报告：`torch.linalg.vector_norm` 在 1.9 才出现，
建议改用它会破坏这一承诺。精确固定的版本（`torch==1.7.0`）不算承诺。文件中某个类继承的已弃用类
（`class QuantUpsample(nn.UpsamplingBilinear2d)`，为含有该类的模型提供的替身）不报告；只被这样的类使用时，
它的导入也不报告。在 `try` 中先尝试、由 handler 导入替代名字的导入会报告：在如今的 torch 上它能成功导入，
运行的正是已弃用的那条路径。

张量方法（`x.norm()`、`x.qr()`）不会被报告，现有函数中已弃用的参数用法（不传 `dim=` 的 `torch.cross`）
也不会被报告。`torch.nn.utils.spectral_norm` 不报告：它的文档只是预告将来会弃用，调用时也不警告。

## References
- PyTorch 2.13 的警告和文档字符串（`torch/cuda/amp/`、`torch/_functorch/deprecated.py`、
  `torch/_torch_docs.py`、`torch/functional.py`）；`tests/test_deprecated_torch_api.py` 用已安装的 torch
  检查这张表。
- TorchFix TOR101 / TOR103（`torchfix/deprecated_symbols.yaml`）。
""",
    },
    example="""
import torch

scaler = torch.cuda.amp.GradScaler(enabled=True)
with torch.cuda.amp.autocast(dtype=torch.float16):
    loss = model(x).sum()
""",
    use_instead="""
import torch

scaler = torch.amp.GradScaler("cuda", enabled=True)
with torch.amp.autocast("cuda", dtype=torch.float16):
    loss = model(x).sum()
""",
)


@dataclass(frozen=True)
class Successor:
    new: str  # qualified name of what to use instead
    # "safe" / "unsafe": renaming to `new` is the fix; None: other arguments or results.
    fix: str | None = None
    device: str = ""  # the device the torch.amp call takes first ("cuda", "cpu")
    device_keyword: bool = False  # ... as `device_type=` (custom_fwd / custom_bwd)
    documented: bool = False  # deprecated in the documentation only: no warning at runtime
    shown: str = ""  # what the message names instead of `new`, when one function is not all
    # The first torch release that has `new`: a project that says it supports an older one
    # (`torch>=1.7` in its requirements) is not advised to move to it.
    since: str = "1.0"

    @property
    def variant(self) -> str:
        differs = "" if self.fix or self.device else "differs"
        if self.documented:
            return f"documented-{differs}" if differs else "documented"
        return differs


def _func(name: str, new: str = "") -> tuple[str, Successor]:
    fix = "safe" if not new else None
    return f"functorch.{name}", Successor(new or f"torch.func.{name}", fix, since="2.0")


# Checked against PyTorch 2.13 by tests/test_deprecated_torch_api.py: each one warns when used,
# or, where `documented`, its docstring says it is deprecated.
DEPRECATED: dict[str, Successor] = {
    "torch.cuda.amp.autocast": Successor("torch.amp.autocast", device="cuda", since="1.10"),
    "torch.cuda.amp.GradScaler": Successor("torch.amp.GradScaler", device="cuda", since="2.3"),
    "torch.cuda.amp.custom_fwd": Successor(
        "torch.amp.custom_fwd", device="cuda", device_keyword=True, since="2.4"
    ),
    "torch.cuda.amp.custom_bwd": Successor(
        "torch.amp.custom_bwd", device="cuda", device_keyword=True, since="2.4"
    ),
    "torch.cpu.amp.autocast": Successor("torch.amp.autocast", device="cpu", since="1.10"),
    "torch.cpu.amp.GradScaler": Successor("torch.amp.GradScaler", device="cpu", since="2.3"),
    "torch.range": Successor("torch.arange"),
    "torch.qr": Successor("torch.linalg.qr", since="1.8"),
    "torch.cholesky": Successor("torch.linalg.cholesky", since="1.8"),
    "torch.lu": Successor("torch.linalg.lu_factor", since="1.13"),
    "torch.lu_solve": Successor("torch.linalg.lu_solve", since="1.13"),
    "torch.triangular_solve": Successor("torch.linalg.solve_triangular", since="1.11"),
    "torch.chain_matmul": Successor("torch.linalg.multi_dot", since="1.9"),
    "torch.norm": Successor("torch.linalg.vector_norm", documented=True, since="1.9"),
    "torch.svd": Successor("torch.linalg.svd", documented=True, since="1.8"),
    "torch.ger": Successor("torch.outer", "safe", documented=True, since="1.7"),
    "torch.nn.utils.weight_norm": Successor(
        "torch.nn.utils.parametrizations.weight_norm", "unsafe", since="2.1"
    ),
    "torch.nn.utils.weight_norm.weight_norm": Successor(
        "torch.nn.utils.parametrizations.weight_norm", since="2.1"
    ),
    "torch.nn.UpsamplingNearest2d": Successor("torch.nn.Upsample", documented=True),
    "torch.nn.UpsamplingBilinear2d": Successor("torch.nn.Upsample", documented=True),
    "torch.testing.assert_allclose": Successor("torch.testing.assert_close", since="1.9"),
    "torch.nn.utils.stateless.functional_call": Successor(
        "torch.func.functional_call", "safe", since="2.0"
    ),
    "torch.cuda.memory_cached": Successor("torch.cuda.memory_reserved", "safe", since="1.4"),
    "torch.cuda.max_memory_cached": Successor(
        "torch.cuda.max_memory_reserved", "safe", since="1.4"
    ),
    "torch.backends.cuda.sdp_kernel": Successor("torch.nn.attention.sdpa_kernel", since="2.3"),
    "torch.library.impl_abstract": Successor("torch.library.register_fake", "safe", since="2.4"),
    # A CUDA tensor type set the device too: its successor is two functions.
    "torch.set_default_tensor_type": Successor(
        "torch.set_default_dtype",
        shown="torch.set_default_dtype / torch.set_default_device",
        since="2.0",
    ),
    "torch.has_cuda": Successor("torch.backends.cuda.is_built()", since="1.10"),
    "torch.has_cudnn": Successor("torch.backends.cudnn.is_available()"),
    "torch.has_mps": Successor("torch.backends.mps.is_built()", since="1.12"),
    "torch.has_mkldnn": Successor("torch.backends.mkldnn.is_available()"),
    **dict(
        _func(name)
        for name in """vmap grad grad_and_value vjp jvp jacrev jacfwd hessian
        functionalize""".split()
    ),
    **dict(
        [
            _func("make_functional", "torch.func.functional_call"),
            _func("make_functional_with_buffers", "torch.func.functional_call"),
            _func("combine_state_for_ensemble", "torch.func.stack_module_state"),
        ]
    ),
}
_LAST_NAMES = {qualname.rpartition(".")[2] for qualname in DEPRECATED}
_FROM_FUNCTORCH = re.compile(r"from\s+functorch\b")


@PITFALL.static(ast.Attribute, names=_LAST_NAMES)
@_OUTSIDE_COMPAT_FALLBACKS
def check_attribute(node: ast.Attribute, ctx: Context) -> Iterator[Finding]:
    """`torch.cuda.amp.autocast(...)`, `functorch.vmap`: called or used as a value."""
    if not isinstance(node.ctx, ast.Load):
        return
    old = ctx.qualname(node)
    successor = DEPRECATED.get(old or "")
    if successor is None or only_identified(node, ctx) or _a_base_class(node, ctx):
        return
    if ctx.project.supports_before("torch", successor.since):
        return  # the project promises to run on a torch without the successor
    written = " ".join(ctx.text(node).split())
    fix = _attribute_fix(node, old or "", successor, ctx)
    yield ctx.finding(PITFALL, node, successor.variant, fix=fix, old=written, new=_shown(successor))


@PITFALL.static(ast.ImportFrom)
@_OUTSIDE_COMPAT_FALLBACKS
def check_import(node: ast.ImportFrom, ctx: Context) -> Iterator[Finding]:
    """`from torch.cuda.amp import autocast`, `from functorch import vmap`."""
    module = node.module
    if node.level or module is None or module.partition(".")[0] not in {"torch", "functorch"}:
        return
    found = [
        (a, successor)
        for a in node.names
        if (successor := DEPRECATED.get(f"{module}.{a.name}")) is not None
        and not ctx.project.supports_before("torch", successor.since)
        and not _only_subclassed(a.asname or a.name, ctx)
    ]
    if not found:
        return
    module_fix = _functorch_import_fix(node, found, ctx)
    for alias, successor in found:
        fix = module_fix
        module_fix = None  # one fix renames the module for all the names
        new_module, _, new_name = successor.new.rpartition(".")
        if fix is None and successor.fix and new_module == module and not successor.device:
            renamed = f"{new_name} as {alias.asname or alias.name}"
            fix = _fix(ctx, successor.fix, renamed, ctx.replace(alias, renamed))
        yield ctx.finding(
            PITFALL,
            alias,
            successor.variant,
            fix=fix,
            old=f"{module}.{alias.name}",
            new=_shown(successor),
        )


def _a_base_class(node: ast.AST, ctx: Context) -> bool:
    """`class QuantUpsample(nn.UpsamplingBilinear2d)`: a drop-in for models holding the
    deprecated class (brevitas' quantized layers), which must keep subclassing it."""
    owner = ctx.parent()
    return isinstance(owner, ast.ClassDef) and any(base is node for base in owner.bases)


def _only_subclassed(name: str, ctx: Context) -> bool:
    """The imported `name` is used in the file only by the classes that subclass it (see
    `_a_base_class`): as their base, or in their bodies (`UpsamplingBilinear2d.__init__(self)`)."""
    found = index(ctx)
    subclasses = [
        c
        for c in found.everywhere(ast.ClassDef)
        if any(type(base) is ast.Name and base.id == name for base in c.bases)  # type: ignore[attr-defined]
    ]
    if not subclasses:
        return False
    spans = [(c.lineno, c.end_lineno or c.lineno) for c in subclasses]
    return all(
        any(first <= use.lineno <= last for first, last in spans)
        for use in found.names_in(ctx.tree, name)
        if isinstance(use.ctx, ast.Load)
    )


def _functorch_import_fix(node: ast.ImportFrom, found: list, ctx: Context) -> Fix | None:
    """`from functorch import vmap, grad` -> `from torch.func import vmap, grad`, when every
    name imported has its namesake in torch.func."""
    if node.module != "functorch" or len(found) != len(node.names):
        return None
    if not all(s.fix and s.new == f"torch.func.{a.name}" for a, s in found):
        return None
    start = ctx.span(node)[0]
    written = _FROM_FUNCTORCH.match(ctx.text(node))
    if written is None:
        return None
    edit = ctx.edit(start, start + written.end(), "from torch.func")
    return _fix(ctx, "safe", "torch.func", edit)


def _shown(successor: Successor) -> str:
    if successor.shown:
        return successor.shown
    if successor.device_keyword:
        return f'{successor.new}(..., device_type="{successor.device}")'
    if successor.device:
        return f'{successor.new}("{successor.device}", ...)'
    return successor.new


def _attribute_fix(node: ast.Attribute, old: str, successor: Successor, ctx: Context) -> Fix | None:
    if not (successor.fix or successor.device):
        return None
    old_module = old.rpartition(".")[0]
    if successor.new.startswith(old_module + ".") and not successor.device:
        # Stays in the module the written prefix names: only the last part changes.
        tail = successor.new[len(old_module) + 1 :]
        end = ctx.span(node)[1]
        edit = ctx.edit(end - len(node.attr), end, tail)
        return _fix(ctx, successor.fix or "safe", successor.new, edit)
    torch = torch_name(node, ctx)
    if torch is None:
        return None  # no name for the torch module at this line: no rewrite
    new = torch + successor.new[len("torch") :]
    if not successor.device:
        return _fix(ctx, successor.fix or "safe", successor.new, ctx.replace(node, new))
    return _device_fix(node, new, successor, ctx)


def _device_fix(node: ast.Attribute, new: str, successor: Successor, ctx: Context) -> Fix | None:
    """`torch.cuda.amp.autocast(enabled=...)` -> `torch.amp.autocast("cuda", enabled=...)`;
    `@torch.cuda.amp.custom_fwd` -> `@torch.amp.custom_fwd(device_type="cuda")`."""
    call = ctx.statement_parents().get(node)
    device = f'"{successor.device}"'
    if not (isinstance(call, ast.Call) and call.func is node):
        if successor.device_keyword and _decorates(node, ctx):
            edit = ctx.replace(node, f"{new}(device_type={device})")
            return _fix(ctx, "safe", _shown(successor), edit)
        return None  # passed around as a value: its calls cannot be seen here
    if call.args or any(k.arg is None for k in call.keywords):
        return None  # positional parameters in another order, or maybe in **kwargs
    opening = ctx.source.find("(", ctx.span(node)[1])
    argument = f"device_type={device}" if successor.device_keyword else device
    inserted = f"{argument}, " if call.keywords else argument
    edits = (ctx.replace(node, new), ctx.edit(opening + 1, opening + 1, inserted))
    return _fix(ctx, "safe", _shown(successor), *edits)


def _decorates(node: ast.AST, ctx: Context) -> bool:
    owner = ctx.statement_parents().get(node)
    return isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
        d is node for d in owner.decorator_list
    )


def _fix(ctx: Context, applicability: str, new: str, *edits: Edit) -> Fix:
    title = {lang: text.format(new=new) for lang, text in PITFALL.fix_title.items()}
    return ctx.fix(PITFALL, applicability, *edits, title=title)
