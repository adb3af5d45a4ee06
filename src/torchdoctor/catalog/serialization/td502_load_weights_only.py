"""TD502 load-weights-only: `torch.load(..., weights_only=False)` runs whatever the file says."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from torchdoctor.catalog.sdk import Clue, Context, Finding, Pitfall, lazy_compile, per_file
from torchdoctor.catalog.sdk import weights_only as _weights_only
from torchdoctor.catalog.serialization._reports import user_code_shown

PITFALL = Pitfall(
    code="TD502",
    name="load-weights-only",
    # Off by default in `check`: 31 right, 9 wrong, 10 unsure of 50 findings in 87 untuned
    # corpora (docs/precision.md): a library reloading a file it wrote itself is not a danger,
    # and the checker cannot tell it from a file that comes from outside.
    default=False,
    title={
        "en": "torch.load with weights_only=False can execute arbitrary code",
        "zh": "torch.load 使用 weights_only=False 可能执行任意代码",
    },
    messages={
        "": {
            "en": "`torch.load(..., weights_only=False)` unpickles arbitrary objects and can run any code "
            "hidden in the file: keep it for files you trust, or allow the needed classes with "
            "`torch.serialization.add_safe_globals`",
            "zh": "`torch.load(..., weights_only=False)` 会反序列化任意对象，文件里藏的任何代码都可能被执行："
            "只对可信文件这样做，或者用 `torch.serialization.add_safe_globals` 放行需要的类",
        },
        "old-torch": {
            "en": "`torch.load(...)` without `weights_only=`, in code that also runs on PyTorch "
            "older than 2.6 (it checks the version, line {line}): there the default is a full "
            "unpickle that runs any code hidden in the file; pass `weights_only=True` "
            "(PyTorch >= 1.13), or `weights_only=False` for a file you trust",
            "zh": "`torch.load(...)` 没有传 `weights_only=`，而这段代码也在低于 2.6 的 PyTorch 上运行"
            "（它检查了版本，第 {line} 行）：在那些版本上默认是完整反序列化，文件里藏的任何代码都会被执行；"
            "请传入 `weights_only=True`（PyTorch >= 1.13），对可信的文件则传 `weights_only=False`",
        },
        "ckpt": {
            "en": "`torch.load(weights_only=True)` (the default since torch 2.6) refuses this file: "
            "it needs {globals}, which hold data only: allow exactly these with "
            "`torch.serialization.add_safe_globals`, or write a copy that holds plain values",
            "zh": "`torch.load(weights_only=True)`（torch 2.6 起的默认值）会拒绝这个文件：它需要 "
            "{globals}，它们只保存数据：用 `torch.serialization.add_safe_globals` 只放行这几个，"
            "或者另存一份只含普通值的副本",
        },
        "ckpt-classes": {
            "en": "`torch.load(weights_only=True)` (the default since torch 2.6) refuses this file: "
            "it needs {globals}, classes of your code or of a library that a full unpickle "
            "imports and runs: load it that way only if you trust the file, and write a copy "
            "that holds plain values once",
            "zh": "`torch.load(weights_only=True)`（torch 2.6 起的默认值）会拒绝这个文件：它需要 "
            "{globals}，这些是你的代码或某个库里的类，完整反序列化会导入并运行它们的代码："
            "只有信任这个文件时才这样加载，并一次性另存一份只含普通值的副本",
        },
        "ckpt-dangerous": {
            "en": "DANGER: the pickle holds code to run while loading: {globals}; a full unpickle "
            "(`weights_only=False`) would run it, with your permissions. Do not load this file "
            "with `weights_only=False` and do not allow these with `add_safe_globals`; get the "
            "weights from a source you trust",
            "zh": "危险：pickle 中藏有加载时会执行的代码：{globals}；完整反序列化（`weights_only=False`）"
            "会以你的权限执行它。不要用 `weights_only=False` 加载这个文件，也不要用 "
            "`add_safe_globals` 放行它们；请从可信的来源获取权重",
        },
    },
    fix_hint={
        "en": "For a file you trust, allow exactly the classes it needs: "
        "`torch.serialization.add_safe_globals([...])` or `with "
        "torch.serialization.safe_globals([...]): torch.load(path)`; "
        "`weights_only=False` only for files you trust completely. `torchdoctor ckpt fix` "
        "can rewrite the checkpoint as plain tensors and built-in types.",
        "zh": "对可信的文件，只放行它需要的类：`torch.serialization.add_safe_globals([...])`，或 "
        "`with torch.serialization.safe_globals([...]): torch.load(path)`；只有完全可信的文件"
        "才用 `weights_only=False`。`torchdoctor ckpt fix` 可以把 checkpoint 改写成只含张量和"
        "内置类型的文件。",
    },
    docs={
        "en": """
## What it catches
`torch.load(...)` called with `weights_only=False` written out explicitly.

`torch.load(...)` without `weights_only=` (and without `**kwargs`), in a file that compares the
PyTorch version (`torch.__version__` in a comparison or a `version.parse`, `is_torch_version(`,
`TORCH_VERSION <`...): such code runs on PyTorch older than 2.6 too, where the default is
`False`. A load inside an `except` handler (the fallback for a torch too old to take the flag,
which raises `TypeError`) is not reported. Elsewhere, loading without the flag is not
reported: since PyTorch 2.6 the default is `True`, and the doctor cannot tell which version
the code runs on. TorchFix's TOR102 reports every `torch.load` without `weights_only=`,
including code that only ever runs on PyTorch 2.6 or later, where the call is already safe.

## Why is this bad?
A checkpoint is a pickle. With `weights_only=False`, `torch.load` runs the full unpickler, and a
pickle can call any importable function while it loads: a model file downloaded from the web or
received from a user can delete files or open a shell on your machine. `weights_only=True` only
rebuilds tensors, primitive types and dicts/lists of them, plus classes you allow explicitly.

The reverse trap is why people write `weights_only=False`: on PyTorch 2.6 and later, old
checkpoints that also contain numpy scalars, an `argparse.Namespace` of the training options or
a whole pickled module fail to load with the new default. Prefer allowing exactly those classes
with `torch.serialization.add_safe_globals([...])` (or the `torch.serialization.safe_globals`
context manager), or re-save the checkpoint once as a plain `state_dict`.
`torchdoctor ckpt inspect FILE` lists what a full load of a file would import, without running
it, and tells data (safe to allow) from classes of your code (load only a file you trust) and
from code the pickle would run (`os.system`, `builtins.eval`, `cProfile.run`...): never allow
those and never load the file.

## Symptoms
Without the flag, on PyTorch 2.6 and later: `_pickle.UnpicklingError: Weights only load failed.
... WeightsUnpickler error: Unsupported global: GLOBAL numpy.core.multiarray.scalar was not an
allowed global by default. Please use torch.serialization.add_safe_globals([scalar]) ...`.
Older 2.x releases read `WeightsUnpickler error: Unsupported class
numpy.core.multiarray._reconstruct`. On older versions, loading without the flag warns:
`FutureWarning: You are using torch.load with weights_only=False (the current default value),
which uses the default pickle module implicitly.`

## Known problems
A file you wrote yourself on the same machine is as trusted as your code; there the finding is
a reminder rather than a risk, and `# noqa: TD502` documents the decision. Passing
`weights_only=` raises `TypeError` on PyTorch older than 1.13, which code that still supports
those must keep in mind. The supported versions are read from the checked file only: a
project that allows `torch<2.6` in its requirements, `setup.py` or `pyproject.toml` but never
checks the version in code is not told apart from one that needs torch 2.6.

## References
- https://pytorch.org/docs/stable/notes/serialization.html#weights-only
""",
        "zh": """
## What it catches
显式写了 `weights_only=False` 的 `torch.load(...)` 调用。

在比较了 PyTorch 版本的文件里（比较或 `version.parse` 中的 `torch.__version__`、`is_torch_version(`、
`TORCH_VERSION <` 等）不写 `weights_only=`（也没有 `**kwargs`）的 `torch.load(...)`：这样的代码也会在
低于 2.6 的 PyTorch 上运行，那里的默认值是 `False`。`except` 处理块里的加载（为不接受这个参数、会抛出
`TypeError` 的旧版 torch 准备的后备）不报告。其他地方不写 `weights_only` 的情况不会报告：
PyTorch 2.6 起它默认为 `True`，而静态检查无法知道代码运行在哪个版本上。TorchFix 的 TOR102 会报告每一个
不写 `weights_only=` 的 `torch.load`，包括只在 PyTorch 2.6 及以上运行、本来就安全的代码。

## Why is this bad?
checkpoint 本质是一个 pickle。`weights_only=False` 时 `torch.load` 使用完整的反序列化器，而 pickle
在加载过程中可以调用任意可导入的函数：从网上下载或由用户上传的模型文件，能在你的机器上删文件、
开 shell。`weights_only=True` 只会重建张量、基本类型以及由它们组成的 dict/list，外加你显式放行的类。

人们写 `weights_only=False` 往往是因为反方向的坑：在 PyTorch 2.6 及以上版本，旧 checkpoint 里如果还存了
numpy 标量、训练参数的 `argparse.Namespace` 或者整个 pickle 的模块，用新的默认值就会加载失败。
更好的做法是用 `torch.serialization.add_safe_globals([...])`（或上下文管理器
`torch.serialization.safe_globals`）只放行这些类，或者把 checkpoint 一次性重新保存成纯 `state_dict`。
`torchdoctor ckpt inspect FILE` 可以在不执行的情况下列出完整加载一个文件时会导入哪些东西，并区分
只保存数据的类（可以放行）、你自己代码里的类（只对可信文件这样加载）和 pickle 会执行的代码
（`os.system`、`builtins.eval`、`cProfile.run` 等）：后者绝不要放行，也绝不要加载这个文件。

## Symptoms
不加该参数时，PyTorch 2.6 及以上版本会报：`_pickle.UnpicklingError: Weights only load failed.
... WeightsUnpickler error: Unsupported global: GLOBAL numpy.core.multiarray.scalar was not an
allowed global by default. Please use torch.serialization.add_safe_globals([scalar]) ...`。
较早的 2.x 版本报的是 `WeightsUnpickler error: Unsupported class
numpy.core.multiarray._reconstruct`。更早的版本不加该参数时会警告：
`FutureWarning: You are using torch.load with weights_only=False
(the current default value), which uses the default pickle module implicitly.`

## Known problems
在同一台机器上自己写出的文件和你的代码一样可信；这种情况下该提示只是提醒而非风险，
可以用 `# noqa: TD502` 把这个决定记录下来。在低于 1.13 的 PyTorch 上传 `weights_only=` 会抛出
`TypeError`，仍支持这些版本的代码需要注意。支持的版本只从被检查的文件里读：在依赖声明、`setup.py` 或
`pyproject.toml` 中允许 `torch<2.6`、但代码里从不检查版本的项目，与要求 torch 2.6 的项目无法区分。

## References
- https://pytorch.org/docs/stable/notes/serialization.html#weights-only
""",
    },
    example="""
import torch

checkpoint = torch.load("downloaded.pt", weights_only=False)
""",
    use_instead="""
import argparse

import torch

torch.serialization.add_safe_globals([argparse.Namespace])
checkpoint = torch.load("downloaded.pt", weights_only=True)
""",
)


# Code that compares the PyTorch version it runs on: `torch.__version__` on a line that compares
# or parses it, or a version helper of the usual names.
_VERSION = re.compile(
    r"torch\.__version__|\bis_torch_version\(|\bis_torch_greater|\b(?:TORCH|torch)_VERSION\b"
    r"|\b_?TORCH_GREATER_EQUAL_\d"
)
# A text that `_VERSION` matches contains one of these.
_VERSION_WORDS = ("torch.__version__", "is_torch_", "_VERSION", "TORCH_GREATER_EQUAL_")
_COMPARES = re.compile(r"[<>]|[=!]=|\bif\b|startswith|parse|Version|version_tuple|split")


@PITFALL.static(ast.Call, names={"load"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    flag = next((kw for kw in call.keywords if kw.arg in ("weights_only", None)), None)
    if flag is None:
        given = call.args or any(k.arg == "f" for k in call.keywords)
        if not given or ctx.qualname(call.func) != "torch.load":
            return
        line = _version_check(ctx)
        if line and not _fallback(ctx):
            yield ctx.finding(PITFALL, call, "old-torch", line=line)
        return
    if not (isinstance(flag.value, ast.Constant) and flag.value.value is False):
        return
    if ctx.qualname(call.func) != "torch.load":
        return
    yield ctx.finding(PITFALL, flag)


def _fallback(ctx: Context) -> bool:
    """Inside an `except` handler: the fallback for a torch too old to take `weights_only=`
    (timm's `_torch_load` retries without it on `TypeError`)."""
    return any(type(node) is ast.ExceptHandler for node in ctx.ancestors)


@per_file
def _version_check(ctx: Context) -> int:
    """The first line of the file that compares the PyTorch version; 0 when none does."""
    source = ctx.source
    if not any(word in source for word in _VERSION_WORDS):
        return 0  # the regex costs a scan of the whole file; a literal search much less
    for match in _VERSION.finditer(source):
        start = source.rfind("\n", 0, match.start()) + 1
        end = source.find("\n", match.end())
        text = source[start : end if end >= 0 else len(source)]
        if match.group().startswith("torch.__") and not _COMPARES.search(text):
            continue  # printed or logged, not compared
        return source.count("\n", 0, start) + 1
    return 0


# Explaining errors ----------------------------------------------------------------------------

CAUSES = {
    "numpy": {
        "en": "The checkpoint stores NumPy objects (`{name}`), e.g. a metric or an array "
        "saved next to the weights; PyTorch >= 2.6 loads with `weights_only=True` "
        "and refuses them.",
        "zh": "checkpoint 里存了 NumPy 对象（`{name}`），比如和权重一起保存的指标或数组；"
        "PyTorch >= 2.6 默认以 `weights_only=True` 加载，会拒绝它们。",
    },
    "namespace": {
        "en": "The checkpoint stores the training arguments as an `argparse.Namespace` "
        "(`{name}`); PyTorch >= 2.6 loads with `weights_only=True` and refuses "
        "it.",
        "zh": "checkpoint 里以 `argparse.Namespace`（`{name}`）保存了训练参数；"
        "PyTorch >= 2.6 默认以 `weights_only=True` 加载，会拒绝它。",
    },
    "config": {
        "en": "The checkpoint stores a config object (`{name}`); PyTorch >= 2.6 loads "
        "with `weights_only=True` and refuses it.",
        "zh": "checkpoint 里存了一个配置对象（`{name}`）；PyTorch >= 2.6 默认以 "
        "`weights_only=True` 加载，会拒绝它。",
    },
    "lightning": {
        "en": "The checkpoint stores Lightning's hyperparameters (`{name}`); PyTorch "
        ">= 2.6 loads with `weights_only=True` and refuses them.",
        "zh": "checkpoint 里存了 Lightning 的超参数对象（`{name}`）；PyTorch >= 2.6 默认以 "
        "`weights_only=True` 加载，会拒绝它。",
    },
    "container": {
        "en": "The checkpoint uses `{name}`, which `weights_only=True` (the default "
        "since PyTorch 2.6) does not allow by default.",
        "zh": "checkpoint 用到了 `{name}`，而 `weights_only=True`（PyTorch 2.6 起的默认值）"
        "默认不允许它。",
    },
    "class": {
        "en": "The checkpoint stores `{name}` (an object kept next to the weights); PyTorch "
        ">= 2.6 loads with `weights_only=True` and refuses classes it was not told "
        "to trust.",
        "zh": "checkpoint 里除了权重还存了 `{name}` 的对象；PyTorch >= 2.6 默认以 "
        "`weights_only=True` 加载，会拒绝没有被声明为可信的类。",
    },
    "module": {
        "en": "The checkpoint stores a whole model object (`{name}`), not just its "
        "`state_dict`, and PyTorch >= 2.6 loads with `weights_only=True` "
        "(see `torchdoctor rule whole-module-saved`).",
        "zh": "checkpoint 里存的是整个模型对象（`{name}`），而不只是它的 `state_dict`，"
        "而 PyTorch >= 2.6 默认以 `weights_only=True` 加载"
        "（参见 `torchdoctor rule whole-module-saved`）。",
    },
}
FIX = {
    "en": "If you trust the file, allow the class: "
    "`torch.serialization.add_safe_globals([{short}])` (or the "
    "`torch.serialization.safe_globals([{short}])` context manager), or pass "
    "`weights_only=False` only for files you trust; `torchdoctor ckpt fix` converts such "
    "metadata to plain types once.",
    "zh": "如果信任这个文件，就放行这个类：`torch.serialization.add_safe_globals([{short}])`"
    "（或上下文管理器 `torch.serialization.safe_globals([{short}])`），只有对可信文件才传 "
    "`weights_only=False`；`torchdoctor ckpt fix` 可以把这类元数据一次性转换成普通类型。",
}
# A global that runs code (`posix.system`, `builtins.exec`, `cProfile.run`): the refusal is the
# protection working. Never the allowlist advice of the others.
_DANGEROUS_CAUSE = {
    "en": "The checkpoint asks to call `{name}` while it is loaded: a callable that runs "
    "commands or code, the mark of a malicious or tampered file. `weights_only=True` refused "
    "it, which is what protected you.",
    "zh": "这个 checkpoint 要求在加载时调用 `{name}`：一个会执行命令或代码的可调用对象，"
    "这是恶意或被篡改文件的特征。`weights_only=True` 拒绝了它，正是它保护了你。",
}
_DANGEROUS_FIX = {
    "en": "Do not load this file with `weights_only=False`, and never allow `{short}` with "
    "`add_safe_globals`. Get the checkpoint from a source you trust; "
    "`torchdoctor ckpt inspect FILE` lists what it holds without running it.",
    "zh": "不要用 `weights_only=False` 加载这个文件，也绝不要用 `add_safe_globals` 放行 "
    "`{short}`。请从可信的来源获取 checkpoint；`torchdoctor ckpt inspect FILE` "
    "可以在不执行它的情况下列出其内容。",
}
GENERIC = {
    "en": "PyTorch >= 2.6 loads with `weights_only=True` by default, and the file holds an object "
    "that is not a tensor or a built-in type (the part of the message naming it is not "
    "shown).",
    "zh": "PyTorch >= 2.6 默认以 `weights_only=True` 加载，而文件里有一个既不是张量也不是内置类型的"
    "对象（报错中点名它的那部分没有显示出来）。",
}


_DEFAULT_FLIPPED = {
    "en": "PyTorch >= 2.6 loads with `weights_only=True` by default, and the "
    "file holds an object that is not a tensor or a built-in type.",
    "zh": "PyTorch >= 2.6 默认以 `weights_only=True` 加载，而文件里有一个既不是"
    "张量也不是内置类型的对象。",
}

# The whole text, when no exception line was parsed (pytest's `E` lines, a tool's log).
PITFALL.error(
    r"(?:Weights only load failed|WeightsUnpickler error: Unsupported (?:global|class))"
    r"(?![\s\S]*Unsupported operand)",
    types=(),
    confidence=0.8,
    cause=_DEFAULT_FLIPPED,
)


# The sentence torch >= 2.6 adds to that message, quoted alone in titles and pull requests.
PITFALL.error(
    r"changed the default value of the `?weights_only`? argument in `?torch\.load`? "
    r"from `?False`? to `?True`?",
    types=(),
    confidence=0.8,
    cause=_DEFAULT_FLIPPED,
)


# The sentence that ends that message, left alone where a log or a paste cut the rest: a tool
# that prints the message above its traceback, which was then pasted from that line on.
_DOCS_TAIL = lazy_compile(
    r"Check the documentation of torch\.load to learn more about types accepted by default "
    r"with weights_only"
)


@PITFALL.error_check(types=(), words=("types accepted by default",))
def documentation_tail(block, report) -> Clue | None:
    if not _DOCS_TAIL.search(block.message):
        return None
    if report.search("Unsupported operand"):
        return None  # not a pickle at all: corrupted-checkpoint
    return Clue(0.75, _DEFAULT_FLIPPED)


@PITFALL.error_check(
    types=(),
    words=("weights only load failed", "weightsunpickler error", "unsupported global: global "),
)
def refused_global(block, report) -> Clue | None:
    if not _weights_only.refused(block.message):
        return None
    # torch's message has blank lines: the part naming the global may lie past the block.
    if "Unsupported operand" in block.message or report.search("Unsupported operand"):
        return None  # not a pickle at all: corrupted-checkpoint
    name = _weights_only.unsupported_global(block.message) or report.once(
        _weights_only.unsupported_global_in
    )
    if name is None:
        return Clue(0.85, GENERIC)
    fields = {"name": name, "short": name.rpartition(".")[2]}
    if _weights_only.dangerous(name):
        return Clue(0.95, _DANGEROUS_CAUSE, _DANGEROUS_FIX, fields)
    kind = _weights_only.kind_of(name)
    # A pickled model is whole-module-saved's story first; this entry's fix still applies.
    # Unless a library's class: its own save format pickles it, the load is what to change.
    confidence = 0.95
    if kind == "module" and not _weights_only.packaged(name):
        shown = report.once(user_code_shown)
        confidence = 0.95 if _weights_only.anyones_model(name, shown) else 0.85
    return Clue(confidence, CAUSES[kind], FIX, fields)


@PITFALL.checkpoint
def check_checkpoint(subject) -> Iterator[Finding]:
    listing, problem = subject.listing, subject.problem
    if listing is not None:
        groups, modules = listing.groups, listing.module_classes
    elif problem is not None:  # a damaged file can still be a hostile one
        groups = {
            g: _weights_only.group(g, problem.uses.get(g, ()))
            for g in problem.globals
            if not _weights_only.weights_only_allows(g)
        }
        modules = []
    else:
        return
    code = [g for g, kind in groups.items() if kind == "code"]
    if code:
        yield subject.finding(PITFALL, "ckpt-dangerous", keys=code, globals=_names(code))
    if listing is None:
        return
    # A pickled module needs its classes: whole-module-saved says so.
    classes = [
        g
        for g, kind in groups.items()
        if kind == "class"
        and g not in modules
        and not (modules and _weights_only.kind_of(g) == "module")
    ]
    data = [g for g, kind in groups.items() if kind == "data"]
    trust = " --trust" if classes or modules else ""
    if classes:
        yield subject.finding(
            PITFALL,
            "ckpt-classes",
            keys=classes,
            repairable=not code,
            options=trust,
            globals=_names(classes),
        )
    if data:
        yield subject.finding(
            PITFALL, "ckpt", keys=data, repairable=not code, options=trust, globals=_names(data)
        )


def _names(globals_: list[str]) -> str:
    return ", ".join(f"`{g}`" for g in globals_)
