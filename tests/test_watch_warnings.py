"""Warnings that torch raises for the caller's line keep that line under `torchdoctor run`:
the loss and scheduler wrappers are invisible to them, and they show as often as under python."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import import_torch

import_torch()

SCRIPT = """\
import torch
from torch import nn
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, 1)
for i in range(3):
    loss = nn.functional.mse_loss(model(torch.randn(8, 4)), torch.randn(8))
    loss.backward()
    sched.step()
    opt.step()
    opt.zero_grad()
"""


def warning_lines(command: list[str], cwd) -> list[str]:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)
    return [line for line in result.stderr.splitlines() if "Warning: " in line]


@pytest.mark.parametrize(
    "flags", [[], ["-W", "always"], ["-W", "ignore"]], ids=["default", "always", "ignore"]
)
def test_warnings_name_the_users_line_as_under_python(tmp_path, flags):
    (tmp_path / "train.py").write_text(SCRIPT, encoding="utf-8")
    plain = warning_lines([sys.executable, *flags, "train.py"], tmp_path)
    watched = warning_lines(
        [sys.executable, *flags, "-m", "torchdoctor", "run", "train.py"], tmp_path
    )
    assert watched == plain
    if not flags:
        assert [line.split(": ")[0] for line in plain] == [
            f"{tmp_path / 'train.py'}:7",
            f"{tmp_path / 'train.py'}:9",
        ]
