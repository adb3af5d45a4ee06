"""TD707 cpp-extension-removed-api: C++/CUDA extension code written for the old THC/ATen API."""

from __future__ import annotations

import re
from typing import Iterator

from torchdoctor.catalog.sdk import Finding, NativeSource, Pitfall

PITFALL = Pitfall(
    code="TD707",
    name="cpp-extension-removed-api",
    title={
        "en": "C++/CUDA extension uses an API removed from PyTorch",
        "zh": "C++/CUDA 扩展使用了 PyTorch 已移除的 API",
    },
    messages={
        "": {
            "en": "`{old}` was removed from PyTorch; use `{new}`",
            "zh": "`{old}` 已从 PyTorch 中移除；请改用 `{new}`",
        },
        "thc-header": {
            "en": "`#include <{old}>`: the THC library was removed in PyTorch 1.11; {new}",
            "zh": "`#include <{old}>`：THC 库已在 PyTorch 1.11 中移除；{new}",
        },
        "dispatch": {
            "en": "`{old}`: the `AT_DISPATCH_*` macros no longer accept `Tensor::type()` "
            "(torch >= 2.6 fails to compile); use `{new}`",
            "zh": "`{old}`：`AT_DISPATCH_*` 宏不再接受 `Tensor::type()`（torch >= 2.6 "
            "编译失败）；请改用 `{new}`",
        },
        "type-first": {
            "en": "`{old}` passes a type as the factory's first argument: that overload is gone "
            "(a compile error today); pass the sizes first and `{new}` after them",
            "zh": "`{old}` 把类型作为工厂函数的第一个参数：这个重载已经不存在（现在会编译失败）；"
            "请先传尺寸，再在其后传 `{new}`",
        },
        "deprecated": {
            "en": "`{old}` is deprecated (a compiler warning today, an error once it is "
            "removed); use `{new}`",
            "zh": "`{old}` 已弃用（现在是编译警告，移除后就是编译错误）；请改用 `{new}`",
        },
    },
    fix_title={"en": "Use the current API name", "zh": "改用现行的 API"},
    fix_applicability="safe",
    fix_hint={
        "en": "Rename `AT_CHECK` to `TORCH_CHECK`, `.data<T>()` to `.data_ptr<T>()`, "
        "`x.type()` in `AT_DISPATCH_*` to `x.scalar_type()`, drop THC headers and "
        "`THCState` for `<ATen/cuda/CUDAContext.h>` and "
        "`at::cuda::getCurrentCUDAStream()`. `torchdoctor check --fix` does the "
        "mechanical renames in .cpp/.cu files.",
        "zh": "把 `AT_CHECK` 改为 `TORCH_CHECK`，`.data<T>()` 改为 `.data_ptr<T>()`，"
        "`AT_DISPATCH_*` 中的 `x.type()` 改为 `x.scalar_type()`，去掉 THC 头文件和 "
        "`THCState`，改用 `<ATen/cuda/CUDAContext.h>` 与 "
        "`at::cuda::getCurrentCUDAStream()`。`torchdoctor check --fix` 会在 .cpp/.cu "
        "文件中完成这些机械的改名。",
    },
    # Its Example is C++ source, which the Python checker cannot read.
    lint_example=False,
    docs={
        "en": """
## What it catches
C++ and CUDA extension sources (`.cpp`, `.cc`, `.cu`, `.cuh`, `.h`, `.hpp`) that use APIs
removed from PyTorch: `AT_CHECK` (now `TORCH_CHECK`), the THC headers (`THC/THC.h`,
`THC/THCGeneral.h`, ...) and `THCState` / `THCState_getCurrentStream` / `THCudaCheck`, and the
deprecated spellings on their way out: `tensor.data<T>()` (now `data_ptr<T>()`) and
`tensor.type()` used for dispatch (an error since torch 2.6) or for the scalar type (`AT_DISPATCH_FLOATING_TYPES(x.type(), ...)`, `x.type().scalarType()`,
`x.type().is_cuda()`, `at::zeros(size, x.type())`). Comments and string literals are ignored;
only files that use PyTorch's C++ API are read.

## Why is this bad?
Extensions written for PyTorch 0.4-1.x (many research repositories: DCN, RoIAlign, NMS,
correspondence layers, CUDA samplers) stop compiling on current releases. The THC library was
deleted in 1.11 and `AT_CHECK` in 1.5; since 2.6 the dispatch macros reject `x.type()`, and
`data<T>()` and `type()` only compile with deprecation warnings until they go too. The build fails with a long compiler log in which the actual reason is one line among
hundreds, and `pip install` of such a repository just says the extension failed to build.

## Symptoms
`error: 'AT_CHECK' was not declared in this scope`, `fatal error: THC/THC.h: No such file or
directory`, `error: 'THCState' does not name a type`, `error: identifier
"THCState_getCurrentStream" is undefined`, `error: identifier "THArgCheck" is undefined`,
`cannot convert 'const at::DeprecatedTypeProperties' to 'c10::ScalarType'`, and the deprecation
warning
`Tensor.data<T>() is deprecated. Please use Tensor.data_ptr<T>() instead.`, ending in
`RuntimeError: Error building extension`.

## Fix safety
The fixes are the renames PyTorch itself made: `AT_CHECK` -> `TORCH_CHECK`, `THCudaCheck` ->
`C10_CUDA_CHECK`, `data<T>()` -> `data_ptr<T>()`, `x.type()` -> `x.scalar_type()` where a
scalar type is expected, `THCState_getCurrentStream(state)` -> `at::cuda::getCurrentCUDAStream()`
and the THC headers that have a direct ATen successor. `at::zeros(size, x.type())` becomes
`x.options()` only with `--unsafe-fixes`: the options also carry `x`'s device, which is usually
what was meant. `THCState` declarations and other THC calls are reported without a fix: remove
them by hand.

## Known problems
`data<T>()` is not reported where the project promises to run on a torch older than 1.3 (a lower
bound such as `torch>=1.1` in its requirements or packaging metadata, or else its README's
`PyTorch>=1.1.0`): the typed `data_ptr<T>()` does not compile there. The removed APIs are
reported whatever the promise: the extension no longer builds on current torch.

The scan reads tokens, not C++. A renamed name the file `#define`s itself for compatibility
(`#ifndef AT_CHECK` / `#define AT_CHECK TORCH_CHECK`) is not reported anywhere in that file, nor
is the reverse shim for torch before the rename, `#define TORCH_CHECK AT_CHECK`; a definition
in a header of the project is not seen (add `// noqa: TD707` on the uses).
`THC/THCAtomics.cuh` and `THC/THCDeviceUtils.cuh` are not reported: PyTorch still ships them as
forwarding headers.
""",
        "zh": """
## What it catches
C++ 与 CUDA 扩展源文件（`.cpp`、`.cc`、`.cu`、`.cuh`、`.h`、`.hpp`）中使用了已从 PyTorch 移除的
API：`AT_CHECK`（现为 `TORCH_CHECK`）、THC 头文件（`THC/THC.h`、`THC/THCGeneral.h` 等）以及
`THCState` / `THCState_getCurrentStream` / `THCudaCheck`；以及即将移除的已弃用写法：
`tensor.data<T>()`（现为 `data_ptr<T>()`），和用于分派（torch 2.6 起直接报错）或取标量类型的
`tensor.type()`
（`AT_DISPATCH_FLOATING_TYPES(x.type(), ...)`、`x.type().scalarType()`、`x.type().is_cuda()`、
`at::zeros(size, x.type())`）。注释和字符串字面量会被忽略；只读取使用了 PyTorch C++ API 的文件。

## Why is this bad?
为 PyTorch 0.4-1.x 编写的扩展（大量研究代码仓库里的 DCN、RoIAlign、NMS、相关层、CUDA 采样器等）
在当前版本上无法编译。THC 库在 1.11 中被删除，`AT_CHECK` 在 1.5 中被删除；从 2.6 起分派宏不再
接受 `x.type()`，而 `data<T>()` 和 `type()` 目前只是带着弃用警告还能编译，迟早也会被移除。编译失败时会输出很长的编译日志，真正的原因只是几百行中的一行；
而 `pip install` 这类仓库时只会告诉你扩展构建失败。

## Symptoms
`error: 'AT_CHECK' was not declared in this scope`、`fatal error: THC/THC.h: No such file or
directory`、`error: 'THCState' does not name a type`、`error: identifier
"THCState_getCurrentStream" is undefined`、`error: identifier "THArgCheck" is undefined`、
`cannot convert 'const at::DeprecatedTypeProperties' to 'c10::ScalarType'`，以及弃用警告
`Tensor.data<T>() is deprecated. Please use Tensor.data_ptr<T>() instead.`，最后是
`RuntimeError: Error building extension`。

## Fix safety
这些修复就是 PyTorch 自己做过的改名：`AT_CHECK` -> `TORCH_CHECK`、`THCudaCheck` ->
`C10_CUDA_CHECK`、`data<T>()` -> `data_ptr<T>()`、需要标量类型处的 `x.type()` ->
`x.scalar_type()`、`THCState_getCurrentStream(state)` -> `at::cuda::getCurrentCUDAStream()`，
以及有直接 ATen 替代的 THC 头文件。`at::zeros(size, x.type())` 改成 `x.options()` 只在
`--unsafe-fixes` 下进行：options 还带有 `x` 所在的设备，这通常正是原意。`THCState` 声明和其他
THC 调用只报告、不自动修复：请手动删除。

## Known problems
项目声明支持早于 1.3 的 torch 时（其 requirements 或打包元数据中的下界，如 `torch>=1.1`；都没有时看
README 中的 `PyTorch>=1.1.0`），不报告 `data<T>()`：那些版本上带类型的 `data_ptr<T>()` 无法编译。
已移除的 API 不论声明如何都会报告：扩展在当前 torch 上已经无法编译。

扫描看的是记号而不是 C++ 语法。文件为了兼容自己 `#define` 的旧名字（`#ifndef AT_CHECK` /
`#define AT_CHECK TORCH_CHECK`）在该文件中任何位置都不报告，为改名之前的 torch 反向定义的
`#define TORCH_CHECK AT_CHECK` 也不报告；定义在项目某个头文件里的则看不到（请在使用处加 `// noqa: TD707`）。`THC/THCAtomics.cuh` 与 `THC/THCDeviceUtils.cuh` 不会被报告：
PyTorch 仍然以转发头文件的形式提供它们。
""",
    },
    example="""
#include <torch/extension.h>
#include <THC/THC.h>

extern THCState *state;

void forward(at::Tensor input) {
  AT_CHECK(input.is_cuda(), "input must be a CUDA tensor");
  cudaStream_t stream = THCState_getCurrentStream(state);
  AT_DISPATCH_FLOATING_TYPES(input.type(), "forward", ([&] {
    kernel<<<1, 1, 0, stream>>>(input.data<scalar_t>());
  }));
}
""",
    use_instead="""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

void forward(at::Tensor input) {
  TORCH_CHECK(input.is_cuda(), "input must be a CUDA tensor");
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "forward", ([&] {
    kernel<<<1, 1, 0, stream>>>(input.data_ptr<scalar_t>());
  }));
}
""",
    example_syntax="cpp",
)

_BUILD_ERROR_CAUSE = {
    "en": "The extension's C++/CUDA source uses `{api}`, which current PyTorch no longer has: "
    "the code was written for an older release.",
    "zh": "扩展的 C++/CUDA 源码使用了 `{api}`，而当前的 PyTorch 已经没有它：这些代码是为旧版本写的。",
}
for _pattern in (
    # gcc quotes names with '...' or, in a UTF-8 locale, with typographic quotes.
    r"['\u2018](?P<api>AT_CHECK|THCudaCheck|THCCeilDiv|THCudaMalloc|THCudaFree"
    r"|THCState_getCurrentStream)['\u2019] was not declared",
    r'identifier "(?P<api>AT_CHECK|THCudaCheck|THCCeilDiv|THCState_getCurrentStream|THCState)" '
    r"is undefined",
    r"['\u2018](?P<api>THCState)['\u2019] (?:does not name a type|was not declared)",
    # gcc `THC/THC.h: No such file`, MSVC `Cannot open include file: 'THC/THC.h': No such
    # file`, retold `<THC/THCDeviceUtils.cuh> not found`. Not clang's `'THC/THC.h' file not
    # found`: the one real case of it (fairseq#97, 2018) predates the removal.
    r"(?P<api>THC?/\w+\.(?:h|cuh|hpp))(?:['\"\u2019\u201d]?: (?:No such file or directory"
    r"|没有那个文件或目录)"
    r"|>? not found)",
    r"cannot open source file \"(?P<api>THC?/\w+\.(?:h|cuh|hpp))\"",
    r"(?P<api>DeprecatedTypeProperties)\W{1,4}\s*to\W{1,4}(?:c10::)?ScalarType",
):
    PITFALL.error(_pattern, types=(), confidence=0.95, cause=_BUILD_ERROR_CAUSE)
# Retold in a title without the header's path (`build pointnet2 error THC not found`): THC
# is missing from every PyTorch since 1.11, but the words are the user's, so a little less sure.
PITFALL.error(
    r"\b(?P<api>THC) (?:headers? |library |module )?(?:is |was )?not found",
    types=(),
    confidence=0.8,
    cause=_BUILD_ERROR_CAUSE,
)
# `AT_CHECK` retold without the compiler's quotes (`AT_CHECK was not declared in this scope`,
# a title's `AT_CHECK is deprecated in torch 1.5`): the macro is ATen's own, gone since 1.5.
PITFALL.error(
    r"(?<![\w'\u2018])(?P<api>AT_CHECK)[\"`'\u2019]? (?:was |is |has been )?"
    r"(?:not declared|not defined|undefined|deprecated|removed)",
    types=(),
    confidence=0.85,
    cause=_BUILD_ERROR_CAUSE,
)
# Any other name of the legacy TH/THC C API (`THArgCheck`, `THError`, `THFloatTensor`,
# `THCudaTensor_data`, `THCNumerics`): TH, an optional C, then a capitalised word. All-capitals
# names (`THRESHOLD`) are someone's own macros, not this API: the name keeps its case when the
# rest of a message is matched case-folded.
_LEGACY_NAME = r"(?P<api>(?-i:TH[A-Z]?[A-Z][a-z])\w{0,40})"
_LEGACY_CAUSE = {
    "en": "The extension's C++/CUDA source uses `{api}`, a name of the legacy TH/THC C API "
    "that PyTorch removed (THC in 1.11, the rest of TH by 1.13): the code was written for an "
    "older release.",
    "zh": "扩展的 C++/CUDA 源码使用了 `{api}`，它属于 PyTorch 已经移除的旧 TH/THC C API"
    "（THC 在 1.11 移除，TH 的其余部分到 1.13 也已移除）：这些代码是为旧版本写的。",
}
_LEGACY_FIX = {
    "en": "Replace it with its ATen/c10 successor: `THArgCheck(cond, n, msg)` and `THAssert` "
    "become `TORCH_CHECK(cond, msg)`, `THError(msg)` `TORCH_CHECK(false, msg)`, "
    "`THCudaCheck` `C10_CUDA_CHECK`, TH/THC tensors `at::Tensor`; or build against the "
    "PyTorch release the code was written for.",
    "zh": "换成对应的 ATen/c10 写法：`THArgCheck(cond, n, msg)` 和 `THAssert` 改为 "
    "`TORCH_CHECK(cond, msg)`，`THError(msg)` 改为 `TORCH_CHECK(false, msg)`，`THCudaCheck` 改为 "
    "`C10_CUDA_CHECK`，TH/THC 张量改为 `at::Tensor`；或者用这些代码当初对应的 PyTorch 版本编译。",
}
for _pattern in (
    r'identifier "' + _LEGACY_NAME + r'" is undefined',
    r"['\u2018]" + _LEGACY_NAME + r"['\u2019] was not declared",
    r"['\u2018]" + _LEGACY_NAME + r"['\u2019] has not been declared",
    r"['\u2018]" + _LEGACY_NAME + r"['\u2019] does not name a type",
    r"undeclared identifier ['\u2018]" + _LEGACY_NAME + r"['\u2019]",
):
    PITFALL.error(_pattern, types=(), confidence=0.9, cause=_LEGACY_CAUSE, fix=_LEGACY_FIX)
# The deprecation of `data<T>()`: gcc points at its declaration in torch's TensorBody.h.
PITFALL.error(
    r"(?:Tensor\.data<T>\(\) is deprecated|declared here\s+T \* data\(\) const)",
    types=(),
    confidence=0.8,
    cause={
        "en": "The extension calls `tensor.data<T>()`, deprecated in favour of "
        "`tensor.data_ptr<T>()`: code written for an older PyTorch.",
        "zh": "扩展调用了已弃用的 `tensor.data<T>()`（应改用 `tensor.data_ptr<T>()`）："
        "这是为旧版 PyTorch 写的代码。",
    },
)
# The deprecation of `Tensor::type()`: the compiler quotes its attribute's message, or (its
# warning cut off) points at the declaration in torch's TensorBody.h. A warning today, an error
# in the dispatch macros since 2.6.
PITFALL.error(
    r"Tensor\.type\(\) is deprecated"
    r"|declared here\s+DeprecatedTypeProperties ?& ?type\(\)",
    types=(),
    confidence=0.85,
    cause={
        "en": "The extension calls `tensor.type()` (`x.type().is_cuda()`, "
        "`x.type().scalarType()`, `AT_DISPATCH_*(x.type(), ...)`), deprecated since PyTorch 1.x: "
        "code written for an older PyTorch.",
        "zh": "扩展调用了已弃用的 `tensor.type()`（`x.type().is_cuda()`、`x.type().scalarType()`、"
        "`AT_DISPATCH_*(x.type(), ...)`）：这是为旧版 PyTorch 写的代码。",
    },
    fix={
        "en": "Ask the tensor itself: `x.is_cuda()` (or `x.device().is_cuda()`), "
        "`x.scalar_type()`, `x.options()` where a type was passed to a factory.",
        "zh": "直接问张量本身：`x.is_cuda()`（或 `x.device().is_cuda()`）、`x.scalar_type()`；"
        "传给工厂函数的类型改用 `x.options()`。",
    },
)

# Only files that use PyTorch's C++ API are read: `.type()` and `data<T>()` mean nothing else.
_USES_TORCH = re.compile(r"torch/|ATen|THC|\bat::|\btorch::|\bc10::|AT_CHECK|AT_DISPATCH")
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](?P<header>THC/[\w./]+)[>"]', re.M)
# Removed header -> its ATen successor (other THC headers: reported without a fix).
_HEADERS = {
    "THC/THC.h": "ATen/cuda/CUDAContext.h",
    "THC/THCGeneral.h": "ATen/cuda/CUDAContext.h",
}
# Kept by PyTorch as forwarding headers (for torchvision): they still compile, not reported.
_SHIMS = frozenset({"THC/THCAtomics.cuh", "THC/THCDeviceUtils.cuh"})
# Renamed identifiers: old -> (new, fix applicability or None for report-only).
_RENAMED = {
    "AT_CHECK": ("TORCH_CHECK", "safe"),
    "THCudaCheck": ("C10_CUDA_CHECK", "safe"),
    "THCState": ("at::cuda::getCurrentCUDAStream() (drop the THCState)", None),
    "THCudaMalloc": ("c10::cuda::CUDACachingAllocator::raw_alloc", None),
    "THCudaFree": ("c10::cuda::CUDACachingAllocator::raw_delete", None),
    "THCCeilDiv": ("at::ceil_div (ATen/ceil_div.h)", None),
    "THCNumerics": ("at::_isnan / std:: functions", None),
}
_IDENTIFIER = re.compile(r"\b(?:" + "|".join(_RENAMED) + r")\b")
# A `#define` line and the name it defines: the old name defined by the file itself, or
# `#define TORCH_CHECK AT_CHECK`, the new name defined as the old one for torch before the
# rename (under `#ifndef TORCH_CHECK`), which current torch never compiles.
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(?P<name>\w+)", re.M)
_GET_STREAM = re.compile(r"\bTHCState_getCurrentStream\s*\(")
_DATA = re.compile(r"(?:\.|->)\s*(?P<name>data)\s*<\s*(?P<type>[\w:]+(?:\s*\*)?)\s*>\s*\(\s*\)")
_DISPATCH = re.compile(r"\bAT_DISPATCH_\w+\s*\(")
_TYPE_PROPERTY = re.compile(r"\.\s*type\s*\(\s*\)\s*\.\s*(?P<prop>scalarType|is_cuda)\s*\(\s*\)")
_FACTORY = re.compile(r"\b(?:at|torch)::(?:zeros|ones|empty|full|rand|randn|arange)\s*\(")
_TYPE_CALL = re.compile(r"\.\s*type\s*\(\s*\)")


@PITFALL.native
def scan(source: NativeSource) -> Iterator[Finding]:
    if not _USES_TORCH.search(source.code):
        return
    yield from _headers(source)
    yield from _identifiers(source)
    yield from _get_stream(source)
    yield from _data_template(source)
    yield from _type_uses(source)


def _headers(source: NativeSource) -> Iterator[Finding]:
    # Matched on the text (a quoted header is a literal, blanked in `code`), but only where the
    # directive itself is code, not a commented-out include.
    for match in _INCLUDE.finditer(source.text):
        hash_at = source.text.index("#", match.start())
        if source.code[hash_at] != "#":
            continue
        header = match.group("header")
        if header in _SHIMS or not header.endswith((".h", ".cuh")):
            continue  # `.muh` and friends belong to other vendors' ports
        successor = _HEADERS.get(header)
        start, end = match.span("header")
        if successor is None:
            advice = {
                "en": "remove it and use the ATen/c10 CUDA headers",
                "zh": "请删除它，改用 ATen/c10 的 CUDA 头文件",
            }
            yield source.finding(
                PITFALL, match.start(), match.end(), "thc-header", old=header, new=advice
            )
            continue
        advice = {"en": f"include <{successor}> instead", "zh": f"请改为包含 <{successor}>"}
        fix = source.fix(PITFALL, "safe", source.edit(start, end, successor))
        yield source.finding(
            PITFALL, match.start(), match.end(), "thc-header", fix=fix, old=header, new=advice
        )


def _identifiers(source: NativeSource) -> Iterator[Finding]:
    # `#ifndef AT_CHECK` / `#define AT_CHECK TORCH_CHECK`: a name the file defines itself
    # compiles whatever torch provides (HRNet's fallback, `#define AT_CHECK AT_ASSERT`).
    own = {m["name"] for m in _DEFINE.finditer(source.code)}
    for match in _IDENTIFIER.finditer(source.code):
        old = match.group()
        new, applicability = _RENAMED[old]
        if old in own or _defines(source, match.start(), new):
            continue
        fix = (
            source.fix(PITFALL, applicability, source.edit(*match.span(), new))
            if applicability
            else None
        )
        yield source.finding(PITFALL, *match.span(), fix=fix, old=old, new=new)


def _defines(source: NativeSource, offset: int, name: str) -> bool:
    """The line holding `offset` is a `#define` of `name`."""
    _, column = source.position(offset)
    defined = _DEFINE.match(source.code, offset - column + 1)
    return defined is not None and defined["name"] == name and defined.end() <= offset


def _get_stream(source: NativeSource) -> Iterator[Finding]:
    new = "at::cuda::getCurrentCUDAStream()"
    for match in _GET_STREAM.finditer(source.code):
        end = _closing_paren(source.code, match.end() - 1)
        if end is None:
            continue
        fix = source.fix(PITFALL, "safe", source.edit(match.start(), end, new))
        yield source.finding(
            PITFALL, match.start(), end, fix=fix, old=source.text[match.start() : end], new=new
        )


# The torch release whose `data_ptr<T>()` took a type (pytorch#24847).
DATA_PTR_SINCE = "1.3"


def _data_template(source: NativeSource) -> Iterator[Finding]:
    if source.project.supports_before("torch", DATA_PTR_SINCE):
        return  # `data_ptr<T>()` would not compile on the older torch the project supports
    for match in _DATA.finditer(source.code):
        start, end = match.span("name")
        fix = source.fix(PITFALL, "safe", source.edit(start, end, "data_ptr"))
        yield source.finding(
            PITFALL,
            start,
            match.end(),
            "deprecated",
            fix=fix,
            old=f"data<{match.group('type')}>()",
            new=f"data_ptr<{match.group('type')}>()",
        )


def _type_uses(source: NativeSource) -> Iterator[Finding]:
    code = source.code
    for match in _TYPE_PROPERTY.finditer(code):
        new = ".scalar_type()" if match.group("prop") == "scalarType" else ".is_cuda()"
        fix = source.fix(PITFALL, "safe", source.edit(*match.span(), new))
        yield source.finding(
            PITFALL,
            *match.span(),
            "deprecated",
            fix=fix,
            old=code[match.start() : match.end()].replace(" ", ""),
            new=new,
        )
    for match in _DISPATCH.finditer(code):
        first = _first_argument(code, match.end())
        if first is None:
            continue
        call = _TYPE_CALL.search(code, *first)
        if call is not None and call.end() == first[1]:
            fix = source.fix(PITFALL, "safe", source.edit(*call.span(), ".scalar_type()"))
            yield source.finding(
                PITFALL,
                *call.span(),
                "dispatch",
                fix=fix,
                old=code[first[0] : first[1]],
                new=".scalar_type()",
            )
    for match in _FACTORY.finditer(code):
        end = _closing_paren(code, match.end() - 1)
        if end is None:
            continue
        first = _first_argument(code, match.end())
        for call in _TYPE_CALL.finditer(code, match.end(), end):
            if _TYPE_PROPERTY.match(code, call.start()):
                continue  # `.type().scalarType()`: reported above
            if first is not None and call.end() == first[1]:
                # `at::empty(z.type(), {0})`, the Type-first overload of PyTorch 0.4: no fix,
                # the arguments change places too (HRNet's inplace_abn).
                receiver = code[first[0] : call.start()]
                yield source.finding(
                    PITFALL,
                    *call.span(),
                    "type-first",
                    old=code[first[0] : first[1]],
                    new=f"{receiver}.options()",
                )
                continue
            fix = source.fix(PITFALL, "unsafe", source.edit(*call.span(), ".options()"))
            yield source.finding(
                PITFALL, *call.span(), "deprecated", fix=fix, old=".type()", new=".options()"
            )


def _closing_paren(code: str, opening: int) -> int | None:
    """The offset just past the parenthesis matching the one at `opening`."""
    depth = 0
    for index in range(opening, min(len(code), opening + 5000)):
        char = code[index]
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def _first_argument(code: str, start: int) -> tuple[int, int] | None:
    """(start, end) of a call's first argument, whitespace trimmed; `start` is past the '('."""
    depth = 0
    for index in range(start, min(len(code), start + 2000)):
        char = code[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                return None
            depth -= 1
        elif char == "," and depth == 0:
            text = code[start:index]
            left = start + len(text) - len(text.lstrip())
            return left, start + len(text.rstrip())
    return None
