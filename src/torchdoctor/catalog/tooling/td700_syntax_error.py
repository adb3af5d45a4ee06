"""TD700 syntax-error: the file does not parse, so nothing else in it was checked."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from typing import Iterator

from torchdoctor.catalog.sdk import (
    lazy_compile,
    Clue,
    Edit,
    ErrorBlock,
    ErrorReport,
    Finding,
    Fix,
    Pitfall,
    split_lines,
)

PITFALL = Pitfall(
    code="TD700",
    name="syntax-error",
    title={"en": "The file does not parse", "zh": "文件无法解析（语法错误）"},
    messages={
        "": {"en": "SyntaxError: {error}", "zh": "语法错误：{error}"},
        "async": {
            "en": "SyntaxError: {error} -- `async` is a keyword since Python 3.7; "
            "PyTorch renamed the argument to `non_blocking=`",
            "zh": "语法错误：{error} —— 自 Python 3.7 起 `async` 是关键字；"
            "PyTorch 已把该参数改名为 `non_blocking=`",
        },
        "async-name": {
            "en": "SyntaxError: {error} -- `async` is a keyword since Python 3.7 and can no longer "
            "name a variable; rename it",
            "zh": "语法错误：{error} —— 自 Python 3.7 起 `async` 是关键字，不能再用作变量名；请改名",
        },
        "invisible": {
            "en": "SyntaxError: {error} -- an invisible {character} ({code}), pasted along with the code, "
            "stands outside a string here; delete it (the rest of the file is checked as if it "
            "were a space)",
            "zh": "语法错误：{error} —— 这里的字符串之外有一个随代码一起粘贴进来的不可见字符 {code}，"
            "请删除它（文件的其余部分按它是一个空格来检查）",
        },
        "continuation": {
            "en": "SyntaxError: {error} -- blanks after the backslash that continues this line: a "
            "backslash continues a line only as its last character; delete them (the rest of "
            "the file is checked as if they were gone)",
            "zh": "语法错误：{error} —— 续行的反斜杠后面有空白：反斜杠只有作为一行的最后一个字符时才续行；"
            "请删除这些空白（文件的其余部分按已删除来检查）",
        },
    },
    fix_title={
        "en": "Rename `async=` to `non_blocking=`",
        "zh": "把 `async=` 改为 `non_blocking=`",
    },
    fix_applicability="safe",
    docs={
        "en": """
## What it catches
A file that Python cannot parse. The doctor reports the parser's message and checks the
other files. One PyTorch-specific case is explained: `x.cuda(async=True)` from PyTorch 0.3
code, which became a syntax error when `async` turned into a keyword in Python 3.7. Each such
argument of `.cuda()`, `.to()` or `.copy_()` is reported on its own line, and when nothing else
stops the file from parsing, the rest of it is still checked. So is a file naming a variable
`async` (`for async in results: async.get()`, Python 2 and 3.6 code using multiprocessing): each
such name is reported, with no fix (every use must be renamed alike), and the file is read as if
it were renamed; an `async =` assignment or an `async=` argument of another function leaves the
file unread. So is a file written for Python 2
whose only Python 2 syntax is `print x`, `except E, e:` and `raise E, "message"` statements
(common in research code of 2016-2018): the first is reported, and the file is read as if each
were bracketed (`print(x)`, `raise E("message")`), so that its PyTorch idioms of the time (`it.next()`, `loss.data[0]`,
`Variable(..., volatile=True)`) are reported too. Fixes of those lines leave the Python 2
statements as they are. Python 2's `a <> b` is read as `a != b` the same way, and a
compound statement's header typed without its colon (`else`, `def f(x)`: "expected ':'") as if
it had it (up to five in a file), and one block header with no body under it (`if not debug:`
then a line no deeper, or the file's last line, as while the code is being written: "expected an
indented block") as if its body were `pass`. Indentation that mixes tabs and spaces (`TabError`
on Python 3) is reported where Python stops, and the file is read as Python 2 read it, a tab
reaching the next multiple of eight columns (or, when that does not parse either, as an editor
set to tabs of four columns showed it: ADDA-PyTorch's line of four tabs among lines of sixteen
spaces); the other findings in such a file come without a fix until the indentation is made
consistent. An invisible character pasted along with the code (a zero-width space at a line's
end, a no-break space in an indentation: "invalid non-printable character U+200B") is reported
where it stands, with a fix that deletes it (a no-break space becomes a plain one), and the rest
of the file is checked as if it were a space.
So are blanks after a backslash meant to continue a line ("unexpected character after line
continuation character", invisible in an editor): reported at the backslash with a fix that
deletes them, the rest of the file read as if they were gone.

## Why is this bad?
Nothing in the file can run, and no other check can look at it.

## Example
```python
images = images.cuda(async=True)
```

## Use instead:
```python
images = images.cuda(non_blocking=True)
```

## Symptoms
`SyntaxError: invalid syntax` pointing at `async=`. When explaining errors it also reads why other
files do not parse: Python 2 code under Python 3 (`Missing parentheses in call to 'print'`),
Python 3 code under Python 2 (an annotation, `progress.print(i)`, `print = log.info`), f-strings
under Python < 3.6, `f(*a, *b)` under Python < 3.5, and full-width punctuation
(`invalid character '（' (U+FF08)`).

## Fix safety
Renaming the keyword argument `async=` to `non_blocking=` keeps the meaning: PyTorch 0.4
renamed it and gave it the same behaviour. Deleting an invisible character outside a string
changes nothing Python reads, nor does deleting blanks after a continuation backslash. The fixes
are safe and offered only for those cases.
""",
        "zh": """
## What it catches
Python 无法解析的文件。会报告解析器的错误信息，并继续检查其他文件。对 PyTorch 特有的一种情况给出解释：
PyTorch 0.3 时代的 `x.cuda(async=True)`，自 Python 3.7 把 `async` 变成关键字后就成了语法错误。
`.cuda()`、`.to()`、`.copy_()` 的每个这样的参数都在各自所在行报告；如果文件没有别的语法错误，其余部分照常检查。
把变量命名为 `async` 的文件（`for async in results: async.get()`，使用 multiprocessing 的 Python 2 与 3.6
代码）也是如此：每处这样的名字都会报告，不提供修复（所有用到它的地方要一起改名），并按已改名来读取文件；
`async = ...` 赋值或其他函数的 `async=` 参数会让文件无法继续读取。
为 Python 2 编写、且其 Python 2 语法只有 `print x`、`except E, e:` 和 `raise E, "message"` 语句的文件
（2016-2018 年的研究代码中很常见）也是如此：报告第一处，然后把每条这样的语句当作加了括号（`print(x)`、
`raise E("message")`）来读，于是那个年代的 PyTorch 写法
（`it.next()`、`loss.data[0]`、`Variable(..., volatile=True)`）也会被报告。对这些行的修复不会改动 Python 2 语句。
Python 2 的 `a <> b` 同样处理，按 `a != b` 读取；漏写冒号的复合语句头（`else`、`def f(x)`：
"expected ':'"）按补上冒号来读（一个文件最多五处）；下面没有语句体的一个复合语句头
（`if not debug:` 后面一行没有缩进，或者它就是文件的最后一行，
代码还在编写时常见："expected an indented block"）按语句体为 `pass` 来读。
混用制表符和空格的缩进（在 Python 3 下是 `TabError`）
在 Python 停下的那一行报告，并按 Python 2 的方式读取文件（制表符前进到下一个 8 的倍数列；这样仍无法解析时，
按制表符宽度为 4 的编辑器所显示的样子读取：ADDA-PyTorch 在一串 16 个空格缩进的行中夹了一行 4 个制表符）；
在缩进统一之前，这种文件里的其他问题不提供自动修复。随代码一起粘贴进来的不可见字符（行尾的零宽空格、缩进里的不换行空格：
"invalid non-printable character U+200B"）在它所在处报告，并提供删除它的修复（不换行空格改成普通空格），
文件其余部分按它是一个空格来检查。
用来续行的反斜杠后面多了空格或制表符（"unexpected character after line continuation character"，
编辑器里看不见）也是如此：在反斜杠处报告，并提供删除这些空白的修复，文件其余部分按已删除来检查。

## Why is this bad?
整个文件都无法运行，其他检查也无法分析它。

## Example
```python
images = images.cuda(async=True)
```

## Use instead:
```python
images = images.cuda(non_blocking=True)
```

## Symptoms
`SyntaxError: invalid syntax`，指向 `async=`。解释错误时还会识别其他文件无法解析的原因：在 Python 3 下运行
Python 2 代码（`Missing parentheses in call to 'print'`）、在 Python 2 下运行 Python 3 代码（注解、
`progress.print(i)`、`print = log.info`）、在 Python < 3.6 下使用 f-string、在 Python < 3.5 下使用
`f(*a, *b)`，以及全角标点（`invalid character '（' (U+FF08)`）。

## Fix safety
把关键字参数 `async=` 改名为 `non_blocking=` 不改变含义：PyTorch 0.4 做的正是这个改名，行为相同。
删除字符串之外的不可见字符、删除续行反斜杠后面的空白，都不会改变 Python 读到的任何内容。
这些修复是安全的，且只针对这些情况提供。
""",
    },
)

_ASYNC_ARGUMENT = lazy_compile(r"\basync(\s*=)")
# The tensor methods whose `async=` became `non_blocking=` in PyTorch 0.4.
_ASYNC_METHODS = frozenset({"cuda", "to", "copy_"})
# What `async` is replaced with to parse the rest of the file: a name of the same length, so
# that every position in the file stays where it was.
_PLACEHOLDER = "async".replace("a", "_", 1)


def _tokenized(source: str) -> tuple[list[str], Iterator[tokenize.TokenInfo]]:
    """The tokens of `source`, and its lines, filled in as the tokens are read (a repair maps
    the tokens' positions back to offsets in the text)."""
    lines: list[str] = []
    readline = io.StringIO(source).readline

    def read() -> str:
        line = readline()
        lines.append(line)
        return line

    return lines, tokenize.generate_tokens(read)


def _line_offsets(lines: list[str]) -> list[int]:
    """The offset in the text where each line starts."""
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    return starts


def _replaced_at(source: str, lines: list[str], sites: list[tuple[int, int]], new: str) -> str:
    """`source` with the characters at each site (line from 1, column from 0) replaced by as
    many of `new`: every other position stays."""
    starts = _line_offsets(lines)
    text = list(source)
    for row, column in sites:
        at = starts[row - 1] + column
        text[at : at + len(new)] = new
    return "".join(text)


@PITFALL.source_repair
def repair_async_arguments(source: str) -> tuple[str, list[tuple[int, int]]] | None:
    """`x.cuda(async=True)`, PyTorch 0.3's spelling, does not parse since Python 3.7 made
    `async` a keyword: the source with each such `async` replaced in place, and where each was
    (line from 1, column from 0)."""
    if "async" not in source:
        return None
    lines, tokens = _tokenized(source)
    calls: list[str | None] = []  # per open bracket: the method it calls, if any
    sites: list[tuple[int, int]] = []
    previous: list[tokenize.TokenInfo] = []
    try:
        for token in tokens:
            if token.type == tokenize.OP and token.string in "([{":
                called = (
                    previous[-1].string
                    if token.string == "(" and len(previous) >= 2 and previous[-2].string == "."
                    else None
                )
                calls.append(called)
            elif token.type == tokenize.OP and token.string in ")]}":
                if calls:
                    calls.pop()
            elif token.type == tokenize.OP and token.string == "=" and previous:
                last = previous[-1]
                if last.string == "async" and calls and calls[-1] in _ASYNC_METHODS:
                    sites.append(last.start)
            if token.type not in (tokenize.NL, tokenize.COMMENT):
                previous = [*previous[-1:], token]
    except (tokenize.TokenError, SyntaxError):
        return None
    if not sites:
        return None
    return _replaced_at(source, lines, sites, _PLACEHOLDER), sites


# What may follow the keyword `async` (`async def`, `async for`, `async with`).
_ASYNC_STATEMENTS = frozenset({"def", "for", "with"})


@PITFALL.source_repair
def repair_async_names(source: str) -> tuple[str, list[tuple[int, int]]] | None:
    """`async` as a name (`for async in results: async.get()`, Python 2 and 3.6 code using
    multiprocessing), which does not parse since Python 3.7: the source with each such `async`
    replaced in place by a name of its length, and where each was. Run after the repair of
    `async=` arguments of torch's calls, which has its own fix; one before any other `=` (an
    argument of another function, an assignment) leaves the file unrepaired (the message of
    an `async=` offers `non_blocking=`)."""
    if "async" not in source:
        return None
    lines, tokens = _tokenized(source)
    sites: list[tuple[int, int]] = []
    waiting: tokenize.TokenInfo | None = None  # an `async` whose next token decides
    try:
        for token in tokens:
            if token.type in (tokenize.NL, tokenize.COMMENT):
                continue
            if waiting is not None and token.string not in _ASYNC_STATEMENTS:
                if token.string == "=":
                    return None  # `f(async=True)` of another function, `async = ...`: left as is
                sites.append(waiting.start)
            waiting = token if token.type == tokenize.NAME and token.string == "async" else None
    except (tokenize.TokenError, SyntaxError):
        return None
    if not sites:
        return None
    return _replaced_at(source, lines, sites, _PLACEHOLDER), sites


# Characters a copy from a web page or a chat brings along, invisible in an editor, which Python
# refuses outside strings ("invalid non-printable character U+200B"): each mapped to what it is
# read as, in place (one character for one, so that every position stays), and what its fix
# writes (nothing for the zero-width ones, a plain space for the no-break space).
INVISIBLE_CHARACTERS = {
    "\u00a0": ("no-break space", " "),
    "\u200b": ("zero-width space", ""),
    "\u200c": ("zero-width non-joiner", ""),
    "\u200d": ("zero-width joiner", ""),
    "\u2060": ("word joiner", ""),
    "\ufeff": ("byte order mark", ""),
}


@PITFALL.source_repair
def repair_invisible_characters(source: str) -> tuple[str, list[tuple[int, int]]] | None:
    """An invisible character pasted into the code (a zero-width space at a line's end, a
    no-break space in an indentation): the source with each one outside strings and comments
    read as a space, in place, and where each was (line from 1, column from 0)."""
    if not any(character in source for character in INVISIBLE_CHARACTERS):
        return None
    lines, tokens = _tokenized(source)
    sites: list[tuple[int, int]] = []
    try:
        for token in tokens:
            if token.type == tokenize.ERRORTOKEN and token.string in INVISIBLE_CHARACTERS:
                sites.append(token.start)
    except (tokenize.TokenError, SyntaxError):
        return None
    if not sites:
        return None
    return _replaced_at(source, lines, sites, " "), sites


@PITFALL.source_repair
def repair_blanks_after_continuation(source: str) -> tuple[str, list[tuple[int, int]]] | None:
    """A backslash meant to continue a line, with spaces or tabs after it (invisible in an
    editor: "unexpected character after line continuation character"): the source with each
    such backslash moved after its blanks, so that every other position stays, and where each
    backslash was. One inside a string is the string's (the tokenizer reads it there)."""
    if "\\ " not in source and "\\\t" not in source:
        return None
    lines, tokens = _tokenized(source)
    found: list[tuple[int, int, str]] = []  # each backslash's line, column and blanks after it
    try:
        for token in tokens:
            if token.type != tokenize.ERRORTOKEN or token.string != "\\":
                continue
            row, column = token.start
            blanks = _blanks_after(lines[row - 1], column)
            if blanks:
                found.append((row, column, blanks))
    except (tokenize.TokenError, SyntaxError):
        return None
    if not found:
        return None
    starts = _line_offsets(lines)
    text = list(source)
    for row, column, blanks in found:
        at = starts[row - 1] + column
        text[at : at + 1 + len(blanks)] = blanks + "\\"
    return "".join(text), [(row, column) for row, column, _ in found]


def _blanks_after(line: str, column: int) -> str:
    """The spaces and tabs ending `line` after a backslash at `column` ("" when anything else
    follows it)."""
    rest = line[column + 1 :].rstrip("\r\n")
    return rest if rest and not rest.strip(" \t") else ""


# Tokens after which a statement starts (at bracket depth 0).
_STATEMENT_STARTS = frozenset({tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.NL})
# After `print`, tokens that make it a name rather than a Python 2 statement.
_PRINT_AS_NAME = frozenset({"(", "=", ".", ",", ")", "[", ":", "+=", "-="})


@PITFALL.source_repair
def repair_python2_statements(source: str) -> tuple[str, list[tuple[int, int]]] | None:
    """Research code of 2016-2018 written for Python 2: `print x`, `except E, e:` and `raise E,
    "message"` do not parse on Python 3, and with them nothing else of the file is checked. The
    source with each such statement bracketed in place (`print(x)`, `except(E, e):`: the space
    after the keyword becomes `(`, `>>` of `print >>f, x` two spaces; `raise E( "message")`: the
    comma becomes `(`; and `)` closes the statement before its end or its `;`), so that every
    other position stays; and the place of the first."""
    if "print" not in source and "except" not in source and "raise" not in source:
        return None
    lines, tokens = _tokenized(source)
    edits: list[tuple[tuple[int, int], tuple[int, int], str]] = []  # (start, end, text)
    sites: list[tuple[int, int]] = []  # where each bracketed statement starts, in order
    open_statement: tuple[str, int] | None = None  # (keyword, depth) of a statement to close
    raising: tuple[tokenize.TokenInfo, int] | None = None  # a `raise` whose comma is awaited
    depth, previous = 0, None  # the last significant token
    try:
        for token in tokens:
            kind, string = token.type, token.string
            at_start = previous is None or (
                depth == 0 and (previous.type in _STATEMENT_STARTS or previous.string in (";", ":"))
            )
            if (
                open_statement is not None
                and depth == open_statement[1]
                and (
                    kind in (tokenize.NEWLINE, tokenize.COMMENT, tokenize.ENDMARKER)
                    or string == ";"
                    or open_statement[0] == "except"
                    and string == ":"
                )
            ):
                edits.append((token.start, token.start, ")"))
                open_statement = None
            if raising is not None and depth == raising[1]:
                if kind == tokenize.OP and string == ",":  # `raise E, "message"`
                    edits.append((token.start, token.end, "("))
                    sites.append(raising[0].start)
                    open_statement, raising = ("raise", depth), None
                elif kind in (tokenize.NEWLINE, tokenize.ENDMARKER) or string == ";":
                    raising = None
            if kind == tokenize.OP and string in "([{":
                depth += 1
            elif kind == tokenize.OP and string in ")]}":
                depth = max(depth - 1, 0)
            if at_start and kind == tokenize.NAME and string == "raise":
                raising = (token, depth)
            elif at_start and kind == tokenize.NAME and string in ("print", "except"):
                open_statement = _python2_statement(token, lines, edits)
                if open_statement is not None:
                    sites.append(token.start)
            elif open_statement is not None and open_statement[0] == "print" and string == ">>":
                if previous is not None and previous.string == "print":
                    edits.append((token.start, token.end, "  "))
            if kind not in (tokenize.NL, tokenize.COMMENT):
                previous = token
    except (tokenize.TokenError, SyntaxError):
        return None
    if not sites:
        return None  # nothing but bare `print`s, which Python 3 reads: not why it fails
    starts = _line_offsets(lines)
    pieces, done = [], 0  # the text cut at each edit, joined once: never copied per edit
    for (row, column), (end_row, end_column), new in sorted(edits):
        at, end = starts[row - 1] + column, starts[end_row - 1] + end_column
        pieces += [source[done:at], new]
        done = end
    pieces.append(source[done:])
    return "".join(pieces), sites[:1]


@PITFALL.source_repair
def repair_python2_not_equal(source: str) -> tuple[str, list[tuple[int, int]]] | None:
    """Python 2's `a <> b` (pix2pix.pytorch): the source with each `<>` written `!=`, in place
    (the same two characters' room), and where the first was."""
    if "<>" not in source:
        return None
    lines, tokens = _tokenized(source)
    sites: list[tuple[int, int]] = []
    previous = None
    try:
        for token in tokens:
            if (
                token.type == tokenize.OP
                and token.string == ">"
                and previous is not None
                and previous.string == "<"
                and previous.end == token.start
            ):
                sites.append(previous.start)
            previous = token
    except (tokenize.TokenError, SyntaxError):
        return None
    if not sites:
        return None
    return _replaced_at(source, lines, sites, "!="), sites[:1]


# How many missing colons one file gets put back: more is no typo but another language.
_MAX_COLONS = 5


@PITFALL.source_repair
def repair_missing_colons(source: str) -> tuple[str, list[tuple[int, int]]] | None:
    """A compound statement's header typed without its colon (`else`, `def f(x)`): Python
    stops there, and with it nothing else of the file is checked. The source with `:` put
    where Python expected it (a few times at most: the code before it keeps its place, only a
    comment after it moves), and those places."""
    text, sites = source, []
    for _ in range(_MAX_COLONS):
        try:
            ast.parse(text)
            break
        except SyntaxError as error:
            if error.msg != "expected ':'" or not error.lineno or not error.offset:
                break
            line, column = error.lineno, error.offset - 1
            at = _line_starts(text)[line - 1] + column
            if at > len(text) or (line, column) in sites:
                break
            text = text[:at] + ":" + text[at:]
            sites.append((line, column))
        except (ValueError, RecursionError, MemoryError):
            return None
    return (text, sites) if sites else None


# A block's header whose body is missing (`if not debug:` then a line no deeper: code being
# written, or a body commented out), and where its colon ends the line.
_EMPTY_BLOCK = "expected an indented block"
_HEADER_COLON = re.compile(r":[ \t]*(?:#.*)?$")


@PITFALL.source_repair
def repair_empty_blocks(source: str) -> tuple[str, list[tuple[int, int]]] | None:
    """A compound statement with no body (`for token in sent:` followed by a line no deeper):
    Python stops there. The source with `pass` put after the header's colon (the code keeps
    its place, only a comment after the colon moves), and where the body was expected. One
    such block only: the parser's message, reported there, is about it."""
    try:
        ast.parse(source)
        return None
    except SyntaxError as error:
        if not error.msg.startswith(_EMPTY_BLOCK) or not error.lineno:
            return None
        lines = source.splitlines(keepends=True)
        header = min(error.lineno, len(lines) + 1) - 2  # the last line of code before the body
        if (
            error.lineno <= len(lines)
            and _HEADER_COLON.search(lines[error.lineno - 1].rstrip("\r\n"))
            and all(line.strip()[:1] in ("", "#") for line in lines[error.lineno :])
        ):
            header = error.lineno - 1  # the file ends with the header (`def make_env():`)
        while header >= 0 and lines[header].strip()[:1] in ("", "#"):
            header -= 1
        colon = _HEADER_COLON.search(lines[header].rstrip("\r\n")) if header >= 0 else None
        if colon is None:
            return None
        at = _line_starts(source)[header] + colon.start() + 1
        return source[:at] + " pass" + source[at:], [
            (error.lineno, max(0, (error.offset or 1) - 1))
        ]
    except (ValueError, RecursionError, MemoryError):
        return None


def _python2_statement(
    keyword: tokenize.TokenInfo, lines: list[str], edits: list
) -> tuple[str, int] | None:
    """Open `print x` or `except E, e:` at `keyword`: the space after it becomes `(` (an edit),
    and the statement is closed when the walk reaches its end. None when the keyword is not
    such a statement (`print(x)`, `print = log`, `except E as e:` ...)."""
    row, column = keyword.end
    line = lines[row - 1]
    rest = line[column:]
    if keyword.string == "print":
        following = rest.lstrip(" \t")
        if following[:1] in ("", "\n", "#", "\r", ";") and not rest.startswith(" "):
            edits.append((keyword.end, keyword.end, "()"))  # a bare `print`: an empty line
            return None
        if not rest.startswith(" ") or any(following.startswith(s) for s in _PRINT_AS_NAME):
            return None
    else:
        header = rest.split("#", 1)[0]
        if not rest.startswith(" ") or "," not in header or " as " in header or "(" in header:
            return None  # `except E as e:`, `except (A, B):`: Python 3 reads them
    edits.append(((row, column), (row, column + 1), "("))
    return keyword.string, 0


_PARSE_ERRORS = ("SyntaxError", "IndentationError", "TabError")
# In an error output: the PyTorch 0.3 call itself, shown by the traceback or quoted by the user.
_ASYNC_CALL = lazy_compile(r"\.(?:cuda|to|copy_)\([^()\n]{0,80}?\basync\s*=")
_KEYWORD_ASYNC = {
    "en": "`async` is a keyword since Python 3.7: the PyTorch 0.3 call `x.cuda(async=True)` no "
    "longer parses (so the whole file does not run).",
    "zh": "自 Python 3.7 起 `async` 是关键字：PyTorch 0.3 的写法 `x.cuda(async=True)` 无法再被解析"
    "（整个文件都无法运行）。",
}
_RENAME_ASYNC = {
    "en": "Rename the argument: `x.cuda(non_blocking=True)` (PyTorch 0.4 renamed it; the meaning "
    "is the same). `torchdoctor check --fix` does it in every file.",
    "zh": "把参数改名：`x.cuda(non_blocking=True)`（PyTorch 0.4 改了名字，含义不变）。"
    "`torchdoctor check --fix` 会在所有文件中完成替换。",
}


@PITFALL.error_check(types=(), words=("async",))
def async_argument(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    """A SyntaxError at `x.cuda(async=True)`, or, with no error line pasted, only that call
    shown where a traceback points (`File "main.py", line 264`, then the line)."""
    if block.short_type not in ("SyntaxError", "") or not report.search(_ASYNC_CALL):
        return None
    if block.short_type == "SyntaxError" or "SyntaxError" in block.message:
        return Clue(0.9, _KEYWORD_ASYNC, _RENAME_ASYNC)
    if "syntax error" in block.message.lower():  # told in words, as in an issue's text
        return Clue(0.85, _KEYWORD_ASYNC, _RENAME_ASYNC)
    if any(
        shown.kind == "exception" and shown.short_type not in _PARSE_ERRORS
        for shown in report.blocks
    ):
        # Another exception raised while that code ran: under Python 2 or before 3.7 it parses,
        # and the `async=` shown is not why it failed.
        return None
    if report.search(r'File "[^"\n]+", line \d+'):
        return Clue(0.7, _KEYWORD_ASYNC, _RENAME_ASYNC)
    return None


# The line a SyntaxError shows with its caret under it (on the next line, or at the end of the
# same line when a title retells it).
_CARET_LINE = lazy_compile(r"(?m)^(?P<code>[^\n]{1,400})(?:\n[ \t]{0,400}|[ \t])\^+[ \t]*$")
# Retold on one line: `invalid syntax: f"conv_{i}"`.
_RETOLD_INVALID_SYNTAX = lazy_compile(r"invalid syntax\W{1,3}(?P<code>[^\n]{1,400})")
_F_STRING = lazy_compile(r"(?<![\w'\"])(?:[rR][fF]|[fF][rR]?)['\"]")
_OLD_PYTHON = {
    "en": "The line is valid Python: it uses {feature}, which Python reads only from {version} "
    "on, and the script runs on an older interpreter (Python 2, or a 3.x older than {version}), "
    "to which it is `invalid syntax`.",
    "zh": "这一行本身是合法的 Python：它用了 {feature}，Python 从 {version} 起才能解析，而脚本是用更旧的"
    "解释器（Python 2，或低于 {version} 的 3.x）运行的，对它来说这是 `invalid syntax`。",
}
_NEWER_PYTHON = {
    "en": "Run it with Python {version} or newer: check `python --version` in the environment "
    "that runs it (a virtualenv or conda environment made with a newer Python, or `python3` "
    "where `python` is Python 2); the code itself needs no change.",
    "zh": "用 Python {version} 或更新的版本运行：在运行它的环境中查看 `python --version`（用更新的 "
    "Python 创建 virtualenv 或 conda 环境，或者在 `python` 是 Python 2 的机器上用 `python3`）；"
    "代码本身无需修改。",
}


def _names_what_is_wrong(report: ErrorReport) -> bool:
    """Some SyntaxError of the input says more than a bare `invalid syntax`."""
    return any(
        block.message.strip() != "invalid syntax"
        for block in report.blocks
        if block.short_type == "SyntaxError"
    )


@PITFALL.error_check(types=(), words=("^", "invalid syntax"))
def newer_python_needed(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    """A plain `invalid syntax` under an f-string or a `:=`: what Python 2 and 3.5 (3.7 for
    `:=`) say of code written for a newer Python. Newer interpreters name what is wrong in an
    f-string (`f-string: ...`) or add a suggestion, so only the bare message is the old one's;
    a title may retell it as the line and its caret alone."""
    if block.short_type not in ("SyntaxError", ""):
        return None
    if report.once(_names_what_is_wrong):
        return None
    shown = report.search(_CARET_LINE) or report.search(_RETOLD_INVALID_SYNTAX)
    if shown is None:
        return None
    code = shown.group("code")
    unpacked = _MANY_UNPACKINGS.search(code)
    if _F_STRING.search(code):
        fields = {"feature": "an f-string", "version": "3.6"}
    elif ":=" in code:
        fields = {"feature": "the `:=` operator", "version": "3.8"}
    elif unpacked is not None and _at_caret(shown, unpacked.span()):
        fields = {"feature": "more than one `*` unpacking in one call", "version": "3.5"}
    else:
        return None
    return Clue(0.85, _OLD_PYTHON, _NEWER_PYTHON, fields)


# `nn.Sequential(*a, *b)`, `[*a, x, *b]`: a second `*` unpacking (PEP 448, Python 3.5).
_MANY_UNPACKINGS = lazy_compile(r"[(\[,]\s*\*\w[\w.]*\s*,(?:[^()\[\]\n]{0,300}?,)?\s*\*\w")


def _caret_column(shown: re.Match) -> int | None:
    """The column the caret points at, when it stands on a line of its own under the code."""
    tail = shown.group()[len(shown.group("code")) :]
    return tail.index("^") - 1 if tail.startswith("\n") else None


def _at_caret(shown: re.Match, span: tuple[int, int]) -> bool:
    """The caret, when shown, points into `span` of the code: the parser stopped there, not at
    an earlier line's unclosed bracket."""
    column = _caret_column(shown)
    return column is None or span[0] - 1 <= column <= span[1] + 1


@PITFALL.engine_finding("unparsable-source")
def finding_for(error: Exception, source: str, path: str) -> Finding:
    """The finding for a file that does not parse (called by the checker, not by a walk)."""
    lines = _lines(source)
    if isinstance(error, SyntaxError):
        line, column, text = error.lineno or 1, error.offset or 1, error.msg
    else:
        line, column, text = 1, 1, f"{type(error).__name__}: {error}"
    line = max(1, min(line, len(lines) or 1))
    code_line = lines[line - 1] if lines else ""
    fix = None
    variant = ""
    # A repaired site points at its `async` (the checker knows the call); a parser's error,
    # at the line: the method called must be on it.
    at = column - 1
    match = _ASYNC_ARGUMENT.match(code_line, at) if 0 <= at < len(code_line) else None
    if match is None:
        match = _ASYNC_ARGUMENT.search(code_line)
        if match and not re.search(r"\.(cuda|to|copy_)\(", code_line):
            match = None
    invisible = INVISIBLE_CHARACTERS.get(code_line[at]) if 0 <= at < len(code_line) else None
    if invisible is not None:
        return _invisible_character(source, path, line, column, invisible)
    if code_line[at : at + 1] == "\\" and _blanks_after(code_line, at):
        return _blanks_after_backslash(source, path, line, column, text)
    if (
        match is None
        and code_line.startswith("async", at)
        and not code_line[at + 5 : at + 6].isalnum()
    ):
        variant = "async-name"  # a repaired `async` used as a name: no fix (every use renamed)
    if match:
        variant = "async"
        start = _line_starts(source)[line - 1] + match.start()
        edit = Edit(
            start,
            start + len("async"),
            "non_blocking",
            line,
            match.start() + 1,
            line,
            match.start() + 1 + len("async"),
        )
        fix = Fix("safe", PITFALL.fix_title["en"], (edit,), titles=PITFALL.fix_title)
        column = match.start() + 1
    return Finding(
        code=PITFALL.code,
        name=PITFALL.name,
        message=PITFALL.message(variant, "en", error=text),
        path=path,
        line=line,
        column=max(1, column),
        end_line=line,
        end_column=max(1, column),
        fix=fix,
        template=(variant, {"error": text}),
    )


_DELETE_INVISIBLE = {
    "en": "Delete the invisible character",
    "zh": "删除不可见字符",
}


def _invisible_character(
    source: str, path: str, line: int, column: int, invisible: tuple[str, str]
) -> Finding:
    """The finding at an invisible character outside a string, with the safe fix of writing
    what it stands for (nothing, or a plain space for a no-break space)."""
    name, replacement = invisible
    character = _lines(source)[line - 1][column - 1]
    error = f"invalid non-printable character U+{ord(character):04X}"
    start = _line_starts(source)[line - 1] + column - 1
    edit = Edit(start, start + 1, replacement, line, column, line, column + 1)
    fields = {"error": error, "character": name, "code": f"U+{ord(character):04X}"}
    return Finding(
        code=PITFALL.code,
        name=PITFALL.name,
        message=PITFALL.message("invisible", "en", **fields),
        path=path,
        line=line,
        column=column,
        end_line=line,
        end_column=column + 1,
        fix=Fix("safe", _DELETE_INVISIBLE["en"], (edit,), titles=_DELETE_INVISIBLE),
        template=("invisible", fields),
    )


_DELETE_BLANKS = {
    "en": "Delete the blanks after the backslash",
    "zh": "删除反斜杠后面的空白",
}


def _blanks_after_backslash(source: str, path: str, line: int, column: int, error: str) -> Finding:
    """The finding at a continuation backslash followed by blanks, with the safe fix of deleting
    them."""
    blanks = _blanks_after(_lines(source)[line - 1], column - 1)
    start = _line_starts(source)[line - 1] + column
    end_column = column + 1 + len(blanks)
    edit = Edit(start, start + len(blanks), "", line, column + 1, line, end_column)
    return Finding(
        code=PITFALL.code,
        name=PITFALL.name,
        message=PITFALL.message("continuation", "en", error=error),
        path=path,
        line=line,
        column=column,
        end_line=line,
        end_column=end_column,
        fix=Fix("safe", _DELETE_BLANKS["en"], (edit,), titles=_DELETE_BLANKS),
        template=("continuation", {"error": error}),
    )


# The lines of the last source seen and where each starts: a repaired file gets one finding per
# line repaired, each of which would otherwise split the whole file again.
_LAST: list = [None, [], []]


def _lines(source: str) -> list[str]:
    if _LAST[0] is not source:
        lines = split_lines(source, keepends=True)  # SyntaxError counts lines as Python does
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line))
        _LAST[:] = [source, lines, starts]
    return _LAST[1]


def _line_starts(source: str) -> list[int]:
    _lines(source)
    return _LAST[2]


# Python 2 code under Python 3: the interpreter names the statement it met.
PITFALL.error(
    r"Missing parentheses in call to '(?P<statement>print|exec)'",
    types=("SyntaxError",),
    confidence=0.9,
    cause={
        "en": "The file is Python 2 code (a `{statement}` statement without parentheses) and a "
        "Python 3 interpreter runs it.",
        "zh": "这个文件是 Python 2 代码（不带括号的 `{statement}` 语句），却由 Python 3 解释器运行。",
    },
    fix={
        "en": "Use a Python 3 version of the code (the project's newer release or branch), or "
        "convert the file: `{statement}(...)` for each such statement (`2to3 -w FILE` converts "
        "the rest of Python 2's syntax too).",
        "zh": "使用这份代码的 Python 3 版本（项目较新的版本或分支），或者转换该文件：把每条这样的语句改成 "
        "`{statement}(...)`（`2to3 -w FILE` 还会转换其余的 Python 2 语法）。",
    },
)

# Python 3 code under Python 2, shown by the traceback: the interpreter's paths or command.
_PYTHON2 = lazy_compile(r"(?<![\w.])python2(?:\.\d)?(?=[/\\]| \S)|[Pp]ython 2\.\d")
# Python 3-only syntax in a line: a parameter's annotation, a return annotation, `nonlocal`,
# `yield from`, a keyword-only marker.
_PY3_ONLY = (
    (
        lazy_compile(r"^\s*\w+\s*:[ \t]*[\w.][\w.\[\], ]*[,=)]|\)\s*->\s*[\w.\[\]]+\s*:"),
        "an annotation",
    ),
    (lazy_compile(r"^\s*nonlocal\s"), "`nonlocal`"),
    (lazy_compile(r"\byield from\b"), "`yield from`"),
    (lazy_compile(r"\(\s*(?:self,\s*)?\*\s*,"), "a keyword-only `*` marker"),
)
_PYTHON3_UNDER_2 = {
    "en": "The line is valid Python 3 ({feature}), and the traceback shows Python 2 running it "
    "(`{evidence}`): Python 2 does not read Python 3 syntax.",
    "zh": "这一行是合法的 Python 3 代码（{feature}），而回溯显示运行它的是 Python 2（`{evidence}`）："
    "Python 2 无法解析 Python 3 的语法。",
}
_RUN_PYTHON3 = {
    "en": "Run it with Python 3 (`python3 script.py`, or an environment made with Python 3) and "
    "install the package there; the code needs no change.",
    "zh": "用 Python 3 运行（`python3 script.py`，或用 Python 3 创建的环境），并在其中安装该包；"
    "代码本身无需修改。",
}


@PITFALL.error_check(types=("SyntaxError",), words=("invalid syntax",))
def python3_under_python2(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    """A bare `invalid syntax` under Python 3-only syntax, when Python 2 is visibly running."""
    if block.message.strip() != "invalid syntax":
        return None
    evidence = report.search(_PYTHON2)
    shown = report.search(_CARET_LINE) if evidence else None
    if shown is None:
        return None
    code = shown.group("code")
    feature = next((name for pattern, name in _PY3_ONLY if pattern.search(code)), None)
    if feature is None:
        return None
    return Clue(
        0.85, _PYTHON3_UNDER_2, _RUN_PYTHON3, {"feature": feature, "evidence": evidence.group()}
    )


# `print` (and `exec`) used as a name: valid Python 3, where they are functions, and `invalid
# syntax` only to Python 2, where they are statements (`progress.print(i)`, `print = log.info`).
_PYTHON2_KEYWORD_NAME = lazy_compile(
    r"\.(?:print|exec)\b|(?<![\w.])(?:print|exec)\s*=(?!=)|\bdef\s+(?:print|exec)\b"
)
# Retold on one line, as an issue quotes it: `"print = misc.logger.info ^SyntaxError: ...`.
_RETOLD_CARET = lazy_compile(r"(?P<code>[^\n\"\u201c`]{1,400}?)[ \t]\^+[ \t]?SyntaxError")
# The bare message, perhaps closed by the quote it was retold in (`invalid syntax",I don't...`);
# Python 3.10's `invalid syntax. Perhaps you forgot a comma?` is not it.
_BARE_INVALID_SYNTAX = lazy_compile(r"invalid syntax(?:[\"'`\u201d\u2019]|[ \t]*$)")
_KEYWORD_AS_NAME = {
    "en": "The line uses `{keyword}` as a name (`{code}`), which is valid Python 3, where "
    "`{keyword}` is a function; only Python 2, where `{keyword}` is a statement, reads it as "
    "`invalid syntax`. The script is Python 3 code run by Python 2.",
    "zh": "这一行把 `{keyword}` 当作名字使用（`{code}`），在 `{keyword}` 是函数的 Python 3 中完全合法；"
    "只有 `{keyword}` 是语句的 Python 2 才会把它当作 `invalid syntax`。这是用 Python 2 运行的 "
    "Python 3 代码。",
}


@PITFALL.error_check(types=("SyntaxError",), words=("invalid syntax",))
def python2_keyword_name(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    """A bare `invalid syntax` at a line using `print` or `exec` as a name."""
    if _BARE_INVALID_SYNTAX.match(block.message.strip()) is None:
        return None
    shown = report.search(_CARET_LINE) or report.search(_RETOLD_CARET)
    if shown is None:
        return None
    code = shown.group("code")
    found = _PYTHON2_KEYWORD_NAME.search(code)
    if found is None or not _at_caret(shown, found.span()):
        return None
    keyword = "exec" if "exec" in found.group() else "print"
    fields = {"keyword": keyword, "code": code.strip()}
    confidence = 0.85 if _caret_column(shown) is not None or report.search(_PYTHON2) else 0.75
    return Clue(confidence, _KEYWORD_AS_NAME, _RUN_PYTHON3, fields)


# Punctuation typed with a Chinese/Japanese input method or pasted from a document: full-width
# forms of ASCII (`（` U+FF08, `：` U+FF1A, `，` U+FF0C), typographic quotes, a no-break space.
_LOOKALIKES = "\uff08\uff09\uff1a\uff0c\uff1b\uff1d\uff3b\uff3d\uff5b\uff5d\u3002\u201c\u201d\u2018\u2019\u00a0"
_NAMED_CHARACTER = lazy_compile(
    r"invalid (?:non-printable )?character '?(?P<char>.)'? \(U\+(?P<code>[0-9A-F]{4,5})\)"
)
# The source line a bare `invalid syntax` shows: under `line N` (a File line or retold alone).
_AFTER_LINE_NUMBER = lazy_compile(r"(?m)line \d+[ \t]*\n(?P<code>[^\n]{1,400})")
_LOOKALIKE_CAUSE = {
    "en": "The line holds `{char}` (U+{code}), a look-alike of an ASCII character typed with a "
    "Chinese/Japanese input method or pasted from a document: Python reads only ASCII "
    "punctuation in code.",
    "zh": "这一行含有 `{char}`（U+{code}），是中文/日文输入法打出或从文档中粘贴来的、与 ASCII 字符相似的"
    "字符：Python 代码中只认 ASCII 标点。",
}
_ASCII_FIX = {
    "en": 'Retype it as its ASCII character (`(`, `)`, `:`, `,`, `=`, `"`, a plain space) with '
    "the input method switched to English.",
    "zh": '把输入法切换到英文，把它重新输入为对应的 ASCII 字符（`(`、`)`、`:`、`,`、`=`、`"`、普通空格）。',
}


@PITFALL.error_check(types=("SyntaxError",), words=("character", "invalid syntax"))
def lookalike_character(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    """Named by the message (Python 3.9+), or in the shown line of a bare `invalid syntax` /
    `invalid character in identifier` (older Pythons)."""
    named = _NAMED_CHARACTER.search(block.message)
    if named is not None:
        if named.group("char") not in _LOOKALIKES:
            return None
        return Clue(
            0.95,
            _LOOKALIKE_CAUSE,
            _ASCII_FIX,
            {"char": named.group("char"), "code": named.group("code")},
        )
    if block.message.strip() not in ("invalid syntax", "invalid character in identifier"):
        return None
    shown = report.search(_CARET_LINE) or report.search(_AFTER_LINE_NUMBER)
    if shown is None:
        return None
    char = next((c for c in shown.group("code") if c in _LOOKALIKES), None)
    if char is None:
        return None
    return Clue(0.85, _LOOKALIKE_CAUSE, _ASCII_FIX, {"char": char, "code": f"{ord(char):04X}"})


_NON_PRINTABLE = lazy_compile(r"invalid non-printable character U\+(?P<code>[0-9A-F]{4,5})")
_INVISIBLE_CAUSE = {
    "en": "The line holds an invisible character, a {name} (U+{code}), pasted along with the "
    "code from a web page, a chat or a PDF: an editor shows nothing there, and Python reads no "
    "such character outside a string.",
    "zh": "这一行含有一个不可见字符 U+{code}，是从网页、聊天记录或 PDF 随代码一起粘贴进来的：编辑器里看不到它，"
    "而 Python 在字符串之外不接受这种字符。",
}
_DELETE_FIX = {
    "en": "Delete it: put the cursor at the column the caret points to and delete there (or run "
    "`torchdoctor check --fix FILE`, which deletes every such character outside strings and "
    "makes a no-break space a plain one).",
    "zh": "删除它：把光标放到插入符号指向的列并删除（或运行 `torchdoctor check --fix FILE`，"
    "它会删除字符串之外的所有这类字符，并把不换行空格改成普通空格）。",
}


@PITFALL.error_check(types=("SyntaxError",), words=("non-printable",))
def invisible_character(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    """Python 3.9+'s `invalid non-printable character U+200B`, of a character pasted with the
    code (see `INVISIBLE_CHARACTERS`)."""
    named = _NON_PRINTABLE.search(block.message)
    if named is None:
        return None
    entry = INVISIBLE_CHARACTERS.get(chr(int(named.group("code"), 16)))
    if entry is None:
        return None
    return Clue(0.9, _INVISIBLE_CAUSE, _DELETE_FIX, {"name": entry[0], "code": named.group("code")})
