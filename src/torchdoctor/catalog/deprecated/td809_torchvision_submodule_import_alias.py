"""TD809 torchvision-submodule-import-alias: `import torchvision.models as models` where
`from torchvision import models` says the same (TorchFix TOR203; a style rule, opt-in)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import Context, Finding, Pitfall

PITFALL = Pitfall(
    code="TD809",
    name="torchvision-submodule-import-alias",
    title={
        "en": "`import torchvision.X as X` instead of `from torchvision import X`",
        "zh": "用 `import torchvision.X as X` 而不是 `from torchvision import X`",
    },
    messages={
        "": {
            "en": "`{written}` binds the name the submodule already has: write `from torchvision "
            "import {name}`",
            "zh": "`{written}` 绑定的名字就是子模块本来的名字：请写成 `from torchvision import {name}`",
        }
    },
    fix_title={
        "en": "Write `from torchvision import {name}`",
        "zh": "改写为 `from torchvision import {name}`",
    },
    fix_applicability="safe",
    default=False,
    docs={
        "en": """
## What it catches
An import of a torchvision submodule under its own last name, `import torchvision.models as
models` (also `transforms`, `datasets`, `ops`, `utils`, `io`...), alone in its statement. It is
a style rule, off by default: TorchFix reports it as TOR203.

## Why is this bad?
Nothing breaks: both spellings bind the same module object to the same name. `from torchvision
import models` says it in fewer words and is the form torchvision's own documentation uses,
so the rule keeps a code base to one spelling.

## Fix safety
The fix rewrites the statement to `from torchvision import NAME`, which binds the same object
to the same name: safe.

## Known problems
Statements that import several modules at once are not reported.
""",
        "zh": """
## What it catches
以子模块自己的最后一段名字导入 torchvision 的子模块：`import torchvision.models as models`
（还有 `transforms`、`datasets`、`ops`、`utils`、`io` 等），且该语句只导入这一个模块。这是一条风格
规则，默认关闭：TorchFix 把它报告为 TOR203。

## Why is this bad?
不会出错：两种写法把同一个模块对象绑定到同一个名字上。`from torchvision import models` 更简洁，
也是 torchvision 自己的文档使用的写法，这条规则让代码库只保留一种写法。

## Fix safety
修复把语句改写为 `from torchvision import NAME`，它把同一个对象绑定到同一个名字上：安全。

## Known problems
一条语句同时导入多个模块时不会被报告。
""",
    },
    example="""
import torchvision.models as models

net = models.resnet18(weights=None)
""",
    use_instead="""
from torchvision import models

net = models.resnet18(weights=None)
""",
)


@PITFALL.static(ast.Import)
def check(node: ast.Import, ctx: Context) -> Iterator[Finding]:
    if len(node.names) != 1:
        return
    alias = node.names[0]
    package, _, name = alias.name.partition(".")
    if package != "torchvision" or not name or "." in name or alias.asname != name:
        return
    title = {lang: text.format(name=name) for lang, text in PITFALL.fix_title.items()}
    fix = ctx.fix(
        PITFALL, "safe", ctx.replace(node, f"from torchvision import {name}"), title=title
    )
    written = " ".join(ctx.text(node).split())
    yield ctx.finding(PITFALL, node, fix=fix, written=written, name=name)
