"""TD604 sampler-set-epoch-missing: a DistributedSampler that is never told the epoch."""

from __future__ import annotations

import ast
import weakref
from typing import Iterator

from torchdoctor.catalog.sdk import (
    Context,
    Finding,
    Monitor,
    Pitfall,
    block_names,
    file_of_tests,
    imported_roots,
    index,
    index_of,
    name_words,
    per_file,
)

PITFALL = Pitfall(
    code="TD604",
    name="sampler-set-epoch-missing",
    title={
        "en": "DistributedSampler without `set_epoch` in the epoch loop",
        "zh": "epoch 循环里没有调用 DistributedSampler 的 `set_epoch`",
    },
    messages={
        "": {
            "en": "`{loader}` uses a DistributedSampler but this epoch loop never calls "
            "`{sampler}.set_epoch(...)`: every epoch gets the same shuffle order",
            "zh": "`{loader}` 使用了 DistributedSampler，但这个 epoch 循环里没有调用 "
            "`{sampler}.set_epoch(...)`：每个 epoch 的打乱顺序都一样",
        },
        "nowhere": {
            "en": "this DistributedSampler shuffles, but nothing in the project calls "
            "`set_epoch(...)`: every epoch gets the same order; call `sampler.set_epoch(epoch)` "
            "at the start of each epoch",
            "zh": "这个 DistributedSampler 会打乱顺序，但整个项目都没有调用 `set_epoch(...)`："
            "每个 epoch 的顺序都一样；请在每个 epoch 开始时调用 `sampler.set_epoch(epoch)`",
        },
        "runtime": {
            "en": "a shuffling DistributedSampler is iterated again with epoch {epoch}, the same "
            "as its previous iteration: this epoch repeats the previous one's order (every "
            "epoch does); call `sampler.set_epoch(epoch)` before each epoch",
            "zh": "一个会打乱顺序的 DistributedSampler 再次以 epoch {epoch} 被遍历，与上一次遍历相同："
            "这个 epoch 重复了上一个 epoch 的顺序（每个 epoch 都如此）；请在每个 epoch 之前调用 "
            "`sampler.set_epoch(epoch)`",
        },
    },
    fix_title={
        "en": "Call `set_epoch(epoch)` at the start of each epoch",
        "zh": "在每个 epoch 开始时调用 `set_epoch(epoch)`",
    },
    fix_applicability="unsafe",
    docs={
        "en": """
## What it catches
A `DistributedSampler` (with the default `shuffle=True`) given to a `DataLoader` that is
iterated inside an epoch loop, when the file never calls `set_epoch` (neither
`sampler.set_epoch(epoch)` nor `loader.sampler.set_epoch(epoch)`). The sampler, the loader and
the loops must be in the same function or at module level. When the epoch loop is elsewhere (the
loader made in a `prepare_dataloaders()` the script calls), the sampler itself is reported if
nothing in the whole project calls `set_epoch`, it feeds training (no `val`/`test`/`eval` in its
names), and no training framework that sets the epoch itself is imported (Lightning, Accelerate,
Transformers, Ignite, DeepSpeed, fairseq, detectron2, MMEngine...). A loader factory that its
own file never calls is a library's, left to its callers; one that only the file's evaluation
functions call (`evaluate_fid`, `validate`: a fixed subset of images for a metric) feeds no
training. A file that trains in one pass over its loader (no loop over a loader inside another
loop, the training loop's function called outside any loop: a dataset as long as every epoch
together, the epoch counted from the batch index) draws the order once: nothing to set. Nor is
a sampler of a file of tests (`test_*.py`, one under `tests/`) whose epoch loop is elsewhere.

## Why is this bad?
`DistributedSampler` shuffles with a generator seeded by `seed + epoch`, and `epoch` is only
changed by `set_epoch`. Without the call, every epoch uses the permutation of epoch 0: each
rank sees exactly the same samples in the same order, epoch after epoch. Nothing fails; the
model just trains worse than it should, which is hard to trace back.

## Fix safety
The fix inserts `set_epoch(<loop variable>)` as the first statement of the epoch loop, guarded
by `is not None` when the sampler is only made on some runs. It is unsafe: the data order of
every epoch after the first changes, so results will no longer match earlier runs, and the
loop variable is assumed to count epochs.

## References
- https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler
""",
        "zh": """
## What it catches
把 `DistributedSampler`（默认 `shuffle=True`）交给 `DataLoader`，并在 epoch 循环里遍历这个 DataLoader，
而整个文件都没有调用 `set_epoch`（既没有 `sampler.set_epoch(epoch)`，也没有
`loader.sampler.set_epoch(epoch)`）。sampler、DataLoader 和循环需要在同一个函数里，或都在模块顶层。
epoch 循环在别处时（DataLoader 由脚本调用的 `prepare_dataloaders()` 创建），如果整个项目都没有调用
`set_epoch`、这个 sampler 用于训练（名字里没有 `val`/`test`/`eval`），并且没有导入会自己设置 epoch 的
训练框架（Lightning、Accelerate、Transformers、Ignite、DeepSpeed、fairseq、detectron2、MMEngine 等），
就在 sampler 处报告。所在文件自己从不调用的 DataLoader 工厂函数属于库，留给它的调用者；
只被本文件的评估函数（`evaluate_fid`、`validate`：为计算指标取的一组固定图片）调用的工厂函数不用于训练。
如果文件只对 DataLoader 遍历一遍来训练（没有哪个遍历 DataLoader 的循环嵌在另一个循环里，训练循环所在的函数
也不在循环中被调用：数据集的长度覆盖了所有 epoch，epoch 由 batch 序号算出），顺序只抽取一次，无需设置。
epoch 循环在别处时，测试文件（`test_*.py`、`tests/` 下的文件）中的 sampler 也不报告。

## Why is this bad?
`DistributedSampler` 用 `seed + epoch` 作为随机种子来打乱数据，而 `epoch` 只有 `set_epoch` 会修改。
不调用它，每个 epoch 用的都是第 0 个 epoch 的排列：每个进程一轮又一轮地以完全相同的顺序看到完全相同的样本。
程序不会报错，只是模型训练得比应有的差，而且很难查到原因。

## Fix safety
修复会在 epoch 循环体的第一行插入 `set_epoch(<循环变量>)`；如果 sampler 只在部分情况下创建，
会加上 `is not None` 判断。它是不安全的：第一个 epoch 之后每个 epoch 的数据顺序都会改变，
结果不再与之前的运行一致；而且它假定循环变量就是 epoch 编号。

## References
- https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler
""",
    },
    example="""
import torch
from torch.utils.data import DataLoader, DistributedSampler

dataset = torch.utils.data.TensorDataset(torch.randn(64, 4))
sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=8, sampler=sampler)
for epoch in range(10):
    for (batch,) in loader:
        pass
""",
    use_instead="""
import torch
from torch.utils.data import DataLoader, DistributedSampler

dataset = torch.utils.data.TensorDataset(torch.randn(64, 4))
sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=8, sampler=sampler)
for epoch in range(10):
    sampler.set_epoch(epoch)
    for (batch,) in loader:
        pass
""",
)

SAMPLERS = frozenset(
    {"torch.utils.data.distributed.DistributedSampler", "torch.utils.data.DistributedSampler"}
)
LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
LOOPS = (ast.For, ast.AsyncFor)
# Wrappers a loader is often iterated through: `enumerate(loader)`, `tqdm(loader)`.
ITERATION_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "zip"})


@PITFALL.static(ast.Call, names={"DistributedSampler"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if ctx.qualname(call.func) not in SAMPLERS or _no_shuffle(call):
        return
    if _calls_set_epoch(ctx):  # set somewhere in the file, perhaps through a helper: trust it
        return
    located = ctx.statement_block()
    found = _sampler_and_loader(call, ctx, *located) if located is not None else None
    if found is not None:
        block = located[0]
        sampler, maybe_none, loader, loader_index = found
        for position, _ in block_names(ctx, block).mentions_after(loader, loader_index):
            loop = block[position]
            if isinstance(loop, LOOPS) and _iterates(loop, loader, ctx):
                target = sampler or f"{loader}.sampler"
                yield ctx.finding(
                    PITFALL,
                    loop,
                    end_node=loop.iter,
                    loader=loader,
                    sampler=target,
                    fix=_fix(loop, target, maybe_none, ctx),
                )
                return
    # The epoch loop is elsewhere (another function, another file): then nothing in the
    # whole project may call `set_epoch`, for a sampler that feeds training, in code that no
    # training framework drives (they call `set_epoch` themselves).
    if (
        ctx.project.known
        and not ctx.project.calls_method("set_epoch")
        and _for_training(call, ctx)
        and _used_in_this_program(ctx)
        and not _framework_imported(ctx)
        and not _trains_in_one_pass(ctx)
        and not file_of_tests(ctx)  # a test's loader (tianshou's finite environments)
    ):
        yield ctx.finding(PITFALL, call, "nowhere")


# Words of a sampler's or dataset's name that say it is not for training: its order does not
# matter there.
_NOT_TRAINING = frozenset({"val", "valid", "validation", "test", "eval", "dev", "inference"})
# ... and words of a function's name that say it evaluates.
_EVALUATING = _NOT_TRAINING | {"evaluate", "evaluation", "validate", "infer", "predict", "metric"}
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Packages whose training loops call `set_epoch` on a loader's DistributedSampler themselves.
_FRAMEWORKS = frozenset(
    {
        "lightning",
        "pytorch_lightning",
        "accelerate",
        "transformers",
        "ignite",
        "deepspeed",
        "fairseq",
        "detectron2",
        "mmengine",
        "mmcv",
        "composer",
        "catalyst",
    }
)


def _for_training(call: ast.Call, ctx: Context) -> bool:
    statement = ctx.parent()
    texts = [ctx.text(call.args[0])] if call.args else []
    if isinstance(statement, ast.Assign):
        texts += [ctx.text(target) for target in statement.targets]
    return not any(_NOT_TRAINING.intersection(name_words(text)) for text in texts)


def _used_in_this_program(ctx: Context) -> bool:
    """The sampler is made at the top of a script, or in a function this file calls to train:
    not in a library's loader factory, whose callers (elsewhere) may step the epoch, nor in one
    that only evaluation functions of the file call (a fixed subset of images for a metric:
    its order does not matter)."""
    function = ctx.enclosing_function()
    if function is None:
        return True
    if function.name == "__init__":
        # A class's constructor runs where the class is called (brevitas' speech data layer,
        # built by a validation script): `super().__init__()` calls are other classes'.
        owner = ctx.enclosing_class()
        return owner is not None and _called_to_train(ctx, owner.name)
    return _called_to_train(ctx, function.name)


@per_file
def _called_to_train(ctx: Context, name: str) -> bool:
    whole = index(ctx)
    scopes, number = whole.scopes, whole.number
    for call in whole.calls_named(ctx.tree, (name,)):
        caller = scopes[number[call]]
        if not isinstance(caller, _FUNCTIONS) or not _EVALUATING.intersection(
            name_words(caller.name)
        ):
            return True
    return False


@per_file
def _trains_in_one_pass(ctx: Context) -> bool:
    """The file trains in one pass over its loader: no loop of the file runs a loop over a name
    inside another loop, and a loop over a name that steps or calls `backward` runs where the
    file calls it outside any loop (pysot's `train`: one pass over a dataset as long as all the
    epochs, the epoch counted from the batch index). The sampler's order is drawn once there,
    and `set_epoch` would change nothing."""
    whole = index(ctx)
    parents = whole.parents
    trains = False
    read: set[ast.AST] = set()  # the functions whose calls were read
    for loop in whole.everywhere(*LOOPS):
        if not _over_a_name(loop.iter):
            continue
        if _inside_a_loop(loop, parents):
            return False  # an epoch loop, here or in a function this file repeats
        if not whole.calls_named(loop, ("backward", "step")):
            continue
        function = whole.runs_in(loop)
        if isinstance(function, _FUNCTIONS) and function not in read:
            read.add(function)
            calls = [
                call
                for call in whole.calls_named(ctx.tree, (function.name,))
                if isinstance(call.func, ast.Name)
            ]
            if not calls or any(_inside_a_loop(call, parents) for call in calls):
                return False  # called from elsewhere, or once per epoch
        trains = True
    return trains


def _over_a_name(iterable: ast.AST) -> bool:
    """`name`, or `name` wrapped as loaders are iterated: `enumerate(name)`, `tqdm(name)`."""
    while (
        isinstance(iterable, ast.Call)
        and isinstance(iterable.func, ast.Name)
        and iterable.func.id in ITERATION_WRAPPERS
        and iterable.args
    ):
        iterable = iterable.args[0]
    return isinstance(iterable, ast.Name)


def _inside_a_loop(node: ast.AST, parents) -> bool:
    """`node` runs inside a loop of its function (or of the module's top level)."""
    parent = parents.get(node)
    while parent is not None and not isinstance(parent, (*_FUNCTIONS, ast.Lambda, ast.ClassDef)):
        if isinstance(parent, (*LOOPS, ast.While)):
            return True
        parent = parents.get(parent)
    return False


@per_file
def _framework_imported(ctx: Context) -> bool:
    return bool(imported_roots(ctx) & _FRAMEWORKS)


def _no_shuffle(call: ast.Call) -> bool:
    return any(
        k.arg == "shuffle" and isinstance(k.value, ast.Constant) and k.value.value is False
        for k in call.keywords
    )


@per_file
def _calls_set_epoch(ctx: Context) -> bool:
    return any(node.attr == "set_epoch" for node in index(ctx).everywhere(ast.Attribute))


def _sampler_and_loader(call: ast.Call, ctx: Context, block: list[ast.stmt], index: int):
    """(sampler name or None, sampler may be None, loader name, index of the loader's statement)."""
    statement = block[index]
    if not (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
    ):
        return None
    name = statement.targets[0].id
    value = statement.value
    if _is_loader_call(value, ctx) and any(
        k.arg == "sampler" and k.value is call for k in value.keywords
    ):
        return None, False, name, index  # `DataLoader(ds, sampler=DistributedSampler(ds))`
    maybe_none = (
        isinstance(value, ast.IfExp) and value.body is call
    )  # `... if distributed else None`
    if value is not call and not maybe_none:
        return None
    for later, _ in block_names(ctx, block).mentions_after(name, index):
        loader = block[later]
        if not (
            isinstance(loader, ast.Assign)
            and len(loader.targets) == 1
            and isinstance(loader.targets[0], ast.Name)
        ):
            continue
        if loader.targets[0].id == name:
            return None  # the sampler name is rebound before any loader uses it
        if _is_loader_call(loader.value, ctx) and any(
            k.arg == "sampler" and isinstance(k.value, ast.Name) and k.value.id == name
            for k in loader.value.keywords
        ):
            return name, maybe_none, loader.targets[0].id, later
    return None


def _is_loader_call(value: ast.AST, ctx: Context) -> bool:
    return isinstance(value, ast.Call) and ctx.qualname(value.func) in LOADERS


def _iterates(loop: ast.For | ast.AsyncFor, loader: str, ctx: Context) -> bool:
    """A `for` in the body of `loop` (nested blocks included) iterates `loader`."""
    found = index_of(ctx, loop)
    tree_parents = found.parents
    for name in found.names_in(loop, loader):
        inner = _loop_iterating(name, tree_parents)
        if inner is not None and inner is not loop and _in_body(inner, loop, tree_parents, ctx):
            return True
    return False


def _loop_iterating(name: ast.Name, parents: dict) -> ast.AST | None:
    """The loop whose iterable is `name`, perhaps wrapped: `enumerate(name)`, `tqdm(name)`."""
    expr, parent = name, parents.get(name)
    while (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Name)
        and parent.func.id in ITERATION_WRAPPERS
        and parent.args
        and parent.args[0] is expr
    ):
        expr, parent = parent, parents.get(parent)
    return parent if isinstance(parent, LOOPS) and parent.iter is expr else None


def _in_body(node: ast.AST, loop: ast.AST, parents: dict, ctx: Context) -> bool:
    """`node` lies in the body of `loop` (not in its `else:` block)."""
    while parents.get(node) is not loop:
        node = parents[node]
    located = ctx.block_position(node, loop)
    return located is not None and located[0] is loop.body


def _fix(loop: ast.For | ast.AsyncFor, sampler: str, maybe_none: bool, ctx: Context):
    first = loop.body[0]
    if not isinstance(loop.target, ast.Name) or first.lineno == loop.lineno:
        return None
    line = ctx.lines[first.lineno - 1]
    indent = line[: len(line) - len(line.lstrip())]
    call = f"{sampler}.set_epoch({loop.target.id})"
    if maybe_none:
        call = f"if {sampler} is not None:\n{indent}    {call}"
    start = ctx.offset(first.lineno, 0)
    return ctx.fix(PITFALL, "unsafe", ctx.edit(start, start, f"{indent}{call}\n"))


# ---- at run time -------------------------------------------------------------------------------


@PITFALL.monitor
class SameEpochAgain(Monitor):
    """A shuffling DistributedSampler iterated with the epoch value of its previous iteration.

    Its order is a function of `seed + epoch` alone, so the same epoch twice is the same order
    twice. The sampler is the loader's own or the one inside its batch sampler."""

    def setup(self) -> None:
        self._epochs = weakref.WeakKeyDictionary()  # sampler -> epoch of its last iteration

    def on_dataloader_iter(self, loader) -> None:
        from torch.utils.data.distributed import DistributedSampler

        sampler = loader.sampler
        if not isinstance(sampler, DistributedSampler):
            sampler = getattr(loader.batch_sampler, "sampler", None)
            if not isinstance(sampler, DistributedSampler):
                return
        if not sampler.shuffle:
            return
        previous = self._epochs.get(sampler)
        self._epochs[sampler] = sampler.epoch
        if previous is not None and previous == sampler.epoch:
            where = self.session.where()
            self.report(where, "runtime", at=where, epoch=sampler.epoch)
