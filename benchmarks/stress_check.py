"""Stress `torchdoctor check --jobs 2 --no-cache` for hangs: many runs, several at once.

Two trees: a real one (about 300 files; `--corpus`, default the timm sdist) and a generated one
(one flat 10,000-line module and a few small files, so the worker pool is used and one worker
holds a long task while the other finishes). Each tree gets `--runs` runs, `--concurrency` at a
time (the contention under which the old pool hung 1 run in 100 to 1 in 600), each with a time
limit of `--limit` seconds: a run still alive then is a hang, killed with its workers and
counted. It prints, per tree, hangs / runs, the exit codes seen, runs whose stderr held a
traceback or an internal error, and the median and longest wall time; it exits 1 when any run
hung or misbehaved.

    python benchmarks/stress_check.py --runs 200 --corpus /work/corpus/timm-1.0.31
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_CORPUS = "/work/corpus/timm-1.0.31"
FLAT_LINES = 10_000
SMALL_FILES = 9
CHECK_OK = (0, 1)  # 1 means findings


@dataclass
class Tally:
    runs: int = 0
    hangs: int = 0
    exit_codes: Counter = field(default_factory=Counter)
    bad_stderr: list[str] = field(default_factory=list)  # a traceback or an internal error
    seconds: list[float] = field(default_factory=list)

    def add(self, code: int | None, seconds: float, stderr: str) -> None:
        self.runs += 1
        if code is None:
            self.hangs += 1
            return
        self.exit_codes[code] += 1
        self.seconds.append(seconds)
        if "Traceback" in stderr or "internal error" in stderr or code not in CHECK_OK:
            self.bad_stderr.append(
                stderr.strip().splitlines()[-1]
                if stderr.strip()
                else f"exit {code}, nothing on stderr"
            )


def flat_tree(root: Path) -> Path:
    """One flat module of FLAT_LINES lines (a long script: views, train/eval switches,
    optimizer steps) and SMALL_FILES small files."""
    lines = [
        "import torch",
        "import torch.nn as nn",
        "",
        "model = nn.Linear(4, 4)",
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)",
        "x = torch.randn(8, 4)",
    ]
    step = 0
    while len(lines) < FLAT_LINES:
        lines += [
            f"y{step} = x.view(-1, 4)",
            f"z{step} = y{step}.transpose(0, 1).contiguous().view(4, -1)",
            "model.eval()",
            f"out{step} = model(z{step}.t())",
            "model.train()",
            f"loss{step} = out{step}.sum()",
            f"loss{step}.backward()",
            "optimizer.step()",
            "optimizer.zero_grad()",
            "",
        ]
        step += 1
    (root / "flat.py").write_text("\n".join(lines[:FLAT_LINES]) + "\n", encoding="utf-8")
    for number in range(SMALL_FILES):
        (root / f"small{number}.py").write_text(
            "import torch\nx = torch.zeros(3)\nx.cuda()\n", encoding="utf-8"
        )
    return root


def run_once(tree: Path, limit: float, scratch: Path) -> tuple[int | None, float, str]:
    """One check; (exit code or None for a hang, wall seconds, stderr)."""
    start = time.perf_counter()
    check = subprocess.Popen(
        [sys.executable, "-m", "torchdoctor", "check", "--jobs", "2", "--no-cache", str(tree)],
        cwd=scratch,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )  # its own group: a hung check is killed with its workers
    try:
        _, stderr = check.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(check.pid, signal.SIGKILL)
        check.communicate()
        return None, time.perf_counter() - start, ""
    return check.returncode, time.perf_counter() - start, stderr


def stress(
    name: str, tree: Path, runs: int, concurrency: int, limit: float, scratch: Path
) -> Tally:
    tally = Tally()
    with ThreadPoolExecutor(concurrency) as threads:
        for code, seconds, stderr in threads.map(
            lambda _: run_once(tree, limit, scratch), range(runs)
        ):
            tally.add(code, seconds, stderr)
            if tally.runs % 20 == 0:
                print(
                    f"  {name}: {tally.runs}/{runs} runs, {tally.hangs} hangs",
                    file=sys.stderr,
                    flush=True,
                )
    return tally


def report(rows: list[tuple[str, Tally]]) -> str:
    header = (
        f"{'tree':46} {'hangs/runs':>10}  {'exit codes':16} {'bad stderr':>10}  "
        f"{'median s':>8}  {'max s':>6}"
    )
    lines = [header, "-" * len(header)]
    for name, tally in rows:
        codes = ", ".join(f"{code}: {count}" for code, count in sorted(tally.exit_codes.items()))
        median = f"{statistics.median(tally.seconds):.2f}" if tally.seconds else "-"
        longest = f"{max(tally.seconds):.2f}" if tally.seconds else "-"
        lines.append(
            f"{name:46} {f'{tally.hangs}/{tally.runs}':>10}  {codes:16} "
            f"{len(tally.bad_stderr):>10}  {median:>8}  {longest:>6}"
        )
        lines += [f"    {line}" for line in sorted(set(tally.bad_stderr))]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus",
        default=os.environ.get("TORCHDOCTOR_CORPUS", DEFAULT_CORPUS),
        help=f"a real tree of about 300 files (default: {DEFAULT_CORPUS})",
    )
    parser.add_argument("--runs", type=int, default=200, help="runs per tree (default: 200)")
    parser.add_argument(
        "--concurrency", type=int, default=4, help="runs at a time, for contention (default: 4)"
    )
    parser.add_argument(
        "--limit",
        type=float,
        default=120.0,
        help="seconds after which a run counts as hung (default: 120)",
    )
    args = parser.parse_args()
    corpus = Path(args.corpus)
    if not corpus.is_dir():
        print(f"stress_check: no corpus at {corpus} (see benchmarks/README.md)", file=sys.stderr)
        return 2
    print(
        f"{sys.executable} -m torchdoctor check --jobs 2 --no-cache TREE; {args.runs} runs per "
        f"tree, {args.concurrency} at a time, {args.limit:g} s limit; {os.cpu_count()} CPUs"
    )
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        flat = flat_tree(Path(tempfile.mkdtemp(dir=scratch)))
        rows = []
        for name, tree in (
            (f"{corpus.name} (real)", corpus),
            (f"flat {FLAT_LINES:,}-line module + {SMALL_FILES} small files", flat),
        ):
            rows.append(
                (name, stress(name, tree, args.runs, args.concurrency, args.limit, scratch))
            )
    print(report(rows))
    return 1 if any(tally.hangs or tally.bad_stderr for _, tally in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
