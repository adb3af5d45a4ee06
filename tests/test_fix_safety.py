"""Fixes land where Python says the code is, whatever characters the file holds.

Python ends a line at \\n, \\r\\n or \\r only; `str.splitlines` also breaks at \\v, \\f, \\x1c-\\x1e,
\\x85, U+2028 and U+2029. A checker that counts lines the second way reports the wrong line, and
its fix edits the wrong text (a form feed made a safe fix rewrite the line above). Every fix
must re-parse, and fixing twice changes nothing.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest

from conftest import FIXTURES
from torchdoctor.catalog import get
from torchdoctor.lint.checker import check_source, fix_source
from torchdoctor.lint.lines import split_lines
from torchdoctor.lint.native import check_native, fix_native
from torchdoctor.lint.job import Job
from torchdoctor.lint.one_file import _process_notebook
from torchdoctor.lint.source import SourceFile

# Characters str.splitlines breaks at and Python does not.
NOT_LINE_BREAKS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
IDS = [f"U+{ord(c):04X}" for c in NOT_LINE_BREAKS]


def td(*args: str, cwd, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_COLOR": "1", "TORCHDOCTOR_LANG": "en"}
    return subprocess.run(
        [sys.executable, "-m", "torchdoctor", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=60,
    )


def legacy_loss_source(char: str, newline: str = "\n") -> str:
    """A safe TD802 fix on line 5, below a comment and a string holding `char`."""
    lines = [
        "import torch",
        "import torch.nn as nn",
        f"# before{char}after",
        f'log = print("x{char}y")',
        "crit = nn.CrossEntropyLoss(size_average=False)",
        "",
    ]
    return newline.join(lines)


def write_bytes(path, text: str) -> None:
    path.write_bytes(text.encode("utf-8"))  # no newline translation


def test_lines_are_the_lines_python_counts():
    breaks = "".join(NOT_LINE_BREAKS)
    source = f"a = 1\rb = '{breaks}'\r\n# {breaks}\nc = 3\n\x0c\nd = 4"
    lines = split_lines(source)
    assert [lines[s.lineno - 1][:1] for s in ast.parse(source).body] == ["a", "b", "c", "d"]
    assert split_lines(source, keepends=True) == [
        "a = 1\r",
        f"b = '{breaks}'\r\n",
        f"# {breaks}\n",
        "c = 3\n",
        "\x0c\n",
        "d = 4",
    ]


# ---- .py files, through the CLI as a user runs it -----------------------------------------


@pytest.mark.parametrize("char", NOT_LINE_BREAKS, ids=IDS)
def test_check_and_safe_fix_count_lines_as_python_does(tmp_path, char):
    source = legacy_loss_source(char)
    write_bytes(tmp_path / "a.py", source)
    found = json.loads(td("check", "--no-cache", "--format", "json", "a.py", cwd=tmp_path).stdout)
    assert [(f["code"], f["line"], f["column"], f["end_line"], f["end_column"]) for f in found] == [
        ("TD802", 5, 28, 5, 46)
    ]

    result = td("check", "--no-cache", "--fix", "a.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    fixed = (tmp_path / "a.py").read_bytes().decode("utf-8")
    assert fixed == source.replace("size_average=False", 'reduction="sum"')
    ast.parse(fixed)
    again = td("check", "--no-cache", "--fix", "a.py", cwd=tmp_path)
    assert again.returncode == 0 and "Fixed" not in again.stdout
    assert (tmp_path / "a.py").read_bytes().decode("utf-8") == fixed


def test_a_form_feed_line_before_a_fix(tmp_path):
    # The reported case: `\f` alone on a line made the fix rewrite the line above.
    source = (
        "import torch\nimport torch.nn as nn\n\x0c\nlog = fn(" + "a" * 36 + ")\n"
        "crit = nn.CrossEntropyLoss(size_average=False)\n"
    )
    write_bytes(tmp_path / "a.py", source)
    result = td("check", "--no-cache", "--fix", "a.py", cwd=tmp_path)
    assert result.returncode == 0 and "does not parse" not in result.stderr
    assert (tmp_path / "a.py").read_bytes().decode() == source.replace(
        "size_average=False", 'reduction="sum"'
    )


@pytest.mark.parametrize("newline", ["\r", "\r\n"], ids=["CR", "CRLF"])
def test_cr_and_crlf_files_are_fixed_in_place_with_their_own_newlines(tmp_path, newline):
    source = legacy_loss_source("\x0c", newline)
    write_bytes(tmp_path / "a.py", source)
    found = json.loads(td("check", "--no-cache", "--format", "json", "a.py", cwd=tmp_path).stdout)
    assert [(f["line"], f["column"]) for f in found] == [(5, 28)]
    assert td("check", "--no-cache", "--fix", "a.py", cwd=tmp_path).returncode == 0
    assert (tmp_path / "a.py").read_bytes().decode() == source.replace(
        "size_average=False", 'reduction="sum"'
    )


@pytest.mark.parametrize("newline", ["\r", "\r\n"], ids=["CR", "CRLF"])
def test_a_fix_that_deletes_a_line_deletes_that_line_whatever_the_newlines(newline):
    lines = [
        "import torch.nn as nn",
        "criterion = nn.MSELoss(",
        "    size_average=False,",
        "    reduce=True,  # sum over the batch\x0c",
        ")",
        "",
    ]
    codes = frozenset({"TD802"})
    expected = "\n".join([*lines[:2], '    reduction="sum",', *lines[4:]])
    assert fix_source("\n".join(lines), "a.py", codes, unsafe=False).source == expected
    fixed = fix_source(newline.join(lines), "a.py", codes, unsafe=False).source
    assert fixed == expected.replace("\n", newline)


@pytest.mark.parametrize("char", NOT_LINE_BREAKS, ids=IDS)
def test_stdin_fix_and_diff(tmp_path, char):
    source = legacy_loss_source(char)
    fixed = td(
        "check", "--no-cache", "--fix", "--stdin-filename", "a.py", cwd=tmp_path, stdin=source
    )
    assert fixed.stdout == source.replace("size_average=False", 'reduction="sum"')
    diff = td(
        "check", "--no-cache", "--diff", "--stdin-filename", "a.py", cwd=tmp_path, stdin=source
    )
    # One changed line: the comment and the string holding `char` are one line each.
    changed = [
        line
        for line in diff.stdout.split("\n")
        if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))
    ]
    assert changed == [
        "-crit = nn.CrossEntropyLoss(size_average=False)",
        '+crit = nn.CrossEntropyLoss(reduction="sum")',
    ]


def test_module_functions_are_not_rewritten_as_assignments_to_the_module(tmp_path):
    # `torch.unsqueeze(x, 0)` was "fixed" into `torch = torch.unsqueeze(x, 0)`.
    source = (
        "import torch\nimport numpy as np\nimport torch.nn.functional as F\n\n"
        "def f(x, a):\n    torch.unsqueeze(x, 0)\n    np.transpose(a)\n    F.relu(x)\n"
        "    torch.permute(x, (1, 0))\n    return torch.zeros(3)\n"
    )
    write_bytes(tmp_path / "t.py", source)
    result = td("check", "--no-cache", "--diff", "--unsafe-fixes", "t.py", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == ""
    assert (
        td("check", "--no-cache", "--fix", "--unsafe-fixes", "t.py", cwd=tmp_path).returncode == 0
    )
    assert (tmp_path / "t.py").read_bytes().decode() == source


def test_unterminated_raw_strings_in_a_cuda_source_do_not_stall_the_check(tmp_path):
    # Each `R"(` without its `)"` rescanned the rest of the file: 100,000 of them took minutes.
    write_bytes(tmp_path / "k.cu", 'AT_CHECK(x, "old API");\n' + 'R"(' * 100_000 + "\n")
    result = td(
        "check", "--no-cache", "--format", "json", "k.cu", cwd=tmp_path
    )  # times out if stalled
    assert [(f["line"], f["code"]) for f in json.loads(result.stdout)] == [(1, "TD707")]


# ---- every fixture, with those characters inserted before each fixed line ------------------

PROBE = "# torchdoctor-probe"
VARIANTS = {
    "formfeed-line": "\x0c",
    **{f"comment-{i}": f"# a{c}b" for i, c in zip(IDS, NOT_LINE_BREAKS)},
}
FIXED_FIXTURES = sorted(
    p
    for p in (FIXTURES / "lint").iterdir()
    if p.suffix in (".py", ".cu", ".cpp") and p.with_name(p.name + ".fixed").exists()
)


def _with_probes(source: str, before: list[int], probe: str) -> str:
    lines = source.split("\n")
    for number in sorted(before, reverse=True):
        line = lines[number - 1]
        lines.insert(number - 1, line[: len(line) - len(line.lstrip())] + probe)
    return "\n".join(lines)


def _without_probes(source: str, probe: str) -> str:
    return "\n".join(line for line in source.split("\n") if line.strip() != probe)


@pytest.mark.parametrize("fixture", FIXED_FIXTURES, ids=lambda p: p.stem)
def test_fixes_are_unmoved_by_characters_python_does_not_break_lines_at(fixture):
    codes = frozenset({get(fixture.stem).code})
    native = fixture.suffix != ".py"
    probe = PROBE.replace("#", "//") if native else PROBE
    if native:

        def fix(text):
            return fix_native(text, fixture.name, codes, unsafe=True).source

        def positions(text):
            return [
                (f.line, f.column, f.end_line, f.end_column)
                for f in check_native(text, fixture.name, codes).findings
            ]
    else:

        def fix(text):
            return fix_source(text, fixture.name, codes, unsafe=True).source

        def positions(text):
            return [
                (f.line, f.column, f.end_line, f.end_column)
                for f in check_source(text, fixture.name, codes).findings
            ]

    source = fixture.read_text(encoding="utf-8")
    findings = (check_native if native else check_source)(source, fixture.name, codes).findings
    plain = fix(source)
    # A probe line before each fixed line, where a comment line changes nothing: the fixed
    # output less the probes is the fixture's own fixed output.
    places = [
        line
        for line in sorted({f.line for f in findings if f.fix})
        if _without_probes(fix(_with_probes(source, [line], probe)), probe) == plain
    ]
    assert places, "no line to insert a probe before"
    probed = _with_probes(source, places, probe)
    probed_fixed = fix(probed)
    assert _without_probes(probed_fixed, probe) == plain

    expected_positions = positions(probed)
    if not native:
        notebook_positions, notebook_fixed = _in_a_notebook(fixture, codes, PROBE, probed)
    for name, text in VARIANTS.items():
        inserted = text.replace("#", "//") if native else text
        variant = probed.replace(probe, inserted)
        assert positions(variant) == expected_positions, name
        got = fix(variant)
        assert got == probed_fixed.replace(probe, inserted), name
        assert fix(got) == got, f"{name}: fixing twice changed the file"
        if native:
            continue
        ast.parse(got)
        found, fixed_cell = _in_a_notebook(fixture, codes, inserted, variant)
        assert found == notebook_positions, f"{name} in a notebook"
        assert fixed_cell == notebook_fixed.replace(PROBE, inserted), f"{name} in a notebook"
        ast.parse(fixed_cell)


def _in_a_notebook(fixture, codes, first: str, text: str) -> tuple[list[tuple], str]:
    """`text` as a notebook's second cell, below a cell holding `first`, lines split as
    Jupyter splits them: the findings' positions, and the second cell once fixed (fixing the
    notebook again must change nothing)."""
    cells = [
        {
            "cell_type": "code",
            "execution_count": 1,
            "metadata": {},
            "outputs": [],
            "source": source.splitlines(keepends=True),
        }
        for source in (first + "\n", text)
    ]
    data = json.dumps(
        {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1
    )
    name = fixture.stem + ".ipynb"
    checked, _ = _process_notebook(SourceFile(data, "utf-8"), name, Job(codes=codes))
    fix = Job(codes=codes, mode="fix", unsafe=True)
    _, fixed = _process_notebook(SourceFile(data, "utf-8"), name, fix)
    assert _process_notebook(SourceFile(fixed, "utf-8"), name, fix)[1] == fixed, "fixed twice"
    positions = [(f.cell, f.line, f.column, f.end_line, f.end_column) for f in checked.findings]
    return positions, "".join(json.loads(fixed)["cells"][1]["source"])
