"""What `check` reads and writes on disk: discovery, the cache, the configuration, fixes, stdin.

Each case is a way a real tree, a real terminal or a real CI machine broke the doctor: a FIFO or
a link to /dev/zero named *.py, a directory it may not list, an exotic coding cookie, a cache
directory that is a symbolic link (or a cache file of the wrong shape), a broken pyproject.toml
of another project, fixes written through links, or over a file's owner and mode.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from torchdoctor.lint import files, runner
from torchdoctor.lint.cache import CACHE_DIR_NAME
from torchdoctor.lint.config import Settings
from torchdoctor.lint.source import UnwritableFile, write_in_place

DISCARDED = "import torch\nx = torch.randn(3)\nx.cuda()\n"
# A safe fix (reduce=False -> reduction='none') that `--fix` applies.
LEGACY_LOSS = "import torch\nimport torch.nn as nn\nc = nn.MSELoss(reduce=False)\n"
LEGACY_FIXED = 'import torch\nimport torch.nn as nn\nc = nn.MSELoss(reduction="none")\n'
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def check(*args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """`torchdoctor check ARGS` with bytes in and out, killed if it hangs."""
    env = {**os.environ, "NO_COLOR": "1", "TORCHDOCTOR_LANG": "en"}
    return subprocess.run(
        [sys.executable, "-m", "torchdoctor", "check", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        env=env,
        timeout=60,
    )


def findings_of(result: subprocess.CompletedProcess) -> dict[str, list[dict]]:
    by_path: dict[str, list[dict]] = {}
    for finding in json.loads(result.stdout):
        by_path.setdefault(finding["path"], []).append(finding)
    return by_path


def assert_clean_stderr(result: subprocess.CompletedProcess) -> None:
    err = result.stderr.decode()
    assert "Traceback" not in err and "internal error" not in err, err


# ---- reading only regular files -------------------------------------------------------------


@needs_fifo
def test_fifo_in_the_tree_or_named_is_a_finding_and_the_rest_is_checked(tmp_path):
    write(tmp_path / "a.py", DISCARDED)
    os.mkfifo(tmp_path / "p.py")
    for args in (["."], ["p.py", "a.py"]):
        result = check("--no-cache", "--format", "json", *args, cwd=tmp_path)
        assert result.returncode == 1
        assert_clean_stderr(result)
        found = findings_of(result)
        assert found["a.py"][0]["code"] == "TD001"
        assert found["p.py"][0]["name"] == "unreadable-file"
        assert "FIFO" in found["p.py"][0]["message"]


@needs_fifo
def test_a_fifo_named_like_a_shadowed_package_is_not_opened(tmp_path):
    # TD703 reads a neighbour named after an installed package (`tensorboard.py`) for the names
    # it defines: a FIFO of that name must not block the check, and still shadows the package.
    write(tmp_path / "train.py", "import torch\nfrom tensorboard import TensorBoard\n")
    os.mkfifo(tmp_path / "tensorboard.py")
    result = check("--no-cache", "--format", "json", "--select", "TD703", "train.py", cwd=tmp_path)
    assert_clean_stderr(result)
    assert [f["code"] for f in findings_of(result)["train.py"]] == ["TD703"]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_link_to_an_endless_device_is_a_finding(tmp_path):
    write(tmp_path / "a.py", DISCARDED)
    (tmp_path / "z.py").symlink_to("/dev/zero")
    result = check("--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert result.returncode == 1
    found = findings_of(result)
    assert "character device" in found["z.py"][0]["message"]
    assert found["a.py"][0]["code"] == "TD001"
    # The text report reads files again for excerpts: that must not read the device either.
    text = check("--no-cache", ".", cwd=tmp_path)
    assert text.returncode == 1 and b"z.py:1:1: TD701" in text.stdout


@pytest.mark.parametrize("cookie", ["punycode", "undefined", "rot13", "hex", "nope"])
def test_exotic_coding_cookie_is_a_finding_and_the_rest_is_checked(tmp_path, cookie):
    write(tmp_path / "odd.py", f"# coding: {cookie}\nimport torch\n")
    write(tmp_path / "a.py", DISCARDED)
    result = check("--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert_clean_stderr(result)
    found = findings_of(result)
    assert found["odd.py"][0]["name"] == "unreadable-file"
    assert found["a.py"][0]["code"] == "TD001"


@pytest.mark.parametrize("cookie", ["future_fstrings", "future-fstrings", "future_annotations"])
def test_a_syntax_backport_codec_is_read_as_utf8_and_checked(tmp_path, cookie):
    # FCGF's files: the codec is registered by a .pth of the `future-fstrings` package, which
    # the doctor's interpreter need not have; the text underneath is UTF-8.
    source = f"# -*- coding: {cookie} -*-\n# café\n{DISCARDED}print(f'{{1}}')\n"
    path = write(tmp_path / "a.py", source.encode("utf-8"))
    result = check("--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert_clean_stderr(result)
    assert [(f["code"], f["location"]["line"]) for f in findings_of(result)["a.py"]] == [
        ("TD001", 5)
    ]
    check("--no-cache", "--fix", "--unsafe-fixes", ".", cwd=tmp_path)
    assert path.read_bytes() == source.replace("x.cuda()", "x = x.cuda()").encode("utf-8")


def test_missing_path_is_one_error_line_and_the_rest_is_checked(tmp_path):
    write(tmp_path / "a.py", DISCARDED)
    result = check("--no-cache", "--format", "json", "nope.py", "a.py", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.decode() == "torchdoctor: error: nope.py: no such file or directory\n"
    assert list(findings_of(result)) == ["a.py"]


def test_file_reached_under_two_names_is_checked_once(tmp_path):
    write(tmp_path / "real.py", DISCARDED)
    (tmp_path / "alias.py").symlink_to("real.py")
    result = check("--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert list(findings_of(result)) == ["real.py"]


def test_gitignore_pattern_git_cannot_parse_is_skipped(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".gitignore", "\\\nskipped.py\n")
    write(tmp_path / "skipped.py", DISCARDED)
    write(tmp_path / "a.py", DISCARDED)
    result = check("--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert_clean_stderr(result)
    assert list(findings_of(result)) == ["a.py"]


# ---- directories that cannot be listed ------------------------------------------------------


def test_unlistable_directory_is_one_error_and_the_rest_is_found(tmp_path, monkeypatch):
    write(tmp_path / "a.py", DISCARDED)
    write(tmp_path / "sub" / "hidden.py", DISCARDED)
    write(tmp_path / "other" / "b.py", DISCARDED)
    real_scandir = os.scandir

    def scandir(path):  # what EACCES looks like to a user who is not root
        if Path(path).name in ("sub", "other"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    found = files.discover([str(tmp_path), str(tmp_path / "other")], [], tmp_path)
    assert found.files == [tmp_path / "a.py"]
    assert found.errors == [  # once each, though `other` was searched twice
        f"{tmp_path / name}: cannot list this directory (permission denied); "
        "the files under it were not checked"
        for name in ("other", "sub")
    ]


def _nobody_can_run_the_doctor(directory: Path) -> str | None:
    """Why a check as user 65534 cannot run here, or None when it can."""
    if not IS_ROOT or shutil.which("setpriv") is None:
        return "needs root and setpriv to run the check as another user"
    probe = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            sys.executable,
            "-c",
            "import pathspec, torchdoctor.lint.command",
        ],
        cwd=directory,
        capture_output=True,
        env=_pythonpath(),
        timeout=60,
    )
    if probe.returncode != 0:
        return "this interpreter or the package cannot be read by user 65534"
    return None


def _pythonpath() -> dict:
    import pathspec

    import torchdoctor

    roots = [
        str(Path(module.__file__).resolve().parent.parent) for module in (torchdoctor, pathspec)
    ]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(roots), "PYTHONDONTWRITEBYTECODE": "1"}


def test_unreadable_subdirectory_as_a_user_is_reported_and_the_rest_checked():
    # pytest's tmp_path lies under a directory only its owner may enter: make one user 65534 can.
    directory = Path(tempfile.mkdtemp())
    try:
        reason = _nobody_can_run_the_doctor(directory)
        if reason:
            pytest.skip(reason)
        write(directory / "a.py", DISCARDED)
        (directory / "sub").mkdir(mode=0)
        for path in (directory, directory / "a.py", directory / "sub"):
            os.chown(path, 65534, 65534)
        result = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                sys.executable,
                "-m",
                "torchdoctor",
                "check",
                "--no-cache",
                ".",
            ],
            cwd=directory,
            capture_output=True,
            text=True,
            env=_pythonpath(),
            timeout=60,
        )
        assert result.returncode == 2
        assert result.stderr == (
            "torchdoctor: error: sub: cannot list this directory (permission "
            "denied); the files under it were not checked\n"
        )
        assert "a.py:3:1: TD001" in result.stdout
    finally:
        if (directory / "sub").exists():
            os.chmod(directory / "sub", 0o700)
        shutil.rmtree(directory)


# ---- the cache: only its own directory, only its own files ----------------------------------


def test_cache_directory_that_is_a_link_is_not_used(tmp_path):
    victim = tmp_path / "victim"
    for i in range(10):
        write(victim / f"d{i}.json", f'{{"n": {i}}}')
        os.utime(victim / f"d{i}.json", (1_500_000_000 + i, 1_500_000_000 + i))
    before = {p.name: p.read_bytes() for p in victim.iterdir()}
    repo = tmp_path / "repo"
    write(repo / "t.py", DISCARDED)
    (repo / CACHE_DIR_NAME).symlink_to("../victim")
    result = check("t.py", cwd=repo)
    assert result.returncode == 1
    assert result.stderr.decode().count("\n") == 1
    assert "is a symbolic link, not a directory: the cache is not used" in result.stderr.decode()
    assert {p.name: p.read_bytes() for p in victim.iterdir()} == before


def test_cache_file_that_is_a_link_is_neither_read_nor_replaced(tmp_path):
    write(tmp_path / "a.py", DISCARDED)
    check("a.py", cwd=tmp_path)
    [cache_file] = (tmp_path / CACHE_DIR_NAME).glob("?" * 32 + ".json")
    outside = write(tmp_path / "outside.json", json.dumps({"a.py": ["x", []]}))
    cache_file.unlink()
    cache_file.symlink_to(outside)
    result = check("--format", "json", "a.py", cwd=tmp_path)
    assert result.returncode == 1 and findings_of(result)["a.py"][0]["code"] == "TD001"
    assert "not a regular file: the cache is not used" in result.stderr.decode()
    assert cache_file.is_symlink() and outside.read_text() == json.dumps({"a.py": ["x", []]})


def test_cache_path_that_is_a_file_is_left_alone(tmp_path):
    write(tmp_path / "a.py", DISCARDED)
    write(tmp_path / CACHE_DIR_NAME, "mine\n")
    result = check("a.py", cwd=tmp_path)
    assert result.returncode == 1
    assert_clean_stderr(result)
    assert (tmp_path / CACHE_DIR_NAME).read_text() == "mine\n"


def test_cache_deletes_only_its_own_old_files(tmp_path):
    write(tmp_path / "a.py", DISCARDED)
    cache_dir = tmp_path / CACHE_DIR_NAME
    # Settings files as this version names them (32 digits) and as older ones did (16).
    own_old = [write(cache_dir / f"{i:032x}.json", "{}") for i in range(10)]
    own_old += [write(cache_dir / f"{i:016x}.json", "{}") for i in range(10, 12)]
    old_facts = [write(cache_dir / f"facts-{i:016x}.json", "{}") for i in range(3)]
    for i, path in enumerate(own_old + old_facts):
        os.utime(path, (1_500_000_000 + i, 1_500_000_000 + i))
    others = [
        write(cache_dir / name, "keep")
        for name in ("notes.json", "0123.json", "x.tmp", "facts-1.json", "facts.json")
    ]
    check("a.py", cwd=tmp_path)
    assert all(path.read_text() == "keep" for path in others)
    remaining = sorted(p for p in own_old if p.exists())
    assert remaining == sorted(own_old[-6:])  # six old ones and the new file: seven
    assert [p for p in old_facts if p.exists()] == old_facts[-1:]  # one old and the new one
    assert len(list(cache_dir.glob("facts-" + "?" * 16 + ".json"))) == 2


# `torch.save(model)` of a model whose class another file defines (TD503): the finding rests
# on what models.py says, which the cache keeps per file.
MODELS_PY = "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    pass\n"
NOT_A_MODEL_PY = "class Net:\n    pass\n"
TRAIN_PY = "import torch\nfrom models import Net\n\nmodel = Net()\ntorch.save(model, 'm.pt')\n"


def test_a_rerun_sees_a_changed_project_fact_from_another_file(tmp_path):
    write(tmp_path / "pyproject.toml", "")
    models = write(tmp_path / "models.py", MODELS_PY)
    write(tmp_path / "train.py", TRAIN_PY)
    args = ("--select", "TD503", "--format", "json", ".")
    assert "train.py" in findings_of(check(*args, cwd=tmp_path))
    assert "train.py" in findings_of(check(*args, cwd=tmp_path))  # from the cache
    models.write_text(NOT_A_MODEL_PY)
    assert "train.py" not in findings_of(check(*args, cwd=tmp_path))
    models.write_text(MODELS_PY)
    assert "train.py" in findings_of(check(*args, cwd=tmp_path))


# A file changed this shortly before a run may change again within the file system's clock
# tick: its signature is trusted only from a later run (lint/cache.py, `_RACY_NS`).
PAST_THE_RACY_WINDOW_S = 2.2


def _warm_runs(tmp_path: Path) -> tuple[str, ...]:
    """A project whose files are old enough for their signatures to be kept, checked twice."""
    write(tmp_path / "pyproject.toml", "")
    write(tmp_path / "models.py", MODELS_PY)
    write(tmp_path / "train.py", TRAIN_PY)
    write(tmp_path / "other.py", DISCARDED)
    time.sleep(PAST_THE_RACY_WINDOW_S)
    args = ("--select", "TD001,TD503", "--format", "json", ".")
    for _ in range(2):  # the first keeps the signatures, the second answers from them
        found = findings_of(check(*args, cwd=tmp_path))
        assert sorted(found) == ["other.py", "train.py"]
    return args


def test_a_rerun_sees_a_change_that_keeps_the_size_and_puts_the_time_back(tmp_path):
    args = _warm_runs(tmp_path)
    other = tmp_path / "other.py"
    before = other.stat()
    other.write_text(DISCARDED.replace("x.cuda()", "#.cuda()"))  # same size
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))  # as `cp -p` or rsync do
    result = check(*args, cwd=tmp_path)
    assert_clean_stderr(result)
    assert sorted(findings_of(result)) == ["train.py"]


def test_a_rerun_sees_a_project_fact_changed_in_an_old_file(tmp_path):
    args = _warm_runs(tmp_path)
    (tmp_path / "models.py").write_text(NOT_A_MODEL_PY)
    assert sorted(findings_of(check(*args, cwd=tmp_path))) == ["other.py"]
    (tmp_path / "models.py").write_text(MODELS_PY)
    assert sorted(findings_of(check(*args, cwd=tmp_path))) == ["other.py", "train.py"]


def test_a_warm_rerun_reads_no_unchanged_file(tmp_path, monkeypatch):
    _warm_runs(tmp_path)
    read = []
    original = runner.read_regular_file
    monkeypatch.setattr(
        runner, "read_regular_file", lambda path, *a: read.append(path) or original(path, *a)
    )
    settings = Settings(root=tmp_path)
    paths = sorted(tmp_path.glob("*.py"))
    job = runner.Job(codes=frozenset({"TD001", "TD503"}))
    outcomes = runner.check_files(
        paths, settings, job, 1, use_cache=True, cwd=tmp_path, scopes=[tmp_path]
    )
    assert read == []
    assert sorted(o.path for o in outcomes if o.findings) == ["other.py", "train.py"]
    write(tmp_path / "other.py", DISCARDED + "y = 1\n")
    outcomes = runner.check_files(
        paths, settings, job, 1, use_cache=True, cwd=tmp_path, scopes=[tmp_path]
    )
    assert read == [tmp_path / "other.py"] * 2  # its digest, then its check
    assert sorted(o.path for o in outcomes if o.findings) == ["other.py", "train.py"]


@pytest.mark.parametrize(
    "damage",
    [
        lambda entry: [entry[0], {"module_classes": [1]}],
        lambda entry: [entry[0], 5],
        lambda entry: [entry[0], {**entry[1], "star_reexports": [["a"]]}],
        lambda entry: [entry[0], {**entry[1], "digest": 7}],
    ],
    ids=["wrong-item", "not-an-object", "wrong-pair", "wrong-digest"],
)
def test_a_damaged_project_entry_is_made_again(tmp_path, damage):
    args = _warm_runs(tmp_path)
    (facts_file,) = (tmp_path / CACHE_DIR_NAME).glob("facts-*.json")
    stored = json.loads(facts_file.read_text())
    entry = stored["\0project"]
    facts_file.write_text(json.dumps({**stored, "\0project": damage(entry)}))
    result = check(*args, cwd=tmp_path)
    assert_clean_stderr(result)
    assert sorted(findings_of(result)) == ["other.py", "train.py"]
    assert json.loads(facts_file.read_text())["\0project"] == entry


@pytest.mark.parametrize("damage", ["[1, 2]", '{"models.py": ["x", 5]}', "not json"])
def test_a_damaged_facts_file_is_read_again_from_the_sources(tmp_path, damage):
    write(tmp_path / "pyproject.toml", "")
    write(tmp_path / "models.py", MODELS_PY)
    write(tmp_path / "train.py", TRAIN_PY)
    args = ("--select", "TD503", "--format", "json", ".")
    check(*args, cwd=tmp_path)
    (facts_file,) = (tmp_path / CACHE_DIR_NAME).glob("facts-*.json")
    stored = json.loads(facts_file.read_text())
    digest = stored["models.py"][0]
    facts_file.write_text(damage.replace('"x"', json.dumps(digest)))
    # A cached answer for train.py would hide the damage: start its findings afresh.
    for settings_file in (tmp_path / CACHE_DIR_NAME).glob("?" * 32 + ".json"):
        settings_file.unlink()
    result = check(*args, cwd=tmp_path)
    assert_clean_stderr(result)
    assert "train.py" in findings_of(result)
    assert json.loads(facts_file.read_text())["models.py"][0] == digest  # rewritten whole


@pytest.mark.parametrize(
    "damage",
    [
        lambda data, key: {key: 5},
        lambda data, key: [1, 2],
        lambda data, key: {key: [data[key][0], 5]},
        lambda data, key: {key: [data[key][0], [{"code": 5}]]},
        lambda data, key: {key: [data[key][0], [{**data[key][1][0], "line": "3"}]]},
        lambda data, key: {key: [data[key][0], [{**data[key][1][0], "column": 10**12}]]},
        lambda data, key: {key: [data[key][0], [{**data[key][1][0], "fix": {"edits": 1}}]]},
        # An entry of an older doctor, bound to the language of its run.
        lambda data, key: {key: [*data[key], "zh"]},
    ],
    ids=[
        "int",
        "array",
        "findings-int",
        "finding-shape",
        "line-type",
        "huge-column",
        "fix-shape",
        "bound-to-a-language",
    ],
)
def test_cache_entry_of_the_wrong_shape_is_a_miss_and_rewritten(tmp_path, damage):
    write(tmp_path / "a.py", DISCARDED)
    check("a.py", cwd=tmp_path)
    [cache_file] = (tmp_path / CACHE_DIR_NAME).glob("?" * 32 + ".json")
    good = json.loads(cache_file.read_text())
    cache_file.write_text(json.dumps(damage(good, "a.py")))
    for _ in range(2):
        result = check("--format", "json", "a.py", cwd=tmp_path)
        assert result.returncode == 1
        assert_clean_stderr(result)
        assert [f["line"] for f in findings_of(result)["a.py"]] == [3]
    assert json.loads(cache_file.read_text()) == good


# ---- the cache: where it lives, and that it does not grow -----------------------------------


@pytest.mark.parametrize("marker", [".git", "pyproject.toml", "setup.py", "setup.cfg", None])
def test_cache_lives_at_the_project_root_not_in_the_current_directory(tmp_path, marker):
    project = tmp_path / "proj"
    write(project / "src" / "pkg" / "a.py", DISCARDED)
    if marker == ".git":
        (project / ".git").mkdir()
    elif marker:
        write(project / marker, "")
    checked = project / "src"
    check("proj/src", cwd=tmp_path)
    expected = project if marker else checked
    assert list((expected / CACHE_DIR_NAME).glob("?" * 32 + ".json"))
    caches = sorted({p.parent for p in tmp_path.rglob(f"{CACHE_DIR_NAME}/*.json")})
    assert caches == [expected / CACHE_DIR_NAME]


def test_cache_of_a_single_file_and_of_a_configured_project(tmp_path):
    write(tmp_path / "lone" / "a.py", DISCARDED)
    check(str(tmp_path / "lone" / "a.py"), cwd=tmp_path)
    assert (tmp_path / "lone" / CACHE_DIR_NAME).is_dir()
    # The configuration's directory is the root, even under a nested marker.
    write(tmp_path / "mono" / "pyproject.toml", "[tool.torchdoctor]\n")
    write(tmp_path / "mono" / "pkg" / "setup.py", "")
    write(tmp_path / "mono" / "pkg" / "b.py", DISCARDED)
    check("pkg", cwd=tmp_path / "mono")
    assert (tmp_path / "mono" / CACHE_DIR_NAME).is_dir()
    assert not (tmp_path / "mono" / "pkg" / CACHE_DIR_NAME).exists()


def test_cache_drops_entries_of_files_gone_and_keeps_those_not_checked(tmp_path):
    (tmp_path / ".git").mkdir()
    for name in ("src/a.py", "src/b.py", "tests/t.py"):
        write(tmp_path / name, DISCARDED)
    check(".", cwd=tmp_path)
    [cache_file] = (tmp_path / CACHE_DIR_NAME).glob("?" * 32 + ".json")
    assert sorted(json.loads(cache_file.read_text())) == ["src/a.py", "src/b.py", "tests/t.py"]
    (tmp_path / "src" / "b.py").unlink()
    check("src", cwd=tmp_path)  # nothing new to store: the missing entry alone rewrites it
    assert sorted(json.loads(cache_file.read_text())) == ["src/a.py", "tests/t.py"]
    (tmp_path / "tests" / "t.py").unlink()
    write(tmp_path / "src" / "a.py", DISCARDED + "x.cpu()\n")
    check("src/a.py", cwd=tmp_path)  # a file outside what was checked is dropped once it is gone
    assert sorted(json.loads(cache_file.read_text())) == ["src/a.py"]


# ---- configuration: one line per mistake ----------------------------------------------------


@pytest.mark.parametrize(
    "config, message",
    [
        ('[tool.torchdoctor]\nlang = ["en"]\n', "lang must be one of 'en', 'zh', not an array"),
        ('[tool.torchdoctor]\nlang = "fr"\n', "lang must be one of 'en', 'zh', not 'fr'"),
        ("[tool]\ntorchdoctor = 5\n", "[tool.torchdoctor] must be a table, not an integer"),
        ('[tool.torchdoctor]\nexclude = ["\\\\"]\n', "exclude: invalid pattern '\\\\'"),
        ("[tool.torchdoctor]\nexclude = 5\n", "exclude must be a list of strings, not an integer"),
        (
            "[tool.torchdoctor]\nextend-exclude = [true]\n",
            "extend-exclude must be a list of strings, not a list holding a boolean",
        ),
        ("[tool.torchdoctor]\nselect = [1]\n", "select must be a list of strings"),
        ("[tool.torchdoctor]\nignore = {a = 1}\n", "ignore must be a list of strings, not a table"),
        (
            "[tool.torchdoctor]\nper-file-ignores = 5\n",
            "per-file-ignores must be a table of glob patterns to lists of rules, not an integer",
        ),
        (
            '[tool.torchdoctor]\nper-file-ignores = {"t/*" = 5}\n',
            "per-file-ignores.'t/*' must be a list of strings, not an integer",
        ),
        (
            '[tool.torchdoctor]\nper-file-ignores = {"\\\\" = ["TD001"]}\n',
            "per-file-ignores: invalid pattern '\\\\'",
        ),
    ],
)
def test_configuration_of_the_wrong_type_is_one_usage_error(tmp_path, config, message):
    write(tmp_path / "pyproject.toml", config)
    write(tmp_path / "a.py", DISCARDED)
    result = check("--no-cache", "a.py", cwd=tmp_path)
    assert result.returncode == 2
    err = result.stderr.decode()
    assert err.startswith("torchdoctor: error: ") and err.count("\n") == 1, err
    assert message in err


def test_invalid_exclude_pattern_on_the_command_line_is_a_usage_error(tmp_path):
    write(tmp_path / "a.py", DISCARDED)
    result = check("--no-cache", "--exclude", "\\", ".", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.decode() == "torchdoctor: error: exclude: invalid pattern '\\\\'\n"


def test_broken_pyproject_of_an_unrelated_parent_is_passed_over(tmp_path):
    write(tmp_path / "pyproject.toml", "[project\nname = 'other'\n")
    write(tmp_path / "proj" / "a.py", DISCARDED)
    result = check("--no-cache", "a.py", cwd=tmp_path / "proj")
    assert result.returncode == 1
    assert_clean_stderr(result)
    assert result.stderr == b""
    # One that configures torchdoctor is the user's own mistake: said, exit 2.
    write(tmp_path / "pyproject.toml", "[tool.torchdoctor]\nselect = [\n")
    result = check("--no-cache", "a.py", cwd=tmp_path / "proj")
    assert result.returncode == 2
    assert "pyproject.toml: invalid TOML" in result.stderr.decode()


# ---- fixes: in place, inside the checked paths, only over what was read -----------------------


def test_fix_keeps_the_files_identity_mode_and_owner(tmp_path):
    path = write(tmp_path / "a.py", LEGACY_LOSS)
    os.chmod(path, 0o640)
    os.link(path, tmp_path / "hard.py.txt")
    if IS_ROOT:
        os.chown(path, 65534, 65534)
    before = os.stat(path)
    result = check("--no-cache", "--fix", "a.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    after = os.stat(path)
    assert path.read_text() == LEGACY_FIXED
    assert (
        tmp_path / "hard.py.txt"
    ).read_text() == LEGACY_FIXED  # the same file, by its other name
    assert (after.st_ino, after.st_uid, after.st_gid) == (
        before.st_ino,
        before.st_uid,
        before.st_gid,
    )
    assert stat.S_IMODE(after.st_mode) == 0o640


def test_fix_writes_through_a_link_inside_the_checked_tree(tmp_path):
    write(tmp_path / "proj" / "real.py", LEGACY_LOSS)
    (tmp_path / "proj" / "link.py").symlink_to("real.py")
    result = check("--no-cache", "--fix", "proj/link.py", cwd=tmp_path)
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert (tmp_path / "proj" / "link.py").is_symlink()
    assert (tmp_path / "proj" / "real.py").read_text() == LEGACY_FIXED


@pytest.mark.parametrize("named", ["proj", "proj/link.py"])
def test_fix_never_writes_through_a_link_out_of_the_checked_paths(tmp_path, named):
    shared = write(tmp_path / "shared" / "real.py", LEGACY_LOSS)
    link = tmp_path / "proj" / "link.py"
    link.parent.mkdir()
    link.symlink_to("../shared/real.py")
    result = check("--no-cache", "--fix", named, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.decode() == (
        f"torchdoctor: warning: proj/link.py: not fixed: a symbolic "
        f"link to {shared.resolve()}, outside the checked paths\n"
    )
    assert b"proj/link.py:3:16: TD802" in result.stdout
    assert link.is_symlink() and shared.read_text() == LEGACY_LOSS


def test_fix_is_not_written_over_a_file_changed_since_it_was_read(tmp_path):
    path = write(tmp_path / "a.py", "new content from the editor\n")
    with pytest.raises(UnwritableFile, match="changed on disk"):
        write_in_place(path, b"what was read\n", b"fixed\n")
    assert path.read_text() == "new content from the editor\n"
    write_in_place(path, b"new content from the editor\n", b"short\n")
    assert path.read_bytes() == b"short\n"  # the old tail is cut


# ---- stdin: decoded like a file -------------------------------------------------------------


def test_stdin_honours_a_utf8_bom_and_keeps_it_when_fixing(tmp_path):
    source = b"\xef\xbb\xbf" + LEGACY_LOSS.encode()
    result = check(
        "--no-cache", "--format", "json", "--stdin-filename", "a.py", cwd=tmp_path, stdin=source
    )
    assert [f["code"] for f in json.loads(result.stdout)] == ["TD802"]
    fixed = check("--no-cache", "--fix", "--stdin-filename", "a.py", cwd=tmp_path, stdin=source)
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout == b"\xef\xbb\xbf" + LEGACY_FIXED.encode()


def test_stdin_honours_a_coding_cookie_and_fixes_in_that_encoding(tmp_path):
    source = ("# -*- coding: latin-1 -*-\n# café\n" + LEGACY_LOSS).encode("latin-1")
    result = check(
        "--no-cache", "--format", "json", "--stdin-filename", "a.py", cwd=tmp_path, stdin=source
    )
    assert [(f["code"], f["line"]) for f in json.loads(result.stdout)] == [("TD802", 5)]
    fixed = check("--no-cache", "--fix", "--stdin-filename", "a.py", cwd=tmp_path, stdin=source)
    assert fixed.stdout == ("# -*- coding: latin-1 -*-\n# café\n" + LEGACY_FIXED).encode("latin-1")


def test_stdin_that_cannot_be_decoded_is_a_finding_and_fix_echoes_it(tmp_path):
    source = b"# coding: punycode\nimport torch\n"
    result = check(
        "--no-cache", "--format", "json", "--stdin-filename", "a.py", cwd=tmp_path, stdin=source
    )
    assert [f["name"] for f in json.loads(result.stdout)] == ["unreadable-file"]
    fixed = check("--no-cache", "--fix", "--stdin-filename", "a.py", cwd=tmp_path, stdin=source)
    assert fixed.stdout == source


def test_a_clean_but_incomplete_check_never_says_all_checks_passed(tmp_path):
    write(tmp_path / "clean.py", "import torch\n")
    result = check("--no-cache", "nope.py", "clean.py", cwd=tmp_path)
    assert result.returncode == 2
    out = result.stdout.decode()
    assert "All checks passed" not in out
    assert out.strip() == "No problems found, but the check is incomplete: 1 error above."
