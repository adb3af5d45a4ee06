"""What pausing the cyclic garbage collector during a check saves where the command line's own
tuning (`gc.freeze()` and a high threshold, lint/command.py) does not apply: `torchdoctor.check()`
from Python, the flake8 plugin, `explain` reading the failing file.

Checks a generated flat module (benchmarks/bench_scaling.py) with every rule, with Python's
default collector settings, once through `check_source` as shipped (collector paused) and once
through the function it wraps (collector running); CPU seconds, best of --repeat, in one process.
Usage: python benchmarks/bench_gc_pause.py [--lines N] [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _timing import best_cpu_seconds  # noqa: E402
from bench_scaling import flat_module  # noqa: E402

from torchdoctor.catalog import _registry  # noqa: E402
from torchdoctor.lint.checker import check_source  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    source = flat_module(args.lines)
    codes = frozenset(p.code for p in _registry.all_pitfalls())
    check_source(source, "generated.py", codes)  # warm the rule tables
    running = best_cpu_seconds(
        lambda: check_source.__wrapped__(source, "generated.py", codes), args.repeat
    )
    paused = best_cpu_seconds(lambda: check_source(source, "generated.py", codes), args.repeat)
    print(f"flat module of {args.lines:,} lines, every rule, CPU s best of {args.repeat}")
    print(
        f"collector running: {running:.3f}  paused: {paused:.3f}  paused / running: {paused / running:.2f}"
    )


if __name__ == "__main__":
    main()
