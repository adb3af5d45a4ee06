"""Where output formats say a finding is: notebook findings at the lines of the .ipynb file in
SARIF and GitHub annotations, SARIF URIs as RFC 3986 wants them, carets at display columns."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from conftest import FIXTURES, run_cli

SETUP = ["import torch\n", "x = torch.zeros(3)\n"]


def _notebook(*sources: object) -> dict:
    cells: list[dict] = [{"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]}]
    cells += [
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": source,
        }
        for source in sources
    ]
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _check(fmt: str, name: str, cwd, *args: str):
    result = run_cli("check", "--no-cache", "--format", fmt, *args, name, cwd=cwd)
    assert result.returncode == 1, result.stderr
    return result.stdout


def _sarif_regions(stdout: str) -> list[tuple[dict, dict]]:
    results = json.loads(stdout)["runs"][0]["results"]
    return [
        (r["locations"][0]["physicalLocation"]["region"], r["locations"][0].get("properties"))
        for r in results
    ]


def _at(text: str, region: dict, end: str = "endColumn") -> str:
    """The text of the file from the region's start to its end, on its start line."""
    line = text.splitlines()[region["startLine"] - 1]
    return line[region["startColumn"] - 1 : region[end] - 1]


def test_a_notebook_finding_in_sarif_is_at_the_json_line_that_holds_the_code(tmp_path):
    """As Jupyter writes notebooks (indented, `source` a list of lines): cell 3, line 2 is the
    file's line holding `"x.cuda()\\n",`, not line 2 of the file."""
    book = _notebook(SETUP, ['print("café")\n', "x.cuda()\n", "y = 1\n"])
    text = json.dumps(book, indent=1, ensure_ascii=True) + "\n"
    (tmp_path / "train.ipynb").write_text(text, encoding="utf-8")

    [(region, cell)] = _sarif_regions(_check("sarif", "train.ipynb", tmp_path))

    assert cell == {"cell": 3, "cellLine": 2, "cellColumn": 1}
    assert text.splitlines()[region["startLine"] - 1].strip() == '"x.cuda()\\n",'
    assert _at(text, region) == "x.cuda()"
    # Text and JSON output keep the cell's own line.
    shown = _check("text", "train.ipynb", tmp_path)
    assert shown.startswith("train.ipynb:cell 3:2:1: TD001")
    [finding] = json.loads(_check("json", "train.ipynb", tmp_path))
    assert (finding["cell"], finding["line"], finding["column"]) == (3, 2, 1)


def test_github_annotations_point_at_the_notebook_file_line(tmp_path):
    book = _notebook(SETUP, ["y = 1\n", "x.cuda()\n", "z = 2\n"])
    text = json.dumps(book, indent=1)
    (tmp_path / "nb.ipynb").write_text(text, encoding="utf-8")

    [annotation] = _check("github", "nb.ipynb", tmp_path).splitlines()

    line = text.splitlines().index('    "x.cuda()\\n",') + 1
    assert annotation.startswith(f"::warning file=nb.ipynb,line={line},col=6,endLine={line},")
    assert "::nb.ipynb:cell 3:2:1: TD001 " in annotation


def test_a_source_given_as_one_string_with_escapes_maps_to_exact_columns(tmp_path):
    """Escapes in the JSON text (`\\n`, `\\"`, `\\t`, `\\u540d`, a surrogate pair) take more
    characters than they stand for: the column counts them as the file shows them."""
    source = 'a = 1\n名 = "\t😀"; x.cuda()\nb = 2\n'
    text = json.dumps(_notebook(SETUP, source), indent=2, ensure_ascii=True)
    (tmp_path / "nb.ipynb").write_text(text, encoding="utf-8")

    [(region, cell)] = _sarif_regions(_check("sarif", "nb.ipynb", tmp_path))

    assert cell == {"cell": 3, "cellLine": 2, "cellColumn": 11}
    assert '"source": "a = 1\\n\\u540d = ' in text.splitlines()[region["startLine"] - 1]
    assert _at(text, region) == "x.cuda()"


def test_in_a_notebook_written_on_one_line_every_finding_is_on_line_1_at_its_column(tmp_path):
    book = _notebook(SETUP, ["x.cuda()\n", "y = 1\n"], ["loss = x.sum()\n", "v = loss.data[0]\n"])
    text = json.dumps(book, ensure_ascii=False)
    (tmp_path / "min.ipynb").write_text(text, encoding="utf-8")

    regions = _sarif_regions(_check("sarif", "min.ipynb", tmp_path, "--select", "ALL"))

    assert {region["startLine"] for region, _ in regions} == {1}
    assert {_at(text, region) for region, _ in regions} == {"x.cuda()", "loss.data[0]"}
    assert sorted(cell["cell"] for _, cell in regions) == [3, 4]


def test_a_notebook_piped_on_stdin_is_located_in_the_piped_text(tmp_path):
    """The file named by --stdin-filename may differ from the buffer (an editor's unsaved
    one): the lines are those of the text that was checked."""
    text = json.dumps(_notebook(SETUP + ["x.cuda()\n", "y = 1\n"]), indent=1)
    (tmp_path / "nb.ipynb").write_text(json.dumps(_notebook(["pass\n"]), indent=4))

    result = run_cli(
        "check",
        "--no-cache",
        "--format",
        "sarif",
        "--stdin-filename",
        "nb.ipynb",
        cwd=tmp_path,
        stdin=text,
    )

    [(region, _)] = _sarif_regions(result.stdout)
    assert _at(text, region) == "x.cuda()"


# ---- SARIF URIs --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sarif_validator():
    schema = json.loads((FIXTURES / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    checker = jsonschema.Draft7Validator.FORMAT_CHECKER
    # Without rfc3986-validator installed, jsonschema passes every URI: this test would prove
    # nothing.
    assert not checker.conforms("a b.py", "uri-reference")
    return jsonschema.Draft7Validator(schema, format_checker=checker)


def test_sarif_uris_are_percent_encoded_and_valid_against_the_schema_formats(
    tmp_path, sarif_validator
):
    folder = tmp_path / "my project #2"
    folder.mkdir()
    name = "训练 100%.py"
    (folder / name).write_text("import torch\nx = torch.zeros(3)\nx.cuda()\n", encoding="utf-8")

    log = json.loads(_check("sarif", "my project #2", tmp_path))

    errors = list(sarif_validator.iter_errors(log))
    assert errors == []
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {
        "uri": "my%20project%20%232/%E8%AE%AD%E7%BB%83%20100%25.py",
        "uriBaseId": "%SRCROOT%",
    }
    # The same log with the path as it was written before (unencoded) is refused.
    raw = copy.deepcopy(log)
    raw["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] = (
        f"my project #2/{name}"
    )
    assert any(e.validator == "format" for e in sarif_validator.iter_errors(raw))


def test_a_file_outside_the_current_directory_gets_a_file_uri(tmp_path, sarif_validator):
    (tmp_path / "a b").mkdir()
    (tmp_path / "a b" / "bad.py").write_text("import torch\nx = torch.zeros(3)\nx.cuda()\n")
    (tmp_path / "elsewhere").mkdir()

    log = json.loads(_check("sarif", str(tmp_path / "a b"), tmp_path / "elsewhere"))

    assert list(sarif_validator.iter_errors(log)) == []
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": (tmp_path / "a b" / "bad.py").as_uri()}
    assert "%20" in location["artifactLocation"]["uri"]


# ---- carets in text output ---------------------------------------------------------------


def _caret_columns(stdout: str, line_number: int) -> tuple[str, int, int]:
    """The excerpt shown for a line, and the display columns where its carets start and end."""
    lines = stdout.splitlines()
    prefix = f"  {line_number} | "
    index = next(i for i, line in enumerate(lines) if line.startswith(prefix))
    shown = lines[index][len(prefix) :]
    carets = lines[index + 1][len(prefix) :]
    start = len(carets) - len(carets.lstrip(" "))
    return shown, start, len(carets.rstrip())


def _display_width(text: str) -> int:
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def test_carets_under_chinese_names_start_at_the_display_column(tmp_path):
    (tmp_path / "train.py").write_text(
        "import torch\nx = torch.zeros(3)\n张三 = x.view(3); 张三.view(3).cuda()\n",
        encoding="utf-8",
    )

    stdout = _check("text", "train.py", tmp_path)

    shown, start, end = _caret_columns(stdout, 3)
    assert shown == "张三 = x.view(3); 张三.view(3).cuda()"
    # Two columns for each of the four Chinese characters before and under the carets.
    assert (start, end) == (_display_width("张三 = x.view(3); "), _display_width(shown))
    assert (start, end) == (18, 37)


def test_carets_under_a_tab_indented_line_follow_the_expanded_tabs(tmp_path):
    (tmp_path / "train.py").write_text(
        "import torch\nx = torch.zeros(3)\nif x.sum():\n\tif True:\n\t\ty = 1;\tx.cuda()\n"
    )

    stdout = _check("text", "train.py", tmp_path)

    shown, start, end = _caret_columns(stdout, 5)
    assert "\t" not in shown
    assert shown == "        y = 1;  x.cuda()"  # tab stops every 4 columns
    assert shown[start:end] == "x.cuda()"
