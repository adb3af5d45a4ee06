"""Worker processes for `check`, built so that the check cannot hang on them.

Each worker has a pipe of its own and is handed one chunk of tasks at a time, answering task by
task; the parent hands out the next chunk only once a worker has answered the last one. So:
- the parent always knows which task a worker holds, and a worker that dies (the OOM killer,
  `kill -9`) is seen at once as the end of its pipe: the task it held is reported, the rest of
  its chunk goes to the others;
- nothing is shared between processes but those pipes: no lock that a dying process could
  leave held, no thread in the parent when it forks, no two processes writing one pipe;
- nobody waits on a full pipe: a worker only writes while the parent reads, and the parent only
  writes to a worker that waits for its next chunk.
Workers take the default action for SIGTERM and ignore SIGINT (Ctrl-C reaches the parent once,
which stops them), and die with the parent. A worker that spends longer than `TASK_SECONDS` on
one task (a bug in a rule meeting a pathological file) is killed, and that task reported.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Callable

# The longest the parent blocks before looking again: a signal that came just before it blocked
# is handled, and the progress line redrawn, at least this often.
POLL_SECONDS = 0.5
# Chunks per worker: enough to even out the load, few enough that handing out costs nothing.
CHUNKS_PER_WORKER = 16
# One task may take this long: far beyond any real file (the largest, a few MB, take seconds),
# short enough that a CI job notices a stuck check as a failure rather than a timeout.
TASK_SECONDS = 120.0
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


@dataclass
class Failure:
    """A task that gave no result, and why in a few words."""

    reason: str


def attempt(work: Callable[[Any], Any], task: Any) -> Any:
    """`work(task)`, or the Failure it raised: one task's bug does not end the others."""
    try:
        return work(task)
    except Exception as error:
        return Failure(f"internal error: {type(error).__name__}: {error}")


def map_in_workers(
    work: Callable[[Any], Any],
    tasks: list,
    workers: int,
    *,
    grace: float = 0.0,
    on_done: Callable[[int], None] = lambda count: None,
) -> list:
    """`[attempt(work, task) for task in tasks]` in `workers` processes. A task whose worker
    died is a Failure; the rest are still done, by the workers left (here when none is).
    `on_done(n)` is told of every n tasks finished (n = 0: nothing new, now and then).
    When stopped early (an exception, Ctrl-C, SIGTERM), busy workers get `grace` seconds to
    finish the task at hand (it may be writing a file) before they are killed."""
    results: list = [None] * len(tasks)
    queue = deque(_chunks(len(tasks), workers))
    pool: list[_Worker] = []
    try:
        _start_workers(workers, work, pool)
        idle = list(pool)
        while queue or any(worker.held for worker in pool):
            while idle and queue:
                worker, chunk = idle.pop(), queue.popleft()
                if not worker.give(chunk, tasks):  # it died waiting: the chunk is still to do
                    queue.appendleft(chunk)
                    _bury(worker, pool, queue, results, on_done)
            if not pool:
                _finish_here(work, tasks, queue, results, on_done)
                break
            busy = {worker.connection: worker for worker in pool if worker.held}
            on_done(0)
            for worker in [w for w in busy.values() if w.overdue()]:
                worker.process.kill()  # its pipe closes: buried below, its task reported as slow
            for connection in wait(list(busy), timeout=POLL_SECONDS):
                worker = busy[connection]
                answer = worker.receive()
                if answer is None:
                    _bury(worker, pool, queue, results, on_done)
                    continue
                index, result = answer
                results[index] = result
                on_done(1)
                if not worker.held:
                    idle.append(worker)
    finally:
        _stop(pool, grace)
    return results


def _start_method() -> str:
    """fork where it is safe: it costs nothing, while spawn re-imports the doctor in every
    worker. A process with other threads (the doctor used as a library, e.g. in a Jupyter
    kernel) may fork while one of them holds a lock the child then waits on forever."""
    if os.name == "posix" and threading.active_count() == 1:
        return "fork"
    return "spawn"


def _start_workers(count: int, work: Callable[[Any], Any], pool: list[_Worker]) -> None:
    """Start up to `count` workers into `pool`; as many as the system allows (none: the tasks
    are done in this process)."""
    context = multiprocessing.get_context(_start_method())
    for _ in range(count):
        ours, theirs = context.Pipe()
        # A forked child holds the parent's ends of every pipe made so far: it closes them, or
        # it would keep its siblings from seeing their pipe close.
        parents_ends = [worker.connection for worker in pool] + [ours]
        process = context.Process(
            target=_serve, args=(theirs, parents_ends, work, os.getpid()), daemon=True
        )
        # A signal that comes while forking waits until the child has set its own handling
        # (ignore SIGINT, die on SIGTERM) and the worker is in the pool, to be stopped.
        blocked = _block_stop_signals()
        try:
            process.start()
            pool.append(_Worker(process, ours))
        except OSError:  # fork refused: no memory, too many processes
            ours.close()
            return
        finally:
            theirs.close()  # the parent keeps one end only: a dead worker shows as its end
            _unblock(blocked)


def _chunks(count: int, workers: int) -> list[list[int]]:
    size = max(1, count // (workers * CHUNKS_PER_WORKER))
    return [list(range(start, min(start + size, count))) for start in range(0, count, size)]


@dataclass
class _Worker:
    process: Any
    connection: Connection
    held: deque = field(default_factory=deque)  # indices handed out and not answered yet
    started: float = 0.0  # when the task now at the head of `held` began
    killed_as_stuck: bool = False

    def give(self, chunk: list[int], tasks: list) -> bool:
        """Hand out a chunk; False when the worker is gone."""
        try:
            self.connection.send_bytes(
                pickle.dumps([(index, tasks[index]) for index in chunk], pickle.HIGHEST_PROTOCOL)
            )
        except OSError:
            return False
        if not self.held:
            self.started = time.monotonic()
        self.held.extend(chunk)
        return True

    def receive(self) -> tuple[int, Any] | None:
        """The next answer, or None when the worker is gone."""
        try:
            index, result = pickle.loads(self.connection.recv_bytes())
        except (EOFError, OSError):
            return None
        self.held.remove(index)
        self.started = time.monotonic()
        return index, result

    def overdue(self) -> bool:
        """True (once) when the task at hand has run past TASK_SECONDS."""
        if self.killed_as_stuck or time.monotonic() - self.started <= TASK_SECONDS:
            return False
        self.killed_as_stuck = True
        return True

    def end(self) -> str:
        """Reap a worker whose pipe is closed; how it ended, in a few words."""
        self.connection.close()
        self.process.join(5)
        if self.process.exitcode is None:  # closed its pipe but lives on: not to be trusted
            self.process.kill()
            self.process.join()
            return "stopped answering"
        return _how_ended(self.process.exitcode)


def _how_ended(exitcode: int) -> str:
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            return f"killed by signal {-exitcode}"
        return f"killed by signal {-exitcode}, {name}"
    return f"exited with status {exitcode}"


def _bury(
    worker: _Worker,
    pool: list[_Worker],
    queue: deque,
    results: list,
    on_done: Callable[[int], None],
) -> None:
    """A worker died: the task it was on failed, the rest of its chunk goes back to the queue."""
    pool.remove(worker)
    how = worker.end()
    if worker.held:
        reason = (
            f"took longer than {TASK_SECONDS:g} s, so its worker process was stopped"
            if worker.killed_as_stuck
            else f"a worker process died ({how}) while checking it"
        )
        results[worker.held.popleft()] = Failure(reason)
        on_done(1)
    if worker.held:
        queue.appendleft(list(worker.held))


def _finish_here(
    work: Callable[[Any], Any],
    tasks: list,
    queue: deque,
    results: list,
    on_done: Callable[[int], None],
) -> None:
    """Every worker died: what is left is done in this process."""
    while queue:
        for index in queue.popleft():
            results[index] = attempt(work, tasks[index])
            on_done(1)


def _stop(pool: list[_Worker], grace: float) -> None:
    """End every worker: idle ones see their pipe close and leave; busy ones get `grace`
    seconds, then are killed. Interrupted, it still kills them all."""
    for worker in pool:
        worker.connection.close()
    deadline = time.monotonic() + grace
    try:
        for worker in pool:
            worker.process.join(max(0.0, deadline - time.monotonic()) if worker.held else 1.0)
    finally:
        for worker in pool:
            if worker.process.exitcode is None:
                worker.process.kill()
        for worker in pool:
            worker.process.join()


def _serve(
    connection: Connection, parents_ends: list[Connection], work: Callable[[Any], Any], parent: int
) -> None:
    """A worker's life: chunks in, one answer per task out, until the parent closes its end."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _unblock(_STOP_SIGNALS)
    for end in parents_ends:
        end.close()
    _die_with(parent)
    while True:
        try:
            chunk = pickle.loads(connection.recv_bytes())
        except (EOFError, OSError):
            return
        for index, task in chunk:
            try:
                connection.send_bytes(_answer(index, attempt(work, task)))
            except OSError:  # the parent is gone, or stopped us
                return


def _answer(index: int, result: Any) -> bytes:
    try:
        return pickle.dumps((index, result), pickle.HIGHEST_PROTOCOL)
    except Exception as error:  # a result that cannot be sent back is that task's failure
        return pickle.dumps(
            (
                index,
                Failure(
                    f"internal error: its result cannot be sent back: "
                    f"{type(error).__name__}: {error}"
                ),
            )
        )


def _die_with(parent: int) -> None:
    """On Linux, have the kernel kill this worker when its parent dies, even by SIGKILL, so no
    worker outlives a killed check (elsewhere it leaves at its next read or write)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the line above
        os._exit(1)


def _block_stop_signals() -> set:
    if not hasattr(signal, "pthread_sigmask"):
        return set()
    return _STOP_SIGNALS - signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)


def _unblock(signals: set) -> None:
    if signals and hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
