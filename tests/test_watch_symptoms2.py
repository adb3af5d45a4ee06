"""The opt-in statistical symptoms (TD901 exploding-gradient, TD902 vanishing-gradient,
TD903 dead-relu, TD904 loss-plateau): off by default, each found on a small seeded run with the
symptom and silent on a healthy one. Their precision and recall are measured by
benchmarks/eval_watch_symptoms.py (docs/watch.md)."""

from __future__ import annotations

import pytest
from conftest import import_torch

torch = import_torch()
from torch import nn  # noqa: E402

import torchdoctor  # noqa: E402
from test_watch_fixtures import run_watched  # noqa: E402
from torchdoctor.watch.watcher import enabled_monitors  # noqa: E402

SYMPTOMS = "TD901,TD902,TD903,TD904"


def _train(model, lr=3e-3, steps=50, adam=True, regression=False, seed=0):
    torch.manual_seed(seed)
    optimizer = (torch.optim.Adam if adam else torch.optim.SGD)(model.parameters(), lr=lr)
    losses = []
    with torchdoctor.watch(select=SYMPTOMS, live=False, summary=False) as watcher:
        for _ in range(steps):
            x = torch.randn(32, 20)
            if regression:
                y = x[:, :4].sum(1, keepdim=True)
                loss = nn.functional.mse_loss(model(x), y)
            else:
                loss = nn.functional.cross_entropy(model(x), (x[:, :4]).argmax(1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return watcher.findings, losses


def _mlp(act=nn.ReLU, hidden=1, width=64, outputs=4):
    torch.manual_seed(1)
    layers = [nn.Linear(20, width), act()]
    for _ in range(hidden):
        layers += [nn.Linear(width, width), act()]
    return nn.Sequential(*layers, nn.Linear(width, outputs))


def test_off_by_default():
    default = {pitfall.code for pitfall, _ in enabled_monitors()}
    assert not default & set(SYMPTOMS.split(","))
    selected = {pitfall.code for pitfall, _ in enabled_monitors(select=SYMPTOMS)}
    assert selected == set(SYMPTOMS.split(","))


def test_healthy_run_is_silent_and_computes_the_same():
    found, watched = _train(_mlp())
    assert found == []
    torch.manual_seed(0)
    model = _mlp()
    torch.manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    unwatched = []
    for _ in range(50):
        x = torch.randn(32, 20)
        loss = nn.functional.cross_entropy(model(x), (x[:, :4]).argmax(1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        unwatched.append(loss.item())
    assert watched == unwatched


def test_vanishing_gradient():
    model = _mlp(nn.Sigmoid, hidden=8, width=32)
    for layer in model[:-1:2]:
        nn.init.normal_(layer.weight, std=0.05)
    found, _ = _train(model, steps=15)
    names = [f.name for f in found]
    assert "vanishing-gradient" in names
    message = found[names.index("vanishing-gradient")].message
    assert "gradients of the first layer `0.weight`" in message and "`18.weight`" in message


def test_dead_relu():
    model = _mlp()
    nn.init.constant_(model[0].bias, -5.0)
    nn.init.constant_(model[2].bias, -5.0)
    found, _ = _train(model, steps=31)
    dead = [f for f in found if f.name == "dead-relu"]
    assert [f.extra["module"] for f in dead] == ["1", "3"]
    assert "100% of the units of `1` (ReLU)" in dead[0].message
    assert "at steps 10, 20, 30" in dead[0].message


def test_loss_plateau():
    found, _ = _train(_mlp(), lr=0.0, steps=45)
    [finding] = found
    assert finding.name == "loss-plateau" and finding.extra["step"] == 40
    assert "has not gone down in 40 steps" in finding.message


def test_exploding_gradient_in_process():
    found, _ = _train(_mlp(outputs=1), lr=0.5, adam=False, regression=True, steps=20)
    assert "exploding-gradient" in [f.name for f in found]


def test_exploding_gradient_end_to_end():
    [finding] = run_watched("exploding_gradient.py", select=SYMPTOMS).findings()
    assert finding["name"] == "exploding-gradient" and finding["step"] == 5
    assert "times its norm at the first step" in finding["message"]


@pytest.mark.parametrize("code", SYMPTOMS.split(","))
def test_messages_in_chinese(code):
    from torchdoctor.catalog import all_pitfalls

    [pitfall] = [p for p in all_pitfalls() if p.code == code]
    assert not pitfall.default and all(not cls.default for cls in pitfall.monitors)
    assert pitfall.messages[""]["zh"] and pitfall.title["zh"]
