"""Compares a checkpoint's state dict with a model's (or another checkpoint's) and classifies
every difference by its cause. Works on key -> TensorInfo maps: no torch needed.

Order matters: the safe repairs (nesting, prefix, `num_batches_tracked`) are applied to the key
map first, then what remains is classified (shapes, renamed layers, real missing/unexpected).
The classifiers are the explainer's own (`knowledge.state_dicts`), fed with the computed lists.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from torchdoctor.ckpt.reader import TensorInfo
from torchdoctor.knowledge import state_dicts as sd_errors

BATCHES_TRACKED = sd_errors.BATCHES_TRACKED
# Causes in display order; `repairable` ones are what `fix` and `load_state_dict` apply.
KINDS = (
    "nesting",
    "prefix",
    "wrapped-part",
    "batches-tracked",
    "renamed",
    "head",
    "shape",
    "missing",
    "unexpected",
    "dtype",
)
REPAIRABLE = frozenset({"nesting", "prefix", "wrapped-part", "batches-tracked"})
# Differences that load_state_dict(strict=True) does not mind.
HARMLESS = frozenset({"dtype"})


@dataclass
class Difference:
    kind: str
    keys: tuple[str, ...] = ()
    fields: dict = field(default_factory=dict)

    @property
    def repairable(self) -> bool:
        return self.kind in REPAIRABLE

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "repairable": self.repairable,
            "keys": list(self.keys),
            **{k: v for k, v in self.fields.items() if not k.startswith("_")},
        }


@dataclass
class Diff:
    differences: list[Difference]
    # Checkpoint key -> the key it has after the safe repairs (dropped keys map to None).
    renames: dict[str, str | None]
    # Keys the safe repairs add, each with the reference's tensor it should copy the shape of.
    added: dict[str, TensorInfo]
    matched: int

    @property
    def blocking(self) -> list[Difference]:
        """What makes load_state_dict(strict=True) fail before any repair."""
        return [d for d in self.differences if d.kind not in HARMLESS]

    @property
    def remaining(self) -> list[Difference]:
        """What still fails after the safe repairs."""
        return [d for d in self.blocking if not d.repairable]


def compare(
    checkpoint: dict[str, TensorInfo], reference: dict[str, TensorInfo], where: tuple[str, ...] = ()
) -> Diff:
    differences: list[Difference] = []
    if where:
        differences.append(Difference("nesting", (), {"container": "/".join(where)}))
    renames: dict[str, str | None] = {k: k for k in checkpoint}
    _repair_prefixes(renames, reference, differences)
    _repair_wrapped_parts(renames, reference, differences)
    added = _repair_counters(renames, reference, differences)

    current = {new: checkpoint[old] for old, new in renames.items() if new is not None}
    missing = [k for k in reference if k not in current and k not in added]
    unexpected = [k for k in current if k not in reference]
    common = [k for k in reference if k in current]
    mismatched = [
        sd_errors.ShapeMismatch(k, current[k].shape, reference[k].shape)
        for k in common
        if current[k].shape != reference[k].shape
    ]
    missing, unexpected = _renamed(missing, unexpected, current, reference, differences)
    _shapes(mismatched, differences)
    if missing:
        differences.append(
            Difference("missing", tuple(missing), {"groups": sd_errors.groups(tuple(missing))})
        )
    if unexpected:
        differences.append(
            Difference(
                "unexpected", tuple(unexpected), {"groups": sd_errors.groups(tuple(unexpected))}
            )
        )
    dtypes = [
        k
        for k in common
        if current[k].shape == reference[k].shape and current[k].dtype != reference[k].dtype
    ]
    if dtypes:
        pairs = sorted({(current[k].dtype, reference[k].dtype) for k in dtypes})
        differences.append(
            Difference("dtype", tuple(dtypes), {"checkpoint": pairs[0][0], "model": pairs[0][1]})
        )
    matched = len(common) - len(mismatched)
    differences.sort(key=lambda d: KINDS.index(d.kind))
    return Diff(differences, renames, added, matched)


def _repair_prefixes(
    renames: dict[str, str | None], reference: dict[str, TensorInfo], differences: list[Difference]
) -> None:
    for _ in range(3):  # "module." then "_orig_mod.", in either order, or another module name
        error = _unmatched(renames, reference)
        prefix = None if error is None else sd_errors.prefix_of(error)
        if prefix is None:
            return
        changed = []
        for old, new in renames.items():
            if new is None:
                continue
            if prefix.side == "checkpoint" and new.startswith(prefix.prefix):
                renames[old] = new[len(prefix.prefix) :]
                changed.append(old)
            elif prefix.side == "model" and prefix.prefix + new in reference:
                renames[old] = prefix.prefix + new
                changed.append(old)
        if not changed:
            return
        differences.append(
            Difference(
                "prefix",
                tuple(changed),
                {
                    "prefix": prefix.prefix,
                    "side": prefix.side,
                    "count": len(changed),
                    "wrapper": sd_errors.wrapper_name(prefix.prefix),
                },
            )
        )


def _unmatched(
    renames: dict[str, str | None], reference: dict[str, TensorInfo]
) -> sd_errors.StateDictError | None:
    """The reference's keys the renamed checkpoint lacks and the checkpoint's it does not know,
    as load_state_dict would list them; None when one side has none (nothing to pair)."""
    current = {new for new in renames.values() if new is not None}
    missing = tuple(k for k in reference if k not in current)
    unexpected = tuple(k for k in current if k not in reference)
    return sd_errors.StateDictError(None, missing, unexpected) if missing and unexpected else None


def _repair_wrapped_parts(
    renames: dict[str, str | None], reference: dict[str, TensorInfo], differences: list[Difference]
) -> None:
    """DataParallel around different parts of the net on the two sides
    (`features.module.0.weight` for the model's `module.features.0.weight`): each key becomes
    the one reference key it equals once every `module` part is removed from both."""
    error = _unmatched(renames, reference)
    if error is None or sd_errors.nested_wrapper(error) is None:
        return
    unexpected = frozenset(error.unexpected)
    targets: dict[str, list[str]] = {}
    for key in error.missing:
        targets.setdefault(sd_errors.unwrapped_key(key), []).append(key)
    claims = Counter(sd_errors.unwrapped_key(key) for key in unexpected)
    changed = []
    for old, new in renames.items():
        if new not in unexpected:
            continue
        bare = sd_errors.unwrapped_key(new)
        if len(targets.get(bare, ())) == 1 and claims[bare] == 1:  # one way only
            renames[old] = targets[bare][0]
            changed.append(old)
    if changed:
        example = changed[0]
        differences.append(
            Difference(
                "wrapped-part",
                tuple(changed),
                {"count": len(changed), "example": example, "target": renames[example]},
            )
        )


def _repair_counters(
    renames: dict[str, str | None], reference: dict[str, TensorInfo], differences: list[Difference]
) -> dict[str, TensorInfo]:
    current = {new for new in renames.values() if new is not None}
    added = {
        k: reference[k]
        for k in reference
        if k.endswith("." + BATCHES_TRACKED)
        and k not in current
        and k[: -len(BATCHES_TRACKED)] + "running_mean" in current
    }
    dropped = [
        old
        for old, new in renames.items()
        if new is not None
        and new.endswith("." + BATCHES_TRACKED)
        and new not in reference
        and new[: -len(BATCHES_TRACKED)] + "running_mean" in reference
    ]
    for old in dropped:
        renames[old] = None
    if added:
        differences.append(
            Difference("batches-tracked", tuple(added), {"side": "missing", "count": len(added)})
        )
    if dropped:
        differences.append(
            Difference(
                "batches-tracked", tuple(dropped), {"side": "unexpected", "count": len(dropped)}
            )
        )
    return added


def _renamed(
    missing: list[str],
    unexpected: list[str],
    current: dict[str, TensorInfo],
    reference: dict[str, TensorInfo],
    differences: list[Difference],
):
    """Pairs of (unexpected, missing) keys with the same shape and leaf name, in the same order:
    a layer renamed between the checkpoint and the model (`fc` -> `classifier`)."""
    pairs: list[tuple[str, str]] = []
    start = 0
    for key in missing:
        for index in range(start, min(start + 4, len(unexpected))):
            candidate = unexpected[index]
            if (
                candidate.rpartition(".")[2] == key.rpartition(".")[2]
                and current[candidate].shape == reference[key].shape
            ):
                pairs.append((candidate, key))
                start = index + 1
                break
    layers: dict[tuple[str, str], list[str]] = {}
    for old, new in pairs:
        layers.setdefault((old.rpartition(".")[0], new.rpartition(".")[0]), []).append(old)
    unexpected_by_layer = Counter(k.rpartition(".")[0] for k in unexpected)
    missing_by_layer: dict[str, list[str]] = {}
    for key in missing:
        missing_by_layer.setdefault(key.rpartition(".")[0], []).append(key)
    kept = set()
    for (old_layer, new_layer), keys in layers.items():
        # A whole layer (all its keys) must move: one coincidental shape is not a rename.
        new_keys = missing_by_layer[new_layer]
        if len(keys) == unexpected_by_layer[old_layer] == len(new_keys):
            differences.append(
                Difference(
                    "renamed",
                    tuple(keys),
                    {"old": old_layer or "(top)", "new": new_layer or "(top)", "count": len(keys)},
                )
            )
            kept.update(keys)
            kept.update(new_keys)
    return ([k for k in missing if k not in kept], [k for k in unexpected if k not in kept])


def _shapes(mismatched: list[sd_errors.ShapeMismatch], differences: list[Difference]) -> None:
    if not mismatched:
        return
    error = sd_errors.StateDictError(None, mismatched=tuple(mismatched))
    keys = tuple(m.key for m in mismatched)
    shapes = {m.key: {"checkpoint": list(m.checkpoint), "model": list(m.model)} for m in mismatched}
    head = sd_errors.head_change(error)
    if head is not None:
        differences.append(
            Difference(
                "head",
                keys,
                {
                    "checkpoint": head[0],
                    "model": head[1],
                    "layers": _layers(mismatched),
                    "shapes": shapes,
                },
            )
        )
        return
    first = mismatched[0]
    differences.append(
        Difference(
            "shape",
            keys,
            {
                "count": len(keys),
                "key": first.key,
                "checkpoint": sd_errors.size(first.checkpoint),
                "model": sd_errors.size(first.model),
                "shapes": shapes,
            },
        )
    )


def _layers(mismatched: list[sd_errors.ShapeMismatch]) -> str:
    return ", ".join(f"`{layer}`" for layer in dict.fromkeys(m.layer for m in mismatched))


def reference_of_model(state_dict) -> dict[str, TensorInfo]:
    """A model's state_dict as key -> TensorInfo (takes torch tensors; imports nothing)."""
    return {
        k: TensorInfo(tuple(v.shape), str(v.dtype).replace("torch.", ""), str(v.device))
        for k, v in state_dict.items()
        if hasattr(v, "shape")
    }
