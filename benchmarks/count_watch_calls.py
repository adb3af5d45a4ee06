"""Work the watcher adds to a training step, counted rather than timed: exact on a busy machine.

    python benchmarks/count_watch_calls.py [--steps N]

Trains bench_watch's MLP (AdamW, batch 64, one thread) plain and watched, and counts with
`sys.setprofile` the Python functions and the C functions (torch kernels' Python entry points
included) each step calls. Two commits compare by running it with `PYTHONPATH` at each: the
difference in calls per step is the difference in work, where timing on a shared machine
drifts by more than the watcher's whole cost.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

import torch
from torch import nn

import torchdoctor


def count(watched: bool, steps: int) -> Counter:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(
        nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10)
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))

    def step() -> None:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    for _ in range(10):
        step()
    watch = torchdoctor.watch(summary=False, live=False) if watched else None
    for _ in range(25):  # past the first steps' one-time work
        step()
    calls: Counter = Counter()

    def profile(frame, event, arg) -> None:
        if event == "call":
            calls["torchdoctor" if "torchdoctor" in frame.f_code.co_filename else "python"] += 1
        elif event == "c_call":
            calls["C"] += 1

    sys.setprofile(profile)
    for _ in range(steps):
        step()
    sys.setprofile(None)
    if watch is not None:
        watch.stop()
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    plain, watched = count(False, args.steps), count(True, args.steps)
    print(f"torchdoctor from {torchdoctor.__file__}")
    print("calls per step        plain   watched   added")
    for key, label in (("python", "python"), ("torchdoctor", "the doctor's"), ("C", "C")):
        a, b = plain[key] / args.steps, watched[key] / args.steps
        print(f"{label:<20}{a:8.1f}{b:10.1f}{b - a:8.1f}")
    a, b = sum(plain.values()) / args.steps, sum(watched.values()) / args.steps
    print(f"{'all':<20}{a:8.1f}{b:10.1f}{b - a:8.1f}")


if __name__ == "__main__":
    main()
