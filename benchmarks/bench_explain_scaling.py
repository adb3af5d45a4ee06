"""Does `torchdoctor explain` stay linear? Its time on generated inputs of growing size, divided by
the time of a plain pass over the same text.

Each shape is generated at 1x, 2x and 4x its base size, from the inputs that used to make the
explainer quadratic or hang: one long token in a message, a frame line with a long run of
spaces, thousands of tracebacks in one log, a long exception chain, a traceback of 100k frames,
one enormous line, a pytest report of thousands of failures. For each input the explainer runs
in this process as `torchdoctor explain --no-link` does (parse, every signature, rendering), and
the table shows its CPU time over the CPU time of the baseline, a pass that looks at every
character once (splitting the text into lines, and each line into words; the best of --repeat
runs of each). A linear explainer keeps that ratio flat as
the size doubles: the target is that it grows by less than 1.5x per doubling (quadratic: 2x).

    python benchmarks/bench_explain_scaling.py [--repeat 5] [--markdown]
"""

from __future__ import annotations

import argparse
import platform
import re
import sys
from typing import Callable

from _timing import best_cpu_seconds

import torchdoctor
from torchdoctor.explain.match import diagnose
from torchdoctor.explain.parse import parse_text
from torchdoctor.explain.render import as_text

SCALES = (1, 2, 4)
_WORDS = re.compile(r"\S+")
GROWTH_TARGET = 1.5
DEVICE = (
    "RuntimeError: Expected all tensors to be on the same device, but found at least two "
    "devices, cuda:{k} and cpu!"
)


def _traceback(k: int) -> str:
    return (
        'Traceback (most recent call last):\n  File "train.py", line 8, in <module>\n'
        f"    out = model(images)\n{DEVICE.format(k=k)}\n"
    )


SHAPES: dict[str, tuple[int, Callable[[int], str]]] = {
    "one long token (chars)": (250_000, lambda n: "RuntimeError: " + "x" * n + "\n"),
    "spaces in a frame line (chars)": (
        250_000,
        lambda n: (
            'Traceback (most recent call last):\n  File "a.py", line 1, in f'
            + " " * n
            + "x\nValueError: x\n"
        ),
    ),
    "tracebacks in one log": (1_000, lambda n: "".join(_traceback(k) for k in range(n))),
    "exception chain (links)": (
        2_500,
        lambda n: "\nDuring handling of the above exception, another exception occurred:\n\n".join(
            f'Traceback (most recent call last):\n  File "a.py", line {k}, in f\n    x\n'
            f"ValueError: v{k}\n"
            for k in range(n)
        ),
    ),
    "frames in one traceback": (
        25_000,
        lambda n: (
            "Traceback (most recent call last):\n"
            + "".join(f'  File "/w/m{k}.py", line {k}, in f{k}\n    g()\n' for k in range(n))
            + "RecursionError: too deep\n"
        ),
    ),
    "one enormous line (words)": (100_000, lambda n: "RuntimeError: " + "ab cd, " * n + "\n"),
    "pytest failures": (
        2_000,
        lambda n: "".join(
            f"____ test_{k} ____\n\n    def test_{k}():\n>       assert f()\n"
            f"E       AssertionError: bad {k}\n\ntests/test_x.py:{k}: AssertionError\n"
            for k in range(n)
        ),
    ),
}


def _explain(text: str) -> None:
    as_text(diagnose(parse_text(text), "en", link=False))


def _baseline(text: str) -> None:
    for line in text.split("\n"):
        _WORDS.findall(line)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()

    _explain(_traceback(0))  # imports and the catalog, untimed
    rows, worst = [], 0.0
    for name, (base, make) in SHAPES.items():
        previous = None
        for scale in SCALES:
            text = make(base * scale)
            explain = best_cpu_seconds(lambda: _explain(text), args.repeat)
            floor = max(best_cpu_seconds(lambda: _baseline(text), args.repeat), 1e-6)
            ratio = explain / floor
            growth = ratio / previous if previous else None
            worst = max(worst, growth or 0.0)
            rows.append((name, base * scale, len(text), explain, floor, ratio, growth))
            previous = ratio
    print(
        f"torchdoctor {torchdoctor.__version__}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}; best of {args.repeat} runs (CPU time)"
    )
    if args.markdown:
        print("\n| shape | size | text bytes | explain s | baseline s | x baseline | growth |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, size, chars, explain, floor, ratio, growth in rows:
            grown = f"{growth:.2f}" if growth else ""
            print(
                f"| {name} | {size:,} | {chars:,} | {explain:.3f} | {floor:.4f} | {ratio:.1f} "
                f"| {grown} |"
            )
    else:
        for name, size, chars, explain, floor, ratio, growth in rows:
            grown = f"{growth:.2f}" if growth else "-"
            print(f"{name:32} {size:>8,} {explain:8.3f} s  x{ratio:7.1f}  growth {grown}")
    verdict = "met" if worst < GROWTH_TARGET else "NOT met"
    print(
        f"\nlargest growth of the ratio per doubling: {worst:.2f} "
        f"(target < {GROWTH_TARGET}): {verdict}"
    )
    sys.exit(0 if worst < GROWTH_TARGET else 1)


if __name__ == "__main__":
    main()
