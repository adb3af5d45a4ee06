"""TD504 state-dict-prefix-mismatch: hand-rolled removal of the "module." prefix from keys."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import (
    MODEL_WRAPPERS,
    Clue,
    Context,
    Finding,
    Pitfall,
    index_of,
    lazy_compile,
    per_file,
    subtree,
)
from torchdoctor.catalog.sdk import state_dicts as sd_errors

PITFALL = Pitfall(
    code="TD504",
    name="state-dict-prefix-mismatch",
    # Opt-in: whether every key has the prefix is a fact of the checkpoint, which the code only
    # hints at; on the precision readings most cuts read a checkpoint whose producer always wraps.
    default=False,
    title={"en": "State-dict key prefix stripped by hand", "zh": "手工去掉 state_dict 键的前缀"},
    messages={
        "": {
            "en": "`{surgery}` strips the key prefix by hand and can corrupt other keys; use "
            '`torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state_dict, "{prefix}")`',
            "zh": "`{surgery}` 手工去掉键前缀，可能会破坏其他键；请使用 "
            '`torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state_dict, "{prefix}")`',
        },
        "ckpt": {
            "en": "every key starts with `{prefix}`{origin}: loading into the bare model fails with "
            "every key both missing and unexpected",
            "zh": "每个键都以 `{prefix}` 开头{origin}：加载进裸模型时，每个键都会既缺失又多余",
        },
        "ckpt-checkpoint": {
            "en": "the checkpoint's keys carry the prefix `{prefix}` that {reference}'s lack "
            "({count} keys, e.g. `{example}`){origin}",
            "zh": "checkpoint 的键带有 {reference}的键没有的前缀 `{prefix}`（{count} 个键，如 "
            "`{example}`）{origin}",
        },
        "ckpt-wrapped-part": {
            "en": "DataParallel wrapped different parts of the net in the checkpoint and in "
            "{reference}: {count} keys differ only by where `module.` stands (`{example}` "
            "there, `{target}` here), as when a script wraps only `model.features`",
            "zh": "checkpoint 和{reference}中被 DataParallel 包装的部分不同：{count} 个键只差 "
            "`module.` 的位置（checkpoint 中是 `{example}`，这里是 `{target}`），就像脚本只包装了 "
            "`model.features` 时那样",
        },
        "ckpt-model": {
            "en": "{reference}'s keys carry the prefix `{prefix}` that the checkpoint's lack "
            "({count} keys, e.g. `{example}`){origin}",
            "zh": "{reference}的键带有 checkpoint 的键没有的前缀 `{prefix}`（{count} 个键，如 "
            "`{example}`）{origin}",
        },
    },
    fix_hint={
        "en": "Remove the wrapper prefix only where it is present: "
        "`torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state_dict, "
        '"module.")` before `load_state_dict`, and save `model.module.state_dict()` '
        "next time; `torchdoctor ckpt fix FILE -o FIXED.pth` rewrites the checkpoint's keys.",
        "zh": "只在前缀存在时去掉它：`load_state_dict` 之前调用 "
        "`torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state_dict, "
        '"module.")`；以后保存时改存 `model.module.state_dict()`。'
        "`torchdoctor ckpt fix FILE -o FIXED.pth` 可以改写 checkpoint 的键。",
    },
    docs={
        "en": """
## What it catches
Key surgery on a state dict (one that comes from `torch.load` or `.state_dict()`) while
iterating its `.items()` or `.keys()`, to drop the `module.` prefix that `DataParallel` /
`DistributedDataParallel` adds, or the `_orig_mod.` prefix that `torch.compile` adds:
`k[7:]` without a `startswith` check, `k.replace("module.", "")`, `k.lstrip("module.")`.
A `module.` cut is not reported in the branch of an `if` whose test speaks of several GPUs or a
wrapper (`if is_multi_gpu:`, `if args.ngpu > 1:`): there the author knows every key has it.

## Why is this bad?
Each of these is subtly wrong. `k[7:]` cuts seven characters from every key, also from keys
that never had the prefix (a checkpoint saved without `DataParallel`). `k.replace("module.", "")`
removes the text anywhere in the key: `encoder.submodule.weight` becomes `encoder.subweight`.
`k.lstrip("module.")` strips *characters* from the set `m o d u l e .`, not a prefix:
`model.0.weight` becomes `0.weight`. The result is a missing-key error, or with
`strict=False` a model that silently keeps random weights. PyTorch has a helper that removes a
prefix only where it is present, in place:
`torch.nn.modules.utils.consume_prefix_in_state_dict_if_present`.

## Symptoms
`RuntimeError: Error(s) in loading state_dict for ...: Missing key(s) in state_dict:
"encoder.submodule.weight" ... Unexpected key(s) in state_dict: "encoder.subweight"`.
Without any surgery, a checkpoint saved from a wrapped model fails with every key listed twice:
`Missing key(s) in state_dict: "conv1.weight", ... Unexpected key(s) in state_dict:
"module.conv1.weight", ...` (torch 0.3: `KeyError: 'unexpected key "module.conv1.weight" in
state_dict'`).

## Known problems
Opt-in. A cut is wrong only for a key that lacks the prefix, and whether a checkpoint has such
keys is a fact of the file, not of the code: on the corpora read so far most cuts read a
checkpoint whose producer (often another script of the project) always wraps the model, so
every key has the prefix (precision about one in three; docs/precision.md).
""",
        "zh": """
## What it catches
在遍历 state dict（来自 `torch.load` 或 `.state_dict()`）的 `.items()` 或 `.keys()` 时，手工修改键名，
去掉 `DataParallel` / `DistributedDataParallel` 加上的 `module.` 前缀，或 `torch.compile` 加上的
`_orig_mod.` 前缀：没有 `startswith` 判断的 `k[7:]`、`k.replace("module.", "")`、`k.lstrip("module.")`。
如果去掉 `module.` 的代码位于某个 `if` 分支中，而条件说的是多 GPU 或包装器（`if is_multi_gpu:`、
`if args.ngpu > 1:`），则不报告：作者知道那里的每个键都带这个前缀。

## Why is this bad?
这几种写法都有隐蔽的错误。`k[7:]` 会从每个键上砍掉 7 个字符，包括本来就没有前缀的键（比如没用
`DataParallel` 时保存的 checkpoint）。`k.replace("module.", "")` 会替换键中任意位置的文本：
`encoder.submodule.weight` 变成了 `encoder.subweight`。`k.lstrip("module.")` 去掉的是字符集合
`m o d u l e .` 中的*字符*，而不是前缀：`model.0.weight` 会变成 `0.weight`。结果要么是缺键报错，
要么在 `strict=False` 时模型悄悄保留了随机权重。PyTorch 自带一个只在前缀存在时才原地去掉它的函数：
`torch.nn.modules.utils.consume_prefix_in_state_dict_if_present`。

## Symptoms
`RuntimeError: Error(s) in loading state_dict for ...: Missing key(s) in state_dict:
"encoder.submodule.weight" ... Unexpected key(s) in state_dict: "encoder.subweight"`。
即使没做任何手工处理，从包装过的模型保存的 checkpoint 加载到裸模型时，每个键都会出现两次：
`Missing key(s) in state_dict: "conv1.weight", ... Unexpected key(s) in state_dict:
"module.conv1.weight", ...`（torch 0.3 中为 `KeyError: 'unexpected key "module.conv1.weight" in
state_dict'`）。

## Known problems
需手动启用。只有缺少该前缀的键才会被截坏，而 checkpoint 里有没有这样的键是文件本身的事实，代码只能
提供线索：在目前读过的语料中，大多数截取读的 checkpoint 都由总是包装模型的代码（常常是项目里的另一个
脚本）保存，每个键都带前缀（精确率约三分之一；见 docs/precision.md）。
""",
    },
    example="""
import torch

state_dict = torch.load("model.pt")
clean = {k.replace("module.", ""): v for k, v in state_dict.items()}
""",
    use_instead="""
import torch
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

state_dict = torch.load("model.pt")
consume_prefix_in_state_dict_if_present(state_dict, "module.")
""",
)

# Wrapper prefixes, by the length a slice `k[N:]` cuts.
PREFIXES = {len("module."): "module.", len("_orig_mod."): "_orig_mod."}
COMPREHENSIONS = (ast.DictComp, ast.ListComp, ast.SetComp, ast.GeneratorExp)


@PITFALL.static(ast.For)
def check_loop(node: ast.For, ctx: Context) -> Iterator[Finding]:
    key = _key_variable(node.iter, node.target, ctx)
    if key is None:
        return
    body = [n for statement in node.body for n in ast.walk(statement)]
    yield from _reported(_surgeries(body, key), node.iter.func.value, ctx, body)


@PITFALL.static(*COMPREHENSIONS)
def check_comprehension(node: ast.expr, ctx: Context) -> Iterator[Finding]:
    generator = node.generators[0]
    key = _key_variable(generator.iter, generator.target, ctx)
    if key is None:
        return
    parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
    body = [n for part in (*parts, *generator.ifs) for n in ast.walk(part)]
    yield from _reported(_surgeries(body, key), generator.iter.func.value, ctx, body)


def _key_variable(source: ast.expr, target: ast.expr, ctx: Context) -> str | None:
    """The loop's key variable when the loop walks some dict's `.items()` or `.keys()`. Whether
    the dict is a state dict is asked last, when the loop strips a prefix: following a name to
    its assignments reads the whole file's index."""
    method = ctx.method_name(source)
    if method not in ("items", "keys") or source.args:
        return None
    if method == "items":
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
            return None
        target = target.elts[0]
    return target.id if isinstance(target, ast.Name) else None


def _is_state_dict(expr: ast.expr, ctx: Context, follow_names: bool = True) -> bool:
    """`expr` comes from `torch.load(...)` or `.state_dict()`, maybe indexed (`ckpt["model"]`)."""
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    if isinstance(expr, ast.Call):
        return ctx.method_name(expr) == "state_dict" or ctx.qualname(expr.func) == "torch.load"
    if isinstance(expr, ast.Name) and follow_names:
        return _assigned_state_dict(expr, ctx)
    return False


def _assigned_state_dict(name: ast.Name, ctx: Context) -> bool:
    """Every assignment to `name` before it, in its function (or module), is a state dict."""
    first, first_other = _state_dict_lines(ctx, ctx.enclosing_function() or ctx.tree, name.id)
    return (
        first is not None
        and first < name.lineno
        and (first_other is None or first_other >= name.lineno)
    )


@per_file
def _state_dict_lines(ctx: Context, scope: ast.AST, name: str) -> tuple[int | None, int | None]:
    """The first line that assigns `name` in the scope (not in the functions and classes nested
    in it), and the first that assigns it something else than a state dict."""
    found = index_of(ctx, scope)
    assignments = [
        (node.lineno, node.value)
        for node in found.assignments(scope, name)
        if found.is_local(scope, node)
    ]
    others = [
        line for line, value in assignments if not _is_state_dict(value, ctx, follow_names=False)
    ]
    return min((line for line, _ in assignments), default=None), min(others, default=None)


def _surgeries(nodes: list[ast.AST], key: str) -> list[tuple[ast.AST, str]]:
    """(node, prefix) for each node of a loop's body that strips a wrapper prefix from `key`."""
    guarded = any(_is_key_method(n, key, "startswith") for n in nodes)
    found = [(node, _stripped_prefix(node, key, guarded)) for node in nodes]
    return [(node, prefix) for node, prefix in found if prefix is not None]


def _reported(
    surgeries: list[tuple[ast.AST, str]], source: ast.expr, ctx: Context, body: list[ast.AST]
) -> Iterator[Finding]:
    """The surgeries of a loop over `source`'s items or keys, when `source` is a state dict
    (asked only then: following a name to its assignments reads the whole file's index). Each
    cut once (the same `k[7:]` in a comprehension's key and its filter is one mistake); none
    whose result the loop tests against the keys it wants (`if k[7:] in model_dict`: a key cut
    wrongly is dropped by design, not loaded by mistake); no `module.` cut in a file whose
    every saved model is wrapped in DataParallel (it reads back what it wrote)."""
    if not surgeries or not _is_state_dict(source, ctx):
        return
    shown = {
        ctx.text(node.left)
        for node in body
        if type(node) is ast.Compare and len(node.ops) == 1 and type(node.ops[0]) is ast.In
    }
    for node, prefix in surgeries:
        text = ctx.text(node)
        if (
            text in shown
            or prefix == "module."
            and (_saves_wrapped_models_only(ctx) or _under_a_wrapper_test(node, ctx))
        ):
            continue
        shown.add(text)
        yield ctx.finding(PITFALL, node, surgery=text, prefix=prefix)


# Words of an `if` test that says the state dict came from a wrapped model: `if is_multi_gpu:`,
# `if args.ngpu > 1:`, `if opt.data_parallel:`, `if "module" in first_key:`.
_WRAPPED_WORDS = ("gpu", "parallel", "distributed", "ddp", "module")


def _under_a_wrapper_test(node: ast.AST, ctx: Context) -> bool:
    """The cut runs only in the branch of an `if` whose test speaks of several GPUs or a
    wrapper: the author strips `module.` where every key has it."""
    line = getattr(node, "lineno", 0)
    for statement in ctx.ancestors:
        if type(statement) is not ast.If or not statement.body:
            continue
        if not statement.body[0].lineno <= line <= statement.body[-1].end_lineno:  # type: ignore[operator]
            continue
        words = [
            part.id
            if type(part) is ast.Name
            else part.attr
            if type(part) is ast.Attribute
            else part.value
            if type(part) is ast.Constant and type(part.value) is str
            else ""
            for part in ast.walk(statement.test)
        ]
        if any(word in text.lower() for text in words for word in _WRAPPED_WORDS):
            return True
    return False


_MOST_ASSIGNMENTS = 64


@per_file
def _saves_wrapped_models_only(ctx: Context) -> bool:
    """Every model state dict this file passes to `torch.save` is `x.state_dict()` of a name
    its function last bound, in a block holding the save, to a model wrapped in `DataParallel`
    or `DistributedDataParallel` (`.cuda()` / `.to()` after it allowed): each key of what it
    saves starts with `module.`. Optimizer, scheduler and scaler states are left out."""
    if "DataParallel" not in ctx.source:
        return False
    found = index_of(ctx, ctx.tree)
    saved = False
    for call in found.calls_named(ctx.tree, ("save",)):
        if ctx.qualname(call.func) != "torch.save":
            continue
        for node in subtree(call):
            if type(node) is not ast.Call or ctx.method_name(node) != "state_dict":
                continue
            owner = node.func.value  # type: ignore[attr-defined]
            if type(owner) is ast.Name and any(
                word in owner.id.lower() for word in ("optim", "sched", "scaler")
            ):
                continue
            if type(owner) is not ast.Name or not _wrapped_before(ctx, found, owner.id, call):
                return False
            saved = True
    return saved


def _wrapped_before(ctx: Context, found, name: str, call: ast.Call) -> bool:
    """The last binding of `name` before `call`, in its function and in a block holding it,
    wraps a model in DataParallel or DistributedDataParallel."""
    scope = found.scopes[found.number[call]]
    holding, node = set(), call
    while node is not None:
        node = found.parents.get(node)
        holding.add(node)
    assignments = found.assignments(scope, name)
    if len(assignments) > _MOST_ASSIGNMENTS:
        return False  # read per save: bounded, so never quadratic (unknown: reported)
    before = [
        assign
        for assign in assignments
        if assign.lineno < call.lineno
        and found.is_local(scope, assign)
        and found.parents.get(assign) in holding
    ]
    if not before:
        return False
    value = before[-1].value
    while (
        type(value) is ast.Call
        and type(value.func) is ast.Attribute
        and value.func.attr in ("cuda", "to")
    ):
        value = value.func.value
    if type(value) is not ast.Call:
        return False
    qualname = ctx.qualname(value.func) or ""
    return qualname.rpartition(".")[2] in MODEL_WRAPPERS


def _stripped_prefix(node: ast.AST, key: str, guarded: bool) -> str | None:
    """The wrapper prefix `node` removes from `key` in a way that can go wrong, else None."""
    if isinstance(node, ast.Subscript) and not guarded:
        cut = node.slice
        if (
            isinstance(node.value, ast.Name)
            and node.value.id == key
            and isinstance(cut, ast.Slice)
            and cut.upper is None
            and cut.step is None
            and isinstance(cut.lower, ast.Constant)
        ):
            return PREFIXES.get(cut.lower.value) if type(cut.lower.value) is int else None
        return None
    if _is_key_method(node, key, "replace") and len(node.args) == 2 and _is_text(node.args[1], ""):
        return _prefix_argument(node)
    if _is_key_method(node, key, "lstrip") and len(node.args) == 1:
        return _prefix_argument(node)
    return None


def _is_key_method(node: ast.AST, key: str, method: str) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == method
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == key
    )


def _prefix_argument(call: ast.Call) -> str | None:
    first = call.args[0]
    return first.value if _is_text(first) and first.value in PREFIXES.values() else None


def _is_text(node: ast.AST, value: str | None = None) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and (value is None or node.value == value)
    )


# Explaining load_state_dict errors ----------------------------------------------------------

WRAPPERS = {
    "module.": "`DataParallel` / `DistributedDataParallel`",
    "_orig_mod.": "`torch.compile`",
}

CAUSES = {
    ("checkpoint", True): {
        "en": "The checkpoint's keys start with `{prefix}` and the model's do not (keys that "
        "differ only by it: {matched}, e.g. `{example}`): it was saved from a model "
        "wrapped in {wrapper} and is loaded into the bare model.",
        "zh": "checkpoint 的键都以 `{prefix}` 开头，而模型的键没有（{matched} 个键只差这个前缀，"
        "如 `{example}`）：它是从 {wrapper} 包装过的模型保存的，现在却加载进裸模型。",
    },
    ("model", True): {
        "en": "The model's keys start with `{prefix}` and the checkpoint's do not (keys that "
        "differ only by it: {matched}, e.g. `{example}`): the model is wrapped in {wrapper} "
        "before loading a checkpoint saved from the bare model.",
        "zh": "模型的键都以 `{prefix}` 开头，而 checkpoint 的键没有（{matched} 个键只差这个前缀，"
        "如 `{example}`）：模型在加载之前已被 {wrapper} 包装，而 checkpoint 是从裸模型保存的。",
    },
    ("checkpoint", False): {
        "en": "The checkpoint's keys carry an extra `{prefix}` prefix (keys: {matched}, "
        "e.g. `{example}`): it was saved from an object that held your network as its "
        "attribute `{attribute}` (a LightningModule, a training wrapper, a bigger model).",
        "zh": "checkpoint 的键多了一个 `{prefix}` 前缀（{matched} 个键，如 `{example}`）："
        "它是从一个把你的网络作为属性 `{attribute}` 的对象保存的"
        "（LightningModule、训练用的包装类或更大的模型）。",
    },
    ("model", False): {
        "en": "The model's keys carry an extra `{prefix}` prefix that the checkpoint's lack "
        "(keys: {matched}, e.g. `{example}`): the checkpoint holds only the sub-network "
        "`{attribute}`.",
        "zh": "模型的键多了一个 checkpoint 里没有的 `{prefix}` 前缀（{matched} 个键，如 "
        "`{example}`）：checkpoint 只保存了子网络 `{attribute}`。",
    },
}
FIXES = {
    "checkpoint": {
        "en": "Strip it before loading: `torch.nn.modules.utils."
        'consume_prefix_in_state_dict_if_present(state_dict, "{prefix}")`, then '
        "`model.load_state_dict(state_dict)`; when saving a wrapped model, save "
        "`model.module.state_dict()` (`model._orig_mod` for torch.compile). "
        "`torchdoctor ckpt fix FILE -o FIXED.pth` rewrites the file's keys once and for all.",
        "zh": "加载前去掉前缀：`torch.nn.modules.utils."
        'consume_prefix_in_state_dict_if_present(state_dict, "{prefix}")`，再 '
        "`model.load_state_dict(state_dict)`；保存包装过的模型时，改存 "
        "`model.module.state_dict()`（torch.compile 则是 `model._orig_mod`）。"
        "也可以用 `torchdoctor ckpt fix FILE -o FIXED.pth` 把文件里的键一次性改好。",
    },
    "model": {
        "en": "Load into the inner module: `model.{inner}load_state_dict(state_dict)`, or "
        "load the weights before wrapping the model.",
        "zh": "加载到内部模块：`model.{inner}load_state_dict(state_dict)`，"
        "或者先加载权重再包装模型。",
    },
}


@PITFALL.error_check(types=(), words=("state_dict", "unexpected"))
def explain(block, report) -> Clue | None:
    error = sd_errors.from_block(block, report)
    if error is None:
        return None
    kind = sd_errors.kind(error)
    if kind == "keys" and sd_errors.cut_before_unexpected(error, report):
        fields = {
            "example": error.other_missing[0],
            "groups": sd_errors.groups(error.other_missing),
        }
        return Clue(0.6, _CUT_MISSING_CAUSE, _CUT_MISSING_FIX, fields)
    if kind != "prefix":
        return None
    prefix = sd_errors.prefix_of(error)
    if prefix is None:
        return _wrapper_owner(error) or _nested(error)
    prefixed = error.unexpected if prefix.side == "checkpoint" else error.missing
    example = next(k for k in prefixed if k.startswith(prefix.prefix))
    smaller = min(len(error.other_missing), len(error.other_unexpected))
    if not smaller:  # one side only (torch 0.3's KeyError, a cut-off message)
        confidence = 0.85 if prefix.side == "checkpoint" else 0.75
    elif prefix.matched >= 0.9 * smaller:
        confidence = 0.95 if prefix.wrapper else 0.9
    else:
        confidence = 0.8
    wrapper = " + ".join(WRAPPERS[w] for w in WRAPPERS if w in prefix.prefix)
    inner = (
        prefix.prefix
        if prefix.side == "model" and not prefix.wrapper
        else ("module." if prefix.prefix.startswith("module.") else "_orig_mod.")
    )
    fields = {
        "prefix": prefix.prefix,
        "matched": str(prefix.matched),
        "example": example,
        "wrapper": wrapper,
        "attribute": prefix.prefix.rstrip("."),
        "inner": inner,
    }
    return Clue(confidence, CAUSES[prefix.side, prefix.wrapper], FIXES[prefix.side], fields)


# Only missing keys shown, the list cut off before the unexpected keys torch prints after it.
_CUT_MISSING_CAUSE = {
    "en": "Model keys are missing from the checkpoint (in {groups}, e.g. `{example}`), and the "
    "text stops before the rest of torch's message, the unexpected keys that would show what "
    "the checkpoint holds instead. Missing keys with nothing shown beside them are most often "
    "the whole model's keys, saved under a wrapper's prefix: `module.` from `DataParallel`/`DistributedDataParallel` "
    "(a checkpoint trained on several GPUs), `_orig_mod.` from `torch.compile`. If the "
    "checkpoint's keys have no such prefix, it lacks those layers instead (another model or "
    "version).",
    "zh": "checkpoint 中缺少模型的键（位于 {groups}，如 `{example}`），而文本在 torch 信息的后半部分之前就"
    "截断了，即本可说明 checkpoint 里装的是什么的多余键。只显示缺失键时，最常见的是整个模型的键都带着"
    "包装器的前缀保存了：`DataParallel`/`DistributedDataParallel` 的 `module.`（多 GPU 训练的 checkpoint）、"
    "`torch.compile` 的 `_orig_mod.`。如果 checkpoint 的键没有这种前缀，那就是它缺少这些层"
    "（另一个模型或版本）。",
}
_CUT_MISSING_FIX = {
    "en": "Print the checkpoint's first keys (`print(list(state_dict)[:5])`, or `torchdoctor "
    "ckpt inspect FILE`); if they start with `module.`, strip it before loading: "
    '`torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state_dict, "module.")` '
    "(likewise `_orig_mod.`), or save `model.module.state_dict()` when training.",
    "zh": "打印 checkpoint 的前几个键（`print(list(state_dict)[:5])`，或 `torchdoctor ckpt inspect "
    "FILE`）；如果它们以 `module.` 开头，加载前去掉它：`torch.nn.modules.utils."
    'consume_prefix_in_state_dict_if_present(state_dict, "module.")`（`_orig_mod.` 同理），'
    "或者训练时保存 `model.module.state_dict()`。",
}


# A load_state_dict message whose keys are all cut off (`Missing key(s) in state_dict:
# "module.densenet121.features.......`): the keys cannot be compared, but the list's first key
# still shows the wrapper's prefix on the side it comes from.
_CUT_PREFIXED_KEY = lazy_compile(
    r"(?P<side>Missing|Unexpected) key\(s\) in state_dict:?\s{0,5}\\?[\"'`\u201c]"
    r"(?P<prefix>module\.|_orig_mod\.)(?P<rest>[\w.]{1,300})"
)
_CUT_PREFIXED_CAUSE = {
    "model": {
        "en": "The missing keys (cut off in the text, e.g. `{example}`) start with `{prefix}`: "
        "the model is wrapped in {wrapper} before loading, and the checkpoint, saved from the "
        "bare model, has the same keys without it (the text does not show the checkpoint's "
        "keys to confirm it).",
        "zh": "缺失的键（文本中被截断，如 `{example}`）以 `{prefix}` 开头：模型在加载之前已被 {wrapper} "
        "包装，而从裸模型保存的 checkpoint 中是不带该前缀的同样的键（文本没有给出 checkpoint 的键，"
        "无法确认）。",
    },
    "checkpoint": {
        "en": "The unexpected keys (cut off in the text, e.g. `{example}`) start with `{prefix}`: "
        "the checkpoint was saved from a model wrapped in {wrapper} and is loaded into the bare "
        "model.",
        "zh": "多余的键（文本中被截断，如 `{example}`）以 `{prefix}` 开头：checkpoint 是从 {wrapper} "
        "包装过的模型保存的，现在却加载进裸模型。",
    },
}


@PITFALL.error_check(types=(), words=("key(s) in state_dict",))
def cut_prefixed_key(block, report) -> Clue | None:
    """A load_state_dict message none of whose keys survived the pasting whole."""
    if "key(s) in state_dict" not in block.message:
        return None
    if sd_errors.in_text(report) is not None:
        return None  # whole keys shown: `explain` above compares them
    found = _CUT_PREFIXED_KEY.search(block.message)
    if found is None:
        return None
    side = "model" if found.group("side") == "Missing" else "checkpoint"
    prefix = found.group("prefix")
    fields = {
        "prefix": prefix,
        "example": (prefix + found.group("rest")).rstrip("."),
        "wrapper": WRAPPERS[prefix],
        "inner": prefix,
    }
    confidence = 0.7 if side == "model" else 0.8
    return Clue(confidence, _CUT_PREFIXED_CAUSE[side], FIXES[side], fields)


_RETOLD_CAUSE = {
    "en": "The text shows the same key with and without a `{prefix}` prefix (`{bare}` and "
    "`{example}`): one side was saved from or loaded into a model wrapped in {wrapper}, the "
    "other from the bare model; released weights saved from a `DataParallel` model carry it.",
    "zh": "文本里同一个键出现了带和不带 `{prefix}` 前缀的两种写法（`{bare}` 和 `{example}`）："
    "一方来自 {wrapper} 包装过的模型，另一方来自裸模型；从 `DataParallel` 模型保存的发布权重就带这个"
    "前缀。",
}
_RETOLD_FIX = {
    "en": "When the checkpoint's keys carry it, strip it before loading: `torch.nn.modules."
    'utils.consume_prefix_in_state_dict_if_present(state_dict, "{prefix}")`; when the '
    "model's do, load into the inner module: `model.{prefix}load_state_dict(state_dict)`.",
    "zh": "如果是 checkpoint 的键带前缀，就在加载前去掉：`torch.nn.modules.utils."
    'consume_prefix_in_state_dict_if_present(state_dict, "{prefix}")`；如果是模型的键带前缀，'
    "就加载到内部模块：`model.{prefix}load_state_dict(state_dict)`。",
}
# A dotted key in quotes or backticks, as an issue retells the keys it saw.
_QUOTED_KEY = lazy_compile(
    r"[\"'`\u201c](?P<key>[A-Za-z_]\w{0,80}(?:\.\w{1,80}){1,20})[\"'`\u201d]"
)
_ABOUT_STATE_DICTS = lazy_compile(r"state_dict|\bkeys?\b|checkpoint|pre-?trained")
_QUOTED_KEYS = 200


@PITFALL.error_check(types=(), words=("module.", "_orig_mod."))
def retold_prefix(block, report) -> Clue | None:
    """No load_state_dict message, but prose quoting a key and the same key under a wrapper's
    prefix ("expected `conv1.weight` but the weights have `module.conv1.weight`")."""
    if block.short_type or sd_errors.in_text(report) is not None:
        return None  # a message of torch's own is read by `explain` above
    if not report.search(_ABOUT_STATE_DICTS):
        return None
    keys = set()
    for number, found in enumerate(_QUOTED_KEY.finditer(report.text or "")):
        if number == _QUOTED_KEYS:
            break
        keys.add(found["key"])
    for key in sorted(keys):
        for prefix in WRAPPERS:
            if key.startswith(prefix) and key[len(prefix) :] in keys:
                fields = {
                    "prefix": prefix,
                    "bare": key[len(prefix) :],
                    "example": key,
                    "wrapper": WRAPPERS[prefix],
                }
                return Clue(0.8, _RETOLD_CAUSE, _RETOLD_FIX, fields)
    return None


# Prose that says the keys of a failed load differ by the wrapper's prefix without quoting a key
# both ways: "the expected keys start with "module.key_name" ... I don't have this "module." in
# front of each key".
_MISSING_OR_UNEXPECTED = lazy_compile(r"\b(?:[Mm]issing|[Uu]nexpected) keys?\b")
_SAID_PREFIX = lazy_compile(
    r"\b(?:start|starts|starting|begin|begins|beginning|prefix|prefixed|preceded)\b"
    r"[^\n]{0,40}?[\"'`\u201c](?P<prefix>module\.|_orig_mod\.)"
    r"|[\"'`\u201c](?P<prefix2>module\.|_orig_mod\.)[\"'`\u201d]?[^\n]{0,20}?"
    r"\b(?:in front|prefix|at the (?:start|beginning))\b"
)
_SAID_PREFIX_CAUSE = {
    "en": "The text says the keys of the failed load differ by a `{prefix}` prefix: one side "
    "was saved from or loaded into a model wrapped in {wrapper}, the other from the bare model; "
    "released weights saved from a `DataParallel` model carry it, and a model wrapped before "
    "loading expects it.",
    "zh": "文本说加载失败的键只差一个 `{prefix}` 前缀：一方来自 {wrapper} 包装过的模型，另一方来自"
    "裸模型；从 `DataParallel` 模型保存的发布权重带这个前缀，而在加载前已被包装的模型也期望这个前缀。",
}


@PITFALL.error_check(types=(), words=("missing key", "unexpected key"))
def said_prefix(block, report) -> Clue | None:
    """No load_state_dict message, but prose about missing or unexpected keys that names the
    wrapper's prefix as where they differ."""
    if block.short_type or sd_errors.in_text(report) is not None:
        return None  # a message of torch's own is read by `explain` above
    if report.exceptions:
        return None
    if not report.search(_MISSING_OR_UNEXPECTED):
        return None
    found = report.search(_SAID_PREFIX)
    if found is None:
        return None
    prefix = found.group("prefix") or found.group("prefix2")
    fields = {"prefix": prefix, "wrapper": WRAPPERS[prefix]}
    return Clue(0.75, _SAID_PREFIX_CAUSE, _RETOLD_FIX, fields)


_NESTED_CAUSE = {
    "en": "The checkpoint and the model were wrapped in DataParallel (or DDP) around different "
    "parts: the checkpoint has `{checkpoint_key}` where the model has `{model_key}` "
    "({matched} keys differ only by where `module.` stands). A script that wraps only a "
    "submodule (`model.features = nn.DataParallel(model.features)`, as pytorch/examples' "
    "ImageNet script does for AlexNet and VGG) saves `module.` inside the key.",
    "zh": "checkpoint 和模型用 DataParallel（或 DDP）包装的部分不同：checkpoint 中是 "
    "`{checkpoint_key}`，模型中却是 `{model_key}`（有 {matched} 个键只差 `module.` 的位置）。"
    "只包装子模块的脚本（`model.features = nn.DataParallel(model.features)`，pytorch/examples 的 "
    "ImageNet 脚本对 AlexNet 和 VGG 就是这样做的）会把 `module.` 存在键的中间。",
}
_NESTED_FIX = {
    "en": "Wrap the model the way the training script did before loading (e.g. "
    "`model.features = nn.DataParallel(model.features)`), or load into the bare model with "
    "every `module` part removed: `{{'.'.join(p for p in k.split('.') if p != 'module'): v "
    "for k, v in state_dict.items()}}`.",
    "zh": "加载前按训练脚本的方式包装模型（例如 `model.features = nn.DataParallel(model.features)`），"
    "或者去掉所有 `module` 部分后加载到未包装的模型：`{{'.'.join(p for p in k.split('.') "
    "if p != 'module'): v for k, v in state_dict.items()}}`。",
}


_WRAPPED_PART_CAUSE = {
    "model": {
        "en": "The model's keys have `module.` below the top (all {count} listed, e.g. "
        "`{example}`): its `{part}` is wrapped in DataParallel (or DDP) before the checkpoint "
        "is loaded, and the checkpoint was saved from the bare `{part}`.",
        "zh": "模型的键在中间带有 `module.`（列出的 {count} 个全是，如 `{example}`）：它的 `{part}` "
        "在加载 checkpoint 之前已被 DataParallel（或 DDP）包装，而 checkpoint 保存自未包装的 "
        "`{part}`。",
    },
    "checkpoint": {
        "en": "The checkpoint's keys have `module.` below the top (all {count} listed, e.g. "
        "`{example}`): it was saved while its `{part}` was wrapped in DataParallel (or DDP), "
        "and is loaded into a model whose `{part}` is not.",
        "zh": "checkpoint 的键在中间带有 `module.`（列出的 {count} 个全是，如 `{example}`）："
        "它是在 `{part}` 被 DataParallel（或 DDP）包装时保存的，而加载它的模型的 `{part}` "
        "没有包装。",
    },
}
_WRAPPED_PART_FIX = {
    "model": {
        "en": "Load the checkpoint before wrapping (`model.load_state_dict(state_dict)`, then "
        "`model.{part} = nn.DataParallel(model.{part})`), or load into the inner module.",
        "zh": "先加载 checkpoint 再包装（先 `model.load_state_dict(state_dict)`，再 "
        "`model.{part} = nn.DataParallel(model.{part})`），或者加载到内部模块。",
    },
    "checkpoint": {
        "en": "Wrap `model.{part}` in DataParallel as the training script did before loading, "
        "or remove the inner `module.` from the keys: `{{k.replace('{part}.module.', "
        "'{part}.', 1): v for k, v in state_dict.items()}}`.",
        "zh": "加载前像训练脚本那样用 DataParallel 包装 `model.{part}`，或者去掉键中间的 "
        "`module.`：`{{k.replace('{part}.module.', '{part}.', 1): v for k, v in "
        "state_dict.items()}}`。",
    },
}


_WRAPPER_OWNER_CAUSE = {
    "en": "The model being loaded is `{owner}`, a model wrapped in {wrapper}, whose keys all "
    "start with `{prefix}`, and its keys are missing (shown here without the prefix, e.g. "
    "`{example}`): a checkpoint saved from the bare model lacks that prefix on every key "
    "(the text, cut or retold, does not show the checkpoint's keys to confirm it).",
    "zh": "被加载的模型是 `{owner}`，即 {wrapper} 包装过的模型，它的键都以 `{prefix}` 开头，"
    "而它的键缺失了（这里显示时没有前缀，如 `{example}`）：从裸模型保存的 checkpoint 的每个键都没有"
    "这个前缀（文本被截断或转述，没有给出 checkpoint 的键，无法确认）。",
}


def _wrapper_owner(error) -> Clue | None:
    """Loaded into a wrapper ("state_dict for OptimizedModule") whose prefix no listed key has."""
    prefix = sd_errors.wrapper_owner(error)
    if prefix is None:
        return None
    fields = {
        "owner": error.model or "",
        "wrapper": WRAPPERS[prefix],
        "prefix": prefix,
        "example": error.other_missing[0],
        "inner": prefix,
    }
    return Clue(0.75, _WRAPPER_OWNER_CAUSE, FIXES["model"], fields)


def _nested(error) -> Clue | None:
    found = sd_errors.nested_wrapper(error)
    if found is None:
        return _wrapped_part(error)
    checkpoint_key, model_key, matched = found
    smaller = min(len(error.other_missing), len(error.other_unexpected))
    fields = {"checkpoint_key": checkpoint_key, "model_key": model_key, "matched": str(matched)}
    confidence = 0.9 if matched >= 0.9 * smaller else 0.8
    return Clue(confidence, _NESTED_CAUSE, _NESTED_FIX, fields)


def _wrapped_part(error) -> Clue | None:
    """Only one side listed (a cut-off message), each key with the same part wrapped."""
    found = sd_errors.wrapped_part(error)
    if found is None:
        return None
    side, part, count = found
    keys = error.missing if side == "model" else error.unexpected
    example = next(k for k in keys if k.startswith(part + ".module."))
    fields = {"part": part, "count": str(count), "example": example}
    # The other side is not shown: the checkpoint may also hold the part wrapped elsewhere.
    return Clue(0.8, _WRAPPED_PART_CAUSE[side], _WRAPPED_PART_FIX[side], fields)


# Checking checkpoints ------------------------------------------------------------------------

ORIGIN = {
    "en": " (saved from a model wrapped in {wrapper})",
    "zh": "（它是从 {wrapper} 包装过的模型保存的）",
}


@PITFALL.checkpoint
def check_checkpoint(subject) -> Iterator[Finding]:
    if subject.diff is not None:
        for difference in subject.diff.differences:
            if difference.kind == "wrapped-part":
                yield subject.finding(
                    PITFALL,
                    "ckpt-wrapped-part",
                    keys=difference.keys,
                    repairable=True,
                    **difference.fields,
                )
                continue
            if difference.kind != "prefix":
                continue
            fields = difference.fields
            origin = (
                subject.text(ORIGIN).format(wrapper=fields["wrapper"]) if fields["wrapper"] else ""
            )
            yield subject.finding(
                PITFALL,
                f"ckpt-{fields['side']}",
                keys=difference.keys,
                repairable=True,
                prefix=fields["prefix"],
                origin=origin,
                count=fields["count"],
                example=difference.keys[0],
            )
        return
    listing = subject.listing
    if listing is not None and listing.prefix:
        origin = subject.text(ORIGIN).format(wrapper=sd_errors.wrapper_name(listing.prefix))
        yield subject.finding(
            PITFALL, "ckpt", repairable=True, prefix=listing.prefix, origin=origin
        )
