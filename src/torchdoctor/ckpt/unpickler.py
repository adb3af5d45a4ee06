"""A pickle interpreter that runs nothing from the file and stops at a budget.

pickle's pure-Python unpickler reads the opcodes, with every opcode that could run code replaced.
A global the file names becomes a `Global`: its name, nothing imported. Calling or instantiating
one builds an inert `Opaque` record of the name, its arguments and state, and `uses` notes how
the file used the name (called, instantiated, its result called): what a full unpickle would do
with it. Only a few pure-data rebuilders run: tensors become `TensorInfo` (shape, dtype, device;
the data is never read), OrderedDicts, sets, sizes.

Every step is bounded, so that a hostile file costs time and memory in proportion to what the
reader reports: at most `budget` opcodes (each makes at most one object), dict keys and set
elements that hash cheaply (hashing a tuple of shared tuples takes time exponential in its
depth), shapes of at most MAX_DIMS sizes. The C unpickler cannot be bounded this way.
"""

from __future__ import annotations

import math
import pickle
import struct
from collections import Counter, OrderedDict
from dataclasses import dataclass

from torchdoctor.knowledge.weights_only import TORCH_DTYPES

# Opcodes a pickle may run before the reader stops: a typical checkpoint spends about 55 per
# tensor, and no opcode makes more than one object (at most ~250 bytes: an empty set).
BASE_BUDGET = 2_000_000
# What each tensor record in a zip checkpoint adds to the budget (a record costs the file at
# least 76 bytes of zip headers, so the budget stays in proportion to the file's size).
PER_STORAGE = 100
MAX_DIMS = 1024
MAX_SIZE = 2**63  # a size no tensor reaches (torch's sizes are int64)
# What hash() may visit in one dict key or set element: real keys are strings, numbers and
# short tuples, while a tuple of shared tuples costs hash() time exponential in its depth.
MAX_KEY_PARTS = 256
ITEMSIZE = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "complex128": 16,
    "complex64": 8,
    "complex32": 4,
    "qint8": 1,
    "quint8": 1,
    "qint32": 4,
    "quint4x2": 1,
    "quint2x4": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
    "float8_e8m0fnu": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
}
STORAGE_DTYPES = {
    "FloatStorage": "float32",
    "DoubleStorage": "float64",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
    "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
    "QInt8Storage": "qint8",
    "QUInt8Storage": "quint8",
    "QInt32Storage": "qint32",
    "QUInt4x2Storage": "quint4x2",
    "QUInt2x4Storage": "quint2x4",
    "UntypedStorage": "uint8",
    "TypedStorage": "uint8",
}
# Python 2 module names that protocol-2 pickles use (what pickle's fix_imports maps).
_PY2_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg"}
_SCALARS = (str, int, float, bool, bytes, type(None))


class Unreadable(Exception):
    """The file is not a readable checkpoint; `kind` says what it is instead.

    `globals` and `uses`: what the pickle named before reading stopped, since a damaged file can
    still be a hostile one."""

    def __init__(
        self, kind: str, detail: str = "", globals: Counter | None = None, uses: dict | None = None
    ):
        super().__init__(kind, detail)
        self.kind = kind
        self.detail = detail
        self.globals = globals if globals is not None else Counter()
        self.uses = uses if uses is not None else {}


def damaged(detail: str) -> Unreadable:
    return Unreadable("damaged", detail)


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


def shape_of(size) -> tuple[int, ...]:
    """`size` as a tensor shape; Unreadable unless it is a short sequence of sizes."""
    if not isinstance(size, (tuple, list)):
        raise damaged(f"a tensor shape that is a {type(size).__name__}")
    if len(size) > MAX_DIMS:
        raise damaged(f"a tensor of {len(size):,} dimensions")
    for d in size:
        if type(d) is not int or not 0 <= d < MAX_SIZE:
            raise damaged("a tensor shape with a size that is not a count")
    return tuple(size)


class Global:
    """A name the pickle imports (`module.attribute`); nothing is imported. `rebuild` is the
    reader's own pure-data stand-in for it, or None."""

    __slots__ = ("name", "rebuild")

    def __init__(self, name: str, rebuild=None):
        self.name = name
        self.rebuild = rebuild

    def __repr__(self) -> str:
        return self.name


class Opaque:
    """An object of a class the reader does not import: its global's name, arguments, state."""

    __slots__ = ("global_name", "args", "state", "items", "elements")

    def __init__(self, global_name: str, args: tuple = ()):
        self.global_name = global_name
        self.args = args
        self.state = None
        self.items: dict | None = None  # a dict subclass's items (Lightning's AttributeDict)
        self.elements: list | None = None  # a list subclass's elements

    def __setitem__(self, key, value):
        if self.items is None:
            self.items = {}
        self.items[key] = value

    def append(self, value):
        self.extend((value,))

    def extend(self, values):
        if self.elements is None:
            self.elements = []
        self.elements.extend(values)

    @property
    def class_name(self) -> str:
        return self.global_name

    @property
    def attributes(self) -> dict:
        """The instance's `__dict__` as pickled, or {}."""
        state = self.state
        if isinstance(state, tuple) and len(state) == 2:  # (dict, slots)
            state = state[0]
        return state if isinstance(state, dict) else {}

    def __repr__(self) -> str:
        return f"<{self.global_name}>"


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


_LONG_BINPUT, _BININT1, _BINGET = pickle.LONG_BINPUT[0], pickle.BININT1[0], pickle.BINGET[0]
_unpack_uint32 = struct.Struct("<I").unpack


class _Done(Exception):
    def __init__(self, value):
        super().__init__()
        self.value = value


class _Opcodes(dict):
    def __missing__(self, key: int):
        raise pickle.UnpicklingError(f"invalid load key, {bytes([key])!r}")


class SafeUnpickler(pickle._Unpickler):
    """Builds the object tree of a pickle; no global the file names is imported or called."""

    dispatch = _Opcodes(pickle._Unpickler.dispatch)

    def __init__(self, file, storages: dict[str, int] | None, budget: int = BASE_BUDGET):
        super().__init__(file, encoding="utf-8")
        self.storages = storages
        self.budget = budget  # opcodes left
        self.limit = budget
        self.globals: Counter = Counter()
        self.uses: dict[str, set[str]] = {}
        self.storage_dtypes: dict[str, str] = {}
        self._names: dict[str, object] = {}
        self._key_parts: dict[int, tuple] = {}  # id -> (tuple, what hash() visits in it)

    def load_safely(self):
        """The pickle's object tree; Unreadable (with the globals seen) when it cannot be."""
        try:
            return self.load()
        except Unreadable as problem:
            problem.globals, problem.uses = self.globals, self.uses
            raise
        except RecursionError:
            raise self._unreadable("damaged", "nested too deeply") from None
        except MemoryError:
            raise self._unreadable("damaged", "the pickle claims more memory than exists") from None
        except (EOFError, pickle.UnpicklingError, struct.error) as error:
            text = str(error)
            if isinstance(error, EOFError) or "truncated" in text or "underflow" in text:
                raise self._unreadable("truncated") from None
            raise self._unreadable("damaged", text) from None
        except (
            ValueError,
            TypeError,
            KeyError,
            IndexError,
            AttributeError,
            LookupError,
            UnicodeDecodeError,
            OverflowError,
        ) as error:
            raise self._unreadable("damaged", f"{type(error).__name__}: {error}") from None

    def _unreadable(self, kind: str, detail: str = "") -> Unreadable:
        return Unreadable(kind, detail[:200], self.globals, self.uses)

    def load(self):
        # pickle's own loop, with frames read as the plain opcodes they hold (a frame is only
        # a buffering hint) and every opcode paid for from the budget.
        self.read = self._file_read
        self.readline = self._file_readline
        self.metastack = []
        self.stack = []
        self.append = self.stack.append
        self.proto = 0
        read, dispatch, left, memo = self.read, self.dispatch, self.budget, self.memo
        stack = self.stack
        try:
            while left > 0:
                key = read(1)
                if not key:
                    raise EOFError
                left -= 1
                # The three opcodes a torch checkpoint runs most (60 %), inline: 2x faster.
                op = key[0]
                if op == _LONG_BINPUT:
                    memo[_unpack_uint32(read(4))[0]] = stack[-1]
                elif op == _BININT1:
                    stack.append(read(1)[0])
                elif op == _BINGET:
                    stack.append(memo[read(1)[0]])
                else:
                    dispatch[op](self)
                    stack = self.stack  # MARK and its pop replace the stack
        except _Done as done:
            return done.value
        finally:
            self.budget = left
        raise Unreadable("budget", f"the pickle runs more than {self.limit:,} operations")

    def find_class(self, module: str, name: str):
        module = _PY2_MODULES.get(module, module)
        full = f"{module}.{name}"
        self.globals[full] += 1
        if full not in self._names:
            self._names[full] = self._stand_in(module, name, full)
        return self._names[full]

    def _stand_in(self, module: str, name: str, full: str):
        attribute = name.rpartition(".")[2]
        if module in ("torch", "torch.cuda") and attribute in STORAGE_DTYPES:
            return Storage(STORAGE_DTYPES[attribute], "", "")
        if module == "torch.storage" and attribute in STORAGE_DTYPES:
            return Storage("uint8", "", "")
        if module == "torch" and name in TORCH_DTYPES:
            return TorchDtype(name)
        methods = {
            "copyreg._reconstructor": self._reconstruct,
            "torch._tensor._rebuild_from_type_v2": self._rebuild_from_type,
            "collections.OrderedDict": self._ordered_dict,
            "builtins.set": self._set,
            "builtins.frozenset": self._frozenset,
        }
        return Global(full, REBUILDERS.get(full) or methods.get(full))

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unsupported persistent id (a {type(pid).__name__})")
        kind, key, location = pid[1], pid[2], pid[3]
        if not (isinstance(key, (str, int)) and isinstance(location, str)):
            raise pickle.UnpicklingError("a storage record whose key or device is not a name")
        dtype = kind.dtype if isinstance(kind, Storage) else "uint8"
        self.storage_dtypes[str(key)] = dtype
        return Storage(dtype, str(key)[:200], location[:200])

    # What a full unpickle would call, done inertly ------------------------------------------

    def _note(self, name: str, use: str) -> None:
        self.uses.setdefault(name, set()).add(use)

    def _call(self, func, args):
        """What `func(*args)` (REDUCE) builds; only the pure-data rebuilders run."""
        if not isinstance(args, tuple):
            raise pickle.UnpicklingError("call arguments that are not a tuple")
        if isinstance(func, Global):
            if func.rebuild is not None:
                return func.rebuild(*args)
            scalar = len(args) == 0 or (len(args) == 1 and isinstance(args[0], _SCALARS))
            self._note(func.name, "call-scalar" if scalar else "call")
            return Opaque(func.name, args)
        if isinstance(func, Opaque):  # calling an object the pickle built: getattr(...)()
            self._note(func.global_name, "call-result")
            return Opaque(func.global_name, args)
        raise pickle.UnpicklingError(f"the pickle calls a {type(func).__name__}")

    def _new(self, cls, args):
        """What `cls.__new__(cls, *args)` (NEWOBJ) builds: an instance, no constructor run."""
        if not isinstance(cls, Global):
            raise pickle.UnpicklingError(f"NEWOBJ of a {type(cls).__name__}")
        if cls.rebuild is not None:
            return cls.rebuild(*args)
        self._note(cls.name, "new")
        return Opaque(cls.name, args)

    def _reconstruct(self, cls, base, state):
        """copyreg._reconstructor: an instance of `cls`; `base.__init__(obj, state)` runs when
        there is a state."""
        if not isinstance(cls, Global):
            raise pickle.UnpicklingError("copyreg._reconstructor of something not a class")
        if state is not None and isinstance(base, Global):
            self._note(base.name, "call-scalar" if isinstance(state, _SCALARS) else "call")
        return self._new(cls, ())

    def _rebuild_from_type(self, func, new_type, args, state):
        """A tensor subclass: the tensor `func(*args)` builds, whatever its Python class."""
        if isinstance(new_type, Global):
            self._note(new_type.name, "new")
        return self._call(func, args)

    def load_reduce(self):
        args = self.stack.pop()
        self.stack[-1] = self._call(self.stack[-1], args)

    def load_newobj(self):
        args = self.stack.pop()
        self.stack[-1] = self._new(self.stack[-1], args)

    def load_newobj_ex(self):
        self.stack.pop()  # keyword arguments
        self.load_newobj()

    def _instantiate(self, klass, args):  # INST and OBJ (protocols 0 and 1)
        self.append(self._call(klass, tuple(args)) if args else self._new(klass, ()))

    def load_build(self):
        state = self.stack.pop()
        target = self.stack[-1]
        if isinstance(target, Opaque):
            target.state = state
        elif isinstance(target, StateDict):  # OrderedDict's state: the `_metadata` attribute
            attributes = state[0] if isinstance(state, tuple) and len(state) == 2 else state
            if isinstance(attributes, dict) and "_metadata" in attributes:
                target._metadata = attributes["_metadata"]
        # Anything else (a TensorInfo, a dict): a state no real checkpoint gives; ignored.

    def load_frame(self):
        self.read(8)

    def load_stop(self):
        raise _Done(self.stack.pop())

    # Hashing what the file gives, bounded ---------------------------------------------------

    def _key(self, value):
        """`value`, once sure that hash() visits at most MAX_KEY_PARTS items in it."""
        if type(value) is tuple and self._parts(value, MAX_KEY_PARTS) > MAX_KEY_PARTS:
            raise damaged("a dict key or set element nested too deeply")
        return value

    def _parts(self, value, limit: int) -> int:
        """What hash() visits in `value`, counted up to just past `limit`; each tuple is counted
        once, however many keys share it."""
        if type(value) is not tuple:
            return 1
        known = self._key_parts.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        parts = 1
        for item in value:
            parts += self._parts(item, limit - parts)
            if parts > limit:
                return parts  # not remembered: a smaller limit stopped it early
        self._key_parts[id(value)] = (value, parts)
        return parts

    def _setitems(self, target, items: list) -> None:
        if not isinstance(target, (dict, Opaque)):
            raise pickle.UnpicklingError(f"SETITEMS on a {type(target).__name__}")
        for index in range(0, len(items) - 1, 2):
            target[self._key(items[index])] = items[index + 1]

    def _set(self, items=()):
        items = items if isinstance(items, (list, tuple, set, frozenset)) else ()
        return {self._key(item) for item in items}

    def _frozenset(self, items=()):
        return frozenset(self._set(items))

    def _ordered_dict(self, items=()):
        result = StateDict()
        for pair in items if isinstance(items, (list, tuple)) else ():
            if not (isinstance(pair, (list, tuple)) and len(pair) == 2):
                raise pickle.UnpicklingError("OrderedDict items that are not pairs")
            result[self._key(pair[0])] = pair[1]
        return result

    def load_setitem(self):
        value = self.stack.pop()
        key = self.stack.pop()
        self._setitems(self.stack[-1], [key, value])

    def load_setitems(self):
        items = self.pop_mark()
        self._setitems(self.stack[-1], items)

    def load_dict(self):
        items = self.pop_mark()
        result: dict = {}
        self._setitems(result, items)
        self.append(result)

    def load_additems(self):
        items = self.pop_mark()
        target = self.stack[-1]
        if not isinstance(target, set):
            raise pickle.UnpicklingError(f"ADDITEMS to a {type(target).__name__}")
        target.update(self._key(item) for item in items)

    def load_frozenset(self):
        self.append(frozenset(self._key(item) for item in self.pop_mark()))

    def load_bytearray8(self):  # pickle's own allocates the claimed size before reading
        (size,) = struct.unpack("<Q", self.read(8))
        self.append(bytearray(self.read(size)))

    dispatch[pickle.REDUCE[0]] = load_reduce
    dispatch[pickle.NEWOBJ[0]] = load_newobj
    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex
    dispatch[pickle.BUILD[0]] = load_build
    dispatch[pickle.FRAME[0]] = load_frame
    dispatch[pickle.STOP[0]] = load_stop
    dispatch[pickle.SETITEM[0]] = load_setitem
    dispatch[pickle.SETITEMS[0]] = load_setitems
    dispatch[pickle.DICT[0]] = load_dict
    dispatch[pickle.ADDITEMS[0]] = load_additems
    dispatch[pickle.FROZENSET[0]] = load_frozenset
    dispatch[pickle.BYTEARRAY8[0]] = load_bytearray8


# The pure-data rebuilders: what the reader makes of the globals it knows ------------------------


def _tensor(storage, offset=0, size=(), stride=None, *rest):
    shape = shape_of(size)
    if not isinstance(storage, Storage):
        return Opaque("torch._utils._rebuild_tensor", (storage, offset, size, stride) + rest)
    return TensorInfo(shape, storage.dtype, _device(storage.location), storage.key)


def _device(location: str) -> str:
    return "cuda:0" if location == "cuda" else location


def _parameter(data, *rest):
    if isinstance(data, TensorInfo):
        return TensorInfo(data.shape, data.dtype, data.device, data.storage, True)
    return data


def _meta_tensor(dtype, size, *rest):
    name = dtype.name if isinstance(dtype, TorchDtype) else "?"
    return TensorInfo(shape_of(size), name, "meta")


def _encode(text, encoding="utf-8"):
    if isinstance(text, str) and encoding in ("latin1", "latin-1", "utf-8", "utf8", "ascii"):
        return text.encode(encoding)
    return b""


def _size(*args):
    return tuple(args[0]) if args and isinstance(args[0], (tuple, list)) else ()


def _torch_device(*args):
    return ":".join(str(a) for a in args if isinstance(a, (str, int)))[:100]


REBUILDERS = {
    "torch._utils._rebuild_tensor_v2": _tensor,
    "torch._utils._rebuild_tensor": _tensor,
    "torch._utils._rebuild_parameter": _parameter,
    "torch._utils._rebuild_parameter_with_state": _parameter,
    "torch._utils._rebuild_meta_tensor_no_storage": _meta_tensor,
    "_codecs.encode": _encode,
    "torch.Size": _size,
    "torch.device": _torch_device,
}
