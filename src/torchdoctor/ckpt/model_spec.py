"""Builds the user's model from `path/to/file.py:factory` or `package.module:factory`.

This is the only place `torchdoctor ckpt` runs user code, and only for `--model`."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

from torchdoctor.errors import UsageError


def build_model(spec: str):
    """The nn.Module that `factory()` returns; UsageError with one line for anything wrong."""
    import torch

    source, _, factory = spec.rpartition(":")
    if not source or not factory:
        raise UsageError(
            f"--model {spec!r}: expected path/to/file.py:factory or package.module:factory"
        )
    try:
        module = _import(source)
    except UsageError:
        raise
    except BaseException as error:  # the user's module failed: say so, no traceback
        raise UsageError(
            f"--model {spec}: importing {source} failed: {type(error).__name__}: {error}"
        ) from None
    target = module
    for part in factory.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise UsageError(f"--model {spec}: {source} has no {factory!r}")
    if not callable(target):
        raise UsageError(
            f"--model {spec}: {factory} is not callable (a "
            f"{type(target).__name__}), not a factory or class"
        )
    try:
        model = target if isinstance(target, torch.nn.Module) else target()
    except BaseException as error:
        raise UsageError(
            f"--model {spec}: {factory}() failed: {type(error).__name__}: {error}"
        ) from None
    if not isinstance(model, torch.nn.Module):
        raise UsageError(
            f"--model {spec}: {factory}() returned {type(model).__name__}, not an nn.Module"
        )
    return model


def _import(source: str):
    if source.endswith(".py") or "/" in source or "\\" in source:
        path = Path(source).resolve()
        if not path.exists():
            raise UsageError(f"--model: no such file {source}")
        if not path.is_file():  # a directory, a FIFO (reading one would wait forever)
            raise UsageError(f"--model: {source} is not a regular file")
        # Its own directory first, as when the user runs the file: it imports its neighbours.
        sys.path.insert(0, str(path.parent))
        name = f"_torchdoctor_model_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    if os.getcwd() not in sys.path:
        # `python -m torchdoctor` drops the current directory; last, so it shadows nothing.
        sys.path.append(os.getcwd())
    return importlib.import_module(source)
