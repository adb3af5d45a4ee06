"""`torchdoctor run` behaves like python: the same `sys.argv[0]`, `__file__`, `sys.path`, the same
one-line refusals and exit codes; its report lands where it was asked for, from the process that
started the watch, also when the program is ended by SIGTERM or os._exit."""

from __future__ import annotations

import json
import os
import py_compile
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import import_torch

import_torch()

ENV = {**os.environ, "NO_COLOR": "1", "TORCHDOCTOR_LANG": "en"}
CONSOLE_SCRIPT = Path(sys.executable).with_name("torchdoctor")
LAUNCHERS = {"python -m torchdoctor": [sys.executable, "-m", "torchdoctor"]}
if CONSOLE_SCRIPT.exists():
    LAUNCHERS["torchdoctor"] = [str(CONSOLE_SCRIPT)]

PROBE = """\
import json, os, sys
main = sys.modules["__main__"]
print(json.dumps({
    "argv": sys.argv, "file": globals().get("__file__"), "path": sys.path,
    "name": __name__, "package": __package__, "spec": __spec__ and __spec__.name,
    "loader": type(__loader__).__name__,
    "cached": globals().get("__cached__"), "main_is_this": main.__dict__ is globals(),
}))
"""
STEPS = """\
import torch
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    optimizer.zero_grad()
    model(torch.ones(4, 2)).sum().backward()
    optimizer.step()
"""


def python(*args, cwd, stdin=None):
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        input=stdin,
        env=ENV,
        timeout=120,
    )


def doctor(*args, cwd, stdin=None, launcher="python -m torchdoctor", env=None):
    return subprocess.run(
        [*LAUNCHERS[launcher], *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        input=stdin,
        env={**ENV, **(env or {})},
        timeout=120,
    )


@pytest.fixture
def doctor_here(monkeypatch, capsys):
    """The command line in this process, for what needs no interpreter of its own (torch is
    imported once): (exit code, stdout, stderr)."""
    from torchdoctor.cli import main

    def run(*args, cwd):
        monkeypatch.chdir(cwd)
        monkeypatch.setenv("TORCHDOCTOR_LANG", "en")
        code = main(list(args))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


@pytest.fixture
def tree(tmp_path):
    """A script, a package, a directory and a zip file with __main__.py, a symlink, a .pyc."""
    (tmp_path / "s.py").write_text(PROBE)
    (tmp_path / "sub").mkdir()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text(PROBE)
    (tmp_path / "pkg" / "__main__.py").write_text(PROBE)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__main__.py").write_text(PROBE)
    with zipfile.ZipFile(tmp_path / "app.zip", "w") as archive:
        archive.writestr("__main__.py", PROBE)
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "t.py").write_text(PROBE)
    if hasattr(os, "symlink"):
        os.symlink(tmp_path / "real", tmp_path / "linked")
    py_compile.compile(str(tmp_path / "s.py"), cfile=str(tmp_path / "compiled.pyc"))
    return tmp_path


FORMS = [
    "s.py",
    "./s.py",
    "sub/../s.py",
    "ABS/s.py",
    "linked/t.py",
    "app",
    "app/",
    "app.zip",
    "compiled.pyc",
    "-m pkg.mod",
    "-m pkg",
    "-",
    "CWD .",
]


# The launcher decides what sys.path[0] was before the program's entry took its place.
CASES = [(form, "python -m torchdoctor") for form in FORMS] + [
    (form, "torchdoctor") for form in ("s.py", "app", "-m pkg.mod") if "torchdoctor" in LAUNCHERS
]


@pytest.mark.parametrize("form,launcher", CASES)
def test_program_sees_what_python_gives(form, launcher, tree):
    """sys.argv (argv[0] as typed, the module's file for -m), __file__ (absolute, not
    normalised), the whole sys.path, __main__'s attributes: equal to plain python's."""
    if form.startswith("linked") and not (tree / "linked").exists():
        pytest.skip("no symlinks here")
    cwd = tree / "app" if form.startswith("CWD") else tree
    args = form.replace("ABS", str(tree)).replace("CWD ", "").split() + ["--flag", "x"]
    stdin = PROBE if form == "-" else None
    expected = python(*args, cwd=cwd, stdin=stdin)
    assert expected.returncode == 0, expected.stderr
    result = doctor("run", *args, cwd=cwd, stdin=stdin, launcher=launcher)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == json.loads(expected.stdout)


@pytest.mark.parametrize(
    "form,code",
    [
        ("nope.py", 2),
        ("./nope.py", 2),
        ("sub", 1),
        ("", 1),
        ("-m nosuchmodule", 1),
        ("-m ", 1),
        ("-m pkg.nosuch", 1),
        ("-m sub", 1),
        ("-m .relative", 1),
    ],
)
def test_program_that_cannot_start_is_python_s_one_line(form, code, tree):
    """Python's own message (after the program's name) and exit code; nothing is watched,
    no summary, no report."""
    (tree / "sub" / "__init__.py").write_text("")  # -m sub: a package without __main__
    args = form.split(" ")
    expected = python(*args, cwd=tree)
    assert expected.returncode == code
    result = doctor("run", "--report-json", "r.json", *args, cwd=tree)
    assert result.returncode == code
    assert result.stdout == ""
    assert result.stderr == "torchdoctor: " + expected.stderr.split(": ", 1)[1]
    assert result.stderr.count("\n") == 1
    assert not (tree / "r.json").exists()


def test_syntax_error_is_the_programs_crash(tmp_path):
    (tmp_path / "bad.py").write_text("x = (\n")
    result = doctor("run", "--report-json", "r.json", "bad.py", cwd=tmp_path)
    assert result.returncode == python("bad.py", cwd=tmp_path).returncode == 1
    assert "SyntaxError" in result.stderr
    assert json.loads((tmp_path / "r.json").read_text())["exit_code"] == 1


def _fake_torch(tmp_path) -> dict:
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('torch is not installed here')\n")
    return {"PYTHONPATH": str(tmp_path / "fake")}


def test_run_without_torch_says_what_to_install(tmp_path):
    (tmp_path / "s.py").write_text("open('ran', 'w').close()\n")
    result = doctor("run", "s.py", cwd=tmp_path, env=_fake_torch(tmp_path))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("torchdoctor: error: run needs PyTorch")
    assert "pip install torch" in result.stderr
    assert not (tmp_path / "ran").exists()


def test_run_where_torch_is_not_installed(tmp_path):
    (tmp_path / "s.py").write_text("open('ran', 'w').close()\n")
    probe = (
        "import sys; sys.modules['torch'] = None\n"  # what python does for a missing package
        "from torchdoctor.cli import main; sys.exit(main(['run', 's.py']))"
    )
    result = python("-c", probe, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        "torchdoctor: error: run needs PyTorch, which is not installed here (pip install torch)\n"
    )
    assert not (tmp_path / "ran").exists()


# ---- the report --------------------------------------------------------------------------------


def test_relative_report_paths_do_not_follow_the_programs_chdir(tmp_path, doctor_here):
    (tmp_path / "s.py").write_text(STEPS + "import os\nos.makedirs('sub')\nos.chdir('sub')\n")
    code, out, err = doctor_here(
        "run", "--report-json", "r.json", "--report-html", "r.html", "s.py", cwd=tmp_path
    )
    assert code == 0, err
    assert json.loads((tmp_path / "r.json").read_text())["exit_code"] == 0
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == []


@pytest.mark.parametrize("option", ["--report-json", "--report-html"])
@pytest.mark.parametrize(
    "where,problem", [("afile/r.out", "afile is not a directory"), ("adir", "it is a directory")]
)
def test_unwritable_report_is_found_before_the_program_runs(
    option, where, problem, tmp_path, doctor_here
):
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("")
    (tmp_path / "s.py").write_text("open('ran', 'w').close()\nraise SystemExit(3)\n")
    code, out, err = doctor_here("run", option, where, "s.py", cwd=tmp_path)
    assert code == 2
    assert err == f"torchdoctor: error: cannot write the report {where}: {problem}\n"
    assert not (tmp_path / "ran").exists()


def test_missing_report_directory_is_made_and_the_exit_code_kept(tmp_path, doctor_here):
    (tmp_path / "s.py").write_text(STEPS + "import sys\nsys.exit(3)\n")
    code, out, err = doctor_here(
        "run", "--report-json", "nodir/deeper/r.json", "s.py", cwd=tmp_path
    )
    assert code == 3, err
    assert json.loads((tmp_path / "nodir/deeper/r.json").read_text())["exit_code"] == 3


def test_report_that_cannot_be_written_after_the_run_keeps_the_exit_code(tmp_path, doctor_here):
    (tmp_path / "out").mkdir()
    (tmp_path / "s.py").write_text(
        STEPS + "import shutil, sys\nshutil.rmtree('out')\nsys.exit(3)\n"
    )
    code, out, err = doctor_here("run", "--report-json", "out/r.json", "s.py", cwd=tmp_path)
    assert code == 3
    lines = [line for line in err.splitlines() if "out/r.json" in line]
    assert lines == [
        f"torchdoctor: error: cannot write the report {tmp_path}/out/r.json: "
        "No such file or directory"
    ]
    assert "Traceback" not in err


def _report(tmp_path) -> dict:
    return json.loads((tmp_path / "r.json").read_text())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_does_not_overwrite_the_report(tmp_path):
    """The child ends after the parent wrote its report; capture waits for it (it holds the
    pipes), so a second summary or report would be seen."""
    (tmp_path / "s.py").write_text(
        STEPS + "import os, sys, time\nif os.fork() == 0:\n    time.sleep(1)\n    sys.exit(5)\n"
    )
    result = doctor("run", "--report-json", "r.json", "s.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("torchdoctor: watched") == 1
    report = _report(tmp_path)
    assert report["exit_code"] == 0
    assert report["metrics"]["step"] == [1, 2, 3]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_dataloader_fork_workers_write_no_report(tmp_path):
    (tmp_path / "s.py").write_text(
        STEPS + "from torch.utils.data import DataLoader\n"
        "loader = DataLoader(list(range(8)), batch_size=2, num_workers=2,\n"
        "                    multiprocessing_context='fork')\n"
        "print(sum(int(b.sum()) for b in loader))\n"
    )
    result = doctor("run", "--report-json", "r.json", "s.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "28\n"
    assert result.stderr.count("torchdoctor: watched") == 1
    assert _report(tmp_path)["exit_code"] == 0


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_writes_the_report_then_ends_by_the_signal(tmp_path):
    (tmp_path / "s.py").write_text(
        STEPS + "import os, signal, time\nos.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(30)\n"
        "print('not reached')\n"
    )
    expected = python("s.py", cwd=tmp_path)
    result = doctor("run", "--report-json", "r.json", "s.py", cwd=tmp_path)
    assert result.returncode == expected.returncode == -signal.SIGTERM
    assert result.stdout == ""
    assert result.stderr.count("torchdoctor: watched 3 step(s)") == 1
    assert _report(tmp_path)["exit_code"] == 128 + signal.SIGTERM


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_programs_own_sigterm_handler_decides(tmp_path):
    (tmp_path / "s.py").write_text(
        STEPS + "import os, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(9))\n"
        "os.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(30)\n"
    )
    result = doctor("run", "--report-json", "r.json", "s.py", cwd=tmp_path)
    assert result.returncode == 9
    assert _report(tmp_path)["exit_code"] == 9


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_programs_handler_that_chains_reaches_the_doctors(tmp_path):
    (tmp_path / "s.py").write_text(
        STEPS + "import os, signal, time\n"
        "previous = signal.getsignal(signal.SIGTERM)\n"
        "def handler(signum, frame):\n    print('cleanup', flush=True)\n"
        "    previous(signum, frame)\n"
        "signal.signal(signal.SIGTERM, handler)\n"
        "os.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(30)\n"
    )
    result = doctor("run", "--report-json", "r.json", "s.py", cwd=tmp_path)
    assert result.returncode == -signal.SIGTERM
    assert result.stdout == "cleanup\n"
    assert _report(tmp_path)["exit_code"] == 128 + signal.SIGTERM


def test_os_exit_writes_the_report_and_keeps_its_code(tmp_path):
    (tmp_path / "s.py").write_text(STEPS + "import os\nos._exit(7)\n")
    result = doctor("run", "--report-json", "r.json", "s.py", cwd=tmp_path)
    assert result.returncode == 7
    assert result.stderr.count("torchdoctor: watched 3 step(s)") == 1
    assert _report(tmp_path)["exit_code"] == 7


def test_watch_api_restores_os_exit_and_sigterm():
    import torchdoctor

    before = (os._exit, signal.getsignal(signal.SIGTERM))
    with torchdoctor.watch(summary=False):
        assert os._exit is not before[0]
    assert (os._exit, signal.getsignal(signal.SIGTERM)) == before


def test_report_path_of_the_watch_api_is_resolved_at_start(tmp_path, monkeypatch):
    import torchdoctor

    monkeypatch.chdir(tmp_path)
    watch = torchdoctor.watch(report_json="r.json", summary=False)
    os.makedirs("sub")
    os.chdir("sub")
    watch.stop()
    assert (tmp_path / "r.json").exists()
    assert not (tmp_path / "sub" / "r.json").exists()
