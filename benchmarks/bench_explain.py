"""Cold start of `torchdoctor explain < traceback.txt`, against a bare interpreter.

    python benchmarks/bench_explain.py [--repeat 15] [--markdown] [--against OLD/src] [--work]

Each run is a fresh process, as a user's shell runs it: interpreter start, imports, parsing,
matching every catalog signature, rendering. Inputs are real error outputs from
tests/fixtures/explain (a short traceback and the longest log there), fed on stdin, with and
without linking to the user's files (none of the fixtures' files exist here, so linking only
costs the look-up), and a message pasted alone (every function signature reads it, whatever its
exception types: the most entries `explain` imports). The baseline is `python -c pass` measured
in the same run; the target is 150 ms for the whole command on these machines.

Wall time and CPU time (user + system of the process) are both reported: on a machine shared
with other work, the CPU time moves less. `--against DIR` also runs each `explain` with
PYTHONPATH=DIR (the `src` of another checkout: before and after a change), interleaved too.
`--work` counts instead, once per input, what no load on the machine changes: the modules the
command imports (catalog entries among them) and the regexes it compiles.

Bytecode is allowed and a first, untimed run writes it, as `pip install` does (it compiles the
package): with PYTHONDONTWRITEBYTECODE=1 every run would recompile the catalog's sources.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "explain"


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


MESSAGE = b"Expected all tensors to be on the same device, but found at least two devices, \
cuda:0 and cpu!\n"


def times(command: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time of one run of `command`, in seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        command, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


# `python -m torchdoctor explain` run in-process, counting what it imports and compiles.
WORK_PROBE = """
import re._compiler, runpy, sys
compiled = 0
compile = re._compiler.compile
def counting(*args, **kwargs):
    global compiled
    compiled += 1
    return compile(*args, **kwargs)
re._compiler.compile = counting
before = set(sys.modules)
sys.argv = ["torchdoctor", "explain", "--lang", "en", *sys.argv[1:]]
stdout, sys.stdout = sys.stdout, open("/dev/null", "w")
try:
    runpy.run_module("torchdoctor", run_name="__main__")
except SystemExit:
    pass
sys.stdout = stdout
new = [m for m in sys.modules if m not in before]
entries = [m for m in new if m.startswith("torchdoctor.catalog.") and ".td" in m]
print(len(new), len(entries), compiled)
"""


def work(args: list[str], stdin: bytes, env: dict[str, str]) -> list[int]:
    """Modules imported, catalog entries among them, regexes compiled by one run."""
    probe = [sys.executable, "-c", WORK_PROBE, *args]
    result = subprocess.run(probe, input=stdin, capture_output=True, env=env, check=True)
    return [int(n) for n in result.stdout.split()]


def body(path: Path) -> bytes:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("#| ")).encode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--against", metavar="DIR", help="also run explain from this source tree")
    parser.add_argument("--work", action="store_true", help="count imports and compiles instead")
    args = parser.parse_args()

    cases = sorted(FIXTURES.glob("*/*.txt"), key=lambda p: p.stat().st_size)
    short = FIXTURES / "device-mismatch" / "torch213-linear-input-on-other-device.txt"
    short = short if short.exists() else cases[len(cases) // 2]
    longest = cases[-1]
    explain = [sys.executable, "-m", "torchdoctor", "explain", "--lang", "en"]
    inputs = {
        f"explain < {short.parent.name}/{short.name}": (explain, body(short)),
        f"explain --no-link < {short.parent.name}/{short.name}": (
            explain + ["--no-link"],
            body(short),
        ),
        f"explain < {longest.parent.name}/{longest.name} ({longest.stat().st_size} B)": (
            explain,
            body(longest),
        ),
        "explain < a message alone (one line)": (explain, MESSAGE),
    }
    runs = {"python -c pass (baseline)": ([sys.executable, "-c", "pass"], b"", ENV)}
    for name, (command, stdin) in inputs.items():
        if args.against:
            against = {**ENV, "PYTHONPATH": args.against}
            runs[f"{name} [{args.against}]"] = (command, stdin, against)
        runs[name] = (command, stdin, ENV)
    if args.work:
        print("| command | modules imported | catalog entries | regexes compiled |")
        print("|---|---|---|---|")
        for name, (command, stdin, env) in list(runs.items())[1:]:
            modules, entries, compiled = work(command[6:], stdin, env)
            print(f"| `{name}` | {modules} | {entries} | {compiled} |")
        return
    for command, stdin, env in runs.values():
        times(command, stdin, env)  # writes the bytecode
    results: dict[str, list[tuple[float, float]]] = {}
    for _ in range(args.repeat):  # interleaved, so that load on the machine hits all alike
        for name, (command, stdin, env) in runs.items():
            results.setdefault(name, []).append(times(command, stdin, env))
    rows = []
    for name, measured in results.items():
        walls, cpus = [w for w, _ in measured], [c for _, c in measured]
        rows.append(
            (name, statistics.median(walls), min(walls), statistics.median(cpus), min(cpus))
        )
    wall_base, cpu_base = rows[0][1], rows[0][3]
    if args.markdown:
        print(
            "| command | wall median ms | wall min ms | x baseline | CPU median ms | x baseline |"
        )
        print("|---|---|---|---|---|---|")
        for name, wall, best, cpu, _ in rows:
            print(
                f"| `{name}` | {wall * 1000:.0f} | {best * 1000:.0f} | {wall / wall_base:.2f} "
                f"| {cpu * 1000:.0f} | {cpu / cpu_base:.2f} |"
            )
    else:
        for name, wall, best, cpu, cpu_best in rows:
            print(
                f"{name:62} wall median {wall * 1000:5.0f} ms  min {best * 1000:5.0f} ms  "
                f"{wall / wall_base:5.2f}x  CPU median {cpu * 1000:5.0f} ms  "
                f"min {cpu_best * 1000:5.0f} ms  {cpu / cpu_base:5.2f}x"
            )


if __name__ == "__main__":
    main()
