"""Notebooks as users have them: cells, magics, outputs, broken cells, broken JSON, --fix."""

from __future__ import annotations

import json

from conftest import run_cli


def notebook(*cells, **extra) -> dict:
    built = []
    for number, cell in enumerate(cells, start=1):
        if isinstance(cell, tuple):  # ("markdown", text)
            built.append({"cell_type": cell[0], "metadata": {}, "source": cell[1]})
            continue
        built.append(
            {
                "cell_type": "code",
                "execution_count": number,
                "metadata": {"id": f"c{number}"},
                "outputs": [{"name": "stdout", "output_type": "stream", "text": ["out\n"]}],
                "source": cell.splitlines(keepends=True),
            }
        )
    return {
        "cells": built,
        "metadata": {"kernelspec": {"name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
        **extra,
    }


def write_notebook(path, data) -> str:
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    return text


TRAIN = notebook(
    ("markdown", "# 训练 notes"),
    "%matplotlib inline\n!pip install -q foo\nimport torch\nx = torch.randn(3)",
    "files = !ls\nx.cuda()\ny = torch.ones(2)",
    "%%bash\necho x.cuda()",
    "%%time\ny.view(2, 1)\nprint(y)",
)


def check_json(tmp_path, *args):
    result = run_cli("check", "--no-cache", "--format", "json", *args, cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_findings_are_located_by_cell_and_line(tmp_path):
    write_notebook(tmp_path / "train.ipynb", TRAIN)
    findings = check_json(tmp_path, "train.ipynb")
    # cell 3 uses `x` from cell 2; %%bash is not Python; %%time's body is.
    assert [(f["cell"], f["line"], f["column"], f["code"]) for f in findings] == [
        (3, 2, 1, "TD001"),
        (5, 2, 1, "TD001"),
    ]
    text = run_cli("check", "--no-cache", "train.ipynb", cwd=tmp_path).stdout
    assert text.startswith("train.ipynb:cell 3:2:1: TD001 ")
    assert "  2 | x.cuda()" in text


def test_a_message_names_lines_as_the_cells_count_them(tmp_path):
    # Bayesian-Neural-Networks' KFAC notebook: "used as a mask on line 268" named a line of the
    # cells joined, which the user cannot find; the line within the cell, and the cell when it
    # is another one.
    book = notebook(
        "import torch\nx = torch.zeros(3)",
        "I = torch.eye(3).type(torch.ByteTensor)\nprint(I)\nx[I[0]] = 1",
        "J = torch.ones(3).byte()",
        "x[J] = 2",
    )
    write_notebook(tmp_path / "kfac.ipynb", book)
    messages = {
        (f["cell"], f["line"]): f["message"]
        for f in check_json(tmp_path, "--select", "TD401", "kfac.ipynb")
    }
    assert "used as a mask on line 3:" in messages[(2, 1)]
    assert "used as a mask on line 1 (cell 4):" in messages[(3, 1)]


def test_directories_include_notebooks_but_not_checkpoints(tmp_path):
    write_notebook(tmp_path / "a.ipynb", TRAIN)
    (tmp_path / ".ipynb_checkpoints").mkdir()
    write_notebook(tmp_path / ".ipynb_checkpoints" / "a-checkpoint.ipynb", TRAIN)
    assert {f["path"] for f in check_json(tmp_path, ".")} == {"a.ipynb"}


def test_a_broken_cell_is_reported_and_the_rest_still_checked(tmp_path):
    data = notebook(
        "import torch\nx = torch.randn(3)", "def broken(:\n    pass", "x.cuda()\nprint(x)"
    )
    write_notebook(tmp_path / "nb.ipynb", data)
    findings = check_json(tmp_path, "nb.ipynb")
    assert [(f["cell"], f["line"], f["name"]) for f in findings] == [
        (2, 1, "syntax-error"),
        (3, 1, "tensor-result-discarded"),
    ]


def test_broken_json_is_a_finding_not_a_crash(tmp_path):
    (tmp_path / "bad.ipynb").write_text('{"cells": [ {"cell_type": "code", ', encoding="utf-8")
    write_notebook(tmp_path / "ok.ipynb", TRAIN)
    result = run_cli("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    by_path = {}
    for f in json.loads(result.stdout):
        by_path.setdefault(f["path"], []).append(f)
    [bad] = by_path["bad.ipynb"]
    assert bad["name"] == "unreadable-file" and "not valid JSON" in bad["message"]
    assert len(by_path["ok.ipynb"]) == 2


def test_the_value_a_cell_shows_is_not_thrown_away(tmp_path):
    """Jupyter shows the value of a cell's last expression: `x.float()` there is the user
    looking at the result. Not so before the end of the cell, nor when `;` hides it."""
    data = notebook(
        "import torch\nx = torch.randn(3)\nx.float()",
        "x.cuda()\nx.float()  # have a look",
        "x.half();",
        "x.double()\nif True:\n    x.cpu()",
    )
    write_notebook(tmp_path / "nb.ipynb", data)
    assert [(f["cell"], f["line"]) for f in check_json(tmp_path, "nb.ipynb")] == [
        (2, 1),
        (3, 1),
        (4, 1),
        (4, 3),
    ]
    # A script's last line shows nothing.
    (tmp_path / "s.py").write_text("import torch\nx = torch.randn(3)\nx.float()\n")
    assert [f["line"] for f in check_json(tmp_path, "s.py")] == [3]


def test_noqa_in_a_cell(tmp_path):
    data = notebook("import torch\nx = torch.randn(3)\nx.cuda()  # noqa: TD001")
    write_notebook(tmp_path / "nb.ipynb", data)
    assert check_json(tmp_path, "nb.ipynb") == []


def test_fix_rewrites_only_the_fixed_cells(tmp_path):
    path = tmp_path / "train.ipynb"
    original = write_notebook(path, TRAIN)
    result = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", "train.ipynb", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    fixed = json.loads(path.read_text(encoding="utf-8"))
    before = json.loads(original)
    assert fixed["cells"][2]["source"] == ["files = !ls\n", "x = x.cuda()\n", "y = torch.ones(2)"]
    assert fixed["cells"][4]["source"] == ["%%time\n", "y = y.view(2, 1)\n", "print(y)"]
    for number in (0, 1, 3):
        assert fixed["cells"][number] == before["cells"][number]
    for number in (2, 4):  # outputs, metadata and counts untouched
        for key in ("outputs", "metadata", "execution_count"):
            assert fixed["cells"][number][key] == before["cells"][number][key]
    assert fixed["metadata"] == before["metadata"]
    # Same formatting: only the two fixed source lines differ.
    changed = [
        (a, b) for a, b in zip(original.splitlines(), path.read_text().splitlines()) if a != b
    ]
    assert changed == [
        ('    "x.cuda()\\n",', '    "x = x.cuda()\\n",'),
        ('    "y.view(2, 1)\\n",', '    "y = y.view(2, 1)\\n",'),
    ]
    again = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", "train.ipynb", cwd=tmp_path)
    assert again.returncode == 0 and "Fixed" not in again.stdout


def test_diff_on_a_notebook_writes_nothing(tmp_path):
    path = tmp_path / "train.ipynb"
    original = write_notebook(path, TRAIN)
    result = run_cli("check", "--no-cache", "--diff", "--unsafe-fixes", "train.ipynb", cwd=tmp_path)
    assert result.returncode == 1
    assert '-    "x.cuda()\\n",\n+    "x = x.cuda()\\n",' in result.stdout
    assert path.read_text(encoding="utf-8") == original


# A cell pasted from inside a block: IPython takes the indentation of its first line off every
# line before running it, so it runs, and is checked as it runs.
INDENTED = notebook(
    "import torch\nloader = torch.utils.data.DataLoader([1, 2])",
    "  it = iter(loader)\n  %time first = it.next()\n\n  batch = it.next()\n  x = torch.randn(3)",
    "  a = 1\n b = 2",  # not one indentation: IPython stops at it too
)


def test_a_cell_indented_as_a_whole_is_checked_as_ipython_runs_it(tmp_path):
    write_notebook(tmp_path / "nb.ipynb", INDENTED)
    findings = check_json(tmp_path, "nb.ipynb")
    assert [(f["cell"], f["line"], f["column"], f["code"]) for f in findings] == [
        (2, 4, 11, "TD301"),  # at the column of the cell as written
        (3, 1, 2, "TD700"),
    ]


def test_fix_in_an_indented_cell_keeps_its_indentation(tmp_path):
    path = tmp_path / "nb.ipynb"
    write_notebook(path, INDENTED)
    run_cli("check", "--no-cache", "--fix", "nb.ipynb", cwd=tmp_path)
    fixed = json.loads(path.read_text(encoding="utf-8"))
    assert fixed["cells"][1]["source"] == [
        "  it = iter(loader)\n",
        "  %time first = it.next()\n",
        "\n",
        "  batch = next(it)\n",
        "  x = torch.randn(3)",
    ]
    fixed_text = path.read_text(encoding="utf-8")
    run_cli("check", "--no-cache", "--fix", "nb.ipynb", cwd=tmp_path)
    assert path.read_text(encoding="utf-8") == fixed_text


def test_a_shell_command_continued_with_backslashes_is_one_magic(tmp_path):
    # IPython joins `!cmd \` with the lines after it, indented or not (coqui-tts' tutorials);
    # the line after the command's last is Python again.
    data = notebook(
        '!tts --text "hello" \\\n--model_name "glow-tts" \\\n      --out_path a.wav\nimport torch\n'
        "x = torch.randn(3)\nx.cuda()\nprint(x)",
        "    !ls \\\n  -la\n    y = 1",
    )
    write_notebook(tmp_path / "nb.ipynb", data)
    findings = check_json(tmp_path, "nb.ipynb")
    assert [(f["cell"], f["line"], f["code"]) for f in findings] == [(1, 6, "TD001")]
    assert run_cli("check", "--no-cache", "--fix", "nb.ipynb", cwd=tmp_path).returncode == 1
    fixed = json.loads((tmp_path / "nb.ipynb").read_text(encoding="utf-8"))
    assert "".join(fixed["cells"][0]["source"]).startswith('!tts --text "hello" \\\n--model_name')


def test_magics_and_aliases_called_without_percent_are_magics(tmp_path):
    # IPython's automagic: `ls /content/checkpoints/` (vissl's tutorials), `pip install x`,
    # `cd data` run as magics; a line that is Python (`ls -la`, `time = 3`) stays Python.
    data = notebook(
        "pip install -q torch==2.1\ncd /content\nimport torch\nx = torch.randn(3)",
        "ls /content/checkpoints/\nx.cuda()\nprint(x)",
        "time = 3\nls = 2\nla = 1\nprint(ls -la, time)\nrun train.py --epochs 3",
    )
    write_notebook(tmp_path / "nb.ipynb", data)
    findings = check_json(tmp_path, "nb.ipynb")
    assert [(f["cell"], f["line"], f["code"]) for f in findings] == [(2, 2, "TD001")]
    broken = notebook("import torch\nls -la (\nx = torch.randn(3)\nx.cuda()\nprint(x)")
    write_notebook(tmp_path / "broken.ipynb", broken)  # a name of an alias, then no Python
    assert [f["code"] for f in check_json(tmp_path, "broken.ipynb")] == ["TD700"]


def test_a_line_inside_brackets_or_a_string_is_python_whatever_it_begins_with(tmp_path):
    # IPython reads a magic only where a logical line begins: `%(step, loss))` ending a call
    # begun the line before is Python's `%` (PL-BERT's training notebook); so is a line of a
    # string spanning lines. After them, `!ls` begins a line again and is a magic.
    data = notebook(
        "import torch\nstep, loss = 1, 2.0\nprint('step %d, loss %.3f'\n"
        "      %(step, loss))\ndoc = '''\n!not a command\n'''\n!ls\nx = torch.randn(3)\nx.cuda()\nprint(x)",
    )
    write_notebook(tmp_path / "nb.ipynb", data)
    findings = check_json(tmp_path, "nb.ipynb")
    assert [(f["cell"], f["line"], f["code"]) for f in findings] == [(1, 10, "TD001")]
