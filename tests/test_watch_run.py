"""`torchdoctor run` end to end: through the command line on a buggy script
(test_watch_fixtures.py runs every fixture script and its fixed twin), NaN findings that say where, and the
program runs exactly as under `python` (argv, __main__, exit code, stdin, crash output)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import FIXTURES, GLOO_TEARDOWN_ABORT, run_cli
from test_watch_fixtures import run_watched

WATCH = FIXTURES / "watch"


def watched(script, tmp_path, *args):
    """Through the command line, in a fresh interpreter."""
    report = tmp_path / "report.json"
    result = run_cli("run", "--report-json", str(report), str(script), *args, cwd=WATCH)
    return result, json.loads(report.read_text(encoding="utf-8"))


def test_a_bug_through_the_command_line(tmp_path):
    result, report = watched(WATCH / "missing_zero_grad.py", tmp_path)
    assert result.returncode == 0, result.stderr
    assert [f["name"] for f in report["findings"]] == ["missing-zero-grad"]
    assert "TD201 missing-zero-grad (step 2)" in result.stderr  # the live line and the summary
    assert "watched 6 step(s): 1 finding(s)" in result.stderr


@pytest.mark.parametrize(
    "name, where",
    [
        ("nan_input", "input batch of `Sequential` already holds NaN/Inf (`args[0]`)"),
        ("nan_module", "first module whose output is NaN/Inf is `2` (Normalize)"),
        ("nan_backward", "backward of `PowBackward0` made the first NaN/Inf (nan_backward.py:13)"),
        ("nan_loss_log", "outputs of `Sequential` are finite: the loss computation makes it"),
    ],
)
def test_nan_is_localised(name, where):
    [finding] = run_watched(f"{name}.py").findings()
    assert finding["name"] == "nan-loss"
    assert where in finding["message"]


def test_report_has_metrics():
    report = run_watched("missing_zero_grad_fixed.py").report
    metrics = report["metrics"]
    assert metrics["step"] == list(range(1, 11))
    assert len(metrics["loss"]) == len(metrics["lr"]) == 10
    assert all(isinstance(v, float) for v in metrics["loss"]) and set(metrics["lr"]) == {0.05}
    assert metrics["grad_norm_step"] == [1]
    assert set(metrics["grad_norm"]) == {"0", "2"}
    assert report["crash"] is None and report["exit_code"] == 0


PROGRAM = """
import os, sys
print("argv", sys.argv[1:], "name", __name__, "cwd", os.getcwd() == {cwd!r})
print("path0", sys.path[0] == {dir!r})
print("stdin", sys.stdin.read().strip())
sys.exit(int(sys.argv[1]))
"""


def test_program_runs_as_under_python(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM.format(cwd=str(tmp_path), dir=str(tmp_path)))
    result = run_cli("run", str(script), "7", "--lr", "3", cwd=tmp_path, stdin="hello\n")
    plain = subprocess.run(
        [sys.executable, str(script), "7", "--lr", "3"],
        cwd=tmp_path,
        input="hello\n",
        capture_output=True,
        text=True,
    )
    assert result.returncode == plain.returncode == 7
    assert result.stdout == plain.stdout
    assert "argv ['7', '--lr', '3'] name __main__ cwd True" in result.stdout


def test_module_mode(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "train.py").write_text(
        "import sys\nprint('module', __name__, sys.argv[1:], sys.argv[0].endswith('train.py'))\n"
    )
    result = run_cli("run", "-m", "pkg.train", "--epochs", "2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "module __main__ ['--epochs', '2'] True\n"


CRASH = """
import torch
from torch import nn

def train_step(model, images):
    logits = model(images)
    return logits @ torch.ones(5)

train_step(nn.Linear(10, 3), torch.randn(4, 10))
"""


def test_crash_traceback_unchanged_then_explained_with_live_context(tmp_path):
    script = tmp_path / "crash.py"
    script.write_text(CRASH)
    report = tmp_path / "r.json"
    result = run_cli("run", "--report-json", str(report), "crash.py", cwd=tmp_path)
    plain = subprocess.run(
        [sys.executable, "crash.py"], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == plain.returncode == 1
    assert result.stderr.startswith(plain.stderr)  # python's traceback first, unchanged
    assert "torchdoctor" not in plain.stderr
    explained = result.stderr[len(plain.stderr) :]
    assert "images: (4, 10) float32 cpu" in explained
    assert "logits: (4, 3) float32 cpu" in explained
    data = json.loads(report.read_text())
    assert data["exit_code"] == 1
    assert data["crash"]["error"]["type"] == "RuntimeError"
    [frame] = data["crash"]["context"]
    assert frame["function"] == "train_step"
    assert {t["name"] for t in frame["tensors"]} == {"images", "logits"}


def test_options_before_the_script_and_ignore(tmp_path):
    report = tmp_path / "r.json"
    result = run_cli(
        "run",
        "--ignore",
        "missing-zero-grad",
        "--report-json",
        str(report),
        str(WATCH / "missing_zero_grad.py"),
        cwd=WATCH,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(report.read_text())["findings"] == []


TORCHRUN = """
import torch, torch.distributed as dist
from torch import nn
dist.init_process_group("gloo")
torch.manual_seed(dist.get_rank())
model = nn.parallel.DistributedDataParallel(nn.Linear(4, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    loss.backward()  # never cleared: missing-zero-grad on every rank
    optimizer.step()
dist.barrier()  # without it a rank can tear gloo down under the other: SIGABRT at exit
dist.destroy_process_group()
"""


def test_torchrun_writes_one_rank_tagged_report_per_rank(tmp_path):
    (tmp_path / "ddp.py").write_text(TORCHRUN)
    result = _torchrun_under_the_doctor(tmp_path)
    if result.returncode != 0 and GLOO_TEARDOWN_ABORT in result.stderr:
        for report in tmp_path.glob("r*.json"):  # once more, from scratch
            report.unlink()
        result = _torchrun_under_the_doctor(tmp_path)
    assert result.returncode == 0, result.stderr
    for rank in (0, 1):
        data = json.loads((tmp_path / f"r.rank{rank}.json").read_text())
        assert data["rank"] == rank
        assert [(f["name"], f["rank"]) for f in data["findings"]] == [("missing-zero-grad", rank)]
    assert not (tmp_path / "r.json").exists()


def _torchrun_under_the_doctor(tmp_path):
    env = {**os.environ, "TORCHDOCTOR_LANG": "en", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        # --standalone: the rendezvous store binds a free port itself (a fixed port collided
        # with other runs in flight)
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            "-m",
            "torchdoctor",
            "run",
            "--report-json",
            "r.json",
            "ddp.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
