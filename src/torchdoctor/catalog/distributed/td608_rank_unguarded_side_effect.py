"""TD608 rank-unguarded-side-effect: saving, printing or logging on every DDP rank."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.distributed._ddp import WRAPPERS, imported_wrapper_names
from torchdoctor.catalog.sdk import Context, Finding, Pitfall, index, name_words, per_file, shorten

PITFALL = Pitfall(
    code="TD608",
    name="rank-unguarded-side-effect",
    title={
        "en": "Checkpoint, print or log written by every DDP rank",
        "zh": "每个 DDP 进程都在保存检查点、打印或写日志",
    },
    messages={
        "": {
            "en": "`{call}` runs on every rank of this DistributedDataParallel script (the "
            "model is wrapped on line {line}): every process writes the same file at once, and "
            "a reader may get a half-written checkpoint; save on rank 0 only "
            "(`if dist.get_rank() == 0:`)",
            "zh": "`{call}` 会在这个 DistributedDataParallel 脚本（第 {line} 行包装了模型）的每个进程上"
            "执行：所有进程同时写同一个文件，读取方可能拿到写了一半的检查点；请只在 0 号进程保存"
            "（`if dist.get_rank() == 0:`）",
        },
        "print": {
            "en": "`{call}` runs on every rank of this DistributedDataParallel script (the "
            "model is wrapped on line {line}): each line is printed once per process, with "
            "each rank's own local value; print on rank 0 only (`if dist.get_rank() == 0:`)",
            "zh": "`{call}` 会在这个 DistributedDataParallel 脚本（第 {line} 行包装了模型）的每个进程上"
            "执行：每行都会被每个进程各打印一次，且是各进程自己的局部值；请只在 0 号进程打印"
            "（`if dist.get_rank() == 0:`）",
        },
        "writer": {
            "en": "`{call}` creates a SummaryWriter on every rank of this DistributedDataParallel "
            "script (the model is wrapped on line {line}): each process writes its own event "
            "file, and TensorBoard shows N interleaved curves; create it on rank 0 only",
            "zh": "`{call}` 会在这个 DistributedDataParallel 脚本（第 {line} 行包装了模型）的每个进程上"
            "创建一个 SummaryWriter：每个进程各写一个事件文件，TensorBoard 会显示 N 条交错的曲线；"
            "请只在 0 号进程创建",
        },
    },
    fix_hint={
        "en": "Guard the side effect with a rank check: `if dist.get_rank() == 0:` (or "
        "`if local_rank in (-1, 0):`, an `is_main_process()` helper); create the SummaryWriter "
        "on rank 0 only (`writer = SummaryWriter() if rank == 0 else None`).",
        "zh": "用进程编号判断保护这些副作用：`if dist.get_rank() == 0:`（或 "
        "`if local_rank in (-1, 0):`、`is_main_process()` 之类的辅助函数）；只在 0 号进程创建 "
        "SummaryWriter（`writer = SummaryWriter() if rank == 0 else None`）。",
    },
    default=False,
    docs={
        "en": """
## What it catches
In a function (or module) that wraps a model in `DistributedDataParallel` (or
`FullyShardedDataParallel`), a `torch.save(...)`, a `save_checkpoint(...)` call, a `print` or
`logging` call of metrics (one naming a loss, an accuracy, a metric, an epoch or a step), or a
`SummaryWriter(...)` that no rank check guards: no enclosing `if` (or conditional expression,
or `and`) whose test names the rank or the main process (`if rank == 0`,
`if dist.get_rank() == 0`, `if is_main_process()`, `if args.local_rank in [-1, 0]`,
`if args.gpu == 0`), and no earlier `if <rank check>: return` in that function.

## Why is this bad?
Under `torchrun` or `mp.spawn` the whole script runs once per GPU. Side effects that should
happen once happen N times: every rank writes the same checkpoint path at the same moment (a
reader, or a resumed run, may load a truncated file; on a shared file system writes can fail),
logs are printed N times with each rank's local, not averaged, numbers, and each rank's
SummaryWriter writes its own event file, so TensorBoard shows several runs mixed together.

## Symptoms
Every log line repeated once per GPU; `RuntimeError: PytorchStreamReader failed reading zip
archive: failed finding central directory` when loading a checkpoint written concurrently;
TensorBoard plots that zig-zag between several curves.

## Known problems
Opt-in: a rank check the rule does not recognize (a flag named otherwise, a logger configured
per rank elsewhere) makes it report a guarded call. Only calls in the same function as the DDP
wrapping are looked at, so a helper called under a rank check elsewhere is not reported, and
neither is an unguarded one. Logging calls are not reported when the file configures logging
with the rank (`logging.basicConfig(level=... if rank == 0 else ...)`). A call that names the
rank (`print(f"rank {rank}: ...")`, `torch.save(shard, f"shard_{rank}.pt")`) is meant per rank and
not reported.

## References
- https://pytorch.org/tutorials/intermediate/ddp_tutorial.html#save-and-load-checkpoints
""",
        "zh": """
## What it catches
在用 `DistributedDataParallel`（或 `FullyShardedDataParallel`）包装模型的函数（或模块）中，没有任何
进程编号判断保护的 `torch.save(...)`、`save_checkpoint(...)` 调用，打印或记录指标的 `print`、`logging`
调用（提到 loss、准确率、指标、epoch 或 step），或 `SummaryWriter(...)`：外层没有测试条件提到进程编号
或主进程的 `if`（或条件表达式、`and`）（`if rank == 0`、`if dist.get_rank() == 0`、
`if is_main_process()`、`if args.local_rank in [-1, 0]`、`if args.gpu == 0`），该函数中前面也没有
`if <进程判断>: return`。

## Why is this bad?
在 `torchrun` 或 `mp.spawn` 下，整个脚本在每张 GPU 上各运行一次。本应只发生一次的副作用会发生 N 次：
每个进程在同一时刻写同一个检查点路径（读取方或恢复训练时可能加载到不完整的文件；在共享文件系统上写入
可能失败），日志被打印 N 次，而且是各进程自己的局部数值而非平均值；每个进程的 SummaryWriter 各写一个
事件文件，TensorBoard 会把几次"运行"混在一起显示。

## Symptoms
每行日志都按 GPU 数重复出现；加载并发写入的检查点时报
`RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory`；
TensorBoard 的曲线在几条之间来回跳动。

## Known problems
默认关闭：规则认不出的进程判断（名字不同的标志、在别处按进程配置的 logger）会让它报告已被保护的调用。
只检查与 DDP 包装位于同一函数中的调用，所以在别处的进程判断下调用的辅助函数不会被报告，未受保护的
辅助函数也不会。文件按进程编号配置日志时（`logging.basicConfig(level=... if rank == 0 else ...)`），
不报告 logging 调用。提到进程编号的调用（`print(f"rank {rank}: ...")`、`torch.save(shard, f"shard_{rank}.pt")`）
本来就是每个进程各执行一次，不报告。

## References
- https://pytorch.org/tutorials/intermediate/ddp_tutorial.html#save-and-load-checkpoints
""",
    },
    example="""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(rank, loader):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save(model.module.state_dict(), "model.pt")
""",
    use_instead="""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(rank, loader):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if rank == 0:
        torch.save(model.module.state_dict(), "model.pt")
""",
)

_SAVES = frozenset({"torch.save"})
_WRITERS = frozenset({"torch.utils.tensorboard.SummaryWriter", "tensorboardX.SummaryWriter"})
_LOG_METHODS = frozenset({"info", "warning", "debug"})
_LOGGERS = frozenset({"logger", "logging", "log", "_logger", "LOGGER"})
# Words of a test that asks which process this is.
_RANK_WORDS = frozenset(
    {"rank", "master", "main", "primary", "chief", "leader", "gpu", "zero", "distributed"}
)
# Words of printed values that are metrics (a print of anything else may be a one-off setup
# message: noisy, not wrong).
_METRIC_WORDS = frozenset(
    {"loss", "losses", "acc", "accuracy", "metric", "metrics", "epoch", "step", "iter", "top1"}
)
_EXITS = (ast.Return, ast.Continue, ast.Break, ast.Raise)


@PITFALL.static(
    ast.Call, names={"save", "print", "SummaryWriter", *_LOG_METHODS, "save_checkpoint"}
)
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if not _may_wrap(ctx):
        return
    variant = _side_effect(call, ctx)
    if variant is None or "rank" in name_words(ctx.text(call)):
        return  # `torch.save(shard, f"ckpt_rank{rank}.pt")`: one file per rank, on purpose
    whole = index(ctx)
    scope = whole.scopes[whole.number[call]]
    wrapper = _wrapped_in(ctx).get(scope)
    if wrapper is None:
        return
    if any(_guards(ctx, node) for node in ctx.ancestors) or _guarded_here(call, ctx):
        return
    guard = _early_guard(ctx).get(scope)
    if guard is not None and guard < call.lineno:
        return
    yield ctx.finding(PITFALL, call, variant, call=shorten(ctx.text(call), 50), line=wrapper.lineno)


@per_file
def _may_wrap(ctx: Context) -> bool:
    return any(wrapper in ctx.source for wrapper in WRAPPERS)


def _side_effect(call: ast.Call, ctx: Context) -> str | None:
    func = call.func
    if isinstance(func, ast.Name) and func.id == "print":
        return "print" if _metrics(call, ctx) else None
    if isinstance(func, ast.Name) and func.id == "save_checkpoint":
        return ""
    qualname = ctx.qualname(func)
    if qualname in _SAVES:
        return ""
    if qualname in _WRITERS:
        return "writer"
    if (
        isinstance(func, ast.Attribute)
        and func.attr in _LOG_METHODS
        and isinstance(func.value, ast.Name)
        and func.value.id in _LOGGERS
        and not _logging_per_rank(ctx)
    ):
        return "print" if _metrics(call, ctx) else None
    return None


def _metrics(call: ast.Call, ctx: Context) -> bool:
    return not _METRIC_WORDS.isdisjoint(name_words(ctx.text(call)))


@per_file
def _wrapped_in(ctx: Context) -> dict[ast.AST, ast.Call]:
    """The scopes (function, class or module) that wrap a model in DDP or FSDP, with the first
    wrapping call of each."""
    whole = index(ctx)
    names = WRAPPERS | imported_wrapper_names(ctx)
    found: dict[ast.AST, ast.Call] = {}
    for call in whole.calls_named(ctx.tree, names):
        func = call.func
        if (isinstance(func, ast.Name) and func.id in names) or (
            isinstance(func, ast.Attribute) and func.attr in WRAPPERS
        ):
            found.setdefault(whole.scopes[whole.number[call]], call)
    return found


@per_file
def _is_rank_test(ctx: Context, test: ast.AST) -> bool:
    return not _RANK_WORDS.isdisjoint(name_words(ctx.text(test)))


def _guarded_here(call: ast.Call, ctx: Context) -> bool:
    """A conditional expression or an `and` of the call's statement guards it by rank
    (`SummaryWriter() if rank == 0 else None`, `rank == 0 and print(...)`)."""
    parents = ctx.statement_parents()
    node = parents.get(call)
    while node is not None:
        if _guards(ctx, node):
            return True
        node = parents.get(node)
    return False


def _guards(ctx: Context, node: ast.AST) -> bool:
    """`node` runs what is under it only under a rank test."""
    if isinstance(node, (ast.If, ast.IfExp, ast.While)):
        return _is_rank_test(ctx, node.test)
    if isinstance(node, ast.BoolOp):
        return any(_is_rank_test(ctx, value) for value in node.values)
    return False


@per_file
def _early_guard(ctx: Context) -> dict[ast.AST, int]:
    """The scopes that leave early on other ranks (`if rank != 0: return`), with the line of
    the first such `if`."""
    whole = index(ctx)
    found: dict[ast.AST, int] = {}
    for node in whole.everywhere(ast.If):
        if node.body and isinstance(node.body[-1], _EXITS) and _is_rank_test(ctx, node.test):
            scope = whole.scopes[whole.number[node]]
            found[scope] = min(found.get(scope, node.lineno), node.lineno)
    return found


@per_file
def _logging_per_rank(ctx: Context) -> bool:
    """The file sets the log level by rank: its logging calls may be silent on other ranks."""
    if not any(ctx.may_name(name) for name in _LEVEL_SETTERS):
        return False  # no such call can be in a file that never spells its name: no index read
    whole = index(ctx)
    return any(_is_rank_test(ctx, call) for call in whole.calls_named(ctx.tree, _LEVEL_SETTERS))


_LEVEL_SETTERS = frozenset({"basicConfig", "setLevel", "disable"})
