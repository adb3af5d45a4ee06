"""Reads `load_state_dict` error messages: which keys are missing, unexpected or mis-shaped.

Shared by the state-dict entries (TD504, TD506, TD507, TD508), which each classify the same
parsed message (`kind()` says which of them it belongs to, so exactly one wins), and by
`torchdoctor ckpt`, which feeds the same classifiers the key lists it computes.
Covers every phrasing since torch 0.3, and messages cut short ("...", a line wrapped by a
terminal or an issue tracker, a log that stops in the middle of a key).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from torchdoctor._regex import lazy_compile

# Prefixes that wrappers add to every key: DataParallel/DDP (and AveragedModel), torch.compile.
WRAPPER_NAMES = {"module.": "DataParallel/DistributedDataParallel", "_orig_mod.": "torch.compile"}
WRAPPER_PREFIXES = tuple(WRAPPER_NAMES)
BATCHES_TRACKED = "num_batches_tracked"
# Top-level entries of a training checkpoint dict that hold the weights ...
CONTAINERS = (
    "state_dict",
    "model_state_dict",
    "model_state",
    "model",
    "net",
    "network",
    "state",
    "ema",
    "model_ema",
    "ema_state_dict",
    "state_dict_ema",
    "params",
    "params_ema",
    "g_ema",
    "generator",
    "weights",
    "module",
    "shadow",
)
# ... and those that sit next to them.
METADATA = (
    "epoch",
    "epochs",
    "optimizer",
    "optimizer_state_dict",
    "optim",
    "scheduler",
    "lr_scheduler",
    "step",
    "global_step",
    "iteration",
    "iter",
    "best_acc",
    "best_acc1",
    "best_loss",
    "best_prec1",
    "arch",
    "args",
    "config",
    "cfg",
    "hyper_parameters",
    "pytorch-lightning_version",
    "callbacks",
    "loops",
    "amp",
    "scaler",
    "meta",
    "hparams",
    "opt",
    "loss",
    "acc",
    "accuracy",
    "train_loss",
    "val_loss",
    "version",
)
HEAD_NAMES = lazy_compile(
    r"(?:^|[._])(?:fc|head|heads|classifier|cls|cls_score|logits?|last_linear|out|output|"
    r"pred|predictor|score|class_embed|lm_head|final|last_layer)\d*(?:$|[._])"
)
# A name part holding `embed` (`embed_tokens`, `pos_embedding`, `word_embeddings`), `wte`, `lut`
# or `vocab...`. Parts are read between `.` and `_` and the part's end is checked once, ahead: a
# `\w*embed\w*` would rescan a long name from each `_` in it.
EMBEDDING_NAMES = lazy_compile(
    r"(?:^|[._])(?:(?=[^\W_]*(?:$|[._]))[^\W_]*?embed|(?:wte|lut|vocab[^\W_]*)(?:$|[._]))"
)

_MARKERS = lazy_compile(
    # mmcv's `load_state_dict` says `missing keys in source state_dict: a.b, c.d`
    # (retold without the colon: `Missing key(s) in state_dict "module.conv.weight"`)
    # (or ending the line, the quoted list below it: `Missing key(s) in state_dict\n"conv.weight"`,
    # perhaps starting in the middle of a key: `...\nkbone.conv.weight", "backbone.bn.weight"`)
    r"(?P<missing>Missing\s+key\(s\)\s+in\s+state_dict"
    r"(?::|(?=\s+\\?\")|(?=[ \t]*\n[ \t]*[\w.]{0,300}\\?\"))"
    r"|missing\s+keys?\s+in\s+(?:source\s+)?state_dict:)"
    r"|(?P<unexpected>Unexpected\s+key\(s\)\s+in\s+state_dict(?::|(?=\s+\\?\"))"
    # retold in prose: `an unexpected key(s) "module.conv1.weight"`
    r"|[Uu]nexpected\s+key(?:\(s\))?\s+(?=\\?\")"
    r"|unexpected\s+key\s+in\s+source\s+state_dict:)"
    r"|(?P<size>size\s+mismatch\s+for\s+"
    # retold without `size`: `Mismatch for fcn.weight:copying a param of torch.size([99,256,1,1])`
    r"|(?<![\w ])[Mm]ismatch\s+for\s+(?=[^\s:]{1,300}:\s*copying\s)"
    r"|While\s+(?:copying|swapping)\s+the\s+parameter\s+named\s+"
    # detectron2/fvcore's checkpointer, which skips the tensor: `Unable to load 'k' to the
    # model due to incompatible shapes: ...`, `Skip loading parameter 'k' ...`, and before
    # them `'k' has shape (81, 1024) in the checkpoint but (4, 1024) in the model! Skipped.`
    r"|Unable\s+to\s+load\s+(?=')|Skip\s+loading\s+parameter\s+(?=')"
    r"|(?<!\S)(?='[^'\s]{1,300}'\s+has\s+shape\s)"
    # YOLOX's checkpoint loader, which skips the tensor: `Shape of head.cls_preds.0.bias in
    # checkpoint is torch.Size([80]), while shape of head.cls_preds.0.bias in model is ...`
    r"|Shape\s+of\s+(?=\S{1,300}\s+in\s+checkpoint\s+is\s))"
)
_KEY = lazy_compile(r"[A-Za-z0-9_.\-/:]+")
_SIZE = r"(?:torch\.[Ss]ize\(\s*)?\[(?P<{}>[\d,\s]*)\]\)?"


def _words(text: str) -> str:
    """A phrase as a regex that also matches when a terminal wrapped it across lines."""
    return r"\s+".join(text.split(" "))


# A key starts where a run of non-spaces does: searched in a long run, a key starting at each of
# its characters would rescan the run from each.
_SHAPES = [
    lazy_compile(pattern)
    for pattern in (
        # torch >= 1.1: the checkpoint's shape first, then the model's.
        r"(?<!\S)(?P<key>\S+?):\s+"
        + _words("copying a param with shape")
        + r"\s+"
        + _SIZE.format("checkpoint")
        + r"\s+"
        + _words("from checkpoint, the shape in current model is")
        # A message cut off before the model's shape (a log line or an issue title): torch
        # says "size mismatch" only for shapes that differ, so the checkpoint's is enough.
        + r"(?:\s+"
        + _SIZE.format("model")
        + r"|[ \t]*(?=\n|$))",
        # torch 0.4 - 1.0 (retyped, the spaces after `:` and `,` may be gone).
        r"(?<!\S)(?P<key>\S+?):\s*"
        + _words("copying a param of")
        + r"\s+"
        + _SIZE.format("checkpoint")
        + r"\s+"
        + _words("from checkpoint,")
        + r"\s*"
        + _words("where the shape is")
        + r"\s+"
        + _SIZE.format("model")
        + r"\s+"
        + _words("in current model"),
        # torch 0.3 (and the 0.4 list): the model's shape first.
        r"(?:\"|(?<![^\",\s]))(?P<key>[^\",\s]+)\"?,\s+"
        + _words("whose dimensions in the model are")
        + r"\s+"
        + _SIZE.format("model")
        + r"\s+"
        + _words("and whose dimensions in the checkpoint are")
        + r"\s+"
        + _SIZE.format("checkpoint"),
        # detectron2/fvcore: the checkpoint's shape first, as tuples.
        r"'(?P<key>[^'\s]+)'\s+(?:has\s+shape|"
        + _words("to the model due to incompatible shapes:")
        + r")\s+\((?P<checkpoint>[\d,\s]*)\)\s+"
        + _words("in the checkpoint but")
        + r"\s+\((?P<model>[\d,\s]*)\)\s+"
        + _words("in the model"),
        # YOLOX: the checkpoint's shape first.
        r"(?<!\S)(?P<key>\S+)\s+"
        + _words("in checkpoint is")
        + r"\s+"
        + _SIZE.format("checkpoint")
        + r",?\s+"
        + _words("while shape of")
        + r"\s+\S+\s+"
        + _words("in model is")
        + r"\s+"
        + _SIZE.format("model"),
    )
]


@dataclass(frozen=True)
class ShapeMismatch:
    key: str
    checkpoint: tuple[int, ...]
    model: tuple[int, ...]  # empty: not known (the message was cut off before it)

    @property
    def layer(self) -> str:
        return self.key.rpartition(".")[0] or self.key


@dataclass(frozen=True)
class Prefix:
    """Keys of one side are the other side's keys with `prefix` in front."""

    prefix: str
    side: str  # "checkpoint": the checkpoint's keys carry it; "model": the model's keys do
    matched: int  # how many keys it explains
    wrapper: bool  # a DataParallel/DDP/torch.compile prefix, not some other module name


@dataclass(frozen=True)
class StateDictError:
    model: str | None  # the class named in "Error(s) in loading state_dict for X"
    missing: tuple[str, ...] = ()
    unexpected: tuple[str, ...] = ()
    mismatched: tuple[ShapeMismatch, ...] = field(default_factory=tuple)
    # The missing list ends with torch's closing `".`: it was pasted whole, not cut off.
    missing_closed: bool = False

    @property
    def other_missing(self) -> tuple[str, ...]:
        return tuple(k for k in self.missing if not _is_batches_tracked(k))

    @property
    def other_unexpected(self) -> tuple[str, ...]:
        return tuple(k for k in self.unexpected if not _is_batches_tracked(k))


def parse(message: str) -> StateDictError | None:
    """The keys a load_state_dict error lists, or None when `message` is not one."""
    found = list(_MARKERS.finditer(message))
    if not found:
        return None
    missing: list[str] = []
    unexpected: list[str] = []
    mismatched: list[ShapeMismatch] = []
    missing_closed = False
    for index, marker in enumerate(found):
        end = found[index + 1].start() if index + 1 < len(found) else len(message)
        segment = message[marker.end() : end]
        if marker.lastgroup == "missing":
            missing.extend(_keys(segment))
            listed = segment.split("\n", 1)[0].rstrip()
            missing_closed = listed.endswith('".') and "..." not in listed
        elif marker.lastgroup == "unexpected":
            listed = marker.group().endswith((":", "state_dict"))
            unexpected.extend(_keys(segment, first_only=not listed))
        else:
            mismatch = _shape(segment)
            if mismatch is not None and mismatch.checkpoint != mismatch.model:
                mismatched.append(mismatch)
    if not (missing or unexpected or mismatched):
        return None
    # torch's "Error(s) in loading state_dict for X", or retold as "Error loading state_dict for X"
    owner = re.search(r"Error(?:\(s\)\s+in)?\s+loading\s+state_dict\s+for\s+(\w+)", message)
    return StateDictError(
        owner.group(1) if owner else None,
        _unique(missing),
        _unique(unexpected),
        _unique(mismatched),
        missing_closed,
    )


def from_block(block, report) -> StateDictError | None:
    """The error of `block`, read from the whole input: a log or an issue often splits the
    lists across paragraphs that the block's message does not reach."""
    if parse(block.message) is None:
        return None
    return in_text(report) or parse(block.message)


def in_text(report) -> StateDictError | None:
    """The error the whole input shows, read once per input (checks ask for every block)."""
    return report.once(_parse_text)


def _parse_text(report) -> StateDictError | None:
    return parse(report.text)


# A dotted key written without quotes; a dot, so that the words around it are not read as keys.
_UNQUOTED_KEY = lazy_compile(r"(?<![\w.])[A-Za-z_]\w{0,80}(?:\.\w{1,80}){1,20}(?![\w.])")


def _keys(segment: str, first_only: bool = False) -> list[str]:
    """Quoted keys of one list. Keys hold no spaces, so whitespace inside quotes is a wrapped
    line; a key cut off by truncation has no closing quote and is dropped."""
    segment = segment.replace("\\'", "'").replace('\\"', '"')
    segment = segment.replace("\u201c", '"').replace("\u201d", '"')  # pasted via a forum/editor
    if segment.lstrip().startswith('"{'):  # torch 0.3: a set's repr in quotes
        quoted = re.findall(r"'([^']*)'", segment.split("}", 1)[0])
    elif '"' in segment:
        head, _, rest = segment.partition('"')
        if _KEY.fullmatch(head.strip()):
            # The list starts in the middle of a key (`kbone.layer4.weight", "backbone...`):
            # drop that key through its closing quote, or every pair of quotes is off by one.
            segment = rest
        quoted = re.findall(r'"([^"]*)"', segment)
    else:  # retold without quotes (`Missing key(s) in state_dict: bn.num_batches_tracked in ...`)
        quoted = _UNQUOTED_KEY.findall(segment)
    keys = []
    for text in quoted:
        key = re.sub(r"\s+", "", text)
        if _KEY.fullmatch(key) and not key.endswith("..."):
            keys.append(key)
        if first_only:
            break
    return keys


def _shape(segment: str) -> ShapeMismatch | None:
    for pattern in _SHAPES:
        found = pattern.match(segment)
        if found:
            return ShapeMismatch(
                found["key"].strip('"'), _dims(found["checkpoint"]), _dims(found["model"] or "")
            )
    return None


def _dims(text: str) -> tuple[int, ...]:
    return tuple(int(d) for d in re.findall(r"\d+", text))


def _unique(items: list) -> tuple:
    return tuple(dict.fromkeys(items))


def _is_batches_tracked(key: str) -> bool:
    return key.rpartition(".")[2] == BATCHES_TRACKED


# Classification ---------------------------------------------------------------------------


def kind(error: StateDictError) -> str:
    """The entry the message belongs to: "prefix", "batches-tracked", "shape" or "keys"."""
    if _one_layer_missing(error):
        return "keys"
    if (
        prefix_of(error) is not None
        or nested_wrapper(error)
        or wrapped_part(error)
        or wrapper_owner(error)
    ):
        return "prefix"
    if counters_only_mismatched(error):
        return "batches-tracked"
    if error.mismatched:
        # Next to many missing/unexpected keys, a few shapes are symptoms of another network.
        others = len(error.other_missing) + len(error.other_unexpected)
        return "keys" if others > len(error.mismatched) else "shape"
    only_counters = not (error.other_missing or error.other_unexpected)
    if (error.missing or error.unexpected) and only_counters:
        return "batches-tracked"
    return "keys"


def cut_before_unexpected(error: StateDictError, report) -> bool:
    """Only missing keys are shown, and the list is cut off (no closing `".`) before whatever
    torch lists after it, the unexpected keys above all: a list long enough to be cut is most
    often the whole model's keys, which a checkpoint holding them under a wrapper's prefix
    (`module.`, `_orig_mod.`) leaves all missing. Not when the listed keys are only a head's
    (a checkpoint without the head), nor when the input lists the checkpoint's top-level
    entries (`"model", "optimizer", ...`: the weights may be nested one level down)."""
    if not error.other_missing or error.unexpected or error.mismatched or error.missing_closed:
        return False
    if all(HEAD_NAMES.search(key.rpartition(".")[0]) for key in error.other_missing):
        return False
    return report.search(_ENTRIES_LISTED) is None


# Two of a training checkpoint's top-level entries quoted one after the other.
_ENTRY_NAMES = "|".join(re.escape(name) for name in CONTAINERS + METADATA)
_ENTRIES_LISTED = lazy_compile(
    rf"[\"'](?:{_ENTRY_NAMES})[\"'],[ \t]{{0,3}}[\"'](?:{_ENTRY_NAMES})[\"']"
)


def counters_only_mismatched(error: StateDictError) -> bool:
    """Every shape that differs is a BatchNorm counter's (`torch.Size([])` against
    `torch.Size([1])`), and no other key is missing or unexpected: the weights all match."""
    return (
        bool(error.mismatched)
        and all(_is_batches_tracked(m.key) for m in error.mismatched)
        and not (error.other_missing or error.other_unexpected)
    )


def _one_layer_missing(error: StateDictError) -> bool:
    """torch's whole message lists only missing keys, all of one layer: a checkpoint without the
    wrapper's prefix would have every key missing and unexpected, so whatever prefix those keys
    carry is the model's own, and the checkpoint lacks a layer."""
    if not error.missing_closed or error.unexpected or error.mismatched:
        return False
    return len({key.rpartition(".")[0] for key in error.other_missing}) == 1


def prefix_of(error: StateDictError) -> Prefix | None:
    """The prefix that one side's keys carry and the other's lack, when that explains most of
    the mismatch; with only one side listed (an old KeyError, a cut-off message), a wrapper
    prefix on every listed key."""
    missing, unexpected = error.other_missing, error.other_unexpected
    if missing and unexpected:
        found = [
            _shared_prefix(unexpected, missing, "checkpoint"),
            _shared_prefix(missing, unexpected, "model"),
        ]
        found = [p for p in found if p is not None]
        if not found:
            return None
        best = max(found, key=lambda p: p.matched)
        # Most of the smaller list must be explained, or it is a different model that happens
        # to share a few names.
        return best if best.matched >= 0.5 * min(len(missing), len(unexpected)) else None
    for keys, side in ((unexpected, "checkpoint"), (missing, "model")):
        if keys and not (missing and unexpected):
            wrappers = {wrapper_prefix(k) for k in keys}
            if len(wrappers) == 1 and "" not in wrappers:
                prefix = wrappers.pop()
                if side == "checkpoint" and _OWN_PREFIX.get(error.model or "") == prefix:
                    return None  # the model is wrapped too: its own keys carry that prefix
                return Prefix(prefix, side, len(keys), True)
    return None


def wrapper_owner(error: StateDictError) -> str | None:
    """The prefix of the wrapper named as the model ("state_dict for OptimizedModule") when only
    missing keys are listed, none with that prefix: the text was cut or retold (torch lists a
    wrapper's keys with its prefix), and what it shows is a wrapped model that the bare
    checkpoint's keys do not fit."""
    prefix = _OWN_PREFIX.get(error.model or "")
    if prefix is None or error.unexpected or error.mismatched or not error.other_missing:
        return None
    return None if any(k.startswith(prefix) for k in error.missing) else prefix


def nested_wrapper(error: StateDictError) -> tuple[str, str, int] | None:
    """DataParallel around different parts on the two sides: `features.module.0.weight` in the
    checkpoint against `module.features.0.weight` in the model (pytorch/examples' ImageNet
    script wraps only `model.features` of AlexNet and VGG). (a checkpoint key, the model's key
    for it, how many agree) when most keys of both lists agree once every `module` part is
    removed, and a `module` part stands below the top on one side."""
    missing, unexpected = error.other_missing, error.other_unexpected
    if not (missing and unexpected):
        return None
    model_keys = {unwrapped_key(key): key for key in missing}
    pairs = []
    for key in unexpected:
        model_key = model_keys.get(unwrapped_key(key))
        if model_key is not None and (_wrapped_below_top(key) or _wrapped_below_top(model_key)):
            pairs.append((key, model_key))
    if not pairs or len(pairs) < 0.5 * min(len(missing), len(unexpected)):
        return None
    return pairs[0][0], pairs[0][1], len(pairs)


def wrapped_part(error: StateDictError) -> tuple[str, str, int] | None:
    """(side, part, count) when only one side's keys are listed (a cut-off message) and every
    one of them holds the same part wrapped in DataParallel below the top: `encoder.module.0.
    weight` missing means the model's `encoder` was wrapped before loading ("model"); listed as
    unexpected, the checkpoint was saved with it wrapped ("checkpoint")."""
    missing, unexpected = error.other_missing, error.other_unexpected
    if bool(missing) == bool(unexpected):
        return None
    keys, side = (missing, "model") if missing else (unexpected, "checkpoint")
    parts = {key.partition(".module.")[0] for key in keys}
    if len(parts) != 1 or any(".module." not in key for key in keys):
        return None
    part = parts.pop()
    return (side, part, len(keys)) if part and "module" not in part.split(".") else None


def unwrapped_key(key: str) -> str:
    """`key` without its `module` parts: `features.module.0.weight` -> `features.0.weight`."""
    return ".".join(part for part in key.split(".") if part != "module")


def _wrapped_below_top(key: str) -> bool:
    return "module" in key.split(".")[1:-1]


# The prefix a wrapper named in "Error(s) in loading state_dict for X" gives its own keys.
_OWN_PREFIX = {
    "DataParallel": "module.",
    "DistributedDataParallel": "module.",
    "OptimizedModule": "_orig_mod.",
}


def wrapper_prefix(key: str) -> str:
    """The run of wrapper prefixes `key` starts with ("module._orig_mod." ...), or ""."""
    position = 0
    while True:
        for wrapper in WRAPPER_PREFIXES:
            if key.startswith(wrapper, position):
                position += len(wrapper)
                break
        else:
            return key[:position]


def wrapper_name(prefix: str) -> str:
    """ "DataParallel/DDP + torch.compile" for "module._orig_mod.", "" for another prefix."""
    names = WRAPPER_NAMES
    if wrapper_prefix(prefix) != prefix:
        return ""
    parts, rest = [], prefix
    while rest:
        wrapper = next(w for w in names if rest.startswith(w))
        parts.append(names[wrapper])
        rest = rest[len(wrapper) :]
    return " + ".join(parts)


def _shared_prefix(longer: tuple[str, ...], shorter: tuple[str, ...], side: str) -> Prefix | None:
    """The prefix most keys of `longer` have in front of a key of `shorter`."""
    wanted = set(shorter)
    counts: Counter[str] = Counter()
    for key in longer:
        wrapper = wrapper_prefix(key)
        if wrapper and key[len(wrapper) :] in wanted:
            counts[wrapper] += 1
            continue
        parts = key.split(".")
        for cut in range(1, len(parts)):
            if ".".join(parts[cut:]) in wanted:
                counts[".".join(parts[:cut]) + "."] += 1
                break
    if not counts:
        return None
    prefix, matched = counts.most_common(1)[0]
    return Prefix(prefix, side, matched, wrapper_prefix(prefix) == prefix)


def container_of(error: StateDictError) -> tuple[str, tuple[str, ...]] | None:
    """(container, its neighbours) when the unexpected keys are a training checkpoint's
    top-level entries ("state_dict", "optimizer", "epoch"): the weights are nested one level
    down."""
    top = [k for k in error.unexpected if "." not in k]
    if not top or len(top) < 0.5 * len(error.unexpected):
        return None
    containers = [c for c in CONTAINERS if c in top]
    if containers:
        return containers[0], tuple(k for k in top if k != containers[0])
    if all(k in METADATA for k in top) and error.missing:
        return "", tuple(top)
    return None


def head_change(error: StateDictError) -> tuple[int, int] | None:
    """(checkpoint size, model size) when only the output size of the last layer(s) differs:
    every mismatch is in the first dimension of a head-like layer (fc, head, classifier)."""
    if not error.mismatched or error.other_missing or error.other_unexpected:
        return None
    sizes = set()
    for mismatch in error.mismatched:
        same_rank = len(mismatch.checkpoint) == len(mismatch.model) > 0
        if not (same_rank and mismatch.checkpoint[1:] == mismatch.model[1:]):
            return None
        sizes.add((mismatch.checkpoint[0], mismatch.model[0]))
    layers = {m.layer for m in error.mismatched}
    if len(sizes) != 1 or len(layers) > 2:
        return None
    if not all(HEAD_NAMES.search(layer) for layer in layers):
        return None
    return sizes.pop()


def embedding_change(error: StateDictError) -> tuple[int, int] | None:
    """(checkpoint rows, model rows) when an embedding's (vocabulary's) first dimension differs."""
    for mismatch in error.mismatched:
        if (
            EMBEDDING_NAMES.search(mismatch.layer)
            and len(mismatch.checkpoint) == 2
            and mismatch.checkpoint[1:] == mismatch.model[1:]
        ):
            return mismatch.checkpoint[0], mismatch.model[0]
    return None


def groups(keys: tuple[str, ...], limit: int = 3) -> str:
    """The top-level modules `keys` belong to, largest first: "`backbone.*` (120), `fc.*` (2)"."""
    counts = Counter(k.split(".", 1)[0] if "." in k else k for k in keys)
    shown = [
        f"`{name}.*` ({count})"
        if count > 1 or any(k.startswith(name + ".") for k in keys)
        else f"`{name}`"
        for name, count in counts.most_common(limit)
    ]
    if len(counts) > limit:
        shown.append("...")
    return ", ".join(shown)


def sample(keys: tuple[str, ...], limit: int = 3) -> str:
    """A few keys, quoted: "`conv1.weight`, `bn1.weight`, ..."."""
    shown = [f"`{k}`" for k in keys[:limit]]
    if len(keys) > limit:
        shown.append("...")
    return ", ".join(shown)


def size(dims: tuple[int, ...]) -> str:
    return f"[{', '.join(str(d) for d in dims)}]"
