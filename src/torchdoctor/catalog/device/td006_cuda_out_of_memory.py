"""TD006 cuda-out-of-memory: the GPU ran out of memory, and what the numbers say about why."""

from __future__ import annotations

import re

from torchdoctor.catalog.sdk import Clue, lazy_compile, Pitfall

PITFALL = Pitfall(
    code="TD006",
    name="cuda-out-of-memory",
    title={"en": "CUDA out of memory", "zh": "CUDA 显存不足"},
    messages={
        "": {
            "en": "the GPU ran out of memory: the batch or model is too big, memory grows across "
            "steps, another process holds it, or the cache is fragmented",
            "zh": "GPU 显存不足：batch 或模型太大，显存随训练步数增长，被其他进程占用，或者缓存碎片化",
        }
    },
    fix_hint={
        "en": "Lower the batch size (keep the effective batch with gradient accumulation), wrap "
        "evaluation in `torch.no_grad()`, accumulate `loss.item()` rather than `loss`, "
        "check `nvidia-smi` for other processes, and if reserved memory is much larger "
        "than allocated set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`.",
        "zh": "减小 batch size（用梯度累积保持等效 batch），评估代码放进 `torch.no_grad()`，累加 "
        "`loss.item()` 而不是 `loss`，用 `nvidia-smi` 查看是否有其他进程占用显存；如果保留的显存"
        "远大于已分配的显存，设置 `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`。",
    },
    root_causes=("accumulated-loss-graph", "eval-mode-missing"),
    docs={
        "en": """
## What it catches
Every phrasing of a GPU allocation failure: `CUDA out of memory` with or without numbers, the
old `cuda runtime error (2) : out of memory`, `CUDA error: out of memory`, cuBLAS failing to
allocate its workspace. When the message carries the allocator's numbers (requested, total,
free, allocated and reserved memory), the explanation says which cause they point at.

## Why is this bad?
The message names the allocation that failed, not the one that used the memory. The usual
causes, most likely first:

1. the batch, the input (image resolution, sequence length) or the model is too big for the
   GPU;
2. evaluation or inference runs without `torch.no_grad()`: every batch keeps its activations
   for a backward pass that never comes;
3. a loss tensor is accumulated across steps (`total_loss += loss`), which keeps every step's
   graph alive, so memory grows until it fails after some iterations;
4. another process holds GPU memory: a previous run still alive, a notebook kernel, several
   ranks on the same GPU (`nvidia-smi` lists them);
5. fragmentation: PyTorch's cache reserves much more than it has allocated, but in pieces too
   small for the request; `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` avoids it.

## Symptoms
`torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total
capacity of 7.79 GiB of which 3.12 MiB is free. Including non-PyTorch memory, this process has
7.78 GiB memory in use. Of the allocated memory 7.41 GiB is allocated by PyTorch, and 136.70
MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try
setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.`

torch 1.4 to 2.0: `RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79
GiB total capacity; 5.61 GiB already allocated; 29.44 MiB free; 5.70 GiB reserved in total by
PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid
fragmentation.`; torch 1.0 to 1.3: `... 991.56 MiB free; 607.00 KiB cached)`.

Older: `RuntimeError: cuda runtime error (2) : out of memory at
/pytorch/aten/src/THC/generic/THCStorage.cu:58`, `THCudaCheck FAIL file=... error=2 : out of
memory`; also `RuntimeError: CUDA error: out of memory` and
`CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate(handle)`.

## References
- https://pytorch.org/docs/stable/notes/cuda.html#memory-management
- https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory
""",
        "zh": """
## What it catches
GPU 分配显存失败的各种报错：带或不带数字的 `CUDA out of memory`，旧版的
`cuda runtime error (2) : out of memory`、`CUDA error: out of memory`，以及 cuBLAS 分配工作区失败。
如果报错里带有分配器的数字（请求量、总量、剩余、已分配和已保留的显存），解释会指出这些数字指向哪种原因。

## Why is this bad?
报错指出的是最后失败的那次分配，而不是占用了显存的那些分配。常见原因，按可能性从高到低：

1. batch、输入（图像分辨率、序列长度）或模型对这块 GPU 来说太大；
2. 评估或推理时没有用 `torch.no_grad()`：每个 batch 都为一次永远不会发生的反向传播保留着激活值；
3. 跨步累加损失张量（`total_loss += loss`），每一步的计算图都被留住，显存不断增长，跑了若干步之后才报错；
4. 其他进程占用了显存：上一次还没退出的运行、notebook 内核、同一块 GPU 上的多个 rank
   （`nvidia-smi` 能看到它们）；
5. 碎片化：PyTorch 的缓存保留的显存远多于实际分配的，但都是放不下这次请求的小块；
   `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` 可以避免。

## Symptoms
`torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total
capacity of 7.79 GiB of which 3.12 MiB is free. Including non-PyTorch memory, this process has
7.78 GiB memory in use. Of the allocated memory 7.41 GiB is allocated by PyTorch, and 136.70
MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try
setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.`

torch 1.4 到 2.0：`RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79
GiB total capacity; 5.61 GiB already allocated; 29.44 MiB free; 5.70 GiB reserved in total by
PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid
fragmentation.`；torch 1.0 到 1.3：`... 991.56 MiB free; 607.00 KiB cached)`。

更早的版本：`RuntimeError: cuda runtime error (2) : out of memory at
/pytorch/aten/src/THC/generic/THCStorage.cu:58`、`THCudaCheck FAIL file=... error=2 : out of
memory`；还有 `RuntimeError: CUDA error: out of memory` 和
`CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate(handle)`。

## References
- https://pytorch.org/docs/stable/notes/cuda.html#memory-management
- https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory
""",
    },
    example="""
import torch

def evaluate(model, loader):
    total_loss = 0
    for images, labels in loader:
        loss = torch.nn.functional.cross_entropy(model(images.cuda()), labels.cuda())
        total_loss += loss
    return total_loss / len(loader)
""",
    use_instead="""
import torch

@torch.no_grad()
def evaluate(model, loader):
    total_loss = 0.0
    for images, labels in loader:
        loss = torch.nn.functional.cross_entropy(model(images.cuda()), labels.cuda())
        total_loss += loss.item()
    return total_loss / len(loader)
""",
)

_GENERIC_CAUSE = {
    "en": "The GPU ran out of memory. Usual causes, most likely first: the batch, input size or "
    "model is too big for this GPU; evaluation runs without `torch.no_grad()`, keeping "
    "every batch's activations; loss tensors are accumulated across steps "
    "(`total_loss += loss`); another process holds GPU memory (`nvidia-smi`); the cache "
    "is fragmented (reserved >> allocated).",
    "zh": "GPU 显存不足。常见原因，按可能性从高到低：batch、输入尺寸或模型对这块 GPU 太大；评估时没有用 "
    "`torch.no_grad()`，每个 batch 的激活值都被保留；跨步累加了损失张量（`total_loss += loss`）；"
    "其他进程占用了显存（`nvidia-smi`）；缓存碎片化（保留的显存远大于已分配的）。",
}

# The allocator's numbers, in every message format since torch 1.0. A number starts after a
# non-digit: searched in a long run of digits, it would otherwise rescan the run from each one.
_SIZE = r"(?<!\d)(\d+(?:\.\d+)?) ?(bytes|[KMGT]iB|B)\b"
_NUMBER_PATTERNS = {
    "tried": [rf"Tried to allocate {_SIZE}"],
    "total": [rf"{_SIZE} total capacity", rf"total capac\w+ of {_SIZE}"],
    "free": [rf"{_SIZE} free\b", rf"of which {_SIZE} is free"],
    "allocated": [rf"{_SIZE} already allocated", rf"{_SIZE} is allocated by PyTorch"],
    "reserved": [rf"{_SIZE} reserved in total by PyTorch"],
    "unallocated": [rf"{_SIZE} is reserved by PyTorch but unallocated"],
    "cached": [rf"{_SIZE} cached\)"],
    "process": [rf"this process has {_SIZE} memory in use"],
}
_NUMBERS = {name: [re.compile(p) for p in patterns] for name, patterns in _NUMBER_PATTERNS.items()}
_UNITS = {"bytes": 1, "B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
_GIB = 2**30


def memory_numbers(message: str) -> dict[str, float]:
    """The sizes an out-of-memory message reports, in bytes, by name."""
    numbers = {}
    for name, patterns in _NUMBERS.items():
        for pattern in patterns:
            found = pattern.search(message)
            if found is not None:
                numbers[name] = float(found.group(1)) * _UNITS[found.group(2)]
                break
    return numbers


def _size(value: float) -> str:
    if value >= _GIB:
        return f"{value / _GIB:.2f} GiB"
    return f"{value / 2**20:.0f} MiB"


# What the numbers can point at, each with its cause and fix.
_VERDICTS = {
    "too-big": (
        {
            "en": "The numbers point at an input or batch too big for the GPU: this single "
            "allocation of {tried} is larger than the whole GPU ({total}), so freeing other "
            "memory cannot help.",
            "zh": "这些数字指向输入或 batch 对这块 GPU 来说太大：单次就要分配 {tried}，比整块 GPU（{total}）"
            "还大，释放别的显存也无济于事。",
        },
        {
            "en": "Make that tensor smaller: lower the batch size, image resolution or sequence "
            "length, or process it in chunks; mixed precision (`torch.autocast`) halves "
            "activations.",
            "zh": "把这个张量变小：减小 batch size、图像分辨率或序列长度，或者分块处理；混合精度"
            "（`torch.autocast`）能让激活值减半。",
        },
    ),
    "large-request": (
        {
            "en": "The numbers point at an input or batch too big for the GPU: this single "
            "allocation of {tried} is a large share of the GPU's {total}.",
            "zh": "这些数字指向输入或 batch 对这块 GPU 来说太大：单次分配 {tried}，占了 GPU 总量 "
            "{total} 的一大块。",
        },
        None,
    ),
    "other-process": (
        {
            "en": "The numbers point at another process: of the GPU's {total}, only {free} is free "
            "but PyTorch in this process reserved just {reserved}; about {others} is held "
            "elsewhere (another run, a notebook kernel, another rank on the same GPU, or "
            "non-PyTorch libraries).",
            "zh": "这些数字指向其他进程：GPU 共 {total}，只剩 {free}，而本进程中 PyTorch 只保留了 {reserved}；"
            "大约 {others} 被别处占用（另一次运行、notebook 内核、同一块 GPU 上的其他 rank，"
            "或者非 PyTorch 的库）。",
        },
        {
            "en": "Run `nvidia-smi` and stop what holds the GPU (or restart the notebook kernel); "
            "pick a free GPU with `CUDA_VISIBLE_DEVICES`, and make each rank call "
            "`torch.cuda.set_device(local_rank)`.",
            "zh": "运行 `nvidia-smi`，结束占用这块 GPU 的进程（或重启 notebook 内核）；用 "
            "`CUDA_VISIBLE_DEVICES` 选一块空闲的 GPU，并让每个 rank 调用 "
            "`torch.cuda.set_device(local_rank)`。",
        },
    ),
    "fragmentation": (
        {
            "en": "The numbers point at fragmentation: PyTorch reserved {reserved} but only "
            "{allocated} is in use; the {unallocated} cached but unallocated would hold the "
            "{tried} requested, yet not in one piece.",
            "zh": "这些数字指向碎片化：PyTorch 保留了 {reserved}，实际只用了 {allocated}；缓存中未分配的 "
            "{unallocated} 本来够这次请求的 {tried}，但不是连续的一整块。",
        },
        {
            "en": "Start the program with `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` "
            "(older torch: `max_split_size_mb:128`); tensor shapes that change every step "
            "(variable sequence lengths) fragment the cache, so pad them to a few fixed sizes.",
            "zh": "用 `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` 启动程序（较旧的 torch："
            "`max_split_size_mb:128`）；每一步形状都在变的张量（变长序列）会让缓存碎片化，"
            "可以把它们补齐到几个固定的长度。",
        },
    ),
    "own-tensors": (
        {
            "en": "The numbers point at this program's own tensors: PyTorch has {allocated} "
            "allocated of the GPU's {total}. Either the batch or model is too big, or memory "
            "grows step after step: evaluation without `torch.no_grad()`, or losses "
            "accumulated as tensors (`total_loss += loss`).",
            "zh": "这些数字指向本程序自己的张量：GPU 共 {total}，PyTorch 已分配 {allocated}。要么 batch "
            "或模型太大，要么显存一步步增长：评估时没有用 `torch.no_grad()`，或者以张量形式累加损失"
            "（`total_loss += loss`）。",
        },
        {
            "en": "Lower the batch size (gradient accumulation keeps the effective batch), wrap "
            "evaluation in `torch.no_grad()`, accumulate `loss.item()`, and drop references to "
            "large tensors you no longer need; `torch.autocast` or gradient checkpointing "
            "save activation memory.",
            "zh": "减小 batch size（用梯度累积保持等效 batch），评估放进 `torch.no_grad()`，累加 "
            "`loss.item()`，不再需要的大张量及时释放引用；`torch.autocast` 或梯度检查点"
            "（gradient checkpointing）可以节省激活值的显存。",
        },
    ),
}


def verdict(numbers: dict[str, float]) -> tuple[str, dict[str, str]] | None:
    """Which cause an out-of-memory message's numbers point at, with the sizes to quote."""
    tried, total = numbers.get("tried"), numbers.get("total")
    allocated = numbers.get("allocated")
    if tried is None or total is None:
        return None
    if tried > total:
        return "too-big", {"tried": _size(tried), "total": _size(total)}
    if allocated is None or "free" not in numbers:
        return None
    reserved = numbers.get("reserved")
    if reserved is None and "unallocated" in numbers:
        reserved = allocated + numbers["unallocated"]
    elif reserved is None and "cached" in numbers:
        # torch 1.0-1.3 printed the cached-but-unallocated part, later the whole cache.
        cached = numbers["cached"]
        reserved = cached if cached >= allocated else allocated + cached
    reserved = max(reserved or allocated, allocated)
    unallocated = reserved - allocated
    own = max(numbers.get("process", 0.0), reserved)
    others = total - numbers["free"] - own
    sizes = {
        "tried": _size(tried),
        "total": _size(total),
        "free": _size(numbers["free"]),
        "allocated": _size(allocated),
        "reserved": _size(reserved),
        "unallocated": _size(unallocated),
        "others": _size(max(others, 0.0)),
    }
    if others >= max(_GIB, 0.2 * total):
        return "other-process", sizes
    if unallocated >= tried and unallocated >= 0.25 * allocated:
        return "fragmentation", sizes
    if tried >= 0.25 * total:
        return "large-request", sizes
    return "own-tensors", sizes


# A function that evaluates: running out of memory there (and not in training) is the
# signature of a missing torch.no_grad().
_EVALUATION = lazy_compile(r"(?i)(?:^|_)(?:valid|eval|test|infer|predict)")
_EVALUATION_CAUSE = {
    "en": "The GPU ran out of memory in `{function}`, an evaluation function: without "
    "`torch.no_grad()`, evaluation keeps every batch's activations for a backward pass "
    "that never comes (also check for losses accumulated as tensors there). Otherwise "
    "the batch or model is too big, or another process holds memory (`nvidia-smi`).",
    "zh": "显存在评估函数 `{function}` 中耗尽：没有 `torch.no_grad()` 时，评估会为一次永远不会发生的反向"
    "传播保留每个 batch 的激活值（也检查一下那里是否以张量形式累加了损失）。否则就是 batch 或"
    "模型太大，或者其他进程占用了显存（`nvidia-smi`）。",
}
_EVALUATION_FIX = {
    "en": "Run `{function}` under `torch.no_grad()` (or decorate it with `@torch.no_grad()`) "
    "and accumulate `loss.item()`; evaluation can then use a larger batch than training.",
    "zh": "在 `torch.no_grad()` 下运行 `{function}`（或给它加上 `@torch.no_grad()` 装饰器），"
    "并累加 `loss.item()`；这样评估时甚至可以用比训练更大的 batch。",
}
_PHRASINGS = (
    # (retyped in titles and chat lines with the spaces around its colons dropped or added:
    # "CUDA:out of memory", "cuda runtime error(2):out of memory", or without its number,
    # "cuda runtime error: out of memory")
    r"(?:CUDA|HIP|XPU) ?:? ?out of memory",
    r"cuda runtime error ?(?:\(2\) ?)?: ?out of memory",
    r"CUDA error(?: \(2\))?: out of memory",
    r"error=2 : out of memory",
    r"CUBLAS_STATUS_ALLOC_FAILED",
    # The second half alone, as titles quote it: `(GPU 0; 7.79 GiB total capacity; ...)`,
    # since torch 2.1 `GPU 0 has a total capacity of 7.79 GiB of which 10.00 MiB is free`.
    r"\(GPU \d+; [\d.]+ ?[KMGT]?i?B total capacity",
    r"GPU \d+ has a total capacity of [\d.]+ ?[KMGT]?i?B of which",
    # The caching allocator's own refusal (torch 2.2+), when the request would pass the device's
    # memory or the limit of `torch.cuda.set_per_process_memory_fraction`.
    r"Allocation on device \d+ would exceed allowed memory",
)
_OUT_OF_MEMORY = lazy_compile("|".join(_PHRASINGS))


@PITFALL.error_check(
    types=(),
    words=(
        "out of memory",
        "cublas_status_alloc_failed",
        "total capacity",
        "would exceed allowed memory",
    ),
)
def check(block, report) -> Clue | None:
    if not _OUT_OF_MEMORY.search(block.message):
        return None
    found = verdict(memory_numbers(block.message))
    evaluation = next(
        (
            frame.function
            for frame in reversed(block.frames)
            if frame.function and _EVALUATION.search(frame.function)
        ),
        None,
    )
    if evaluation is not None and (found is None or found[0] == "own-tensors"):
        return Clue(0.97, _EVALUATION_CAUSE, _EVALUATION_FIX, {"function": evaluation})
    if found is None:
        return Clue(0.95, _GENERIC_CAUSE)
    name, sizes = found
    cause, fix = _VERDICTS[name]
    return Clue(0.97, cause, fix or _VERDICTS["too-big"][1], sizes)


# Messages without numbers, and log lines or text the parser could not split.
PITFALL.error(_OUT_OF_MEMORY.pattern, types=(), confidence=0.95, cause=_GENERIC_CAUSE)
# The allocator's refusal cut after its first words, as ComfyUI's error dialog and its users'
# titles show it (`torch.OutOfMemoryError: Allocation on device`): nothing else says it so.
PITFALL.error(
    r"Allocation on device[ \t.]*(?:\n|$)", types=(), confidence=0.8, cause=_GENERIC_CAUSE
)
# The exception's class named alone at the end of a line, its message translated or left out:
# ComfyUI's error report in the user's language (`Tipo de exceção: torch.OutOfMemoryError`,
# `Exception Type: torch.OutOfMemoryError`). Not `except torch.cuda.OutOfMemoryError:`.
PITFALL.error(
    r"(?m)(?<![\w.])torch\.(?:cuda\.)?OutOfMemoryError[*`]*[ \t]*$",
    types=(),
    confidence=0.8,
    cause=_GENERIC_CAUSE,
)
PITFALL.error(
    r"MPS backend out of memory",
    types=(),
    confidence=0.9,
    cause={
        "en": "The Apple GPU (MPS) ran out of memory: the batch, input size or model is too big, "
        "or memory grows across steps (evaluation without `torch.no_grad()`, losses "
        "accumulated as tensors).",
        "zh": "Apple GPU（MPS）显存不足：batch、输入尺寸或模型太大，或者显存随步数增长"
        "（评估时没有用 `torch.no_grad()`、以张量形式累加损失）。",
    },
)
# cuDNN gives up on its convolution algorithms when it cannot get workspace memory.
PITFALL.error(
    r"Unable to find a valid cuDNN algorithm to run convolution",
    confidence=0.6,
    cause=_GENERIC_CAUSE,
)
