"""`torchdoctor ckpt inspect`: what a checkpoint is and holds, read without running it."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile

import pytest
from conftest import run_cli, import_torch

torch = import_torch()
from torch import nn  # noqa: E402

from ckpt_builders import (  # noqa: E402
    Net,
    data_parallel_state,
    malicious_checkpoint,
    old_batchnorm_state,
    plain_pickle,
    safetensors_bytes,
    training_checkpoint,
)
from torchdoctor.cli import main  # noqa: E402


def inspect(capsys, *args):
    code = main(["ckpt", "inspect", *map(str, args), "--lang", "en"])
    out, err = capsys.readouterr()
    return code, out, err


def inspect_json(capsys, path):
    code = main(["ckpt", "inspect", str(path), "--format", "json"])
    out, _ = capsys.readouterr()
    return code, json.loads(out)


def codes(data: dict) -> list[str]:
    return [f["name"] for f in data["findings"]]


def test_bare_state_dict_is_clean(tmp_path, capsys):
    path = tmp_path / "net.pth"
    torch.save(Net().state_dict(), path)
    code, out, _ = inspect(capsys, path)
    assert code == 0
    assert "a bare state_dict" in out and "weights_only=True: accepted" in out
    assert "conv.weight" in out and "[8, 3, 3, 3]" in out
    assert "BatchNorm: 1 layers, num_batches_tracked present" in out
    assert "Nothing to report." in out


def test_data_parallel_prefix(tmp_path, capsys):
    path = tmp_path / "dp.pth"
    torch.save(data_parallel_state(Net()), path)
    code, data = inspect_json(capsys, path)
    assert code == 1
    assert data["weights"]["prefix"] == "module."
    assert codes(data) == ["state-dict-prefix-mismatch"]
    assert "DataParallel" in data["findings"][0]["message"]
    assert data["findings"][0]["origin"] == "ckpt"


def test_compiled_model_inside_ddp_prefix(tmp_path, capsys):
    # DDP's keys are DataParallel's: `module.` in front of torch.compile's `_orig_mod.`.
    compiled = torch.compile(Net())
    path = tmp_path / "compiled.pth"
    torch.save(nn.DataParallel(compiled).state_dict(), path)
    code, out, _ = inspect(capsys, path)
    assert code == 1
    assert "key prefix: module._orig_mod." in out
    assert "torch.compile" in out


def test_training_checkpoint(tmp_path, capsys):
    path = tmp_path / "checkpoint.pth.tar"
    torch.save(training_checkpoint(Net()), path)
    code, data = inspect_json(capsys, path)
    assert code == 1
    assert data["weights"]["where"] == ["state_dict"]
    assert data["weights"]["count"] == len(Net().state_dict())
    entries = {e["name"]: e["description"] for e in data["entries"]}
    assert entries["optimizer"].startswith("dict of 2 entries")
    assert entries["args"] == "object argparse.Namespace"
    assert not data["weights_only"]["accepted"]
    assert "argparse.Namespace" in data["weights_only"]["needs"]
    assert any(g.endswith("multiarray.scalar") for g in data["weights_only"]["needs"])
    assert set(codes(data)) == {"load-weights-only", "state-dict-prefix-mismatch"}


def test_batchnorm_counters_removed_from_a_real_state_dict(tmp_path, capsys):
    path = tmp_path / "old.pth"
    torch.save(old_batchnorm_state(Net()), path)
    code, data = inspect_json(capsys, path)
    assert code == 1 and codes(data) == ["state-dict-num-batches-tracked"]
    assert data["weights"]["batchnorm"]["missing_num_batches_tracked"] == ["bn"]
    assert data["weights"]["batchnorm"]["strict_load_fails"] is True


def test_batchnorm_counters_missing_from_a_plain_dict_load_fine(tmp_path, capsys):
    # Without version metadata load_state_dict fills the counters in: nothing to report.
    path = tmp_path / "plain.pth"
    torch.save(dict(old_batchnorm_state(Net())), path)
    code, out, _ = inspect(capsys, path)
    assert code == 0
    assert "num_batches_tracked missing in 1 (load_state_dict fills them in: yes)" in out
    model = Net()
    model.load_state_dict(torch.load(path))  # the claim holds


def test_whole_pickled_module(tmp_path, capsys):
    source = tmp_path / "mymodels.py"
    source.write_text(
        "from torch import nn\n\nclass Tiny(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.body = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))\n"
    )
    script = (
        "import sys, torch; sys.path.insert(0, sys.argv[1]); import mymodels; "
        "torch.save(mymodels.Tiny(), sys.argv[2])"
    )
    path = tmp_path / "whole.pt"
    subprocess.run([sys.executable, "-c", script, str(tmp_path), str(path)], check=True)
    code, data = inspect_json(capsys, path)
    assert code == 1
    assert data["weights"]["module_class"] == "mymodels.Tiny"
    assert [k["key"] for k in data["weights"]["keys"]] == [
        "body.0.weight",
        "body.0.bias",
        "body.1.weight",
        "body.1.bias",
        "body.1.running_mean",
        "body.1.running_var",
        "body.1.num_batches_tracked",
    ]
    assert codes(data) == ["whole-module-saved"]
    assert "--trust" in data["findings"][0]["fix"]["title"]


def test_safetensors(tmp_path, capsys):
    path = tmp_path / "model.safetensors"
    path.write_bytes(safetensors_bytes(Net().state_dict()))
    code, data = inspect_json(capsys, path)
    assert code == 0 and data["format"] == "safetensors"
    keys = {k["key"]: k for k in data["weights"]["keys"]}
    assert keys["fc.weight"]["shape"] == [10, 8] and keys["fc.weight"]["dtype"] == "float32"


def test_legacy_format_and_its_truncation(tmp_path, capsys):
    path = tmp_path / "legacy.pth"
    torch.save(Net().state_dict(), path, _use_new_zipfile_serialization=False)
    code, data = inspect_json(capsys, path)
    assert code == 0 and data["format"] == "legacy" and data["weights"]["count"] == 9
    cut = tmp_path / "legacy_cut.pth"
    cut.write_bytes(path.read_bytes()[:-100])
    code, data = inspect_json(capsys, cut)
    assert code == 1 and data["problem"]["kind"] == "truncated"


def test_saved_on_gpu(tmp_path, capsys):
    """A file saved from CUDA, made on a CPU machine by renaming the storages' location."""
    path = tmp_path / "gpu.pth"
    torch.save(Net().state_dict(), path)
    with zipfile.ZipFile(path) as archive:
        records = {n: archive.read(n) for n in archive.namelist()}
    name = next(n for n in records if n.endswith("data.pkl"))
    records[name] = records[name].replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
    with zipfile.ZipFile(path, "w") as archive:
        for record, data in records.items():
            archive.writestr(record, data)
    code, data = inspect_json(capsys, path)
    assert code == 1 and data["weights"]["devices"] == {"cuda:0": 9}
    assert codes(data) == ["load-without-map-location"]


@pytest.mark.parametrize(
    "content, kind, words",
    [
        (
            b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 102502400\n",
            "lfs-pointer",
            ["Git LFS", "102502400 bytes"],
        ),
        (
            b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head></html>\n",
            "html",
            ["HTML page"],
        ),
        (b"", "empty", ["empty (0 bytes)"]),
        (b"\x00" * 4096, "zeros", ["zero bytes"]),
    ],
)
def test_not_a_checkpoint(tmp_path, capsys, content, kind, words):
    path = tmp_path / "model.pth"
    path.write_bytes(content)
    code, out, err = inspect(capsys, path)
    assert code == 1, err
    assert "TD509 corrupted-checkpoint" in out
    for word in words:
        assert word in out
    code, data = inspect_json(capsys, path)
    assert data["problem"]["kind"] == kind


def test_truncated_zip(tmp_path, capsys):
    path = tmp_path / "cut.pth"
    torch.save(Net().state_dict(), path)
    path.write_bytes(path.read_bytes()[:2000])
    code, out, _ = inspect(capsys, path)
    assert code == 1 and "cut short" in out and "Traceback" not in out


def test_plain_pickle_of_numpy(tmp_path, capsys):
    import numpy as np

    path = tmp_path / "features.pkl"
    plain_pickle(path, {"mean": np.zeros(3)})
    code, data = inspect_json(capsys, path)
    assert data["format"] == "pickle" and data["weights"] is None
    assert code == 1 and codes(data) == ["load-weights-only"]


def test_missing_file_is_unusable_input(tmp_path):
    result = run_cli("ckpt", "inspect", str(tmp_path / "nope.pth"))
    assert result.returncode == 2
    assert result.stderr.startswith("torchdoctor: error:") and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_malicious_pickle_is_reported_and_never_run(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pth"
    malicious_checkpoint(path, marker)
    inspected = run_cli("ckpt", "inspect", str(path))
    assert inspected.returncode == 1
    assert "DANGER" in inspected.stdout and ".system`" in inspected.stdout
    fixed = run_cli("ckpt", "fix", str(path), "-o", str(tmp_path / "out.pth"), "--trust")
    assert fixed.returncode == 2 and "never loads" in fixed.stderr
    diffed = run_cli("ckpt", "diff", str(path), str(path))
    assert diffed.returncode in (0, 1)
    assert not marker.exists()
    assert not (tmp_path / "out.pth").exists()


def test_inspect_does_not_import_torch_and_prints_on_gbk(tmp_path):
    path = tmp_path / "ckpt.pth"
    torch.save(training_checkpoint(Net()), path)
    probe = (
        "import sys; from torchdoctor.cli import main; code = main(sys.argv[1:]); "
        "assert 'torch' not in sys.modules, 'torch imported'; print('exit', code)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, "ckpt", "inspect", str(path), "--lang", "zh"],
        capture_output=True,
        env={"PYTHONIOENCODING": "gbk", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr.decode("gbk", "replace")
    out = result.stdout.decode("gbk")
    assert out.strip().endswith("exit 1")
    assert "训练 checkpoint" in out


def test_reader_never_reads_tensor_data():
    """A file whose data records are absent still lists: only data.pkl is read."""
    from torchdoctor.ckpt import reader

    buffer = io.BytesIO()
    torch.save({"w": torch.zeros(1000, 1000)}, buffer)
    buffer.seek(0)
    with zipfile.ZipFile(buffer) as archive:
        pickled = archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl")))
    unpickler = reader.SafeUnpickler(io.BytesIO(pickled), {})
    assert unpickler.load_safely() == {"w": reader.TensorInfo((1000, 1000), "float32", "cpu", "0")}
