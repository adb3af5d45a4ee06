"""What a checkpoint holds: where its weights are, their keys, prefixes, BatchNorm counters,
devices, and what a full unpickle would import. Works on the reader's object tree (no torch)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Mapping

from torchdoctor.catalog.serialization import _state_dict_errors as sd_errors
from torchdoctor.ckpt.reader import Checkpoint, Opaque, TensorInfo

BATCHES_TRACKED = sd_errors.BATCHES_TRACKED


@dataclass
class Weights:
    """The state dict inside a checkpoint and the path that leads to it."""

    where: tuple[str, ...]  # () for a bare state dict, ("state_dict",) when nested
    tensors: dict  # key -> TensorInfo (or torch.Tensor, for repair's real objects)
    module_class: str | None = None  # set when derived from a whole pickled module
    metadata: Mapping | None = None  # the state dict's `_metadata` (module versions)


@dataclass
class Listing:
    checkpoint: Checkpoint
    weights: Weights | None
    entries: list[tuple[str, str]] = field(default_factory=list)  # top-level key, description
    prefix: str = ""  # the wrapper prefix every key carries
    batchnorm_layers: list[str] = field(default_factory=list)
    missing_counters: list[str] = field(default_factory=list)  # layers without the counter
    counters_required: bool = False  # the missing counters make strict loading fail
    refused: list[str] = field(default_factory=list)  # globals weights_only=True refuses
    module_classes: list[str] = field(default_factory=list)  # pickled nn.Module classes

    @property
    def tensors(self) -> dict:
        return self.weights.tensors if self.weights else {}

    @property
    def devices(self) -> Counter:
        return Counter(t.device for t in self.tensors.values())

    @property
    def dtypes(self) -> Counter:
        return Counter(t.dtype for t in self.tensors.values())

    @property
    def parameters(self) -> int:
        return sum(t.numel for t in self.tensors.values())

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.tensors.values())


def listing(checkpoint: Checkpoint) -> Listing:
    weights = locate(checkpoint.root, lambda v: isinstance(v, TensorInfo), module_tensors)
    result = Listing(checkpoint, weights, entries=_entries(checkpoint.root))
    if weights is not None:
        keys = list(weights.tensors)
        prefixes = {sd_errors.wrapper_prefix(k) for k in keys}
        result.prefix = prefixes.pop() if len(prefixes) == 1 else ""
        result.batchnorm_layers, result.missing_counters = batchnorm(keys)
        result.counters_required = bool(result.missing_counters) and _counters_required(
            result.missing_counters, weights.metadata)
    classes = {o.class_name for o in _opaques(checkpoint.root) if is_module(o)}
    result.module_classes = sorted(classes)
    result.refused = checkpoint.refused_globals
    return result


def locate(root, is_tensor: Callable, module_tensors: Callable | None = None,
           depth: int = 0) -> Weights | None:
    """The state dict in `root`: itself, nested under a container key, or a pickled module's."""
    if module_tensors is not None and is_module(root):
        return Weights((), module_tensors(root), root.class_name)
    if not isinstance(root, dict):
        return None
    values = list(root.values())
    tensors = sum(1 for v in values if is_tensor(v))
    if tensors and tensors >= 0.5 * len(values):
        return Weights((), {k: v for k, v in root.items() if is_tensor(v)},
                       metadata=getattr(root, "_metadata", None))
    if depth >= 2:
        return None
    names = [c for c in sd_errors.CONTAINERS if c in root]
    names += sorted((k for k in root if isinstance(k, str) and k not in names),
                    key=lambda k: -_count(root[k], is_tensor))
    for name in names:
        found = locate(root[name], is_tensor, module_tensors, depth + 1)
        if found is not None and found.tensors:
            found.where = (str(name),) + found.where
            return found
    return None


def _count(value, is_tensor: Callable) -> int:
    return sum(1 for v in value.values() if is_tensor(v)) if isinstance(value, dict) else 0


def is_module(value) -> bool:
    """A pickled object that is an nn.Module: its state has `_modules` and `_parameters`."""
    attributes = value.attributes if isinstance(value, Opaque) else {}
    return "_parameters" in attributes and "_modules" in attributes


def module_tensors(module: Opaque, prefix: str = "") -> dict[str, TensorInfo]:
    """The keys `module.state_dict()` would have, from a pickled module's attributes."""
    attributes = module.attributes
    found: dict[str, TensorInfo] = {}
    skipped = attributes.get("_non_persistent_buffers_set") or ()
    for group in ("_parameters", "_buffers"):
        for name, value in (attributes.get(group) or {}).items():
            if isinstance(value, TensorInfo) and name not in skipped:
                found[prefix + name] = value
    for name, child in (attributes.get("_modules") or {}).items():
        if is_module(child):
            found.update(module_tensors(child, f"{prefix}{name}."))
    return found


def batchnorm(keys: list[str]) -> tuple[list[str], list[str]]:
    """(BatchNorm-like layers, those of them without `num_batches_tracked`)."""
    present = set(keys)
    layers = [k[: -len(".running_mean")] for k in keys if k.endswith(".running_mean")]
    layers = [layer for layer in layers if f"{layer}.running_var" in present]
    missing = [layer for layer in layers if f"{layer}.{BATCHES_TRACKED}" not in present]
    return layers, missing


def _counters_required(layers: list[str], metadata: Mapping | None) -> bool:
    """load_state_dict fills the counter in only for a layer saved before BatchNorm's version 2
    (or a state dict with no version metadata at all)."""
    if not isinstance(metadata, Mapping):
        return False
    for layer in layers:
        version = (metadata.get(layer) or {}).get("version")
        if isinstance(version, int) and version >= 2:
            return True
    return False


def _opaques(root, depth: int = 0):
    """Every Opaque object in the tree (bounded depth: pickles can be built to loop)."""
    if depth > 12:
        return
    if isinstance(root, Opaque):
        yield root
        children = list(root.args) + list(root.attributes.values()) + list(root.items.values())
    elif isinstance(root, dict):
        children = list(root.values())
    elif isinstance(root, (list, tuple)):
        children = list(root)
    else:
        return
    for child in children:
        if isinstance(child, (dict, list, tuple, Opaque)):
            yield from _opaques(child, depth + 1)


def describe(value) -> str:
    """A short description of a value in the checkpoint."""
    if isinstance(value, TensorInfo):
        return f"tensor {value.dtype}{list(value.shape)} on {value.device}"
    if isinstance(value, Opaque):
        kind = "nn.Module" if is_module(value) else "object"
        return f"{kind} {value.class_name}"
    if isinstance(value, dict):
        tensors = sum(1 for v in _leaves(value) if isinstance(v, TensorInfo))
        return f"dict of {len(value)} entries" + (f", {tensors} tensors" if tensors else "")
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__} of {len(value)}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _leaves(value, depth: int = 0):
    if depth > 6:
        return
    if isinstance(value, dict):
        for child in value.values():
            yield from _leaves(child, depth + 1)
    elif isinstance(value, (list, tuple)):
        for child in value:
            yield from _leaves(child, depth + 1)
    else:
        yield value


def _entries(root) -> list[tuple[str, str]]:
    if not isinstance(root, dict):
        return []
    values = list(root.values())
    if values and sum(isinstance(v, TensorInfo) for v in values) >= 0.5 * len(values):
        return []  # a bare state dict: its keys are the tensors
    return [(str(k), describe(v)) for k, v in root.items()]
