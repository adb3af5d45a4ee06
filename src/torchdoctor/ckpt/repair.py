"""The safe repairs, on real tensors: load without running the file's code, unwrap, rename
prefixes, add or drop `num_batches_tracked`, move to CPU, turn metadata into plain values, and
write a NEW file atomically. Imports torch."""

from __future__ import annotations

import importlib
import json
import os
import secrets
import struct
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import torch

from torchdoctor.ckpt import reader
from torchdoctor.ckpt.diff import Diff, compare, reference_of_model
from torchdoctor.ckpt.inspect import Weights, batchnorm, locate
from torchdoctor.ckpt.reader import TensorInfo
from torchdoctor.knowledge import state_dicts as sd_errors
from torchdoctor.knowledge import weights_only as _weights_only

SAFETENSORS_CODES = {v: k for k, v in reader.SAFETENSORS_DTYPES.items()}
DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
}
# Arrays up to this many elements become lists; larger ones become tensors.
LIST_LIMIT = 4096


class NeedsTrust(Exception):
    """The file names classes that only a full unpickle (running its code) can rebuild."""

    def __init__(self, names: list[str]):
        super().__init__(", ".join(names))
        self.names = names


class Dangerous(Exception):
    """The file holds code to run while loading: it is never loaded, trusted or not."""

    def __init__(self, names: list[str]):
        super().__init__(", ".join(names))
        self.names = names


class OutputExists(Exception):
    """The file to write exists, and replacing it was not asked for."""


@dataclass
class Loaded:
    root: object
    weights: Weights
    converted: list[str] = field(default_factory=list)  # what became plain values


def load(path: str, checkpoint: reader.Checkpoint, trust: bool = False) -> Loaded:
    """The file's objects on the CPU. Runs no code of the file unless it needs classes of the
    user's code and `trust`; never loads a file that holds code to run (Dangerous)."""
    if checkpoint.format == "safetensors":
        root = read_safetensors(path)
    else:
        needed, uses = checkpoint.refused_globals, checkpoint.uses
        code = _weights_only.code_globals(needed, uses)
        if code:
            raise Dangerous(code)
        classes = [n for n in needed if not _weights_only.is_data(n)]
        if classes and not trust:
            raise NeedsTrust(classes)
        if classes:
            root = torch.load(path, map_location="cpu", weights_only=False)
        else:
            allowed = [(_resolve(n), n) for n in needed]
            if "numpy.dtype" in needed:  # numpy.dtype(...) returns instances of these classes
                allowed += _numpy_dtype_classes()
            with torch.serialization.safe_globals(allowed):
                root = torch.load(path, map_location="cpu", weights_only=True)
    converted: list[str] = []
    if isinstance(root, torch.nn.Module):
        converted.append(f"{type(root).__module__}.{type(root).__qualname__} -> state_dict")
        root = root.state_dict()
    root = plain(root, converted)
    weights = locate(root, lambda v: isinstance(v, torch.Tensor))
    if weights is None:
        raise ValueError("no state dict (a dict of tensors) found in the file")
    return Loaded(root, weights, converted)


def _numpy_dtype_classes() -> list:
    import numpy

    dtypes = getattr(numpy, "dtypes", None)
    return [getattr(dtypes, name) for name in dir(dtypes) if name.endswith("DType")]


def _resolve(name: str):
    module, _, attribute = name.rpartition(".")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy 2 warns on numpy.core
        for candidate in (module, module.replace("numpy.core", "numpy._core")):
            try:
                return getattr(importlib.import_module(candidate), attribute)
            except (ImportError, AttributeError):
                continue
    raise NeedsTrust([name])


def plain(value, converted: list[str], depth: int = 0):
    """`value` with numpy values, Namespaces, paths and modules turned into plain Python values
    and state dicts, so that `torch.load(weights_only=True)` accepts it."""
    kind = type(value)
    if kind.__module__.split(".", 1)[0] == "numpy":  # before float: numpy.float64 is one
        converted.append(f"numpy.{kind.__name__}")
        if getattr(value, "ndim", 0) and value.size > LIST_LIMIT:
            return torch.from_numpy(value.copy())
        return value.tolist() if hasattr(value, "tolist") else str(value)
    if depth > 50 or isinstance(
        value,
        (
            torch.Tensor,
            str,
            bytes,
            int,
            float,
            bool,
            complex,
            type(None),
            torch.dtype,
            torch.device,
            torch.Size,
        ),
    ):
        return value
    if isinstance(value, torch.nn.Module):
        converted.append(f"{type(value).__name__} -> state_dict")
        return value.state_dict()
    if isinstance(value, dict):
        items = [(k, plain(v, converted, depth + 1)) for k, v in value.items()]
        if kind in (dict, OrderedDict):
            result = kind(items)
            metadata = getattr(value, "_metadata", None)
            if metadata is not None:
                result._metadata = metadata
            return result
        converted.append(f"{kind.__module__}.{kind.__name__} -> dict")
        return dict(items)
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [plain(v, converted, depth + 1) for v in value]
        if kind in (list, tuple, set, frozenset):
            return kind(items)
        return list(items)  # a list subclass, a namedtuple
    if hasattr(value, "__fspath__"):
        converted.append(f"{kind.__name__} -> str")
        return os.fspath(value)
    if hasattr(value, "value") and kind.__mro__[1].__name__ in ("Enum", "IntEnum", "StrEnum"):
        converted.append(f"{kind.__name__} -> value")
        return plain(value.value, converted, depth + 1)
    if hasattr(value, "__dict__"):  # argparse.Namespace, a config object
        converted.append(f"{kind.__module__}.{kind.__qualname__} -> dict")
        return {k: plain(v, converted, depth + 1) for k, v in vars(value).items()}
    converted.append(f"{kind.__name__} -> str")
    return str(value)


def infos(tensors: dict) -> dict[str, TensorInfo]:
    return reference_of_model(tensors)


def self_reference(tensors: dict[str, TensorInfo]) -> dict[str, TensorInfo]:
    """What the keys should be without a model to compare with: no wrapper prefix shared by
    every key, and a `num_batches_tracked` for every BatchNorm layer."""
    prefixes = {sd_errors.wrapper_prefix(k) for k in tensors}
    prefix = prefixes.pop() if len(prefixes) == 1 else ""
    reference = {k[len(prefix) :]: v for k, v in tensors.items()}
    _, missing = batchnorm(list(reference))
    for layer in missing:
        reference[f"{layer}.{sd_errors.BATCHES_TRACKED}"] = TensorInfo((), "int64", "cpu")
    return reference


def repaired(
    weights: Weights,
    diff: Diff,
    reference: dict[str, TensorInfo] | None = None,
    dtype: str | None = None,
) -> OrderedDict:
    """The state dict with the diff's safe repairs applied, in the reference's key order."""
    tensors = weights.tensors
    result: OrderedDict = OrderedDict()
    for old, new in diff.renames.items():
        if new is not None:
            result[new] = tensors[old]
    for key in diff.added:
        result[key] = torch.tensor(0, dtype=torch.long)
    if reference:
        order = {k: i for i, k in enumerate(reference)}
        result = OrderedDict(sorted(result.items(), key=lambda kv: order.get(kv[0], len(order))))
    if dtype is not None:
        target = DTYPES[dtype]
        result = OrderedDict(
            (k, v.to(target) if v.is_floating_point() else v) for k, v in result.items()
        )
    metadata = weights.metadata
    if metadata is not None:
        result._metadata = _renamed_metadata(metadata, diff)
    return result


def _renamed_metadata(metadata, diff: Diff) -> OrderedDict:
    """Module versions keyed by the repaired module paths (what consume_prefix does)."""
    renamed = OrderedDict(metadata)
    for difference in diff.differences:
        if difference.kind != "prefix":
            continue
        prefix, side = difference.fields["prefix"], difference.fields["side"]
        update = OrderedDict()
        for key, value in renamed.items():
            if side == "checkpoint" and (key + ".").startswith(prefix):
                key = key[len(prefix) :] if len(key) >= len(prefix) else ""
            elif side == "model":
                key = (prefix + key).rstrip(".") if key else prefix.rstrip(".")
            update[key] = value
        renamed = update
    return renamed


def plan(path: str, checkpoint: reader.Checkpoint, model=None, trust: bool = False):
    """(loaded file, diff against the model or the file's own repaired keys, reference)."""
    loaded = load(path, checkpoint, trust)
    tensors = infos(loaded.weights.tensors)
    if model is not None:
        reference = reference_of_model(model.state_dict())
    else:
        reference = self_reference(tensors)
    return loaded, compare(tensors, reference, loaded.weights.where), reference


def with_weights(root, where: tuple[str, ...], weights: dict):
    """`root` with the dict at `where` replaced by `weights`."""
    if not where:
        return weights
    copy = dict(root) if type(root) is not OrderedDict else OrderedDict(root)
    copy[where[0]] = with_weights(root[where[0]], where[1:], weights)
    return copy


def write_atomically(out: Path, write, replace: bool = False) -> None:
    """`write(temp_path)`, then rename it to `out`: a crash leaves the old `out` or nothing.
    The new file gets the mode any new file gets (0666 less the umask). An `out` that exists
    (made meanwhile) is replaced only with `replace` (OutputExists)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    temp = _new_file(out)
    try:
        write(str(temp))
        with open(temp, "rb") as written:
            os.fsync(written.fileno())
        if not replace and os.path.lexists(out):
            raise OutputExists(str(out))
        os.replace(temp, out)
    except BaseException:
        if os.path.lexists(temp):
            os.unlink(temp)
        raise


def _new_file(out: Path) -> Path:
    """An empty file next to `out`, created as `open(..., "w")` would create it (mkstemp's are
    private to the user: 0600)."""
    while True:
        temp = out.parent / f".{out.name}.{secrets.token_hex(4)}.tmp"
        try:
            os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return temp
        except FileExistsError:
            continue


def save_safetensors(tensors: dict, path: str, metadata: dict | None = None) -> None:
    """The safetensors format: an 8-byte little-endian header length, a JSON header, raw bytes."""
    header: dict = {"__metadata__": {"format": "pt", **(metadata or {})}}
    blobs = []
    offset = 0
    for key, tensor in tensors.items():
        tensor = tensor.detach().to("cpu").contiguous()
        code = SAFETENSORS_CODES.get(str(tensor.dtype).replace("torch.", ""))
        if code is None:
            raise ValueError(f"{key}: dtype {tensor.dtype} has no safetensors code")
        data = tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""
        header[key] = {
            "dtype": code,
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(text)))
        handle.write(text)
        for data in blobs:
            handle.write(data)


def read_safetensors(path: str) -> OrderedDict:
    checkpoint = reader.read(path)
    with open(path, "rb") as handle:
        length = struct.unpack("<Q", handle.read(8))[0]
        header = json.loads(handle.read(length))
        base = 8 + length
        result: OrderedDict = OrderedDict()
        for key in checkpoint.root:
            entry = header[key]
            begin, end = entry["data_offsets"]
            handle.seek(base + begin)
            data = bytearray(handle.read(end - begin))
            dtype = getattr(torch, reader.SAFETENSORS_DTYPES[entry["dtype"]])
            shape = tuple(entry["shape"])
            tensor = torch.frombuffer(data, dtype=dtype) if data else torch.empty(0, dtype=dtype)
            result[key] = tensor.reshape(shape)
    return result
