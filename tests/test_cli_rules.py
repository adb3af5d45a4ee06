"""`torchdoctor rule` and `torchdoctor rules`: the catalog as users read it."""

from __future__ import annotations

import json

from conftest import run_cli
from torchdoctor.catalog import all_pitfalls


def test_rule_by_code_and_by_name_print_the_same(tmp_path):
    by_code = run_cli("rule", "TD001", cwd=tmp_path)
    by_name = run_cli("rule", "tensor-result-discarded", cwd=tmp_path)
    assert by_code.returncode == 0
    assert by_code.stdout == by_name.stdout
    assert by_code.stdout.startswith("TD001 tensor-result-discarded\n")
    for heading in ("What it catches", "Why is this bad?", "Example", "Use instead:"):
        assert f"\n{heading}\n" in by_code.stdout


def test_rule_in_chinese(tmp_path):
    result = run_cli("rule", "TD001", "--lang", "zh", cwd=tmp_path)
    assert "为什么有问题？" in result.stdout
    assert "返回" in result.stdout


def test_language_follows_the_locale(tmp_path):
    result = run_cli(
        "rule", "TD001", cwd=tmp_path, env={"TORCHDOCTOR_LANG": "", "LC_ALL": "zh_CN.UTF-8"}
    )
    assert "为什么有问题？" in result.stdout


def test_rule_json(tmp_path):
    data = json.loads(run_cli("rule", "TD001", "--format", "json", cwd=tmp_path).stdout)
    assert data["name"] == "tensor-result-discarded"
    assert data["fix"] == "unsafe"
    assert data["detectors"] == ["static"]
    assert "Example" in data["sections"]


def test_unknown_rule(tmp_path):
    result = run_cli("rule", "no-such-rule", cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown rule 'no-such-rule'" in result.stderr


def test_rules_lists_every_entry(tmp_path):
    result = run_cli("rules", cwd=tmp_path)
    assert result.returncode == 0
    listed = [line.split()[0] for line in result.stdout.splitlines()[1:]]
    assert listed == [p.code for p in all_pitfalls()]
    data = json.loads(run_cli("rules", "--format", "json", cwd=tmp_path).stdout)
    assert {row["name"] for row in data} == {p.name for p in all_pitfalls()}
    assert all({"code", "name", "title", "default", "detectors", "fix"} <= set(row) for row in data)


def test_no_command_prints_help(tmp_path):
    result = run_cli(cwd=tmp_path)
    assert result.returncode == 2
    assert "check" in result.stdout
