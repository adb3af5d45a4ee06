"""TD704 argparse-in-notebook: `parser.parse_args()` in a notebook reads the kernel's own argv."""

from __future__ import annotations


import ast
from typing import Iterator

from torchdoctor.catalog.sdk import (
    lazy_compile,
    Clue,
    Context,
    Finding,
    Pitfall,
    per_file,
    statements,
)

PITFALL = Pitfall(
    code="TD704",
    name="argparse-in-notebook",
    title={
        "en": "`parse_args()` without arguments in a Jupyter notebook",
        "zh": "在 Jupyter notebook 中不带参数调用 `parse_args()`",
    },
    messages={
        "": {
            "en": "`{call}` in a notebook parses the kernel's command line (`-f kernel-....json`) "
            "and exits with SystemExit: 2",
            "zh": "在 notebook 中，`{call}` 会解析内核自己的命令行（`-f kernel-....json`），"
            "随即以 SystemExit: 2 退出",
        }
    },
    fix_title={
        "en": "Parse an empty argument list: `parse_args(args=[])`",
        "zh": "解析空参数列表：`parse_args(args=[])`",
    },
    fix_applicability="safe",
    fix_hint={
        "en": "In the notebook, parse an explicit list: `args = parser.parse_args(args=[])` (or "
        "`parser.parse_known_args()[0]`), putting the options you want in the list.",
        "zh": "在 notebook 中解析显式给出的列表：`args = parser.parse_args(args=[])`（或 "
        "`parser.parse_known_args()[0]`），需要的选项写进这个列表里。",
    },
    # Its Example only goes wrong in a notebook cell; linted as a .py text it is fine.
    lint_example=False,
    docs={
        "en": """
## What it catches
`parser.parse_args()` called with no argument list in a Jupyter notebook cell, where `parser`
is an `argparse.ArgumentParser`. Only notebooks that use PyTorch are checked; in a script the
same call is the normal way to read the command line.

## Why is this bad?
Without an argument list, `parse_args` reads `sys.argv[1:]`. In a Jupyter kernel that is the
kernel's own command line, `-f /path/to/kernel-<id>.json`, which your parser does not know:
argparse prints a usage error and raises `SystemExit`, so the cell stops before any of your
code runs. Code copied from a training script into a notebook fails this way on its first cell.

## Symptoms
`error: unrecognized arguments: -f /root/.local/share/jupyter/runtime/kernel-<id>.json`
followed by `SystemExit: 2` (and IPython's warning `To exit: use 'exit', 'quit', or Ctrl-D.`).

## Fix safety
The fix passes `args=[]`, so the parser uses only its defaults. In a notebook that is what
the call can mean: the kernel's command line never holds arguments meant for your parser.
To try other values, put them in the list: `parse_args(args=["--lr", "0.01"])`.
""",
        "zh": """
## What it catches
在 Jupyter notebook 的单元格里不带参数列表调用 `parser.parse_args()`（`parser` 是
`argparse.ArgumentParser`）。只检查用到 PyTorch 的 notebook；在普通脚本里这正是读取命令行的常规写法。

## Why is this bad?
不传参数列表时，`parse_args` 读取 `sys.argv[1:]`。在 Jupyter 内核中，这是内核自己的启动参数
`-f /path/to/kernel-<id>.json`，你的解析器并不认识它：argparse 打印用法错误并抛出 `SystemExit`，
单元格在你的代码运行之前就停止了。把训练脚本原样复制到 notebook 里时，第一个单元格往往就这样失败。

## Symptoms
`error: unrecognized arguments: -f /root/.local/share/jupyter/runtime/kernel-<id>.json`，
随后是 `SystemExit: 2`（以及 IPython 的提示 `To exit: use 'exit', 'quit', or Ctrl-D.`）。

## Fix safety
修复会传入 `args=[]`，解析器只使用各参数的默认值。在 notebook 里这正是该调用唯一合理的含义：
内核的命令行里从来不会有给你的解析器的参数。想试别的取值，就把它们写进列表：
`parse_args(args=["--lr", "0.01"])`。
""",
    },
    example="""
import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()
""",
    use_instead="""
import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args(args=[])
""",
)


@PITFALL.static(ast.Call, names={"parse_args"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if not ctx.is_notebook or call.args:
        return
    # `args=...` or `**options` (which may hold it) gives the parser its own list.
    if any(keyword.arg in ("args", None) for keyword in call.keywords):
        return
    if ctx.method_name(call) is None or not _imports_argparse(ctx):
        return
    yield ctx.finding(PITFALL, call, fix=_pass_empty_args(call, ctx), call=ctx.text(call))


def _pass_empty_args(call: ast.Call, ctx: Context):
    """Insert `args=[]` first in the call's parentheses."""
    paren = ctx.source.index("(", ctx.span(call.func)[1]) + 1
    text = "args=[], " if call.keywords else "args=[]"
    return ctx.fix(PITFALL, "safe", ctx.edit(paren, paren, text))


@per_file
def _imports_argparse(ctx: Context) -> bool:
    """The notebook imports argparse somewhere: its `parse_args` is argparse's."""
    for node in statements(ctx, ast.Import, ast.ImportFrom):
        if isinstance(node, ast.Import) and any(a.name == "argparse" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "argparse":
            return True
    return False


# Error signatures ---------------------------------------------------------------------------

# Linear in the line: the arguments are read up to the next `unrecognized arguments:` (a line
# repeating it is read once), each from its start only, and the path after `-f` once for its
# word (a lookahead) and once for `.json`.
PITFALL.error(
    r"unrecognized arguments:(?:(?!unrecognized arguments:)[^\n])*?"
    r"(?:(?<!\S)(?:-f |--f=)(?=\S*?(?:kernel|jupyter|runtime))\S*?"
    r"|(?<!\S)\S*?jupyter[\\/]runtime[\\/]kernel-[\w-]+)\.json",
    types=(),
    confidence=0.95,
    cause={
        "en": "`parse_args()` ran inside a Jupyter kernel and read the kernel's own command "
        "line (`-f .../kernel-....json`) instead of options meant for the script.",
        "zh": "`parse_args()` 在 Jupyter 内核中运行，读到的是内核自己的命令行（`-f .../kernel-....json`），"
        "而不是给脚本的选项。",
    },
)
# The kernel's launcher named as the program, whatever arguments are quoted after it: Jupyter's
# `ipykernel_launcher.py`, Colab's `colab_kernel_launcher.py` (its `-f` path is often cut off).
# optparse, which older scripts use, says `no such option: -f` where argparse says
# `unrecognized arguments`.
PITFALL.error(
    r"(?:ipykernel|colab_kernel)_launcher\.py: error: (?:unrecognized arguments|no such option)",
    types=(),
    confidence=0.9,
    cause={
        "en": "`parse_args()` (argparse's or optparse's) ran inside a Jupyter kernel (the "
        "program is the kernel's launcher, `ipykernel_launcher.py` or Colab's `colab_kernel_launcher.py`) and read the "
        "kernel's own command line instead of options meant for the script.",
        "zh": "`parse_args()`（argparse 或 optparse 的）在 Jupyter 内核中运行（程序名是内核的启动器 "
        "`ipykernel_launcher.py` 或 Colab 的 `colab_kernel_launcher.py`），读到的是内核自己的命令行，"
        "而不是给脚本的选项。",
    },
)
# VS Code and some IDE consoles start the kernel with its ports and session key as options.
PITFALL.error(
    r"unrecognized arguments:(?:(?!unrecognized arguments:)[^\n])*?"
    r"--(?:Session\.key|iopub|hb|control)=",
    types=(),
    confidence=0.9,
    cause={
        "en": "`parse_args()` ran inside an IPython kernel started by an editor and read the "
        "kernel's own options (`--iopub=...`, `--Session.key=...`).",
        "zh": "`parse_args()` 在编辑器启动的 IPython 内核中运行，读到的是内核自己的选项"
        "（`--iopub=...`、`--Session.key=...`）。",
    },
)

# Only the end of it: `SystemExit: 2` (argparse's exit status for a usage error) where a
# notebook shows it, or right after the `parse_args()` line.
_SYSTEM_EXIT = lazy_compile(r"SystemExit\W{0,3}2\b|SystemExit +Traceback \(most recent call last\)")
_IN_A_NOTEBOOK = lazy_compile(
    r"use %tb to see the full traceback|ipython-input|ipykernel|Cell In\[|[Jj]upyter|[Cc]olab"
)
_PARSED_ARGUMENTS = lazy_compile(r"parse_args\(\s*\)")


@PITFALL.error_check(types=("SystemExit", ""), words=("systemexit",))
def exited_in_a_notebook(block, report) -> Clue | None:
    exited = report.search(_SYSTEM_EXIT) if report.text else _SYSTEM_EXIT.search(block.message)
    if not exited:
        return None
    in_notebook = report.search(_IN_A_NOTEBOOK) is not None
    parsed = report.search(_PARSED_ARGUMENTS) is not None
    if not (in_notebook or parsed):
        return None
    return Clue(
        0.85 if in_notebook and parsed else 0.75,
        {
            "en": "The program exited with status 2, argparse's status for a usage error: "
            "`parse_args()` read the notebook kernel's own command line (`-f kernel-....json`) "
            "instead of options meant for the script.",
            "zh": "程序以状态 2 退出，这是 argparse 的用法错误状态：`parse_args()` 读到的是 notebook "
            "内核自己的命令行（`-f kernel-....json`），而不是给脚本的选项。",
        },
    )
