"""TD003 device-mismatch: one operation gets tensors that live on different devices."""

from __future__ import annotations

import re

from torchdoctor.catalog.sdk import Clue, lazy_compile, Pitfall

PITFALL = Pitfall(
    code="TD003",
    name="device-mismatch",
    title={
        "en": "Tensors on different devices in one operation",
        "zh": "同一个运算中的张量位于不同设备上",
    },
    messages={
        "": {
            "en": "an operation received tensors on two devices (for example `cuda:0` and `cpu`): "
            "every input, weight and buffer must be on the same device",
            "zh": "一个运算收到了位于两个设备上的张量（例如 `cuda:0` 和 `cpu`）：输入、权重和 buffer "
            "必须在同一个设备上",
        }
    },
    fix_hint={
        "en": "Move the model once with `model.to(device)` and every batch with "
        "`x = x.to(device)` (assign the result: `Tensor.to` is not in place); create new "
        "tensors inside `forward` with `device=x.device`, and register constant tensors "
        "of a module with `register_buffer` so that they move with it.",
        "zh": "用 `model.to(device)` 把模型移过去一次，每个 batch 都写成 `x = x.to(device)`（要把结果赋值"
        "回去：`Tensor.to` 不是原地操作）；在 `forward` 里新建张量时传 `device=x.device`，"
        "模块里的常量张量用 `register_buffer` 注册，这样它们会跟着模块一起迁移。",
    },
    root_causes=("tensor-result-discarded", "unregistered-tensor-attribute"),
    docs={
        "en": """
## What it catches
The errors PyTorch raises when one operation mixes tensors on different devices: an input on
the CPU fed to a model on the GPU, a model left on the CPU with inputs on the GPU, a tensor
created inside `forward` without a device, two GPUs mixed in one operation.

## Why is this bad?
An operation runs on one device and reads all its inputs there; PyTorch never copies between
devices behind your back. The usual ways to end up with a tensor on the wrong device:

- `x.cuda()` or `x.to(device)` called without assigning the result: unlike `Module.to`,
  `Tensor.to` returns a copy and leaves `x` where it was;
- a tensor stored as a plain attribute of a module (`self.mask = torch.ones(...)`) or layers
  kept in a Python list instead of `nn.ModuleList`: `model.to(device)` does not see them;
- a tensor created in `forward` or in the loss (`torch.zeros(n)`, `torch.arange(n)`, an RNN's
  initial hidden state) without `device=`;
- labels, masks or token ids left on the CPU while the images or the model went to the GPU;
- a checkpoint loaded with `map_location="cpu"` after the model was moved.

## Symptoms
`RuntimeError: Expected all tensors to be on the same device, but found at least two devices,
cuda:0 and cpu! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)`;
newer versions: `Expected all tensors to be on the same device, but got index is on cpu,
different from other tensors on cuda:0 (when checking argument in method
wrapper_CUDA__index_select)`.

Convolutions: `Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should
be the same`, `Input type (CUDAFloatType) and weight type (CPUFloatType) should be the same`.

RNNs: `Input and hidden tensors are not at the same device, found input tensor at cuda:0 and
hidden tensor at cpu`, `Input and parameter tensors are not at the same device`.

Older versions: `Expected object of device type cuda but got device type cpu for argument #1
'self' in call to _thnn_conv2d_forward`, `Expected object of backend CUDA but got backend CPU
for argument #2 'mat1'`, `Tensor for argument #2 'mat1' is on CPU, but expected it to be on
GPU (while checking arguments for addmm)`, `expected device cuda:0 but got device cpu`,
`All input tensors must be on the same device. Received cuda:0 and cpu`,
`indices should be either on cpu or on the same device as the indexed tensor (cpu)`.

## References
- https://pytorch.org/docs/stable/notes/cuda.html#best-practices
- https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer
""",
        "zh": """
## What it catches
一个运算混用了不同设备上的张量时 PyTorch 抛出的错误：CPU 上的输入送进 GPU 上的模型，模型还留在 CPU
而输入已在 GPU 上，`forward` 里新建的张量没有指定设备，或者同一个运算里混用了两块 GPU。

## Why is this bad?
一个运算只在一个设备上执行，也只从这个设备上读取输入；PyTorch 从不在背后替你跨设备拷贝。
张量跑错设备，常见的原因有：

- 调用了 `x.cuda()` 或 `x.to(device)` 却没有把结果赋值回去：和 `Module.to` 不同，
  `Tensor.to` 返回一份拷贝，`x` 本身还在原处；
- 张量作为普通属性挂在模块上（`self.mask = torch.ones(...)`），或者子层放在 Python 列表而不是
  `nn.ModuleList` 里：`model.to(device)` 看不到它们；
- 在 `forward` 或损失函数里新建张量（`torch.zeros(n)`、`torch.arange(n)`、RNN 的初始隐状态）时没有
  传 `device=`；
- 图像或模型已经移到 GPU，标签、mask 或 token id 却还留在 CPU 上；
- 模型移到 GPU 之后，又用 `map_location="cpu"` 加载了 checkpoint。

## Symptoms
`RuntimeError: Expected all tensors to be on the same device, but found at least two devices,
cuda:0 and cpu! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)`；
较新的版本：`Expected all tensors to be on the same device, but got index is on cpu,
different from other tensors on cuda:0 (when checking argument in method
wrapper_CUDA__index_select)`。

卷积层：`Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the
same`、`Input type (CUDAFloatType) and weight type (CPUFloatType) should be the same`。

RNN：`Input and hidden tensors are not at the same device, found input tensor at cuda:0 and
hidden tensor at cpu`、`Input and parameter tensors are not at the same device`。

旧版本：`Expected object of device type cuda but got device type cpu for argument #1 'self' in
call to _thnn_conv2d_forward`、`Expected object of backend CUDA but got backend CPU for
argument #2 'mat1'`、`Tensor for argument #2 'mat1' is on CPU, but expected it to be on GPU
(while checking arguments for addmm)`、`expected device cuda:0 but got device cpu`、
`All input tensors must be on the same device. Received cuda:0 and cpu`、
`indices should be either on cpu or on the same device as the indexed tensor (cpu)`。

## References
- https://pytorch.org/docs/stable/notes/cuda.html#best-practices
- https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer
""",
    },
    example="""
import torch
import torch.nn as nn

device = torch.device("cuda")
model = nn.Linear(10, 2).to(device)
x = torch.randn(4, 10)
x.to(device)
y = model(x)
""",
    use_instead="""
import torch
import torch.nn as nn

device = torch.device("cuda")
model = nn.Linear(10, 2).to(device)
x = torch.randn(4, 10)
x = x.to(device)
y = model(x)
""",
)

_DEVICE = r"[A-Za-z]+(?::\d+)?"
# What the message says about the two sides: (odd, common, arg, op) groups.
_MESSAGES = [
    # 1.7+: the named argument is the one that differs from the device seen first.
    re.compile(
        r"Expected all tensors to be on the same device, but found at least two "
        rf"devices,\s+(?P<common>{_DEVICE})\s+and\s+(?P<odd>{_DEVICE})!"
        r"(?:\s*\(when checking ar(?:gu|ug)ment for argument (?P<arg>\w+) in method "
        r"(?P<op>\w+)\))?"
    ),
    # 2.x: "but got index is on cpu, different from other tensors on cuda:0".
    re.compile(
        rf"Expected all tensors to be on the same device, but got (?P<arg>\w+) is on "
        rf"(?P<odd>{_DEVICE}),\s+different from other tensors on (?P<common>{_DEVICE})"
        r"(?:\s*\(when checking argument in method (?P<op>\w+)\))?"
    ),
    re.compile(
        r"Expected all tensors to be on the same device\. (?P<op>\w+):? expected "
        r"'(?P<arg>\w+)' to be (?:a )?(?P<common>\w+) tensor, but got tensor on "
        rf"(?P<odd>{_DEVICE})"
    ),
    # 1.0-1.4.
    re.compile(
        r"Expected object of device type (?P<common>\w+) but got device type "
        r"(?P<odd>\w+) for argument #\d+ '(?P<arg>\w+)'(?: in call to (?P<op>\w+))?"
    ),
    # 0.4-1.0.
    re.compile(
        r"Expected object of backend (?P<common>\w+) but got backend (?P<odd>\w+) "
        r"for argument #\d+ '(?P<arg>\w+)'"
    ),
    re.compile(
        r"Tensor for argument #\d+ '(?P<arg>\w+)' is on (?P<odd>\w+), but expected "
        r"(?:it|them) to be on (?P<common>\w+)(?: \(while checking arguments for "
        r"(?P<op>\w+)\))?"
    ),
    re.compile(
        r"Expected tensor to have (?P<common>\w+) Backend, but got tensor with "
        r"(?P<odd>\w+) Backend(?: \(while checking arguments for (?P<op>\w+)\))?"
    ),
    re.compile(rf"expected device (?P<common>{_DEVICE}) but got device (?P<odd>{_DEVICE})"),
    re.compile(
        r"All input tensors must be on the same device\. Received "
        rf"(?P<common>{_DEVICE}) and (?P<odd>{_DEVICE})"
    ),
    re.compile(
        r"Expected tensor for '?(?:argument #\d+ )?'?(?P<arg>\w+)'? to have the same "
        r"device as tensor for argument #\d+ '(?P<other>\w+)'; but device "
        r"(?P<odd>-?\d+) does not equal (?P<common>-?\d+)"
        r"(?: \(while checking arguments for (?P<op>\w+)\))?"
    ),
]
_INPUT_TYPE = lazy_compile(
    r"Input type \((?P<input>[^()]+)\) and (?P<param>weight|bias) type "
    r"\((?P<weight>[^()]+)\) should be the same"
)
# 0.4: "Expected object of type torch.cuda.FloatTensor but found type torch.FloatTensor ...".
_OLD_TYPES = lazy_compile(
    r"Expected object of type (?P<common>[\w.]+) but found type "
    r"(?P<odd>[\w.]+) for argument #\d+ '(?P<arg>\w+)'"
)
_RNN = lazy_compile(
    r"Input and (?P<what>hidden|parameter) tensors are not at the same device, "
    rf"found input tensor at (?P<input>{_DEVICE}) and (?:hidden|parameter) "
    rf"tensor at (?P<other>{_DEVICE})"
)
_INDICES = lazy_compile(
    r"indices should be either on (?:cpu|CPU) or on the same device as the "
    rf"indexed tensor \((?P<indexed>{_DEVICE})\)"
)


def device_of(type_name: str) -> str | None:
    """The device a tensor type names: `torch.cuda.FloatTensor`, `CUDAFloatType` -> cuda;
    `torch.FloatTensor`, `CPUFloatType` -> cpu; plain dtypes (`float`) name none."""
    name = type_name.strip()
    if name.startswith("torch.cuda.") or name.startswith("CUDA"):
        return "cuda"
    if name.startswith("MPS") or name.startswith("torch.mps."):
        return "mps"
    if name.startswith("XPU"):
        return "xpu"
    if re.fullmatch(r"torch\.\w+Tensor", name) or name.startswith("CPU"):
        return "cpu"
    return None


def _normal(device: str) -> str:
    """`CPU` -> cpu, `GPU`/`CUDA` -> cuda, `-1` (old device index) -> cpu, `0` -> cuda:0."""
    lowered = device.lower()
    if lowered in ("gpu", "cuda"):
        return "cuda"
    if lowered == "-1":
        return "cpu"
    if lowered.isdigit():
        return f"cuda:{lowered}"
    return lowered


# "<what> is on <odd> while the other tensors of <op> are on <common>", then why.
_WHERE = {
    "en": "{what} is on {odd} while the other tensors of {op} are on {common}: ",
    "zh": "{what}在 {odd} 上，而{op}的其他张量在 {common} 上：",
}
_DATA_LEFT_BEHIND = {
    "en": "it was never moved to the model's device (a batch, label, mask or a tensor created "
    "in `forward` without `device=`), or `x.to(device)` was called without assigning "
    "the result.",
    "zh": "它从未被移到模型所在的设备（一个 batch、标签、mask，或在 `forward` 里新建却没有传 `device=` "
    "的张量），或者调用了 `x.to(device)` 却没有把结果赋值回去。",
}
_MODEL_LEFT_BEHIND = {
    "en": "the model, or part of it, stayed on the CPU (`model.to(device)` forgotten, layers "
    "kept in a plain list or dict instead of `nn.ModuleList`/`nn.ModuleDict`, or a tensor "
    "stored as a plain module attribute instead of a buffer).",
    "zh": "模型或其中一部分留在了 CPU 上（忘了 `model.to(device)`，子层放在普通 list/dict 而不是 "
    "`nn.ModuleList`/`nn.ModuleDict` 里，或者张量作为普通属性而不是 buffer 挂在模块上）。",
}
_TWO_GPUS = {
    "en": 'two GPUs are mixed, usually a hard-coded `.cuda()`/`"cuda:0"` next to a model placed '
    'on another GPU (`device_map="auto"`, DataParallel replicas, '
    "`torch.cuda.set_device` not called in each process).",
    "zh": '混用了两块 GPU，通常是代码里写死了 `.cuda()` 或 `"cuda:0"`，而模型被放在另一块 GPU 上'
    '（`device_map="auto"`、DataParallel 的副本，或者每个进程没有调用 `torch.cuda.set_device`）。',
}
# Arguments that hold a layer's parameters rather than data.
_WEIGHT_ARGUMENTS = frozenset({"mat2", "weight", "bias"})
_GENERIC_CAUSE = {
    "en": "One operation got tensors on different devices: the input batch, a label, a tensor "
    "created in `forward`, or part of the model was not moved to the same device as the "
    "rest.",
    "zh": "一个运算收到了位于不同设备上的张量：输入 batch、标签、`forward` 中新建的张量或模型的某一部分"
    "没有和其余部分移到同一个设备上。",
}
_WHAT = {
    "index": {
        "en": "the index tensor (for an embedding: the token ids)",
        "zh": "索引张量（对 embedding 来说就是 token id）",
    },
    "mat1": {"en": "the layer's input (`mat1`)", "zh": "该层的输入（`mat1`）"},
    "mat2": {"en": "the layer's weight (`mat2`)", "zh": "该层的权重（`mat2`）"},
    "input": {"en": "the input", "zh": "输入"},
    "weight": {"en": "the weight", "zh": "权重"},
    "target": {"en": "the target", "zh": "target"},
}


def _what(arg: str | None, lang: str) -> str:
    if arg in _WHAT:
        return _WHAT[arg][lang]
    if arg:
        return f"`{arg}`" if lang == "en" else f"参数 `{arg}` "
    return "one tensor" if lang == "en" else "其中一个张量"


def _op(op: str | None, lang: str) -> str:
    if not op:
        return "this operation" if lang == "en" else "这个运算"
    name = re.sub(r"^(?:wrapper_(?:CUDA_|CPU_|MPS_)?_*|_thnn_)|_forward$|_out$", "", op)
    return f"`{name}`" if lang == "en" else f" `{name}` "


def _side_clue(odd: str, common: str, arg: str | None, op: str | None) -> Clue:
    odd, common = _normal(odd), _normal(common)
    weight = arg in _WEIGHT_ARGUMENTS
    if odd.startswith("cuda") and common.startswith("cuda"):
        why = _TWO_GPUS
    elif (odd == "cpu") != weight:  # data on the CPU, or weights on the GPU with data behind
        why = _DATA_LEFT_BEHIND
    else:
        why = _MODEL_LEFT_BEHIND
    cause = {}
    for lang, text in _WHERE.items():
        sentence = text.format(what=_what(arg, lang), op=_op(op, lang), odd=odd, common=common)
        cause[lang] = sentence[0].upper() + sentence[1:] + why[lang]
    return Clue(0.95, cause)


# A report that a library's release or commit brought the error and that going back to the
# one before makes it go away ("since commit 5588725, FluxPipeline ... Expected all tensors to
# be on the same device", "downgrading to diffusers==0.20.2 resolves the issue"): the tensors
# were placed by the library's code (its offloading hooks), the user's code did not change.
_LIBRARY_REGRESSION = lazy_compile(
    r"\b[Ss]ince (?:the )?commit\b"
    r"|\b[Dd]owngrad(?:e|ed|ing)\b[^\n]{0,80}?\b(?:resolve[sd]?|fix(?:e[sd])?|solve[sd]?)\b"
    r"|\b(?:[Uu]pgrad|[Uu]pdat)(?:e|ed|ing) to\b[^\n]{0,40}?\b(?:results? in|breaks|broke)\b"
)


@PITFALL.error_check(
    types=("RuntimeError", "ValueError", "TypeError"),
    words=(
        "expected all tensors to be on the same device",
        "expected object of",
        "tensor for argument #",
        "expected tensor to have",
        "expected device",
        "all input tensors must be on the same device",
        "to have the same device as tensor for argument #",
        "input type",
        "tensors are not at the same device",
        "indices should be either on",
    ),
)
def check(block, report) -> Clue | None:
    if report.search(_LIBRARY_REGRESSION):
        return None  # the library moved the tensors, not the user's code
    message = block.message
    for pattern in _MESSAGES:
        found = pattern.search(message)
        if found is not None:
            fields = found.groupdict()
            return _side_clue(fields["odd"], fields["common"], fields.get("arg"), fields.get("op"))
    if _INPUT_TYPE.search(message):
        return _input_type_clue(message)
    found = _OLD_TYPES.search(message)
    if found is not None:
        odd, common = device_of(found["odd"]), device_of(found["common"])
        if odd is None or common is None or odd == common:
            return None  # same device: a dtype mismatch
        return _side_clue(odd, common, found["arg"], None)
    found = _RNN.search(message)
    if found is not None:
        if found["what"] == "hidden":
            return Clue(
                0.95,
                {
                    "en": "The RNN's input is on {input} but the initial hidden state is on "
                    "{other}: `h0 = torch.zeros(...)` was created without `device=`.",
                    "zh": "RNN 的输入在 {input} 上，初始隐状态却在 {other} 上："
                    "`h0 = torch.zeros(...)` 创建时没有传 `device=`。",
                },
                {
                    "en": "Create the state on the input's device: "
                    "`torch.zeros(num_layers, batch, hidden, device=x.device)`, or omit "
                    "`h0` to let the RNN create zeros itself.",
                    "zh": "在输入所在的设备上创建隐状态：`torch.zeros(num_layers, batch, hidden, "
                    "device=x.device)`，或者干脆不传 `h0`，让 RNN 自己创建全零状态。",
                },
                {"input": _normal(found["input"]), "other": _normal(found["other"])},
            )
        return _side_clue(found["input"], found["other"], "input", "rnn")
    found = _INDICES.search(message)
    if found is not None:
        return _side_clue(
            "cuda" if found["indexed"].lower() == "cpu" else "cpu",
            found["indexed"],
            "index",
            "index",
        )
    if "Expected all tensors to be on the same device" in message:
        return Clue(0.9, _GENERIC_CAUSE)
    return None


def _input_type_clue(message: str) -> Clue | None:
    found = _INPUT_TYPE.search(message)
    if found is None:
        return None
    source, weight = device_of(found["input"]), device_of(found["weight"])
    if source is None or weight is None or source == weight:
        return None  # a dtype mismatch (see dtype-mismatch), not a device one
    return _side_clue(source, weight, "input", "conv")


@PITFALL.error_check(types=(), words=("input type",))
def input_type_without_exception(block, report) -> Clue | None:
    """A convolution's message as an issue's title or a log line above frames pasted without
    their exception line: no printed exception to go by, so a little less sure."""
    if report.exceptions:
        return None  # a printed exception is read by `check`, or is another error's
    clue = _input_type_clue(block.message)
    if clue is None:
        return None
    return Clue(0.9, clue.cause)


# Log lines and text the parser could not split into an exception: the phrasings alone.
PITFALL.error(
    r"Expected all tensors to be on the same device|Expected object of (?:device type|backend) "
    r"\w+ but got (?:device type|backend) \w+|Tensor for argument #\d+ '\w+' is on \w+, but "
    r"expected it to be on|tensors are not at the same device, found input tensor at"
    r"|expected type torch\.cuda\.\w+Tensor but got torch\.\w+Tensor"
    r"|expected type torch\.\w+Tensor but got torch\.cuda\.\w+Tensor"
    # torch 1.0-1.4, a convolution's input on another GPU than its weight
    r"|Expected tensor for argument #\d+ '\w+' to have the same device as tensor for argument"
    r"|Indices should be either on cpu or on the same device as the indexed tensor",
    types=(),
    confidence=0.9,
    cause=_GENERIC_CAUSE,
    unless=_LIBRARY_REGRESSION,
)
# A CUDA default device (`torch.set_default_device("cuda")`) makes DataLoader's shuffling,
# `random_split` and `randperm` fail against their CPU generator.
PITFALL.error(
    r"Expected a '(?P<wanted>\w+)' device type for generator but found '(?P<found>\w+)'",
    confidence=0.85,
    cause={
        "en": "A random sampler got a generator on {found} while tensors are created on "
        "{wanted}: the default device was set to the GPU (`torch.set_default_device`, "
        "`torch.set_default_tensor_type(torch.cuda.FloatTensor)`), so DataLoader "
        "shuffling or `random_split` builds its indices there.",
        "zh": "随机采样器拿到的生成器在 {found} 上，而新建张量默认在 {wanted} 上：默认设备被设成了 GPU"
        "（`torch.set_default_device`、`torch.set_default_tensor_type(torch.cuda."
        "FloatTensor)`），于是 DataLoader 的 shuffle 或 `random_split` 在那里生成索引。",
    },
    fix={
        "en": "Keep the default device on the CPU and move tensors explicitly, or pass a "
        'matching generator: `DataLoader(..., generator=torch.Generator(device="cuda"))`.',
        "zh": "默认设备保持为 CPU，显式迁移张量；或者传入匹配的生成器："
        '`DataLoader(..., generator=torch.Generator(device="cuda"))`。',
    },
)
PITFALL.error(
    r"module must have its parameters and buffers on device (?P<wanted>\S+) \(device_ids\[0\]\) "
    r"but found one of them on device: (?P<found>\S+)",
    confidence=0.85,
    cause={
        "en": "DataParallel needs the model on {wanted} (its first device) before the first "
        "forward, but a parameter or buffer is on {found}: `.to(device)` was not "
        "called, or called on the wrapper's copy after the fact.",
        "zh": "DataParallel 要求在第一次前向之前模型就在 {wanted}（它的第一块设备）上，但有参数或 "
        "buffer 在 {found} 上：没有调用 `.to(device)`，或者调用得太晚。",
    },
    fix={
        "en": "Move the model to its first device before (or right after) wrapping it: "
        '`model = nn.DataParallel(model.to("{wanted}"), device_ids=...)`.',
        "zh": "在包装之前（或紧接着）把模型移到它的第一块设备上："
        '`model = nn.DataParallel(model.to("{wanted}"), device_ids=...)`。',
    },
)
