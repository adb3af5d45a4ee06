"""What a checkpoint holds: where its weights are, their keys, prefixes, BatchNorm counters,
devices, and what a full unpickle would import. Works on the reader's object tree (no torch)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Mapping

from torchdoctor.ckpt.reader import Checkpoint
from torchdoctor.ckpt.unpickler import Global, Opaque, TensorInfo, Unreadable
from torchdoctor.knowledge import state_dicts as sd_errors
from torchdoctor.knowledge import weights_only as _weights_only

BATCHES_TRACKED = sd_errors.BATCHES_TRACKED
# More modules than any real model has (a large language model has a few thousand).
MAX_MODULE_VISITS = 200_000


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
    # Each refused global's group: "data", "class" or "code" (_weights_only.group).
    groups: dict[str, str] = field(default_factory=dict)
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
            result.missing_counters, weights.metadata
        )
    classes = {
        o.class_name for o in _objects(checkpoint.root) if isinstance(o, Opaque) and is_module(o)
    }
    result.module_classes = sorted(classes)
    result.refused = checkpoint.refused_globals
    result.groups = {
        name: _weights_only.group(name, checkpoint.uses.get(name, ())) for name in result.refused
    }
    return result


def locate(
    root,
    is_tensor: Callable,
    module_tensors: Callable | None = None,
    depth: int = 0,
    seen: set[int] | None = None,
) -> Weights | None:
    """The state dict in `root`: itself, nested under a container key, or a pickled module's.
    Each dict is looked into once, however often the pickle shares it."""
    if module_tensors is not None and is_module(root):
        return Weights((), module_tensors(root), root.class_name)
    seen = set() if seen is None else seen
    if not isinstance(root, dict) or id(root) in seen:
        return None
    seen.add(id(root))
    values = list(root.values())
    tensors = sum(1 for v in values if is_tensor(v))
    if tensors and tensors >= 0.5 * len(values):
        return Weights(
            (),
            {k: v for k, v in root.items() if is_tensor(v) and isinstance(k, str)},
            metadata=getattr(root, "_metadata", None),
        )
    if depth >= 2:
        return None
    counts: dict[int, int] = {}
    names = [c for c in sd_errors.CONTAINERS if c in root]
    names += sorted(
        (k for k in root if isinstance(k, str) and k not in names),
        key=lambda k: -_count(root[k], is_tensor, counts),
    )
    for name in names:
        found = locate(root[name], is_tensor, module_tensors, depth + 1, seen)
        if found is not None and found.tensors:
            found.where = (str(name),) + found.where
            return found
    return None


def _count(value, is_tensor: Callable, counts: dict[int, int]) -> int:
    """How many tensors the dict `value` holds (counted once per dict)."""
    if not isinstance(value, dict):
        return 0
    if id(value) not in counts:
        counts[id(value)] = sum(1 for v in value.values() if is_tensor(v))
    return counts[id(value)]


def is_module(value) -> bool:
    """A pickled object that is an nn.Module: its state has `_modules` and `_parameters`."""
    attributes = value.attributes if isinstance(value, Opaque) else {}
    return "_parameters" in attributes and "_modules" in attributes


def module_tensors(module: Opaque) -> dict[str, TensorInfo]:
    """The keys `module.state_dict()` would have, from a pickled module's attributes.

    A pickle can share one module in many places or nest a module in itself: past
    MAX_MODULE_VISITS modules (or keys of 1000 characters each on average) the state dict is
    not worth listing (Unreadable)."""
    found: dict[str, TensorInfo] = {}
    pending = [(module, "")]
    visits = characters = 0
    while pending:
        module, prefix = pending.pop()
        visits += 1
        characters += len(prefix)  # a module nested in itself makes ever longer keys
        if visits > MAX_MODULE_VISITS or characters > MAX_MODULE_VISITS * 1000:
            raise Unreadable(
                "budget", f"the pickled model holds more than {MAX_MODULE_VISITS:,} modules"
            )
        attributes = module.attributes
        skipped = attributes.get("_non_persistent_buffers_set")
        skipped = skipped if isinstance(skipped, (set, frozenset, list, tuple)) else ()
        for group in ("_parameters", "_buffers"):
            for name, value in _named(attributes.get(group)):
                if isinstance(value, TensorInfo) and name not in skipped:
                    found[prefix + name] = value
        children = [
            (child, f"{prefix}{name}.")
            for name, child in _named(attributes.get("_modules"))
            if is_module(child)
        ]
        pending.extend(reversed(children))  # depth first, in order: state_dict()'s key order
    return found


def _named(group) -> list:
    """A module's `_parameters`/`_buffers`/`_modules` entries that have names."""
    return (
        [(k, v) for k, v in group.items() if isinstance(k, str)] if isinstance(group, dict) else []
    )


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


def _objects(root, seen: set[int] | None = None):
    """Every object in the tree not in `seen`, each once: a pickle can share one list in a
    thousand places (walking each path would take exponential time) or hold itself."""
    seen = set() if seen is None else seen
    pending = [root]
    while pending:
        value = pending.pop()
        if not isinstance(value, (dict, list, tuple, Opaque)) or id(value) in seen:
            continue
        seen.add(id(value))
        yield value
        if isinstance(value, Opaque):
            pending.extend(value.args)
            pending.extend(value.attributes.values())
            pending.extend((value.items or {}).values())
            pending.extend(value.elements or ())
        else:
            pending.extend(value.values() if isinstance(value, dict) else value)


def describe(value, seen: set[int] | None = None) -> str:
    """A short description of a value in the checkpoint; `seen`: the objects already counted
    (a pickle can share one dict in a million entries)."""
    if isinstance(value, TensorInfo):
        return f"tensor {value.dtype}{list(value.shape)} on {value.device}"
    if isinstance(value, Opaque):
        kind = "nn.Module" if is_module(value) else "object"
        return f"{kind} {value.class_name}"
    if isinstance(value, Global):
        return f"global {value.name}"
    if isinstance(value, dict):
        tensors = sum(
            1
            for v in _objects(value, seen)
            if isinstance(v, dict)
            for t in v.values()
            if isinstance(t, TensorInfo)
        )
        return f"dict of {len(value)} entries" + (f", {tensors} tensors" if tensors else "")
    if isinstance(value, (list, tuple, set, frozenset)):
        return f"{type(value).__name__} of {len(value)}"
    return short(value)


def short(value) -> str:
    """A plain value (number, string, bytes...) in at most 60 characters."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of {value.bit_length()} bits"
    if isinstance(value, (str, bytes)) and len(value) > 60:
        return repr(value[:57]) + "..."
    if isinstance(value, (str, bytes, int, float, complex, type(None))):
        return repr(value)
    return type(value).__name__


def _entries(root) -> list[tuple[str, str]]:
    if not isinstance(root, dict):
        return []
    values = list(root.values())
    if values and sum(isinstance(v, TensorInfo) for v in values) >= 0.5 * len(values):
        return []  # a bare state dict: its keys are the tensors
    seen: set[int] = set()
    return [(k if isinstance(k, str) else short(k), describe(v, seen)) for k, v in root.items()]
