"""Modules that hold no parameter and no buffer: an activation, a pooling layer, a loss, a
`Sequential` of such layers, or a module class of the file with no `__init__`. Their output
requires grad only when their input does, and moving them to a device changes nothing."""

from __future__ import annotations

import ast

from torchdoctor.lint.bindings import bindings, scope_of
from torchdoctor.lint.context import Context, per_file, top_level_classes
from torchdoctor.lint.occurrences import call_name
from torchdoctor.lint.project import MODEL_WRAPPERS
from torchdoctor.lint.values import (
    attribute_values,
    is_self_attribute,
    moves_itself,
    names_a_model,
)

# torch.nn classes without parameters or buffers (tests/test_parameter_free.py builds each with
# the installed torch).
PARAMETER_FREE = frozenset(
    """
ReLU ReLU6 LeakyReLU GELU SiLU Sigmoid Tanh Softmax LogSoftmax Softplus Mish Hardswish ELU
CELU SELU GLU Hardtanh Hardsigmoid Hardshrink Softshrink Softsign Tanhshrink LogSigmoid Softmin
Softmax2d Threshold RReLU Identity Flatten Unflatten Dropout Dropout1d Dropout2d Dropout3d
AlphaDropout FeatureAlphaDropout MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d
AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d
AdaptiveMaxPool3d Upsample UpsamplingNearest2d UpsamplingBilinear2d PixelShuffle PixelUnshuffle
ChannelShuffle ZeroPad2d CosineSimilarity PairwiseDistance
BCELoss BCEWithLogitsLoss CrossEntropyLoss NLLLoss MSELoss L1Loss SmoothL1Loss HuberLoss KLDivLoss
CosineEmbeddingLoss MarginRankingLoss TripletMarginLoss HingeEmbeddingLoss SoftMarginLoss
MultiMarginLoss PoissonNLLLoss GaussianNLLLoss CTCLoss
""".split()
)
_MODULE_BASES = ("torch.nn.Module", "torch.nn.modules.module.Module")


def parameter_free_module(expr: ast.AST, ctx: Context) -> bool:
    """`Swish()`, `nn.Sigmoid()`, `nn.Sequential(nn.ReLU(), Stash())`, or a name or `self`
    attribute bound only to such a module, where `Swish` and `Stash` are parameter-free."""
    if isinstance(expr, ast.Call):
        qualname = ctx.qualname(expr.func) or ""
        if qualname.startswith("torch.nn."):
            kind = qualname.rpartition(".")[2]
            if kind == "Sequential":
                return bool(expr.args) and all(
                    parameter_free_module(layer, ctx) for layer in expr.args
                )
            return kind in PARAMETER_FREE
        return isinstance(expr.func, ast.Name) and _parameter_free_class(ctx, expr.func.id)
    if is_self_attribute(expr):  # `self.score_fn = nn.CosineSimilarity(dim=-1)` (s3prl)
        cls = ctx.enclosing_class()
        values = attribute_values(ctx, cls, expr.attr) if cls is not None else ()  # type: ignore[attr-defined]
        return bool(values) and all(
            isinstance(value, ast.Call) and parameter_free_module(value, ctx) for value in values
        )
    if not isinstance(expr, ast.Name):
        return False
    found = [
        b
        for b in bindings(ctx, scope_of(expr.id, ctx), expr.id) or ()
        if not _same_module(b.value, expr.id, ctx)
    ]
    return bool(found) and all(
        not b.augmented and isinstance(b.value, ast.Call) and parameter_free_module(b.value, ctx)
        for b in found
    )


def _same_module(value: ast.AST | None, name: str, ctx: Context) -> bool:
    """`model = nn.DataParallel(model)`, `model = model.cuda()`: the module `name` held, wrapped
    or moved, with no parameter of its own added."""
    if not isinstance(value, ast.Call):
        return False
    if moves_itself(value, name):
        return True
    func = value.func
    first = value.args[0] if value.args else None
    return (
        isinstance(first, ast.Name)
        and first.id == name
        and (ctx.qualname(func) or "").rpartition(".")[2] in MODEL_WRAPPERS
    )


def _parameter_free_class(ctx: Context, name: str) -> bool:
    """A module class of this file (at its top or in the scope being read) built straight on
    `nn.Module` with no `__init__`: it can hold no parameter."""
    cls = ctx.local_class(name) or top_level_classes(ctx).get(name)
    if cls is None or len(cls.bases) != 1:
        return False
    if (ctx.qualname(cls.bases[0]) or "") not in _MODULE_BASES:
        return False
    return not any(
        isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "__init__"
        for s in cls.body
    )


def weightless_module(expr: ast.AST, ctx: Context) -> bool:
    """A module that holds no parameter, though maybe buffers (which never require grad): one
    of `parameter_free_module`, or a name bound only to a call of a module class of this file
    whose code makes no parameter and no layer (DeepComplexCRN's `ConviSTFT`, a fixed inverse
    STFT keeping its kernels with `register_buffer`)."""
    if parameter_free_module(expr, ctx):
        return True
    if not isinstance(expr, ast.Name):
        return False
    found = bindings(ctx, scope_of(expr.id, ctx), expr.id) or ()
    return bool(found) and all(
        not b.augmented
        and isinstance(b.value, ast.Call)
        and isinstance(b.value.func, ast.Name)
        and _weightless_class(ctx, b.value.func.id)
        for b in found
    )


# Built-ins whose result is a plain value.
_PLAIN_BUILTINS = frozenset(
    {"int", "float", "bool", "str", "len", "min", "max", "abs", "round", "list", "tuple"}
)
# Calls that give a module its weights.
_WEIGHT_MAKERS = frozenset({"Parameter", "register_parameter", "add_module", "ParameterList"})


@per_file
def _weightless_class(ctx: Context, name: str) -> bool:
    """A top-level class of the file built straight on `nn.Module` whose every `self.x = value`
    is given a literal, arithmetic, a plain name (not one of a model) or a call of a function of
    an imported module other than `torch.nn` (`np.ceil(...)`, `torch.eye(n)`), and which makes no
    `nn.Parameter` and adds no module: what it keeps cannot require grad."""
    cls = top_level_classes(ctx).get(name)
    if cls is None or len(cls.bases) != 1:
        return False
    if (ctx.qualname(cls.bases[0]) or "") not in _MODULE_BASES:
        return False
    for node in ast.walk(cls):
        if isinstance(node, ast.Call):
            if call_name(node) in _WEIGHT_MAKERS:
                return False
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(is_self_attribute(target) for target in targets) and not _plain_value(
                node.value, targets, ctx
            ):
                return False
    return True


def _plain_value(value: ast.AST | None, targets: list, ctx: Context) -> bool:
    """A value that is no module: see `_weightless_class`."""
    if value is None:
        return True
    for target in targets:
        if is_self_attribute(target) and names_a_model(target.attr):
            return False
    for node in ast.walk(value):
        if isinstance(node, ast.Name) and names_a_model(node.id):
            return False
        if isinstance(node, ast.Call):
            qualname = ctx.qualname(node.func) or ""
            if isinstance(node.func, ast.Name) and node.func.id in _PLAIN_BUILTINS:
                continue  # `int(...)`, `len(...)`
            if not qualname or "." not in qualname or qualname.startswith("torch.nn."):
                return False  # a function of the file or a layer: it may make a module
    return True
