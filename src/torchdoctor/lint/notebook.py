"""Jupyter notebooks: code cells checked as one program, findings located by cell.

Code cells are joined in order (names defined in one cell are known in later ones), each line
with its own line break, and a comment line between cells so the join can be split again after
fixes. IPython magics and `!shell` lines become `pass` placeholders that are put back verbatim
when the notebook is written. Cells are numbered from 1 among all cells, as they appear in the
notebook. A fix rewrites only the `"source"` values of the cells it changed, spliced into the
file's own JSON text: every other byte of the file stays as it was.
"""

from __future__ import annotations

import ast
import json
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from json.decoder import scanstring

from torchdoctor.catalog import _registry
from torchdoctor.catalog._registry import engine_finding
from torchdoctor.lint.lines import ending, line_starts, position, split_lines
from torchdoctor.lint.source import UnreadableFile, decode
from torchdoctor.report.finding import Edit, Finding, Fix
from torchdoctor.user_files import read_regular_file

# `%time x`, `%%writefile f`, `!pip install`, `files = !ls`, `x = %env`, `obj?`, `??obj`, matched
# after the indentation. No two quantifiers can take the same characters: linear in the line.
_MAGIC = re.compile(r"[%!]|\?\?|\w[\w.]*\?\??\s*$|[\w,\s]+=\s*[%!]")
_INDENT = " \t\f"  # what Python itself takes as indentation
# IPython runs a line that starts with the name of a line magic or a shell alias without its
# `%` (automagic: `pip install x`, `cd data`, `ls /content/`) when no variable has that name.
# Read as a magic only when the line is no Python statement: `time = 3`, `ls -la` stay Python.
_AUTOMAGIC_NAMES = frozenset(
    {
        # IPython's shell aliases on POSIX
        *("cat", "clear", "cp", "ldir", "less", "lf", "lk", "ll", "ls", "lx", "man", "mkdir"),
        *("more", "mv", "rm", "rmdir"),
        # line magics
        *("aimport", "alias", "autoreload", "bookmark", "cd", "conda", "config", "debug", "dhist"),
        *("dirs", "env", "history", "load", "load_ext", "logstart", "logstop", "lsmagic", "mamba"),
        *("matplotlib", "pdb", "pinfo", "pip", "popd", "precision", "prun", "psource", "pushd"),
        *("pwd", "pycat", "reload_ext", "reset", "run", "save", "set_env", "store", "sx"),
        *("system", "tensorboard", "time", "timeit", "unalias", "unload_ext", "who", "whos"),
        *("xdel", "xmode"),
    }
)
# A name, blanks, then what cannot continue a Python expression of that name. Linear: the
# three parts take disjoint characters.
_AUTOMAGIC = re.compile(r"([A-Za-z_]\w*)[ \t]+[^\s=(\[.,:;)]")
# Cell magics whose body is Python; the body of any other (%%bash, %%writefile...) is not.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
_MARKER = re.compile(r"torchdoctor(-*)")
# What changes where a line of Python leaves the next one: brackets, string delimiters (the
# triple ones first) and the comment sign; within a string, an escape or its end.
_SIGNIFICANT = re.compile("'''|\"\"\"|['\"#()\\[\\]{}]")
_IN_STRING = {quote: re.compile(r"\\.|" + quote) for quote in ("'", '"', "'''", '"""')}
# Where nbformat ends the lines of a list-valued "source": wherever str.splitlines does.
_LIST_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_JSON_VALUE = json.JSONDecoder()


@dataclass
class Notebook:
    data: dict
    text: str
    # The source of each code cell that can be read, by cell number, and its lines as Python
    # reads them (magics replaced by placeholders), each with its own line break.
    sources: dict[int, str] = field(default_factory=dict)
    python_lines: dict[int, list[str]] = field(default_factory=dict)
    # Cells that cannot be read, by number: why.
    unreadable: dict[int, str] = field(default_factory=dict)
    # Cells indented as a whole (pasted from inside a block), by number: the indentation that
    # IPython takes off before running them, and that is taken off here too.
    dedented: dict[int, str] = field(default_factory=dict)
    # For each line of the joined source (1-based index - 1): (cell number, line in cell).
    line_map: list[tuple[int, int]] = field(default_factory=list)
    magics: list[str] = field(default_factory=list)
    source: str = ""
    # Written in the comments that stand for cell boundaries and magics; never in a cell.
    marker: str = "torchdoctor"

    @property
    def boundary(self) -> str:
        return f"# {self.marker}: cell boundary\n"

    def placeholder(self, index: int) -> str:
        return f"pass  # {self.marker}: magic {index}"


def load(text: str) -> Notebook:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise UnreadableFile(
            f"notebook is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})"
        ) from None
    except RecursionError:
        raise UnreadableFile("notebook JSON is nested too deeply to read") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise UnreadableFile("notebook JSON has no list of cells")
    notebook = Notebook(data, text)
    for number, cell in enumerate(data["cells"], start=1):
        if not isinstance(cell, dict):
            notebook.unreadable[number] = "it is not a JSON object"
        elif cell.get("cell_type") == "code":
            source = _text(cell.get("source"))
            if source is None:
                notebook.unreadable[number] = "its `source` is not a string or a list of strings"
            else:
                notebook.sources[number] = source
    found = [len(m.group(1)) for m in _MARKER.finditer("\n".join(notebook.sources.values()))]
    notebook.marker = "torchdoctor" + "-" * (max(found) + 1 if found else 0)
    for number, source in notebook.sources.items():
        lines = _python_lines(source, notebook)
        prefix = _common_indent(lines)
        if prefix:
            notebook.dedented[number] = prefix
            lines = [line[len(prefix) :] if line.strip() else line for line in lines]
        notebook.python_lines[number] = lines
    return notebook


def _text(source: object) -> str | None:
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    return None


def cell_source(cell: object) -> str:
    """A cell's source text; empty when it has none that can be read."""
    return (_text(cell.get("source", "")) if isinstance(cell, dict) else None) or ""


def _python_lines(source: str, notebook: Notebook) -> list[str]:
    """The cell's lines with their breaks, magics replaced by numbered `pass` placeholders."""
    stripped = source.lstrip()
    name = (stripped[2:].split(maxsplit=1) or [""])[0] if stripped.startswith("%%") else None
    whole_cell_magic = name is not None and name not in PYTHON_CELL_MAGICS
    lines = []
    continued_at = None  # the indentation of a magic whose last line ended with a backslash
    python = _LogicalLines()  # where the Python lines read so far leave the next one
    for line in split_lines(source, keepends=True):
        # `ending(line)`, in one call: a line of split_lines holds no break but its last one.
        content = line.rstrip("\r\n")
        end = line[len(content) :]
        code = content.lstrip(_INDENT)
        if (
            whole_cell_magic
            or continued_at is not None
            or not python.inside
            and (_MAGIC.match(code) or _automagic(code))
        ):
            # IPython joins a `!cmd \` line with the next before running it: those lines are
            # the command's too, whatever their indentation.
            indent = (
                ""
                if whole_cell_magic
                else continued_at
                if continued_at is not None
                else content[: len(content) - len(code)]
            )
            line = indent + notebook.placeholder(len(notebook.magics)) + end
            notebook.magics.append(content)
            continued_at = indent if not whole_cell_magic and content.endswith("\\") else None
        else:
            python.read(content)
        lines.append(line)
    return lines


class _LogicalLines:
    """Whether the next line of a cell begins a logical line of Python: IPython reads a magic
    only there, not inside brackets (the line `%(step, loss))` that ends a call begun on the
    line before), a string spanning lines or after a backslash. Reads each line once, from one
    bracket, quote or comment sign to the next."""

    def __init__(self) -> None:
        self.depth = 0  # brackets open
        self.quote: str | None = None  # the delimiter of a triple-quoted string left open
        self.joined = False  # the last line ended with a backslash

    @property
    def inside(self) -> bool:
        return self.depth > 0 or self.quote is not None or self.joined

    def read(self, line: str) -> None:
        at, quote, depth, commented = 0, self.quote, self.depth, False
        while True:
            if quote is not None:  # find the string's end, past escaped characters
                match = _IN_STRING[quote].search(line, at)
                while match is not None and match.group() != quote:
                    match = _IN_STRING[quote].search(line, match.end())
                if match is None:
                    if len(quote) == 1:  # a one-line string left open: Python's error, not ours
                        quote = None
                    break
                at, quote = match.end(), None
                continue
            match = _SIGNIFICANT.search(line, at)
            if match is None:
                break
            sign, at = match.group(), match.end()
            if sign == "#":
                commented = True
                break
            if sign in "([{":
                depth += 1
            elif sign in ")]}":
                depth = max(depth - 1, 0)
            else:
                quote = sign
        self.quote, self.depth = quote, depth
        self.joined = not commented and line.endswith("\\")


def _automagic(code: str) -> bool:
    """`code` (a line without its indentation) is a magic or an alias called without `%`."""
    match = _AUTOMAGIC.match(code)
    if match is None or match.group(1) not in _AUTOMAGIC_NAMES or code.endswith("\\"):
        return False
    if sum(map(code.count, "([{")) > sum(map(code.count, ")]}")):
        return False  # may be the first line of a statement that goes on
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return True
    return False


def _common_indent(lines: list[str]) -> str:
    """The indentation of a cell's first line when every other line that is not blank starts
    with it too: IPython takes it off before running the cell (its `leading_indent`), where
    Python would stop at an unexpected indent."""
    content = [line for line in lines if line.strip()]
    if not content:
        return ""
    first = content[0]
    prefix = first[: len(first) - len(first.lstrip(" \t"))]
    if prefix and all(line.startswith(prefix) for line in content):
        return prefix
    return ""


def _indent_again(chunk: str, prefix: str) -> str:
    return "".join(
        prefix + line if line.strip() else line for line in split_lines(chunk, keepends=True)
    )


def broken_cells(
    notebook: Notebook, path: str
) -> tuple[frozenset[int], list[Finding], ast.Module | None]:
    """Cells that cannot be checked, each reported once: code cells that cannot be read, and
    cells that do not parse (each parsed alone, once). The rest of the notebook is still checked.
    When every cell parses, one parse of them all shows it, and its tree is given too."""
    findings = [
        engine_finding("unreadable-source", reason, path, cell=number)
        for number, reason in notebook.unreadable.items()
    ]
    skipped = set(notebook.unreadable)
    tree = _tree_if_every_cell_parses(notebook)
    if tree is not None:
        return frozenset(skipped), findings, tree
    for number, lines in notebook.python_lines.items():
        code = "".join(lines)
        try:
            ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            finding = engine_finding("unparsable-source", error, code, path)
            finding.cell = number
            finding.column += len(notebook.dedented.get(number, ""))
            finding.fix = None  # its offsets are the cell's, not the file's
            findings.append(finding)
            skipped.add(number)
    return frozenset(skipped), findings, None


def _tree_if_every_cell_parses(notebook: Notebook) -> ast.Module | None:
    """The tree of the readable cells joined, when it parses and no statement runs on from one
    cell into the next: each cell boundary then lies between two statements of the top level,
    where the parser starts afresh as at the start of a file, so every cell parses alone too.
    None otherwise, or when a cell ends in a backslash, which would continue its last line
    into the next cell."""
    join_cells(notebook)
    if any(
        lines and lines[-1].rstrip("\r\n").endswith("\\")
        for lines in notebook.python_lines.values()
    ):
        return None
    try:
        tree = ast.parse(notebook.source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    boundaries = [line for line, (_, index) in enumerate(notebook.line_map, start=1) if index == 0]
    for statement in tree.body:
        first = min(
            [statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))]
        )
        after = bisect_right(boundaries, first)
        if after < len(boundaries) and boundaries[after] < statement.end_lineno:
            return None
    return tree


def join_cells(notebook: Notebook, skipped: frozenset[int] = frozenset()) -> None:
    """Build the joined source and its line map; cells in `skipped` (broken) are left out."""
    lines: list[str] = []
    notebook.line_map = []
    for number, cell_lines in notebook.python_lines.items():
        if number in skipped:
            continue
        lines.extend(cell_lines)
        notebook.line_map.extend((number, index) for index in range(1, len(cell_lines) + 1))
        if cell_lines and not ending(cell_lines[-1]):
            lines[-1] += "\n"  # taken off again by split_cells
        lines.append(notebook.boundary)
        notebook.line_map.append((number, 0))
    notebook.source = "".join(lines)


def locate(finding: Finding, notebook: Notebook) -> Finding:
    """Move a finding from the joined source to its cell: `cell`, and lines within the cell."""
    if not notebook.line_map:
        return finding
    start = _cell_line(notebook, finding.line)
    end = _cell_line(notebook, finding.end_line)
    finding.cell, finding.line = start[0], max(start[1], 1)
    _name_lines_in_cells(finding, notebook)
    finding.end_line = end[1] if end[0] == start[0] and end[1] else finding.line
    shift = len(notebook.dedented.get(start[0], ""))
    if shift:  # columns of the cell as the user wrote it
        finding.column += shift
        finding.end_column += shift if finding.end_column else 0
    fix = finding.fix
    if fix:
        # Offsets stay those of the joined cells; lines are given within the cell. (Made
        # directly: `dataclasses.replace` reads the fields anew for each of a thousand fixes.)
        edits = tuple(
            Edit(
                e.start,
                e.end,
                e.content,
                _cell_line(notebook, e.line)[1],
                e.column,
                _cell_line(notebook, e.end_line)[1],
                e.end_column,
            )
            for e in fix.edits
        )
        finding.fix = Fix(fix.applicability, fix.title, edits, titles=fix.titles)
    return finding


# The fields of catalog messages that name another line of the file ("used as a mask on line
# {line}"): in a notebook, a line of the joined cells means nothing to the user.
_LINE_FIELDS = ("line", "read_line", "write_line")


def _name_lines_in_cells(finding: Finding, notebook: Notebook) -> None:
    """The lines a finding's message names, counted within their cells: the number alone in
    the finding's own cell, with the cell's number in another one; the message made again."""
    if finding.template is None:
        return
    variant, fields = finding.template
    named = {key: fields[key] for key in _LINE_FIELDS if type(fields.get(key)) is int}
    if not named:
        return
    pitfall = _registry.get(finding.code)
    if pitfall is None:
        return
    moved = dict(fields)
    for key, line in named.items():
        cell, line_in_cell = _cell_line(notebook, line)
        moved[key] = line_in_cell if cell == finding.cell else f"{line_in_cell} (cell {cell})"
    finding.template = (variant, moved)
    finding.message = pitfall.message(variant, "en", **moved)


def _cell_line(notebook: Notebook, line: int) -> tuple[int, int]:
    return notebook.line_map[max(1, min(line, len(notebook.line_map))) - 1]


def split_cells(notebook: Notebook, fixed_source: str) -> str:
    """The notebook's JSON text with each changed code cell's source replaced by its fixed
    version; the original text when the fixes touched what joins the cells."""
    chunks = fixed_source.split(notebook.boundary)
    present = list(dict.fromkeys(cell for cell, _ in notebook.line_map))
    if len(chunks) != len(present) + 1 or chunks[-1]:
        return notebook.text
    changed = {}
    for number, chunk in zip(present, chunks):
        if number in notebook.dedented:
            chunk = _indent_again(chunk, notebook.dedented[number])
        new = _restore_magics(chunk, notebook)
        old = notebook.sources[number]
        if notebook.python_lines[number] and not ending(notebook.python_lines[number][-1]):
            new = new[:-1] if new.endswith("\n") else new
        if new != old:
            changed[number] = new
    return _splice_sources(notebook.text, changed) if changed else notebook.text


def _restore_magics(chunk: str, notebook: Notebook) -> str:
    placeholder = re.compile(rf"[{_INDENT}]*pass  # {re.escape(notebook.marker)}: magic (\d+)")
    lines = []
    for line in split_lines(chunk, keepends=True):
        end = ending(line)
        match = placeholder.fullmatch(line, 0, len(line) - len(end))
        index = int(match.group(1)) if match else len(notebook.magics)
        lines.append(notebook.magics[index] + end if index < len(notebook.magics) else line)
    return "".join(lines)


# ---- where a cell's text lies in the file's own JSON text (SARIF, GitHub annotations) -------


class FileRegions:
    """The region of a finding in the text of its file, as code scanning and PR annotations
    need it: a notebook's finding, located by cell, moved to the line and column of the JSON
    text that hold it. Each notebook is read once; `texts` are the contents of files not read
    from disk (stdin), by path as shown."""

    def __init__(self, texts: dict[str, str] | None = None) -> None:
        self._texts = texts or {}
        self._places: dict[str, _JsonPlaces | None] = {}

    def __call__(self, finding: Finding) -> tuple[int, int, int, int]:
        own = (finding.line, finding.column, finding.end_line, finding.end_column)
        if finding.cell is None:
            return own
        places = self._places_of(finding.path)
        if places is None:
            return own
        start = places.position(finding.cell, finding.line, finding.column)
        end = places.position(finding.cell, finding.end_line, finding.end_column)
        return (*start, *end)

    def _places_of(self, path: str) -> _JsonPlaces | None:
        if path not in self._places:
            try:
                text = self._texts.get(path)
                if text is None:
                    text = decode(read_regular_file(path)).text
                load(text)  # valid JSON with a list of cells, which the scanning takes for given
                self._places[path] = _JsonPlaces(text)
            except Exception:  # gone, changed or broken since it was checked: cell lines stay
                self._places[path] = None
        return self._places[path]


class _JsonPlaces:
    """(cell, line, column in the cell) -> (line, column) in a notebook's JSON text. Exact
    through escapes (`\\n`, `\\"`, `\\u00e9`) and for `source` given as one string or as a
    list; in a notebook written on one line, every cell line is on line 1, at its own column."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._file_starts = line_starts(split_lines(text, keepends=True))
        cells = _object_members(text, _skip_space(text, 0))["cells"][0]
        self._cell_spans = _array_elements(text, cells)
        self._cells: dict[int, tuple[list[int], list[int]]] = {}

    def position(self, cell: int, line: int, column: int) -> tuple[int, int]:
        if not 0 < cell <= len(self._cell_spans):
            return position(self._file_starts, 0)
        offsets, starts = self._cell(cell)
        line = min(max(line, 1), len(starts) - 1)
        index = min(starts[line - 1] + max(column, 1) - 1, starts[line])
        return position(self._file_starts, offsets[index])

    def _cell(self, cell: int) -> tuple[list[int], list[int]]:
        """Where each character of the cell's source lies in the file (then where its value
        ends), and the offsets where the source's lines start."""
        if cell not in self._cells:
            start = self._cell_spans[cell - 1][0]
            is_object = self._text[start] == "{"
            value = _object_members(self._text, start).get("source") if is_object else None
            offsets, source = _string_offsets(self._text, value) if value else (None, "")
            if offsets is None:  # no source that can be read: the cell itself
                offsets, source = [start], ""
            self._cells[cell] = (offsets, line_starts(split_lines(source, keepends=True)))
        return self._cells[cell]


def _string_offsets(text: str, span: tuple[int, int]) -> tuple[list[int] | None, str]:
    """For the JSON string, or list of strings, at `span` of `text`: the offset in `text` of
    each character of its value, then of the value's end; and the value. None when it is
    neither."""
    start, end = span
    literals = _array_elements(text, start) if text[start] == "[" else [span]
    offsets: list[int] = []
    pieces = []
    for literal_start, literal_end in literals:
        if text[literal_start] != '"':
            return None, ""
        index = literal_start + 1
        while index < literal_end - 1:
            offsets.append(index)
            index += _escape_length(text, index)
        pieces.append(scanstring(text, literal_start + 1)[0])
    offsets.append(literals[-1][1] - 1 if literals else end - 1)
    value = "".join(pieces)
    return (offsets, value) if len(offsets) == len(value) + 1 else (None, "")


def _escape_length(text: str, index: int) -> int:
    """How many characters of JSON text stand for the one character at `index`."""
    if text[index] != "\\":
        return 1
    if text[index + 1] != "u":
        return 2
    # A surrogate pair, `\ud83d\ude00`, is one character (as json.loads reads it).
    if 0xD800 <= int(text[index + 2 : index + 6], 16) < 0xDC00 and text.startswith(
        "\\u", index + 6
    ):
        return 12 if 0xDC00 <= int(text[index + 8 : index + 12], 16) < 0xE000 else 6
    return 6


# ---- writing: only the changed "source" values, in the file's own JSON text ----------------


def _splice_sources(text: str, changed: dict[int, str]) -> str:
    """`text` with the `"source"` value of each changed cell (by number) replaced."""
    ascii_only = text.isascii()  # a file written with \\u escapes keeps them
    cells = _object_members(text, _skip_space(text, 0))["cells"][0]
    elements = _array_elements(text, cells)
    parts, cursor = [], 0
    for number in sorted(changed):
        start, end = _object_members(text, elements[number - 1][0])["source"]
        parts += [text[cursor:start], _encode_source(changed[number], text[start:end], ascii_only)]
        cursor = end
    parts.append(text[cursor:])
    return "".join(parts)


def _encode_source(new: str, old: str, ascii_only: bool) -> str:
    """`new` as a JSON value laid out like `old` (the value it replaces): a string stays a
    string; a list keeps its unchanged leading and trailing lines byte for byte, and the
    spacing between elements."""
    if not old.startswith("["):
        return json.dumps(new, ensure_ascii=ascii_only)
    spans = _array_elements(old, 0)
    elements = [scanstring(old, start + 1)[0] for start, _ in spans]
    head, cursor = 0, 0  # whole leading lines kept
    while (
        head < len(elements)
        and new.startswith(elements[head], cursor)
        and (elements[head][-1:] in _LIST_BREAKS or cursor + len(elements[head]) == len(new))
    ):
        cursor += len(elements[head])
        head += 1
    tail, stop = 0, len(new)  # whole trailing lines kept
    for element in reversed(elements[head:]):
        start = stop - len(element)
        if (
            start < cursor
            or not new.startswith(element, start)
            or start
            and new[start - 1] not in _LIST_BREAKS
        ):
            break
        stop, tail = start, tail + 1
    # The changed lines split as nbformat splits them (str.splitlines).
    middle = [
        json.dumps(line, ensure_ascii=ascii_only)
        for line in new[cursor:stop].splitlines(keepends=True)
    ]
    pieces = (
        [old[start:end] for start, end in spans[:head]]
        + middle
        + [old[start:end] for start, end in spans[len(spans) - tail :]]
    )
    if not pieces:
        return "[]"
    opening = old[1 : spans[0][0]] if spans else ""
    closing = old[spans[-1][1] : -1] if spans else ""
    separator = old[spans[0][1] : spans[1][0]] if len(spans) > 1 else "," + opening
    return "[" + opening + separator.join(pieces) + closing + "]"


def _skip_space(text: str, index: int) -> int:
    return _JSON_SPACE.match(text, index).end()


def _value_end(text: str, index: int) -> int:
    return _JSON_VALUE.raw_decode(text, index)[1]


def _object_members(text: str, index: int) -> dict[str, tuple[int, int]]:
    """The span of each member's value in the object at `index` of valid JSON text; of a
    repeated key, the last (as json.loads keeps it)."""
    members: dict[str, tuple[int, int]] = {}
    index = _skip_space(text, index + 1)
    while text[index] != "}":
        key, index = scanstring(text, index + 1)
        start = _skip_space(text, _skip_space(text, index) + 1)  # past the colon
        end = _value_end(text, start)
        members[key] = (start, end)
        index = _skip_space(text, end)
        if text[index] == ",":
            index = _skip_space(text, index + 1)
    return members


def _array_elements(text: str, index: int) -> list[tuple[int, int]]:
    """The span of each element of the array at `index` of valid JSON text."""
    spans: list[tuple[int, int]] = []
    index = _skip_space(text, index + 1)
    while text[index] != "]":
        end = _value_end(text, index)
        spans.append((index, end))
        index = _skip_space(text, end)
        if text[index] == ",":
            index = _skip_space(text, index + 1)
    return spans
