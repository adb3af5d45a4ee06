"""TD503 whole-module-saved: `torch.save(model, path)` pickles the class, not just the weights."""
from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog._model import Pitfall
from torchdoctor.lint.context import Context, Kind
from torchdoctor.report.finding import Finding

PITFALL = Pitfall(
    code="TD503",
    name="whole-module-saved",
    title={"en": "Whole nn.Module saved with torch.save instead of its state_dict",
           "zh": "用 torch.save 保存了整个 nn.Module，而不是它的 state_dict"},
    messages={"": {
        "en": "`torch.save({module}, ...)` pickles the whole module: save `{module}.state_dict()` instead",
        "zh": "`torch.save({module}, ...)` 会 pickle 整个模块：应改为保存 `{module}.state_dict()`",
    }},
    fix_title={"en": "Save `{module}.state_dict()`", "zh": "改为保存 `{module}.state_dict()`"},
    fix_applicability="unsafe",
    docs={
        "en": """
## What it catches
`torch.save(model, path)` where `model` is known to be an `nn.Module` (built from a `torch.nn`
class, a local `nn.Module` subclass, `timm.create_model`, a torchvision model...).

## Why is this bad?
Saving a module pickles the object itself: the file stores a reference to the class by its
import path (`my_project.models.Net`) and the attributes of the instance. Loading it later needs
the very same code at the very same import path; renaming a file, moving the class or changing
`__init__` breaks every old checkpoint. Since PyTorch 2.6 `torch.load` defaults to
`weights_only=True`, which refuses such files altogether. The `state_dict()` is a plain dict of
tensors: portable, loadable with `weights_only=True`, and independent of how the code evolves.

## Example
```python
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
torch.save(model, "model.pt")
```

## Use instead:
```python
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
torch.save(model.state_dict(), "model.pt")
```

## Symptoms
Loading the file elsewhere fails with `AttributeError: Can't get attribute 'Net' on <module
'__main__'>` or `ModuleNotFoundError: No module named 'models'`; on PyTorch 2.6 and later,
`_pickle.UnpicklingError: Weights only load failed ... Unsupported global: GLOBAL
torch.nn.modules.linear.Linear was not an allowed global by default`.

## Fix safety
The fix saves `model.state_dict()` instead of `model`. It is unsafe: the code that loads the file
must change too (build the model, then `model.load_state_dict(torch.load(path))`).
""",
        "zh": """
## What it catches
`torch.save(model, path)`，且 `model` 已知是一个 `nn.Module`（由 `torch.nn` 中的类、本地的
`nn.Module` 子类、`timm.create_model`、torchvision 模型等创建）。

## Why is this bad?
保存模块时 pickle 的是对象本身：文件里记录的是类的导入路径（如 `my_project.models.Net`）和实例的属性。
以后加载时，必须在完全相同的导入路径下有完全相同的代码；改个文件名、挪一下类、改一下 `__init__`，
之前的所有 checkpoint 都会加载失败。PyTorch 2.6 起 `torch.load` 默认 `weights_only=True`，
会直接拒绝这种文件。`state_dict()` 只是一个张量字典：可移植，能用 `weights_only=True` 安全加载，
也不受代码后续改动的影响。

## Example
```python
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
torch.save(model, "model.pt")
```

## Use instead:
```python
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
torch.save(model.state_dict(), "model.pt")
```

## Symptoms
在别处加载时报 `AttributeError: Can't get attribute 'Net' on <module '__main__'>` 或
`ModuleNotFoundError: No module named 'models'`；PyTorch 2.6 及以上版本则报
`_pickle.UnpicklingError: Weights only load failed ... Unsupported global: GLOBAL
torch.nn.modules.linear.Linear was not an allowed global by default`。

## Fix safety
修复会把保存的对象从 `model` 改成 `model.state_dict()`。它是不安全的：加载这个文件的代码也必须
跟着改（先构建模型，再 `model.load_state_dict(torch.load(path))`）。
""",
    },
)


@PITFALL.static(ast.Call, names={"save"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if not call.args or ctx.qualname(call.func) != "torch.save":
        return
    saved = call.args[0]
    if ctx.kind_of(saved) is not Kind.MODULE:
        return
    module = ctx.text(saved)
    fix = None
    if "\n" not in module:
        title = {lang: text.format(module=module) for lang, text in PITFALL.fix_title.items()}
        fix = ctx.fix(PITFALL, "unsafe", ctx.replace(saved, f"{_wrapped(saved, module)}.state_dict()"),
                      title=title)
    yield ctx.finding(PITFALL, call, fix=fix, module=module)


def _wrapped(expr: ast.AST, text: str) -> str:
    """`text` ready to take an attribute: names, attributes and calls as they are, others in ()."""
    return text if isinstance(expr, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) else f"({text})"
