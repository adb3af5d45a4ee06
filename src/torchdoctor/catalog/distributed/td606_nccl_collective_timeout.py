"""TD606 nccl-collective-timeout: ranks that stop calling the same collectives."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Pitfall

PITFALL = Pitfall(
    code="TD606",
    name="nccl-collective-timeout",
    title={
        "en": "A collective that not every rank reached in time (NCCL watchdog timeout)",
        "zh": "有 rank 没有及时进入的集合通信（NCCL watchdog 超时）",
    },
    messages={
        "": {
            "en": "a collective (all-reduce, barrier, broadcast...) waited longer than the "
            "process group's timeout for a rank: every rank must call the same collectives "
            "in the same order",
            "zh": "某个集合通信（all-reduce、barrier、broadcast……）等待某个 rank 超过了进程组的超时"
            "时间：所有 rank 必须以相同顺序调用相同的集合通信",
        }
    },
    fix_hint={
        "en": "Find the rank that did not arrive: run with `TORCH_DISTRIBUTED_DEBUG=DETAIL` "
        "and `NCCL_DEBUG=INFO`. Give every rank the same number of batches "
        "(`DistributedSampler(..., drop_last=True)`), call collectives (`all_reduce`, "
        "`barrier`, DDP's forward) on all ranks, not inside `if rank == 0:`, and for long "
        "work on one rank (evaluation, saving) raise `timeout=` in `init_process_group`.",
        "zh": "找出没有到达的 rank：用 `TORCH_DISTRIBUTED_DEBUG=DETAIL` 和 `NCCL_DEBUG=INFO` 运行。"
        "让每个 rank 的 batch 数相同（`DistributedSampler(..., drop_last=True)`），在所有 rank 上"
        "调用集合通信（`all_reduce`、`barrier`、DDP 的 forward），不要放在 `if rank == 0:` 里；"
        "某个 rank 上有耗时的工作（评估、保存）时，调大 `init_process_group` 的 `timeout=`。",
    },
    docs={
        "en": """
## What it catches
The NCCL watchdog's report that a collective operation (all-reduce, all-gather, broadcast,
barrier) did not complete within the process group's timeout (10 minutes by default, 30 in
older versions), after which every rank is torn down.

## Why is this bad?
A collective completes only when every rank of the group calls it. When one rank takes another
path, the others wait for it until the timeout: a DDP forward or an `all_reduce` inside
`if rank == 0:`, a validation loop only rank 0 runs while the others enter the next epoch's
all-reduce, ranks with different numbers of batches (an uneven dataset without
`DistributedSampler`, a `break` on one rank), or a rank that is simply busy for longer than the
timeout (evaluating, saving a big checkpoint, building a cache). A rank that crashed or hangs in
a DataLoader worker shows the same way. Network faults exist too, but are the rarer cause.

## Symptoms
`[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE,
NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.`,
followed by `Process group watchdog thread terminated with exception` and
`terminate called after throwing an instance of 'c10::DistBackendError'`.

## References
- https://pytorch.org/docs/stable/distributed.html#torch.distributed.init_process_group
- https://pytorch.org/docs/stable/distributed.html#debugging-torch-distributed-applications
""",
        "zh": """
## What it catches
NCCL watchdog 报告某个集合通信（all-reduce、all-gather、broadcast、barrier）没有在进程组的超时时间
（默认 10 分钟，旧版本为 30 分钟）内完成，随后所有 rank 都会被终止。

## Why is this bad?
只有组内每个 rank 都调用了某个集合通信，它才会完成。某个 rank 走了另一条路径时，其他 rank 会一直等它，
直到超时：把 DDP 的 forward 或 `all_reduce` 放在 `if rank == 0:` 里，只有 rank 0 运行验证循环而其他
rank 已经进入下一个 epoch 的 all-reduce，各 rank 的 batch 数不同（数据集不均匀又没用
`DistributedSampler`，或者某个 rank 上 `break` 了），或者某个 rank 只是忙得比超时还久（评估、保存大
checkpoint、构建缓存）。某个 rank 崩溃或卡在 DataLoader worker 中也会表现为这个错误。网络故障也可能，
但较少见。

## Symptoms
`[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE,
NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.`，
随后是 `Process group watchdog thread terminated with exception` 和
`terminate called after throwing an instance of 'c10::DistBackendError'`。

## References
- https://pytorch.org/docs/stable/distributed.html#torch.distributed.init_process_group
- https://pytorch.org/docs/stable/distributed.html#debugging-torch-distributed-applications
""",
    },
    example="""
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank = dist.get_rank()
loss = torch.ones(1, device="cuda")
if rank == 0:
    dist.all_reduce(loss)
""",
    use_instead="""
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank = dist.get_rank()
loss = torch.ones(1, device="cuda")
dist.all_reduce(loss)
""",
)

# The watchdog's C++ stack without its message line, or the timeout named in an issue's title.
PITFALL.error(
    r"ProcessGroupNCCL::WorkNCCL::checkTimeout|\bNCCL (?:timeout|timed out|watchdog timeout)",
    types=(),
    confidence=0.8,
    cause={
        "en": "The NCCL watchdog found a collective that waited longer than the process "
        "group's timeout for a rank that did not call it: ranks took different paths, one "
        "rank was busy for longer than the timeout (an evaluation or a checkpoint save on rank "
        "0 only), or it crashed or hung.",
        "zh": "NCCL 的 watchdog 发现某个集合通信等待一个没有调用它的 rank，超过了进程组的超时时间："
        "各 rank 走了不同的路径，某个 rank 忙得比超时还久（只在 rank 0 上评估或保存 checkpoint），"
        "或者它已经崩溃或卡住。",
    },
)
# What the other ranks print once the watchdog aborted the communicator: no cause of its own,
# most often that timeout, sometimes a rank that crashed first.
PITFALL.error(
    r"NCCL communicator was aborted on rank \d+",
    types=(),
    confidence=0.6,
    cause={
        "en": "The NCCL communicator was torn down under this rank, most often by the watchdog "
        "after a collective timed out (ranks took different paths, or one was busy or hung), "
        "sometimes because another rank crashed first: read the first error of every rank's "
        "log.",
        "zh": "这个 rank 下面的 NCCL 通信器被拆掉了，最常见的是某个集合通信超时后被 watchdog 中止"
        "（各 rank 走了不同路径，或者某个 rank 忙碌或卡住），有时是因为另一个 rank 先崩溃了："
        "请查看每个 rank 日志中的第一个错误。",
    },
)
PITFALL.error(
    r"Watchdog caught collective operation timeout"
    # what every rank prints after the watchdog tore the process group down
    r"|Some NCCL operations have failed or timed out",
    types=(),
    confidence=0.85,
    cause={
        "en": "A collective waited longer than the process group's timeout for a rank that did "
        "not call it: ranks took different paths (a collective inside `if rank == 0:`, "
        "evaluation on one rank only, different numbers of batches), one rank was busy for "
        "longer than the timeout, or it crashed or hung.",
        "zh": "某个集合通信等待一个没有调用它的 rank，超过了进程组的超时时间：各 rank 走了不同的路径"
        "（集合通信放在 `if rank == 0:` 里、只在一个 rank 上评估、各 rank 的 batch 数不同），"
        "某个 rank 忙得比超时还久，或者它已经崩溃或卡住。",
    },
)
