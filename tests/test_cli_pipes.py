"""Every command treats its stdout as Unix tools do: a reader that goes away ends it quietly
(killed by SIGPIPE, as `grep` or `cat`), a closed stdout or a full disk is one line and exit 2;
odd arguments are one line and a usage exit code, never an internal error."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from conftest import import_torch, run_cli

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes and signals")

TRACEBACK = """Traceback (most recent call last):
  File "train.py", line 3, in <module>
    y = model(x)
RuntimeError: Expected all tensors to be on the same device, but found at least two devices, \
cuda:0 and cpu!
"""

# (arguments, exit code when the whole output is read)
COMMANDS = [
    (["check", "--no-cache", "-j", "1", "--format", "text", "src"], 1),
    (["check", "--no-cache", "-j", "1", "--format", "json", "src"], 1),
    (["check", "--no-cache", "-j", "1", "--format", "sarif", "src"], 1),
    (["check", "--no-cache", "-j", "1", "--format", "github", "src"], 1),
    (["check", "--no-cache", "-j", "1", "--statistics", "src"], 1),
    (["check", "--no-cache", "-j", "1", "--diff", "--unsafe-fixes", "src"], 1),
    (["explain", "error.txt"], 0),
    (["explain", "--format", "json", "error.txt"], 0),
    (["rule", "TD001"], 0),
    (["rule", "--format", "json", "TD001"], 0),
    (["rule", "--format", "markdown", "TD001"], 0),
    (["rules"], 0),
    (["rules", "--format", "json"], 0),
    (["rules", "--format", "markdown"], 0),
    (["ckpt", "inspect", "--keys", "a.pth"], 0),
    (["ckpt", "inspect", "--format", "json", "a.pth"], 0),
    (["ckpt", "diff", "a.pth", "b.pth"], 1),
    (["--help"], 0),
]
IDS = [" ".join(args) for args, _ in COMMANDS]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A tree with findings, a traceback and two checkpoints that differ by a prefix."""
    torch = import_torch()
    root = tmp_path_factory.mktemp("pipes")
    (root / "src").mkdir()
    for number in range(40):  # enough output to fill a pipe
        (root / "src" / f"f{number}.py").write_text(
            "import torch\nx = torch.zeros(3)\nx.cuda()\ny = torch.zeros(3)\ny.cuda()\n"
        )
    (root / "error.txt").write_text(TRACEBACK)
    weights = {f"layer{i}.weight": torch.zeros(2) for i in range(200)}
    torch.save(weights, root / "a.pth")
    torch.save({f"module.{key}": value for key, value in weights.items()}, root / "b.pth")
    return root


def _start(args, cwd, **options) -> subprocess.Popen:
    env = {**os.environ, "NO_COLOR": "1", "TORCHDOCTOR_LANG": "en"}
    return subprocess.Popen(
        [sys.executable, "-m", "torchdoctor", *args],
        cwd=cwd,
        env=env,
        stderr=subprocess.PIPE,
        **options,
    )


@pytest.mark.parametrize("args,code", COMMANDS, ids=IDS)
def test_reader_gone_before_the_output(args, code, inputs):
    """The read end is closed before the command writes: every write fails with EPIPE."""
    process = _start(args, inputs, stdout=subprocess.PIPE)
    process.stdout.close()
    _, stderr = process.communicate(timeout=60)
    assert stderr == b""
    assert process.returncode == -signal.SIGPIPE


@pytest.mark.parametrize("args,code", COMMANDS, ids=IDS)
def test_reader_reads_one_line_then_goes_away(args, code, inputs):
    """`| head -1`: what was written before the reader left is read, then nothing is said.
    Output that fit in the pipe ends with the command's own exit code, as for `cat`."""
    process = _start(args, inputs, stdout=subprocess.PIPE)
    first = process.stdout.readline()
    process.stdout.close()
    _, stderr = process.communicate(timeout=60)
    assert first.strip()
    assert stderr == b""
    assert process.returncode in (code, -signal.SIGPIPE)


@pytest.mark.parametrize("args,code", COMMANDS, ids=IDS)
def test_closed_stdout_is_one_line_and_exit_2(args, code, inputs):
    process = _start(
        args, inputs, stdout=subprocess.DEVNULL, preexec_fn=lambda: os.close(1)
    )  # as `>&-` in a shell
    _, stderr = process.communicate(timeout=60)
    assert stderr.decode() == "torchdoctor: error: cannot write the output: stdout is closed\n"
    assert process.returncode == 2


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args,code", COMMANDS, ids=IDS)
def test_full_disk_is_one_line_and_exit_2(args, code, inputs):
    with open("/dev/full", "w") as full:
        process = _start(args, inputs, stdout=full)
        _, stderr = process.communicate(timeout=60)
    assert stderr.decode() == (
        "torchdoctor: error: cannot write the output: No space left on device\n"
    )
    assert process.returncode == 2


def test_run_summary_to_a_closed_stderr_keeps_the_programs_exit_code(tmp_path):
    """The summary and live lines of `run` go to stderr; its reader gone, the program's own
    output and exit code are what python gives."""
    import_torch()
    (tmp_path / "s.py").write_text("import sys\nprint('out')\nsys.exit(3)\n")
    results = []
    for command in ([sys.executable, "s.py"], [sys.executable, "-m", "torchdoctor", "run", "s.py"]):
        process = subprocess.Popen(
            command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        process.stderr.close()
        stdout, _ = process.communicate(timeout=60)
        results.append((process.returncode, stdout))
    assert results[0] == results[1] == (3, b"out\n")


def test_run_program_writing_to_a_gone_reader_ends_as_under_python(tmp_path):
    """The program's stdout is its own: a BrokenPipeError is its crash, with python's exit code."""
    import_torch()
    (tmp_path / "s.py").write_text("for i in range(200000):\n    print(i)\n")
    codes = []
    for command in ([sys.executable, "s.py"], [sys.executable, "-m", "torchdoctor", "run", "s.py"]):
        process = subprocess.Popen(
            command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        process.stdout.readline()
        process.stdout.close()
        _, stderr = process.communicate(timeout=60)
        assert b"BrokenPipeError" in stderr
        assert b"internal error" not in stderr
        codes.append(process.returncode)
    assert codes[0] == codes[1]


# ---- odd arguments: one line, a usage exit code -----------------------------------------------


@pytest.mark.parametrize(
    "args,message",
    [
        (["run"], "torchdoctor: error: run: give a script or -m MODULE\n"),
        (["rule", ""], "torchdoctor: error: unknown rule '' (see `torchdoctor rules`)\n"),
        (["rule", "TD"], "torchdoctor: error: unknown rule 'TD' (see `torchdoctor rules`)\n"),
    ],
)
def test_odd_arguments_are_one_line(args, message, tmp_path):
    result = run_cli(*args, cwd=tmp_path)
    assert result.stderr == message
    assert result.returncode == 2


@pytest.mark.parametrize("value", ["", "xx", "ZH_cn", "\u00e9", "zh\udcff"])
def test_odd_language_settings_fall_back(value, tmp_path):
    env = {**os.environ, "TORCHDOCTOR_LANG": value, "LANG": value, "LC_ALL": value}
    result = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "rule", "TD001"],
        cwd=tmp_path,
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == b""
    assert result.stdout.startswith(b"TD001 tensor-result-discarded")


@pytest.mark.parametrize(
    "args", [["check", "--stdin-filename", "a.py"], ["explain"], ["explain", "-"]]
)
def test_reading_a_closed_stdin_is_one_line(args, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "torchdoctor", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: os.close(0),
    )  # as `<&-` in a shell
    assert result.stderr.startswith("torchdoctor: error: ")
    assert result.stderr.count("\n") == 1
    assert result.returncode == 2
