"""`torchdoctor ckpt inspect` on a generated checkpoint of >= 1 GB, against `torch.load`.

    python benchmarks/bench_ckpt.py [--gigabytes 1.2] [--many 20000] [--repeat 3] [--markdown]

The checkpoint is written in a temporary directory: a ResNet-like state dict of float32
tensors (conv, BatchNorm with counters, linear layers) nested under "state_dict" next to an
epoch number, as training scripts save it. `--many N` adds a second one of N tiny tensors, where
reading the pickle (not the data) is all the work. Each command runs in a fresh process through
_measure.py, which reports wall time and the peak resident memory of the command. The
baseline is `torch.load(path, map_location="cpu", weights_only=True)` in the same run; the
file is read once before timing so that both read it from the page cache.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

MEASURE = Path(__file__).resolve().parent / "_measure.py"


def make_checkpoint(path: Path, gigabytes: float) -> int:
    import torch

    state, total, index = {}, 0, 0
    while total < gigabytes * 1024**3:
        name = f"layer{index // 4}.block{index % 4}"
        state[f"{name}.conv.weight"] = torch.randn(512, 512, 3, 3)
        for buffer in ("weight", "bias", "running_mean", "running_var"):
            state[f"{name}.bn.{buffer}"] = torch.randn(512)
        state[f"{name}.bn.num_batches_tracked"] = torch.tensor(100)
        total += 512 * 512 * 9 * 4 + 4 * 512 * 4 + 8
        index += 1
    state["fc.weight"] = torch.randn(1000, 512)
    state["fc.bias"] = torch.randn(1000)
    torch.save({"epoch": 90, "state_dict": state}, path)
    return len(state)


def make_many(path: Path, count: int) -> None:
    import torch

    state = {f"blocks.{i // 8}.layer{i % 8}.weight": torch.zeros(2, 2) for i in range(count)}
    torch.save({"epoch": 1, "state_dict": state}, path)


def measure(command: list[str]) -> dict:
    result = subprocess.run(
        [sys.executable, str(MEASURE), "--", *command], capture_output=True, text=True, check=True
    )
    data = json.loads(result.stdout)
    if data["returncode"] not in (0, 1):
        raise SystemExit(f"{command} failed: {data['stderr_tail']}")
    return data


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gigabytes", type=float, default=1.2)
    parser.add_argument("--many", type=int, default=0, help="also a checkpoint of N tiny tensors")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "big.pth"
        tensors = make_checkpoint(path, args.gigabytes)
        size = path.stat().st_size
        path.read_bytes()  # into the page cache, for both commands alike
        runs = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "torchdoctor ckpt inspect": [
                sys.executable,
                "-m",
                "torchdoctor",
                "ckpt",
                "inspect",
                str(path),
            ],
            "torchdoctor ckpt inspect --format json": [
                sys.executable,
                "-m",
                "torchdoctor",
                "ckpt",
                "inspect",
                str(path),
                "--format",
                "json",
            ],
            "torch.load (baseline)": [
                sys.executable,
                "-c",
                "import sys, torch; torch.load(sys.argv[1], map_location='cpu', weights_only=True)",
                str(path),
            ],
        }
        if args.many:
            many = Path(directory) / "many.pth"
            make_many(many, args.many)
            runs[f"torchdoctor ckpt inspect ({args.many} tensors)"] = [
                sys.executable,
                "-m",
                "torchdoctor",
                "ckpt",
                "inspect",
                str(many),
            ]
            runs[f"torch.load ({args.many} tensors)"] = [
                *runs["torch.load (baseline)"][:-1],
                str(many),
            ]
        results: dict[str, list[dict]] = {}
        for _ in range(args.repeat):
            for name, command in runs.items():
                results.setdefault(name, []).append(measure(command))
    wall = {name: statistics.median(r["wall_s"] for r in rows) for name, rows in results.items()}
    rss = {
        name: statistics.median(r["peak_rss_bytes"] for r in rows) for name, rows in results.items()
    }
    print(f"checkpoint: {size / 1024**3:.2f} GiB, {tensors} tensors, median of {args.repeat} runs")
    if args.markdown:
        print("| command | wall ms | peak RSS MB | x torch.load time | x torch.load memory |")
        print("|---|---|---|---|---|")
    for name in results:
        # Each row against torch.load of the same file.
        base = (
            f"torch.load ({args.many} tensors)"
            if name.endswith(" tensors)")
            else "torch.load (baseline)"
        )
        base_wall, base_rss = wall[base], rss[base]
        wall_s, rss_bytes = wall[name], rss[name]
        if args.markdown:
            print(
                f"| `{name}` | {wall_s * 1000:.0f} | {rss_bytes / 1024**2:.0f} | "
                f"{wall_s / base_wall:.3f} | {rss_bytes / base_rss:.3f} |"
            )
        else:
            print(
                f"{name:45} {wall_s * 1000:8.0f} ms {rss_bytes / 1024**2:8.0f} MB  "
                f"{wall_s / base_wall:6.3f}x time {rss_bytes / base_rss:6.3f}x memory"
            )


if __name__ == "__main__":
    main()
