"""`check` does work in proportion to the code it reads (issue 11: two default rules rescanned
a block per node and took minutes on long files). The inputs are those of
benchmarks/bench_scaling.py; the work is counted (Python calls), never timed."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.catalog import all_pitfalls
from torchdoctor.lint.checker import check_source

ROOT = Path(__file__).resolve().parent.parent
# Doubling the input doubles linear work; quadratic work quadruples.
MOST_GROWTH = 2.5


def _load_benchmark():
    spec = importlib.util.spec_from_file_location(
        "bench_scaling", ROOT / "benchmarks" / "bench_scaling.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being made
    spec.loader.exec_module(module)
    return module


bench = _load_benchmark()


def _calls(source: str) -> int:
    """Python and built-in calls made by checking `source` with every rule, caches warm."""
    codes = frozenset(p.code for p in all_pitfalls())
    return bench._calls(lambda: check_source(source, "generated.py", codes))


def _aliases_in_one_block(count: int) -> str:
    """`b = a` again and again at the top of a script: each alias once looked at every later
    statement of its block (tensor-alias-not-copy)."""
    return "import torch\na = torch.zeros(3)\n" + "b = a\nc = 1\n" * count


@pytest.mark.parametrize(
    "make, size",
    [
        (bench.flat_module, 600),
        (bench.loop_body, 400),
        (bench.view_function, 150),
        (bench.module_init, 150),
        (lambda cells: bench.notebook_program(bench.notebook(cells)), 60),
        (bench.ddp_script, 600),
        (bench.inference_script, 600),
        (_aliases_in_one_block, 400),
    ],
    ids=[
        "flat module",
        "loop body",
        "view calls",
        "module __init__",
        "notebook",
        "ddp script",
        "inference script",
        "aliases in one block",
    ],
)
def test_doubling_the_input_at_most_doubles_the_work(make, size):
    small, large = _calls(make(size)), _calls(make(2 * size))
    assert large < MOST_GROWTH * small, f"work grew {large / small:.2f}x for twice the input"


def test_generated_inputs_reach_every_static_rule(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # as the benchmark does: neighbours are looked up there
    monkeypatch.setitem(bench.OPTIONS, "min_batch", 0)
    static = frozenset(p.code for p in all_pitfalls() if p.static_detectors)
    found: set[str] = set()
    for shape in bench.SHAPES:
        size = max(1, shape.base // 50)
        found |= set(bench.measure(shape, size, static, tmp_path, repeat=1, limit=60).findings)
    assert static - found == set()


def test_benchmark_runs_on_tiny_inputs():
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_scaling.py"),
            "--divide",
            "200",
            "--repeat",
            "1",
            "--min-batch",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode in (0, 1), result.stderr  # 1: the ratio target is not met
    rows = [
        line for line in result.stdout.splitlines() if line.startswith("| ") and " s |" not in line
    ]
    assert len(rows) == len(bench.SHAPES) * len(bench.SCALES)
    assert "worst check / parse:" in result.stdout
