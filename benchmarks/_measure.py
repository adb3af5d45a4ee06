"""Run one command and print its wall time, CPU time, exit code and peak memory as one JSON object.

Usage: python _measure.py [--timeout SECONDS] -- COMMAND [ARGS...]

Peak memory is ru_maxrss of RUSAGE_CHILDREN. This wrapper has no other children, so it is the
largest resident set of the command or of any process the command waited for (a worker pool).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import resource
import signal
import subprocess
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=float, default=0, help="seconds; 0 waits for ever")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    start = time.perf_counter()
    # Its own session, so that stopping it also stops the workers it started.
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        stdout, stderr = process.communicate(timeout=args.timeout or None)
        timed_out = False
    except subprocess.TimeoutExpired:
        kill_group(process)
        stdout, stderr = process.communicate()
        timed_out = True
    except BaseException:  # Ctrl-C or SIGTERM: the command is outside our process group
        kill_group(process)
        raise
    wall = time.perf_counter() - start

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak = usage.ru_maxrss
    peak_bytes = peak if sys.platform == "darwin" else peak * 1024  # Linux reports KiB
    json.dump(
        {
            "wall_s": wall,
            # CPU time of the command and its waited-for workers: steadier than wall time on a busy machine.
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "returncode": process.returncode,
            "timed_out": timed_out,
            "peak_rss_bytes": peak_bytes,
            # Lets the caller check that a cached run printed what a cold one did.
            "stdout_digest": hashlib.blake2b(stdout, digest_size=16).hexdigest(),
            "stderr_tail": stderr[-3000:].decode("utf-8", "replace"),
        },
        sys.stdout,
    )


def kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.killpg(process.pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
