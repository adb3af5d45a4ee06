"""The Python API: `torchdoctor.check/explain/watch/load_state_dict` are plain functions with
their real signatures, the error classes are exported, and `import torchdoctor`, `check` and
`explain` never import torch."""

from __future__ import annotations

import inspect
import subprocess
import sys
import types

import pytest
from conftest import import_torch

import torchdoctor

BAD = "import torch\nx = torch.randn(3)\nx.cuda()\n"


def test_public_names_are_plain_functions_and_classes():
    for name in ("check", "explain", "watch", "install", "load_state_dict"):
        assert isinstance(getattr(torchdoctor, name), types.FunctionType), name
    assert issubclass(torchdoctor.CheckpointMismatchError, RuntimeError)
    assert issubclass(torchdoctor.IncompleteCheck, Exception)
    assert set(torchdoctor.__all__) <= set(dir(torchdoctor))
    for package in ("torchdoctor.explain", "torchdoctor.watch"):  # no callable-module trick
        assert type(sys.modules[package]) is types.ModuleType, package


def test_signatures_are_the_real_ones():
    from torchdoctor.explain.api import explain
    from torchdoctor.watch.watcher import watch

    def parameters(function):
        return [
            (p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()
        ]

    assert parameters(torchdoctor.explain) == parameters(explain)
    assert parameters(torchdoctor.watch) == parameters(watch)
    parameters = inspect.signature(torchdoctor.load_state_dict).parameters
    assert list(parameters) == ["model", "path_or_dict", "strict", "trust", "verbose", "lang"]
    assert all(
        p.kind is p.KEYWORD_ONLY
        for name, p in parameters.items()
        if name not in ("model", "path_or_dict")
    )


def test_engine_modules_still_import_by_name():
    from torchdoctor.explain import parse
    from torchdoctor.watch import monitor

    assert parse.parse_text and monitor.Monitor
    assert callable(torchdoctor.explain) and callable(torchdoctor.watch)


def test_check_a_source_text(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = torchdoctor.check(source=BAD, filename="train.py")
    assert [(f.code, f.path, f.line) for f in found] == [("TD001", "train.py", 3)]
    assert torchdoctor.check(source=BAD, filename="train.py", ignore="TD001") == []
    assert torchdoctor.check(source="x = 1\n", select="ALL") == []


def test_check_leaves_the_garbage_collector_as_it_found_it():
    """The collector is paused while a file is checked (its tree holds no cycles) and resumed
    after, also when the check fails; a program that turned it off keeps it off."""
    import gc

    source = "import torch\nx = torch.randn(3)\nx.cuda()\n"
    assert gc.isenabled()
    assert [f.code for f in torchdoctor.check(source=source)] == ["TD001"]
    assert gc.isenabled()
    gc.disable()
    try:
        torchdoctor.check(source=source)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_check_paths_as_the_command_does_and_writes_nothing(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(BAD)
    (tmp_path / "ok.py").write_text("print(1)\n")
    (tmp_path / "pyproject.toml").write_text('[tool.torchdoctor]\nexclude = ["skipped"]\n')
    (tmp_path / "skipped").mkdir()
    (tmp_path / "skipped" / "bad.py").write_text(BAD)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    monkeypatch.chdir(tmp_path)
    found = torchdoctor.check(".", tmp_path / "ok.py")
    assert [(f.code, f.path, f.line) for f in found] == [("TD001", "pkg/train.py", 3)]
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_check_a_missing_path_still_checks_the_rest(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(BAD)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(torchdoctor.IncompleteCheck, match="missing.py") as raised:
        torchdoctor.check("missing.py", "train.py")
    assert [f.code for f in raised.value.findings] == ["TD001"]


def test_check_needs_paths_or_source_but_not_both():
    with pytest.raises(TypeError):
        torchdoctor.check()
    with pytest.raises(TypeError):
        torchdoctor.check("a.py", source="x = 1\n")


PROBE = """
import sys
import torchdoctor
assert "torch" not in sys.modules, "import torchdoctor imported torch"
print([f.code for f in torchdoctor.check(source=sys.argv[1])])
print(torchdoctor.explain("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB")
      ["findings"][0]["name"])
assert "torch" not in sys.modules, "check or explain imported torch"
"""


def test_import_check_and_explain_do_not_import_torch(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", PROBE, BAD], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["['TD001']", "cuda-out-of-memory"]


def test_load_state_dict_raises_the_exported_error():
    torch = import_torch()
    model = torch.nn.Linear(2, 2)
    with pytest.raises(torchdoctor.CheckpointMismatchError, match="does not fit Linear"):
        torchdoctor.load_state_dict(model, {"other.weight": torch.zeros(2, 2)}, verbose=False)
    weights = {f"module.{k}": v for k, v in torch.nn.Linear(2, 2).state_dict().items()}
    result = torchdoctor.load_state_dict(model, weights, verbose=False)
    assert isinstance(result, torchdoctor.LoadResult)
    assert result.repairs and result.missing_keys == [] and result.unexpected_keys == []
