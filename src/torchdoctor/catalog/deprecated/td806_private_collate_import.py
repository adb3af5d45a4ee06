"""TD806 private-collate-import: `default_collate` / `default_convert` from the private
`torch.utils.data._utils.collate` instead of `torch.utils.data`."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from torchdoctor.catalog.deprecated._torch_name import torch_name
from torchdoctor.catalog.sdk import (
    Context,
    Finding,
    Fix,
    Pitfall,
    in_compat_fallback,
    only_identified,
)

PITFALL = Pitfall(
    code="TD806",
    name="private-collate-import",
    title={
        "en": "`default_collate` / `default_convert` from the private `torch.utils.data._utils`",
        "zh": "从私有模块 `torch.utils.data._utils` 中取用 `default_collate` / `default_convert`",
    },
    messages={
        "": {
            "en": "`{old}` is in a private module that may change without notice: use the public "
            "`torch.utils.data.{name}`",
            "zh": "`{old}` 位于私有模块中，可能不经通知就改变：请改用公开的 `torch.utils.data.{name}`",
        }
    },
    fix_title={
        "en": "Use `torch.utils.data.{name}`",
        "zh": "改用 `torch.utils.data.{name}`",
    },
    fix_applicability="safe",
    docs={
        "en": """
## What it catches
`default_collate` and `default_convert` taken from `torch.utils.data._utils.collate`, whether
called, passed as a `collate_fn`, or imported (`from torch.utils.data._utils.collate import
default_collate`, `from torch.utils.data._utils import collate` then
`collate.default_collate`). Both are public as `torch.utils.data.default_collate` and
`torch.utils.data.default_convert` since PyTorch 1.11.

## Why is this bad?
A leading underscore marks `torch.utils.data._utils` as private: PyTorch may move, rename or
change what is inside it in any release without a deprecation period, and code that reaches
into it breaks on upgrade with an `ImportError` or `AttributeError`. The public names are the
same functions, documented and kept stable.

## Symptoms
None today: the private path still works. When it moves, `ImportError: cannot import name
'default_collate' from 'torch.utils.data._utils.collate'`.

## Fix safety
The public name is the same function object, re-exported (`torch/utils/data/__init__.py`), so
the fix is safe. An import is rewritten only when every name it takes is one of the two;
`torch.utils.data._utils.collate.default_collate(...)` becomes
`torch.utils.data.default_collate(...)` where the name `torch` names the module.

## Known problems
Other private names of the module (`default_collate_fn_map`, `collate` with its
`collate_fn_map=` argument, used to extend the default collation) have no public home and are
not reported. Code kept for PyTorch older than 1.11 (an `except ImportError` branch, a
version test) is not reported.

## References
- PyTorch docs, `torch.utils.data.default_collate` / `default_convert`.
- TorchFix TOR104 / TOR105.
""",
        "zh": """
## What it catches
从 `torch.utils.data._utils.collate` 中取用 `default_collate` 和 `default_convert`：无论是直接调用、作为
`collate_fn` 传入，还是导入（`from torch.utils.data._utils.collate import default_collate`、
`from torch.utils.data._utils import collate` 之后使用 `collate.default_collate`）。自 PyTorch 1.11 起，
它们以 `torch.utils.data.default_collate` 和 `torch.utils.data.default_convert` 的名字公开。

## Why is this bad?
开头的下划线表明 `torch.utils.data._utils` 是私有模块：PyTorch 可以在任何版本中移动、改名或修改其中的内容，
而不经过弃用期；伸手进去取东西的代码会在升级后因 `ImportError` 或 `AttributeError` 而失败。
公开的名字是同一个函数，有文档，并且保持稳定。

## Symptoms
目前没有：私有路径仍然可用。等到它被移动时会出现 `ImportError: cannot import name
'default_collate' from 'torch.utils.data._utils.collate'`。

## Fix safety
公开名字是被重新导出的同一个函数对象（`torch/utils/data/__init__.py`），所以修复是安全的。
只有当一条导入语句导入的全部名字都是这两个之一时才改写它；`torch.utils.data._utils.collate.default_collate(...)`
在 `torch` 确实指向该模块时改为 `torch.utils.data.default_collate(...)`。

## Known problems
该模块中其他私有名字（用于扩展默认拼接方式的 `default_collate_fn_map`、带 `collate_fn_map=` 参数的 `collate`）
没有公开的位置，不报告。为 PyTorch 1.11 之前的版本保留的代码（`except ImportError` 分支、版本判断）不报告。

## References
- PyTorch 文档 `torch.utils.data.default_collate` / `default_convert`。
- TorchFix TOR104 / TOR105。
""",
    },
    example="""
from torch.utils.data import DataLoader
from torch.utils.data._utils.collate import default_collate

loader = DataLoader(dataset, batch_size=32, collate_fn=default_collate)
""",
    use_instead="""
from torch.utils.data import DataLoader, default_collate

loader = DataLoader(dataset, batch_size=32, collate_fn=default_collate)
""",
)

PRIVATE = "torch.utils.data._utils.collate"
NAMES = frozenset({"default_collate", "default_convert"})
_FROM_PRIVATE = re.compile(r"from\s+torch\s*\.\s*utils\s*\.\s*data\s*\.\s*_utils\s*\.\s*collate\b")


@PITFALL.static(ast.Attribute, names=NAMES)
def check_attribute(node: ast.Attribute, ctx: Context) -> Iterator[Finding]:
    """`torch.utils.data._utils.collate.default_collate`, `collate.default_convert`."""
    if not isinstance(node.ctx, ast.Load) or ctx.qualname(node) != f"{PRIVATE}.{node.attr}":
        return
    if only_identified(node, ctx) or in_compat_fallback(ctx, node):
        return
    fix = None
    torch = torch_name(node, ctx)
    if torch is not None:
        fix = _fix(ctx, node.attr, ctx.replace(node, f"{torch}.utils.data.{node.attr}"))
    written = " ".join(ctx.text(node).split())
    yield ctx.finding(PITFALL, node, fix=fix, old=written, name=node.attr)


@PITFALL.static(ast.ImportFrom)
def check_import(node: ast.ImportFrom, ctx: Context) -> Iterator[Finding]:
    """`from torch.utils.data._utils.collate import default_collate`."""
    if node.level or node.module != PRIVATE:
        return
    found = [alias for alias in node.names if alias.name in NAMES]
    if not found or in_compat_fallback(ctx):
        return
    fix = None
    written = _FROM_PRIVATE.match(ctx.text(node))
    if len(found) == len(node.names) and written is not None:
        start = ctx.span(node)[0]
        edit = ctx.edit(start, start + written.end(), "from torch.utils.data")
        fix = _fix(ctx, found[0].name, edit)
    for alias in found:
        yield ctx.finding(PITFALL, alias, fix=fix, old=f"{PRIVATE}.{alias.name}", name=alias.name)
        fix = None  # one edit of the module serves every name of the import


def _fix(ctx: Context, name: str, *edits) -> Fix:
    title = {lang: text.format(name=name) for lang, text in PITFALL.fix_title.items()}
    return ctx.fix(PITFALL, "safe", *edits, title=title)
