"""`torchdoctor.load_state_dict(model, path_or_dict)`: the safe repairs, then a strict load."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field


class CheckpointMismatchError(RuntimeError):
    """The state dict still does not fit the model after the safe repairs."""


@dataclass
class LoadResult:
    repairs: list[str] = field(default_factory=list)
    missing_keys: list[str] = field(default_factory=list)
    unexpected_keys: list[str] = field(default_factory=list)
    skipped_keys: list[str] = field(default_factory=list)  # other shapes (strict=False only)


def load_state_dict(
    model,
    path_or_dict,
    *,
    strict: bool = True,
    trust: bool = False,
    verbose: bool = True,
    lang: str = "en",
) -> LoadResult:
    """Load a checkpoint (a path or an already loaded object) into `model` after the safe
    repairs: unwrap nesting, strip/add wrapper prefixes, add/drop `num_batches_tracked`.

    Prints what it repaired to stderr (unless `verbose=False`), in `lang` ("en" or "zh").
    With `strict=True` it raises CheckpointMismatchError listing, by cause, what still does not
    fit, and leaves the model untouched; with `strict=False` it loads what fits and reports the
    rest in the result. `trust=True` allows a full unpickle of a file that needs one (it runs
    code from the file); a file that holds code to run is refused even then."""
    import torch

    from torchdoctor.ckpt import reader, repair
    from torchdoctor.ckpt.diff import compare, reference_of_model
    from torchdoctor.ckpt.findings import Subject, findings, problem_message
    from torchdoctor.ckpt.inspect import locate
    from torchdoctor.ckpt.repair_text import repair_lines

    if isinstance(path_or_dict, (str, os.PathLike)):
        path = os.fspath(path_or_dict)
        try:
            checkpoint = reader.read(path)
        except reader.Unreadable as problem:
            message = problem_message(Subject(path, lang, problem=problem))
            raise CheckpointMismatchError(f"{path}: {message}") from None
        try:
            loaded = repair.load(path, checkpoint, trust)
        except repair.Dangerous as error:
            raise CheckpointMismatchError(
                f"{path} holds code to run while loading ({', '.join(error.names)}): it is not "
                "loaded, not even with trust=True"
            ) from None
        except repair.NeedsTrust as error:
            raise CheckpointMismatchError(
                f"{path} needs {', '.join(error.names)}: only a full unpickle, which runs code "
                "from the file, can rebuild it; pass trust=True if you trust the file"
            ) from None
        except ValueError as error:
            raise CheckpointMismatchError(f"{path}: {error}") from None
        weights = loaded.weights
    else:
        path = "<state_dict>"
        root = (
            path_or_dict.state_dict() if isinstance(path_or_dict, torch.nn.Module) else path_or_dict
        )
        weights = locate(root, lambda v: isinstance(v, torch.Tensor))
        if weights is None:
            raise CheckpointMismatchError("no state dict (a dict of tensors) in the object given")
    reference = reference_of_model(model.state_dict())
    diff = compare(reference_of_model(weights.tensors), reference, weights.where)
    result = LoadResult(repairs=repair_lines(diff, weights.where, None, lang))
    if diff.remaining and strict:
        subject = Subject(path, lang, diff=diff)
        lines = [
            f"- {f.name}: {f.message}"
            for f in findings(subject)
            if f.fix is None and f.origin == "ckpt"
        ]
        raise CheckpointMismatchError(
            f"the state dict does not fit {type(model).__name__} even after the safe repairs:\n"
            + "\n".join(lines)
        )
    fixed = repair.repaired(weights, diff, reference)
    for difference in diff.remaining:
        if difference.kind in ("head", "shape"):
            result.skipped_keys.extend(difference.keys)
            for key in difference.keys:
                fixed.pop(key, None)
    outcome = model.load_state_dict(fixed, strict=strict)
    result.missing_keys = list(outcome.missing_keys)
    result.unexpected_keys = list(outcome.unexpected_keys)
    if verbose:
        for line in result.repairs:
            print(f"torchdoctor: {line}", file=sys.stderr)
        if result.skipped_keys:
            print(
                f"torchdoctor: skipped {len(result.skipped_keys)} keys of other shapes",
                file=sys.stderr,
            )
    return result


__all__ = ["CheckpointMismatchError", "LoadResult", "load_state_dict"]
