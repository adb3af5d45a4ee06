"""TD401 uint8-mask: a uint8 tensor used as a mask (indexing, masked_fill, torch.where)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import (
    unrebound_parameter,
    MASK_FROM,
    INVERTED_MASK_FROM,
    MASK_SETTER,
    INDEX_MASK_FROM,
    VARIABLE_QUALNAMES,
    Kind,
    Pitfall,
    Context,
    Finding,
    argument,
    in_compat_fallback,
    is_parameter,
    index_of,
    bindings,
    passed_values,
    block_names,
    index,
    is_self_attribute,
    attribute_values,
    top_level_classes,
    scope_of,
    per_file,
    tensor_type,
    may_be_called,
    methods_defined_once,
    top_level_functions,
    module_function_calls,
    shorten,
)

PITFALL = Pitfall(
    code="TD401",
    name="uint8-mask",
    title={"en": "uint8 tensor used as a mask", "zh": "把 uint8 张量当作掩码使用"},
    messages={
        "": {
            "en": "`{source}` is a uint8 tensor used as a mask: uint8 masks are deprecated for "
            "indexing and rejected by masked_fill/masked_select; make it a bool mask "
            "(or `.long()` if its values are indices)",
            "zh": "`{source}` 是 uint8 张量，却被当作掩码使用：uint8 掩码用于索引已被弃用，"
            "masked_fill/masked_select 会直接报错；请改用 bool 掩码（如果这些值是下标，请用 `.long()`）",
        },
        "name": {
            "en": "`{name}` is made as a uint8 tensor by `{source}` and used as a mask on line "
            "{line}: uint8 masks are deprecated for indexing and rejected by "
            "masked_fill/masked_select; make it a bool mask (or `.long()` if its values "
            "are indices)",
            "zh": "`{name}` 由 `{source}` 创建为 uint8 张量，并在第 {line} 行被当作掩码使用："
            "uint8 掩码用于索引已被弃用，masked_fill/masked_select 会直接报错；请改用 bool 掩码"
            "（如果这些值是下标，请用 `.long()`）",
        },
        "returned": {
            "en": "`{source}` is a uint8 tensor that `{function}()` returns, and the project uses "
            "what it returns as a mask (`masked_fill`/`masked_select`): uint8 masks are rejected "
            "there (and `~` of a uint8 mask flips its bits, not its truth); make it a bool mask",
            "zh": "`{source}` 是 `{function}()` 返回的 uint8 张量，而项目把它的返回值当作掩码使用"
            "（`masked_fill`/`masked_select`）：那里会拒绝 uint8 掩码（对 uint8 掩码取 `~` 翻转的是比特位，"
            "而不是真假）；请改用 bool 掩码",
        },
        "returned-inverted": {
            "en": "`{source}` is a uint8 tensor that `{function}()` returns, and the project "
            "inverts what it returns into a mask (`mask=~{function}(...)`): `~` of a uint8 tensor "
            "flips every bit (1 becomes 254, and no element is false), and masking functions "
            "reject uint8 masks; make it a bool mask",
            "zh": "`{source}` 是 `{function}()` 返回的 uint8 张量，而项目把它的返回值取反后当作掩码"
            "（`mask=~{function}(...)`）：对 uint8 张量取 `~` 会翻转每一个比特位（1 变成 254，"
            "没有一个元素为假），而掩码函数也拒绝 uint8 掩码；请改用 bool 掩码",
        },
        "returned-index": {
            "en": "`{source}` is a uint8 tensor that `{function}()` returns (value {place} of the "
            "tuple), and another module of the project indexes with it as a mask (`x[mask]`): "
            "indexing with a uint8 mask is deprecated; make it a bool mask",
            "zh": "`{source}` 是 `{function}()` 返回的 uint8 张量（元组的第 {place} 个值），而项目的另一个"
            "模块把它当作掩码做索引（`x[mask]`）：用 uint8 掩码索引已被弃用；请改用 bool 掩码",
        },
        "numpy": {
            "en": "`{name}` is made as a uint8 numpy array by `{source}`, and the tensor made "
            "from it is used as a mask on line {line}: uint8 masks are deprecated for indexing "
            "and rejected by masked_fill/masked_select; make the array bool (`dtype=bool`)",
            "zh": "`{name}` 由 `{source}` 创建为 uint8 numpy 数组，由它得到的张量在第 {line} 行被当作"
            "掩码使用：uint8 掩码用于索引已被弃用，masked_fill/masked_select 会直接报错；请把数组改为 "
            "bool 类型（`dtype=bool`）",
        },
        "parameter": {
            "en": "`{name}` is used as a mask, and line {line} passes it `{source}`, a uint8 "
            "tensor: uint8 masks are deprecated for indexing and rejected by "
            "masked_fill/masked_select; make that a bool mask where it is made (or `.long()` "
            "if its values are indices)",
            "zh": "`{name}` 被当作掩码使用，而第 {line} 行传给它的 `{source}` 是 uint8 张量："
            "uint8 掩码用于索引已被弃用，masked_fill/masked_select 会直接报错；请在创建处改为 "
            "bool 掩码（如果这些值是下标，请用 `.long()`）",
        },
    },
    fix_title={"en": "Make the mask bool", "zh": "改为 bool 掩码"},
    fix_applicability="safe",
    fix_hint={
        "en": "Build the mask as bool: a comparison already is one (`x > 0`); replace "
        "`.byte()` with `.bool()` and `dtype=torch.uint8` with `dtype=torch.bool`.",
        "zh": "把掩码构造成 bool 类型：比较运算的结果本来就是 bool（`x > 0`）；把 `.byte()` 改为 "
        "`.bool()`，`dtype=torch.uint8` 改为 `dtype=torch.bool`。",
    },
    docs={
        "en": """
## What it catches
A tensor made as uint8, by `.byte()`, `dtype=torch.uint8`, `.to(torch.uint8)`,
`.type(torch.uint8)` or `torch.ByteTensor(...)`, that is then used as a mask: as an index
(`x[mask]`, `x[mask] = 0`), or as the mask of `masked_fill`, `masked_select`, `masked_scatter`
or `torch.where(mask, a, b)`, or the `mask` of a conditional random field's call (pytorch-crf's
`self.crf(emissions, tags, mask=m)`, `self.crf.decode(emissions, mask=m)`, which uses it as a
`torch.where` condition), or a keyword argument of a call whose name is that of a parameter of
the file's functions that reaches such a mask, directly or handed on by keyword (Transformer-XL:
`layer(x, dec_attn_mask=m)`, then `self.dec_attn(x, attn_mask=dec_attn_mask)`, then
`attn_score.masked_fill_(attn_mask[...], ...)`). The mask may be used directly or through a name
assigned in the same block, or after the statements around it (`if`, `for`, `with`) in the same
function, also wrapped in `Variable(...)`, moved on the way (`mask = mask.cuda()`), merged with
a bool tensor (`mask = torch.max(mask, iou > t)`, `mask = mask | (x > 0)`, `masks.byte() &
non_pad` with `non_pad = tokens.ne(PAD)`: still uint8), split
into parts (`mask = mask.split(sizes)`), indexed for a part (`mask[t]`), passed through the
project's own device helper (`cuda_(mask)`, `to_var(mask)`), or copied to another name first
(`maskk = mask.clone()`, then `logits[maskk]`). A numpy array made uint8 (`np.zeros(shape,
dtype=np.uint8)`, `.astype(np.uint8)`) is reported too when a tensor made from it without a
dtype (`torch.tensor(a)`, `torch.from_numpy(a)`) is used as a mask; indexing numpy with it
(integer indices, another matter) is not. `torch.ByteTensor` may be spelled through a name that
picks it per device (`ByteTensor = torch.cuda.ByteTensor if use_cuda else torch.ByteTensor`), or
through a name bound only to `torch` or `torch.cuda` (`th.ByteTensor`). A parameter used as a
mask is reported when a call of its function in the same file passes it a uint8 tensor: made in
the call, or held by a name or a `self.` attribute that every assignment makes uint8
(`self.is_initial = t.byte()`, then `self.sample(x, self.is_initial)`); a submodule of a class
of the file counts as its `forward` (`self.attn(x, c, m)` after `self.attn = Attention()`), and
the name may be one item of a tuple assignment (`c, m = x, pad.byte()`). A `self.` attribute that
every assignment in its class makes uint8 is reported where it is made when a method of the
class uses it as a mask: directly, through a local name bound to it (`mask =
Variable(self.mask)`) or through another attribute holding it (`self.mask_gpu =
self.mask.cuda()`). A uint8 tensor a module-level function returns (alone, directly or through
a name whose rebindings keep its dtype, also as `~mask`, still uint8, or moved by `.to(device)`)
is reported where it is
made when another file of the project binds what that function returns to a name (or a `self.`
attribute) it hands to `masked_fill`, `masked_select` or `masked_scatter` as the mask
(tacotron2's `get_mask_from_lengths`, returning `(ids < lengths.unsqueeze(1)).byte()`, and
`mask = ~get_mask_from_lengths(lengths)` in model.py; not when that line makes it bool, nor
for a name the file turns bool), or inverts what it returns into a name ending in `mask`, whatever
uses it (`mask=~get_mask_from_lengths(lengths)` handed to another method as a keyword:
nonparaSeq2seqVC's decoder; `~` of a uint8 tensor flips every bit).
Likewise one returned as a value of a tuple that another file
unpacks, on one line, into a name said to be a mask and indexes with (`..., obj_mask, ... =
build_targets(...)`, then `x[obj_mask]`: PyTorch-YOLOv3's forks), unless that file turns the
name bool. And one given as the one argument of a method that some file of the project keeps on
`self` and masks with (pytorch-seq2seq's `def set_mask(self, mask): self.mask = mask`, then
`attn.masked_fill_(self.mask, ...)`, copied by SummaRuNNer and many others).

uint8 tensors that are data (images, packed bytes) are not reported, and neither is indexing
*into* a uint8 tensor (`image[0]`): only a uint8 value in a mask position is.

## Why is this bad?
Before PyTorch 1.2 masks were uint8, and code written then still builds them with `.byte()`.
Masks are bool now. Indexing with a uint8 tensor still treats it as a mask, with a deprecation
warning; `masked_fill`, `masked_select` and `masked_scatter` refuse it with a RuntimeError.
A uint8 mask is also easy to get wrong: `~mask` on uint8 gives 254 and 255, both true, so the
"inverted" mask selects everything, and a uint8 tensor meant as integer indices (a lookup
table) is silently taken as a mask.

## Symptoms
`UserWarning: indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool
instead.`, `UserWarning: masked_fill_ received a mask with dtype torch.uint8, this behavior is
now deprecated,please use a mask with dtype torch.bool instead.`, and in recent versions
`RuntimeError: masked_fill_ only supports boolean masks, but got mask with dtype unsigned char`,
`RuntimeError: masked_select: expected BoolTensor for mask`, or
`UserWarning: where received a uint8 condition tensor. This behavior is deprecated`.

## Fix safety
The fix makes the mask bool: `.byte()` becomes `.bool()`, `torch.uint8` becomes `torch.bool`,
`torch.ByteTensor` becomes `torch.BoolTensor`. It is safe when the mask holds only 0 and 1 (it
comes from a comparison, `zeros`/`ones`, or 0/1 literals) and is used only as a mask or filled
with 0/1. Otherwise it is unsafe: converting a float to bool keeps 0.5 where `.byte()` made it 0,
and arithmetic on the mask (`mask.sum()`, `1 - mask`, `~mask`) behaves differently on bool.

## Known problems
A mask is followed within its function and into the parameters of the functions it is passed
to in the same file (a module function called by name, a method called as `self.name(...)`),
and out of the function that returns it (alone or in a tuple) to a caller in the same file that
unpacks it and uses it as a mask before binding the name again (also through a method that
only returns such a call). A mask returned to another file, or passed from one, is not
reported, nor one rebound in its function by anything but a move or a reshape of itself, nor
one made in a branch kept for torch < 1.2.
""",
        "zh": """
## What it catches
以 uint8 类型创建的张量——通过 `.byte()`、`dtype=torch.uint8`、`.to(torch.uint8)`、`.type(torch.uint8)`
或 `torch.ByteTensor(...)`——随后被当作掩码使用：作为索引（`x[mask]`、`x[mask] = 0`），或作为
`masked_fill`、`masked_select`、`masked_scatter`、`torch.where(mask, a, b)` 的掩码参数，或条件随机场调用的
`mask`（pytorch-crf 的 `self.crf(emissions, tags, mask=m)`、`self.crf.decode(emissions, mask=m)`，它在内部把掩码
用作 `torch.where` 的条件），或者以关键字参数传给某个调用、而该关键字与本文件函数中某个最终用作掩码的参数同名
（直接使用，或再以关键字传下去：Transformer-XL 的 `layer(x, dec_attn_mask=m)`，接着
`self.dec_attn(x, attn_mask=dec_attn_mask)`，最后 `attn_score.masked_fill_(attn_mask[...], ...)`）。掩码可以直接使用，
也可以先赋给同一代码块中的变量再使用，或在同一函数中包围它的语句（`if`、`for`、`with`）之后使用，
包括再包一层 `Variable(...)`、中途移动设备（`mask = mask.cuda()`）、
与 bool 张量合并（`mask = torch.max(mask, iou > t)`、`mask = mask | (x > 0)`、`non_pad = tokens.ne(PAD)`
之后的 `masks.byte() & non_pad`：结果仍是 uint8）、
拆成几块（`mask = mask.split(sizes)`）
或取出其中一部分（`mask[t]`）、经过项目自己的设备辅助函数（`cuda_(mask)`、`to_var(mask)`），
或者先复制到另一个名字（`maskk = mask.clone()`，再 `logits[maskk]`）。以 uint8 创建的 numpy 数组
（`np.zeros(shape, dtype=np.uint8)`、`.astype(np.uint8)`）也会被报告：当由它不指定 dtype 得到的张量
（`torch.tensor(a)`、`torch.from_numpy(a)`）被当作掩码使用时；用它索引 numpy 数组（整数下标，另一回事）不报告。
`torch.ByteTensor` 也可以通过按设备选择它的
变量来写（`ByteTensor = torch.cuda.ByteTensor if use_cuda else torch.ByteTensor`），
或者通过只绑定到 `torch` 或 `torch.cuda` 的名字来写（`th.ByteTensor`）。被当作掩码使用的函数参数，
如果同一文件中对该函数的某次调用传入了 uint8 张量，也会报告：该张量在调用处创建，或由一个每次赋值都创建 uint8
张量的变量或 `self.` 属性持有（`self.is_initial = t.byte()`，然后 `self.sample(x, self.is_initial)`）；
本文件中某个类的子模块按它的 `forward` 计（`self.attn = Attention()` 之后的 `self.attn(x, c, m)`），
这个名字也可以是元组赋值中的一项（`c, m = x, pad.byte()`）。
如果类中对某个 `self.` 属性的每次赋值都得到 uint8 张量，而类的某个方法把它当作掩码使用——直接使用、
通过绑定到它的局部变量（`mask = Variable(self.mask)`），或通过持有它的另一个属性
（`self.mask_gpu = self.mask.cuda()`）——则在创建它的地方报告。模块级函数返回的 uint8 张量
（单独返回，直接返回或经由一个重新绑定时保持 dtype 的名字，也包括返回 `~mask`：仍是 uint8，或用
`.to(device)` 搬到设备上返回），如果项目的
另一个文件把该函数的返回值绑定到一个名字（或 `self.` 属性）、再把它作为掩码交给 `masked_fill`、`masked_select`
或 `masked_scatter`，
也在创建处报告（tacotron2 的 `get_mask_from_lengths` 返回 `(ids < lengths.unsqueeze(1)).byte()`，
model.py 里写 `mask = ~get_mask_from_lengths(lengths)`；如果那一行已把它转成 bool，或文件把这个名字
转成 bool，则不报告），或者把它的返回值取反后赋给名字以 `mask` 结尾的变量或参数时（不论之后怎么用：
nonparaSeq2seqVC 的 decoder 把 `mask=~get_mask_from_lengths(lengths)` 作为关键字参数传给另一个方法；
对 uint8 张量取 `~` 会翻转每一个比特位），也报告。
作为元组中的一个值返回、另一个文件在一行里把它解包到名字表明是掩码的变量
并用它做索引时（`..., obj_mask, ... = build_targets(...)` 之后 `x[obj_mask]`：PyTorch-YOLOv3 的各个分支），
同样报告，除非那个文件把这个名字转成 bool。作为唯一参数传给某个方法、而项目中某个文件把这个参数保存到
`self` 上并用作掩码时（pytorch-seq2seq 的 `def set_mask(self, mask): self.mask = mask`，之后
`attn.masked_fill_(self.mask, ...)`，SummaRuNNer 等许多项目都拷贝了它），也报告。

作为数据的 uint8 张量（图像、打包的字节）不会被报告，对 uint8 张量本身做索引（`image[0]`）也不会：
只有出现在掩码位置上的 uint8 值才会被报告。

## Why is this bad?
PyTorch 1.2 之前掩码是 uint8 类型，那时写的代码至今还在用 `.byte()` 构造掩码。如今掩码应是 bool 类型。
用 uint8 张量做索引仍会被当作掩码，但会给出弃用警告；`masked_fill`、`masked_select`、`masked_scatter`
则会直接抛出 RuntimeError。uint8 掩码还很容易出错：对 uint8 做 `~mask` 得到的是 254 和 255，都是“真”，
“取反”后的掩码会选中所有元素；而本意是整数下标（查找表）的 uint8 张量也会被悄悄当成掩码。

## Symptoms
`UserWarning: indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool
instead.`、`UserWarning: masked_fill_ received a mask with dtype torch.uint8, this behavior is
now deprecated,please use a mask with dtype torch.bool instead.`；新版本中则是
`RuntimeError: masked_fill_ only supports boolean masks, but got mask with dtype unsigned char`、
`RuntimeError: masked_select: expected BoolTensor for mask`，或
`UserWarning: where received a uint8 condition tensor. This behavior is deprecated`。

## Fix safety
修复把掩码改成 bool 类型：`.byte()` 改为 `.bool()`，`torch.uint8` 改为 `torch.bool`，`torch.ByteTensor`
改为 `torch.BoolTensor`。当掩码只含 0 和 1（来自比较运算、`zeros`/`ones` 或 0/1 字面量），并且只被当作
掩码使用或只被填入 0/1 时，修复是安全的。否则是不安全的：浮点数转 bool 时 0.5 会变成 True，而
`.byte()` 会把它变成 0；对掩码做算术（`mask.sum()`、`1 - mask`、`~mask`）在 bool 上的结果也不同。

## Known problems
掩码会在所在函数内追踪，并追踪到同一文件中它被传入的函数参数（按名字调用的模块级函数、以 `self.name(...)`
调用的方法），还会从返回它（单独返回或放在元组中）的函数追踪到同一文件中的调用者：调用者解包后、在重新绑定该名字
之前把它当作掩码使用（也包括只返回这种调用的方法）。返回到其他文件或从其他文件传入的掩码不会被报告；
在函数中被移动或变形以外的操作重新绑定的掩码，以及为 torch < 1.2 保留的分支中创建的掩码，也不会被报告。
""",
    },
    example="""
import torch

scores = torch.randn(10)
keep = (scores > 0).byte()
positive = scores[keep]
""",
    use_instead="""
import torch

scores = torch.randn(10)
keep = scores > 0
positive = scores[keep]
""",
)

_UINT8_CAUSE = {
    "en": "A uint8 (byte) tensor is used as a mask; masks must be bool since PyTorch 1.2.",
    "zh": "把 uint8（byte）张量当作掩码使用；自 PyTorch 1.2 起掩码必须是 bool 类型。",
}
PITFALL.error(
    r"indexing with dtype torch\.uint8 is now deprecated",
    types=(),
    confidence=0.95,
    cause=_UINT8_CAUSE,
)
# `\bmasked_`: the op's name starts a word, or `masked_masked_...` would be rescanned from each.
PITFALL.error(
    r"(?P<op>\bmasked_\w+|where) received a (?:mask with dtype torch\.uint8|uint8 "
    r"condition tensor)",
    types=(),
    confidence=0.95,
    cause={
        "en": "`{op}` got a uint8 mask; masks must be bool since PyTorch 1.2.",
        "zh": "`{op}` 收到了 uint8 掩码；自 PyTorch 1.2 起掩码必须是 bool 类型。",
    },
)
PITFALL.error(
    r"\b(?P<op>masked_\w+) only supports boolean masks, but got mask with dtype "
    r"(?:unsigned char|Byte|uint8)",
    confidence=0.95,
    cause={
        "en": "`{op}` got a uint8 mask; current PyTorch accepts only bool masks.",
        "zh": "`{op}` 收到了 uint8 掩码；当前版本的 PyTorch 只接受 bool 掩码。",
    },
)
PITFALL.error(
    r"\b(?P<op>masked_\w+): expected BoolTensor for mask",
    confidence=0.9,
    cause={
        "en": "`{op}` got a mask that is not bool, most often a uint8 one.",
        "zh": "`{op}` 收到的掩码不是 bool 类型，最常见的是 uint8 掩码。",
    },
)

# The name each uint8 spelling takes in its bool form (mechanical renames: data, not code).
BOOL_SPELLING = {"uint8": "bool", "ByteTensor": "BoolTensor", "byte": "bool"}
UINT8_QUALNAMES = frozenset({"torch.uint8", "torch.ByteTensor", "torch.cuda.ByteTensor"})
# Conversions that take a dtype (or tensor type) as their first argument.
CONVERSIONS = frozenset({"to", "type"})

# Masks are the first argument of these methods, and the second of the torch.* functions.
MASK_METHODS = frozenset(
    {"masked_fill", "masked_fill_", "masked_select", "masked_scatter", "masked_scatter_"}
)
MASK_FUNCTIONS = frozenset({"torch.masked_fill", "torch.masked_select", "torch.masked_scatter"})
# Tensor methods whose result has the receiver's dtype.
DTYPE_KEEPING = frozenset(
    """
cuda cpu clone detach contiguous reshape squeeze unsqueeze expand expand_as flatten unflatten
repeat t transpose permute narrow fill_ zero_ pin_memory split chunk unbind tensor_split triu
tril triu_ tril_ flip roll view_as squeeze_ unsqueeze_ t_ transpose_ resize_ resize_as_
""".split()
)
DEVICE_KEYWORDS = frozenset({"device", "non_blocking", "copy", "memory_format"})
# Calls whose result holds only 0 and 1 (True/False): `.byte()` of them is an exact mask.
BOOLEAN_CALLS = frozenset(
    """
eq ne lt le gt ge eq_ ne_ lt_ le_ gt_ ge_ logical_and logical_or logical_not logical_xor
isnan isinf isfinite isposinf isneginf isclose isin bool any all
""".split()
)
ZERO_ONE_FACTORIES = frozenset(
    {"zeros", "ones", "zeros_like", "ones_like", "new_zeros", "new_ones"}
)
ZERO_ONE = (0, 1, True, False)


@PITFALL.static(ast.Attribute, ast.Name, names={"uint8", "ByteTensor"})
def check_dtype(node: ast.Attribute | ast.Name, ctx: Context) -> Iterator[Finding]:
    # `ByteTensor` may be a name picking `torch.cuda.ByteTensor` or `torch.ByteTensor`.
    qualname = tensor_type(node, ctx)
    if qualname == "numpy.uint8":
        yield from _report_numpy(node, ctx)
        return
    if qualname not in UINT8_QUALNAMES:
        return
    parents = ctx.statement_parents()
    made = _made_by(node, qualname, parents, ctx)
    if made is not None:
        yield from _report(made, node, parents, ctx)


@PITFALL.static(ast.Call, names={"byte"})
def check_byte(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if ctx.method_name(call) != "byte" or call.args or call.keywords:
        return
    yield from _report(call, call.func, ctx.statement_parents(), ctx)


@PITFALL.static(ast.Subscript)
def check_parameter_index(node: ast.Subscript, ctx: Context) -> Iterator[Finding]:
    index_ = node.slice
    if type(index_) not in (ast.Name, ast.Tuple) or not _makes_uint8_somewhere(ctx):
        return  # most subscripts: a constant or a slice; most files: no uint8 tensor made
    for mask in index_.elts if type(index_) is ast.Tuple else (index_,):
        if type(mask) is ast.Name and _indexes_a_tensor(node.value, ctx):
            yield from _report_parameter(mask, ctx)


@PITFALL.static(ast.Call, names=MASK_METHODS | {"where"})
def check_parameter_argument(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if not _makes_uint8_somewhere(ctx):
        return
    mask = _mask_root_node(_mask_argument(call, ctx))
    if mask is not None:  # `mask`, `mask.transpose(1, 0)`, `mask[i].unsqueeze(-1)`
        yield from _report_parameter(mask, ctx)


@per_file
def _makes_uint8_somewhere(ctx: Context) -> bool:
    return any(ctx.may_name(word) for word in ("byte()", "uint8", "ByteTensor"))


def _report_parameter(mask: ast.Name, ctx: Context) -> Iterator[Finding]:
    """`mask`, a parameter the function never rebinds, is used as a mask, and a call of the
    function in this file passes it a value surely made as uint8 (`self.flags` assigned only
    `.byte()` results): reported at its first such use."""
    function = ctx.enclosing_function()
    if function is None or not is_parameter(function, mask.id):
        return
    if not may_be_called(ctx, function.name) or scope_of(mask.id, ctx) is not function:
        return
    if unrebound_parameter(ctx, function, mask.id) is None:
        return
    reported = _reported_parameters(ctx)
    if (function, mask.id) in reported:
        return
    passed = _uint8_passed(ctx, function, mask.id)
    if passed is not None:
        reported.add((function, mask.id))
        call, value = passed
        source = shorten(ctx.text(value))
        yield ctx.finding(PITFALL, mask, "parameter", name=mask.id, source=source, line=call.lineno)


@per_file
def _reported_parameters(ctx: Context) -> set:
    """(function, parameter) already reported in this file: one finding per parameter."""
    return set()


@per_file
def _uint8_passed(
    ctx: Context, function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str
) -> tuple[ast.Call, ast.expr] | None:
    """The first call of `function` in the file that passes `parameter` a uint8 tensor."""
    for call, value in passed_values(ctx, function, parameter):
        if _surely_uint8(value, call, ctx):
            return call, value
    return None


def _surely_uint8(value: ast.expr, call: ast.Call, ctx: Context) -> bool:
    """`value`, passed by `call`, is made as uint8: by its own expression, or, for a name or a
    `self.` attribute, by every assignment of it in the caller's function or class."""
    value = _unwrapped(value, ctx)
    if _makes_uint8(value, ctx):
        return True
    whole = index(ctx)
    caller = whole.scopes[whole.number[call]]
    if is_self_attribute(value):
        cls = whole.parents.get(caller) if caller is not None else None
        if not isinstance(cls, ast.ClassDef):
            return False
        values = attribute_values(ctx, cls, value.attr)
    elif type(value) is ast.Name and isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef)):
        found = bindings(ctx, caller, value.id) or ()
        reaching = _only_reaching(found, call, caller)
        if reaching is not None:
            found = (reaching,)  # `mask = mask.byte()` over the parameter, then the call
        if any(b.value is None or b.augmented for b in found):
            return False
        values = tuple(b.value for b in found)
    else:
        return False
    return bool(values) and all(_makes_uint8(_unwrapped(v, ctx), ctx) for v in values)


def _only_reaching(found, call: ast.Call, caller: ast.AST):
    """The one binding of a name that reaches `call`: a parameter rebound once by a statement
    of the function's own body (no branch around it) before the call, and never after it
    (ChineseNER's CRF: `mask = mask.byte()`, then `self._score_sentence(scores, mask, tags)`).
    None when it is not so."""
    parameter = [b for b in found if isinstance(b.node, ast.arg)]
    others = [b for b in found if not isinstance(b.node, ast.arg)]
    if len(parameter) != 1 or len(others) != 1:
        return None
    rebinding = others[0]
    statement = rebinding.node
    if statement not in caller.body or statement.end_lineno >= call.lineno:  # type: ignore[attr-defined, operator]
        return None
    return rebinding


def _unwrapped(value: ast.expr, ctx: Context) -> ast.expr:
    """The value inside `Variable(...)`, a device helper (`to_cuda(...)`) and calls that keep
    the dtype (`.cuda()`, `.clone()`)."""
    while type(value) is ast.Call:
        func = value.func
        if type(func) is ast.Attribute and _keeps_dtype(value, ctx):
            value = func.value
        elif value.args and _hands_back_its_tensor(value, ctx):
            value = value.args[0]
        else:
            break
    return value


def _makes_uint8(value: ast.expr, ctx: Context) -> bool:
    """`x.byte()`, `x.to(torch.uint8)`, `x.type(torch.ByteTensor)`, `torch.ByteTensor(...)`,
    `torch.zeros(n, dtype=torch.uint8)`."""
    if type(value) is not ast.Call:
        return False
    method = ctx.method_name(value)
    if method == "byte":
        return not value.args and not value.keywords
    if method in CONVERSIONS:
        return any(ctx.qualname(arg) in UINT8_QUALNAMES for arg in value.args)
    if ctx.qualname(value.func) in UINT8_QUALNAMES:
        return True
    return any(
        k.arg == "dtype" and ctx.qualname(k.value) in UINT8_QUALNAMES for k in value.keywords
    )


def _made_by(spelling: ast.AST, qualname: str, parents: dict, ctx: Context) -> ast.Call | None:
    """The call that makes a uint8 tensor from this `torch.uint8`/`torch.ByteTensor` spelling
    (meaning `qualname`): `torch.zeros(n, dtype=torch.uint8)`, `x.to(torch.uint8)`,
    `torch.ByteTensor(...)`."""
    parent = parents.get(spelling)
    if isinstance(parent, ast.keyword):
        call = parents.get(parent)
        return call if parent.arg == "dtype" and isinstance(call, ast.Call) else None
    if not isinstance(parent, ast.Call):
        return None
    if parent.func is spelling:
        return parent if qualname.endswith("ByteTensor") else None
    # x.to(torch.uint8), x.to(device, torch.uint8), x.type(torch.ByteTensor)
    if ctx.method_name(parent) in CONVERSIONS and any(arg is spelling for arg in parent.args):
        return parent
    return None


# Conversions of an array to a tensor that keep its dtype when given none.
ARRAY_CONVERSIONS = frozenset({"torch.tensor", "torch.from_numpy", "torch.as_tensor"})


def _report_numpy(spelling: ast.AST, ctx: Context) -> Iterator[Finding]:
    """`eye = np.zeros(shape, dtype=np.uint8)` (or `.astype(np.uint8)`), then a tensor made
    from it without a dtype used as a mask (`w.masked_fill_(torch.tensor(eye), 1.)`,
    InfoGraph): reported where the array is made. Indexing numpy with it is another matter
    (integer indices), left alone."""
    parents = ctx.statement_parents()
    parent = parents.get(spelling)
    made = (
        parents.get(parent) if isinstance(parent, ast.keyword) and parent.arg == "dtype" else None
    )
    if made is None and isinstance(parent, ast.Call) and ctx.method_name(parent) == "astype":
        made = parent if parent.args and parent.args[0] is spelling else None
    if not isinstance(made, ast.Call):
        return
    name = _assigned_name(ctx.ancestors[-1] if ctx.ancestors else None, made)
    scope = ctx.enclosing_function() or ctx.tree
    if name is None or len(bindings(ctx, scope, name) or ()) != 1:
        return
    found = index_of(ctx, scope)
    tree_parents = found.parents
    for node in found.names_in(scope, name):
        call = tree_parents.get(node)
        if not (
            isinstance(node.ctx, ast.Load)
            and isinstance(call, ast.Call)
            and call.args
            and call.args[0] is node
            and not call.keywords
            and ctx.qualname(call.func) in ARRAY_CONVERSIONS
        ):
            continue
        value, _ = _carried(call, tree_parents, ctx)
        if _in_mask_position(value, tree_parents, ctx):
            source = shorten(ctx.text(made))
            yield ctx.finding(PITFALL, made, "numpy", name=name, source=source, line=node.lineno)
            return


def _spelling_name(node: ast.AST) -> str:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def _report(made: ast.Call, spelling: ast.AST, parents: dict, ctx: Context) -> Iterator[Finding]:
    if in_compat_fallback(ctx):
        return  # `torch.ByteTensor(...)` kept for torch < 1.2 beside `torch.BoolTensor(...)`
    value, mixed = _carried(made, parents, ctx)
    exact = not mixed and _holds_zero_one(made)
    source = shorten(ctx.text(made))
    if _in_mask_position(value, parents, ctx):
        fix = None if _through_arithmetic(made, value, parents) else _fix(spelling, exact, ctx)
        yield ctx.finding(PITFALL, made, fix=fix, source=source)
        return
    statement = ctx.ancestors[-1] if ctx.ancestors else None
    name = _assigned_name(statement, value)
    if name is None:
        if isinstance(statement, ast.Return) and statement.value is value:
            yield from _report_returned(made, spelling, exact, ctx)  # `return (a < b).byte()`
            return
        yield from _report_attribute(made, spelling, statement, value, ctx)
        return
    line = _first_mask_use(name, ctx)
    if line is None:
        line = _returned_mask_use(name, ctx)
    if line is None:
        function = ctx.enclosing_function()
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return
        place = _returned_at(function, name, ctx)
        if place is False or not _keeps_its_dtype(ctx, function, name, index(ctx).parents):
            return
        if place is None:
            yield from _report_returned(made, spelling, exact, ctx)  # `mask = ...; return mask`
        elif ctx.project.has(f"{INDEX_MASK_FROM}{function.name}@{place}"):
            # YOLOv3's `build_targets`, whose `obj_mask` another module indexes with
            yield ctx.finding(
                PITFALL,
                made,
                "returned-index",
                fix=_fix(spelling, exact, ctx),
                source=source,
                function=function.name,
                place=place + 1,
            )
        return
    scope = ctx.enclosing_function() or ctx.tree
    exact = exact and _only_mask_uses(ctx, scope, name)
    fix = None if _used_in_arithmetic(ctx, scope, name) else _fix(spelling, exact, ctx)
    yield ctx.finding(PITFALL, made, "name", fix=fix, source=source, name=name, line=line)


def _report_returned(
    made: ast.Call, spelling: ast.AST, exact: bool, ctx: Context
) -> Iterator[Finding]:
    """A uint8 tensor a module-level function returns alone, where another file of the project
    binds what that function returns to a name it hands to `masked_fill` (project facts:
    tacotron2's `get_mask_from_lengths`, returning `(ids < lengths.unsqueeze(1)).byte()`)."""
    function = ctx.enclosing_function()
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return
    if not isinstance(index(ctx).parents.get(function), ast.Module):
        return  # (code kept for older torch: left alone by `_report`)
    if ctx.project.has(MASK_FROM + function.name):
        variant = "returned"
    elif ctx.project.has(INVERTED_MASK_FROM + function.name):
        variant = "returned-inverted"  # `mask=~get_mask_from_lengths(...)` handed on
    else:
        return
    source = shorten(ctx.text(made))
    yield ctx.finding(
        PITFALL,
        made,
        variant,
        fix=_fix(spelling, exact, ctx),
        source=source,
        function=function.name,
    )


def _report_attribute(
    made: ast.Call, spelling: ast.AST, statement: ast.AST | None, value: ast.AST, ctx: Context
) -> Iterator[Finding]:
    """`self.mask = t.byte()` in a method, and `self.mask` used as a mask in some method of
    the class (directly, or through a local name or another attribute holding it)."""
    if not (
        isinstance(statement, ast.Assign)
        and statement.value is value
        and len(statement.targets) == 1
        and is_self_attribute(statement.targets[0])
    ):
        return
    cls = ctx.enclosing_class()
    if cls is None or ctx.enclosing_function() is None:
        return
    attr = statement.targets[0].attr  # type: ignore[attr-defined]
    line = _attribute_mask_use(ctx, cls, attr)
    if line is not None:
        source = shorten(ctx.text(made))
        fix = _fix(spelling, False, ctx)
        name = f"self.{attr}"
        yield ctx.finding(PITFALL, made, "name", fix=fix, source=source, name=name, line=line)


@per_file
def _attribute_mask_use(ctx: Context, cls: ast.ClassDef, attr: str) -> int | None:
    """The first line where `self.<attr>`, made uint8 by every assignment in `cls`, is used as
    a mask in a method of `cls`: directly (`torch.masked_select(x, self.mask)`), through a
    local name bound to it once (`mask = Variable(self.mask)`), or through another attribute
    assigned only it (`self.mask_gpu = self.mask.cuda()`)."""
    found = index(ctx)
    parents = found.parents
    lines: list[int] = []
    todo, seen = [attr], {attr}
    while todo:
        current = todo.pop()
        values = attribute_values(ctx, cls, current)
        values = [_unwrapped(v, ctx) for value in values for v in _branches(value)]
        if not values or not all(
            _makes_uint8(v, ctx) or (is_self_attribute(v) and v.attr in seen)  # type: ignore[attr-defined]
            for v in values
        ):
            continue
        for node in found.numbers_in(found.attributes, cls, current):
            use = found.nodes[node]
            if not (is_self_attribute(use) and isinstance(use.ctx, ast.Load)):
                continue
            if not _in_method_of(found, cls, node):
                continue
            carried, _ = _carried(use, parents, ctx)
            if _in_mask_position(carried, parents, ctx):
                lines.append(use.lineno)
                continue
            holder = parents.get(carried)
            if isinstance(holder, ast.IfExp) and carried is not holder.test:
                carried, holder = holder, parents.get(holder)  # `a.cuda() if cuda else a`
            if not (isinstance(holder, ast.Assign) and len(holder.targets) == 1):
                continue
            target = holder.targets[0]
            if is_self_attribute(target) and target.attr not in seen:  # type: ignore[attr-defined]
                seen.add(target.attr)  # type: ignore[attr-defined]
                todo.append(target.attr)  # type: ignore[attr-defined]
            elif type(target) is ast.Name:
                lines.extend(_local_mask_uses(ctx, found.scopes[node], target.id, parents))
    return min(lines) if lines else None


def _branches(value: ast.expr) -> list[ast.expr]:
    """Both values of `a if test else b`; `[value]` for anything else."""
    if isinstance(value, ast.IfExp):
        return [*_branches(value.body), *_branches(value.orelse)]
    return [value]


def _in_method_of(found, cls: ast.ClassDef, at: int) -> bool:
    """The node numbered `at` is in a method defined directly in `cls`."""
    scope = found.scopes[at]
    return scope is not None and found.parents.get(scope) is cls


def _local_mask_uses(ctx: Context, function: ast.AST | None, name: str, parents) -> list[int]:
    """Lines where `name`, bound once in `function`, is used there as a mask."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    found = bindings(ctx, function, name)
    if not found or len(found) != 1:
        return []
    return [
        node.lineno
        for node in index(ctx).names_in(function, name)
        if _is_mask_use(node, name, parents, ctx)
    ]


def _returned_mask_use(name: str, ctx: Context) -> int | None:
    """`name`, returned by its function (alone, or at one place of a tuple: `return coord_mask,
    cls_mask, tcls`), and at a call of that function in this file unpacked into a name the
    caller uses as a mask before binding it again: the line of that use. The calls followed
    are a module function's by name and a method's as `self.name(...)`, also through a method
    that only returns such a call (YOLO's `build_targets`, which hands over to its brambox
    variant)."""
    function = ctx.enclosing_function()
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    found = index(ctx)
    if not _keeps_its_dtype(ctx, function, name, found.parents):
        return None
    return _used_by_callers(ctx, function, name, found, hops=2)


def _used_by_callers(ctx: Context, function: ast.AST, name: str, found, hops: int) -> int | None:
    """The line where a caller of `function` uses as a mask the name it unpacks `name` into
    (`_returned_mask_use`); with `hops` left, also where that caller returns the name in its
    turn and one of its callers uses it (the chatbot tutorial: `outputVar` returns the mask,
    `batch2TrainData` unpacks and returns it again, the training script unpacks and uses it).
    A caller may be the module's own code."""
    position = _returned_at(function, name, ctx)
    if position is False:
        return None
    for call, statement in _calls_of(ctx, function, found, depth=2):
        caller = found.scopes[found.number[statement]] or ctx.tree
        if not isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            continue
        target = _unpacked_name(statement, position)
        held = _unpacked_name(statement, None) if position is not None else None
        if target is None and held is not None:
            # `batch = sample_memory(...)`, then `state, ..., mask, ... = batch`
            statement, target = _unpacked_later(found, caller, held, statement, position)
        if target is None:
            continue
        line = _mask_use_before_rebinding(ctx, caller, target, statement)
        if line is not None:
            return line
        if hops > 1 and isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef)):
            line = _used_by_callers(ctx, caller, target, found, hops - 1)
            if line is not None:
                return line
    return None


def _unpacked_later(
    found, caller: ast.AST, held: str, statement: ast.stmt, position: int | None
) -> tuple[ast.stmt, str | None]:
    """The first statement after `statement` in `caller` that unpacks the name `held` (`a, b =
    held`), and the name it binds at `position`."""
    for later in found.local(caller, ast.Assign):
        if (
            later.lineno > (statement.end_lineno or statement.lineno)
            and type(later.value) is ast.Name
            and later.value.id == held
        ):
            return later, _unpacked_name(later, position)
    return statement, None


def _keeps_its_dtype(ctx: Context, function: ast.AST, name: str, parents) -> bool:
    """Every binding of `name` in `function` but the one being checked (the mask made), and
    those before it when it is made in the function's own body, carries its own value on with
    the dtype kept (`mask = mask[:, None].expand(shape)`)."""
    statement = ctx.ancestors[-1] if ctx.ancestors else None
    # Made in the function's own body (no branch, no loop): what the name held before is gone.
    start = statement.lineno if statement in function.body else 0  # type: ignore[attr-defined]
    for binding in bindings(ctx, function, name) or ():
        if binding.node is statement or getattr(binding.node, "lineno", start) < start:
            continue
        value = binding.value
        if value is None or binding.augmented:
            return False
        if not any(
            type(node) is ast.Name
            and node.id == name
            and isinstance(node.ctx, ast.Load)
            and _carried(node, parents, ctx)[0] is value
            for node in ast.walk(value)
        ):
            return False
    return True


def _returned_at(function: ast.AST, name: str, ctx: Context) -> int | None | bool:
    """Where every `return` of `function` puts `name`: None (returned alone), its place in a
    tuple, or False (not so returned, or at different places)."""
    places: set[int | None] = set()
    for statement in index_of(ctx, function).local(function, ast.Return):
        value = statement.value  # type: ignore[attr-defined]
        if type(value) is ast.UnaryOp and type(value.op) is ast.Invert:
            value = value.operand  # `return ~mask`: a uint8 mask's bits flipped, still uint8
        while (
            type(value) is ast.Call
            and type(value.func) is ast.Attribute
            and _keeps_dtype(value, ctx)
        ):
            value = value.func.value  # `return mask.to(self.device)`: still uint8
        if type(value) is ast.Name and value.id == name:
            places.add(None)
        elif type(value) is ast.Tuple:
            places.update(
                k for k, e in enumerate(value.elts) if type(e) is ast.Name and e.id == name
            )
        else:
            return False
    return places.pop() if len(places) == 1 else False


def _calls_of(
    ctx: Context, function: ast.AST, found, depth: int
) -> Iterator[tuple[ast.Call, ast.stmt]]:
    """(call, the statement holding it) for each call of `function` in the file that surely
    reaches it, a function returning such a call followed in its turn (`depth` levels). A
    method's calls are `self.name(...)` in its class (a static one's too: it hands back the
    same value); a module function's, those by its bare name while nothing else binds it."""
    owner = found.parents.get(function)
    name = function.name  # type: ignore[attr-defined]
    if isinstance(owner, ast.ClassDef):
        calls = [c for c in found.calls_named(owner, (name,)) if is_self_attribute(c.func)]
    elif isinstance(owner, ast.Module):
        calls = module_function_calls(ctx, function, found) or []
    else:
        return
    for call in calls:
        statement = found.parents.get(call)
        if isinstance(statement, ast.Return) and depth > 1:
            outer = found.scopes[found.number[statement]]
            if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from _calls_of(ctx, outer, found, depth - 1)
        elif isinstance(statement, ast.Assign) and statement.value is call:
            yield call, statement


def _unpacked_name(statement: ast.stmt, position: int | None) -> str | None:
    """The name `statement` (an assignment) binds to the returned value's place."""
    if len(statement.targets) != 1:  # type: ignore[attr-defined]
        return None
    target = statement.targets[0]  # type: ignore[attr-defined]
    if position is not None and type(target) is ast.Tuple and position < len(target.elts):
        if any(type(e) is ast.Starred for e in target.elts):
            return None
        target = target.elts[position]
    elif position is not None:
        return None
    return target.id if type(target) is ast.Name else None


def _mask_use_before_rebinding(
    ctx: Context, function: ast.AST, name: str, statement: ast.stmt
) -> int | None:
    """The first line after `statement` where `name` is used as a mask in `function`, when no
    statement binds it in between (a dtype-keeping move of it aside)."""
    found = index(ctx)
    parents = found.parents
    after = (statement.end_lineno or statement.lineno, statement.end_col_offset or 0)
    for node in sorted(found.names_in(function, name), key=lambda n: (n.lineno, n.col_offset)):
        if (node.lineno, node.col_offset) <= after:
            continue
        if (found.scopes[found.number[node]] or ctx.tree) is not function:
            continue  # a name of a function defined in it (of the module's code, mostly)
        if not isinstance(node.ctx, ast.Load):
            return None
        if _is_mask_use(node, name, parents, ctx):
            return node.lineno
    return None


def _fix(spelling: ast.AST, exact: bool, ctx: Context):
    if not isinstance(spelling, ast.Attribute):
        return None  # `from torch import uint8`: a bare `bool` would be Python's
    _, end = ctx.span(spelling)
    edit = ctx.edit(end - len(spelling.attr), end, BOOL_SPELLING[spelling.attr])
    return ctx.fix(PITFALL, "safe" if exact else "unsafe", edit)


def _carried(value: ast.AST, parents: dict, ctx: Context) -> tuple[ast.AST, bool]:
    """The outermost expression that still holds `value` as a uint8 tensor: through `.cuda()`,
    `.view(...)`, `mask[t]`, `~`, `&` ... True as second item when an operator changed the
    values."""
    mixed = False
    while True:
        parent = parents.get(value)
        if isinstance(parent, ast.Attribute) and parent.value is value:
            if parent.attr == "data" and isinstance(parent.ctx, ast.Load):
                value = parent  # `mask.data`: the same tensor (TPRU's `(seqs == 0).byte().data`)
                continue
            call = parents.get(parent)
            if not (isinstance(call, ast.Call) and call.func is parent and _keeps_dtype(call, ctx)):
                return value, mixed
            value = call
        elif (
            isinstance(parent, ast.Call)
            and parent.args
            and parent.args[0] is value
            and _hands_back_its_tensor(parent, ctx)
        ):
            value = parent  # `Variable(mask)`, `cuda_(mask)`
        elif (
            isinstance(parent, ast.Subscript)
            and parent.value is value
            and isinstance(parent.ctx, ast.Load)
        ):
            value = parent  # `mask[t]`: a part of the mask, of its dtype (LatticeLSTM's CRF)
        elif isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Invert):
            value, mixed = parent, True
        elif (
            isinstance(parent, ast.BinOp)
            and isinstance(parent.op, (ast.BitAnd, ast.BitOr, ast.BitXor))
            and _is_mask_like(parent.right if parent.left is value else parent.left, ctx)
        ):
            value, mixed = parent, True
        elif _is_arithmetic(parent, value):  # `1 - mask`: uint8 still (sgrvinod's SSD)
            value, mixed = parent, True
        else:
            return value, mixed


# What a helper that moves its one argument to the GPU is named (`cuda_(x)`, `to_cuda(x)`,
# `to_var(x)`, `maybe_cuda(x)`, `to_device(x)`): it keeps the dtype.
_DEVICE_HELPER_WORDS = ("cuda", "gpu", "device")
_DEVICE_HELPER_NAMES = frozenset({"to_var", "tovar", "var"})


def _hands_back_its_tensor(call: ast.Call, ctx: Context) -> bool:
    """`Variable(x)` (the same tensor since PyTorch 0.4) or the project's helper moving `x` to
    a device (`cuda_(x)`): a call whose result is its first argument, dtype and all."""
    return ctx.qualname(call.func) in VARIABLE_QUALNAMES or _is_device_helper(call, ctx)


def _is_device_helper(call: ast.Call, ctx: Context) -> bool:
    """A call of the project's own helper moving its one argument to a device."""
    if len(call.args) != 1 or any(k.arg not in DEVICE_KEYWORDS for k in call.keywords):
        return False
    name = _spelling_name(call.func).lower()
    qualname = ctx.qualname(call.func) or ""
    if not name or qualname.startswith(("torch.", "numpy.")):
        return False  # `torch.cuda.device(x)` and the like are no such helper
    return name in _DEVICE_HELPER_NAMES or any(word in name for word in _DEVICE_HELPER_WORDS)


def _keeps_dtype(call: ast.Call, ctx: Context) -> bool:
    method = call.func.attr
    if method in DTYPE_KEEPING:
        return True
    if method == "view":  # view(torch.bool) reinterprets the bytes
        return all(ctx.qualname(arg) is None for arg in call.args)
    if method == "to":  # only a device move: to(torch.bool) or to(other_tensor) converts
        return all(_is_device(arg) for arg in call.args) and all(
            k.arg in DEVICE_KEYWORDS for k in call.keywords
        )
    return False


def _is_device(expr: ast.AST) -> bool:
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, str)
    if isinstance(expr, ast.Attribute):
        return expr.attr == "device"
    if isinstance(expr, ast.Name):
        return "device" in expr.id
    return isinstance(expr, ast.Call) and _spelling_name(expr.func) == "device"


def _is_mask_like(expr: ast.AST, ctx: Context) -> bool:
    """A bool tensor or another `.byte()` mask: `&`/`|` with it keeps a uint8 result. A name
    counts when every binding of it in its scope is one (`non_pad_mask = tokens.ne(PAD)`, then
    `masks.byte() & non_pad_mask`: VideoCaptioning's mask-predict decoding)."""
    if type(expr) is ast.Name:
        found = bindings(ctx, scope_of(expr.id, ctx), expr.id)
        return bool(found) and all(
            b.value is not None and not b.augmented and _is_mask_like_value(b.value) for b in found
        )
    return _is_mask_like_value(expr)


def _is_mask_like_value(expr: ast.AST) -> bool:
    return _is_boolean(expr) or (isinstance(expr, ast.Call) and _spelling_name(expr.func) == "byte")


def _is_boolean(expr: ast.AST) -> bool:
    if isinstance(expr, ast.Compare):
        return True
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Invert):
        return _is_boolean(expr.operand)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
        return _is_boolean(expr.left) and _is_boolean(expr.right)
    return isinstance(expr, ast.Call) and _spelling_name(expr.func) in BOOLEAN_CALLS


def _holds_zero_one(made: ast.Call) -> bool:
    """True when the uint8 tensor can only hold 0 and 1, so bool keeps every value."""
    name = _spelling_name(made.func)
    if name in ("byte", *CONVERSIONS):
        return isinstance(made.func, ast.Attribute) and _is_boolean(made.func.value)
    if name == "ByteTensor":  # sizes (unfilled memory either way) or 0/1 data
        return len(made.args) > 1 or all(
            _is_size(arg) or _is_zero_one_literal(arg) for arg in made.args
        )
    if name in ZERO_ONE_FACTORIES:
        return True
    if name == "full" and len(made.args) == 2:
        return _is_zero_one_literal(made.args[1])
    if name == "tensor" and made.args:
        return _is_zero_one_literal(made.args[0])
    return False


def _is_arithmetic(node: ast.AST | None, operand: ast.AST) -> bool:
    """`1 - mask`, `mask + 1`, `mask ^ 1`: arithmetic with an int, which a bool tensor refuses
    (`-`) or turns into integers (`+`, `^`): no fix to bool can be offered."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, (ast.Sub, ast.Add, ast.BitXor))
        and _is_small_int(node.right if node.left is operand else node.left)
    )


def _through_arithmetic(made: ast.AST, value: ast.AST, parents: dict) -> bool:
    """Some arithmetic with an int lies between `made` and the `value` carrying it."""
    node = made
    while node is not value:
        parent = parents.get(node)
        if parent is None:
            return False
        if _is_arithmetic(parent, node):
            return True
        node = parent
    return False


@per_file
def _used_in_arithmetic(ctx: Context, scope: ast.AST, name: str) -> bool:
    """Some read of `name` in its scope takes part in arithmetic with an int."""
    found = index_of(ctx, scope)
    parents = found.parents
    return any(_is_arithmetic(parents.get(node), node) for node in found.names_in(scope, name))


def _is_small_int(expr: ast.AST) -> bool:
    """An int literal a uint8 tensor takes in arithmetic without changing its dtype."""
    return isinstance(expr, ast.Constant) and type(expr.value) is int and 0 <= expr.value <= 255


def _is_size(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Constant) and type(expr.value) is int


def _is_zero_one_literal(expr: ast.AST) -> bool:
    if isinstance(expr, (ast.List, ast.Tuple)):
        return all(_is_zero_one_literal(e) for e in expr.elts)
    return (
        isinstance(expr, ast.Constant)
        and expr.value in ZERO_ONE
        and type(expr.value) in (int, bool)
    )


def _in_mask_position(node: ast.AST, parents: dict, ctx: Context) -> bool:
    parent = parents.get(node)
    if isinstance(parent, ast.Tuple):  # x[mask, 0]
        outer = parents.get(parent)
        if isinstance(outer, ast.Subscript) and outer.slice is parent:
            node, parent = parent, outer
    if isinstance(parent, ast.Subscript):
        return parent.slice is node and _indexes_a_tensor(parent.value, ctx)
    if isinstance(parent, ast.keyword):
        keyword, parent = parent, parents.get(parent)
        if keyword.arg in _mask_parameters(ctx) and isinstance(parent, ast.Call):
            qualname = ctx.qualname(parent.func) or ""
            if not qualname.startswith(("torch.", "numpy.")):
                return True  # `layer(x, dec_attn_mask=mask)`: a function of the file masks with it
    if not isinstance(parent, ast.Call):
        return False
    return (
        _mask_argument(parent, ctx) is node
        or _own_mask_parameter(parent, node, ctx)
        or _given_to_mask_setter(parent, node, ctx)
    )


def _given_to_mask_setter(call: ast.Call, node: ast.AST, ctx: Context) -> bool:
    """`self.attn.set_mask(word_mask)`: the one argument of a method that some file of the
    project keeps on `self` and masks with (project facts: pytorch-seq2seq's Attention, which
    SummaRuNNer copies)."""
    return (
        type(call.func) is ast.Attribute
        and len(call.args) == 1
        and call.args[0] is node
        and not call.keywords
        and ctx.project.has(MASK_SETTER + call.func.attr)
    )


def _own_mask_parameter(call: ast.Call, node: ast.AST, ctx: Context) -> bool:
    """`node` is passed by position to a function of this file, or a method of the class around
    the call as `self.name(...)`, whose parameter there reaches a mask (pytorch-crf's
    `self._viterbi_decode(emissions, mask)`)."""
    if node not in call.args or not _makes_uint8_somewhere(ctx):
        return False
    func = call.func
    if type(func) is ast.Name:
        callee, skip = top_level_functions(ctx).get(func.id), 0
    elif type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id == "self":
        cls = ctx.enclosing_class()
        callee = methods_defined_once(ctx, cls).get(func.attr) if cls is not None else None
        if callee is None and cls is not None:
            callee = _submodule_forward(ctx, cls, func.attr)  # `self.attn(x, c, c, m)`
        skip = 1
    else:
        return False
    if callee is None or any(type(a) is ast.Starred for a in call.args):
        return False
    positional = [*callee.args.posonlyargs, *callee.args.args][skip:]
    at = call.args.index(node)
    name = positional[at].arg if at < len(positional) else None
    if not any(f is callee and p == name for f, p, _ in _masking_parameters(ctx)):
        return False
    # A parameter some call passes a uint8 tensor made so is reported where it is used.
    return _uint8_passed(ctx, callee, name) is None  # type: ignore[arg-type]


def _submodule_forward(ctx: Context, cls: ast.ClassDef, attr: str) -> ast.FunctionDef | None:
    """The `forward` of the class of this file that `self.<attr>` is built from, in every
    assignment of it (`self.attn = MultiheadAttention(...)`): what calling it runs
    (transformer_chatbot's `self.attn(x, c, c, m)`)."""
    values = attribute_values(ctx, cls, attr)
    if len(values) != 1 or type(values[0]) is not ast.Call or type(values[0].func) is not ast.Name:
        return None
    module = top_level_classes(ctx).get(values[0].func.id)
    return methods_defined_once(ctx, module).get("forward") if module is not None else None


@per_file
def _mask_parameters(ctx: Context) -> frozenset[str]:
    """The names of the file's function parameters that reach a mask: the mask of a
    `masked_fill` (indexed or moved on the way: `attn_mask[None, :, :, None]`), or handed on by
    that name as a keyword to a call (`self.dec_attn(x, attn_mask=dec_attn_mask)`, passed on so
    through Transformer-XL's layers). Read once per file, and only in a file that makes a uint8
    tensor. (Names only: a keyword's callee is often out of sight, a layer's `forward`.)"""
    if not _makes_uint8_somewhere(ctx):
        return frozenset()
    found = index(ctx)
    names = {name for _, name, method in _masking_parameters(ctx) if method != "where"}
    keywords = [found.nodes[at] for at in found.by_class.get(ast.keyword, ())]
    for _ in range(4):  # handed on through a few layers at most
        more = {
            keyword.value.id
            for keyword in keywords
            if keyword.arg in names
            and type(keyword.value) is ast.Name
            and keyword.value.id not in names
            and _is_parameter_at(found, keyword.value)
        }
        if not more:
            break
        names |= more
    return frozenset(names)


@per_file
def _masking_parameters(ctx: Context) -> frozenset[tuple[ast.AST, str, str]]:
    """(function, parameter, method) for each parameter that is the mask of a `masked_fill`
    (...) or the condition of a `torch.where` ("where") in its own function."""
    found = index(ctx)
    pairs: set[tuple[ast.AST, str, str]] = set()
    for method in (*MASK_METHODS, "where"):
        for at in found.calls.get(method, ()):
            call = found.nodes[at]
            if method == "where":
                if len(call.args) != 3 or ctx.qualname(call.func) != "torch.where":
                    continue
                mask = call.args[0]  # pytorch-crf's `_viterbi_decode(emissions, mask)`
            elif type(call.func) is ast.Attribute:
                mask = argument(call, 0, "mask")
            else:
                continue
            root, scope = _mask_root(mask), found.scopes[at]
            if root is not None and _is_parameter_of(scope, root):
                pairs.add((scope, root, method))  # type: ignore[arg-type]
    return frozenset(pairs)


def _mask_root(mask: ast.AST | None) -> str | None:
    """The name a mask argument reads: `m`, `m[None, :, :, None]`, `m.cuda()`,
    `m[i].unsqueeze(1)`."""
    root = _mask_root_node(mask)
    return root.id if root is not None else None


def _mask_root_node(mask: ast.AST | None) -> ast.Name | None:
    """The name node a mask argument reads (see `_mask_root`)."""
    while mask is not None:
        if type(mask) is ast.Name:
            return mask
        if type(mask) is ast.Subscript:
            mask = mask.value
        elif (
            type(mask) is ast.Call
            and type(mask.func) is ast.Attribute
            and (mask.func.attr in ("cuda", "to") or mask.func.attr in DTYPE_KEEPING)
        ):
            mask = mask.func.value  # `mask[i].unsqueeze(1)`: pytorch-crf's `torch.where`
        else:
            return None
    return None


def _is_parameter_at(found, name: ast.Name) -> bool:
    return _is_parameter_of(found.scopes[found.number[name]], name.id)


def _is_parameter_of(scope: ast.AST | None, name: str) -> bool:
    return isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_parameter(scope, name)


def _indexes_a_tensor(value: ast.AST, ctx: Context) -> bool:
    """Python containers and numpy arrays take a tensor index as integers, not as a mask."""
    if isinstance(value, (ast.List, ast.Tuple, ast.Dict, ast.Constant, ast.JoinedStr)):
        return False
    return ctx.kind_of(value) is not Kind.NDARRAY


def _mask_argument(call: ast.Call, ctx: Context) -> ast.AST | None:
    qualname = ctx.qualname(call.func)
    if qualname in MASK_FUNCTIONS:
        return argument(call, 1, "mask")
    if qualname == "torch.where":
        return call.args[0] if len(call.args) == 3 else None
    if qualname is not None and qualname.startswith(("torch.", "numpy.")):
        return None
    method = ctx.method_name(call)
    if method in MASK_METHODS:
        return argument(call, 0, "mask")
    if method == "where" and ctx.kind_of(call.func.value) is Kind.TENSOR:
        return argument(call, 0, "condition")
    if _is_crf(call.func):
        # pytorch-crf's `crf(emissions, tags, mask)` and `crf.decode(emissions, mask)`: the mask
        # is a `torch.where` condition inside (JointBERT's `mask=attention_mask.byte()`).
        return argument(call, 1 if method == "decode" else 2, "mask")
    return None


def _is_crf(func: ast.AST) -> bool:
    """`self.crf`, `crf_layer`, `self.crf.decode`: a conditional random field's call."""
    if isinstance(func, ast.Attribute) and func.attr == "decode":
        func = func.value
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return "crf" in name.lower()


def _assigned_name(statement: ast.AST | None, value: ast.AST) -> str | None:
    if (
        isinstance(statement, ast.Assign)
        and statement.value is value
        and len(statement.targets) == 1
    ):
        target = statement.targets[0]
    elif (  # `c, m = inputs[i], inputs[i + 1].byte()`: the name at its place
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and type(statement.value) is ast.Tuple
        and type(statement.targets[0]) is ast.Tuple
        and len(statement.targets[0].elts) == len(statement.value.elts)
        and any(item is value for item in statement.value.elts)
    ):
        place = [item is value for item in statement.value.elts].index(True)
        target = statement.targets[0].elts[place]
    elif isinstance(statement, ast.AnnAssign) and statement.value is value:
        target = statement.target
    else:
        return None
    return target.id if isinstance(target, ast.Name) else None


def _first_mask_use(name: str, ctx: Context) -> int | None:
    """The line where `name` is first used as a mask later in this block, before it is rebound
    (but by a move that keeps its dtype: `mask = mask.cuda()`); and when the block ends first,
    after the statements around it (`if`, `for`, `with` ...) in the same function."""
    found = ctx.statement_block()
    if found is None:
        return None
    block, index = found
    here = None
    outer = len(ctx.ancestors) - 2  # ancestors[outer] owns `block`
    by_copy = None  # the first use as a mask of a copy under another name (`maskk = mask`)
    while True:
        names = block_names(ctx, block)
        tree_parents = names.index.parents
        if here is None:
            here = names.index.scopes[names.index.number[block[index]]]
        for position, nodes, lines in _mentions(name, names, index, here, tree_parents, ctx):
            if lines:
                return min(lines) if by_copy is None else min(*lines, by_copy)
            if any(
                not isinstance(node.ctx, ast.Load) and not _moved(node, tree_parents, ctx)
                for node in nodes
            ):
                return by_copy
            alias = _copied_to(nodes, block[position], tree_parents, ctx)
            if alias is not None and by_copy is None:
                by_copy = _mask_use_after(alias, names, position, here, tree_parents, ctx)
        owner = ctx.ancestors[outer]
        if isinstance(owner, _SCOPES) or outer < 1 or _leaves(block[index + 1 :]):
            return by_copy
        place = ctx.block_position(owner, ctx.ancestors[outer - 1])
        if place is None:
            return by_copy
        (block, index), outer = place, outer - 1


def _copied_to(nodes: list, statement: ast.stmt, parents: dict, ctx: Context) -> str | None:
    """`maskk = mask.clone()` (or `.cuda()`, `Variable(mask)`...: the same dtype) as the whole
    statement: the other name the mask is then known by (neural-combinatorial-rl's copy)."""
    if not (
        type(statement) is ast.Assign
        and len(statement.targets) == 1
        and type(statement.targets[0]) is ast.Name
    ):
        return None
    for node in nodes:
        if isinstance(node.ctx, ast.Load) and _carried(node, parents, ctx)[0] is statement.value:
            alias = statement.targets[0].id
            return alias if alias != node.id else None
    return None


def _mask_use_after(
    name: str, names, position: int, here: ast.AST, parents: dict, ctx: Context
) -> int | None:
    """The first line after the statement at `position` of the block where `name` is used as a
    mask, before anything binds it again."""
    for _, nodes, lines in _mentions(name, names, position, here, parents, ctx):
        if lines:
            return min(lines)
        if any(not isinstance(node.ctx, ast.Load) for node in nodes):
            return None
    return None


def _mentions(name: str, names, index: int, here: ast.AST, parents: dict, ctx: Context):
    """(position, the `Name` nodes of `name` there, the lines where they use it as a mask) for
    each statement after `index` in the block that mentions it; the nodes of a nested scope
    binding the name itself are not its."""
    for position, nodes in names.mentions_after(name, index):
        nodes = [node for node in nodes if not _shadowed(node, here, names.index, ctx)]
        yield position, nodes, [n.lineno for n in nodes if _is_mask_use(n, name, parents, ctx)]


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)
_JUMPS = (ast.Return, ast.Raise, ast.Break, ast.Continue)


def _leaves(statements: list[ast.stmt]) -> bool:
    """The block jumps away after the mask is made: what follows it may not see the mask."""
    return any(isinstance(statement, _JUMPS) for statement in statements)


def _moved(node: ast.Name, parents: dict, ctx: Context) -> bool:
    """`node` is rebound to its own value moved or wrapped, keeping its dtype: `mask =
    mask.cuda()`, `mask = Variable(mask)`."""
    statement = parents.get(node)
    if not (isinstance(statement, ast.Assign) and statement.targets == [node]):
        return False
    value = _unwrapped(statement.value, ctx)
    if value is not statement.value and type(value) is ast.Name and value.id == node.id:
        return True
    return _merged_with_mask(value, node.id, ctx)


# Elementwise functions of two tensors whose result has their promoted dtype: a uint8 tensor
# with a bool one stays uint8.
_ELEMENTWISE_PAIRS = frozenset({"torch.max", "torch.min", "torch.maximum", "torch.minimum"})


def _merged_with_mask(value: ast.AST, name: str, ctx: Context) -> bool:
    """`suppress = torch.max(suppress, overlap[box] > max_overlap)` (the SSD tutorial's
    suppression), `mask = mask | (x > 0)`: the name merged with a bool tensor, still uint8."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.BitOr, ast.BitAnd)):
        pair = [value.left, value.right]
    elif (
        isinstance(value, ast.Call)
        and len(value.args) == 2
        and not value.keywords
        and ctx.qualname(value.func) in _ELEMENTWISE_PAIRS
    ):
        pair = list(value.args)
    else:
        return False
    mine = [arg for arg in pair if type(arg) is ast.Name and arg.id == name]
    others = [arg for arg in pair if not (type(arg) is ast.Name and arg.id == name)]
    return len(mine) == 1 and len(others) == 1 and _is_mask_like(others[0], ctx)


def _shadowed(node: ast.Name, here: ast.AST, found, ctx: Context) -> bool:
    """`node` is in a function (or lambda) nested in `here` that binds its name itself: it
    holds another value."""
    scope = found.scopes[found.number[node]]
    if scope is here or not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return False
    local = bindings(ctx, scope, node.id)
    return local is None or bool(local)


def _is_mask_use(node: ast.AST, name: str, parents: dict, ctx: Context) -> bool:
    if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
        return False
    value, _ = _carried(node, parents, ctx)
    return _in_mask_position(value, parents, ctx)


@per_file
def _only_mask_uses(ctx: Context, scope: ast.AST, name: str) -> bool:
    """True when every use of `name` in its scope is as a mask, or a 0/1 write into it, and it
    is bound only once: then turning it into a bool tensor changes nothing else."""
    found = index_of(ctx, scope)
    tree_parents = found.parents
    bindings = 0
    for node in found.names_in(scope, name):
        if not isinstance(node.ctx, ast.Load):
            bindings += 1
        elif not (
            _in_mask_position(node, tree_parents, ctx)
            or _zero_one_write(node, tree_parents[node], tree_parents)
        ):
            return False
    return bindings == 1


def _zero_one_write(node: ast.Name, parent: ast.AST, parents: dict) -> bool:
    """`mask[i] = 0` or `mask[i] = True`."""
    if not (
        isinstance(parent, ast.Subscript)
        and parent.value is node
        and isinstance(parent.ctx, ast.Store)
    ):
        return False
    statement = parents.get(parent)
    return isinstance(statement, ast.Assign) and _is_zero_one_literal(statement.value)
