"""TD012 cpu-only-torch-build: CUDA asked of a torch installed without it."""

from __future__ import annotations

import re

from torchdoctor.catalog.sdk import Clue, Pitfall, lazy_compile

PITFALL = Pitfall(
    code="TD012",
    name="cpu-only-torch-build",
    title={
        "en": "CUDA used with a CPU-only build of PyTorch",
        "zh": "在仅支持 CPU 的 PyTorch 版本上使用 CUDA",
    },
    messages={
        "": {
            "en": "this torch was installed without CUDA support, so every `.cuda()` / "
            "`device='cuda'` fails: install a CUDA build, or fall back to the CPU",
            "zh": "当前安装的 torch 不支持 CUDA，所有 `.cuda()` / `device='cuda'` 都会失败："
            "请安装 CUDA 版本，或者退回到 CPU",
        }
    },
    fix_hint={
        "en": "Install a CUDA build with the command pytorch.org gives for your CUDA version "
        "(`pip install torch --index-url https://download.pytorch.org/whl/cu126`), after "
        '`pip uninstall torch`; check with `python -c "import torch; '
        'print(torch.version.cuda, torch.cuda.is_available())"`. Code meant to run anywhere '
        'picks `torch.device("cuda" if torch.cuda.is_available() else "cpu")`.',
        "zh": "先 `pip uninstall torch`，再用 pytorch.org 针对你的 CUDA 版本给出的命令安装 CUDA 版本"
        "（`pip install torch --index-url https://download.pytorch.org/whl/cu126`）；用 "
        '`python -c "import torch; print(torch.version.cuda, torch.cuda.is_available())"` '
        '检查。要在任何机器上都能运行的代码，用 `torch.device("cuda" if '
        'torch.cuda.is_available() else "cpu")` 选择设备。',
    },
    docs={
        "en": """
## What it catches
The error a CPU-only build of PyTorch gives as soon as the program asks for CUDA: `.cuda()`,
`.to("cuda")`, `torch.cuda.set_device(...)`, `device="cuda"` in a tensor constructor.

## Why is this bad?
`pip install torch` on Windows and macOS, `conda install pytorch` without the CUDA channel,
or a requirements file pinning `torch==X+cpu` installs a build that has no CUDA code at all,
whatever GPU and driver the machine has. `torch.version.cuda` is then `None` and
`torch.cuda.is_available()` is `False`. The program was fine; the installation is not.

## Symptoms
`AssertionError: Torch not compiled with CUDA enabled`, raised from `torch/cuda/__init__.py`
(`_lazy_init`).

## References
- https://pytorch.org/get-started/locally/
""",
        "zh": """
## What it catches
仅支持 CPU 的 PyTorch 版本在程序请求 CUDA 时报出的错误：`.cuda()`、`.to("cuda")`、
`torch.cuda.set_device(...)`、张量构造函数中的 `device="cuda"`。

## Why is this bad?
在 Windows 和 macOS 上直接 `pip install torch`、不加 CUDA 渠道的 `conda install pytorch`，或者
requirements 文件中固定了 `torch==X+cpu`，装上的都是完全不含 CUDA 代码的版本，与机器上的 GPU
和驱动无关。此时 `torch.version.cuda` 为 `None`，`torch.cuda.is_available()` 为 `False`。
程序本身没有问题，问题出在安装上。

## Symptoms
`AssertionError: Torch not compiled with CUDA enabled`，由 `torch/cuda/__init__.py`
（`_lazy_init`）抛出。

## References
- https://pytorch.org/get-started/locally/
""",
    },
    example="""
import torch

x = torch.ones(3).cuda()
""",
    use_instead="""
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.ones(3, device=device)
""",
)

# Compared folded (titles retype it), and without its last word: a pasted line is sometimes cut
# inside it ("AssertionError: Torch not compiled with CUDA ena").
_NOT_COMPILED = "torch not compiled with cuda"
_CPU_ONLY = {
    "en": "The installed torch is a CPU-only build: it has no CUDA code, whatever GPU and "
    "driver the machine has, so the first use of CUDA fails.",
    "zh": "安装的 torch 是仅支持 CPU 的版本：无论机器上有什么 GPU 和驱动，它都不含 CUDA 代码，"
    "所以第一次使用 CUDA 就会失败。",
}
# A build for Intel GPUs has no CUDA either, by design: the code, not the install, is wrong.
_XPU = re.compile(r"(?i)(?<![a-z])xpu(?![a-z])")
_XPU_BUILD = {
    "en": "The installed torch has no CUDA because it is built for another accelerator (Intel "
    "XPU, as the output shows), and this code calls CUDA: use that device (`torch.xpu`, "
    "`device='xpu'`) or skip the CUDA-only code, rather than install a CUDA build.",
    "zh": "安装的 torch 没有 CUDA，因为它是为另一种加速器（输出中可见 Intel XPU）构建的，而这段代码调用了 "
    "CUDA：请改用该设备（`torch.xpu`、`device='xpu'`）或跳过只适用于 CUDA 的代码，而不是安装 CUDA 版本。",
}


# The assertion raised inside torch.compile's stack (`BackendCompilerFailed: debug_wrapper raised
# AssertionError: Torch not compiled with CUDA enabled`, on an MPS or CPU device): the compiler
# asked for CUDA, not the user's code; the installed build is not what to change.
_COMPILER = lazy_compile(r"BackendCompilerFailed|torch\._dynamo|torch\._inductor")


@PITFALL.error_check(types=("AssertionError",), words=("torch not compiled with cuda",))
def not_compiled_with_cuda(block, report) -> Clue | None:
    if _NOT_COMPILED not in block.message.lower():
        return None
    return _build_without_cuda(report, 0.95, 0.6)


@PITFALL.error_check(types=(), words=("torch not compiled with cuda",))
def not_compiled_with_cuda_retold(block, report) -> Clue | None:
    """The message retold in an issue's title or prose above a traceback cut off before its
    exception line: no printed exception to go by, so a little less sure."""
    if _NOT_COMPILED not in block.message.lower() or report.exceptions:
        return None  # a printed exception is read by `not_compiled_with_cuda`, or is another's
    return _build_without_cuda(report, 0.85, 0.5)


def _build_without_cuda(report, cpu_only: float, xpu: float) -> Clue | None:
    """The answer to CUDA asked of a build without it, unless torch.compile asked: a CPU-only
    build, or an XPU one when the input shows it."""
    if report.search(_COMPILER):
        return None
    if report.search(_XPU):
        return Clue(xpu, _XPU_BUILD)
    return Clue(cpu_only, _CPU_ONLY)


# An extension's own version check (xFormers, and others worded alike) that names a CUDA torch
# it was built for and the installed `+cpu` one: "xFormers was built for: PyTorch 2.1.2+cu121
# with CUDA 1201 (you have 2.1.2+cpu)".
PITFALL.error(
    r"built for:?\s{1,8}PyTorch (?P<built>[\w.]{1,20}\+cu\d+)[^()\n]{0,40}"
    r"\(you have (?P<installed>[\w.]{1,20}\+cpu)\)",
    types=(),
    confidence=0.9,
    cause={
        "en": "An extension built for a CUDA build of PyTorch ({built}) found the CPU-only build "
        "({installed}) installed: its CUDA kernels cannot load, and CUDA is unavailable.",
        "zh": "一个为 CUDA 版 PyTorch（{built}）构建的扩展发现安装的是只支持 CPU 的版本（{installed}）："
        "它的 CUDA 内核无法加载，CUDA 也不可用。",
    },
    fix={
        "en": "Install a CUDA build of the same torch version (the `--index-url` for your CUDA "
        "from pytorch.org, e.g. `.../whl/cu121`), then check `torch.cuda.is_available()`.",
        "zh": "安装同一版本的 CUDA 版 torch（使用 pytorch.org 上对应 CUDA 的 `--index-url`，例如 "
        "`.../whl/cu121`），然后检查 `torch.cuda.is_available()`。",
    },
)
