"""Each file is checked with the settings of the nearest pyproject.toml with a [tool.torchdoctor]
table above it, as ruff does: sub-projects of one repository keep their own settings in one run."""

from __future__ import annotations

import json

from conftest import run_cli

# A discarded `.cuda()` (TD001) and a `.data[0]` on a loss (TD101), both on by default.
BAD = "import torch\nx = torch.zeros(3)\nx.cuda()\nloss = x.sum()\nv = loss.data[0]\n"


def _monorepo(tmp_path):
    for name in ("vision", "audio"):
        (tmp_path / name / "vendor").mkdir(parents=True)
        (tmp_path / name / "train.py").write_text(BAD)
        (tmp_path / name / "vendor" / "lib.py").write_text(BAD)
    (tmp_path / "vision" / "pyproject.toml").write_text(
        '[project]\nname = "vision"\n\n[tool.torchdoctor]\nselect = ["TD001"]\n'
        'exclude = ["vendor/"]\n'
    )
    (tmp_path / "audio" / "pyproject.toml").write_text(
        '[tool.torchdoctor]\nselect = ["loss-data-index"]\n'
    )
    (tmp_path / "tools.py").write_text(BAD)


def _found(result) -> list[tuple[str, str]]:
    return [(f["path"], f["code"]) for f in json.loads(result.stdout)]


def test_two_sub_projects_keep_their_own_select_and_exclude_in_one_run(tmp_path):
    _monorepo(tmp_path)

    first = run_cli("check", "--format", "json", ".", cwd=tmp_path)
    again = run_cli("check", "--format", "json", ".", cwd=tmp_path)  # from the cache

    expected = [
        ("audio/train.py", "TD101"),
        ("audio/vendor/lib.py", "TD101"),
        ("tools.py", "TD001"),  # no config above it: the defaults
        ("tools.py", "TD101"),
        ("vision/train.py", "TD001"),  # vision/vendor/ is excluded by vision's config
    ]
    assert (first.returncode, sorted(_found(first))) == (1, expected), first.stderr
    assert sorted(_found(again)) == expected


def test_the_config_above_the_file_wins_over_the_one_above_the_current_directory(tmp_path):
    _monorepo(tmp_path)

    result = run_cli("check", "--no-cache", "--format", "json", "../audio", cwd=tmp_path / "vision")

    assert _found(result) == [
        (str(tmp_path / "audio" / "train.py"), "TD101"),
        (str(tmp_path / "audio" / "vendor" / "lib.py"), "TD101"),
    ]


def test_command_line_options_override_every_config(tmp_path):
    _monorepo(tmp_path)

    selected = run_cli(
        "check", "--no-cache", "--format", "json", "--select", "TD101", ".", cwd=tmp_path
    )
    ignored = run_cli(
        "check", "--no-cache", "--format", "json", "--ignore", "TD001", ".", cwd=tmp_path
    )

    assert {code for _, code in _found(selected)} == {"TD101"}
    assert ("vision/train.py", "TD101") in _found(selected)
    assert ("vision/vendor/lib.py", "TD101") not in _found(selected)  # its exclude still holds
    assert {code for _, code in _found(ignored)} == {"TD101"}


def test_an_explicit_config_applies_to_every_file(tmp_path):
    _monorepo(tmp_path)
    (tmp_path / "strict.toml").write_text('[tool.torchdoctor]\nselect = ["TD001"]\n')

    result = run_cli(
        "check", "--no-cache", "--format", "json", "--config", "strict.toml", ".", cwd=tmp_path
    )

    assert {code for _, code in _found(result)} == {"TD001"}
    assert ("audio/train.py", "TD001") in _found(result)
    assert ("vision/vendor/lib.py", "TD001") in _found(result)


def test_stdin_is_checked_with_the_config_above_the_file_it_names(tmp_path):
    _monorepo(tmp_path)

    result = run_cli(
        "check", "--format", "json", "--stdin-filename", "audio/train.py", cwd=tmp_path, stdin=BAD
    )

    assert _found(result) == [("audio/train.py", "TD101")]


def test_a_broken_sub_project_config_is_one_error_and_the_rest_is_checked(tmp_path):
    _monorepo(tmp_path)
    (tmp_path / "audio" / "pyproject.toml").write_text('[tool.torchdoctor]\nselectt = ["TD1"]\n')

    result = run_cli("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)

    assert result.returncode == 2
    assert result.stderr.count("unknown key(s) in [tool.torchdoctor]: selectt") == 1
    assert "Traceback" not in result.stderr
    assert sorted(_found(result)) == [
        ("tools.py", "TD001"),
        ("tools.py", "TD101"),
        ("vision/train.py", "TD001"),
    ]


def test_sub_projects_with_the_same_rules_keep_their_own_per_file_ignores(tmp_path):
    for name, ignored in (("left", "TD001"), ("right", "TD101")):
        (tmp_path / name / "tests").mkdir(parents=True)
        (tmp_path / name / "tests" / "test_it.py").write_text(BAD)
        (tmp_path / name / "pyproject.toml").write_text(
            f'[tool.torchdoctor]\nper-file-ignores = {{ "tests/*" = ["{ignored}"] }}\n'
        )

    for _ in range(2):  # checked, then answered from the cache
        result = run_cli("check", "--format", "json", ".", cwd=tmp_path)
        assert sorted(_found(result)) == [
            ("left/tests/test_it.py", "TD101"),
            ("right/tests/test_it.py", "TD001"),
        ]
    # One cache file for the one set of rules holds both sub-projects' files: neither check
    # drops the other's entries (which would make every run check everything again).
    [cache] = (tmp_path / ".torchdoctor_cache").glob("?" * 32 + ".json")
    assert set(json.loads(cache.read_text())) == {"left/tests/test_it.py", "right/tests/test_it.py"}


def test_the_python_api_reads_the_nearest_config_of_each_file(tmp_path, monkeypatch):
    import torchdoctor

    _monorepo(tmp_path)
    monkeypatch.chdir(tmp_path / "vision")

    findings = torchdoctor.check(str(tmp_path / "audio"), str(tmp_path / "vision"))
    piped = torchdoctor.check(source=BAD, filename=str(tmp_path / "audio" / "train.py"))

    assert sorted((f.path.replace(str(tmp_path), ""), f.code) for f in findings) == [
        ("/audio/train.py", "TD101"),
        ("/audio/vendor/lib.py", "TD101"),
        ("train.py", "TD001"),
    ]
    assert [f.code for f in piped] == ["TD101"]
