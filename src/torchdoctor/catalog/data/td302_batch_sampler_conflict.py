"""TD302 batch-sampler-conflict: DataLoader options that its constructor rejects together."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import Context, Finding, Pitfall

PITFALL = Pitfall(
    code="TD302",
    name="batch-sampler-conflict",
    # Off by default: its one finding in 87 untuned corpora was wrong (docs/precision.md): the
    # sampler was None in the branch that set batch_sampler, which it does not follow.
    default=False,
    title={
        "en": "DataLoader options that are mutually exclusive",
        "zh": "DataLoader 中互斥的参数组合",
    },
    messages={
        "": {
            "en": "`batch_sampler=` already decides the batches: `DataLoader` rejects it together with `{option}`",
            "zh": "`batch_sampler=` 已经决定了如何分 batch：`DataLoader` 不允许它与 `{option}` 同时使用",
        },
        "sampler": {
            "en": "`sampler=` already decides the order: `DataLoader` rejects it together with `shuffle=True`",
            "zh": "`sampler=` 已经决定了取样顺序：`DataLoader` 不允许它与 `shuffle=True` 同时使用",
        },
    },
    docs={
        "en": """
## What it catches
A `DataLoader(...)` call given a `batch_sampler=` together with `batch_size=` (any value but
`1`), a true `shuffle=`, a `sampler=` or a true `drop_last=`, and a call given a `sampler=`
together with a true `shuffle=`.

`shuffle=False`, `shuffle=None`, `drop_last=False` and `batch_size=1` (the defaults) are
accepted by `DataLoader` and not reported; neither are values the doctor cannot read, such
as `shuffle=args.shuffle`.

## Why is this bad?
A batch sampler yields whole batches of indices: it already fixes the batch size, the order
and what happens to the last incomplete batch. A sampler yields the indices in its own order.
`DataLoader` refuses to guess which of the two instructions you meant and raises as soon as
it is built. The mistake is typical when a custom or distributed sampler is added to a
loader that used to shuffle: the script now stops before the first epoch.

## Symptoms
`ValueError: batch_sampler option is mutually exclusive with batch_size, shuffle, sampler,
and drop_last`, or `ValueError: sampler option is mutually exclusive with shuffle`.
""",
        "zh": """
## What it catches
调用 `DataLoader(...)` 时，`batch_sampler=` 与 `batch_size=`（除 `1` 以外的任何值）、为真的 `shuffle=`、
`sampler=` 或为真的 `drop_last=` 一起传入；以及 `sampler=` 与为真的 `shuffle=` 一起传入。

`shuffle=False`、`shuffle=None`、`drop_last=False` 和 `batch_size=1`（都是默认值）`DataLoader` 可以接受，
不会报告；无法静态读出的值（例如 `shuffle=args.shuffle`）也不会报告。

## Why is this bad?
batch sampler 每次产出一整个 batch 的下标：batch 大小、顺序以及最后不完整的 batch 如何处理都已经由它决定。
sampler 则按自己的顺序产出下标。`DataLoader` 不会去猜你到底想要哪一个，在构造时就直接报错。
这种错误常见于给原本 `shuffle=True` 的 loader 加上自定义或分布式 sampler 之后：脚本在第一个 epoch 开始前就停下了。

## Symptoms
`ValueError: batch_sampler option is mutually exclusive with batch_size, shuffle, sampler,
and drop_last`，或 `ValueError: sampler option is mutually exclusive with shuffle`。
""",
    },
    example="""
from torch.utils.data import BatchSampler, DataLoader, RandomSampler

dataset = list(range(100))
batches = BatchSampler(RandomSampler(dataset), batch_size=8, drop_last=False)
loader = DataLoader(dataset, batch_sampler=batches, shuffle=True)
""",
    use_instead="""
from torch.utils.data import BatchSampler, DataLoader, RandomSampler

dataset = list(range(100))
batches = BatchSampler(RandomSampler(dataset), batch_size=8, drop_last=False)
loader = DataLoader(dataset, batch_sampler=batches)
""",
)

_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...): positional slots.
_POSITIONS = (
    "dataset",
    "batch_size",
    "shuffle",
    "sampler",
    "batch_sampler",
    "num_workers",
    "collate_fn",
    "pin_memory",
    "drop_last",
)


@PITFALL.static(ast.Call, names={"DataLoader"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if ctx.qualname(call.func) not in _LOADERS:
        return
    options = _options(call)
    if options is None:
        return
    shuffle = options.get("shuffle")
    if _given(options.get("batch_sampler")):
        conflict = _batch_sampler_conflict(options)
        if conflict is not None:
            yield ctx.finding(PITFALL, conflict, option=_option_text(options, conflict, ctx))
        return
    if _given(options.get("sampler")) and _is_true(shuffle):
        yield ctx.finding(PITFALL, shuffle, "sampler")


def _options(call: ast.Call) -> dict[str, ast.AST] | None:
    """Argument values by parameter name; None when `*args`/`**kwargs` hide some of them."""
    if any(isinstance(arg, ast.Starred) for arg in call.args):
        return None
    if any(keyword.arg is None for keyword in call.keywords):
        return None
    options = dict(zip(_POSITIONS, call.args))
    options.update((keyword.arg, keyword.value) for keyword in call.keywords)
    return options


def _batch_sampler_conflict(options: dict[str, ast.AST]) -> ast.AST | None:
    """The first option DataLoader rejects next to a batch_sampler, as torch checks them."""
    batch_size = options.get("batch_size")
    if batch_size is not None and _is_constant(batch_size) and batch_size.value != 1:
        return batch_size
    for name in ("shuffle", "drop_last"):
        if _is_true(options.get(name)):
            return options[name]
    sampler = options.get("sampler")
    return sampler if _given(sampler) else None


def _given(value: ast.AST | None) -> bool:
    """An argument that is certainly not None."""
    if value is None:
        return False
    return not (isinstance(value, ast.Constant) and value.value is None)


def _is_constant(value: ast.AST | None) -> bool:
    return isinstance(value, ast.Constant)


def _is_true(value: ast.AST | None) -> bool:
    return _is_constant(value) and bool(value.value)


def _option_text(options: dict[str, ast.AST], value: ast.AST, ctx: Context) -> str:
    """`name=value` for the message, positional arguments included."""
    name = next(name for name, option in options.items() if option is value)
    return f"{name}={ctx.text(value)}"


# Explaining errors ----------------------------------------------------------------------------

PITFALL.error(
    r"(?P<option>batch_sampler|sampler) (?:option )?is mutually exclusive with "
    r"(?P<others>[\w, ]+)",
    types=("ValueError",),
    confidence=0.95,
    cause={
        "en": "`DataLoader` was given `{option}=` together with options it replaces "
        "({others}): a `{option}` already decides which samples go in which batch.",
        "zh": "`DataLoader` 同时收到了 `{option}=` 和会被它取代的参数（{others}）：`{option}` "
        "已经决定了哪些样本进入哪个 batch。",
    },
)
