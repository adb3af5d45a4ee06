"""`torchdoctor check` as a user runs it: exit codes, formats, fixes, config, discovery, cache."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest

from conftest import run_cli

DISCARDED = "import torch\nx = torch.randn(3)\nx.cuda()\n"
CLEAN = "import torch\nx = torch.randn(3)\nx = x.cuda()\n"
ASYNC = "import torch\nx = torch.randn(3)\nx = x.cuda(async=True)\n"


def write(root: Path, name: str, text: str | bytes) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def check_json(*args: str, cwd: Path) -> list[dict]:
    result = run_cli("check", "--no-cache", "--format", "json", *args, cwd=cwd)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


# ---- exit codes and text output -----------------------------------------------------------


def test_clean_file_exits_zero(tmp_path):
    write(tmp_path, "ok.py", CLEAN)
    result = run_cli("check", "ok.py", cwd=tmp_path)
    assert result.returncode == 0
    assert "All checks passed." in result.stdout


def test_finding_text_output_and_exit_one(tmp_path):
    write(tmp_path, "bad.py", DISCARDED)
    result = run_cli("check", "bad.py", cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("bad.py:3:1: TD001 ")
    assert lines[1].strip() == "3 | x.cuda()"
    assert lines[2].strip() == "| ^^^^^^^^"
    assert lines[3].strip().startswith("help: Assign the result back")
    assert "Found 1 problem (1 more with --unsafe-fixes)." in result.stdout
    assert "\033[" not in result.stdout  # no colour when not a terminal


def test_missing_path_is_a_usage_error(tmp_path):
    result = run_cli("check", "nope.py", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == "torchdoctor: error: nope.py: no such file or directory"
    assert "Traceback" not in result.stderr


def test_unknown_selector_is_a_usage_error(tmp_path):
    write(tmp_path, "ok.py", CLEAN)
    result = run_cli("check", "--select", "TD999x", "ok.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown rule selector 'TD999x'" in result.stderr


def test_syntax_error_is_a_finding_and_other_files_are_checked(tmp_path):
    write(tmp_path, "broken.py", "def f(:\n    pass\n")
    write(tmp_path, "bad.py", DISCARDED)
    findings = check_json(".", cwd=tmp_path)
    by_path = {f["path"]: f for f in findings}
    assert by_path["broken.py"]["name"] == "syntax-error"
    assert by_path["broken.py"]["line"] == 1
    assert "SyntaxError" in by_path["broken.py"]["message"]
    assert by_path["bad.py"]["code"] == "TD001"


def test_async_keyword_syntax_error_is_explained_and_fixed(tmp_path):
    path = write(tmp_path, "old.py", ASYNC)
    findings = check_json("old.py", cwd=tmp_path)
    assert findings[0]["name"] == "syntax-error"
    assert "non_blocking" in findings[0]["message"]
    result = run_cli("check", "--no-cache", "--fix", "old.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    assert path.read_text() == ASYNC.replace("async=", "non_blocking=")
    assert "Fixed 1 problem." in result.stdout


def test_binary_and_undecodable_files_are_findings_not_tracebacks(tmp_path):
    write(tmp_path, "weights.py", b"PK\x03\x04\x00\x00binary")
    write(tmp_path, "latin.py", b"name = '\xe9t\xe9'\n")
    write(tmp_path, "bad.py", DISCARDED)
    result = run_cli("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    findings = {f["path"]: f for f in json.loads(result.stdout)}
    assert findings["weights.py"]["name"] == "unreadable-file"
    assert "binary" in findings["weights.py"]["message"]
    assert findings["latin.py"]["name"] == "unreadable-file"
    assert "utf-8" in findings["latin.py"]["message"]
    assert findings["bad.py"]["code"] == "TD001"


def test_coding_declaration_is_respected(tmp_path):
    write(
        tmp_path,
        "latin.py",
        b"# -*- coding: latin-1 -*-\nimport torch\nname = '\xe9'\nx = torch.randn(3)\nx.cuda()\n",
    )
    findings = check_json("latin.py", cwd=tmp_path)
    assert [(f["code"], f["line"]) for f in findings] == [("TD001", 5)]


# ---- output formats -----------------------------------------------------------------------


def test_json_contract(tmp_path):
    write(tmp_path, "bad.py", "import torch\nx = torch.randn(3)\nif True:\n    x.to('cuda')\n")
    [finding] = check_json("bad.py", cwd=tmp_path)
    for key in (
        "code",
        "name",
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "message",
        "fix",
    ):
        assert key in finding
    assert (finding["line"], finding["column"], finding["end_line"], finding["end_column"]) == (
        4,
        5,
        4,
        17,
    )
    assert finding["fix"]["applicability"] == "unsafe"
    [edit] = finding["fix"]["edits"]
    assert edit["content"] == "x = x.to('cuda')"
    assert edit["location"] == {"line": 4, "column": 5}


def test_columns_count_characters_not_bytes(tmp_path):
    write(tmp_path, "wide.py", "import torch\nx = torch.randn(3)\nname = '中文'; x.cuda()\n")
    [finding] = check_json("wide.py", cwd=tmp_path)
    assert finding["column"] == len("name = '中文'; ") + 1


def test_sarif_output(tmp_path):
    write(tmp_path, "bad.py", DISCARDED)
    result = run_cli("check", "--no-cache", "--format", "sarif", "bad.py", cwd=tmp_path)
    log = json.loads(result.stdout)
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    [res] = run["results"]
    assert res["ruleId"] == "TD001" and rule_ids[res["ruleIndex"]] == "TD001"
    region = res["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == 3 and region["startColumn"] == 1
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "bad.py"


def test_github_annotations(tmp_path):
    write(tmp_path, "bad.py", DISCARDED)
    result = run_cli("check", "--no-cache", "--format", "github", "bad.py", cwd=tmp_path)
    line = result.stdout.strip()
    assert line.startswith(
        "::warning file=bad.py,line=3,col=1,endLine=3,endColumn=9,"
        "title=TD001 tensor-result-discarded::bad.py:3:1: TD001 "
    )


def test_statistics(tmp_path):
    write(tmp_path, "a.py", DISCARDED)
    write(tmp_path, "b.py", DISCARDED + "x.cpu()\n")
    result = run_cli("check", "--no-cache", "--statistics", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.split() == ["3", "TD001", "tensor-result-discarded"]


def test_chinese_messages(tmp_path):
    write(tmp_path, "bad.py", DISCARDED)
    result = run_cli("check", "--no-cache", "--lang", "zh", "bad.py", cwd=tmp_path)
    assert "返回一个新张量" in result.stdout
    assert "发现 1 个问题" in result.stdout


def test_gbk_terminal_does_not_crash(tmp_path):
    write(tmp_path, "emoji.py", "import torch\nx = torch.randn(3)\nx.cuda()  # \U0001f525 fast\n")
    result = run_cli(
        "check",
        "--no-cache",
        "--lang",
        "zh",
        "emoji.py",
        cwd=tmp_path,
        env={"PYTHONIOENCODING": "gbk"},
        encoding="gbk",
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "返回一个新张量" in result.stdout
    assert "x.cuda()  # ? fast" in result.stdout  # the emoji is replaced, not fatal


# ---- fixes ------------------------------------------------------------------------------------


def test_fix_applies_only_safe_fixes_by_default(tmp_path):
    path = write(tmp_path, "bad.py", DISCARDED)
    result = run_cli("check", "--no-cache", "--fix", "bad.py", cwd=tmp_path)
    assert result.returncode == 1  # the unsafe one is still there
    assert path.read_text() == DISCARDED


def test_unsafe_fixes_and_idempotence(tmp_path):
    path = write(tmp_path, "bad.py", DISCARDED)
    result = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", "bad.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    assert path.read_text() == CLEAN
    again = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", "bad.py", cwd=tmp_path)
    assert again.returncode == 0 and path.read_text() == CLEAN
    assert "Fixed" not in again.stdout


def test_fix_keeps_crlf_newlines_and_file_mode(tmp_path):
    path = write(tmp_path, "crlf.py", ASYNC.replace("\n", "\r\n").encode())
    path.chmod(0o640)
    run_cli("check", "--no-cache", "--fix", "crlf.py", cwd=tmp_path)
    assert (
        path.read_bytes() == ASYNC.replace("async=", "non_blocking=").replace("\n", "\r\n").encode()
    )
    assert path.stat().st_mode & 0o777 == 0o640


def test_diff_writes_nothing(tmp_path):
    path = write(tmp_path, "bad.py", DISCARDED)
    result = run_cli("check", "--no-cache", "--diff", "--unsafe-fixes", "bad.py", cwd=tmp_path)
    assert result.returncode == 1
    assert "-x.cuda()\n+x = x.cuda()" in result.stdout
    assert path.read_text() == DISCARDED


def test_stdin_filename(tmp_path):
    result = run_cli("check", "--stdin-filename", "editor.py", cwd=tmp_path, stdin=DISCARDED)
    assert result.returncode == 1
    assert result.stdout.startswith("editor.py:3:1: TD001")
    fixed = run_cli("check", "--stdin-filename", "editor.py", "--fix", cwd=tmp_path, stdin=ASYNC)
    assert fixed.stdout == ASYNC.replace("async=", "non_blocking=")


# ---- selection, suppression, configuration ---------------------------------------------


@pytest.mark.parametrize("selector", ["TD001", "TD0", "tensor-result-discarded", "ALL", "td001"])
def test_select_accepts_codes_prefixes_names_and_all(tmp_path, selector):
    write(tmp_path, "bad.py", DISCARDED)
    assert [f["code"] for f in check_json("--select", selector, "bad.py", cwd=tmp_path)] == [
        "TD001"
    ]


@pytest.mark.parametrize("selector", ["TD001", "tensor-result-discarded", "TD0"])
def test_ignore(tmp_path, selector):
    write(tmp_path, "bad.py", DISCARDED)
    assert check_json("--ignore", selector, "bad.py", cwd=tmp_path) == []


@pytest.mark.parametrize(
    "comment", ["# noqa", "# noqa: TD001", "# noqa: tensor-result-discarded", "# NOQA:TD700,TD001"]
)
def test_noqa(tmp_path, comment):
    write(tmp_path, "bad.py", DISCARDED.replace("x.cuda()", f"x.cuda()  {comment}"))
    assert check_json("bad.py", cwd=tmp_path) == []


def test_noqa_for_another_rule_does_not_suppress(tmp_path):
    write(tmp_path, "bad.py", DISCARDED.replace("x.cuda()", "x.cuda()  # noqa: TD700"))
    assert len(check_json("bad.py", cwd=tmp_path)) == 1


def test_pyproject_configuration(tmp_path):
    write(
        tmp_path,
        "pyproject.toml",
        """
        [tool.torchdoctor]
        exclude = ["generated/"]
        per-file-ignores = {"tests/*" = ["tensor-result-discarded"]}
        """,
    )
    write(tmp_path, "src/bad.py", DISCARDED)
    write(tmp_path, "tests/test_bad.py", DISCARDED)
    write(tmp_path, "generated/bad.py", DISCARDED)
    findings = check_json(".", cwd=tmp_path / "src")  # config found from a subdirectory
    assert [f["path"] for f in findings] == ["bad.py"]
    findings = check_json(".", cwd=tmp_path)
    assert [f["path"] for f in findings] == ["src/bad.py"]


def test_pyproject_select_and_command_line_override(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.torchdoctor]\nignore = ["TD001"]\n')
    write(tmp_path, "bad.py", DISCARDED)
    assert check_json("bad.py", cwd=tmp_path) == []
    assert (
        len(check_json("--select", "ALL", "--extend-select", "TD001", "bad.py", cwd=tmp_path)) == 0
    )
    write(tmp_path, "pyproject.toml", '[tool.torchdoctor]\nselect = ["TD7"]\n')
    assert check_json("bad.py", cwd=tmp_path) == []
    assert len(check_json("--extend-select", "TD001", "bad.py", cwd=tmp_path)) == 1


def test_bad_configuration_is_a_usage_error(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.torchdoctor]\nselcet = ["TD001"]\n')
    write(tmp_path, "ok.py", CLEAN)
    result = run_cli("check", "ok.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown key(s) in [tool.torchdoctor]: selcet" in result.stderr


# ---- discovery ------------------------------------------------------------------------------


def test_discovery_respects_gitignore_and_skips_environments(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path, ".gitignore", "ignored_dir/\nscratch_*.py\n")
    write(tmp_path, "train.py", DISCARDED)
    write(tmp_path, "ignored_dir/a.py", DISCARDED)
    write(tmp_path, "scratch_1.py", DISCARDED)
    write(tmp_path, "sub/.gitignore", "local.py\n")
    write(tmp_path, "sub/local.py", DISCARDED)
    write(tmp_path, "sub/kept.py", DISCARDED)
    write(tmp_path, "myenv/pyvenv.cfg", "home = /usr\n")
    write(tmp_path, "myenv/lib/x.py", DISCARDED)
    write(tmp_path, "build/lib/x.py", DISCARDED)
    write(tmp_path, "notes.txt", "x.cuda()\n")
    paths = sorted(f["path"] for f in check_json(".", cwd=tmp_path))
    assert paths == ["sub/kept.py", "train.py"]
    # Explicit file arguments are always checked.
    assert [f["path"] for f in check_json("scratch_1.py", cwd=tmp_path)] == ["scratch_1.py"]


def test_parallel_and_serial_agree(tmp_path):
    for i in range(12):
        write(tmp_path, f"m{i:02}.py", DISCARDED * (i % 3 + 1))
    serial = check_json("--jobs", "1", ".", cwd=tmp_path)
    parallel = check_json("--jobs", "2", ".", cwd=tmp_path)
    assert serial == parallel
    assert len(serial) == sum(i % 3 + 1 for i in range(12))


# ---- cache --------------------------------------------------------------------------------


def test_cache_is_used_and_invalidated_by_content(tmp_path):
    path = write(tmp_path, "bad.py", DISCARDED)
    first = run_cli("check", "--format", "json", "bad.py", cwd=tmp_path)
    cache_files = list((tmp_path / ".torchdoctor_cache").glob("?" * 32 + ".json"))
    assert len(cache_files) == 1
    assert (tmp_path / ".torchdoctor_cache" / ".gitignore").read_text().strip().endswith("*")
    # Prove the second run reads the cache: a text planted in the stored finding comes back
    # (in English the stored message is shown; in another language it is written again from
    # its fields).
    data = json.loads(cache_files[0].read_text())
    [(key, entry)] = data.items()
    variant, fields = entry[1][0]["_template"]
    planted = {
        name: "from_the_cache" if isinstance(value, str) else value
        for name, value in fields.items()
    }
    entry[1][0]["_template"] = [variant, planted]
    entry[1][0]["message"] = "from_the_cache"
    cache_files[0].write_text(json.dumps(data))
    second = run_cli("check", "--format", "json", "bad.py", cwd=tmp_path)
    assert "from_the_cache" in json.loads(second.stdout)[0]["message"]
    # A content change invalidates the entry.
    path.write_text(DISCARDED + "x.cpu()\n")
    third = json.loads(run_cli("check", "--format", "json", "bad.py", cwd=tmp_path).stdout)
    assert [f["line"] for f in third] == [3, 4]
    assert "from_the_cache" not in third[0]["message"]
    assert first.returncode == 1


def test_one_cache_serves_every_language(tmp_path):
    """The cache is not keyed by language: findings are stored with what their text is made of
    and written in the language asked for, the engine's own (a syntax error) too."""
    write(tmp_path, "bad.py", DISCARDED)
    write(tmp_path, "broken.py", "def f(:\n")
    english = json.loads(run_cli("check", "--format", "json", ".", cwd=tmp_path).stdout)
    [cache_file] = (tmp_path / ".torchdoctor_cache").glob("?" * 32 + ".json")
    data = json.loads(cache_file.read_text())
    [bad] = [entry for key, entry in data.items() if key.endswith("bad.py")]
    variant, fields = bad[1][0]["_template"]
    bad[1][0]["_template"] = [
        variant,
        {name: "planted" if isinstance(value, str) else value for name, value in fields.items()},
    ]
    cache_file.write_text(json.dumps(data))

    chinese = json.loads(
        run_cli("check", "--format", "json", "--lang", "zh", ".", cwd=tmp_path).stdout
    )
    assert list((tmp_path / ".torchdoctor_cache").glob("?" * 32 + ".json")) == [cache_file]
    by_path = {f["path"]: f for f in chinese}
    assert "planted" in by_path["bad.py"]["message"]  # from the cache ...
    assert by_path["bad.py"]["message"] != english[0]["message"]  # ... written in Chinese
    assert any("\u4e00" <= ch <= "\u9fff" for ch in by_path["bad.py"]["message"])
    assert any("\u4e00" <= ch <= "\u9fff" for ch in by_path["bad.py"]["fix"]["title"])
    [english_syntax] = [f for f in english if f["path"] == "broken.py"]
    assert by_path["broken.py"]["message"] != english_syntax["message"]
    assert by_path["broken.py"]["message"].startswith("语法错误")


def _cell(source: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "outputs": [], "source": source}


# One file of each kind whose findings are made by an engine or carry a field in every
# language: the cache must give them back in any language.
LANGUAGE_CASES = {
    "bad.py": DISCARDED,
    "broken.py": "import torch\ndef f(:\n",
    "old.py": ASYNC,
    "binary.py": b"PK\x03\x04\x00\xff\xfe",
    "ext/kernel.cu": "#include <THC/THC.h>\n#include <THC/THCTensorRandom.h>\nAT_CHECK(x);\n",
    "book.ipynb": json.dumps(
        {
            "cells": [
                _cell("import torch\nx = torch.randn(3)\n"),
                _cell("def f(:\n"),
                _cell(DISCARDED),
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    ),
}


@pytest.mark.parametrize("output", ["text", "json"])
def test_a_check_cached_in_english_shows_in_chinese_as_a_fresh_chinese_check(tmp_path, output):
    for name, text in LANGUAGE_CASES.items():
        write(tmp_path, name, text)
    options = ("check", "--select", "ALL", "--format", output, ".")
    english = run_cli(*options, cwd=tmp_path)
    [cache_file] = (tmp_path / ".torchdoctor_cache").glob("?" * 32 + ".json")
    written = cache_file.stat()

    cached = run_cli(*options, "--lang", "zh", cwd=tmp_path)
    fresh = run_cli(*options, "--lang", "zh", "--no-cache", cwd=tmp_path)

    assert (cache_file.stat().st_ino, cache_file.stat().st_mtime_ns) == (
        written.st_ino,
        written.st_mtime_ns,
    )  # every file came from the cache: nothing was checked again
    assert cached.stdout == fresh.stdout
    assert cached.returncode == fresh.returncode == english.returncode == 1
    assert cached.stdout != english.stdout
    for code in ("TD001", "TD700", "TD701", "TD707"):
        assert code in cached.stdout
    for chinese in ("语法错误", "无法检查该文件", "请删除它", "请改为包含"):
        assert chinese in cached.stdout


def test_no_cache_writes_nothing(tmp_path):
    write(tmp_path, "bad.py", DISCARDED)
    run_cli("check", "--no-cache", "bad.py", cwd=tmp_path)
    assert not (tmp_path / ".torchdoctor_cache").exists()


def test_cache_depends_on_selection(tmp_path):
    write(tmp_path, "bad.py", DISCARDED)
    run_cli("check", "bad.py", cwd=tmp_path)
    result = run_cli("check", "--format", "json", "--ignore", "TD001", "bad.py", cwd=tmp_path)
    assert json.loads(result.stdout) == []


def test_pathologically_nested_code_does_not_crash_the_run(tmp_path):
    chain = " + ".join(["x"] * 900)  # parses, but deep enough to break recursive analysis
    write(tmp_path, "long.py", f"import torch\nx = torch.zeros(2)\ny = {chain}\ny.cuda()\n")
    too_deep = " + ".join(["x"] * 5000)  # CPython's own parser gives up on this one
    write(tmp_path, "deeper.py", f"x = 1\ny = {too_deep}\n")
    write(tmp_path, "bad.py", DISCARDED)
    findings = {f["path"]: f for f in check_json(".", cwd=tmp_path)}
    assert findings["long.py"]["code"] == "TD001" and findings["long.py"]["line"] == 4
    assert findings["deeper.py"]["name"] == "syntax-error"
    assert "RecursionError" in findings["deeper.py"]["message"]
    assert findings["bad.py"]["code"] == "TD001"


def test_sigterm_stops_the_worker_processes(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    body = DISCARDED + "".join(f"y{i} = torch.randn({i} + 1)\ny{i}.view(-1)\n" for i in range(3000))
    for i in range(40):
        write(tmp_path, f"m{i:02}.py", body)
    process = subprocess.Popen(
        [sys.executable, "-m", "torchdoctor", "check", "--no-cache", "--jobs", "2", "."],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: list[int] = []
    deadline = time.monotonic() + 20
    while not workers and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.1)
        children = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True, text=True)
        workers = [int(pid) for pid in children.stdout.split()]
    assert workers, "the check finished before it could be interrupted"
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) == 128 + signal.SIGTERM
    time.sleep(0.5)
    for pid in workers:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        raise AssertionError(f"worker {pid} outlived the check")


def test_per_file_ignores_apply_to_stdin_filename(tmp_path):
    write(
        tmp_path,
        "pyproject.toml",
        '[tool.torchdoctor]\nper-file-ignores = {"tests/*" = ["TD001"]}\n',
    )
    ignored = run_cli("check", "--stdin-filename", "tests/test_x.py", cwd=tmp_path, stdin=DISCARDED)
    assert ignored.returncode == 0, ignored.stdout
    reported = run_cli("check", "--stdin-filename", "src/x.py", cwd=tmp_path, stdin=DISCARDED)
    assert reported.returncode == 1


# ---- rules that look at the files next to the checked one -----------------------------------


def test_stdlib_shadowing_file_in_a_script_directory(tmp_path):
    write(tmp_path, "random.py", "import random\n\ndef randint(a, b):\n    return a\n")
    write(tmp_path, "train.py", "import random\nimport torch\nprint(random.randint(0, 1))\n")
    found = check_json(".", cwd=tmp_path)
    where = sorted((f["path"], f["line"], f["code"]) for f in found)
    # train.py gets the wrong module, and random.py imports itself (a circular import).
    assert where == [("random.py", 1, "TD703"), ("train.py", 1, "TD703")]
    assert "random.py" in found[0]["message"] and "rename" in found[0]["message"]


def test_stdlib_shadowing_file_not_reported_inside_a_package(tmp_path):
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/logging.py", "LEVEL = 1\n")
    write(tmp_path, "pkg/model.py", "import logging\nimport torch\nlogging.info('x')\n")
    assert check_json(".", cwd=tmp_path) == []


def test_stdlib_shadowing_file_not_reported_in_a_namespace_part_of_a_package(tmp_path):
    # torchtitan: `torchtitan/tools/` has no `__init__.py`, its `logging.py` is imported as
    # `torchtitan.tools.logging`; a module there run as a script still gets the wrong one.
    write(tmp_path, "pkg/__init__.py", "")
    write(
        tmp_path,
        "pkg/tools/logging.py",
        "import logging\nimport torch\nLOG = logging.getLogger()\n",
    )
    write(tmp_path, "pkg/tools/util.py", "import logging\nimport torch\n")
    assert check_json(".", cwd=tmp_path) == []
    write(
        tmp_path,
        "pkg/tools/run.py",
        "import logging\nimport torch\nif __name__ == '__main__':\n    pass\n",
    )
    found = check_json(".", cwd=tmp_path)
    assert [(f["path"], f["code"]) for f in found] == [("pkg/tools/run.py", "TD703")]
    cached = run_cli("check", "--format", "json", ".", cwd=tmp_path)  # fills the cache
    assert len(json.loads(cached.stdout)) == 1
    (tmp_path / "pkg/__init__.py").unlink()  # no package around it now: a script directory
    again = run_cli("check", "--format", "json", ".", cwd=tmp_path)  # the cache sees it
    assert len(json.loads(again.stdout)) == 3


def test_stdlib_shadowing_file_not_reported_under_a_directory_imported_by_its_name(tmp_path):
    # I-JEPA: neither `src/` nor `src/utils/` has an `__init__.py`; main.py at the top imports
    # `src.utils.tensors`, whose `from logging import getLogger` gets the standard module, not
    # `src/utils/logging.py` beside it.
    write(tmp_path, "src/utils/logging.py", "import torch\n\ndef gpu_timer(f):\n    return f\n")
    tensors = "from logging import getLogger\nimport torch\n\nlogger = getLogger()\n"
    write(tmp_path, "src/utils/tensors.py", tensors)
    found = check_json(".", cwd=tmp_path)
    assert [(f["path"], f["code"]) for f in found] == [("src/utils/tensors.py", "TD703")]
    write(tmp_path, "main.py", "from src.utils.tensors import logger\nimport torch\n")
    assert check_json(".", cwd=tmp_path) == []


def test_stdlib_shadowing_file_not_reported_in_a_directory_imported_by_its_name(tmp_path):
    # PyTorch-StudioGAN: `src/sync_batchnorm/` has no `__init__.py`; `src/loader.py` imports
    # `sync_batchnorm.batchnorm`, so its `unittest.py` (a test helper doing `import unittest`)
    # is imported as `sync_batchnorm.unittest` and gets the standard module.
    helper = "import unittest\nimport torch\n\nclass TorchTestCase(unittest.TestCase):\n    pass\n"
    write(tmp_path, "src/sync_batchnorm/unittest.py", helper)
    write(
        tmp_path,
        "src/sync_batchnorm/batchnorm.py",
        "import torch\n\ndef convert_model(m):\n    return m\n",
    )
    found = check_json(".", cwd=tmp_path)
    assert [(f["path"], f["code"]) for f in found] == [("src/sync_batchnorm/unittest.py", "TD703")]
    write(
        tmp_path,
        "src/loader.py",
        "from sync_batchnorm.batchnorm import convert_model\nimport torch\n",
    )
    assert check_json(".", cwd=tmp_path) == []
    # Run from its own directory, it would import itself: still reported.
    write(
        tmp_path,
        "src/sync_batchnorm/unittest.py",
        helper + "\nif __name__ == '__main__':\n    pass\n",
    )
    found = check_json(".", cwd=tmp_path)
    assert [(f["path"], f["code"]) for f in found] == [("src/sync_batchnorm/unittest.py", "TD703")]


def test_cache_notices_a_new_neighbour(tmp_path):
    write(
        tmp_path,
        "train.py",
        "import copy\nimport torch\nm = copy.deepcopy(torch.nn.Linear(1, 1))\n",
    )
    first = run_cli("check", "--format", "json", "train.py", cwd=tmp_path)
    assert json.loads(first.stdout) == []
    write(tmp_path, "copy.py", "def deepcopy(x):\n    return x\n")
    second = run_cli("check", "--format", "json", "train.py", cwd=tmp_path)
    assert [f["code"] for f in json.loads(second.stdout)] == ["TD703"]


# ---- C++/CUDA extension sources -------------------------------------------------------------

OLD_EXTENSION = """\
#include <torch/extension.h>
#include <THC/THC.h>
// AT_CHECK in a comment is not code
at::Tensor f(at::Tensor x) {
  AT_CHECK(x.is_cuda(), "x must be a CUDA tensor");
  return x;
}
"""


def test_extension_sources_are_discovered_next_to_python_code(tmp_path):
    write(tmp_path, "setup.py", "from torch.utils.cpp_extension import CUDAExtension\n")
    write(tmp_path, "csrc/ext.cu", OLD_EXTENSION)
    # A C++ file that does not use PyTorch's API: `type()` and `data<T>()` mean other things.
    write(tmp_path, "third_party/json.hpp", "struct J { int type() const; };\n#define AT_X 1\n")
    found = check_json(".", cwd=tmp_path)
    assert [(f["path"], f["line"], f["code"]) for f in found] == [
        ("csrc/ext.cu", 2, "TD707"),
        ("csrc/ext.cu", 5, "TD707"),
    ]


def test_extension_fix_renames_and_keeps_other_bytes(tmp_path):
    path = write(tmp_path, "ext.cpp", OLD_EXTENSION.encode() + b"// caf\xe9 (Latin-1)\n")
    result = run_cli("check", "--no-cache", "--fix", "ext.cpp", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    fixed = path.read_bytes()
    assert b"#include <ATen/cuda/CUDAContext.h>" in fixed and b"TORCH_CHECK(x.is_cuda()" in fixed
    assert b"// AT_CHECK in a comment" in fixed and fixed.endswith(b"caf\xe9 (Latin-1)\n")
    again = run_cli("check", "--no-cache", "--fix", "ext.cpp", cwd=tmp_path)
    assert again.returncode == 0 and path.read_bytes() == fixed


def test_extension_source_from_stdin(tmp_path):
    result = run_cli(
        "check", "--no-cache", "--stdin-filename", "ext.cu", "-", cwd=tmp_path, stdin=OLD_EXTENSION
    )
    assert result.returncode == 1
    assert "ext.cu:5:3: TD707" in result.stdout


def test_a_method_named_but_not_called_is_no_internal_error(tmp_path):
    """`losses.append[loss]`, `optimizer.step`: statements that name what a rule looks for
    without calling it (a typo the EDSR repository has) are checked like any other code."""
    from torchdoctor.lint.checker import dispatch_for
    from torchdoctor.catalog import _registry

    codes = frozenset(p.code for p in _registry.all_pitfalls())
    _, by_name, _ = dispatch_for(codes)[ast.Expr]
    lines = ["import torch", "model = torch.nn.Linear(2, 2)", "for step in range(3):"]
    for name in sorted(by_name):
        lines += [f"    model.{name}", f"    model.{name}[0]", f"    model.x.{name}[model]"]
    write(tmp_path, "odd.py", "\n".join(lines) + "\n")
    result = run_cli("check", "--no-cache", "--select", "ALL", "odd.py", cwd=tmp_path)
    assert "internal error" not in result.stderr + result.stdout
    assert result.returncode in (0, 1)


def test_a_type_first_factory_of_a_cpp_extension_is_told_it_no_longer_compiles(tmp_path):
    # HRNet's inplace_abn (PyTorch 0.4): `at::empty(z.type(), {0})` is no deprecation warning
    # today but a compile error, and the arguments change places: no fix is offered.
    (tmp_path / "abn.cpp").write_text(
        "#include <torch/extension.h>\n"
        "at::Tensor grad(at::Tensor z) {\n"
        "  auto dweight = at::empty(z.type(), {0});\n"
        "  return at::zeros(z.sizes(), z.type());\n"
        "}\n"
    )
    run = run_cli("check", "--no-cache", "--select", "TD707", "abn.cpp", cwd=tmp_path)
    assert (
        "abn.cpp:3:29: TD707 `z.type()` passes a type as the factory's first argument" in run.stdout
    ), run.stdout
    assert "abn.cpp:4:32: TD707 `.type()` is deprecated" in run.stdout, run.stdout
