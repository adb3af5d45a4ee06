"""TD607 ddp-loader-without-distributed-sampler: a DDP script whose training loader gives every
rank the whole dataset."""

from __future__ import annotations

import ast
from bisect import bisect_left
import re
from typing import Iterator

from torchdoctor.catalog.distributed._ddp import WRAPPERS, imported_wrapper_names
from torchdoctor.catalog.sdk import (
    Context,
    Finding,
    Monitor,
    Pitfall,
    argument,
    left_none_by_every_call,
    bindings,
    shorten,
    name_words,
    imported_roots,
    index,
    scope_of,
    per_file,
)

PITFALL = Pitfall(
    code="TD607",
    name="ddp-loader-without-distributed-sampler",
    title={
        "en": "DataLoader of a DistributedDataParallel script without a DistributedSampler",
        "zh": "DistributedDataParallel 脚本中的 DataLoader 没有使用 DistributedSampler",
    },
    messages={
        "": {
            "en": "`{loader}` shuffles with no sampler, but this script wraps its model in "
            "`{wrapper}` (line {line}) and nothing in the project uses a DistributedSampler: "
            "every rank trains on the whole dataset, each in its own order; pass "
            "`sampler=DistributedSampler({dataset})` instead of `shuffle=True`",
            "zh": "`{loader}` 没有 sampler 而是用 shuffle 打乱，但这个脚本用 `{wrapper}` 包装了模型"
            "（第 {line} 行），而整个项目都没有使用 DistributedSampler：每个进程都以各自的顺序在整个"
            "数据集上训练；请用 `sampler=DistributedSampler({dataset})` 代替 `shuffle=True`",
        },
        "in-order": {
            "en": "`{loader}` has no sampler, but this script wraps its model in `{wrapper}` "
            "(line {line}) and nothing in the project uses a DistributedSampler: every rank "
            "trains on the whole dataset, batch for batch the same; pass "
            "`sampler=DistributedSampler({dataset})`",
            "zh": "`{loader}` 没有 sampler，但这个脚本用 `{wrapper}` 包装了模型（第 {line} 行），"
            "而整个项目都没有使用 DistributedSampler：每个进程都在整个数据集上训练，批次完全相同；"
            "请传入 `sampler=DistributedSampler({dataset})`",
        },
        "averaged": {
            "en": "`{loader}` shuffles with no sampler, but this script averages its gradients "
            "across ranks itself (`{wrapper}` of `.grad`, line {line}) and nothing in the project "
            "uses a DistributedSampler: every rank trains on the whole dataset, each in its own "
            "order; pass `sampler=DistributedSampler({dataset})` instead of `shuffle=True`",
            "zh": "`{loader}` 没有 sampler 而是用 shuffle 打乱，但这个脚本自己在各进程间平均梯度"
            "（对 `.grad` 调用 `{wrapper}`，第 {line} 行），而整个项目都没有使用 DistributedSampler："
            "每个进程都以各自的顺序在整个数据集上训练；请用 `sampler=DistributedSampler({dataset})` "
            "代替 `shuffle=True`",
        },
        "averaged-in-order": {
            "en": "`{loader}` has no sampler, but this script averages its gradients across ranks "
            "itself (`{wrapper}` of `.grad`, line {line}) and nothing in the project uses a "
            "DistributedSampler: every rank trains on the whole dataset, batch for batch the "
            "same; pass `sampler=DistributedSampler({dataset})`",
            "zh": "`{loader}` 没有 sampler，但这个脚本自己在各进程间平均梯度（对 `.grad` 调用 "
            "`{wrapper}`，第 {line} 行），而整个项目都没有使用 DistributedSampler：每个进程都在整个"
            "数据集上训练，批次完全相同；请传入 `sampler=DistributedSampler({dataset})`",
        },
        "sharded-evaluation": {
            "en": "`{sampler}` splits the evaluation data `{dataset}` between the ranks, and "
            "nothing in the project gathers or reduces results across ranks: each rank scores "
            "its own 1/world_size of the set (padded with repeats to split evenly); all-reduce "
            "the counts (`torch.distributed.all_reduce`) or evaluate the whole set on one rank",
            "zh": "`{sampler}` 把评估数据 `{dataset}` 切分给各个进程，而整个项目都没有在进程间"
            "收集或归约结果：每个进程只在自己那 1/world_size 的数据上（为均分还补了重复样本）计算指标；"
            "请对计数做 all-reduce（`torch.distributed.all_reduce`），或在一个进程上评估整个数据集",
        },
        "runtime": {
            "en": "rank {rank}'s first batch from this DataLoader ({dataset}, no "
            "DistributedSampler) is identical to rank {others}'s: every rank trains on the same "
            "samples in the same order; pass `sampler=DistributedSampler(dataset)` to the loader "
            "(no `shuffle=True` beside it) and call `sampler.set_epoch(epoch)` each epoch",
            "zh": "第 {rank} 号进程从这个 DataLoader（{dataset}，没有 DistributedSampler）取得的第一个"
            "批次与第 {others} 号进程的完全相同：每个进程都以相同的顺序在相同的样本上训练；请给 DataLoader "
            "传入 `sampler=DistributedSampler(dataset)`（不要同时设置 `shuffle=True`），并在每个 "
            "epoch 开始时调用 `sampler.set_epoch(epoch)`",
        },
    },
    fix_hint={
        "en": "Give the training loader `sampler=DistributedSampler(dataset)` (no `shuffle=True` "
        "beside it) and call `sampler.set_epoch(epoch)` at the start of each epoch.",
        "zh": "给训练用的 DataLoader 传入 `sampler=DistributedSampler(dataset)`（不要同时设置 "
        "`shuffle=True`），并在每个 epoch 开始时调用 `sampler.set_epoch(epoch)`。",
    },
    docs={
        "en": """
## What it catches
A `DataLoader` built with no `sampler=` or `batch_sampler=` (with `shuffle=True` or without
`shuffle`) in a file that wraps a model in `DistributedDataParallel` (or
`FullyShardedDataParallel`), or averages gradients across ranks by hand (a function reading
`.grad` calls `torch.distributed.all_reduce`), when neither the file nor any other module of its project
mentions a `DistributedSampler` (or a sampler named like one: `DistributedGroupSampler`...).
Not reported: loaders named for evaluation (`val`, `test`, `eval`... in the loader's or the
dataset's name) or built with `shuffle=False`; datasets built with the rank or the world size
(`MyDataset(rank=rank, world_size=world_size)`, `dataset.shard(...)`); projects with an
`IterableDataset` or `IterDataPipe` anywhere; a loader later handed to a call that returns it
re-wrapped (`loader = accelerator.prepare(loader)`, Opacus' `make_private`); and files that
import a framework which shards loaders itself (Accelerate, Lightning, Ray Train, Ignite,
DeepSpeed, webdataset, torchdata...).

And the other half of the mistake: a `DistributedSampler` over an evaluation set (`val`,
`test`, `eval`... in the sampler's or the dataset's name) in a project where nothing combines
what the ranks compute: no file calls `all_reduce` or `all_gather` (`allreduce` too), a
`reduce_tensor`, `reduce_dict` or `reduce_loss`-like helper, `dist.reduce` or `dist.gather`,
`gather_object`, Accelerate's `gather_for_metrics`, Lightning's `sync_dist`, or imports
torchmetrics (whose metrics gather themselves); `torch.gather`, `functools.reduce` and a
`barrier` alone (rank 0 caching the dataset while the others wait) do not count. Each rank then scores its own
1/world_size of the set, padded with repeated samples to split evenly, and the accuracy it
prints or uses to pick the best checkpoint is that shard's. Not in files that import a
framework above whose evaluation gathers the ranks' results (Lightning, Ignite, Accelerate,
mmengine, detectron2...; transformers does not count: a script building its own sampler runs
its own evaluation), nor in a file making a process group of one (`init_process_group(...,
world_size=1)`), nor for a sampler never handed to a loader or kept in a dict.

At run time (`torchdoctor run` under `torchrun`, world size above 1), the first batch a
training loader yields on each rank: a map-style `DataLoader` with no `DistributedSampler`
(neither its sampler nor its batch sampler's), iterated with gradients on. Each rank writes a
digest of that batch (shapes, dtypes and its first 64 KB of tensor bytes) to the process group's
store and, after later optimizer steps, reads the others' once they are all there; a rank whose
first batch is the same as another rank's reports it, in its own rank-tagged report. It never
calls a collective or waits on the store, and it reads the batch without changing it.

## Why is this bad?
`DistributedDataParallel` averages the gradients of the ranks; it does not split the data.
A `DataLoader` without a `DistributedSampler` hands the whole dataset to every process: with
`shuffle=True` each rank walks all of it in its own order, without shuffling every rank sees
exactly the same batches. An epoch costs `world_size` times the work it should, the learning
rate schedule and the number of steps per epoch are those of one process, and with identical
batches the extra GPUs compute the same gradient. Nothing fails, and the loss still goes down.

## Symptoms
An epoch takes as long on N GPUs as on one (or longer); `len(loader)` is the same on every rank
and equals the single-GPU count; every rank logs the same first batch (what the run-time
check compares).

## Known problems
It reads one file and the words of its project: the loader and the DDP wrapper must be in the
same file. A dataset that splits itself between ranks where this file cannot see it (its
constructor, in another module, reads the rank from the environment) or a custom sampler named
otherwise than `Distributed...Sampler` is reported. On 114 corpora (libraries, examples and
research code) it reports nothing: of their 67 files that name DDP or FSDP and a DataLoader,
those that wrap a model give its loader a sampler or hand it to a framework (Accelerate,
Opacus...), so its precision on real findings is not measured. The sharded evaluation set, on
773 code bases (libraries, research repositories, the recall sets' trees): 16 findings, all read
true by the session that wrote the reading (no independent reader has judged one yet): CMGAN,
four detection, segmentation and classification repositories of one author, MobileNet ImageNet
scripts, BERT-NER's and BERT-for-RRC's transformers-example loops; a sampler kept in a dict
(`sampler["dev"]`, whose evaluation may compute no metric) is not followed, nor one never handed
to a loader. The run-time check only sees
ranks whose first batches are identical: a loader that shuffles with a different seed on each
rank also gives every rank the whole dataset, in different orders, and is not reported at run
time. An evaluation loop that keeps a model in train mode and gradients on is compared like a
training loader. Only the first four loaders of a run are compared.

## References
- https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler
- https://pytorch.org/tutorials/intermediate/ddp_tutorial.html
""",
        "zh": """
## What it catches
在用 `DistributedDataParallel`（或 `FullyShardedDataParallel`）包装模型、或者手工在各进程间平均梯度
（某个读取 `.grad` 的函数调用了 `torch.distributed.all_reduce`）的文件里，构建 `DataLoader`
时没有传入 `sampler=` 或 `batch_sampler=`（设置了 `shuffle=True` 或没有设置 `shuffle`），而这个文件
和项目中的其他模块都没有提到 `DistributedSampler`（或名字类似的 sampler，如
`DistributedGroupSampler`）。以下情况不报告：名字表明用于评估的 DataLoader（DataLoader 或数据集的
名字里有 `val`、`test`、`eval` 等）或设置了 `shuffle=False`；用进程编号或进程数构建的数据集
（`MyDataset(rank=rank, world_size=world_size)`、`dataset.shard(...)`）；项目中任何地方有
`IterableDataset` 或 `IterDataPipe`；之后交给某个调用并被重新包装返回的 DataLoader
（`loader = accelerator.prepare(loader)`、Opacus 的 `make_private`）；以及导入了会自己切分数据的
框架（Accelerate、Lightning、Ray Train、Ignite、DeepSpeed、webdataset、torchdata 等）的文件。

还有这个错误的另一半：在一个没有任何代码合并各进程计算结果的项目里，对评估集（sampler 或数据集的名字里有
`val`、`test`、`eval` 等）使用 `DistributedSampler`。“合并”指的是：有文件调用 `all_reduce` 或 `all_gather`
（包括 `allreduce`）、`reduce_tensor`、`reduce_dict`、`reduce_loss` 之类的辅助函数、`dist.reduce` 或
`dist.gather`、`gather_object`、Accelerate 的 `gather_for_metrics`、Lightning 的 `sync_dist`，或者导入了
torchmetrics（它的指标会自己汇总）；`torch.gather`、`functools.reduce` 和单独的 `barrier`（进程 0 缓存数据集时
其他进程在等待）都不算。这时每个进程只在自己那 1/world_size 的数据上（为了均分还补了重复样本）计算指标，
打印出来、用来挑选最佳 checkpoint 的准确率都只是这一份数据的结果。导入了上述框架中会自己汇总各进程结果的框架
（Lightning、Ignite、Accelerate、mmengine、detectron2 等）的文件不报告；transformers 不算：自己构建 sampler
的脚本运行的是它自己的评估循环。创建只有一个进程的进程组（`init_process_group(..., world_size=1)`）的文件、
从未交给 DataLoader 或放在字典里的 sampler 也不报告。

运行时（在 `torchrun` 下用 `torchdoctor run`，进程数大于 1），检查每个进程上训练用 DataLoader 取出的
第一个批次：map 风格、没有 `DistributedSampler`（它的 sampler 和它的 batch sampler 里的 sampler 都不是）、
在开启梯度时遍历的 `DataLoader`。每个进程把这个批次的摘要（形状、dtype 和张量的前 64 KB 字节）写入进程组的
store，在之后的优化器 step 中等所有进程的摘要都到齐后再读取；第一个批次与其他进程相同的进程会在自己的、
标明进程编号的报告中报告。它从不调用集合通信，也从不阻塞等待 store，只读取批次而不修改它。

## Why is this bad?
`DistributedDataParallel` 对各进程的梯度取平均，但它并不切分数据。没有 `DistributedSampler` 的
`DataLoader` 会把整个数据集交给每个进程：设置 `shuffle=True` 时每个进程以各自的顺序遍历全部数据，
不打乱时每个进程看到的批次完全相同。一个 epoch 的工作量是应有的 `world_size` 倍，学习率调度和每个
epoch 的步数都和单进程一样，而批次相同时多出来的 GPU 只是在计算同一个梯度。程序不会报错，loss 也照样下降。

## Symptoms
用 N 张 GPU 跑一个 epoch 和用一张一样久（甚至更久）；每个进程上的 `len(loader)` 都相同，且等于
单卡时的数值；每个进程记录的第一个批次都一样（运行时检查比较的正是这一点）。

## Known problems
它只读一个文件和所在项目中的词：DataLoader 和 DDP 包装必须在同一个文件里。数据集以本文件看不到的
方式在进程间切分自己（另一个模块里的构造函数从环境变量读取进程编号），或自定义 sampler 的名字不是
`Distributed...Sampler` 的形式时，会被误报。在 114 个语料库（库、示例和研究代码）中它没有报告任何
问题：其中 67 个同时提到 DDP 或 FSDP 和 DataLoader 的文件里，包装了模型的都给 DataLoader 传入了
sampler，或把它交给了训练框架（Accelerate、Opacus 等），因此它在真实问题上的精确率尚未测得。被切分的评估集：
在 773 个代码库（库、研究代码、召回集的代码树）上报告 16 处，由编写这条规则的会话逐一阅读（尚无独立读者评判过），
全部属实（CMGAN、同一作者的四个检测、分割和分类仓库、MobileNet 的 ImageNet 脚本、BERT-NER 和 BERT-for-RRC 中照搬
transformers 示例的循环）；放在字典里的 sampler（`sampler["dev"]`，其评估未必计算指标）不追踪，从未交给
DataLoader 的 sampler 也不报告。
运行时检查只能发现第一个批次完全相同的进程：在每个进程上用不同种子打乱的 DataLoader 同样让每个进程
遍历整个数据集（只是顺序不同），运行时不会报告。保持模型处于训练模式并开启梯度的评估循环会像训练用的
DataLoader 一样被比较。每次运行只比较前四个 DataLoader。

## References
- https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler
- https://pytorch.org/tutorials/intermediate/ddp_tutorial.html
""",
    },
    example="""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("gloo")
dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(dataset, batch_size=8, shuffle=True)
model = DDP(torch.nn.Linear(4, 1))
for x, y in loader:
    torch.nn.functional.mse_loss(model(x), y).backward()
""",
    use_instead="""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset))
model = DDP(torch.nn.Linear(4, 1))
for x, y in loader:
    torch.nn.functional.mse_loss(model(x), y).backward()
""",
)

LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
# A sampler that splits the data between ranks, under any of the names projects give it.
_SHARDING_SAMPLER = re.compile(r"Distributed\w{0,40}Sampler")
# Datasets that are iterated, not sampled: they split themselves between ranks, if at all.
_ITERABLE_DATASET = re.compile(r"Iter(?:able)?Data(?:set|Pipe)")
# Packages that shard a loader themselves (re-wrapping it with their own sampler), or whose
# datasets are iterable.
_FRAMEWORKS = frozenset(
    {
        "accelerate",
        "lightning",
        "lightning_fabric",
        "pytorch_lightning",
        "ray",
        "ignite",
        "deepspeed",
        "horovod",
        "composer",
        "catalyst",
        "mmengine",
        "mmcv",
        "detectron2",
        "fairseq",
        "transformers",
        "webdataset",
        "torchdata",
        "opacus",
    }
)
# Words of a loader's or dataset's name that say it is not for training: every rank evaluating
# the whole set gives the same answer N times, which is wasteful but not wrong.
_NOT_TRAINING = frozenset(
    {"val", "valid", "validation", "test", "eval", "evaluation", "dev", "inference", "predict"}
)
# Words that say a dataset is built for one rank's share.
_PER_RANK = frozenset({"rank", "ranks", "world", "shard", "shards", "replicas", "partition"})


@PITFALL.static(ast.Call, names={"DataLoader"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if ctx.qualname(call.func) not in LOADERS or not _samples_by_default(call):
        return
    if not _may_need_a_sampler(ctx):
        return
    wrapper = _ddp_wrapper(ctx, None)
    averaged = wrapper is None
    if averaged:  # no wrapper: the gradients may be averaged by hand (`dist.all_reduce(p.grad)`)
        wrapper = _gradients_all_reduced(ctx)
    if wrapper is None or _imports_a_framework(ctx):
        return
    if not averaged:  # name the wrapping of this function's model, when it has one
        wrapper = _ddp_wrapper(ctx, ctx.enclosing_function()) or wrapper
    dataset = argument(call, 0, "dataset")
    if dataset is None or isinstance(dataset, ast.Starred):
        return
    loader, target = _loader_name(call, ctx)
    if _for_evaluation([ctx.text(dataset), loader or ""]) or _per_rank(dataset, ctx):
        return
    if target is not None and _rewrapped_key(target, ctx) in _rewrapped(ctx):
        return
    variant = "" if _shuffles(call) else "in-order"
    if averaged:
        variant = "averaged" if not variant else "averaged-in-order"
    yield ctx.finding(
        PITFALL,
        call,
        variant,
        loader=loader or ctx.text(call.func),
        wrapper=wrapper.func.attr if isinstance(wrapper.func, ast.Attribute) else wrapper.func.id,
        line=wrapper.lineno,
        dataset=shorten(ctx.text(dataset), 40),
    )


@PITFALL.static(ast.Call, names={"DistributedSampler"})
def check_sharded_evaluation(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    """A DistributedSampler over an evaluation set, in a project where nothing combines the
    ranks' results: every rank reports the metric of its own shard (the ImageNet scripts of
    MobileNetV3-pytorch and mobilenetv2.pytorch)."""
    if not _may_shard_an_evaluation(ctx):
        return
    if (ctx.qualname(call.func) or "").rpartition(".")[0] not in _SAMPLER_MODULES:
        return
    dataset = argument(call, 0, "dataset")
    if dataset is None or isinstance(dataset, ast.Starred):
        return
    sampler, target = _loader_name(call, ctx)
    if not _for_evaluation([ctx.text(dataset), sampler or ""]):
        return
    if isinstance(target, ast.Name) and not _read(ctx, target.id):
        return  # made, then never given to a loader (mongolian-speech-recognition's)
    if isinstance(dataset, ast.Name) and _never_given(dataset.id, ctx):
        return  # `get_dataloader(opt, train_dataset, None)`: no evaluation set comes (PVD's)
    statement = ctx.parent()
    if isinstance(statement, ast.Assign) and target is None and statement.value is call:
        return  # kept in a dict (`sampler["dev"] = ...`): where it goes is not followed
    yield ctx.finding(
        PITFALL,
        call,
        "sharded-evaluation",
        sampler=sampler or ctx.text(call.func),
        dataset=shorten(ctx.text(dataset), 40),
    )


# Where torch keeps DistributedSampler.
_SAMPLER_MODULES = frozenset({"torch.utils.data", "torch.utils.data.distributed"})


@per_file
def _may_shard_an_evaluation(ctx: Context) -> bool:
    """The project is known, nothing in it combines the ranks' results, the file imports no
    framework that gathers them, and it makes no process group of one (fast-bert's
    `init_process_group(..., rank=0, world_size=1)`: a sampler over one rank splits nothing)."""
    project = ctx.project
    return (
        project.known
        and not project.has("combines ranks")
        and not _imports_syncing(ctx)
        and _ONE_RANK.search(ctx.source) is None
    )


# `init_process_group(backend, ..., world_size=1)` (not `world_size = 1`, a fallback assignment).
_ONE_RANK = re.compile(r"init_process_group\([^()]{0,400}?\bworld_size\s*=\s*1\b")


def _never_given(parameter: str, ctx: Context) -> bool:
    """`parameter` of the enclosing module function stays None in every call of the file."""
    function = ctx.enclosing_function()
    return (
        isinstance(function, ast.FunctionDef)
        and function in ctx.tree.body
        and left_none_by_every_call(ctx, function, parameter)
    )


def _read(ctx: Context, name: str) -> bool:
    """`name` is read somewhere in the scope that binds it (a sampler handed to a loader)."""
    scope = scope_of(name, ctx)
    return any(isinstance(node.ctx, ast.Load) for node in index(ctx).names_in(scope, name))


# Frameworks whose evaluation or metrics gather the ranks' results themselves. (Not
# transformers: a script that builds its own DistributedSampler runs its own evaluation loop,
# as the old examples did, importing only configs and tokenizers.)
_SYNCING = _FRAMEWORKS - {
    "transformers",
    "webdataset",
    "torchdata",
    "opacus",
    "horovod",
    "deepspeed",
}


@per_file
def _imports_syncing(ctx: Context) -> bool:
    return bool(imported_roots(ctx) & _SYNCING)


def _samples_by_default(call: ast.Call) -> bool:
    """The loader draws with its default sampler (sequential or, with `shuffle=True`, random):
    no sampler given, by keyword, by position (the fourth) or inside `**kwargs`; and it is not
    told `shuffle=False` (an evaluation loader, as a rule)."""
    if len(call.args) > 3 or any(
        k.arg in (None, "sampler", "batch_sampler") for k in call.keywords
    ):
        return False
    shuffle = _shuffle(call)
    return not (isinstance(shuffle, ast.Constant) and shuffle.value is False)


def _shuffle(call: ast.Call) -> ast.expr | None:
    return argument(call, 2, "shuffle")


def _shuffles(call: ast.Call) -> bool:
    """Given `shuffle` other than a literal false (`shuffle=True`, `shuffle=args.shuffle`)."""
    return _shuffle(call) is not None


@per_file
def _ddp_wrapper(ctx: Context, function: ast.AST | None) -> ast.Call | None:
    """The first call in `function` (None: the file) that wraps a model in DDP or FSDP: the
    class by its own name through a module (`nn.parallel.DistributedDataParallel(...)`), or by
    the name an import gave it (`from torch.nn.parallel import DistributedDataParallel as
    DDP`)."""
    names = imported_wrapper_names(ctx)
    for found in index(ctx).calls_named(function or ctx.tree, names | WRAPPERS):
        func = found.func
        if isinstance(func, ast.Name) and func.id in names:
            return found
        if isinstance(func, ast.Attribute) and func.attr in WRAPPERS and _imported_root(func, ctx):
            return found
    return None


@per_file
def _gradients_all_reduced(ctx: Context) -> ast.Call | None:
    """The first `torch.distributed.all_reduce(...)` in a function that reads `.grad`: data
    parallel training written by hand (pytorch-distributed-example's `average_gradients`)."""
    found = index(ctx)
    for call in found.calls_named(ctx.tree, ("all_reduce",)):
        if ctx.qualname(call.func) != "torch.distributed.all_reduce":
            continue
        function = found.scopes[found.number[call]]
        if function is None or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        start, end = found.span(function)
        grads = found.attributes.get("grad", [])
        first = bisect_left(grads, start)
        if first < len(grads) and grads[first] < end:
            return call
    return None


def _imported_root(func: ast.Attribute, ctx: Context) -> bool:
    root: ast.expr = func
    while isinstance(root, ast.Attribute):
        root = root.value
    return isinstance(root, ast.Name) and root.id in ctx.imported


@per_file
def _may_need_a_sampler(ctx: Context) -> bool:
    """The file names a DDP or FSDP class (or all-reduces), and neither it nor its project
    shards data with a DistributedSampler or has iterable datasets: read from the text, before
    any parse work."""
    source = ctx.source
    return (
        (any(wrapper in source for wrapper in WRAPPERS) or "all_reduce" in source)
        and not _SHARDING_SAMPLER.search(source)
        and not _ITERABLE_DATASET.search(source)
        and not ctx.project.has("DistributedSampler")
        and not ctx.project.has("IterableDataset")
    )


@per_file
def _imports_a_framework(ctx: Context) -> bool:
    return bool(imported_roots(ctx) & _FRAMEWORKS)


def _loader_name(call: ast.Call, ctx: Context) -> tuple[str | None, ast.expr | None]:
    """The name the loader is assigned to (`train_loader = DataLoader(...)`, `self.loader`),
    and the target holding it."""
    statement = ctx.parent()
    if (
        isinstance(statement, ast.Assign)
        and statement.value is call
        and len(statement.targets) == 1
    ):
        target = statement.targets[0]
        if isinstance(target, ast.Name):
            return target.id, target
        if isinstance(target, ast.Attribute):
            return target.attr, target
    return None, None


def _for_evaluation(texts: list[str]) -> bool:
    return any(_NOT_TRAINING.intersection(name_words(text)) for text in texts)


def _per_rank(dataset: ast.expr, ctx: Context) -> bool:
    """The dataset is built for one rank's share: its expression, or an assignment of a name
    in it, mentions the rank, the world size or shards (`Subset(full, indices)` with `indices`
    counted from the rank)."""
    if _PER_RANK.intersection(name_words(ctx.text(dataset))):
        return True
    if type(dataset) is ast.Name:  # most loaders: `DataLoader(train_set, ...)`
        names = {dataset.id}
    else:
        names = {node.id for node in ast.walk(dataset) if isinstance(node, ast.Name)}
    return any(_bound_per_rank(ctx, scope_of(name, ctx), name) for name in names)


@per_file
def _bound_per_rank(ctx: Context, scope: ast.AST, name: str) -> bool:
    """An assignment of `name` in `scope` mentions the rank, the world size or shards (once per
    name: every loader of a script may read the same `dataset`)."""
    found = bindings(ctx, scope, name) or ()
    return any(
        b.value is not None and _PER_RANK.intersection(name_words(ctx.text(b.value))) for b in found
    )


@per_file
def _rewrapped(ctx: Context) -> frozenset[tuple]:
    """The targets assigned the result of a call that was given them (see `_rewrapped_key`):
    `loader = prepare(loader)`, `model, opt, loader = engine.make_private(data_loader=loader)`."""
    found: set[tuple] = set()
    for node in index(ctx).everywhere(ast.Assign):
        if not isinstance(node.value, ast.Call):
            continue
        given = {_last_name(arg) for arg in node.value.args}
        given |= {_last_name(k.value) for k in node.value.keywords}
        for target in node.targets:
            parts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
            found.update(
                _rewrapped_key(part, ctx)
                for part in parts
                if isinstance(part, (ast.Name, ast.Attribute)) and _last_name(part) in given
            )
    return frozenset(found)


def _rewrapped_key(target: ast.Name | ast.Attribute, ctx: Context) -> tuple:
    """A plain name in its own scope (function, class or module); an attribute by its name
    alone (`self.loader` is re-wrapped in another method than the one that built it)."""
    if isinstance(target, ast.Attribute):
        return ("attribute", target.attr)
    whole = index(ctx)
    return (whole.scopes[whole.number[target]], target.id)


def _last_name(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


# ---- at run time -------------------------------------------------------------------------------

# Bytes of a first batch that go into its digest: enough to tell two batches apart.
DIGEST_BYTES = 64 * 1024
# Loaders compared per run (by the order of their first batches, the same on every rank).
MAX_LOADERS = 4
_KEY = "torchdoctor/td607/{loader}/{rank}"


@PITFALL.monitor
class SameFirstBatchOnEveryRank(Monitor):
    """Under torch.distributed (world size > 1), ranks whose first training batch from a
    map-style DataLoader without a DistributedSampler is the same.

    Each rank writes a digest of that batch (its first 64 KB of tensor bytes, with shapes and
    dtypes) to the default process group's store, and later reads the others' when they are
    all there (`store.check` first: never a blocking `get`, never a collective, so ranks that
    diverge cannot hang on it). Checked after optimizer steps 1, 2, 4, 8... from the batch, at
    later first batches, and at the end while the process group lives. Loaders iterated with
    gradients off or with every model in eval mode (evaluation) are skipped."""

    def setup(self) -> None:
        import weakref

        self._loaders: weakref.WeakSet = weakref.WeakSet()  # loaders met, digested or not
        self._seen = 0  # loaders digested, in order
        self._pending: list[dict] = []  # loaders whose peers' digests are not all read yet
        self._steps = 0

    def on_first_batch(self, loader, batch) -> None:
        self._compare()
        if loader in self._loaders:  # a later epoch: only an iteration's first batch is compared
            return
        self._loaders.add(loader)
        if self._seen >= MAX_LOADERS or not _shares_data(loader, self.session.models):
            return
        group = _group()
        if group is None:
            return
        store, rank, world = group
        digest = batch_digest(batch)
        if digest is None:
            return
        number, self._seen = self._seen, self._seen + 1
        try:
            store.set(_KEY.format(loader=number, rank=rank), digest)
        except Exception:  # a store that fails is no finding; never the run's failure
            return
        self._pending.append(
            {
                "number": number,
                "store": store,
                "rank": rank,
                "world": world,
                "digest": digest,
                "at": self.session.where(),
                "step": self.session.step,
                "dataset": type(loader.dataset).__name__,
                "due": 1,
                "waited": 0,
            }
        )

    def after_step(self, optimizer) -> None:
        if self._pending:
            self._steps += 1
            self._compare(stepped=True)

    def teardown(self) -> None:
        import torch.distributed as dist

        if self._pending and dist.is_available() and dist.is_initialized():
            self._compare()
        self._pending = []

    def _compare(self, stepped: bool = False) -> None:
        for entry in list(self._pending):
            if stepped:
                entry["waited"] += 1
                if entry["waited"] < entry["due"]:
                    continue
                entry["due"] *= 2  # steps 1, 2, 4, 8...: a rank that never comes costs little
            same = _peers_with(entry)
            if same is None:
                continue
            self._pending.remove(entry)
            if same:
                self.report(
                    entry["number"],
                    "runtime",
                    at=entry["at"],
                    at_step=entry["step"],
                    rank=entry["rank"],
                    others=", ".join(str(r) for r in same),
                    dataset=entry["dataset"],
                )


def _shares_data(loader, models) -> bool:
    """The loader may hand every rank the same data: map-style, no DistributedSampler (its own
    or its batch sampler's), iterated for training (gradients on, some model in train mode)."""
    import torch
    from torch.utils.data import IterableDataset
    from torch.utils.data.distributed import DistributedSampler

    if isinstance(loader.dataset, IterableDataset):
        return False
    samplers = (loader.sampler, getattr(loader.batch_sampler, "sampler", None))
    if any(isinstance(s, DistributedSampler) for s in samplers):
        return False
    if not torch.is_grad_enabled():
        return False
    return not models or any(model.training for model in models)


def _group() -> tuple | None:
    """(store, rank, world size) of the default process group, when it spans several ranks."""
    import torch.distributed as dist

    try:
        if not (dist.is_available() and dist.is_initialized()):
            return None
        world = dist.get_world_size()
        if world < 2:
            return None
        from torch.distributed.distributed_c10d import _get_default_store

        return _get_default_store(), dist.get_rank(), world
    except Exception:
        return None


def batch_digest(batch) -> bytes | None:
    """A digest of a batch's tensors (shapes, dtypes, and their first DIGEST_BYTES bytes);
    None when it holds no tensor. Reads, never changes: no RNG, no copy the batch keeps."""
    import hashlib

    tensors: list = []
    _collect(batch, tensors, 0)
    if not tensors:
        return None
    digest = hashlib.blake2b(digest_size=16)
    budget = DIGEST_BYTES
    for tensor in tensors:
        digest.update(f"{tuple(tensor.shape)}{tensor.dtype};".encode())
        if budget <= 0:
            continue
        flat = tensor.detach().reshape(-1)
        count = min(flat.numel(), max(1, budget // max(1, tensor.element_size())))
        data = _bytes(flat[:count])
        budget -= len(data)
        digest.update(data)
    return digest.digest()


def _collect(batch, found: list, depth: int) -> None:
    if hasattr(batch, "element_size") and hasattr(batch, "numel") and hasattr(batch, "detach"):
        found.append(batch)
    elif depth < 3 and isinstance(batch, (list, tuple)):
        for item in batch[:8]:
            _collect(item, found, depth + 1)
    elif depth < 3 and isinstance(batch, dict):
        for key in sorted(batch, key=str)[:8]:
            _collect(batch[key], found, depth + 1)


def _bytes(tensor) -> bytes:
    import torch

    part = tensor.to("cpu").contiguous()
    if part.is_quantized or part.is_complex() or part.dtype == torch.bool:
        return str(part.tolist()).encode()
    raw = part.view(torch.uint8)
    try:
        return raw.numpy().tobytes()
    except Exception:  # torch without numpy
        return bytes(raw.tolist())


def _peers_with(entry: dict) -> list[int] | None:
    """The other ranks whose digest of this loader equals this rank's; None while some rank's
    digest is not in the store yet (or the store cannot answer)."""
    store, number, world = entry["store"], entry["number"], entry["world"]
    keys = [_KEY.format(loader=number, rank=r) for r in range(world) if r != entry["rank"]]
    try:
        if not store.check(keys):
            return None
        return [
            r
            for r in range(world)
            if r != entry["rank"]
            and store.get(_KEY.format(loader=number, rank=r)) == entry["digest"]
        ]
    except Exception:
        return None
