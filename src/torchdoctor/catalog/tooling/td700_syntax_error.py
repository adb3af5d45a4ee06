"""TD700 syntax-error: the file does not parse, so nothing else in it was checked."""

from __future__ import annotations

import re

from torchdoctor.catalog.sdk import Edit, Finding, Fix, Pitfall, split_lines

PITFALL = Pitfall(
    code="TD700",
    name="syntax-error",
    title={"en": "The file does not parse", "zh": "文件无法解析（语法错误）"},
    messages={
        "": {"en": "SyntaxError: {error}", "zh": "语法错误：{error}"},
        "async": {
            "en": "SyntaxError: {error} -- `async` is a keyword since Python 3.7; "
            "PyTorch renamed the argument to `non_blocking=`",
            "zh": "语法错误：{error} —— 自 Python 3.7 起 `async` 是关键字；"
            "PyTorch 已把该参数改名为 `non_blocking=`",
        },
    },
    fix_title={
        "en": "Rename `async=` to `non_blocking=`",
        "zh": "把 `async=` 改为 `non_blocking=`",
    },
    fix_applicability="safe",
    docs={
        "en": """
## What it catches
A file that Python cannot parse. The doctor reports the parser's message and checks the
other files. One PyTorch-specific case is explained: `x.cuda(async=True)` from PyTorch 0.3
code, which became a syntax error when `async` turned into a keyword in Python 3.7.

## Why is this bad?
Nothing in the file can run, and no other check can look at it.

## Example
```python
images = images.cuda(async=True)
```

## Use instead:
```python
images = images.cuda(non_blocking=True)
```

## Symptoms
`SyntaxError: invalid syntax` pointing at `async=`.

## Fix safety
Renaming the keyword argument `async=` to `non_blocking=` keeps the meaning: PyTorch 0.4
renamed it and gave it the same behaviour. The fix is safe and offered only for that case.
""",
        "zh": """
## What it catches
Python 无法解析的文件。会报告解析器的错误信息，并继续检查其他文件。对 PyTorch 特有的一种情况给出解释：
PyTorch 0.3 时代的 `x.cuda(async=True)`，自 Python 3.7 把 `async` 变成关键字后就成了语法错误。

## Why is this bad?
整个文件都无法运行，其他检查也无法分析它。

## Example
```python
images = images.cuda(async=True)
```

## Use instead:
```python
images = images.cuda(non_blocking=True)
```

## Symptoms
`SyntaxError: invalid syntax`，指向 `async=`。

## Fix safety
把关键字参数 `async=` 改名为 `non_blocking=` 不改变含义：PyTorch 0.4 做的正是这个改名，行为相同。
该修复是安全的，且只针对这种情况提供。
""",
    },
)

_ASYNC_ARGUMENT = re.compile(r"\basync(\s*=)")


@PITFALL.engine_finding("unparsable-source")
def finding_for(error: Exception, source: str, path: str) -> Finding:
    """The finding for a file that does not parse (called by the checker, not by a walk)."""
    lines = split_lines(source, keepends=True)  # SyntaxError counts lines as Python does
    if isinstance(error, SyntaxError):
        line, column, text = error.lineno or 1, error.offset or 1, error.msg
    else:
        line, column, text = 1, 1, f"{type(error).__name__}: {error}"
    line = max(1, min(line, len(lines) or 1))
    code_line = lines[line - 1] if lines else ""
    fix = None
    variant = ""
    match = _ASYNC_ARGUMENT.search(code_line)
    if match and re.search(r"\.(cuda|to|copy_)\(", code_line):
        variant = "async"
        start = sum(len(x) for x in lines[: line - 1]) + match.start()
        edit = Edit(
            start,
            start + len("async"),
            "non_blocking",
            line,
            match.start() + 1,
            line,
            match.start() + 1 + len("async"),
        )
        fix = Fix("safe", PITFALL.fix_title["en"], (edit,), titles=PITFALL.fix_title)
        column = match.start() + 1
    return Finding(
        code=PITFALL.code,
        name=PITFALL.name,
        message=PITFALL.message(variant, "en", error=text),
        path=path,
        line=line,
        column=max(1, column),
        end_line=line,
        end_column=max(1, column),
        fix=fix,
        template=(variant, {"error": text}),
    )
