"""What watching promises: the run computes the same values, every hook goes away, nesting is
safe, the doctor's own failures never stop training, AMP and torch.compile raise no alarm."""

from __future__ import annotations

import pytest
from conftest import import_torch

torch = import_torch()
from torch import nn  # noqa: E402

import torchdoctor  # noqa: E402
from torchdoctor.catalog import get  # noqa: E402
from torchdoctor.watch.monitor import Monitor  # noqa: E402


def train(steps=4, crash_at=None, scaler=None):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 3)
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.randn(64, 10), torch.randint(0, 3, (64,))),
        batch_size=16,
        shuffle=True,
    )
    losses = []
    for step, (x, y) in zip(range(steps), loader):
        if step == crash_at:
            raise ValueError("boom")
        optimizer.zero_grad()
        loss = nn.CrossEntropyLoss()(model(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    return losses, torch.rand(3)  # the RNG state after training too


def global_state():
    from torch.nn.modules import module
    from torch.optim import lr_scheduler, optimizer

    return (
        dict(module._global_forward_pre_hooks),
        dict(module._global_forward_hooks),
        dict(optimizer._global_optimizer_pre_hooks),
        dict(optimizer._global_optimizer_post_hooks),
        torch.Tensor.backward,
        torch.autograd.backward,
        torch.utils.data.DataLoader.__iter__,
        torch.nn.functional.cross_entropy,
        torch.nn.functional.mse_loss,
        vars(lr_scheduler.LRScheduler)["step"],
        vars(lr_scheduler.ReduceLROnPlateau)["step"],
        torch.amp.GradScaler.step,
        vars(optimizer.Optimizer)["zero_grad"],
    )


def test_watched_run_computes_the_same_values_bit_for_bit():
    plain_losses, plain_after = train()
    with torchdoctor.watch(summary=False) as watch:
        watched_losses, watched_after = train()
    assert watched_losses == plain_losses
    assert torch.equal(watched_after, plain_after)
    assert watch.findings == [] and watch.session.step == 5


def test_every_hook_is_removed_after_exit_and_after_a_crash():
    before = global_state()
    with torchdoctor.watch(summary=False):
        assert global_state() != before
        train()
    assert global_state() == before
    with pytest.raises(ValueError, match="boom"):
        with torchdoctor.watch(summary=False):
            train(crash_at=2)
    assert global_state() == before


def test_models_lose_their_own_hooks_too():
    model = nn.Linear(3, 1)
    with torchdoctor.watch(model, summary=False):
        model(torch.randn(2, 3))
        assert model._forward_pre_hooks
    assert not model._forward_pre_hooks


def test_nesting_installs_once_and_the_outer_exit_removes():
    before = global_state()
    with torchdoctor.watch(summary=False) as outer:
        installed = global_state()
        with torchdoctor.watch(summary=False) as inner:
            assert global_state() == installed
            assert inner.session is outer.session
        assert global_state() == installed  # the inner exit leaves the outer's hooks
        train()
    assert global_state() == before


class Broken(Monitor):
    calls = 0

    def on_step(self, optimizer):
        Broken.calls += 1
        raise RuntimeError("monitor bug")


def test_a_failing_monitor_is_reported_once_and_training_goes_on(capsys, monkeypatch):
    pitfall = get("missing-zero-grad")
    monkeypatch.setattr(pitfall, "monitors", [Broken])
    plain_losses, _ = train()
    with torchdoctor.watch(select=["missing-zero-grad"], summary=False) as watch:
        losses, _ = train()
    assert losses == plain_losses
    assert Broken.calls == 1  # disabled after its first failure
    err = capsys.readouterr().err
    assert err.count("internal error in monitor missing-zero-grad (Broken)") == 1
    assert "training goes on" in err
    assert len(watch.session.internal_errors) == 1


def test_gradscaler_skipped_steps_are_not_nan_alarms():
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**100, growth_interval=1000)
    with torchdoctor.watch(summary=False) as watch:
        for _ in range(40):
            optimizer.zero_grad()
            loss = (model(torch.randn(8, 4)) * 1e6).pow(2).mean()
            scaler.scale(loss).backward()  # inf gradients until the scale has come down
            scaler.step(optimizer)
            scaler.update()
    assert scaler.get_scale() < 2.0**100  # steps were skipped
    assert 1 < watch.session.step < 41  # and later ones were taken
    assert watch.findings == []


def test_torch_compile_raises_no_false_alarm():
    torch.manual_seed(0)
    with torchdoctor.watch(summary=False) as watch:
        model = torch.compile(
            nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)), backend="aot_eager"
        )
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        for _ in range(3):
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(torch.randn(4, 8)), torch.randn(4, 2))
            loss.backward()
            optimizer.step()
    assert watch.findings == []
    assert watch.session.internal_errors == []
