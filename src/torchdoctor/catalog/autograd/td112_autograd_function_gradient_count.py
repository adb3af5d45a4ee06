"""TD112 autograd-function-gradient-count: a custom `backward` returns too few or too many grads."""

from __future__ import annotations

import re

from torchdoctor.catalog.sdk import Clue, Pitfall

PITFALL = Pitfall(
    code="TD112",
    name="autograd-function-gradient-count",
    title={
        "en": "Custom autograd Function returns the wrong number of gradients",
        "zh": "自定义 autograd Function 返回的梯度个数不对",
    },
    messages={
        "": {
            "en": "The `backward` of a custom `torch.autograd.Function` must return one gradient "
            "per argument of `forward`, `None` for those that need none",
            "zh": "自定义 `torch.autograd.Function` 的 `backward` 必须为 `forward` 的每个参数各返回一个梯度，"
            "不需要梯度的参数返回 `None`",
        }
    },
    fix_hint={
        "en": "Make `backward` return a tuple with exactly one entry per argument of `forward` "
        "(after `ctx`), in the same order, using `None` for arguments that are not "
        "tensors or need no gradient: `return grad_x, None`.",
        "zh": "让 `backward` 返回一个元组，元素个数与 `forward` 的参数（`ctx` 之后）一一对应、顺序相同，"
        "非张量或不需要梯度的参数对应 `None`：`return grad_x, None`。",
    },
    root_causes=("legacy-autograd-function",),
    docs={
        "en": """
## What it catches
The autograd error raised when the `backward` of a custom `torch.autograd.Function` returns
a different number of values than `forward` took arguments: `function MyFnBackward returned an
incorrect number of gradients (expected 2, got 1)`, and its relative `returned a gradient
different than None at position N, but the corresponding forward input was not a Variable`.

## Why is this bad?
Autograd matches the values returned by `backward` to the inputs of `forward` by position:
the first returned value is the gradient of the first argument after `ctx`, and so on. Every
argument needs an entry, including options such as a scale, a flag or a non-differentiable
tensor: those get `None`. Returning only the gradient of the tensor you care about, or
forgetting an argument added to `forward` later, breaks the whole backward pass. The name in
the message is the Function's class name followed by `Backward`.

## Symptoms
`RuntimeError: function ScaleGradBackward returned an incorrect number of gradients (expected
2, got 1)`; for a gradient returned for a non-tensor argument: `RuntimeError: function
ScaleGradBackward returned a gradient different than None at position 2, but the corresponding
forward input was not a Variable`.

## References
- https://pytorch.org/docs/stable/notes/extending.html
""",
        "zh": """
## What it catches
自定义 `torch.autograd.Function` 的 `backward` 返回值的个数与 `forward` 的参数个数不一致时，
autograd 抛出的错误：`function MyFnBackward returned an incorrect number of gradients (expected
2, got 1)`，以及与之相关的 `returned a gradient different than None at position N, but the
corresponding forward input was not a Variable`。

## Why is this bad?
autograd 按位置把 `backward` 的返回值与 `forward` 的输入对应起来：第一个返回值是 `ctx` 之后第一个参数的梯度，
依此类推。每个参数都要有对应的返回值，包括缩放系数、开关这类选项和不可导的张量，它们对应 `None`。
只返回你关心的那个张量的梯度，或者后来给 `forward` 加了参数却忘了改 `backward`，都会让整个反向传播失败。
报错中的名字是 Function 的类名加上 `Backward`。

## Symptoms
`RuntimeError: function ScaleGradBackward returned an incorrect number of gradients (expected
2, got 1)`；为非张量参数返回了梯度时：`RuntimeError: function ScaleGradBackward returned a
gradient different than None at position 2, but the corresponding forward input was not a
Variable`。

## References
- https://pytorch.org/docs/stable/notes/extending.html
""",
    },
    example="""
import torch


class ScaleGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.scale


x = torch.randn(3, requires_grad=True)
ScaleGrad.apply(x, 0.5).sum().backward()
""",
    use_instead="""
import torch


class ScaleGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.scale, None


x = torch.randn(3, requires_grad=True)
ScaleGrad.apply(x, 0.5).sum().backward()
""",
)

_COUNT = re.compile(
    r"function (?P<backward>\w+) returned an incorrect number of gradients "
    r"\(expected (?P<expected>\d+), got (?P<got>\d+)\)"
)
# `torch.library.register_autograd`: the backward formula registered for a custom operator.
_OPERATOR_COUNT = re.compile(
    r"The backward formula for (?P<operator>[\w.:]+) returned an incorrect number of "
    r"gradients \(expected (?P<expected>\d+), got (?P<got>\d+)\)"
)
_NOT_NONE = re.compile(
    r"function (?P<backward>\w+) returned a gradient different than None "
    r"at position (?P<position>\d+), but the corresponding forward input "
    r"was not a Variable"
)

_CAUSE_COUNT = {
    "en": "The `backward` of `{function}` returned {got} value(s), but its `forward` takes "
    "{expected} argument(s) after `ctx`: `backward` must return one gradient per "
    "argument, `None` for options and non-differentiable inputs.",
    "zh": "`{function}` 的 `backward` 返回了 {got} 个值，但它的 `forward` 在 `ctx` 之后有 {expected} "
    "个参数：`backward` 必须为每个参数返回一个梯度，选项和不可导的输入返回 `None`。",
}
_CAUSE_NOT_NONE = {
    "en": "The `backward` of `{function}` returned a gradient at position {position} for a "
    "`forward` argument that is not a tensor: return `None` there.",
    "zh": "`{function}` 的 `backward` 在第 {position} 个位置为一个不是张量的 `forward` 参数返回了梯度："
    "那里应返回 `None`。",
}

_CAUSE_OPERATOR_COUNT = {
    "en": "The backward formula registered for the operator `{operator}` returned {got} "
    "gradient(s), but the operator has {expected} input(s): it must return exactly one per "
    "input, `None` for those that need no gradient.",
    "zh": "为算子 `{operator}` 注册的反向公式返回了 {got} 个梯度，但该算子有 {expected} 个输入："
    "必须为每个输入恰好返回一个梯度，不需要梯度的输入返回 `None`。",
}


@PITFALL.error_check(
    types=("RuntimeError",), words=("incorrect number of gradients", "gradient different than none")
)
def check_gradient_count(block, report):
    for pattern, confidence, cause in (
        (_COUNT, 0.95, _CAUSE_COUNT),
        (_NOT_NONE, 0.85, _CAUSE_NOT_NONE),
    ):
        found = pattern.search(block.message)
        if found is not None:
            fields = found.groupdict()
            # `MyFnBackward` is the node of Function `MyFn`.
            fields["function"] = fields["backward"].removesuffix("Backward")
            return Clue(confidence, cause, None, fields)
    found = _OPERATOR_COUNT.search(block.message)
    if found is not None:
        return Clue(0.95, _CAUSE_OPERATOR_COUNT, None, found.groupdict())
    return None


# Retold without `function ` or an exception class (an issue's title: `GenredAutogradBackward
# returned an incorrect number of gradients (expected 14, got 13)`): autograd's own words, raised
# nowhere else, so any text that carries them.
PITFALL.error(
    r"returned an incorrect number of gradients \(expected (?P<expected>\d+), got (?P<got>\d+)\)",
    types=(),
    confidence=0.9,
    cause={
        "en": "The `backward` of a custom autograd Function (or a registered backward formula) "
        "returned {got} value(s) for {expected} input(s): it must return one gradient per "
        "argument of `forward`, `None` for options and non-differentiable inputs.",
        "zh": "自定义 autograd Function 的 `backward`（或注册的反向公式）为 {expected} 个输入返回了 "
        "{got} 个值：必须为 `forward` 的每个参数返回一个梯度，选项和不可导的输入返回 `None`。",
    },
)
