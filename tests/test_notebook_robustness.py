"""Notebooks as they come: odd cells, long lines, any JSON layout; `--fix` changes only what it fixed.

A bad cell is one finding and the rest of the notebook is checked; a notebook that cannot be
read at all is one finding and the rest of the files are checked. A fix rewrites the changed
cells' `"source"` values in the file's own text: newlines, indentation, escapes and numbers
elsewhere stay byte for byte.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

NOT_LINE_BREAKS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
IDS = [f"U+{ord(c):04X}" for c in NOT_LINE_BREAKS]
LEGACY_LOSS = "c = nn.MSELoss(reduce=False)\n"
FIXED_LOSS = 'c = nn.MSELoss(reduction="none")\n'


def td(*args: str, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_COLOR": "1", "TORCHDOCTOR_LANG": "en"}
    return subprocess.run(
        [sys.executable, "-m", "torchdoctor", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=60,
    )


def code_cell(source) -> dict:
    return {
        "cell_type": "code",
        "execution_count": 1,
        "metadata": {},
        "outputs": [],
        "source": source,
    }


def notebook(*cells) -> dict:
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def findings(tmp_path, name: str) -> tuple[int, list[tuple]]:
    result = td("check", "--no-cache", "--format", "json", name, cwd=tmp_path)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    found = json.loads(result.stdout)
    return result.returncode, [(f.get("cell"), f["line"], f["name"]) for f in found]


def changed_lines(before: bytes, after: bytes) -> list[tuple[bytes, bytes]]:
    old, new = before.split(b"\n"), after.split(b"\n")
    assert len(old) == len(new)
    return [(a, b) for a, b in zip(old, new) if a != b]


# ---- cells that cannot be read --------------------------------------------------------------


def test_bad_cells_are_reported_and_the_other_cells_checked(tmp_path):
    data = notebook(
        1,  # not an object
        code_cell("import torch\nx = torch.randn(3)\n"),
        code_cell(42),  # source not text
        code_cell(["x.cuda()\n", 7]),  # a line that is not text
        {"cell_type": ["code"], "source": "x.cuda()"},  # an odd cell type: not code
        {"cell_type": "code"},  # no source
        "text",
        code_cell("%%\nx.cuda()\n"),  # an empty cell magic: not Python
        code_cell("x.cuda()\nprint(x)\n"),
    )
    (tmp_path / "n.ipynb").write_text(json.dumps(data), encoding="utf-8")
    code, found = findings(tmp_path, "n.ipynb")
    assert code == 1
    assert found == [
        (1, 1, "unreadable-file"),
        (3, 1, "unreadable-file"),
        (4, 1, "unreadable-file"),
        (6, 1, "unreadable-file"),
        (7, 1, "unreadable-file"),
        (9, 1, "tensor-result-discarded"),
    ]
    text = td("check", "--no-cache", "n.ipynb", cwd=tmp_path).stdout
    assert "n.ipynb:cell 3:1:1: TD701 cannot check this cell: its `source` is not a string" in text


@pytest.mark.parametrize("content", ['{"cells": 5}', "[1, 2]", '{"cells": [' * 100_000])
def test_a_notebook_that_cannot_be_read_is_one_finding(tmp_path, content):
    (tmp_path / "bad.ipynb").write_text(content, encoding="utf-8")
    (tmp_path / "a.py").write_text("import torch\nx = torch.randn(3)\nx.cuda()\n", encoding="utf-8")
    result = td("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    found = sorted((f["path"], f["name"]) for f in json.loads(result.stdout))
    assert found == [("a.py", "tensor-result-discarded"), ("bad.ipynb", "unreadable-file")]


def test_every_broken_cell_is_reported_once(tmp_path):
    cells = [code_cell("import torch\nx = torch.randn(3)\n")]
    cells += [code_cell(f"def broken{i}(:\n") for i in range(200)]
    cells.append(code_cell("x.cuda()\nprint(x)\n"))
    (tmp_path / "n.ipynb").write_text(json.dumps(notebook(*cells)), encoding="utf-8")
    code, found = findings(tmp_path, "n.ipynb")
    assert found == [(n, 1, "syntax-error") for n in range(2, 202)] + [
        (202, 1, "tensor-result-discarded")
    ]


# ---- long lines: every pattern that reads a line is linear in its length --------------------


def test_long_lines_in_cells_do_not_stall_the_check(tmp_path):
    # Indentation, and long runs that almost make a magic (`a = %x`, `obj?`), were quadratic.
    n = 200_000
    lines = [
        " " * n + "x\n",
        "a " * n + "\n",
        "a," * n + "\n",
        "a" * n + "?x\n",
        "\t" * n + "y\n",
        " " * n + "\n",
    ]
    cells = [code_cell(["import torch\n", line]) for line in lines]
    (tmp_path / "n.ipynb").write_text(json.dumps(notebook(*cells)), encoding="utf-8")
    code, found = findings(tmp_path, "n.ipynb")  # the timeout catches a stall
    assert {name for _, _, name in found} <= {"syntax-error"}


# ---- --fix keeps the file's own bytes outside the fixed lines -------------------------------


@pytest.mark.parametrize("char", NOT_LINE_BREAKS, ids=IDS)
def test_a_line_holding_a_character_python_does_not_break_at_stays_one_line(tmp_path, char):
    source = ["import torch\n", "import torch.nn as nn\n", f"# caf{char}e\n", LEGACY_LOSS]
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps(notebook(code_cell(source)), indent=1), encoding="utf-8")
    before = path.read_bytes()
    code, found = findings(tmp_path, "n.ipynb")
    assert found == [(1, 4, "deprecated-loss-reduction-args")]
    result = td("check", "--no-cache", "--fix", "n.ipynb", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"] == [
        *source[:3],
        FIXED_LOSS,
    ]
    assert changed_lines(before, path.read_bytes()) == [
        (b'    "c = nn.MSELoss(reduce=False)\\n"', b'    "c = nn.MSELoss(reduction=\\"none\\")\\n"')
    ]


def test_fix_keeps_crlf_newlines_and_numbers_the_json_module_would_rewrite(tmp_path):
    data = notebook(
        code_cell(["import torch\n", "import torch.nn as nn\n", LEGACY_LOSS]),
        code_cell(["y = 1\n"]),
    )
    text = (
        json.dumps(data, indent=2)
        .replace("\n", "\r\n")
        .replace(
            '"metadata": {}', '"metadata": {"scale": 1E400, "pi": 3.14159265358979323846264}', 1
        )
    )
    path = tmp_path / "n.ipynb"
    path.write_bytes(text.encode("utf-8"))
    assert td("check", "--no-cache", "--fix", "n.ipynb", cwd=tmp_path).returncode == 0
    after = path.read_bytes()
    assert after == text.replace("reduce=False", 'reduction=\\"none\\"').encode("utf-8")
    assert b"1E400" in after and b"Infinity" not in after


def test_fix_keeps_a_minified_ascii_notebook_minified_and_escaped(tmp_path):
    data = notebook(
        {"cell_type": "markdown", "metadata": {}, "source": "# café ☕"},
        code_cell(["import torch  # 模型\n", "import torch.nn as nn\n", LEGACY_LOSS]),
        code_cell("y = 'é'\n"),
    )
    text = json.dumps(data, separators=(",", ":"))  # one line, non-ASCII as \\u escapes
    path = tmp_path / "n.ipynb"
    path.write_text(text, encoding="utf-8")
    assert td("check", "--no-cache", "--fix", "n.ipynb", cwd=tmp_path).returncode == 0
    after = path.read_text(encoding="utf-8")
    assert after == text.replace("reduce=False", 'reduction=\\"none\\"')
    assert after.isascii() and "\n" not in after


def test_a_string_source_stays_a_string_and_keeps_its_missing_final_newline(tmp_path):
    source = "import torch\nx = torch.randn(3)\nx.cuda()\nprint(x)"
    path = tmp_path / "n.ipynb"
    path.write_text(
        json.dumps(notebook(code_cell(source), code_cell("%time x.cuda()"))), encoding="utf-8"
    )
    result = td("check", "--no-cache", "--fix", "--unsafe-fixes", "n.ipynb", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    assert cells[0]["source"] == "import torch\nx = torch.randn(3)\nx = x.cuda()\nprint(x)"
    assert cells[1]["source"] == "%time x.cuda()"


def test_text_like_the_doctors_own_markers_is_left_alone(tmp_path):
    # The joined cells are split again at boundary comments, and magics come back from `pass`
    # placeholders: a cell that already holds such text must not be cut or replaced.
    first = [
        "import torch\n",
        "# torchdoctor: cell boundary\n",
        "%matplotlib inline\n",
        "x = torch.randn(3)\n",
        "x.cuda()\n",
        "print(x)\n",
    ]
    second = [
        "pass  # torchdoctor: magic 0\n",
        "# torchdoctor-: cell boundary\n",
        "x.cuda()\n",
        "print(x)\n",
    ]
    path = tmp_path / "n.ipynb"
    path.write_text(
        json.dumps(notebook(code_cell(first), code_cell(second)), indent=1), encoding="utf-8"
    )
    result = td("check", "--no-cache", "--fix", "--unsafe-fixes", "n.ipynb", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    assert cells[0]["source"] == [*first[:4], "x = x.cuda()\n", "print(x)\n"]
    assert cells[1]["source"] == [*second[:2], "x = x.cuda()\n", "print(x)\n"]
