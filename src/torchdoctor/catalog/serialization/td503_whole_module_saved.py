"""TD503 whole-module-saved: `torch.save(model, path)` pickles the class, not just the weights."""

from __future__ import annotations

import ast
import builtins
import re
from typing import Iterator

from torchdoctor.catalog.sdk import (
    MODULE_MOVES,
    constructed_with,
    hands_back,
    dotted_name,
    unrebound_parameter,
    WEIGHTS_NAME,
    lazy_compile,
    Clue,
    Context,
    Finding,
    MODULE_SELF_METHODS,
    Kind,
    Pitfall,
    argument,
    attribute_values,
    bindings,
    bound_only_to,
    constant_default_kept,
    built_from,
    import_rebound_before,
    import_replaced,
    index_of,
    is_parameter,
    is_self_attribute,
    lineage,
    names_a_model,
    passed_by_every_call,
    passed_values,
    per_file,
    scope_of,
    shorten,
    started_with,
    top_level_functions,
)
from torchdoctor.catalog.sdk import weights_only as _weights_only
from torchdoctor.catalog.serialization._reports import user_code_shown

PITFALL = Pitfall(
    code="TD503",
    name="whole-module-saved",
    title={
        "en": "Whole nn.Module saved with torch.save instead of its state_dict",
        "zh": "用 torch.save 保存了整个 nn.Module，而不是它的 state_dict",
    },
    messages={
        "": {
            "en": "`torch.save({module}, ...)` pickles the whole module: save `{module}.state_dict()` instead",
            "zh": "`torch.save({module}, ...)` 会 pickle 整个模块：应改为保存 `{module}.state_dict()`",
        },
        "inside": {
            "en": "`torch.save` pickles the whole module `{module}` held in `{saved}`: save "
            "`{module}.state_dict()` there instead",
            "zh": "`torch.save` 会 pickle `{saved}` 中的整个模块 `{module}`：应在那里改为保存 "
            "`{module}.state_dict()`",
        },
        "ckpt": {
            "en": "the file is a whole pickled `{cls}`, not a state_dict: loading it imports and "
            "runs that class's code (`weights_only=True` refuses it) and breaks when the class "
            "moves; convert it once to a state_dict",
            "zh": "这个文件是整个被 pickle 的 `{cls}`，而不是 state_dict：加载它会导入并运行这个类的代码"
            "（`weights_only=True` 会拒绝），类一旦移动位置就加载不了；请一次性转换成 state_dict",
        },
    },
    fix_title={"en": "Save `{module}.state_dict()`", "zh": "改为保存 `{module}.state_dict()`"},
    fix_applicability="unsafe",
    fix_hint={
        "en": "To load the file, make the pickled class importable under its old path (run from "
        "the project that saved it, or import the class before `torch.load`); then re-save "
        "`model.state_dict()` once and load weights into a freshly built model from then on ("
        "`torchdoctor ckpt fix FILE -o weights.pth --trust` converts it).",
        "zh": "要加载这个文件，先让被 pickle 的类能按原来的路径导入（在保存它的项目中运行，或在 "
        "`torch.load` 之前导入该类）；然后一次性改存 `model.state_dict()`，以后都把权重加载进"
        "新构建的模型（`torchdoctor ckpt fix FILE -o weights.pth --trust` 可以完成转换）。",
    },
    docs={
        "en": """
## What it catches
`torch.save(model, path)` where `model` is known to be an `nn.Module` (built from a `torch.nn`
class, an `nn.Module` subclass of the file or of another module of the project,
`timm.create_model`, a torchvision model..., or a parameter annotated with such a class:
`critic: Critic`, also once kept on `self`; a `copy.deepcopy` of one; one moved (`model.cpu()`);
`model.module`, what DataParallel or DDP wraps, of a value named as a model), also inside what
is saved: an element of `[model, optimizer]` or a value of `{"model": model, "epoch": epoch}`
(also set entry by entry before the save: `checkpoint = {}`, `checkpoint["model"] = model`). A
name none of whose
assignments makes anything else counts too when one of them builds a module (`model = Net()`
in one branch, `model = torch.load(path)` in the other) or when a method only modules have is
called on it (`model.parameters()`: a model passed in as a parameter; `model.train()` with no
argument, on a name that says it holds a model); so does `self.model`, given its value from a
parameter (or by a base class of another module: hedwig's trainers; or never in a root class,
whose subclasses set it: a `BaseNet(object)` calling `self.model.parameters()`), when the class
calls such a method on it or switches its mode (`self.model.train()` with no argument or a
boolean: biomagdsb's `self.model.train(True)`); and
`torch.save(self, path)` in a method of an `nn.Module` subclass. A project module imported under
the name and then rebound at the top level to the model it makes (awd-lstm-lm's `import model`,
then `model = model.RNNModel(...)`) is that model in the file's functions, which run later, and
below the rebinding at the top level (RE-Net's, in a branch under `if __name__ == "__main__":`).
So is a name unpacked from a call of a function of the file that returns, in that place of its
tuple, a name it uses as a module (`net, optimizer = setup(args)`: boundary-loss). So is
`self.net` set only from a parameter of `__init__` for which every construction of the class in
the file passes a name bound only to modules (`Session(spec, net=net)` after `net =
nn.DataParallel(Net())`), also moved on its way into a dict (`{"network": self.net.cpu()}`).
So is `agent.model`, where `agent` is bound only to instances of a plain class of the file whose
methods give `self.model` a module each time or reload it with `torch.load` (rlcode/per's
`torch.save(agent.model, path)`), and an entry named for a model (`state["model"]`) that the same
function moves with a bare `.cpu()` or `.cuda()` statement or calls a module's method on
(r2d2's torchnet hook: `state["model"].cpu()`, then the save). So is a name bound to what a
function of the file hands back of a module it is given (`trained_rnn = train_rnn(rnn, ...)`,
whose every `return` gives back `rnn`).
Not in a project that
loads with `weights_only=False` somewhere (as Ultralytics does): whole modules are then its
checkpoint format, chosen on purpose. Nor a parameter its function's docstring types as data
(`model (dict): ...`: asteroid's publisher). Nor a model whose class a file of the project allows in
safe loads (`torch.serialization.safe_globals([Net, ...])`, as PyTorch's own examples do). Nor
a save that speaks of pruning (its arguments, the function, class or file around it:
`torch.save(model, "yolov3-prune-full.pth")` in `tools/prune.py`): a model whose channels were
pruned no longer matches what its class builds, and pickling it whole keeps its new shape.

## Why is this bad?
Saving a module pickles the object itself: the file stores a reference to the class by its
import path (`my_project.models.Net`) and the attributes of the instance. Loading it later needs
the very same code at the very same import path; renaming a file, moving the class or changing
`__init__` breaks every old checkpoint. Since PyTorch 2.6 `torch.load` defaults to
`weights_only=True`, which refuses such files altogether. The `state_dict()` is a plain dict of
tensors: portable, loadable with `weights_only=True`, and independent of how the code evolves.

## Symptoms
Loading the file elsewhere fails with `AttributeError: Can't get attribute 'Net' on <module
'__main__'>` or `ModuleNotFoundError: No module named 'models'`; on PyTorch 2.6 and later,
`_pickle.UnpicklingError: Weights only load failed ... Unsupported global: GLOBAL
torch.nn.modules.linear.Linear was not an allowed global by default`. Once the class has
changed, `torch.load` itself fails in a module's `__getattr__`: `AttributeError: 'Net' object
has no attribute 'head'`.

## Fix safety
The fix saves `model.state_dict()` instead of `model`. It is unsafe: the code that loads the file
must change too (build the model, then `model.load_state_dict(torch.load(path))`).
""",
        "zh": """
## What it catches
`torch.save(model, path)`，且 `model` 已知是一个 `nn.Module`（由 `torch.nn` 中的类、本文件或项目中其他模块的
`nn.Module` 子类、`timm.create_model`、torchvision 模型等创建，或者参数的类型注解就是这样的类：
`critic: Critic`，保存到 `self` 上之后也一样；它的 `copy.deepcopy`；移动后的它（`model.cpu()`）；
名字表明是模型的值的 `model.module`，
即 DataParallel 或 DDP 包装的模块）；也包括保存内容中的模块：
`[model, optimizer]` 的元素或 `{"model": model, "epoch": epoch}` 的值（也包括保存前逐项填入的：
`checkpoint = {}`、`checkpoint["model"] = model`）。一个名字的各次赋值都不产生别的东西，
且其中一次构建了模块（一个分支里 `model = Net()`，另一个分支里 `model = torch.load(path)`），或在它上面调用了
只有模块才有的方法（`model.parameters()`：作为参数传入的模型；名字表明是模型时，也包括不带参数的
`model.train()`）时，也算在内；`self.model` 的值来自参数
（或由另一个模块中的基类赋值，例如 hedwig 的 trainer；或者在一个只读取它、从不给它赋值的根类里，
由子类赋值，例如 `BaseNet(object)`），且类在它上面调用这类方法或切换它的模式
（不带参数或带布尔参数的 `self.model.train()`，如 biomagdsb 的 `self.model.train(True)`）时同样算在内；
`nn.Module` 子类的方法里的
`torch.save(self, path)` 同样报告。以某个名字导入的项目模块，若随后在顶层被重新赋值为它创建的模型（awd-lstm-lm 的
`import model` 之后 `model = model.RNNModel(...)`），在之后才运行的本文件函数里就是那个模型，在顶层重新赋值之后的代码里
也是（RE-Net 在 `if __name__ == "__main__":` 下某个分支里重新赋值）。从本文件函数调用的结果中解包出来的名字，
若该函数返回的元组在这个位置上是一个它当作模块使用的名字（`net, optimizer = setup(args)`：boundary-loss），同样算在内。
只由 `__init__` 的某个参数赋值的 `self.net`，如果文件中该类的每次构造都给这个参数传入只绑定到模块的名字
（`net = nn.DataParallel(Net())` 之后 `Session(spec, net=net)`），也算模块，移动后放进字典
（`{"network": self.net.cpu()}`）同样算在内。
`agent` 只绑定到本文件某个普通类的实例、且该类的方法每次都给 `self.model` 赋一个模块（或用 `torch.load`
重新加载）时，`agent.model` 也算模块（rlcode/per 的 `torch.save(agent.model, path)`）；名字表明是模型的条目
（`state["model"]`），若同一函数用单独一条 `.cpu()` 或 `.cuda()` 语句移动它，或在它上面调用模块的方法，
也算模块（r2d2 的 torchnet 钩子：先 `state["model"].cpu()`，再保存）。本文件函数把传给它的模块原样交回时，
接收返回值的名字也算模块（`trained_rnn = train_rnn(rnn, ...)`，它的每个 `return` 都返回 `rnn`）。
项目中某处用 `weights_only=False`
加载时不报告：那时整个模块就是它有意选择的 checkpoint 格式（例如 Ultralytics）。函数的文档字符串把该参数
写成数据类型（`model (dict): ...`，asteroid 的 publisher）时不报告。项目中某个文件用
`torch.serialization.safe_globals([Net, ...])` 允许该模型的类参与安全加载时也不报告（例如 PyTorch 官方示例）。
与剪枝有关的保存也不报告（参数、所在的函数、类或文件名中提到剪枝：
`tools/prune.py` 里的 `torch.save(model, "yolov3-prune-full.pth")`）：通道被剪枝后的模型已经和它的类构造出的结构
不一致，整个保存才能留住新的结构。

## Why is this bad?
保存模块时 pickle 的是对象本身：文件里记录的是类的导入路径（如 `my_project.models.Net`）和实例的属性。
以后加载时，必须在完全相同的导入路径下有完全相同的代码；改个文件名、挪一下类、改一下 `__init__`，
之前的所有 checkpoint 都会加载失败。PyTorch 2.6 起 `torch.load` 默认 `weights_only=True`，
会直接拒绝这种文件。`state_dict()` 只是一个张量字典：可移植，能用 `weights_only=True` 安全加载，
也不受代码后续改动的影响。

## Symptoms
在别处加载时报 `AttributeError: Can't get attribute 'Net' on <module '__main__'>` 或
`ModuleNotFoundError: No module named 'models'`；PyTorch 2.6 及以上版本则报
`_pickle.UnpicklingError: Weights only load failed ... Unsupported global: GLOBAL
torch.nn.modules.linear.Linear was not an allowed global by default`。类改变之后，`torch.load`
本身会在模块的 `__getattr__` 中失败：`AttributeError: 'Net' object has no attribute 'head'`。

## Fix safety
修复会把保存的对象从 `model` 改成 `model.state_dict()`。它是不安全的：加载这个文件的代码也必须
跟着改（先构建模型，再 `model.load_state_dict(torch.load(path))`）。
""",
    },
    example="""
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
torch.save(model, "model.pt")
""",
    use_instead="""
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
torch.save(model.state_dict(), "model.pt")
""",
)


@PITFALL.static(ast.Call, names={"save"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    saved = argument(call, 0, "obj")  # also `torch.save(obj=model, ...)`
    if saved is None or ctx.qualname(call.func) != "torch.save":
        return
    if ctx.project.has("weights_only=False"):
        return  # the project loads pickled objects on purpose: whole modules are its format
    if any(ctx.project.allowed_in_safe_loads(name) for name in built_from(saved, ctx)):
        return  # loaded with its class allowed in `torch.serialization.safe_globals`
    if _weights_saved_otherwise(call, saved, ctx):
        return  # `if save_weights_only: ...state_dict() else: torch.save(model)`: a choice
    if _pruned(call, ctx):
        return  # a pruned model's layers no longer match its class: pickled on purpose
    if not _is_module(saved, ctx):
        inner = _module_inside(saved, ctx)
        if inner is not None:
            inner = _unmoved(inner, ctx)  # `self.net.cpu()`: save `self.net.state_dict()`
            module = _wrapped(inner, ctx.text(inner))
            yield ctx.finding(
                PITFALL, call, "inside", module=module, saved=shorten(ctx.text(saved))
            )
        return
    module = ctx.text(saved)
    fix = None
    if "\n" not in module:
        title = {lang: text.format(module=module) for lang, text in PITFALL.fix_title.items()}
        fix = ctx.fix(
            PITFALL,
            "unsafe",
            ctx.replace(saved, f"{_wrapped(saved, module)}.state_dict()"),
            title=title,
        )
    yield ctx.finding(PITFALL, call, fix=fix, module=module)


def _pruned(call: ast.Call, ctx: Context) -> bool:
    """The save speaks of pruning: in its arguments (`"yolov3-prune-full.pth"`, `pruned_model`),
    the function or class around it, or the file's name (`tools/prune.py`). Channel pruning
    leaves layers whose shapes the class's constructor no longer builds, so the whole module
    is the way to keep the new architecture."""
    function, cls = ctx.enclosing_function(), ctx.enclosing_class()
    texts = [ctx.text(call), ctx.path.rsplit("/", 1)[-1]]
    texts += [scope.name for scope in (function, cls) if scope is not None]  # type: ignore[attr-defined]
    return any("prun" in text.lower() for text in texts)


def _weights_saved_otherwise(call: ast.Call, saved: ast.AST, ctx: Context) -> bool:
    """The save is in one branch of an `if` whose other branch saves the same object's
    `state_dict()`: saving it whole is an option the code offers on purpose (DeepCTR's
    Keras-like `ModelCheckpoint(save_weights_only=False)`); or in one `case` of a `match` another
    case of which does (tianshou's persistence modes)."""
    found = index_of(ctx, call)
    text = ctx.text(saved)
    for node, child in lineage(call, found.parents):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        if type(node) is ast.Match and any(  # tianshou's `case Mode.POLICY_STATE_DICT:`
            case is not child and text in _weights_saved_in(ctx, case, "body")
            for case in node.cases
        ):
            return True
        if type(node) is ast.If and child is not node.test:
            other = "orelse" if child in node.body else "body"
            if text in _weights_saved_in(ctx, node, other) and not _always_taken(
                node, other == "orelse", ctx
            ):
                return True
    return False


def _always_taken(owner: ast.If, in_body: bool, ctx: Context) -> bool:
    """The branch is the one every call takes: the test is a parameter (or `not` one) whose
    constant default selects it and that no call in the file sets (`def save(model,
    full=True): if not full: ...state_dict() else: torch.save(model, ...)`, called
    `save(cnn)`: a Kaggle notebook's only save pickles the whole model)."""
    test, negated = owner.test, False
    if type(test) is ast.UnaryOp and type(test.op) is ast.Not:
        test, negated = test.operand, True
    function = ctx.enclosing_function()
    if type(test) is not ast.Name or function is None or not is_parameter(function, test.id):
        return False
    default = constant_default_kept(ctx, function, test.id)  # type: ignore[arg-type]
    if default is None:
        return False
    runs_body = bool(default.value) != negated
    return runs_body == in_body


@per_file
def _weights_saved_in(ctx: Context, owner: ast.If | ast.match_case, side: str) -> frozenset[str]:
    """The objects (as written) whose `state_dict()` one branch of `owner` saves; read once."""
    found = index_of(ctx, owner)
    saved = set()
    for statement in getattr(owner, side):
        for save in found.calls_named(statement, ("save",)):
            weights = argument(save, 0, "obj")
            if (
                isinstance(weights, ast.Call)
                and ctx.method_name(weights) == "state_dict"
                and isinstance(weights.func, ast.Attribute)
            ):
                saved.add(ctx.text(weights.func.value))
    return frozenset(saved)


def _module_inside(saved: ast.AST, ctx: Context) -> ast.AST | None:
    """A module held in what is saved: an element of `[model, optimizer]`, a value of
    `{"model": model, "epoch": epoch}`, also through a name bound only to such a literal."""
    if isinstance(saved, ast.Name):
        found = bindings(ctx, scope_of(saved.id, ctx), saved.id)
        if not found or any(b.augmented for b in found):
            return None
        if len(found) != 1:
            return _module_wrapped_in_list(saved.id, found, ctx)
        entry = _module_entry(saved.id, found[0], ctx)
        if entry is not None:
            return entry
        saved = found[0].value
    if isinstance(saved, (ast.List, ast.Tuple)):
        items = saved.elts
    elif isinstance(saved, ast.Dict):
        items = saved.values
    else:
        return None
    # (a module moved on the way in, `"network": self.net.cpu()`, is still the module; so is
    # one branch of a condition on the device, `"net": net.state_dict() if use_cuda else net`
    # of Facial-Expression-Recognition: saved whole on every CPU run. A condition on an
    # option, `if args.whole else`, is the user's choice.)
    chosen = [
        *items,
        *(part for item in items if _on_the_device(item, ctx) for part in (item.body, item.orelse)),
    ]  # type: ignore[attr-defined]
    return next((item for item in chosen if _moved_copy_of_module(item, ctx)), None)


def _on_the_device(item: ast.expr, ctx: Context) -> bool:
    """`a if use_cuda else b`, `a if torch.cuda.is_available() else b`, `a if args.gpu else b`."""
    if type(item) is not ast.IfExp:
        return False
    words = ctx.text(item.test).lower()
    return any(word in words for word in ("cuda", "gpu", "device"))


def _module_entry(name: str, binding, ctx: Context) -> ast.AST | None:
    """`checkpoint = {}`, then `checkpoint["model"] = model` in the block of the save, before
    it (MAttNet's `tools/train.py`): the module an entry is set to."""
    if type(binding.value) is not ast.Dict or binding.value.keys:
        return None
    position = ctx.statement_block()
    if position is None:
        return None
    block, at = position
    for statement in block[:at]:
        if (
            type(statement) is ast.Assign
            and len(statement.targets) == 1
            and type(target := statement.targets[0]) is ast.Subscript
            and type(target.value) is ast.Name
            and target.value.id == name
            and _moved_copy_of_module(statement.value, ctx)
        ):
            return statement.value
    return None


def _module_wrapped_in_list(name: str, found, ctx: Context) -> ast.AST | None:
    """`save_model = actor_critic`, `save_model = copy.deepcopy(actor_critic).cpu()` under an
    `if`, then `save_model = [save_model, ob_rms]` just before the save, in its block: the list
    holds the module (pytorch-a2c-ppo-acktr's `main.py`, and its many forks). Returns the module
    as first bound."""
    position = ctx.statement_block()
    if position is None:
        return None
    block, at = position
    before = [b for b in found if b.node.lineno < block[at].lineno]
    if len(before) < 2:
        return None
    last = before[-1]
    if type(last.value) not in (ast.List, ast.Tuple) or last.node not in block[:at]:
        return None
    if not any(type(item) is ast.Name and item.id == name for item in last.value.elts):  # type: ignore[attr-defined]
        return None
    earlier = [b.value for b in before[:-1]]
    if any(value is None or not _moved_copy_of_module(value, ctx) for value in earlier):
        return None
    return earlier[0]


def _unmoved(value: ast.AST, ctx: Context) -> ast.AST:
    """The module a chain of moves starts from (`self.net` of `self.net.cpu()`)."""
    while type(value) is ast.Call and ctx.method_name(value) in MODULE_MOVES:
        value = value.func.value  # type: ignore[attr-defined]
    return value


def _moved_copy_of_module(value: ast.AST, ctx: Context) -> bool:
    """A module, or a deep copy of one moved (`copy.deepcopy(actor_critic).cpu()`)."""
    while type(value) is ast.Call:
        if ctx.method_name(value) in MODULE_MOVES:
            value = value.func.value  # type: ignore[attr-defined]
        elif (ctx.qualname(value.func) or "") == "copy.deepcopy" and len(value.args) == 1:
            value = value.args[0]
        else:
            break
    return _is_module(value, ctx)


# Methods only an nn.Module has: a name they are called on holds one (optimizers also have
# `state_dict`, `zero_grad` and `load_state_dict`, so those say nothing).
_MODULE_ONLY_METHODS = frozenset(
    "parameters named_parameters modules named_modules children named_children buffers "
    "named_buffers register_buffer register_forward_hook register_forward_pre_hook".split()
)
_BUILTINS = frozenset(dir(builtins))
# What a name bound to one of these holds is no module.
_NOT_MODULES = frozenset(
    {Kind.TENSOR, Kind.NDARRAY, Kind.OPTIMIZER, Kind.SCHEDULER, Kind.LOADER, Kind.SAMPLER}
)


def _is_module(expr: ast.AST, ctx: Context) -> bool:
    """`expr` holds an nn.Module: by how it was made, by every branch of `a if c else b`,
    or, for a name, by how the code uses it (see `_used_as_module`)."""
    if ctx.kind_of(expr) is Kind.MODULE:
        return True
    moved = _unmoved(expr, ctx)
    if moved is not expr and isinstance(moved, ast.Name):
        # A module's move returns the module (pytorch-kaggle-starter's `torch.save(model.cpu(),
        # fpath)` in `save_model(model, fpath)`); a tensor's returns a tensor: asked of the name.
        return _is_module(moved, ctx)
    if isinstance(expr, ast.Name) and expr.id == "self":  # `torch.save(self, path)` in a model
        cls = ctx.enclosing_class()
        return cls is not None and ctx.is_module_class(cls)
    if isinstance(expr, ast.IfExp):  # `net.module if use_cuda else net`
        return _is_module(expr.body, ctx) and _is_module(expr.orelse, ctx)
    if type(expr) is ast.Call and len(expr.args) == 1 and not expr.keywords:
        # A deep copy of a module is one (dsb2018_topcoders' `deepcopy(model.module)`).
        return (ctx.qualname(expr.func) or "") == "copy.deepcopy" and _is_module(expr.args[0], ctx)
    if type(expr) is ast.Attribute and expr.attr == "module":
        # What DataParallel or DDP wraps, of a value named as a model (`model.module`,
        # `self.estimator.model.module`).
        return names_a_model((dotted_name(expr.value) or "").rpartition(".")[2])
    if isinstance(expr, ast.Name) and (
        _used_as_module(expr.id, ctx)
        or _model_parameter(expr.id, ctx)
        or _handed_a_module(expr.id, ctx)
        or _handed_back_module(expr.id, ctx)
    ):
        return True
    if is_self_attribute(expr):
        cls = ctx.enclosing_class()
        if cls is not None and constructed_with(ctx, cls, expr.attr, Kind.MODULE):  # type: ignore[attr-defined]
            return True  # `Session(spec, net=net)`, after `net = nn.DataParallel(Net())`
    if is_self_attribute(expr) and names_a_model(expr.attr):  # type: ignore[attr-defined]
        cls = ctx.enclosing_class()
        if cls is not None and _attribute_used_as_module(ctx, cls, expr.attr):  # type: ignore[attr-defined]
            return True
    if type(expr) is ast.Attribute and _instance_attribute_module(expr, ctx):
        return True
    if type(expr) is ast.Subscript and _model_entry_moved(expr, ctx):
        return True
    return _weights_saved_too(expr, ctx)


def _model_entry_moved(entry: ast.Subscript, ctx: Context) -> bool:
    """`state['model']`, an entry named for a model, that the same function moves with a bare
    `.cpu()` or `.cuda()` as a statement of its own, or calls a method only a module has on
    (r2d2's torchnet hook: `state['model'].cpu()`, `torch.save(state['model'], path)`, then
    `state['model'].cuda()`): a module, moved in place."""
    key = entry.slice
    if not (type(key) is ast.Constant and type(key.value) is str and names_a_model(key.value)):
        return False
    scope = ctx.enclosing_function() or ctx.tree
    text = ctx.text(entry)
    found = index_of(ctx, scope)
    for call in found.calls_named(scope, ("cpu", "cuda", *_MODULE_ONLY_METHODS, *_MODE_SWITCHES)):
        func = call.func
        if type(func) is not ast.Attribute or ctx.text(func.value) != text:
            continue
        if func.attr in ("cpu", "cuda"):
            if not call.args and not call.keywords and type(found.parents.get(call)) is ast.Expr:
                return True
        elif _only_a_module_s(call):
            return True
    return False


def _handed_back_module(name: str, ctx: Context) -> bool:
    """`trained_rnn = train_rnn(rnn, ...)`, where the function of the file hands back the `rnn`
    it is given and `rnn` is a module (the Udacity TV-script project's training script)."""
    found = bindings(ctx, scope_of(name, ctx), name)
    if not found:
        return False
    for binding in found:
        value = binding.value
        if type(value) is not ast.Call or binding.augmented:
            return False
        given = next(
            (
                argument
                for argument in value.args
                if type(argument) is ast.Name
                and argument.id != name
                and hands_back(ctx, value, argument.id)
            ),
            None,
        )
        if given is None or not _is_module(given, ctx):
            return False
    return True


def _instance_attribute_module(expr: ast.Attribute, ctx: Context) -> bool:
    """`agent.model`, where `agent` is bound in its scope only to instances of one class of the
    file whose methods give `self.model` a module each time, or reload it (rlcode/per's
    `torch.save(agent.model, path)` after `agent = DQNAgent(...)`, whose `__init__` builds
    `self.model = DQN(...)` or loads it with `torch.load`)."""
    if type(expr.value) is not ast.Name:
        return False
    found = bindings(ctx, scope_of(expr.value.id, ctx), expr.value.id)
    if not found or any(
        type(b.value) is not ast.Call or type(b.value.func) is not ast.Name for b in found
    ):
        return False
    names = {b.value.func.id for b in found}  # type: ignore[union-attr]
    cls = ctx.local_class(names.pop()) if len(names) == 1 else None
    if cls is None or ctx.is_module_class(cls):
        return False  # a module's own attribute: a layer, not the model to save
    values = attribute_values(ctx, cls, expr.attr)
    modules = [value for value in values if ctx.kind_of(value) is Kind.MODULE]
    return bool(modules) and all(
        value in modules
        or (ctx.qualname(value.func) if type(value) is ast.Call else "") == "torch.load"
        for value in values
    )


@per_file
def _attribute_used_as_module(ctx: Context, cls: ast.ClassDef, attr: str) -> bool:
    """`self.<attr>`, named for a model, is given its value only from a parameter or by what
    cannot be told from a module, and the class calls a method only a module has on it
    (pytorch-wavenet's trainer: `self.model = model`, `self.model.parameters()` for the
    optimizer, then `torch.save(self.model, path)`)."""
    values = attribute_values(ctx, cls, attr)
    if any(
        not isinstance(value, (ast.Name, ast.Call, ast.Attribute))
        or isinstance(value, ast.Call)
        and _makes_no_module(value, attr, ctx)
        or ctx.kind_of(value) in _NOT_MODULES
        for value in values
    ):
        return False
    # Never given a value: not this model's class, unless a base of another module gives it one
    # or, in a root class, subclasses do, the class asking its parameters (a mode switch alone
    # is no proof there: many objects have an `eval()`).
    methods = _MODULE_ONLY_METHODS | _MODE_SWITCHES
    if not values and not _base_of_another_file(ctx, cls):
        if not _a_root_class(cls):
            return False
        methods = _MODULE_ONLY_METHODS
    found = index_of(ctx, cls)
    return any(
        isinstance(call.func, ast.Attribute)  # not a function's own `train(...)`
        and (
            is_self_attribute(call.func.value)
            and call.func.value.attr == attr  # type: ignore[attr-defined]
            or _alias_of_attribute(ctx, call.func.value, attr, found.scopes[found.number[call]])
        )
        and _only_a_module_s(call)
        for call in found.calls_named(cls, methods)
    )


def _alias_of_attribute(ctx: Context, expr: ast.AST, attr: str, scope: ast.AST | None) -> bool:
    """`expr` is a name its function binds only to `self.<attr>` (quickNAT's solver: `model,
    optim, scheduler = self.model, self.optim, self.scheduler`, then `model.train()`)."""
    if type(expr) is not ast.Name or not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    found = bindings(ctx, scope, expr.id)
    return bool(found) and all(
        is_self_attribute(b.value) and b.value.attr == attr  # type: ignore[union-attr]
        for b in found
    )


# `self.model.train()`, `model.eval()` with no argument, on what is named for a model: a
# module's mode switches (a wrapper's `train(X, y)` takes data).
_MODE_SWITCHES = frozenset({"train", "eval"})


def _only_a_module_s(call: ast.Call) -> bool:
    """A call of a method only a module has (of _MODULE_ONLY_METHODS, or a mode switch with
    no argument or a boolean: biomagdsb's `self.model.train(True)`)."""
    method = call.func.attr  # type: ignore[attr-defined]
    if method in _MODULE_ONLY_METHODS or not call.args and not call.keywords:
        return True
    return (
        method == "train"
        and not call.keywords
        and len(call.args) == 1
        and type(call.args[0]) is ast.Constant
        and type(call.args[0].value) is bool
    )


def _base_of_another_file(ctx: Context, cls: ast.ClassDef) -> bool:
    """The class derives from a class no class of this file defines (hedwig's
    `ClassificationTrainer(Trainer)`: the base, in another module, sets `self.model`)."""
    defined = {node.name for node in ctx.tree.body if isinstance(node, ast.ClassDef)}
    return any(
        isinstance(base, ast.Name) and base.id not in defined and base.id not in _BUILTINS
        for base in cls.bases
    )


def _a_root_class(cls: ast.ClassDef) -> bool:
    """A class with no base but `object`, whose own code never sets the attribute it reads: its
    subclasses do (Bayesian-Neural-Networks' `BaseNet`, whose `save` pickles `self.model` that
    each model's subclass builds)."""
    return all(isinstance(base, ast.Name) and base.id == "object" for base in cls.bases)


def _model_parameter(name: str, ctx: Context) -> bool:
    """A parameter of the enclosing function whose name says it holds a model, that the
    function never rebinds, not annotated as something else, and for which no call in this
    file passes weights or a literal (`def save_checkpoint(model, path): torch.save(model,
    path)`, called from the training script: darts, TCN)."""
    function = ctx.enclosing_function()
    if function is None or not names_a_model(name) or not is_parameter(function, name):
        return False
    if ctx.project.has(WEIGHTS_NAME + name):
        return False  # the project calls weights so (`best_model = model.state_dict()`)
    parameter = unrebound_parameter(ctx, function, name)  # not `model = model.state_dict()`
    if parameter is None and _only_unwrapped(ctx, function, name):
        # topaz's `save_model`: `if type(model) is nn.DataParallel: model = model.module`
        parameter = next(
            a
            for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)
            if a.arg == name
        )  # type: ignore[attr-defined]
    if parameter is None or parameter.annotation is not None:
        return False  # annotated, and not as a module (`_is_module` read that first)
    if _documented_as_data(function, name):
        return False
    return not any(_no_module_passed(value, ctx) for _, value in passed_values(ctx, function, name))


def _only_unwrapped(ctx: Context, function: ast.AST, name: str) -> bool:
    """The parameter `name` is rebound only to what a DataParallel wrapper holds (`model =
    model.module`): the same model, unwrapped."""
    found = bindings(ctx, function, name) or ()
    rebound = [b for b in found if type(b.node) is not ast.arg]
    return bool(rebound) and all(
        not b.augmented
        and type(b.value) is ast.Attribute
        and b.value.attr == "module"
        and type(b.value.value) is ast.Name
        and b.value.value.id == name
        for b in rebound
    )


# A parameter's type in its function's docstring: `model (dict): ...` (Google style) or
# `model : dict` (NumPy style).
_DOCUMENTED_TYPE = r"^[ \t]*\**{name}[ \t]*(?:\(([^)\n]*)\)[ \t]*:|:[ \t]*([^\n]*))"
# Types that are no module.
_DATA_TYPES = frozenset("dict ordereddict mapping str string path list tuple".split())


def _documented_as_data(function: ast.AST, name: str) -> bool:
    """The function's docstring gives the parameter a type that is no module: asteroid's
    `zenodo_upload(model, ...)`, whose `model (dict):` is the package it publishes."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    docstring = ast.get_docstring(function, clean=False)
    if not docstring or name not in docstring:
        return False
    match = re.search(_DOCUMENTED_TYPE.format(name=re.escape(name)), docstring, re.MULTILINE)
    if match is None:
        return False
    words = re.findall(r"[a-z]+", (match.group(1) or match.group(2) or "").lower())
    return bool(words) and words[0] in _DATA_TYPES


def _handed_a_module(name: str, ctx: Context) -> bool:
    """A parameter of the enclosing module-level function, never rebound in it, for which every
    call in this file and every start of it in a new process (`mp.Process(target=train,
    args=(rank, local_policy, ...))`: A3C's workers) hands a name that its own scope binds only
    to built modules (`local_policy = Policy(...)`)."""
    function = ctx.enclosing_function()
    parameter = unrebound_parameter(ctx, function, name)
    if function is None or parameter is None or parameter.annotation is not None:
        return False
    called = passed_by_every_call(ctx, function, name)
    started = started_with(ctx, function, name)
    if called is None and passed_values(ctx, function, name):
        return False  # some call leaves it at its default
    handed = (*(called or ()), *started)
    return bool(handed) and all(bound_only_to(ctx, value, Kind.MODULE) for value in handed)


def _no_module_passed(value: ast.AST, ctx: Context) -> bool:
    """What a call passes is surely no module: weights (`model.state_dict()`), a literal, a
    tensor or another known kind that is not a module."""
    if isinstance(value, (ast.Constant, ast.Dict, ast.List, ast.Tuple, ast.Set, ast.JoinedStr)):
        return True
    if isinstance(value, ast.Call) and ctx.method_name(value) == "state_dict":
        return True
    return ctx.kind_of(value) in _NOT_MODULES


def _weights_saved_too(expr: ast.AST, ctx: Context) -> bool:
    """`torch.save(trainer.model.state_dict(), a)` then `torch.save(trainer.model, b)` in the
    same function, the name saying it holds a model (EDSR's `utils.py`): the object whose
    weights are saved beside it."""
    last = expr.attr if isinstance(expr, ast.Attribute) else getattr(expr, "id", None)
    function = ctx.enclosing_function()
    if last is None or function is None or not names_a_model(last):
        return False
    text = ctx.text(expr)
    for call in index_of(ctx, function).calls_named(function, ("save",), local=True):
        weights = call.args[0] if call.args else None
        if (
            isinstance(weights, ast.Call)
            and ctx.method_name(weights) == "state_dict"
            and ctx.qualname(call.func) == "torch.save"
            and ctx.text(weights.func.value) == text
        ):
            return True
    return False


def _used_as_module(name: str, ctx: Context) -> bool:
    """In the scope that binds `name`, none of its assignments makes anything but a module
    (or what cannot be told), and either one builds a module (`model = Net()` in one branch,
    `model = torch.load(path)` in the other; `net, optimizer = setup(args)` where the file's
    `setup` returns a module in that place) or a method only a module has is called on it
    (`model.parameters()`: a parameter, or a model from a function of another file; on a name
    that says it holds a model, `model.train()` with no argument too)."""
    return _used_as_module_in(ctx, scope_of(name, ctx), name, follow=True)


def _used_as_module_in(ctx: Context, scope: ast.AST, name: str, follow: bool) -> bool:
    """`_used_as_module` in `scope`; `follow`: the name is read here (not in a function the
    file calls), and an unpacked call of the file's functions is followed into them."""
    found = bindings(ctx, scope, name)
    if not found:
        return False
    builds = False
    for binding in found:
        value = binding.value
        if value is None:
            if follow and _unpacked_module(ctx, binding.node, scope):
                builds = True
            if isinstance(binding.node, (ast.arg, ast.Name)):
                continue
            if (
                follow
                and scope is ctx.tree
                and (
                    import_replaced(ctx, binding, name)
                    if ctx.enclosing_function() is not None
                    else import_rebound_before(ctx, binding, name, ctx.ancestors[-1].lineno)
                )
            ):
                continue  # `import model`, then `model = model.RNNModel(...)`: read later
            return False  # an import, a def, a class

        if binding.augmented or not isinstance(
            value, (ast.Call, ast.Name, ast.Attribute, ast.Subscript, ast.IfExp)
        ):
            return False  # a literal, an arithmetic result
        if isinstance(value, ast.Call) and _makes_no_module(value, name, ctx):
            return False
        kind = ctx.kind_of(value)
        if kind in _NOT_MODULES:
            return False
        builds = builds or kind is Kind.MODULE
    methods = _MODULE_ONLY_METHODS | _MODE_SWITCHES if names_a_model(name) else _MODULE_ONLY_METHODS
    return builds or any(
        isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == name
        and _only_a_module_s(call)
        for call in index_of(ctx, scope).calls_named(scope, methods, local=True)
    )


def _unpacked_module(ctx: Context, target: ast.AST, scope: ast.AST) -> bool:
    """`target` is a name unpacked from a call of a top-level function of the file (`net,
    optimizer, device = setup(args)`: boundary-loss) each of whose `return`s hands back a tuple
    with, in that place, a name that function uses as a module."""
    if type(target) is not ast.Name:
        return False
    found = index_of(ctx, scope)
    unpacked = found.parents.get(target)
    statement = found.parents.get(unpacked) if type(unpacked) is ast.Tuple else None
    if not (
        type(statement) is ast.Assign
        and statement.targets == [unpacked]
        and type(statement.value) is ast.Call
        and type(statement.value.func) is ast.Name
    ):
        return False
    function = top_level_functions(ctx).get(statement.value.func.id)
    if function is None or function is scope:
        return False
    place, size = unpacked.elts.index(target), len(unpacked.elts)  # type: ignore[union-attr]
    returns = index_of(ctx, function).local(function, ast.Return)
    return bool(returns) and all(
        type(tuple_ := statement_returned.value) is ast.Tuple  # type: ignore[attr-defined]
        and len(tuple_.elts) == size
        and type(returned := tuple_.elts[place]) is ast.Name
        and _used_as_module_in(ctx, function, returned.id, follow=False)
        for statement_returned in returns
    )


def _makes_no_module(call: ast.Call, name: str, ctx: Context) -> bool:
    """`model.state_dict()`, `list(model.parameters())`, `model = model.half_of_it()`: calls
    whose result is not the module they were given."""
    method = ctx.method_name(call)
    if method == "state_dict":
        return True
    if isinstance(call.func, ast.Name):
        return call.func.id in _BUILTINS and ctx.qualname(call.func) is None
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    if not (isinstance(receiver, ast.Name) and receiver.id == name):
        return False
    # `model = model.RNNModel(...)` of an imported module `model` makes one (an nn.Module
    # class of the project's, when the name's kind has since changed: RE-Net's top level).
    return (
        method not in MODULE_SELF_METHODS
        and ctx.kind_of(call) is not Kind.MODULE
        and not (method is not None and ctx.project.is_module_class(method))
    )


def _wrapped(expr: ast.AST, text: str) -> str:
    """`text` ready to take an attribute: names, attributes and calls as they are, others in ()."""
    return (
        text
        if isinstance(expr, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
        else f"({text})"
    )


# Explaining errors ----------------------------------------------------------------------------

MISSING_CLASS = {
    "en": "The checkpoint is a pickled object whose class `{name}` was defined in `{module}` of "
    "the script that saved it (`torch.save(model, ...)` pickles the class's import path); "
    "the loading program has no `{name}` there.",
    "zh": "checkpoint 是一个 pickle 过的对象，它的类 `{name}` 定义在保存它的脚本的 `{module}` 中"
    "（`torch.save(model, ...)` 会记录类的导入路径）；而加载它的程序里那里没有 `{name}`。",
}
MISSING_MODULE = {
    "en": "The checkpoint is a pickled object whose class lives in the module `{module}` of the "
    "code that saved it (`torch.save(model, ...)` pickles the import path); `{module}` "
    "cannot be imported here.",
    "zh": "checkpoint 是一个 pickle 过的对象，它的类位于保存它的代码中的模块 `{module}` 里"
    "（`torch.save(model, ...)` 会记录导入路径）；而这里无法导入 `{module}`。",
}
MISSING_CLASS_FIX = {
    "en": "Define or import `{name}` in the loading script before `torch.load` (in a notebook "
    "or script run as `__main__`: `from train import {name}`, or define it at top level), "
    "then re-save `model.state_dict()` and load weights into a freshly built model.",
    "zh": "在 `torch.load` 之前于加载脚本中定义或导入 `{name}`（脚本作为 `__main__` 运行或在 "
    "notebook 中时：`from train import {name}`，或在顶层定义它），然后改存 "
    "`model.state_dict()`，以后把权重加载进新构建的模型。",
}
MISSING_MODULE_FIX = {
    "en": "Run from the project that saved the file so that `{module}` is importable (add its "
    "root to `sys.path`), then re-save `model.state_dict()` and load weights into a "
    "freshly built model.",
    "zh": "在保存该文件的项目中运行，使 `{module}` 可以被导入（把项目根目录加入 `sys.path`），"
    "然后改存 `model.state_dict()`，以后把权重加载进新构建的模型。",
}
REFUSED_MODULE = {
    "en": "The checkpoint is a whole pickled model (`{module}.{name}`), saved with "
    "`torch.save(model, ...)`; PyTorch >= 2.6 loads with `weights_only=True` and refuses "
    "to import model classes.",
    "zh": "checkpoint 是用 `torch.save(model, ...)` 保存的整个模型（`{module}.{name}`）；"
    "PyTorch >= 2.6 默认以 `weights_only=True` 加载，拒绝导入模型类。",
}
REFUSED_FIX = {
    "en": "If you trust the file, load it once with `weights_only=False` (or "
    "`torch.serialization.safe_globals([{name}])`) and re-save `model.state_dict()`; load "
    "that into a freshly built model from then on.",
    "zh": "如果信任这个文件，就用 `weights_only=False`（或 "
    "`torch.serialization.safe_globals([{name}])`）加载一次，再改存 `model.state_dict()`；"
    "以后都把它加载进新构建的模型。",
}


def _in_find_class(block) -> bool:
    """A frame of torch.load's unpickler looking a class up (`serialization.py`, `find_class`)."""
    return any(f.function == "find_class" and "serialization.py" in f.path for f in block.frames)


def _unpickling(block) -> bool | None:
    """True when the frames show torch.load / pickle, False when a DataLoader worker or
    multiprocessing unpickles (dataloader-worker-pickle's story), None without frames."""
    if not block.frames:
        return None
    text = " ".join(f"{f.path} {f.function or ''} {f.source or ''}" for f in block.frames)
    if re.search(r"multiprocessing|dataloader|spawn\.py|popen_", text, re.I):
        return False
    return bool(re.search(r"serialization\.pyc?\b|torch\.load|pickle|\bload\(|_load\b", text))


@PITFALL.error_check(types=("AttributeError",), words=("can't get attribute",))
def missing_class(block, report) -> Clue | None:
    found = re.search(
        r"Can't get attribute '(?P<name>\w+)' on <module '(?P<module>[\w.]+)'", block.message
    )
    if found is None or found["module"].partition(".")[0] == "torch":
        # torch's own `_rebuild_tensor_v2` missing: a file from a newer torch, not a class.
        return None
    loading = _unpickling(block)
    if loading is False or (loading is None and found["module"] == "__mp_main__"):
        # `__mp_main__`: a spawned child re-importing the script, not the program that loads a
        # file; without torch.load's frames it is a DataLoader worker's lookup.
        return None
    confidence = 0.95 if loading else (0.8 if report.search(r"torch\.load") else 0.6)
    return Clue(confidence, MISSING_CLASS, MISSING_CLASS_FIX, found.groupdict())


STALE_CLASS = {
    "en": "`torch.load` is rebuilding a pickled module object of class `{cls}`: the file holds "
    "a whole model, not a state dict (`torch.save(model, ...)`, or a bound method saved "
    "without its call, `torch.save(model.state_dict, ...)`), and the rebuilt `{cls}` has no "
    "`{attr}` that the pickle refers to (the class changed since the file was saved, or a "
    "pickled method names it).",
    "zh": "`torch.load` 正在重建一个 pickle 过的 `{cls}` 类模块对象：文件里存的是整个模型而不是 "
    "state dict（`torch.save(model, ...)`，或保存了没有调用的绑定方法 "
    "`torch.save(model.state_dict, ...)`），而重建出的 `{cls}` 没有 pickle 所引用的 `{attr}`"
    "（保存文件之后这个类改变了，或者被 pickle 的方法引用了它）。",
}
STALE_CLASS_FIX = {
    "en": "Save `model.state_dict()` (with the call) and load it into a freshly built model; "
    "to rescue this file, load it with the exact code version that saved it and re-save its "
    "`state_dict()`.",
    "zh": "保存 `model.state_dict()`（要调用它），再把它加载进新构建的模型；要救回这个文件，就用保存它时"
    "的那一版代码加载，再重新保存它的 `state_dict()`。",
}
_MODULE_ATTRIBUTE = lazy_compile(r"'(?P<cls>\w+)' object has no attribute '(?P<attr>\w+)'")


@PITFALL.error_check(types=("AttributeError",), words=("object has no attribute",))
def stale_class(block, report) -> Clue | None:
    """A module's `__getattr__` failing inside `torch.load`'s unpickler: what is unpickled is
    an nn.Module, looked up on a class that no longer matches it."""
    found = _MODULE_ATTRIBUTE.search(block.message)
    if found is None or not _unpickling(block):
        return None
    last = block.frames[-1]
    if last.function != "__getattr__" or "torch/nn/modules/module.py" not in last.path.replace(
        "\\", "/"
    ):
        return None
    return Clue(0.85, STALE_CLASS, STALE_CLASS_FIX, found.groupdict())


_MISSING_UNNAMED_MODULE = {
    "en": "The checkpoint is a pickled object whose class lives in a module of the code that "
    "saved it (`torch.save(model, ...)` pickles the import path), and that module cannot be "
    "imported here (the message does not name it: the unpickler's `find_class` failed).",
    "zh": "checkpoint 是一个 pickle 过的对象，它的类位于保存它的代码的某个模块中（`torch.save(model, "
    "...)` 会记录导入路径），而这里无法导入该模块（报错没有给出模块名：反序列化器的 `find_class` "
    "失败了）。",
}

_MISSING_UNNAMED_FIX = {
    "en": "Run from the project that saved the file so that its model modules are importable "
    '(add its root to `sys.path`; `python -c "import torch; torch.load(PATH, '
    'weights_only=False)"` outside the IDE names the module), then re-save '
    "`model.state_dict()` and load weights into a freshly built model.",
    "zh": "在保存该文件的项目中运行，使其模型模块可以被导入（把项目根目录加入 `sys.path`；在 IDE 之外运行 "
    '`python -c "import torch; torch.load(PATH, weights_only=False)"` 可以看到模块名），然后改存 '
    "`model.state_dict()`，以后把权重加载进新构建的模型。",
}


@PITFALL.error_check(
    types=("ModuleNotFoundError", "ImportError"), words=("no module named", "find_class")
)
def missing_module(block, report) -> Clue | None:
    found = re.search(r"No module named '?(?P<module>[\w.]+)'?", block.message)
    if found is None:
        # A bare `ModuleNotFoundError` (an import hook that drops the message, as PyCharm's
        # does) raised under the unpickler's `find_class`.
        if block.message.strip() or not _in_find_class(block):
            return None
        return Clue(0.85, _MISSING_UNNAMED_MODULE, _MISSING_UNNAMED_FIX)
    if found["module"].split(".", 1)[0] == "__torch__":
        return None  # TorchScript's namespace: a `torch.jit.save` archive, for torch.jit.load
    unpickling = _unpickling(block)
    if unpickling:
        confidence = 0.9
    elif unpickling is None and report.search(_LOADING_A_CHECKPOINT):
        confidence = 0.75  # no frames, but the text says a checkpoint was being loaded
    else:
        return None
    return Clue(confidence, MISSING_MODULE, MISSING_MODULE_FIX, {"module": found["module"]})


# torch's serialization.py named in a retold message (`torch\serialization.py No module named
# 'models'`) is the unpickler's own file.
# "Attempting to load the checkpoint throws ModuleNotFoundError: ..." says it in words.
_LOADING_A_CHECKPOINT = lazy_compile(
    r"torch\.load|\bload\w*\b[^\n]{0,40}\.pth?\b|torch[\\/]serialization\.py"
    r"|\b[Ll]oad(?:s|ed|ing)?\b[^\n]{0,40}\bcheckpoints?\b"
)

SOURCELESS_CLASS = {
    "en": "The file holds a whole pickled model (`torch.save(model, ...)`) whose class was "
    "defined in `__main__`, a notebook or an interactive session; the loading program looks "
    "the class up, and its source, in its own `__main__`, which has no source file for it.",
    "zh": "文件里存的是 pickle 过的整个模型（`torch.save(model, ...)`），它的类定义在 `__main__`、"
    "notebook 或交互式会话中；加载的程序在自己的 `__main__` 里查找这个类及其源码，而那里没有对应的"
    "源文件。",
}
SOURCELESS_CLASS_FIX = {
    "en": "Move the model's class into a module that both programs import (`from model import "
    "Net`), load the file once there and re-save `model.state_dict()`; from then on load "
    "the weights into a freshly built model.",
    "zh": "把模型类移到两个程序都导入的模块中（`from model import Net`），在那里加载一次文件并改存 "
    "`model.state_dict()`；以后把权重加载进新构建的模型。",
}
_SOURCELESS_MAIN = lazy_compile(r"<module '__main__'(?: \(built-in\))?> is a built-in class")
_SERIALIZING = lazy_compile(r"torch\.(?:load|save)\(|serialization\.pyc?\b")
_SCRIPTING = lazy_compile(r"torch[\\/.]jit|torch\.package|torch\.compile|_dynamo")


@PITFALL.error_check(types=("TypeError",), words=("is a built-in class",))
def sourceless_class(block, report) -> Clue | None:
    """`inspect` cannot find the source of a class in `__main__`; with torch.load/save in
    the text (not torch.jit, which reads source in a REPL and fails alike) the class is a
    pickled model's."""
    if not _SOURCELESS_MAIN.search(block.message) or report.search(_SCRIPTING):
        return None
    loading = _unpickling(block)
    if loading is False or not (loading or report.search(_SERIALIZING)):
        return None
    return Clue(0.9 if loading else 0.75, SOURCELESS_CLASS, SOURCELESS_CLASS_FIX)


UNPICKLABLE_PART = {
    "en": "`torch.save(model, ...)` pickles the whole module object, and `{object}` inside it "
    "(a lambda, a hook or a function or class defined inside a function, often in "
    "`__init__`) cannot be pickled.",
    "zh": "`torch.save(model, ...)` 会 pickle 整个模块对象，而其中的 `{object}`（lambda、钩子，"
    "或定义在函数内部、常见于 `__init__` 中的函数或类）无法被 pickle。",
}
UNPICKLABLE_PART_FIX = {
    "en": "Save the weights instead: `torch.save(model.state_dict(), path)`, and load them into "
    "a freshly built model with `model.load_state_dict(torch.load(path))`.",
    "zh": "改为保存权重：`torch.save(model.state_dict(), path)`，以后用 "
    "`model.load_state_dict(torch.load(path))` 加载进新构建的模型。",
}
_UNPICKLABLE = lazy_compile(
    r"Can't pickle local object '?(?:<function )?(?P<object>[^'\s]+)"
    r"|Can't pickle <function (?P<function><lambda>|[\w.]+) at 0x"
)
# The text tells of saving a model: the pickling that failed is torch.save's.
_SAVING_A_MODEL = lazy_compile(
    r"torch\.save\(|_legacy_save|\bsave_model\b|\b[Ss]av(?:e|ing)\s+(?:the\s+|my\s+|a\s+|whole\s+)*model"
)


@PITFALL.error_check(
    types=("AttributeError", "PicklingError", "TypeError"), words=("can't pickle",)
)
def unpicklable_part(block, report) -> Clue | None:
    """A lambda or local function that cannot be pickled, where torch.save is the pickler:
    its frames, or the text around the error telling of saving a model."""
    found = _UNPICKLABLE.search(block.message)
    if found is None:
        return None
    frames = " ".join(f"{f.path} {f.function or ''}" for f in block.frames)
    if re.search(r"multiprocessing|dataloader|spawn\.py|popen_|reduction\.py", frames, re.I):
        return None  # a DataLoader worker's payload: dataloader-worker-pickle
    if re.search(r"serialization\.pyc?\b[^\n]*save|_legacy_save|_save\b", frames):
        confidence = 0.9
    elif report.search(_SAVING_A_MODEL):
        confidence = 0.8
    else:
        return None
    return Clue(
        confidence,
        UNPICKLABLE_PART,
        UNPICKLABLE_PART_FIX,
        {"object": found["object"] or found["function"]},
    )


@PITFALL.error_check(
    types=(),
    words=("weights only load failed", "weightsunpickler error", "unsupported global: global "),
)
def refused_module(block, report) -> Clue | None:
    if not _weights_only.refused(block.message):
        return None
    # torch's message has blank lines: the part naming the global may lie past the block.
    name = _weights_only.unsupported_global(block.message) or report.once(
        _weights_only.unsupported_global_in
    )
    if name is None or _weights_only.kind_of(name) != "module":
        return None
    module, _, short = name.rpartition(".")
    # A library's model class (`ultralytics.nn.tasks.DetectionModel`) is pickled by the
    # library's save format, not the user's `torch.save(model)`: load-weights-only first. So is
    # a torch class loaded where none of the user's code is shown: who pickled it is unknown.
    anyones = _weights_only.anyones_model(name, report.once(user_code_shown))
    confidence = 0.8 if _weights_only.packaged(name) or anyones else 0.95
    return Clue(confidence, REFUSED_MODULE, REFUSED_FIX, {"module": module, "name": short})


@PITFALL.checkpoint
def check_checkpoint(subject) -> Iterator[Finding]:
    listing = subject.listing
    if listing is None or not listing.module_classes:
        return
    weights = listing.weights
    owner = weights.module_class if weights and weights.module_class else listing.module_classes[0]
    # `ckpt fix --trust` is no advice for a file that also holds code to run (load-weights-only).
    hostile = "code" in listing.groups.values()
    yield subject.finding(
        PITFALL,
        "ckpt",
        keys=listing.module_classes,
        repairable=not hostile,
        options=" --trust",
        cls=owner,
    )
