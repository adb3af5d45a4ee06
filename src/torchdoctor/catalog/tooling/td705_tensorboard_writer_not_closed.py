"""TD705 tensorboard-writer-not-closed: a SummaryWriter whose buffered events are never flushed."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from torchdoctor.catalog.sdk import (
    runs_as_script,
    Clue,
    Context,
    ErrorBlock,
    ErrorReport,
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
    code="TD705",
    name="tensorboard-writer-not-closed",
    title={
        "en": "TensorBoard SummaryWriter never closed or flushed",
        "zh": "TensorBoard 的 SummaryWriter 从未 close 或 flush",
    },
    messages={
        "": {
            "en": "`{name}` is never closed or flushed: the last events it buffers can be lost when the script ends",
            "zh": "`{name}` 从未调用 close 或 flush：脚本结束时，缓冲区中最后的事件可能丢失",
        }
    },
    docs={
        "en": """
## What it catches
A `SummaryWriter` from `torch.utils.tensorboard` (or tensorboard-pytorch's 2017 `tensorboard`),
assigned to a name (also at its place in a tuple written out on both sides: `sw, step =
SummaryWriter(d), 0`) that is only ever used to log (`writer.add_scalar(...)`,
`writer.add_image(...)`...), with no `writer.close()` or `writer.flush()` anywhere in the file.

A `writer = None` placeholder before it (made on rank 0 only, say), an object of another class
standing in for it when nothing is logged (`else: writer = Dummy()`), tests of it (`if writer
is None: writer = SummaryWriter(...)`, made the first time something is logged) and passing it
to a function of the same file that only logs to it, tests it or hands it to itself again
(`train(cfg, writer)`, a recursive `write_metric(results, writer)`) still count as logging, and
so does passing it to a function imported from another module of the project when no file of
the project closes or flushes anything named like a writer (`writer`, `logger`, `summary`...).
A writer kept on an object (`self.writer = SummaryWriter(...)`, or `... if main else
None`) is reported when the file only logs to that attribute, tests it or reads its directory
(`self.writer.log_dir`), and no file of the
project closes or flushes anything of that name (`self.writer.close()`, `writer.flush()`): the
object never closes it, and nothing else can. So is a writer a method returns (alone or in a
tuple) when every call of that method in the file keeps it in such an attribute
(`self.writer, self.dir = self.init_log()`). Writers used in a `with` block, returned to other
code, or passed to other code are not reported: someone else may close them. A writer kept in a
`global` is reported only in a script (a file with an `if __name__ == "__main__":` block, or one
that parses its command line at the top level), whose globals no other module imports, when
every use of it in the file logs. Notebook cells are not checked, since the kernel keeps running
and the writer's periodic flush gets its chance. Nor are `tensorboardX` writers: since
tensorboardX 2.1 each closes itself when the interpreter exits (an `atexit` hook).

## Why is this bad?
A `SummaryWriter` does not write each event to disk when you log it: events wait in a queue
and a buffer, written every `flush_secs` (120 seconds by default) or when the queue fills.
Its background writer thread does not flush on its own when the interpreter exits, so the
last minutes of scalars, images and histograms of a run, or everything of a short run, may
never reach the event file. The training seems to have logged nothing at the end, and
TensorBoard shows curves that stop early.

## Symptoms
TensorBoard shows no data for the run, or curves that end before the training did; an event
file still empty makes it log `Unable to get first event timestamp for run ...`. A run
killed while writing leaves a cut last record: `Read error in .../events.out.tfevents...:
ReadRecordError(BadLengthCrc(...))` from TensorBoard, `DataLossError: truncated record at N`
(or `corrupted record`) from a reader of the event file.

## Known problems
A `close()` anywhere in the file counts, even on a path that never runs; a crash or Ctrl+C
before it still loses the buffered events (use `with SummaryWriter(...) as writer:` or
`try/finally`).
""",
        "zh": """
## What it catches
来自 `torch.utils.tensorboard`（或 2017 年 tensorboard-pytorch 的 `tensorboard`）的 `SummaryWriter`
被赋给一个名字（也包括两边都写出的元组中对应位置的名字：`sw, step = SummaryWriter(d), 0`），
而这个名字只用于记录日志（`writer.add_scalar(...)`、`writer.add_image(...)` 等），
整个文件中都没有 `writer.close()` 或 `writer.flush()`。

先写 `writer = None` 占位（例如只在 rank 0 上创建）、不记录时用别的类的对象代替它（`else: writer =
Dummy()`）、对它的判断（`if writer is None: writer = SummaryWriter(...)`，在第一次记录时才创建），
以及把它传给同一文件中只用它记录日志、只对它做判断或把它再传给自身的函数（`train(cfg, writer)`、
递归的 `write_metric(results, writer)`），仍然算作只用于记录；传给从项目其他模块导入的函数，而项目中没有任何文件
关闭或 flush 名字像 writer 的对象（`writer`、`logger`、`summary`……）时，也算。
保存在对象上的 writer（`self.writer = SummaryWriter(...)`，
或 `... if main else None`）在以下情况下报告：文件只用这个属性记录日志、对它做判断或读取它的目录
（`self.writer.log_dir`），且项目中没有任何文件
关闭或刷新同名的对象（`self.writer.close()`、`writer.flush()`）：这个对象从不关闭它，别处也无法关闭。
某个方法返回的 writer（单独返回或放在元组中），如果文件中对该方法的每次调用都把它存进这样的属性
（`self.writer, self.dir = self.init_log()`），也会报告。
用在 `with` 语句中、返回给其他代码或传给其他代码的 writer 不会报告：可能由别处负责关闭。
保存在 `global` 变量中的 writer 只在脚本（带有
`if __name__ == "__main__":` 块、或在顶层解析命令行参数的文件，其全局变量不会被其他模块导入）中、
且文件里对它的每次使用都是记录日志时才报告。
Notebook 单元格不检查，因为内核一直在运行，writer 的定时刷新有机会执行。`tensorboardX` 的 writer
也不检查：从 tensorboardX 2.1 起，每个 writer 都会在解释器退出时自行关闭（注册了 `atexit` 钩子）。

## Why is this bad?
`SummaryWriter` 不会在每次记录时立即写盘：事件先进入队列和缓冲区，每隔 `flush_secs`（默认 120 秒）
或队列满时才写入。它的后台写线程在解释器退出时不会自己刷新，所以一次运行最后几分钟的标量、图片、
直方图，甚至短时间运行的全部数据，都可能根本没有写进事件文件。结果看起来像是训练结束时什么都没记录，
TensorBoard 里的曲线也比实际训练提前中断。

## Symptoms
TensorBoard 中这次运行没有任何数据，或者曲线在训练结束之前就断掉了；事件文件仍为空时，它会记录
`Unable to get first event timestamp for run ...`。写入时被杀掉的运行会留下一条被截断的
最后记录：TensorBoard 报 `Read error in .../events.out.tfevents...: ReadRecordError(BadLengthCrc(...))`，
读取事件文件的程序报 `DataLossError: truncated record at N`（或 `corrupted record`）。

## Known problems
文件中任何位置出现 `close()` 都算数，即使它所在的分支根本不会执行；在它之前崩溃或被 Ctrl+C 中断时，
缓冲的事件仍然会丢失（请使用 `with SummaryWriter(...) as writer:` 或 `try/finally`）。
""",
    },
    example="""
from torch.utils.tensorboard import SummaryWriter

writer = SummaryWriter("runs/exp1")
for step in range(100):
    writer.add_scalar("loss", 1.0 / (step + 1), step)
""",
    use_instead="""
from torch.utils.tensorboard import SummaryWriter

writer = SummaryWriter("runs/exp1")
for step in range(100):
    writer.add_scalar("loss", 1.0 / (step + 1), step)
writer.close()
""",
)

# TensorBoard's core plugin, on an event file that holds no event yet (retold "timestep").
PITFALL.error(
    r"nable to get (?:the )?first event timest(?:amp|ep)",
    types=(),
    # An event file is created with the writer; an empty one is a writer that never flushed
    # (still running under its flush_secs, or ended without close), or a run killed early.
    confidence=0.75,
    cause={
        "en": "TensorBoard found an event file without a single event in it: the SummaryWriter "
        "that made it has not written its buffered events yet (it flushes every `flush_secs`, "
        "120 s by default) and the script ended without `writer.close()` or `writer.flush()`, "
        "or the run was killed before the first flush.",
        "zh": "TensorBoard 找到了一个一条事件都没有的事件文件：创建它的 SummaryWriter 还没有把缓冲的"
        "事件写出（默认每 `flush_secs`＝120 秒写一次），而脚本结束时没有调用 `writer.close()` 或 "
        "`writer.flush()`，或者运行在第一次写出之前就被杀掉了。",
    },
    fix={
        "en": "Close the writer when logging ends (`with SummaryWriter(...) as writer:` or "
        "`writer.close()` in a `finally:`), or call `writer.flush()` after logging what "
        "TensorBoard should show now.",
        "zh": "记录结束时关闭 writer（`with SummaryWriter(...) as writer:`，或在 `finally:` 中 "
        "`writer.close()`），或者在记录完需要立刻在 TensorBoard 中看到的内容后调用 "
        "`writer.flush()`。",
    },
)

_CUT_RECORD = re.compile(
    r"(?:truncated|corrupted) record|has truncated record|failed (?:header|event) crc32 check"
    r"|ReadRecordError\((?:BadLengthCrc|BadDataCrc|Truncated)"
)
_EVENT_FILE = re.compile(r"events\.out\.tfevents|summary_iterator|event_file_loader|rustboard")
_CUT_EVENT_FILE = {
    "en": "An event file ends in a cut or damaged record: the run that wrote it stopped (killed, "
    "interrupted, crashed) in the middle of a write, without closing its SummaryWriter.",
    "zh": "事件文件以一条被截断或损坏的记录结尾：写它的那次运行在写入途中停止了（被杀掉、中断或崩溃），"
    "没有关闭它的 SummaryWriter。",
}
_SKIP_CUT_RECORD = {
    "en": "The records before the cut one are intact: TensorBoard shows them; a reader of the "
    "file should stop at the `DataLossError` instead of failing. In the training script, close "
    "the writer on every exit: `with SummaryWriter(...) as writer:` or `try/finally: "
    "writer.close()`.",
    "zh": "被截断的记录之前的数据是完整的：TensorBoard 会显示它们；读取这个文件的程序应该在遇到 "
    "`DataLossError` 时停止，而不是报错退出。在训练脚本中，确保每种退出方式都会关闭 writer："
    "`with SummaryWriter(...) as writer:` 或 `try/finally: writer.close()`。",
}


@PITFALL.error_check(
    types=(), words=("events.out.tfevents", "summary_iterator", "event_file_loader", "rustboard")
)
def cut_event_record(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    """Only for event files: a TFRecord data set gives the same `truncated record` text."""
    if "record" not in block.message and "Record" not in block.message:
        return None
    if not _CUT_RECORD.search(block.message) or not report.search(_EVENT_FILE):
        return None
    return Clue(0.85, _CUT_EVENT_FILE, _SKIP_CUT_RECORD)


# An issue that shows its script and says TensorBoard shows nothing: the script makes a writer,
# logs to it, and neither closes nor flushes it anywhere in what is shown.
_MAKES_WRITER = lazy_compile(r"\bSummaryWriter\(")
_LOGS = lazy_compile(r"\.add_(?:scalars?|image|images|histogram|text|figure|graph)\(")
_FLUSHES = lazy_compile(r"\.(?:close|flush)\(|\bwith\s+[\w.]*SummaryWriter\(")
_SHOWS_NOTHING = lazy_compile(
    r"\b(?:shows?|displays?|see|get) (?:no|nothing|empty)\b"
    r"|\bno (?:scalars?|data|events?|graphs?) (?:are |is |was |were )?(?:found|shown|displayed)"
    r"|No dashboards are active"
)
_UNFLUSHED_SCRIPT = {
    "en": "The script shown makes a SummaryWriter and logs to it, but never calls "
    "`writer.close()` or `writer.flush()`: events wait in the writer's buffer (written every "
    "`flush_secs`, 120 s by default) and a short run ends before any reaches the event file, "
    "so TensorBoard has nothing to show.",
    "zh": "贴出的脚本创建了 SummaryWriter 并向它记录数据，却从未调用 `writer.close()` 或 "
    "`writer.flush()`：事件留在 writer 的缓冲区里（默认每 `flush_secs`＝120 秒写出一次），"
    "短的运行在任何事件写入事件文件之前就结束了，所以 TensorBoard 没有东西可显示。",
}
_CLOSE_WRITER = {
    "en": "Call `writer.close()` when logging ends (or `with SummaryWriter(...) as writer:`), "
    "and `writer.flush()` where TensorBoard should see the events at once.",
    "zh": "记录结束时调用 `writer.close()`（或使用 `with SummaryWriter(...) as writer:`），"
    "需要 TensorBoard 立刻看到事件时调用 `writer.flush()`。",
}


@PITFALL.error_check(types=(), words=("summarywriter(",))
def unflushed_script(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    """No error at all: a script shown with the words that TensorBoard shows nothing."""
    if not _no_error_shown(block, report) or "SummaryWriter(" not in (report.text or ""):
        return None
    if not (report.search(_MAKES_WRITER) and report.search(_LOGS)):
        return None
    if report.search(_FLUSHES) or not report.search(_SHOWS_NOTHING):
        return None
    return Clue(0.7, _UNFLUSHED_SCRIPT, _CLOSE_WRITER)


_TENSORBOARD = lazy_compile(r"[Tt]ensor[Bb]oard|SummaryWriter|\bevents? files?\b|\.add_scalars?\(")
# The event file is there but empty, or the events appear only once the program ends: what a
# writer's buffer that is never flushed looks like from outside.
_UNFLUSHED_EVENTS = lazy_compile(
    r"\bevents? files?\b[^\n]{0,120}?(?:\b(?:remains?|is|are|stays?|always) empty\b"
    r"|\b0 ?[Bb]ytes?\b|\bzero bytes?\b|\b0B\b)"
    r"|\b(?:empty|0 ?[Bb]ytes?) events? files?\b"
    r"|\b(?:[Ll]ogs?|[Rr]ecords?|[Ww]rites?|[Ss]hows?|[Ss]aves?|[Dd]isplays?)(?:ged|ed|s)? nothing "
    r"(?:unless|until|before) (?:I |we |you |the )?(?:terminate|kill|stop|exit|close|end|finish)"
    r"|\b(?:scalars?|events?|summaries|histograms?)\b[^\n]{0,60}\b(?:are|were|is|was|get|gets) "
    r"(?:not|never) flushed\b"
)
_UNFLUSHED_EVENTS_CAUSE = {
    "en": "The event file stays empty, or fills only when the program ends: a SummaryWriter "
    "keeps logged events in its queue and buffer, written every `flush_secs` (120 s by "
    "default) or when enough accumulate, and a writer never flushed or closed loses what is "
    "still queued when the run ends.",
    "zh": "事件文件一直是空的，或者只有程序结束时才写入：SummaryWriter 把记录的事件留在队列和缓冲区里，"
    "每 `flush_secs`（默认 120 秒）或积累够多时才写出，从未 flush 或 close 的 writer 会在运行结束时"
    "丢掉仍在排队的内容。",
}


@PITFALL.error_check(types=(), words=("tensorboard", "summarywriter", "event", ".add_scalar"))
def unflushed_events(block, report) -> Clue | None:
    """No error at all: the words that the event file is empty or fills only at exit."""
    if not _no_error_shown(block, report):
        return None
    if not (report.search(_TENSORBOARD) and report.search(_UNFLUSHED_EVENTS)):
        return None
    if report.search(_FLUSHES):  # the text shows the writer flushed or closed: another story
        return None
    return Clue(0.7, _UNFLUSHED_EVENTS_CAUSE, _CLOSE_WRITER)


# The report's own diagnosis, in words: "the code leaves the SummaryWriter unclosed", "the
# writer is never closed", "without closing the writer".
_SAID_UNCLOSED = lazy_compile(
    r"\b(?:leaves?|left|leaving)\s+(?:the\s+|its\s+|a\s+)?(?:SummaryWriter|[Ww]riter)\s+"
    r"(?:unclosed|open)\b"
    r"|\b(?:SummaryWriter|[Ww]riter)\s+(?:is|was|stays?|remains?)\s+(?:unclosed|never closed"
    r"|not closed)\b"
    r"|\b(?:never|not|without)\s+clos(?:es?|ed|ing)\s+(?:the\s+|its\s+|a\s+)?(?:SummaryWriter"
    r"|[Ww]riter)\b"
    # "because we don't flush the data to disk"
    r"|\b(?:never|not|don't|doesn't|without)\s+flush(?:es|ed|ing)?\s+(?:the\s+|its\s+)?"
    r"(?:data|events?|logs?|summaries|SummaryWriter|[Ww]riter)\b"
)
_MISSING_EVENTS = lazy_compile(
    r"\b(?:scalars?|events?|summaries|values?|data|points?|logs?|steps?)\b[^\n]{0,120}?"
    r"\b(?:not|never|n't) (?:appear|show|shown|displayed|written|saved|logged)"
    r"|\b(?:missing|lost)\b"
    # "TensorboardX doesn't refresh data"
    r"|\b(?:not|never|n't) (?:refresh|update)(?:es|s|ed|ing)?\b|\brefreshing problem\b"
)
_SAID_UNCLOSED_CAUSE = {
    "en": "The text says the SummaryWriter is never closed or flushed, and logged values are "
    "missing from TensorBoard: a writer keeps events in its queue and buffer (written every "
    "`flush_secs`, 120 s by default), and what is still queued when the program ends without "
    "`close()` or `flush()` never reaches the event file.",
    "zh": "文本说 SummaryWriter 从未关闭或 flush，且记录的数值没有出现在 TensorBoard 中：writer 把事件"
    "留在队列和缓冲区里（默认每 `flush_secs`＝120 秒写出一次），程序结束时没有 `close()` 或 `flush()`，"
    "仍在排队的事件就不会写入事件文件。",
}


@PITFALL.error_check(types=(), words=("tensorboard", "summarywriter", "event", ".add_scalar"))
def said_unclosed(block, report) -> Clue | None:
    """No error at all: the words that the writer is left open and that logged values are
    missing."""
    if not _no_error_shown(block, report) or not report.search(_TENSORBOARD):
        return None
    if not (report.search(_SAID_UNCLOSED) and report.search(_MISSING_EVENTS)):
        return None
    return Clue(0.7, _SAID_UNCLOSED_CAUSE, _CLOSE_WRITER)


def _no_error_shown(block: ErrorBlock, report: ErrorReport) -> bool:
    """The text tells its story without an error: a crash in it is the story, not the missing
    events."""
    return not block.short_type and not report.exceptions


# tensorboardX's writers are not among them: since tensorboardX 2.1 (2020) each registers an
# `atexit` hook that closes it, so what it buffered is written when the interpreter exits.
_WRITERS = frozenset(
    {
        "torch.utils.tensorboard.SummaryWriter",
        "torch.utils.tensorboard.writer.SummaryWriter",
        "tensorboard.SummaryWriter",  # tensorboard-pytorch, tensorboardX's name until 2017
    }
)
_FLUSHING = frozenset({"close", "flush"})


@PITFALL.static(ast.Call, names={"SummaryWriter"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if ctx.is_notebook or ctx.qualname(call.func) not in _WRITERS:
        return
    statement = ctx.parent()
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return
    target = statement.targets[0]
    if is_self_attribute(target) and _made_or_none(statement.value, call):
        yield from _check_attribute(call, target, ctx)
        return
    target = _target_of(statement, call)
    if target is None:
        return
    name = target.id
    scope = ctx.enclosing_function() or ctx.tree
    if name in _globals(ctx):
        # A global of a script (semseg's `global writer` in main_worker): no other module
        # imports it, so its uses are those of this file. Of a library module, it may be closed
        # by whoever imports it.
        if not runs_as_script(ctx):
            return
        scope = ctx.tree
    if name in _flushed_anywhere(ctx) or not _only_logged(name, scope, target, ctx):
        return
    yield ctx.finding(PITFALL, call, name=name)


def _target_of(statement: ast.Assign, call: ast.Call) -> ast.Name | None:
    """The name `statement` binds the writer `call` to: `writer = SummaryWriter(d)`, or its
    place in a tuple written out on both sides (`sw, step = SummaryWriter(d), 0`: hh10's SSD
    trainer)."""
    target, value = statement.targets[0], statement.value
    if isinstance(target, ast.Name):
        return target if value is call else None
    if not (
        type(target) in (ast.Tuple, ast.List)
        and type(value) in (ast.Tuple, ast.List)
        and len(target.elts) == len(value.elts)  # type: ignore[attr-defined]
    ):
        return None
    for element, part in zip(target.elts, value.elts):  # type: ignore[attr-defined]
        if part is call and isinstance(element, ast.Name):
            return element
    return None


def _made_or_none(value: ast.expr, call: ast.Call) -> bool:
    """`value` is the writer's call, or picks it or None (`SummaryWriter(...) if main else
    None`): a writer made on some runs only."""
    if value is call:
        return True
    return (
        isinstance(value, ast.IfExp)
        and call in (value.body, value.orelse)
        and any(_is_none(branch) for branch in (value.body, value.orelse))
    )


def _check_attribute(call: ast.Call, target: ast.Attribute, ctx: Context) -> Iterator[Finding]:
    """`self.writer = SummaryWriter(...)` in a class whose code logs to `self.writer` and
    uses it in no other way, in a project where nothing closes or flushes a `writer` (the
    attribute's name) and no line of the file uses that attribute otherwise: the object
    keeping it never closes it, and no one else can."""
    cls = ctx.enclosing_class()
    attr = target.attr
    if cls is None or not ctx.project.known or ctx.project.closes(attr):
        return
    if not _attribute_only_logged(ctx, attr):
        return
    yield ctx.finding(PITFALL, call, name=f"self.{attr}")


@per_file
def _attribute_only_logged(ctx: Context, attr: str) -> bool:
    """Every `<x>.<attr>` of the file is assigned a writer (or None), called a method of
    (`self.writer.add_scalar(...)`, once at least) or tested (`if self.writer:`, `is None`):
    never closed, handed on, returned or aliased."""
    whole = index(ctx)
    logged = False
    for at in whole.attributes.get(attr, ()):
        node = whole.nodes[at]
        if isinstance(node.ctx, ast.Store):
            continue
        method = whole.parents.get(node)
        call = whole.parents.get(method) if isinstance(method, ast.Attribute) else None
        if isinstance(call, ast.Call) and call.func is method:
            if method.attr in _FLUSHING:  # type: ignore[union-attr]
                return False
            logged = True
        elif isinstance(method, ast.Attribute) and method.attr in _DIRECTORY_ATTRIBUTES:
            continue  # `self.writer.log_dir`: where it writes (SimCLR's log file, checkpoints)
        elif not _tested(node, whole.parents):
            return False
    return logged


# A writer's attributes naming its directory: reading them neither closes nor hands it on.
_DIRECTORY_ATTRIBUTES = frozenset({"log_dir", "logdir"})


def _tested(node: ast.expr, parents) -> bool:
    """`node` is only tested: `if node:`, `if node is None:`, `if not node and ...:`."""
    parent = parents.get(node)
    if (
        isinstance(parent, ast.Compare)
        and len(parent.ops) == 1
        and isinstance(parent.ops[0], (ast.Is, ast.IsNot))
        and _is_none(parent.comparators[0] if parent.left is node else parent.left)
    ):
        node, parent = parent, parents.get(parent)
    while isinstance(parent, ast.BoolOp) or (
        isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)
    ):
        node, parent = parent, parents.get(parent)
    return isinstance(parent, (ast.If, ast.While, ast.IfExp)) and parent.test is node


def _is_none(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None


@per_file
def _globals(ctx: Context) -> frozenset[str]:
    """The names some function of the file declares `global`."""
    return frozenset(name for node in index(ctx).everywhere(ast.Global) for name in node.names)


@per_file
def _flushed_anywhere(ctx: Context) -> frozenset[str]:
    """The names closed or flushed somewhere in the file (`name.close()`, `name.flush()`)."""
    whole = index(ctx)
    found = set()
    for attribute in _FLUSHING:  # read by name: most attributes of a file are not these
        for at in whole.attributes.get(attribute, ()):
            value = whole.nodes[at].value
            if isinstance(value, ast.Name):
                found.add(value.id)
    return frozenset(found)


def _only_logged(name: str, scope: ast.AST, made: ast.Name, ctx: Context) -> bool:
    """Every other use of `name` in `scope` is a method call on it, a `name = None` placeholder
    or an argument of a function of this file that only logs to it: the writer never escapes."""
    found = index_of(ctx, scope)
    flushed = _flushed_anywhere(ctx)
    for node in _other_uses(ctx, scope, name):
        if node is made or _stand_in(node, found):
            continue
        if _tested(node, found.parents):  # `if writer is None: writer = SummaryWriter(...)`
            continue
        if _returned_to_attributes(node, scope, found, ctx):
            continue
        if not _logged_by_callee(node, found, flushed, ctx):
            return False
    return True


def _returned_to_attributes(node: ast.Name, function: ast.AST, found, ctx: Context) -> bool:
    """`return writer, weights_dir` from a method whose every call in the file is
    `self.writer, self.weights = self.init_log()`, each attribute it lands in only logged to,
    in a project that closes none of those names (yolov3.pytorch's Logger): the object keeping
    it never closes it, and no one else can."""
    returned, position, width = found.parents[node], None, 0
    if isinstance(returned, ast.Tuple):
        position, width = returned.elts.index(node), len(returned.elts)
        returned = found.parents[returned]
    if not (
        isinstance(returned, ast.Return)
        and isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        and ctx.project.known
    ):
        return False
    whole = index(ctx)
    attributes = []
    for at in whole.calls.get(function.name, ()):
        call = whole.nodes[at]
        statement = whole.parents.get(call)
        if not (
            is_self_attribute(call.func)
            and isinstance(statement, ast.Assign)
            and statement.value is call
            and len(statement.targets) == 1
        ):
            return False
        target = statement.targets[0]
        if position is not None:
            if not (isinstance(target, ast.Tuple) and len(target.elts) == width):
                return False
            target = target.elts[position]
        if not is_self_attribute(target):
            return False
        attributes.append(target.attr)  # type: ignore[union-attr]
    return bool(attributes) and all(
        not ctx.project.closes(attr) and _attribute_only_logged(ctx, attr) for attr in attributes
    )


def _stand_in(node: ast.Name, found) -> bool:
    """`writer = None` before the writer is made (on rank 0 only, say), or `writer = Dummy()`
    in the branch that does not log (SiamMask's `if args.log_dir:`): a value standing in for the
    writer, which has nothing to flush."""
    statement = found.parents[node]
    if not (isinstance(statement, ast.Assign) and statement.targets == [node]):
        return False
    value = statement.value
    if isinstance(value, ast.Constant):
        return value.value is None
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id[:1].isupper()
        and value.func.id != "SummaryWriter"
    )


def _logged_by_callee(node: ast.Name, found, flushed: frozenset[str], ctx: Context) -> bool:
    """`train(cfg, writer)` where `train` is a function of this file whose parameter is only
    logged to (or tested), never closed, flushed or passed on."""
    call = found.parents[node]
    if isinstance(call, ast.keyword):  # `validate(..., board=writer)`
        call = found.parents[call]
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        return False
    function = top_level_functions(ctx).get(call.func.id)
    if function is None:
        return _given_to_a_project_that_closes_no_writer(call, ctx)
    arguments = function.args
    if node in call.args:
        position = call.args.index(node)
        if any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
            return False
        positional = [*arguments.posonlyargs, *arguments.args]
        if position >= len(positional):
            return False
        parameter = positional[position].arg
    else:
        keyword = next((k for k in call.keywords if k.value is node), None)
        if keyword is None or keyword.arg is None:
            return False
        parameter = keyword.arg
    if parameter in flushed:
        return False
    # `if tf_writer is not None:` before logging (a parameter defaulting to None) only tests it;
    # handing it to the function itself again (lufficc/SSD's recursive `write_metric`) only logs.
    inner = index_of(ctx, function)
    return all(
        _tested(use, inner.parents) or _recursed(use, function, inner)
        for use in _other_uses(ctx, function, parameter)
    )


# Parts of the names a writer is kept under (`writer`, `tb_logger`, `summary`, `board`...).
_WRITER_WORDS = ("writer", "log", "summary", "board", "tb", "sw")


def _given_to_a_project_that_closes_no_writer(call: ast.Call, ctx: Context) -> bool:
    """`log(train_logger, step, losses=losses)` with `log` imported from another module of the
    project, and no file of the project closes or flushes anything named like a writer: whatever
    that function does with it, it never closes it (Comprehensive-Transformer-TTS)."""
    qualname = ctx.qualname(call.func)
    project = ctx.project
    if qualname is None or not project.is_project_module(qualname):
        return False
    return not any(
        any(word in name.lower() for word in _WRITER_WORDS) for name in project.closed_names
    )


def _recursed(use: ast.Name, function: ast.AST, found) -> bool:
    """`use` is an argument of a call of `function` itself (by its bare name), in the same
    place as the parameter it is."""
    call = found.parents.get(use)
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == function.name  # type: ignore[attr-defined]
        and use in call.args
        and call.args.index(use) < len(function.args.args)  # type: ignore[attr-defined]
        and function.args.args[call.args.index(use)].arg == use.id  # type: ignore[attr-defined]
    )


@per_file
def _other_uses(ctx: Context, scope: ast.AST, name: str) -> list[ast.Name]:
    """The uses of `name` in `scope` that are not method calls on it: bindings, arguments..."""
    found = index_of(ctx, scope)
    others = []
    for node in found.names_in(scope, name):
        attribute = found.parents[node]
        if not (
            isinstance(node.ctx, ast.Load)
            and isinstance(attribute, ast.Attribute)
            and isinstance(found.parents.get(attribute), ast.Call)
            and found.parents[attribute].func is attribute
        ):
            others.append(node)
    return others
