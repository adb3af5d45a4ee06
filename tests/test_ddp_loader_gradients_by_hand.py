"""TD607 in data-parallel training written by hand: gradients averaged with
`dist.all_reduce(p.grad...)` and no DistributedDataParallel (pytorch-distributed-example's
first version, set t)."""

from __future__ import annotations

from torchdoctor.lint.checker import check_source

SCRIPT = """\
import torch
from torch import distributed
from torch.utils import data


class Trainer:
    def __init__(self, net):
        self.net = net

    def average_gradients(self):
        for p in self.net.parameters():
            tensor = p.grad.data
            distributed.all_reduce(tensor)
            tensor /= distributed.get_world_size()


def loaders(train_set, test_set):
    train = data.DataLoader(train_set, batch_size=32, shuffle=True)
    test = data.DataLoader(test_set, batch_size=32, shuffle=False)
    return train, test
"""


def found(source: str) -> list[tuple[int, str]]:
    return [
        (f.line, f.message) for f in check_source(source, "main.py", frozenset({"TD607"})).findings
    ]


def test_a_training_loader_of_a_script_averaging_gradients_itself():
    [(line, message)] = found(SCRIPT)
    assert line == 18
    assert (
        "averages its gradients across ranks itself (`all_reduce` of `.grad`, line 13)" in message
    )


def test_an_all_reduce_of_anything_but_gradients_is_no_data_parallel_training():
    metrics = SCRIPT.replace("p.grad.data", "p.data.clone()")
    assert found(metrics) == []  # not read as data-parallel training (metrics, say)
    sampled = SCRIPT.replace("shuffle=True)", "sampler=data.DistributedSampler(train_set))")
    assert found(sampled) == []
