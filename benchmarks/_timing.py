"""Timing shared by the benchmarks."""

from __future__ import annotations

import time
from typing import Callable


def best_cpu_seconds(action: Callable[[], object], repeat: int) -> float:
    """The least CPU time (this process) of `repeat` runs of `action`: the least is the run
    that other work on the machine disturbed least."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        action()
        best = min(best, time.process_time() - start)
    return best
