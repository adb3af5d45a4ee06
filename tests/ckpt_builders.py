"""Checkpoints built the way training code builds them, for the ckpt tests."""

from __future__ import annotations

import argparse
import pickle
import struct

import numpy as np
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, classes)

    def forward(self, x):
        return self.fc(self.bn(self.conv(x)).mean((2, 3)))


MODEL_SOURCE = """
from torch import nn


class Net(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, classes)


class Renamed(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.classifier = nn.Linear(8, 10)


def build():
    return Net()


def build_five():
    return Net(classes=5)


def broken():
    raise RuntimeError("no GPU here")
"""


def write_models(directory) -> str:
    path = directory / "models.py"
    path.write_text(MODEL_SOURCE)
    return str(path)


def data_parallel_state(model: nn.Module) -> dict:
    """What `nn.DataParallel(model).state_dict()` gives (DDP's keys are the same)."""
    return nn.DataParallel(model).state_dict()


def training_checkpoint(model: nn.Module) -> dict:
    """A classic ImageNet-script checkpoint: nested weights, optimizer, numpy and argparse."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(2, 3, 8, 8)).sum().backward()
    optimizer.step()
    return {
        "epoch": np.int64(12),
        "best_acc1": np.float64(0.75),
        "arch": "net",
        "state_dict": data_parallel_state(model),
        "optimizer": optimizer.state_dict(),
        "args": argparse.Namespace(lr=0.1, data="/data", seed=np.int32(1)),
        "history": np.arange(5.0),
    }


def old_batchnorm_state(model: nn.Module) -> dict:
    """A state_dict whose version metadata says BatchNorm v2, with the counters removed."""
    state = model.state_dict()
    for key in [k for k in state if k.endswith("num_batches_tracked")]:
        del state[key]
    return state


def safetensors_bytes(tensors: dict) -> bytes:
    import json

    header, blobs, offset = {}, [], 0
    for key, tensor in tensors.items():
        data = tensor.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        header[key] = {
            "dtype": {torch.float32: "F32", torch.int64: "I64"}[tensor.dtype],
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


class Payload:
    """Pickles as `os.system(command)`: what a hostile checkpoint does."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        import os

        return (os.system, (self.command,))


def malicious_checkpoint(path, marker) -> None:
    state = {"fc.weight": torch.zeros(2, 2), "payload": Payload(f"touch {marker}")}
    torch.save(state, path)


def plain_pickle(path, obj) -> None:
    with open(path, "wb") as handle:
        pickle.dump(obj, handle, protocol=2)
