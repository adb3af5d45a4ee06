"""The watch core without a watched program: the dispatcher calls only the monitors that
define a hook and disables one that fails, the owner of the hook handles removes each once,
and monitors fed synthetic events (a tiny model and optimizer, no global hook installed)
report what they do in a real run."""

from __future__ import annotations

import warnings

import pytest
from conftest import import_torch

torch = import_torch()
from torch import nn  # noqa: E402

import torchdoctor  # noqa: E402
from torchdoctor.catalog import get  # noqa: E402
from torchdoctor.catalog.sdk import RunState  # noqa: E402
from torchdoctor.watch.hooks import Installed  # noqa: E402
from torchdoctor.watch.monitor import Monitor  # noqa: E402
from torchdoctor.watch.session import Session  # noqa: E402


def session_of(*monitors, pitfall="scheduler-step-order"):
    return Session([(get(pitfall), cls) for cls in monitors], live=False, metrics=False)


def names(session):
    return [f.name for f in session.findings]


# ---- the dispatcher ---------------------------------------------------------------------------


def test_an_event_reaches_only_the_monitors_that_define_it():
    class Counting(Monitor):
        seen = []

        def on_scheduler_step(self, scheduler):
            self.seen.append(scheduler)

    session = session_of(Counting)
    session.scheduler_step("sched")
    session.dataloader_iter("loader")  # no monitor defines it: nothing happens
    assert Counting.seen == ["sched"]
    assert session.wants("on_scheduler_step") and not session.wants("on_dataloader_iter")


def test_monitors_read_the_run_state_the_sdk_names():
    class Reading(Monitor):
        pass

    session = session_of(Reading)
    [monitor] = session.dispatcher.monitors
    assert isinstance(monitor.session, RunState) and monitor.session is session.run


def test_a_failing_monitor_is_reported_once_disabled_and_the_others_go_on(capsys):
    calls = []

    class Broken(Monitor):
        def on_step(self, optimizer):
            calls.append("broken")
            raise RuntimeError("monitor bug")

        def after_step(self, optimizer):
            calls.append("broken after")

    class Healthy(Monitor):
        def on_step(self, optimizer):
            calls.append("healthy")

    session = session_of(Broken, Healthy)
    optimizer = torch.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1)
    for _ in range(3):
        session.step_pre_hook(optimizer, (), {})
        session.step_post_hook(optimizer, (), {})
    assert calls == ["broken", "healthy", "healthy", "healthy"]  # after_step never ran
    assert session.step == 4  # the session's own bookkeeping went on
    err = capsys.readouterr().err
    assert err.count("internal error in monitor scheduler-step-order (Broken)") == 1
    assert "RuntimeError: monitor bug; it is disabled; training goes on" in err
    assert len(session.internal_errors) == 1


def test_a_monitors_own_module_hook_is_guarded_owned_and_goes_quiet_once_it_fails(capsys):
    seen = []

    class Hooking(Monitor):
        def on_model(self, model):
            self.session.add_module_hook(self, model[0].register_forward_hook, self.look)

        def look(self, module, args, output):
            seen.append(output.shape)
            raise ValueError("hook bug")

    session = session_of(Hooking)
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    with session.hooks:
        session.add_model(model)
        x = torch.randn(4, 3)
        assert torch.equal(model(x), nn.functional.relu(model[0](x)))  # the value is untouched
        model(x)
        assert seen == [(4, 2)]  # the failing monitor's hook went quiet
    assert not model[0]._forward_hooks and not model._forward_pre_hooks
    assert capsys.readouterr().err.count("monitor scheduler-step-order (Hooking)") == 1


# ---- the owner of the hook handles ------------------------------------------------------------


def test_removal_is_idempotent_and_a_late_handle_is_removed_at_once():
    model = nn.Linear(2, 1)
    owner = Installed()
    owner.handle(model.register_forward_hook(lambda *args: None))
    owner.patch(nn.Linear, "extra_repr", lambda self: "patched")
    assert repr(model) == "Linear(patched)"
    owner.remove()
    owner.remove()
    assert not model._forward_hooks and "extra_repr" in vars(nn.Linear)
    assert repr(model) == "Linear(in_features=2, out_features=1, bias=True)"
    owner.handle(model.register_forward_hook(lambda *args: None))
    assert not model._forward_hooks
    with pytest.raises(RuntimeError, match="after the watch's hooks were removed"):
        owner.patch(nn.Linear, "extra_repr", lambda self: "late")


def test_the_owner_removes_everything_when_the_block_raises():
    model = nn.Linear(2, 1)
    with pytest.raises(KeyError):
        with Installed() as owner:
            owner.handle(model.register_forward_pre_hook(lambda *args: None))
            raise KeyError("crash")
    assert not model._forward_pre_hooks


def test_each_watch_shows_a_warning_python_would_show_again():
    """What the loss wrapper re-issued is the session's: a later watch, under filters set
    afresh, shows the warning again, as python does."""

    def twice():
        for _ in range(2):
            nn.functional.mse_loss(torch.zeros(4, 1), torch.zeros(4))  # "Using a target size"

    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            with torchdoctor.watch(select=[], live=False, summary=False):
                twice()
        assert [str(w.message).startswith("Using a target size") for w in caught] == [True]


# ---- monitors fed synthetic events ------------------------------------------------------------


def training_steps(session, model, optimizer, steps, clear=True):
    """What the hooks would tell the session about a plain training loop."""
    torch.manual_seed(0)
    for _ in range(steps):
        if clear:
            optimizer.zero_grad()
        x = torch.randn(8, 3)
        session.module_pre_hook(model, (x,))
        loss = model(x).pow(2).mean()
        session.backward_starts(loss)
        loss.backward()
        session.backward_ends(loss)
        session.step_pre_hook(optimizer, (), {})
        optimizer.step()
        session.step_post_hook(optimizer, (), {})


@pytest.mark.parametrize("clear, expected", [(False, ["missing-zero-grad"]), (True, [])])
def test_missing_zero_grad(clear, expected):
    pitfall = get("missing-zero-grad")
    session = Session([(pitfall, cls) for cls in pitfall.monitors], live=False)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with session.hooks:
        session.start()
        training_steps(session, model, optimizer, steps=3, clear=clear)
        session.finish()
    assert names(session) == expected
    if expected:
        assert session.findings[0].extra["step"] == 2


class FakeScheduler:
    def __init__(self, optimizer):
        self.optimizer = optimizer


@pytest.mark.parametrize(
    "optimizer_first, expected", [(False, ["scheduler-step-order"]), (True, [])]
)
def test_scheduler_step_order(optimizer_first, expected):
    pitfall = get("scheduler-step-order")
    session = Session([(pitfall, cls) for cls in pitfall.monitors], live=False)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    session.start()
    if optimizer_first:
        training_steps(session, model, optimizer, steps=1)
    session.scheduler_step(FakeScheduler(optimizer))
    session.finish()
    assert names(session) == expected


@pytest.mark.parametrize(
    "frozen_decayed, expected", [(True, ["weight-decay-on-frozen-params"]), (False, [])]
)
def test_weight_decay_on_frozen_params(frozen_decayed, expected):
    pitfall = get("weight-decay-on-frozen-params")
    session = Session([(pitfall, cls) for cls in pitfall.monitors], live=False)
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 1))
    model[0].requires_grad_(False)
    for param in model[0].parameters():
        param.grad = torch.zeros_like(param)  # what zero_grad(set_to_none=False) leaves
    params = model.parameters() if frozen_decayed else model[1].parameters()
    optimizer = torch.optim.AdamW(params, lr=0.1, weight_decay=0.1)
    with session.hooks:
        session.start()
        training_steps(session, model, optimizer, steps=3, clear=False)
        session.finish()
    assert names(session) == expected
