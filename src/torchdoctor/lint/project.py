"""What a file's project knows that the file alone does not: which of the project's classes are
`nn.Module`s (a model defined in `models.py` is a model in `train.py` too), and which
environment variables the project reads anywhere (`LOCAL_RANK` read in a launcher module).

The facts are read from the text of every Python file of the project with a few linear regular
expressions, not from a parse: a cold check must not parse the project twice. They are
conservative: a class name counts as a module only when every class of that name in the project
is one, so a fact is never made up from a name two files use differently.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_left
from collections import deque
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Callable, Iterable, Protocol

from torchdoctor._regex import lazy_compile
from torchdoctor.knowledge import tensor_methods
from torchdoctor.lint.declared_versions import declared_minimums, version_tuple
from torchdoctor.lint.files import SKIPPED_DIRS
from torchdoctor.user_files import read_regular_file

# A project larger than this is indexed in part (the files nearest the top first): the facts
# only ever add knowledge, so a partial index is still right, never wrong.
MAX_FILES = 20_000
# Files larger than this are generated or vendored data, not code whose classes matter.
MAX_FILE_BYTES = 2_000_000
# What marks the top of a project, looking up from a checked file.
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")

# The patterns run on bytes: on a str holding any non-ASCII character Python's regex engine is
# thirty times slower. `class Name(bases):`; the bases are bounded so that a class statement
# whose parenthesis never closes costs a bounded scan, not one to the end of the file.
# (No `\b` in front: it would cost the engine its fast search for the literal `class`; the
# byte before a match is looked at instead.)
_CLASS = lazy_compile(rb"class[ \t]+(\w+)[ \t]*(?:\(([^()]{0,400})\)[ \t]*)?:")
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
# `os.environ["X"]`, `os.environ.get("X")`, `environ.setdefault("X", ...)`, `os.getenv("X")`,
# and `"X" in os.environ`.
_ENV_NAME = rb"""[ \t]*['"]([A-Za-z_][A-Za-z0-9_]{0,80})['"]"""
# Each begins with its literal word, which the engine finds fast (an alternation would not).
_ENV_READ = lazy_compile(rb"environ[ \t]*(?:\.get[ \t]*\(|\.setdefault[ \t]*\()" + _ENV_NAME)
# `os.environ["X"]`, and whether it is assigned (`os.environ["X"] = ...` sets it: no read).
_ENV_SUBSCRIPT = lazy_compile(rb"environ[ \t]*\[" + _ENV_NAME + rb"[ \t]*\]([ \t]*=(?!=))?")
_ENV_GOT = lazy_compile(rb"getenv[ \t]*\(" + _ENV_NAME)
_ENV_TESTED = lazy_compile(
    rb"""['"]([A-Za-z_][A-Za-z0-9_]{0,80})['"][ \t]+in[ \t]+(?:os\.)?environ\b"""
)
# A variable read through a constant (sockeye's `os.environ[C.DIST_ENV_LOCAL_RANK]`, with
# `DIST_ENV_LOCAL_RANK = 'LOCAL_RANK'` in its constants module): the upper-case key, and the
# top-level constants bound to a name; `_combined` joins them across files.
_CONSTANT_KEY = rb"[ \t]*(?:[A-Za-z_]\w*\.)*([A-Z][A-Z0-9_]{0,80})[ \t]*[\],)]"
# Each begins with its literal word (see _ENV_READ).
_ENV_KEY_CONSTANT = lazy_compile(
    rb"environ[ \t]*(?:\[|\.get[ \t]*\(|\.setdefault[ \t]*\()" + _CONSTANT_KEY
)
_GETENV_KEY_CONSTANT = lazy_compile(rb"getenv[ \t]*\(" + _CONSTANT_KEY)
_STRING_CONSTANT = lazy_compile(
    rb"""\n([A-Z][A-Z0-9_]{0,80})[ \t]*=[ \t]*['"]([A-Z_][A-Z0-9_]{0,80})['"][ \t]*(?=\n|#)"""
)
# `from torch.autograd import Function` (or `...function import Function, once_differentiable`):
# a bare `Function` base of the file's classes is torch's.
_AUTOGRAD_FUNCTION_IMPORT = lazy_compile(
    rb"from[ \t]+torch\.autograd(?:\.function)?[ \t]+import[^\n]*[ \t,(]Function\b"
)
# torch.nn names that are not module classes (as in the context's own list).
_NN_NON_MODULES = frozenset({"Parameter", "Buffer", "UninitializedParameter"})
# torch.nn's wrappers that run the model they are given (by their last name).
MODEL_WRAPPERS = frozenset({"DataParallel", "DistributedDataParallel"})


# Code whose presence anywhere in the project a rule asks about: the project loads pickled
# objects on purpose (so its whole-module checkpoints are its format, not a mistake).
# Each with the words one of which the file must hold, then the patterns one of which must
# match (none: a word is enough). Each pattern begins with a literal, which the engine finds
# fast: one beginning with an alternation or a lookbehind is tried at every byte (ten times
# slower on transformers, where these searches had cost a third of a parse).
_K_ABOVE_ONE = rb"[(\[][ \t]*\d+[ \t]*,[ \t]*(?:[2-9]|\d\d)"


class _CombiningCalls:
    """Code combining what the ranks compute (`dist.all_reduce`, `all_gather`, a `reduce_tensor`
    or `reduce_loss_dict` helper, Horovod's `allreduce`, Accelerate's `gather_for_metrics`,
    Lightning's `sync_dist`, `dist.reduce(...)`, torchmetrics, whose metrics gather themselves;
    not `torch.gather` or `functools.reduce`, nor a `barrier` alone: the transformers examples
    wait on one while rank 0 caches the dataset). Searched like a pattern, but only around each
    `reduce` and `gather` of the text: one regex with no literal to start from would be tried at
    every byte of every file, and a dozen literal ones cost a dozen passes."""

    _PLAIN = (b"sync_dist", b"synchronize_between", b"torchmetrics")
    _AROUND = lazy_compile(
        rb"all_?(?:reduce|gather)|gather_(?:object|for_metrics)"
        rb"|reduce_(?:tensor|dict|loss|mean|sum|value|scalar|metric)"
        rb"|\b(?:dist|distributed|comm|hvd|accelerator|xm|du)\.(?:reduce|gather)\b"
    )
    _LOOKS = 1000  # occurrences looked at per word and file: bounded

    def search(self, source: bytes) -> bool | None:
        if any(word in source for word in self._PLAIN):
            return True
        for word in (b"reduce", b"gather"):
            at = source.find(word)
            for _ in range(self._LOOKS):
                if at == -1:
                    break
                if self._AROUND.search(source, max(at - 12, 0), at + 20) is not None:
                    return True
                at = source.find(word, at + 1)
        return None


_MARKERS: dict[str, tuple[tuple[bytes, ...], tuple[re.Pattern[bytes] | _CombiningCalls, ...]]] = {
    "weights_only=False": (
        (b"weights_only",),
        # Not Keras' `save_weights_only=False` (DnCNN ships both); the lookbehind costs little
        # here: only files holding the word are searched.
        (lazy_compile(rb"(?<![\w.])weights_only[ \t]*=[ \t]*False\b"),),
    ),
    # The project splits its data between ranks somewhere (a DistributedSampler or one of its
    # kin, made in a data module the training script imports), or has datasets that are
    # iterated rather than sampled: a loader without a sampler may be fine.
    "DistributedSampler": ((b"Distributed",), (lazy_compile(rb"Distributed\w{0,40}Sampler"),)),
    "IterableDataset": ((b"Iter",), (lazy_compile(rb"Iter(?:able)?Data(?:set|Pipe)"),)),
    # Some tensors of the project are laid out channels-last: a layer's output may be permuted
    # in memory.
    "channels_last": ((b"channels_last",), ()),
    # A module of the project clears its own gradients (`self.zero_grad()` in its `forward`):
    # a training loop calling a model of the project may have them cleared out of sight.
    "self.zero_grad": ((b"zero_grad",), (lazy_compile(rb"self\.zero_grad[ \t]*\("),)),
    # Some code of the project clears gradients, or might: `zero_grad`, a helper named to clear
    # them (`reset_grad`), a `.grad` set or zeroed by hand. Where none does, a function that
    # calls `.backward()` and steps an optimizer adds every call's gradients to the last's.
    "clears gradients": (
        (b"grad",),
        # Each begins with its literal word (an alternation in front is tried at every byte),
        # the commonest first.
        (
            lazy_compile(rb"zero_?grad"),
            lazy_compile(
                rb"\.grad(?:\.data)?(?:[ \t]*=(?!=)|\.(?:zero_|fill_|detach_|mul_|copy_))"
            ),
            lazy_compile(rb"set_to_none"),
            lazy_compile(rb"clear_?grad"),
            lazy_compile(rb"reset_?grad"),
            lazy_compile(rb"free_?grad"),
        ),
    ),
    # The project launches its own processes with `--local_rank=N` (a launcher of its own, as
    # ParallelWaveGAN ships): an option spelled `--local_rank` is the one it passes.
    "--local_rank=": ((b"--local_rank=",), (lazy_compile(rb"""['"]--local_rank="""),)),
    # Some code of the project reads the local rank the option holds (`args.local_rank`,
    # `cfg["local_rank"]`): where none does, a `--local_rank` option is dead weight (RMI's,
    # kept for a distributed mode "not available now").
    "reads local_rank": (
        (b"local_rank",),
        (lazy_compile(rb"""\.local_rank\b|['"]local_rank['"]"""),),
    ),
    # Some model of the project has layers that work differently in training and evaluation:
    # a model of another module loaded and run without `.eval()` is then likely one of them.
    "mode-dependent layers": ((b"BatchNorm", b"Dropout", b"F.dropout("), ()),
    # Some code of the project may switch a model's mode (`.eval()`, `.train(False)`,
    # `.train(phase == "train")`, MONAI's `eval_mode`, `.training = False`): where none does,
    # every model of the project runs in training mode, evaluation included. (Python's own
    # `eval(text)` is no switch, nor a trainer's own `self.eval(model, loader)`: a module's
    # `.eval()` takes no argument.)
    "sets a mode": (
        (b"eval", b".train"),
        (
            lazy_compile(rb"\.eval[ \t]*\([ \t]*\)"),
            lazy_compile(rb"eval_mode"),
            lazy_compile(rb"\.train[ \t]*\([ \t]*[^) \t\n]"),
            lazy_compile(rb"\.training[ \t]*=[^=]"),
        ),
    ),
    # Some code of the project combines what the ranks computed: `dist.all_reduce`,
    # `all_gather`, a `reduce_tensor` or `reduce_loss_dict` helper, Horovod's `allreduce`,
    # Accelerate's `gather_for_metrics`, Lightning's `sync_dist`, `dist.reduce(...)`, or
    # torchmetrics, whose metrics gather themselves. (Not
    # `torch.gather` or `functools.reduce`; nor a `barrier` alone: the transformers examples'
    # scripts wait on one while rank 0 caches the dataset.)
    "combines ranks": (
        (b"reduce", b"gather", b"sync", b"torchmetrics"),
        (_CombiningCalls(),),
    ),
    # Some code of the project trains a model (a backward): with "sets a mode" absent, the
    # project's own training and evaluation all run in training mode. (Library code that only
    # evaluates is called from out of sight.)
    "trains": ((b".backward(",), ()),
    # Some code of the project may fill parameters wholesale: `model.apply(weights_init)`, a
    # loop over `model.parameters()`, `named_parameters()` or `modules()`, a `reset_parameters`
    # or an `init_weights`-like helper. Where none does, a parameter made from uninitialized memory
    # and never filled by name stays as it was allocated.
    "initializes parameters generically": (
        (
            b".apply(",
            b"parameters()",
            b"modules()",
            b"children()",
            b"reset_parameters",
            b"init_weight",
            b"weights_init",
            b"init_param",
        ),
        (
            lazy_compile(rb"\.apply\("),
            # A loop, or a comprehension, over them: `for m in self.modules():` (diffpool's
            # `m.weight.data = init.xavier_uniform(...)`), `[... for p in model.parameters()]`.
            # Each pattern begins with its literal (see _ENV_READ).
            lazy_compile(rb"parameters\(\)[ \t]*(?:[:\]]|if\b)"),
            lazy_compile(rb"modules\(\)[ \t]*(?:[:\]]|if\b)"),
            lazy_compile(rb"children\(\)[ \t]*(?:[:\]]|if\b)"),
            lazy_compile(rb"reset_parameters"),
            lazy_compile(rb"init_weight"),
            lazy_compile(rb"weights_init"),
            lazy_compile(rb"init_param"),
        ),
    ),
    # Some call asks a top-k helper for more than one k (`accuracy(out, y, topk=(1, 5))`, in
    # the training script, while the helper lives in `utils.py`): its `correct[:k]` keeps rows.
    # By keyword (not `x.topk=`, `mytopk=`) or in place (fast-autoaugment's `accuracy(preds,
    # label, (1, 5))`). (`cmc_topk=(1, 5, 10)` is another parameter.)
    "top-k for k > 1": (
        (b"topk", b"accuracy("),
        (
            lazy_compile(rb"topk(?<![\w.]topk)[ \t]*=[ \t]*" + _K_ABOVE_ONE),
            lazy_compile(rb"accuracy\([^()\n]{0,200}" + _K_ABOVE_ONE),
        ),
    ),
}
# `torch.serialization.safe_globals([...])`, `add_safe_globals([...])`: a file allowing classes
# in `weights_only` loads. The class names such a file mentions are kept (the list is often
# built in a variable first, so its own brackets say too little).
_SAFE_GLOBALS = lazy_compile(rb"safe_globals[ \t]*\(")
_CLASS_NAME = lazy_compile(rb"(?<![\w.])[A-Z][A-Za-z0-9_]{0,80}\b")
# Module-level imports (`from torch.autograd import Variable`, `import torch.nn.functional as
# F`): the names a star import of the module brings into another one (`from utils import *`).
# Those of other libraries are kept too, to tell a name two modules import differently. One line
# each; imports in parentheses are not read.
# Each starts with its line break, a literal the engine searches for fast (`^` with MULTILINE
# would be tried at every byte: six times slower on transformers); the text is read with a
# line break put in front.
_FROM_IMPORT = lazy_compile(
    rb"\nfrom[ \t]+(\w+(?:\.\w+)*)[ \t]+import[ \t]+(\w+(?:[ \t]+as[ \t]+\w+)?"
    rb"(?:[ \t]*,[ \t]*\w+(?:[ \t]+as[ \t]+\w+)?)*)[ \t]*(?:#[^\n]*)?(?=\n|$)"
)
_IMPORT_AS = lazy_compile(rb"\nimport[ \t]+(\w+(?:\.\w+)*)[ \t]+as[ \t]+(\w+)")
# A top-level function named to evaluate (`def evaluate_model(model, iterator):`), its first
# parameter; its body runs to the next line that starts with neither a space nor a comment.
_EVALUATOR = lazy_compile(
    rb"\ndef[ \t]+(\w{0,80}?(?:eval|valid|test|infer|predict)\w{0,80})[ \t]*\([ \t]*(\w+)",
    re.IGNORECASE,
)
_TOP_LEVEL_LINE = lazy_compile(rb"\n[^ \t\n#]")
# A method (`    def update_learning_rate(self):`), and in its body a step of a learning-rate
# scheduler with no argument (`self.gen_scheduler.step()`; nnUNet's `step(self.current_epoch)`
# sets the epoch's rate itself, no step skipped) or of an optimizer, or a backward. Methods
# named like the calls they make (`step`: a scheduler's own) or run implicitly are left out.
_GENERIC_METHODS = frozenset({b"step", b"forward", b"__call__"})
_METHOD = lazy_compile(rb"\n([ \t]+)def[ \t]+(\w+)[ \t]*\([ \t]*self\b")
_SCHEDULER_STEP = lazy_compile(rb"sched\w{0,80}[ \t]*\.step[ \t]*\([ \t]*\)")
# A test that skips the first iterations (`if current_iter > 1:`, BasicSR's
# `update_learning_rate`): a scheduler stepped under it is not stepped before the first
# optimizer step.
_FIRST_SKIPPED = lazy_compile(
    rb"\bif[ \t]+\(?[\w.]+[ \t]*(?:>=?|!=)[ \t]*[0-2](?:[ \t]*\))?[ \t]*:"
)
_OPTIMIZER_STEP = lazy_compile(rb"opt\w{0,80}[ \t]*\.step[ \t]*\(")
# A top-level class statement (the text read with a line break put in front), and a class its
# body calls (`ResBlock(dim)`; the byte before tells it from `nn.Linear(`: a lookbehind would
# cost the engine its fast start).
_TOP_LEVEL_CLASS = lazy_compile(rb"\nclass[ \t]+(\w+)[ \t]*(?:\(([^()\n]{0,400})\))?[^\n]*")
# `def __init__(self, ..., dropout=False)`, `use_bn=None`, `drop_rate=0.`: the layer is made or
# used only when asked for (MultiBench's `MLP`), so a model of the class may have none.
_OPTIONAL_LAYER = lazy_compile(
    rb"def __init__\([^()]{0,2000}?\b\w{0,80}?(?:[Dd]rop|bn|BN|[Nn]orm)\w{0,80}[ \t]*=[ \t]*"
    rb"(?:False|None|0|0\.0?)[ \t]*[,)]"
)
# Classes an `__init__` calls by a bare name; lower-case ones too (milesial's UNet parts:
# `self.inc = inconv(n_channels, 64)`, whose `double_conv` has the BatchNorm), less Python's
# own functions.
_CALLED_CLASS = lazy_compile(rb"(?<![\w.])([A-Za-z_]\w{0,80})[ \t]*\(")
_NOT_CLASSES = frozenset(
    b"super int float len range list dict tuple set str print isinstance getattr setattr "
    b"hasattr max min sum zip enumerate bool round abs map filter sorted reversed any all "
    b"type iter next open format repr id divmod pow".split()
)
# What a class's `__init__` may call and still be known to build only layers that compute the same
# in either mode: torch's own (the mode-dependent ones are found by MODE_LAYER_WORDS first), the
# math of numpy and `math`, and the initializers of its own. Anything else (`timm.create_model(`,
# `torch.hub.load(`, `getattr(` of a name, a method of its own that may build a backbone) may
# bring BatchNorm by a name the text does not spell.
_ANY_CALL = lazy_compile(rb"(?<![\w.])([A-Za-z_][\w.]{0,200})[ \t]*\(")
_PLAIN_CALL_ROOTS = frozenset(b"nn F torch math np numpy".split())
_UNPLAIN_TORCH = (b"torch.hub", b"torch.load", b"torch.jit", b"torch.package")
_PLAIN_SELF_CALLS = frozenset(b"apply register_buffer register_parameter add_module".split())
_UNPLAIN_BUILTINS = frozenset(b"getattr globals locals eval exec __import__".split())
# Recurrent layers whose backward depends on the mode (cuDNN's), by how a class names them.
_RECURRENT_WORDS = (b"LSTM", b"GRU", b"RNN", b"lstm", b"gru", b"rnn")
# The pseudo-name a class's layer entry lists beside its bases and called classes when its own
# text builds nothing else (`_builds_only_plain_layers`); no class can take it (a digit).
PLAIN_LAYERS = "0"


def _builds_only_plain_layers(
    source: bytes, start: int, end: int, init: tuple[int, int] | None
) -> bool:
    """The class in [start, end), which names no mode-dependent layer, names no recurrent one
    either, and its `__init__` calls only torch's layers and functions, Python's own, numpy's,
    initializers of its own (`self.apply(weights_init)`) and names of the project (settled with
    the project's facts: its classes, whose layers are read the same way)."""
    if any(source.find(word, start, end) != -1 for word in _RECURRENT_WORDS):
        return False
    if init is None:
        return True
    for call in _ANY_CALL.finditer(source, *init):
        dotted = call.group(1)
        if source[call.start() - 4 : call.start()] == b"def ":
            continue  # a function defined in `__init__`: its calls are read all the same
        root, dot, rest = dotted.partition(b".")
        if not dot:
            if dotted in _UNPLAIN_BUILTINS:
                return False
            continue  # a project name, settled later, or one of Python's own
        if root == b"self":
            method = rest.rpartition(b".")[2]
            if method not in _PLAIN_SELF_CALLS and b"init" not in method and b"reset" not in method:
                return False
        elif root not in _PLAIN_CALL_ROOTS or dotted.startswith(_UNPLAIN_TORCH):
            if rest.rpartition(b".")[2] not in (b"append", b"extend", b"insert", b"__init__"):
                return False
    return True


# Layers whose forward differs in training and evaluation mode, as a class body spells them:
# the classes (`nn.BatchNorm2d`, `nn.Dropout`, `SyncBatchNorm`, `nn.TransformerEncoderLayer`,
# `nn.RReLU`), the functional calls, and dropout by any name (`self.dropout`, `dropout=0.1` of
# an LSTM). Not a lower-case `batch_norm`: `ConvBlock(..., batch_norm=False)` is a flag. And
# torchvision's classification models, each with BatchNorm or Dropout (`models.resnet18(...)`
# as a backbone). torch's transformer layers by their torch names only: a project's own
# `Transformer` or `TransformerBlock` says nothing (its own definition is read), as in a
# practice repository whose `llm/` Transformer has no dropout.
MODE_LAYER_WORDS = (  # the most frequent first: a class body is searched until one is found
    b"dropout",
    b"Dropout",
    b"BatchNorm",
    b"nn.Transformer",
    b"TransformerEncoderLayer",
    b"TransformerDecoderLayer",
    b"batch_norm(",
    b"SyncBN",
    b"RReLU",
    b"models.",  # then one of TORCHVISION_MODELS (one search of the text, not one per model)
)
TORCHVISION_MODELS = (
    b"resnet",
    b"resnext",
    b"wide_resnet",
    b"vgg",
    b"densenet",
    b"inception",
    b"mobilenet",
    b"efficientnet",
    b"alexnet",
)
# What makes such a function set or need a mode itself: a switch to eval mode, or training.
# (A rule asking the same of the file it checks reads the text for these words too.)
SETS_A_MODE_WORDS = (".eval(", "train(False", "train(mode", "eval_mode")
MODE_WORDS = (*SETS_A_MODE_WORDS, ".backward(", ".step(")
_MODE_WORDS = tuple(word.encode() for word in MODE_WORDS)
_SETS_A_MODE = (b".eval(", b"train(False", b"train(mode")
# A learning-rate schedule of a project's own: a class whose name ends as a schedule's
# (`SGDRScheduler`; not `ScheduledOptim`) and whose body reaches an optimizer. (A rule asking
# the same of the file it checks reads its classes for these words too.)
SCHEDULE_ENDINGS = ("scheduler", "schedule", "sched")
SCHEDULE_REACHES = ("param_groups", "optimizer")
_SCHEDULE_ENDINGS = tuple(word.encode() for word in SCHEDULE_ENDINGS)
_SCHEDULE_REACHES = tuple(word.encode() for word in SCHEDULE_REACHES)
# Methods whose call anywhere in the project a rule asks about (`sampler.set_epoch(epoch)` in
# a training module other than the one that builds the sampler).
WATCHED_METHODS = (b"set_epoch",)
_METHOD_CALL = lazy_compile(rb"\.(" + b"|".join(WATCHED_METHODS) + rb")[ \t]*\(")
# `<name>.close()` or `<name>.flush()` anywhere in the project: the name closed (`writer` of
# `self.writer.close()`), read back from each match (a pattern starting with a word would be
# tried at every word of the file).
_CLOSING_CALL = lazy_compile(rb"\.(?:close|flush)[ \t]*\(")


@dataclass(frozen=True)
class ProjectFacts:
    """The facts of one project; `digest` changes when any of them does (for the cache)."""

    module_classes: frozenset[str]
    env_reads: frozenset[str]
    digest: str
    # The names the project's own modules and packages can be imported by (`models` of
    # `models/resnet.py`, `resnet` too): what tells `models.Net` from another library's `Net`.
    modules: frozenset[str] = frozenset()
    methods_called: frozenset[str] = frozenset()  # of WATCHED_METHODS
    # Keys of _MARKERS found somewhere, and FORWARD_CALLED + the classes run by `.forward(`.
    markers: frozenset[str] = frozenset()
    # The class names mentioned by files that allow classes in `weights_only` loads.
    safe_load_names: frozenset[str] = frozenset()
    # The class names every definition of which subclasses `torch.autograd.Function` directly.
    autograd_functions: frozenset[str] = frozenset()
    # The names some file closes or flushes (`writer` of `self.writer.close()`).
    closed_names: frozenset[str] = frozenset()
    # The class names every definition of which subclasses a torch.optim.lr_scheduler class.
    scheduler_classes: frozenset[str] = frozenset()
    # The project's functions named to evaluate that run their first parameter in a loop and
    # never set a mode nor train: a model they are given is run in the mode it is in.
    mode_keeping_evaluators: frozenset[str] = frozenset()
    # What a star import of a module of the project binds from torch (`Variable` ->
    # `torch.autograd.Variable`): the names some module imports at its top level from torch,
    # each with the one origin every such import gives it (and no class of the project's).
    star_reexports: tuple[tuple[str, str], ...] = ()
    # The top-level classes of the project that have a layer whose forward depends on the mode
    # (Dropout, BatchNorm...): named in their body, or in a class they call or subclass.
    mode_layer_classes: frozenset[str] = frozenset()
    # The top-level classes of the project every definition of which builds only layers that
    # compute the same in either mode (convolutions, linear layers, activations; no Dropout,
    # BatchNorm, recurrent layer nor anything built by a call the text cannot see into), with
    # the project classes they use so too: whoever runs one need not set its mode.
    plain_layer_classes: frozenset[str] = frozenset()
    # The top-level classes of the project that set their own mode (`self.eval()` in their
    # `forward`, as FAST-VQA's evaluators do when `inference=True`): whoever runs one need not.
    self_moded_classes: frozenset[str] = frozenset()
    # The top-level classes of the project whose `forward` runs under `torch.no_grad()` or
    # `torch.inference_mode()` (a metric's feature extractor): whoever calls one records no graph.
    grad_free_classes: frozenset[str] = frozenset()
    # The classes named as a schedule ("SGDRScheduler", "WarmupSched") that reach an optimizer
    # and are no torch learning-rate scheduler: a schedule of the project's own, which sets the
    # rate itself (a teacher-forcing ratio's `TFRScheduler` is none).
    other_scheduler_classes: frozenset[str] = frozenset()
    # The attributes named like a loader that some file assigns a torch DataLoader
    # (`self.train_loader = DataLoader(...)` in a dataset module): read elsewhere, one.
    loader_attributes: frozenset[str] = frozenset()
    # Methods of the project's classes that step learning-rate schedulers and no optimizer
    # (NVlabs' `trainer.update_learning_rate()`), and those that train: step an optimizer or
    # call a backward (`trainer.dis_update(...)`), by name, every definition of the name so.
    scheduler_methods: frozenset[str] = frozenset()
    training_methods: frozenset[str] = frozenset()
    # The first names of the modules the project's files import from at their top level
    # (`sync_batchnorm` of `from sync_batchnorm.batchnorm import convert_model`): a directory
    # of that name is imported as a package by its name.
    imported_roots: frozenset[str] = frozenset()
    # The top-level classes of the project some method of which takes gradients itself
    # (`torch.autograd.grad(...)`: a meta-learner adapting at test time): run under
    # `torch.no_grad()`, it would fail.
    grad_taking_classes: frozenset[str] = frozenset()
    # (package, "major.minor.patch"): the oldest torch and torchvision releases the project
    # says it supports, by a lower bound in its requirement files or README
    # (lint/declared_versions.py).
    declared_minimums: tuple[tuple[str, str], ...] = ()
    # False for NO_FACTS: the project was not read (a source checked on its own, by flake8 or
    # explain), so that nothing is known to be absent from it.
    known: bool = True

    def is_module_class(self, name: str) -> bool:
        return name in self.module_classes

    def is_scheduler_class(self, name: str) -> bool:
        return name in self.scheduler_classes

    def is_autograd_function(self, name: str) -> bool:
        return name in self.autograd_functions

    def reads_env(self, name: str) -> bool:
        """Whether a module of the project reads the environment variable `name`; a script
        (a file with a `__main__` guard) reading it for its own run does not count."""
        return name in self.env_reads

    def is_project_module(self, dotted: str) -> bool:
        return dotted.partition(".")[0] in self.modules

    def calls_method(self, name: str) -> bool:
        return name in self.methods_called

    def closes(self, name: str) -> bool:
        """Whether some file of the project calls `<name>.close()` or `<name>.flush()`, with
        `name` the attribute or variable called (`writer` of `self.writer.close()`)."""
        return name in self.closed_names

    def allowed_in_safe_loads(self, class_name: str) -> bool:
        """Whether a file of the project that allows classes in `weights_only` loads
        (`torch.serialization.safe_globals`) names this class."""
        return class_name in self.safe_load_names

    def has_mode_layers(self, class_name: str) -> bool:
        """Whether every top-level class of this name in the project has a layer whose forward
        depends on the training or evaluation mode (its own, or a project class's it uses)."""
        return class_name in self.mode_layer_classes

    def builds_only_plain_layers(self, class_name: str) -> bool:
        """Whether every top-level class of this name in the project is built only from layers
        whose forward and backward are the same in training and evaluation mode."""
        return class_name in self.plain_layer_classes

    def sets_own_mode(self, class_name: str) -> bool:
        """Whether every top-level class of this name in the project calls `self.eval()` in its
        `forward`."""
        return class_name in self.self_moded_classes

    def is_loader_attribute(self, attribute: str) -> bool:
        """Whether some file of the project assigns a torch DataLoader to an attribute of this
        name (one named like a loader)."""
        return attribute in self.loader_attributes

    def has_own_schedulers(self) -> bool:
        """Whether the project defines a learning-rate schedule of its own: a class named as a
        schedule that reaches an optimizer and is no torch scheduler."""
        return bool(self.other_scheduler_classes)

    def turns_gradients_off(self, class_name: str) -> bool:
        """Whether a top-level class of this name in the project runs its `forward` under
        `torch.no_grad()` or `torch.inference_mode()`."""
        return class_name in self.grad_free_classes

    def takes_gradients(self, class_name: str) -> bool:
        """Whether a top-level class of this name in the project calls `autograd.grad`."""
        return class_name in self.grad_taking_classes

    def steps_schedulers_only(self, method: str) -> bool:
        return method in self.scheduler_methods

    def trains_in(self, method: str) -> bool:
        return method in self.training_methods

    def imports_from(self, name: str) -> bool:
        """Whether some file of the project imports from `name` or `name.<module>` at its top
        level (`from name.sub import x`, `from name import x`, `import name.sub as y`)."""
        return name in self.imported_roots

    def supports_before(self, package: str, release: str) -> bool:
        """Whether the project says it supports a release of `package` older than `release`
        (`torch>=1.7` in its requirements, asked about "1.9"): an API that arrived in
        `release` would break that promise."""
        for name, oldest in self.declared_minimums:
            if name == package:
                return version_tuple(oldest) < version_tuple(release)
        return False

    def has(self, marker: str) -> bool:
        """Whether some file of the project holds the code `marker` names (a key of _MARKERS:
        `weights_only=False`; or FORWARD_CALLED + a class name)."""
        return marker in self.markers


NO_FACTS = ProjectFacts(frozenset(), frozenset(), "", known=False)


def facts_to_json(facts: ProjectFacts) -> dict:
    """The facts in a form JSON keeps (the cache stores a project's facts as a whole)."""
    return {
        field.name: sorted(value) if isinstance(value, frozenset) else value
        for field in fields(ProjectFacts)
        for value in (getattr(facts, field.name),)
    }


def facts_from_json(value: object) -> ProjectFacts | None:
    """`facts_to_json`'s result read back, or None when `value` is not of its shape."""
    if not (isinstance(value, dict) and value.keys() == _FIELD_NAMES):
        return None
    parts = {}
    for name, kind in _FIELD_KINDS.items():
        item = value[name]
        if kind is frozenset:
            if not (type(item) is list and set(map(type, item)) <= {str}):
                return None
            parts[name] = frozenset(item)
        elif kind is tuple:  # star_reexports, declared_minimums: pairs of names
            if not (type(item) is list and all(_is_pair_of_str(pair) for pair in item)):
                return None
            parts[name] = tuple((first, second) for first, second in item)
        elif type(item) is not kind:
            return None
        else:
            parts[name] = item
    return ProjectFacts(**parts)


def _is_pair_of_str(value: object) -> bool:
    return type(value) is list and len(value) == 2 and set(map(type, value)) <= {str}


_FIELD_KINDS = {field.name: type(getattr(NO_FACTS, field.name)) for field in fields(ProjectFacts)}
_FIELD_NAMES = _FIELD_KINDS.keys()


def project_root(path: Path) -> Path:
    """The nearest directory at or above `path` (a file or directory) holding a project marker,
    else the directory itself."""
    start = path if path.is_dir() else path.parent
    start = start.resolve()
    for directory in (start, *start.parents):
        if any((directory / marker).exists() for marker in PROJECT_MARKERS):
            return directory
    return start


def python_files(root: Path, limit: int = MAX_FILES) -> list[Path]:
    """The project's Python files, breadth first (the top-level modules first), skipping what
    discovery skips (virtualenvs, caches, build output) and hidden directories."""
    found: list[Path] = []
    todo = deque([root])  # popped from the left: a list would be quadratic in directories
    while todo and len(found) < limit:
        directory = todo.popleft()
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if name not in SKIPPED_DIRS and not name.startswith("."):
                        todo.append(Path(entry.path))
                elif name.endswith(".py") and entry.is_file(follow_symlinks=False):
                    found.append(Path(entry.path))
            except OSError:
                continue
    return found[:limit]


# What one file tells of its project (see `file_facts`), in a form JSON keeps as it is (the
# cache stores it per file): its classes with their bases, the environment variables it reads,
# the watched methods it calls, the markers it holds and the class names it allows in safe
# loads, the names it closes, the names its top-level imports bind ("name=origin"), and its
# top-level functions named to evaluate ("name=1" when one keeps its model's mode, else
# "name=0"), and what its top-level classes build their layers from ("Name:!" for one naming a
# mode-dependent layer, "Name:A,B" for one calling the classes A and B, "Name:=" for one
# setting its own mode), and what its methods step ("name=S": learning-rate schedulers only,
# "name=O": an optimizer or a backward, "name=M": both).
FileFacts = tuple[
    list[list],
    list[str],
    list[str],
    list[str],
    list[str],
    list[str],
    list[str],
    list[str],
    list[str],
    list[str],
    list[str],
]


def holds_marker(source: bytes, marker: str) -> bool:
    """Whether one file's text holds the code `marker` names (a key of _MARKERS), as the
    project's facts read it: a rule asking about the buffer it checks, which may differ from
    what the project holds on disk, reads it the same way."""
    words, patterns = _MARKERS[marker]
    return any(word in source for word in words) and (
        not patterns or any(pattern.search(source) is not None for pattern in patterns)
    )


# `detector.forward(out, priors)`: a forward called by name, and what made its receiver (each
# pattern begins with its literal: one that begins with a name is tried at every byte).
_FORWARD_CALL = lazy_compile(rb"\.forward[ \t]*\(")
_CLASS_MADE = lazy_compile(rb"=[ \t]*([A-Z]\w{0,80})[ \t]*\(")
FORWARD_CALLED = "forward-called:"


def _forward_called_classes(source: bytes) -> list[str]:
    """FORWARD_CALLED + "Name" for each class `Name` of which some name of the file holds an
    instance (`detector = Detect(...)`) that the file calls `.forward(...)` on (RFBNet's test
    script, which runs its legacy autograd `Detect` as a plain object). Two passes over the
    text, whatever the number of names."""
    receivers = {_name_before(source, m.start()) for m in _FORWARD_CALL.finditer(source)}
    receivers -= {None, b"self", b"super"}
    if not receivers:
        return []
    found = set()
    for m in _CLASS_MADE.finditer(source):
        at = m.start()
        if at and source[at - 1] in b"=!<>+-*/%&|^:@":
            continue  # `==`, `+=`, `:=`...: no plain assignment
        if _name_before(source, at) in receivers:
            found.add(FORWARD_CALLED + m.group(1).decode("ascii", "replace"))
    return sorted(found)


# `with torch.no_grad():` (or `inference_mode`) alone on its line, and its indentation; the
# methods its block calls (`r_gen.rollout(params)`) are run without gradients.
_NO_GRAD_BLOCK = lazy_compile(
    rb"\n([ \t]*)with[ \t]+torch\.(?:no_grad|inference_mode)\(\)[ \t]*:[ \t]*(?:#[^\n]*)?(?=\n)"
)
_METHOD_CALLED = lazy_compile(rb"\.(\w{1,80})[ \t]*\(")
# A function called by its bare name (`validate(model, loader)`), in a line of such a block.
_FUNCTION_CALLED = lazy_compile(rb"(?:^|[^\w.])([A-Za-z_]\w{0,79})[ \t]*\(")
CALLED_WITHOUT_GRAD = "called-without-grad:"
# Blocks read per file, and lines per block: a bounded scan, whatever the file.
_MAX_NO_GRAD_BLOCKS = 200
_MAX_BLOCK_LINES = 400


def _methods_called_without_grad(text: bytes) -> list[str]:
    """CALLED_WITHOUT_GRAD + "name" for each method the file calls as `x.name(...)`, or function
    as `name(...)`, inside a `with torch.no_grad():` block (world-models' scripts run
    `r_gen.rollout(params)` so, and the rollout's own file never says it). The block is read by
    its indentation. `text`: the file's text with a line break put in front."""
    found: set[str] = set()
    for count, block in enumerate(_NO_GRAD_BLOCK.finditer(text)):
        if count == _MAX_NO_GRAD_BLOCKS:
            break
        indent = len(block.group(1))
        at = block.end() + 1
        for _ in range(_MAX_BLOCK_LINES):
            end = text.find(b"\n", at)
            line = text[at : end if end != -1 else len(text)]
            stripped = line.lstrip(b" \t")
            if stripped and not stripped.startswith(b"#"):
                if len(line) - len(stripped) <= indent:
                    break
                found.update(
                    m.group(1).decode("ascii", "replace") for m in _METHOD_CALLED.finditer(line)
                )
                found.update(
                    m.group(1).decode("ascii", "replace") for m in _FUNCTION_CALLED.finditer(line)
                )
            if end == -1:
                break
            at = end + 1
    return sorted(CALLED_WITHOUT_GRAD + name for name in found)


# `x.masked_fill_(mask, 0.0)`, `y.masked_select(~pad)`: the name handed over as the mask (a
# `self.` attribute's too, as its own name: Tacotron's `self.mask`).
_MASK_USE = lazy_compile(
    rb"\.masked_(?:fill|select|scatter)_?\([ \t]*(?:~[ \t]*)?(?:self\.)?(\w{1,80})[ \t]*[,)]"
)
# `mask = ~get_mask_from_lengths(lengths)`, `pad = utils.padding_mask(x)`: a name bound to what
# a function returns, on a line of its own.
_BOUND_TO_CALL = lazy_compile(
    rb"\n[ \t]*(?:self\.)?(\w{1,80})[ \t]*=[ \t]*(?:~[ \t]*)?((?:\w{1,80}\.){0,3})(\w{1,80})[ \t]*\(([^\n]*)"
)
MASK_FROM = "mask-from:"
# `mask=~get_mask_from_lengths(lengths)` as a keyword argument (nonparaSeq2seqVC's decoder) or an
# assignment, of any name ending in `mask`: what the function returns is inverted as a mask
# (and `~` of a uint8 tensor flips every bit: 1 becomes 254). Begins with its literal.
_INVERTED_MASK_FROM_CALL = lazy_compile(
    rb"mask[ \t]*=[ \t]*~[ \t]*(?:\w{1,80}\.){0,3}(\w{1,80})[ \t]*\(([^\n]*)"
)
INVERTED_MASK_FROM = "inverted-mask-from:"
# `class CrossentropyND(torch.nn.CrossEntropyLoss):` with no `__init__` of its own (nnUNet's
# helpers): a subclass in another file that calls `super().__init__(weight, False, ...)` hands
# its arguments to the torch loss. LOSS_BASE + "CrossentropyND=nn.CrossEntropyLoss".
_LOSS_SUBCLASS = lazy_compile(
    rb"\nclass[ \t]+(\w{1,80})[ \t]*\([ \t]*(?:torch\.)?nn\.(\w{1,80}Loss)[ \t]*\)[ \t]*:"
)
LOSS_BASE = "loss-base:"
# `iou, class_mask, obj_mask, ... = build_targets(...)` on one line: the names a call's result is
# unpacked into, and the function's name.
_UNPACKED_FROM_CALL = lazy_compile(
    rb"\n[ \t]*(\w{1,80}(?:[ \t]*,[ \t]*\w{1,80}){1,30})[ \t]*(?:,[ \t]*)?=[ \t]*"
    rb"(?:\w{1,80}\.){0,3}(\w{1,80})[ \t]*\("
)
INDEX_MASK_FROM = "index-mask-from:"
# `def set_mask(self, mask): [docstring] self.mask = mask` (pytorch-seq2seq's Attention, copied
# into many projects): a method that keeps its one argument on `self`, the name it is kept as.
_KEEPING_SETTER = lazy_compile(
    rb"\n[ \t]+def[ \t]+(\w{1,80})[ \t]*\([ \t]*self[ \t]*,[ \t]*(\w{1,80})[ \t]*\)[ \t]*:[ \t]*\n"
    rb"(?:[ \t]+(?:\"\"\"(?:[^\"\\]|\\.|\"(?!\"\"))*\"\"\"[ \t]*|#[^\n]*)\n)?"
    rb"[ \t]+self\.(\w{1,80})[ \t]*=[ \t]*(\w{1,80})[ \t]*\n"
)
MASK_SETTER = "mask-setter:"
_INDEXED_BY = lazy_compile(rb"\[(\w{1,80})\]")  # `x[obj_mask]`
# A meter's `update` that adds what it is given to a running sum (`def update(self, val, n=1):
# ... self.sum += val * n`): a loss tensor given to it keeps its graph.
ACCUMULATING_UPDATE = lazy_compile(
    rb"def update\(self,[ \t]*(\w+)(?!\w)[^\n]*\n(?:[^\n]*\n){0,8}?[ \t]+self\.\w+[ \t]*\+=[ \t]*\1\b(?!\.)"
)
ACCUMULATES = "accumulates:"


# `def set_y_as_percent(ax): ... return ax` (neuralprophet's plot_utils): a top-level function
# that hands back its first parameter changed that object in place (it made no other to hand
# back), so `ax = set_y_as_percent(ax)` in a loop of another file loses nothing. The first
# parameter, read where a top-level function's parameter list begins.
_FIRST_PARAMETER = lazy_compile(rb"[ \t]*(\w{1,80})[ \t]*[,)=:]")
HANDS_BACK_FIRST = "hands-back-first:"
# `def to_tensor(ndarray, volatile=False, ...): return Variable(..., volatile=volatile)` (the
# PyTorch 0.3 helpers of pytorch-ddpg and its many copies): a top-level function with a
# `volatile` parameter whose body calls `Variable(`, called elsewhere with `volatile=True`.
VOLATILE_HELPER = "volatile-helper:"
# OWN_METHOD + a name of tensor_methods.UNMISTAKABLE that some class of the project defines as
# a method (`def permute(self, ...)`): a receiver of unknown type calling it may be one of them.
OWN_METHOD = "own-method:"
# (begins with its literal, so that the search skips to each `def`; the word boundary before it is
# checked by hand: a leading `\b` would have the pattern tried at every byte, 9x slower)
_SELF_METHOD = lazy_compile(rb"def[ \t]+(\w+)[ \t]*\([ \t]*self\b")
_VOLATILE_PARAMETER = lazy_compile(rb"\bvolatile\b")


# WEIGHTS_NAME + "best_model": some file of the project gives that name a module's weights
# (`best_model = model.state_dict().copy()`, ML-BCI's trainer): a parameter of that name
# elsewhere is not known to hold a model by its name alone.
WEIGHTS_NAME = "weights-name:"
_WEIGHTS_ASSIGNED = lazy_compile(
    rb"\n[ \t]*(\w{1,80})[ \t]*=[ \t]*(?:copy\.deepcopy\([ \t]*)?[\w.]{1,200}\.state_dict\(\)"
)


def _index_masks(source: bytes) -> list[str]:
    """INDEX_MASK_FROM + "function@place" for each function whose result the text unpacks,
    taking the value at `place` into a name said to be a mask (`..._mask`) that it then indexes with
    (YOLOv3's `..., obj_mask, ... = build_targets(...)`, then `x[obj_mask]`): a uint8 tensor the
    function returns there is used for indexing in another file. `source`: the text with a line
    break put in front."""
    # Each read once: the names the text indexes with, and those it turns bool (found from the
    # literal `.bool(`, not by a pattern tried at every byte).
    made_bool = set()
    at = source.find(b".bool(")
    while at >= 0:
        made_bool.add(_name_before(source, at))
        at = source.find(b".bool(", at + 1)
    indexing = {name for name in _INDEXED_BY.findall(source) if name.endswith(b"mask")} - made_bool
    if not indexing:
        return []  # most files: no mask indexed with, no unpacking read
    found = set()
    for match in _UNPACKED_FROM_CALL.finditer(source):
        names = [name.strip() for name in match.group(1).split(b",")]
        for place, name in enumerate(names):
            if name in indexing:
                found.add(f"{INDEX_MASK_FROM}{match.group(2).decode('ascii', 'replace')}@{place}")
    return sorted(found)


def _masks_used(source: bytes) -> set[bytes]:
    """The names the text hands to `masked_fill`/`masked_select`/`masked_scatter` as the mask:
    read once for the two facts that ask."""
    return {match.group(1) for match in _MASK_USE.finditer(source)}


def _mask_setters(source: bytes, used: set[bytes]) -> list[str]:
    """MASK_SETTER + the name of each method that keeps its one argument on `self` under a name
    the text hands to `masked_fill`/`masked_select` as the mask (pytorch-seq2seq's
    `set_mask(self, mask)`, then `attn.data.masked_fill_(self.mask, -inf)` in `forward`): a
    uint8 tensor given to it is used as a mask. `source`: the text with a line break put in
    front; `used`: its `_masks_used`."""
    return sorted(
        MASK_SETTER + match.group(1).decode("ascii", "replace")
        for match in _KEEPING_SETTER.finditer(source)
        if match.group(2) == match.group(4) and match.group(3) in used
    )


def _mask_makers(source: bytes, used: set[bytes]) -> list[str]:
    """MASK_FROM + the name of each function whose result the text binds to a name it hands to
    `masked_fill`/`masked_select` as the mask (tacotron2's `mask = ~get_mask_from_lengths(...)`,
    then `x.masked_fill_(mask, 0.0)`): a uint8 tensor that function returns is used as a mask
    in another file. Not when the line makes it bool (`get_mask(x).bool()`), nor for a name the
    text ever turns bool. And INVERTED_MASK_FROM + the name of each function whose result the
    text inverts into a name ending in `mask`, whatever uses it (`mask=~get_mask_from_lengths(
    lengths)` handed on as a keyword). `source`: the text with a line break put in front;
    `used`: its `_masks_used`."""
    found = {
        INVERTED_MASK_FROM + match.group(1).decode("ascii", "replace")
        for match in _INVERTED_MASK_FROM_CALL.finditer(source)
        if b"bool" not in match.group(2)  # `mask=~get_mask(x).bool()`: made bool first
    }
    # Searched once per name, not once per binding of it.
    used = {name for name in used if name + b".bool(" not in source}
    if not used:
        return sorted(found)
    for match in _BOUND_TO_CALL.finditer(source):
        name, receiver = match.group(1), match.group(2)
        if (
            name in used
            and not receiver.startswith(name + b".")  # `mask = mask.expand(...)`: the same mask
            and b"bool" not in match.group(4)
        ):
            found.add(MASK_FROM + match.group(3).decode("ascii", "replace"))
    return sorted(found)


def _loss_bases(source: bytes) -> list[str]:
    """LOSS_BASE + "Class=nn.Base" for each top-level class of the text that subclasses a
    torch.nn loss alone and defines no `__init__` (its body: up to the next top-level line).
    `source`: the text with a line break put in front."""
    found = []
    for match in _LOSS_SUBCLASS.finditer(source):
        end = _TOP_LEVEL_LINE.search(source, match.end())
        if b"def __init__" not in source[match.end() : end.start() if end else len(source)]:
            name, base = (
                match.group(1).decode("ascii", "replace"),
                match.group(2).decode("ascii", "replace"),
            )
            found.append(f"{LOSS_BASE}{name}=nn.{base}")
    return found


def _functions_handing_back_first(source: bytes, functions: list[_Function]) -> list[str]:
    """HANDS_BACK_FIRST + the name of each top-level function of the text with a `return` of its
    first parameter, alone on its line. `source`: the text with a line break put in front;
    `functions`: its `_top_level_functions`."""
    found = []
    for name, start, end in functions:
        first = _FIRST_PARAMETER.match(source, start)
        if first is None or first.group(1) in (b"self", b"cls"):
            continue
        needle = b"return " + first.group(1)
        at = source.find(needle, first.end(), end)
        while at >= 0:
            line_end = source.find(b"\n", at, end)
            rest = source[at + len(needle) : line_end if line_end >= 0 else end]
            if source[at - 1 : at] in (b" ", b"\t") and rest.strip()[:1] in (b"", b"#"):
                found.append(HANDS_BACK_FIRST + name.decode("ascii", "replace"))
                break
            at = source.find(needle, at + len(needle), end)
    return found


def _volatile_helpers(source: bytes, functions: list[_Function]) -> list[str]:
    """VOLATILE_HELPER + the name of each top-level function of the text with a `volatile`
    parameter that calls `Variable(`. `source`: the text with a line break put in front;
    `functions`: its `_top_level_functions`."""
    found = []
    for name, start, end in functions:
        close = source.find(b")", start, end)  # the parameters' end (a default with a call
        if close < 0:  # cuts them short: such a helper is left out)
            continue
        if (
            _VOLATILE_PARAMETER.search(source, start, close)
            and source.find(b"Variable(", close, end) >= 0
        ):
            found.append(VOLATILE_HELPER + name.decode("ascii", "replace"))
    return found


def _accumulating_meters(source: bytes) -> list[str]:
    """ACCUMULATES + the name of each class whose `update` adds its value to an attribute (the
    class whose `class` line comes last before that `def update`). `source`: the text with a
    line break put in front."""
    found = []
    for match in ACCUMULATING_UPDATE.finditer(source):
        start = source.rfind(b"\nclass ", 0, match.start())
        if start < 0:
            continue
        name = _CLASS.match(source, start + 1)
        if name is not None:
            found.append(ACCUMULATES + name.group(1).decode("ascii", "replace"))
    return found


def _name_before(source: bytes, end: int) -> bytes | None:
    """The name that ends at `end` (spaces before `end` skipped), when no `.` or word character
    comes before it: `detector` of `detector.forward(`, not `self.detector`."""
    while end and source[end - 1] in b" \t":
        end -= 1
    start = end
    while start and source[start - 1] in _WORD_BYTES:
        start -= 1
    if start == end or end - start > 80 or (start and source[start - 1] == ord(".")):
        return None
    return source[start:end]


def file_facts(source: bytes) -> FileFacts:
    """The facts of one Python file's text."""
    lines = b"\n" + source  # the top-level patterns start with a line break (see _FROM_IMPORT)
    markers = [marker for marker in _MARKERS if holds_marker(source, marker)]
    if b".forward(" in source:
        markers += _forward_called_classes(source)
    if b"with torch." in source:
        markers += _methods_called_without_grad(lines)
    used = _masks_used(lines) if b".masked_" in source else set()
    if b".masked_" in source or b"=~" in source or b"= ~" in source:
        markers += _mask_makers(lines, used)
    if used and b"def " in source:
        markers += _mask_setters(lines, used)
    if b"mask]" in source:
        markers += _index_masks(lines)
    if b"step" in source:
        markers += _step_methods(lines)
    if b"(self" in source:
        markers += _own_tensor_methods(source)
    if b"def update" in source:
        markers += _accumulating_meters(lines)
    if b"Loss)" in source:
        markers += _loss_bases(lines)
    if b".state_dict()" in source:
        markers += [WEIGHTS_NAME + name.decode() for name in set(_WEIGHTS_ASSIGNED.findall(lines))]
    methods = (
        sorted({name.decode() for name in _METHOD_CALL.findall(source)})
        if b"set_epoch" in source
        else []
    )
    classes: list[list] = []
    torch_function = b"Function" in source and bool(_AUTOGRAD_FUNCTION_IMPORT.search(source))
    for match in _CLASS.finditer(source):
        start = match.start()
        if start and source[start - 1] in _WORD_BYTES:  # `subclass X(...)`, `myclass ...`
            continue
        bases = _base_names((match.group(2) or b"").decode("ascii", "replace"), torch_function)
        classes.append([match.group(1).decode("ascii", "replace"), bases])
    env_reads: set[str] = set()
    if b"environ" in source:
        env_reads.update(name.decode() for name in _ENV_READ.findall(source))
        env_reads.update(
            name.decode() for name, assigned in _ENV_SUBSCRIPT.findall(source) if not assigned
        )
        if b" in os.environ" in source or b" in environ" in source:
            env_reads.update(name.decode() for name in _ENV_TESTED.findall(source))
    if b"getenv" in source:
        env_reads.update(name.decode() for name in _ENV_GOT.findall(source))
    if b"environ" in source:
        env_reads.update("=" + key.decode() for key in _ENV_KEY_CONSTANT.findall(source))
    if b"getenv" in source:
        env_reads.update("=" + key.decode() for key in _GETENV_KEY_CONSTANT.findall(source))
    if env_reads and b"__main__" in source:
        # Read by a script (`if __name__ == "__main__":`): what its own run does, which another
        # script of the project does not share. Kept apart as "NAME@main".
        env_reads = {f"{name}@main" for name in env_reads}
    safe_load_names = (
        sorted({name.decode() for name in _CLASS_NAME.findall(source)})
        if b"safe_globals" in source and _SAFE_GLOBALS.search(source)
        else []
    )
    closed = sorted(_closed_names(source)) if b"close" in source or b"flush" in source else []
    if b"_" in source:  # constants a variable may be read through elsewhere: "NAME:=VALUE"
        env_reads.update(
            f"{name.decode()}:={value.decode()}" for name, value in _STRING_CONSTANT.findall(lines)
        )
    imports = sorted(_top_level_imports(lines)) if b"import" in source else []
    evaluators = sorted(_evaluators(lines)) if b"def" in source else []
    layer_words = _layer_words_at(lines) if classes or b"def " in source else []
    functions = _top_level_functions(lines) if b"def " in source else []
    layers = sorted(_class_layers(lines, layer_words, functions)) if classes else []
    if layer_words:
        layers += _model_factories(lines, layer_words, functions)
    if functions and b"volatile" in source and b"Variable(" in source:
        markers += _volatile_helpers(lines, functions)
    if b"return " in source and functions:
        markers += _functions_handing_back_first(lines, functions)
        returns = _function_returns(lines, functions)
        layers += _returned_calls(lines, functions, returns)
        if any(word in source for word in _DETACHING_WORDS):
            markers += _detaching_functions(lines, functions, returns)
    runs = _self_runs(lines) if b"self.forward(" in source or b"self(" in source else []
    steps_stepped = bool(classes) and b".step(" in source
    # The methods' bodies, found once for the two facts that read them.
    bodies = _method_bodies(lines) if runs or steps_stepped else []
    if runs:
        markers += _self_running_methods(runs, bodies)
    steps = sorted(_method_steps(lines, bodies)) if steps_stepped else []
    loaders = sorted(_loader_attributes(source)) if b"DataLoader" in source else []
    return (
        classes,
        sorted(env_reads),
        methods,
        markers,
        safe_load_names,
        closed,
        imports,
        evaluators,
        layers,
        steps,
        loaders,
    )


def _method_bodies(source: bytes) -> list[tuple[bytes, int, int]]:
    """Each method (`def name(self`) of the text: its name, and where its body starts and
    ends, at the next method or top-level line. `source`: the text with a line break put in
    front."""
    methods = [(m.end(), m.start(), m.group(2)) for m in _METHOD.finditer(source)]
    if not methods:
        return []
    tops = [m.start() for m in _TOP_LEVEL_LINE.finditer(source)]
    bodies = []
    for number, (start, _, name) in enumerate(methods):
        after = methods[number + 1][1] if number + 1 < len(methods) else len(source)
        top = bisect_left(tops, start)
        bodies.append((name, start, min(after, tops[top]) if top < len(tops) else after))
    return bodies


def _method_steps(source: bytes, bodies: list[tuple[bytes, int, int]]) -> set[str]:
    """ "name=S" for each method whose body steps a learning-rate scheduler and no optimizer,
    "name=O" for one that steps an optimizer or calls a backward and no scheduler, "name=M" for
    one that does both, each found once per file. `source`: the text with a line break put in
    front; `bodies`: its methods' (`_method_bodies`)."""
    found = set()
    for name, start, end in bodies:
        if name in _GENERIC_METHODS:
            continue
        body = source[start:end]
        stepped = _SCHEDULER_STEP.search(body) if b"sched" in body else None
        scheduler = stepped is not None and _FIRST_SKIPPED.search(body, 0, stepped.start()) is None
        trains = b".backward(" in body or (
            b"opt" in body and _OPTIMIZER_STEP.search(body) is not None
        )
        if scheduler or trains:
            kind = "M" if scheduler and trains else "S" if scheduler else "O"
            found.add(f"{name.decode('ascii', 'replace')}={kind}")
    return found


# `self.forward(x)`, `self(x)`; the byte before is looked at (not `myself(`, `obj.self(`):
# a pattern that begins with its literal is searched fast.
_SELF_RUN = lazy_compile(rb"self(?:\.forward)?[ \t]*\(")
RUNS_ITSELF = "runs-itself:"


def _self_runs(source: bytes) -> list[int]:
    """Where the text runs its own object (`self.forward(x)`, `self(x)`), in order."""
    return [
        m.start()
        for m in _SELF_RUN.finditer(source)
        if m.start() and source[m.start() - 1] not in _WORD_OR_DOT
    ]


def _self_running_methods(runs: list[int], bodies: list[tuple[bytes, int, int]]) -> list[str]:
    """RUNS_ITSELF + the name of each method that runs its own object's forward (DnCNN's
    `def loss(self, x, y): return self.criterion(self.forward(x), y)`, `denoise`): a call of it
    on a model runs the model. `runs`: where the text runs its object (`_self_runs`); `bodies`:
    its methods' (`_method_bodies`)."""
    found = set()
    for name, start, end in bodies:
        if name in (b"forward", b"__call__"):
            continue
        first = bisect_left(runs, start)
        if first < len(runs) and runs[first] < end:
            found.add(RUNS_ITSELF + name.decode("ascii", "replace"))
    return sorted(found)


_WORD_OR_DOT = _WORD_BYTES | {ord(".")}
STEP_METHOD = "step-method:"
PLAIN_STEP = "plain-step:"
# `def training_step(self, ...)`: begins with its literal (see _SELF_RUN); the indentation
# before it is read from the line.
_STEP_METHOD_DEF = lazy_compile(rb"def[ \t]+(\w{0,60}step\w{0,60})[ \t]*\([ \t]*self\b")


def _step_methods(source: bytes) -> list[str]:
    """STEP_METHOD + "name=N" for each method named like a step (`training_step`) whose body
    neither says `grad` nor steps anything (`.step(`): it computes, and leaves the gradients
    alone (ECG's `model.training_step(batch)`, returning the loss); "name=C" for one that may
    clear them. A method's body runs to the next `def` as indented as its own, or to the next
    top-level line. `source`: the text with a line break put in front."""
    found = []
    for match in _STEP_METHOD_DEF.finditer(source):
        line = source.rfind(b"\n", 0, match.start())
        indent = source[line + 1 : match.start()]
        name = match.group(1).decode("ascii", "replace")
        if not indent or indent.strip(b" \t") or name == "step":
            continue  # a function, not a method; an environment's or optimizer's own `step`
        start = match.end()
        end = source.find(b"\n" + indent + b"def ", start)
        end = end if end != -1 else len(source)
        top = _TOP_LEVEL_LINE.search(source, start, end)
        end = top.start() if top is not None else end
        plain = source.find(b"grad", start, end) == -1 and source.find(b"step(", start, end) == -1
        found.append(f"{STEP_METHOD}{name}={'N' if plain else 'C'}")
    return found


def _evaluators(source: bytes) -> set[str]:
    """ "name=1" for each top-level function named to evaluate whose body calls its first
    parameter inside a `for` loop and never sets a mode or trains ("name=0" for the others).
    `source`: the text with a line break put in front."""
    found = set()
    for match in _EVALUATOR.finditer(source):
        end = _TOP_LEVEL_LINE.search(source, match.end())
        body = source[match.end() : end.start() if end else len(source)]
        keeps = (
            b"for " in body
            and match.group(2) + b"(" in body
            and not any(word in body for word in _MODE_WORDS)
        )
        found.add(f"{match.group(1).decode()}={int(keeps)}")
    return found


def _class_layers(source: bytes, layers: list[int], functions: list[_Function]) -> set[str]:
    """ "Name:!" for each top-level class whose statement or body names a mode-dependent
    layer (comments left out), else "Name:A,B" with its bases and, for a direct subclass of
    a `Module`, the classes its `__init__` calls by a bare name. `source`: the text with a line
    break put in front. "Name:=" for one whose `forward` calls `self.eval()` (it sets its own
    mode). Beside these, "Name:~" for one whose `forward` turns gradients off, "Name:^" for one
    calling `autograd.grad` and "Name:%" for a schedule of learning rates (see
    `_schedules_rates`)."""
    found = set()
    helpers = _layer_helpers(layers, functions)
    layer_globals = _top_level_layer_names(source, layers)
    for match in _TOP_LEVEL_CLASS.finditer(source):
        next_line = _TOP_LEVEL_LINE.search(source, match.end())
        start, end = match.start(), next_line.start() if next_line else len(source)
        bases = match.group(2)
        if _schedules_rates(match.group(1), source, start, end):
            found.add(f"{match.group(1).decode('ascii', 'replace')}:%")  # a fact beside the others
        if not bases:
            continue  # no base, no layer: not a module
        name = match.group(1).decode("ascii", "replace")
        forward = _method_span(source, b"forward", match.end(), end)
        if forward is not None and (
            _disables_gradients(source[forward[0] : forward[1]])
            or _disables_gradients(_decorators_above(source, forward[0], start))
        ):
            found.add(f"{name}:~")  # runs without gradients: a fact beside the others
        if source.find(b"autograd.grad(", start, end) != -1:
            found.add(f"{name}:^")  # takes gradients itself: a fact beside the others
        if forward is not None and source.find(b"self.eval()", *forward) != -1:
            found.add(f"{name}:=")  # sets its own mode: no claim about its layers
            continue
        first = bisect_left(layers, start)
        if (
            first < len(layers)
            and layers[first] < end
            or (layer_globals is not None and layer_globals.search(source, start, end))
        ):  # (or a module-level model it takes parts of: `alexnet_model.classifier.children()`)
            if _OPTIONAL_LAYER.search(source, start, end) is None:
                found.add(f"{name}:!")
            continue  # a layer its `__init__` leaves out by default: not known either way
        used = set(_base_names(bases.decode("ascii", "replace")))
        init = _method_span(source, b"__init__", match.end(), end) if b"Module" in bases else None
        # (a subclass of a project class that builds parts of its own: its called classes are
        # not listed, so nothing is known of them)
        own_init = (
            init is not None or _method_span(source, b"__init__", match.end(), end) is not None
        )
        if (init is not None or not own_init) and _builds_only_plain_layers(
            source, start, end, init
        ):
            used.add(PLAIN_LAYERS)
        if init is not None and any(
            _calls_function(source, helper, *init) for helper in helpers
        ):  # `self.encoder = nn.Sequential(conv_block(...))`, a helper building BatchNorm
            if _OPTIONAL_LAYER.search(source, start, end) is None:
                found.add(f"{name}:!")
            continue
        if init is not None:  # a model made of parts: the project classes its `__init__` calls
            for called in _CALLED_CLASS.finditer(source, *init):  # not `nn.Linear(`
                name_called = called.group(1)
                if name_called not in _NOT_CLASSES and name_called[:2] != b"__":  # `__init__(`
                    used.add(name_called.decode("ascii", "replace"))
        found.add(f"{name}:{','.join(sorted(used))}")
    return found


# `self.train_loader = DataLoader(`, `data.val_loader = torch.utils.data.DataLoader(`.
_LOADER_ASSIGNMENT = lazy_compile(
    rb"\.(\w{0,80}[Ll]oader\w{0,40})[ \t]*=[ \t]*(?:torch\.utils\.data\.|data\.)?DataLoader[ \t]*\("
)


def _loader_attributes(source: bytes) -> set[str]:
    """The attributes named like a loader that the text assigns a torch DataLoader: in a file
    that uses torch's (not graph libraries', whose loaders share the name)."""
    if b"torch" not in source or b"torch_geometric" in source or b"dgl" in source:
        return set()
    return {name.decode("ascii", "replace") for name in _LOADER_ASSIGNMENT.findall(source)}


_TOP_LEVEL_DEF = lazy_compile(rb"\ndef[ \t]+(\w{1,80})[ \t]*\(")


# A top-level function of a text: its name, where its body starts and where it ends.
_Function = tuple[bytes, int, int]


def _top_level_functions(source: bytes) -> list[_Function]:
    """The top-level `def`s of the text (with a line break put in front), each body running to
    the next line that starts with neither a space nor a comment; read once per file."""
    found = []
    for match in _TOP_LEVEL_DEF.finditer(source):
        next_line = _TOP_LEVEL_LINE.search(source, match.end())
        found.append((match.group(1), match.end(), next_line.start() if next_line else len(source)))
    return found


# A module-level assignment's name, at the start of its line (`alexnet_model = models.alexnet(`).
_ASSIGNED_AT_LINE_START = lazy_compile(rb"([A-Za-z_]\w{0,80})[ \t]*=[^=]")


def _top_level_layer_names(source: bytes, layers: list[int]) -> re.Pattern[bytes] | None:
    """A pattern of the names the module's top level binds to a mode-dependent layer or model on
    the line that names it (deephash's `alexnet_model = models.alexnet(pretrained=True)`, whose
    parts a class then takes), as whole words; None when there is none."""
    names = set()
    for at in layers:
        line = source.rfind(b"\n", 0, at) + 1
        assigned = _ASSIGNED_AT_LINE_START.match(source, line, at)
        if assigned is not None:
            names.add(re.escape(assigned.group(1)))
    if not names:
        return None
    return re.compile(rb"(?<![\w.])(?:" + b"|".join(sorted(names)) + rb")\b")


def _layer_helpers(layers: list[int], functions: list[_Function]) -> list[bytes]:
    """The top-level functions whose body names a mode-dependent layer (ProtoNet's
    `conv_block`, returning `nn.Sequential(..., nn.BatchNorm2d(c), ...)`)."""
    helpers = []
    for name, start, end in functions if layers else ():
        first = bisect_left(layers, start)
        if first < len(layers) and layers[first] < end:
            helpers.append(name)
    return helpers


def _model_factories(source: bytes, layers: list[int], functions: list[_Function]) -> list[str]:
    """ "name:!" for each top-level function that builds and returns a model with a
    mode-dependent layer (MixMatch's `WideResnet50`, returning `models.wide_resnet50_2(...)`
    with a new head), so a model it makes in another module is known to need `.eval()`. A
    function that sets a mode itself (`model.eval(); return model`) is left out, and so is one
    that only names `dropout` (a rate handed on, `parser.add_argument("--dropout")`)."""
    found = []
    for name, start, end in functions:
        first = bisect_left(layers, start)
        if not any(
            not source.startswith(b"dropout", at)
            for at in layers[first : bisect_left(layers, end, first)]
        ):
            continue
        body = source[start:end]
        if b"return " in body and not any(word in body for word in _SETS_A_MODE):
            found.append(f"{name.decode('ascii', 'replace')}:!")
    return found


# `    return SSD(phase, size, ...)`, `    return model` (a name, then the line's end), and an
# assignment of a call to a name in a function's body (`    net = Net(cfg).to(device)`).
_RETURN = lazy_compile(rb"\n[ \t]+return\b(?:[ \t]+([\w.]{1,200}))?[ \t]*(\(|#|(?=\r?\n))?")
_CALL_ASSIGNED = lazy_compile(rb"\n[ \t]+(\w{1,80})[ \t]*=[ \t]*([\w.]{1,200})[ \t]*\(")
# Calls that hand back the module they are given, moved or wrapped.
_SAME_MODULE_METHODS = (".to", ".cuda", ".cpu", ".float", ".half", ".double", ".train")


def _function_returns(source: bytes, functions: list[_Function]) -> list[tuple[int, re.Match]]:
    """Each `return` of the top-level functions, with the number of its function (one pass
    over the text, for the facts that read returns). `source`: the text with a line break put
    in front."""
    if not functions:
        return []
    starts = [start for _, start, _ in functions]
    found = []
    for match in _RETURN.finditer(source):
        number = bisect_left(starts, match.start()) - 1
        if number >= 0 and match.start() < functions[number][2]:  # not a method's, after it
            found.append((number, match))
    return found


def _returned_calls(
    source: bytes, functions: list[_Function], returns: list[tuple[int, re.Match]]
) -> list[str]:
    """ "name:>A,B" for each top-level function whose every `return` hands back a call of A or
    B (`return SSD(...)`, or `return net` after `net = Net(...)`), "?" standing for a return
    of anything else; the project's facts settle which such functions build modules. `source`:
    the text with a line break put in front; `returns`: its functions' (`_function_returns`)."""
    assigned: dict[int, dict[bytes, list[tuple[int, bytes]]]] = {}
    returned: dict[int, list[str]] = {}
    for number, match in returns:
        if match.group(1) is not None:  # a bare `return` (an error path's) hands back nothing
            made = assigned.get(number)
            if made is None:  # the calls the function assigns to names, read once
                _, start, end = functions[number]
                made = assigned[number] = _assigned_calls(source, start, end)
            returned.setdefault(number, []).append(_returned_callee(source, match, made))
    return [
        f"{functions[number][0].decode('ascii', 'replace')}:>{','.join(callees)}"
        for number, callees in returned.items()
    ]


# `return x.view(-1).data.tolist()[0]`, `return t.detach().cpu().numpy()`: a value with no graph.
_DETACHING_WORDS = (b".item()", b".tolist()", b".numpy()")
DETACHED_FROM = "detached-from:"


def _detaching_functions(
    source: bytes, functions: list[_Function], returns: list[tuple[int, re.Match]]
) -> list[str]:
    """DETACHED_FROM + the name of each top-level function whose every `return` line hands back
    a value taken out of the graph (turangojayev's `scalar`, returning `x.data.tolist()[0]`) or
    None: `loss = scalar(loss)` keeps no graph. `source`: the text with a line break put in
    front; `returns`: its functions' (`_function_returns`)."""
    detaching: dict[int, bool] = {}
    for number, match in returns:
        end = source.find(b"\n", match.end())
        returned = source[match.start() : end if end != -1 else len(source)]
        returned = returned.split(b"#")[0].strip()[len(b"return") :].strip()
        if returned in (b"", b"None"):
            continue  # no tensor either (`if x is None: return None`)
        detaching[number] = detaching.get(number, True) and any(
            word in returned for word in _DETACHING_WORDS
        )
    return [
        DETACHED_FROM + functions[number][0].decode("ascii", "replace")
        for number, every in detaching.items()
        if every
    ]


def _assigned_calls(source: bytes, start: int, end: int) -> dict[bytes, list[tuple[int, bytes]]]:
    """Per name, where the text between `start` and `end` assigns it a call and of what
    (`net = Net(cfg)`), in order; not a call of the name's own method (`net = net.cuda()`)."""
    found: dict[bytes, list[tuple[int, bytes]]] = {}
    for match in _CALL_ASSIGNED.finditer(source, start, end):
        name, callee = match.group(1), match.group(2)
        if not callee.startswith(name + b"."):
            found.setdefault(name, []).append((match.start(), callee))
    return found


def _returned_callee(
    source: bytes, match: re.Match, assigned: dict[bytes, list[tuple[int, bytes]]]
) -> str:
    """What one `return` hands back a call of ("Net", "nn.Sequential"), or "?"; for a tuple
    of names (`return model, optimizer`), what each is a call of, as "(PyraNet;torch.optim.SGD)".
    `source`: the text the match is in; `assigned`: the calls its function assigns to names
    (see `_assigned_calls`)."""
    value, after = match.group(1), match.group(2)
    if after is None:
        names = _returned_names(source, match)
        if names is None:
            return "?"  # `return x + 1`...
        return "(" + ";".join(_last_call_of(name, match.start(), assigned) for name in names) + ")"
    if after == b"(":
        for method in _SAME_MODULE_METHODS:  # `return net.to(device)`: what made `net`
            if value.endswith(method.encode()) and value.count(b".") == 1:
                value = value[: -len(method)]
                break
        else:
            if value.rpartition(b".")[2].decode("ascii", "replace") in MODEL_WRAPPERS:
                return "?"  # the wrapped module is what counts: not read here
            return value.decode("ascii", "replace")
    if b"." in value:
        return "?"  # `return self.net`: not followed
    return _last_call_of(value, match.start(), assigned)


def _last_call_of(name: bytes, before: int, assigned: dict[bytes, list[tuple[int, bytes]]]) -> str:
    """The callee of the last call assigned to `name` before offset `before`, or "?"."""
    made = assigned.get(name, [])
    last = bisect_left(made, before, key=lambda entry: entry[0]) - 1
    return made[last][1].decode("ascii", "replace") if last >= 0 else "?"


_NAMES_ONLY = lazy_compile(
    rb"[ \t]*\w{1,80}(?:[ \t]*,[ \t]*\w{1,80})+[ \t]*,?[ \t]*(?:#[^\n]*)?\r?"
)


def _returned_names(source: bytes, match: re.Match) -> list[bytes] | None:
    """The names of a `return a, b` whose line holds nothing else (a comment aside)."""
    start = match.start(1)
    end = source.find(b"\n", start)
    line = source[start : end if end != -1 else len(source)]
    if _NAMES_ONLY.fullmatch(line) is None:
        return None
    names = [part.strip() for part in line.split(b"#")[0].split(b",")]
    return [name for name in names if name]


LOADER_FROM = "loader-from:"


def _loader_factories(returns_of: dict[str, list[list[str]]]) -> set[str]:
    """The functions every definition of which returns only new DataLoaders (CheXNet's
    `get_train_dataloader`, returning `data_loader_train` after `data_loader_train =
    DataLoader(...)`): what they make is iterated as batches of tensors wherever called."""
    return {
        name
        for name, definitions in returns_of.items()
        if all(
            callees and all(callee.rpartition(".")[2] == "DataLoader" for callee in callees)
            for callees in definitions
        )
    }


def _builds_a_module(callee: str, classes: set[str]) -> bool:
    """A call of `callee` makes a new module: of the project's module classes, of torch.nn, or
    a torchvision classification model."""
    head, _, last = callee.rpartition(".")
    if head in ("nn", "torch.nn"):
        return last[:1].isupper() and last not in _NN_NON_MODULES
    if head in ("models", "torchvision.models"):
        return last.startswith(tuple(model.decode() for model in TORCHVISION_MODELS))
    return not head and callee in classes


def _model_factory_functions(returns_of: dict[str, list[list[str]]], classes: set[str]) -> set[str]:
    """The functions every definition of which returns only new modules."""
    return {
        name
        for name, definitions in returns_of.items()
        if name not in classes
        and all(all(_builds_a_module(callee, classes) for callee in found) for found in definitions)
    }


# MODULE_ITEMS + "get_model": a function returning a tuple with a new module in it; with
# "/2#0": the first of two items is the module.
MODULE_ITEMS = "module-items:"


def _module_items(returns_of: dict[str, list[list[str]]], classes: set[str]) -> set[str]:
    """MODULE_ITEMS markers of the functions every `return` of every definition of which hands
    back a tuple of as many names, the same one of which holds a new module (PyraNet's
    `getModel`: `return model, optimizer` after `model = PyramidHourglassNet(...)`)."""
    found = set()
    for name, definitions in returns_of.items():
        returned = [callee for callees in definitions for callee in callees]
        if name in classes or not all(callee[:1] == "(" for callee in returned):
            continue
        items = [callee[1:-1].split(";") for callee in returned]
        size = len(items[0])
        if any(len(each) != size for each in items):
            continue
        modules = [
            i for i in range(size) if all(_builds_a_module(each[i], classes) for each in items)
        ]
        if modules:
            found.add(MODULE_ITEMS + name)
            found.update(f"{MODULE_ITEMS}{name}/{size}#{i}" for i in modules)
    return found


def _calls_function(source: bytes, name: bytes, start: int, end: int) -> bool:
    """`name(` is called in [start, end), not as a method or a longer name's end."""
    at = source.find(name + b"(", start, end)
    while at != -1:
        before = source[at - 1]
        if before not in _WORD_BYTES and before != 46:  # not `self.conv_block(`, `my_conv_block(`
            return True
        at = source.find(name + b"(", at + 1, end)
    return False


def _schedules_rates(name: bytes, source: bytes, start: int, end: int) -> bool:
    """A class named as a schedule (`SGDRScheduler`, not `ScheduledOptim`) whose body reaches
    an optimizer (`optimizer.param_groups`): a learning-rate schedule, maybe one of its own."""
    if not name.lower().endswith(_SCHEDULE_ENDINGS):
        return False
    return any(source.find(word, start, end) != -1 for word in _SCHEDULE_REACHES)


def _disables_gradients(body: bytes) -> bool:
    """A method's text runs (part of) its work under `torch.no_grad()` or
    `torch.inference_mode()`, as a metric's feature extractor does."""
    return b"no_grad()" in body or b"inference_mode()" in body


def _decorators_above(source: bytes, at: int, start: int) -> bytes:
    """The decorator lines right above the `def` at `at` (`@torch.no_grad()`), as one text."""
    end = source.rfind(b"\n", start, at)
    top = end
    while end > start:
        above = source.rfind(b"\n", start, end)
        if not source[above + 1 : end].lstrip().startswith(b"@"):
            break
        top = end = above
    return source[top:at] if top >= start else b""


def _method_span(source: bytes, name: bytes, start: int, end: int) -> tuple[int, int] | None:
    """Where the method `name` of the class body in [start, end) runs: from its `def` to the
    next method, as most code indents it; None when the class has none. A method of the class
    itself comes before one of a class defined in one of its methods (ddpm-torch's `Extractor`
    inside `load_model`). The next method is the next `def` at the same indentation (a tab, two
    spaces) as this one's."""
    at = source.find(b"\n    def " + name + b"(", start, end)
    indent = b"    "
    if at == -1:
        at = source.find(b"def " + name, start, end)
        if at == -1:
            return None
        line = source.rfind(b"\n", start, at) + 1
        if line and not source[line:at].strip():
            indent = source[line:at]
    else:
        at += 5
    stop = source.find(b"\n" + indent + b"def ", at, end)
    return at, end if stop == -1 else stop


def _layer_words_at(source: bytes) -> list[int]:
    """Where the text names a mode-dependent layer outside a comment, in order: found once per
    file (searching each class body for each word cost a third of the project's facts)."""
    found = []
    for word in MODE_LAYER_WORDS:
        at = source.find(word)
        while at >= 0:
            # Not after a `#` on its line (one in a string hides a word: fewer claims, not more),
            # nor in a type test (`isinstance(m, nn.BatchNorm2d)`, `classname.find("BatchNorm")`
            # of a weight init: no layer of the model's).
            before = source[source.rfind(b"\n", 0, at) + 1 : at]
            if (
                b"#" not in before
                and b"isinstance(" not in before
                and b"find(" not in before
                and (word != b"models." or source.startswith(TORCHVISION_MODELS, at + len(word)))
            ):
                found.append(at)
            at = source.find(word, at + len(word))
    found.sort()
    return found


def _top_level_imports(source: bytes) -> set[str]:
    """ "name=origin" for each name a top-level import binds as another name (`from m import
    x`, `import a.b as c`). `source`: the text with a line break put in front."""
    found = set()
    for match in _FROM_IMPORT.finditer(source):
        module = match.group(1).decode()
        for part in match.group(2).decode().split(","):
            name, _, alias = part.strip().partition(" as ")
            found.add(f"{alias.strip() or name.strip()}={module}.{name.strip()}")
    for match in _IMPORT_AS.finditer(source):
        found.add(f"{match.group(2).decode()}={match.group(1).decode()}")
    return found


def _own_tensor_methods(source: bytes) -> list[str]:
    """OWN_METHOD + each method the text defines that is named as an unmistakable tensor method
    and returns nothing: it works in place (brevitas' `permute`), where a dropped result loses
    nothing. (One returning a new object, openfold's `Rigid.unsqueeze`, is as lost as a
    tensor's when dropped.)"""
    found = set()
    for match in _SELF_METHOD.finditer(source):
        if match.start() and source[match.start() - 1] in _WORD_BYTES:
            continue  # `undef ...(self`: not a `def`
        name = match.group(1).decode("ascii", "replace")
        if name in tensor_methods.UNMISTAKABLE and not _returns_a_value(source, match.start()):
            found.add(OWN_METHOD + name)
    return sorted(found)


_RETURN_VALUE = lazy_compile(rb"\breturn[ \t]+[^\s#]")


def _returns_a_value(source: bytes, start: int) -> bool:
    """The method whose `def` starts at `start` has a `return <value>` in its body: the lines
    after it indented deeper than the `def`."""
    line_start = source.rfind(b"\n", 0, start) + 1
    indent = start - line_start
    end = source.find(b"\n", start)
    while end != -1:
        following = source.find(b"\n", end + 1)
        line = source[end + 1 : following if following != -1 else len(source)]
        stripped = line.lstrip(b" \t")
        if stripped and not stripped.startswith(b"#") and len(line) - len(stripped) <= indent:
            break
        end = following
    body = source[start : end if end != -1 else len(source)]
    return _RETURN_VALUE.search(body) is not None


def _closed_names(source: bytes) -> set[str]:
    """The words right before each `.close(` or `.flush(` of the text."""
    names = set()
    for match in _CLOSING_CALL.finditer(source):
        end = start = match.start()
        while start and source[start - 1] in _WORD_BYTES:
            start -= 1
        if start < end:
            names.add(source[start:end].decode("ascii", "replace"))
    return names


def is_file_facts(value: object) -> bool:
    """Whether `value` (read back from a cache) has the shape of `file_facts`' result."""
    if not (isinstance(value, (list, tuple)) and len(value) == 11):
        return False
    classes, *names = value
    return (
        isinstance(classes, list)
        and all(
            isinstance(item, list)
            and len(item) == 2
            and isinstance(item[0], str)
            and isinstance(item[1], list)
            and all(isinstance(base, str) for base in item[1])
            for item in classes
        )
        and all(isinstance(part, list) and all(isinstance(n, str) for n in part) for part in names)
    )


class FactsStore(Protocol):
    """Where whole projects' facts are kept by what they were read from (the cache)."""

    def project_facts(self, key: str) -> ProjectFacts | None: ...

    def keep_project_facts(self, key: str, facts: ProjectFacts) -> None: ...


class FactsReader:
    """Gathers the facts of a project one file at a time, so that a caller reading its files
    for another reason (the cache's digests) need not keep them all."""

    def __init__(self) -> None:
        self._bases_of: dict[str, list[list[str]]] = {}  # class -> the bases of each definition
        self._env_reads: set[str] = set()
        self._methods: set[str] = set()
        self._markers: set[str] = set()
        self._safe_load_names: set[str] = set()
        self._closed_names: set[str] = set()
        self._imports: set[str] = set()
        self._evaluators: set[str] = set()
        self._layers_of: dict[str, list[list[str]]] = {}  # class -> what each definition uses
        self._steps_of: dict[str, set[str]] = {}  # method -> what its definitions step
        self._grad_free: set[str] = set()  # classes some definition of which runs without grads
        self._grad_taking: set[str] = set()  # ... calls `autograd.grad`
        self._loader_attributes: set[str] = set()
        self._rate_schedules: set[str] = set()  # classes named as schedules reaching an optimizer
        self._returns_of: dict[str, list[list[str]]] = {}  # function -> what each one returns
        self._declared: dict[str, str] = {}  # package -> the oldest release a root supports
        # What went in, for a store of whole projects' facts (`facts`): the digest of each
        # file's content, or None once a file came without one (nothing is then looked up).
        self._inputs: list[str] | None = []
        self._later: list[Callable[[], FileFacts | None]] = []
        self._complete = True  # False when a file's facts could not be had after all

    def add(self, source: bytes, digest: str | None = None) -> FileFacts:
        """Read one file's text (whose content has `digest`, if known); its facts are
        returned (for a cache)."""
        found = file_facts(source)
        self._note(digest)
        self._merge(found)
        return found

    def add_later(self, digest: str, load: Callable[[], FileFacts | None]) -> None:
        """A file whose content has `digest`: `load` gives its facts (None when it cannot),
        asked only when the store given to `facts` does not know the whole project's."""
        self._note(digest)
        self._later.append(load)

    def _note(self, digest: str | None) -> None:
        if self._inputs is not None:
            if digest is None:
                self._inputs = None
            else:
                self._inputs.append(digest)

    def declare(self, minimums: Iterable[tuple[str, str]]) -> None:
        """The oldest releases one project root says it supports (`declared_minimums`); of
        several roots, the oldest of each package counts."""
        for package, release in minimums:
            known = self._declared.get(package)
            if known is None or version_tuple(release) < version_tuple(known):
                self._declared[package] = release
            if self._inputs is not None:
                self._inputs.append(f"declared:{package}>={release}")

    def add_facts(self, found: FileFacts, digest: str | None = None) -> None:
        """One file's facts (of a content with `digest`, if known), as `add` returns them."""
        self._note(digest)
        self._merge(found)

    def _merge(self, found: FileFacts) -> None:
        (
            classes,
            env_reads,
            methods,
            markers,
            safe_load_names,
            closed,
            imports,
            evaluators,
            layers,
            steps,
            loaders,
        ) = found
        self._loader_attributes.update(loaders)
        self._imports.update(imports)
        for entry in steps:
            name, _, kind = entry.partition("=")
            self._steps_of.setdefault(name, set()).add(kind)
        self._evaluators.update(evaluators)
        for entry in layers:
            name, _, used = entry.partition(":")
            if used == "~":
                self._grad_free.add(name)
                continue
            if used == "^":
                self._grad_taking.add(name)
                continue
            if used == "%":
                self._rate_schedules.add(name)
                continue
            if used[:1] == ">":
                self._returns_of.setdefault(name, []).append(used[1:].split(","))
                continue
            self._layers_of.setdefault(name, []).append(used.split(",") if used else [])
        for name, bases in classes:
            self._bases_of.setdefault(name, []).append(bases)
        self._env_reads.update(env_reads)
        self._methods.update(methods)
        self._markers.update(markers)
        self._safe_load_names.update(safe_load_names)
        self._closed_names.update(closed)

    def facts(self, modules: Iterable[str] = (), store: FactsStore | None = None) -> ProjectFacts:
        """The project's facts; `store` keeps them by what went in, so that a re-run over the
        same contents reads them back instead of adding up every file's again."""
        modules = frozenset(modules)
        key = None
        if store is not None and self._inputs is not None:
            import hashlib

            key = hashlib.blake2b(
                "\0".join([*self._inputs, "", *sorted(modules)]).encode(), digest_size=16
            ).hexdigest()
            known = store.project_facts(key)
            if known is not None:
                return known
        for load in self._later:
            found = load()
            if found is None:
                self._complete = False
            else:
                self._merge(found)
        self._later = []
        result = self._combined(modules)
        if key is not None and self._complete:
            store.keep_project_facts(key, result)  # type: ignore[union-attr]
        return result

    def _combined(self, modules: frozenset[str]) -> ProjectFacts:
        classes = _module_classes(self._bases_of)
        # A function that only ever returns a new module builds one, as a class would.
        classes |= _model_factory_functions(self._returns_of, classes)
        markers = self._markers | {
            LOADER_FROM + name for name in _loader_factories(self._returns_of)
        }
        markers |= _module_items(self._returns_of, classes)
        # Methods named like a step none of whose definitions may clear gradients.
        steps = {entry for entry in self._markers if entry.startswith(STEP_METHOD)}
        markers |= {
            PLAIN_STEP + entry[len(STEP_METHOD) : -2]
            for entry in steps
            if entry.endswith("=N") and entry[:-1] + "C" not in steps
        }
        schedulers = _scheduler_classes(self._bases_of)
        functions = {
            name
            for name, definitions in self._bases_of.items()
            if all(AUTOGRAD_FUNCTION in bases for bases in definitions)
        }
        reexports = _star_reexports(self._imports, self._bases_of, modules)
        evaluators = {entry[:-2] for entry in self._evaluators if entry.endswith("=1")} - {
            entry[:-2] for entry in self._evaluators if entry.endswith("=0")
        }
        # A class settles as mode-dependent when every definition names such a layer, or uses
        # (calls, or subclasses) a class that settled so.
        mode_classes = _classes_on(self._layers_of, lambda used: used == "!")
        plain_classes = _plain_layer_classes(self._layers_of)
        scheduler_methods = {name for name, kinds in self._steps_of.items() if kinds == {"S"}}
        training_methods = {name for name, kinds in self._steps_of.items() if kinds == {"O"}}
        self_moded = {
            name
            for name, definitions in self._layers_of.items()
            if all(d == ["="] for d in definitions)
        }
        roots = {entry.partition("=")[2].partition(".")[0] for entry in self._imports}
        env_reads = _env_reads(self._env_reads)
        other_schedulers = self._rate_schedules - schedulers
        parts = (
            classes,
            env_reads,
            self._methods,
            markers,
            self._safe_load_names,
            functions,
            self._closed_names,
            schedulers,
            {f"{name}={origin}" for name, origin in reexports},
            evaluators,
            mode_classes,
            plain_classes,
            self_moded,
            self._grad_free,
            other_schedulers,
            self._loader_attributes,
            scheduler_methods,
            training_methods,
            roots,
            self._grad_taking,
            {f"{package}>={release}" for package, release in self._declared.items()},
        )
        # The module names are left out: adding or removing a file must not make every cached
        # result stale; a file whose imports change is checked again for its own text.
        import hashlib  # here: its OpenSSL start-up is a share of `explain`'s, which never asks

        digest = hashlib.sha256(
            "\1".join("\0".join(sorted(part)) for part in parts).encode()
        ).hexdigest()[:16]
        return ProjectFacts(
            frozenset(classes),
            frozenset(env_reads),
            digest,
            modules,
            frozenset(self._methods),
            frozenset(markers),
            frozenset(self._safe_load_names),
            frozenset(functions),
            frozenset(self._closed_names),
            frozenset(schedulers),
            frozenset(evaluators),
            reexports,
            frozenset(mode_classes),
            frozenset(plain_classes),
            frozenset(self_moded),
            frozenset(self._grad_free),
            frozenset(other_schedulers),
            frozenset(self._loader_attributes),
            frozenset(scheduler_methods),
            frozenset(training_methods),
            frozenset(roots),
            frozenset(self._grad_taking),
            tuple(sorted(self._declared.items())),
        )


def _env_reads(entries: set[str]) -> set[str]:
    """The variables read ("NAME", or "NAME@main" by a script), a read through a constant
    ("=KEY", "=KEY@main") resolved by the constants the files bind ("KEY:=NAME")."""
    constants: dict[str, set[str]] = {}
    reads = set()
    for entry in entries:
        if ":=" in entry:
            key, _, value = entry.partition(":=")
            constants.setdefault(key, set()).add(value)
        elif not entry.startswith("="):
            reads.add(entry)
    for entry in entries:
        if entry.startswith("="):
            key, at, where = entry[1:].partition("@")
            reads.update(value + at + where for value in constants.get(key, ()))
    return reads


def _star_reexports(
    imports: set[str], bases_of: dict[str, list[list[str]]], modules: frozenset[str] = frozenset()
) -> tuple[tuple[str, str], ...]:
    """(name, origin) of each name the project's modules import with one origin only, from
    torch, and that no class of the project is named. A name taken from a module of the project
    by the same name (`from env.importing import nn`, which has `import torch.nn as nn`) is that
    module's, no other origin."""
    origins: dict[str, set[str]] = {}
    for entry in imports:
        name, _, origin = entry.partition("=")
        head, _, last = origin.rpartition(".")
        if last == name and head.partition(".")[0] in modules:
            continue
        origins.setdefault(name, set()).add(origin)
    return tuple(
        sorted(
            (name, next(iter(found)))
            for name, found in origins.items()
            if len(found) == 1 and name not in bases_of and next(iter(found)).startswith("torch")
        )
    )


def read_facts(sources: Iterable[bytes], modules: Iterable[str] = ()) -> ProjectFacts:
    """The facts of a project whose Python files hold `sources`, importable as `modules`."""
    reader = FactsReader()
    for source in sources:
        reader.add(source)
    return reader.facts(modules)


def facts_for(root: Path) -> ProjectFacts:
    """The facts of the project under `root`; unreadable files are left out."""
    return facts_for_check([], [root])


def facts_for_check(
    checked: Iterable[Path],
    scopes: Iterable[Path],
    reader: FactsReader | None = None,
    searched: Iterable[Path] = (),
    store: FactsStore | None = None,
) -> ProjectFacts:
    """The facts of the projects around what `check` was asked to look at: the files it
    checks (`checked`, absolute; their sources already given to `reader` by the caller, which
    reads them anyway) and the other Python files of each project (the tree above the nearest
    project marker of each scope), read here. Paths are compared as written (discovery
    resolves directories): resolving thousands of links costs more than checking them.
    `searched`: the directories whose files discovery listed in `checked`; a project root
    among them holds no other file but those the user excluded, and is not read again.
    `store`: see `FactsReader.facts`."""
    reader = reader or FactsReader()
    roots = sorted({project_root(Path(scope)) for scope in scopes})
    seen = {os.path.normpath(path) for path in checked}
    modules: set[str] = set()
    for path in seen:
        modules.update(_module_names(path, roots))
    listed = {os.path.normpath(directory) for directory in searched}
    extra = 0
    for root in roots:
        reader.declare(declared_minimums(root))
        if os.path.normpath(root) in listed:
            continue
        for path in python_files(root, MAX_FILES - extra):
            name = os.path.normpath(path)
            if name in seen:
                continue
            seen.add(name)
            modules.update(_module_names(name, [root]))
            try:
                reader.add(read_regular_file(path, MAX_FILE_BYTES))
                extra += 1
            except OSError:
                continue
    return reader.facts(modules, store)


def _module_names(path: str, roots: list[Path]) -> list[str]:
    """The names `path` may be imported by, part by part (`models`, `resnet` for
    `models/resnet.py`), under the first root holding it; its own stem alone elsewhere."""
    for root in roots:
        prefix = os.path.join(str(root), "")
        if path.startswith(prefix):
            parts = path[len(prefix) :].split(os.sep)
            return [*parts[:-1], os.path.splitext(parts[-1])[0]]
    return [os.path.splitext(os.path.basename(path))[0]]


def _base_names(bases: str, torch_function: bool = False) -> list[str]:
    """The bases of a class statement, each by its last dotted part, with `nn.` kept in front
    of torch.nn's own classes: `nn.Module`, `torch.nn.Linear` -> `nn.Module`, `nn.Linear`;
    and torch's autograd Function as AUTOGRAD_FUNCTION (`autograd.Function`,
    `torch.autograd.Function`, or a bare `Function` where `torch_function`: the file imports it
    from torch.autograd)."""
    names = []
    for part in bases.split(","):
        dotted = part.split("[", 1)[0].strip()
        if not dotted or "=" in part:  # nothing, or a keyword: metaclass=..., total=False
            continue
        last = dotted.rpartition(".")[2]
        if dotted in _AUTOGRAD_FUNCTION_SPELLINGS or dotted == "Function" and torch_function:
            names.append(AUTOGRAD_FUNCTION)
        else:
            names.append("nn." + last if dotted.startswith(("nn.", "torch.nn.")) else last)
    return names


# How the bases of a class say it is a `torch.autograd.Function`.
AUTOGRAD_FUNCTION = "autograd.Function"
_AUTOGRAD_FUNCTION_SPELLINGS = frozenset(
    {"autograd.Function", "torch.autograd.Function", "torch.autograd.function.Function"}
)


def _module_classes(bases_of: dict[str, list[list[str]]]) -> set[str]:
    """The class names every definition of which subclasses nn.Module: directly, through a
    torch.nn class, or through other such project classes."""

    def direct(base: str) -> bool:
        if base.startswith("nn."):
            last = base[3:]
            return last[:1].isupper() and last not in _NN_NON_MODULES
        # A bare `Module` (from torch.nn import Module), unless the project has its own.
        return base == "Module" and "Module" not in bases_of

    return _classes_on(bases_of, direct)


# torch.optim.lr_scheduler's classes a project subclasses for its own schedules (maskrcnn-
# benchmark's `WarmupMultiStepLR(MultiStepLR)`, `WarmupPolyLR(_LRScheduler)`). Not
# ReduceLROnPlateau: its `step()` takes the metric.
_TORCH_SCHEDULERS = frozenset(
    {
        "_LRScheduler",
        "LRScheduler",
        "LambdaLR",
        "MultiplicativeLR",
        "StepLR",
        "MultiStepLR",
        "ConstantLR",
        "LinearLR",
        "ExponentialLR",
        "PolynomialLR",
        "CosineAnnealingLR",
        "CosineAnnealingWarmRestarts",
        "CyclicLR",
        "OneCycleLR",
        "SequentialLR",
        "ChainedScheduler",
    }
)


def _scheduler_classes(bases_of: dict[str, list[list[str]]]) -> set[str]:
    """The class names every definition of which subclasses a torch learning-rate scheduler,
    directly (a base of that name the project does not define itself) or through other such
    project classes."""
    return _classes_on(bases_of, lambda base: base in _TORCH_SCHEDULERS and base not in bases_of)


# torch.nn's classes whose forward and backward do not depend on the mode, as a class imported
# from torch.nn by its bare name is called (`Conv2d(3, 64, 3)`) or named as a base (`nn.Module`).
_PLAIN_TORCH_CLASSES = frozenset(
    (
        "Module Linear Bilinear Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d "
        "ConvTranspose3d ReLU ReLU6 LeakyReLU PReLU ELU SELU CELU GELU SiLU Mish Sigmoid Tanh "
        "Softmax LogSoftmax Softplus Hardtanh Hardswish Hardsigmoid Sequential ModuleList "
        "ModuleDict Parameter ParameterList ParameterDict Embedding MaxPool1d MaxPool2d MaxPool3d "
        "AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d "
        "AdaptiveMaxPool1d AdaptiveMaxPool2d Upsample PixelShuffle Flatten Identity LayerNorm "
        "GroupNorm ZeroPad2d ReflectionPad2d ReplicationPad2d ConstantPad2d"
    ).split()
)


def _plain_layer_classes(layers_of: dict[str, list[list[str]]]) -> set[str]:
    """The classes every definition of which lists PLAIN_LAYERS and uses only torch's plain
    classes and project classes settled so too. Linear in the number of names used: a class
    found not plain makes each class using it not plain, once."""
    not_plain: set[str] = set()
    users: dict[str, list[str]] = {}
    for name, definitions in layers_of.items():
        for used in definitions:
            if PLAIN_LAYERS not in used:
                not_plain.add(name)
            for part in used:
                if part in layers_of:
                    users.setdefault(part, []).append(name)
                elif part != PLAIN_LAYERS and part.removeprefix("nn.") not in _PLAIN_TORCH_CLASSES:
                    not_plain.add(name)  # a class of a library or a helper function: unseen
    todo = list(not_plain)
    while todo:
        for user in users.pop(todo.pop(), ()):
            if user not in not_plain:
                not_plain.add(user)
                todo.append(user)
    return set(layers_of) - not_plain


def _classes_on(bases_of: dict[str, list[list[str]]], direct) -> set[str]:
    """The class names every definition of which has a `direct` base, or a base that is such a
    project class. Linear in the number of bases: a definition is settled once, when its first
    such base is known."""
    unsettled: dict[str, int] = {}  # class name -> its definitions not yet known to be modules
    waiting: dict[str, list[tuple[str, int]]] = {}  # base name -> (class, definition) on it
    settled: set[tuple[str, int]] = set()
    ready: list[str] = []
    for name, definitions in bases_of.items():
        unsettled[name] = len(definitions)
        for number, bases in enumerate(definitions):
            if any(direct(base) for base in bases):
                settled.add((name, number))
                unsettled[name] -= 1
            else:
                for base in bases:
                    waiting.setdefault(base, []).append((name, number))
        if unsettled[name] == 0:
            ready.append(name)
    modules: set[str] = set()
    while ready:
        name = ready.pop()
        modules.add(name)
        for dependent in waiting.pop(name, ()):
            if dependent not in settled:
                settled.add(dependent)
                unsettled[dependent[0]] -= 1
                if unsettled[dependent[0]] == 0:
                    ready.append(dependent[0])
    return modules
