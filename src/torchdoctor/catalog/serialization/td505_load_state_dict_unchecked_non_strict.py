"""TD505 load-state-dict-unchecked-non-strict: `strict=False` whose key report is thrown away."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import Context, Finding, Pitfall, call_name, index_of

PITFALL = Pitfall(
    code="TD505",
    name="load-state-dict-unchecked-non-strict",
    title={
        "en": "load_state_dict(strict=False) whose missing/unexpected keys are never checked",
        "zh": "load_state_dict(strict=False) 的缺失/多余键从未被检查",
    },
    messages={
        "": {
            "en": "`load_state_dict(..., strict=False)` result is discarded: keys that did not match are "
            "silently skipped; check `result.missing_keys` and `result.unexpected_keys`",
            "zh": "`load_state_dict(..., strict=False)` 的返回值被丢弃：没对上的键会被悄悄跳过；"
            "请检查 `result.missing_keys` 和 `result.unexpected_keys`",
        }
    },
    # Opt-in: libraries load partial state dicts on purpose (shards, adapters, intersected
    # dicts); every hit on transformers/timm/ultralytics was such a deliberate partial load.
    default=False,
    docs={
        "en": """
## What it catches
`model.load_state_dict(state_dict, strict=False)` (or `strict` given second by position:
`model.load_state_dict(state_dict, False)`) called as a statement, so the returned
`missing_keys` / `unexpected_keys` report is never looked at. Not when the code compares the
keys itself before the load, in the same function: it reads the model's own `state_dict()`, or
hands the dict it loads to a function named for keys (`check_keys(model, pretrained_dict)`).
Opt-in.

## Why is this bad?
`strict=False` is often the quick way out of `Missing key(s) in state_dict` or
`Unexpected key(s) in state_dict` errors, for example after a PyTorch upgrade added
`num_batches_tracked` to BatchNorm layers. But it does not fix anything: every key that does not
match is skipped without a word. When the checkpoint's keys all carry a `module.` prefix from
`DataParallel`, *nothing* is loaded, and the model trains or evaluates from random weights
while looking as if it was restored. The call returns the list of keys it skipped; look at it.

## Symptoms
No error at all: accuracy after "loading" is no better than chance, or fine-tuning starts from
a loss as high as a fresh model's. With `strict=True` the same checkpoint would have raised
`RuntimeError: Error(s) in loading state_dict for ...: Missing key(s) in state_dict: ...`.

## Known problems
Partial loading on purpose (a new classification head on a pretrained backbone, one shard of a
sharded checkpoint, adapter weights) is a valid use and common in libraries, which is why the
rule is opt-in; even then, logging the skipped keys catches a checkpoint that matches nothing.
""",
        "zh": """
## What it catches
作为单独语句调用的 `model.load_state_dict(state_dict, strict=False)`（或按位置把 `strict` 作为第二个参数传入：
`model.load_state_dict(state_dict, False)`）：返回的
`missing_keys` / `unexpected_keys` 报告从来没人看。如果在同一个函数里、加载之前代码自己比较过键
（读取了模型自己的 `state_dict()`，或把要加载的字典交给以 key 命名的函数：`check_keys(model, pretrained_dict)`），
则不报告。默认关闭，需手动启用。

## Why is this bad?
遇到 `Missing key(s) in state_dict` 或 `Unexpected key(s) in state_dict` 报错时（比如 PyTorch 升级后
BatchNorm 多了 `num_batches_tracked`），`strict=False` 常被当作省事的绕过办法。但它什么也没修好：
所有对不上的键都被一声不响地跳过。如果 checkpoint 的键全都带着 `DataParallel` 留下的 `module.` 前缀，
那就*一个参数都没加载*，模型实际是用随机权重在训练或评估，表面上却像是恢复成功了。
这个调用会返回被跳过的键的列表，请检查它。

## Symptoms
没有任何报错：“加载”后的准确率和瞎猜差不多，或者微调一开始的 loss 和全新模型一样高。
如果用 `strict=True`，同一个 checkpoint 会报
`RuntimeError: Error(s) in loading state_dict for ...: Missing key(s) in state_dict: ...`。

## Known problems
有意只加载一部分（在预训练骨干网络上换一个新的分类头、分片 checkpoint 的其中一片、adapter 权重）
是合理用法，在库代码里很常见，因此这条规则默认关闭；即便如此，把跳过的键打印出来
也能发现“一个键都没对上”的 checkpoint。
""",
    },
    example="""
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
model.load_state_dict(torch.load("model.pt"), strict=False)
""",
    use_instead="""
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
result = model.load_state_dict(torch.load("model.pt"), strict=False)
if result.missing_keys or result.unexpected_keys:
    print("missing:", result.missing_keys, "unexpected:", result.unexpected_keys)
""",
)


@PITFALL.static(ast.Expr, names={"load_state_dict"})
def check(node: ast.Expr, ctx: Context) -> Iterator[Finding]:
    call = node.value
    if ctx.method_name(call) != "load_state_dict":
        return
    keyword = next((kw for kw in call.keywords if kw.arg == "strict"), None)
    # By keyword, or second by position (`model.load_state_dict(state_dict, False)`).
    strict = keyword.value if keyword is not None else call.args[1] if len(call.args) == 2 else None
    if not (isinstance(strict, ast.Constant) and strict.value is False):
        return
    if _keys_compared_before(call, ctx):
        return
    yield ctx.finding(PITFALL, call)


def _keys_compared_before(call: ast.Call, ctx: Context) -> bool:
    """Before the load, in the same function, the code compares the keys itself: it reads the
    model's own `state_dict()` (CenterNet's key-by-key report), or hands the dict it loads to a
    function named for keys (`check_keys(model, pretrained_dict)`, Pytorch_Retinaface)."""
    scope = ctx.enclosing_function() or ctx.tree
    found = index_of(ctx, scope)
    receiver = ctx.text(call.func.value)  # type: ignore[attr-defined]
    loaded = call.args[0] if call.args else None
    key_functions = [name for name in found.calls if name and "key" in name.lower()]
    for earlier in found.calls_named(scope, ["state_dict", *key_functions], local=True):
        if (earlier.lineno, earlier.col_offset) >= (call.lineno, call.col_offset):
            break
        name = call_name(earlier)
        if name == "state_dict":
            if type(earlier.func) is ast.Attribute and ctx.text(earlier.func.value) == receiver:
                return True
        elif isinstance(loaded, ast.Name) and any(
            isinstance(arg, ast.Name) and arg.id == loaded.id for arg in earlier.args
        ):
            return True
    return False
