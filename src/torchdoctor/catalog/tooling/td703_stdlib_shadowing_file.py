"""TD703 stdlib-shadowing-file: `import random` next to the user's own `random.py`."""

from __future__ import annotations

import ast
import os
import re
import sys
from typing import Iterator

from torchdoctor.catalog.sdk import (
    Clue,
    Context,
    Finding,
    Pitfall,
    directory_listing,
    lazy_compile,
    top_level_names,
)

PITFALL = Pitfall(
    code="TD703",
    name="stdlib-shadowing-file",
    title={
        "en": "A project file named like a standard-library or well-known module",
        "zh": "项目文件与标准库或常用第三方模块同名",
    },
    messages={
        "": {
            "en": "`{module}` here imports the project's own `{file}` (it sits next to this script), "
            "not the {origin} module: rename `{file}`",
            "zh": "这里的 `{module}` 导入的是脚本旁边项目自己的 `{file}`，而不是{origin}模块："
            "请给 `{file}` 改名",
        }
    },
    fix_hint={
        "en": "Rename the file (e.g. `random.py` -> `random_utils.py`), update the imports "
        "of it, and delete the stale `__pycache__/<name>.*.pyc` next to it.",
        "zh": "给该文件改名（例如 `random.py` -> `random_utils.py`），同步修改导入它的地方，"
        "并删除旁边 `__pycache__` 里残留的 `<name>.*.pyc`。",
    },
    reads_neighbours=True,
    needs_torch=False,  # `random.py` helpers and the scripts importing them often never say torch
    # Its Example needs a second file beside it; the fixture directory has one.
    lint_example=False,
    docs={
        "en": """
## What it catches
An `import X` / `from X import ...` in a script directory (a directory without `__init__.py`,
which Python puts first on `sys.path` when you run a script from it, as does Jupyter for a
notebook's directory) that also holds a file `X.py` or a package `X/`, where `X` is a
standard-library module (`random`, `copy`, `math`, `typing`, `test`, `inspect`...) or a
well-known library (`torch`, `numpy`, `cv2`, `tqdm`, `yaml`...). A file importing its own name
(`random.py` containing `import random`) is reported too.

## Why is this bad?
The script's directory comes before the standard library and site-packages on `sys.path`, so
`import random` loads your `random.py` instead of Python's. Every module that imports it after
that gets your file too, including PyTorch and NumPy internals. The error then appears far
from its cause: `module 'random' has no attribute 'randint'`, or a "partially initialized
module" circular-import error raised inside `import torch`.

## Symptoms
`AttributeError: module 'random' has no attribute 'randint'`,
`AttributeError: partially initialized module 'torch' has no attribute 'nn' (most likely due to
a circular import)`, `ImportError: cannot import name 'deepcopy' from partially initialized
module 'copy'`, `ImportError: No module named _C` raised by a `torch/__init__.py` of the current
directory (a PyTorch source checkout), `ModuleNotFoundError: No module named
'multiprocessing.util'; 'multiprocessing' is not a package`, and errors raised deep inside
`import torch` or `import numpy`.

## Known problems
Only directories without `__init__.py` are checked: inside a package, absolute imports do not
see sibling modules unless the package directory itself is run as a script directory. Nor is
a directory without `__init__.py` inside a package (a namespace part of it, imported by dotted
names), or one the project imports from by its name or by the name of a directory above it
(`from sync_batchnorm.batchnorm import ...` in a script beside it, `from src.utils.tensors
import ...` for `src/utils/`), unless the file may be run from there: a notebook, or a module
with a `__main__` guard.
Modules that the interpreter has already loaded at start-up (`os`, `sys`, `io`, `abc`...) cannot be
shadowed and are not reported. Nor is `from tensorboard import TensorBoard` when the project's
own `tensorboard.py` defines every name imported: the file is meant, and the package it hides
is not one torch or torchvision loads.
""",
        "zh": """
## What it catches
在脚本目录（没有 `__init__.py` 的目录：从这里运行脚本时 Python 会把它放在 `sys.path` 的最前面，
Jupyter 对 notebook 所在目录也是如此）中出现 `import X` / `from X import ...`，而同一目录里恰好有
文件 `X.py` 或包 `X/`，且 `X` 是标准库模块（`random`、`copy`、`math`、`typing`、`test`、
`inspect` 等）或常用第三方库（`torch`、`numpy`、`cv2`、`tqdm`、`yaml` 等）。文件导入与自己同名的
模块（`random.py` 里写 `import random`）也会报告。

## Why is this bad?
脚本所在目录在 `sys.path` 中排在标准库和 site-packages 之前，于是 `import random` 加载的是你自己的
`random.py`，而不是 Python 的。此后所有导入它的模块拿到的都是你的文件，PyTorch 和 NumPy 的内部代码
也不例外。报错往往出现在离病根很远的地方：`module 'random' has no attribute 'randint'`，或者在
`import torch` 内部抛出“partially initialized module”的循环导入错误。

## Symptoms
`AttributeError: module 'random' has no attribute 'randint'`、
`AttributeError: partially initialized module 'torch' has no attribute 'nn' (most likely due to
a circular import)`、`ImportError: cannot import name 'deepcopy' from partially initialized
module 'copy'`、由当前目录下的 `torch/__init__.py`（PyTorch 源码目录）抛出的
`ImportError: No module named _C`，`ModuleNotFoundError: No module named 'multiprocessing.util';
'multiprocessing' is not a package`，以及在 `import torch`、`import numpy` 深处抛出的各种错误。

## Known problems
只检查没有 `__init__.py` 的目录：在包内部，绝对导入看不到同目录的模块，除非把包目录本身当作脚本目录
运行。位于某个包内部、自身没有 `__init__.py` 的目录（包的命名空间部分，按带点的名字导入），
以及项目按目录名或其上层目录名从中导入的目录（旁边的脚本写 `from sync_batchnorm.batchnorm import ...`；
`src/utils/` 被写成 `from src.utils.tensors import ...`）也不检查，
除非该文件可能从那里运行：notebook，或带 `__main__` 判断的模块。
解释器启动时已经加载的模块（`os`、`sys`、`io`、`abc` 等）无法被遮蔽，不会报告。项目自己的
`tensorboard.py` 定义了所导入的每个名字时（`from tensorboard import TensorBoard`）也不报告：要导入的
就是这个文件，而它遮蔽的包不是 torch 或 torchvision 会加载的。
""",
    },
    example="""
# train.py, next to the project's own random.py
import random

import torch

seed = random.randint(0, 1000)
torch.manual_seed(seed)
""",
    use_instead="""
# train.py, next to random_utils.py (renamed)
import random

import torch

seed = random.randint(0, 1000)
torch.manual_seed(seed)
""",
)

# Loaded by every interpreter before the script runs: a file of that name is never imported.
_LOADED_AT_STARTUP = frozenset(
    {
        "abc",
        "builtins",
        "codecs",
        "encodings",
        "io",
        "marshal",
        "posix",
        "nt",
        "sys",
        "time",
        "zipimport",
        "os",
        "stat",
        "posixpath",
        "ntpath",
        "genericpath",
        "site",
    }
)
_WELL_KNOWN = frozenset(
    {
        "torch",
        "torchvision",
        "torchaudio",
        "numpy",
        "scipy",
        "pandas",
        "matplotlib",
        "sklearn",
        "cv2",
        "PIL",
        "tqdm",
        "yaml",
        "transformers",
        "timm",
        "tensorboard",
        "wandb",
        "einops",
    }
)
_SHADOWABLE = (
    frozenset(
        name
        for name in sys.stdlib_module_names
        if not name.startswith("_") and name not in _LOADED_AT_STARTUP
    )
    | _WELL_KNOWN
)


@PITFALL.static(ast.Import, ast.ImportFrom)
def check(node: ast.Import | ast.ImportFrom, ctx: Context) -> Iterator[Finding]:
    if isinstance(node, ast.ImportFrom):
        if node.level or not node.module:
            return
        targets = [(node.module, node)]
    else:
        targets = [(alias.name, alias) for alias in node.names]
    directory = os.path.dirname(os.path.abspath(ctx.path))
    for module, where in targets:
        top = module.partition(".")[0]
        if top not in _SHADOWABLE:
            continue
        imported = _in_a_package(directory) or _imported_by_name(directory, ctx)
        if imported and not _runs_as_script(ctx):
            return  # imported as `package.dir.module`: its own directory is not on sys.path
        shadow = _shadowing_file(directory, top)
        if shadow is not None and _own_names_imported(node, directory, shadow):
            continue  # ENAS' `from tensorboard import TensorBoard`, the class of its tensorboard.py
        if shadow is not None:
            origin = (
                {"en": "installed", "zh": "已安装的"}
                if top in _WELL_KNOWN
                else {"en": "standard-library", "zh": "标准库"}
            )
            yield ctx.finding(PITFALL, where, module=top, file=shadow, origin=origin)


# Imported by torch or torchvision themselves: a file of that name breaks them, whatever the
# script imports from it.
_LOADED_BY_TORCH = frozenset({"torch", "torchvision", "torchaudio", "numpy", "scipy", "PIL"})


def _own_names_imported(node: ast.AST, directory: str, shadow: str) -> bool:
    """`from tensorboard import TensorBoard` where the project's `tensorboard.py` defines
    `TensorBoard` at its top level, as it does every name imported: the script means its own
    file, named after an installed package that neither torch nor torchvision loads."""
    if not isinstance(node, ast.ImportFrom) or not shadow.endswith(".py"):
        return False
    top = shadow[: -len(".py")]
    if top not in _WELL_KNOWN or top in _LOADED_BY_TORCH or node.module != top:
        return False
    defined = top_level_names(os.path.join(directory, shadow))
    return defined is not None and all(alias.name in defined for alias in node.names)


def _in_a_package(directory: str) -> bool:
    """`directory` (without `__init__.py`) sits in a regular package: a namespace part of it
    (torchtitan's `torchtitan/tools/`), whose modules are imported by their dotted names."""
    names = directory_listing(os.path.dirname(directory))
    return names is not None and "__init__.py" in names


# How many directories up a namespace package's top may sit (`src/utils/`, imported as
# `src.utils.tensors`).
_NAMESPACE_DEPTH = 4


def _imported_by_name(directory: str, ctx: Context) -> bool:
    """The project imports from `directory`, or from a directory above it, by its name (`from
    sync_batchnorm.batchnorm import ...` in a script beside it; I-JEPA's `from src.utils.tensors
    import ...` in main.py, two levels up): a namespace package, run from the directory above
    its top."""
    for _ in range(_NAMESPACE_DEPTH):
        name = os.path.basename(directory)
        if not name:
            return False
        if ctx.project.imports_from(name):
            return True
        directory = os.path.dirname(directory)
    return False


def _runs_as_script(ctx: Context) -> bool:
    """The file may be run from its own directory: a notebook, or a module with a
    `__main__` guard."""
    return ctx.path.endswith(".ipynb") or "__main__" in ctx.source


def _shadowing_file(directory: str, module: str) -> str | None:
    names = directory_listing(directory)
    if names is None or "__init__.py" in names:
        return None
    if f"{module}.py" in names:
        return f"{module}.py"
    if module in names and os.path.isfile(os.path.join(directory, module, "__init__.py")):
        return f"{module}/"
    return None


# Explaining the errors it causes ------------------------------------------------------------

# `cannot import name 'deepcopy' from 'copy' (/home/me/project/copy.py)`: Python names the file.
_FROM_FILE = lazy_compile(
    r"from (?:partially initialized module )?'(?P<module>[\w.]+)' "
    r"(?:\(most likely due to a circular import\) )?\((?P<path>[^)]+)\)"
)
# Once the error happened, more installed packages are worth naming than the static rule
# dares to (a project's own `datasets.py` is usually meant): the PyTorch ecosystem's.
_ECOSYSTEM = frozenset(
    {
        "lightning",
        "pytorch_lightning",
        "accelerate",
        "datasets",
        "diffusers",
        "peft",
        "safetensors",
        "tokenizers",
        "huggingface_hub",
        "onnx",
        "onnxruntime",
        "tensordict",
        "torchrl",
        "torchdata",
        "torchtext",
        "torchmetrics",
        "ultralytics",
        "albumentations",
        "open_clip",
        "gym",
        "gymnasium",
        "h5py",
        "skimage",
        "seaborn",
        "tensorflow",
        "keras",
        "jax",
        "sentencepiece",
        "triton",
        "xformers",
        "deepspeed",
        "apex",
    }
)
_PARTIAL = lazy_compile(r"partially initialized module '(?P<module>[\w.]+)'")
_NO_ATTRIBUTE = lazy_compile(r"module '(?P<module>[\w.]+)' has no attribute '(?P<attr>\w+)'")
_CAUSE = {
    "en": "A file of your project named `{module}.py` (or a `{module}/` package) sits in the "
    "script's directory and is imported instead of the real `{module}` module.",
    "zh": "项目里有一个名为 `{module}.py` 的文件（或 `{module}/` 包）位于脚本所在目录，"
    "导入的是它而不是真正的 `{module}` 模块。",
}


@PITFALL.error_check(types=("AttributeError", "ImportError"))
def explain(block, report) -> Clue | None:
    named = _file_named(block.message)
    shadow = _shadowing_frame(block) or (_shadowing_file_named(*named) if named else None)
    if shadow is not None:
        return Clue(0.95, _CAUSE, fields={"module": shadow})
    inside = _module_of_a_package_named(*named) if named else None
    if inside is not None:
        return Clue(0.85, _INSIDE_PACKAGE_CAUSE, _INSIDE_PACKAGE_FIX, inside)
    partial = _PARTIAL.search(block.message)
    if partial is not None:
        module = partial.group("module").partition(".")[0]
        if _installed_files_ran(report, module):
            return None  # the real package was imported: a circular import inside it
        if _internal_attribute(block.message):
            return None  # only the package's own modules use it: a circular import inside it
        if module in _SHADOWABLE or module in _ECOSYSTEM:
            return Clue(0.9, _CAUSE, fields={"module": module})
        if "torch" in module.split("_"):  # a PyTorch add-on (`ai_edge_torch`, `torch_geometric`)
            return Clue(0.8, _CAUSE, fields={"module": module})
        return None  # a circular import between the user's own modules
    missing = _NO_ATTRIBUTE.search(block.message)
    if missing is not None and missing.group("module") in _EVERYDAY_MODULES:
        if missing.group("attr") in _EVERYDAY_MODULES[missing.group("module")]:
            if missing.group("module") == "torch" and _real_torch_shown(report):
                return None  # the user's interpreter imports the real torch: no file shadows it
            return Clue(0.85, _CAUSE, fields={"module": missing.group("module")})
    return None


# An interactive session in the input that imports torch and prints a tensor: that interpreter
# found the real torch (a project's `torch.py` has no tensors to print), so the failing command
# runs another Python or another installation, not a shadowing file.
_REPL_IMPORTS_TORCH = lazy_compile(r"(?m)^>>> import torch\b")
_TENSOR_PRINTED = lazy_compile(r"\btensor\(\[")


def _real_torch_shown(report) -> bool:
    imported = report.search(_REPL_IMPORTS_TORCH)
    printed = report.search(_TENSOR_PRINTED)
    return imported is not None and printed is not None and printed.start() > imported.start()


# `No module named 'multiprocessing.util'; 'multiprocessing' is not a package`: the name of a
# package was found as a plain module, a file `multiprocessing.py`, ahead of the package on the
# path. Only names that are packages in every Python and release count (`re` became one in 3.11;
# `cv2` was a bare extension module before OpenCV 4.6): of a plain module it is the user's typo.
_NOT_A_PACKAGE = lazy_compile(
    r"[Nn]o module named '(?P<module>\w+)\.[\w.]+'[;:,]? '(?P=module)' is not a package"
)
_PACKAGES = (
    frozenset(
        """asyncio collections concurrent ctypes curses dbm distutils email encodings html http
        importlib json lib2to3 logging multiprocessing sqlite3 tkinter unittest urllib wsgiref
        xml xmlrpc""".split()
    )
    | (_WELL_KNOWN - {"cv2"})
    | _ECOSYSTEM
)
_NOT_A_PACKAGE_CAUSE = {
    "en": "`{module}` is a package, but Python found a plain module of that name: a file "
    "`{module}.py` (in the script's directory, the current directory or elsewhere early on "
    "`sys.path`) shadows the real `{module}`, so its submodules cannot be imported.",
    "zh": "`{module}` 本应是一个包，Python 找到的却是同名的普通模块：一个 `{module}.py` 文件（位于脚本所在目录、"
    "当前目录或 `sys.path` 靠前的其他位置）遮蔽了真正的 `{module}`，于是无法导入它的子模块。",
}
_NOT_A_PACKAGE_FIX = {
    "en": 'Find the file (`python -c "import {module}; print({module}.__file__)"`), rename it '
    "and delete its `__pycache__/{module}.*.pyc`.",
    "zh": '找到这个文件（`python -c "import {module}; print({module}.__file__)"`），给它改名，'
    "并删除对应的 `__pycache__/{module}.*.pyc`。",
}


@PITFALL.error_check(types=("ImportError", "ModuleNotFoundError"), words=("is not a package",))
def module_not_a_package(block, report) -> Clue | None:
    found = _NOT_A_PACKAGE.search(block.message)
    if found is None or found.group("module") not in _PACKAGES:
        return None
    return Clue(0.9, _NOT_A_PACKAGE_CAUSE, _NOT_A_PACKAGE_FIX, {"module": found.group("module")})


# `import torch` inside a folder that holds a `torch/` directory (a PyTorch source checkout): the
# folder's `torch/__init__.py` runs and its compiled `torch._C` is not there. The traceback shows
# that file by a relative path (Python 2's `File "torch/__init__.py"`, found through the current
# directory), or torch itself says so (`It appears that PyTorch has loaded the torch/_C folder`).
_NO_EXTENSION = lazy_compile(
    r"No module named '?(?:torch\.)?_C\b|cannot import name '_C'"
    r"|Failed to load PyTorch C extensions"
)
_SOURCE_FOLDER_SAID = lazy_compile(
    r"loaded the `?torch/_C`? folder\s+of\s+the\s+PyTorch\s+repository"
)
_RELATIVE_INIT = lazy_compile(r"^(?:\.[/\\])?torch[/\\]__init__\.py$")
_SOURCE_FOLDER_CAUSE = {
    "en": "Python was started in a directory that holds a `torch/` folder (usually a PyTorch "
    "source checkout), so `import torch` loads that folder instead of the installed package, "
    "and the compiled extension `torch._C` is not in it.",
    "zh": "Python 是在一个含有 `torch/` 文件夹的目录（通常是 PyTorch 源码目录）中启动的，于是 "
    "`import torch` 加载的是这个文件夹而不是已安装的包，而编译好的扩展 `torch._C` 并不在其中。",
}
_SOURCE_FOLDER_FIX = {
    "en": "Start Python from another directory (`cd ..`); to use the checkout itself, build it in "
    "place first (`pip install -e .` or `python setup.py develop`).",
    "zh": "换到别的目录启动 Python（`cd ..`）；如果就是要用这份源码，先在原地构建它"
    "（`pip install -e .` 或 `python setup.py develop`）。",
}


@PITFALL.error_check(
    types=("ImportError", "ModuleNotFoundError"),
    words=("no module named", "cannot import name", "failed to load pytorch c extensions"),
)
def torch_source_folder(block, report) -> Clue | None:
    """`torch._C` missing, and the traceback or torch's message shows a local `torch/` ran."""
    if _NO_EXTENSION.search(block.message) is None:
        return None
    if _SOURCE_FOLDER_SAID.search(block.message) or report.search(_SOURCE_FOLDER_SAID):
        return Clue(0.9, _SOURCE_FOLDER_CAUSE, _SOURCE_FOLDER_FIX)
    if any(_RELATIVE_INIT.match(frame.path.strip()) for frame in block.frames):
        return Clue(0.85, _SOURCE_FOLDER_CAUSE, _SOURCE_FOLDER_FIX)
    return None


# `cannot import name 'Random' from 'random' (.../site-packages/torch/random.py)`: a standard
# module found as a file inside an installed package, which only happens when that package's
# own directory is on the path (Python started inside it, or a PYTHONPATH entry).
_IN_PACKAGE = lazy_compile(r"(?:site|dist)-packages[/\\](?P<package>\w+)[/\\](?P<file>\w+)\.py$")
_INSIDE_PACKAGE_CAUSE = {
    "en": "`{module}` was imported from `{package}/{module}.py`, a module of the installed "
    "`{package}` package, instead of the standard library's: Python was started inside "
    "`{package}`'s own directory (or it is on `PYTHONPATH`), so its files shadow the standard "
    "modules of the same name.",
    "zh": "`{module}` 被从已安装的 `{package}` 包里的 `{package}/{module}.py` 导入，而不是标准库中的"
    "那个：Python 是在 `{package}` 包自己的目录里启动的（或者该目录在 `PYTHONPATH` 上），"
    "于是其中的文件遮蔽了同名的标准模块。",
}
_INSIDE_PACKAGE_FIX = {
    "en": "Run Python from another directory (`cd` out of `site-packages/{package}`) and drop "
    "that directory from `PYTHONPATH`.",
    "zh": "换到别的目录运行 Python（`cd` 出 `site-packages/{package}`），并把该目录从 `PYTHONPATH` "
    "中去掉。",
}


# `partially initialized module 'torch' has no attribute 'version'`: a name that only the
# package's own modules use while it loads (a submodule like `torch.version`, a private `_name`),
# not what a user's `torch.py` touches first (`nn`, `Tensor`, `__version__`).
_MISSING_ATTRIBUTE = lazy_compile(r"has no attribute '(?P<attr>\w+)'")
_INTERNAL_ATTRIBUTES = frozenset({"version"})


def _internal_attribute(message: str) -> bool:
    found = _MISSING_ATTRIBUTE.search(message)
    if found is None:
        return False
    attr = found.group("attr")
    return attr in _INTERNAL_ATTRIBUTES or (attr.startswith("_") and not attr.startswith("__"))


def _installed_files_ran(report, module: str) -> bool:
    """Whether the traceback runs files of the installed `module` package itself
    (`site-packages/torch/_inductor/config.py`): then `import module` found the real one, and
    no file of the project shadows it."""
    return report.search(rf"(?:site|dist)-packages[/\\]{re.escape(module)}[/\\]") is not None


def _file_named(message: str) -> tuple[str, str] | None:
    """(the top module, the file) of `cannot import name 'x' from 'module' (file)`."""
    found = _FROM_FILE.search(message)
    if found is None:
        return None
    return found.group("module").partition(".")[0], found.group("path")


def _module_of_a_package_named(module: str, path: str) -> dict[str, str] | None:
    inside = _IN_PACKAGE.search(path.strip())
    if inside is None or module not in _SHADOWABLE or inside.group("file") != module:
        return None
    return {"module": module, "package": inside.group("package")}


def _shadowing_file_named(module: str, path: str) -> str | None:
    from torchdoctor.catalog.sdk import is_user_path  # explain-time only: `check` skips it

    if (module in _SHADOWABLE or module in _ECOSYSTEM) and is_user_path(path):
        return module
    return None


def _shadowing_frame(block) -> str | None:
    """A traceback frame running a user file named like a library module: the shadow itself."""
    from torchdoctor.catalog.sdk import is_user_path

    for frame in block.frames:
        name = frame.path.replace("\\", "/").rsplit("/", 1)[-1]
        if not name.endswith(".py") or not is_user_path(frame.path):
            continue
        module = name[:-3]
        if module in _SHADOWABLE and module not in ("test", "parser"):
            return module
    return None


# A traceback cut before its exception line, whose first frame runs a script named like a
# standard module (`/repo/profile.py`) and goes on into imports: the script is on the path first.
_SCRIPT_FRAME = lazy_compile(r'(?m)^[ \t]*File "(?P<path>[^"\n]{1,400})", line \d+, in <module>')
_IMPORT_CHAIN = lazy_compile(r'File "[^"\n]{1,400}", line \d+, in <module>\n[ \t]*(?:from|import) ')
_CUT_CAUSE = {
    "en": "The traceback starts in your script `{script}`, named like the standard module "
    "`{module}`: Python puts the script's directory first on the path, so a library that "
    "imports `{module}` while it loads gets your script instead (the exception line is not "
    "shown, so this is read from the traceback alone).",
    "zh": "回溯从你的脚本 `{script}` 开始，它与标准模块 `{module}` 同名：Python 会把脚本所在目录放在"
    "搜索路径最前面，于是库在加载时导入 `{module}`，得到的却是你的脚本（没有贴出异常那一行，"
    "所以这只是根据回溯本身得出的判断）。",
}


@PITFALL.error_check(types=(), words=("in <module>",))
def script_named_like_a_module(block, report) -> Clue | None:
    """Only when no exception line was pasted: with one, `explain` above reads it."""
    if block.short_type or report.exceptions or "in <module>" not in (report.text or ""):
        return None
    from torchdoctor.catalog.sdk import is_user_path

    first = report.search(_SCRIPT_FRAME)
    if first is None or not is_user_path(first.group("path")):
        return None
    name = first.group("path").replace("\\", "/").rsplit("/", 1)[-1]
    module = name[:-3] if name.endswith(".py") else ""
    if module not in _SHADOWABLE or module in ("test", "parser"):
        return None
    if len(_IMPORT_CHAIN.findall(report.text or "")) < 3:
        return None  # a script that fails at its own line, not while a library imports
    return Clue(0.7, _CUT_CAUSE, fields={"module": module, "script": name})


# Attributes everybody uses: missing from these modules, the module is not the real one.
_EVERYDAY_MODULES = {
    "random": {"randint", "random", "seed", "shuffle", "choice", "sample", "uniform"},
    "copy": {"deepcopy", "copy"},
    "math": {"sqrt", "pi", "log", "exp", "ceil", "floor", "inf", "cos", "sin"},
    "json": {"load", "loads", "dump", "dumps"},
    "logging": {"getLogger", "info", "basicConfig", "INFO", "warning"},
    "time": {"time", "sleep", "perf_counter"},
    "inspect": {"signature", "getfullargspec", "isclass"},
    "typing": {"List", "Dict", "Optional", "Tuple", "Any", "Union"},
    "queue": {"Queue", "Empty"},
    "numpy": {"array", "zeros", "ones", "float32", "ndarray", "random", "arange"},
    # Not `device`, `tensor` or the dtypes: a torch older than 0.4 lacks them too.
    "torch": {
        "nn",
        "Tensor",
        "zeros",
        "ones",
        "cuda",
        "load",
        "save",
        "randn",
        "manual_seed",
        "optim",
        "utils",
    },
    "cv2": {"imread", "imwrite", "resize", "cvtColor"},
    "yaml": {"safe_load", "load", "dump"},
    "tqdm": {"tqdm"},
}
