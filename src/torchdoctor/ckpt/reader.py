"""Reads a checkpoint's structure without executing anything from it, and without torch.

The file is opened without blocking and only if it is a regular file. Its pickle is read by
`unpickler.SafeUnpickler`, which imports and calls nothing the file names and stops at a budget;
a safetensors header is checked as the safetensors library checks it. Tensor data is never
read: listing a large file costs the size of its pickle, not of its weights.
"""

from __future__ import annotations

import io
import json
import os
import struct
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass, field

from torchdoctor.ckpt.unpickler import (
    BASE_BUDGET,
    ITEMSIZE,
    PER_STORAGE,
    SafeUnpickler,
    TensorInfo,
    Unreadable,
    damaged,
    shape_of,
)
from torchdoctor.knowledge.weights_only import weights_only_allows
from torchdoctor.user_files import open_regular_file

# torch.save's legacy (non-zip) format starts with this number, pickled.
LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
# A pickle holds at most this much before we call it hostile (data.pkl of real checkpoints with
# 100k tensors is a few MB).
MAX_PICKLE_BYTES = 512 * 1024 * 1024
# What the safetensors library accepts as a header.
MAX_SAFETENSORS_HEADER = 100_000_000
SAFETENSORS_DTYPES = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U8": "uint8",
    "BOOL": "bool",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
    "F8_E8M0": "float8_e8m0fnu",
    "U16": "uint16",
    "U32": "uint32",
    "U64": "uint64",
    "C64": "complex64",
}


@dataclass
class Checkpoint:
    path: str
    size: int
    format: str  # "zip" | "legacy" | "pickle" | "safetensors"
    root: object
    # Every global the pickle names, with how often; a safetensors file names none.
    globals: Counter = field(default_factory=Counter)
    metadata: dict = field(default_factory=dict)  # safetensors' __metadata__
    # How the pickle uses a global beyond naming it: "new", "call", "call-scalar", "call-result".
    uses: dict = field(default_factory=dict)

    @property
    def refused_globals(self) -> list[str]:
        """What `torch.load(weights_only=True)` would refuse, in the file's order."""
        return [name for name in self.globals if not weights_only_allows(name)]


def read(path: str) -> Checkpoint:
    """The checkpoint at `path`; raises Unreadable (with what the file is) or OSError
    (user_files.RefusedFile for a directory, FIFO or device: never blocks on one)."""
    with open_regular_file(path) as handle:
        size = os.fstat(handle.fileno()).st_size
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
    # A header length (little-endian, under 4 GB) and the header's JSON.
    if len(head) >= 9 and head[4:8] == b"\0\0\0\0" and head[8:9] in (b"{", b"["):
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
        return fields.get("size", "").strip()[:40]
    return " ".join(text.split())[:80]


# zip (torch >= 1.6) ------------------------------------------------------------------------

# What zipfile raises on a damaged archive or member, decompressors' errors included.
_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    OSError,
    EOFError,
    ValueError,
    RuntimeError,
    NotImplementedError,
    struct.error,
    IndexError,
    KeyError,
)


def _read_zip(path: str, handle, size: int) -> Checkpoint:
    try:
        archive = zipfile.ZipFile(handle)
    except _ZIP_ERRORS:
        raise Unreadable("truncated") from None
    with archive:
        names = archive.namelist()
        pickles = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1]
        if not pickles:
            raise Unreadable("zip-not-torch", ", ".join(n[:60] for n in names[:3]))
        record = pickles[0]
        prefix = record[: -len("data.pkl")]
        for info in archive.infolist():
            if info.header_offset + info.compress_size > size:
                raise Unreadable("truncated")
        try:
            with archive.open(record) as member:  # the size a header claims is not trusted
                data = member.read(MAX_PICKLE_BYTES + 1)
        except _ZIP_ERRORS as error:
            raise damaged(f"{record}: {error}"[:200]) from None
        if len(data) > MAX_PICKLE_BYTES:
            raise Unreadable("budget", f"{record} holds more than {MAX_PICKLE_BYTES:,} bytes")
        storages = {
            n[len(prefix) + len("data/") :]: archive.getinfo(n).file_size
            for n in names
            if n.startswith(prefix + "data/")
        }
    unpickler = SafeUnpickler(io.BytesIO(data), storages, BASE_BUDGET + PER_STORAGE * len(storages))
    root = unpickler.load_safely()
    return Checkpoint(path, size, "zip", root, unpickler.globals, uses=unpickler.uses)


# legacy torch.save format (torch < 1.6, or _use_new_zipfile_serialization=False) and plain
# pickles ----------------------------------------------------------------------------------


class _Bounded:
    """A file read by a pickle: at most MAX_PICKLE_BYTES of it."""

    def __init__(self, handle):
        self._handle = handle
        self._left = MAX_PICKLE_BYTES

    def read(self, size: int = -1) -> bytes:
        return self._spent(
            self._handle.read(self._left + 1 if size < 0 else min(size, self._left + 1))
        )

    def readline(self) -> bytes:
        return self._spent(self._handle.readline(self._left + 1))

    def _spent(self, data: bytes) -> bytes:
        self._left -= len(data)
        if self._left < 0:
            raise Unreadable("budget", f"the pickle holds more than {MAX_PICKLE_BYTES:,} bytes")
        return data


def _read_pickle_file(path: str, handle, size: int) -> Checkpoint:
    handle.seek(0)
    stream = _Bounded(handle)
    first = SafeUnpickler(stream, None)
    magic = first.load_safely()
    if type(magic) is not int or magic != LEGACY_MAGIC:
        return Checkpoint(path, size, "pickle", magic, first.globals, uses=first.uses)
    budget = first.budget
    for _ in ("protocol version", "sys info"):
        budget = _load(stream, budget)[1]
    unpickler = SafeUnpickler(stream, None, budget)
    root = unpickler.load_safely()
    keys = _load(stream, unpickler.budget)[0]
    # Each storage follows as an 8-byte element count and its bytes: a file cut short ends
    # before the last one does.
    dtypes = unpickler.storage_dtypes
    for key in keys if isinstance(keys, list) else ():
        count = handle.read(8)
        if len(count) < 8:
            raise Unreadable("truncated")
        elements = struct.unpack("<q", count)[0]
        if elements < 0:
            raise damaged("a storage of a negative size")
        dtype = dtypes.get(key, "") if isinstance(key, str) else ""
        length = elements * ITEMSIZE.get(dtype, 1)
        if handle.tell() + length > size:
            raise Unreadable("truncated")
        handle.seek(length, os.SEEK_CUR)
    return Checkpoint(path, size, "legacy", root, unpickler.globals, uses=unpickler.uses)


def _load(stream, budget: int):
    """(the next pickle in `stream`, the budget left)."""
    unpickler = SafeUnpickler(stream, None, budget)
    return unpickler.load_safely(), unpickler.budget


# safetensors ------------------------------------------------------------------------------


def _read_safetensors(path: str, handle, size: int) -> Checkpoint:
    handle.seek(0)
    length = struct.unpack("<Q", handle.read(8))[0]
    if length > MAX_SAFETENSORS_HEADER:
        raise damaged(
            f"a safetensors header of {length:,} bytes (the format's limit is "
            f"{MAX_SAFETENSORS_HEADER:,})"
        )
    if 8 + length > size:
        raise Unreadable("truncated")
    try:
        header = json.loads(handle.read(length).decode("utf-8"))
    except UnicodeDecodeError:
        raise damaged("the safetensors header is not UTF-8") from None
    except (ValueError, RecursionError):
        raise damaged("the safetensors header is not valid JSON") from None
    if not isinstance(header, dict):
        raise damaged("the safetensors header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not (isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())):
        raise damaged("the safetensors __metadata__ is not a map of strings")
    root = {key: _safetensors_tensor(key, entry) for key, entry in header.items()}
    _check_offsets(header, root, size - 8 - length)
    return Checkpoint(path, size, "safetensors", root, metadata=metadata)


def _safetensors_tensor(key: str, entry) -> TensorInfo:
    name = repr(key[:60])
    if not isinstance(entry, dict):
        raise damaged(f"the safetensors entry {name} is not an object")
    dtype, offsets = entry.get("dtype"), entry.get("data_offsets")
    if not isinstance(dtype, str):
        raise damaged(f"the dtype of {name} is not a string")
    try:
        shape = shape_of(entry.get("shape"))
    except Unreadable:
        raise damaged(f"the shape of {name} is not a list of sizes") from None
    if not (
        isinstance(offsets, list)
        and len(offsets) == 2
        and all(type(o) is int for o in offsets)
        and 0 <= offsets[0] <= offsets[1]
    ):
        raise damaged(f"the data_offsets of {name} are not two increasing byte offsets")
    return TensorInfo(shape, SAFETENSORS_DTYPES.get(dtype, dtype.lower()[:20]), "cpu", key)


def _check_offsets(header: dict, root: dict[str, TensorInfo], data_size: int) -> None:
    """The checks the safetensors library makes: each tensor's bytes fit its shape and dtype,
    and the tensors tile the data without gaps or overlaps, up to the end of the file."""
    end = 0
    for key in sorted(header, key=lambda k: header[k]["data_offsets"]):
        begin, stop = header[key]["data_offsets"]
        tensor = root[key]
        if begin != end:
            raise damaged(
                f"the data of {key[:60]!r} "
                + ("overlaps another tensor's" if begin < end else "leaves a gap")
            )
        if tensor.dtype in ITEMSIZE and stop - begin != tensor.nbytes:
            raise damaged(
                f"{key[:60]!r} has {stop - begin:,} bytes for {tensor.numel:,} "
                f"{tensor.dtype} values"
            )
        end = stop
    if end > data_size:
        raise Unreadable("truncated")
    if end < data_size:
        raise damaged(f"{data_size - end:,} bytes after the last tensor")
