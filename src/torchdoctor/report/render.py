"""One renderer for every engine's findings: text, json, sarif, github."""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from pathlib import Path, PurePath
from typing import Callable, Sequence
from urllib.parse import quote

from torchdoctor import __version__
from torchdoctor.report import json_output, strings
from torchdoctor.report.finding import Finding

FORMATS = ("text", "json", "sarif", "github")

_BOLD, _RED, _CYAN, _DIM, _RESET = "\033[1m", "\033[31m", "\033[36m", "\033[2m", "\033[0m"

# What a terminal would act on instead of showing, when it comes from checked files: C0 and C1
# controls but the tab (ESC starts colour, window-title and screen-clearing sequences), DEL, the
# line and paragraph separators, and the bidi overrides and isolates that reorder what is shown.
_UNPRINTABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_TAB_WIDTH = 4
# A finding's (line, column, end line, end column) in the text of its file: a notebook's
# findings are given by cell, code scanning and annotations want lines of the .ipynb file.
Region = Callable[[Finding], "tuple[int, int, int, int]"]


def own_region(f: Finding) -> tuple[int, int, int, int]:
    return f.line, f.column, f.end_line, f.end_column


def render_text(
    findings: Sequence[Finding],
    source_line: Callable[[Finding], str | None],
    lang: str = "en",
    color: bool = False,
    fixed: int = 0,
    errors: int = 0,
) -> str:
    """ruff-like: `path:line:col: TD001 [*] message`, the source line, a `help:` line, a summary."""

    def paint(text: str, style: str) -> str:
        return f"{style}{text}{_RESET}" if color else text

    out: list[str] = []
    for f in findings:
        where = printable(_where(f))
        marker = " [*]" if f.fix and f.fix.applicability == "safe" else ""
        out.append(f"{paint(where, _BOLD)}: {paint(f.code, _RED)}{marker} {printable(f.message)}")
        line = source_line(f)
        if line is not None:
            number = str(f.line)
            gutter = " " * len(number)
            text, start, width = _excerpt(line.rstrip("\r\n"), f)
            out.append(f"  {paint(number + ' |', _DIM)} {text}")
            out.append(f"  {paint(gutter + ' |', _DIM)} {' ' * start}{paint('^' * width, _RED)}")
        help_text = f.fix.title if f.fix else strings.text("check.see", lang, name=f.name)
        out.append(f"  {paint('help:', _CYAN)} {printable(help_text)}")
        out.append("")
    out.append(summary(findings, lang, fixed, errors))
    return "\n".join(out) + "\n"


def printable(text: str) -> str:
    """`text` with each character a terminal would act on shown escaped, as `\\x1b`."""
    return _UNPRINTABLE.sub(lambda match: _escape(match.group()), text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _excerpt(line: str, f: Finding) -> tuple[str, int, int]:
    """The source line as shown (tabs expanded, unprintable characters escaped), the terminal
    column where the finding's carets start, and how many carets cover it."""
    first = min(max(f.column - 1, 0), len(line))
    last = min(max(f.end_column - 1, first), len(line)) if f.end_line == f.line else len(line)
    if line.isascii() and line.isprintable():  # the common case: one column per character
        return line, first, max(1, last - first)
    pieces, starts, column = [], [], 0
    for char in line:
        starts.append(column)
        if char == "\t":
            piece = " " * (_TAB_WIDTH - column % _TAB_WIDTH)
            column += len(piece)
        elif _UNPRINTABLE.match(char):
            piece = _escape(char)
            column += len(piece)
        else:
            piece = char
            column += _cells(char)
        pieces.append(piece)
    starts.append(column)
    return "".join(pieces), starts[first], max(1, starts[last] - starts[first])


def _cells(char: str) -> int:
    """Terminal columns a printable character takes: two for wide CJK, none for combining."""
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def _where(f: Finding) -> str:
    """`path:line:col`, or `path:cell N:line:col` in a notebook."""
    return (
        f"{f.path}:cell {f.cell}:{f.line}:{f.column}" if f.cell else f"{f.path}:{f.line}:{f.column}"
    )


def summary(findings: Sequence[Finding], lang: str, fixed: int = 0, errors: int = 0) -> str:
    """The closing lines; `errors` counts what could not be checked (never "All checks passed")."""
    lines = []
    if fixed:
        lines.append(strings.text("check.fixed", lang, n=fixed, s="" if fixed == 1 else "s"))
    if not findings:
        if errors:
            lines.append(
                strings.text("check.incomplete", lang, n=errors, s="" if errors == 1 else "s")
            )
        elif not fixed:
            lines.append(strings.text("check.none", lang))
        return "\n".join(lines)
    n = len(findings)
    text = strings.text("check.found", lang, n=n, s="" if n == 1 else "s")
    safe = sum(1 for f in findings if f.fix and f.fix.applicability == "safe")
    unsafe = sum(1 for f in findings if f.fix and f.fix.applicability == "unsafe")
    extras = []
    if safe:
        extras.append(strings.text("check.fixable", lang, n=safe))
    if unsafe:
        extras.append(strings.text("check.unsafe", lang, n=unsafe))
    if extras:
        text += " (" + ", ".join(extras) + ")"
    lines.append(text + strings.text("check.end", lang))
    return "\n".join(lines)


def render_statistics(findings: Sequence[Finding]) -> str:
    counts = Counter((f.code, f.name) for f in findings)
    fixable = {f.code for f in findings if f.fix and f.fix.applicability == "safe"}
    rows = [
        f"{n:5d}  {code}  {'[*]' if code in fixable else '   '} {name}"
        for (code, name), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    return "\n".join(rows) + ("\n" if rows else "")


def render_json(findings: Sequence[Finding]) -> str:
    """`check`'s JSON: an array of findings (the one command without an envelope, as before)."""
    return json_output.dumps(json_output.findings_json(findings)) + "\n"


def render_github(findings: Sequence[Finding], region: Region = own_region) -> str:
    """GitHub Actions workflow commands: one `::warning` annotation per finding, at its
    `region` of the file; the message keeps the cell of a notebook's finding."""
    lines = []
    for f in findings:
        line, column, end_line, end_column = region(f)
        props = (
            f"file={_gh_prop(f.path)},line={line},col={column},"
            f"endLine={end_line},endColumn={end_column},"
            f"title={_gh_prop(f.code + ' ' + f.name)}"
        )
        lines.append(f"::warning {props}::{_gh_data(f'{_where(f)}: {f.code} {f.message}')}")
    return "\n".join(lines) + ("\n" if lines else "")


def _gh_data(text: str) -> str:
    # Control characters, line breaks included, are escaped as in text output: none reaches
    # the log raw (a path holding one then names no file, which is the lesser harm).
    return printable(text).replace("%", "%25")


def _gh_prop(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def _artifact_location(path: str) -> dict[str, str]:
    """A file's SARIF artifact location: a URI reference (RFC 3986, percent-encoded: spaces,
    `#`, `%`, non-ASCII as UTF-8...), relative to the source root, or a `file:` URI for a
    file outside the current directory."""
    file = PurePath(path)
    if file.is_absolute():
        return {"uri": Path(path).as_uri()}
    return {"uri": quote(file.as_posix(), safe="/"), "uriBaseId": "%SRCROOT%"}


def render_sarif(
    findings: Sequence[Finding], rules: Sequence, lang: str = "en", region: Region = own_region
) -> str:
    """SARIF 2.1.0, as GitHub code scanning reads it: each result at its `region` of the file,
    and a notebook's cell, line and column in the cell as properties of the location."""
    from torchdoctor.catalog._model import pick
    from torchdoctor.catalog._registry import for_role

    index = {p.code: i for i, p in enumerate(rules)}
    unparsable = for_role("unparsable-source").code  # nothing in the file was checked
    driver_rules = []
    for pitfall in rules:
        sections = pitfall.sections(lang)
        driver_rules.append(
            {
                "id": pitfall.code,
                "name": pitfall.name,
                "shortDescription": {"text": pick(pitfall.title, lang)},
                "fullDescription": {"text": sections.get("What it catches", "")},
                "help": {"text": pitfall.explanation(lang), "markdown": pitfall.explanation(lang)},
                "defaultConfiguration": {"level": "warning" if pitfall.default else "note"},
                "properties": {"tags": [pitfall.area] if pitfall.area else []},
            }
        )
    results = []
    for f in findings:
        line, column, end_line, end_column = region(f)
        location: dict[str, object] = {
            "physicalLocation": {
                "artifactLocation": _artifact_location(f.path),
                "region": {
                    "startLine": line,
                    "startColumn": column,
                    "endLine": end_line,
                    "endColumn": max(end_column, 1),
                },
            }
        }
        if f.cell is not None:
            location["properties"] = {"cell": f.cell, "cellLine": f.line, "cellColumn": f.column}
        result: dict[str, object] = {
            "ruleId": f.code,
            "level": "error" if f.code == unparsable else "warning",
            "message": {"text": f.message},
            "locations": [location],
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "torchdoctor",
                        "version": __version__,
                        "rules": driver_rules,
                    }
                },
                "results": results,
                "columnKind": "unicodeCodePoints",
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
