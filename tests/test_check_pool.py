"""`check` never hangs on its worker processes: a worker killed, Ctrl-C, SIGTERM, the check
itself killed; a task that raises or returns what cannot be sent back; the progress line."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator

import pytest

from torchdoctor.lint import command, pool, progress
from torchdoctor.lint.command import shows_progress
from torchdoctor.lint.pool import Failure, map_in_workers

linux_only = pytest.mark.skipif(
    not Path("/proc/self/stat").is_file(), reason="finds worker processes through /proc"
)


def slow_tree(root: Path, files: int = 8, functions: int = 2000) -> Path:
    """Files that take a worker a good fraction of a second each, one finding (TD001) each."""
    body = "".join(f"def f{j}(x):\n    y = x.cuda()\n    return y\n" for j in range(functions))
    for number in range(files):
        (root / f"m{number}.py").write_text(
            f"import torch\nx = torch.zeros(3)\nx.cuda()\n{body}", encoding="utf-8"
        )
    return root


@contextmanager
def running_check(root: Path, *args: str) -> Iterator[subprocess.Popen]:
    """`check --jobs 2` on `root`, started in the background; whatever is left of it (a hung
    check, its workers) is killed at the end, so a failing test leaves nothing behind."""
    env = {**os.environ, "NO_COLOR": "1", "TORCHDOCTOR_LANG": "en"}
    check = subprocess.Popen(
        [sys.executable, "-m", "torchdoctor", "check", "--no-cache", "--jobs", "2", *args, "."],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a shell job has
        # Ctrl-C as at a terminal, even when the tests run where SIGINT is ignored (a
        # background job of a script): python keeps an ignored SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        yield check
    finally:
        try:
            os.killpg(check.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        check.communicate()


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
        if parent == pid:
            found.append(int(stat.parent.name))
    return found


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def busy_workers(check: subprocess.Popen, count: int = 2) -> list[int]:
    """The check's workers, once each of them is busy checking (not merely started)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert check.poll() is None, check.communicate()
        workers = children(check.pid)
        try:
            if len(workers) == count and all(cpu_ticks(pid) >= 10 for pid in workers):
                return workers
        except OSError:  # a worker ended meanwhile: look again
            pass
        time.sleep(0.02)
    raise AssertionError("the workers never got busy")


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")  # dead, waiting for whoever adopted it to reap it


# ---- a worker killed, the check stopped, the check killed ---------------------------------


@linux_only
def test_a_killed_worker_is_one_error_and_the_other_files_are_still_checked(tmp_path):
    with running_check(slow_tree(tmp_path), "--format", "json") as check:
        victim = busy_workers(check)[0]
        os.kill(victim, signal.SIGKILL)
        stdout, stderr = check.communicate(timeout=60)
    assert check.returncode == 2
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("torchdoctor: error: m")
    assert lines[0].endswith(
        ": not checked: a worker process died (killed by signal 9, SIGKILL) while checking it"
    )
    lost = lines[0].split()[2].rstrip(":")
    checked = {finding["path"] for finding in json.loads(stdout)}
    assert checked == {f"m{number}.py" for number in range(8)} - {lost}


@linux_only
@pytest.mark.parametrize(
    "sig, to_group, code",
    [
        (signal.SIGINT, True, 130),  # Ctrl-C in a terminal: the whole foreground group
        (signal.SIGTERM, False, 143),  # kill PID, timeout(1)
        (signal.SIGTERM, True, 143),  # a container or CI job being stopped
    ],
)
def test_a_stopped_check_exits_cleanly_and_leaves_no_worker(tmp_path, sig, to_group, code):
    with running_check(slow_tree(tmp_path)) as check:
        workers = busy_workers(check)
        if to_group:
            os.killpg(check.pid, sig)
        else:
            os.kill(check.pid, sig)
        stdout, stderr = check.communicate(timeout=60)
        assert all(gone(pid) for pid in workers)
    assert check.returncode == code
    assert "Traceback" not in stderr and len(stderr.splitlines()) <= 1, stderr


@linux_only
def test_the_workers_die_with_a_killed_check(tmp_path):
    with running_check(slow_tree(tmp_path)) as check:
        workers = busy_workers(check)
        os.kill(check.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while not all(gone(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(gone(pid) for pid in workers)


# ---- the pool itself ----------------------------------------------------------------------

PARENT = os.getpid()


def double(task):
    return task * 2


def fail_on_three(task):
    if task == 3:
        raise ValueError("three")
    return task


def unsendable_on_two(task):
    return (lambda: None) if task == 2 else task


def large(task):
    return bytes([task]) * 20_000_000


def die_in_worker_on_small(task):
    """Kills the worker that runs tasks 0 and 1; the same tasks run in the test's own process
    (when every worker is dead) just return."""
    if task < 2 and os.getpid() != PARENT:
        os.kill(os.getpid(), signal.SIGKILL)
    return task


def signal_handling(task):
    return signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)


def stuck_on_two(task):
    while task == 2:
        time.sleep(0.1)
    return task


def write_marker(task):
    time.sleep(0.2)
    (task[0] / f"{task[1]}.done").write_text("")
    return task[1]


def test_results_come_back_in_order_and_every_task_is_counted():
    done = []
    assert map_in_workers(double, list(range(100)), 2, on_done=done.append) == [
        2 * n for n in range(100)
    ]
    assert sum(done) == 100
    assert not multiprocessing.active_children()


def test_a_task_that_raises_is_a_failure_and_the_others_are_done():
    results = map_in_workers(fail_on_three, list(range(10)), 2)
    assert results[3] == Failure("internal error: ValueError: three")
    assert results[:3] + results[4:] == [0, 1, 2, 4, 5, 6, 7, 8, 9]


def test_a_result_that_cannot_be_sent_back_is_a_failure():
    results = map_in_workers(unsendable_on_two, list(range(10)), 2)
    assert isinstance(results[2], Failure)
    assert results[2].reason.startswith("internal error: its result cannot be sent back: ")
    assert results[:2] + results[3:] == [0, 1, 3, 4, 5, 6, 7, 8, 9]


def test_a_large_result_comes_back_whole():
    results = map_in_workers(large, [1, 2, 3, 4], 2)
    assert [len(r) for r in results] == [20_000_000] * 4 and results[3][-1] == 4


def test_when_every_worker_dies_the_rest_is_done_here():
    results = map_in_workers(die_in_worker_on_small, list(range(40)), 2)
    dead = [r for r in results if isinstance(r, Failure)]
    assert dead and all(
        "a worker process died (killed by signal 9, SIGKILL)" in f.reason for f in dead
    )
    assert [r for r in results if not isinstance(r, Failure)] == list(range(len(dead), 40))
    assert not multiprocessing.active_children()


def test_a_worker_stuck_on_one_task_is_stopped_and_the_others_are_done(monkeypatch):
    monkeypatch.setattr(pool, "TASK_SECONDS", 1.0)
    results = map_in_workers(stuck_on_two, list(range(20)), 2)
    assert results[2] == Failure("took longer than 1 s, so its worker process was stopped")
    assert results[:2] + results[3:] == [n for n in range(20) if n != 2]
    assert not multiprocessing.active_children()


def test_workers_ignore_ctrl_c_and_take_the_default_action_for_sigterm():
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    try:
        results = map_in_workers(signal_handling, [0, 1, 2, 3], 2)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert results == [(signal.SIG_IGN, signal.SIG_DFL)] * 4


def test_a_stopped_pool_lets_busy_workers_finish_the_task_at_hand(tmp_path):
    """What --fix relies on when Ctrl-C comes: a file being written is written whole; nothing
    more is started."""

    def interrupt(count):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        map_in_workers(
            write_marker, [(tmp_path, n) for n in range(4)], 2, grace=30.0, on_done=interrupt
        )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["0.done", "1.done"]
    assert not multiprocessing.active_children()


# ---- progress -----------------------------------------------------------------------------


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_only_on_a_terminal_and_only_for_text_output(monkeypatch):
    monkeypatch.delenv("TERM", raising=False)
    text, json_format = SimpleNamespace(format="text"), SimpleNamespace(format="json")
    assert shows_progress(text, FakeTerminal())
    assert not shows_progress(text, io.StringIO())  # a pipe, a file, a CI log
    assert not shows_progress(text, None)  # no stderr at all (pythonw)
    for fmt in ("json", "sarif", "github"):
        assert not shows_progress(SimpleNamespace(format=fmt), FakeTerminal())
    assert not shows_progress(json_format, FakeTerminal())
    monkeypatch.setenv("TERM", "dumb")
    assert not shows_progress(text, FakeTerminal())


def test_progress_appears_late_is_redrawn_sparingly_and_is_erased():
    stream, clock = FakeTerminal(), Clock()
    line = progress.Progress(stream, 10, clock=clock)
    line.advance(3)
    clock.now += progress.DELAY_SECONDS - 0.5
    line.advance(1)
    assert stream.getvalue() == ""  # a quick check shows nothing
    clock.now += 1.0
    line.advance(1)
    assert stream.getvalue() == "\rtorchdoctor: 5/10 files checked"
    line.advance(1)  # too soon to redraw
    clock.now += progress.REDRAW_SECONDS + 0.5
    line.advance(0)  # nothing new, but the line is due
    assert stream.getvalue().endswith("\rtorchdoctor: 6/10 files checked")
    line.close()
    width = len("torchdoctor: 6/10 files checked")
    assert stream.getvalue().endswith("\r" + " " * width + "\r")


def test_a_quick_check_leaves_no_trace():
    stream = FakeTerminal()
    with progress.Progress(stream, 10, clock=Clock()) as advance:
        advance(10)
    assert stream.getvalue() == ""


def test_progress_counts_every_file_of_a_check(tmp_path, monkeypatch, capsys):
    """The line through the real command: files from the cache count as done too."""
    from torchdoctor.cli import main

    for number in range(3):
        (tmp_path / f"m{number}.py").write_text("import torch\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(command, "_tune_garbage_collector", lambda: None)  # this process's own
    monkeypatch.setattr(command, "_exit_cleanly_on_sigterm", lambda: None)
    monkeypatch.setattr(progress, "DELAY_SECONDS", 0.0)
    monkeypatch.setattr(progress, "REDRAW_SECONDS", 0.0)
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.delenv("TERM", raising=False)
    assert main(["check", "--jobs", "1", "--no-cache", "."]) == 0
    drawn = terminal.getvalue()
    assert drawn.startswith("\rtorchdoctor: 0/3 files checked")
    assert "\rtorchdoctor: 3/3 files checked\r" in drawn and drawn.endswith("\r")
    assert "files checked" not in capsys.readouterr().out
