"""TD501 load-without-map-location: `torch.load(path)` in code that may run without a GPU."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from torchdoctor.catalog.sdk import (
    Clue,
    Context,
    Finding,
    Pitfall,
    index,
    index_of,
    is_self_attribute,
    lazy_compile,
    per_file,
    top_level_functions,
)

PITFALL = Pitfall(
    code="TD501",
    name="load-without-map-location",
    title={
        "en": "torch.load without map_location in code that may run on CPU",
        "zh": "可能在 CPU 上运行的代码里调用 torch.load 却没有指定 map_location",
    },
    messages={
        "": {
            "en": "`torch.load` without `map_location` in code that checks for CUDA: a checkpoint saved "
            'on a GPU fails to load on a CPU-only machine; pass `map_location="cpu"` or your device',
            "zh": "这段代码会检查 CUDA 是否可用，但 `torch.load` 没有指定 `map_location`：在 GPU 上保存的 "
            'checkpoint 在只有 CPU 的机器上会加载失败；请传入 `map_location="cpu"` 或你的 device',
        },
        "ckpt": {
            "en": "{count} tensors were saved on {devices}: on a machine without that device "
            '`torch.load` fails unless given `map_location="cpu"` (or your device)',
            "zh": "{count} 个张量保存在 {devices} 上：在没有该设备的机器上，`torch.load` 必须传入 "
            '`map_location="cpu"`（或你的 device）才能加载',
        },
    },
    fix_title={"en": 'Add `map_location="cpu"`', "zh": '添加 `map_location="cpu"`'},
    fix_applicability="unsafe",
    # Opt-in: a static check cannot see whether the file holds CUDA tensors (RNG, scheduler and
    # scaler states never do), and such loads are common in library code.
    default=False,
    fix_hint={
        "en": 'Pass `map_location` to `torch.load`: `map_location="cpu"` on a machine '
        "without a GPU, or the `device` your script picked; `load_state_dict` then "
        "copies the weights to the model's device.",
        "zh": '给 `torch.load` 传入 `map_location`：没有 GPU 的机器上用 `map_location="cpu"`，'
        "否则用脚本选好的 `device`；之后 `load_state_dict` 会把权重拷到模型所在的设备。",
    },
    docs={
        "en": """
## What it catches
A call of `torch.load(...)` without `map_location` in code that decides its device at run
time: the same function (or, at module level, the same script) calls `torch.cuda.is_available()`,
or a function of the file that does (also in a default: `device=get_default_device()`), or the
class of the method keeps the answer on the object (`self.use_cuda = ... is_available()` in
`__init__`), so the author expects the code to run on machines without a GPU too. A load that
runs only where a test of CUDA passed (`if use_cuda:`, `... if args.cuda else ...`) is not
reported. Opt-in.

## Why is this bad?
`torch.load` puts every tensor back on the device it was saved from. A checkpoint written during
GPU training remembers `cuda:0`; on a laptop or CI runner without CUDA, loading it raises an
error instead of falling back to the CPU. On a multi-GPU machine it also piles every process's
copy onto GPU 0. `map_location="cpu"` (or the `device` the script picked) loads the tensors where
you want them; `model.load_state_dict` then copies them to the model's own device anyway.

## Symptoms
`RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available()
is False. If you are running on a CPU-only machine, please use torch.load with
map_location=torch.device('cpu') to map your storages to the CPU.`, or with CUDA built in but
no GPU visible (`CUDA_VISIBLE_DEVICES=""`) `Attempting to deserialize object on CUDA device 0
but torch.cuda.device_count() is 0`; a checkpoint saved on `cuda:1` loaded on a one-GPU machine:
`Attempting to deserialize object on CUDA device 1 but torch.cuda.device_count() is 1`. Very old
CPU-only builds: `AttributeError: module 'torch._C' has no attribute '_cuda_getDevice'`.

## Fix safety
The fix adds `map_location="cpu"`. It is unsafe: tensors that used to come back on the GPU now
come back on the CPU; code that uses loaded tensors directly (not through `load_state_dict`),
such as an optimizer state or a cached tensor, may need an explicit `.to(device)` afterwards.
Passing your `device` variable instead is often the better edit.

A load of a path that the same function (or script) saved to with `torch.save` just before,
written the same way (the best model reloaded after early stopping), is not reported: what the
run saved holds the devices of the machine it runs on.

## Known problems
Only code whose function or script calls `torch.cuda.is_available()` is checked. The rule
cannot see what the file holds: RNG, LR-scheduler and grad-scaler states contain no CUDA tensors
and load fine anywhere, which is why the rule is opt-in.
""",
        "zh": """
## What it catches
在运行时才决定设备的代码里（同一个函数，或模块级脚本本身，调用了 `torch.cuda.is_available()`；
或调用了本文件中这样做的函数，包括在默认参数里：`device=get_default_device()`；或者方法所在的类把结果保存在对象上：
`__init__` 里的 `self.use_cuda = ... is_available()`，说明作者预期代码也会在没有 GPU 的机器上运行），
调用 `torch.load(...)` 却没有传 `map_location`。只在 CUDA 检测通过时才执行的加载（`if use_cuda:`、
`... if args.cuda else ...`）不报告。默认关闭，需手动启用。

## Why is this bad?
`torch.load` 会把每个张量放回它保存时所在的设备。GPU 训练时保存的 checkpoint 记着 `cuda:0`；
在没有 CUDA 的笔记本或 CI 机器上加载时会直接报错，而不会自动退回 CPU。在多卡机器上，
每个进程加载的副本还会全部挤到 0 号 GPU 上。`map_location="cpu"`（或脚本选好的 `device`）
让张量加载到你想要的位置；之后 `model.load_state_dict` 本来就会把它们拷到模型所在的设备。

## Symptoms
`RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available()
is False. If you are running on a CPU-only machine, please use torch.load with
map_location=torch.device('cpu') to map your storages to the CPU.`；编译了 CUDA 但看不到 GPU
（`CUDA_VISIBLE_DEVICES=""`）时为 `Attempting to deserialize object on CUDA device 0 but
torch.cuda.device_count() is 0`；在 `cuda:1` 上保存的 checkpoint 拿到单卡机器上加载时为
`Attempting to deserialize object on CUDA device 1 but torch.cuda.device_count() is 1`。
很老的纯 CPU 版本则报 `AttributeError: module 'torch._C' has no attribute '_cuda_getDevice'`。

## Fix safety
修复会加上 `map_location="cpu"`。它是不安全的：原来加载到 GPU 上的张量现在会加载到 CPU 上；
直接使用这些张量（而不是通过 `load_state_dict`）的代码，比如优化器状态或缓存的张量，
之后可能需要显式 `.to(device)`。很多时候改成传入你自己的 `device` 变量更好。

如果同一个函数（或脚本）在加载之前刚用 `torch.save` 写入过同一路径（写法相同：例如早停后重新加载
最佳模型），不会报告：这次运行自己保存的内容，其中的张量本来就在本机的设备上。

## Known problems
只检查所在函数或脚本调用了 `torch.cuda.is_available()` 的代码。规则看不到文件里存的是什么：
随机数状态、学习率调度器和 grad scaler 的状态里没有 CUDA 张量，在哪里都能正常加载，
因此这条规则默认关闭。
""",
    },
    example="""
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
state = torch.load("model.pt")
""",
    use_instead="""
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
state = torch.load("model.pt", map_location=device)
""",
)


@PITFALL.static(ast.Call, names={"load"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if not call.args or len(call.args) > 1 or ctx.qualname(call.func) != "torch.load":
        return
    # map_location given, or possibly given through **kwargs / *args.
    if any(kw.arg in ("map_location", None) for kw in call.keywords):
        return
    if isinstance(call.args[0], ast.Starred):
        return
    if not _decides_device(ctx) or _on_cuda_branch(call, ctx):
        return
    if _saved_before(call, ctx):
        return
    last = call.keywords[-1] if call.keywords else call.args[-1]
    _, end = ctx.span(last)
    fix = ctx.fix(PITFALL, "unsafe", ctx.edit(end, end, ', map_location="cpu"'))
    yield ctx.finding(PITFALL, call, fix=fix)


def _saved_before(call: ast.Call, ctx: Context) -> bool:
    """The same function (or script) saved to this path, written the same way, before loading
    it: early stopping's best model, reloaded at the end of the run, holds the devices of the
    machine that run is on."""
    saves = _saves(ctx).get(ctx.text(call.args[0]), ())
    scope = ctx.enclosing_function() or ctx.tree
    return any(s is scope and position < (call.lineno, call.col_offset) for s, position in saves)


@per_file
def _saves(ctx: Context) -> dict[str, list[tuple[ast.AST, tuple[int, int]]]]:
    """The path (as written) of each `torch.save(obj, path)` of the file: [(its function or
    module, its position)]."""
    found: dict[str, list[tuple[ast.AST, tuple[int, int]]]] = {}
    if not ctx.may_name("save"):
        return found
    whole = index(ctx)
    for at in whole.calls.get("save", ()):
        save = whole.nodes[at]
        if ctx.qualname(save.func) != "torch.save":
            continue
        path = save.args[1] if len(save.args) > 1 else None
        path = next((kw.value for kw in save.keywords if kw.arg == "f"), path)
        if path is None:
            continue
        # As `enclosing_function` sees it: a save in a lambda or a class body is the code's around.
        scope = whole.runs_in(save)
        found.setdefault(ctx.text(path), []).append((scope, (save.lineno, save.col_offset)))
    return found


def _decides_device(ctx: Context) -> bool:
    """The code around the load decides its device at run time: the function (or, at module
    level, the script) asks for CUDA, or the class of the method does (`self.device = ...` in
    `__init__`), or the function calls a function of the file that does, in its body or its
    defaults (`device=get_default_device()`)."""
    function = ctx.enclosing_function()
    if function is None:
        return _checks_cuda(ctx, ctx.tree)
    cls = ctx.enclosing_class()
    if _checks_cuda(ctx, function) or (cls is not None and _keeps_cuda_check(ctx, cls)):
        return True
    return _calls_a_cuda_check(ctx, function)


@per_file
def _keeps_cuda_check(ctx: Context, cls: ast.ClassDef) -> bool:
    """A method of `cls` keeps its answer on the object: `self.device = torch.device("cuda" if
    torch.cuda.is_available() else "cpu")`, `self.use_cuda = args.cuda and ...`."""
    for node in index_of(ctx, cls).under(cls, ast.Assign):
        if any(is_self_attribute(target) for target in node.targets) and any(
            _is_cuda_check(call) for call in ast.walk(node.value)
        ):
            return True
    return False


@per_file
def _calls_a_cuda_check(ctx: Context, function: ast.AST) -> bool:
    functions = top_level_functions(ctx)
    for node in index_of(ctx, function).under(function, ast.Call):
        called = functions.get(node.func.id) if type(node.func) is ast.Name else None
        if called is not None and called is not function and _checks_cuda(ctx, called):
            return True
    return False


def _on_cuda_branch(call: ast.Call, ctx: Context) -> bool:
    """The load runs only where a test of CUDA passed (`if use_cuda:`, `... if args.cuda
    else ...`): the GPU its storages go back to is there."""
    ancestors = ctx.ancestors
    for node, inner in zip(ancestors, ancestors[1:]):
        if isinstance(node, ast.If) and _mentions_cuda(node.test, ctx):
            place = ctx.block_position(inner, node)
            if place is not None and place[0] is node.body:
                return True
    parents = ctx.statement_parents()
    child, parent = call, parents.get(call)
    while parent is not None:
        if isinstance(parent, ast.IfExp) and child is parent.body:
            if _mentions_cuda(parent.test, ctx):
                return True
        child, parent = parent, parents.get(parent)
    return False


def _mentions_cuda(test: ast.expr, ctx: Context) -> bool:
    text = ctx.text(test).lower()
    return "cuda" in text or "gpu" in text


@per_file
def _checks_cuda(ctx: Context, scope: ast.AST) -> bool:
    """`scope` calls `<...>.cuda.is_available()`: it is meant to run without a GPU too."""
    return any(_is_cuda_check(node) for node in index_of(ctx, scope).under(scope, ast.Call))


def _is_cuda_check(node: ast.AST) -> bool:
    """`<...>.cuda.is_available()`."""
    return (
        type(node) is ast.Call
        and type(node.func) is ast.Attribute
        and node.func.attr == "is_available"
        and type(node.func.value) is ast.Attribute
        and node.func.value.attr == "cuda"
    )


# Explaining errors ----------------------------------------------------------------------------

NO_CUDA = {
    "en": "The checkpoint holds tensors saved on a GPU, and this PyTorch has no CUDA (a CPU-only "
    "build or machine): `torch.load` tries to put them back on `cuda` because no "
    "`map_location` says otherwise.",
    "zh": "checkpoint 里的张量是在 GPU 上保存的，而当前的 PyTorch 没有可用的 CUDA（纯 CPU 版本或"
    "没有 GPU 的机器）：由于没有 `map_location`，`torch.load` 试图把它们放回 `cuda` 上。",
}
# The message's advice alone, as a title quotes it.
PITFALL.error(
    r"please use torch\.load with map_location=torch\.device\('cpu'\) to map your storages to "
    r"the CPU",
    types=(),
    confidence=0.85,
    cause={
        "en": "`torch.load` is restoring tensors saved on a GPU onto a machine (or a run) without "
        "CUDA: the checkpoint keeps the device each tensor was saved from.",
        "zh": "`torch.load` 正在把在 GPU 上保存的张量恢复到没有 CUDA 的机器（或运行）上："
        "checkpoint 记录了每个张量保存时所在的设备。",
    },
)
PITFALL.error(
    r"Attempting to deserialize object on a CUDA\s+device but\s+"
    r"torch\.cuda\.is_available\(\) is False",
    types=(),
    confidence=0.95,
    cause=NO_CUDA,
)
# The message cut after its first words, as a title or a pull request quotes it ("Attempting
# to deserialize object on a CUDA device but torch....."): which check failed is not shown.
PITFALL.error(
    r"Attempting to deserialize object on (?:a )?CUDA\s+device\b",
    types=(),
    confidence=0.85,
    cause={
        "en": "`torch.load` is restoring tensors saved on a GPU onto a machine (or a run) that "
        "does not have that GPU (no CUDA, or fewer GPUs visible): without `map_location` it "
        "puts each tensor back on the device it was saved from.",
        "zh": "`torch.load` 正在把在 GPU 上保存的张量恢复到没有那块 GPU 的机器（或运行）上"
        "（没有 CUDA，或可见的 GPU 更少）：没有 `map_location` 时，它会把每个张量放回保存时所在的设备。",
    },
)
PITFALL.error(
    r"Attempting to deserialize object on CUDA device (?P<device>\d+) but\s+"
    r"torch\.cuda\.device_count\(\) is 0\b",
    types=(),
    confidence=0.95,
    cause={
        "en": "The checkpoint was saved on `cuda:{device}` and no GPU is visible here "
        "(`torch.cuda.device_count()` is 0: no GPU, a driver problem, or "
        "`CUDA_VISIBLE_DEVICES` empty), and `torch.load` has no `map_location`.",
        "zh": "checkpoint 是在 `cuda:{device}` 上保存的，而这里看不到任何 GPU"
        "（`torch.cuda.device_count()` 为 0：没有 GPU、驱动有问题，或 "
        "`CUDA_VISIBLE_DEVICES` 为空），`torch.load` 又没有指定 `map_location`。",
    },
)
PITFALL.error(
    r"Attempting to deserialize object on CUDA device (?P<device>\d+) but\s+"
    r"torch\.cuda\.device_count\(\) is (?P<count>[1-9]\d*)",
    types=(),
    confidence=0.95,
    cause={
        "en": "The checkpoint was saved on `cuda:{device}`, but this machine (or "
        "`CUDA_VISIBLE_DEVICES`) shows only {count} GPU(s): `torch.load` restores "
        "each tensor on the device it was saved from.",
        "zh": "checkpoint 是在 `cuda:{device}` 上保存的，而这台机器（或 `CUDA_VISIBLE_DEVICES`）"
        "只能看到 {count} 块 GPU：`torch.load` 会把每个张量恢复到它保存时所在的设备。",
    },
    fix={
        "en": 'Remap the devices when loading: `torch.load(path, map_location="cuda:0")` (or '
        '`map_location={{"cuda:{device}": "cuda:0"}}`, or `"cpu"`).',
        "zh": '加载时重新映射设备：`torch.load(path, map_location="cuda:0")`（或 '
        '`map_location={{"cuda:{device}": "cuda:0"}}`，或 `"cpu"`）。',
    },
)


@PITFALL.error_check(types=("AttributeError",), words=("_cuda_getdevice",))
def cpu_build(block, report) -> Clue | None:
    """Old CPU-only builds failed inside torch.load's CUDA restore with this attribute error."""
    if "has no attribute '_cuda_getDevice'" not in block.message:
        return None
    loading = any(
        "serialization" in frame.path or "torch.load" in (frame.source or "")
        for frame in block.frames
    )
    return Clue(0.9 if loading else 0.7, NO_CUDA)


@PITFALL.checkpoint
def check_checkpoint(subject) -> Iterator[Finding]:
    if subject.listing is None:
        return
    devices = {d: n for d, n in subject.listing.devices.items() if d not in ("cpu", "meta")}
    if devices:
        yield subject.finding(
            PITFALL,
            "ckpt",
            repairable=True,
            count=sum(devices.values()),
            devices=", ".join(f"`{d}`" for d in sorted(devices)),
        )


# A traceback pasted without its last lines, cut off where `torch.load` restores a storage to the
# device it was saved on (`restore_location`): what fails there is that device (no CUDA here,
# fewer GPUs, or no room on it), and `map_location` is the answer to each. Read only when the
# input ends at that frame: with its exception line shown, the message's own signature answers.
_LAST_FRAME = lazy_compile(r'File "(?P<path>[^"\n]*)", line \d+, in (?P<function>\w+)')
_RESTORING = frozenset({"default_restore_location", "_cuda_deserialize", "validate_cuda_device"})


@PITFALL.error_check(
    types=(), words=("restore_location", "_cuda_deserialize", "validate_cuda_device")
)
def cut_in_restore_location(block, report) -> Clue | None:
    last = _cut_in_torch_load(block, report)
    if last is None:
        return None
    text = report.text.rstrip()
    after = text[last.end() :].split("\n", 2)
    if len(after) > 2 or after[0].strip():
        return None  # more than the frame's source line follows: the traceback goes on
    source = after[1] if len(after) == 2 else ""
    if last["function"] not in _RESTORING and "restore_location(" not in source:
        return None
    return Clue(
        0.6,
        {
            "en": "The traceback (its error line cut off) ends in `torch.load` restoring a "
            "storage to the device it was saved on: the checkpoint holds CUDA tensors, and "
            "that device is not available here (no CUDA, fewer GPUs, or no memory left on it).",
            "zh": "这段调用栈（缺了最后的报错行）停在 `torch.load` 把存储恢复到其保存时所在设备的地方："
            "checkpoint 中是 CUDA 张量，而这里没有那个设备（没有 CUDA、GPU 更少，或其显存已满）。",
        },
    )


def _cut_in_torch_load(block, report) -> re.Match | None:
    """The last frame of a traceback pasted without its exception line, when it runs
    `torch/serialization.py`."""
    if report.exceptions or block.message != report.text:
        return None
    text = report.text.rstrip()
    start = text.rfind('File "')
    last = _LAST_FRAME.match(text, start) if start >= 0 else None
    if last is None or not last["path"].replace("\\", "/").endswith("torch/serialization.py"):
        return None
    return last


# Tensors pickled with `pickle`/`numpy`/`joblib` instead of `torch.save` unpickle through
# `torch.storage._load_from_bytes`, which calls `torch.load` without `map_location`: what fails
# inside it is the device the tensors were saved on, since the bytes hold one storage and no
# class to import.
_FROM_BYTES = lazy_compile(
    r'File "[^"\n]{0,400}torch[/\\]storage\.py", line \d+, in _load_from_bytes'
)


@PITFALL.error_check(types=(), words=("_load_from_bytes",))
def cut_in_pickled_tensor(block, report) -> Clue | None:
    if _cut_in_torch_load(block, report) is None or report.search(_FROM_BYTES) is None:
        return None
    return Clue(
        0.6,
        {
            "en": "The traceback (its error line cut off) ends in the `torch.load` that "
            "unpickles a tensor pickled with `pickle`, `numpy` or `joblib` rather than "
            "`torch.save` (`torch/storage.py`'s `_load_from_bytes`), which passes no "
            "`map_location`: the tensors were saved on a GPU that is not available here "
            "(no CUDA, or fewer GPUs than the saving machine had).",
            "zh": "这段调用栈（缺了最后的报错行）停在反序列化张量的 `torch.load` 里：这些张量是用 "
            "`pickle`、`numpy` 或 `joblib` 而不是 `torch.save` 保存的（`torch/storage.py` 的 "
            "`_load_from_bytes`），它不传 `map_location`：张量保存时所在的 GPU 在这里不可用"
            "（没有 CUDA，或 GPU 比保存时的机器少）。",
        },
        {
            "en": "Re-save the data with CPU tensors (`tensor.cpu()` before pickling) on a "
            "machine that has the GPU, or while loading make the unpickler map storages to the "
            "CPU: `torch.storage._load_from_bytes = lambda b: torch.load(io.BytesIO(b), "
            'map_location="cpu")`.',
            "zh": "在有该 GPU 的机器上把数据改存为 CPU 张量（pickle 之前先 `tensor.cpu()`），或者在加载时"
            "让反序列化把存储映射到 CPU：`torch.storage._load_from_bytes = lambda b: "
            'torch.load(io.BytesIO(b), map_location="cpu")`。',
        },
    )
