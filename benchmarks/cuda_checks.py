"""What only a GPU can show: run on a CUDA machine, it writes what it saw to --out.

1. Host synchronisations a watched training step adds (`torch.cuda.set_sync_debug_mode`): on a
   GPU each one stalls the queue of kernels, which a CPU run cannot measure.
2. Real CUDA errors of the installed torch, each raised by a small program in a subprocess; the
   output is given to `torchdoctor explain` as a user would paste it, and the same program is run
   under `torchdoctor run` (the run-time checks must speak before the device-side assert).
   Each program says which pitfall it makes; the table shows what the doctor answered.

Usage: python benchmarks/cuda_checks.py --out DIR    (then bench_watch.py --device cuda)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import torch
from torch import nn

import torchdoctor

# name -> (the code the doctor should name, or "" for an error outside the catalog; program)
PROGRAMS: dict[str, tuple[str, str]] = {
    "ce_target_out_of_range": (
        "TD208",
        """
        import torch
        import torch.nn.functional as F
        logits = torch.randn(8, 10, device="cuda", requires_grad=True)
        labels = torch.arange(8, device="cuda") + 3  # 10 classes, labels up to 10
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        print(loss.item())
        """,
    ),
    "nll_target_out_of_range": (
        "TD208",
        """
        import torch
        import torch.nn.functional as F
        logp = torch.log_softmax(torch.randn(4, 5, device="cuda"), dim=1)
        target = torch.tensor([0, 1, 5, 2], device="cuda")
        print(F.nll_loss(logp, target).item())
        """,
    ),
    "embedding_index_out_of_range": (
        "TD010",
        """
        import torch
        emb = torch.nn.Embedding(100, 16).cuda()
        ids = torch.tensor([[1, 2, 100]], device="cuda")
        print(emb(ids).sum().item())
        """,
    ),
    "model_on_gpu_input_on_cpu": (
        "TD003",
        """
        import torch
        model = torch.nn.Linear(8, 2).cuda()
        x = torch.randn(4, 8)
        print(model(x))
        """,
    ),
    "to_not_assigned": (
        "TD003",
        """
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).cuda()
        x = torch.randn(4, 8)
        x.to("cuda")
        print(model(x))
        """,
    ),
    "numpy_of_cuda_tensor": (
        "TD409",
        """
        import torch
        x = torch.randn(3, device="cuda")
        print(x.numpy())
        """,
    ),
    "invalid_device_ordinal": (
        "TD005",
        """
        import torch
        x = torch.zeros(2, device="cuda:7")
        print(x)
        """,
    ),
    "set_device_invalid": (
        "TD005",
        """
        import torch
        torch.cuda.set_device(5)
        """,
    ),
    "out_of_memory": (
        "TD006",
        """
        import torch
        free, total = torch.cuda.mem_get_info()
        blocks = [torch.empty(int(total * 0.6), dtype=torch.uint8, device="cuda") for _ in range(2)]
        """,
    ),
    "cuda_in_forked_worker": (
        "TD605",
        """
        import torch
        from torch.utils.data import DataLoader, Dataset

        class OnGpu(Dataset):
            def __len__(self):
                return 8
            def __getitem__(self, i):
                return torch.ones(2, device="cuda") * i

        torch.zeros(1, device="cuda")
        for batch in DataLoader(OnGpu(), batch_size=4, num_workers=2):
            print(batch)
        """,
    ),
    "pin_memory_of_cuda_tensors": (
        "",
        """
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        data = TensorDataset(torch.randn(8, 2, device="cuda"))
        for (batch,) in DataLoader(data, batch_size=4, pin_memory=True):
            print(batch)
        """,
    ),
    "dtype_double_input": (
        "TD004",
        """
        import torch
        model = torch.nn.Linear(8, 2).cuda()
        x = torch.randn(4, 8, dtype=torch.float64, device="cuda")
        print(model(x))
        """,
    ),
    "half_model_float_input": (
        "TD004",
        """
        import torch
        model = torch.nn.Conv2d(3, 8, 3).cuda().half()
        print(model(torch.randn(1, 3, 16, 16, device="cuda")))
        """,
    ),
    "cpu_index_of_cuda": (
        "TD003",
        """
        import torch
        table = torch.randn(10, 4)
        idx = torch.tensor([1, 2], device="cuda")
        print(table[idx])
        """,
    ),
    "load_gpu_checkpoint_without_cuda": (
        "TD501",
        """
        import os, subprocess, sys, torch
        torch.save({"w": torch.randn(3, device="cuda")}, "gpu.pth")
        code = "import torch; print(torch.load('gpu.pth'))"
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
        sys.exit(subprocess.run([sys.executable, "-c", code], env=env).returncode)
        """,
    ),
    "multinomial_bad_probabilities": (
        "TD007",
        """
        import torch
        probs = torch.tensor([[0.5, float("nan"), 0.5]], device="cuda")
        print(torch.multinomial(probs, 1).item())
        """,
    ),
}


def sync_counts(steps: int = 20) -> dict[str, float]:
    """Host synchronisations per training step on the GPU, plain and watched."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(64, 784, device="cuda")
    y = torch.randint(0, 10, (64,), device="cuda")

    def step() -> None:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    def count(mode: str) -> None:
        """Synchronisations per step (counts[mode]) and the lines that made them."""
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                for _ in range(steps):
                    step()
            finally:
                torch.cuda.set_sync_debug_mode("default")
        counts[mode] = len(caught) / steps
        counts["where " + mode] = sorted({f"{w.filename}:{w.lineno}" for w in caught})

    counts: dict = {}
    count("plain")
    watch = torchdoctor.watch(summary=False, live=False)
    try:
        count("watched")
    finally:
        watch.stop()
    return counts


def run_programs(out: Path) -> list[dict]:
    rows = []
    scratch = out / "programs"
    scratch.mkdir(parents=True, exist_ok=True)
    doctor = [sys.executable, "-m", "torchdoctor"]
    for name, (expected, code) in PROGRAMS.items():
        script = scratch / f"{name}.py"
        script.write_text(textwrap.dedent(code).lstrip(), encoding="utf-8")
        plain = _run([sys.executable, script.name], scratch)
        (out / f"{name}.err.txt").write_text(plain.stderr, encoding="utf-8")
        explained = _run([*doctor, "explain", "--format", "json", f"{name}.err.txt"], out)
        answers = _codes(explained.stdout)
        report = scratch / f"{name}.report.json"
        watched = _run([*doctor, "run", "--report-json", report.name, script.name], scratch)
        (out / f"{name}.run.txt").write_text(watched.stdout + watched.stderr, encoding="utf-8")
        ran = _run_codes(report) if report.exists() else []
        rows.append(
            {
                "program": name,
                "expected": expected,
                "exit": plain.returncode,
                "last line": (plain.stderr.strip().splitlines() or [""])[-1][:160],
                "explain": answers,
                "run": ran,
                "run exit": watched.returncode,
            }
        )
    return rows


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONUNBUFFERED="1", TORCHDOCTOR_LANG="en")
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def _codes(text: str) -> list:
    try:
        data = json.loads(text)
    except ValueError:
        return ["(no JSON)"]
    return [(f.get("code"), f.get("confidence")) for f in data.get("findings", [])]


def _run_codes(report: Path) -> list:
    """The run's own findings, then those explaining its crash (marked `crash`)."""
    data = json.loads(report.read_text(encoding="utf-8"))
    crash = (data.get("crash") or {}).get("findings", [])
    return [f["code"] for f in data.get("findings", [])] + [f"crash {f['code']}" for f in crash]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--syncs-only", action="store_true", help="skip the error programs")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    syncs = sync_counts()
    print(f"host synchronisations per step: plain {syncs['plain']}, watched {syncs['watched']}")
    print("  watched, from:", *syncs["where watched"], sep="\n    ")
    rows = [] if args.syncs_only else run_programs(args.out)
    for row in rows:
        print(json.dumps(row))
    (args.out / "results.json").write_text(
        json.dumps({"syncs": syncs, "programs": rows}, indent=1), encoding="utf-8"
    )


if __name__ == "__main__":
    main()
