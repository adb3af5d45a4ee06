"""What detectors ask about the code: qualified names, coarse kinds of values, positions.

The checker walks the tree once, in source order, and tells the context about each binding as
it passes, so a detector that looks at a node sees the bindings made before it.
"""

from __future__ import annotations

import ast
import enum
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property, wraps
from typing import Sequence

from torchdoctor.catalog._model import Pitfall
from torchdoctor.lint.lines import line_starts, position, split_lines
from torchdoctor.lint.project import LOADER_FROM, MODULE_ITEMS, NO_FACTS, ProjectFacts
from torchdoctor.report.finding import Edit, Finding, Fix

# `torch.` read as a name's attribute somewhere in the text (not `x.torch.`, not `mytorch.`).
_READS_TORCH = re.compile(r"(?<![\w.])torch\s*\.").search


class Kind(enum.Enum):
    TENSOR = "tensor"
    MODULE = "module"
    OPTIMIZER = "optimizer"
    LOADER = "loader"
    SAMPLER = "sampler"
    SCHEDULER = "scheduler"
    NDARRAY = "ndarray"
    # An item of a DataLoader as a whole (`for batch in loader`): a tuple of tensors, a dict,
    # or an object of the data's own class (whose `.to()` may work in place): unpacked into
    # names, its parts are tensors.
    BATCH = "batch"
    UNKNOWN = "unknown"


# torch functions that return a tensor (the common ones; unlisted functions are UNKNOWN).
TENSOR_FUNCTIONS = frozenset(
    """
tensor as_tensor from_numpy asarray frombuffer zeros ones empty full eye arange linspace logspace
rand randn randint randperm rand_like randn_like randint_like zeros_like ones_like empty_like
full_like normal bernoulli multinomial poisson stack cat concat concatenate hstack vstack
where matmul mm bmm einsum softmax log_softmax sigmoid tanh relu exp log sqrt abs sum mean
max min argmax argmin clamp clip flatten reshape transpose permute squeeze unsqueeze
gather scatter index_select masked_select tril triu cumsum cumprod outer cdist sort topk
chunk_cat diag diagonal flip roll repeat_interleave tile broadcast_to
""".split()
)

# Tensor methods whose result is again a tensor.
TENSOR_METHODS = frozenset(
    """
to cuda cpu float half double long int short bool byte char bfloat16 type type_as
view view_as reshape reshape_as permute transpose t contiguous detach clone clamp clamp_
squeeze unsqueeze flatten expand expand_as repeat narrow select index_select gather
sum mean std var max min abs exp log sqrt pow softmax log_softmax sigmoid tanh relu
argmax argmin masked_fill masked_fill_ add sub mul div matmul mm bmm neg round floor ceil
requires_grad_ pin_memory unfold
""".split()
)

# Functions and methods that hand back a tuple of tensors (`a, b = torch.chunk(x, 2)`,
# `values, indices = x.max(dim=1)`): each name unpacked from them is a tensor.
TENSOR_TUPLE_FUNCTIONS = frozenset(
    "chunk split unbind tensor_split hsplit vsplit dsplit sort topk kthvalue median mode "
    "aminmax std_mean var_mean".split()
)
# ... those of them that hand back one tensor when given no `dim` (`x.max()`).
_TUPLE_WITH_DIM = frozenset({"max", "min"})

# PyTorch 0.3's `Variable`, a no-op wrapper of a tensor since 0.4, under both its names.
VARIABLE_QUALNAMES = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
# What `from torch.autograd import *` (or `torch.nn.init`) binds that rules ask about: names of
# the module's `__all__` (a test checks them against the installed torch).
TORCH_STAR_EXPORTS = {
    "torch.autograd": ("Variable", "Function"),
    "torch.nn.init": (
        *("uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal"),
        *("kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"),
    ),
}

# Module methods that return the module itself.
MODULE_SELF_METHODS = frozenset(
    "to cuda cpu float half double bfloat16 train eval requires_grad_ share_memory type".split()
)


def unwrap_self_methods(value: ast.AST) -> ast.AST:
    """`Net().to(device).float()` -> `Net()`."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in MODULE_SELF_METHODS
        and isinstance(value.func.value, ast.Call)
    ):
        value = value.func.value
    return value


def _bound_names(statement: ast.AST) -> list[str]:
    """The names a statement binds, read from its targets (nested blocks left out): those of
    `_top_level_names`, and a loop's or a `with` statement's."""
    kind = type(statement)
    if kind in (ast.For, ast.AsyncFor):
        return _target_names([statement.target])  # type: ignore[attr-defined]
    if kind in (ast.With, ast.AsyncWith):
        return _target_names([i.optional_vars for i in statement.items if i.optional_vars])  # type: ignore[attr-defined]
    return _top_level_names(statement)


def _moved_module(value: ast.AST) -> ast.AST:
    """`model.cuda().float()` -> `model`, `Net().to(device)` -> `Net()`: what the calls of
    `MODULE_SELF_METHODS` are made on."""
    while (
        type(value) is ast.Call
        and type(value.func) is ast.Attribute
        and value.func.attr in MODULE_SELF_METHODS
    ):
        value = value.func.value
    return value


NUMPY_FACTORIES = frozenset(
    "array asarray zeros ones empty full arange linspace eye load stack concatenate".split()
)

# Progress bars that yield what they wrap (`for x, y in tqdm(loader):`).
_PROGRESS_BARS = frozenset({"tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm"})

# torch.nn names that are not module classes.
_NN_NON_MODULES = frozenset({"Parameter", "Buffer", "Module", "UninitializedParameter"})
# Functions and classes of the CNN libraries built like torchvision's models (BatchNorm in every
# one): cnn_finetune's `make_model`, efficientnet_pytorch, segmentation_models_pytorch.
CNN_FACTORIES = frozenset(
    {
        "cnn_finetune.make_model",
        "efficientnet_pytorch.EfficientNet.from_pretrained",
        "efficientnet_pytorch.EfficientNet.from_name",
        *(
            f"segmentation_models_pytorch.{name}"
            for name in ("Unet", "UnetPlusPlus", "FPN", "PSPNet", "DeepLabV3", "DeepLabV3Plus")
        ),
        *(f"segmentation_models_pytorch.{name}" for name in ("Linknet", "PAN", "MAnet")),
    }
)

_ANNOTATION_KINDS = {
    "torch.Tensor": Kind.TENSOR,
    "torch.nn.Parameter": Kind.TENSOR,
    "torch.nn.Module": Kind.MODULE,
    "torch.optim.Optimizer": Kind.OPTIMIZER,
    "torch.optim.optimizer.Optimizer": Kind.OPTIMIZER,
    "torch.utils.data.DataLoader": Kind.LOADER,
    "torch.utils.data.dataloader.DataLoader": Kind.LOADER,
    "numpy.ndarray": Kind.NDARRAY,
}


# Node classes the hottest questions test by `type` (the parser makes no subclasses).
_SEQUENCES = (ast.Tuple, ast.List)
_FUNCTION_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
# Where the loops around a node stop counting: what runs in another scope.
_LOOP_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@dataclass
class Scope:
    node: ast.AST | None
    kinds: dict[str, Kind] = field(default_factory=dict)
    # Local classes, by name: True when the class is an nn.Module.
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    # Names bound by imports, to their dotted origin; "" where a rebinding shadows an import.
    aliases: dict[str, str] = field(default_factory=dict)
    # Local functions, by name: what they return (a Kind, or a tuple of Kinds for `return a, b`).
    functions: dict[str, object] = field(default_factory=dict)
    # For a function's own scope: what each `return` in it returned, as above.
    returns: list = field(default_factory=list)
    # A `yield` in the function's own body: calling it makes a generator.
    yields: bool = False


_FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@dataclass
class _TopLevel:
    """What the module's top level binds, for the functions that read it (`Context._top_level`)."""

    imports: dict[str, str] = field(default_factory=dict)
    assigned: dict[str, list[ast.expr]] = field(default_factory=dict)
    kinds: dict[str, Kind] = field(default_factory=dict)  # filled as the functions ask


def _stored_names(scope: ast.AST) -> frozenset[str]:
    """The names a function (or class) binds anywhere in its tree (nested functions too: the
    module's binding is then left alone), its parameters included."""
    names = set()
    for node in ast.walk(scope):
        kind = type(node)
        if kind is ast.Name and type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
            names.add(node.id)  # type: ignore[attr-defined]
        elif kind is ast.arg:
            names.add(node.arg)  # type: ignore[attr-defined]
        elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) and node is not scope:
            names.add(node.name)  # type: ignore[attr-defined]
        elif kind in (ast.Import, ast.ImportFrom):
            names.update((a.asname or a.name).partition(".")[0] for a in node.names)  # type: ignore[attr-defined]
        elif kind in (ast.Global, ast.Nonlocal):
            names.update(node.names)  # type: ignore[attr-defined]
    return frozenset(names)


def _target_names(targets: list) -> list[str]:
    names, todo = [], list(targets)
    while todo:
        target = todo.pop()
        if type(target) is ast.Name:
            names.append(target.id)
        elif type(target) in (ast.Tuple, ast.List):
            todo.extend(target.elts)
        elif type(target) is ast.Starred:
            todo.append(target.value)
    return names


def _top_level_names(statement: ast.AST) -> list[str]:
    """The names a statement of the module's top level (not an import) binds, read from its
    targets only (never a walk of its whole tree)."""
    kind = type(statement)
    if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        return [statement.name]  # type: ignore[attr-defined]
    if kind is ast.Assign:
        targets = statement.targets  # type: ignore[attr-defined]
    elif kind in (ast.AugAssign, ast.AnnAssign):
        targets = [statement.target]  # type: ignore[attr-defined]
    elif kind is ast.Delete:
        targets = statement.targets  # type: ignore[attr-defined]
    else:
        return []
    return _target_names(targets)


class Context:
    """Per-file knowledge shared by all detectors."""

    def __init__(
        self,
        path: str,
        source: str,
        tree: ast.Module,
        cells: Sequence[int] | None = None,
        project: ProjectFacts = NO_FACTS,
    ) -> None:
        self.path = path
        self.source = source
        self.tree = tree
        # What the rest of the project says (lint/project.py): its nn.Module classes, the
        # environment variables it reads.
        self.project = project
        # The code comes from a Jupyter notebook's cells (argparse, `display`... behave there).
        self.is_notebook = path.endswith(".ipynb")
        # For a notebook's joined cells: the cell number of each line (see `is_displayed`).
        self.cells = cells
        self._module_scope = Scope(tree)
        self._scopes: list[Scope] = [self._module_scope]
        self._stored: dict[ast.AST, frozenset[str]] = {}  # see `_stored_in`
        self._module_classes: dict[str, bool] = {}
        # `self.<attr>` kinds per class, learnt from assignments in its methods.
        self._attribute_kinds: dict[ast.ClassDef, dict[str, Kind]] = {}
        # What the factory methods of a class make, by class and method (see `factory_made`).
        self._factory_made: dict[tuple[ast.ClassDef, str], tuple[ast.Call, ...]] = {}
        # Enclosing statements and scopes of the node being visited, outermost first; no
        # expressions. For an expression, ancestors[-1] is the statement that contains it.
        self.ancestors: list[ast.AST] = []
        self.imports_torch = False
        # Every name bound by an import anywhere so far: rebinding others needs no alias work,
        # and only these names can have a qualname. Read it, never change it.
        self.imported: set[str] = set()
        # Per statement owner: where each of its statements sits in its blocks (built on demand).
        self._block_positions: dict[ast.AST, dict[ast.AST, tuple[list[ast.stmt], int]]] = {}
        # statement_parents() of the last statement it was asked about.
        self._parents_of: tuple[ast.AST | None, dict[ast.AST, ast.AST]] = (None, {})
        # The memos of `per_file` functions for this file, by function.
        self.memos: dict = {}
        # The whole file's index (lint/occurrences.py), once a rule has needed it: the checker
        # then walks it rather than the tree.
        self.file_index = None

    def release(self) -> None:
        """Forget everything learnt about the file once its check is over. Rules keep objects
        that hold this Context in its memos (a cycle), and through them the whole tree: left
        alone, only the cyclic garbage collector could free them, walking every node again."""
        self.__dict__.clear()

    @cached_property
    def lines(self) -> list[str]:
        """Source lines with their endings, as Python counts them (see lint/lines.py); computed
        only when a position is needed."""
        return split_lines(self.source, keepends=True)

    @cached_property
    def _line_starts(self) -> list[int]:
        return line_starts(self.lines)

    @cached_property
    def _ascii(self) -> bool:
        return self.source.isascii()

    @cached_property
    def names_text(self) -> str:
        """The source as Python reads its names: NFKC-normalized (`ｍｏｄｅｌ` is `model`), which
        is the source itself when it is ASCII. Searched for names only, never for positions:
        normalizing may change lengths."""
        return self.source if self._ascii else unicodedata.normalize("NFKC", self.source)

    def may_name(self, word: str) -> bool:
        """False when no name in the file can be `word` (its source text, as Python reads names,
        does not contain it): a rule asking whether the file mentions a name anywhere answers
        at once."""
        return word in self.names_text

    # ---- names -------------------------------------------------------------------------------

    def qualname(self, expr: ast.AST) -> str | None:
        """The dotted name `expr` refers to through imports: `F.relu` -> `torch.nn.functional.relu`."""
        attributes = []
        while type(expr) is ast.Attribute:
            attributes.append(expr.attr)
            expr = expr.value
        if type(expr) is not ast.Name:
            return None
        if expr.id not in self.imported:
            base = self._imported_later(expr.id)
            if base is None:
                return None  # most names: no import ever bound them
        else:
            base = None
            for scope in reversed(self._scopes):
                if expr.id in scope.aliases:
                    base = scope.aliases[expr.id] or None
                    break
                if expr.id in scope.kinds or expr.id in scope.classes:
                    return None  # a parameter or local binding shadows outer imports
        if base is None or not attributes:
            return base
        return ".".join([base, *reversed(attributes)])

    def module_qualname(self, expr: ast.AST) -> str | None:
        """The dotted name `expr` refers to through the module's own top-level imports, wherever
        the walk stands (a fact about the whole module, such as what its top level builds, read
        before the walk has reached its imports: a notebook whose imports come cell by cell)."""
        attributes = []
        while type(expr) is ast.Attribute:
            attributes.append(expr.attr)
            expr = expr.value
        top = self._top_level
        if type(expr) is not ast.Name or expr.id not in top.imports or expr.id in top.assigned:
            return None
        base = top.imports[expr.id]
        return ".".join([base, *reversed(attributes)]) if base and attributes else base or None

    def _imported_later(self, name: str) -> str | None:
        """In a function, a name the module imports further down (capsule-networks' `from
        torch.autograd import Variable` under `if __name__ == "__main__":`): the function runs
        once the module is loaded, and reads the module's binding then."""
        top = self._top_level
        if name not in top.imports or name in top.assigned or not self._reads_the_module(name):
            return None
        return top.imports[name]

    def _assigned_later_kind(self, name: str) -> Kind:
        """In a function, the kind of a name the module assigns further down, when every one
        of its assignments there makes that kind (`scheduler = LambdaLR(optim, f)` under
        `if __name__ == "__main__":`, read by a `train()` defined above it)."""
        top = self._top_level
        if name in top.imports or not self._reads_the_module(name):
            return Kind.UNKNOWN
        known = top.kinds.get(name)
        if known is None:
            top.kinds[name] = Kind.UNKNOWN  # while its values are read (`model = model.cuda()`)
            kinds = {
                self.kind_of(value) if type(value) is ast.Call else Kind.UNKNOWN
                for value in top.assigned[name]
            }
            known = top.kinds[name] = kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN
        return known

    def _reads_the_module(self, name: str) -> bool:
        """In a function, `name` is none of its own (nor of the functions and classes around
        it): the module's binding is read when it runs."""
        scopes = self._scopes
        if not any(type(s.node) in _FUNCTION_NODES for s in scopes):
            return False
        for scope in scopes[1:]:
            if name in scope.kinds or name in scope.classes or name in scope.aliases:
                return False  # bound in a scope around the read
            if scope.node is not None and name in self._stored_in(scope.node):
                return False  # bound there further down (local throughout, as Python reads it)
        return True

    def _stored_in(self, scope: ast.AST) -> frozenset[str]:
        found = self._stored.get(scope)
        if found is None:
            found = self._stored[scope] = _stored_names(scope)
        return found

    @cached_property
    def _top_level(self) -> _TopLevel:
        """The names the module's top level (also in its `if`, `try`, `with` and loop blocks)
        binds by imports of absolute modules and by plain assignments; those it binds
        otherwise, or both ways, are left out of both."""
        top = _TopLevel()
        other: set[str] = set()
        todo = list(self.tree.body) if isinstance(self.tree, ast.Module) else []
        while todo:
            node = todo.pop()
            kind = type(node)
            if kind is ast.Import:
                for alias in node.names:  # type: ignore[attr-defined]
                    bound = alias.asname or alias.name.partition(".")[0]
                    top.imports[bound] = alias.name if alias.asname else bound
            elif kind is ast.ImportFrom:
                for alias in node.names:  # type: ignore[attr-defined]
                    if alias.name == "*":
                        continue
                    bound = alias.asname or alias.name
                    if node.level or not node.module:  # type: ignore[attr-defined]
                        other.add(bound)  # relative: not followed
                    else:
                        top.imports[bound] = f"{node.module}.{alias.name}"  # type: ignore[attr-defined]
            elif (
                kind is ast.Assign and len(node.targets) == 1 and type(node.targets[0]) is ast.Name
            ):  # type: ignore[attr-defined]
                top.assigned.setdefault(node.targets[0].id, []).append(node.value)  # type: ignore[attr-defined]
            elif kind in (ast.If, ast.Try, ast.With, ast.For, ast.While):
                for field in ("body", "orelse", "finalbody", "handlers"):
                    todo.extend(getattr(node, field, ()))
                if kind is ast.For:
                    other.update(_target_names([node.target]))  # type: ignore[attr-defined]
                elif kind is ast.With:
                    other.update(
                        _target_names([i.optional_vars for i in node.items if i.optional_vars])
                    )  # type: ignore[attr-defined]
            elif kind is ast.ExceptHandler:
                todo.extend(node.body)  # type: ignore[attr-defined]
                if node.name:  # type: ignore[attr-defined]
                    other.add(node.name)  # type: ignore[attr-defined]
            else:
                other.update(_top_level_names(node))
        both = other | (top.imports.keys() & top.assigned.keys())
        for name in both:
            top.imports.pop(name, None)
            top.assigned.pop(name, None)
        return top

    def call_qualname(self, call: ast.AST) -> str | None:
        return self.qualname(call.func) if isinstance(call, ast.Call) else None

    @staticmethod
    def method_name(call: ast.AST) -> str | None:
        """`x.cuda()` -> "cuda"; None when the call is not a method call."""
        if type(call) is ast.Call and type(call.func) is ast.Attribute:
            return call.func.attr
        return None

    # ---- kinds -------------------------------------------------------------------------------

    def kind_of(self, expr: ast.AST | None) -> Kind:
        """A coarse guess of what `expr` holds, from how it was made; UNKNOWN when unsure."""
        handler = _KIND_OF.get(type(expr))
        return handler(self, expr) if handler is not None else Kind.UNKNOWN

    def _name_kind(self, expr: ast.Name) -> Kind:
        name = expr.id
        for scope in reversed(self._scopes):
            kind = scope.kinds.get(name)
            if kind is not None:
                return kind
            if name in scope.aliases:
                return Kind.UNKNOWN
        if name in self._top_level.assigned:  # a global the module assigns further down
            return self._assigned_later_kind(name)
        return Kind.UNKNOWN

    def _binop_kind(self, expr: ast.BinOp) -> Kind:
        # Long chains (`a + b + c + ...`) nest on the left: walk them without recursion.
        operands = [expr.right]
        while type(expr) is ast.BinOp:
            operands.append(expr.right)
            expr = expr.left
        found = Kind.UNKNOWN
        for operand in (expr, *operands):
            kind = self.kind_of(operand)
            if kind is Kind.TENSOR:
                return kind
            if kind is Kind.NDARRAY:
                found = kind
        return found

    def _unary_kind(self, expr: ast.UnaryOp) -> Kind:
        return (
            Kind.UNKNOWN
            if isinstance(expr.op, ast.Not)
            else self._tensor_like(self.kind_of(expr.operand))
        )

    def _subscript_kind(self, expr: ast.Subscript) -> Kind:
        kind = self.kind_of(expr.value)
        if kind is Kind.MODULE and type(expr.slice) is ast.Slice:
            # `features[:23]`: a Sequential's (or ModuleList's) slice is one too. (Not an item:
            # a ParameterList's is a Parameter.)
            return kind
        return self._tensor_like(kind)

    def _await_kind(self, expr: ast.Await) -> Kind:
        return self.kind_of(expr.value)

    @staticmethod
    def _tensor_like(kind: Kind) -> Kind:
        return kind if kind in (Kind.TENSOR, Kind.NDARRAY) else Kind.UNKNOWN

    def _attribute_kind(self, expr: ast.Attribute) -> Kind:
        if type(expr.value) is ast.Name and expr.value.id == "self":
            cls = self.enclosing_class()
            if cls is not None:
                kind = self._attribute_kinds.get(cls, {}).get(expr.attr, Kind.UNKNOWN)
                if kind is not Kind.UNKNOWN:
                    return kind
            return self._project_attribute_kind(expr.attr)
        if (
            expr.attr in ("T", "mT", "H", "data", "grad")
            and self.kind_of(expr.value) is Kind.TENSOR
        ):
            return Kind.TENSOR
        if expr.attr == "module" and self.kind_of(expr.value) is Kind.MODULE:
            return Kind.MODULE
        return self._project_attribute_kind(expr.attr)

    def _project_attribute_kind(self, attribute: str) -> Kind:
        """`self.dataset.train_loader`, assigned a DataLoader in another module of the project."""
        return Kind.LOADER if self.project.is_loader_attribute(attribute) else Kind.UNKNOWN

    def _call_kind(self, call: ast.Call) -> Kind:
        func = call.func
        if type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id == "self":
            kind = self._callee_result(func)  # `self.fc(x)`: never an imported name
            return kind if kind is not Kind.UNKNOWN else self._method_result(func.attr)
        qualname = self.qualname(func)
        if qualname:
            kind = self._kind_from_qualname(qualname, call)
            if kind is not Kind.UNKNOWN:
                return kind
        if type(func) is ast.Name:
            cls = self._local_class(func.id)
            if cls is not None and self.is_module_class(cls):
                return Kind.MODULE
            if cls is None and self._project_module_class(func.id, qualname):
                return Kind.MODULE
            if cls is None and self._project_class(func.id, qualname, Kind.SCHEDULER):
                return Kind.SCHEDULER
            if (
                cls is None
                and LOADER_FROM + func.id in self.project.markers  # (the hot path: inlined)
                and self.from_project(func.id, qualname)
            ):
                return Kind.LOADER  # `loader = get_train_dataloader(...)`, of another module
            returned = self.returned_by(call)
            if type(returned) is Kind and returned is not Kind.UNKNOWN:
                return returned
            return self._callee_result(func)
        if type(func) is ast.Attribute:
            receiver = self.kind_of(func.value)
            attr = func.attr
            if receiver is Kind.TENSOR and (
                attr in TENSOR_METHODS or attr[-1] == "_" and attr[0] != "_"
            ):
                return Kind.TENSOR  # an in-place method (`scatter_`, `fill_`) hands back self
            if receiver is Kind.NDARRAY and func.attr in ("reshape", "astype", "copy", "transpose"):
                return Kind.NDARRAY
            if receiver is Kind.MODULE and func.attr in MODULE_SELF_METHODS:
                return Kind.MODULE
            if qualname and self._project_module_class(func.attr, qualname):
                return Kind.MODULE  # `models.Net(...)`
            if qualname and self._project_class(func.attr, qualname, Kind.SCHEDULER):
                return Kind.SCHEDULER  # `lr_scheduler.WarmupMultiStepLR(...)`
            if qualname and self._project_loader_factory(func.attr, qualname):
                return Kind.LOADER  # `data.get_loader(...)`
            return self._callee_result(func)
        if type(func) is ast.Call:
            return self._looked_up_call_kind(func, call)
        return Kind.UNKNOWN

    def _method_result(self, name: str) -> Kind:
        """MODULE for `self.build_model()` when `build_model` is a factory method of the class
        around (see `factory_made`)."""
        cls = self.enclosing_class()
        return Kind.MODULE if cls is not None and self.factory_made(cls, name) else Kind.UNKNOWN

    def factory_made(self, cls: ast.ClassDef, name: str) -> tuple[ast.Call, ...]:
        """The calls making the modules that the plain method `name` of `cls` hands back, when
        it hands back only modules it makes (`model = VisualFeatureExtractor(...)`, maybe moved
        or loaded, then `return model`): a factory method, read before the walk reaches it;
        () for any other method."""
        key = (cls, name)
        known = self._factory_made.get(key)
        if known is None:
            self._factory_made[key] = ()  # (a method calling itself)
            known = self._factory_made[key] = self._read_factory(cls, name)
        return known

    def _read_factory(self, cls: ast.ClassDef, name: str) -> tuple[ast.Call, ...]:
        method = methods_defined_once(self, cls).get(name)
        if method is None:
            return ()
        # name -> the calls making it; None: bound to something else too
        made: dict[str, list[ast.Call] | None] = {}
        handed: list[ast.Call] = []
        statements = sorted(nested_statements(method.body), key=lambda n: (n.lineno, n.col_offset))
        for node in statements:
            if type(node) is ast.Return:
                value = _moved_module(node.value) if node.value is not None else None
                if type(value) is ast.Name and made.get(value.id):
                    handed.extend(made[value.id])  # type: ignore[arg-type]
                elif type(value) is ast.Call and self._makes_module_outside(value):
                    handed.append(value)
                else:
                    return ()
            elif (
                type(node) is ast.Assign
                and len(node.targets) == 1
                and type(node.targets[0]) is ast.Name
            ):
                target = node.targets[0].id
                value = _moved_module(node.value)
                if is_name(value, target):
                    continue  # moved: what it holds stays
                calls = made.get(target, [])
                made[target] = (
                    calls + [value]
                    if calls is not None and self._makes_module_outside(value)
                    else None
                )  # type: ignore[list-item]
            elif type(node) is ast.Expr and isinstance(node.value, (ast.Yield, ast.YieldFrom)):
                return ()
            else:  # bound some other way (unpacked, augmented, a loop's): not only modules
                for target in _bound_names(node):
                    made[target] = None
        return tuple(handed)

    def _makes_module_outside(self, value: ast.AST | None) -> bool:
        """`value` is a call making a module, told without the method's own names: a class or
        factory of the file, the project or torch named by an imported or module-level name."""
        if type(value) is not ast.Call:
            return False
        root = value.func
        while type(root) is ast.Attribute:
            root = root.value
        if type(root) is not ast.Name or root.id == "self":
            return False
        return self._call_kind(value) is Kind.MODULE

    def _looked_up_call_kind(self, lookup: ast.Call, call: ast.Call) -> Kind:
        """`getattr(models, "DinkNet34")()`: a call of what a module holds under a name
        written out, as `models.DinkNet34()` would be."""
        if not (
            type(lookup.func) is ast.Name
            and lookup.func.id == "getattr"
            and len(lookup.args) == 2
            and not lookup.keywords
            and type(lookup.args[1]) is ast.Constant
            and isinstance(lookup.args[1].value, str)
            and lookup.args[1].value.isidentifier()
        ):
            return Kind.UNKNOWN
        holder = self.qualname(lookup.args[0])
        if holder is None:
            return Kind.UNKNOWN
        attr = lookup.args[1].value
        qualname = f"{holder}.{attr}"
        kind = self._kind_from_qualname(qualname, call)
        if kind is Kind.UNKNOWN and self._project_module_class(attr, qualname):
            return Kind.MODULE
        return kind

    def _project_module_class(self, name: str, qualname: str | None) -> bool:
        """`Net` of `from models import Net` (or `from .models import Net`, `from models import
        *`, `models.Net`) where every class `Net` of the project is an nn.Module."""
        return self._project_class(name, qualname, Kind.MODULE)

    def _project_class(self, name: str, qualname: str | None, kind: Kind) -> bool:
        """`name` is a class of the project's own modules (imported from them, or by a
        relative or star import) every definition of which makes values of `kind` (modules,
        learning-rate schedulers)."""
        facts = self.project
        known = facts.is_module_class if kind is Kind.MODULE else facts.is_scheduler_class
        return known(name) and self.from_project(name, qualname)

    def _project_loader_factory(self, name: str, qualname: str | None) -> bool:
        """`name` is a function of the project's own modules every definition of which returns
        only new DataLoaders."""
        return self.project.has(LOADER_FROM + name) and self.from_project(name, qualname)

    def from_project(self, name: str, qualname: str | None) -> bool:
        """`name`, as the code here refers to it (`qualname`: what it resolves to, if
        anything), comes from the project's own modules: imported by name from one of them, or
        by a relative or star import; not a local binding."""
        if qualname is not None:  # imported by name: from the project's own modules only
            return self.project.is_project_module(qualname)
        # Not imported by name: a relative import (whose origin is recorded as ""), or a star
        # import; but not a local binding.
        for scope in reversed(self._scopes):
            if name in scope.kinds or name in scope.functions:
                return False
            if name in scope.aliases:
                return scope.aliases[name] == ""
        return name not in self.imported

    def _callee_result(self, func: ast.AST) -> Kind:
        # Calling a module runs its forward: the result is a tensor (or a structure of them).
        return Kind.TENSOR if self.kind_of(func) is Kind.MODULE else Kind.UNKNOWN

    def _kind_from_qualname(self, qualname: str, call: ast.Call) -> Kind:
        head, _, last = qualname.rpartition(".")
        if head == "torch" and last in TENSOR_FUNCTIONS:
            return Kind.TENSOR
        if head == "torch" and last.endswith("Tensor") and last[0].isupper():
            return Kind.TENSOR  # torch.Tensor(...), torch.FloatTensor(...)
        if head == "torch.nn.functional":
            return Kind.TENSOR
        if qualname in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
            return Kind.TENSOR
        if qualname in VARIABLE_QUALNAMES:
            # A no-op wrapper of a tensor since 0.4; given anything else it raises.
            return Kind.TENSOR if call.args else Kind.UNKNOWN
        if head.startswith("torch.optim.lr_scheduler"):
            return Kind.SCHEDULER if last[:1].isupper() else Kind.UNKNOWN
        if head.startswith("torch.optim") and last[:1].isupper():
            return Kind.OPTIMIZER
        if last == "DataLoader" and head.startswith("torch.utils.data"):
            return Kind.LOADER
        if last.endswith("Sampler") and head.startswith("torch.utils.data"):
            return Kind.SAMPLER
        if head.startswith("torch.nn") and last[:1].isupper() and last not in _NN_NON_MODULES:
            return Kind.MODULE
        if head.startswith("torchvision.models") and last[:1].islower() and last != "get_weight":
            return Kind.MODULE
        if qualname in ("timm.create_model", "torch.hub.load") or qualname in CNN_FACTORIES:
            return Kind.MODULE
        if qualname == "torch.compile" and call.args and self.kind_of(call.args[0]) is Kind.MODULE:
            return Kind.MODULE
        if head == "numpy" and last in NUMPY_FACTORIES or head == "numpy.random":
            return Kind.NDARRAY
        return Kind.UNKNOWN

    def kind_from_annotation(self, annotation: ast.AST | None) -> Kind:
        if annotation is None:
            return Kind.UNKNOWN
        qualname = self.qualname(annotation)
        if qualname in _ANNOTATION_KINDS:
            return _ANNOTATION_KINDS[qualname]
        if (
            qualname
            and qualname.startswith("torch.nn.")
            and qualname.rpartition(".")[2] == "Module"
        ):
            return Kind.MODULE
        if isinstance(annotation, ast.Name):
            cls = self._local_class(annotation.id)
            if cls is not None and self.is_module_class(cls):
                return Kind.MODULE
            if (
                cls is None
                and annotation.id in self.project.module_classes  # (inlined: a hot path)
                and self.from_project(annotation.id, qualname)
            ):
                return Kind.MODULE  # `critic: Critic`, of `from src.networks import Critic`
        elif isinstance(annotation, ast.Attribute) and qualname:
            if self._project_module_class(annotation.attr, qualname):
                return Kind.MODULE  # `critic: networks.Critic`
        return Kind.UNKNOWN

    # ---- classes -----------------------------------------------------------------------------

    def local_class(self, name: str) -> ast.ClassDef | None:
        """The class `name` means here, when this file defines it."""
        return self._local_class(name)

    def _local_class(self, name: str) -> ast.ClassDef | None:
        for scope in reversed(self._scopes):
            if name in scope.classes:
                return scope.classes[name]
            if name in scope.kinds or name in scope.aliases:
                return None
        return None

    def is_module_class(self, cls: ast.ClassDef) -> bool:
        """True when `cls` subclasses nn.Module, directly or through local or torch.nn bases."""
        return self.class_inherits(cls, _is_nn_module_qualname)

    def class_inherits(self, cls: ast.ClassDef, accept, _seen: frozenset = frozenset()) -> bool:
        """True when some base of `cls` (followed through local classes) has a qualname accepted."""
        if cls in _seen:
            return False
        for base in cls.bases:
            qualname = self.qualname(base)
            if qualname and accept(qualname):
                return True
            if isinstance(base, ast.Name):
                local = self._local_class(base.id)
                if local is not None and self.class_inherits(local, accept, _seen | {cls}):
                    return True
        return False

    # ---- where we are ------------------------------------------------------------------------

    def enclosing_function(self) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        for node in reversed(self.ancestors):
            if type(node) in _FUNCTION_DEFINITIONS:
                return node
        return None

    def enclosing_class(self) -> ast.ClassDef | None:
        """The class whose method we are in (or whose body we are in)."""
        for node in reversed(self.ancestors):
            if type(node) is ast.ClassDef:
                return node
        return None

    def enclosing_loops(self) -> list[ast.AST]:
        """The loops around the node being visited, innermost first, within its function (or
        class, or lambda)."""
        loops = []
        for node in reversed(self.ancestors):
            if type(node) in _LOOP_SCOPES:
                break
            if type(node) in _LOOPS:
                loops.append(node)
        return loops

    def parent(self) -> ast.AST | None:
        return self.ancestors[-1] if self.ancestors else None

    def statement_parents(self) -> dict[ast.AST, ast.AST]:
        """Parent of every expression node in the statement being visited (nested statements,
        such as the body of an `if`, excluded; operators and Load/Store markers too). Computed
        on demand: call it only after cheap checks have passed. Read it, never change it: it is
        shared until the next statement."""
        if not self.ancestors:
            return {}
        statement = self.ancestors[-1]
        if self._parents_of[0] is statement:  # many nodes of one statement ask in turn
            return self._parents_of[1]
        from torchdoctor.lint.occurrences import children  # it builds on this module

        parents: dict[ast.AST, ast.AST] = {}
        todo = [statement]
        while todo:
            node = todo.pop()
            for child in children(node):  # no operator or Load/Store: none is ever asked
                if not isinstance(child, ast.stmt):
                    parents[child] = node
                    todo.append(child)
        self._parents_of = (statement, parents)
        return parents

    def statement_block(self) -> tuple[list[ast.stmt], int] | None:
        """The statement list holding the statement being visited, and its index in it."""
        if len(self.ancestors) < 2 or not isinstance(self.ancestors[-1], ast.stmt):
            return None
        return self.block_position(self.ancestors[-1], self.ancestors[-2])

    def block_position(
        self, statement: ast.AST, owner: ast.AST
    ) -> tuple[list[ast.stmt], int] | None:
        """The statement list of `owner` (its body, else or finally block) holding `statement`,
        and its index in it. Each owner's blocks are indexed once, not searched per question."""
        positions = self._block_positions.get(owner)
        if positions is None:
            positions = self._block_positions[owner] = {}
            for name in ("body", "orelse", "finalbody"):
                block = getattr(owner, name, None)
                if isinstance(block, list):
                    for index, item in enumerate(block):
                        positions[item] = (block, index)
        return positions.get(statement)

    # ---- positions and findings --------------------------------------------------------------

    def is_displayed(self, statement: ast.stmt) -> bool:
        """True for an expression statement whose value Jupyter shows: the last statement of a
        notebook cell, not closed by `;`. Its value is not thrown away."""
        return id(statement) in self._displayed

    @cached_property
    def _displayed(self) -> frozenset[int]:
        cells, body = self.cells, self.tree.body
        if not cells:
            return frozenset()

        def cell(statement: ast.stmt) -> int | None:
            return cells[statement.lineno - 1] if 0 < statement.lineno <= len(cells) else None

        shown = set()
        for statement, following in zip(body, [*body[1:], None]):
            if type(statement) is not ast.Expr or (
                following is not None and cell(following) == cell(statement)
            ):
                continue
            end = self.offset(
                statement.end_lineno or statement.lineno, statement.end_col_offset or 0
            )
            if not self.source[end:].partition("\n")[0].lstrip().startswith(";"):
                shown.add(id(statement))
        return frozenset(shown)

    def offset(self, line: int, byte_col: int) -> int:
        """Character offset in the source of an `ast` (1-based line, UTF-8 byte column) position."""
        if line - 1 >= len(self.lines):
            return len(self.source)
        text = self.lines[line - 1]
        col = (
            byte_col
            if self._ascii or text.isascii()
            else len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))
        )
        return self._line_starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.offset(node.lineno, node.col_offset),
            self.offset(node.end_lineno, node.end_col_offset),
        )

    def text(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.source[start:end]

    def line_column(self, line: int, byte_col: int) -> tuple[int, int]:
        """1-based (line, column in characters) of an `ast` position: `position(offset(...))`,
        read from the line itself when it is ASCII and the column inside it (no search)."""
        lines = self.lines
        if 0 < line <= len(lines):
            text = lines[line - 1]
            if 0 <= byte_col < len(text) and (self._ascii or text.isascii()):
                return line, byte_col + 1
        return self.position(self.offset(line, byte_col))

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column in characters) of a character offset."""
        return position(self._line_starts, offset)

    def edit(self, start: int, end: int, content: str) -> Edit:
        line, column = self.position(start)
        end_line, end_column = self.position(end)
        return Edit(start, end, content, line, column, end_line, end_column)

    def replace(self, node: ast.AST, content: str) -> Edit:
        # `edit(*span(node))`, with the positions read from the node (see `line_column`).
        line, column = self.line_column(node.lineno, node.col_offset)
        end_line, end_column = self.line_column(node.end_lineno, node.end_col_offset)
        return Edit(*self.span(node), content, line, column, end_line, end_column)

    def fix(
        self, pitfall: Pitfall, applicability: str, *edits: Edit, title: dict | None = None
    ) -> Fix:
        text = title or pitfall.fix_title or {"en": "Apply the suggested fix"}
        return Fix(applicability, text["en"], tuple(edits), titles=text)

    def finding(
        self,
        pitfall: Pitfall,
        node: ast.AST,
        variant: str = "",
        *,
        fix: Fix | None = None,
        end_node: ast.AST | None = None,
        **fields: object,
    ) -> Finding:
        last = end_node or node
        line, column = self.line_column(node.lineno, node.col_offset)
        end_line, end_column = self.line_column(last.end_lineno, last.end_col_offset)
        return Finding(
            code=pitfall.code,
            name=pitfall.name,
            # English, the canonical form: the output writes it in the user's language.
            message=pitfall.message(variant, "en", **fields),
            path=self.path,
            line=line,
            column=column,
            end_line=end_line,
            end_column=end_column,
            fix=fix,
            template=(variant, fields),
        )

    # ---- bindings (called by the checker while it walks) -------------------------------------

    def _enter_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        scope = Scope(node)
        self._scopes.append(scope)
        args = node.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            scope.kinds[arg.arg] = self.kind_from_annotation(arg.annotation)
        for arg in (args.vararg, args.kwarg):
            if arg is not None:
                scope.kinds[arg.arg] = Kind.UNKNOWN

    def _enter_class(self, node: ast.ClassDef) -> None:
        self._forget(node.name)
        self._scopes[-1].classes[node.name] = node
        self._scopes.append(Scope(node))

    def _leave_scope(self, node: ast.AST) -> None:
        scope = self._scopes.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._forget(node.name)
            self._scopes[-1].kinds[node.name] = Kind.UNKNOWN
            returned = set(scope.returns)
            # Every return agrees: calls of it make that (async functions make coroutines,
            # generator functions make generators).
            if len(returned) == 1 and isinstance(node, ast.FunctionDef) and not scope.yields:
                self._scopes[-1].functions[node.name] = returned.pop()

    def mark_yield(self, node: ast.Yield | ast.YieldFrom) -> None:
        """Called by the walk for every `yield`: the enclosing function is a generator."""
        scope = self._scopes[-1]
        if isinstance(scope.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope.yields = True

    def _leave_return(self, node: ast.Return) -> None:
        scope = self._scopes[-1]
        if not isinstance(scope.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return
        value = node.value
        if isinstance(value, ast.Tuple):
            scope.returns.append(tuple(self.kind_of(e) for e in value.elts))
        else:
            scope.returns.append(self.kind_of(value))

    def returned_by(self, call: ast.AST) -> object:
        """What a call of a local function returns: a Kind, a tuple of Kinds, or UNKNOWN."""
        if type(call) is not ast.Call or type(call.func) is not ast.Name:
            return Kind.UNKNOWN
        name = call.func.id
        for scope in reversed(self._scopes):
            if name in scope.functions:
                return scope.functions[name]
            if name in scope.kinds or name in scope.aliases or name in scope.classes:
                return Kind.UNKNOWN
        return Kind.UNKNOWN

    def _leave_assign(self, node: ast.Assign) -> None:
        value = node.value
        returned = self.returned_by(value)
        if (
            returned is Kind.UNKNOWN
            and type(value) is ast.Call
            and type(node.targets[0]) in _SEQUENCES
        ):
            returned = self._project_items(value, len(node.targets[0].elts))  # type: ignore[attr-defined]
        # Classes compared by `type` here (the parser makes no subclasses): every assignment.
        if type(value) in _SEQUENCES or type(returned) is tuple:
            # `images, labels = images.cuda(), labels.cuda()` or `a, b = make_pair()`:
            # element by element.
            kinds = returned if type(returned) is tuple else [self.kind_of(e) for e in value.elts]
            for target in node.targets:
                if (
                    type(target) in _SEQUENCES
                    and len(target.elts) == len(kinds)
                    and not any(type(e) is ast.Starred for e in target.elts)
                ):
                    for element, kind in zip(target.elts, kinds):
                        self._bind_target(element, kind)
                else:
                    self._bind_target(target, Kind.UNKNOWN)
            return
        if (
            type(value) is ast.Call
            and (type(node.targets[0]) in _SEQUENCES or len(node.targets) > 1)
            and self._hands_back_tensors(value)
        ):
            for target in node.targets:  # `rot_0, rot_90 = torch.chunk(rot_loss, 2, dim=0)`
                if type(target) in _SEQUENCES:
                    for element in target.elts:
                        self._bind_target(
                            element, Kind.TENSOR if type(element) is ast.Name else Kind.UNKNOWN
                        )
                else:
                    self._bind_target(target, Kind.UNKNOWN)  # the tuple itself
            return
        kind = self.kind_of(value)
        for target in node.targets:
            if kind is Kind.BATCH and type(target) in _SEQUENCES:
                self._bind_batch(target)  # `images, labels = data`
            elif type(value) is ast.Constant and value.value is None and is_self_attribute(target):
                continue  # `self.model = None` until the model is built: a placeholder
            else:
                self._bind_target(target, kind)

    def _project_items(self, call: ast.Call, size: int) -> object:
        """What the items of the tuple a function of another module of the project returns are
        (`model, optimizer = getModel(opt)`, PyraNet's, whose model is of a module class): a tuple
        of `size` Kinds, or UNKNOWN."""
        func = call.func
        name = (
            func.id if type(func) is ast.Name else func.attr if type(func) is ast.Attribute else ""
        )
        markers = self.project.markers
        if MODULE_ITEMS + name not in markers:
            return Kind.UNKNOWN
        qualname = self.qualname(func)
        if type(func) is ast.Attribute and qualname is None:
            return Kind.UNKNOWN  # `self.get_model()`: a method, not the module's function
        kinds = tuple(
            Kind.MODULE if f"{MODULE_ITEMS}{name}/{size}#{i}" in markers else Kind.UNKNOWN
            for i in range(size)
        )
        if Kind.MODULE not in kinds or not self.from_project(name, qualname):
            return Kind.UNKNOWN
        return kinds

    def _hands_back_tensors(self, call: ast.Call) -> bool:
        """`torch.chunk(x, 2)`, `x.split(3)`, `torch.max(x, dim=1)`, `x.topk(5)`: a call that
        hands back a tuple of tensors (of a tensor's method: on a known tensor)."""
        func = call.func
        qualname = self.qualname(func)
        if qualname:
            head, _, last = qualname.rpartition(".")
            return head == "torch" and _tuple_call(last, call)
        return (
            type(func) is ast.Attribute
            and _tuple_call(func.attr, call, method=True)
            and self.kind_of(func.value) is Kind.TENSOR
        )

    def _leave_ann_assign(self, node: ast.AnnAssign) -> None:
        kind = self.kind_from_annotation(node.annotation)
        if kind is Kind.UNKNOWN and node.value is not None:
            kind = self.kind_of(node.value)
        self._bind_target(node.target, kind)

    def _leave_aug_assign(self, node: ast.AugAssign) -> None:
        # `x += t` keeps x's kind when it was a tensor; otherwise we can't tell.
        if isinstance(node.target, ast.Name) and self.kind_of(node.target) is not Kind.TENSOR:
            self._bind_target(node.target, Kind.UNKNOWN)

    def _leave_named_expr(self, node: ast.NamedExpr) -> None:
        self._bind_target(node.target, self.kind_of(node.value))

    def _leave_except(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._forget(node.name)
            self._scopes[-1].kinds[node.name] = Kind.UNKNOWN

    def bind_loop_target(self, loop: ast.For | ast.AsyncFor | ast.comprehension) -> None:
        """Bind a loop's target before its body runs: batches of a DataLoader are tensors."""
        iterated, target = loop.iter, loop.target
        if (
            isinstance(iterated, ast.Call)
            and isinstance(iterated.func, ast.Name)
            and iterated.func.id == "enumerate"
            and not any("enumerate" in scope.functions for scope in self._scopes)
            and iterated.args
            and self._iterates_loader(iterated.args[0])
            and isinstance(target, (ast.Tuple, ast.List))
            and len(target.elts) == 2
        ):
            # `for i, (x, y) in enumerate(loader)`: the counter, then the batch.
            self._bind_target(target.elts[0], Kind.UNKNOWN)
            self._bind_batch(target.elts[1])
        elif self._iterates_loader(iterated):
            self._bind_batch(target)
        elif (
            type(target) is ast.Name
            and type(iterated) is ast.Name
            and self.kind_of(iterated) is Kind.TENSOR
        ):
            # `for bias_label in bias_labels`, a part of a batch: its rows are tensors too
            self._bind_target(target, Kind.TENSOR)
        else:
            self._bind_target(target, Kind.UNKNOWN)

    def _iterates_loader(self, expr: ast.AST) -> bool:
        """A DataLoader: made as one, or a parameter named like one (`loader`, `train_loader`)
        that every call of its function in the file is given a DataLoader for; also wrapped in
        a progress bar (`tqdm(loader, ...)`), which yields the same items."""
        while (
            isinstance(expr, ast.Call) and expr.args and self.qualname(expr.func) in _PROGRESS_BARS
        ):
            expr = expr.args[0]
        kind = self.kind_of(expr)
        if kind is not Kind.UNKNOWN or not isinstance(expr, ast.Name):
            return kind is Kind.LOADER
        function = self.enclosing_function()
        if function is None or "loader" not in expr.id.lower():
            return False
        from torchdoctor.lint.values import passed_loader  # values builds on this module

        return passed_loader(self, function, expr.id)

    def _bind_batch(self, target: ast.AST) -> None:
        """A DataLoader's item: unpacked into names, each part is a tensor."""
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._bind_target(
                    element, Kind.TENSOR if isinstance(element, ast.Name) else Kind.UNKNOWN
                )
        else:
            self._bind_target(target, Kind.BATCH if isinstance(target, ast.Name) else Kind.UNKNOWN)

    def bind_with(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            if item.optional_vars is not None:
                self._bind_target(item.optional_vars, Kind.UNKNOWN)

    def _forget(self, name: str) -> None:
        """Drop what the current scope knew about `name`; an outer import of it is shadowed."""
        scope = self._scopes[-1]
        scope.kinds.pop(name, None)
        scope.classes.pop(name, None)
        scope.functions.pop(name, None)
        if name in self.imported:
            scope.aliases.pop(name, None)
            if any(s.aliases.get(name) for s in self._scopes):
                scope.aliases[name] = ""

    def _bind_target(self, target: ast.AST, kind: Kind) -> None:
        scope = self._scopes[-1]
        kind_of_target = type(target)
        if kind_of_target is ast.Name:
            self._forget(target.id)
            scope.kinds[target.id] = kind
        elif kind_of_target in _SEQUENCES:
            for element in target.elts:
                self._bind_target(element, Kind.UNKNOWN)
        elif kind_of_target is ast.Starred:
            self._bind_target(target.value, Kind.UNKNOWN)
        elif (
            kind_of_target is ast.Attribute
            and type(target.value) is ast.Name
            and target.value.id == "self"
        ):
            cls = self.enclosing_class()
            if cls is not None:
                kinds = self._attribute_kinds.setdefault(cls, {})
                # Conflicting assignments make the attribute unknown.
                if kinds.get(target.attr, kind) is not kind:
                    kind = Kind.UNKNOWN
                kinds[target.attr] = kind

    def _bind_star_import(self, scope: Scope, node: ast.ImportFrom) -> None:
        """`from .common import *`: what it binds is unknown, but a `torch` it binds can only be
        PyTorch (DeepRL's agents get `torch` so); from a module of the project, the names some
        module of it imports from torch, each with its one origin (`Variable` of `from
        torch.autograd import Variable` in `utils.py`). A name the file binds itself stays its
        own."""
        bound = [("torch", "torch")]
        module = node.module or ""
        if not node.level and module in TORCH_STAR_EXPORTS:  # `from torch.autograd import *`
            bound += [(name, f"{module}.{name}") for name in TORCH_STAR_EXPORTS[module]]
        if node.level or self.project.is_project_module(module):
            bound += self.project.star_reexports
            # The project's modules import from torch what they pass on: this file uses torch.
            self.imports_torch = self.imports_torch or bool(self.project.star_reexports)
        if (
            not self.imports_torch
            and "torch" not in self.imported
            and _READS_TORCH(self.names_text)
        ):
            # `from utils.utils import *`, then `torch.device(...)`: the one `torch` it can
            # bind is PyTorch, and this file uses it (nnlm's dataset.py, its utils not at hand).
            self.imports_torch = True
        for name, origin in bound:
            if name not in self.imported and not any(name in s.kinds for s in self._scopes):
                self.imported.add(name)
                scope.aliases[name] = origin

    def _bind_import(self, node: ast.Import | ast.ImportFrom) -> None:
        scope = self._scopes[-1]
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.partition(".")[0]
                self._forget(bound)
                self.imported.add(bound)
                scope.aliases[bound] = alias.name if alias.asname else bound
                if alias.name.partition(".")[0] == "torch":
                    self.imports_torch = True
            return
        if any(alias.name == "*" for alias in node.names):
            self._bind_star_import(scope, node)
        if node.level or not node.module:
            for alias in node.names:
                if alias.name == "*":
                    continue
                self._forget(alias.asname or alias.name)
                self.imported.add(alias.asname or alias.name)
                scope.aliases[alias.asname or alias.name] = ""  # relative import: not torch's
            return
        if node.module.partition(".")[0] == "torch":
            self.imports_torch = True
        fallback = self._fallback_imports()
        for alias in node.names:
            if alias.name == "*":
                continue
            bound = alias.asname or alias.name
            if bound in fallback:
                continue  # `except ImportError: from tensorboardX import SummaryWriter`
            self._forget(bound)
            self.imported.add(bound)
            scope.aliases[bound] = f"{node.module}.{alias.name}"

    def _fallback_imports(self) -> frozenset[str]:
        """In an `except ImportError:` (or bare `except:`) handler, the names the `try` body
        imports from a module: there the handler's import of one is a fallback, and the
        body's is what runs wherever that module is installed (`from torch.utils.tensorboard
        import SummaryWriter`, falling back to tensorboardX's)."""
        ancestors = self.ancestors
        if len(ancestors) < 2 or type(ancestors[-1]) is not ast.ExceptHandler:
            return frozenset()  # (the import itself is not among the ancestors yet)
        handler, owner = ancestors[-1], ancestors[-2]
        caught = handler.type
        if caught is not None and not any(
            isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError")
            for n in ([caught] if not isinstance(caught, ast.Tuple) else caught.elts)
        ):
            return frozenset()
        return frozenset(
            alias.asname or alias.name
            for statement in getattr(owner, "body", ())
            if type(statement) is ast.ImportFrom and statement.module and not statement.level
            for alias in statement.names
        )


def _is_nn_module_qualname(qualname: str) -> bool:
    head, _, last = qualname.rpartition(".")
    if not head.startswith("torch.nn") or not last[:1].isupper():
        return False
    return last not in ("Parameter", "Buffer", "UninitializedParameter")


def is_name(expr: ast.AST, name: str) -> bool:
    """The bare name `name`."""
    return type(expr) is ast.Name and expr.id == name


def is_self_attribute(expr: ast.AST) -> bool:
    """`self.<attr>`."""
    return type(expr) is ast.Attribute and type(expr.value) is ast.Name and expr.value.id == "self"


def per_file(func):
    """Memoize `func(ctx, *args)` while one file is checked. The memo lives on that file's
    Context, so no tree outlives its check. (Rules call these memos for most nodes they look
    at: a hit is one attribute and two dictionary look-ups.)"""

    @wraps(func)
    def memoized(ctx: Context, *args):
        memo = ctx.memos.get(memoized)
        if memo is None:
            memo = ctx.memos[memoized] = {}
        try:
            return memo[args]
        except KeyError:
            found = memo[args] = func(ctx, *args)
            return found

    return memoized


@per_file
def methods_defined_once(
    ctx: Context, cls: ast.ClassDef, decorators: frozenset[str] = frozenset()
) -> dict[str, ast.FunctionDef]:
    """The methods `cls` defines once in its body, by name, plain `def`s with no decorator but
    those named in `decorators` (a property or a cached method returns something else); read
    once per class, not once per method asked about."""
    found: dict[str, ast.FunctionDef | None] = {}
    for node in cls.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        plain = isinstance(node, ast.FunctionDef) and all(
            isinstance(d, ast.Name) and d.id in decorators for d in node.decorator_list
        )
        found[node.name] = node if plain and node.name not in found else None  # type: ignore[assignment]
    return {name: node for name, node in found.items() if node is not None}


def assigned_name(statement: ast.AST | None, value: ast.AST) -> str | None:
    """`name` when `statement` is `name = value` (one plain name as its only target)."""
    if (
        isinstance(statement, ast.Assign)
        and statement.value is value
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
    ):
        return statement.targets[0].id
    return None


def shorten(text: str, limit: int = 60) -> str:
    """Source text for a one-line message: whitespace folded, cut to `limit` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@per_file
def top_level_functions(ctx: Context) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions defined at the top of the file, by name (the last of a name)."""
    return {
        node.name: node
        for node in ctx.tree.body
        if type(node) in (ast.FunctionDef, ast.AsyncFunctionDef)
    }


@per_file
def top_level_classes(ctx: Context) -> dict[str, ast.ClassDef]:
    """The classes defined at the top of the file, by name (the first of a name)."""
    classes: dict[str, ast.ClassDef] = {}
    for statement in ctx.tree.body:
        if type(statement) is ast.ClassDef:
            classes.setdefault(statement.name, statement)
    return classes


_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _classes_with_blocks() -> dict[type, tuple[str, ...]]:
    found, todo = {}, [ast.AST]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        blocks = tuple(
            name
            for name in ("body", "orelse", "finalbody", "handlers", "cases")
            if name in cls._fields
        )
        if blocks and not issubclass(cls, _NESTED_SCOPES):
            found[cls] = blocks
    return found


# Per statement class (and `except` handlers, `case`s): the fields that hold statement lists.
_BLOCK_FIELDS = _classes_with_blocks()


def nested_statements(body: list[ast.stmt]):
    """Every statement in `body` and the blocks nested in it, not entering functions or classes."""
    todo = list(body)
    while todo:
        statement = todo.pop()
        if type(statement) in _NESTED_SCOPES:  # by `type`: the parser makes no subclasses
            continue
        yield statement
        for name in _BLOCK_FIELDS.get(type(statement), ()):
            block = getattr(statement, name)
            if block:
                todo.extend(block)


def subtree_parents(root: ast.AST) -> dict[ast.AST, ast.AST]:
    """Parent of every node under `root`, nested statements included."""
    parents: dict[ast.AST, ast.AST] = {}
    todo = [root]
    while todo:
        node = todo.pop()
        for child in ast.iter_child_nodes(node):
            parents[child] = node
            todo.append(child)
    return parents


_KIND_OF = {
    ast.Name: Context._name_kind,
    ast.Attribute: Context._attribute_kind,
    ast.Call: Context._call_kind,
    ast.BinOp: Context._binop_kind,
    ast.UnaryOp: Context._unary_kind,
    ast.Subscript: Context._subscript_kind,
    ast.Await: Context._await_kind,
}

# Binding handlers by node class; the checker calls them directly on its way in and out.
ENTER = {
    ast.FunctionDef: Context._enter_function,
    ast.AsyncFunctionDef: Context._enter_function,
    ast.Lambda: Context._enter_function,
    ast.ClassDef: Context._enter_class,
    ast.Import: Context._bind_import,
    ast.ImportFrom: Context._bind_import,
    ast.For: Context.bind_loop_target,
    ast.AsyncFor: Context.bind_loop_target,
    ast.comprehension: Context.bind_loop_target,
    ast.With: Context.bind_with,
    ast.AsyncWith: Context.bind_with,
}
LEAVE = {
    ast.FunctionDef: Context._leave_scope,
    ast.AsyncFunctionDef: Context._leave_scope,
    ast.Lambda: Context._leave_scope,
    ast.ClassDef: Context._leave_scope,
    ast.Assign: Context._leave_assign,
    ast.AnnAssign: Context._leave_ann_assign,
    ast.AugAssign: Context._leave_aug_assign,
    ast.NamedExpr: Context._leave_named_expr,
    ast.ExceptHandler: Context._leave_except,
    ast.Return: Context._leave_return,
}


def _tuple_call(name: str, call: ast.Call, method: bool = False) -> bool:
    """`name` hands back a tuple of tensors when called so: `chunk`, `split`...; `max` and `min`
    only given a dimension (`torch.max(x, 1)`, `x.max(dim=1)`)."""
    if name in TENSOR_TUPLE_FUNCTIONS:
        return True
    if name in _TUPLE_WITH_DIM:
        given = len(call.args) + (0 if method else -1)  # `torch.max(x, 1)`: x is no dimension
        return any(k.arg == "dim" for k in call.keywords) or (
            given >= 1
            and not any(type(a) is ast.Starred for a in call.args)
            and (len(call.args) < 2 or method or type(call.args[1]) is ast.Constant)
        )
    return False


@per_file
def file_of_tests(ctx: Context) -> bool:
    """A file of tests: one pytest collects tests from (`test_*.py`, `*_test.py`, or one under
    `tests/`), or one importing `unittest` or `pytest` (normalizing_flows' `test.py`): there a
    function named `test...` is a test, elsewhere (`main.py`'s `test(model, data)`) an
    evaluation."""
    path = ctx.path.replace("\\", "/")
    name = path.rsplit("/", 1)[-1]
    return (
        ctx.may_name("unittest")
        or ctx.may_name("pytest")
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or "/tests/" in f"/{path}"
        or "/test/" in f"/{path}"
    )
