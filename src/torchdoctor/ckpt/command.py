"""`torchdoctor ckpt inspect|diff|fix`: exit 0 fine, 1 findings, 2 unusable input."""

from __future__ import annotations

import json
import os
import stat
import sys
from contextlib import contextmanager
from pathlib import Path

from torchdoctor.ckpt import reader
from torchdoctor.ckpt.findings import Subject, findings, problem_message
from torchdoctor.ckpt.inspect import Listing, listing
from torchdoctor.ckpt.repair_text import access, repair_lines
from torchdoctor.errors import UsageError
from torchdoctor.knowledge.state_dicts import wrapper_name
from torchdoctor.report import json_output, strings
from torchdoctor.report.render import printable

KEYS_SHOWN = 10


def run_ckpt(args, lang: str) -> int:
    labels = strings.labels("ckpt", lang)
    if args.ckpt_command == "inspect":
        return _inspect(args, lang, labels)
    if args.ckpt_command == "diff":
        return _diff(args, lang, labels)
    return _fix(args, lang, labels)


def _read(path: str) -> reader.Checkpoint:
    """The checkpoint; OSError becomes a usage error (exit 2)."""
    try:
        return reader.read(path)
    except OSError as error:
        raise UsageError(f"{path}: {error.strerror or error}") from None


def _unusable(path: str, problem: reader.Unreadable, lang: str) -> UsageError:
    """One line saying what the file is, for commands that cannot go on without it."""
    message = problem_message(Subject(path, lang, problem=problem))
    return UsageError(printable(f"{path}: {message}"))


# inspect ----------------------------------------------------------------------------------


def _inspect(args, lang: str, labels: dict) -> int:
    subject = Subject(args.file, lang)
    try:
        subject.listing = listing(_read(args.file))
    except reader.Unreadable as problem:
        subject.problem = problem
    found = findings(subject)
    if args.format == "json":
        print(
            json_output.dumps(json_output.envelope("ckpt inspect", _inspect_json(subject, found)))
        )
    else:
        lines = [] if subject.listing is None else _inspect_text(subject.listing, labels, args.keys)
        lines += _findings_text(found, labels)
        _write(lines)
    return 1 if found else 0


def _inspect_text(result: Listing, labels: dict, all_keys: bool) -> list[str]:
    checkpoint = result.checkpoint
    lines = [f"{checkpoint.path}: {labels[checkpoint.format]}, {_size(checkpoint.size)}"]
    weights = result.weights
    if weights is None:
        structure = labels["none"]
    elif weights.module_class:
        structure = labels["module"].format(cls=weights.module_class)
    elif weights.where:
        structure = labels["nested"].format(where=access(weights.where))
    else:
        structure = labels["bare"]
    lines.append(f"{labels['structure']}: {structure}")
    width = max((len(name) for name, _ in result.entries), default=0)
    lines += [f"  {name:{width}}  {description}" for name, description in result.entries]
    if checkpoint.metadata:
        lines.append(f"  __metadata__  {json.dumps(checkpoint.metadata)[:100]}")
    if result.tensors:
        lines.append(
            f"{labels['tensors']}: {len(result.tensors)}, "
            f"{result.parameters:,} {labels['params']}, {_size(result.nbytes)}"
        )
        lines.append(f"{labels['dtypes']}: {_counts(result.dtypes)}")
        lines.append(f"{labels['devices']}: {_counts(result.devices)}")
        prefix = result.prefix or "-"
        if result.prefix:
            prefix += f" ({wrapper_name(result.prefix)})"
        lines.append(f"{labels['prefix']}: {prefix}")
        if result.batchnorm_layers:
            n, m = len(result.batchnorm_layers), len(result.missing_counters)
            text = (
                labels["counters_missing"].format(
                    n=n, m=m, fills=labels["no" if result.counters_required else "yes"]
                )
                if m
                else labels["counters_ok"].format(n=n)
            )
            lines.append(f"{labels['batchnorm']}: {text}")
    if checkpoint.format != "safetensors":
        needs = ", ".join(f"{name} ({labels[group]})" for name, group in result.groups.items())
        verdict = labels["refused"].format(names=needs) if needs else labels["accepted"]
        lines.append(f"{labels['weights_only']}: {verdict}")
    if result.tensors:
        keys = list(result.tensors.items())
        shown = keys if all_keys else keys[:KEYS_SHOWN]
        lines.append(f"{labels['keys']}:")
        width = min(60, max(len(k) for k, _ in shown))
        lines += [
            f"  {k:{width}}  {t.dtype:9} {list(t.shape)}"
            + (f"  {t.device}" if t.device != "cpu" else "")
            for k, t in shown
        ]
        if len(shown) < len(keys):
            lines.append("  " + labels["more"].format(n=len(keys) - len(shown)))
    return lines


def _inspect_json(subject: Subject, found) -> dict:
    data: dict = {"path": subject.path, "format": None, "problem": None}
    if subject.problem is not None:
        data["problem"] = {"kind": subject.problem.kind, "detail": subject.problem.detail}
    result = subject.listing
    if result is not None:
        checkpoint = result.checkpoint
        weights = result.weights
        data.update(
            {
                "format": checkpoint.format,
                "size": checkpoint.size,
                "entries": [{"name": n, "description": d} for n, d in result.entries],
                "weights": None
                if weights is None
                else {
                    "where": list(weights.where),
                    "module_class": weights.module_class,
                    "count": len(result.tensors),
                    "parameters": result.parameters,
                    "bytes": result.nbytes,
                    "dtypes": dict(result.dtypes),
                    "devices": dict(result.devices),
                    "prefix": result.prefix,
                    "batchnorm": {
                        "layers": len(result.batchnorm_layers),
                        "missing_num_batches_tracked": result.missing_counters,
                        "strict_load_fails": result.counters_required,
                    },
                    "keys": [
                        {"key": k, "shape": list(t.shape), "dtype": t.dtype, "device": t.device}
                        for k, t in result.tensors.items()
                    ],
                },
                "globals": list(checkpoint.globals),
                "weights_only": {
                    "accepted": not checkpoint.refused_globals,
                    "needs": checkpoint.refused_globals,
                    "groups": result.groups,
                },
                "metadata": checkpoint.metadata,
            }
        )
    data["findings"] = json_output.findings_json(found)
    return data


# diff -------------------------------------------------------------------------------------


def _diff(args, lang: str, labels: dict) -> int:
    from torchdoctor.ckpt.diff import compare

    if (args.other is None) == (args.model is None):
        raise UsageError("ckpt diff: give either a second FILE or --model SPEC")
    first = _listing_or_fail(args.file, lang)
    if args.model is not None:
        model = _build(args.model)
        from torchdoctor.ckpt.diff import reference_of_model

        reference = reference_of_model(model.state_dict())
        where = first.weights.where
        name = strings.in_every_language("ckpt.the_model")
        other_label = f"--model {args.model}"
        spec = args.model
    else:
        second = _listing_or_fail(args.other, lang)
        reference = second.tensors
        where = first.weights.where
        name = strings.in_every_language("ckpt.other_file", path=args.other)
        other_label = args.other
        spec = args.other
        if second.weights.where == first.weights.where:
            where = ()  # both nested alike: not a difference between them
    result = compare(first.tensors, reference, where)
    subject = Subject(args.file, lang, listing=first, diff=result, model=spec, reference=name)
    found = [f for f in findings(subject) if f.origin == "ckpt"]
    if args.format == "json":
        print(
            json_output.dumps(
                json_output.envelope(
                    "ckpt diff",
                    {
                        "checkpoint": args.file,
                        "reference": other_label,
                        "matched": result.matched,
                        "differences": [d.to_json() for d in result.differences],
                        "loads_after_repair": not result.remaining,
                        "findings": json_output.findings_json(found),
                    },
                )
            )
        )
    else:
        lines = [labels["vs"].format(a=args.file, b=other_label, n=result.matched)]
        lines += _findings_text(found, labels, summary=False)
        for difference in result.differences:
            if difference.kind == "dtype":
                lines.append(
                    labels["dtype_note"].format(
                        n=len(difference.keys),
                        a=difference.fields["checkpoint"],
                        b=difference.fields["model"],
                    )
                )
        repairable = [d.kind for d in result.blocking if d.repairable]
        if result.remaining:
            kinds = ", ".join(dict.fromkeys(d.kind for d in result.remaining))
            lines.append(labels["still"].format(kinds=kinds))
        elif repairable:
            lines.append(labels["after"].format(kinds=", ".join(dict.fromkeys(repairable))))
        if not found:
            lines.append(labels["clean"])
        _write(lines)
    return 1 if found else 0


def _listing_or_fail(path: str, lang: str) -> Listing:
    try:
        result = listing(_read(path))
    except reader.Unreadable as problem:
        raise _unusable(path, problem, lang) from None
    if result.weights is None:
        raise UsageError(f"{path}: no state dict (a dict of tensors) found in the file")
    return result


def _build(spec: str):
    _need_torch("--model")
    from torchdoctor.ckpt.model_spec import build_model

    return build_model(spec)


def _need_torch(what: str) -> None:
    import importlib.util

    try:
        found = importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise UsageError(f"{what} needs PyTorch, which is not installed here (pip install torch)")
    try:
        import torch  # noqa: F401
    except Exception as error:
        raise UsageError(
            f"{what} needs PyTorch, which fails to import: {type(error).__name__}: {error}"
        ) from None


# fix --------------------------------------------------------------------------------------


def _fix(args, lang: str, labels: dict) -> int:
    out = Path(args.output)
    checkpoint = _checkpoint_or_fail(args.file, lang)
    try:
        checked = listing(checkpoint)  # what the reader will not list, nothing may load
    except reader.Unreadable as problem:
        raise _unusable(args.file, problem, lang) from None
    _check_output(Path(args.file), out, args.output, args.force)
    code = [name for name, group in checked.groups.items() if group == "code"]
    if code:
        raise _dangerous(args.file, code)
    _need_torch("ckpt fix")
    from torchdoctor.ckpt import repair

    model = _build(args.model) if args.model else None
    try:
        with _script_imports():
            loaded, result, reference = repair.plan(args.file, checkpoint, model, args.trust)
    except repair.Dangerous as error:
        raise _dangerous(args.file, error.names) from None
    except repair.NeedsTrust as error:
        raise UsageError(
            f"{args.file}: rebuilding it needs {', '.join(error.names)}, which only a full "
            "unpickle can create: that runs code from the file. If you trust the file, add "
            "--trust"
        ) from None
    except ModuleNotFoundError as error:  # a pickled class's module, with --trust
        raise UsageError(
            f"{args.file}: its pickled classes need the module `{error.name}`, which cannot be "
            "imported here: run this from the directory your training script ran in (the "
            "current directory is searched first, as `python script.py` does), or add the "
            "module's directory to PYTHONPATH"
        ) from None
    except ValueError as error:
        raise UsageError(f"{args.file}: {error}") from None
    except Exception as error:  # torch.load refused what the reader could list
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise UsageError(
            f"{args.file}: torch.load failed: {type(error).__name__}: {first[:200]}"
        ) from None
    if model is not None and result.remaining:
        subject = Subject(
            args.file, lang, listing=listing(checkpoint), diff=result, model=args.model
        )
        left = _about(findings(subject), result.remaining)
        kinds = ", ".join(dict.fromkeys(d.kind for d in result.remaining))
        _write(
            _findings_text(left, labels, summary=False)
            + [labels["still"].format(kinds=kinds), labels["not_written"].format(out=args.output)]
        )
        return 1
    weights = repair.repaired(loaded.weights, result, reference if model else None, args.dtype)
    unwrap = model is not None or args.to_safetensors

    def write(temp: str) -> None:
        if args.to_safetensors:
            repair.save_safetensors(weights, temp)
            reloaded = repair.read_safetensors(temp)
        else:
            import torch

            root = (
                weights
                if unwrap
                else repair.with_weights(loaded.root, loaded.weights.where, weights)
            )
            torch.save(root, temp)
            reloaded = torch.load(temp, map_location="cpu", weights_only=True)
            if not unwrap:
                reloaded = _at(reloaded, loaded.weights.where)
        if model is not None:
            model.load_state_dict(reloaded, strict=True)

    try:
        repair.write_atomically(out, write, replace=args.force)
    except repair.OutputExists:
        raise UsageError(f"{args.output}: exists; pass --force to overwrite it") from None
    except OSError as error:
        where = f"{error.filename}: " if error.filename and error.filename != args.output else ""
        raise UsageError(
            f"{args.output}: cannot write it: {where}{error.strerror or error}"
        ) from None
    lines = [labels["repairs"] + ":"]
    repairs = _repair_lines(result, loaded, checkpoint, args, lang)
    lines += [f"  - {line}" for line in repairs] or [f"  {labels['none_needed']}"]
    lines.append(
        labels["wrote"].format(out=args.output, n=len(weights), size=_size(os.path.getsize(out)))
    )
    if model is not None:
        lines.append(labels["proved"])
    else:
        lines.append(labels["reloaded_st" if args.to_safetensors else "reloaded"])
    _write(lines)
    return 0


def _dangerous(path: str, names: list[str]) -> UsageError:
    return UsageError(
        printable(
            f"{path}: the pickle holds code to run while loading ({', '.join(names)}): torchdoctor "
            "never loads such a file, not even with --trust"
        )
    )


def _check_output(source: Path, out: Path, name: str, force: bool) -> None:
    """The output is a new file (or one to overwrite with --force), never the input."""
    if out.is_dir():
        raise UsageError(f"{name}: is a directory")
    if not os.path.lexists(out):
        return
    if out.exists() and os.path.samefile(out, source):
        raise UsageError(f"{name}: the output must be a new file; the input is never modified")
    if not force:
        raise UsageError(f"{name}: exists; pass --force to overwrite it")
    if not stat.S_ISREG(os.lstat(out).st_mode):  # a link, a device: replacing it is no overwrite
        raise UsageError(f"{name}: not a regular file; --force replaces only regular files")


@contextmanager
def _script_imports():
    """Classes a pickle names resolve as in the user's own script: `python train.py` run from
    this directory puts it first on sys.path (the `torchdoctor` launcher does not)."""
    directory = os.getcwd()
    sys.path.insert(0, directory)
    try:
        yield
    finally:
        sys.path.remove(directory)


def _checkpoint_or_fail(path: str, lang: str) -> reader.Checkpoint:
    try:
        return _read(path)
    except reader.Unreadable as problem:
        raise _unusable(path, problem, lang) from None


def _at(root, where):
    for part in where:
        root = root[part]
    return root


def _repair_lines(result, loaded, checkpoint, args, lang) -> list[str]:
    unwrap = bool(args.model) or args.to_safetensors
    lines = repair_lines(result, loaded.weights.where, unwrap, lang)
    result_listing = listing(checkpoint)
    devices = {d: n for d, n in result_listing.devices.items() if d not in ("cpu", "meta")}
    if devices:
        count, names = sum(devices.values()), ", ".join(sorted(devices))
        lines.append(strings.text("ckpt.repair-cpu", lang, count=count, devices=names))
    if args.dtype:
        lines.append(strings.text("ckpt.repair-dtype", lang, dtype=args.dtype))
    if loaded.converted and not unwrap:
        what = ", ".join(dict.fromkeys(loaded.converted))
        lines.append(strings.text("ckpt.repair-plain", lang, what=what))
    if args.to_safetensors:
        lines.append(strings.text("ckpt.repair-safetensors", lang))
    return lines


# text helpers -----------------------------------------------------------------------------


def _about(found, differences) -> list:
    """The findings that name the keys of one of `differences` and offer no repair."""
    keys = {d.keys for d in differences if d.keys}
    return [f for f in found if f.fix is None and tuple(f.extra.get("keys", ())) in keys]


def _write(lines: list[str]) -> None:
    """Text output: what comes from the file (keys, names) shown escaped where a terminal
    would act on it."""
    sys.stdout.write("".join(printable(line) + "\n" for line in lines))


def _findings_text(found, labels: dict, summary: bool = True) -> list[str]:
    lines = []
    for finding in found:
        lines.append(f"{finding.code} {finding.name}: {finding.message}")
        help_text = finding.fix.title if finding.fix else labels["see"].format(name=finding.name)
        lines.append(f"  help: {help_text}")
    if summary:
        lines.append(labels["found"].format(n=len(found)) if found else labels["clean"])
    return lines


def _counts(counter) -> str:
    return ", ".join(f"{name} ({count})" for name, count in counter.most_common())


def _size(nbytes: int) -> str:
    value = float(nbytes)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{nbytes} B"
