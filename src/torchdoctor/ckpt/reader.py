"""Reads a checkpoint's structure without executing anything from it, and without torch.

The pickle is walked by `pickle.Unpickler` with `find_class` and `persistent_load` replaced:
every global the file names becomes either one of the few pure-data rebuilders below (tensors,
OrderedDict, sets) or an inert `Opaque` placeholder that only records its name, arguments and
state. Nothing the file names is imported or called. Tensor data is never read: a tensor is
a `TensorInfo` built from its storage record, so listing a large file costs the size of its
pickle, not of its weights.
"""
from __future__ import annotations

import io
import json
import math
import os
import pickle
import struct
import zipfile
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

# torch.save's legacy (non-zip) format starts with this number, pickled.
LEGACY_MAGIC = 0x1950a86a20f9469cfc6c
# A pickle holds at most this much before we call it hostile (data.pkl of real checkpoints with
# 100k tensors is a few MB).
MAX_PICKLE_BYTES = 512 * 1024 * 1024
ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4,
            "int16": 2, "int8": 1, "uint8": 1, "bool": 1, "complex128": 16, "complex64": 8,
            "complex32": 4, "qint8": 1, "quint8": 1, "qint32": 4, "quint4x2": 1, "quint2x4": 1,
            "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
            "float8_e8m0fnu": 1, "uint16": 2, "uint32": 4, "uint64": 8}
STORAGE_DTYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool", "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128", "QInt8Storage": "qint8", "QUInt8Storage": "quint8",
    "QInt32Storage": "qint32", "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4",
    "UntypedStorage": "uint8", "TypedStorage": "uint8",
}
SAFETENSORS_DTYPES = {
    "F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
    "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool",
    "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2", "U16": "uint16", "U32": "uint32",
    "U64": "uint64", "C64": "complex64",
}
# Python 2 module names that protocol-2 pickles use (what pickle's fix_imports maps).
_PY2_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg"}
# Globals that torch.load(weights_only=True) accepts without add_safe_globals (torch 2.6+).
_ALLOWED_EXACT = frozenset({
    "collections.OrderedDict", "collections.Counter", "builtins.set", "builtins.frozenset",
    "builtins.complex", "builtins.bytearray", "_codecs.encode", "torch.Size", "torch.device",
    "torch.Tensor", "torch.nn.parameter.Parameter", "torch.serialization._get_layout",
    "torch._tensor._rebuild_from_type_v2", "torch.storage.TypedStorage",
    "torch.storage.UntypedStorage",
})
_TORCH_DTYPE_NAMES = frozenset(ITEMSIZE) | {"bits8", "bits16", "bits1x8", "bits2x4", "bits4x2",
                                             "float4_e2m1fn_x2", "per_tensor_affine",
                                             "per_channel_affine", "per_tensor_symmetric",
                                             "per_channel_symmetric",
                                             "per_channel_affine_float_qparams"}


def weights_only_allows(name: str) -> bool:
    """`torch.load(weights_only=True)` accepts the global `name` by default."""
    if name in _ALLOWED_EXACT or name.startswith("torch._utils._rebuild_"):
        return True
    module, _, attribute = name.rpartition(".")
    if module in ("torch", "torch.cuda", "torch.sparse", "torch.cuda.sparse"):
        return (attribute.endswith(("Storage", "Tensor")) or
                (module == "torch" and attribute in _TORCH_DTYPE_NAMES))
    return False


@dataclass(frozen=True)
class TensorInfo:
    """A tensor as the file describes it: nothing of its data is read."""

    shape: tuple[int, ...]
    dtype: str
    device: str
    storage: str = ""
    parameter: bool = False

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * ITEMSIZE.get(self.dtype, 1)


class Opaque:
    """An object of a class the reader does not import: its global's name, arguments, state."""

    global_name = "?"

    def __new__(cls, *args, **kwargs):
        instance = object.__new__(cls)
        instance.args = args
        instance.state = None
        instance.items = {}
        instance.elements = []
        return instance

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        self.state = state

    def __setitem__(self, key, value):  # a dict subclass (Lightning's AttributeDict)
        self.items[key] = value

    def append(self, value):  # a list subclass
        self.elements.append(value)

    def extend(self, values):
        self.elements.extend(values)

    @property
    def class_name(self) -> str:
        """The class this object was an instance of (through copyreg's reconstructor too)."""
        if self.global_name == "copyreg._reconstructor" and self.args:
            first = self.args[0]
            return getattr(first, "global_name", "?")
        return self.global_name

    @property
    def attributes(self) -> dict:
        """The instance's `__dict__` as pickled, or {}."""
        state = self.state
        if isinstance(state, tuple) and len(state) == 2:  # (dict, slots)
            state = state[0]
        return state if isinstance(state, dict) else {}

    def __repr__(self) -> str:
        return f"<{self.class_name}>"


class StateDict(OrderedDict):
    """collections.OrderedDict that can take the `_metadata` attribute a state_dict carries."""


@dataclass(frozen=True)
class Storage:
    dtype: str
    key: str
    location: str


@dataclass(frozen=True)
class TorchDtype:
    name: str

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class Unreadable(Exception):
    """The file is not a readable checkpoint; `kind` says what it is instead."""

    def __init__(self, kind: str, detail: str = ""):
        super().__init__(kind, detail)
        self.kind = kind
        self.detail = detail


@dataclass
class Checkpoint:
    path: str
    size: int
    format: str  # "zip" | "legacy" | "pickle" | "safetensors"
    root: object
    # Every global the pickle names, with how often; a safetensors file names none.
    globals: Counter = field(default_factory=Counter)
    metadata: dict = field(default_factory=dict)  # safetensors' __metadata__

    @property
    def refused_globals(self) -> list[str]:
        """What `torch.load(weights_only=True)` would refuse, in the file's order."""
        return [name for name in self.globals if not weights_only_allows(name)]


def read(path: str) -> Checkpoint:
    """The checkpoint at `path`; raises Unreadable (with what the file is) or OSError."""
    size = os.path.getsize(path)
    if os.path.isdir(path):
        raise IsADirectoryError(21, "is a directory", path)
    with open(path, "rb") as handle:
        head = handle.read(64)
        if not head:
            raise Unreadable("empty")
        kind = sniff(head, size)
        if kind == "zip":
            return _read_zip(path, handle, size)
        if kind == "pickle":
            return _read_pickle_file(path, handle, size)
        if kind == "safetensors":
            return _read_safetensors(path, handle, size)
        raise Unreadable(kind, _first_line(head, handle))


def sniff(head: bytes, size: int) -> str:
    """What the first bytes say the file is."""
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return "zip"
    if head.startswith(b"\x80") and len(head) > 1 and 2 <= head[1] <= 5:
        return "pickle"
    if len(head) >= 9 and head[8:9] == b"{":
        header = struct.unpack("<Q", head[:8])[0]
        if 0 < header <= size - 8:
            return "safetensors"
    if head.startswith(b"version https://git-lfs"):
        return "lfs-pointer"
    text = head.lstrip().lower()
    if text.startswith((b"<!doctype html", b"<html", b"<?xml", b"<head", b"<!--", b"<body")):
        return "html"
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"\x93NUMPY"):
        return "numpy"
    if head.startswith(b"\x89HDF"):
        return "hdf5"
    if not head.strip(b"\x00"):
        return "zeros"
    if head.startswith((b"{", b"[")):
        return "json"
    if all(32 <= b < 127 or b in b"\r\n\t" for b in head):
        return "text"
    return "unknown"


def _first_line(head: bytes, handle) -> str:
    """A short, printable description of a text file's content (an LFS pointer's size)."""
    handle.seek(0)
    text = handle.read(1024).decode("utf-8", "replace")
    if text.startswith("version https://git-lfs"):
        fields = dict(line.split(" ", 1) for line in text.splitlines() if " " in line)
        return fields.get("size", "").strip()
    return " ".join(text.split())[:80]


# zip (torch >= 1.6) ------------------------------------------------------------------------

def _read_zip(path: str, handle, size: int) -> Checkpoint:
    try:
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        raise Unreadable("truncated") from None
    with archive:
        names = archive.namelist()
        pickles = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1]
        if not pickles:
            raise Unreadable("zip-not-torch", ", ".join(names[:3]))
        record = pickles[0]
        prefix = record[: -len("data.pkl")]
        for info in archive.infolist():
            if info.header_offset + info.compress_size > size:
                raise Unreadable("truncated")
        info = archive.getinfo(record)
        if info.file_size > MAX_PICKLE_BYTES:
            raise Unreadable("damaged", f"{record} of {info.file_size} bytes")
        try:
            data = archive.read(record)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
            raise Unreadable("damaged", str(error)) from None
        storages = {n[len(prefix) + len("data/"):]: archive.getinfo(n).file_size
                    for n in names if n.startswith(prefix + "data/")}
    unpickler = SafeUnpickler(io.BytesIO(data), storages)
    root = unpickler.load_safely()
    return Checkpoint(path, size, "zip", root, unpickler.globals)


# legacy torch.save format (torch < 1.6, or _use_new_zipfile_serialization=False) and plain
# pickles ----------------------------------------------------------------------------------

def _read_pickle_file(path: str, handle, size: int) -> Checkpoint:
    handle.seek(0)
    first = SafeUnpickler(handle, None)
    magic = first.load_safely()
    if magic != LEGACY_MAGIC:
        return Checkpoint(path, size, "pickle", magic, first.globals)
    SafeUnpickler(handle, None).load_safely()  # protocol version
    SafeUnpickler(handle, None).load_safely()  # sys info
    unpickler = SafeUnpickler(handle, None)
    root = unpickler.load_safely()
    keys = SafeUnpickler(handle, None).load_safely()
    # Each storage follows as an 8-byte element count and its bytes: a file cut short ends
    # before the last one does.
    dtypes = unpickler.storage_dtypes
    for key in keys if isinstance(keys, list) else ():
        count = handle.read(8)
        if len(count) < 8:
            raise Unreadable("truncated")
        length = struct.unpack("<q", count)[0] * ITEMSIZE.get(dtypes.get(str(key), ""), 1)
        if handle.tell() + length > size:
            raise Unreadable("truncated")
        handle.seek(length, os.SEEK_CUR)
    return Checkpoint(path, size, "legacy", root, unpickler.globals)


class SafeUnpickler(pickle.Unpickler):
    """Builds the object tree of a pickle; no global the file names is imported or called."""

    def __init__(self, file, storages: dict[str, int] | None):
        super().__init__(file, encoding="utf-8")
        self.storages = storages
        self.globals: Counter = Counter()
        self.storage_dtypes: dict[str, str] = {}
        self._placeholders: dict[str, type] = {}

    def load_safely(self):
        try:
            return self.load()
        except RecursionError:
            raise Unreadable("damaged", "nested too deeply") from None
        except MemoryError:
            raise Unreadable("damaged", "the pickle claims more memory than exists") from None
        except (EOFError, pickle.UnpicklingError, struct.error) as error:
            text = str(error)
            if isinstance(error, EOFError) or "truncated" in text or "underflow" in text:
                raise Unreadable("truncated") from None
            raise Unreadable("damaged", text) from None
        except (ValueError, TypeError, KeyError, IndexError, AttributeError,
                UnicodeDecodeError, OverflowError) as error:
            raise Unreadable("damaged", f"{type(error).__name__}: {error}") from None

    def find_class(self, module: str, name: str):
        module = _PY2_MODULES.get(module, module)
        full = f"{module}.{name}"
        self.globals[full] = self.globals.get(full, 0) + 1
        if full in _REBUILDERS:
            return _REBUILDERS[full]
        attribute = name.rpartition(".")[2]
        if module in ("torch", "torch.cuda") and attribute in STORAGE_DTYPES:
            return Storage(STORAGE_DTYPES[attribute], "", "")
        if module == "torch.storage" and attribute in STORAGE_DTYPES:
            return Storage("uint8", "", "")
        if module == "torch" and name in _TORCH_DTYPE_NAMES:
            return TorchDtype(name)
        if full not in self._placeholders:
            self._placeholders[full] = type(name[:64] or "Opaque", (Opaque,),
                                            {"global_name": full})
        return self._placeholders[full]

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unsupported persistent id {str(pid)[:60]}")
        kind, key, location = pid[1], str(pid[2]), str(pid[3])
        dtype = kind.dtype if isinstance(kind, Storage) else "uint8"
        self.storage_dtypes[key] = dtype
        return Storage(dtype, key, location)


def _tensor(storage, offset=0, size=(), stride=None, *rest):
    if not isinstance(storage, Storage):
        return _opaque_tensor(storage, offset, size, stride, *rest)
    shape = tuple(int(d) for d in size) if isinstance(size, (tuple, list)) else ()
    return TensorInfo(shape, storage.dtype, _device(storage.location), storage.key)


def _device(location: str) -> str:
    return "cuda:0" if location == "cuda" else location


def _parameter(data, *rest):
    if isinstance(data, TensorInfo):
        return TensorInfo(data.shape, data.dtype, data.device, data.storage, True)
    return data


def _from_type(func, new_type, args, state):
    """A tensor subclass: the tensor `func(*args)` built, whatever its Python class."""
    return func(*args) if callable(func) else None


def _meta_tensor(dtype, size, *rest):
    name = dtype.name if isinstance(dtype, TorchDtype) else str(dtype)
    return TensorInfo(tuple(int(d) for d in size), name, "meta")


def _encode(text, encoding="utf-8"):
    if isinstance(text, str) and encoding in ("latin1", "latin-1", "utf-8", "utf8", "ascii"):
        return text.encode(encoding)
    return b""


def _opaque_tensor(*args):
    placeholder = type("Tensor", (Opaque,), {"global_name": "torch._utils._rebuild_tensor"})
    return placeholder(*args)


def _size(*args):
    return tuple(args[0]) if args and isinstance(args[0], (tuple, list)) else ()


def _set(items=()):
    return set(items) if all(isinstance(i, (str, int, float, tuple, bool)) or i is None
                             for i in items) else list(items)


_REBUILDERS = {
    "torch._utils._rebuild_tensor_v2": _tensor,
    "torch._utils._rebuild_tensor": _tensor,
    "torch._utils._rebuild_parameter": _parameter,
    "torch._utils._rebuild_parameter_with_state": _parameter,
    "torch._tensor._rebuild_from_type_v2": _from_type,
    "torch._utils._rebuild_meta_tensor_no_storage": _meta_tensor,
    "collections.OrderedDict": StateDict,
    "builtins.set": _set,
    "builtins.frozenset": _set,
    "_codecs.encode": _encode,
    "torch.Size": _size,
    "torch.device": lambda *args: ":".join(str(a) for a in args),
}


# safetensors ------------------------------------------------------------------------------

def _read_safetensors(path: str, handle, size: int) -> Checkpoint:
    handle.seek(0)
    length = struct.unpack("<Q", handle.read(8))[0]
    if length > MAX_PICKLE_BYTES:
        raise Unreadable("damaged", "safetensors header too large")
    try:
        header = json.loads(handle.read(length).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise Unreadable("truncated") from None
    if not isinstance(header, dict):
        raise Unreadable("damaged", "safetensors header is not an object")
    metadata = header.pop("__metadata__", None) or {}
    root: dict[str, TensorInfo] = {}
    end = 0
    for key, entry in header.items():
        try:
            shape = tuple(int(d) for d in entry["shape"])
            dtype = SAFETENSORS_DTYPES.get(entry["dtype"], entry["dtype"].lower())
            end = max(end, int(entry["data_offsets"][1]))
        except (KeyError, TypeError, ValueError, IndexError):
            raise Unreadable("damaged", f"bad safetensors entry {key!r}") from None
        root[key] = TensorInfo(shape, dtype, "cpu", key)
    if 8 + length + end > size:
        raise Unreadable("truncated")
    return Checkpoint(path, size, "safetensors", root, Counter(),
                      metadata if isinstance(metadata, dict) else {})
