"""TD509 corrupted-checkpoint: the file torch.load reads is not a whole PyTorch checkpoint."""

from __future__ import annotations

import re

from torchdoctor.catalog.sdk import Clue, Pitfall

PITFALL = Pitfall(
    code="TD509",
    name="corrupted-checkpoint",
    role="unreadable-checkpoint",
    title={
        "en": "The checkpoint file is truncated, corrupted, or not a checkpoint at all",
        "zh": "checkpoint 文件不完整、已损坏，或者根本不是 checkpoint",
    },
    messages={
        "": {
            "en": "`torch.load` cannot read the file: it is cut short, damaged, or something else "
            "saved under a checkpoint's name (a Git LFS pointer, an HTML page)",
            "zh": "`torch.load` 读不了这个文件：它不完整、已损坏，或者是别的东西顶着 checkpoint 的名字"
            "（Git LFS 指针文件、HTML 网页）",
        },
        "ckpt": {
            "en": "not a readable checkpoint: {what}",
            "zh": "不是可读取的 checkpoint：{what}",
        },
    },
    fix_hint={
        "en": "Check the file before blaming the code: compare its size with the source, look "
        "at its first bytes (`head -c 200 FILE`) or run `torchdoctor ckpt inspect FILE`; "
        "then download or save it again (`git lfs pull` for a Git LFS pointer).",
        "zh": "先检查文件而不是代码：与来源对比文件大小，看看开头的字节（`head -c 200 FILE`），"
        "或运行 `torchdoctor ckpt inspect FILE`；然后重新下载或重新保存"
        "（Git LFS 指针文件用 `git lfs pull`）。",
    },
    docs={
        "en": """
## What it catches
`torch.load` errors that say the file is not a complete PyTorch checkpoint: a zip archive cut
short or damaged, an empty file, or a file whose first byte shows it is something else: a Git LFS
pointer, an HTML page, a gzip archive, a JSON error response.

## Why is this bad?
The code is usually fine; the bytes on disk are not what it expects. Typical origins: a download
interrupted or served as an HTML page (a login, quota or "virus scan" page from a file host, a
redirect the client did not follow), a repository cloned without Git LFS so that `*.pth` holds a
three-line pointer, a save killed halfway (out of disk space, a preempted job, two processes
writing the same file), or a copy that was still being written. Reinstalling PyTorch does not
help; getting a complete file does.

## Symptoms
`RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory`,
`PytorchStreamReader failed reading file data/3: invalid header or archive is corrupted`,
`PytorchStreamReader failed locating file data.pkl: file not found`,
`[enforce fail at inline_container.cc:209] . file not found: archive/data.pkl`,
`_pickle.UnpicklingError: invalid load key, 'v'.` (a Git LFS pointer), `invalid load key, '<'.`
(an HTML page), `invalid load key, '\\x00'.`, `EOFError: Ran out of input` (an empty file),
`UnpicklingError: pickle data was truncated`, `unpickling stack underflow`; with
`weights_only=True` (the default since 2.6): `Weights only load failed ... Unsupported operand
118` (the byte value of `v`; 60 is `<`).
""",
        "zh": """
## What it catches
`torch.load` 的报错表明文件不是一个完整的 PyTorch checkpoint：zip 归档被截断或损坏、文件为空，
或者从第一个字节就能看出它是别的东西：Git LFS 指针文件、HTML 网页、gzip 压缩包、JSON 格式的错误响应。

## Why is this bad?
代码通常没问题，是磁盘上的字节不是它期望的内容。常见来源：下载中断，或者下载到的是一个 HTML 页面
（网盘的登录、限额或“病毒扫描”提示页，客户端没有跟随的重定向）；克隆仓库时没装 Git LFS，`*.pth`
里只有三行指针；保存到一半被杀掉（磁盘满、任务被抢占、两个进程写同一个文件）；或者拷贝时文件还在写。
重装 PyTorch 没用，拿到完整的文件才有用。

## Symptoms
`RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory`、
`PytorchStreamReader failed reading file data/3: invalid header or archive is corrupted`、
`PytorchStreamReader failed locating file data.pkl: file not found`、
`[enforce fail at inline_container.cc:209] . file not found: archive/data.pkl`、
`_pickle.UnpicklingError: invalid load key, 'v'.`（Git LFS 指针文件）、`invalid load key, '<'.`
（HTML 网页）、`invalid load key, '\\x00'.`、`EOFError: Ran out of input`（空文件）、
`UnpicklingError: pickle data was truncated`、`unpickling stack underflow`；在 `weights_only=True`
（2.6 起的默认值）下则是 `Weights only load failed ... Unsupported operand 118`
（118 是 `v` 的字节值，60 是 `<`）。
""",
    },
    example="""
import subprocess

import torch

subprocess.run(["git", "clone", "https://huggingface.co/org/model"], check=True)
state_dict = torch.load("model/pytorch_model.bin")
""",
    use_instead="""
import subprocess

import torch

subprocess.run(["git", "lfs", "install"], check=True)
subprocess.run(["git", "clone", "https://huggingface.co/org/model"], check=True)
state_dict = torch.load("model/pytorch_model.bin")
""",
)

INSPECT = {
    "en": " `torchdoctor ckpt inspect FILE` shows what the file holds.",
    "zh": "`torchdoctor ckpt inspect FILE` 可以查看文件里到底是什么。",
}


def _text(en: str, zh: str) -> dict[str, str]:
    return {"en": en + INSPECT["en"], "zh": zh + INSPECT["zh"]}


TRUNCATED = _text(
    "The zip archive has no central directory, which is written last: the file is cut short "
    "(an interrupted download or copy, a save killed halfway or out of disk space, a file "
    "still being written).",
    "zip 归档缺少中央目录，而它是最后才写入的：文件被截断了（下载或拷贝中断、保存到一半被杀掉"
    "或磁盘已满、文件还在写入中）。",
)
DAMAGED = _text(
    "The zip archive is damaged (reading the {record} failed): the bytes were corrupted in "
    "transfer or storage, or the file is incomplete.",
    "zip 归档已损坏（读取 {record} 失败）：文件在传输或存储中被破坏，或者不完整。",
)
NO_RECORD = _text(
    "The file is a zip archive without `{record}`: not a `torch.save` checkpoint (a re-zipped "
    "folder, another framework's archive), a damaged one, or a newer checkpoint read by an old "
    "PyTorch (< 1.6).",
    "文件是一个没有 `{record}` 的 zip 归档：不是 `torch.save` 保存的 checkpoint（重新打包过的文件夹、"
    "其他框架的归档）、已损坏，或者是旧版 PyTorch（< 1.6）在读取新格式的 checkpoint。",
)
TRUNCATED_PICKLE = _text(
    "The pickle stream ends early: the file is truncated (an interrupted save, download or copy).",
    "pickle 数据提前结束：文件被截断了（保存、下载或拷贝中断）。",
)
EMPTY = _text(
    "`torch.load` found no data at all: the file is empty (0 bytes), typically a save that "
    "crashed or ran out of disk space before writing, or a file opened for writing elsewhere.",
    "`torch.load` 一点数据都没读到：文件是空的（0 字节），通常是保存时崩溃或磁盘已满、还没来得及写入，"
    "或者文件正在别处以写模式打开。",
)
ZEROS = _text(
    "The file starts with zero bytes, so `torch.load` took it for the legacy tar format and "
    "found nothing: a file allocated but never written (a crashed save, a full disk).",
    "文件以全零字节开头，`torch.load` 把它当成旧的 tar 格式却什么也没找到："
    "文件空间已分配但内容从未写入（保存时崩溃、磁盘已满）。",
)

# The first byte of a file that is not a pickle says what the file is.
ORIGINS = {
    "v": (
        'a Git LFS pointer ("version https://git-lfs.github.com/spec/v1"): the repository '
        "was cloned without Git LFS, so the file holds a 3-line pointer instead of the "
        "weights; run `git lfs install && git lfs pull`",
        'Git LFS 指针文件（"version https://git-lfs.github.com/spec/v1"）：克隆仓库时没有启用 '
        "Git LFS，文件里只有三行指针而不是权重；请运行 `git lfs install && git lfs pull`",
    ),
    "<": (
        'an HTML page ("<!DOCTYPE html>"): the download saved a web page instead of the file '
        "(a login, quota or virus-scan page, a redirect not followed, a wrong URL)",
        'HTML 网页（"<!DOCTYPE html>"）：下载保存的是网页而不是文件（登录页、限额或病毒扫描'
        "提示页、没有跟随的重定向、错误的 URL）",
    ),
    "{": (
        'a JSON text ("{{...}}"): an error response or a config file saved under the '
        "checkpoint's name",
        'JSON 文本（"{{...}}"）：保存成 checkpoint 名字的错误响应或配置文件',
    ),
    "\x1f": (
        "a gzip-compressed file: decompress it (`gunzip`, `tar -xzf`) before loading",
        "gzip 压缩文件：加载前先解压（`gunzip`、`tar -xzf`）",
    ),
    "\x00": (
        "zero bytes: a file allocated but never fully written (a crashed save, a full "
        "disk, an interrupted copy), or not a checkpoint at all",
        "全零字节：文件空间已分配但没有写完（保存时崩溃、磁盘已满、拷贝中断），或者根本不是 "
        "checkpoint",
    ),
    "P": (
        "a zip archive read as a plain pickle: `pickle.load` on a `torch.save` file, or an "
        "old PyTorch reading the zip format of PyTorch >= 1.6",
        "被当作普通 pickle 读取的 zip 归档：对 `torch.save` 的文件用了 `pickle.load`，"
        "或者旧版 PyTorch 在读 PyTorch >= 1.6 的 zip 格式",
    ),
    "\x93": (
        "a NumPy `.npy` file: load it with `numpy.load`",
        "NumPy 的 `.npy` 文件：请用 `numpy.load` 加载",
    ),
    "\x89": (
        "an HDF5 (Keras `.h5`) or PNG file, not a PyTorch checkpoint",
        "HDF5（Keras 的 `.h5`）或 PNG 文件，不是 PyTorch checkpoint",
    ),
}
TEXT_ORIGIN = (
    'a text file (e.g. an error message such as "Not Found" saved in place of the download)',
    '文本文件（例如下载失败时保存下来的 "Not Found" 之类的错误信息）',
)
UNKNOWN_ORIGIN = (
    "data that is not a pickle: another format, or a damaged file",
    "不是 pickle 的数据：其他格式的文件，或已损坏的文件",
)
LOAD_KEY = {
    "en": "The file starts with {shown}, so it is {origin_en}.",
    "zh": "文件以 {shown} 开头，所以它是{origin_zh}。",
}


def _origin(char: str) -> tuple[str, str, float]:
    """(what the file is, in en and zh, how sure) from its first byte."""
    if char in ORIGINS:
        return (*ORIGINS[char], 0.95)
    if char.isprintable() and char.isascii():
        return (*TEXT_ORIGIN, 0.85)
    return (*UNKNOWN_ORIGIN, 0.8)


def _load_key_clue(char: str, shown: str) -> Clue:
    origin_en, origin_zh, confidence = _origin(char)
    cause = {
        "en": LOAD_KEY["en"].format(shown=shown, origin_en=origin_en) + INSPECT["en"],
        "zh": LOAD_KEY["zh"].format(shown=shown, origin_zh=origin_zh) + INSPECT["zh"],
    }
    return Clue(confidence, cause)


@PITFALL.error_check(types=("UnpicklingError",), words=("invalid load key",))
def invalid_load_key(block, report) -> Clue | None:
    found = re.search(r"invalid load key, '(\\x[0-9a-fA-F]{2}|\\[nrt]|.)'", block.message)
    if found is None:
        return None
    key = found.group(1)
    escapes = {"\\n": "\n", "\\r": "\r", "\\t": "\t"}
    char = chr(int(key[2:], 16)) if key.startswith("\\x") else escapes.get(key, key)
    return _load_key_clue(char, f"`{key}`")


_OPERAND = re.compile(r"Unsupported operand (\d+)")


@PITFALL.error_check(types=("UnpicklingError",), words=("weights only load failed",))
def weights_only_operand(block, report) -> Clue | None:
    """Since 2.6 the weights-only unpickler reports the first byte as an opcode number."""
    if "Weights only load failed" not in block.message:
        return None
    # torch's message has blank lines: the opcode may lie past the block's message.
    found = _OPERAND.search(block.message) or report.search(_OPERAND)
    if found is None:
        return None
    code = int(found.group(1))
    char = chr(code) if code < 256 else ""
    shown = f"byte {code} (`{char!r}`)" if char else f"byte {code}"
    return _load_key_clue(char, shown)


@PITFALL.error_check(
    types=("EOFError",), words=("ran out of input", "serialization.py", "torch.load", "load(")
)
def empty_file(block, report) -> Clue | None:
    if block.message.strip() not in ("", "Ran out of input"):
        return None
    paths = " ".join(f"{f.path} {f.function or ''} {f.source or ''}" for f in block.frames)
    if "multiprocessing" in paths or "dataloader" in paths.lower():
        return None  # a DataLoader worker that got nothing: not a file
    if re.search(r"serialization\.py|torch\.load|\bload\(", paths):
        return Clue(0.9, EMPTY)
    if not block.frames and block.message.strip():
        return Clue(0.5, EMPTY)
    return None


# PytorchStreamReader's texts are unambiguous: also found in logs that print no exception line.
PITFALL.error(
    r"PytorchStreamReader failed reading zip archive:\s+failed\s+finding\s+central"
    r"\s+directory",
    types=(),
    confidence=0.95,
    cause=TRUNCATED,
)
PITFALL.error(
    r"PytorchStreamReader failed reading (?P<record>file \S+?|zip archive):\s+invalid"
    r"\s+header\s+or\s+archive\s+is\s+corrupted",
    types=(),
    confidence=0.95,
    cause=DAMAGED,
)
PITFALL.error(
    r"PytorchStreamReader failed locating file (?P<record>\S+?):\s+file\s+not\s+found",
    types=(),
    confidence=0.9,
    cause=NO_RECORD,
)
PITFALL.error(
    r"inline_container\.cc:\d+\] \. file not found: (?P<record>\S*data\.pkl)",
    types=(),
    confidence=0.9,
    cause=NO_RECORD,
)
PITFALL.error(
    r"unexpected EOF(?:, expected \d+ more bytes)?\. The file might be corrupted",
    types=(),
    confidence=0.95,
    cause=TRUNCATED_PICKLE,
)
# The whole text, when no exception line was parsed: the opcode number without the byte's story.
# Two plain searches, not one regex `failed[\s\S]*?operand`: that one rescans the rest of the text
# from every "Weights only load failed" of a long log (quadratic).
_NOT_A_PICKLE = _text(
    "The file is not a pickle: its first byte ({code}) is no pickle opcode, so it "
    "is something else saved under the checkpoint's name, or damaged.",
    "文件不是 pickle：它的第一个字节（{code}）不是 pickle 操作码，所以它是顶着 checkpoint "
    "名字的别的文件，或者已经损坏。",
)


@PITFALL.error_check(types=(), words=("weights only load failed",))
def operand_in_text(block, report) -> Clue | None:
    start = block.message.find("Weights only load failed")
    found = _OPERAND.search(block.message, start) if start >= 0 else None
    if found is None:
        return None
    return Clue(0.9, _NOT_A_PICKLE, None, {"code": found.group(1)})


PITFALL.error(
    r"pickle data was truncated|unpickling stack underflow",
    types=("UnpicklingError", "RuntimeError"),
    confidence=0.85,
    cause=TRUNCATED_PICKLE,
)
PITFALL.error(r"filename 'storages' not found", types=("KeyError",), confidence=0.85, cause=ZEROS)
PITFALL.error(r"Invalid magic number; corrupt file\?", confidence=0.9, cause=TRUNCATED_PICKLE)
# Misleading: a file of zeros is taken for the legacy tar format, under weights_only=True too.
PITFALL.error(
    r"Cannot use ``weights_only=True`` with files saved in the legacy \.tar format",
    confidence=0.6,
    cause=ZEROS,
)


# Checking checkpoints ------------------------------------------------------------------------

# What `torchdoctor ckpt` found the file to be, by the reader's kind.
KIND_ORIGINS = {
    "lfs-pointer": "v",
    "html": "<",
    "json": "{",
    "gzip": "\x1f",
    "zeros": "\x00",
    "numpy": "\x93",
    "hdf5": "\x89",
}
KINDS = {
    "truncated": (
        "the file is cut short (an interrupted download, copy or save): download or save it again",
        "文件被截断了（下载、拷贝或保存中断）：请重新下载或重新保存",
    ),
    "empty": (
        "the file is empty (0 bytes): a save that crashed or ran out of disk space",
        "文件是空的（0 字节）：保存时崩溃或磁盘已满",
    ),
    "damaged": ("the data is damaged ({detail})", "数据已损坏（{detail}）"),
    "budget": (
        "not fully read: {detail}, the reader's limit (it stops there so that a hostile "
        "file cannot exhaust time or memory: a pickle bomb, or a checkpoint far larger "
        "than usual); nothing of it was loaded",
        "没有完整读取：{detail}，超出了读取器的上限（读取器在此停止，以免恶意文件耗尽时间或内存："
        "可能是 pickle 炸弹，或者是远超常规大小的 checkpoint）；其中的内容都没有被加载",
    ),
    "zip-not-torch": (
        "a zip archive without `data.pkl` ({detail}...): not a `torch.save` checkpoint",
        "没有 `data.pkl` 的 zip 归档（{detail}...）：不是 `torch.save` 保存的 checkpoint",
    ),
    "text": TEXT_ORIGIN,
    "unknown": UNKNOWN_ORIGIN,
}
LFS_SIZE = (" (the real file has {detail} bytes)", "（真正的文件有 {detail} 字节）")


@PITFALL.checkpoint
def check_checkpoint(subject):
    problem = subject.problem
    if problem is None:
        return
    index = 0 if subject.lang != "zh" else 1
    if problem.kind in KIND_ORIGINS:
        what = ORIGINS[KIND_ORIGINS[problem.kind]][index]
        if problem.kind == "lfs-pointer" and problem.detail.isdigit():
            what += LFS_SIZE[index].format(detail=problem.detail)
    else:
        what = KINDS.get(problem.kind, UNKNOWN_ORIGIN)[index].format(detail=problem.detail)
    yield subject.finding(PITFALL, "ckpt", what=what.replace("{{", "{").replace("}}", "}"))
