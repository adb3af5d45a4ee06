"""Where torchdoctor meets other tools: SARIF consumers, flake8, pre-commit."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema

from conftest import FIXTURES, run_cli

BAD = "import torch\nx = torch.randn(3)\nx.cuda()\n"


def test_sarif_output_is_valid_sarif_2_1_0(tmp_path):
    (tmp_path / "bad.py").write_text(BAD + "loss = x.sum()\nprint(loss.data[0])\n")
    (tmp_path / "broken.py").write_text("def f(:\n")
    (tmp_path / "nb.ipynb").write_text(
        json.dumps(
            {
                "cells": [
                    {
                        "cell_type": "code",
                        "metadata": {},
                        "outputs": [],
                        "execution_count": 1,
                        "source": BAD,
                    }
                ],
                "metadata": {},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )
    result = run_cli(
        "check", "--no-cache", "--select", "ALL", "--format", "sarif", ".", cwd=tmp_path
    )
    log = json.loads(result.stdout)
    schema = json.loads((FIXTURES / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    # Formats too (URIs, dates): rfc3986-validator, a test dependency, makes jsonschema check
    # URIs, which it otherwise lets pass.
    checker = jsonschema.Draft7Validator.FORMAT_CHECKER
    assert not checker.conforms("bad uri.py", "uri-reference")
    jsonschema.Draft7Validator(schema, format_checker=checker).validate(log)
    assert {r["ruleId"] for r in log["runs"][0]["results"]} == {"TD001", "TD101", "TD700"}


def test_flake8_plugin(tmp_path):
    (tmp_path / "train.py").write_text(BAD + "y = torch.randn(2)\ny.cuda()  # noqa: TD001\n")
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "TD", "train.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "train.py:3:1: TD001 `x.cuda()` returns a new tensor and the result is thrown away: "
        "`x` is unchanged"
    ]


def test_pre_commit_hook_entries_run_as_pre_commit_calls_them(tmp_path):
    """pre-commit passes changed files by name; excluded ones must stay excluded."""
    hooks = (FIXTURES.parent.parent / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    entries = [
        line.split("entry:", 1)[1].strip() for line in hooks.splitlines() if "entry:" in line
    ]
    assert entries == [
        "torchdoctor check --force-exclude",
        "torchdoctor check --fix --force-exclude",
    ]
    (tmp_path / "pyproject.toml").write_text('[tool.torchdoctor]\nexclude = ["vendor/"]\n')
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "lib.py").write_text(BAD)
    (tmp_path / "train.py").write_text(BAD)
    for entry in entries:
        args = entry.split()[1:] + ["--format", "json", "train.py", "vendor/lib.py"]
        result = run_cli(*args, cwd=tmp_path)
        assert result.returncode == 1  # the unsafe fix is not applied by --fix: still reported
        assert [f["path"] for f in json.loads(result.stdout)] == ["train.py"]
    # Without --force-exclude a file named explicitly is always checked.
    result = run_cli("check", "--format", "json", "vendor/lib.py", cwd=tmp_path)
    assert [f["path"] for f in json.loads(result.stdout)] == ["vendor/lib.py"]
