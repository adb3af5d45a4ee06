"""Runtime checks of batchnorm-single-sample-batch, accumulated-loss-graph,
sampler-set-epoch-missing and dataloader-shm-exhausted: each end to end through
`torchdoctor run`'s runner on a small training script with the bug (and on its fixed twin
where the two runs are compared; test_watch_fixtures.py runs every twin), under torchrun where
ranks matter, and with `torchdoctor.watch()` on the cases around them (no false alarm, same
losses watched or not)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import FIXTURES, GLOO_TEARDOWN_ABORT, import_torch

torch = import_torch()
from torch import nn  # noqa: E402
from torch.utils.data import BatchSampler, DataLoader, TensorDataset  # noqa: E402
from torch.utils.data.distributed import DistributedSampler  # noqa: E402

import torchdoctor  # noqa: E402
from test_watch_fixtures import run_watched  # noqa: E402
from torchdoctor.catalog.data import td303_dataloader_shm_exhausted as td303  # noqa: E402

WATCH = FIXTURES / "watch"
MINE = "TD212,TD102,TD604,TD303"

# name -> (fixture, extra environment)
RUNS = {
    "batchnorm": ("batchnorm_single_sample_batch.py", {}),
    "loss-graph": ("accumulated_loss_graph.py", {}),
    "loss-graph-fixed": ("accumulated_loss_graph_fixed.py", {}),
    "set-epoch": ("sampler_set_epoch_missing.py", {}),
    "shm": ("dataloader_shm_exhausted.py", {"TORCHDOCTOR_SHM_FREE": str(8 * 2**20)}),
    "shm-fixed": ("dataloader_shm_exhausted_fixed.py", {"TORCHDOCTOR_SHM_FREE": str(8 * 2**30)}),
}


@pytest.fixture(scope="module")
def runs():
    """Every end-to-end run, through the runner in this process."""
    return {name: run_watched(fixture, env=env) for name, (fixture, env) in RUNS.items()}


# ---- batchnorm-single-sample-batch ---------------------------------------------------------


def test_batchnorm_last_batch_warned_at_first_step_before_the_crash(runs):
    run = runs["batchnorm"]
    assert run.exit_code == 1 and "Expected more than 1 value per channel" in run.stderr
    [finding] = run.findings()
    assert finding["name"] == "batchnorm-single-sample-batch"
    assert finding["step"] == 1 and finding["line"] == 18 and finding["module"] == "1"
    assert (
        "last batch of every epoch will hold 1 sample (161 samples, batch_size=32"
        in finding["message"]
    )
    # the warning came live, before the traceback of the crash
    assert run.stderr.index("TD212 batchnorm-single-sample-batch") < run.stderr.index("Traceback")


def _train_batches(loader, model, epochs=1, select=MINE):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with torchdoctor.watch(select=select, live=False, summary=False) as watcher:
        for _ in range(epochs):
            for x, y in loader:
                if len(x) == 1:
                    break  # stop before the crash these tests are about
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
    return watcher.findings


def _dataset(n, features=4):
    return TensorDataset(torch.randn(n, features), torch.randint(0, 2, (n,)))


def test_batchnorm_distributed_sampler_splits_per_rank():
    dataset = _dataset(130)  # 65 per rank of 2: the last batch of 32 holds one sample
    sampler = DistributedSampler(dataset, num_replicas=2, rank=1, shuffle=False)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
    [finding] = _train_batches(loader, model)
    assert finding.name == "batchnorm-single-sample-batch"
    assert "(65 samples, batch_size=32" in finding.message


def test_batchnorm_known_model_reported_at_the_loader():
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
    good, bad = DataLoader(_dataset(64), batch_size=32), DataLoader(_dataset(33), batch_size=32)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with torchdoctor.watch(select="TD212", live=False, summary=False) as watcher:
        for x, y in good:
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        assert watcher.findings == []
        iterator = iter(bad)  # the model is known: reported before any batch
        assert [f.name for f in watcher.findings] == ["batchnorm-single-sample-batch"]
        del iterator


def test_batchnorm_no_false_alarms():
    # BatchNorm2d with more than one pixel per channel normalises one image without error
    images = TensorDataset(torch.randn(33, 3, 8, 8), torch.randint(0, 2, (33,)))
    conv = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.LazyLinear(2))
    assert _train_batches(DataLoader(images, batch_size=32), conv) == []
    mlp = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
    # no BatchNorm; a custom batch sampler; drop_last; a validation loader in eval mode
    assert _train_batches(DataLoader(_dataset(33), batch_size=32), nn.Linear(4, 2)) == []
    batches = BatchSampler(range(33), batch_size=32, drop_last=True)
    assert _train_batches(DataLoader(_dataset(33), batch_sampler=batches), mlp) == []
    loader = DataLoader(_dataset(33), batch_size=32, drop_last=True)
    assert _train_batches(loader, mlp) == []
    mlp.eval()
    with torchdoctor.watch(select="TD212", live=False, summary=False) as watcher, torch.no_grad():
        for x, _ in DataLoader(_dataset(33), batch_size=32):
            mlp(x)
    assert watcher.findings == []


# ---- accumulated-loss-graph -----------------------------------------------------------------


def test_loss_graph_end_to_end(runs):
    run = runs["loss-graph"]
    assert run.exit_code == 0
    [finding] = run.findings()
    assert finding["name"] == "accumulated-loss-graph" and finding["step"] == 4
    assert (
        "graphs of the losses of 3 earlier steps (steps 1 to 3) are still alive"
        in finding["message"]
    )
    fixed = runs["loss-graph-fixed"]
    assert fixed.exit_code == 0 and fixed.findings() == []
    # watched, both compute the same losses
    assert run.stdout.splitlines()[:2] == fixed.stdout.splitlines()[:2]


def _steps(keep, steps=6, micro=1):
    """Train a tiny regression; `keep(loss, kept)` is what the user does with each loss."""
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    kept = []
    losses = []
    with torchdoctor.watch(select="TD102", live=False, summary=False) as watcher:
        for _ in range(steps):
            optimizer.zero_grad()
            for _ in range(micro):
                x = torch.randn(8, 3)
                loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True)) / micro
                loss.backward()
                keep(loss, kept)
            optimizer.step()
            losses.append(loss.item())
    return [f.message for f in watcher.findings], losses


def test_loss_graph_list_of_losses():
    messages, _ = _steps(lambda loss, kept: kept.append(loss))
    assert len(messages) == 1 and "steps 1 to 3" in messages[0]


def test_loss_graph_no_false_alarms():
    assert _steps(lambda loss, kept: kept.append(loss.item()))[0] == []
    assert _steps(lambda loss, kept: kept.append(loss.detach()))[0] == []
    # one previous loss kept for comparison
    assert _steps(lambda loss, kept: kept.__setitem__(slice(None), [loss]))[0] == []
    # gradient accumulation: the micro-batch losses of one step summed, reset at each step

    def per_step_total(loss, kept):
        if len(kept) == 4:
            kept.clear()
        kept.append(loss)

    assert _steps(per_step_total, micro=4)[0] == []


def test_loss_graph_watched_run_computes_the_same():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    unwatched = []
    for _ in range(6):
        optimizer.zero_grad()
        x = torch.randn(8, 3)
        loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        loss.backward()
        optimizer.step()
        unwatched.append(loss.item())
    assert _steps(lambda loss, kept: kept.append(loss))[1] == unwatched


# ---- sampler-set-epoch-missing --------------------------------------------------------------


def test_set_epoch_end_to_end(runs):
    run = runs["set-epoch"]
    [finding] = run.findings()
    assert run.exit_code == 0 and finding["name"] == "sampler-set-epoch-missing"
    assert finding["line"] == 26 and finding["step"] == 5  # the second epoch's loop
    assert "iterated again with epoch 0" in finding["message"]


def _epochs(sampler, set_epoch, epochs=3, batch_sampler=False):
    dataset = _dataset(32)
    if batch_sampler:
        loader = DataLoader(dataset, batch_sampler=BatchSampler(sampler, 8, drop_last=False))
    else:
        loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    with torchdoctor.watch(select="TD604", live=False, summary=False) as watcher:
        for epoch in range(epochs):
            set_epoch(sampler, epoch)
            for _ in loader:
                pass
    return watcher.findings


def test_set_epoch_cases():
    def sampler(shuffle=True):
        return DistributedSampler(_dataset(32), num_replicas=2, rank=0, shuffle=shuffle)

    def never(s, epoch):
        return None

    def constant(s, epoch):
        s.set_epoch(0)

    assert len(_epochs(sampler(), constant)) == 1
    assert len(_epochs(sampler(), never, batch_sampler=True)) == 1
    assert _epochs(sampler(shuffle=False), never) == []  # the order does not depend on it
    assert _epochs(sampler(), DistributedSampler.set_epoch) == []
    assert _epochs(sampler(), never, epochs=1) == []


def test_set_epoch_under_torchrun(tmp_path):
    """Two ranks with gloo: one report per rank, each with the finding."""
    report = tmp_path / "report.json"
    # This interpreter's torchrun (a `torchrun` on PATH may belong to another Python);
    # --standalone: the rendezvous store binds a free port itself, no fixed port to collide on.
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "torchdoctor",
        "run",
        "--report-json",
        str(report),
        str(WATCH / "sampler_set_epoch_missing.py"),
    ]
    env = {**os.environ, "NO_COLOR": "1", "TORCHDOCTOR_LANG": "en"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    if done.returncode != 0 and GLOO_TEARDOWN_ABORT in done.stderr:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    for rank in (0, 1):
        data = json.loads((tmp_path / f"report.rank{rank}.json").read_text())
        assert [(f["name"], f["rank"]) for f in data["findings"]] == [
            ("sampler-set-epoch-missing", rank)
        ]


# ---- dataloader-shm-exhausted ---------------------------------------------------------------


def test_shm_end_to_end(runs):
    run = runs["shm"]
    [finding] = run.findings()
    assert run.exit_code == 0 and finding["name"] == "dataloader-shm-exhausted"
    assert finding["step"] == 1 and finding["line"] == 19  # the loop over the loader
    assert (
        "keeps up to 4 batches of 3.0 MB in shared memory (num_workers=2 x "
        "prefetch_factor=2), about 12.0 MB, but /dev/shm has only 8.0 MB free"
    ) in finding["message"]
    fixed = runs["shm-fixed"]
    assert fixed.exit_code == 0 and fixed.findings() == []
    assert run.stdout == fixed.stdout  # same loss: the first batch is observed, never fetched


def _first_batches(loader, epochs=2):
    with torchdoctor.watch(select="TD303", live=False, summary=False) as watcher:
        seen = [[y.tolist() for _, y in loader] for _ in range(epochs)]
    return watcher.findings, seen


def test_shm_in_process(monkeypatch):
    monkeypatch.setattr(td303, "shm_free", lambda: 10_000)
    dataset = TensorDataset(torch.randn(64, 100), torch.arange(64))
    torch.manual_seed(0)
    loader = DataLoader(dataset, batch_size=16, num_workers=1, shuffle=True, prefetch_factor=4)
    found, watched = _first_batches(loader)
    assert len(found) == 1  # once per loader, not once per epoch
    assert "up to 4 batches of 6.4 KB" in found[0].message
    torch.manual_seed(0)
    unwatched = [[y.tolist() for _, y in loader] for _ in range(2)]
    assert watched == unwatched  # same data order
    # without workers nothing goes through shared memory
    assert _first_batches(DataLoader(dataset, batch_size=16))[0] == []
    monkeypatch.setattr(td303, "shm_free", lambda: None)  # no /dev/shm (macOS, Windows)
    assert _first_batches(DataLoader(dataset, batch_size=16, num_workers=1))[0] == []


def test_shm_batch_bytes_of_nested_batches():
    batch = {"image": torch.zeros(2, 3, dtype=torch.float16), "meta": [torch.zeros(4), "name"]}
    assert td303._tensor_bytes(batch) == 2 * 3 * 2 + 4 * 4
    assert td303._tensor_bytes(["not", "tensors"]) == 0


def test_shm_free_env_override(monkeypatch):
    monkeypatch.setenv(td303.SHM_FREE_ENV, "12345")
    assert td303.shm_free() == 12345
    monkeypatch.delenv(td303.SHM_FREE_ENV)
    monkeypatch.setattr(td303, "SHM_PATH", "/nonexistent/shm")
    assert td303.shm_free() is None


def test_first_batch_wrapper_only_when_wanted():
    iterator_class = torch.utils.data.dataloader._BaseDataLoaderIter
    original = iterator_class.__next__
    with torchdoctor.watch(select="TD212", live=False, summary=False):
        assert iterator_class.__next__ is original
    with torchdoctor.watch(select="TD303", live=False, summary=False):
        assert iterator_class.__next__ is not original
    assert iterator_class.__next__ is original
