"""`torchdoctor explain` on hostile input: it answers, in bounded time, and never crashes.

Every case here was a hang, a quadratic blow-up or a traceback before: a 50 KB token in a
message, trailing spaces in a frame line, a traceback naming a FIFO or a link to /dev/zero, a
user file that no longer parses, thousands of tracebacks in one log, a long exception chain.
The timeouts only catch a hang or a quadratic run (which takes minutes on these inputs); the
commands finish in seconds.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import torchdoctor
from torchdoctor.explain import command
from torchdoctor.explain.api import explanation_of
from torchdoctor.explain.match import diagnose
from torchdoctor.explain.model import ErrorReport
from torchdoctor.explain.parse import _read_text
from torchdoctor.explain.render import as_text

FIXTURES = Path(__file__).parent / "fixtures" / "explain"
DEVICE_ERROR = (
    "RuntimeError: Expected all tensors to be on the same device, but found at least "
    "two devices, cuda:0 and cpu!"
)
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")


def explain(
    *args: str, cwd: Path, stdin: str | bytes | None = None, timeout: float = 60
) -> subprocess.CompletedProcess:
    """`torchdoctor explain ARGS` in a fresh interpreter; a hang fails the test."""
    env = {**os.environ, "NO_COLOR": "1", "TORCHDOCTOR_LANG": "en"}
    data = stdin.encode() if isinstance(stdin, str) else stdin
    result = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "explain", *args],
        cwd=cwd,
        input=data,
        capture_output=True,
        env=env,
        timeout=timeout,
    )
    result.stdout = result.stdout.decode("utf-8", "replace")
    result.stderr = result.stderr.decode("utf-8", "replace")
    assert "Traceback (most recent call last)" not in result.stderr, result.stderr
    assert "internal error" not in result.stderr, result.stderr
    return result


def traceback_naming(path: Path | str, error: str = DEVICE_ERROR) -> str:
    return (
        f'Traceback (most recent call last):\n  File "{path}", line 2, in <module>\n'
        f"    y = model(x)\n{error}\n"
    )


# --- quadratic regexes ------------------------------------------------------------------------


def test_a_long_token_in_a_message(tmp_path):
    (tmp_path / "log.txt").write_text("RuntimeError: " + "x" * 200_000 + "\n")
    result = explain("--no-link", "log.txt", cwd=tmp_path)
    assert result.returncode == 1
    assert "RuntimeError: xxx" in result.stdout


def test_trailing_whitespace_in_a_frame_line(tmp_path):
    frame = '  File "a.py", line 1, in f' + " " * 200_000 + "x"
    (tmp_path / "log.txt").write_text(
        f"Traceback (most recent call last):\n{frame}\nValueError: x\n"
    )
    result = explain("--no-link", "log.txt", cwd=tmp_path)
    assert result.returncode == 1
    assert "ValueError: x" in result.stdout


# --- files named in a traceback ---------------------------------------------------------------


@needs_fifo
def test_a_traceback_naming_a_fifo_is_explained_without_reading_it(tmp_path):
    os.mkfifo(tmp_path / "p.py")
    (tmp_path / "log.txt").write_text(traceback_naming(tmp_path / "p.py"))
    result = explain("log.txt", cwd=tmp_path, timeout=30)
    assert result.returncode == 0
    assert "TD003 device-mismatch" in result.stdout
    assert result.stderr.splitlines() == [
        f"torchdoctor: could not link the error to {tmp_path / 'p.py'}: a FIFO, not a regular "
        "file: not read"
    ]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
@pytest.mark.parametrize("name", ["/dev/zero", "zero.py"])
def test_a_traceback_naming_dev_zero_is_explained_without_reading_it(tmp_path, name):
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    (tmp_path / "log.txt").write_text(traceback_naming(name))
    result = explain("log.txt", cwd=tmp_path)
    assert result.returncode == 0
    assert "TD003 device-mismatch" in result.stdout
    if name == "zero.py":
        assert "a character device, not a regular file" in result.stderr


def test_a_user_file_that_no_longer_parses_keeps_the_diagnosis(tmp_path):
    (tmp_path / "b.py").write_text("import torch\ny = model(x)\ndef f(:\n  pass\n")
    (tmp_path / "log.txt").write_text(traceback_naming(tmp_path / "b.py"))
    result = explain("log.txt", cwd=tmp_path)
    assert result.returncode == 0
    assert "TD003 device-mismatch" in result.stdout
    assert result.stderr.splitlines() == [
        f"torchdoctor: could not link the error to {tmp_path / 'b.py'}: line 3: "
        "SyntaxError: invalid syntax"
    ]
    data = json.loads(explain("--format", "json", "log.txt", cwd=tmp_path).stdout)
    assert data["findings"][0]["name"] == "device-mismatch"
    assert "SyntaxError" in data["link_problem"]


@pytest.mark.parametrize(
    "content",
    [
        b"import torch\x00\n",
        b"# -*- coding: klingon -*-\nx = 1\n",
        b"import torch\nx = '\xff\xfe'\n",
    ],
)
def test_an_unreadable_user_file_keeps_the_diagnosis(tmp_path, content):
    (tmp_path / "b.py").write_bytes(content)
    report = explanation_of(traceback_naming(tmp_path / "b.py"), "en")
    assert report.diagnoses[0].pitfall.name == "device-mismatch"
    assert report.internal_error is None


@pytest.mark.parametrize("failure", [RecursionError, KeyError, MemoryError])
def test_a_failing_checker_costs_the_link_not_the_diagnosis(tmp_path, monkeypatch, failure):
    from torchdoctor.lint import checker

    def broken(*args, **kwargs):
        raise failure("TD700")

    monkeypatch.setattr(checker, "check_source", broken)
    (tmp_path / "b.py").write_text("import torch\ny = model(x)\n")
    explanation = explanation_of(traceback_naming(tmp_path / "b.py"), "en")
    assert explanation.internal_error is None
    assert explanation.diagnoses[0].pitfall.name == "device-mismatch"
    assert explanation.link_problem.startswith(
        f"could not link the error to {tmp_path / 'b.py'}: {failure.__name__}: "
    )


def test_the_link_still_works(tmp_path):
    (tmp_path / "train.py").write_text(
        "import torch\nimages = torch.zeros(3)\nimages.cuda()\nout = model(images)\n"
    )
    text = traceback_naming(tmp_path / "train.py").replace("line 2", "line 4")
    explanation = explanation_of(text, "en")
    assert explanation.link_problem is None
    assert "tensor-result-discarded" in [d.pitfall.name for d in explanation.diagnoses]


# --- the input itself -------------------------------------------------------------------------


def test_a_directory_is_one_line_and_exit_2(tmp_path):
    result = explain(str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"torchdoctor: error: {tmp_path}: Is a directory"]


@needs_fifo
def test_a_fifo_named_explicitly_is_read(tmp_path):
    os.mkfifo(tmp_path / "in")
    env = {**os.environ, "TORCHDOCTOR_LANG": "en"}
    process = subprocess.Popen(
        [sys.executable, "-m", "torchdoctor", "explain", "in"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        writer = _open_writer(tmp_path / "in", process)
        with os.fdopen(writer, "w") as fifo:
            fifo.write(traceback_naming("train.py"))
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert "TD003 device-mismatch" in out


def _open_writer(fifo: Path, reader: subprocess.Popen) -> int:
    """The FIFO's writing end, once `reader` has opened it (never blocks: a reader that died
    first fails the test instead of hanging it)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            descriptor = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: no reader yet
            assert reader.poll() is None and time.monotonic() < deadline, "explain never read"
            time.sleep(0.05)
            continue
        os.set_blocking(descriptor, True)
        return descriptor


def test_only_the_end_of_a_huge_input_is_read_and_that_is_said(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(command, "MAX_INPUT_BYTES", 1024 * 1024)
    log = "epoch 1 loss 0.5\n" * 100_000 + traceback_naming("train.py")
    (tmp_path / "log.txt").write_text(log)
    text = command._read_input(str(tmp_path / "log.txt"))
    assert text.endswith(traceback_naming("train.py"))
    assert text.startswith("epoch 1 loss 0.5\n")  # whole lines: the one cut in two is dropped
    assert len(text) <= 1024 * 1024
    assert capsys.readouterr().err == (
        f"torchdoctor: {tmp_path / 'log.txt'} is larger than 1 MiB: only its last 1 MiB were read\n"
    )


def test_a_huge_stream_is_read_to_its_end_keeping_only_the_end(monkeypatch):
    import io

    monkeypatch.setattr(command, "MAX_INPUT_BYTES", 3 * 1024 * 1024)
    stream = io.BytesIO(b"x" * (10 * 1024 * 1024 + 7) + b"\nValueError: last\n")
    data, cut = command._tail(stream)
    assert cut and len(data) == 3 * 1024 * 1024
    assert data.endswith(b"\nValueError: last\n")


def test_binary_input_with_nul_bytes_and_invalid_utf8(tmp_path):
    data = (
        b"\x00\xff\xfe garbage \x1b]0;title\x07\x9b2J\r\n"
        + os.urandom(4096)
        + traceback_naming("train.py").encode()
        + b"\xc3\x28\x00\n"
    )
    (tmp_path / "log.bin").write_bytes(data)
    result = explain("log.bin", cwd=tmp_path)
    assert result.returncode == 0
    assert "TD003 device-mismatch" in result.stdout


def test_control_characters_of_the_error_are_shown_escaped(tmp_path):
    text = "RuntimeError: bad \x1b]0;owned\x07 value\x9b2J \x08\r\n"
    result = explain("--no-link", cwd=tmp_path, stdin=text)
    assert result.returncode == 1
    assert not any(c in result.stdout for c in "\x1b\x07\x9b\x08\r")
    assert "value\\x9b2J \\x08" in result.stdout


# --- large inputs: linear, not quadratic --------------------------------------------------------


def test_a_traceback_with_100k_frames(tmp_path):
    frames = "".join(
        f'  File "/work/m{i}.py", line {i}, in f{i}\n    g()\n' for i in range(100_000)
    )
    (tmp_path / "log.txt").write_text(
        f"Traceback (most recent call last):\n{frames}RecursionError: too deep\n"
    )
    result = explain("--no-link", "log.txt", cwd=tmp_path, timeout=120)
    assert "RecursionError: too deep" in result.stdout
    assert "/work/m99999.py:99999" in result.stdout


def test_a_log_with_thousands_of_tracebacks(tmp_path):
    log = "".join(
        traceback_naming("train.py", DEVICE_ERROR.replace("cuda:0", f"cuda:{i}"))
        for i in range(5000)
    )
    (tmp_path / "log.txt").write_text(log)
    result = explain("--no-link", "log.txt", cwd=tmp_path, timeout=90)
    assert result.returncode == 0
    assert "cuda:4999 and cpu" in result.stdout


def test_a_long_exception_chain(tmp_path):
    separator = "\nDuring handling of the above exception, another exception occurred:\n\n"
    chain = separator.join(
        f'Traceback (most recent call last):\n  File "a.py", line {i}, in f\n'
        f"    x\nValueError: v{i}\n"
        for i in range(10_000)
    )
    (tmp_path / "log.txt").write_text(chain)
    # 12 s on an idle machine; the limit leaves room for a busy one (a quadratic reading
    # would take hours; the growth itself is measured by benchmarks/bench_explain_scaling.py).
    result = explain("--no-link", "log.txt", cwd=tmp_path, timeout=300)
    assert "ValueError: v9999" in result.stdout


def test_a_single_enormous_line(tmp_path):
    (tmp_path / "log.txt").write_text("RuntimeError: " + "ab cd, " * 300_000 + "\n")
    result = explain("--no-link", "log.txt", cwd=tmp_path, timeout=90)
    assert result.returncode == 1
    assert max(len(line) for line in result.stdout.splitlines()) < 1000


def test_many_pytest_sections(tmp_path):
    log = "".join(
        f"____ test_{i} ____\n\n    def test_{i}():\n>       assert f()\n"
        f"E       AssertionError: bad {i}\n\ntests/test_x.py:{i}: AssertionError\n"
        for i in range(20_000)
    )
    (tmp_path / "log.txt").write_text(log)
    result = explain("--no-link", "log.txt", cwd=tmp_path, timeout=300)  # 10 s idle
    assert "AssertionError: bad 19999" in result.stdout


# --- the Python API ---------------------------------------------------------------------------


class _BrokenStr(Exception):
    def __str__(self):
        raise ValueError("no str")


def _cyclic() -> BaseException:
    first, second = ValueError("a"), RuntimeError("b")
    first.__context__, second.__context__ = second, first
    return first


def _long_chain(length: int) -> BaseException:
    error = ValueError("start")
    for k in range(length):
        try:
            raise RuntimeError(f"link {k}") from error
        except RuntimeError as raised:
            error = raised
    return error


def _nested_groups(depth: int) -> BaseException:
    error: BaseException = ValueError("leaf")
    for _ in range(depth):
        error = BaseExceptionGroup("group", [error])  # noqa: F821 (Python 3.11+, skipped before)
    return error


ODD_OBJECTS = [
    None,
    42,
    3.5,
    object(),
    ["a list"],
    b"bytes",
    bytearray(b"x"),
    ValueError,
    Path("log.txt"),
    _BrokenStr(),
    _cyclic(),
    _long_chain(3000),
    "",
    traceback_naming("t.py").encode(),
    "\x00" * 100,
]
if sys.version_info >= (3, 11):
    ODD_OBJECTS.append(_nested_groups(2000))


@pytest.mark.parametrize("value", ODD_OBJECTS, ids=lambda v: type(v).__name__)
def test_the_python_api_answers_for_any_object(value):
    result = torchdoctor.explain(value)
    assert set(result) >= {"findings", "error"}
    json.dumps(result)
    assert "internal_error" not in result, result["internal_error"]


def test_bytes_are_read_as_text():
    result = torchdoctor.explain(traceback_naming("t.py").encode())
    assert result["findings"][0]["name"] == "device-mismatch"


# --- fuzz: mutations of the real fixtures ---------------------------------------------------

_NOISE = [
    "\x00",
    "\r",
    "\x1b[31m",
    "\x1b]0;t\x07",
    "\u2028",
    "\ufffd",
    "\udcff",
    "\t",
    "Traceback (most recent call last):\n",
    '  File "',
    "\n\n",
    "E   ",
    "[rank3]: ",
    "During handling of the above exception, another exception occurred:\n",
    "Original Traceback (most recent call last):\n",
    "  + Exception Group Traceback",
    "-" * 75 + "\n",
    ">   ",
    "Error: ",
    "Warning: ",
    "```\n",
]


def _mutate(text: str, rnd: random.Random) -> str:
    for _ in range(rnd.randint(1, 4)):
        cut = rnd.randint(0, len(text))
        end = min(len(text), cut + rnd.randint(0, 400))
        choice = rnd.randrange(7)
        if choice == 0:
            text = text[:cut] + text[end:]  # a piece lost
        elif choice == 1:
            text = text[:end] + text[cut:end] * rnd.randint(2, 50) + text[end:]  # repeated
        elif choice == 2:
            text = text[:cut] + rnd.choice(_NOISE) * rnd.randint(1, 30) + text[cut:]
        elif choice == 3:
            text = text[:cut] + rnd.choice("x _.:(\t") * rnd.randint(1_000, 20_000) + text[cut:]
        elif choice == 4:
            lines = text.split("\n")
            rnd.shuffle(lines)
            text = "\n".join(lines)
        elif choice == 5:
            text = text[:cut]  # cut short
        else:
            text = "".join(chr(rnd.randrange(0x110000)) if rnd.random() < 0.01 else c for c in text)
    return text


class _Hang(Exception):
    pass


def _hang(signum, frame):
    raise _Hang


@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="the hang guard needs SIGALRM")
@pytest.mark.parametrize("case", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_mutated_fixtures_are_read_without_error(case):
    rnd = random.Random(case)
    previous = signal.signal(signal.SIGALRM, _hang)
    try:
        for path in sorted((FIXTURES / case).glob("*.txt")):
            text = _mutate(path.read_text(encoding="utf-8"), rnd)
            signal.alarm(30)  # a hang, not a speed limit: each takes milliseconds
            report = ErrorReport()
            _read_text(report, text)  # not parse_text: it would hide a crash
            explanation = diagnose(report, "en", link=False)
            as_text(explanation)
            json.dumps(explanation.to_json())
            signal.alarm(0)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
