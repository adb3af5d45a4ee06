"""TD502 load-weights-only: `torch.load(..., weights_only=False)` runs whatever the file says."""
from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog._model import Pitfall
from torchdoctor.lint.context import Context
from torchdoctor.report.finding import Finding

PITFALL = Pitfall(
    code="TD502",
    name="load-weights-only",
    title={"en": "torch.load with weights_only=False can execute arbitrary code",
           "zh": "torch.load 使用 weights_only=False 可能执行任意代码"},
    messages={"": {
        "en": "`torch.load(..., weights_only=False)` unpickles arbitrary objects and can run any code "
              "hidden in the file: keep it for files you trust, or allow the needed classes with "
              "`torch.serialization.add_safe_globals`",
        "zh": "`torch.load(..., weights_only=False)` 会反序列化任意对象，文件里藏的任何代码都可能被执行："
              "只对可信文件这样做，或者用 `torch.serialization.add_safe_globals` 放行需要的类",
    }},
    docs={
        "en": """
## What it catches
`torch.load(...)` called with `weights_only=False` written out explicitly.

Loading without `weights_only` is not reported: since PyTorch 2.6 the default is `True`, and the
doctor cannot tell which PyTorch version your code runs on.

## Why is this bad?
A checkpoint is a pickle. With `weights_only=False`, `torch.load` runs the full unpickler, and a
pickle can call any importable function while it loads: a model file downloaded from the web or
received from a user can delete files or open a shell on your machine. `weights_only=True` only
rebuilds tensors, primitive types and dicts/lists of them, plus classes you allow explicitly.

The reverse trap is why people write `weights_only=False`: on PyTorch 2.6 and later, old
checkpoints that also contain numpy scalars, an `argparse.Namespace` of the training options or
a whole pickled module fail to load with the new default. Prefer allowing exactly those classes
with `torch.serialization.add_safe_globals([...])` (or the `torch.serialization.safe_globals`
context manager), or re-save the checkpoint once as a plain `state_dict`. The planned
`torchdoctor ckpt` command lists what a full load of a file would import without running it.

## Example
```python
import torch

checkpoint = torch.load("downloaded.pt", weights_only=False)
```

## Use instead:
```python
import argparse

import torch

torch.serialization.add_safe_globals([argparse.Namespace])
checkpoint = torch.load("downloaded.pt", weights_only=True)
```

## Symptoms
Without the flag, on PyTorch 2.6 and later: `_pickle.UnpicklingError: Weights only load failed.
... WeightsUnpickler error: Unsupported global: GLOBAL numpy.core.multiarray.scalar was not an
allowed global by default. Please use torch.serialization.add_safe_globals([scalar]) ...`.
On older versions, loading without the flag warns: `FutureWarning: You are using torch.load
with weights_only=False (the current default value), which uses the default pickle module
implicitly.`

## Known problems
A file you wrote yourself on the same machine is as trusted as your code; there the finding is
a reminder rather than a risk, and `# noqa: TD502` documents the decision.

## References
- https://pytorch.org/docs/stable/notes/serialization.html#weights-only
""",
        "zh": """
## What it catches
显式写了 `weights_only=False` 的 `torch.load(...)` 调用。

不写 `weights_only` 的情况不会报告：PyTorch 2.6 起它默认为 `True`，而静态检查无法知道代码运行在哪个
PyTorch 版本上。

## Why is this bad?
checkpoint 本质是一个 pickle。`weights_only=False` 时 `torch.load` 使用完整的反序列化器，而 pickle
在加载过程中可以调用任意可导入的函数：从网上下载或由用户上传的模型文件，能在你的机器上删文件、
开 shell。`weights_only=True` 只会重建张量、基本类型以及由它们组成的 dict/list，外加你显式放行的类。

人们写 `weights_only=False` 往往是因为反方向的坑：在 PyTorch 2.6 及以上版本，旧 checkpoint 里如果还存了
numpy 标量、训练参数的 `argparse.Namespace` 或者整个 pickle 的模块，用新的默认值就会加载失败。
更好的做法是用 `torch.serialization.add_safe_globals([...])`（或上下文管理器
`torch.serialization.safe_globals`）只放行这些类，或者把 checkpoint 一次性重新保存成纯 `state_dict`。
计划中的 `torchdoctor ckpt` 命令可以在不执行的情况下列出完整加载一个文件时会导入哪些东西。

## Example
```python
import torch

checkpoint = torch.load("downloaded.pt", weights_only=False)
```

## Use instead:
```python
import argparse

import torch

torch.serialization.add_safe_globals([argparse.Namespace])
checkpoint = torch.load("downloaded.pt", weights_only=True)
```

## Symptoms
不加该参数时，PyTorch 2.6 及以上版本会报：`_pickle.UnpicklingError: Weights only load failed.
... WeightsUnpickler error: Unsupported global: GLOBAL numpy.core.multiarray.scalar was not an
allowed global by default. Please use torch.serialization.add_safe_globals([scalar]) ...`。
更早的版本不加该参数时会警告：`FutureWarning: You are using torch.load with weights_only=False
(the current default value), which uses the default pickle module implicitly.`

## Known problems
在同一台机器上自己写出的文件和你的代码一样可信；这种情况下该提示只是提醒而非风险，
可以用 `# noqa: TD502` 把这个决定记录下来。

## References
- https://pytorch.org/docs/stable/notes/serialization.html#weights-only
""",
    },
)


@PITFALL.static(ast.Call, names={"load"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    flag = next((kw for kw in call.keywords if kw.arg == "weights_only"), None)
    if flag is None or not (isinstance(flag.value, ast.Constant) and flag.value.value is False):
        return
    if ctx.qualname(call.func) != "torch.load":
        return
    yield ctx.finding(PITFALL, flag)
