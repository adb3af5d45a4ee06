"""Reads `torch.load(weights_only=True)` refusals: which global the file needs, and what it is.

Shared by load-weights-only (TD502), which explains metadata in a checkpoint, and
whole-module-saved (TD503), which explains a pickled model class."""
from __future__ import annotations

import re

# torch >= 2.4: "Unsupported global: GLOBAL numpy.core.multiarray.scalar was not an allowed
# global by default"; torch 2.0 - 2.3: "Unsupported class numpy.core.multiarray._reconstruct".
_GLOBAL = re.compile(r"Unsupported (?:global: GLOBAL|class) (?P<name>[\w.]+)")
_REFUSED = re.compile(r"Weights only load failed|WeightsUnpickler error")
# Where a class that is not a model usually comes from.
_METADATA = {
    "numpy": "numpy",
    "argparse": "namespace",
    "omegaconf": "config",
    "pytorch_lightning": "lightning",
    "lightning": "lightning",
    "lightning_fabric": "lightning",
    "collections": "container",
    "builtins": "container",
    "typing": "container",
    "pathlib": "container",
    "datetime": "container",
    "enum": "container",
    "_codecs": "numpy",
    "transformers": "config",
    "sklearn": "container",
}
# A package of model definitions, and a class name that reads as a network.
_MODEL_PACKAGES = {"models", "model", "nets", "net", "networks", "network", "arch", "archs",
                   "modeling", "modules", "nn"}
_MODEL_CLASS = re.compile(
    r"(?:Net|Model|Network|Module|Classifier|Detector|Detect|Generator|Discriminator|Encoder|"
    r"Decoder|Backbone|Transformer|GAN|CNN|RNN|LSTM|MLP)\d*$|^(?:ResNet|VGG|UNet|YOLO|Yolo)")


def refused(message: str) -> bool:
    """`message` is a weights-only load's refusal."""
    return _REFUSED.search(message) is not None


def unsupported_global(message: str) -> str | None:
    """The global a weights-only load refused, or None."""
    if not refused(message):
        return None
    found = _GLOBAL.search(message)
    return found["name"] if found else None


def kind_of(name: str) -> str:
    """What the refused global is: "module" (a pickled nn.Module or model class), "numpy",
    "namespace", "config", "lightning", "container" or "class" (some other class)."""
    module, _, attribute = name.rpartition(".")
    if module.startswith("torch.nn.modules") or module.startswith("torchvision.models"):
        return "module"
    root = module.split(".", 1)[0]
    if root in _METADATA:
        return _METADATA[root]
    if root.startswith("torch"):
        return "class"
    if not attribute[:1].isupper():
        return "class"
    if _MODEL_CLASS.search(attribute) or set(module.split(".")) & _MODEL_PACKAGES:
        return "module"
    return "class"

# Globals a hostile pickle calls to run code; a checkpoint has no reason to name any of them.
_DANGEROUS_MODULES = {"os", "posix", "nt", "subprocess", "sys", "runpy", "shutil", "socket",
                      "pty", "importlib", "pickle", "_pickle", "marshal", "code", "codeop",
                      "ctypes", "webbrowser", "commands", "multiprocessing", "asyncio", "pdb",
                      "timeit", "platform", "http", "urllib", "requests", "ftplib", "telnetlib"}
_DANGEROUS_BUILTINS = {"eval", "exec", "compile", "__import__", "getattr", "setattr",
                       "delattr", "open", "input", "breakpoint", "globals", "locals", "vars",
                       "apply", "execfile", "file", "reload"}


def dangerous(name: str) -> bool:
    """`name` (module.attribute) is a way to run code or touch the system, not a data class."""
    module, _, attribute = name.rpartition(".")
    root = module.split(".", 1)[0]
    if root in ("builtins", "__builtin__"):
        return attribute in _DANGEROUS_BUILTINS
    return root in _DANGEROUS_MODULES
