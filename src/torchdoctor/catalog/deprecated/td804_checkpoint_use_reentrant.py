"""TD804 checkpoint-use-reentrant: `torch.utils.checkpoint` called without `use_reentrant=`."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import Context, Edit, Finding, Pitfall

PITFALL = Pitfall(
    code="TD804",
    name="checkpoint-use-reentrant",
    title={
        "en": "Activation checkpointing without an explicit `use_reentrant=`",
        "zh": "激活检查点（activation checkpointing）调用没有显式传入 `use_reentrant=`",
    },
    messages={
        "": {
            "en": "`{function}` without `use_reentrant=`: PyTorch warns that it must be passed, the "
            "default is to change, and the reentrant variant it picks today gives no gradients "
            "to the checkpointed layers when no input requires grad; pass `use_reentrant=False`",
            "zh": "调用 `{function}` 时没有传 `use_reentrant=`：PyTorch 会警告必须显式传入它，默认值将会改变；"
            "而它目前选用的可重入（reentrant）实现在没有任何输入需要梯度时，不会给被检查点包裹的层任何梯度。"
            "请传入 `use_reentrant=False`",
        }
    },
    fix_title={"en": "Pass `use_reentrant=False`", "zh": "传入 `use_reentrant=False`"},
    fix_applicability="unsafe",
    fix_hint={
        "en": "Pass `use_reentrant=False` (recommended by PyTorch), or `use_reentrant=True` "
        "where the code relies on the reentrant variant's behaviour.",
        "zh": "传入 `use_reentrant=False`（PyTorch 推荐的做法）；如果代码依赖可重入实现的行为，"
        "则传入 `use_reentrant=True`。",
    },
    docs={
        "en": """
## What it catches
A call of `torch.utils.checkpoint.checkpoint` or `torch.utils.checkpoint.checkpoint_sequential`
without a `use_reentrant=` argument, however the function is reached
(`torch.utils.checkpoint.checkpoint`, `from torch.utils.checkpoint import checkpoint`,
`import torch.utils.checkpoint as cp; cp.checkpoint`, an alias of the imported name). A call
that passes `**kwargs`, or that gives `checkpoint_sequential` its fourth argument by position,
may already pass the flag and is not reported, nor is any call in a project that says it supports
a torch older than 1.11 (`torch>=1.8` in its requirements), which has no `use_reentrant=`.

## Why is this bad?
PyTorch has two implementations of activation checkpointing. When `use_reentrant` is not given,
it picks the old reentrant one and warns that the argument must be passed explicitly and that
leaving it out will become an error (each call issues the warning; Python's default filter shows
it once per process). The reentrant variant also has a silent failure: when none of the tensors
given to the checkpointed function requires grad (the usual case for the first block of a
network, or for a frozen embedding in front of it), its
output has no graph back into the block, so the block's parameters get no gradients at all and
never train, with only a warning. It also does not support `torch.autograd.grad`, keyword
arguments of the checkpointed function or some nested structures. The non-reentrant variant
(`use_reentrant=False`) has none of these problems and is the one PyTorch recommends.

## Symptoms
Issued by every such call, shown once under Python's default warning filter (torch 2.13):
`UserWarning: torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly.
Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception.
use_reentrant=False is recommended, but if you need to preserve the current default behavior,
you can pass use_reentrant=True. Refer to docs for more details on the differences between the
two variants.`
(`checkpoint_sequential` says: `the use_reentrant parameter should be passed explicitly. In
version 2.9 we will raise an exception if use_reentrant is not passed.`) When no input requires
grad: `UserWarning: None of the inputs have requires_grad=True. Gradients will be None`, then
checkpointed layers whose `.grad` stays `None`, or `element 0 of tensors does not require grad
and does not have a grad_fn` when nothing else in the loss needs a gradient.

## Fix safety
The fix adds `use_reentrant=False` to the call. It is unsafe because the two variants do not
behave alike in every program: layers that silently received no gradient under the reentrant
variant start training (the point of the fix, but it changes the run), the non-reentrant
variant checks that the recomputed forward saves the same tensors and raises when it does not
(a forward that branches on global state, or changes shapes between the two passes), and
code that relied on reentrant-only details (hooks on the recomputed graph, DDP's static-graph
workarounds) can see different results. Pass `use_reentrant=True` instead where the old
behaviour must be kept.

## Known problems
The function is recognised by its import, so a wrapper of it (`functools.partial(checkpoint,
...)`, a project function that forwards to it) and other libraries' checkpoint functions
(DeepSpeed, fairscale) are not reported. On 112 real projects it reports 10 calls, all true
(transformers, kornia, diffusers, espnet, fairseq); timm and most libraries already pass the flag
or call through a wrapper that does.

## References
- PyTorch docs, `torch.utils.checkpoint`: the differences between the two variants.
- TorchFix TOR003, the same check.
""",
        "zh": """
## What it catches
调用 `torch.utils.checkpoint.checkpoint` 或 `torch.utils.checkpoint.checkpoint_sequential` 时没有传
`use_reentrant=` 参数，无论函数是怎样引用的（`torch.utils.checkpoint.checkpoint`、
`from torch.utils.checkpoint import checkpoint`、`import torch.utils.checkpoint as cp; cp.checkpoint`、
导入时起的别名）。传了 `**kwargs` 的调用，或按位置给 `checkpoint_sequential` 传了第四个参数的调用，
可能已经传了这个参数，不报告；项目声明支持早于 1.11 的 torch（依赖文件中写着 `torch>=1.8`）时也不报告：
那些版本没有 `use_reentrant=`。

## Why is this bad?
PyTorch 的激活检查点有两种实现。不传 `use_reentrant` 时，它选用旧的可重入实现，并发出警告：
这个参数必须显式传入，不传将来会报错（每次调用都会发出这条警告，Python 默认的过滤器每个进程只显示一次）。
可重入实现还有一个静默的问题：当传给被检查点函数的张量都不需要梯度时
（网络的第一个块、或者前面是冻结的 embedding 时很常见），它的输出没有连回这个块的计算图，块里的参数完全得不到梯度，
永远不会被训练，只留下一条警告。它也不支持 `torch.autograd.grad`、被检查点函数的关键字参数以及某些嵌套结构。
非可重入实现（`use_reentrant=False`）没有这些问题，也是 PyTorch 推荐的做法。

## Symptoms
每次这样的调用都会发出，Python 默认的警告过滤器只显示一次（torch 2.13）：
`UserWarning: torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly.
Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception.
use_reentrant=False is recommended, but if you need to preserve the current default behavior,
you can pass use_reentrant=True. Refer to docs for more details on the differences between the
two variants.`
（`checkpoint_sequential` 的文字是 `the use_reentrant parameter should be passed explicitly. In
version 2.9 we will raise an exception if use_reentrant is not passed.`）没有输入需要梯度时：
`UserWarning: None of the inputs have requires_grad=True. Gradients will be None`，随后被检查点包裹的层的
`.grad` 一直是 `None`；如果损失中没有别的部分需要梯度，则报错
`element 0 of tensors does not require grad and does not have a grad_fn`。

## Fix safety
修复在调用中加上 `use_reentrant=False`。这个修复不安全，因为两种实现并不在所有程序中表现一致：在可重入实现下
默默得不到梯度的层会开始训练（这正是修复的目的，但会改变训练结果）；非可重入实现会检查重算的前向保存的张量是否相同，
不同就报错（前向依赖全局状态而走了不同分支，或两次计算形状不同）；依赖可重入实现细节的代码（重算计算图上的 hook、
DDP 静态图的变通写法）也可能得到不同的结果。需要保持旧行为的地方，请改传 `use_reentrant=True`。

## Known problems
函数是按导入识别的，所以它的包装（`functools.partial(checkpoint, ...)`、转调它的项目函数）以及其他库的检查点函数
（DeepSpeed、fairscale）不会被报告。在 112 个真实项目上它报告了 10 处调用，全部属实
（transformers、kornia、diffusers、espnet、fairseq）；timm 和大多数库已经传了这个参数，或通过会传它的包装函数调用。

## References
- PyTorch 文档 `torch.utils.checkpoint`：两种实现的区别。
- TorchFix TOR003，同样的检查。
""",
    },
    example="""
from torch.utils.checkpoint import checkpoint

def forward(self, x):
    return checkpoint(self.block, x)
""",
    use_instead="""
from torch.utils.checkpoint import checkpoint

def forward(self, x):
    return checkpoint(self.block, x, use_reentrant=False)
""",
)


# The reentrant variant's warning when the block's input does not require grad (a frozen
# embedding before it, or inputs straight from the data): its parameters get no gradient.
PITFALL.error(
    r"None of the inputs have requires_grad=True\. Gradients will be None",
    types=(),
    confidence=0.85,
    cause={
        "en": "The reentrant `torch.utils.checkpoint` (the old default) got no input that "
        "requires grad, so the checkpointed block is cut from the graph: its parameters get no "
        "gradient and are not trained.",
        "zh": "可重入的 `torch.utils.checkpoint`（旧的默认实现）没有收到任何需要梯度的输入，"
        "于是被检查点包裹的模块脱离了计算图：它的参数得不到梯度，也就不会被训练。",
    },
    fix={
        "en": "Pass `use_reentrant=False`, which propagates gradients to the block's parameters "
        "whatever its inputs (for Hugging Face models: `gradient_checkpointing_enable("
        'gradient_checkpointing_kwargs={"use_reentrant": False})`).',
        "zh": "传入 `use_reentrant=False`，它无论输入如何都会把梯度传给模块的参数（Hugging Face 模型："
        '`gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})`）。',
    },
)

PITFALL.error(
    # (a terminal or a log may wrap the warning anywhere between its words; a logger or an
    # issue quotes it without its "torch.utils.checkpoint:" prefix, or only its second sentence,
    # or retells that sentence in a title: "If use_reentrant is not explicitly passed, an
    # exception will now be raised")
    r"torch\.utils\.checkpoint(?:\.(?P<function>checkpoint_sequential))?:\s+(?:the\s+"
    r"use_reentrant\s+parameter\s+should\s+be\s+passed\s+explicitly|please\s+pass\s+in\s+"
    r"use_reentrant=True\s+or\s+use_reentrant=False\s+explicitly)"
    r"|use_reentrant\s+parameter\s+should\s+be\s+passed\s+explicitly"
    r"|use_reentrant\s+is\s+not\s+(?:explicitly\s+)?passed",
    types=(),
    confidence=0.95,
    cause={
        "en": "`torch.utils.checkpoint` is called without `use_reentrant=`, so PyTorch picks the "
        "reentrant variant, warns, and will raise in a later release.",
        "zh": "调用 `torch.utils.checkpoint` 时没有传 `use_reentrant=`，PyTorch 因此选用可重入实现、发出警告，"
        "并会在以后的版本中报错。",
    },
    fix={
        "en": "Pass `use_reentrant=False` to every `checkpoint` / `checkpoint_sequential` call "
        "(or `use_reentrant=True` to keep the old behaviour).",
        "zh": "给每个 `checkpoint` / `checkpoint_sequential` 调用传入 `use_reentrant=False`"
        "（要保持旧行为则传 `use_reentrant=True`）。",
    },
)

FUNCTIONS = {
    "torch.utils.checkpoint.checkpoint": "checkpoint",
    "torch.utils.checkpoint.checkpoint_sequential": "checkpoint_sequential",
}
# checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs): its fourth
# positional argument is the flag; checkpoint's flag is keyword-only.
POSITIONAL_FLAG = {"checkpoint_sequential": 3}
# The release that added `use_reentrant=`: passing it to an older torch is a TypeError.
USE_REENTRANT_SINCE = "1.11"


@PITFALL.static(ast.Call, names=POSITIONAL_FLAG.keys() | {"checkpoint"}, imported=True)
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    func = call.func
    # Cheap gates before resolving the name: an attribute keeps the function's own name
    # (`cp.checkpoint`); only a bare imported name can be an alias of it. The engine calls it
    # only for these names, bare or imported under another (see `imported`); the gates still
    # turn away a bare name of these that no import binds.
    if type(func) is ast.Attribute:
        if func.attr not in POSITIONAL_FLAG and func.attr != "checkpoint":
            return
    elif type(func) is not ast.Name or func.id not in ctx.imported:
        return
    function = FUNCTIONS.get(ctx.qualname(func) or "")
    if function is None or not (call.args or call.keywords):
        return
    if any(k.arg is None or k.arg == "use_reentrant" for k in call.keywords):
        return  # the flag is given, or may be inside **kwargs
    position = POSITIONAL_FLAG.get(function)
    if position is not None and (
        len(call.args) > position or any(type(a) is ast.Starred for a in call.args)
    ):
        return  # the flag passed by position, or maybe inside *args
    if ctx.project.supports_before("torch", USE_REENTRANT_SINCE):
        return  # the project promises a torch that has no such argument
    fix = ctx.fix(PITFALL, "unsafe", _add_flag(call, ctx))
    yield ctx.finding(PITFALL, call, fix=fix, function=ctx.text(func))


def _add_flag(call: ast.Call, ctx: Context) -> Edit:
    """`use_reentrant=False` after the last argument, keeping a trailing comma and comments."""
    last = max([*call.args, *call.keywords], key=lambda n: (n.end_lineno, n.end_col_offset))
    start = ctx.span(last)[1]
    close = ctx.span(call)[1] - 1  # the call's `)`
    between = ctx.source[start:close]
    # Only closing parentheses, commas, blanks and comments lie between: blank the comments.
    code = "\n".join(line.split("#", 1)[0] for line in between.split("\n"))
    comma = code.find(",")
    if comma >= 0:
        at = start + comma + 1
        return ctx.edit(at, at, " use_reentrant=False,")
    at = start + len(code.rstrip())  # after the closing `)` of a parenthesized argument
    return ctx.edit(at, at, ", use_reentrant=False")
