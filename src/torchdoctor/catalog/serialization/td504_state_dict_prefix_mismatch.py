"""TD504 state-dict-prefix-mismatch: hand-rolled removal of the "module." prefix from keys."""
from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog._model import Pitfall
from torchdoctor.lint.context import Context, nested_statements
from torchdoctor.report.finding import Finding

PITFALL = Pitfall(
    code="TD504",
    name="state-dict-prefix-mismatch",
    title={"en": "State-dict key prefix stripped by hand",
           "zh": "手工去掉 state_dict 键的前缀"},
    messages={"": {
        "en": "`{surgery}` strips the key prefix by hand and can corrupt other keys; use "
              "`torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state_dict, \"{prefix}\")`",
        "zh": "`{surgery}` 手工去掉键前缀，可能会破坏其他键；请使用 "
              "`torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state_dict, \"{prefix}\")`",
    }},
    docs={
        "en": """
## What it catches
Key surgery on a state dict (one that comes from `torch.load` or `.state_dict()`) while
iterating its `.items()` or `.keys()`, to drop the `module.` prefix that `DataParallel` /
`DistributedDataParallel` adds, or the `_orig_mod.` prefix that `torch.compile` adds:
`k[7:]` without a `startswith` check, `k.replace("module.", "")`, `k.lstrip("module.")`.

## Why is this bad?
Each of these is subtly wrong. `k[7:]` cuts seven characters from every key, also from keys
that never had the prefix (a checkpoint saved without `DataParallel`). `k.replace("module.", "")`
removes the text anywhere in the key: `encoder.submodule.weight` becomes `encoder.subweight`.
`k.lstrip("module.")` strips *characters* from the set `m o d u l e .`, not a prefix:
`model.0.weight` becomes `0.weight`. The result is a missing-key error, or with
`strict=False` a model that silently keeps random weights. PyTorch has a helper that removes a
prefix only where it is present, in place:
`torch.nn.modules.utils.consume_prefix_in_state_dict_if_present`.

## Example
```python
import torch

state_dict = torch.load("model.pt")
clean = {k.replace("module.", ""): v for k, v in state_dict.items()}
```

## Use instead:
```python
import torch
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

state_dict = torch.load("model.pt")
consume_prefix_in_state_dict_if_present(state_dict, "module.")
```

## Symptoms
`RuntimeError: Error(s) in loading state_dict for ...: Missing key(s) in state_dict:
"encoder.submodule.weight" ... Unexpected key(s) in state_dict: "encoder.subweight"`.
""",
        "zh": """
## What it catches
在遍历 state dict（来自 `torch.load` 或 `.state_dict()`）的 `.items()` 或 `.keys()` 时，手工修改键名，
去掉 `DataParallel` / `DistributedDataParallel` 加上的 `module.` 前缀，或 `torch.compile` 加上的
`_orig_mod.` 前缀：没有 `startswith` 判断的 `k[7:]`、`k.replace("module.", "")`、`k.lstrip("module.")`。

## Why is this bad?
这几种写法都有隐蔽的错误。`k[7:]` 会从每个键上砍掉 7 个字符，包括本来就没有前缀的键（比如没用
`DataParallel` 时保存的 checkpoint）。`k.replace("module.", "")` 会替换键中任意位置的文本：
`encoder.submodule.weight` 变成了 `encoder.subweight`。`k.lstrip("module.")` 去掉的是字符集合
`m o d u l e .` 中的*字符*，而不是前缀：`model.0.weight` 会变成 `0.weight`。结果要么是缺键报错，
要么在 `strict=False` 时模型悄悄保留了随机权重。PyTorch 自带一个只在前缀存在时才原地去掉它的函数：
`torch.nn.modules.utils.consume_prefix_in_state_dict_if_present`。

## Example
```python
import torch

state_dict = torch.load("model.pt")
clean = {k.replace("module.", ""): v for k, v in state_dict.items()}
```

## Use instead:
```python
import torch
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

state_dict = torch.load("model.pt")
consume_prefix_in_state_dict_if_present(state_dict, "module.")
```

## Symptoms
`RuntimeError: Error(s) in loading state_dict for ...: Missing key(s) in state_dict:
"encoder.submodule.weight" ... Unexpected key(s) in state_dict: "encoder.subweight"`。
""",
    },
)

# Wrapper prefixes, by the length a slice `k[N:]` cuts.
PREFIXES = {len("module."): "module.", len("_orig_mod."): "_orig_mod."}
COMPREHENSIONS = (ast.DictComp, ast.ListComp, ast.SetComp, ast.GeneratorExp)


@PITFALL.static(ast.For)
def check_loop(node: ast.For, ctx: Context) -> Iterator[Finding]:
    key = _state_dict_key(node.iter, node.target, ctx)
    if key is None:
        return
    body = [n for statement in node.body for n in ast.walk(statement)]
    yield from _surgeries(body, key, ctx)


@PITFALL.static(*COMPREHENSIONS)
def check_comprehension(node: ast.expr, ctx: Context) -> Iterator[Finding]:
    generator = node.generators[0]
    key = _state_dict_key(generator.iter, generator.target, ctx)
    if key is None:
        return
    parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
    body = [n for part in (*parts, *generator.ifs) for n in ast.walk(part)]
    yield from _surgeries(body, key, ctx)


def _state_dict_key(source: ast.expr, target: ast.expr, ctx: Context) -> str | None:
    """The loop's key variable when the loop walks a state dict's `.items()` or `.keys()`."""
    method = ctx.method_name(source)
    if method not in ("items", "keys") or source.args:
        return None
    if method == "items":
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
            return None
        target = target.elts[0]
    if not isinstance(target, ast.Name) or not _is_state_dict(source.func.value, ctx):
        return None
    return target.id


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
    scope = ctx.enclosing_function() or ctx.tree
    values = [statement.value for statement in nested_statements(scope.body)
              if isinstance(statement, ast.Assign) and statement.lineno < name.lineno
              and any(isinstance(t, ast.Name) and t.id == name.id for t in statement.targets)]
    return bool(values) and all(_is_state_dict(value, ctx, follow_names=False) for value in values)


def _surgeries(nodes: list[ast.AST], key: str, ctx: Context) -> Iterator[Finding]:
    guarded = any(_is_key_method(n, key, "startswith") for n in nodes)
    for node in nodes:
        prefix = _stripped_prefix(node, key, guarded)
        if prefix is not None:
            yield ctx.finding(PITFALL, node, surgery=ctx.text(node), prefix=prefix)


def _stripped_prefix(node: ast.AST, key: str, guarded: bool) -> str | None:
    """The wrapper prefix `node` removes from `key` in a way that can go wrong, else None."""
    if isinstance(node, ast.Subscript) and not guarded:
        cut = node.slice
        if (isinstance(node.value, ast.Name) and node.value.id == key and isinstance(cut, ast.Slice)
                and cut.upper is None and cut.step is None and isinstance(cut.lower, ast.Constant)):
            return PREFIXES.get(cut.lower.value) if type(cut.lower.value) is int else None
        return None
    if _is_key_method(node, key, "replace") and len(node.args) == 2 and _is_text(node.args[1], ""):
        return _prefix_argument(node)
    if _is_key_method(node, key, "lstrip") and len(node.args) == 1:
        return _prefix_argument(node)
    return None


def _is_key_method(node: ast.AST, key: str, method: str) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method
            and isinstance(node.func.value, ast.Name) and node.func.value.id == key)


def _prefix_argument(call: ast.Call) -> str | None:
    first = call.args[0]
    return first.value if _is_text(first) and first.value in PREFIXES.values() else None


def _is_text(node: ast.AST, value: str | None = None) -> bool:
    return (isinstance(node, ast.Constant) and isinstance(node.value, str)
            and (value is None or node.value == value))
