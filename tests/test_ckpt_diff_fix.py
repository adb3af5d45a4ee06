"""`torchdoctor ckpt diff` and `fix`, and `torchdoctor.load_state_dict`, on real checkpoints."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest
from conftest import import_torch

torch = import_torch()
from torch import nn  # noqa: E402

import torchdoctor  # noqa: E402
from ckpt_builders import (  # noqa: E402
    Net,
    data_parallel_state,
    old_batchnorm_state,
    training_checkpoint,
    write_models,
)
from torchdoctor.ckpt.api import CheckpointMismatchError  # noqa: E402
from torchdoctor.cli import main  # noqa: E402


def ckpt(capsys, *args):
    code = main(["ckpt", *map(str, args), "--lang", "en"])
    out, err = capsys.readouterr()
    return code, out, err


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def models(tmp_path):
    return write_models(tmp_path)


def test_diff_against_model_classifies_prefix_nesting_and_counters(tmp_path, capsys, models):
    path = tmp_path / "ckpt.pth"
    checkpoint = training_checkpoint(Net())
    checkpoint["state_dict"] = {
        k: v for k, v in checkpoint["state_dict"].items() if not k.endswith("num_batches_tracked")
    }
    torch.save(checkpoint, path)
    code, out, _ = ckpt(capsys, "diff", path, "--model", f"{models}:build")
    assert code == 1
    assert "state-dict-prefix-mismatch" in out and "`module.`" in out
    assert 'checkpoint["state_dict"]' in out
    assert "state-dict-num-batches-tracked" in out
    assert "loads with strict=True" in out


def test_diff_head_of_another_size(tmp_path, capsys, models):
    path = tmp_path / "imagenet.pth"
    torch.save(Net(classes=10).state_dict(), path)
    code = main(["ckpt", "diff", str(path), "--model", f"{models}:build_five", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and not data["loads_after_repair"]
    head = [d for d in data["differences"] if d["kind"] == "head"]
    assert head and head[0]["checkpoint"] == 10 and head[0]["model"] == 5
    assert [f["name"] for f in data["findings"]] == ["state-dict-shape-mismatch"]


def test_diff_renamed_layer(tmp_path, capsys, models):
    path = tmp_path / "old.pth"
    torch.save(Net().state_dict(), path)
    code, out, _ = ckpt(capsys, "diff", path, "--model", f"{models}:Renamed")
    assert code == 1
    assert "layer `fc` of the checkpoint looks renamed to `classifier`" in out


def test_diff_two_files(tmp_path, capsys):
    a, b = tmp_path / "a.pth", tmp_path / "b.pth"
    torch.save(nn.DataParallel(torch.compile(Net())).state_dict(), a)
    torch.save({"model": Net().state_dict(), "epoch": 3}, b)
    code = main(["ckpt", "diff", str(a), str(b), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    kinds = {d["kind"]: d for d in data["differences"]}
    assert kinds["prefix"]["prefix"] == "module._orig_mod."
    assert data["loads_after_repair"] is True
    code, out, _ = ckpt(capsys, "diff", b, b)
    assert code == 0 and "Nothing to report." in out


def test_diff_same_checkpoint_in_other_dtype_is_a_note(tmp_path, capsys, models):
    path = tmp_path / "half.pth"
    torch.save(Net().half().state_dict(), path)
    code, out, _ = ckpt(capsys, "diff", path, "--model", f"{models}:build")
    assert code == 0
    assert "are float16 in the checkpoint and float32" in out


def test_fix_training_checkpoint_against_model(tmp_path, capsys, models):
    source = tmp_path / "checkpoint.pth.tar"
    torch.save(training_checkpoint(Net()), source)
    before = digest(source)
    out = tmp_path / "fixed" / "model.pth"
    code, text, err = ckpt(capsys, "fix", source, "-o", out, "--model", f"{models}:build")
    assert code == 0, err
    assert "stripped the prefix `module.` from 9 keys" in text
    assert "strict=True" in text
    state = torch.load(out, weights_only=True)
    Net().load_state_dict(state, strict=True)
    assert digest(source) == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["model.pth"]  # no temp file left


def test_fix_without_model_keeps_the_checkpoint_and_makes_metadata_plain(tmp_path, capsys):
    source = tmp_path / "checkpoint.pth"
    torch.save(training_checkpoint(Net()), source)
    out = tmp_path / "plain.pth"
    code, text, err = ckpt(capsys, "fix", source, "-o", out)
    assert code == 0, err
    fixed = torch.load(out, weights_only=True)  # no add_safe_globals needed any more
    assert fixed["epoch"] == 12 and type(fixed["epoch"]) is int
    assert fixed["args"] == {"lr": 0.1, "data": "/data", "seed": 1}
    assert fixed["history"] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert fixed["optimizer"]["param_groups"][0]["lr"] == 0.1
    Net().load_state_dict(fixed["state_dict"], strict=True)
    assert "turned metadata into plain values" in text
    code, text, _ = ckpt(capsys, "inspect", out)
    assert code == 0, text


def test_fix_adds_counters_to_old_batchnorm(tmp_path, capsys):
    source = tmp_path / "old.pth"
    torch.save(old_batchnorm_state(Net()), source)
    out = tmp_path / "new.pth"
    code, text, _ = ckpt(capsys, "fix", source, "-o", out)
    assert code == 0 and "added 1 `num_batches_tracked` counters" in text
    Net().load_state_dict(torch.load(out, weights_only=True), strict=True)


def test_fix_whole_module_needs_trust(tmp_path, capsys):
    source = tmp_path / "whole.pt"
    torch.save(Net(), source)  # class importable here: tests/ckpt_builders.py
    out = tmp_path / "weights.safetensors"
    code, _, err = ckpt(capsys, "fix", source, "-o", out)
    assert code == 2 and "--trust" in err and not out.exists()
    code, text, err = ckpt(
        capsys, "fix", source, "-o", out, "--trust", "--to-safetensors", "--dtype", "float16"
    )
    assert code == 0, err
    from torchdoctor.ckpt.repair import read_safetensors

    state = read_safetensors(str(out))
    assert state["fc.weight"].dtype == torch.float16
    assert state["bn.num_batches_tracked"].dtype == torch.int64
    Net().load_state_dict(state, strict=True)
    if __import__("importlib").util.find_spec("safetensors"):
        from safetensors.torch import load_file

        assert set(load_file(str(out))) == set(state)


def test_fix_refuses_when_the_model_still_does_not_fit(tmp_path, capsys, models):
    source = tmp_path / "ten.pth"
    torch.save(data_parallel_state(Net(classes=10)), source)
    out = tmp_path / "five.pth"
    code, text, _ = ckpt(capsys, "fix", source, "-o", out, "--model", f"{models}:build_five")
    assert code == 1
    assert "state-dict-shape-mismatch" in text and "Nothing written" in text
    assert not out.exists()


def test_fix_never_overwrites_its_input(tmp_path, capsys):
    source = tmp_path / "model.pth"
    torch.save(Net().state_dict(), source)
    before = digest(source)
    code, _, err = ckpt(capsys, "fix", source, "-o", source)
    assert code == 2 and "never modified" in err
    assert digest(source) == before


@pytest.mark.parametrize(
    "spec, words",
    [
        ("{models}:broken", "RuntimeError: no GPU here"),
        ("{tmp}/absent.py:build", "no such file"),
        ("{models}:nothing", "has no 'nothing'"),
        ("not_a_spec", "expected path/to/file.py:factory"),
    ],
)
def test_bad_model_spec_is_one_line(tmp_path, models, spec, words):
    path = tmp_path / "m.pth"
    torch.save(Net().state_dict(), path)
    spec = spec.format(models=models, tmp=tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "ckpt", "diff", str(path), "--model", spec],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert words in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_diff_and_fix_of_a_corrupted_file_are_unusable_input(tmp_path, capsys):
    path = tmp_path / "lfs.pth"
    path.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 99\n")
    code, _, err = ckpt(capsys, "fix", path, "-o", tmp_path / "out.pth")
    assert code == 2 and "Git LFS" in err
    code, _, err = ckpt(capsys, "diff", path, path)
    assert code == 2 and "git lfs pull" in err


def test_fix_moves_gpu_tensors_to_cpu(tmp_path, capsys):
    from test_ckpt_inspect import test_saved_on_gpu

    test_saved_on_gpu(tmp_path, capsys)
    out = tmp_path / "cpu.pth"
    code, text, err = ckpt(capsys, "fix", tmp_path / "gpu.pth", "-o", out)
    assert code == 0, err
    assert "moved 9 tensors from cuda:0 to the CPU" in text
    code, _, _ = ckpt(capsys, "inspect", out)
    assert code == 0


def test_load_state_dict_api_repairs_and_tells(tmp_path, capsys):
    path = tmp_path / "ckpt.pth"
    torch.save(training_checkpoint(Net()), path)
    model = Net()
    result = torchdoctor.load_state_dict(model, path)
    assert any("`module.`" in line for line in result.repairs)
    assert "stripped the prefix" in capsys.readouterr().err
    saved = torch.load(path, weights_only=False)["state_dict"]
    assert torch.equal(model.fc.weight, saved["module.fc.weight"])


def test_load_state_dict_api_raises_with_what_does_not_fit():
    source = Net(classes=10)
    model = Net(classes=5)
    before = model.fc.weight.clone()
    with pytest.raises(CheckpointMismatchError, match="state-dict-shape-mismatch"):
        torchdoctor.load_state_dict(model, {"model": source.state_dict()}, verbose=False)
    assert torch.equal(model.fc.weight, before)  # untouched
    result = torchdoctor.load_state_dict(model, source.state_dict(), strict=False, verbose=False)
    assert set(result.skipped_keys) == {"fc.weight", "fc.bias"}
    assert torch.equal(model.conv.weight, source.conv.weight)


def test_commands_that_need_torch_say_so_in_one_line(tmp_path):
    """A `torch` package that raises on import stands in for a machine without torch."""
    from conftest import run_cli

    path = tmp_path / "model.pth"
    torch.save(Net().state_dict(), path)
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('torch is not installed here')\n")
    env = {"PYTHONPATH": str(tmp_path / "fake")}
    fixed = run_cli("ckpt", "fix", str(path), "-o", str(tmp_path / "out.pth"), env=env)
    assert fixed.returncode == 2 and "needs PyTorch" in fixed.stderr
    assert len(fixed.stderr.strip().splitlines()) == 1
    inspected = run_cli("ckpt", "inspect", str(path), env=env)
    assert inspected.returncode == 0 and "conv.weight" in inspected.stdout


WRAPPED_PART_MODELS = """
from torch import nn


class AlexLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 8, 3))
        self.classifier = nn.Linear(8, 10)


def bare():
    return AlexLike()


def wrapped():
    return nn.DataParallel(AlexLike())
"""


@pytest.mark.parametrize("builder", ["bare", "wrapped"])
def test_fix_a_checkpoint_whose_features_alone_were_wrapped(tmp_path, capsys, builder):
    """pytorch/examples' ImageNet script wraps only `model.features` of AlexNet and VGG."""
    (tmp_path / "alexlike.py").write_text(WRAPPED_PART_MODELS)
    namespace: dict = {}
    exec(WRAPPED_PART_MODELS, namespace)
    trained = namespace["AlexLike"]()
    trained.features = nn.DataParallel(trained.features)
    source = tmp_path / "alexnet.pth"
    torch.save(trained.state_dict(), source)
    spec = f"{tmp_path / 'alexlike.py'}:{builder}"
    code, out, _ = ckpt(capsys, "diff", source, "--model", spec)
    assert code == 1
    assert "state-dict-prefix-mismatch" in out and "`features.module.0.weight`" in out
    fixed = tmp_path / "fixed.pth"
    code, text, err = ckpt(capsys, "fix", source, "-o", fixed, "--model", spec)
    assert code == 0, err
    count = 4 if builder == "bare" else 6  # the classifier's keys gain `module.` too
    assert f"moved `module.` to where the model has it in {count} keys" in text
    model = namespace[builder]()
    model.load_state_dict(torch.load(fixed, weights_only=True), strict=True)
    weights = dict(model.named_parameters())
    key = "features.0.weight" if builder == "bare" else "module.features.0.weight"
    assert torch.equal(weights[key], trained.features.module[0].weight)
