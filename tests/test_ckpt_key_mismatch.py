"""Checkpoints whose keys are not the model's (state-dict-key-mismatch, TD508), through
`torchdoctor ckpt diff` and `fix` and `torchdoctor.load_state_dict`, as a user runs them."""

from __future__ import annotations

import json

import pytest
from conftest import import_torch

torch = import_torch()

import torchdoctor  # noqa: E402
from ckpt_builders import Net, write_models  # noqa: E402
from torchdoctor.ckpt.api import CheckpointMismatchError  # noqa: E402
from torchdoctor.cli import main  # noqa: E402

MISSING_HEAD = (
    "2 keys of the model are not in the checkpoint: `fc.*` (2); with `strict=False` these "
    "weights would silently keep their initial values"
)


@pytest.fixture
def backbone_only(tmp_path):
    """A checkpoint saved from the backbone alone: the head `fc` was dropped before saving."""
    path = tmp_path / "backbone.pth"
    torch.save({k: v for k, v in Net().state_dict().items() if not k.startswith("fc.")}, path)
    return path


def test_diff_names_the_keys_the_checkpoint_lacks(tmp_path, capsys, backbone_only):
    models = write_models(tmp_path)
    before = backbone_only.read_bytes()
    code = main(["ckpt", "diff", str(backbone_only), "--model", f"{models}:build", "--lang", "en"])
    out = capsys.readouterr().out
    assert code == 1
    assert "TD508 state-dict-key-mismatch" in out and MISSING_HEAD in out
    assert "Still does not fit after the safe repairs: missing." in out
    code = main(
        ["ckpt", "diff", str(backbone_only), "--model", f"{models}:build", "--format", "json"]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and not data["loads_after_repair"]
    [finding] = data["findings"]
    assert (finding["name"], finding["code"], finding["origin"]) == (
        "state-dict-key-mismatch",
        "TD508",
        "ckpt",
    )
    assert finding["keys"] == ["fc.weight", "fc.bias"] and finding["fix"] is None
    assert backbone_only.read_bytes() == before  # diff only reads


def test_diff_names_the_keys_the_model_lacks(tmp_path, capsys):
    """A checkpoint from pretraining that still holds the projection head of its loss."""
    models = write_models(tmp_path)
    path = tmp_path / "pretrained.pth"
    torch.save({**Net().state_dict(), "projector.weight": torch.zeros(4, 8)}, path)
    code = main(["ckpt", "diff", str(path), "--model", f"{models}:build", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert [(f["name"], f["keys"]) for f in data["findings"]] == [
        ("state-dict-key-mismatch", ["projector.weight"])
    ]
    assert (
        "keys of the checkpoint are not in the model: `projector.*` (1)"
        in (data["findings"][0]["message"])
    )


def test_fix_writes_nothing_when_keys_are_missing(tmp_path, capsys, backbone_only):
    models = write_models(tmp_path)
    out = tmp_path / "fixed.pth"
    code = main(
        ["ckpt", "fix", str(backbone_only), "--model", f"{models}:build", "-o", str(out)]
        + ["--lang", "en"]
    )
    printed = capsys.readouterr().out
    assert code == 1 and "state-dict-key-mismatch" in printed and MISSING_HEAD in printed
    assert not out.exists()


def test_load_state_dict_raises_by_name_and_leaves_the_model(backbone_only):
    model = Net()
    before = model.fc.weight.clone()
    with pytest.raises(CheckpointMismatchError) as raised:
        torchdoctor.load_state_dict(model, backbone_only, verbose=False)
    assert f"- state-dict-key-mismatch: {MISSING_HEAD}" in str(raised.value)
    assert torch.equal(model.fc.weight, before)
    result = torchdoctor.load_state_dict(model, backbone_only, strict=False, verbose=False)
    assert result.missing_keys == ["fc.weight", "fc.bias"]  # what the user is told stays random
    assert torch.equal(model.conv.weight, torch.load(backbone_only)["conv.weight"])
