"""TD101 loss-data-index: `loss.data[0]` indexes a 0-dim tensor (warned in 0.4, an IndexError since 1.0)."""

from __future__ import annotations

import ast
from typing import Callable

from torchdoctor.catalog.sdk import (
    is_parameter,
    is_name,
    imported_roots,
    in_compat_fallback,
    builds_a_loss_module,
    reaching_assignment,
    assigned_before,
    tensor_rank,
    Clue,
    Context,
    Finding,
    Kind,
    Pitfall,
    attribute_values,
    backward_without_gradient,
    bindings,
    computes_a_loss,
    index_of,
    methods_defined_once,
    moves_itself,
    passed_by_every_call,
    extra_keywords_of_every_call,
    is_self_attribute,
    dotted_name,
    root_name,
    index,
    lineage,
    per_file,
    scope_of,
    names_assigned,
    shorten,
    top_level_functions,
)

PITFALL = Pitfall(
    code="TD101",
    name="loss-data-index",
    title={"en": "Indexing a 0-dim tensor with `.data[0]`", "zh": "用 `.data[0]` 索引 0 维张量"},
    messages={
        "": {
            "en": "`{expr}` indexes a 0-dim tensor, which raises IndexError since PyTorch 1.0 "
            "(0.4 warned): use `.item()`",
            "zh": "`{expr}` 在索引一个 0 维张量，从 PyTorch 1.0 起会抛出 IndexError（0.4 只是警告）：请改用 `.item()`",
        }
    },
    fix_title={"en": "Replace `.data[0]` with `.item()`", "zh": "把 `.data[0]` 换成 `.item()`"},
    fix_applicability="safe",
    fix_hint={
        "en": "Replace `loss.data[0]` (or `loss[0]`) with `loss.item()` to get the Python "
        "number; `.item()` works on every version since PyTorch 0.4.",
        "zh": "把 `loss.data[0]`（或 `loss[0]`）换成 `loss.item()` 来取得 Python 数字；"
        "`.item()` 在 PyTorch 0.4 之后的所有版本中都可用。",
    },
    docs={
        "en": """
## What it catches
`X.data[0]` where `X` is known to be a 0-dim tensor: the result of a loss (calling an
`nn.*Loss` module such as `nn.CrossEntropyLoss()`, or a functional loss such as
`F.cross_entropy` / `F.mse_loss`), a full reduction (`x.sum()`, `x.mean()`, `x.norm()`,
`torch.sum(x)`, ..., or the built-in `sum` of one per item: `sum([p.norm() for p in
params])`; a reduction along the one dimension of a tensor the code makes 1-D:
`correct.view(-1).float().sum(0)`), an element picked by as many integer indices as the
tensor has dimensions (`flat[0, i]` of `flat = x.view(n, -1)`, `i` a `range` loop's variable)
or `torch.tensor(3.0)`, also scaled by a number, a setting or one size of a
tensor or its count of elements (`loss / x.size(0)`, `total / x.size()[0]`, `hits / t.nelement()`),
directly or through a name or `self.` attribute
assigned only such values (a `loss = 0` before `loss += ...` or `loss = loss + ...` included;
not counting the statement of the read itself: `test_loss = test_loss.data[0] / n`) or whose
assignment that reaches the read is one. `x.sum().data[0]` and `x.mean().data[0]` are reported
whatever `x` is, even in a file that never imports torch: numpy's scalars cannot be indexed
either. So is the same index read after moves or through numpy (`loss.data.cpu()[0]`,
`loss.cpu().data.numpy()[0]`: a 0-dim array has no element 0 either). Where the loss comes
from out of sight (a criterion passed in,
the project's own function or class), the code's own words count: a callee named as a loss
(`criterion(...)`, `loss_fn(...)`, `self.compute_loss(...)`, `FocalLoss(gamma=2)(x, y)`,
`self.loss_function.forward(...)`),
or `loss.backward()` called with no gradient (also of the loss scaled: `loss.div(n).backward()`,
`(loss / n).backward()`), which autograd allows only for a scalar (and so
for each term of a sum back-propagated so: `loss = loss_l + loss_c`, then `loss.backward()`,
or `total += loss` in a loop, then `total.backward()`; for `self.loss_G`, a
`self.loss_G.backward()` in any method of the class). So do the entries, by string keys, of a
dict named for its losses one entry of which the file back-propagates so
(`self._losses["total_loss"].backward()`, then `self._losses["cross_entropy"].data[0]`).
A call of a method of the same class (`self.td_step()`) or a function of the file counts when
every `return` of it gives such a value. So does an item of a collection named for its losses
(`for loss in losses:`, `[l.data[0] for l in losses]`) that the function adds up into one loss
in a loop (`total = total + loss`, or `loss += l` over `losses[1:]`), and a parameter every
call of its function in the file hands such a value (`report_loss(epoch, d_loss, g_loss)`,
given what a training step returned). Losses
built with `reduction="none"` and reductions over a `dim` are not reported, nor is
`out.data[0]` on a model output or any tensor whose shape the doctor cannot tell, nor code kept
for torch before 0.4 behind a version test (`else:  # for 0.3.x`). In a file that imports
warp-ctc (`from warpctc_pytorch import CTCLoss`, whose loss has shape `(1,)`, one element that
`.backward()` takes and `.data[0]` reads), neither a backward nor a callee's name makes a loss
0-dim; only the losses of torch count. Nor is a loss the file makes with one element
(`loss = torch.zeros(1)`, perhaps in a `Variable`, then updated in place) or takes from a
function of the file every `return` of which gives one (Hybrid-Code-Networks'
`categorical_cross_entropy`): shape `(1,)`, whatever its name or backward says.

Also `total[0]` (no `.data`) on a total started at a number and added 0-dim values to:
`total = 0`, then `total += loss.data * len(batch)`, code written when `loss.data` was a
1-element tensor. A plain `loss[0]` that is no such total is left alone.

## Why is this bad?
Before PyTorch 0.4 a loss was a `Variable` holding a 1-element tensor, and `loss.data[0]` was
the way to read it as a Python number. Since 0.4 losses and full reductions are 0-dim tensors
(scalars): they have no dimension to index; 0.4 warned ("This will be an error in PyTorch 0.5"),
and since 1.0 the old idiom found in many tutorials crashes.
`.item()` returns the Python number and works on every version since 0.4.

## Symptoms
`IndexError: invalid index of a 0-dim tensor. Use `tensor.item()` in Python or
`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number`

## Known problems
A value whose origin is out of sight is reported only on the evidence above: a loss returned by
a function named otherwise (`out = step(batch)`) and never passed to `.backward()` is not. Nor
is the result of a function of the file whose every `return` is unreduced arithmetic (`return
(pred - y) * (pred - y)`), even if named as a loss and back-propagated: it has the shape of its
inputs, and one-element inputs (`torch.Tensor([0.0])`) make a valid `.data[0]`. What a closure
returns is a loss only in an optimizer's `step(self, closure)`.
""",
        "zh": """
## What it catches
对已知是 0 维张量的 `X` 写 `X.data[0]`：`X` 是损失函数的结果（调用 `nn.CrossEntropyLoss()`
这类 `nn.*Loss` 模块，或 `F.cross_entropy`、`F.mse_loss` 这类函数式损失），是对全部元素的归约
（`x.sum()`、`x.mean()`、`x.norm()`、`torch.sum(x)` 等，或对每一项各做一次这种归约再用内置 `sum` 相加：
`sum([p.norm() for p in params])`；代码已变成一维的张量沿它唯一的维度归约：`correct.view(-1).float().sum(0)`），
或用与张量维数一样多的整数下标取出的单个元素（`flat = x.view(n, -1)` 之后的 `flat[0, i]`，`i` 是 `range` 循环的变量），
或是 `torch.tensor(3.0)`，也包括它们乘除一个数、一个设置项、张量的某一维大小或元素个数
（`loss / x.size(0)`、`total / x.size()[0]`、`hits / t.nelement()`）；也包括只被赋过这类值的变量
或 `self.` 属性（含先 `loss = 0` 再 `loss += ...` 或 `loss = loss + ...` 的累加；读取所在的语句本身
不算：`test_loss = test_loss.data[0] / n`），或到达这次读取的那次赋值给出这类值。
`x.sum().data[0]` 和 `x.mean().data[0]` 不论 `x` 是什么都会报告，即使文件从不导入 torch：numpy 的标量同样不能下标访问。
移动之后或经过 numpy 再取同一个下标也一样（`loss.data.cpu()[0]`、`loss.cpu().data.numpy()[0]`：
0 维数组同样没有第 0 个元素）。
当损失的来源看不到时（作为参数传入的 criterion、项目自己的函数或类），以代码自身的用法为证：被调用者的
名字表明它是损失（`criterion(...)`、`loss_fn(...)`、`self.compute_loss(...)`、`FocalLoss(gamma=2)(x, y)`、
`self.loss_function.forward(...)`），
或对它不带梯度参数调用了 `loss.backward()`（也包括缩放后的损失：`loss.div(n).backward()`、
`(loss / n).backward()`）——autograd 只允许对标量这样做
（因此这样反向传播的和的每一项也是标量：`loss = loss_l + loss_c` 之后 `loss.backward()`，
或者在循环中 `total += loss` 之后 `total.backward()`；对 `self.loss_G` 而言，类中任一方法里的
`self.loss_G.backward()` 也算）。以损失命名的字典中以字符串为键的条目也是如此，
只要本文件对其中某个条目这样反向传播过（`self._losses["total_loss"].backward()`，
之后 `self._losses["cross_entropy"].data[0]`）。
调用同一个类的方法（`self.td_step()`）或本文件的函数时，如果它的每个 `return` 都给出这样的值，也算在内。
以损失命名的集合（`for loss in losses:`、`[l.data[0] for l in losses]`）中的元素，如果函数在循环里把它们逐项加成
一个损失（`total = total + loss`，或对 `losses[1:]` 做 `loss += l`），也算在内；本文件中每次调用都传入这类值的
函数参数也算（`report_loss(epoch, d_loss, g_loss)`，传入的是训练步骤返回的损失）。
使用 `reduction="none"` 的损失、指定了 `dim` 的归约都不会报告；模型输出 `out.data[0]`
以及无法确定形状的张量同样不报告；在版本判断之后为 0.4 之前的 torch 保留的代码（`else:  # for 0.3.x`）也不报告。
在导入了 warp-ctc 的文件里（`from warpctc_pytorch import CTCLoss`，它的损失形状是 `(1,)`：只有一个元素，
`.backward()` 可以接受，`.data[0]` 也能读取），`.backward()` 和被调用者的名字都不能说明损失是 0 维的，
只有 torch 自己的损失才算。文件自己用一个元素创建的损失（`loss = torch.zeros(1)`，可能包在 `Variable` 里，
之后原地更新），或者从本文件中每个 `return` 都返回这种值的函数得到的损失（Hybrid-Code-Networks 的
`categorical_cross_entropy`），形状是 `(1,)`，不论它的名字或 backward 怎么说，都不报告。

也包括对累加量写 `total[0]`（没有 `.data`）：先 `total = 0`，再 `total += loss.data * len(batch)`，
这是 `loss.data` 还是单元素张量时写下的代码。不是这种累加量的 `loss[0]` 不报告。

## Why is this bad?
PyTorch 0.4 之前，损失是一个包着单元素张量的 `Variable`，`loss.data[0]` 是把它读成 Python
数字的标准写法。从 0.4 开始，损失和全局归约的结果都是 0 维张量（标量），没有可以索引的维度：
0.4 只给出警告（“This will be an error in PyTorch 0.5”），从 1.0 起很多老教程里的这个写法会直接报错。
`.item()` 返回对应的 Python 数字，0.4 之后的所有版本都可用。

## Symptoms
`IndexError: invalid index of a 0-dim tensor. Use `tensor.item()` in Python or
`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number`

## Known problems
来源看不到的值只凭上述证据报告：由名字看不出是损失的函数返回（`out = step(batch)`）、又从未调用
`.backward()` 的值不会被报告。文件中某个函数的每个 `return` 都是未归约的算术（`return (pred - y) * (pred - y)`）时，
它的结果也不报告，即使函数名像损失、结果也做了反向传播：结果的形状取决于输入，单元素输入
（`torch.Tensor([0.0])`）下 `.data[0]` 是合法的。闭包的返回值只在优化器的 `step(self, closure)` 中才当作损失。
""",
    },
    example="""
import torch.nn as nn

criterion = nn.CrossEntropyLoss()


def train_step(model, images, labels, total_loss):
    loss = criterion(model(images), labels)
    loss.backward()
    return total_loss + loss.data[0]
""",
    use_instead="""
import torch.nn as nn

criterion = nn.CrossEntropyLoss()


def train_step(model, images, labels, total_loss):
    loss = criterion(model(images), labels)
    loss.backward()
    return total_loss + loss.item()
""",
)

_INDEXED_CAUSE = {
    "en": "A 0-dim tensor (a loss, a `.sum()` or `.mean()`, a scalar) was indexed, usually "
    "with the pre-0.4 idiom `loss.data[0]`: since PyTorch 0.4 these are scalars "
    "with no dimension to index.",
    "zh": "对一个 0 维张量（损失、`.sum()` 或 `.mean()` 的结果、标量）做了索引，通常是 0.4 之前的写法 "
    "`loss.data[0]`：从 PyTorch 0.4 起它们是标量，没有可索引的维度。",
}
PITFALL.error(
    r"invalid index of a 0-dim tensor",
    types=("IndexError",),
    confidence=0.95,
    cause=_INDEXED_CAUSE,
)


@PITFALL.error_check(types=(), words=("invalid index of a 0-dim tensor",))
def invalid_index_in_text(block, report) -> Clue | None:
    """torch's message where no exception was parsed: an issue's title above a traceback whose
    last line was not pasted."""
    if block.short_type or report.exceptions:
        return None  # an exception shown is the story, read with its class
    if "invalid index of a 0-dim tensor" not in block.message.lower():
        return None
    return Clue(0.8, _INDEXED_CAUSE)  # below the message read with its class, or pasted alone


# Retold, as issue and pull-request titles put it: "Fix index of 0-dim tensor is invalid in
# Pytorch>=0.5", "indexing a 0-dim tensor is not allowed".
PITFALL.error(
    r"index(?:ing)? (?:of |into )?(?:a )?0-dim(?:ensional)? tensors? (?:is|are) "
    r"(?:invalid|not allowed|not supported)",
    types=("IndexError",),
    confidence=0.85,
    cause={
        "en": "A 0-dim tensor (a loss, a `.sum()` or `.mean()`) is indexed, as the pre-0.4 "
        "idiom `loss.data[0]` does: since PyTorch 0.4 these are scalars with no dimension "
        "to index.",
        "zh": "对 0 维张量（损失、`.sum()` 或 `.mean()` 的结果）做了索引，就像 0.4 之前的写法 "
        "`loss.data[0]`：从 PyTorch 0.4 起它们是标量，没有可索引的维度。",
    },
)

# Functional losses and how many tensor arguments they take before the options; they return a
# 0-dim tensor unless `reduction="none"` (or the legacy `reduce=False`) is passed.
FUNCTIONAL_LOSSES = {
    "cross_entropy": 2,
    "nll_loss": 2,
    "mse_loss": 2,
    "l1_loss": 2,
    "smooth_l1_loss": 2,
    "huber_loss": 2,
    "binary_cross_entropy": 2,
    "binary_cross_entropy_with_logits": 2,
    "kl_div": 2,
    "poisson_nll_loss": 2,
    "soft_margin_loss": 2,
    "multilabel_margin_loss": 2,
    "multilabel_soft_margin_loss": 2,
    "multi_margin_loss": 2,
    "hinge_embedding_loss": 2,
    "gaussian_nll_loss": 3,
    "cosine_embedding_loss": 3,
    "margin_ranking_loss": 3,
    "triplet_margin_loss": 3,
    "triplet_margin_with_distance_loss": 3,
    "ctc_loss": 4,
}
SCALAR_REDUCTIONS = frozenset({"mean", "sum", "batchmean", "elementwise_mean"})
# `nn.*Loss` classes whose call does not return one scalar.
NON_SCALAR_LOSS_CLASSES = frozenset({"AdaptiveLogSoftmaxWithLoss"})
LOSS_MODULE_PATHS = frozenset({"torch.nn", "torch.nn.modules", "torch.nn.modules.loss"})

# Reductions over all elements when called without a dim: `x.sum()` is 0-dim, `x.sum(1)` is not.
# Value: how many positional arguments still reduce everything (`x.norm(2)`: p; `x.dot(y)`).
FULL_REDUCTION_METHODS = {
    "sum": 0,
    "mean": 0,
    "prod": 0,
    "std": 0,
    "var": 0,
    "max": 0,
    "min": 0,
    "amax": 0,
    "amin": 0,
    "all": 0,
    "any": 0,
    "median": 0,
    "nansum": 0,
    "nanmean": 0,
    "norm": 1,
    "dot": 1,
}
# The same as torch functions: the tensor argument(s) come first.
FULL_REDUCTION_FUNCTIONS = {
    "sum": 1,
    "mean": 1,
    "prod": 1,
    "std": 1,
    "var": 1,
    "max": 1,
    "min": 1,
    "amax": 1,
    "amin": 1,
    "all": 1,
    "any": 1,
    "median": 1,
    "nansum": 1,
    "nanmean": 1,
    "norm": 2,
    "dot": 2,
    "dist": 2,
}
# Keywords that keep a full reduction full.
REDUCTION_OPTIONS = frozenset({"dtype", "p", "unbiased", "correction"})
SCALAR_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
# Element-wise functions and methods: of a 0-dim tensor they give a 0-dim tensor
# (`torch.abs(diff)`, `loss.exp()`, `loss.detach()`), and so do the in-place methods, which
# return their receiver (`.sum().mul_(.5)`: visualize_atari's saliency score).
_ELEMENTWISE_NAMES = (
    "abs exp log log2 log10 log1p sqrt rsqrt neg sigmoid tanh relu square sin cos floor ceil "
    "round clamp clip mul add sub div pow".split()
)
ELEMENTWISE = frozenset(
    [*_ELEMENTWISE_NAMES, *(f"{name}_" for name in _ELEMENTWISE_NAMES)]
    + "detach detach_ clone float double half cpu cuda to".split()
)


@PITFALL.static(ast.Subscript, names={"data"})
def check(node: ast.Subscript, ctx: Context) -> list[Finding] | None:
    data = node.value
    index = node.slice
    if type(index) is not ast.Constant or type(index.value) is not int or index.value != 0:
        return None
    if type(node.ctx) is not ast.Load:  # `x.data[0] = v` is a different story
        return None
    value = data.value
    if _under_a_shape_test(value, ctx):
        return None  # da_rnn's `if len(loss.data.shape) > 0: return loss.data[0]`
    if not (
        is_zero_dim(value, ctx)
        or _zero_dim_where_read(value, ctx)
        or _loss_of_a_loss_dict(value, node, ctx)
        or _whole_sum(value)
        or _total_rebound_by_its_read(value, ctx)
    ):
        return None
    if in_compat_fallback(ctx):
        return None  # `else:  # for the old version like 0.3.0`: never runs on today's torch
    # Replace `data[0]` by `item()`: the text before it, parentheses included, stays.
    data_end = ctx.span(data)[1]
    fix = ctx.fix(PITFALL, "safe", ctx.edit(data_end - len("data"), ctx.span(node)[1], "item()"))
    return [ctx.finding(PITFALL, node, fix=fix, expr=shorten(ctx.text(node)))]


def _total_rebound_by_its_read(value: ast.AST, ctx: Context) -> bool:
    """`test_loss = test_loss.data[0] / n` after `test_loss = 0` and `test_loss +=
    loss_criterion(out, y)` in the loop (meta-learning-adjusting-priors' `run_test`): the
    statement of the read rebinds the name, so its own value cannot reach the read; every other
    binding says 0-dim."""
    if type(value) is not ast.Name:
        return False
    statement = next((node for node in reversed(ctx.ancestors) if isinstance(node, ast.stmt)), None)
    if type(statement) is not ast.Assign or not any(
        is_name(target, value.id) for target in statement.targets
    ):
        return False
    scope = scope_of(value.id, ctx)
    found = [b for b in bindings(ctx, scope, value.id) or () if b.node is not statement]
    return _all_bound_to(
        found, lambda made: is_zero_dim(made, ctx, frozenset({value.id}), scope), accumulator=True
    )


def _whole_sum(value: ast.AST) -> bool:
    """`loss.sum()` or `.mean()` with no argument, whatever `loss` is: a 0-dim tensor, or
    numpy's scalar, whose `.data` cannot be indexed either (qqiang00/Reinforce's agents, which
    never import torch: `loss.sum().data[0]` of the loss a project's `fit` returns)."""
    return (
        type(value) is ast.Call
        and type(value.func) is ast.Attribute
        and value.func.attr in ("sum", "mean")
        and not value.args
        and not value.keywords
    )


def _loss_of_a_loss_dict(value: ast.AST, read: ast.Subscript, ctx: Context) -> bool:
    """pix2pixHD's print of its losses, copied by vid2vid, EverybodyDanceNow and others:
    `losses = [torch.mean(x) if not isinstance(x, int) else x for x in losses]`, `loss_dict =
    dict(zip(model.loss_names, losses))`, then `{k: v.data[0] if not isinstance(v, int) else v
    for k, v in loss_dict.items()}`: `v`, taken from the dict by the comprehension around the
    read, is one of those means wherever the read's own test lets it be read."""
    if type(value) is not ast.Name:
        return False
    guarded = False
    for above, _ in lineage(read, index(ctx).parents):
        if isinstance(above, _COMPREHENSIONS):
            break
        guarded = guarded or type(above) is ast.IfExp and _tests_a_number(above.test, value.id)
    else:
        return False
    if not guarded:
        return False
    for generator in above.generators:  # type: ignore[attr-defined]
        target, source = generator.target, generator.iter
        if not (
            type(target) is ast.Tuple
            and len(target.elts) == 2
            and is_name(target.elts[1], value.id)
            and type(source) is ast.Call
            and not source.args
            and type(source.func) is ast.Attribute
            and source.func.attr == "items"
            and type(source.func.value) is ast.Name
        ):
            continue
        return _dict_of_means(source.func.value, ctx)
    return False


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _tests_a_number(test: ast.AST, name: str) -> bool:
    """`not isinstance(v, int)`: a test of whether `name` holds a Python number."""
    return any(
        type(node) is ast.Call
        and is_name(node.func, "isinstance")
        and node.args
        and is_name(node.args[0], name)
        for node in ast.walk(test)
    )


def _dict_of_means(name: ast.Name, ctx: Context) -> bool:
    """`name` reaches the read as `dict(zip(keys, values))`, where `values` was just made by a
    comprehension each item of which is 0-dim or, by a test of it, a Python number."""
    made = reaching_assignment(name.id, ctx, _zips_a_dict, name)
    if made is None:
        return False
    statement, position, block = made
    values = statement.value.args[0].args[1]  # type: ignore[attr-defined]
    if type(values) is not ast.Name:
        return False
    listed, _ = assigned_before(values.id, block, position, ctx)
    if type(listed) is not ast.ListComp:
        return False
    item = listed.elt
    if type(item) is ast.IfExp and _tests_a_number(item.test, _comprehension_name(listed)):
        return is_zero_dim(item.body, ctx) or is_zero_dim(item.orelse, ctx)
    return is_zero_dim(item, ctx)


def _zips_a_dict(value: ast.expr) -> bool:
    """`dict(zip(keys, values))`."""
    return (
        type(value) is ast.Call
        and is_name(value.func, "dict")
        and len(value.args) == 1
        and type(inner := value.args[0]) is ast.Call
        and is_name(inner.func, "zip")
        and len(inner.args) == 2
    )


def _comprehension_name(listed: ast.ListComp) -> str:
    target = listed.generators[0].target
    return target.id if type(target) is ast.Name else ""


# What a test of a tensor's dimensions reads: `x.dim()`, `x.ndim`, `len(x.shape)`, `x.numel()`.
_SHAPE_ATTRIBUTES = frozenset({"dim", "ndim", "ndimension", "shape", "size", "numel"})


def _under_a_shape_test(value: ast.AST, ctx: Context) -> bool:
    """An `if` around the read tests the dimensions of the value indexed: the author handles
    the 0-dim case apart."""
    root = root_name(value)
    if root is None:
        return False
    for ancestor in ctx.ancestors:
        if type(ancestor) is ast.If and any(
            type(node) is ast.Attribute
            and node.attr in _SHAPE_ATTRIBUTES
            and root_name(node.value) == root
            for node in ast.walk(ancestor.test)
        ):
            return True
    return False


def _zero_dim_where_read(value: ast.AST, ctx: Context) -> bool:
    """A name some statement of the file binds to something else, whose assignment that reaches
    this read is 0-dim (`output = model(x)` in one loop, `output = nn.CrossEntropyLoss()(x, y)`
    then `output.data[0]` in another); or a reduction along the one dimension of a name that the
    statements before it, in its block, last made 1-D (`correct = correct.view(-1)`, then `score
    = correct.float().sum(0).mul(100.0 / n)`, where `correct` was 2-D before)."""
    if type(value) is not ast.Name:
        return False
    found = reaching_assignment(
        value.id,
        ctx,
        lambda assigned: is_zero_dim(assigned, ctx) or _reduced_name(assigned) is not None,
        value,
    )
    if found is None:
        return False
    statement, position, block = found
    assigned = statement.value  # type: ignore[attr-defined]
    if is_zero_dim(assigned, ctx):
        return True
    reduced = _reduced_name(assigned)
    one_dimensional, _ = assigned_before(
        reduced.id,  # type: ignore[union-attr]
        block,
        position,
        ctx,
        in_place=True,
        wanted=lambda made: tensor_rank(made, ctx) == 1,
    )
    return one_dimensional is not None


def _reduced_name(value: ast.expr) -> ast.Name | None:
    """`correct` of `correct.float().sum(0).mul(100.0 / n)`: the name a reduction along one
    given dimension reads, through conversions before it and element-wise methods after."""
    while type(value) is ast.Call and type(value.func) is ast.Attribute:
        method = value.func.attr
        if method in ELEMENTWISE:
            value = value.func.value
            continue
        if method not in FULL_REDUCTION_METHODS or len(value.args) + len(value.keywords) != 1:
            return None
        receiver = value.func.value
        while (
            type(receiver) is ast.Call
            and type(receiver.func) is ast.Attribute
            and receiver.func.attr in ELEMENTWISE
            and not receiver.args
        ):
            receiver = receiver.func.value  # `.float()`, `.cuda()`
        return receiver if type(receiver) is ast.Name else None
    return None


@PITFALL.static(ast.Subscript)
def check_moved(node: ast.Subscript, ctx: Context) -> list[Finding] | None:
    """`loss.data.cpu()[0]` (open_type's `total_loss += loss.data.cpu()[0]`), and through numpy
    (`loss.data.cpu().numpy()[0]`: molecule_grammar_rnn; `loss.cpu().data.numpy()[0]`): the same
    index of the same 0-dim value, moved or converted first."""
    index = node.slice
    if type(index) is not ast.Constant or index.value != 0 or type(index.value) is not int:
        return None
    if type(node.ctx) is not ast.Load:
        return None
    base, steps = _unconverted(node.value)
    if base is node.value or not ("data" in steps and steps[-1] != "data" or "numpy" in steps):
        return None  # `loss.data[0]` is `check`'s; a move alone (`loss.cpu()[0]`) is no idiom
    if not is_zero_dim(base, ctx) or in_compat_fallback(ctx):
        return None
    fix = ctx.fix(PITFALL, "safe", ctx.edit(ctx.span(base)[1], ctx.span(node)[1], ".item()"))
    return [ctx.finding(PITFALL, node, fix=fix, expr=shorten(ctx.text(node)))]


# What may stand between a 0-dim value and its `[0]`: moves, `.data`, numpy's conversion.
_CONVERSIONS = frozenset({"cpu", "cuda", "numpy", "detach"})


def _unconverted(value: ast.AST) -> tuple[ast.AST, list[str]]:
    """`loss` of `loss.data.cpu().numpy()`, and the steps taken from it, in order."""
    steps: list[str] = []
    while True:
        if type(value) is ast.Attribute and value.attr == "data":
            steps.append("data")
            value = value.value
        elif (
            type(value) is ast.Call
            and not value.args
            and not value.keywords
            and type(value.func) is ast.Attribute
            and value.func.attr in _CONVERSIONS
        ):
            steps.append(value.func.attr)
            value = value.func.value
        else:
            return value, steps[::-1]


@PITFALL.static(ast.Subscript)
def check_accumulator(node: ast.Subscript, ctx: Context) -> list[Finding] | None:
    """`total[0]` where `total = 0` then `total += loss.data`: written for PyTorch 0.3, whose
    `loss.data` was a 1-element tensor; since 0.4 the total is 0-dim."""
    index = node.slice
    if type(index) is not ast.Constant or type(index.value) is not int or index.value != 0:
        return None
    total = node.value
    if type(total) is not ast.Name or type(node.ctx) is not ast.Load:
        return None
    if total.id not in names_assigned(ctx, _is_number):  # most `x[0]`: no bindings read
        return None
    if not _zero_dim_accumulator(ctx, scope_of(total.id, ctx), total.id):
        return None
    fix = ctx.fix(PITFALL, "safe", ctx.edit(ctx.span(total)[1], ctx.span(node)[1], ".item()"))
    return [ctx.finding(PITFALL, node, fix=fix, expr=shorten(ctx.text(node)))]


@per_file
def _zero_dim_accumulator(ctx: Context, scope: ast.AST, name: str) -> bool:
    """A name started at a number and added 0-dim values to (only an accumulator: a plain
    `loss[0]` may be a per-sample loss of `reduction="none"`)."""
    found = bindings(ctx, scope, name)
    starts = any(b.value is not None and not b.augmented and _is_number(b.value) for b in found)
    return starts and _zero_dim_name(ctx, scope, name)


# ---- what is 0-dim -------------------------------------------------------------------------


def is_zero_dim(
    expr: ast.AST,
    ctx: Context,
    resolving: frozenset[str] = frozenset(),
    scope: ast.AST | None = None,
) -> bool:
    """True when `expr` is certainly a 0-dim tensor (a scalar loss, a full reduction...).
    `scope`: the function `expr` is read in, when not the one being walked (a value another
    function returns)."""
    kind = type(expr)
    if kind is ast.Call:
        return _is_zero_dim_call(expr, ctx, resolving, scope)
    if kind is ast.Name:
        if expr.id in resolving:  # `loss = loss * 2`: as 0-dim as its other assignments
            return True
        where = _scope_for(expr.id, ctx, scope)
        if not resolving:  # a name used many times is looked into once
            return _zero_dim_name(ctx, where, expr.id)
        return _all_bound_to(
            bindings(ctx, where, expr.id),
            lambda value: is_zero_dim(value, ctx, resolving | {expr.id}, where),
        )
    if is_self_attribute(expr):  # `self.loss_S`, assigned a loss in another method
        cls = ctx.enclosing_class()
        key = f"self.{expr.attr}"
        if cls is None or key in resolving:
            return cls is not None
        if not resolving:
            return _zero_dim_attribute(ctx, cls, expr.attr)
        values = attribute_values(ctx, cls, expr.attr)
        return bool(values) and all(is_zero_dim(v, ctx, resolving | {key}) for v in values)
    if kind is ast.Attribute and expr.attr == "data":  # `loss.data`: the same tensor, detached
        return is_zero_dim(expr.value, ctx, resolving, scope)
    if kind is ast.BinOp and isinstance(expr.op, SCALAR_ARITHMETIC):
        sides = (expr.left, expr.right)
        numbers = [_is_number(side) or _is_setting(side, ctx, scope) for side in sides]
        if not all(
            number or is_zero_dim(side, ctx, resolving, scope)
            for side, number in zip(sides, numbers)
        ):
            return False
        return not all(numbers)
    if kind is ast.UnaryOp and isinstance(expr.op, (ast.USub, ast.UAdd)):
        return is_zero_dim(expr.operand, ctx, resolving, scope)
    if kind is ast.IfExp:  # `loss.cuda() if USE_CUDA else loss`: 0-dim whichever way
        return is_zero_dim(expr.body, ctx, resolving, scope) and is_zero_dim(
            expr.orelse, ctx, resolving, scope
        )
    if kind is ast.Subscript:  # an element picked by integer indices: `out[0, n]` of a 2-D `out`
        return _entry_of_a_scalar_loss_dict(expr, ctx) or tensor_rank(expr, ctx, scope) == 0
    return False


def _entry_of_a_scalar_loss_dict(entry: ast.Subscript, ctx: Context) -> bool:
    """`self._losses["rpn_cross_entropy"]`: an entry, by a string key, of a dict named for its
    losses, one entry of which the file back-propagates with no gradient
    (`self._losses["total_loss"].backward()`, allowed only for a scalar): the entries are the
    scalar losses of one step (pytorch-faster-rcnn's `Network`, written for PyTorch 0.3)."""
    key = entry.slice
    if not (type(key) is ast.Constant and type(key.value) is str):
        return False
    container = dotted_name(entry.value)
    if container is None or not container.rpartition(".")[2].lower().endswith("losses"):
        return False
    return container in _backpropagated_loss_dicts(ctx)


@per_file
def _backpropagated_loss_dicts(ctx: Context) -> frozenset[str]:
    """The dicts (by dotted name) an entry of which the file calls `.backward()` on, no
    gradient given."""
    found = index(ctx)
    dicts = set()
    for at in found.calls.get("backward", ()):
        call = found.nodes[at]
        receiver = call.func.value if type(call.func) is ast.Attribute else None
        if call.args or call.keywords or type(receiver) is not ast.Subscript:
            continue
        container = dotted_name(receiver.value)
        if container is not None:
            dicts.add(container)
    return frozenset(dicts)


def _scope_for(name: str, ctx: Context, scope: ast.AST | None) -> ast.AST:
    """Where `name` is bound: in `scope` when it binds it, else as read at the walk."""
    if scope is not None and bindings(ctx, scope, name):
        return scope
    return scope_of(name, ctx)


def _is_zero_dim_call(
    call: ast.Call, ctx: Context, resolving: frozenset[str], scope: ast.AST | None = None
) -> bool:
    # Named as a loss, perhaps, but a function of the file whose body builds a (1,)-shaped
    # one: asked only of a call that would otherwise be taken for 0-dim.
    return (
        _zero_dim_by_call(call, ctx, resolving, scope)
        and not _one_element_value(call, ctx, scope)
        and not _returns_elementwise_arithmetic(call, ctx, scope)
    )


def _returns_elementwise_arithmetic(call: ast.Call, ctx: Context, scope: ast.AST | None) -> bool:
    """A function of the file (named as a loss, perhaps) every `return` of which is arithmetic
    none of whose operands is known to be 0-dim (percent4's `return (y_pred - y) * (y_pred - y)`
    of one-element tensors): it has as many dimensions as its inputs, which a name cannot tell."""
    function = _function_called(call, ctx, ctx.enclosing_class(), scope)
    if function is None:
        return False
    returns = index_of(ctx, function).local(function, ast.Return)
    if not returns or any(type(r.value) is not ast.BinOp for r in returns):  # type: ignore[attr-defined]
        return False
    busy = _returns_in_progress(ctx)
    if function in busy:
        return False
    busy.add(function)
    try:
        # Not one operand known to be 0-dim (a loss, a reduction): `(loss_x + loss_y) * w_coord`
        # is a loss scaled by a setting, whatever the name of the setting says.
        return not any(
            is_zero_dim(leaf, ctx, frozenset(), function)
            for r in returns
            for leaf in _operands(r.value)  # type: ignore[attr-defined]
        )
    finally:
        busy.discard(function)


def _operands(expr: ast.AST) -> list[ast.AST]:
    """The operands of an arithmetic expression, through its nested operations."""
    if type(expr) is ast.BinOp:
        return [*_operands(expr.left), *_operands(expr.right)]
    if type(expr) is ast.UnaryOp:
        return _operands(expr.operand)
    return [expr]


def _zero_dim_by_call(
    call: ast.Call, ctx: Context, resolving: frozenset[str], scope: ast.AST | None
) -> bool:
    func = call.func
    if type(func) is ast.Name and func.id == "closure" and _step_given_a_closure(ctx, scope):
        return True  # an optimizer's `step(self, closure)`: `loss = closure()` (Eve)
    qualname = ctx.qualname(func)
    if qualname is not None:
        if qualname.partition(".")[0] != "torch":  # the project's own `compute_loss(...)`
            return computes_a_loss(call) or _mean_of_a_metric_library(qualname, call)
        if _is_zero_dim_torch_call(qualname, call):
            return True
        last = qualname.rpartition(".")[2]
        return (
            last in ELEMENTWISE
            and len(call.args) == 1
            and is_zero_dim(call.args[0], ctx, resolving, scope)
        )
    if isinstance(func, ast.Call):  # nn.MSELoss()(a, b), the project's FocalLoss(gamma=0)(a, b)
        return _makes_a_scalar_loss(func, ctx)
    if isinstance(func, ast.Attribute) and func.attr in FULL_REDUCTION_METHODS:
        return _is_full_reduction_method(call, ctx, scope)
    if _sums_zero_dim_values(call, ctx, resolving, scope):
        return True
    if isinstance(func, ast.Attribute) and func.attr in ELEMENTWISE:  # `loss.exp()`
        return is_zero_dim(func.value, ctx, resolving, scope)
    if _uses_one_element_losses(ctx):  # a callee named as a loss may be warp-ctc's
        return is_loss_module(func, ctx, scope) or _returns_zero_dim(call, ctx)
    return is_loss_module(func, ctx, scope) or computes_a_loss(call) or _returns_zero_dim(call, ctx)


def _step_given_a_closure(ctx: Context, scope: ast.AST | None) -> bool:
    """The function read is an optimizer's `step(self, closure)`: what the closure returns is
    the loss it evaluated, as `Optimizer.step` documents."""
    function = scope if scope is not None else ctx.enclosing_function()
    return (
        isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        and function.name == "step"
        and is_parameter(function, "closure")
    )


# Packages whose losses hand back a tensor of one element, shape (1,), not a 0-dim one:
# warp-ctc's `CTCLoss` (`torch.FloatTensor([costs.sum()])`), read with `.data[0]` correctly. In
# a file using one, neither a backward nor a callee's name tells a 0-dim loss.
ONE_ELEMENT_LOSSES = frozenset({"warpctc_pytorch", "warpctc"})


@per_file
def _uses_one_element_losses(ctx: Context) -> bool:
    """The file imports from a package of ONE_ELEMENT_LOSSES (`from warpctc_pytorch import
    CTCLoss`)."""
    return "warpctc" in ctx.source and not ONE_ELEMENT_LOSSES.isdisjoint(imported_roots(ctx))


def _sums_zero_dim_values(
    call: ast.Call, ctx: Context, resolving: frozenset[str], scope: ast.AST | None
) -> bool:
    """The built-in `sum` of 0-dim values made one per item: `sum([p.norm() ** 2 for p in
    model.parameters()])` is 0-dim too (var-attn's parameter norm)."""
    func = call.func
    if not (type(func) is ast.Name and func.id == "sum" and len(call.args) == 1):
        return False
    if call.keywords or "sum" in top_level_functions(ctx) or "sum" in ctx.imported:
        return False  # a `sum` of the file's own, or an imported one (`from torch import sum`)
    items = call.args[0]
    if type(items) not in (ast.ListComp, ast.GeneratorExp):
        return False
    return is_zero_dim(items.elt, ctx, resolving, scope)  # type: ignore[attr-defined]


def _returns_zero_dim(call: ast.Call, ctx: Context) -> bool:
    """A call of a method of the enclosing class (`self.calc_td_error()`) or of a function of
    the file, every `return` of which gives a 0-dim value: a name 0-dim in that function (a
    loss it called `.backward()` on, a full reduction) or a loss or reduction of torch."""
    function = _function_called(call, ctx, ctx.enclosing_class(), None)
    return function is not None and _returns_zero_dim_at(ctx, function)


def _function_called(
    call: ast.Call, ctx: Context, cls: ast.ClassDef | None, scope: ast.AST | None
) -> ast.FunctionDef | None:
    """The method of `cls` (`self.calc_td_error()`) or the function of the file a call read in
    `scope` (None: where the walk is) runs, when certain."""
    func = call.func
    if is_self_attribute(func):
        return _method(ctx, cls, func.attr) if cls is not None else None  # type: ignore[attr-defined]
    if type(func) is ast.Attribute and type(func.value) is ast.Name:
        # `ChexnetTrainer.epochVal(...)` in a method of `ChexnetTrainer`.
        named = cls is not None and func.value.id == cls.name
        return _method(ctx, cls, func.attr) if named else None  # type: ignore[arg-type]
    if type(func) is not ast.Name or _scope_for(func.id, ctx, scope) is not ctx.tree:
        return None
    function = top_level_functions(ctx).get(func.id)
    found = bindings(ctx, ctx.tree, func.id) or ()
    if [b.node for b in found] != [function]:
        return None  # rebound, or imported too: which function is called is unclear
    return function


# `torch.zeros(1)`, `Variable(torch.zeros(1))`, `torch.FloatTensor([0])`: a tensor of one
# element, shape (1,), whose `.data[0]` is a valid index: made from a size of 1, or from a list
# of one item.
_ONE_ELEMENT_MAKERS = frozenset(
    {"zeros", "ones", "Tensor", "FloatTensor", "DoubleTensor", "tensor"}
)
_FROM_SIZES = _ONE_ELEMENT_MAKERS - {"tensor"}


@per_file
def _returns_one_element(ctx: Context, function: ast.AST) -> bool:
    """Every `return` of `function` gives a name the function makes as a one-element tensor
    and only updates in place after (Hybrid-Code-Networks' `categorical_cross_entropy`: `loss =
    Variable(torch.zeros(1))`, then `loss -= torch.log(...)` per item, `return loss`)."""
    returns = index_of(ctx, function).local(function, ast.Return)
    if not returns:
        return False
    for node in returns:
        value = node.value
        if type(value) is not ast.Name:
            return False
        found = bindings(ctx, function, value.id) or ()
        made = [b for b in found if not b.augmented]
        if len(made) != 1 or not _one_element(made[0].value):
            return False
    return True


def _one_element_value(value: ast.AST | None, ctx: Context, scope: ast.AST | None) -> bool:
    """`torch.zeros(1)` (perhaps in a `Variable`), or a call of a function of the file every
    `return` of which gives one."""
    if type(value) is not ast.Call:
        return False
    if _one_element(value):
        return True
    function = _function_called(value, ctx, ctx.enclosing_class(), scope)
    return function is not None and _returns_one_element(ctx, function)


def _one_element(value: ast.AST | None) -> bool:
    while (
        type(value) is ast.Call
        and (last_name := dotted_name(value.func)) is not None
        and last_name.rpartition(".")[2] == "Variable"  # also `torch.autograd.Variable(...)`
        and value.args
    ):
        value = value.args[0]
    if not (type(value) is ast.Call and len(value.args) == 1 and not value.keywords):
        return False
    func = value.func
    name = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else ""
    arg = value.args[0]
    if name in _FROM_SIZES and type(arg) is ast.Constant and arg.value == 1:
        return True  # `torch.zeros(1)`
    return (
        (name in _ONE_ELEMENT_MAKERS or name.endswith("Tensor"))  # `self._Tensor([0])`
        and type(arg) is ast.List
        and len(arg.elts) == 1
        and type(arg.elts[0]) is ast.Constant  # `torch.tensor([0.0])`
    )


def _method(ctx: Context, cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    """The method `name` defined once in the body of `cls`, without decorators but
    `staticmethod`."""
    return methods_defined_once(ctx, cls, _STATIC).get(name)


_STATIC = frozenset({"staticmethod"})


@per_file
def _returns_in_progress(ctx: Context) -> set:
    """The functions whose returns (or parameters) are being looked into (one call of them
    returns another's)."""
    return set()


def _returned_zero_dim(value: ast.expr | None, function: ast.FunctionDef, ctx: Context) -> bool:
    """Read where `function` binds its names, not where the walk is."""
    if type(value) is ast.Name:
        return bool(bindings(ctx, function, value.id)) and _zero_dim_name(ctx, function, value.id)
    if type(value) is not ast.Call:
        return False
    qualname = ctx.qualname(value.func)
    return qualname is not None and _is_zero_dim_torch_call(qualname, value)


# Functions of image-quality packages that hand back the mean over the batch (a 0-dim tensor)
# unless told `size_average=False`: `pytorch_ssim.ssim(img1, img2)`.
_MEAN_METRICS = frozenset({"pytorch_ssim.ssim", "pytorch_msssim.ssim", "pytorch_msssim.ms_ssim"})


def _mean_of_a_metric_library(qualname: str, call: ast.Call) -> bool:
    if qualname not in _MEAN_METRICS:
        return False
    size_average = next((k.value for k in call.keywords if k.arg == "size_average"), None)
    positional = len(call.args) > 3 or any(k.arg is None for k in call.keywords)
    return not positional and (
        size_average is None or type(size_average) is ast.Constant and size_average.value is True
    )


def _is_zero_dim_torch_call(qualname: str, call: ast.Call) -> bool:
    head, _, last = qualname.rpartition(".")
    if head == "torch.nn.functional" and last in FUNCTIONAL_LOSSES:
        return reduces_to_scalar(call, FUNCTIONAL_LOSSES[last])
    if head == "torch" and last in FULL_REDUCTION_FUNCTIONS:
        return _full_reduction_arguments(call, FULL_REDUCTION_FUNCTIONS[last], minimum=1)
    if qualname in ("torch.tensor", "torch.scalar_tensor"):
        return len(call.args) == 1 and _is_number(call.args[0])
    return False


def _is_full_reduction_method(call: ast.Call, ctx: Context, scope: ast.AST | None = None) -> bool:
    if not ctx.imports_torch and not _made_by_tensor_methods(call.func.value):  # type: ignore[attr-defined]
        return False
    if ctx.kind_of(call.func.value) is Kind.NDARRAY:  # numpy's reductions give numpy scalars
        return False
    if _full_reduction_arguments(call, FULL_REDUCTION_METHODS[call.func.attr], minimum=0):
        return True
    # Along the one dimension of a 1-D tensor: `correct[:k].view(-1).float().sum(0)`.
    return bool(call.args or call.keywords) and tensor_rank(call, ctx, scope) == 0


# Conversions only a tensor has (numpy has none of them): `correct.float().sum()` reduces a
# tensor even in a file that never imports torch (3D-ResNets' `utils.calculate_accuracy`).
_TENSOR_ONLY_CONVERSIONS = frozenset({"float", "double", "long", "half", "byte", "cuda", "cpu"})


def _made_by_tensor_methods(value: ast.AST) -> bool:
    return (
        type(value) is ast.Call
        and not value.args
        and type(value.func) is ast.Attribute
        and value.func.attr in _TENSOR_ONLY_CONVERSIONS
    )


def _full_reduction_arguments(call: ast.Call, most: int, minimum: int) -> bool:
    if not minimum <= len(call.args) <= most:
        return False
    if any(isinstance(arg, ast.Starred) for arg in call.args):
        return False
    return all(kw.arg in REDUCTION_OPTIONS for kw in call.keywords)


def reduces_to_scalar(call: ast.Call, tensor_arguments: int) -> bool:
    """A loss call or constructor whose options keep the default scalar reduction."""
    if len(call.args) > tensor_arguments or any(isinstance(a, ast.Starred) for a in call.args):
        return False
    for keyword in call.keywords:
        if keyword.arg is None:  # **options: could hold reduction="none"
            return False
        if keyword.arg == "reduction" and not _is_constant_in(keyword.value, SCALAR_REDUCTIONS):
            return False
        if keyword.arg == "reduce" and not _is_constant_in(keyword.value, {True}):
            return False
    return True


def is_scalar_loss_constructor(call: ast.AST, ctx: Context) -> bool:
    """`nn.CrossEntropyLoss()`: a loss module whose call returns a 0-dim tensor."""
    if not isinstance(call, ast.Call):
        return False
    qualname = ctx.qualname(call.func)
    if qualname is None:
        return False
    head, _, last = qualname.rpartition(".")
    if (
        head not in LOSS_MODULE_PATHS
        or not last.endswith(("Loss", "Loss2d"))  # NLLLoss2d, the old name of NLLLoss
        or last in NON_SCALAR_LOSS_CLASSES
    ):
        return False
    # One positional option at most, and not a reduction string (HuberLoss takes it first).
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        if call.args[0].value not in SCALAR_REDUCTIONS:
            return False
    return reduces_to_scalar(call, tensor_arguments=1)


def is_loss_module(expr: ast.AST, ctx: Context, scope: ast.AST | None = None) -> bool:
    """`criterion` or `self.criterion`, assigned only scalar loss modules."""
    if isinstance(expr, ast.Name):
        return _loss_module_name(ctx, _scope_for(expr.id, ctx, scope), expr.id)
    if is_self_attribute(expr):
        cls = ctx.enclosing_class()
        return cls is not None and _loss_module_attribute(ctx, cls, expr.attr)
    return False


# Each name (or attribute) is looked into once per file, not once per use: a name assigned
# in many places and used in as many would cost their product.


@per_file
def _zero_dim_name(ctx: Context, scope: ast.AST, name: str) -> bool:
    found = bindings(ctx, scope, name)
    made = [b for b in found or () if not b.augmented]
    if made and all(_one_element_value(b.value, ctx, scope) for b in made):
        return False  # made with one element, shape (1,), whatever backward it takes
    if made and all(
        type(b.value) is ast.Call and _returns_elementwise_arithmetic(b.value, ctx, scope)
        for b in made
    ):
        return False  # as many dimensions as the inputs, one element or not
    # `loss.backward()` with no gradient says the name holds one element, whatever made it: a
    # scalar, unless the file uses a loss of one element (warp-ctc's), which backward takes too.
    if not _uses_one_element_losses(ctx):
        if backward_without_gradient(ctx, scope, name):
            return True
        if name in _summed_into_backward(ctx, scope) and found and len(found) == 1:
            return not found[0].augmented  # one value, the one summed into the scalar
        if found and _unpacked_like_a_scalar(ctx, found, name):
            return True
    if found and _unpacked_from_zero_dim_returns(ctx, scope, found):
        return True
    if found and _element_of_summed_losses(ctx, scope, name, found):
        return True
    if found and len(found) == 1 and type(found[0].node) is ast.arg:
        return _given_zero_dim(ctx, scope, name)  # type: ignore[arg-type]
    if found and len(found) == 1 and _loops_over_extra_keywords(ctx, scope, found[0].node):
        return _given_zero_dim_keywords(ctx, scope)  # type: ignore[arg-type]
    return _all_bound_to(
        found, lambda value: is_zero_dim(value, ctx, frozenset({name}), scope), accumulator=True
    )


def _element_of_summed_losses(ctx: Context, scope: ast.AST, name: str, found) -> bool:
    """`loss` bound only by loops over a collection named for its losses (`for loss in losses:`)
    that `scope` adds up, item by item, into one loss (`total = total + loss`; `loss += l` over
    `losses[1:]`): the items of a list of losses summed into one are scalar losses (D-X-Y's
    `compute_stage_loss`, kaggle-dstl's `train_step`)."""
    summed = _summed_loss_collections(ctx, scope)
    if not summed:
        return False
    loops = [_loop_over(b.node, ctx) for b in found]
    return all(loop is not None and loop in summed for loop in loops)


def _loop_over(node: ast.AST, ctx: Context) -> str | None:
    """The collection named for its losses that a loop target `node` (a `Name` bound by a
    `for` or a comprehension's `for`) runs over, by its dotted name."""
    if type(node) is not ast.Name:
        return None
    loop = index(ctx).parents.get(node)
    if type(loop) not in (ast.For, ast.comprehension) or loop.target is not node:  # type: ignore[union-attr]
        return None
    return _losses_collection(loop.iter)


def _losses_collection(iterable: ast.AST) -> str | None:
    """`losses`, `self.stage_losses`, `losses[1:]`: a collection named for its losses."""
    if type(iterable) is ast.Subscript and type(iterable.slice) is ast.Slice:
        iterable = iterable.value
    named = dotted_name(iterable)
    if named is None or not named.rpartition(".")[2].lower().endswith("losses"):
        return None
    return named


@per_file
def _summed_loss_collections(ctx: Context, scope: ast.AST) -> frozenset[str]:
    """The collections named for their losses whose items a loop of `scope` adds into a total
    (`for l in losses[1:]: loss += l`; `total = total + loss`), by dotted name."""
    summed = set()
    for loop in index_of(ctx, scope).local(scope, ast.For):
        target = loop.target  # type: ignore[attr-defined]
        collection = _losses_collection(loop.iter) if type(target) is ast.Name else None  # type: ignore[attr-defined]
        if collection is not None and any(_adds(statement, target.id) for statement in loop.body):  # type: ignore[attr-defined]
            summed.add(collection)
    return frozenset(summed)


def _adds(statement: ast.AST, term: str) -> bool:
    """`total += term`, `total = total + term` or `total = term + total`, at any depth of
    `if`/`else` of the loop's body."""
    if type(statement) is ast.If:
        return any(_adds(inner, term) for inner in (*statement.body, *statement.orelse))
    if type(statement) is ast.AugAssign:
        return type(statement.op) is ast.Add and is_name(statement.value, term)
    if type(statement) is not ast.Assign or len(statement.targets) != 1:
        return False
    target, value = statement.targets[0], statement.value
    if (
        type(target) is not ast.Name
        or type(value) is not ast.BinOp
        or type(value.op) is not ast.Add
    ):
        return False
    sides = (value.left, value.right)
    return any(is_name(side, term) for side in sides) and any(
        is_name(side, target.id) for side in sides
    )


@per_file
def _summed_into_backward(ctx: Context, scope: ast.AST) -> frozenset[str]:
    """The names added or subtracted into a loss that `scope` calls `.backward()` on with no
    gradient (`loss = loss_l + loss_c`, or `total += loss`, then `.backward()`): a sum has one element only
    when every term does, so each is a scalar too (`loss_l, loss_c = criterion(...)`). Also
    the terms of a term that is itself such a sum, assigned once (BEGAN's `d_loss = d_loss_real
    - k_t * d_loss_fake`, then `loss = d_loss + g_loss`)."""
    terms: set[str] = set()
    sums: dict[str, list[list[str]]] = {}  # target -> the names of each sum assigned to it
    for statement in index_of(ctx, scope).local(scope, ast.Assign, ast.AugAssign):
        if type(statement) is ast.AugAssign:
            # `batch_loss += loss`, then `batch_loss.backward()` (LatticeLSTM): a term too.
            target, value = statement.target, statement.value
            if (
                type(statement.op) in (ast.Add, ast.Sub)
                and type(target) is ast.Name
                and type(value) is ast.Name
                and backward_without_gradient(ctx, scope, target.id)
            ):
                terms.add(value.id)
            continue
        targets = statement.targets  # type: ignore[attr-defined]
        value = statement.value  # type: ignore[attr-defined]
        if not (len(targets) == 1 and type(targets[0]) is ast.Name and type(value) is ast.BinOp):
            continue
        operands = []
        value = _unscaled(value)  # `loss = (loss_fwd + loss_bwd) / 2.0`: a sum, halved
        while type(value) is ast.BinOp and isinstance(value.op, (ast.Add, ast.Sub)):
            operands.append(value.right)
            value = value.left
        operands.append(value)
        if len(operands) > 1:
            target = targets[0].id
            names = [o.id for o in operands if type(o) is ast.Name and o.id != target]
            sums.setdefault(target, []).append(names)
    todo = [
        name
        for target, found in sums.items()
        if backward_without_gradient(ctx, scope, target)
        for names in found
        for name in names
    ]
    while todo:
        name = todo.pop()
        if name in terms:
            continue
        terms.add(name)
        found = sums.get(name)
        if found and len(found) == 1 and len(bindings(ctx, scope, name) or ()) == 1:
            todo += found[0]
    return frozenset(terms)


def _unscaled(value: ast.expr) -> ast.expr:
    """`(a + b) / 2.0` and `0.5 * (a + b)` -> `a + b`: a scaled value has as many elements."""
    while type(value) is ast.BinOp and type(value.op) in (ast.Div, ast.Mult):
        if _is_number(value.right):
            value = value.left
        elif type(value.op) is ast.Mult and _is_number(value.left):
            value = value.right
        else:
            break
    return value


def _unpacked_like_a_scalar(ctx: Context, found, name: str) -> bool:
    """`name` is only ever unpacked from a method call (`loss_fwd, loss_bwd = model.forward(w,
    c)`) that another function of the file makes and unpacks alike, word for word, where the
    name in that place is summed into a loss backpropagated with no gradient (ELMo's
    `eval_model` and `train_model`): the same method hands back the same 0-dim losses. (A bare
    `criterion(...)` may be another function in each.)"""
    places = [_unpacking(ctx, b) for b in found]
    if not places or None in places:
        return False
    for statement, position in {(id(p[0]), p[1]): p for p in places}.values():  # type: ignore[index]
        call = ctx.text(statement.value)
        for other in _unpackings_of(ctx).get(call, ()):
            if other is statement:
                continue
            target = other.targets[0].elts[position]
            scope = index(ctx).runs_in(other) or ctx.tree
            if type(target) is ast.Name and (
                backward_without_gradient(ctx, scope, target.id)
                or target.id in _summed_into_backward(ctx, scope)
            ):
                return True
    return False


def _unpacked_from_zero_dim_returns(ctx: Context, scope: ast.AST, found) -> bool:
    """`name` is only ever unpacked from a call of a method of the class around `scope` or of a
    function of the file (`lossVal, losstensor = self.epochVal(...)`) whose every `return`
    hands back, at that place, a value 0-dim there (CheXNet's `return outLoss,
    losstensorMean`, the mean of the batches' losses)."""
    for binding in found:
        place = _unpacking(ctx, binding)
        if place is None:
            return False
        statement, position = place
        function = _function_called(statement.value, ctx, _class_of(ctx, scope), scope)
        size = len(statement.targets[0].elts)
        if function is None or not _returns_zero_dim_at(ctx, function, position, size):
            return False
    return True


def _class_of(ctx: Context, function: ast.AST) -> ast.ClassDef | None:
    """The class whose body defines `function`, if any."""
    parent = index(ctx).parents.get(function)
    return parent if type(parent) is ast.ClassDef else None


@per_file
def _returns_zero_dim_at(
    ctx: Context, function: ast.FunctionDef, position: int | None = None, size: int = 0
) -> bool:
    """Every `return` of `function` gives a 0-dim value; with `position`, a tuple of `size`
    values, 0-dim at `position`."""
    in_progress = _returns_in_progress(ctx)
    if function in in_progress:  # a function calling itself: not known from itself
        return False
    in_progress.add(function)
    try:
        found = index_of(ctx, function)
        if found.local(function, ast.Yield, ast.YieldFrom):
            return False
        returns = found.local(function, ast.Return)
        return bool(returns) and all(
            _returned_zero_dim(_returned_at(ret.value, position, size), function, ctx)  # type: ignore[attr-defined]
            for ret in returns
        )
    finally:
        in_progress.discard(function)


def _returned_at(value: ast.expr | None, position: int | None, size: int) -> ast.expr | None:
    """The value at `position` of a returned tuple of `size` values (None when not such a
    tuple); the value itself without `position`."""
    if position is None:
        return value
    if type(value) is not ast.Tuple or len(value.elts) != size:
        return None
    if any(type(e) is ast.Starred for e in value.elts):
        return None
    return value.elts[position]


def _unpacking(ctx: Context, binding) -> tuple[ast.Assign, int] | None:
    """The statement `a, b = f(...)` a binding of a name is part of, and the name's place."""
    node = binding.node
    if binding.value is not None or type(node) is not ast.Name:
        return None
    parents = index(ctx).parents
    targets = parents.get(node)
    statement = parents.get(targets) if type(targets) is ast.Tuple else None
    if (
        type(statement) is not ast.Assign
        or len(statement.targets) != 1
        or statement.targets[0] is not targets
        or type(statement.value) is not ast.Call
        or any(type(e) is ast.Starred for e in targets.elts)
    ):
        return None
    return statement, targets.elts.index(node)


@per_file
def _unpackings_of(ctx: Context) -> dict[str, list[ast.Assign]]:
    """The file's `a, b = x.f(...)` statements by the text of their call."""
    found: dict[str, list[ast.Assign]] = {}
    for statement in index(ctx).everywhere(ast.Assign):
        if (
            len(statement.targets) == 1  # type: ignore[attr-defined]
            and type(statement.targets[0]) is ast.Tuple  # type: ignore[attr-defined]
            and type(statement.value) is ast.Call  # type: ignore[attr-defined]
            and type(statement.value.func) is ast.Attribute  # type: ignore[attr-defined]
        ):
            found.setdefault(ctx.text(statement.value), []).append(statement)  # type: ignore[attr-defined]
    return found


@per_file
def _zero_dim_attribute(ctx: Context, cls: ast.ClassDef, attr: str) -> bool:
    if backward_without_gradient(ctx, cls, f"self.{attr}"):
        return True  # `self.loss_G.backward()` in another method: a scalar, whatever made it
    values = attribute_values(ctx, cls, attr)
    key = frozenset({f"self.{attr}"})
    zero_dim = [value for value in values if is_zero_dim(value, ctx, key)]
    # (`self._loss_d_real = Variable(self._Tensor([0]))` in `__init__`, GANimation's placeholder
    # until the first step assigns the loss: the losses are what `.data[0]` reads once training)
    placeholders = [
        value
        for value in values
        if value not in zero_dim and _one_element(value) and _set_in_init(ctx, cls, value)
    ]
    return bool(zero_dim) and len(zero_dim) + len(placeholders) == len(values)


def _set_in_init(ctx: Context, cls: ast.ClassDef, value: ast.AST) -> bool:
    """`value` is assigned in `__init__`, or in a helper it calls to set things up
    (GANimation's `_init_losses`)."""
    method = index_of(ctx, cls).runs_in(value)
    return isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and "init" in method.name


def _makes_a_scalar_loss(call: ast.AST, ctx: Context) -> bool:
    """`nn.MSELoss()`, or a class of the project (or one that cannot be resolved) whose own
    name says it is a loss: `FocalLoss(gamma=0)`, BEGAN's copy of `L1Loss` star-imported."""
    if not isinstance(call, ast.Call):
        return False
    if ctx.qualname(call.func) is not None:
        return is_scalar_loss_constructor(call, ctx)
    return builds_a_loss_module(call)


@per_file
def _loss_module_name(ctx: Context, scope: ast.AST, name: str) -> bool:
    # `criterion = criterion.cuda()`: the same module, moved.
    found = [b for b in bindings(ctx, scope, name) or () if not moves_itself(b.value, name)]
    if len(found) == 1 and type(found[0].node) is ast.arg:
        return _given_loss_modules(ctx, scope, name)  # type: ignore[arg-type]
    return _all_bound_to(found, lambda value: _makes_a_scalar_loss(value, ctx))


def _given_loss_modules(ctx: Context, function: ast.FunctionDef, name: str) -> bool:
    """Every call of `function` in the file hands its parameter `name` a scalar loss module
    (LSTNet's `evaluate(..., evaluateL2, ...)` with `evaluateL2 = nn.MSELoss(size_average=False)`
    at the top of the script)."""
    return _every_call_hands(ctx, function, name, lambda value: _passed_loss_module(value, ctx))


def _given_zero_dim(ctx: Context, function: ast.FunctionDef, name: str) -> bool:
    """Every call of `function` in the file hands its parameter `name` a 0-dim value, read
    where the call is (AAE_pytorch's `report_loss(epoch, D_loss_gauss, ...)`, given what
    `train(...)` returns: a mean and a loss)."""
    runs_in = index(ctx).runs_in
    return _every_call_hands(
        ctx, function, name, lambda value: is_zero_dim(value, ctx, scope=runs_in(value) or ctx.tree)
    )


def _loops_over_extra_keywords(ctx: Context, scope: ast.AST, target: ast.AST) -> bool:
    """`target` is the value a loop takes from the function's own `**kwargs`: `value` of `for
    name, value in kwargs.items():` or `for value in kwargs.values():`."""
    kwarg = getattr(getattr(scope, "args", None), "kwarg", None)
    if kwarg is None or type(target) is not ast.Name:
        return False
    parents = index_of(ctx, scope).parents
    pair = parents.get(target)
    loop = parents.get(pair) if type(pair) is ast.Tuple else pair
    if type(loop) is not ast.For or loop.target is not pair:
        return False
    method = "items" if type(pair) is ast.Tuple else "values"
    if method == "items" and (len(pair.elts) != 2 or pair.elts[1] is not target):  # type: ignore[union-attr]
        return False
    call = loop.iter
    return (
        type(call) is ast.Call
        and not call.args
        and type(call.func) is ast.Attribute
        and call.func.attr == method
        and is_name(call.func.value, kwarg.arg)
    )


def _given_zero_dim_keywords(ctx: Context, function: ast.FunctionDef) -> bool:
    """Every keyword the calls of `function` in the file pass into its `**kwargs` is 0-dim, read
    where the call is (crowd_count's `update_recorder(recorder, density_loss=loss)`, whose
    `for name, value in kwargs.items(): ... value.data[0]`)."""
    in_progress = _returns_in_progress(ctx)
    if (function, "**") in in_progress:
        return False
    in_progress.add((function, "**"))
    try:
        passed = extra_keywords_of_every_call(ctx, function)
        runs_in = index(ctx).runs_in
        return bool(passed) and all(
            is_zero_dim(value, ctx, scope=runs_in(value) or ctx.tree)
            for value in passed  # type: ignore[union-attr]
        )
    finally:
        in_progress.discard((function, "**"))


def _every_call_hands(
    ctx: Context, function: ast.FunctionDef, name: str, accept: Callable[[ast.expr], bool]
) -> bool:
    """Every call of `function` in the file (one at least) passes `name` a value `accept`s."""
    in_progress = _returns_in_progress(ctx)
    if (function, name) in in_progress:  # a function handing its own parameter on
        return False
    in_progress.add((function, name))
    try:
        passed = passed_by_every_call(ctx, function, name)
        return bool(passed) and all(accept(value) for value in passed)  # type: ignore[union-attr]
    finally:
        in_progress.discard((function, name))


def _passed_loss_module(value: ast.expr, ctx: Context) -> bool:
    if type(value) is not ast.Name:
        return _makes_a_scalar_loss(value, ctx)
    scope = index(ctx).runs_in(value) or ctx.tree
    if not bindings(ctx, scope, value.id):
        scope = ctx.tree  # read from the module in a function
    return _loss_module_name(ctx, scope, value.id)


@per_file
def _loss_module_attribute(ctx: Context, cls: ast.ClassDef, attr: str) -> bool:
    values = attribute_values(ctx, cls, attr)
    return bool(values) and all(_makes_a_scalar_loss(value, ctx) for value in values)


def _all_bound_to(found, accept, accumulator: bool = False) -> bool:
    """Every binding is accepted (augmented ones are as 0-dim as the rest). With
    `accumulator`, a number is accepted too (`loss = 0` before `loss += criterion(...)`), as
    long as some binding is not a number."""
    if not found:
        return False
    numbers = 0
    for b in found:
        if b.value is None:
            return False
        if accumulator and not b.augmented and _is_number(b.value):
            numbers += 1
        elif not b.augmented and not accept(b.value):
            return False
    if numbers and not any(
        (b.augmented or _adds_to_itself(b) or not _is_number(b.value)) and accept(b.value)
        for b in found
    ):
        return False  # `total = 0; total += x.size(0)`: a count, not a loss
    return numbers < len(found)


def _adds_to_itself(binding) -> bool:
    """`loss = loss + loss_fn(...)`: an accumulation written out, as `+=` is."""
    node, value = binding.node, binding.value
    return (
        type(node) is ast.Assign
        and type(value) is ast.BinOp
        and type(value.op) is ast.Add
        and type(value.left) is ast.Name
        and len(node.targets) == 1
        and type(node.targets[0]) is ast.Name
        and node.targets[0].id == value.left.id
    )


# ---- small predicates ----------------------------------------------------------------------


# A tensor's number of elements, an int (`torch.sum(hits) / targets.nelement()`: FastJTNN).
_ELEMENT_COUNTS = frozenset({"nelement", "numel"})


def _is_number(expr: ast.AST) -> bool:
    # Classes compared by `type` (the parser makes no subclasses): asked of every assignment.
    if type(expr) is ast.UnaryOp and type(expr.op) in (ast.USub, ast.UAdd):
        expr = expr.operand
    if type(expr) is ast.Call and type(expr.func) is ast.Name and expr.func.id == "len":
        return True  # `loss * len(batch)`
    kind = type(expr)
    if kind is ast.Constant:
        return type(expr.value) in (int, float)  # type: ignore[attr-defined]
    if kind is ast.Call:  # `x.size(0)`: one size of a tensor, an int; so are its counts
        func = expr.func  # type: ignore[attr-defined]
        if type(func) is not ast.Attribute or expr.keywords:  # type: ignore[attr-defined]
            return False
        arguments = len(expr.args)  # type: ignore[attr-defined]
        return (
            func.attr == "size" and arguments == 1 or func.attr in _ELEMENT_COUNTS and not arguments
        )
    return kind is ast.Subscript and _is_a_size(expr)


def _is_a_size(expr: ast.Subscript) -> bool:
    """One size of a tensor, an int: `x.size()[0]`, `x.shape[0]` (textcnn's `sum(...) /
    log_prob.size()[0]`)."""
    if type(expr.slice) is not ast.Constant:
        return False
    held = expr.value
    if type(held) is ast.Attribute:  # `x.shape[0]`
        return held.attr == "shape"
    return (  # `x.size()[0]`
        type(held) is ast.Call
        and type(held.func) is ast.Attribute
        and held.func.attr == "size"
        and not held.args
    )


# Names of the objects that hold a program's settings: their attributes are numbers (or
# strings, flags), never tensors (`args.lambda_k * loss`, BEGAN's `self.gamma = config.gamma`).
SETTINGS = frozenset(
    {"args", "opt", "opts", "config", "cfg", "conf", "hparams", "hps", "flags", "FLAGS"}
)


def _is_setting(expr: ast.AST, ctx: Context, scope: ast.AST | None = None) -> bool:
    """A value read from the program's settings: `args.lambda_k`, `self.opt.gamma`, a
    `self.<attr>` every method sets from them or to a number, or a name bound only to such
    values or numbers (`minibatch_size = len(target)`)."""
    if type(expr) is ast.Attribute:
        if _read_setting(expr):
            return True
        if is_self_attribute(expr):
            cls = ctx.enclosing_class()
            values = attribute_values(ctx, cls, expr.attr) if cls is not None else ()  # type: ignore[attr-defined]
            return bool(values) and all(_is_number(v) or _read_setting(v) for v in values)
        return False
    if type(expr) is ast.Name:
        where = _scope_for(expr.id, ctx, scope)
        return _all_bound_to(
            bindings(ctx, where, expr.id),
            lambda v: _is_number(v) or _read_setting(v) or _number_arithmetic(v, ctx, where),
        )
    return False


def _number_arithmetic(expr: ast.AST, ctx: Context, scope: ast.AST) -> bool:
    """Arithmetic of numbers and of names bound only to numbers (`len(mnist_train) //
    batch_size`, with `batch_size = 100`): a number."""
    if type(expr) is not ast.BinOp or not isinstance(expr.op, (*SCALAR_ARITHMETIC, ast.FloorDiv)):
        return False
    return all(
        _is_number(side)
        or type(side) is ast.Name
        and _all_bound_to(bindings(ctx, _scope_for(side.id, ctx, scope), side.id), _is_number)
        or _number_arithmetic(side, ctx, scope)
        for side in (expr.left, expr.right)  # type: ignore[attr-defined]
    )


def _read_setting(expr: ast.AST) -> bool:
    """`config.gamma`, `args.lambda_k`, `self.opt.k`: one level, no names followed."""
    if type(expr) is not ast.Attribute:
        return False
    owner = expr.value  # type: ignore[attr-defined]
    # (also kept private: GANimation's `self._opt.lambda_D_gp`)
    return (type(owner) is ast.Name and owner.id.lstrip("_") in SETTINGS) or (
        is_self_attribute(owner) and owner.attr.lstrip("_") in SETTINGS  # type: ignore[attr-defined]
    )


def _is_constant_in(expr: ast.AST, allowed) -> bool:
    return isinstance(expr, ast.Constant) and expr.value in allowed
