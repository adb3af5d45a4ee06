"""Jupyter notebooks: code cells checked as one program, findings located by cell.

Code cells are joined in order (names defined in one cell are known in later ones), with a
comment line between cells so the join can be split again after fixes. IPython magics and
`!shell` lines become `pass` placeholders that are put back verbatim when the notebook is
written. Cells are numbered from 1 among all cells, as they appear in the notebook.
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field, replace

from torchdoctor.catalog.tooling import td700_syntax_error
from torchdoctor.lint.source import UnreadableFile
from torchdoctor.report.finding import Finding

_BOUNDARY = "# torchdoctor: cell boundary"
_PLACEHOLDER = re.compile(r"^(\s*)pass  # torchdoctor: magic (\d+)$")
# `%time x`, `%%writefile f`, `!pip install`, `files = !ls`, `x = %env`, `obj?`, `??obj`.
_MAGIC = re.compile(r"^\s*(?:[%!]|\?\?|\w[\w.]*\?\??\s*$|[\w,\s]+=\s*[%!])")
MAX_BROKEN_CELLS = 50
# Cell magics whose body is Python; the body of any other (%%bash, %%writefile...) is not.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})


@dataclass
class Notebook:
    data: dict
    text: str
    # For each line of the joined source (1-based index - 1): (cell number, line in cell).
    line_map: list[tuple[int, int]] = field(default_factory=list)
    magics: list[str] = field(default_factory=list)
    source: str = ""


def load(text: str) -> Notebook:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise UnreadableFile(f"notebook is not valid JSON (line {error.lineno}, column "
                             f"{error.colno}: {error.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise UnreadableFile("notebook JSON has no list of cells")
    return Notebook(data, text)


def join_cells(notebook: Notebook, skipped: frozenset[int] = frozenset()) -> None:
    """Build the joined source and its line map; cells in `skipped` (broken) are left out."""
    lines: list[str] = []
    notebook.line_map, notebook.magics = [], []
    for number, cell in enumerate(notebook.data["cells"], start=1):
        if cell.get("cell_type") != "code" or number in skipped:
            continue
        source = cell_source(cell)
        is_cell_magic = source.lstrip().startswith("%%")
        if is_cell_magic and source.lstrip()[2:].split(maxsplit=1)[0] in PYTHON_CELL_MAGICS:
            is_cell_magic = False  # only its first line is a magic
        for index, line in enumerate(source.splitlines(), start=1):
            if is_cell_magic or _MAGIC.match(line):
                indent = line[: len(line) - len(line.lstrip())] if not is_cell_magic else ""
                line = f"{indent}pass  # torchdoctor: magic {len(notebook.magics)}"
                notebook.magics.append(source.splitlines()[index - 1])
            lines.append(line)
            notebook.line_map.append((number, index))
        lines.append(_BOUNDARY)
        notebook.line_map.append((number, 0))
    notebook.source = "\n".join(lines) + "\n"


def cell_source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def locate(finding: Finding, notebook: Notebook) -> Finding:
    """Move a finding from the joined source to its cell: `cell`, and lines within the cell."""
    if not notebook.line_map:
        return finding
    start = _cell_line(notebook, finding.line)
    end = _cell_line(notebook, finding.end_line)
    finding.cell, finding.line = start[0], max(start[1], 1)
    finding.end_line = end[1] if end[0] == start[0] and end[1] else finding.line
    if finding.fix:
        # Offsets stay those of the joined cells; lines are given within the cell.
        edits = tuple(replace(e, line=_cell_line(notebook, e.line)[1],
                              end_line=_cell_line(notebook, e.end_line)[1]) for e in finding.fix.edits)
        finding.fix = replace(finding.fix, edits=edits)
    return finding


def _cell_line(notebook: Notebook, line: int) -> tuple[int, int]:
    return notebook.line_map[max(1, min(line, len(notebook.line_map))) - 1]


def broken_cells(notebook: Notebook, path: str, lang: str) -> tuple[frozenset[int], list[Finding]]:
    """Cells that do not parse, each reported once; the rest of the notebook is still checked."""
    skipped: set[int] = set()
    findings: list[Finding] = []
    for _ in range(MAX_BROKEN_CELLS):
        join_cells(notebook, frozenset(skipped))
        try:
            ast.parse(notebook.source)
            break
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            line = getattr(error, "lineno", None) or 1
            cell = notebook.line_map[min(line, len(notebook.line_map)) - 1][0] if notebook.line_map else 0
            finding = locate(td700_syntax_error.finding_for(error, notebook.source, path, lang), notebook)
            if cell in skipped or not cell:
                break
            finding.fix = None  # offsets of the joined source mean nothing in the JSON file
            findings.append(finding)
            skipped.add(cell)
    return frozenset(skipped), findings


def split_cells(notebook: Notebook, fixed_source: str) -> str:
    """The notebook's JSON text with each code cell's source replaced by its fixed version."""
    chunks = fixed_source.split(_BOUNDARY + "\n")
    code_cells = [n for n, c in enumerate(notebook.data["cells"], start=1)
                  if c.get("cell_type") == "code"]
    present = sorted({cell for cell, line in notebook.line_map})
    changed = False
    for number, chunk in zip(present, chunks):
        cell = notebook.data["cells"][number - 1]
        new = _restore_magics(chunk, notebook.magics)
        old = cell_source(cell)
        new = new if old.endswith("\n") else new[:-1] if new.endswith("\n") else new
        if new != old:
            cell["source"] = new.splitlines(keepends=True) if isinstance(cell.get("source"), list) else new
            changed = True
    if not changed or not code_cells:
        return notebook.text
    return _dumps_like(notebook.data, notebook.text)


def _restore_magics(chunk: str, magics: list[str]) -> str:
    lines = []
    for line in chunk.splitlines(keepends=True):
        match = _PLACEHOLDER.match(line.rstrip("\n"))
        lines.append(magics[int(match.group(2))] + "\n" if match else line)
    return "".join(lines)


def _dumps_like(data: dict, original: str) -> str:
    """Serialise as the original file was: its indent, key order and escaping, trailing newline."""
    indent_match = re.search(r"\n( +)\"", original)
    indent = len(indent_match.group(1)) if indent_match else 1
    ascii_only = "\\u" in original and original.isascii()
    text = json.dumps(data, indent=indent, ensure_ascii=ascii_only)
    return text + "\n" if original.endswith("\n") else text
