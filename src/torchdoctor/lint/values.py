"""What the code's own use says about a value, when its origin does not: evidence rules ask
for rather than re-derive.

A loss returned by the project's own function, by a criterion passed in as a parameter or kept
on `self`, has no origin the checker can follow; but the code says what it is: it calls
`loss.backward()` with no gradient (autograd accepts that only for a single-element tensor), or
it gets the value from a callee whose own name says it computes a loss (`criterion(...)`,
`self.compute_loss(...)`). Each function here reads the file's index, so asking is linear.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from typing import Callable

from torchdoctor._regex import lazy_compile
from torchdoctor.lint.bindings import Binding, bindings, scope_of
from torchdoctor.lint.context import (
    MODULE_SELF_METHODS,
    Context,
    Kind,
    assigned_name,
    is_self_attribute,
    methods_defined_once,
    per_file,
    top_level_functions,
    unwrap_self_methods,
)
from torchdoctor.lint.occurrences import (
    call_name,
    children,
    index_of,
    keyword_value,
    statements,
)

# Words of a callee's name that say it computes a loss: `criterion`, `loss_fn`, `compute_loss`,
# `self.set_forward_loss`, `mixup_criterion`, `nll_loss`, `CrossEntropyLoss2d`.
_LOSS_WORDS = frozenset({"loss", "criterion", "crit", "nll"})
_CROSS_ENTROPY = frozenset({"cross", "entropy"})
# Words that make it something else: a list or a dict of losses, a loss *module* factory's
# options, or one loss per sample.
_NOT_ONE_LOSS = frozenset({"losses", "dict", "list", "weights", "weight", "per", "items"})
_WORD = lazy_compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+[a-z]*")
# Keyword arguments that make a loss call return one value per element.
_ELEMENTWISE = {"reduction": ("none",), "reduce": (False,)}


def name_words(name: str) -> list[str]:
    """`compute_loss` -> ['compute', 'loss']; `CrossEntropyLoss2d` -> ['cross', 'entropy',
    'loss', '2d']."""
    return [word.lower() for word in _WORD.findall(name)]


# Words of a name that say it holds a model or a layer with weights (`model`, `self.net`,
# `text_encoder`), not a parameter-free transform (`conversion`, `activation`).
_MODEL_WORDS = frozenset(
    "model models net network module layer encoder decoder generator discriminator "
    "classifier backbone head".split()
)


# Last words of a name that say it holds something about a model, not the model
# (`model_args`, `model_name`, `net_cfg`, `head_dim`, `model_state`), or a value it computed
# (`model_loss`, `encoder_outputs`, `net_out`).
_ABOUT_A_MODEL = frozenset(
    "args kwargs argv cfg cfgs config configs conf opt opts option options params hparams "
    "name names path paths dir dirs file files filename fname type types id ids url version "
    "arch spec specs info str dim dims size sizes num count idx dict state weights ckpt "
    "checkpoint fn cls builder factory key keys prefix tag "
    "loss losses out outs output outputs pred preds score scores acc accuracy metric metrics "
    "logits result results".split()
)


def names_a_model(name: str) -> bool:
    """`model`, `netG`, `text_encoder`: the name says it holds a model or a layer (not
    `model_args`, `model_path`: its last word says it holds something about one)."""
    words = name_words(name)
    return not _MODEL_WORDS.isdisjoint(words) and words[-1] not in _ABOUT_A_MODEL


def computes_a_loss(call: ast.AST) -> bool:
    """A call whose callee's own name says it returns one loss value (`criterion(out, y)`,
    `self.loss_fn(...)`, `compute_loss(...)`), not asked for one value per element."""
    if not isinstance(call, ast.Call):
        return False
    name = call_name(call)
    if name == "forward" and type(call.func) is ast.Attribute:
        # `self.loss_function.forward(x, x_hat, ...)`: the loss module's call, spelt out
        receiver = call.func.value
        kind = type(receiver)
        name = receiver.attr if kind is ast.Attribute else receiver.id if kind is ast.Name else None  # type: ignore[attr-defined]
    if name is None:
        return False
    if name[:1].isupper() and not (is_self_attribute(call.func) and "_" in name):
        return False  # `nn.MSELoss(...)` builds a loss module; `self.L1_loss(...)` computes one
    return _one_loss_asked(call, name)


def builds_a_loss_module(call: ast.AST) -> bool:
    """A call of a class whose own name says it is a loss (`FocalLoss(gamma=0)`,
    `CrossEntropyLoss2d()`), not asked for one value per element: calling what it builds gives
    one loss value."""
    if not isinstance(call, ast.Call):
        return False
    name = call_name(call)
    return name is not None and name[:1].isupper() and _one_loss_asked(call, name)


def _one_loss_asked(call: ast.Call, name: str) -> bool:
    words = name_words(name)
    if not (_LOSS_WORDS.intersection(words) or _CROSS_ENTROPY.issubset(words)):
        return False  # `masked_cross_entropy(...)` is one, as `F.cross_entropy` is
    if _NOT_ONE_LOSS.intersection(words):
        return False
    for keyword in call.keywords:
        if keyword.arg is None:
            return False  # **options could ask for reduction="none"
        if keyword.arg in _ELEMENTWISE:
            value = keyword.value
            if not isinstance(value, ast.Constant) or value.value in _ELEMENTWISE[keyword.arg]:
                return False
    return True


def backward_without_gradient(ctx: Context, scope: ast.AST, name: str) -> bool:
    """`name.backward()` with no gradient argument somewhere in `scope`: autograd allows that
    only for a tensor of one element, so the name holds a scalar there."""
    return name in _backward_without_gradient(ctx, scope)


@per_file
def _backward_without_gradient(ctx: Context, scope: ast.AST) -> frozenset[str]:
    """The names of `scope` called `name.backward()` with no gradient argument, and the
    attributes of `self` so called as "self.name": its calls read once, not once per name asked
    about (a long script asks about every loss it computes)."""
    found = index_of(ctx, scope)
    return frozenset(
        dotted
        for call in found.calls_named(scope, ("backward",))
        if isinstance(call.func, ast.Attribute)
        and not call.args
        and not any(k.arg in (None, "gradient") for k in call.keywords)
        for dotted in (_name_or_self_attribute(_scaled(call.func.value)),)
        if dotted is not None
    )


def _scaled(expr: ast.AST) -> ast.AST:
    """`loss` of `loss.div(n)`, `loss / n`, `loss * w`, `-loss`: an elementwise result has one
    element only when each operand has one (undreamt's `loss.div(self.batch_size).backward()`)."""
    while True:
        kind = type(expr)
        if kind is ast.Call and type(expr.func) is ast.Attribute and expr.func.attr in _SCALINGS:  # type: ignore[attr-defined]
            expr = expr.func.value  # type: ignore[attr-defined]
        elif kind is ast.BinOp and type(expr.op) in (ast.Div, ast.Mult):  # type: ignore[attr-defined]
            left, right = expr.left, expr.right  # type: ignore[attr-defined]
            expr = right if type(left) is ast.Constant else left
        elif kind is ast.UnaryOp and type(expr.op) is ast.USub:  # type: ignore[attr-defined]
            expr = expr.operand  # type: ignore[attr-defined]
        else:
            return expr


_SCALINGS = frozenset({"div", "mul", "float", "double", "half"})


def _name_or_self_attribute(expr: ast.AST) -> str | None:
    """ "x" of `x`, "self.x" of `self.x`; None for anything else."""
    if isinstance(expr, ast.Name):
        return expr.id
    if is_self_attribute(expr):
        return f"self.{expr.attr}"  # type: ignore[attr-defined]
    return None


def only_identified(node: ast.AST, ctx: Context) -> bool:
    """`node` is only compared or looked up, never called through: a key of a dict literal
    (`{F.sigmoid: fast_sigmoid}`, a patch table), an operand of `is`/`==`/`in`, or an element of
    a tuple, list or set that is such an operand (`fn in (F.sigmoid, F.tanh)`). Read while the
    walk is at its statement: the node and the collection around it are expressions under it,
    so that statement's parents tell, until the file's index exists (it has them all)."""
    whole = ctx.file_index
    parents = whole.parents if whole is not None else ctx.statement_parents()
    parent = parents.get(node)
    if isinstance(parent, (ast.Tuple, ast.List, ast.Set)):
        node, parent = parent, parents.get(parent)
    if isinstance(parent, ast.Dict):
        return any(key is node for key in parent.keys)
    return isinstance(parent, ast.Compare)


# Calls of a block that expects an error: `with pytest.raises(...)`, `self.assertRaises(...)`.
_EXPECTS_ERROR = frozenset(
    {"raises", "warns", "assertRaises", "assertRaisesRegex", "assertWarns", "assertWarnsRegex"}
)
# Errors a compatibility fallback catches (`except ImportError:` then the old API).
_COMPAT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError"})
_IMPORT_GUARDS = _COMPAT_ERRORS | {"Exception", "BaseException"}
# A test of the torch version: `TORCH_GTE_1_7`, `torch.__version__ < ...`, `TORCH_1_13`,
# `_TORCH_GREATER_EQUAL_2_4`, `is_torch_greater_or_equal("2.4")`, `hasattr(torch, "fft")`,
# `hasattr(nn.utils.parametrizations, "weight_norm")`, `TORCH_MAJOR == 0 and TORCH_MINOR <= 4`.
_VERSION_TEST = lazy_compile(
    r"version|_(?:GTE|GE|LT|LE)_?\d|torch_\d+_\d+|(?:greater|less)_(?:or_)?(?:equal|than)"
    r"|hasattr\(\s*(?:torch|nn|F)\b|\b(?:torch|pt)_?(?:major|minor|ver)\b"
    # Python 2 against 3 (`if PY3: next(it) else: it.next()`, `six.PY2`)
    r"|\bPY_?[23]K?\b"
    # whether a module is there (mmf: `if "torch.fft" not in sys.modules: torch.rfft(...)`)
    r"|\bsys\.modules\b|\bfind_spec\(",
    re.IGNORECASE,
)


def expects_an_error(ctx: Context) -> bool:
    """The node being checked runs in a block that expects it to raise or warn (a test)."""
    for node in ctx.ancestors:
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and call_name(call) in _EXPECTS_ERROR:
                    return True
    return False


def in_compat_fallback(ctx: Context, expr: ast.AST | None = None) -> bool:
    """The node being checked is in code kept for other versions of torch: an `except
    ImportError/AttributeError` handler or the `try` body it guards, or a branch of an `if` that
    tests a version (`if TORCH_GTE_1_7:`, `if torch.__version__ < ...`, `if hasattr(torch,
    "fft")`). Given
    the expression `expr` itself, also a branch of a conditional expression that tests one
    (`new() if TORCH_2_4 else old()`), or the value of a default that the next statement
    replaces for newer versions (`wn = old` then `if hasattr(...): wn = new`)."""
    outer = None
    ancestors = ctx.ancestors
    for at, node in enumerate(ancestors):
        # (a statement being checked is not among its own ancestors: `expr` follows the last)
        following = ancestors[at + 1] if at + 1 < len(ancestors) else expr
        if (
            isinstance(node, ast.Try)
            and following in node.body
            and any(_catches_a_compat_error(handler, following) for handler in node.handlers)
        ):
            return True  # fastMRI: `try: ifft = torch.ifft` `except AttributeError: def ifft(...)`
        if isinstance(node, ast.ExceptHandler):
            if _catches_a_compat_error(node):
                return True
            if isinstance(outer, ast.Try) and _tests_a_version(outer.body, ctx):
                return True  # megatron: `try: if torch >= 2.4: new else: old` `except: old`
        elif isinstance(node, ast.If) and _tests_version(node.test, ctx):
            return True
        outer = node
    return expr is not None and (_in_version_gated_expression(expr, ctx) or _overridden(expr, ctx))


def _catches_a_compat_error(handler: ast.ExceptHandler, guarded: ast.AST | None = None) -> bool:
    """`handler` catches what a missing API raises; for an import straight in the `try` body,
    a broad `except Exception:` or bare `except:` counts too (asteroid-filterbanks' `from torch
    import rfft, irfft`, then `torch.fft` in the handler)."""
    caught = handler.type
    is_import = isinstance(guarded, (ast.Import, ast.ImportFrom))
    if caught is None:
        return is_import
    names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    errors = _IMPORT_GUARDS if is_import else _COMPAT_ERRORS
    return any((dotted_name(n) or "").rpartition(".")[2] in errors for n in names)


def _tests_version(test: ast.expr, ctx: Context) -> bool:
    if _VERSION_TEST.search(ctx.text(test)) is not None:
        return True
    # `if _native_complex:`, after `_native_complex = torch_version >= "1.7.0"` at the top of
    # the module (ci_sdr; also as the default of a parameter named alike)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    return isinstance(test, ast.Name) and test.id in _version_flags(ctx)


@per_file
def _version_flags(ctx: Context) -> frozenset[str]:
    """The names the module binds, at its top level, to a test of the torch version."""
    body = ctx.tree.body if isinstance(ctx.tree, ast.Module) else []
    return frozenset(
        target.id
        for statement in body
        if type(statement) is ast.Assign and type(statement.value) in (ast.Compare, ast.BoolOp)
        for target in statement.targets
        if type(target) is ast.Name and _VERSION_TEST.search(ctx.text(statement.value)) is not None
    )


def _tests_a_version(block: list[ast.stmt], ctx: Context) -> bool:
    return any(isinstance(s, ast.If) and _tests_version(s.test, ctx) for s in block)


def _in_version_gated_expression(expr: ast.AST, ctx: Context) -> bool:
    parents = ctx.statement_parents()
    node, parent = expr, parents.get(expr)
    while parent is not None:
        if (
            isinstance(parent, ast.IfExp)
            and node is not parent.test
            and _tests_version(parent.test, ctx)
        ):
            return True
        node, parent = parent, parents.get(parent)
    return False


def _overridden(expr: ast.AST, ctx: Context) -> bool:
    """`expr` is the value of `name = expr`, and the next statement is an `if` testing a
    version whose body assigns `name` again."""
    name = assigned_name(ctx.ancestors[-1] if ctx.ancestors else None, expr)
    if name is None:
        return False
    position = ctx.statement_block()
    if position is None:
        return False
    block, at = position
    following = block[at + 1] if at + 1 < len(block) else None
    if not (isinstance(following, ast.If) and _tests_version(following.test, ctx)):
        return False
    return any(
        isinstance(s, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in s.targets)
        for s in following.body
    )


def from_project_class(expr: ast.AST, ctx: Context) -> bool:
    """`expr` is a module built from a class of another module of the project (known to be an
    nn.Module only through the project index): what layers it holds, whether it has parameters
    or float32 weights, cannot be seen from here. A name counts when one of its assignments
    builds it (`net = Net(...)`, `net = Net(...).to(device)`)."""
    if isinstance(expr, ast.Call):
        call = expr
        while isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call):
            call = call.func.value  # `Net(...).to(device)`
        name = call_name(call)
        if name is None or not ctx.project.is_module_class(name):
            return False
        return ctx.local_class(name) is None and ctx.kind_of(call) is not Kind.UNKNOWN
    if isinstance(expr, ast.Name):
        found = bindings(ctx, scope_of(expr.id, ctx), expr.id) or ()
        return any(b.value is not None and from_project_class(b.value, ctx) for b in found)
    return False


def built_from(expr: ast.AST, ctx: Context) -> set[str]:
    """The names of the classes whose calls build the value of `expr`: `Net` for `Net(...)`,
    `Net(...).to(device)`, or a name one of whose assignments builds it so."""
    if isinstance(expr, ast.Call):
        call = expr
        while isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call):
            call = call.func.value  # `Net(...).to(device)`
        name = call_name(call)
        return {name} if name is not None and name[:1].isupper() else set()
    if isinstance(expr, ast.Name):
        found = bindings(ctx, scope_of(expr.id, ctx), expr.id) or ()
        return {
            name
            for b in found
            if isinstance(b.value, ast.Call)
            for name in built_from(b.value, ctx)
        }
    return set()


@per_file
def assignments(ctx: Context) -> list[tuple[ast.expr, list[str]]]:
    """(value, the plain names it is bound to) of every `a = value`, `a = b = value` and
    `a: T = value` anywhere in the file, from the statements alone (no index is read); read
    once per file, however many rules ask."""
    found = []
    for statement in statements(ctx, ast.Assign, ast.AnnAssign):
        value = statement.value
        if value is None:  # `a: T`
            continue
        targets = statement.targets if type(statement) is ast.Assign else [statement.target]
        found.append((value, [target.id for target in targets if type(target) is ast.Name]))
    return found


@per_file
def names_assigned(ctx: Context, wanted: Callable[[ast.expr], bool]) -> frozenset[str]:
    """The names some statement of the file assigns a value `wanted` accepts: a rule asking
    whether a name was ever (or only ever) assigned such a value reads a scope's bindings for
    these names only. `wanted`: a module-level function (the memo's key)."""
    return frozenset(name for value, names in assignments(ctx) if wanted(value) for name in names)


@per_file
def imported_roots(ctx: Context) -> frozenset[str]:
    """The first part of every module the file imports or imports from, anywhere in it:
    `ignite` of `from ignite.engine import Engine`, `warpctc_pytorch` of `import
    warpctc_pytorch as wc`, `x` of a relative `from .x import y` (a vendored copy is read as
    the package)."""
    roots: set[str] = set()
    for node in index_of(ctx, ctx.tree).everywhere(ast.Import, ast.ImportFrom):
        if isinstance(node, ast.ImportFrom):
            roots.add((node.module or "").partition(".")[0])
        else:
            roots.update(alias.name.partition(".")[0] for alias in node.names)
    return frozenset(roots)


@per_file
def names_assigned_calls_of(ctx: Context, functions: frozenset[str]) -> frozenset[str]:
    """The names some `name = f(arg, ...)` assigns anywhere in the file, where `f` may be one of
    `functions` (short names: `zeros` for `torch.zeros`): called by that name as a function or a
    method, or by a name an import binds to one (`ctx.qualname` resolves through imports only).
    Method calls around the call are looked through (`torch.arange(n).float()`): more names than
    a rule needs, never fewer. From the statements alone: a rule asking whether a name was only ever assigned one of
    those calls reads a scope's bindings for these names only."""
    called = set(functions)
    for statement in statements(ctx, ast.Import, ast.ImportFrom):
        for alias in statement.names:
            if alias.name.rpartition(".")[2] in functions:
                called.add(alias.asname or alias.name.partition(".")[0])
    found: set[str] = set()
    for value, names in assignments(ctx):
        while (
            type(value) is ast.Call
            and type(value.func) is ast.Attribute
            and value.func.attr not in called
        ):
            value = value.func.value  # `torch.arange(n).float()`: the call inside
        if type(value) is ast.Call and call_name(value) in called:
            found.update(names)
    return frozenset(found)


def _picks_a_tensor_type(value: ast.expr) -> bool:
    """`torch.cuda.ByteTensor if use_cuda else torch.ByteTensor`: one tensor type, spelled for
    each device (read from the statement alone, before any name is resolved)."""
    return (
        type(value) is ast.IfExp
        and type(value.body) is ast.Attribute
        and type(value.orelse) is ast.Attribute
        and value.body.attr == value.orelse.attr
        and value.body.attr.endswith("Tensor")
    )


def tensor_type(expr: ast.AST, ctx: Context) -> str | None:
    """The qualified name of what `expr` names, as `ctx.qualname` gives it; and for a name
    every binding of which picks the CPU or the CUDA spelling of one tensor type
    (`ByteTensor = torch.cuda.ByteTensor if use_cuda else torch.ByteTensor`, how code written
    before `device` existed chose its types once), the CPU spelling: `torch.ByteTensor`."""
    qualname = ctx.qualname(expr)
    if qualname is not None:
        return qualname
    if type(expr) is ast.Attribute and type(expr.value) is ast.Name:
        # `th.ByteTensor` after `th = torch.cuda` on the GPU, `th = torch` else (visdial-rl)
        owner = expr.value.id
        if owner not in names_assigned(ctx, _names_torch_or_torch_cuda):
            return None
        if _bound_to_torch_modules(ctx, scope_of(owner, ctx), owner):
            return f"torch.{expr.attr}"
        return None
    if type(expr) is not ast.Name or expr.id not in names_assigned(ctx, _picks_a_tensor_type):
        return None  # most names: no bindings read
    return _tensor_type_of_name(ctx, scope_of(expr.id, ctx), expr.id)


def _names_torch_or_torch_cuda(value: ast.expr) -> bool:
    """`torch` or `torch.cuda`, as written (read before any name is resolved)."""
    if type(value) is ast.Attribute and value.attr == "cuda":
        value = value.value
    return type(value) is ast.Name and value.id == "torch"


@per_file
def _bound_to_torch_modules(ctx: Context, scope: ast.AST, name: str) -> bool:
    """Every binding of `name` in `scope` is the `torch` module or `torch.cuda`."""
    found = bindings(ctx, scope, name)
    return bool(found) and all(
        not binding.augmented
        and binding.value is not None
        and ctx.qualname(binding.value) in ("torch", "torch.cuda")
        for binding in found
    )


@per_file
def _tensor_type_of_name(ctx: Context, scope: ast.AST, name: str) -> str | None:
    found = bindings(ctx, scope, name)
    spellings = set()
    for binding in found or ():
        value = binding.value
        if binding.augmented or value is None or not _picks_a_tensor_type(value):
            return None
        for branch in (value.body, value.orelse):
            qualname = ctx.qualname(branch)
            if qualname is None or not qualname.startswith("torch."):
                return None
            spellings.add(qualname.replace("torch.cuda.", "torch.", 1))
    return spellings.pop() if len(spellings) == 1 else None


# ---- values across functions: `self.x` in every method, parameters at every call --------------


def root_name(expr: ast.AST) -> str | None:
    """`torch` for `torch.nn.functional`, `loss` for `loss.data`; None when the chain of
    attributes does not start at a name."""
    while type(expr) is ast.Attribute:
        expr = expr.value  # type: ignore[attr-defined]
    return expr.id if type(expr) is ast.Name else None  # type: ignore[attr-defined]


def dotted_name(expr: ast.AST) -> str | None:
    """`self.net.forward` -> "self.net.forward": a chain of attributes on a name, written out;
    None for anything else."""
    parts = []
    while type(expr) is ast.Attribute:
        parts.append(expr.attr)  # type: ignore[attr-defined]
        expr = expr.value  # type: ignore[attr-defined]
    if type(expr) is not ast.Name:
        return None
    parts.append(expr.id)  # type: ignore[attr-defined]
    return ".".join(reversed(parts))


def constant_range(loop: ast.AST) -> int | None:
    """`n` of a loop `for ... in range(n)` with `n` an int literal; None for any other loop."""
    iterated = getattr(loop, "iter", None)
    if not (
        isinstance(iterated, ast.Call)
        and isinstance(iterated.func, ast.Name)
        and iterated.func.id == "range"
        and len(iterated.args) == 1
        and not iterated.keywords  # (range takes none: such a call fails)
    ):
        return None
    count = iterated.args[0]
    return count.value if isinstance(count, ast.Constant) and type(count.value) is int else None


# Methods that read a tensor's value out (`x.numpy()`, `x.item()`, `x.data.cpu()`), or that
# only a tensor has (`labels.view_as(pred)`; of `x.data`, its in-place writes: `x.data.copy_(y)`):
# a module has none of them, and a batch object or other container seldom.
_VALUE_READERS = frozenset({"numpy", "item", "numel", "dim"})
# Out-of-place methods only a tensor has: evidence when their result is used (one thrown away is
# what TD001 asks about, no evidence of itself).
_SHAPE_READERS = frozenset({"view_as", "expand_as", "reshape_as", "type_as", "unsqueeze"})
_DATA_READERS = frozenset({"numpy", "cpu", "item", "tolist", "copy_", "resize_", "fill_", "zero_"})
# torch functions that take a tensor first and refuse anything else (`torch.unsqueeze(x, 0)`).
_TENSOR_FIRST = frozenset(
    f"torch.{name}"
    for name in (
        "unsqueeze squeeze flatten reshape transpose permute numel argmax argmin softmax "
        "log_softmax sigmoid clamp narrow"
    ).split()
)


@per_file
def read_as_tensor(ctx: Context, scope: ast.AST, name: str) -> bool:
    """`name` is bound once in `scope`, which reads a tensor's value out of it: `name.numpy()`,
    `name.item()`, `name.numel()`, `name.dim()`, `name.data.numpy()`, `name.data.cpu()`...
    (seq2seq-keyphrase's `src = batch.src` shown with `src.data.numpy()`, then `src.cuda()`);
    `name.view_as(y)`; or hands it to a torch function or loss that takes only tensors
    (`torch.unsqueeze(data, 0)`, `criterion(outputs, labels)`); or sets a tensor's `.data` to
    it (`layer.weight.data = name`)."""
    if name in ("self", "cls"):
        return False  # an object of the class being defined, which may have such methods
    found = _bound_to_values(ctx, scope, name)
    if not found or _builds_an_object(found[0].value, ctx):
        return False
    within = index_of(ctx, scope)
    if len(found) > 1 and not all(_loop_variable(b, within) for b in found):
        return False  # bound otherwise too: what is read may be another value
    for node in within.names_in(scope, name):
        method = within.parents.get(node)
        if within.scopes[within.number[node]] is not scope:
            continue
        if isinstance(method, ast.Call) and _takes_tensors(ctx, method, node):
            return True  # `torch.unsqueeze(data, 0)`, `criterion(outputs, labels)`
        if type(method) is ast.Assign and _set_as_data(method, node):
            return True  # `model.embed.weight.data = embd`: only a tensor is taken there
        if not isinstance(method, ast.Attribute):
            continue
        readers = _VALUE_READERS | _SHAPE_READERS
        if method.attr == "data":
            method, readers = within.parents.get(method), _DATA_READERS
        if not isinstance(method, ast.Attribute) or method.attr not in readers:
            continue
        call = within.parents.get(method)
        if not isinstance(call, ast.Call) or call.func is not method:
            continue
        if method.attr not in _SHAPE_READERS or type(within.parents.get(call)) is not ast.Expr:
            return True
    return False


def _set_as_data(statement: ast.Assign, node: ast.expr) -> bool:
    """`statement` is `x.data = node` (ResEncoder's `model.Embd.weight.data = embd`): setting
    a tensor's `.data` takes a tensor, and raises on anything else."""
    return (
        statement.value is node
        and len(statement.targets) == 1
        and type(statement.targets[0]) is ast.Attribute
        and statement.targets[0].attr == "data"
    )


def _loop_variable(binding: Binding, within) -> bool:
    """The binding is a name of the target of a `for` loop (`for i, x in enumerate(train_loader):`,
    then the same over `val_loader`: each loop's items are of one kind)."""
    node, parent = binding.node, within.parents.get(binding.node)
    while isinstance(parent, (ast.Tuple, ast.List)):
        node, parent = parent, within.parents.get(parent)
    return isinstance(parent, ast.For) and parent.target is node


def _takes_tensors(ctx: Context, call: ast.Call, node: ast.expr) -> bool:
    """`call` takes only a tensor where it is handed `node`: first to a torch function that
    refuses anything else (`torch.unsqueeze(x, 0)`, `F.cross_entropy(x, y)`), or as any
    positional argument of a loss of torch.nn (`criterion(outputs, labels)`)."""
    if node not in call.args:
        return False
    qualname = ctx.qualname(call.func)
    if call.args[0] is node and qualname is not None:
        return qualname in _TENSOR_FIRST or qualname.startswith("torch.nn.functional.")
    func = call.func
    if type(func) is not ast.Name:
        return False
    made = _bound_to_values(ctx, scope_of(func.id, ctx), func.id)
    return bool(made) and all(_builds_a_torch_loss(ctx, b.value) for b in made)


def _builds_a_torch_loss(ctx: Context, value: ast.expr | None) -> bool:
    """`nn.MSELoss()`, also moved on the way (`nn.MSELoss().to(device)`)."""
    made = unwrap_self_methods(value) if value is not None else None
    return isinstance(made, ast.Call) and _torch_loss(ctx.qualname(made.func))


def _bound_to_values(ctx: Context, scope: ast.AST, name: str) -> tuple[Binding, ...] | None:
    """`bindings`, less the `del` statements (`del inputs, labels, loss` at the end of a step
    unbinds the names; it gives them no other value)."""
    found = bindings(ctx, scope, name)
    if found is None:
        return None
    return tuple(b for b in found if not isinstance(getattr(b.node, "ctx", None), ast.Del))


def _torch_loss(qualname: str | None) -> bool:
    """`torch.nn.CrossEntropyLoss` and the other losses of torch.nn."""
    return qualname is not None and qualname.startswith("torch.nn.") and qualname.endswith("Loss")


@per_file
def returned_values(ctx: Context, function: ast.AST) -> tuple[ast.expr, ...] | None:
    """What `function` returns, each `return` of its own (not of a function nested in it) once,
    a name it returns replaced by the values every binding of it in the function gives (`model
    = Net().to(device); return model`). None when one cannot be followed: a bare `return`, a
    name bound otherwise (a parameter, a loop, an unpacking), a generator."""
    within = index_of(ctx, function)
    returns = within.local(function, ast.Return)
    if not returns or within.local(function, ast.Yield, ast.YieldFrom):
        return None
    values: list[ast.expr] = []
    for statement in returns:
        value = statement.value  # type: ignore[attr-defined]
        if value is None:
            return None
        if type(value) is not ast.Name:
            values.append(value)
            continue
        found = bindings(ctx, function, value.id)
        if not found or any(b.value is None or b.augmented for b in found):
            return None
        # `model = model.cuda() if opt.cuda else model` keeps what the name held.
        values.extend(
            b.value
            for b in found
            if not keeps_itself(b.value, value.id)  # type: ignore[misc]
        )
    return tuple(values)


def argument_for(call: ast.Call, function: ast.AST, parameter: str) -> ast.expr | None:
    """What `call` of `function` passes for its named `parameter`, by position or keyword;
    None when it passes none, or spreads `*args` or `**kwargs` before the position."""
    args = function.args  # type: ignore[attr-defined]
    positional = [arg.arg for arg in (*args.posonlyargs, *args.args)]
    if parameter in positional:
        position = positional.index(parameter)
        if any(type(a) is ast.Starred for a in call.args[: position + 1]):
            return None
        if position < len(call.args):
            return call.args[position]
    return keyword_value(call, parameter)


def hands_back(ctx: Context, value: ast.expr | None, name: str) -> bool:
    """`train_model(model, ...)` given `name` "model": a call of a function at the top of the
    file every `return` of which returns the parameter the call gives `name` to, a parameter
    the function never rebinds but to move it (`model = model.cuda()`): the name's own value,
    handed back."""
    if not isinstance(value, ast.Call) or type(value.func) is not ast.Name:
        return False
    function = top_level_functions(ctx).get(value.func.id)
    if function is None:
        return False
    within = index_of(ctx, function)
    returns = within.local(function, ast.Return)
    if not returns or within.local(function, ast.Yield, ast.YieldFrom):
        return False
    returned = {getattr(statement.value, "id", None) for statement in returns}  # type: ignore[attr-defined]
    if len(returned) != 1:
        return False
    parameter = returned.pop()
    if parameter is None or not is_parameter(function, parameter):
        return False
    given = argument_for(value, function, parameter)
    if type(given) is not ast.Name or given.id != name:
        return False
    found = bindings(ctx, function, parameter) or ()
    return all(b.value is None or keeps_itself(b.value, parameter) for b in found)


def keeps_itself(value: ast.expr | None, name: str) -> bool:
    """`name`, `name.cuda()`, or a choice between such: the name's own value, moved."""
    if isinstance(value, ast.IfExp):
        return keeps_itself(value.body, name) and keeps_itself(value.orelse, name)
    return (type(value) is ast.Name and value.id == name) or moves_itself(value, name)


def _builds_an_object(value: ast.expr | None, ctx: Context) -> bool:
    """`Averager()`, `Meter(...)`: an object of a class not torch's, whose `item()` or `add()`
    are its own; or a literal, a list, a dict... (anything but a name, an attribute, an item or
    a call of a function)."""
    if value is None or isinstance(value, (ast.Name, ast.Attribute, ast.Subscript)):
        return False
    if not isinstance(value, ast.Call):
        return True
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    qualname = ctx.qualname(func) or ""
    return name[:1].isupper() and not qualname.startswith("torch.")


def moves_itself(value: ast.AST | None, name: str) -> bool:
    """`net.cuda()`, `self.net.to(device)`: a method of a module that returns the module itself,
    called on `name` (a dotted name: "net", "self.net")."""
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in MODULE_SELF_METHODS
        and dotted_name(value.func.value) == name
    )


def attribute_values(ctx: Context, cls: ast.ClassDef, attr: str) -> tuple[ast.expr, ...]:
    """Values assigned to `self.<attr>` in the methods of `cls`; empty when some other
    binding (unpacking, augmented assignment) makes them unreliable."""
    values, unreliable = _attribute_assignments(ctx, cls)
    return () if attr in unreliable else tuple(values.get(attr, ()))


@per_file
def _attribute_assignments(
    ctx: Context, cls: ast.ClassDef
) -> tuple[dict[str, list[ast.expr]], set[str]]:
    """The values assigned to each `self.<attr>` in `cls`, and the attributes bound otherwise."""
    values: dict[str, list[ast.expr]] = {}
    unreliable: set[str] = set()
    for node in index_of(ctx, cls).under(cls, ast.Assign, ast.AugAssign, ast.AnnAssign):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if is_self_attribute(target):
                    values.setdefault(target.attr, []).append(node.value)
                else:  # `self.a, self.b = ...` (not `self.mask[i] = 1`: a write into it)
                    unreliable.update(
                        t.attr
                        for t in ast.walk(target)
                        if is_self_attribute(t) and not isinstance(t.ctx, ast.Load)
                    )
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            if is_self_attribute(node.target):
                unreliable.add(node.target.attr)
    return values, unreliable


def may_be_called(ctx: Context, name: str) -> bool:
    """False when no call in the file can call `name`: its text holds `name(` only in `def
    name(` (read from the file's text before any index is)."""
    if ctx.file_index is not None:  # the calls themselves, by name: no pass over the text
        return name in ctx.file_index.calls
    return name in _names_before_parentheses(ctx)


# Whether `def ` precedes a name written just before `(`, and the name. Matched only where a
# word starts, and the word never given back (`\w++`): each word is read once.
_NAME_AND_PARENTHESIS = lazy_compile(r"\b(def )?(\w+)\(")


@per_file
def _names_before_parentheses(ctx: Context) -> frozenset[str]:
    """The names some `name(` of the file's text holds other than a `def name(`: one pass over
    the text for all the file's functions (a search per function would grow with the number
    of functions times the size of the file), read as Python reads names (NFKC-normalized)."""
    return frozenset(
        name for is_def, name in _NAME_AND_PARENTHESIS.findall(ctx.names_text) if not is_def
    )


def is_parameter(function: ast.AST, name: str) -> bool:
    """`name` is a named parameter of `function` (not `*args` or `**kwargs`)."""
    args = function.args  # type: ignore[attr-defined]
    return any(arg.arg == name for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs))


def unrebound_parameter(ctx: Context, function: ast.AST | None, name: str) -> ast.arg | None:
    """The named parameter `name` of `function` when the function never rebinds it (the
    parameter is the name's only binding there): whatever the function does with `name`, it
    does with what its caller passed."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    if not is_parameter(function, name):
        return None
    found = bindings(ctx, function, name)
    if not found or len(found) != 1 or type(found[0].node) is not ast.arg:
        return None
    return found[0].node


def parameter_default(function: ast.AST, name: str) -> ast.expr | None:
    """The default value of the parameter `name` of `function`, positional or keyword-only;
    None when it has none."""
    args = function.args  # type: ignore[attr-defined]
    positional = [*args.posonlyargs, *args.args]
    with_defaults = positional[len(positional) - len(args.defaults) :]
    for arg, default in [
        *zip(with_defaults, args.defaults),
        *zip(args.kwonlyargs, args.kw_defaults),
    ]:
        if arg.arg == name:
            return default
    return None


@per_file
def passed_values(
    ctx: Context, function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str
) -> tuple[tuple[ast.Call, ast.expr], ...]:
    """(call, value) for each call in this file that surely calls `function` and passes a value
    for its `parameter`: a function of the module called by its name (a name nothing else
    binds), or a method called as `self.<name>(...)` in its own class. Calls spreading `*args`
    or `**kwargs` are left out, and so are callers in other files: what is returned is some
    of the values the parameter takes, never all of them."""
    return _passed(ctx, function, parameter)[0]


def passed_by_every_call(
    ctx: Context, function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str
) -> tuple[ast.expr, ...] | None:
    """What each call of `function` in this file passes for `parameter`, when every such call
    passes one (and spreads nothing); None when some call leaves it at its default."""
    passed, calls, _ = _passed(ctx, function, parameter)
    if not passed or len(passed) != calls:
        return None
    return tuple(value for _, value in passed)


def left_none_by_every_call(
    ctx: Context, function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str
) -> bool:
    """`parameter` defaults to None and every call of `function` in this file (one at least,
    none spreading `*args`/`**kwargs`) leaves it so or passes None: code using it never runs,
    unless another file calls the function."""
    default = parameter_default(function, parameter)
    if not (type(default) is ast.Constant and default.value is None):
        return False
    passed, calls, spreading = _passed(ctx, function, parameter)
    return (
        calls > 0
        and not spreading
        and all(type(value) is ast.Constant and value.value is None for _, value in passed)
    )


def bound_only_to(ctx: Context, value: ast.AST, kind: Kind) -> bool:
    """`value` is a name that the scope it is read in binds only to calls making a `kind`
    (`model = Net()`, `x = torch.Tensor(images)`), none augmented."""
    if type(value) is not ast.Name:
        return False
    found = index_of(ctx, ctx.tree)
    scope = found.scopes[found.number[value]]
    made = bindings(ctx, scope, value.id) if scope is not None else None
    return bool(made) and all(
        type(b.value) is ast.Call and not b.augmented and ctx.kind_of(b.value) is kind
        for b in made  # type: ignore[union-attr]
    )


def constructed_with(ctx: Context, cls: ast.ClassDef, attr: str, kind: Kind) -> bool:
    """`self.<attr>` is set only from a parameter of the class's `__init__` (`self.net = net`),
    never rebound there, and every construction of the class in this file (one at least, by its
    name, spreading nothing) passes for it a name bound only to calls making a `kind` (a
    training script's `Session(spec, net=net)` after `net = nn.DataParallel(Net())`)."""
    # `self.net = self.net.cuda()` elsewhere moves what it holds: the same object
    values = [v for v in attribute_values(ctx, cls, attr) if not _moves_attribute(v, attr)]
    init = methods_defined_once(ctx, cls, frozenset()).get("__init__")
    if not values or init is None or any(type(v) is not ast.Name for v in values):
        return False
    args = init.args
    positional = [arg.arg for arg in (*args.posonlyargs, *args.args)][1:]  # after `self`
    names = {v.id for v in values}  # type: ignore[attr-defined]
    if len(names) != 1:
        return False
    parameter = names.pop()
    if parameter not in positional and parameter not in {a.arg for a in args.kwonlyargs}:
        return False
    if any(
        b.node is not None and type(b.node) is not ast.arg
        for b in bindings(ctx, init, parameter) or ()
    ):
        return False  # rebound in `__init__`: which value is kept is unclear
    calls = index_of(ctx, ctx.tree).calls_named(ctx.tree, (cls.name,))
    calls = [c for c in calls if type(c.func) is ast.Name and c.func.id == cls.name]
    if not calls:
        return False
    at = positional.index(parameter) if parameter in positional else None
    for call in calls:
        if any(type(a) is ast.Starred for a in call.args) or any(
            k.arg is None for k in call.keywords
        ):
            return False
        given = next((k.value for k in call.keywords if k.arg == parameter), None)
        if given is None and at is not None and at < len(call.args):
            given = call.args[at]
        if given is None or not bound_only_to(ctx, given, kind):
            return False
    return True


# Module methods that move or convert a module in place and hand back the module itself.
MODULE_MOVES = frozenset({"cpu", "cuda", "to", "float", "half", "double", "train", "eval"})


def _moves_attribute(value: ast.AST, attr: str) -> bool:
    """`self.<attr>.cuda()`, `self.<attr>.to(device).eval()`."""
    while (
        type(value) is ast.Call
        and type(value.func) is ast.Attribute
        and value.func.attr in MODULE_MOVES
    ):
        value = value.func.value
    return is_self_attribute(value) and value.attr == attr  # type: ignore[attr-defined]


def constant_default_kept(
    ctx: Context, function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str
) -> ast.Constant | None:
    """The constant default of `parameter` when every call of `function` in this file (one at
    least, none spreading `*args`/`**kwargs`) leaves it so (`def save(model, full=True)`,
    called `save(cnn, name="cnn")`); None otherwise."""
    default = parameter_default(function, parameter)
    if type(default) is not ast.Constant:
        return None
    passed, calls, spreading = _passed(ctx, function, parameter)
    return default if calls > 0 and not spreading and not passed else None


def _passed(
    ctx: Context, function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str
) -> tuple[tuple[tuple[ast.Call, ast.expr], ...], int, int]:
    """`passed_values`, how many calls of `function` were found in all, and how many of them
    spread `*args` or `**kwargs`."""
    found = _calls_and_positionals(ctx, function)
    if found is None:
        return (), 0, 0
    calls, positional = found
    args = function.args
    keyword_only = {arg.arg for arg in args.kwonlyargs}
    if parameter not in positional and parameter not in keyword_only:
        return (), len(calls), 0
    position = positional.index(parameter) if parameter in positional else None
    passed = []
    spreading = 0
    for call in calls:
        if _spreads(call):
            spreading += 1
            continue  # what `*args` or `**kwargs` holds is not followed
        if position is not None and position < len(call.args):
            passed.append((call, call.args[position]))
            continue
        value = keyword_value(call, parameter)
        if value is not None:
            passed.append((call, value))
    return tuple(passed), len(calls), spreading


def extra_keywords_of_every_call(
    ctx: Context, function: ast.FunctionDef | ast.AsyncFunctionDef
) -> tuple[ast.expr, ...] | None:
    """What the calls of `function` in this file (one at least, none spreading) pass into its
    `**kwargs`: the values of the keywords naming none of its parameters (`update_recorder(
    recorder, density_loss=loss)` for `def update_recorder(self, recorder, pred=None,
    **kwargs)`); None when nothing is passed so, or some call spreads."""
    if function.args.kwarg is None:
        return None
    found = _calls_and_positionals(ctx, function)
    if found is None or not found[0]:
        return None
    calls, positional = found
    named = {*positional, *(arg.arg for arg in function.args.kwonlyargs)}
    extra = []
    for call in calls:
        if _spreads(call):
            return None
        extra.extend(k.value for k in call.keywords if k.arg not in named)
    return tuple(extra) or None


def _spreads(call: ast.Call) -> bool:
    return any(type(a) is ast.Starred for a in call.args) or any(
        k.arg is None for k in call.keywords
    )


def _calls_and_positionals(
    ctx: Context, function: ast.FunctionDef | ast.AsyncFunctionDef
) -> tuple[list[ast.Call], list[str]] | None:
    """The calls of `function` in this file (of a method, by `self.`), and the names its
    calls fill by position (`self` left out); None when they cannot be followed."""
    if not may_be_called(ctx, function.name):  # most functions: no index read
        return None
    args = function.args
    positional = [arg.arg for arg in (*args.posonlyargs, *args.args)]
    calls = _calls_found_in_text(ctx, function)  # most module functions: no index read
    if calls is not None:
        return list(calls), positional
    found = index_of(ctx, function)
    owner = found.parents.get(function)
    if isinstance(owner, ast.ClassDef):
        decorators = {getattr(d, "id", None) for d in function.decorator_list}
        if decorators & {"staticmethod", "classmethod"} or not positional:
            return None
        methods = [
            call
            for call in found.calls_named(owner, (function.name,))
            if is_self_attribute(call.func)
        ]
        return methods, positional[1:]  # `self`
    if isinstance(owner, ast.Module):
        reaching = module_function_calls(ctx, function, found)
        return None if reaching is None else (list(reaching), positional)
    return None


# Starters of a function in a new process or thread, and how many arguments they put before
# the ones they are given (`mp.spawn(fn, args=(a,))` calls `fn(rank, a)`).
_STARTERS = {"Process": 0, "Thread": 0, "spawn": 1, "start_processes": 1}


@per_file
def started_with(
    ctx: Context, function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str
) -> tuple[ast.expr, ...]:
    """What the starts of a module-level `function` in a new process or thread in this file hand
    its positional `parameter`: `mp.Process(target=train, args=(rank, model, ...))`,
    `mp.spawn(train, args=(model,))` (A3C's workers). Starts whose arguments are not a tuple
    written out are left out."""
    if not any(may_be_called(ctx, starter) for starter in _STARTERS):
        return ()
    args = function.args
    positional = [arg.arg for arg in (*args.posonlyargs, *args.args)]
    starts = _starts(ctx).get(function.name)
    if not starts or parameter not in positional:
        return ()
    if not isinstance(index_of(ctx, function).parents.get(function), ast.Module):
        return ()
    values = []
    for shift, handed in starts:
        position = positional.index(parameter) - shift
        if 0 <= position < len(handed) and type(handed[position]) is not ast.Starred:
            values.append(handed[position])
    return tuple(values)


@per_file
def _starts(ctx: Context) -> dict[str, list[tuple[int, list[ast.expr]]]]:
    """For the name of each function the file starts in a new process or thread, the arguments
    written out for each start and how many the starter puts before them; read once a file."""
    found: dict[str, list[tuple[int, list[ast.expr]]]] = {}
    for call in index_of(ctx, ctx.tree).calls_named(ctx.tree, tuple(_STARTERS)):
        func = call.func
        starter = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if starter in ("Process", "Thread"):
            target = keyword_value(call, "target")
        else:
            target = call.args[0] if call.args else keyword_value(call, "fn")
        handed = keyword_value(call, "args")
        if isinstance(target, ast.Name) and isinstance(handed, ast.Tuple):
            found.setdefault(target.id, []).append((_STARTERS[starter], handed.elts))
    return found


# Occurrences of a function's name, and nodes of the statements holding them, past which
# `_calls_found_in_text` leaves the question to the file's index (a bound on its work).
_MOST_OCCURRENCES = 64
_MOST_NODES = 4096


@per_file
def _calls_found_in_text(
    ctx: Context, function: ast.FunctionDef | ast.AsyncFunctionDef
) -> list[ast.Call] | None:
    """The calls `f(...)` of a function `f` defined at the top of the module, in source order,
    found from where its name occurs in the text, while the file has no index: when every
    occurrence of the name is its `def` or a call of it by that bare name (none binds it,
    shadows it or reads it otherwise, even in a string or a comment), these are exactly the
    calls the index would give. None when that cannot be told so: the index answers."""
    name = function.name
    if ctx.file_index is not None or top_level_functions(ctx).get(name) is not function:
        return None
    occurrences = _top_level_function_names(ctx).get(name, [])
    if not occurrences or len(occurrences) > _MOST_OCCURRENCES:
        return None
    holding = _top_level_statements_at(ctx, {ctx.position(at)[0] for at in occurrences})
    if holding is None:
        return None
    calls: list[ast.Call] = []
    called: set[ast.AST] = set()  # the names of those calls
    budget = _MOST_NODES
    for statement in holding:
        todo: list[ast.AST] = [statement]
        while todo:
            node = todo.pop()
            budget -= 1
            if budget < 0:
                return None
            kind = type(node)
            if kind is ast.Name and node.id == name and node not in called:
                return None  # read or bound otherwise than called
            if kind is ast.Call and type(node.func) is ast.Name and node.func.id == name:
                calls.append(node)
                called.add(node.func)
            below = children(node)
            below.reverse()
            todo.extend(below)
    # Each occurrence is the `def` or a called name: nothing else spells it.
    return calls if len(occurrences) == 1 + len(calls) else None


@per_file
def _top_level_function_names(ctx: Context) -> dict[str, list[int]]:
    """Where the name of each function defined at the top of the module occurs in the text, as
    a whole word (one search of the text for all of them); nothing for a text with other than
    ASCII (Python reads names NFKC-normalized: spelled otherwise)."""
    names = top_level_functions(ctx)
    if not names or not ctx.source.isascii():
        return {}
    found: dict[str, list[int]] = {}
    # Every word, kept when it is one of the names: a regex of all the names as alternatives
    # would try each of them at each word, growing with the functions times the file.
    for match in _WORD_RUN.finditer(ctx.source):
        word = match.group()
        if word in names:
            found.setdefault(word, []).append(match.start())
    return found


_WORD_RUN = lazy_compile(r"\w+")


def _top_level_statements_at(ctx: Context, lines: set[int]) -> list[ast.stmt] | None:
    """The module's statements spanning these lines (decorators included), in source order;
    None when a line is in none (a comment or blank line between them)."""
    starts, body = _top_level_starts(ctx), ctx.tree.body
    found: dict[int, ast.stmt] = {}
    for line in lines:
        at = bisect_right(starts, line) - 1
        if at < 0 or (body[at].end_lineno or body[at].lineno) < line:
            return None
        found[at] = body[at]
    return [found[at] for at in sorted(found)]


@per_file
def _top_level_starts(ctx: Context) -> list[int]:
    """The first line of each statement of the module's body (its first decorator's, if any)."""
    return [
        min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))])
        for statement in ctx.tree.body
    ]


def module_function_calls(ctx: Context, function: ast.AST, found) -> list[ast.Call] | None:
    """The calls `f(...)` of the module-level function `f` in its file (`found`: the file's
    index) that surely reach it: by its bare name, not shadowed where the call is; None when
    the module binds the name otherwise too (rebound, or imported too: which function a call
    reaches is unclear)."""
    owner = found.parents.get(function)
    name = function.name  # type: ignore[attr-defined]
    if [b.node for b in bindings(ctx, owner, name) or ()] != [function]:
        return None
    return [
        call
        for call in found.calls_named(owner, (name,))
        if type(call.func) is ast.Name and not _shadowed(ctx, call, found)
    ]


def _shadowed(ctx: Context, call: ast.Call, found) -> bool:
    """The name called is bound in the function or class the call is in: not the module's."""
    scope = found.scopes[found.number[call]]
    if scope is None or isinstance(scope, ast.Module):
        return False
    local = bindings(ctx, scope, call.func.id)
    return local is None or bool(local)


def makes_generator(expr: ast.AST, ctx: Context) -> bool:
    """`expr` makes a generator: a generator expression, or a call of a function of this file
    whose body yields, undecorated (`@contextmanager` makes something else of it), and bound by
    its `def` alone where the call reads the name."""
    if type(expr) is ast.GeneratorExp:
        return True
    if type(expr) is not ast.Call or type(expr.func) is not ast.Name:
        return False
    return _generator_function(ctx, scope_of(expr.func.id, ctx), expr.func.id)


@per_file
def _generator_function(ctx: Context, scope: ast.AST, name: str) -> bool:
    found = bindings(ctx, scope, name)
    if not found or len(found) != 1:
        return False
    function = found[0].node
    if type(function) is not ast.FunctionDef or function.decorator_list:
        return False
    return bool(index_of(ctx, function).local(function, ast.Yield, ast.YieldFrom))


@per_file
def passed_loader(ctx: Context, function: ast.AST, name: str) -> bool:
    """`name` is a parameter of `function` that every call of it in the file passes a
    DataLoader: made in the call, or a name every binding of which makes one where the call is
    (`train(train_loader, ...)` after `train_loader = DataLoader(...)`). Calls from other files
    are not seen; with none in this file, nothing is known."""
    if not is_parameter(function, name):
        return False
    passed = passed_values(ctx, function, name)  # type: ignore[arg-type]
    if not passed:
        return False
    # The values made in the calls first: they are told without the file's index.
    if any(
        not isinstance(value, ast.Name) and ctx.kind_of(value) is not Kind.LOADER
        for _, value in passed
    ):
        return False
    names = [(call, value) for call, value in passed if isinstance(value, ast.Name)]
    if not names:
        return True
    parents = index_of(ctx, ctx.tree).parents
    for call, value in names:
        scope: ast.AST | None = call
        while scope is not None and not isinstance(
            scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)
        ):
            scope = parents.get(scope)
        found = bindings(ctx, scope, value.id) if scope is not None else None
        if not found or any(
            b.value is None or b.augmented or ctx.kind_of(b.value) is not Kind.LOADER for b in found
        ):
            return False
    return True


# Methods that give a tensor of their receiver's shape: conversions and moves.
_SHAPE_KEEPING = frozenset(
    "float double half bfloat16 long int short byte bool char cpu cuda to type detach clone "
    "contiguous".split()
)
# Reductions along the one dimension they are given (`x.sum(0)`): a dimension fewer. (Not
# `max`/`min`/`median`, which give values and indices then; not `norm`, whose first is `p`.)
_ALONG_ONE_DIMENSION = frozenset("sum mean prod std var all any nansum nanmean amax amin".split())


def tensor_rank(expr: ast.AST, ctx: Context, scope: ast.AST | None = None) -> int | None:
    """How many dimensions the tensor `expr` has, where the code itself says so: `x.view(-1)`,
    `x.reshape(-1)` and `x.flatten()` have one, `x.view(a, b)` two; a reduction along one
    dimension (`x.sum(0)`) one fewer than its receiver; integer indices (`x[0, n]`, `n` the
    variable of a loop over a `range`) as many fewer; conversions and moves (`.float()`,
    `.cuda()`, `.data`) as many as their receiver; a name every binding of which in its scope
    has the same. None where the code does not say. `scope`: the function `expr` is read in,
    when not the one being walked."""
    return _rank(expr, ctx, scope, frozenset())


def _rank(
    expr: ast.AST, ctx: Context, scope: ast.AST | None, resolving: frozenset[str]
) -> int | None:
    kind = type(expr)
    if kind is ast.Attribute:
        return _rank(expr.value, ctx, scope, resolving) if expr.attr == "data" else None  # type: ignore[attr-defined]
    if kind is ast.Subscript:
        return _indexed_rank(expr, ctx, scope, resolving)  # type: ignore[arg-type]
    if kind is ast.Name:
        name = expr.id  # type: ignore[attr-defined]
        if name in resolving:
            return None
        found = bindings(ctx, scope if scope is not None else scope_of(name, ctx), name)
        if not found or any(b.value is None or b.augmented for b in found):
            return None
        ranks = {_rank(b.value, ctx, scope, resolving | {name}) for b in found}  # type: ignore[arg-type]
        return ranks.pop() if len(ranks) == 1 else None
    if kind is not ast.Call:
        return None
    func = expr.func  # type: ignore[attr-defined]
    args, keywords = expr.args, expr.keywords  # type: ignore[attr-defined]
    if any(type(a) is ast.Starred for a in args) or any(k.arg is None for k in keywords):
        return None
    if type(func) is not ast.Attribute:
        flattened = ctx.qualname(func) == "torch.flatten" and len(args) == 1 and not keywords
        return 1 if flattened else None
    method, receiver = func.attr, func.value
    if ctx.kind_of(receiver) is Kind.NDARRAY:
        return None  # numpy's `view` reinterprets the dtype
    if method in _SHAPE_KEEPING:
        return _rank(receiver, ctx, scope, resolving)
    if method in ("view", "reshape") and not keywords:
        if len(args) > 1:
            return len(args)
        if len(args) == 1 and _is_int_constant(args[0]):
            return 1
        if len(args) == 1 and type(args[0]) in (ast.Tuple, ast.List):
            return len(args[0].elts)  # type: ignore[attr-defined]
        return None
    if method == "flatten":
        return 1 if not args and not keywords else None
    if method in _ALONG_ONE_DIMENSION:
        dims = [*args, *(k.value for k in keywords if k.arg == "dim")]
        if len(dims) != 1 or not _is_int_constant(dims[0]) or len(keywords) > (not args):
            return None  # also `keepdim=`, `dtype=`: not told apart
        known = _rank(receiver, ctx, scope, resolving)
        return known - 1 if known else None
    return None


def _indexed_rank(
    expr: ast.Subscript, ctx: Context, scope: ast.AST | None, resolving: frozenset[str]
) -> int | None:
    index = expr.slice
    indices = index.elts if type(index) is ast.Tuple else [index]
    if not all(_is_int_index(i, ctx, scope) for i in indices):
        return None  # a slice, a mask, a tensor of indices, `None`, `...`
    known = _rank(expr.value, ctx, scope, resolving)
    return known - len(indices) if known is not None and known >= len(indices) else None


def _is_int_constant(expr: ast.AST) -> bool:
    if type(expr) is ast.UnaryOp and type(expr.op) is ast.USub:
        expr = expr.operand
    return type(expr) is ast.Constant and type(expr.value) is int


def _is_int_index(expr: ast.AST, ctx: Context, scope: ast.AST | None) -> bool:
    """An int constant, or the variable of a loop over a `range` (`for n in range(N)`), every
    binding of the name in its scope such a loop's."""
    if _is_int_constant(expr):
        return True
    if type(expr) is not ast.Name:
        return False
    where = scope if scope is not None else scope_of(expr.id, ctx)
    found = bindings(ctx, where, expr.id)
    if not found:
        return False
    parents = index_of(ctx, where).parents
    for binding in found:
        loop = parents.get(binding.node)
        if not (
            isinstance(loop, ast.For)
            and loop.target is binding.node
            and isinstance(loop.iter, ast.Call)
            and type(loop.iter.func) is ast.Name
            and loop.iter.func.id == "range"
            and loop.iter.func.id not in ctx.imported
        ):
            return False
    return True


@per_file
def runs_as_script(ctx: Context) -> bool:
    """The file has an `if __name__ == "__main__":` block at its top level, or parses the
    command line there (`args = parser.parse_args()` outside any function: pytorch-flows' main.py,
    whose training loop runs at the top level): no module imports such a file."""
    for node in ctx.tree.body:
        test = node.test if isinstance(node, ast.If) else None
        if (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == "__name__"
            and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__"
        ):
            return True
        if (
            isinstance(node, (ast.Assign, ast.Expr))
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr in ("parse_args", "parse_known_args")
        ):
            return True
    return False
