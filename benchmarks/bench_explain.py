"""Cold start of `torchdoctor explain < traceback.txt`, against a bare interpreter.

    python benchmarks/bench_explain.py [--repeat 15] [--markdown]

Each run is a fresh process, as a user's shell runs it: interpreter start, imports, parsing,
matching every catalog signature, rendering. Inputs are real error outputs from
tests/fixtures/explain (a short traceback and the longest log there), fed on stdin, with and
without linking to the user's files (none of the fixtures' files exist here, so linking only
costs the look-up). The baseline is `python -c pass` measured in the same run; the target is
150 ms for the whole command on these machines.

Bytecode is allowed and a first, untimed run writes it, as `pip install` does (it compiles the
package): with PYTHONDONTWRITEBYTECODE=1 every run would recompile the catalog's sources.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "explain"


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def wall_time(command: list[str], stdin: bytes) -> float:
    start = time.perf_counter()
    subprocess.run(
        command, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV
    )
    return time.perf_counter() - start


def body(path: Path) -> bytes:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("#| ")).encode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()

    cases = sorted(FIXTURES.glob("*/*.txt"), key=lambda p: p.stat().st_size)
    short = FIXTURES / "device-mismatch" / "torch213-linear-input-on-other-device.txt"
    short = short if short.exists() else cases[len(cases) // 2]
    longest = cases[-1]
    explain = [sys.executable, "-m", "torchdoctor", "explain", "--lang", "en"]
    runs = {
        "python -c pass (baseline)": ([sys.executable, "-c", "pass"], b""),
        f"explain < {short.parent.name}/{short.name}": (explain, body(short)),
        f"explain --no-link < {short.parent.name}/{short.name}": (
            explain + ["--no-link"],
            body(short),
        ),
        f"explain < {longest.parent.name}/{longest.name} ({longest.stat().st_size} B)": (
            explain,
            body(longest),
        ),
    }
    for command, stdin in runs.values():
        wall_time(command, stdin)  # writes the bytecode
    results = {}
    for _ in range(args.repeat):  # interleaved, so that load on the machine hits all alike
        for name, (command, stdin) in runs.items():
            results.setdefault(name, []).append(wall_time(command, stdin))
    baseline = statistics.median(next(iter(results.values())))
    rows = [(name, statistics.median(times), min(times)) for name, times in results.items()]
    if args.markdown:
        print("| command | median ms | min ms | x baseline |")
        print("|---|---|---|---|")
        for name, median, best in rows:
            print(
                f"| `{name}` | {median * 1000:.0f} | {best * 1000:.0f} | {median / baseline:.2f} |"
            )
    else:
        for name, median, best in rows:
            print(
                f"{name:70} median {median * 1000:6.0f} ms  min {best * 1000:6.0f} ms  "
                f"{median / baseline:5.2f}x"
            )


if __name__ == "__main__":
    main()
