"""Run-time checks of issue 15, fed synthetic events (tiny models, no global hook): rows of a
parameter that never learn yet move (TD204), gradients of a model cleared before its
optimizer used them (TD115), a non-finite loss after exploding gradients (TD211)."""

from __future__ import annotations


import re

import pytest
from conftest import import_torch

torch = import_torch()
from torch import nn  # noqa: E402

from torchdoctor.catalog import get  # noqa: E402
from torchdoctor.catalog.training import td204_weight_decay_on_frozen_params as td204  # noqa: E402
from torchdoctor.watch.session import Session  # noqa: E402


def session_for(name: str, metrics: bool = True) -> Session:
    pitfall = get(name)
    return Session([(pitfall, cls) for cls in pitfall.monitors], live=False, metrics=metrics)


# ---- TD204: rows that never learn ------------------------------------------------------------


def _embedding_steps(session, steps, weight_decay=0.1, momentum=None, used=7):
    torch.manual_seed(0)
    embed = nn.Embedding(10, 4)
    if momentum is None:
        optimizer = torch.optim.AdamW(embed.parameters(), lr=0.1, weight_decay=weight_decay)
    else:
        optimizer = torch.optim.SGD(
            embed.parameters(), lr=0.1, weight_decay=weight_decay, momentum=momentum
        )
    with session.hooks:
        session.start()
        for _ in range(steps):
            optimizer.zero_grad()
            tokens = torch.randint(0, used, (16,))
            session.module_pre_hook(embed, (tokens,))
            loss = embed(tokens).pow(2).mean()
            session.backward_starts(loss)
            loss.backward()
            session.backward_ends(loss)
            session.step_pre_hook(optimizer, (), {})
            optimizer.step()
            session.step_post_hook(optimizer, (), {})
        session.finish()
    return session


def test_rows_with_zero_gradient_moved_by_weight_decay_are_reported_once():
    session = _embedding_steps(session_for("weight-decay-on-frozen-params"), steps=40)
    [finding] = session.findings
    assert (
        finding.extra["step"] == 21
    )  # sampled steps 1, 11, 21: rows zero at each, moved at the third
    assert "rows 7..9 of `weight` (3 of 10)" in finding.message


@pytest.mark.parametrize(
    "weight_decay, momentum, used, steps",
    [
        (0.0, None, 7, 40),  # no weight decay, no momentum: rows with no gradient stay put
        (0.1, None, 10, 40),  # every row used
        (0.1, None, 7, 15),  # too few sampled steps to tell
    ],
)
def test_rows_not_reported(weight_decay, momentum, used, steps):
    session = _embedding_steps(
        session_for("weight-decay-on-frozen-params"), steps, weight_decay, momentum, used
    )
    assert session.findings == []


def test_rows_with_momentum_and_decay():
    session = _embedding_steps(
        session_for("weight-decay-on-frozen-params"), 30, weight_decay=0.01, momentum=0.9
    )
    assert [f.name for f in session.findings] == ["weight-decay-on-frozen-params"]


def test_rows_are_not_checked_without_sampled_steps():
    session = _embedding_steps(session_for("weight-decay-on-frozen-params", metrics=False), 40)
    assert session.findings == []


def test_ranges():
    assert td204._ranges([7, 8, 9]) == "7..9"
    assert td204._ranges([1, 3, 4, 9]) == "1, 3..4, 9"
    assert td204._ranges([0, 2, 4, 6, 8]) == "0, 2, 4, 6, ..."


# ---- TD115: gradients of a model computed, then cleared unused -------------------------------


class Generator(nn.Sequential):
    pass


class Discriminator(nn.Sequential):
    pass


def _gan_steps(session, steps, detach, pitfall_names=None):
    torch.manual_seed(0)
    G = Generator(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    D = Discriminator(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)

    def forward(model, x):
        session.module_pre_hook(model, (x,))
        return model(x)

    def zero_grad(optimizer):
        session.zero_grad_starts(optimizer)
        optimizer.zero_grad()
        session.zero_grad_ends(optimizer)

    def backward_and_step(loss, optimizer, retain=False):
        session.backward_starts(loss)
        loss.backward(retain_graph=retain)
        session.backward_ends(loss)
        session.step_pre_hook(optimizer, (), {})
        optimizer.step()
        session.step_post_hook(optimizer, (), {})

    with session.hooks:
        session.start()
        for _ in range(steps):
            fake = forward(G, torch.randn(8, 4))
            zero_grad(opt_d)
            d_in = fake.detach() if detach else fake
            d_loss = forward(D, torch.randn(8, 2)).mean() - forward(D, d_in).mean()
            backward_and_step(d_loss, opt_d, retain=not detach)
            zero_grad(opt_g)
            backward_and_step(forward(D, fake).mean(), opt_g)
        session.finish()
    return session


def test_gan_discriminator_loss_without_detach_is_reported_once_naming_both_models():
    session = _gan_steps(session_for("detach-missing-between-models"), steps=6, detach=False)
    [finding] = session.findings
    assert "trains `Discriminator`" in finding.message
    assert "gradients of `Generator`" in finding.message
    assert "3 steps in a row" in finding.message


@pytest.mark.parametrize("steps, detach", [(6, True), (2, False)])
def test_gan_not_reported(steps, detach):
    session = _gan_steps(session_for("detach-missing-between-models"), steps, detach)
    assert session.findings == []


def test_a_gans_generator_backward_through_the_discriminator_is_not_a_missing_zero_grad():
    # The generator's backward adds onto the gradients the discriminator's step applied; the
    # discriminator's zero_grad() clears them before its next step: nothing stale is applied.
    session = _gan_steps(session_for("missing-zero-grad"), steps=4, detach=True)
    assert session.findings == []


def test_a_single_optimizer_skipping_steps_is_not_reported():
    """zero_grad() after a backward whose step was skipped (a GradScaler's inf step): no other
    optimizer trained anything in between."""
    session = session_for("detach-missing-between-models")
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with session.hooks:
        session.start()
        for _ in range(5):
            session.zero_grad_starts(optimizer)
            optimizer.zero_grad()
            session.zero_grad_ends(optimizer)
            x = torch.randn(4, 3)
            session.module_pre_hook(model, (x,))
            model(x).sum().backward()
        session.finish()
    assert session.findings == []


# ---- TD211: a non-finite loss after exploding gradients --------------------------------------


def _scaled_loss_steps(session, factors):
    """A model whose loss is scaled by `factors[step]` (its gradients with it); lr=0 keeps the
    parameters as they are, so the last factor alone makes the loss non-finite."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    with session.hooks:
        session.start()
        for factor in factors:
            optimizer.zero_grad()
            x = torch.randn(8, 3)
            session.module_pre_hook(model, (x,))
            loss = model(x).pow(2).mean() * factor
            session.backward_starts(loss)
            loss.backward()
            session.backward_ends(loss)
            session.step_pre_hook(optimizer, (), {})
            optimizer.step()
            session.step_post_hook(optimizer, (), {})
        session.finish()
    return session


@pytest.mark.parametrize("metrics", [True, False])
def test_non_finite_loss_after_growing_gradients_names_exploding_gradients(metrics):
    factors = [1.0, 10.0, 1e2, 1e3, 1e4, float("inf")]
    session = _scaled_loss_steps(session_for("nan-loss", metrics=metrics), factors)
    [finding] = session.findings
    assert "after the gradients exploded" in finding.message
    assert float(re.search(r"grew (\S+) times", finding.message).group(1)) > 1000
    assert "at step 1 to" in finding.message and "at step 5:" in finding.message
    assert "clip_grad_norm_" in finding.message


def test_non_finite_loss_without_growth_is_not_called_exploding():
    factors = [1.0, 2.0, 1.0, 3.0, 1.0, float("inf")]
    session = _scaled_loss_steps(session_for("nan-loss"), factors)
    [finding] = session.findings
    assert "the loss computation makes it" in finding.message


def test_the_fixture_scripts_name_their_cause():
    from test_watch_fixtures import run_watched

    exploding = run_watched("nan_loss_exploding.py")
    assert "after the gradients exploded" in exploding.stderr
    log = run_watched("nan_loss_log.py")
    assert "the loss computation makes it" in log.stderr
    assert "exploded" not in log.stderr
