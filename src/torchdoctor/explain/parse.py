"""Read the errors out of a traceback, a whole log, or a live exception, into an `ErrorReport`.

Text is read line by line, one pass per output stream (torchrun ranks are read apart), so a long
log costs linear time. Nothing here imports torch, and nothing here raises: a bug in the doctor
must never cost the user their error.
"""

from __future__ import annotations

import builtins
import re
from bisect import bisect_right
import sys
from dataclasses import dataclass, replace

from torchdoctor._regex import lazy_compile
from torchdoctor.explain.model import ErrorBlock, ErrorReport, Frame

__all__ = [
    "from_exception",
    "is_user_path",
    "parse_text",
    "pytest_failures",
    "user_frame",
    "user_frame_of",
]

# --- cleaning: terminal codes, progress bars, rank / logging / pytest prefixes ----------------

_ANSI = lazy_compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
# Per-process prefixes: torchrun's `[rank0]: ` / `[default0]:`, mpirun's `[1,0]<stderr>:`,
# srun --label's `15: `, Ray's `(RayTrainWorker pid=4242) `.
_RANK = lazy_compile(r"\[(?:rank|default)(\d+)\]: ?|\[\d+,(\d+)\]<std(?:out|err)>: ?")
_TASK_LABEL = lazy_compile(r" {0,2}(\d{1,5}): ")
_RAY = lazy_compile(r"\((\w+ pid=\d+)(?:, ip=[\d.]+)?\) ")
_TIMESTAMP = lazy_compile(
    r"\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]? ?"
)
_LEVEL = lazy_compile(
    r".{0,60}?\b(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b\]?(?: ?[-:|])? ?"
)
_LEVEL_NAME = lazy_compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]*:")  # logging's default
_LEVEL_INITIALS = ("D", "I", "W", "E", "C")
_PYTEST_E = lazy_compile(r"E(?: {3,}|\t|$)")
# pytest's report of one traceback entry: `tests/test_x.py:14: ` (long), `f.py:3: in fn`
# (short), and under the last entry the exception's class: `conv.py:543: RuntimeError`.
_PYTEST_LOCATION = lazy_compile(
    r"(?P<path>[^\s:>][^:]*\.py):(?P<line>\d+):(?: in (?P<function>[\w<>.]+)| [\w.]+)?\s*$"
)
_PYTEST_SECTION = lazy_compile(r"_{3,} (?P<name>.+) _{3,}$")  # `____ test_train_step ____`
_PYTEST_RULE = lazy_compile(r"={3,} .+ ={3,}$")  # `==== short test summary info ====`
# The short summary of a failure: `FAILED tests/t.py::test_a - RuntimeError: mat1 and...`,
# its message cut to the terminal's width.
_PYTEST_SUMMARY = lazy_compile(
    r"(?:FAILED|ERROR) (?P<path>[^\s:]+?\.py)(?:::(?P<test>\S+))?(?: - (?P<error>.*))?$"
)
_PYTEST_ERROR_SECTION = lazy_compile(r"ERROR (?:at (?:setup|teardown) of|collecting) ")
_FENCE = lazy_compile(r" {0,3}(?:```|~~~)[\w+-]*$")  # not a 3.11 `~~~^^^` marker: indented
_QUOTE = lazy_compile(r"> ?")  # a Markdown quote, as tracebacks are pasted into issues
_QUOTES = ("`", "“", "”")
_GROUP_HEADER = lazy_compile(r"\s*\+ Exception Group Traceback \(most recent call last\):")
_GROUP_BAR = lazy_compile(r"\s*\| ?")
_GROUP_RULE = lazy_compile(r"\s*\+[-+]")

# --- Python tracebacks -----------------------------------------------------------------------

_TRACEBACK = lazy_compile(r".*?(?<!Original )Traceback \(most recent call last\):\s*$")
_ORIGINAL = "Original Traceback (most recent call last):"
_CHAIN = {
    "During handling of the above exception, another exception occurred:": "context",
    "The above exception was the direct cause of the following exception:": "cause",
}
# `,? in`: faulthandler's dump has no comma. The function name ends at the line's last
# non-space (`.*\S`): a lazy `.+?` followed by `\s*$` would rescan trailing spaces at each step.
_FILE = lazy_compile(
    r'\s*File "(?P<path>[^"]*)", line (?P<line>\d+)(?:,? in (?P<function>.*\S))?\s*$'
)
_CARET = lazy_compile(r"\s*[\^~][\s\^~]*$")  # Python 3.11+ position markers, SyntaxError carets
_ELIDED = lazy_compile(
    r"\s*(?:\[Previous line repeated \d+ more times?\]|\.\.\.<\d+ lines>\.\.\.)$"
)
_EXCEPTION = lazy_compile(r"(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)(?::(?P<message>.*))?$")
_CLASS_NAME = lazy_compile(r"_?[A-Z]\w*$")
# An exception line found outside any traceback must look like an exception class.
_EXCEPTION_WORDS = ("Error", "Exception", "Interrupt", "Exit", "Group")
_STANDALONE = lazy_compile(
    r"(?:[A-Za-z_]\w*\.)*_?[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Group)(?::.*)?$"
)
# ... or after other text: `temp_x = x.cuda(i) RuntimeError: CUDA error (10): invalid device`,
# also right after Chinese text (`在async=True处出现SyntaxError: invalid syntax`): ASCII word
# characters only, or the CJK before the class would be read as part of its name.
_EMBEDDED = lazy_compile(
    r"(?<![\w.])(?:[A-Za-z_]\w*\.)*_?[A-Z]\w*(?:Error|Exception):(?: |$)", re.ASCII
)
# Lines that end a multi-line message although no blank line came: a C++ stack follows, or
# wandb's exit report.
_MESSAGE_STOPS = ("Exception raised from ", "frame #", "wandb: ")

# --- IPython / Jupyter -----------------------------------------------------------------------

_IPY_RULE = lazy_compile(r"-{70,}$")
_IPY_HEADER = lazy_compile(
    r"(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\s+Traceback \(most recent call last\)$"
)
_IPY_FUNCTION = r"(?:, in (?P<function><[^>]*>|[^\s(]+))?"
_IPY_FRAMES = (
    lazy_compile(r"(?P<path>Cell In ?\[\d+\]), line (?P<line>\d+)" + _IPY_FUNCTION),
    lazy_compile(r"(?P<path>Input In ?\[\d+\])" + _IPY_FUNCTION),
    lazy_compile(r"File (?P<path>.+?):(?P<line>\d+)" + _IPY_FUNCTION),
    lazy_compile(r"(?P<path><[^>]+>|\S.*?\.pyc?) in (?P<function><[^>]*>|[^\s(]+)"),  # IPython < 8
)
_IPY_ARROW = lazy_compile(r"\s*-*>\s*(?P<line>\d+)(?:\s(?P<source>.*))?$")
_IPY_CONTEXT = lazy_compile(r"\s+\d+(?:\s.*)?$")
# Colab folds the frames of installed packages into one line: `6 frames`.
_IPY_FOLDED = lazy_compile(r"\d+ frames$")

# --- errors in logs, outside tracebacks ------------------------------------------------------

# `Assertion ` is looked for once, ahead: `.*Assertion .* failed` would retry each occurrence.
_DEVICE_ASSERT = lazy_compile(
    r"(?P<path>\S+?\.cuh?):(?P<line>\d+): (?P<message>(?=.*Assertion ).* failed\.)$"
)
_BLOCK_THREAD = lazy_compile(r"block: \[[\d, ]*\], thread: \[[\d, ]*\] ")
_COMPILER = lazy_compile(  # gcc/clang `f.cpp:12:5: error:`, nvcc/MSVC `f.cu(34): error:`
    r"(?P<path>(?:[A-Za-z]:)?[^:()]+?)(?::(?P<line>\d+)(?::\d+)?:|\((?P<line2>\d+)\):) "
    r"(?:fatal )?error(?: [A-Z]+\d+)?: (?P<message>.*)$"
)
_BARE_FATAL = lazy_compile(r"fatal error: (?P<message>.*)$")  # the compiler's path cut off
# argparse: `train.py: error: unrecognized`. The program's name starts after a non-name
# character, so that a long word is not rescanned from each of its letters.
_USAGE_ERROR = lazy_compile(r".*?(?<![\w.-])[\w.-]+: error: .+$")
_WARNING = lazy_compile(
    r"(?P<path>\S.*?):(?P<line>\d+): (?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*Warning): ?"
    r"(?P<message>.*)$"
)
# A warning pasted without its `path:line:` (cut off, or copied from a notebook's output).
_BARE_WARNING = lazy_compile(r"(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*Warning): (?P<message>\S.*)$")
# c10's `[W socket.cpp:663] msg`, and glog's `E0102 12:00:00.1 42 f.cpp:3] msg`
_CPP_LOG = lazy_compile(
    r"(?:\[[WEF](?:\d{4} [\d:.]+ +\d+)? |[WEF]\d{4} [\d:.]+ +\d+ )"
    r"(?P<path>[^\s\]]+?):(?P<line>\d+)\] ?(?P<message>.*)$"
)
_TERMINATE = lazy_compile(r"terminate called\b")
_WHAT = lazy_compile(r"\s*what\(\):\s*(?P<message>.*)$")
_WORKER_SIGNAL = lazy_compile(r"ERROR: Unexpected .+ encountered in worker\b")
_THC_FAIL = lazy_compile(r"THCudaCheck FAIL file=(?P<path>\S+) line=(?P<line>\d+) ")
_ELASTIC_FAILED = lazy_compile(r".*\bfailed \(exitcode: -?\d+\) local_rank: \d+")
_FATAL_PYTHON = lazy_compile(r"Fatal Python error: ")
_FAULT_THREAD = lazy_compile(
    r"(?:Current thread|Thread) 0x[0-9a-fA-F]+ .*\(most recent call first\):$"
)
# The lines of a warning's message after its first, read only up to its source line.
_WARNING_MORE_LINES = 3
_IGNORED = "Exception ignored in"  # an unraisable exception, printed; the program went on
_LOG_STARTS = (
    ("terminate", _TERMINATE),
    ("signal", _WORKER_SIGNAL),
    ("thc", _THC_FAIL),
    ("fatal", _FATAL_PYTHON),
)
_SIGNALS = (
    "segmentation fault",
    "bus error",
    "aborted",
    "illegal instruction",
    "floating point exception",
    "killed",
)
# As the shell reports it: `Bus error (core dumped)`, `bash: line 1: 42 Killed   python x.py`
_CRASH = lazy_compile(
    r"(?P<prefix>zsh: |.*?: line \d+: +\d+ +)?"
    r"(?i:segmentation fault|bus error|aborted|illegal instruction|floating point exception|killed)"
    r"(?: +\(core dumped\))?(?(prefix) +.*|)$"
)

# --- versions --------------------------------------------------------------------------------

_VERSION = r"(\d+\.\d+(?:\.\d+)?(?:(?:a|b|rc|\.dev|\.post)\d+)?(?:\+[\w.]+)?)"
_PYTORCH_VERSION = lazy_compile(r"PyTorch version: " + _VERSION)  # collect_env
# These start with a literal so that `search` skips ahead fast; what comes before the match is
# checked by `_preceded`: `torch`, not `libtorch`; `/python3.10/`.
_TORCH_VERSION = lazy_compile(
    r"orch(?:\.__version__\)?| version)?"
    r"(?:==|[ \t]*[:=][ \t]*|[ \t]+|-|[ \t]*\n[ \t]*)['\"]?v?" + _VERSION
)
_PYTHON_VERSION = lazy_compile(r"Python(?: version)?:?[ \t]+(\d\.\d{1,2}(?:\.\d+)?)\b")
_PYTHON_PATH = lazy_compile(r"ython(\d\.\d{1,2})[/\\]|ython(3)(\d{1,2})[/\\]")

# --- whose code a frame is -------------------------------------------------------------------

_NOTEBOOK = lazy_compile(r"<ipython-input-|^Cell In ?\[|^Input In ?\[|[/\\]ipykernel_\d+[/\\]")
_SITE_PACKAGES = lazy_compile(r"[/\\](?:site|dist)-packages[/\\]", re.I)
_STDLIB = lazy_compile(
    r"[/\\]lib(?:64)?[/\\]python\d(?:\.\d+)?[/\\]"
    r"|(?:[/\\]python\d*|conda\d*|[/\\]envs[/\\][^/\\]+)[/\\]lib[/\\]",
    re.I,
)
_WINDOWS_STDLIB = lazy_compile(r"\\Lib\\")
_TORCH_PATH = lazy_compile(r"(?:^|[/\\])(?:torch|aten|c10)[/\\]|torchinductor_")
_ENTRY_POINT = lazy_compile(r"[/\\](?:bin|Scripts)[/\\][^/\\.]+(?:\.exe)?$", re.I)  # torchrun, ...
_SCRATCH = ("<string>", "<stdin>", "<console>")
_CUT_PATH = "<unknown>"  # the frame of a traceback cut above its last source line

_EXCEPTION_GROUP = getattr(builtins, "BaseExceptionGroup", None)  # Python 3.11+


@dataclass
class _Line:
    no: int  # 1-based, in the cleaned text
    text: str  # without rank, logging and pytest prefixes
    logged: bool = False  # a logging prefix started a new record on this line
    group: int = 0  # which exception-group box the line is in; 0: none
    arrow: bool = False  # pytest's `>   ` marks the line each traceback entry stopped at


# --- public API ------------------------------------------------------------------------------


def parse_text(text: str) -> ErrorReport:
    """Every exception, warning and log error in a traceback or a whole log. Never raises."""
    report = ErrorReport()
    try:
        _read_text(report, text or "")
    except Exception:  # what was read so far is kept: the user's error must not be lost to ours
        pass
    return report


def from_exception(exc: BaseException) -> ErrorReport:
    """The report of a live exception and its chain, as `parse_text` reads it printed."""
    import traceback  # only a live exception needs it: `explain` reading text starts without

    report = ErrorReport()
    try:
        # Formatted once: formatting each link of a long chain would walk the chain each time.
        printed = traceback.TracebackException(type(exc), exc, exc.__traceback__, compact=True)
        report.text = "".join(printed.format())
        end = 0
        for (link, relation), (shown, _) in zip(_chain(exc), _chain(printed)):
            end += "".join(shown.format(chain=False)).count("\n")
            report.blocks.extend(_live_blocks(link, relation, end))
            end += 3  # blank line, "The above exception ...", blank line
    except Exception:  # never lose the user's error to ours
        pass
    torch = sys.modules.get("torch")  # only when the program imported it itself
    report.torch_version = getattr(torch, "__version__", None) if torch else None
    report.python_version = "%d.%d.%d" % sys.version_info[:3]
    return report


def user_frame(frames) -> Frame | None:
    """The last frame in the user's own code: not a library, the stdlib, torch or a `<string>`."""
    scratch = None
    for frame in reversed(tuple(frames)):
        origin = _origin(frame.path)
        if origin == "user":
            return frame
        if origin == "scratch" and scratch is None:
            scratch = frame
    return scratch


def is_user_path(path: str) -> bool:
    """A file of the user's own code: not a library, the stdlib, torch or a `<string>`."""
    return _origin(path) == "user"


def user_frame_of(report: ErrorReport) -> Frame | None:
    """The user's frame: the final exception's, else a DataLoader worker's, else other blocks'."""
    final = report.final
    ordered = [final] if final else []
    ordered += [b for b in reversed(report.blocks) if b.relation == "worker"]
    ordered += [b for b in reversed(report.blocks) if b.kind == "exception"]
    ordered += [b for b in reversed(report.blocks) if b.kind == "warning"]
    # Log lines point into torch's C++/CUDA sources, but for a compiler error (the user's
    # extension) and faulthandler's Python frames.
    ordered += [
        b
        for b in reversed(report.blocks)
        if b.kind == "log"
        and (b.type == "CompilerError" or any(f.path.endswith(".py") for f in b.frames))
    ]
    seen = set()
    for block in ordered:
        if id(block) in seen:
            continue
        seen.add(id(block))
        frame = user_frame(block.frames)
        if frame is not None:
            return frame
    return None


def pytest_failures(report: ErrorReport) -> list[tuple[str, ErrorReport]]:
    """A pytest report's failures, in order, each as its own report: the blocks and text of
    its section (`____ test_a ____` up to the next section or `==== ... ====` rule), or the
    short-summary line of a failure printed without one. Empty for any other input."""
    lines = report.text.split("\n")
    starts: list[int] = []  # first line number of each region
    names: list[str | None] = []  # its failing test; None outside any section
    for no, line in enumerate(lines, 1):
        s = line.strip()
        if s[:3] == "___" and (m := _PYTEST_SECTION.match(s)):
            starts.append(no)
            names.append(_section_test(m["name"]))
        elif s[:3] == "===" and _PYTEST_RULE.match(s):
            starts.append(no)
            names.append(None)
    failures: dict[int, tuple[str, list[ErrorBlock]]] = {}
    for block in report.blocks:
        at = bisect_right(starts, block.line) - 1
        name = names[at] if at >= 0 else None
        if name is not None:
            failures.setdefault(at, (name, []))[1].append(block)
            continue
        summary = _PYTEST_SUMMARY.match(lines[block.line - 1].strip()) if block.line else None
        if summary and block.kind == "exception":
            key = -block.line  # its own failure, after every section (pytest prints it last)
            failures[key] = (summary["test"] or summary["path"], [block])
    parts = []
    for key in sorted(failures, key=lambda k: (k < 0, abs(k))):
        name, blocks = failures[key]
        if not any(b.kind == "exception" for b in blocks):
            continue
        first = starts[key] if key >= 0 else -key
        last = starts[key + 1] - 1 if 0 <= key < len(starts) - 1 else max(b.line for b in blocks)
        text = "\n".join(lines[first - 1 : last])
        parts.append((name, ErrorReport(blocks, text, report.torch_version, report.python_version)))
    return parts


# --- text ------------------------------------------------------------------------------------


def _read_text(report: ErrorReport, text: str) -> None:
    cleaned, streams = _clean(text)
    report.text = "\n".join(cleaned)
    found: list[ErrorBlock] = []
    try:
        for rank, lines in streams.values():
            parser = _StreamParser(_prepare(lines), rank)
            try:
                parser.run()
            finally:
                found.extend(parser.finished())
    finally:
        report.blocks = sorted(found, key=lambda b: b.line)
    report.torch_version, report.python_version = _versions(report.text)


def _clean(text: str) -> tuple[list[str], dict[str, tuple[int | None, list[_Line]]]]:
    """The cleaned lines, and each process's stream: its rank and lines, prefix removed."""
    cleaned: list[str] = []
    streams: dict[str, tuple[int | None, list[_Line]]] = {}
    for no, raw in enumerate(text.replace("\r\n", "\n").split("\n"), 1):
        line, stream, rank = _process_prefix(_as_displayed(raw))
        cleaned.append(line)
        streams.setdefault(stream, (rank, []))[1].append(_Line(no, line))
    return cleaned, streams


def _process_prefix(line: str) -> tuple[str, str, int | None]:
    """The line without the prefix naming its process; the stream it names; its rank."""
    first = line[:1]
    if first == "[":
        m = _RANK.match(line)
        if m:
            rank = int(m[1] or m[2])
            return line[m.end() :], f"rank{rank}", rank
    elif first == "(":
        m = _RAY.match(line)
        if m:
            return line[m.end() :], m[1], None
    elif first.isdigit() or first == " ":
        m = _TASK_LABEL.match(line)
        if m:
            return line[m.end() :], f"rank{int(m[1])}", int(m[1])
    return line, "", None


def _as_displayed(raw: str) -> str:
    """A line as the terminal showed it: no colour codes; a progress bar's last state only."""
    if "\x1b" in raw:
        raw = _ANSI.sub("", raw)
    if "\r" in raw:
        parts = [p for p in raw.split("\r") if p.strip()]
        raw = parts[-1] if parts else ""
    return raw.rstrip()


def _prepare(lines: list[_Line]) -> list[_Line]:
    """Strip logging and pytest prefixes, blank out code fences, unwrap exception-group boxes."""
    groups = group = 0
    for line in lines:
        text, line.logged = _strip_logging(line.text)
        if text.startswith(">"):
            line.arrow = text.startswith(">   ")
            text = text[_QUOTE.match(text).end() :]
        if ("`" in text or "~" in text) and _FENCE.match(text):
            text = ""
        elif "Exception Group" in text and _GROUP_HEADER.match(text):
            groups += 1
            group = groups
            text = "Traceback (most recent call last):"
        elif group:
            bar = _GROUP_BAR.match(text)
            if bar:
                text = text[bar.end() :]
            elif _GROUP_RULE.match(text):
                text = ""
            else:
                group = 0
        if text[:1] in _QUOTES or text[-1:] in _QUOTES:
            text = _unquote(text)
        line.text, line.group = text, group
    _strip_pytest_markers(lines)
    return lines


def _unquote(text: str) -> str:
    """A line pasted as Markdown inline code or in quotes: `RuntimeError: ...`."""
    opened = text[:1] in _QUOTES
    text = text.lstrip("`“")
    if opened or text.count("`") % 2:
        text = text.rstrip().rstrip("`”")
    return text.rstrip()


def _strip_logging(text: str) -> tuple[str, bool]:
    # Each line passes here: the regexes only run where a prefix can start.
    m = _TIMESTAMP.match(text) if text[:1].isdigit() or text[:2] == "[2" else None
    if m:
        rest = text[m.end() :]
        level = _LEVEL.match(rest)
        return (rest[level.end() :] if level else rest), True
    m = _LEVEL_NAME.match(text) if text[:1] in _LEVEL_INITIALS else None
    if m:
        return text[m.end() :], True
    return text, False


def _strip_pytest_markers(lines: list[_Line]) -> None:
    """pytest's `E   ` lines: drop the marker and the run's common indentation."""
    run: list[_Line] = []
    for line in [*lines, None]:
        if line is not None and line.text[:1] == "E" and _PYTEST_E.match(line.text):
            run.append(line)
            continue
        if run:
            bodies = [r.text[1:] for r in run]
            cut = min((_indent(b) for b in bodies if b.strip()), default=0)
            for r, body in zip(run, bodies):
                r.text = body[cut:]
            run = []


class _StreamParser:
    """Reads the blocks of one stream of lines (one rank's output)."""

    def __init__(self, lines: list[_Line], rank: int | None):
        self.lines = lines
        self.rank = rank
        self.blocks: list[ErrorBlock] = []
        self.groups: list[int] = []  # the exception-group box of each block
        self.relation: str | None = None  # from a chain separator, for the next exception
        self.seen: set[tuple] = set()  # log blocks already reported
        self.tests: set[str] = set()  # the tests whose pytest failure section was read

    def run(self) -> None:
        i = 0
        while i < len(self.lines):
            i = max(i + 1, self._step(i))

    def finished(self) -> list[ErrorBlock]:
        self._add_pytest_frames()
        return _nest_groups(self.blocks, self.groups)

    def _add_pytest_frames(self) -> None:
        """pytest prints no `File "..."` frames: its location lines are the frames of the one
        exception in their test's section, which is otherwise frameless."""
        sections: list[list[Frame]] = [[]]
        bounds: list[int] = [0]  # first line number of each section
        arrow = None
        for index, line in enumerate(self.lines):
            text = line.text.strip()
            if _PYTEST_SECTION.match(text):
                sections.append([])
                bounds.append(line.no)
            elif "py:" in text and (m := _PYTEST_LOCATION.match(text)):
                following = self.lines[index + 1].text if index + 1 < len(self.lines) else ""
                source = following.strip() if m["function"] and following[:1].isspace() else arrow
                sections[-1].append(Frame(m["path"], int(m["line"]), m["function"], source))
                arrow = None
            elif line.arrow:
                arrow = text
        if not any(sections):
            return
        for k, block in enumerate(self.blocks):
            if block.kind != "exception" or block.frames:
                continue
            at = bisect_right(bounds, block.line) - 1  # the last section starting before it
            self.blocks[k] = replace(block, frames=tuple(sections[at]))

    def _step(self, i: int) -> int:
        text = self.lines[i].text
        s = text.strip()
        if not s:
            return i
        if "Traceback (most" in s:
            if _TRACEBACK.match(text):
                return self._traceback(i + 1, _indent(text))
            if _IPY_HEADER.match(s):
                return self._ipython(i + 1)
        if s in _CHAIN:
            self.relation = _CHAIN[s]
            return i
        if s.startswith(_IGNORED):
            self.relation = "ignored"
            return i
        if s[:3] == "___":
            section = _PYTEST_SECTION.match(s)
            if section:
                self.tests.add(_section_test(section["name"]))
                return i
        if s.startswith(("FAILED ", "ERROR ")):
            summary = _PYTEST_SUMMARY.match(s)
            if summary:
                return self._pytest_summary(i, summary)
        # A frame without a header: a paste cut short, or a SyntaxError in the main script.
        if 'File "' in text and _FILE.match(text):
            return self._traceback(i, max(0, _indent(text) - 2))
        hit = _match_log(s)
        if hit:
            return self._log(i, *hit)
        if any(word in s for word in _EXCEPTION_WORDS):
            if _STANDALONE.match(s):
                return self._exception(i, self._cut_frame(i), _indent(text))
            m = _EMBEDDED.search(s)
            if m:
                return self._exception(i, [], _indent(text), s[m.start() :])
        return i

    def _cut_frame(self, i: int) -> list[Frame]:
        """The last frame of a traceback whose `File` lines were cut off, when the exception at
        line `i` follows its source line and Python 3.11's markers under it: a frame of an
        unknown file, its source line known."""
        if i < 2 or not _CARET.match(self.lines[i - 1].text):
            return []
        if i >= 3 and _has_location(self.lines[i - 3].text):
            return []  # a frame whose header is there: not cut (pytest's `--tb=short`)
        source = self.lines[i - 2].text
        if (  # the source line indented deeper, not a frame's `File` line, not pytest's
            _indent(source) <= _indent(self.lines[i].text)
            or _FILE.match(source)
            or self.lines[i - 2].arrow  # pytest's failing line: its report places it
        ):
            return []
        return [Frame(_CUT_PATH, source=source.strip())]

    def _traceback(self, i: int, base: int) -> int:
        """Frames, then the exception line at the header's indentation."""
        frames: list[Frame] = []
        while i < len(self.lines):
            text = self.lines[i].text
            s = text.strip()
            m = _FILE.match(text) if s else None
            if not s or m:
                if m:
                    frames.append(_frame(m))
                i += 1
                continue
            if _indent(text) > base:
                if (
                    frames
                    and frames[-1].source is None
                    and not _CARET.match(text)
                    and not _ELIDED.match(text)
                ):
                    frames[-1] = replace(frames[-1], source=s)
                elif frames and frames[-1].source is not None and _STANDALONE.match(s):
                    # a paste indented as a whole, its exception line deeper than the header
                    return self._exception(i, frames, _indent(text))
                i += 1
                continue
            if frames and frames[-1].source is None and not _exception_line(s):
                # a paste that lost the indentation: the line after a `File` line is its source
                frames[-1] = replace(frames[-1], source=s)
                i += 1
                continue
            if s in _CHAIN or "Traceback (most" in s or not _exception_line(s):
                return i  # a traceback cut short: read the line afresh
            return self._exception(i, frames, _indent(text))
        return i

    def _ipython(self, i: int) -> int:
        """IPython's frames: `Cell In[3], line 5` / `File ~/x.py:12, in f()`, code, `---->`."""
        frames: list[Frame] = []
        while i < len(self.lines):
            text = self.lines[i].text
            s = text.strip()
            if (
                not s
                or s.startswith("[... skipping")
                or _IPY_CONTEXT.match(text)
                or _IPY_FOLDED.match(s)
            ):
                i += 1
                continue
            arrow = _IPY_ARROW.match(text)
            if arrow:
                if frames:
                    frames[-1] = _with_arrow(frames[-1], arrow)
                i += 1
                continue
            if _indent(text) == 0 and _exception_line(s):
                return self._exception(i, frames, 0)
            frame = _ipython_frame(text)
            if frame is None:
                return i
            frames.append(frame)
            i += 1
        return i

    def _exception(self, i: int, frames: list[Frame], base: int, text: str = "") -> int:
        """`Type: message` and the message's further lines, up to a blank line."""
        head = self.lines[i]
        m = _EXCEPTION.match(text or head.text.strip())
        body = [_Line(head.no, (m["message"] or "").strip(), head.logged)]
        j = i + 1
        quoting = False  # inside a worker's quoted `Original Traceback`
        while j < len(self.lines):
            line = self.lines[j]
            if not (quoting and self._quote_goes_on(j)) and self._ends_message(line, head):
                break
            quoting = quoting or line.text.strip() == _ORIGINAL
            body.append(_Line(line.no, _dedent(line.text, base), line.logged))
            j += 1
        texts, workers = _split_worker(body, self.rank)
        for worker in workers:
            self._add(worker, head.group)
        block = ErrorBlock(
            m["type"],
            "\n".join(texts).strip(),
            tuple(frames),
            "exception",
            body[-1].no,
            self.rank,
            self.relation,
        )
        self.relation = None
        self._add(block, head.group)
        return j

    def _pytest_summary(self, i: int, summary: re.Match) -> int:
        """A short-summary line is the failure's only account when pytest printed no section
        for it (`-q --tb=no`); otherwise its message, cut to the terminal's width, is dropped."""
        test = summary["test"]
        name = test.replace("::", ".") if test else summary["path"]
        error = (summary["error"] or "").strip()
        if name in self.tests or not _exception_line(error):
            return i + 1
        m = _EXCEPTION.match(error)
        test_frame = Frame(summary["path"], None, test.rsplit("::", 1)[-1] if test else None)
        block = ErrorBlock(
            m["type"],
            (m["message"] or "").strip(),
            (test_frame,),
            "exception",
            self.lines[i].no,
            self.rank,
        )
        self._add(block, self.lines[i].group)
        return i + 1

    def _quote_goes_on(self, j: int) -> bool:
        """A worker's quoted traceback can be a chain: blank lines, separators, new headers."""
        s = self.lines[j].text.strip()
        if s in _CHAIN or s == "Traceback (most recent call last):":
            return True
        if s:
            return False
        before = self.lines[j - 1].text.strip()
        after = next(
            (line.text.strip() for line in self.lines[j + 1 : j + 3] if line.text.strip()), ""
        )
        return before in _CHAIN or after in _CHAIN

    def _ends_message(self, line: _Line, head: _Line) -> bool:
        s = line.text.strip()
        if not s or (line.logged and not head.logged) or s.startswith(_MESSAGE_STOPS):
            return True
        if s in _CHAIN or _IPY_RULE.match(s):
            return True
        if s[:3] in ("___", "===") and (_PYTEST_SECTION.match(s) or _PYTEST_RULE.match(s)):
            return True
        if s.startswith(("FAILED ", "ERROR ")) and _PYTEST_SUMMARY.match(s):
            return True
        if "Traceback (most" in s and (_TRACEBACK.match(line.text) or _IPY_HEADER.match(s)):
            return True
        return _match_log(s) is not None

    def _log(self, i: int, tag: str, m: re.Match) -> int:
        """One error line of a log (a few read on: a warning's source, `what():`)."""
        line = self.lines[i]
        s = line.text.strip()
        end = i + 1
        kind, type_, message, frame, key = "log", "", s, None, None
        if tag == "assert":
            message = m["message"]
            frame = Frame(m["path"], int(m["line"]))
            key = _BLOCK_THREAD.sub("", message)  # one block per assertion, not per GPU thread
        elif tag == "compiler":
            type_, message = "CompilerError", m["message"]
            if m.groupdict().get("path"):
                frame = Frame(m["path"].strip(), int(m["line"] or m["line2"]))
        elif tag == "warning":
            kind, type_, message = "warning", m["type"], m["message"]
            if m.groupdict().get("path"):
                rest, source, end = self._warning_source(end)
                message = "\n".join([message, *rest])
                frame = Frame(m["path"], int(m["line"]), None, source)
        elif tag == "cpp":
            if not any(c.isalnum() for c in m["message"]):
                return end  # torchrun's banner rules: `W... run.py:793] *****`
            message, frame = m["message"], Frame(m["path"], int(m["line"]))
        elif tag == "thc":
            frame = Frame(m["path"], int(m["line"]))
        elif tag == "terminate":
            message, end = self._what(i, end)
        frames = (frame,) if frame else ()
        if tag == "fatal":
            frames, end = self._fault_frames(end)
        block = ErrorBlock(type_, message, frames, kind, self.lines[end - 1].no, self.rank)
        key = (kind, type_, frame and (frame.path, frame.line), key or message)
        if key not in self.seen:
            self.seen.add(key)
            self._add(block, line.group)
        return end

    def _warning_source(self, i: int) -> tuple[list[str], str | None, int]:
        """`warnings` prints the warning's source line under it, indented; the rest of a message
        of several lines (or of one a terminal wrapped) comes between them, unindented. Returns
        those lines of the message, the source line, and where the warning ends."""
        head = self.lines[i - 1]
        for j in range(i, min(i + _WARNING_MORE_LINES + 1, len(self.lines))):
            line = self.lines[j]
            text = line.text
            if text[:1].isspace() and text.strip() and not _FILE.match(text):
                message = [between.text.strip() for between in self.lines[i:j]]
                return message, text.strip(), j + 1
            if text[:1].isspace() or self._ends_message(line, head):
                break
        return [], None, i

    def _fault_frames(self, i: int) -> tuple[tuple[Frame, ...], int]:
        """faulthandler's dump of the crashing thread, most recent call first: reversed."""
        j = i
        while j < len(self.lines) and not self.lines[j].text.strip():
            j += 1
        if j == len(self.lines) or not _FAULT_THREAD.match(self.lines[j].text.strip()):
            return (), i
        frames: list[Frame] = []
        j += 1
        while j < len(self.lines):
            m = _FILE.match(self.lines[j].text)
            if not m:
                break
            frames.append(_frame(m))
            j += 1
        return tuple(reversed(frames)), j

    def _what(self, i: int, end: int) -> tuple[str, int]:
        """`terminate called ...`: the message is the `what():` text under it, when there is one."""
        if end >= len(self.lines):
            return self.lines[i].text.strip(), end
        what = _WHAT.match(self.lines[end].text)
        if not what:
            return self.lines[i].text.strip(), end
        head = self.lines[end]
        texts = [what["message"]]
        end += 1
        while end < len(self.lines) and not self._ends_message(self.lines[end], head):
            texts.append(self.lines[end].text)
            end += 1
        return "\n".join(texts).strip(), end

    def _add(self, block: ErrorBlock, group: int) -> None:
        self.blocks.append(block)
        self.groups.append(group)


def _match_log(s: str) -> tuple[str, re.Match] | None:
    """Which kind of log error a stripped line is, if any. Cheap tests first: runs per line."""
    if "Assertion" in s:
        m = _DEVICE_ASSERT.match(s)
        if m:
            return "assert", m
    if "error" in s:
        m = _COMPILER.match(s) or _BARE_FATAL.match(s)
        if m:
            return "compiler", m
        if ": error: " in s:
            m = _USAGE_ERROR.match(s)
            if m:
                return "usage", m
    if "Warning" in s:
        m = _WARNING.match(s) or _BARE_WARNING.match(s)
        if m:
            return "warning", m
    first = s[:1]
    if first in ("[", "W", "E", "F"):
        m = _CPP_LOG.match(s)
        if m:
            return "cpp", m
    if first in ("t", "E", "T", "F"):
        for tag, pattern in _LOG_STARTS:
            m = pattern.match(s)
            if m:
                return tag, m
    if "exitcode" in s:
        m = _ELASTIC_FAILED.match(s)
        if m:
            return "elastic", m
    if "core dumped" in s or ": line " in s or s.startswith("zsh: ") or s.lower() in _SIGNALS:
        m = _CRASH.match(s)
        if m:
            return "crash", m
    return None


def _section_test(title: str) -> str:
    """The test a pytest section reports: `TestA.test_b[1]`, or the file of a collection error."""
    at = _PYTEST_ERROR_SECTION.match(title)
    return title[at.end() :] if at else title


def _exception_line(s: str) -> re.Match | None:
    """`Type: message`, or a bare `Type` when it looks like a class (`KeyboardInterrupt`)."""
    m = _EXCEPTION.match(s)
    if m and m["message"] is None and not _CLASS_NAME.match(m["type"].rsplit(".", 1)[-1]):
        return None
    return m


def _split_worker(body: list[_Line], rank: int | None) -> tuple[list[str], list[ErrorBlock]]:
    """A DataLoader worker's / DataParallel replica's original traceback, re-raised in a message.

    Returns the message lines before `Original Traceback`, and the blocks read from it, the
    worker's own exception marked "worker".
    """
    texts = [line.text for line in body]
    at = next((k for k, t in enumerate(texts) if t.strip() == _ORIGINAL), None)
    if at is None:
        return texts, []
    inner = [_Line(body[at].no, "Traceback (most recent call last):")]
    inner += [_Line(line.no, line.text) for line in body[at + 1 :]]
    parser = _StreamParser(inner, rank)
    parser.run()
    blocks = parser.finished()
    for k in range(len(blocks) - 1, -1, -1):
        if blocks[k].kind == "exception":
            blocks[k] = replace(blocks[k], relation="worker")
            break
    return texts[:at], blocks


def _nest_groups(blocks: list[ErrorBlock], groups: list[int]) -> list[ErrorBlock]:
    """An exception group comes after its sub-exceptions: it is what the program died of."""
    out: list[ErrorBlock] = []
    k = 0
    while k < len(blocks):
        g = groups[k]
        if not g or blocks[k].kind != "exception":
            out.append(blocks[k])
            k += 1
            continue
        end = k
        while end + 1 < len(blocks) and groups[end + 1] == g:
            end += 1
        for sub in blocks[k + 1 : end + 1]:
            grouped = sub.kind == "exception" and sub.relation is None
            out.append(replace(sub, relation="group") if grouped else sub)
        out.append(replace(blocks[k], line=max(b.line for b in blocks[k : end + 1])))
        k = end + 1
    return out


def _frame(m: re.Match) -> Frame:
    return Frame(m["path"], int(m["line"]), m["function"])


def _ipython_frame(text: str) -> Frame | None:
    for pattern in _IPY_FRAMES:
        m = pattern.match(text)
        if m:
            line = m.groupdict().get("line")
            return Frame(m["path"], int(line) if line else None, m["function"])
    return None


def _with_arrow(frame: Frame, arrow: re.Match) -> Frame:
    """IPython marks the failing line with `---->  5 code`: its number and source."""
    source = (arrow["source"] or "").strip() or None
    return replace(frame, line=frame.line or int(arrow["line"]), source=frame.source or source)


def _has_location(text: str) -> bool:
    """A frame's header: `File "x.py", line 3, in f` or pytest's `x.py:3: in f`."""
    return bool(_FILE.match(text) or _PYTEST_LOCATION.match(text.strip()))


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _dedent(text: str, base: int) -> str:
    return text[min(base, _indent(text)) :]


def _versions(text: str) -> tuple[str | None, str | None]:
    m = _PYTORCH_VERSION.search(text) or _preceded(_TORCH_VERSION, text, "Tt", "./-")
    torch_version = m[1] if m else None
    m = _preceded(_PYTHON_VERSION, text, "", "")
    if m:
        return torch_version, m[1]
    m = _preceded(_PYTHON_PATH, text, "Pp", None)
    if m:
        return torch_version, m[1] or f"{m[2]}.{m[3]}"
    return torch_version, None


def _preceded(pattern: re.Pattern, text: str, letter: str, not_before: str | None):
    """The first match whose text starts after `letter` (if any) at a word start.

    `not_before`: characters that may not come before the word, besides letters and digits;
    None: the word must come right after a path separator.
    """
    for m in pattern.finditer(text):
        start = m.start()
        if letter:
            if start == 0 or text[start - 1] not in letter:
                continue
            start -= 1
        before = text[start - 1] if start else " "
        if not_before is None:
            if before in "/\\":
                return m
        elif not (before.isalnum() or before == "_" or before in not_before):
            return m
    return None


# --- live exceptions -------------------------------------------------------------------------


def _chain(exc):
    """The chain as Python prints it, first cause first, each with how it follows the one before.

    `exc`: an exception, or its traceback.TracebackException (which links its chain alike)."""
    chain: list[tuple] = []
    seen: set[int] = set()
    current = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if current.__cause__ is not None:
            following, relation = current.__cause__, "cause"
        elif current.__context__ is not None and not current.__suppress_context__:
            following, relation = current.__context__, "context"
        else:
            following, relation = None, None
        chain.append((current, relation))
        current = following
    return chain[::-1]


def _live_blocks(exc: BaseException, relation: str | None, line: int) -> list[ErrorBlock]:
    """The blocks of one exception of a chain: its sub-exceptions, worker, and itself."""
    blocks: list[ErrorBlock] = []
    if _EXCEPTION_GROUP is not None and isinstance(exc, _EXCEPTION_GROUP):
        for sub in exc.exceptions:
            for link, sub_relation in _chain(sub):
                blocks += _live_blocks(link, sub_relation or "group", line)
    import traceback

    frames = [
        Frame(fs.filename, fs.lineno, fs.name, (fs.line or "").strip() or None)
        for fs in traceback.extract_tb(exc.__traceback__)
    ]
    message = _safe_str(exc)
    if isinstance(exc, SyntaxError):  # printed as its own frame, then the bare message
        message = str(exc.msg or "")
        if exc.filename:
            frames.append(Frame(exc.filename, exc.lineno, None, (exc.text or "").strip() or None))
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, (list, tuple)) and notes:
        message = "\n".join([message, *map(_safe_str, notes)]).strip()
    body = [_Line(line, text) for text in message.split("\n")]
    texts, workers = _split_worker(body, None)
    blocks += [replace(w, line=line) for w in workers]
    blocks.append(
        ErrorBlock(
            _type_name(type(exc)),
            "\n".join(texts).strip(),
            tuple(frames),
            "exception",
            line,
            None,
            relation,
        )
    )
    return blocks


def _type_name(cls: type) -> str:
    """As traceback prints it: qualified unless builtin or from `__main__`."""
    module = getattr(cls, "__module__", None)
    name = getattr(cls, "__qualname__", cls.__name__)
    return name if module in (None, "builtins", "__main__") else f"{module}.{name}"


def _safe_str(value: object) -> str:
    try:
        return str(value)
    except Exception:  # a broken __str__ must not hide the error
        return f"<{type(value).__name__} object: str() failed>"


# --- whose frame -----------------------------------------------------------------------------


def _origin(path: str) -> str:
    """ "user", "scratch" (`<string>`, `<stdin>`: user code of last resort) or "library"."""
    if _NOTEBOOK.search(path):
        return "user"
    if path.startswith("<"):
        return "scratch" if path in _SCRATCH else "library"
    if (
        _SITE_PACKAGES.search(path)
        or _STDLIB.search(path)
        or _WINDOWS_STDLIB.search(path)
        or _TORCH_PATH.search(path)
        or _ENTRY_POINT.search(path)
    ):
        return "library"
    return "user"
