"""TD203 scheduler-step-order: the LR scheduler is stepped before the optimizer, or too often."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from torchdoctor.catalog.sdk import (
    MODULE_SELF_METHODS,
    SCHEDULE_ENDINGS,
    SCHEDULE_REACHES,
    Context,
    FileIndex,
    Finding,
    Kind,
    Monitor,
    Pitfall,
    in_compat_fallback,
    index,
    index_of,
    is_parameter,
    is_self_attribute,
    call_name,
    lineage,
    in_other_branches,
    name_words,
    passed_by_every_call,
    passed_values,
    per_file,
    subtree,
    top_level_classes,
    top_level_functions,
)
from torchdoctor.catalog.training._loops import (
    mentions_epochs,
    LOOPS,
    block_steps,
    enclosing_loops,
    last_identifier,
    position,
)

PITFALL = Pitfall(
    code="TD203",
    name="scheduler-step-order",
    title={
        "en": "Learning-rate scheduler stepped before the optimizer, or every batch",
        "zh": "学习率调度器在优化器之前 step，或每个 batch 都 step",
    },
    messages={
        "runtime": {
            "en": "`{scheduler}.step()` runs before the first `{optimizer}.step()`: the first "
            "learning rate of the schedule is skipped; step the optimizer first",
            "zh": "`{scheduler}.step()` 在第一次 `{optimizer}.step()` 之前执行：学习率调度的第一个值"
            "被跳过了；应先更新优化器",
        },
        "": {
            "en": "`{scheduler}.step()` runs before `{step}` in this loop: since PyTorch 1.1 the "
            "optimizer steps first, otherwise the first learning rate of the schedule is skipped",
            "zh": "`{scheduler}.step()` 在本循环中先于 `{step}` 执行：自 PyTorch 1.1 起应先更新优化器，"
            "否则学习率调度的第一个值会被跳过",
        },
        "function": {
            "en": "`{scheduler}.step()` runs before `{step}`, which the loop below it in this "
            "function runs: since PyTorch 1.1 the optimizer steps first, otherwise the first "
            "learning rate of the schedule is skipped; step the scheduler at the end of the epoch",
            "zh": "`{scheduler}.step()` 在本函数中其后的循环所执行的 `{step}` 之前运行：自 PyTorch 1.1 "
            "起应先更新优化器，否则学习率调度的第一个值会被跳过；请在 epoch 结束时再调用调度器",
        },
        "call": {
            "en": "`{scheduler}.step()` runs before `{step}` in this loop, and `{function}` steps "
            "the optimizer: since PyTorch 1.1 the optimizer steps first, otherwise the first "
            "learning rate of the schedule is skipped; step the scheduler after it",
            "zh": "`{scheduler}.step()` 在本循环中先于 `{step}` 执行，而 `{function}` 会更新优化器："
            "自 PyTorch 1.1 起应先更新优化器，否则学习率调度的第一个值会被跳过；请在它之后调用调度器",
        },
        "method": {
            "en": "`{call}` steps only learning-rate schedulers (so do all of the project's "
            "`{method}` methods), and runs before `{step}` trains in this loop: since PyTorch 1.1 "
            "the optimizer steps first, otherwise the first learning rate of the schedule is "
            "skipped; call it after the updates",
            "zh": "`{call}` 只更新学习率调度器（项目中所有的 `{method}` 方法都是如此），却在本循环中先于负责训练的 "
            "`{step}` 执行：自 PyTorch 1.1 起应先更新优化器，否则学习率调度的第一个值会被跳过；请在更新之后再调用它",
        },
        "handed": {
            "en": "`{scheduler}.step()` runs before `{step}` in this loop, which is handed the "
            "optimizer to train with: since PyTorch 1.1 the optimizer steps first, otherwise the "
            "first learning rate of the schedule is skipped; step the scheduler after it",
            "zh": "`{scheduler}.step()` 在本循环中先于 `{step}` 执行，而后者拿到优化器去训练："
            "自 PyTorch 1.1 起应先更新优化器，否则学习率调度的第一个值会被跳过；请在它之后调用调度器",
        },
        "event": {
            "en": "`{scheduler}.step()` runs on `{event}`, before the optimizer steps in that "
            "epoch or iteration: since PyTorch 1.1 the optimizer steps first, otherwise the first "
            "learning rate of the schedule is skipped; step it on `EPOCH_COMPLETED` or "
            "`ITERATION_COMPLETED`",
            "zh": "`{scheduler}.step()` 在 `{event}` 时执行，先于该 epoch 或迭代中优化器的更新：自 PyTorch "
            "1.1 起应先更新优化器，否则学习率调度的第一个值会被跳过；请改在 `EPOCH_COMPLETED` 或 "
            "`ITERATION_COMPLETED` 时调用",
        },
        "hook": {
            "en": "`{scheduler}.step()` runs in torchnet's `on_start_epoch` hook, before the "
            "optimizer steps of that epoch: since PyTorch 1.1 the optimizer steps first, "
            "otherwise the first learning rate of the schedule is skipped; step it in "
            "`on_end_epoch`",
            "zh": "`{scheduler}.step()` 在 torchnet 的 `on_start_epoch` 钩子中执行，先于该 epoch 中"
            "优化器的更新：自 PyTorch 1.1 起应先更新优化器，否则学习率调度的第一个值会被跳过；"
            "请改在 `on_end_epoch` 中调用",
        },
        "epoch": {
            "en": "`{scheduler}.step({epoch})` runs before `{step}` in this loop: the loop's count "
            "given to it keeps the learning rate right, but since PyTorch 1.1 the order warns on "
            "the first call and the argument is deprecated; call `{scheduler}.step()`, with no "
            "argument, after the optimizer's steps",
            "zh": "`{scheduler}.step({epoch})` 在本循环中先于 `{step}` 执行：传入循环计数能让学习率保持正确，"
            "但自 PyTorch 1.1 起这个顺序在第一次调用时会发出警告，且该参数已被弃用；请在优化器更新之后"
            "调用不带参数的 `{scheduler}.step()`",
        },
        "per_batch": {
            "en": "`{scheduler}.step()` runs once per batch, but its `{schedule}` schedule counts "
            "epochs: the learning rate moves through it as many times too fast as an epoch "
            "has batches",
            "zh": "`{scheduler}.step()` 每个 batch 都执行一次，但它的 `{schedule}` 调度是按 epoch 计数的："
            "学习率走完调度的速度快了“每个 epoch 的 batch 数”倍",
        },
    },
    fix_hint={
        "en": "Call `optimizer.step()` first and `scheduler.step()` after it, once per epoch "
        "for epoch-based schedules (`StepLR`, `MultiStepLR`, `CosineAnnealingLR`); per "
        "batch only for schedules counted in steps (`OneCycleLR`, warmup schedules).",
        "zh": "先调用 `optimizer.step()`，再调用 `scheduler.step()`；按 epoch 计数的调度器（`StepLR`、"
        "`MultiStepLR`、`CosineAnnealingLR`）每个 epoch 调用一次，只有按步数计数的调度器"
        "（`OneCycleLR`、warmup 调度）才每个 batch 调用。",
    },
    docs={
        "en": """
## What it catches
Two mistakes with `torch.optim.lr_scheduler` (and the schedulers built on it: transformers'
`get_linear_schedule_with_warmup(...)`, pytorch-transformers' `WarmupLinearSchedule`):

- `scheduler.step()` called before `optimizer.step()` in the same loop, or before a call of a
  function of the same file that steps the optimizer (`scheduler.step(); train(loader, model,
  optimizer)` at the top of the epoch loop) or of a method of the same class that does
  (`self.lr_schedule.step(); self._train()` in a trainer), or before a call in the loop of a function of
  another module named to train, or told to (`model_epoch(mode="train", ...)`), that is handed
  the optimizer (`train(cfg, loader, model, criterion, optimizer, epoch)`, `trainer.train(epoch,
  loader, optimizer)`), or in an ignite
  handler on `EPOCH_STARTED` or `ITERATION_STARTED`; also at the top of a function that trains
  one epoch, before its batch loop (`def train_epoch(self, loader): if self.lr_scheduler is not
  None: self.lr_scheduler.step()`), whose loop steps the optimizer or calls a function of the file
  that does (`train_step(batch, model, optimizer)`). Also a method of the project's classes that steps only
  schedulers, called in a loop before one that trains (steps an optimizer or calls a backward),
  both known from the project's facts: NVlabs' `trainer.update_learning_rate()` at the top of the
  iteration loop, before `trainer.dis_update(...)`. Since PyTorch 1.1 the order is the other way
  round: update the weights, then move the schedule on. A handler's step may stand under a test
  that the scheduler exists (`if lr_scheduler is not None:`) or of a setting (`if
  opts["train.scheduler_type"] == "step":`); torchnet's `on_start_epoch` hook (`engine.hooks[
  "on_start_epoch"] = on_start_epoch`) is such a handler too, and a scheduler kept in the
  engine's state (`state["scheduler"]`) is known by its key. `scheduler.step(epoch)`, given the
  variable of the epoch loop, before the epoch's training is reported with its own message:
  the epoch given makes the rate right, but the order warns on the first call and the
  argument is deprecated.
- A scheduler whose schedule is counted in epochs (`StepLR`, `MultiStepLR`, `ExponentialLR`,
  `CosineAnnealingLR`) stepped inside the batch loop (a loop over a `DataLoader` inside the
  epoch loop, or any loop inside a loop over the epochs that steps an optimizer itself, or in
  a function every call of which in the file sits in an epoch loop: `for
  epoch in range(1, EPOCHS + 1): train(model, loader, optimizer, scheduler)`). It is reported
  only when the numbers say epochs: the milestones, `step_size` or `T_max` are written in terms
  of the epoch count, or are no larger than the `range(...)` of the epoch loop (a number, a
  constant the module sets once at its top, `EPOCHS = 50`, or a parameter every call in the
  file passes a number for), or
  `ExponentialLR`'s `gamma` is 0.99 or below. The scheduler may be a parameter of the function
  that the one call of it in the file passes (`train_model(model, ..., exp_lr_scheduler,
  num_epochs=60)`), and a loop over the phases may sit between the epoch and the batch loops.

A scheduler stepped under a condition on what the loop changes (`if epoch > 0:`), inside
`warnings.catch_warnings()`, in a function that sets `scheduler.last_epoch` itself, or in a
branch for torch before 1.1 (`if not pytorch_1_1_0_or_later:`) is left alone: those are
deliberate. But when the optimizer step follows it in the same block (`if (step + 1) %
accumulation == 0: scheduler.step(); optimizer.step()`), the condition runs both and the order
is the old one: that is reported, unless a statement between the two calls another method of the
scheduler (OpenASR's `lr_scheduler.set_lr(optimizer, lr)`: a schedule of the project's own
that sets the rate of the step to come).
A setting tested the same way every time round (`if args.optimizer == "momentum":`) is no such
condition, nor is the training phase of a loop over an epoch's phases (`for phase in ["train",
"val"]: if phase == "train": scheduler.step()`, the recipe of PyTorch's old transfer-learning
tutorial; the phases may be named elsewhere, `for phase in dataset_names:` whose body tests
`if phase == "train":`): the step still comes before that epoch's optimizer steps, whatever the
order of the phases, and such a loop is no batch loop. A scheduler is an object of
a `torch.optim.lr_scheduler` class or of a class of the project that subclasses one, in any of
its modules (`WarmupMultiStepLR(MultiStepLR)`). One made out of sight (a parameter, an
attribute) is known by its name (`scheduler`, `lr_sched`, `warmup_scheduler`, `G_scheduler` beside a
`G_optimizer`), unless the project defines a class named like a scheduler that
is no torch one and reaches an optimizer (minimal-nmt's `SGDRScheduler`, which sets the rate
itself; not a teacher-forcing ratio's `TFRScheduler`): then it is left alone. An attribute
unpacked from what a method of the class returns, where that method builds a torch scheduler,
is one whatever its name (classifier-balancing's `self.model_optimizer,
self.model_optimizer_scheduler = self.init_optimizers(params)`). A loop over the schedulers
themselves (`for key, scheduler in self.model_scheduler_dict.items(): scheduler.step()`:
Long-Tailed-Recognition) steps each of them once each time round the loop around it.

## Why is this bad?
Before PyTorch 1.1 the scheduler was stepped at the start of each epoch; since then it must be
stepped after the optimizer. Code in the old order skips the first value of the schedule: the
first epoch already trains at the second learning rate, and every milestone comes one epoch
early. PyTorch warns about it once, and the warning is easy to miss in a long log.

A scheduler built for epochs but stepped every batch moves through its whole schedule in the
first few epochs: with `StepLR(step_size=30)` and 1,000 batches per epoch, the learning rate is
divided by 10 every 30 batches and is effectively zero before the first epoch ends.

## Symptoms
`UserWarning: Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch
1.1.0 and later, you should call them in the opposite order: `optimizer.step()` before
`lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first value of
the learning rate schedule.`

For a per-batch epoch schedule: the loss stops improving after the first epoch, and the logged
learning rate is already tiny.

## Known problems
Schedulers are recognised by how they were built (`torch.optim.lr_scheduler.*`) or, failing
that, by a name like `scheduler` or `lr_scheduler` (or a factory of another module named to
build one, `make_lr_scheduler(cfg, optimizer)`), or a prefixed name whose optimizer has the same
prefix (`sp_scheduler` and `sp_optimizer`); a scheduler under another name is not checked.
The per-batch case needs the scheduler to be built in the same function as the loop.
""",
        "zh": """
## What it catches
`torch.optim.lr_scheduler`（以及基于它的调度器：transformers 的 `get_linear_schedule_with_warmup(...)`、
pytorch-transformers 的 `WarmupLinearSchedule`）的两种错误用法：

- 在同一个循环里，`scheduler.step()` 先于 `optimizer.step()` 调用，或先于调用本文件中会更新优化器的
  函数（epoch 循环开头 `scheduler.step(); train(loader, model, optimizer)`）或同一个类中会更新优化器的
  方法（训练器里的 `self.lr_schedule.step(); self._train()`），或先于循环中调用另一个
  模块里以训练命名（或被要求训练：`model_epoch(mode="train", ...)`）、并拿到优化器的函数
  （`train(cfg, loader, model, criterion, optimizer, epoch)`、
  `trainer.train(epoch, loader, optimizer)`），或放在 ignite 的
  `EPOCH_STARTED`、`ITERATION_STARTED` 事件处理函数里；也包括在训练一个 epoch 的函数开头、batch 循环之前
  调用（`def train_epoch(self, loader): if self.lr_scheduler is not None: self.lr_scheduler.step()`），
  而循环里更新优化器，或调用本文件中会更新优化器的函数（`train_step(batch, model, optimizer)`）。
  还包括项目中某个类只更新调度器的方法，在循环里先于负责训练（更新优化器或调用 backward）的方法被调用，
  两者都由项目事实得知：NVlabs 在迭代循环开头调用 `trainer.update_learning_rate()`，之后才
  `trainer.dis_update(...)`。自 PyTorch 1.1 起顺序相反：
  先更新权重，再推进学习率调度。事件处理函数中的调用可以位于检查调度器是否存在的条件下
  （`if lr_scheduler is not None:`），或检查某个设置项的条件下（`if opts["train.scheduler_type"] == "step":`）；
  torchnet 的 `on_start_epoch` 钩子（`engine.hooks["on_start_epoch"] = on_start_epoch`）也算这样的处理函数，
  保存在引擎状态里的调度器（`state["scheduler"]`）按其键名识别。
  在 epoch 的训练之前传入 epoch 循环变量的 `scheduler.step(epoch)`
  会以单独的信息报告：传入的 epoch 使学习率正确，但第一次调用时顺序会引发警告，且该参数已被弃用。
- 按 epoch 计数的调度器（`StepLR`、`MultiStepLR`、`ExponentialLR`、`CosineAnnealingLR`）在 batch
  循环（位于 epoch 循环内、遍历 `DataLoader` 的循环；或者位于遍历 epoch 的循环内、
  自己也会更新优化器的任何循环；或者所在函数在本文件中的每次调用都位于 epoch 循环里：
  `for epoch in range(1, EPOCHS + 1): train(model, loader, optimizer, scheduler)`）里 step。
  只有数字明确表明以 epoch 为单位时才报告：里程碑、`step_size` 或 `T_max` 用 epoch 数表示，或不超过 epoch 循环
  `range(...)` 的上界（一个数字、模块顶层只赋值一次的常量 `EPOCHS = 50`，
  或本文件中每次调用都传入数字的参数），或 `ExponentialLR` 的 `gamma` 不大于 0.99。
  调度器可以是函数的参数，由文件中对该函数的唯一一次调用传入（`train_model(model, ...,
  exp_lr_scheduler, num_epochs=60)`），epoch 循环与 batch 循环之间也可以隔着一个遍历训练/验证阶段的循环。

放在依赖循环变化量的条件里（`if epoch > 0:`）、放在 `warnings.catch_warnings()` 中、所在函数自己设置了
`scheduler.last_epoch`，或放在为 1.1 之前的 torch 保留的分支里（`if not pytorch_1_1_0_or_later:`）的
调度器调用不会报告：这些都是有意为之。但如果优化器的更新就在同一个代码块里紧随其后（`if (step + 1) %
accumulation == 0: scheduler.step(); optimizer.step()`），这个条件会让两者一起执行，顺序仍然是旧的：
这种情况会报告，除非两者之间有语句调用了调度器的其他方法（OpenASR 的
`lr_scheduler.set_lr(optimizer, lr)`：项目自己的学习率调度，为接下来的一步设置学习率）。每轮都相同的配置判断
（`if args.optimizer == "momentum":`）不算这种条件；按 epoch 的各阶段循环时选中训练阶段的判断也不算
（`for phase in ["train", "val"]: if phase == "train": scheduler.step()`，PyTorch 旧版迁移学习教程的写法；
各阶段也可以在别处命名：`for phase in dataset_names:`，循环体里判断 `if phase == "train":`）：
不论各阶段的顺序如何，这一步仍然在该 epoch 的优化器更新之前，而且这样的循环不是 batch 循环。
调度器指 `torch.optim.lr_scheduler` 中某个类的对象，或项目中
（任意模块里）继承了这样一个类的类的对象（`WarmupMultiStepLR(MultiStepLR)`）。在别处构造的调度器
（参数、属性）按名字判断（`scheduler`、`lr_sched`、`warmup_scheduler`，或与 `G_optimizer` 并存的
`G_scheduler`）；但如果项目定义了名字像调度器、用到优化器、却不是 torch 调度器的类
（minimal-nmt 的 `SGDRScheduler`，自己设置学习率；而不是 teacher forcing 比例的 `TFRScheduler`），
就不报告。从类的某个方法的返回值中解包出来的属性，如果那个方法构造的是 torch 调度器，不论叫什么名字都算调度器
（classifier-balancing 的 `self.model_optimizer, self.model_optimizer_scheduler = self.init_optimizers(params)`）。
遍历调度器本身的循环（`for key, scheduler in self.model_scheduler_dict.items(): scheduler.step()`：
Long-Tailed-Recognition）在外层循环每一轮里把每个调度器各 step 一次。

## Why is this bad?
PyTorch 1.1 之前，调度器在每个 epoch 开始时 step；此后必须在优化器之后 step。沿用旧顺序的代码会跳过
调度的第一个值：第一个 epoch 就用上了第二个学习率，每个里程碑都提前一个 epoch 到来。
PyTorch 只警告一次，在长长的日志里很容易被忽略。

为 epoch 设计的调度器如果每个 batch 都 step，整个调度会在最初几个 epoch 内走完：例如
`StepLR(step_size=30)`、每个 epoch 1000 个 batch 时，学习率每 30 个 batch 就除以 10，
第一个 epoch 还没结束就几乎为零了。

## Symptoms
`UserWarning: Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch
1.1.0 and later, you should call them in the opposite order: `optimizer.step()` before
`lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first value of
the learning rate schedule.`

如果是按 epoch 设计的调度器每个 batch 都 step：第一个 epoch 之后 loss 不再下降，日志里的学习率已经非常小。

## Known problems
调度器通过它的构造方式（`torch.optim.lr_scheduler.*`）识别，否则只认 `scheduler`、`lr_scheduler`
这类名字（或其他模块中以构造学习率调度器命名的工厂函数，如 `make_lr_scheduler(cfg, optimizer)`），
以及与优化器同前缀的名字（`sp_scheduler` 与 `sp_optimizer`）；换了别的名字的调度器不会被检查。
每个 batch 都 step 的情况要求调度器与循环在同一个函数中创建。
""",
    },
    example="""
import torch

model = torch.nn.Linear(10, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30)
for epoch in range(100):
    scheduler.step()
    optimizer.zero_grad()
    model(torch.randn(8, 10)).sum().backward()
    optimizer.step()
""",
    use_instead="""
import torch

model = torch.nn.Linear(10, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30)
for epoch in range(100):
    optimizer.zero_grad()
    model(torch.randn(8, 10)).sum().backward()
    optimizer.step()
    scheduler.step()
""",
)

# The backticks are lost when the warning is quoted in Markdown (inline code inside inline code).
PITFALL.error(
    r"Detected call of `?lr_scheduler\.step\(\)`? before `?optimizer\.step\(\)",
    types=("UserWarning",),
    confidence=0.9,
    cause={
        "en": "`scheduler.step()` ran before the first `optimizer.step()`: the first value of "
        "the learning-rate schedule is skipped. With a `GradScaler` this warning can also "
        "appear when the first optimizer step was skipped for inf/NaN gradients; then it "
        "is harmless.",
        "zh": "`scheduler.step()` 在第一次 `optimizer.step()` 之前执行了：学习率调度的第一个值被跳过。"
        "使用 `GradScaler` 时，如果第一次优化器更新因梯度出现 inf/NaN 而被跳过，也会出现这条警告，"
        "此时它无害。",
    },
)

# `scheduler`, `sched`, `lr_scheduler`, `scheduler_g`, `self.lr_scheduler`, `warmup_lr_scheduler`.
_SCHEDULER_NAME = re.compile(
    r"^(?:lr_?|warm_?up_?)?sched(?:uler)?(?:_[a-z0-9]+)?$|lr_?sched", re.IGNORECASE
)
_PREFIXED_SCHEDULER = re.compile(r"^([A-Za-z0-9]+)_sched(?:uler)?$")
# Epoch schedules, and the argument (name, position) that says how long the schedule is.
_EPOCH_SCHEDULES = {
    "StepLR": ("step_size", 1),
    "MultiStepLR": ("milestones", 1),
    "CosineAnnealingLR": ("T_max", 1),
    "ExponentialLR": ("gamma", 1),
}
# At or below this, an ExponentialLR stepped every batch vanishes within a few hundred batches
# (0.99 per batch leaves 0.7 % of the rate after 500 of them: Adversarial-Autoencoder's).
_PER_BATCH_GAMMA = 0.99
_BATCH_WORDS = ("step", "iter", "batch", "len", "sample")
_NUMERIC_CALLS = frozenset({"int", "round", "float", "max", "min", "ceil", "floor"})
# Wrappers around the DataLoader in `for batch in tqdm(enumerate(loader)):`.
_ITERATION_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "zip", "track"})


@PITFALL.static(ast.Expr, names={"step"})
def check(node: ast.Expr, ctx: Context) -> Iterator[Finding]:
    call = node.value
    if ctx.method_name(call) != "step":
        return
    epoch = _epoch_argument(call, ctx)
    if (call.args or call.keywords) and epoch is None:
        return  # ReduceLROnPlateau.step(metric) and non-torch schedulers take arguments
    scheduler = call.func.value
    if not _is_lr_scheduler(scheduler, ctx) or in_compat_fallback(ctx):
        return  # `if not pytorch_1_1_0_or_later: scheduler.step()`: the order of old torch
    loops = enclosing_loops(ctx)
    over = loops[0] if loops and _over_schedulers(loops[0], scheduler, ctx) else None
    if over is not None:
        loops = loops[1:]  # `for key, scheduler in self.schedulers.items(): scheduler.step()`
        if not loops:
            return
    if epoch is not None:  # `scheduler.step(epoch)`: the rate is right, the order warns
        yield from _epoch_given_before_training(node, call, epoch, loops, ctx)
        return
    if not loops:
        yield from _before_the_epoch_in_function(node, call, scheduler, ctx)
        yield from _on_a_started_event(node, call, scheduler, ctx)
        return
    later_step = _optimizer_step_after(node, loops[0], ctx)
    name = ctx.text(scheduler)
    if later_step is not None and _sets_the_rate_between(node, later_step, scheduler, ctx):
        return  # OpenASR's own schedule: `lr_scheduler.step(); lr_scheduler.set_lr(...)`
    if not _unconditional(node, loops[0], scheduler, ctx, over, later_step):
        if later_step is None or not _in_one_block(node, later_step, ctx):
            # `if epoch > 0: scheduler.step()`, but not `else: scheduler.step();
            # train(..., optimizer=optimizer)` (ProtoPNet's joint phase)
            handed = _optimizer_handed_after(node, loops[0], ctx)
            if handed is not None and _in_one_block(node, _statement(handed, ctx), ctx):
                if not _compensated(ctx):
                    step = f"{ctx.text(handed.func)}(...)"
                    yield ctx.finding(PITFALL, call, "handed", scheduler=name, step=step)
            return
    if later_step is not None:
        if not _compensated(ctx):
            yield ctx.finding(PITFALL, call, scheduler=name, step=ctx.text(later_step.value))
        return
    training = _training_call_after(node, loops[0], ctx)
    if training is not None:
        if not _compensated(ctx):
            function = ctx.text(training.func)
            step = f"{function}(...)"
            yield ctx.finding(PITFALL, call, "call", scheduler=name, step=step, function=function)
        return
    handed = _optimizer_handed_after(node, loops[0], ctx)
    if handed is not None:
        if not _compensated(ctx):
            step = f"{ctx.text(handed.func)}(...)"
            yield ctx.finding(PITFALL, call, "handed", scheduler=name, step=step)
        return
    schedule = _epoch_schedule_stepped_per_batch(scheduler, loops, ctx)
    if schedule:
        yield ctx.finding(PITFALL, call, "per_batch", scheduler=name, schedule=schedule)


def _epoch_argument(call: ast.Call, ctx: Context) -> str | None:
    """`epoch` of `scheduler.step(epoch)`, the variable of a loop around the call."""
    if len(call.args) != 1 or call.keywords or type(call.args[0]) is not ast.Name:
        return None
    name = call.args[0].id
    for loop in enclosing_loops(ctx):
        if isinstance(loop, (ast.For, ast.AsyncFor)) and any(
            type(target) is ast.Name and target.id == name for target in ast.walk(loop.target)
        ):
            return name
    return None


def _epoch_given_before_training(
    node: ast.Expr, call: ast.Call, epoch: str, loops: list[ast.AST], ctx: Context
) -> Iterator[Finding]:
    """`scheduler.step(epoch)` at the top of the epoch loop, unconditional, before the loop's own
    optimizer step or a call that trains (wangguanan's PCB baseline, SE_Sphereface): the closed
    form gives the epoch's rate, so only the order warning and the deprecated argument remain."""
    if not loops or _compensated(ctx):
        return
    loop = loops[0]
    scheduler = call.func.value  # type: ignore[attr-defined]
    if not _unconditional(node, loop, scheduler, ctx, None, None):
        return
    later = _optimizer_step_after(node, loop, ctx)
    if later is not None:
        step: str | None = ctx.text(later.value)
    else:  # a call that trains, or that is handed the optimizer
        trains = _training_call_after(node, loop, ctx) or _optimizer_handed_after(node, loop, ctx)
        step = None if trains is None else f"{ctx.text(trains.func)}(...)"
    if step is not None:
        yield ctx.finding(
            PITFALL, call, "epoch", scheduler=ctx.text(scheduler), epoch=epoch, step=step
        )


@PITFALL.static(*LOOPS)
def check_project_methods(loop: ast.AST, ctx: Context) -> Iterator[Finding]:
    """`trainer.update_learning_rate()` at the top of the iteration loop, before
    `trainer.dis_update(...)`: methods of the project's classes that, by the project's facts,
    step only schedulers, and train (NVlabs' UNIT, MUNIT and DG-Net)."""
    project = ctx.project
    if not project.scheduler_methods or not project.training_methods:
        return
    # `self.model.train()` is nn.Module's, whatever a project's own `Solver.train` steps.
    names = [
        name
        for name in project.scheduler_methods
        if name not in MODULE_SELF_METHODS and ctx.may_name(name)
    ]
    if not names:
        return
    found = index_of(ctx, loop)
    for call in found.calls_in_block(loop.body, names, local=True):
        statement = found.statement_of(call)
        if not (
            type(statement) is ast.Expr
            and statement.value is call
            and type(call.func) is ast.Attribute
            and _straight_in(statement, loop, found, ctx)
        ):
            continue
        if _trains_before(call, loop, found, ctx):
            return  # the updates come first in this loop
        later = _training_method_after(call, loop, found, ctx)
        if later is not None and not _compensated(ctx):
            step = f"{ctx.text(later.func)}(...)"
            yield ctx.finding(
                PITFALL, call, "method", call=ctx.text(call), method=call.func.attr, step=step
            )
        return  # one finding per loop


def _straight_in(statement: ast.stmt, loop: ast.AST, found: FileIndex, ctx: Context) -> bool:
    """`statement` runs every time round `loop`: in its body, or under `if`s that test
    settings only (`if num_gpu > 1:`), not in a loop nested in it."""
    for owner, _ in lineage(statement, found.parents):
        if owner is loop:
            return True
        if isinstance(owner, LOOPS) or isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        if isinstance(owner, ast.If) and not _tests_configuration(owner.test, loop, ctx):
            return False
    return False


def _trains_before(call: ast.Call, loop: ast.AST, found: FileIndex, ctx: Context) -> bool:
    """A call before `call` in the loop's body steps an optimizer, calls a backward or is a
    training method of the project."""
    for earlier in found.in_block(loop.body, ast.Call, local=True):
        if position(earlier) >= position(call):
            return False
        name = call_name(earlier)
        if name in ("step", "backward") or (name and ctx.project.trains_in(name)):
            return True
    return False


def _training_method_after(
    call: ast.Call, loop: ast.AST, found: FileIndex, ctx: Context
) -> ast.Call | None:
    """The first call after `call` in the loop's body of a training method of the project."""
    for later in found.calls_in_block(loop.body, list(ctx.project.training_methods), local=True):
        if position(later) > position(call) and type(later.func) is ast.Attribute:
            return later
    return None


def _is_lr_scheduler(expr: ast.AST, ctx: Context) -> bool:
    kind = ctx.kind_of(expr)
    if kind is not Kind.UNKNOWN:
        return kind is Kind.SCHEDULER
    name = last_identifier(expr)  # `schedulers["rgb"]`: named by its container
    if _keyed_by_string(expr) and not (name and _SCHEDULER_NAME.search(name)):
        name = expr.slice.value  # type: ignore[attr-defined]  # torchnet's `state['scheduler']`
    if not (name and (_SCHEDULER_NAME.search(name) or _paired_with_optimizer(name, ctx))):
        return is_self_attribute(expr) and _attribute_made_a_scheduler(ctx, expr.attr)  # type: ignore[attr-defined]
    built = _constructor(expr, ctx)
    if built is None:
        # Made out of sight (a parameter, an attribute): trust the name unless the project has
        # a schedule of its own it may be (minimal-nmt's SGDRScheduler, handed to `train`).
        return not (ctx.project.has_own_schedulers() or _own_schedule_classes(ctx))
    return _builds_lr_scheduler(built, ctx)


def _over_schedulers(loop: ast.AST, scheduler: ast.AST, ctx: Context) -> bool:
    """`loop` runs over the schedulers, binding the stepped name (`for key, scheduler in
    self.model_scheduler_dict.items():`: Long-Tailed-Recognition), and steps no optimizer."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)) or type(scheduler) is not ast.Name:
        return False
    target = loop.target
    bound = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
    return any(
        type(name) is ast.Name and name.id == scheduler.id for name in bound
    ) and not block_steps(ctx, loop)


def _attribute_made_a_scheduler(ctx: Context, attribute: str) -> bool:
    """`self.<attribute>` is unpacked, in a method of the class, from what a method of the
    class returns, and every return of that method puts there a name it binds only to a torch
    scheduler (classifier-balancing's `self.model_optimizer, self.model_optimizer_scheduler =
    self.init_optimizers(params)`)."""
    cls = ctx.enclosing_class()
    if cls is None:
        return False
    unpackings = _unpacked_attributes(ctx, cls).get(attribute)
    if not unpackings:
        return False
    methods = _methods(ctx, cls)
    for value, place, size in unpackings:
        if not (type(value) is ast.Call and is_self_attribute(value.func)):
            return False
        method = methods.get(value.func.attr)  # type: ignore[attr-defined]
        if method is None or not _returns_schedulers_at(ctx, method, place, size):
            return False
    return True


@per_file
def _unpacked_attributes(
    ctx: Context, cls: ast.ClassDef
) -> dict[str, list[tuple[ast.AST, int, int]]]:
    """For each `self.<attribute>` a tuple assignment of the class unpacks into: (the value
    unpacked, the attribute's place, the tuple's size), read once per class."""
    found: dict[str, list[tuple[ast.AST, int, int]]] = {}
    for assignment in index_of(ctx, cls).under(cls, ast.Assign):
        for target in assignment.targets:  # type: ignore[attr-defined]
            if type(target) is not ast.Tuple:
                continue
            for place, element in enumerate(target.elts):
                if is_self_attribute(element):
                    found.setdefault(element.attr, []).append(  # type: ignore[attr-defined]
                        (assignment.value, place, len(target.elts))  # type: ignore[attr-defined]
                    )
    return found


def _returns_schedulers_at(ctx: Context, method: ast.AST, place: int, size: int) -> bool:
    """Every `return` of `method` is a tuple of `size` whose item at `place` is a name the
    method binds only to a torch learning-rate scheduler."""
    returns = index_of(ctx, method).local(method, ast.Return)
    if not returns:
        return False
    for statement in returns:
        value = statement.value  # type: ignore[attr-defined]
        if not (type(value) is ast.Tuple and len(value.elts) == size):
            return False
        item = value.elts[place]
        if type(item) is not ast.Name:
            return False
        made = _assigned_values(ctx, method, item.id)
        if not made or not all(_torch_scheduler(each, ctx) for each in made):
            return False
    return True


def _torch_scheduler(value: ast.AST, ctx: Context) -> bool:
    return type(value) is ast.Call and (ctx.call_qualname(value) or "").startswith(
        "torch.optim.lr_scheduler."
    )


@per_file
def _own_schedule_classes(ctx: Context) -> bool:
    """The file defines a schedule of learning rates of its own: a class named as a schedule
    that reaches an optimizer (`optimizer`, `param_groups`) and is no torch scheduler."""
    return any(
        name.lower().endswith(SCHEDULE_ENDINGS)
        and not ctx.class_inherits(cls, lambda q: q.startswith("torch.optim.lr_scheduler"))
        and any(
            (type(node) is ast.Name and node.id in SCHEDULE_REACHES)
            or (type(node) is ast.Attribute and node.attr in SCHEDULE_REACHES)
            for node in index_of(ctx, cls).under(cls, ast.Name, ast.Attribute)
        )
        for name, cls in top_level_classes(ctx).items()
    )


def _paired_with_optimizer(name: str, ctx: Context) -> bool:
    """`sp_scheduler` in a file that names an `sp_optimizer` (`G_scheduler` and `G_optimizer`):
    the schedule of that optimizer. A prefixed name alone may be any other schedule (a
    temperature's, a noise's)."""
    match = _PREFIXED_SCHEDULER.match(name)
    return match is not None and any(
        ctx.may_name(f"{match[1]}_{word}") for word in ("optimizer", "optim", "opt")
    )


def _constructor(scheduler: ast.AST, ctx: Context) -> ast.AST | None:
    """The value of the one assignment to this name in the current function (or module)."""
    if not isinstance(scheduler, ast.Name):
        return None
    found = _assigned_values(ctx, ctx.enclosing_function() or ctx.tree, scheduler.id)
    return found[0] if len(found) == 1 else None


@per_file
def _assigned_values(ctx: Context, scope: ast.AST, name: str) -> list[ast.AST]:
    """The values assigned to `name` in the scope (not in the scopes nested in it)."""
    found = index_of(ctx, scope)
    return [node.value for node in found.assignments(scope, name) if found.is_local(scope, node)]


def _builds_lr_scheduler(value: ast.AST, ctx: Context) -> bool:
    """False when the name holds something else, like Opacus' `scheduler = StepNoise(...)`."""
    if not isinstance(value, ast.Call):
        return True
    qualname = ctx.call_qualname(value)
    if qualname:
        head, _, last = qualname.rpartition(".")
        # transformers' and diffusers' get_scheduler(), get_cosine_schedule_with_warmup()...
        return (
            head.startswith("torch.optim.lr_scheduler")
            or last.startswith("get_")
            and "schedule" in last
            # maskrcnn-benchmark's `make_lr_scheduler(cfg, optimizer)`, `build_lr_scheduler`
            or last.startswith(("make_", "build_", "create_"))
            and "lr_scheduler" in last
            # pytorch-transformers' `WarmupLinearSchedule(optimizer, ...)`, a LambdaLR (not
            # pytorch-pretrained-bert's schedule of the same name, which BertAdam asks)
            or head.partition(".")[0] in ("pytorch_transformers", "transformers")
            and last.startswith("Warmup")
            and last.endswith("Schedule")
        )
    if isinstance(value.func, ast.Name):
        local = _module_class(value.func.id, ctx)
        if local is not None:
            return ctx.class_inherits(local, lambda q: q.startswith("torch.optim.lr_scheduler"))
    return True  # a factory we cannot see into: trust the name


def _module_class(name: str, ctx: Context) -> ast.ClassDef | None:
    return top_level_classes(ctx).get(name)


def _unconditional(
    node: ast.Expr,
    loop: ast.AST,
    scheduler: ast.AST,
    ctx: Context,
    over: ast.AST | None = None,
    later: ast.AST | None = None,
) -> bool:
    """The step runs every time round the loop: no `if` between them (but `if scheduler:`), and
    not inside `warnings.catch_warnings()`, which says the order is deliberate. `over`: a loop
    over the schedulers themselves, which steps each once. `later`: the optimizer's step after
    it, which an `if` holding it too does not order (targer's `if epoch > 0:` around both the
    scheduler's step and the epoch's training)."""
    inner = ctx.ancestors[ctx.ancestors.index(loop) + 1 :]
    phase_loops = [s for s in (loop, *inner) if _training_phase(s) is not None]
    # Each statement with the one below it on the way to the step (the step itself last).
    for statement, child in zip(inner, [*inner[1:], node]):
        if statement in phase_loops or statement is over:
            continue  # `for phase in ["train", "val"]:` goes through every phase each epoch
        if (
            isinstance(statement, ast.If)
            and not _in_same_branch(statement, child, later)
            and not _tests_presence_of(statement.test, scheduler)
            and not _tests_configuration(statement.test, loop, ctx)
            and not _selects_training_phase(statement, child, phase_loops)
        ):
            return False
        if isinstance(statement, (ast.With, ast.AsyncWith)) and any(
            ctx.call_qualname(item.context_expr) == "warnings.catch_warnings"
            for item in statement.items
        ):
            return False
        if not isinstance(statement, (ast.If, ast.With, ast.AsyncWith, ast.Try)):
            return False
    return True


def _in_same_branch(branching: ast.If, child: ast.AST, later: ast.AST | None) -> bool:
    """`later` lies in the branch of `branching` that holds `child`: the test runs both or
    neither."""
    if later is None:
        return False
    branch = branching.body if child in branching.body else branching.orelse
    return bool(branch) and branch[0].lineno <= later.lineno <= (branch[-1].end_lineno or 0)


def _sets_the_rate_between(
    node: ast.Expr, later: ast.Expr, scheduler: ast.AST, ctx: Context
) -> bool:
    """A statement between the scheduler's step and the optimizer's, in their block, calls
    another method of the scheduler (`lr_scheduler.set_lr(optimizer, lr)`): a schedule of the
    project's own that sets the rate of the step to come, which no torch scheduler has."""
    place = ctx.block_position(node, ctx.ancestors[-1])
    if place is None or later not in place[0]:
        return False
    block, start = place
    wanted = ast.dump(scheduler)
    return any(
        isinstance(call.func, ast.Attribute) and ast.dump(call.func.value) == wanted
        for statement in block[start + 1 : block.index(later)]
        for call in index_of(ctx, statement).under(statement, ast.Call)
    )


def _statement(node: ast.AST, ctx: Context) -> ast.AST | None:
    return index_of(ctx, node).statement_of(node)


def _in_one_block(node: ast.stmt, later: ast.AST | None, ctx: Context) -> bool:
    """Whether `later` follows `node` in the block that holds it: whatever condition runs the
    one runs the other (TransFG's `if (step + 1) % accumulation == 0: scheduler.step();
    optimizer.step()`)."""
    place = ctx.block_position(node, ctx.ancestors[-1])
    return place is not None and later in place[0][place[1] + 1 :]


def _training_phase(statement: ast.AST) -> str | None:
    """`for phase in ["train", "val"]:` (the loop of PyTorch's old transfer-learning tutorial):
    the name of the training phase of a loop over the phases of one epoch, else None."""
    if not (isinstance(statement, ast.For) and isinstance(statement.target, ast.Name)):
        return None
    if isinstance(statement.iter, ast.Name):
        # `for phase in dataset_names:` whose body asks `if phase == 'train':` (a Kaggle
        # dog-breed notebook): the phases are named elsewhere, the training one there.
        return _phase_tested(statement.body, statement.target.id)
    if not (
        isinstance(statement.iter, (ast.List, ast.Tuple))
        and statement.iter.elts  # `for phase in ["train"]:` too (validation left out)
    ):
        return None
    phases = [e.value for e in statement.iter.elts if isinstance(e, ast.Constant)]
    if len(phases) != len(statement.iter.elts) or not all(isinstance(p, str) for p in phases):
        return None
    training = [p for p in phases if p.lower().startswith("train")]
    return training[0] if len(training) == 1 else None


def _phase_tested(body: list[ast.stmt], name: str) -> str | None:
    """ "train" of `if phase == "train":` among the statements of `body`, `phase` being `name`."""
    for statement in body:
        test = statement.test if isinstance(statement, ast.If) else None
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.left, ast.Name)
            and test.left.id == name
            and isinstance(test.comparators[0], ast.Constant)
            and isinstance(test.comparators[0].value, str)
            and test.comparators[0].value.lower().startswith("train")
        ):
            return test.comparators[0].value
    return None


def _selects_training_phase(branch: ast.If, child: ast.AST, phase_loops: list) -> bool:
    """`if phase == "train": scheduler.step()` in a loop over the phases: the step runs once an
    epoch, when its training phase starts (not in the `else` branch: that runs in another
    phase, after the training steps)."""
    test = branch.test
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and child in branch.body
    ):
        return False
    sides = [test.left, test.comparators[0]]
    names = {s.id for s in sides if isinstance(s, ast.Name)}
    constants = {s.value for s in sides if isinstance(s, ast.Constant)}
    return any(
        loop.target.id in names and _training_phase(loop) in constants for loop in phase_loops
    )


def _tests_configuration(test: ast.AST, loop: ast.AST, ctx: Context) -> bool:
    """`if args.optimizer == "momentum":`: a test of names the loop never changes, and no call,
    is a setting, the same every time round; `if epoch > 0:` is an order on purpose."""
    parts = subtree(test)
    if any(isinstance(node, ast.Call) for node in parts):
        return False
    changing = _changed_in(ctx, loop)
    return not any(isinstance(node, ast.Name) and node.id in changing for node in parts)


@per_file
def _changed_in(ctx: Context, loop: ast.AST) -> frozenset[str]:
    """The names the loop binds (its target, and every store in its body)."""
    return frozenset(
        node.id
        for node in subtree(loop)
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)
    )


def _tests_a_setting(test: ast.AST) -> bool:
    """`if self.args.enable_lr_schedule:`, `if cfg.lr_policy == "step":`: a switch of the run's
    settings, the same in every epoch; not a test of the epoch or of a counter (`if epoch > 0:`
    skips the first step on purpose)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if isinstance(test, ast.Compare):
        if len(test.ops) != 1 or not isinstance(test.comparators[0], ast.Constant):
            return False
        if not isinstance(test.comparators[0].value, str):
            return False
        test = test.left
    attributes = 0
    while isinstance(test, ast.Attribute) or _keyed_by_string(test):
        key = test.attr if isinstance(test, ast.Attribute) else test.slice.value  # type: ignore[attr-defined]
        if _COUNTER_WORD.search(key):
            return False
        test, attributes = test.value, attributes + 1  # type: ignore[attr-defined]
    return isinstance(test, ast.Name) and attributes > 0 and test.id in _SETTING_HOLDERS


def _keyed_by_string(node: ast.AST) -> bool:
    """`opts['train.scheduler_type']`: a setting read by its key (r2d2's options dict)."""
    return (
        type(node) is ast.Subscript
        and type(node.slice) is ast.Constant
        and type(node.slice.value) is str
    )


# Names of counters: a test of one orders the steps on purpose.
_COUNTER_WORD = re.compile(r"epoch|iter|step|warm|count", re.IGNORECASE)
# What holds a run's settings (`self.args.x`, `args.x`, `cfg.x`).
_SETTING_HOLDERS = frozenset({"self", "args", "opt", "opts", "cfg", "config", "hparams", "FLAGS"})


def _tests_presence_of(test: ast.AST, scheduler: ast.AST) -> bool:
    """`if scheduler:` or `if scheduler is not None:`."""
    wanted = ast.dump(scheduler)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot):
        test = test.left
    return ast.dump(test) == wanted


def _optimizer_step_after(node: ast.Expr, loop: ast.AST, ctx: Context) -> ast.Expr | None:
    """The first optimizer update after the scheduler step in the loop, if none comes before."""
    steps = block_steps(ctx, loop)
    if not steps or position(steps[0]) < position(node):
        return None
    return steps[0]


def _training_call_after(node: ast.Expr, loop: ast.AST, ctx: Context) -> ast.Call | None:
    """`for epoch in ...: scheduler.step(); train(loader, model, optimizer)`: the first call in
    the loop of a function of this file that steps an optimizer, when it comes after the
    scheduler step."""
    own = ctx.enclosing_function()
    # (and the functions defined in the one around the loop: superpoint_graph's `main`, whose
    # own `def train():` runs the epoch's optimizer steps)
    functions = {**top_level_functions(ctx), **_nested_functions(own)}
    methods = _sibling_methods(ctx)
    if not functions and not methods:
        return None
    names = [*functions, *methods]
    for found in index_of(ctx, loop).calls_in_block(loop.body, names, local=True):
        func = found.func
        if isinstance(func, ast.Name):
            function = functions.get(func.id)
        elif is_self_attribute(func):  # `self._train()` in a trainer class
            function = methods.get(func.attr)  # type: ignore[attr-defined]
        else:
            function = None
        if function is None or function is own or not block_steps(ctx, function):
            continue
        return found if position(found) > position(node) else None
    return None


def _nested_functions(
    function: ast.AST | None,
) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions defined in the body of `function`, by name."""
    body = getattr(function, "body", ())
    return {
        node.name: node
        for node in body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def _sibling_methods(ctx: Context) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The methods of the class whose method is being visited, by name."""
    cls = ctx.enclosing_class()
    if cls is None or ctx.enclosing_function() is None:
        return {}
    return _methods(ctx, cls)


@per_file
def _methods(ctx: Context, cls: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {
        node.name: node
        for node in cls.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def _optimizer_handed_after(node: ast.Expr, loop: ast.AST, ctx: Context) -> ast.Call | None:
    """`for epoch in ...: scheduler.step(); train(cfg, loader, model, optimizer)` with `train`
    imported from another module, or `trainer.train(epoch, loader, optimizer)`: the first call
    in the loop of a function named to train (`train`, `train_epoch`...) that is not this
    file's own and is given an optimizer, when it comes after the scheduler step."""
    parents = index_of(ctx, loop).parents
    for found in _trainings_handed_an_optimizer(ctx, loop):
        if in_other_branches(found, node, parents):
            continue  # a warm-up phase's training, in the other branch (ProtoPNet)
        return found if position(found) > position(node) else None
    return None


@per_file
def _trainings_handed_an_optimizer(ctx: Context, loop: ast.AST) -> list[ast.Call]:
    """The calls in the loop of a function named to train, not this file's own, given an
    optimizer, in source order: read once per loop however many steps it holds."""
    own = top_level_functions(ctx)
    whole = index_of(ctx, loop)
    # The calls of names starting with `train`, as the index keys them (`train(...)`,
    # `trainer.train(...)`), and those told to train (`model_epoch(mode="train", ...)`).
    calls = list(whole.calls_in_block(loop.body, _training_names(ctx), local=True))
    calls += [c for c in whole.in_block(loop.body, ast.Call) if _told_to_train(c)]
    return [
        found
        for found in sorted(set(calls), key=position)
        if not (type(found.func) is ast.Name and found.func.id in own)  # `_training_call_after`
        and any(
            _names_an_optimizer(value)
            for value in (*found.args, *(k.value for k in found.keywords))
        )
    ]


def _told_to_train(call: ast.Call) -> bool:
    """`model_epoch(mode="train", ...)`: a string argument says the call trains (zeroshot's
    epoch function, run with `mode="test"` for its evaluation)."""
    return any(
        type(value) is ast.Constant and value.value in ("train", "training")
        for value in (*call.args, *(k.value for k in call.keywords))
    )


@per_file
def _training_names(ctx: Context) -> tuple[str, ...]:
    """The names called in the file that start with `train` or have it as a word
    (`MWP_train_tree`, `do_train`), read once per file."""
    return tuple(
        name
        for name in index_of(ctx, ctx.tree).calls
        if name and (name.startswith("train") or "train" in name_words(name))
    )


def _names_an_optimizer(expr: ast.AST) -> bool:
    """`optimizer`, `self.optim`, `opt_g`, `joint_optimizer`: a name or attribute that says it
    is an optimizer."""
    name = expr.id if type(expr) is ast.Name else expr.attr if type(expr) is ast.Attribute else ""
    parts = name.lower().split("_")  # `joint_optimizer`, `g_optim`, `opt_d`
    return any(part.startswith("optim") or part == "opt" for part in parts)


# ignite events that fire before the optimizer steps of the epoch or iteration they open.
_STARTED_EVENTS = frozenset({"EPOCH_STARTED", "ITERATION_STARTED"})
# torchnet's engine runs the function its hooks hold under this name before an epoch's batches.
_TORCHNET_EPOCH_START = "on_start_epoch"
_TORCHNET_HOOKS = ("hooks['on_start_epoch']", 'hooks["on_start_epoch"]')


def _on_a_started_event(
    node: ast.Expr, call: ast.Call, scheduler: ast.AST, ctx: Context
) -> Iterator[Finding]:
    """`@trainer.on(Events.EPOCH_STARTED) def adjust(engine): scheduler.step()`: ignite runs the
    handler before the iterations of the epoch, so before the first optimizer step."""
    function = ctx.enclosing_function()
    if function is None or _compensated(ctx):
        return
    between = ctx.ancestors[ctx.ancestors.index(function) + 1 :]
    if not all(
        type(statement) is ast.If
        and (_tests_presence_of(statement.test, scheduler) or _tests_a_setting(statement.test))
        for statement in between
    ):
        return  # only `if lr_scheduler is not None:` or a setting may stand between
    if function.name == _TORCHNET_EPOCH_START and any(h in ctx.source for h in _TORCHNET_HOOKS):
        # torchnet's `engine.hooks['on_start_epoch'] = on_start_epoch` (r2d2's training script)
        yield ctx.finding(PITFALL, call, "hook", scheduler=ctx.text(scheduler))
        return
    for decorator in function.decorator_list:
        if not (
            isinstance(decorator, ast.Call)
            and isinstance(decorator.func, ast.Attribute)
            and decorator.func.attr == "on"
            and len(decorator.args) == 1
            and isinstance(decorator.args[0], ast.Attribute)
            and decorator.args[0].attr in _STARTED_EVENTS
        ):
            continue
        event = ctx.text(decorator.args[0])
        yield ctx.finding(PITFALL, call, "event", scheduler=ctx.text(scheduler), event=event)
        return


def _before_the_epoch_in_function(
    node: ast.Expr, call: ast.Call, scheduler: ast.AST, ctx: Context
) -> Iterator[Finding]:
    """`def train(epoch): scheduler.step(); for batch in loader: ... optimizer.step()`: a
    function that trains one epoch steps its scheduler first, in its own body, not in a branch
    (but for one that only asks whether there is a scheduler: `if self.lr_scheduler is not
    None:`, or one of a run's settings: `if args.lrs == 'plateau': ... else:
    lr_scheduler.step()`, chicm's ship training)."""
    function = ctx.enclosing_function()
    if function is None:
        return
    parent = ctx.parent()
    if (
        isinstance(parent, ast.If)
        and (
            _tests_a_setting(parent.test)
            or not parent.orelse
            and _tests_presence_of(parent.test, scheduler)
        )
        and len(ctx.ancestors) > 1
    ):
        parent = ctx.ancestors[-2]
    if parent is not function:
        return
    steps = block_steps(ctx, function)
    if (steps and position(steps[0]) < position(node)) or _compensated(ctx):
        return
    last_loop = _last_loop(ctx, function)
    if last_loop is None or position(last_loop) < position(node):
        return  # the optimizer steps once, in the same function: not an epoch of batches
    if steps:
        step = ctx.text(steps[0].value)
    else:
        # `for batch in loader: train_step(batch, model, optimizer)`: a function of the file
        # that steps the optimizer, called in the loop (NVIDIA's video interpolation).
        training = _training_call_after(node, last_loop, ctx)
        if training is None:
            return
        step = f"{ctx.text(training.func)}(...)"
    yield ctx.finding(PITFALL, call, "function", scheduler=ctx.text(scheduler), step=step)


@per_file
def _last_loop(ctx: Context, function: ast.AST) -> ast.AST | None:
    """The last loop of the function's own body (also inside a `with` block of it:
    meshed-memory-transformer's `with tqdm(...) as pbar: for ... in dataloader:`)."""
    loops, todo = [], list(reversed(function.body))
    while todo:
        statement = todo.pop()
        if isinstance(statement, LOOPS):
            loops.append(statement)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            todo.extend(reversed(statement.body))
    return loops[-1] if loops else None


def _compensated(ctx: Context) -> bool:
    """The function sets `scheduler.last_epoch` itself: it has shifted the schedule on purpose."""
    return _sets_last_epoch(ctx, ctx.enclosing_function() or ctx.tree)


@per_file
def _sets_last_epoch(ctx: Context, scope: ast.AST) -> bool:
    """Whatever way the run starts: an assignment under an `if` (pytorch-vcii's `if
    args.load_model_name: ... scheduler.last_epoch = train_iter - 1`, on resuming only) leaves
    a fresh run's first rate skipped."""
    found = index_of(ctx, scope)
    return any(
        found.is_local(scope, node) and not _under_a_condition(node, scope, found.parents)
        for node in found.assignments(scope, "last_epoch", attribute=True)
    )


def _under_a_condition(node: ast.AST, scope: ast.AST, parents: dict) -> bool:
    """An `if` of `scope` holds `node`."""
    for above, _ in lineage(node, parents):
        if above is scope:
            return False
        if type(above) is ast.If:
            return True
    return False


# ---- the per-batch variant ----------------------------------------------------------------


def _epoch_schedule_stepped_per_batch(
    scheduler: ast.AST, loops: list[ast.AST], ctx: Context
) -> str | None:
    """The schedule's class name when an epoch schedule is stepped in a batch loop; the epoch
    loop around it, or around every call of the function that holds the batch loop (`for epoch
    in range(1, EPOCHS + 1): train(model, loader, optimizer, scheduler)`)."""
    if not loops or not (_iterates_loader(loops[0], ctx) or _steps_each_batch(loops, ctx)):
        return None
    epochs = None
    if len(loops) < 2:
        epochs = _epochs_of_every_call(ctx, ctx.enclosing_function())
        if epochs is None:
            return None
    built = _construction(scheduler, ctx)
    if built is None:
        return None
    schedule, length = built
    if schedule == "ExponentialLR":
        gamma = _number(length)
        return schedule if gamma is not None and gamma <= _PER_BATCH_GAMMA else None
    if _counts_epochs(length):
        return schedule
    if len(loops) > 1 and _the_epoch_count(length, _epoch_loop(loops[1:])):
        return schedule  # `T_max=int(args.local_ep)` and `for iter in range(self.args.local_ep)`
    if epochs is not None:
        return schedule if _made_of_numbers_up_to(length, epochs) else None
    return schedule if _shorter_than_epoch_loop(length, _epoch_loop(loops[1:]), ctx) else None


@per_file
def _epochs_of_every_call(ctx: Context, function: ast.AST | None) -> int | None:
    """The fewest epochs of the loops counting with `range(...)` around every call of the
    top-level `function` in the file (DnCNN's `train(model, train_loader, optimizer, scheduler,
    epoch)` in `for epoch in range(max_epoch + 1, EPOCHS + 1)`, `EPOCHS = 50`); None when some
    call is in no such loop or its count is not a number the file writes down."""
    if function is None or top_level_functions(ctx).get(function.name) is not function:  # type: ignore[attr-defined]
        return None
    found = index(ctx)
    calls = [
        found.nodes[at]
        for at in found.calls.get(function.name, ())  # type: ignore[attr-defined]
        if type(found.nodes[at].func) is ast.Name  # type: ignore[attr-defined]
    ]
    counts = []
    for call in calls:
        loop = next(
            (node for node, _ in lineage(call, found.parents) if type(node) is ast.For), None
        )
        stop = _range_end(loop) if loop is not None else None
        count = _counted(stop, ctx) if stop is not None else None
        if count is None:
            return None
        counts.append(count)
    return min(counts) if counts else None


def _counted(expr: ast.AST, ctx: Context) -> int | None:
    """The whole number `expr` is: written out, a constant the module sets once at its top
    (`EPOCHS = 50`), or a sum or difference of those (`EPOCHS + 1`)."""
    if type(expr) is ast.BinOp and type(expr.op) in (ast.Add, ast.Sub):
        left, right = _counted(expr.left, ctx), _counted(expr.right, ctx)
        if left is None or right is None:
            return None
        return left + right if type(expr.op) is ast.Add else left - right
    if type(expr) is ast.Name:
        values = _module_constants(ctx).get(expr.id)
        return values[0] if values is not None and len(values) == 1 else None
    number = _number(expr)
    return number if type(number) is int else None


@per_file
def _module_constants(ctx: Context) -> dict[str, list[int]]:
    """The whole numbers the module's top-level statements assign to each name."""
    found: dict[str, list[int]] = {}
    for statement in ctx.tree.body:
        if type(statement) is ast.Assign:
            value = _number(statement.value)
            for target in statement.targets:
                if type(target) is ast.Name:
                    found.setdefault(target.id, []).append(value if type(value) is int else -1)
    return {name: values for name, values in found.items() if -1 not in values}


def _made_of_numbers_up_to(expr: ast.AST, epochs: int) -> bool:
    """`milestones=[30]`: only whole numbers written out, none above `epochs`."""
    numbers = [n.value for n in ast.walk(expr) if isinstance(n, ast.Constant)]
    if not numbers or not all(type(n) is int for n in numbers):
        return False
    if any(isinstance(n, (ast.Name, ast.Attribute, ast.Call)) for n in ast.walk(expr)):
        return False
    return max(numbers) <= epochs


def _epoch_loop(loops: list[ast.AST]) -> ast.AST:
    """The innermost of the loops around the batch loop that counts with `range(...)` (the
    epochs, around `for phase in ["train", "val"]`); else the one right around it."""
    return next((loop for loop in loops if _range_end(loop) is not None), loops[0])


def _steps_each_batch(loops: list[ast.AST], ctx: Context) -> bool:
    """The loop around the scheduler's step steps an optimizer too, and runs inside a loop over
    the epochs: a loop over batches, whatever it iterates (Adversarial-Autoencoder's `for i,
    (data, targets) in enumerate(train_gen)`, a generator another function made)."""
    if len(loops) < 2 or not block_steps(ctx, loops[0]):
        return False
    if _training_phase(loops[0]) is not None:
        return False  # `for phase in ["train", "val"]:`, the batch loop inside (State-Farm's)
    return not _names_epochs(loops[0]) and _names_epochs(loops[1])


def _names_epochs(loop: ast.AST) -> bool:
    """A loop over the epochs, by its words: `for epoch in range(args.epochs)`."""
    parts = (getattr(loop, "target", None), getattr(loop, "iter", None))
    return any(part is not None and mentions_epochs(part) for part in parts)


def _iterates_loader(loop: ast.AST, ctx: Context) -> bool:
    source = getattr(loop, "iter", None)
    while (
        isinstance(source, ast.Call)
        and source.args
        and last_identifier(source.func) in _ITERATION_WRAPPERS
    ):
        source = source.args[0]
    if source is None:
        return False
    return ctx.kind_of(source) is Kind.LOADER or "loader" in (last_identifier(source) or "").lower()


def _construction(scheduler: ast.AST, ctx: Context) -> tuple[str, ast.AST] | None:
    """(class name, length argument) of the one epoch schedule bound to this name in scope, or
    passed for this parameter by the one call of its function in the file."""
    call = _constructor(scheduler, ctx)
    if call is None and isinstance(scheduler, ast.Name):
        call = _passed_constructor(scheduler.id, ctx)
    if not isinstance(call, ast.Call):
        return None
    qualname = ctx.call_qualname(call) or ""
    head, _, schedule = qualname.rpartition(".")
    if not head.startswith("torch.optim.lr_scheduler") or schedule not in _EPOCH_SCHEDULES:
        return None
    keyword, index = _EPOCH_SCHEDULES[schedule]
    for argument in call.keywords:
        if argument.arg == keyword:
            return schedule, argument.value
    if len(call.args) > index:
        return schedule, call.args[index]
    return None


def _counts_epochs(expr: ast.AST) -> bool:
    """Written in epochs: `args.epochs // 3`, `[int(0.5 * num_epochs), 80]`."""
    saw_epochs = False
    for node in ast.walk(expr):
        if isinstance(node, ast.Call):
            if last_identifier(node.func) not in _NUMERIC_CALLS:
                return False
        elif isinstance(node, (ast.Name, ast.Attribute)):
            word = (node.id if isinstance(node, ast.Name) else node.attr).lower()
            if any(w in word for w in _BATCH_WORDS):
                return False
            saw_epochs |= "epoch" in word
    return saw_epochs


def _passed_constructor(name: str, ctx: Context) -> ast.AST | None:
    """`train_model(model, criterion, optimizer, exp_lr_scheduler, num_epochs=60)`, the one call
    of the function in the file, after `exp_lr_scheduler = lr_scheduler.StepLR(...)`: that
    construction (Person_reID_baseline's `train_model(..., scheduler, ...)`)."""
    function = ctx.enclosing_function()
    if not (
        isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        and is_parameter(function, name)
    ):
        return None
    passed = passed_values(ctx, function, name)
    if len(passed) != 1:
        return None
    call, value = passed[0]
    if isinstance(value, ast.Name):
        whole = index(ctx)
        scope = whole.scopes[whole.number[call]] or ctx.tree
        found = _assigned_values(ctx, scope, value.id)
        return found[0] if len(found) == 1 else None
    return value


def _shorter_than_epoch_loop(expr: ast.AST, epoch_loop: ast.AST, ctx: Context) -> bool:
    """The length is made of numbers no larger than the `range(E)` of the epoch loop (`E` a
    number, or a parameter every call of the function in the file passes a number for)."""
    stop = _range_end(epoch_loop)
    epochs = _number(stop) if stop is not None else None
    if type(epochs) is not int:
        epochs = _passed_epochs(stop, ctx)
    return epochs is not None and _made_of_numbers_up_to(expr, epochs)


def _the_epoch_count(length: ast.AST, epoch_loop: ast.AST) -> bool:
    """The schedule's length is what the epoch loop counts to, as the code names it (FedMVP's
    `CosineAnnealingLR(optimizer, T_max=int(args.local_ep))` stepped in the batch loop of
    `for iter in range(self.args.local_ep)`): the same name, or the same last attribute."""
    stop = _range_end(epoch_loop)
    if stop is None:
        return False
    named = [_counted_name(expr) for expr in (length, stop)]
    return named[0] is not None and named[0] == named[1]


def _counted_name(expr: ast.AST) -> str | None:
    """`n` of `n`, `args.n`, `self.args.n` and `int(...)` of those; None for anything else."""
    while type(expr) is ast.Call and last_identifier(expr.func) == "int" and len(expr.args) == 1:  # type: ignore[attr-defined]
        expr = expr.args[0]  # type: ignore[attr-defined]
    if type(expr) is ast.Name:
        return expr.id
    if type(expr) is ast.Attribute and isinstance(expr.value, (ast.Name, ast.Attribute)):
        return expr.attr
    return None


def _range_end(loop: ast.AST) -> ast.expr | None:
    """The end of the `range(...)` the loop counts over (`E` of `range(E)` or `range(1, E)`)."""
    source = getattr(loop, "iter", None)
    if not (
        isinstance(source, ast.Call)
        and isinstance(source.func, ast.Name)
        and source.func.id == "range"
        and source.args
    ):
        return None
    return source.args[1] if len(source.args) > 1 else source.args[0]


def _passed_epochs(stop: ast.expr | None, ctx: Context) -> int | None:
    """The fewest epochs of `range(num_epochs)` over a parameter: the numbers the calls of the
    function in the file pass, when every one passes a number."""
    function = ctx.enclosing_function()
    if not (
        isinstance(stop, ast.Name)
        and isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        and is_parameter(function, stop.id)
    ):
        return None
    passed = passed_by_every_call(ctx, function, stop.id)
    counts = [_number(value) for value in passed or ()]
    if not counts or not all(type(n) is int for n in counts):
        return None
    return min(counts)  # type: ignore[type-var]


def _number(expr: ast.AST) -> int | float | None:
    if isinstance(expr, ast.Constant) and type(expr.value) in (int, float):
        return expr.value
    return None


# ---- at run time -------------------------------------------------------------------------------


@PITFALL.monitor
class SchedulerBeforeOptimizer(Monitor):
    """`scheduler.step()` called while its optimizer has never stepped. Under a GradScaler
    whose first steps were skipped (inf/NaN gradients at the initial scale) the optimizer
    legitimately has not stepped yet after a backward: that case is left alone."""

    def setup(self) -> None:
        self._stepped: set[int] = set()

    def after_step(self, optimizer) -> None:
        self._stepped.add(id(optimizer))

    def on_scheduler_step(self, scheduler) -> None:
        optimizer = getattr(scheduler, "optimizer", None)
        if optimizer is None or id(optimizer) in self._stepped:
            return
        if getattr(optimizer, "_opt_called", False):  # stepped before the watch started
            return
        if self.session.scaler is not None and self.session.backward_calls:
            return
        self.report(
            id(scheduler),
            "runtime",
            scheduler=type(scheduler).__name__,
            optimizer=type(optimizer).__name__,
        )
