"""Step-time overhead of watching a training run (`torchdoctor run` / `torchdoctor.watch()`).

Three CPU workloads (a small CNN, an MLP, a deep MLP of ~50 modules), batch 64. In one
process, blocks of steps alternate between plain, watched, and under
`torch.autograd.set_detect_anomaly(True)` (for reference), so that drift of the machine hits
every mode alike (plain and watched swap places every other block); the table shows the median
plain step time, and for the other modes the median over blocks of each block's step time over
the plain step time of the same block (paired: drift between blocks cancels), with the
interquartile range of the watched ratio, which says how far one run can be trusted. Each
block's first 5 steps are untimed (a run is watched by one session for
thousands of steps); the watch session's start-up is shown on its own, in milliseconds.

`--cpu-time` times each block by the CPU time of the process (every thread) instead of the
wall clock: on a machine shared with other work, the time the process waits for a core is
then not counted, which is most of the noise there.
`--device cuda` runs the workloads on a GPU (the clock then waits for the GPU at each block's
start and end); the watcher's host synchronisations cost there what they never cost on a CPU.
Usage: python benchmarks/bench_watch.py [--blocks N] [--steps N] [--cpu-time] [--threads N]
                                        [--device cuda]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn

import torchdoctor


def cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, 10),
    )


def mlp() -> nn.Module:
    return nn.Sequential(
        nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10)
    )


def deep_mlp() -> nn.Module:
    layers: list[nn.Module] = []
    for _ in range(25):
        layers += [nn.Linear(256, 256), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(256, 10))


def resnet_like() -> nn.Module:
    def block(width: int) -> nn.Module:
        return nn.Sequential(
            nn.Conv2d(width, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
        )

    return nn.Sequential(
        nn.Conv2d(3, 64, 3, padding=1),
        block(64),
        block(64),
        nn.Conv2d(64, 128, 3, stride=2, padding=1),
        block(128),
        block(128),
        nn.Conv2d(128, 256, 3, stride=2, padding=1),
        block(256),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(256, 10),
    )


# A GPU runs the small workloads faster than Python queues their kernels: it also gets one
# whose kernels take longer than queueing them, as training a real network does.
GPU_WORKLOADS = {"ResNet-like CNN (batch 128, 32x32)": (resnet_like, (128, 3, 32, 32))}

WORKLOADS = {
    "small CNN": (cnn, (64, 3, 32, 32)),
    "MLP": (mlp, (64, 784)),
    "deep MLP (51 modules)": (deep_mlp, (64, 256)),
}
MODES = ("plain", "watched", "anomaly")
WARMUP = 5


def measure(
    make,
    shape,
    blocks: int,
    steps: int,
    clock=time.perf_counter,
    device: str = "cpu",
    user_sync: bool = False,
    ignore: tuple[str, ...] = (),
) -> dict[str, float]:
    torch.manual_seed(0)
    model = make().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(*shape, device=device)
    y = torch.randint(0, 10, (shape[0],), device=device)
    if device.startswith("cuda"):
        # Kernels run asynchronously: a block ends when its last kernel has, not when the
        # Python loop has queued it.
        base_clock = clock

        def clock() -> float:
            torch.cuda.synchronize()
            return base_clock()

    def step() -> None:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if user_sync:
            loss.item()  # what most loops do to log the loss: one synchronisation a step

    for _ in range(10):
        step()
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    starts: list[float] = []
    for block in range(blocks):
        # Plain and watched swap places every other block: neither always runs first.
        order = MODES if block % 2 == 0 else ("watched", "plain", "anomaly")
        for mode in order:
            begin = clock()
            watch = (
                torchdoctor.watch(summary=False, live=False, ignore=ignore)
                if mode == "watched"
                else None
            )
            torch.autograd.set_detect_anomaly(mode == "anomaly")
            # Every mode's first steps are untimed: a run watches thousands of steps with one
            # session, so what matters is the steady state; the session's start (hooks in,
            # models found, first checks) is a one-time cost, reported on its own.
            for _ in range(WARMUP):
                step()
            if watch is not None:
                starts.append(clock() - begin)
            start = clock()
            for _ in range(steps):
                step()
            times[mode].append((clock() - start) / steps)
            torch.autograd.set_detect_anomaly(False)
            if watch is not None:
                watch.stop()
    result = {mode: statistics.median(values) for mode, values in times.items()}
    result["start"] = statistics.median(starts) - WARMUP * result["plain"]
    # Each block's watched and anomaly steps over its own plain steps, run next to them: the
    # machine's drift between blocks cancels, which a ratio of medians over all blocks keeps.
    for mode in ("watched", "anomaly"):
        ratios = [t / p for t, p in zip(times[mode], times["plain"])]
        result[f"{mode} ratio"] = statistics.median(ratios)
        if mode == "watched" and len(ratios) >= 4:
            quartiles = statistics.quantiles(ratios, n=4)
            result["spread"] = (quartiles[0], quartiles[2])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=15)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--cpu-time", action="store_true", help="time by CPU time, not wall time")
    parser.add_argument("--threads", type=int, help="torch's intra-op threads (default: torch's)")
    parser.add_argument(
        "--device", default="cpu", help="where the workloads run (e.g. cuda; default: cpu)"
    )
    parser.add_argument(
        "--user-sync", action="store_true", help="each step reads its loss (`loss.item()`)"
    )
    parser.add_argument("--ignore", action="append", default=[], help="a check not to run")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {args.device}, "
        f"{args.blocks} blocks of {args.steps} steps per mode\n"
    )
    print(
        "| workload | plain step | watched | watched, middle half of blocks "
        "| set_detect_anomaly(True) | session start |"
    )
    print("|---|---|---|---|---|---|")
    overheads = []
    workloads = WORKLOADS if args.device == "cpu" else {**WORKLOADS, **GPU_WORKLOADS}
    for name, (make, shape) in workloads.items():
        result = measure(
            make,
            shape,
            args.blocks,
            args.steps,
            time.process_time if args.cpu_time else time.perf_counter,
            args.device,
            args.user_sync,
            tuple(args.ignore),
        )
        plain = result["plain"]
        watched = result["watched ratio"]
        overheads.append(watched - 1)
        low, high = result.get("spread", (watched, watched))
        print(
            f"| {name} | {plain * 1e3:.2f} ms | {watched:.3f}x | {low:.3f}x-{high:.3f}x | "
            f"{result['anomaly ratio']:.2f}x | {result['start'] * 1e3:.1f} ms |"
        )
    print(
        f"\nwatch overhead: median {statistics.median(overheads):+.1%}, "
        f"worst {max(overheads):+.1%} (target: median <= 3 %, worst <= 10 %)"
    )


if __name__ == "__main__":
    main()
