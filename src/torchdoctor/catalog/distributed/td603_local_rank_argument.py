"""TD603 local-rank-argument: `--local_rank` only, which today's launchers no longer pass."""

from __future__ import annotations

import ast
from operator import attrgetter
from typing import Iterator

from torchdoctor.catalog.sdk import (
    Clue,
    Context,
    Finding,
    Pitfall,
    holds_marker,
    index,
    per_file,
    subtree,
)

PITFALL = Pitfall(
    code="TD603",
    name="local-rank-argument",
    title={
        "en": "`--local_rank` argument without the `--local-rank` spelling or a LOCAL_RANK fallback",
        "zh": "只定义了 `--local_rank` 参数，没有 `--local-rank` 写法，也没有读取 LOCAL_RANK 环境变量",
    },
    messages={
        "": {
            "en": "`--local_rank` is the only spelling: `torch.distributed.launch` passes `--local-rank` "
            "since torch 2.0 and `torchrun` only sets the LOCAL_RANK environment variable",
            "zh": "只接受 `--local_rank`：torch 2.0 起 `torch.distributed.launch` 传入的是 `--local-rank`，"
            "而 `torchrun` 只设置 LOCAL_RANK 环境变量",
        }
    },
    fix_title={
        "en": 'Accept both spellings: add `"--local-rank"`',
        "zh": '同时接受两种写法：加上 `"--local-rank"`',
    },
    fix_applicability="safe",
    # On again since the project index sees LOCAL_RANK read in other modules: the cause of all
    # 3 false findings in issue 13's 38 corpora (docs/precision.md).
    default=True,
    fix_hint={
        "en": 'Declare both spellings, `parser.add_argument("--local_rank", "--local-rank", '
        'type=int, default=int(os.environ.get("LOCAL_RANK", 0)))`, or launch with '
        "`torchrun` and read `LOCAL_RANK` from the environment.",
        "zh": '同时声明两种写法：`parser.add_argument("--local_rank", "--local-rank", type=int, '
        'default=int(os.environ.get("LOCAL_RANK", 0)))`；或者用 `torchrun` 启动，'
        "从环境变量读取 `LOCAL_RANK`。",
    },
    docs={
        "en": """
## What it catches
An argparse option `--local_rank` declared without the `--local-rank` spelling, in a project
that never reads the `LOCAL_RANK` environment variable (in this file or any module of the
project: `os.environ["LOCAL_RANK"]`, `os.getenv("LOCAL_RANK")`, `"LOCAL_RANK" in os.environ`,
or the same through a constant a module binds to it, `os.environ[C.LOCAL_RANK_VAR]`; another
script, a file with an `if __name__ == "__main__":` guard, reads it for its own run only)
and never launches its processes itself: with `--local_rank=N` (a launcher of its own), or
by starting them from the script and setting each one's `args.local_rank = rank`. Setting the
variable is no read: mmdetection-style scripts copy the option into it
(`if "LOCAL_RANK" not in os.environ: os.environ["LOCAL_RANK"] = str(args.local_rank)`) and
still need the launcher's argument. Nor an option stored as `local_rank` that no code of the
project reads (no `args.local_rank`, no `"local_rank"` key) in a file that parses with
`parse_known_args` (which lets the launcher's `--local-rank=N` through): kept for a distributed
mode the project does not have, it is dead weight. (With `parse_args` the launcher's spelling
still stops the run, read or not: KAIR's scripts.) Nor the option in a script that never reads
it and runs its GPUs from one process (`nn.DataParallel`, nothing distributed named): copied
from a training script (deq's `seg_test.py`), it is not one a launcher starts.

## Why is this bad?
The old launcher `python -m torch.distributed.launch` used to pass `--local_rank=N` to every
process. Since torch 2.0 it passes `--local-rank=N` instead, which argparse does not accept as
`--local_rank`: every process exits at once. `torchrun` passes no argument at all by default;
it sets the `LOCAL_RANK` environment variable, so the option keeps its default and every
process picks the same GPU.

## Symptoms
`error: unrecognized arguments: --local-rank=0`, or all processes on `cuda:0` with
`out of memory` or NCCL errors such as `Duplicate GPU detected`.

## Fix safety
The fix adds `"--local-rank"` as a second option string. The destination stays `local_rank`
(argparse names it after the first long option), so code reading `args.local_rank` keeps
working. It does not add the `LOCAL_RANK` fallback that `torchrun` needs: use
`default=int(os.environ.get("LOCAL_RANK", 0))` for that.
""",
        "zh": """
## What it catches
argparse 定义了 `--local_rank` 选项，却没有 `--local-rank` 这种写法，而且整个项目（本文件或项目中的
任何其他模块）都没有读取 `LOCAL_RANK` 环境变量（`os.environ["LOCAL_RANK"]`、`os.getenv("LOCAL_RANK")`、
`"LOCAL_RANK" in os.environ`，或通过某个模块中绑定为它的常量读取，如 `os.environ[C.LOCAL_RANK_VAR]`；
另一个脚本，即带 `if __name__ == "__main__":` 的文件，
读取它只为自己的运行），也没有自己启动进程：用 `--local_rank=N`（项目自带的启动器），
或者在脚本里启动进程并为每个进程设置 `args.local_rank = rank`。设置这个变量不算读取：
mmdetection 风格的脚本把选项的值拷贝进去（`if "LOCAL_RANK" not in os.environ:
os.environ["LOCAL_RANK"] = str(args.local_rank)`），仍然需要启动器传入的参数。
以 `local_rank` 保存、而项目中没有任何代码读取的选项（没有 `args.local_rank`，也没有 `"local_rank"`
这个键），且文件用 `parse_known_args` 解析参数（启动器传入的 `--local-rank=N` 会被放过）时也不报告：
它是为项目并不具备的分布式模式留下的，没有用处。（用 `parse_args` 时，无论是否读取，启动器的新写法都会让
程序退出：KAIR 的脚本就是这样。）脚本自己不读取这个选项、并在单个进程里使用多块 GPU（`nn.DataParallel`，
没有提到任何分布式的东西）时也不报告：它是从训练脚本拷贝过来的（deq 的 `seg_test.py`），不会由启动器启动。

## Why is this bad?
旧的启动方式 `python -m torch.distributed.launch` 以前会给每个进程传 `--local_rank=N`。
从 torch 2.0 起它改为传 `--local-rank=N`，argparse 不会把它当作 `--local_rank`，所有进程一启动就退出。
`torchrun` 默认根本不传这个参数，只设置 `LOCAL_RANK` 环境变量，于是该选项一直是默认值，
所有进程都挤到同一块 GPU 上。

## Symptoms
`error: unrecognized arguments: --local-rank=0`，或者所有进程都跑在 `cuda:0` 上，出现
`out of memory`，或 `Duplicate GPU detected` 之类的 NCCL 错误。

## Fix safety
修复会加上第二个选项名 `"--local-rank"`。目标属性仍然是 `local_rank`（argparse 按第一个长选项命名），
读取 `args.local_rank` 的代码不受影响。它不会补上 `torchrun` 需要的 `LOCAL_RANK` 回退，
这需要自己写 `default=int(os.environ.get("LOCAL_RANK", 0))`。
""",
    },
    example="""
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=0)
args = parser.parse_args()
torch.cuda.set_device(args.local_rank)
""",
    use_instead="""
import argparse
import os

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", "--local-rank", type=int,
                    default=int(os.environ.get("LOCAL_RANK", 0)))
args = parser.parse_args()
torch.cuda.set_device(args.local_rank)
""",
)

OLD_SPELLING = "--local_rank"
NEW_SPELLING = "--local-rank"
ENV_VARIABLE = "LOCAL_RANK"
_OWN_LAUNCH = "--local_rank="  # a project marker (lint/project.py)
_READ = "reads local_rank"  # another one


@PITFALL.static(ast.Call, names={"add_argument"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    option = _option(call, OLD_SPELLING)
    if option is None or _option(call, NEW_SPELLING) is not None:
        return
    if _reads_local_rank_env(ctx) or ctx.project.reads_env(ENV_VARIABLE):
        return  # torchrun's way is handled somewhere in the file, or in the project
    if _sets_local_rank(ctx):
        return  # the script starts its processes itself and tells each its rank
    source = ctx.source.encode("utf-8", "replace")
    if ctx.project.has(_OWN_LAUNCH) or holds_marker(source, _OWN_LAUNCH):
        return  # the project (or this buffer) launches its processes itself, with this spelling
    if (
        "parse_known_args" in ctx.source
        and _holds_local_rank(call)
        and not (ctx.project.has(_READ) or holds_marker(source, _READ))
    ):
        return  # the launcher's spelling is let through, and nothing reads the rank: dead weight
    if _holds_local_rank(call) and not holds_marker(source, _READ) and _one_process(ctx):
        return  # copied from a training script: this one neither reads the rank nor runs apart
    quote = '"' if ctx.text(option)[:1] != "'" else "'"
    _, end = ctx.span(option)
    fix = ctx.fix(PITFALL, "safe", ctx.edit(end, end, f", {quote}{NEW_SPELLING}{quote}"))
    yield ctx.finding(PITFALL, option, fix=fix)


# What a script running one process per GPU names (KAIR's say it as `--launcher`,
# `init_dist('pytorch')`, `get_dist_info()`).
_DISTRIBUTED_WORDS = (
    "distributed",
    "Distributed",
    "init_process_group",
    "launcher",
    "init_dist",
    "get_dist",
    "dist.",
)


@per_file
def _one_process(ctx: Context) -> bool:
    """The file runs its GPUs from one process (`nn.DataParallel`) and names nothing of a run
    of one process per GPU: deq's seg_test.py, with `--local_rank` copied from seg_train.py,
    which no launcher starts."""
    source = ctx.source
    return "DataParallel" in source and not any(word in source for word in _DISTRIBUTED_WORDS)


def _holds_local_rank(call: ast.Call) -> bool:
    """The option is stored as `local_rank` (argparse's dest: no `dest=`, and `--local_rank` its
    first long option), so reading the rank reads that name."""
    if any(k.arg == "dest" for k in call.keywords):
        return False
    strings = [
        a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
    ]
    longs = [text for text in strings if text.startswith("--")]
    return bool(longs) and longs[0] == OLD_SPELLING


def _option(call: ast.Call, spelling: str) -> ast.Constant | None:
    for arg in call.args:
        if isinstance(arg, ast.Constant) and arg.value == spelling:
            return arg
    return None


@per_file
def _reads_local_rank_env(ctx: Context) -> bool:
    """The file reads `LOCAL_RANK` somewhere (`os.environ["LOCAL_RANK"]`, `os.getenv(...)`).
    Setting it (`os.environ["LOCAL_RANK"] = str(args.local_rank)`), or testing that it is
    missing before setting it, is no read: mmdetection-style scripts copy the launcher's
    `--local_rank` there, and still need the argument."""
    whole = index(ctx)
    constants = list(map(whole.nodes.__getitem__, whole.by_class.get(ast.Constant, ())))
    if ENV_VARIABLE not in map(_VALUE, constants):  # compared without a Python loop: C speed
        return False
    return any(
        constant.value == ENV_VARIABLE and not _only_set(constant, whole.parents)
        for constant in constants
    )


def _only_set(constant: ast.Constant, parents) -> bool:
    """`os.environ["LOCAL_RANK"] = ...`, or `"LOCAL_RANK" not in os.environ`."""
    above = parents.get(constant)
    if isinstance(above, ast.Subscript):
        return isinstance(above.ctx, ast.Store)
    return (
        isinstance(above, ast.Compare)
        and above.left is constant
        and [type(op) for op in above.ops] == [ast.NotIn]
    )


_VALUE = attrgetter("value")


# Calls that start the processes of a distributed run from the script itself.
_STARTS_PROCESSES = ("Process", "spawn", "start_processes", "Popen")


@per_file
def _sets_local_rank(ctx: Context) -> bool:
    """The file starts processes and gives `<args>.local_rank` a value of its own, not made
    from itself (denoising-diffusion-gan: `args.local_rank = rank` for each process it starts;
    not convNet.pytorch's `args.local_rank = dist.get_rank()` in a process the launcher made)."""
    whole = index(ctx)
    if not any(whole.calls.get(name) for name in _STARTS_PROCESSES):
        return False
    for at in whole.attributes.get("local_rank", ()):
        node = whole.nodes[at]
        statement = whole.parents.get(node)
        if (
            type(node.ctx) is ast.Store  # type: ignore[attr-defined]
            and type(statement) is ast.Assign
            and not any(
                type(n) in (ast.Attribute, ast.Name)
                and "local_rank" in (getattr(n, "attr", None), getattr(n, "id", None))
                for n in subtree(statement.value)
            )
        ):
            return True
    return False


# Error signatures ---------------------------------------------------------------------------

# The arguments are read up to the next `unrecognized arguments:`: a line repeating it is read
# once, not once from each repetition. An editor or a forum may turn `--` into a dash.
PITFALL.error(
    r"unrecognized arguments:(?:(?!unrecognized arguments:)[^\n])*?(?P<option>(?:--|\u2013|\u2014)local-rank)\b",
    types=(),
    confidence=0.95,
    cause={
        "en": "The launcher (`torch.distributed.launch` since torch 2.0) passes "
        "`--local-rank=N` to each process, and the script's argparse does not declare "
        "that spelling, so every process exits.",
        "zh": "启动器（torch 2.0 起的 `torch.distributed.launch`）给每个进程传入 `--local-rank=N`，"
        "而脚本的 argparse 没有声明这种写法，于是所有进程都退出了。",
    },
)
PITFALL.error(
    r"unrecognized arguments:(?:(?!unrecognized arguments:)[^\n])*?(?P<option>(?:--|\u2013|\u2014)local_rank)\b",
    types=(),
    confidence=0.9,
    cause={
        "en": "`python -m torch.distributed.launch` passes `--local_rank=N` to each process "
        "and the script's argparse does not declare it: the script expects `torchrun` "
        "(which sets the LOCAL_RANK variable instead), or lacks the option.",
        "zh": "`python -m torch.distributed.launch` 给每个进程传入 `--local_rank=N`，而脚本的 argparse "
        "没有声明它：脚本是按 `torchrun`（它改为设置 LOCAL_RANK 环境变量）写的，或者缺少这个选项。",
    },
)

# torch >= 2.0's launcher warns in its own spelling; torch 1.x's warning said `--local_rank`.
_NEW_LAUNCHER = "If your script expects `--local-rank` argument"


@PITFALL.error_check(types=(), words=("if your script expects",))
def usage_without_new_spelling(block, report) -> Clue | None:
    """The error line cut off: argparse printed its usage, as it does for a bad argument, and
    the usage declares only `--local_rank`, after the warning of a launcher passing
    `--local-rank`. Read from the whole input, once (a log's every block asks)."""
    return report.once(_usage_without_new_spelling)


def _usage_without_new_spelling(report) -> Clue | None:
    if _NEW_LAUNCHER not in report.text:
        return None
    start = report.text.find("\nusage: ")
    if start < 0:
        return None
    end = report.text.find("\n\n", start + 1)
    usage = report.text[start : end if end > 0 else len(report.text)]
    if not any(f"[{OLD_SPELLING}{after}" in usage for after in " ]") or NEW_SPELLING in usage:
        return None
    return Clue(
        0.75,
        {
            "en": "The launcher (`torch.distributed.launch` of torch 2.x, as its warning "
            "shows) passes `--local-rank=N`, and the script's usage declares only "
            "`--local_rank`: argparse rejects the argument (its error line is cut off here).",
            "zh": "启动器（torch 2.x 的 `torch.distributed.launch`，见其警告）传入 `--local-rank=N`，"
            "而脚本的用法说明只声明了 `--local_rank`：argparse 拒绝了这个参数（这里没有贴出它的报错行）。",
        },
    )


# python-fire (`fire.Fire(main)`) refuses the option the launcher adds just as argparse does.
PITFALL.error(
    r"Could not consume arg: (?P<option>--local[_-]rank)\b",
    types=(),
    confidence=0.9,
    cause={
        "en": "`torch.distributed.launch` passed `{option}` to the script, and the script's command "
        "line (python-fire here) has no such parameter.",
        "zh": "`torch.distributed.launch` 给脚本传了 `{option}`，而脚本的命令行（这里是 python-fire）"
        "没有这个参数。",
    },
    fix={
        "en": "Launch with `torchrun`, which passes the rank in the `LOCAL_RANK` environment "
        'variable instead, and read `int(os.environ["LOCAL_RANK"])`; or give the function a '
        "`local_rank` parameter.",
        "zh": "改用 `torchrun` 启动，它通过环境变量 `LOCAL_RANK` 传递 rank，再读取 "
        '`int(os.environ["LOCAL_RANK"])`；或者给函数加一个 `local_rank` 参数。',
    },
)


# The script reads the variable itself (`int(os.environ["LOCAL_RANK"])`) and was not started by
# a launcher that sets it. KeyError's message is the quoted key: `KeyError: 'LOCAL_RANK'`, or
# the key alone on its line when the paste starts below the exception's class.
_NOT_LAUNCHED_CAUSE = {
    "en": "The script reads the `LOCAL_RANK` environment variable, which only a distributed "
    "launcher sets (`torchrun`, or `python -m torch.distributed.launch` since torch 2.0 or "
    "with `--use-env`): it was started with plain `python` (or passed `--local_rank` on the "
    "command line, which sets no variable).",
    "zh": "脚本读取了环境变量 `LOCAL_RANK`，而只有分布式启动器才会设置它（`torchrun`，或 torch 2.0 起"
    "以及带 `--use-env` 的 `python -m torch.distributed.launch`）：脚本是直接用 `python` 启动的"
    "（或在命令行上传了 `--local_rank`，这并不会设置环境变量）。",
}
_NOT_LAUNCHED_FIX = {
    "en": "Start it with the launcher, `torchrun --nproc_per_node=N script.py` (also for one "
    'GPU), or read the variable with a default: `int(os.environ.get("LOCAL_RANK", 0))`.',
    "zh": "用启动器运行：`torchrun --nproc_per_node=N script.py`（单卡也可以），或者读取时给出默认值："
    '`int(os.environ.get("LOCAL_RANK", 0))`。',
}
PITFALL.error(
    r"^[\"'`\u201c]?['\"]LOCAL_RANK['\"]",
    types=("KeyError",),
    confidence=0.85,
    cause=_NOT_LAUNCHED_CAUSE,
    fix=_NOT_LAUNCHED_FIX,
)
PITFALL.error(
    r"(?m:^)[ \t]*'LOCAL_RANK'[ \t]*\n",
    types=(),
    confidence=0.75,
    cause=_NOT_LAUNCHED_CAUSE,
    fix=_NOT_LAUNCHED_FIX,
)
