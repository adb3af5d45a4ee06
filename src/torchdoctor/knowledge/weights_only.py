"""What `torch.load(weights_only=True)` refuses: which global a file needs, and what it is.

Shared by load-weights-only (TD502), which explains metadata in a checkpoint, and
whole-module-saved (TD503), which explains a pickled model class; `torchdoctor ckpt` judges the
globals a file names with `group` (data, a class needing trust, or code never to load)."""

from __future__ import annotations

import sys

from torchdoctor._regex import lazy_compile

# torch >= 2.4: "Unsupported global: GLOBAL numpy.core.multiarray.scalar was not an allowed
# global by default"; torch 2.0 - 2.3: "Unsupported class numpy.core.multiarray._reconstruct".
_GLOBAL = lazy_compile(r"Unsupported (?:global: GLOBAL|class) (?P<name>[\w.]+)")
# The last alternative is torch >= 2.4's own phrase, alone in an issue title or a chat line.
_REFUSED = lazy_compile(
    r"Weights only load failed|WeightsUnpickler error|Unsupported global: GLOBAL [\w.]"
)
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
_MODEL_PACKAGES = {
    "models",
    "model",
    "nets",
    "net",
    "networks",
    "network",
    "arch",
    "archs",
    "modeling",
    "modules",
    "nn",
}
_MODEL_CLASS = lazy_compile(
    r"(?:Net|Model|Network|Module|Classifier|Detector|Detect|Generator|Discriminator|Encoder|"
    r"Decoder|Backbone|Transformer|GAN|CNN|RNN|LSTM|MLP)\d*$|^(?:ResNet|VGG|UNet|YOLO|Yolo)"
)


def refused(message: str) -> bool:
    """`message` is a weights-only load's refusal."""
    return _REFUSED.search(message) is not None


def unsupported_global(message: str) -> str | None:
    """The global a weights-only load refused, or None."""
    if not refused(message):
        return None
    found = _GLOBAL.search(message)
    return found["name"] if found else None


def unsupported_global_in(report) -> str | None:
    """The global refused anywhere in an explained input: give it to `report.once`, which
    reads the whole input once for all its blocks."""
    return unsupported_global(report.text)


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


def packaged(name: str) -> bool:
    """The refused global lives in a package (`ultralytics.nn.tasks.DetectionModel`), not in a
    script's top-level module (`model.Net`, `__main__.Net`) nor in torch: a library's object,
    pickled by the library's own save format rather than by the user's `torch.save(model)`."""
    module = name.rpartition(".")[0]
    return "." in module and not module.split(".", 1)[0].startswith("torch")


def anyones_model(name: str, user_code_shown: bool) -> bool:
    """A model class of torch's own (`torch.nn.modules.container.Sequential`) refused where no
    frame of the user's code is shown (a message alone, an application's log): any program may
    have pickled it, a downloaded checkpoint as well as the user's `torch.save(model)`."""
    return not user_code_shown and name.split(".", 1)[0].startswith("torch")


# Modules whose names a hostile pickle uses to run code, touch files or the network, or import
# more code; a checkpoint has no reason to name any of them.
_CODE_MODULES = {
    "os",
    "posix",
    "nt",
    "subprocess",
    "sys",
    "runpy",
    "shutil",
    "socket",
    "pty",
    "importlib",
    "imp",
    "zipimport",
    "pickle",
    "_pickle",
    "marshal",
    "code",
    "codeop",
    "ctypes",
    "webbrowser",
    "commands",
    "multiprocessing",
    "concurrent",
    "threading",
    "_thread",
    "asyncio",
    "signal",
    "pdb",
    "bdb",
    "cProfile",
    "profile",
    "trace",
    "timeit",
    "doctest",
    "pydoc",
    "idlelib",
    "tkinter",
    "turtle",
    "site",
    "platform",
    "http",
    "urllib",
    "requests",
    "ftplib",
    "telnetlib",
    "smtplib",
    "poplib",
    "imaplib",
    "socketserver",
    "xmlrpc",
    "tempfile",
    "glob",
    "io",
    "_io",
    "dbm",
    "shelve",
    "antigravity",
    "this",
}
_CODE_BUILTINS = {
    "eval",
    "exec",
    "compile",
    "__import__",
    "getattr",
    "setattr",
    "delattr",
    "open",
    "input",
    "breakpoint",
    "globals",
    "locals",
    "vars",
    "apply",
    "execfile",
    "file",
    "reload",
    "exit",
    "quit",
    "help",
}
# Globals that hold data only, beyond what weights_only=True allows by default: allowing them
# with add_safe_globals runs nothing of the file's, and `torchdoctor ckpt fix` turns them into
# plain values without trusting the file.
DATA_GLOBALS = frozenset(
    {
        "numpy.core.multiarray.scalar",
        "numpy._core.multiarray.scalar",
        "numpy.core.multiarray._reconstruct",
        "numpy._core.multiarray._reconstruct",
        "numpy.ndarray",
        "numpy.dtype",
        "numpy.random._pickle.__randomstate_ctor",
        "numpy.random._pickle.__bit_generator_ctor",
        "numpy.random._pickle.__generator_ctor",
        "argparse.Namespace",
        "types.SimpleNamespace",
        "collections.defaultdict",
        "collections.deque",
        "copyreg._reconstructor",
        "pathlib.Path",
        "pathlib.PosixPath",
        "pathlib.WindowsPath",
        "pathlib.PurePath",
        "pathlib.PurePosixPath",
        "pathlib.PureWindowsPath",
        "datetime.datetime",
        "datetime.date",
        "datetime.time",
        "datetime.timedelta",
        "datetime.timezone",
        "decimal.Decimal",
        "fractions.Fraction",
        "uuid.UUID",
        "random.Random",
        "builtins.object",
        "builtins.int",
        "builtins.float",
        "builtins.str",
        "builtins.bytes",
        "builtins.bool",
        "builtins.list",
        "builtins.dict",
        "builtins.tuple",
        "builtins.frozenset",
        "builtins.slice",
        "builtins.range",
        "torch.torch_version.TorchVersion",
        "logging.getLogger",
    }
)
# Globals that torch.load(weights_only=True) accepts without add_safe_globals (torch 2.6+).
_ALLOWED_EXACT = frozenset(
    {
        "collections.OrderedDict",
        "collections.Counter",
        "builtins.set",
        "builtins.complex",
        "builtins.bytearray",
        "_codecs.encode",
        "torch.Size",
        "torch.device",
        "torch.Tensor",
        "torch.nn.parameter.Parameter",
        "torch.serialization._get_layout",
        "torch._tensor._rebuild_from_type_v2",
        "torch.storage.TypedStorage",
        "torch.storage.UntypedStorage",
    }
)
# torch.<name> globals that are dtypes (and quantization schemes).
TORCH_DTYPES = frozenset(
    {
        "float64",
        "float32",
        "float16",
        "bfloat16",
        "int64",
        "int32",
        "int16",
        "int8",
        "uint8",
        "bool",
        "complex128",
        "complex64",
        "complex32",
        "qint8",
        "quint8",
        "qint32",
        "quint4x2",
        "quint2x4",
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "uint16",
        "uint32",
        "uint64",
        "bits8",
        "bits16",
        "bits1x8",
        "bits2x4",
        "bits4x2",
        "float4_e2m1fn_x2",
        "per_tensor_affine",
        "per_channel_affine",
        "per_tensor_symmetric",
        "per_channel_symmetric",
        "per_channel_affine_float_qparams",
        *(f"{kind}{bits}" for kind in ("int", "uint") for bits in range(1, 8)),
    }
)


def weights_only_allows(name: str) -> bool:
    """`torch.load(weights_only=True)` accepts the global `name` by default."""
    if name in _ALLOWED_EXACT or name.startswith("torch._utils._rebuild_"):
        return True
    module, _, attribute = name.rpartition(".")
    if module in ("torch", "torch.cuda", "torch.sparse", "torch.cuda.sparse"):
        return attribute.endswith(("Storage", "Tensor")) or (
            module == "torch" and attribute in TORCH_DTYPES
        )
    return False


def dangerous(name: str) -> bool:
    """`name` (module.attribute) is a way to run code or touch the system, not a data class."""
    module, _, attribute = name.rpartition(".")
    root = module.split(".", 1)[0]
    if root in ("builtins", "__builtin__"):
        return attribute in _CODE_BUILTINS
    return root in _CODE_MODULES


def is_data(name: str) -> bool:
    """`name` holds data only: allowing it in a weights-only load is safe."""
    return name in DATA_GLOBALS or (name.startswith("numpy.dtypes.") and name.endswith("DType"))


def group(name: str, uses=frozenset()) -> str:
    """How the doctor judges a global that weights_only=True refuses, from its name and from
    how the pickle uses it (`uses`: "new", "call", "call-scalar", "call-result"):

    - "data": it holds data only; allowing it (add_safe_globals) is safe.
    - "class": a class of the user's code or of a library, which the pickle instantiates
      without calling it (a pickled model, a config object), calls with at most one plain
      value (an enum member), or only names: a full unpickle imports and runs that code, so
      it needs trust in the file, never an allowlist.
    - "code": anything else: a function the pickle calls while loading, a name from a module
      that runs commands, touches files or imports code, an object the pickle builds and then
      calls. Never load the file, never allow these."""
    if "call-result" in uses or dangerous(name):
        return "code"
    if is_data(name):
        return "data"
    if "call" in uses or ("call-scalar" in uses and not _outside_stdlib_class(name)):
        return "code"
    return "class"


def code_globals(names, uses: dict) -> list[str]:
    """The globals among `names` that judge as "code"."""
    return [name for name in names if group(name, uses.get(name, ())) == "code"]


def _outside_stdlib_class(name: str) -> bool:
    """A class (CapWords, by convention) of the user's code or a third-party library."""
    module, _, attribute = name.rpartition(".")
    return (
        attribute.lstrip("_")[:1].isupper()
        and module.split(".", 1)[0] not in sys.stdlib_module_names
    )
