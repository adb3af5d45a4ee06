"""Precision and recall of the opt-in statistical symptoms of `watch` (TD901-TD904).

Small seeded CPU training runs: healthy ones, and ones with one injected symptom:
- exploding-gradient: SGD with a learning rate far too high;
- vanishing-gradient: six more hidden layers with sigmoid activations and a small init;
- dead-relu: hidden biases initialised to -5 (every ReLU input negative);
- loss-plateau: learning rate 0.
Four architectures (MLP classifier, small CNN, deep MLP, MLP regressor) x seeds x two
healthy optimizers. Every run is watched with the four checks enabled.

A check's true positives are the runs of its own symptom where it fired; its false positives
are the runs where it fired on a healthy run or on another symptom, except for co-symptoms
that are real consequences: dead ReLUs and vanishing gradients do stall the loss, so
loss-plateau firing on them is not counted against it, and a learning rate far too high
kills ReLUs (then stalls the loss) as often as it makes gradients explode. Usage:

    python benchmarks/eval_watch_symptoms.py [--seeds N] [--steps N]
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn

import torchdoctor

CHECKS = {
    "exploding": "exploding-gradient",
    "vanishing": "vanishing-gradient",
    "dead": "dead-relu",
    "plateau": "loss-plateau",
}
CODES = "TD901,TD902,TD903,TD904"
# What a symptom really causes too: firing there is right, not a false positive.
CO_SYMPTOMS = {
    "dead": {"loss-plateau"},
    "vanishing": {"loss-plateau"},
    "exploding": {"dead-relu", "loss-plateau"},
}  # a huge step kills ReLUs
ARCHS = ("mlp", "cnn", "deep", "regression")
SCENARIOS = ("healthy-adam", "healthy-sgd", "exploding", "vanishing", "dead", "plateau")


def build(arch: str, scenario: str) -> tuple[nn.Module, str]:
    act = nn.Sigmoid if scenario == "vanishing" else nn.ReLU
    extra = 6 if scenario == "vanishing" else 0
    if arch == "cnn":
        layers = [nn.Conv2d(3, 16, 3, padding=1), act()]
        for _ in range(1 + extra):
            layers += [nn.Conv2d(16, 16, 3, padding=1), act()]
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 4)]
    else:
        width, depth = (32, 7) if arch == "deep" else (64, 1)
        inputs = 8 if arch == "regression" else 20
        layers = [nn.Linear(inputs, width), act()]
        for _ in range(depth + extra):
            layers += [nn.Linear(width, width), act()]
        layers.append(nn.Linear(width, 1 if arch == "regression" else 4))
    model = nn.Sequential(*layers)
    hidden = [m for m in model if isinstance(m, (nn.Linear, nn.Conv2d))][:-1]
    for module in hidden:
        if scenario == "vanishing":
            nn.init.normal_(module.weight, std=0.05)
        if scenario == "dead":
            nn.init.constant_(module.bias, -5.0)
    return model, ("mse" if arch == "regression" else "ce")


def data(arch: str, generator: torch.Generator, batch: int = 32):
    if arch == "cnn":
        x = torch.randn(batch, 3, 12, 12, generator=generator)
        return x, x.mean(dim=(2, 3)).argmax(1).clamp(max=3)
    if arch == "regression":
        x = torch.randn(batch, 8, generator=generator)
        return x, (x[:, :4].sum(1, keepdim=True) - x[:, 4:].prod(1, keepdim=True))
    x = torch.randn(batch, 20, generator=generator)
    return x, (x[:, :4] + 0.5 * x[:, 4:8]).argmax(1)


def optimizer_for(scenario: str, model: nn.Module) -> torch.optim.Optimizer:
    if scenario == "exploding":
        return torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    if scenario == "plateau":
        return torch.optim.SGD(model.parameters(), lr=0.0, momentum=0.9)
    if scenario == "healthy-sgd":
        return torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    return torch.optim.Adam(model.parameters(), lr=3e-3)


def run(arch: str, scenario: str, seed: int, steps: int) -> set[str]:
    torch.manual_seed(seed)
    model, loss_kind = build(arch, scenario)
    optimizer = optimizer_for(scenario, model)
    generator = torch.Generator().manual_seed(1000 + seed)
    with torchdoctor.watch(select=CODES, live=False, summary=False) as watcher:
        for _ in range(steps):
            x, y = data(arch, generator)
            out = model(x)
            loss = (
                nn.functional.mse_loss(out, y)
                if loss_kind == "mse"
                else nn.functional.cross_entropy(out, y)
            )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return {f.name for f in watcher.findings}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    started = time.perf_counter()
    results = [
        (arch, scenario, seed, run(arch, scenario, seed, args.steps))
        for arch in ARCHS
        for scenario in SCENARIOS
        for seed in range(args.seeds)
    ]
    print(
        f"{len(results)} runs ({len(ARCHS)} architectures x {len(SCENARIOS)} scenarios x "
        f"{args.seeds} seeds, {args.steps} steps each) in {time.perf_counter() - started:.0f} s"
    )
    print()
    print(
        "| check | runs with the symptom | recall | fired elsewhere | precision "
        "| fired on healthy runs |"
    )
    print("|---|---|---|---|---|---|")
    healthy_runs = sum(s.startswith("healthy") for _, s, _, _ in results)
    for scenario, name in CHECKS.items():
        positives = [fired for _, s, _, fired in results if s == scenario]
        true = sum(name in fired for fired in positives)
        false = sum(
            name in fired
            for _, s, _, fired in results
            if s != scenario and name not in CO_SYMPTOMS.get(s, ())
        )
        healthy = sum(name in fired for _, s, _, fired in results if s.startswith("healthy"))
        fired = true + false
        precision = f"{true / fired:.0%}" if fired else "-"
        print(
            f"| {name} | {len(positives)} | {true / len(positives):.0%} ({true}) | {false} "
            f"| {precision} | {healthy} of {healthy_runs} |"
        )
    print()
    misses = [
        (a, s, seed, sorted(f))
        for a, s, seed, f in results
        if (s in CHECKS and CHECKS[s] not in f)
        or any(CHECKS[c] in f for c in CHECKS if c != s and CHECKS[c] not in CO_SYMPTOMS.get(s, ()))
    ]
    for miss in misses:
        print("miss or false alarm:", *miss)


if __name__ == "__main__":
    main()
