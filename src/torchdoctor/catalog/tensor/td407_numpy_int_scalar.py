"""TD407 numpy-int-scalar: a numpy scalar type such as `np.int_` called to convert a whole array."""

from __future__ import annotations

import ast
from functools import partial
from typing import Iterator

from torchdoctor.catalog.sdk import Context, Finding, Kind, Pitfall, shorten

# Messages quote at most 40 characters of source.
_short = partial(shorten, limit=40)

PITFALL = Pitfall(
    code="TD407",
    name="numpy-int-scalar",
    title={
        "en": "numpy scalar type used to convert an array",
        "zh": "用 numpy 标量类型转换整个数组",
    },
    messages={
        "": {
            "en": "`{call}` converts an array with a scalar type: it returns a scalar for a 0-d "
            "array and an array otherwise; use `{array}.astype({dtype})`",
            "zh": "`{call}` 用标量类型转换数组：0 维数组得到标量，其他情况得到数组，结果类型不稳定；"
            "请使用 `{array}.astype({dtype})`",
        },
        "removed": {
            "en": "`{call}`: `{removed}` was removed in NumPy 2.0 (AttributeError) and converts an "
            "array with a scalar type; use `{array}.astype({dtype})`",
            "zh": "`{call}`：`{removed}` 已在 NumPy 2.0 中移除（会抛出 AttributeError），而且是用标量类型"
            "转换数组；请使用 `{array}.astype({dtype})`",
        },
    },
    default=False,
    needs_torch=False,
    fix_title={"en": "Use `.astype(...)`", "zh": "改用 `.astype(...)`"},
    fix_applicability="unsafe",
    docs={
        "en": """
## What it catches
A numpy scalar type (`np.int_`, `np.int64`, `np.float32`, `np.float_`, `np.bool_` ...) called
on a value known to be a numpy array, to convert the array's dtype: `np.int_(boxes)`. This rule
is off by default (select `TD407`): the call works for arrays of one or more dimensions.

## Why is this bad?
These types are meant to build one scalar. Given an array they convert it element by element,
but the kind of result depends on the input: a 0-d array (a reduction result, a value loaded
from a file) becomes a numpy scalar instead of an array, and older numpy versions returned a
scalar even for one-element arrays. Code that then indexes or reshapes the result breaks only
for some inputs. `array.astype(dtype)` always returns an array. Besides, the aliases
`np.float_` and `np.complex_` were removed in NumPy 2.0, so such calls fail outright there.

## Symptoms
`AttributeError: `np.float_` was removed in the NumPy 2.0 release. Use `np.float64` instead.`
Later errors on the scalar result, e.g. `IndexError: invalid index to scalar variable.` or
`TypeError: len() of unsized object`.

## Fix safety
The fix rewrites `np.int_(x)` as `x.astype(np.int_)` (and `np.float_` as `np.float64`). It is
unsafe because a 0-d array now stays a 0-d array instead of becoming a numpy scalar, which
changes code that checks the type of the result or hashes it.

## Known problems
Only arguments known to be numpy arrays (made by `np.array`, `np.zeros`, a `np.random` draw with
a size ...) are checked; a plain number passed to `np.int64(...)` is the intended use and is
never reported. A name bound to a `np.random` draw without a size is a float but is taken for an
array.
""",
        "zh": """
## What it catches
对确定是 numpy 数组的值调用 numpy 标量类型（`np.int_`、`np.int64`、`np.float32`、`np.float_`、
`np.bool_` 等）来转换数组的 dtype，例如 `np.int_(boxes)`。本规则默认关闭（需选择 `TD407`）：
对一维及以上的数组，这种调用是可以运行的。

## Why is this bad?
这些类型本来是用来构造单个标量的。传入数组时它们会逐元素转换，但结果的类型取决于输入：0 维数组
（归约的结果、从文件读入的单个值）会变成 numpy 标量而不是数组；旧版本 numpy 对只有一个元素的数组
也会返回标量。之后对结果做索引或 reshape 的代码只会在某些输入下出错。`array.astype(dtype)` 总是返回数组。
此外，`np.float_` 和 `np.complex_` 这些别名已在 NumPy 2.0 中移除，这样的调用在新版本上会直接失败。

## Symptoms
`AttributeError: `np.float_` was removed in the NumPy 2.0 release. Use `np.float64` instead.`
以及之后在标量结果上出现的错误，例如 `IndexError: invalid index to scalar variable.` 或
`TypeError: len() of unsized object`。

## Fix safety
修复把 `np.int_(x)` 改写为 `x.astype(np.int_)`（并把 `np.float_` 换成 `np.float64`）。这是不安全的：
0 维数组不再变成 numpy 标量，而是保持为 0 维数组，依赖结果类型或对结果求哈希的代码行为会改变。

## Known problems
只检查确定是 numpy 数组（由 `np.array`、`np.zeros`、指定了大小的 `np.random` 采样等创建）的参数；
把普通数字传给 `np.int64(...)` 正是这些类型的本来用法，永远不会报告。绑定到未指定大小的
`np.random` 采样结果的变量其实是浮点数，但会被当作数组。
""",
    },
    example="""
import numpy as np

boxes = np.array([0.0])
indices = np.int_(boxes)
""",
    use_instead="""
import numpy as np

boxes = np.array([0.0])
indices = boxes.astype(np.int_)
""",
)

# Scalar types that still exist in NumPy 2.
SCALAR_TYPES = frozenset(
    """
int_ intc intp int8 int16 int32 int64 uint uint8 uint16 uint32 uint64 float16 float32 float64
half single double longdouble bool_ complex64 complex128
""".split()
)
# Aliases removed in NumPy 2.0, to the type that replaces them.
REMOVED_ALIASES = {
    "float_": "float64",
    "complex_": "complex128",
    "cfloat": "complex128",
    "longfloat": "longdouble",
    "singlecomplex": "complex64",
    "longcomplex": "clongdouble",
    "clongfloat": "clongdouble",
}
# numpy.random functions that always return an array, and those whose arguments are the shape.
ARRAY_DRAWS = frozenset({"dirichlet", "permutation", "multinomial", "multivariate_normal"})
SHAPE_DRAWS = frozenset({"rand", "randn"})
# Operand nodes that take a method call without parentheses.
TIGHT = (ast.Name, ast.Attribute, ast.Subscript, ast.Call)


@PITFALL.static(ast.Call, names=SCALAR_TYPES | set(REMOVED_ALIASES))
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if len(call.args) != 1 or call.keywords or not isinstance(call.func, ast.Attribute):
        return
    head, _, type_name = (ctx.qualname(call.func) or "").rpartition(".")
    if head != "numpy":
        return
    array = call.args[0]
    if not _is_whole_array(array, ctx):
        return
    dtype = f"{ctx.text(call.func.value)}.{REMOVED_ALIASES.get(type_name, type_name)}"
    array_text = ctx.text(array) if isinstance(array, TIGHT) else f"({ctx.text(array)})"
    fix = ctx.fix(PITFALL, "unsafe", ctx.replace(call, f"{array_text}.astype({dtype})"))
    variant = "removed" if type_name in REMOVED_ALIASES else ""
    yield ctx.finding(
        PITFALL,
        call,
        variant,
        fix=fix,
        call=_short(ctx.text(call)),
        array=_short(array_text),
        dtype=dtype,
        removed=f"np.{type_name}",
    )


def _is_whole_array(expr: ast.AST, ctx: Context) -> bool:
    """A numpy array, not one element of it: `scores[0]` of a 1-D array and
    `np.random.beta(a, b)` without a size are scalars."""
    if isinstance(expr, ast.Subscript):
        index = expr.slice
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        return any(isinstance(part, ast.Slice) for part in parts) and _is_whole_array(
            expr.value, ctx
        )
    if isinstance(expr, ast.BinOp):
        return _is_whole_array(expr.left, ctx) or _is_whole_array(expr.right, ctx)
    if isinstance(expr, ast.Call) and (ctx.qualname(expr.func) or "").startswith("numpy.random."):
        return _draws_array(expr, ctx)
    return isinstance(expr, (ast.Name, ast.Call)) and ctx.kind_of(expr) is Kind.NDARRAY


def _draws_array(call: ast.Call, ctx: Context) -> bool:
    """`np.random.rand(3)`, `np.random.normal(size=3)`: an array; `np.random.rand()`: a float."""
    if any(keyword.arg == "size" for keyword in call.keywords):
        return True
    name = ctx.qualname(call.func).rpartition(".")[2]
    return name in ARRAY_DRAWS or name in SHAPE_DRAWS and bool(call.args)
