"""TD701 unreadable-file: a file given to the checker that is not Python source text."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Finding, Pitfall

PITFALL = Pitfall(
    code="TD701",
    name="unreadable-file",
    title={"en": "The file is not readable Python source", "zh": "文件不是可读取的 Python 源码"},
    messages={
        "": {"en": "cannot check this file: {reason}", "zh": "无法检查该文件：{reason}"},
        # One notebook cell that cannot be read; the notebook's other cells are checked.
        "cell": {"en": "cannot check this cell: {reason}", "zh": "无法检查该单元格：{reason}"},
    },
    # Its example would have to be binary data, which a docs code block cannot hold.
    lint_example=False,
    docs={
        "en": """
## What it catches
A file that was given to the checker (or found with a `.py` name) but is not Python source
text: binary data such as a checkpoint saved as `model.py`, or bytes that are not valid in the
file's encoding (UTF-8 unless a `# -*- coding: ... -*-` line says otherwise, and a declared
codec that is unknown or cannot decode text, such as `punycode` or `rot13`; but not
`future_fstrings` or `future_annotations`, codecs that only backport newer syntax to old Pythons
and read UTF-8: such a file is read as UTF-8 and checked). Also what is not a regular file at
all (a FIFO, a device, a link to `/dev/zero`: never opened for reading, so the check cannot
hang on it), a file too large to be source, or one that cannot be opened.

## Why is this bad?
Python cannot import it either. The doctor skips it and checks the other files.

## Example
```python
# a file whose bytes are b"PK\\x03\\x04..." (a zip, e.g. a torch.save output)
```

## Use instead:
```python
# keep weights in .pt/.pth/.safetensors files; keep source files UTF-8 text
```
""",
        "zh": """
## What it catches
传给检查器（或以 `.py` 结尾被发现）的文件并不是 Python 源码文本：例如被存成 `model.py` 的检查点等二进制数据，
或者在文件编码下不合法的字节（默认 UTF-8，除非有 `# -*- coding: ... -*-` 声明；声明的编码未知或无法解码文本，
例如 `punycode`、`rot13`，也算在内；但 `future_fstrings`、`future_annotations` 不算：它们只是把新语法移植到旧版
Python 的编解码器，底层读的是 UTF-8，这样的文件按 UTF-8 读取并照常检查）。
还包括根本不是普通文件的路径（FIFO、设备、指向 `/dev/zero` 的链接：
从不打开读取，所以检查不会卡住）、大到不可能是源码的文件，以及无法打开的文件。

## Why is this bad?
Python 同样无法导入它。会跳过该文件，继续检查其他文件。

## Example
```python
# 一个内容为 b"PK\\x03\\x04..." 的文件（zip，例如 torch.save 的输出）
```

## Use instead:
```python
# 权重存为 .pt/.pth/.safetensors 文件；源码文件保持 UTF-8 文本
```
""",
    },
)


@PITFALL.engine_finding("unreadable-source")
def finding_for(reason: str, path: str, cell: int | None = None) -> Finding:
    """The file cannot be read; with `cell`, only that cell of a notebook."""
    variant = "cell" if cell else ""
    return Finding(
        code=PITFALL.code,
        name=PITFALL.name,
        message=PITFALL.message(variant, "en", reason=reason),
        path=path,
        cell=cell,
        template=(variant, {"reason": reason}),
    )
