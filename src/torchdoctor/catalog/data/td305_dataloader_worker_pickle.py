"""TD305 dataloader-worker-pickle: a Dataset or function that spawned DataLoader workers can't
receive (lambdas, local functions, classes defined in a notebook, open file handles)."""

from __future__ import annotations

import re

from torchdoctor.catalog.sdk import Clue, lazy_compile, Pitfall

PITFALL = Pitfall(
    code="TD305",
    name="dataloader-worker-pickle",
    title={
        "en": "DataLoader workers cannot receive an unpicklable dataset, transform or function",
        "zh": "DataLoader worker 无法接收不可 pickle 的数据集、变换或函数",
    },
    messages={
        "": {
            "en": "with the spawn start method (Windows, macOS, or `multiprocessing_context='spawn'`) "
            "the Dataset, its transforms, `collate_fn` and `worker_init_fn` are pickled for "
            "each worker, and one of them cannot be",
            "zh": "在 spawn 启动方式下（Windows、macOS 或 `multiprocessing_context='spawn'`），数据集、"
            "其中的变换、`collate_fn` 和 `worker_init_fn` 都要 pickle 后传给每个 worker，其中有一个无法 pickle",
        }
    },
    # A notebook's own Dataset class or function, found before the run.
    root_causes=("notebook-dataset-spawn-workers",),
    fix_hint={
        "en": "Define transforms, `collate_fn` and `worker_init_fn` as top-level functions (not "
        "lambdas or nested functions), put the Dataset class in a `.py` module and import "
        "it, open files / LMDB / HDF5 handles lazily in `__getitem__`, and guard the "
        'script with `if __name__ == "__main__":`. `num_workers=0` confirms the cause.',
        "zh": "把变换、`collate_fn` 和 `worker_init_fn` 定义为模块顶层函数（不要用 lambda 或嵌套函数），"
        "把 Dataset 类放进 `.py` 模块再导入，文件 / LMDB / HDF5 句柄在 `__getitem__` 中按需打开，"
        '并用 `if __name__ == "__main__":` 保护脚本入口。设 `num_workers=0` 可以确认原因。',
    },
    docs={
        "en": """
## What it catches
A DataLoader with `num_workers > 0` that fails to start its workers because something it
must send them cannot be pickled: a `lambda` or a function nested in another function used as
a transform, `collate_fn` or `worker_init_fn`; a Dataset class defined in a Jupyter notebook
or an interactive session; a Dataset holding an open file, LMDB environment, HDF5 file or
database connection.

## Why is this bad?
On Linux, workers are forked and inherit the dataset as it is in memory. On Windows and
macOS (since Python 3.8), and whenever the `spawn` start method is chosen, each worker is a
fresh Python process: the DataLoader pickles the dataset and the functions it uses and sends
them over. Pickle stores functions and classes by their import path, so anything without
one (a lambda, a nested function, a class living only in a notebook's `__main__`) fails, as
do OS handles. The code works on a Linux server and fails on a laptop, or the reverse.

## Symptoms
`AttributeError: Can't pickle local object 'main.<locals>.<lambda>'` (Python 3.13: `Can't
get local object ...`), `_pickle.PicklingError: Can't pickle <function <lambda> at
0x7f...>: attribute lookup <lambda> on __main__ failed`, in the worker:
`AttributeError: Can't get attribute 'MyDataset' on <module '__main__' (built-in)>`,
`TypeError: cannot pickle '_io.TextIOWrapper' object`, `TypeError: cannot pickle
'Environment' object` (lmdb), `TypeError: h5py objects cannot be pickled`, and often a
second, misleading error from the child process: `EOFError: Ran out of input` or
`BrokenPipeError: [Errno 32] Broken pipe`.

## Known problems
`Can't get attribute 'Net' on <module '__main__'>` also comes from `torch.load` of a model
saved whole; that case, recognised by `torch.load` frames, belongs to `whole-module-saved`.
In a notebook, `notebook-dataset-spawn-workers` (`check`) finds the loader whose workers need a
class or function of the notebook before it runs.

## References
- PyTorch documentation, `torch.utils.data`: "Platform-specific behaviors".
""",
        "zh": """
## What it catches
`num_workers > 0` 的 DataLoader 启动 worker 失败，因为要传给 worker 的某样东西无法被 pickle：
用作变换、`collate_fn` 或 `worker_init_fn` 的 `lambda` 或嵌套在其他函数里的函数；在 Jupyter notebook
或交互式会话中定义的 Dataset 类；持有打开的文件、LMDB 环境、HDF5 文件或数据库连接的 Dataset。

## Why is this bad?
在 Linux 上 worker 是 fork 出来的，直接继承内存中的数据集。在 Windows 和 macOS（Python 3.8 起）上，
以及选择了 `spawn` 启动方式时，每个 worker 都是全新的 Python 进程：DataLoader 把数据集和它用到的函数
pickle 后发过去。pickle 按导入路径保存函数和类，所以没有导入路径的东西（lambda、嵌套函数、只存在于
notebook `__main__` 中的类）都会失败，操作系统句柄也一样。于是代码在 Linux 服务器上能跑，换到笔记本上就报错，
或者反过来。

## Symptoms
`AttributeError: Can't pickle local object 'main.<locals>.<lambda>'`（Python 3.13 中为 `Can't
get local object ...`），`_pickle.PicklingError: Can't pickle <function <lambda> at
0x7f...>: attribute lookup <lambda> on __main__ failed`，worker 中的
`AttributeError: Can't get attribute 'MyDataset' on <module '__main__' (built-in)>`，
`TypeError: cannot pickle '_io.TextIOWrapper' object`、`TypeError: cannot pickle
'Environment' object`（lmdb）、`TypeError: h5py objects cannot be pickled`；子进程还常常再报一个
误导性的错误：`EOFError: Ran out of input` 或 `BrokenPipeError: [Errno 32] Broken pipe`。

## Known problems
`Can't get attribute 'Net' on <module '__main__'>` 也可能来自对整个模型保存的文件调用 `torch.load`；
这种情况可以从 `torch.load` 的调用栈认出来，属于 `whole-module-saved`。
在 notebook 中，`notebook-dataset-spawn-workers`（`check`）会在运行之前找出其 worker 需要 notebook 中的类或
函数的 DataLoader。

## References
- PyTorch 文档 `torch.utils.data` 中的 “Platform-specific behaviors” 一节。
""",
    },
    example="""
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def main():
    to_gray = transforms.Lambda(lambda img: img.convert("L"))
    data = datasets.MNIST("data", transform=transforms.Compose([to_gray, transforms.ToTensor()]))
    for images, labels in DataLoader(data, batch_size=64, num_workers=4):
        pass


main()
""",
    use_instead="""
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def to_gray(img):
    return img.convert("L")


def main():
    transform = transforms.Compose([transforms.Lambda(to_gray), transforms.ToTensor()])
    data = datasets.MNIST("data", transform=transform)
    for images, labels in DataLoader(data, batch_size=64, num_workers=4):
        pass


if __name__ == "__main__":
    main()
""",
)

_LOCAL = lazy_compile(r"Can't (?:pickle|get) local object '?(?:<function )?(?P<object>[^'\s]+)")
_LAMBDA = lazy_compile(r"Can't pickle <function (?P<object><lambda>|[\w.]+) at 0x[0-9a-fA-F]+>")
_MAIN_ATTRIBUTE = lazy_compile(
    r"Can't get attribute '(?P<object>[\w.]+)' on <module '__main__' (?P<where>[^>]*)>"
)
# `__mp_main__` is the name a spawned process gives the script it re-imports: the lookup failed
# in a child process, which skips the script's `if __name__ == "__main__":` block.
_MP_MAIN_ATTRIBUTE = lazy_compile(
    r"Can't get attribute '(?P<object>[\w.]+)' on <module '__mp_main__'"
)
_HANDLE = lazy_compile(
    r"(?:cannot|can't) (?:pickle|serialize) '?(?P<object>[\w.]+)'? (?:object|instances)"
    r"|can't pickle (?P<old>\w+) objects"
    r"|(?P<h5py>h5py objects cannot be pickled)"
)
# Frames of the DataLoader starting workers, or of the worker process unpickling what it got.
_WORKER_FRAMES = lazy_compile(
    r"dataloader\.py|[/\\]multiprocessing[/\\]|popen_spawn|spawn\.py|reduction\.py|worker\.py"
)
# Frames of torch.save / torch.load: the object is a saved model, not a DataLoader's payload.
_SERIALIZATION_FRAMES = lazy_compile(r"serialization\.py|torch[/\\]hub\.py")
_LOADER = lazy_compile("DataLoader|dataloader")
_PICKLE_FAILED = lazy_compile(r"Can't (?:pickle|get)|cannot pickle|can't pickle")

_LOCAL_CAUSE = {
    "en": "`{object}` is a lambda, or a function or class defined inside a function: pickle "
    "cannot send it to the spawned DataLoader workers (Windows, macOS, Jupyter, or "
    "`spawn`).",
    "zh": "`{object}` 是 lambda，或定义在函数内部的函数或类：pickle 无法把它发送给以 spawn 方式"
    "启动的 DataLoader worker（Windows、macOS、Jupyter 或 `spawn`）。",
}
_LOCAL_FIX = {
    "en": "Define `{object}` at the top level of a module (a named `def` instead of a "
    "lambda, or `functools.partial` of a top-level function), or set `num_workers=0`.",
    "zh": "把 `{object}` 定义在模块顶层（用具名的 `def` 代替 lambda，或对顶层函数使用 "
    "`functools.partial`），或者设 `num_workers=0`。",
}
_MAIN_CAUSE = {
    "en": "The spawned DataLoader worker could not find `{object}`: it is defined in the "
    "notebook or the interactive `__main__`, which a fresh worker process does not run.",
    "zh": "以 spawn 方式启动的 DataLoader worker 找不到 `{object}`：它定义在 notebook 或交互式的 "
    "`__main__` 中，而新启动的 worker 进程不会执行那里的代码。",
}
_MAIN_FIX = {
    "en": "Move `{object}` into a `.py` file next to the notebook and import it from there, "
    "or set `num_workers=0`.",
    "zh": "把 `{object}` 移到 notebook 旁边的 `.py` 文件中再导入，或者设 `num_workers=0`。",
}
_MP_MAIN_CAUSE = {
    "en": "A spawned worker process (Windows, macOS, or `spawn`) re-imported the script as "
    "`__mp_main__` and found no `{object}` there: it is defined inside the "
    '`if __name__ == "__main__":` block (or created at run time), which the child skips.',
    "zh": "以 spawn 方式启动的 worker 进程（Windows、macOS 或 `spawn`）把脚本重新导入为 "
    '`__mp_main__`，却在其中找不到 `{object}`：它定义在 `if __name__ == "__main__":` 块里'
    "（或在运行时才创建），而子进程会跳过这个块。",
}
_MP_MAIN_FIX = {
    "en": "Define `{object}` at the top level of the script, outside the "
    '`if __name__ == "__main__":` block (or in a module it imports); keep only the code '
    "that starts training inside the guard.",
    "zh": '把 `{object}` 定义在脚本顶层、`if __name__ == "__main__":` 块之外（或放进被导入的模块）；'
    "守卫块里只保留启动训练的代码。",
}
_HANDLE_CAUSE = {
    "en": "The Dataset holds an object of type `{object}` (an open file, LMDB environment, "
    "HDF5 file, lock or connection) created in `__init__`; it cannot be pickled for the "
    "spawned DataLoader workers.",
    "zh": "Dataset 在 `__init__` 中创建并持有一个 `{object}` 类型的对象（打开的文件、LMDB 环境、"
    "HDF5 文件、锁或连接），它无法被 pickle 后传给以 spawn 方式启动的 DataLoader worker。",
}
_HANDLE_FIX = {
    "en": "Store only the path in `__init__` and open the handle lazily in `__getitem__` "
    "(once per worker, e.g. `if self.env is None: self.env = lmdb.open(self.path)`).",
    "zh": "在 `__init__` 中只保存路径，在 `__getitem__` 中按需打开句柄（每个 worker 打开一次，例如 "
    "`if self.env is None: self.env = lmdb.open(self.path)`）。",
}


# Output the parser could not split into blocks (a bare quoted line): no frames to go by.
PITFALL.error(
    r"Can't (?:pickle|get) local object '(?P<object>[^'\s]+)'",
    types=(),
    confidence=0.55,
    cause=_LOCAL_CAUSE,
    fix=_LOCAL_FIX,
)

# The same told in prose, as issues do when the traceback was cut before the error line:
# "an error when pickling `collate_fn`", "the function collate_fn ... can't pickle".
PITFALL.error(
    r"(?:[Cc]an'?n?'?t|[Cc]annot|[Uu]nable to|[Ff]ail(?:s|ed)? to|[Ww]hen|[Ww]hile) pickl\w*\W{0,3}"
    r"(?P<object>collate_fn|worker_init_fn|lambda)(?![a-z])",
    types=(),
    confidence=0.6,
    cause=_LOCAL_CAUSE,
    fix=_LOCAL_FIX,
)
PITFALL.error(
    r"(?<![a-z])(?P<object>collate_fn|worker_init_fn)(?![a-z])[^\n]{0,80}?"
    r"(?:can'?n?'?t|cannot|could not|couldn'?t|unable to)(?: be)? pickl",
    types=(),
    confidence=0.6,
    cause=_LOCAL_CAUSE,
    fix=_LOCAL_FIX,
)


# `Can't pickle local object` retold without the object (an issue's title) above a traceback
# that never reaches its exception line (a `rich` box cut short): the spawning frames the
# input shows are the process start's, not `torch.save`'s.
_LOCAL_RETOLD = lazy_compile(r"(?i)can'?n?'?t pickle local object")
_SPAWNING = lazy_compile(
    r"popen_spawn|[/\\]spawn\.py|reduction\.dump|_MultiProcessingDataLoaderIter"
)
_LOCAL_RETOLD_CAUSE = {
    "en": "A spawned process (DataLoader workers on Windows, macOS, Jupyter, or `spawn`) was "
    "sent a lambda, or a function or class defined inside a function: pickle cannot send it.",
    "zh": "以 spawn 方式启动的进程（Windows、macOS、Jupyter 或 `spawn` 下的 DataLoader worker）"
    "收到了 lambda，或定义在函数内部的函数或类：pickle 无法发送它。",
}
_LOCAL_RETOLD_FIX = {
    "en": "Define that function at the top level of a module (a named `def` instead of a "
    "lambda, or `functools.partial` of a top-level function), or set `num_workers=0`.",
    "zh": "把该函数定义在模块顶层（用具名的 `def` 代替 lambda，或对顶层函数使用 "
    "`functools.partial`），或者设 `num_workers=0`。",
}


@PITFALL.error_check(types=(), words=("pickle local object",))
def local_object_retold(block, report) -> Clue | None:
    if not _LOCAL_RETOLD.search(block.message) or report.exceptions:
        return None  # a printed exception is read by `unpicklable`
    if report.search(_SERIALIZATION_FRAMES) or not report.search(_SPAWNING):
        return None  # nothing ties it to a spawned process, or it is a saved model's
    confidence = 0.8 if report.search(_LOADER) else 0.7
    return Clue(confidence, _LOCAL_RETOLD_CAUSE, _LOCAL_RETOLD_FIX)


@PITFALL.error_check(
    types=("AttributeError", "PicklingError", "TypeError"),
    words=("pickle", "serialize", "local object", "get attribute"),
)
def unpicklable(block, report) -> Clue | None:
    """Pickling errors, placed by their frames: DataLoader / multiprocessing ones are ours,
    torch.save / torch.load ones are a saved model's (`whole-module-saved`)."""
    message = block.message
    found, cause, fix, generic = _LOCAL.search(message), _LOCAL_CAUSE, _LOCAL_FIX, 0.6
    if found is None:
        found = _LAMBDA.search(message)
    if found is None:
        found, cause, fix, generic = _MAIN_ATTRIBUTE.search(message), _MAIN_CAUSE, _MAIN_FIX, 0.0
    if found is None:
        found, cause, fix, generic = (
            _MP_MAIN_ATTRIBUTE.search(message),
            _MP_MAIN_CAUSE,
            _MP_MAIN_FIX,
            0.85,
        )
    if found is None:
        found, cause, fix, generic = _HANDLE.search(message), _HANDLE_CAUSE, _HANDLE_FIX, 0.45
    if found is None:
        return None
    fields = {"object": found.group("object") or found.groupdict().get("old") or "h5py object"}
    paths = " ".join(frame.path for frame in block.frames)
    if _SERIALIZATION_FRAMES.search(paths):
        return None
    if _WORKER_FRAMES.search(paths):
        return Clue(0.95, cause, fix, fields)
    if cause is _MAIN_CAUSE:
        # No frames to go by: "(built-in)" is the __main__ of a notebook or a REPL, which is
        # what a spawned worker sees; `from 'train.py'` is more often a torch.load.
        return Clue(0.75, cause, fix, fields) if found.group("where") == "(built-in)" else None
    loader_nearby = report.search(_LOADER) is not None
    return Clue(max(0.8, generic) if loader_nearby else generic, cause, fix, fields)


@PITFALL.error_check(types=("EOFError", "BrokenPipeError"), words=("spawn.py", "popen_spawn"))
def spawned_child_got_nothing(block, report) -> Clue | None:
    """The spawned child's side of a failed pickle: `EOFError: Ran out of input` in
    `spawn_main`, or the parent's `BrokenPipeError`; misleading surfaces of this pitfall."""
    paths = " ".join(frame.path for frame in block.frames)
    if not re.search(r"spawn\.py|popen_spawn", paths):
        return None
    pickled = report.search(_PICKLE_FAILED)
    return Clue(
        0.95 if pickled else 0.75,
        {
            "en": "This error is only the spawned DataLoader worker's side: the main process failed "
            "to pickle the Dataset or a function for it (look for `Can't pickle` above), so "
            "the worker received nothing.",
            "zh": "这个错误只是以 spawn 方式启动的 DataLoader worker 一侧的表现：主进程没能把 Dataset "
            "或某个函数 pickle 给它（请在上文查找 `Can't pickle`），所以 worker 什么也没收到。",
        },
    )


# `EOFError: Ran out of input` without the spawned child's frames (a title, a traceback cut
# above them, a screenshot's caption): the same error comes from `torch.load` or `pickle.load`
# of an empty file, so the workers are named only when the text itself ties it to them.
_RAN_OUT = "Ran out of input"
_STARTING_WORKERS = lazy_compile(r"_MultiProcessingDataLoaderIter|popen_spawn_win32")
_NUM_WORKERS = lazy_compile(r"(?i)num_workers|\bNUM_\w{0,30}WORKERS\b")
_WINDOWS = lazy_compile(r"(?i)\bwindows\b")
_ITERATING_LOADER = lazy_compile(
    r"DataLoader|\bfor\b[^\n]{0,80}\bin\s+(?:enumerate\(\s*)?\w{0,40}loader\b"
)
_FILE_LOAD = lazy_compile(r"\b(?:torch|pickle|joblib)\.load\b|serialization\.py")
_WORKERS_RAN_OUT = {
    "en": "`Ran out of input` here is a DataLoader worker's side of a failed pickle: with "
    "`num_workers > 0` on Windows (and macOS), workers are spawned and the Dataset, its "
    "transforms and functions are pickled to them; when that fails, the worker reads nothing. "
    "The real error (`Can't pickle ...`) is printed above it or lost.",
    "zh": "这里的 `Ran out of input` 是 DataLoader worker 一侧的表现：在 Windows（以及 macOS）上 "
    "`num_workers > 0` 时 worker 以 spawn 方式启动，Dataset 及其变换和函数要 pickle 给它们；"
    "pickle 失败时 worker 什么也读不到。真正的错误（`Can't pickle ...`）在它上面，或者没有打印出来。",
}
_WORKERS_RAN_OUT_FIX = {
    "en": "Set `num_workers=0` to see the real error, then make the Dataset picklable (no "
    "lambdas, local functions, open files or database handles; open them in the worker) and "
    "guard the script's entry with `if __name__ == '__main__':`.",
    "zh": "先设 `num_workers=0` 看到真正的错误，再让 Dataset 可以被 pickle（不要用 lambda、局部函数、"
    "已打开的文件或数据库句柄，改为在 worker 中打开），并把脚本入口放进 `if __name__ == '__main__':`。",
}


@PITFALL.error_check(types=("EOFError",), words=("ran out of input",))
def workers_ran_out_of_input(block, report) -> Clue | None:
    if not block.message.startswith(_RAN_OUT):
        return None
    shown = " ".join(f"{frame.path} {frame.source or ''}" for frame in block.frames)
    if re.search(r"spawn\.py|popen_spawn", shown):
        return None  # the spawned child's own frames: `spawned_child_got_nothing`
    if report.search(_STARTING_WORKERS):
        return Clue(0.85, _WORKERS_RAN_OUT, _WORKERS_RAN_OUT_FIX)
    if _FILE_LOAD.search(shown) or report.search(_FILE_LOAD):
        return None  # a file loaded: empty, or not the workers' at all
    if report.search(_NUM_WORKERS) or (
        report.search(_WINDOWS) and report.search(_ITERATING_LOADER)
    ):
        return Clue(0.7, _WORKERS_RAN_OUT, _WORKERS_RAN_OUT_FIX)
    return None
