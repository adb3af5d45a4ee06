"""ddp-loader-without-distributed-sampler (TD607) reads the project around a DDP script: a
DistributedSampler or an IterableDataset in another module makes a loader without a sampler
fine, and so does a framework that shards loaders itself."""

from __future__ import annotations

import subprocess
import sys

TRAIN = (
    "import torch\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    "from torch.utils.data import DataLoader\n"
    "from data import make_dataset\n"
    "\n"
    "model = DDP(torch.nn.Linear(4, 1))\n"
    "loader = DataLoader(make_dataset(), batch_size=8, shuffle=True)\n"
    "for x, y in loader:\n"
    "    torch.nn.functional.mse_loss(model(x), y).backward()\n"
)
DATASET = "import torch\n\n\ndef make_dataset():\n    return torch.utils.data.{}(...)\n"


def _check(root):
    return subprocess.run(
        [sys.executable, "-m", "torchdoctor", "check", "--no-cache", "--select", "TD607", "."],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _project(root, dataset_class="TensorDataset", train=TRAIN):
    (root / "pyproject.toml").write_text("")
    (root / "train.py").write_text(train)
    (root / "data.py").write_text(DATASET.format(dataset_class))


def test_a_ddp_script_whose_loader_has_no_sampler_is_reported(tmp_path):
    _project(tmp_path)
    run = _check(tmp_path)
    assert run.returncode == 1, run.stderr
    assert "train.py:7:10: TD607 `loader` shuffles with no sampler" in run.stdout
    assert "`DDP` (line 6)" in run.stdout


def test_a_distributed_sampler_in_another_module_is_trusted(tmp_path):
    _project(tmp_path)
    (tmp_path / "samplers.py").write_text(
        "from torch.utils.data.distributed import DistributedSampler\n\n\n"
        "def shard(loader):\n    return DistributedSampler(loader.dataset)\n"
    )
    run = _check(tmp_path)
    assert run.returncode == 0 and "TD607" not in run.stdout, run.stdout


def test_an_iterable_dataset_in_the_project_is_not_sampled(tmp_path):
    _project(tmp_path, dataset_class="IterableDataset")
    run = _check(tmp_path)
    assert run.returncode == 0 and "TD607" not in run.stdout, run.stdout


def test_a_framework_that_prepares_loaders_is_trusted(tmp_path):
    _project(tmp_path, train="import accelerate\n" + TRAIN)
    run = _check(tmp_path)
    assert run.returncode == 0 and "TD607" not in run.stdout, run.stdout


def test_the_rule_is_on_by_default(tmp_path):
    _project(tmp_path)
    run = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "check", "--no-cache", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "train.py:7:10: TD607" in run.stdout, run.stdout
