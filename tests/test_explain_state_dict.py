"""Real load_state_dict / torch.load errors, produced here by torch, get the right explanation."""

from __future__ import annotations

import traceback

import pytest
from conftest import import_torch

torch = import_torch()
nn = torch.nn

from torchdoctor.explain.match import diagnose  # noqa: E402
from torchdoctor.explain.parse import parse_text  # noqa: E402


def small_net() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.Flatten(), nn.Linear(8, 10))


class Classifier(nn.Module):
    def __init__(self, num_classes: int):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))
        self.fc = nn.Linear(8, num_classes)


def explain(action):
    """The ranked (name, confidence, cause) of the traceback `action` raises."""
    try:
        action()
    except Exception:  # noqa: BLE001 - any error is the input
        text = traceback.format_exc()
    else:
        pytest.fail("no error raised")
    diagnoses = diagnose(parse_text(text), "en", link=False).diagnoses
    return [(d.pitfall.name, d.confidence, d.cause) for d in diagnoses]


def assert_top(ranked, name, *fragments):
    assert ranked, "nothing recognised"
    top, confidence, cause = ranked[0]
    assert top == name, ranked
    for fragment in fragments:
        assert fragment in cause, cause
    # Exactly one state-dict entry wins: the others are clearly lower or absent.
    for other, other_confidence, _ in ranked[1:]:
        assert other_confidence < confidence, ranked


def test_dataparallel_checkpoint_into_bare_model():
    state_dict = nn.DataParallel(small_net()).state_dict()
    ranked = explain(lambda: small_net().load_state_dict(state_dict))
    assert_top(ranked, "state-dict-prefix-mismatch", "`module.`", "checkpoint", "DataParallel")


def test_bare_checkpoint_into_dataparallel_model():
    state_dict = small_net().state_dict()
    ranked = explain(lambda: nn.DataParallel(small_net()).load_state_dict(state_dict))
    assert_top(ranked, "state-dict-prefix-mismatch", "`module.`", "model's keys")


def test_extra_keys_into_a_wrapped_model_are_not_a_prefix_problem():
    # github.com/TongkunGuan/SIGA/issues/4: both sides carry `module.`; two buffers are extra.
    model = nn.DataParallel(small_net())
    state_dict = {**model.state_dict(), "module.grid.inv_delta_C": torch.zeros(2)}
    ranked = explain(lambda: model.load_state_dict(state_dict))
    assert_top(ranked, "state-dict-key-mismatch", "module.grid.inv_delta_C")


def test_dataparallel_around_a_submodule_against_the_whole_model():
    """pytorch/examples' ImageNet script wraps only `features` of AlexNet and VGG."""
    trained = Classifier(10)
    trained.features = nn.DataParallel(trained.features)
    state_dict = trained.state_dict()
    for model in (Classifier(10), nn.DataParallel(Classifier(10))):
        ranked = explain(lambda model=model: model.load_state_dict(state_dict))
        assert_top(ranked, "state-dict-prefix-mismatch", "`features.module.0.weight`", "submodule")


def test_a_submodule_named_module_of_another_network_is_not_a_wrapper():
    class Other(nn.Module):
        def __init__(self):
            super().__init__()
            self.module = nn.Linear(3, 3)
            self.head = nn.Linear(3, 2)

    state_dict = Other().state_dict()
    ranked = explain(lambda: Classifier(10).load_state_dict(state_dict))
    assert ranked and ranked[0][0] != "state-dict-prefix-mismatch", ranked


def test_compiled_model_checkpoint():
    compiled = torch.compile(small_net())  # wraps lazily: nothing is compiled here
    state_dict = compiled.state_dict()
    ranked = explain(lambda: small_net().load_state_dict(state_dict))
    assert_top(ranked, "state-dict-prefix-mismatch", "`_orig_mod.`", "torch.compile")


def test_lightning_style_extra_prefix():
    state_dict = {f"model.{k}": v for k, v in small_net().state_dict().items()}
    ranked = explain(lambda: small_net().load_state_dict(state_dict))
    assert_top(ranked, "state-dict-prefix-mismatch", "`model.`")


def test_missing_num_batches_tracked_in_a_real_state_dict():
    # Deleting keys from a real state_dict() keeps its `_metadata`, so torch does not fill them.
    state_dict = small_net().state_dict()
    del state_dict["1.num_batches_tracked"]
    ranked = explain(lambda: small_net().load_state_dict(state_dict))
    assert_top(ranked, "state-dict-num-batches-tracked", "missing", "1.num_batches_tracked")


def test_unexpected_num_batches_tracked():
    model = small_net()
    model[1].register_buffer("num_batches_tracked", None)  # a BatchNorm that keeps no counter
    state_dict = small_net().state_dict()
    ranked = explain(lambda: model.load_state_dict(state_dict))
    assert_top(ranked, "state-dict-num-batches-tracked", "unexpected")


def test_num_batches_tracked_of_another_shape():
    """A model whose BatchNorm keeps a 1-element counter (fast-reid's, an old custom one): only
    the counters differ from a current checkpoint."""
    model = small_net()
    model[1].num_batches_tracked = torch.zeros(1, dtype=torch.long)
    state_dict = small_net().state_dict()
    ranked = explain(lambda: model.load_state_dict(state_dict))
    assert_top(ranked, "state-dict-num-batches-tracked", "differ in shape", "[1] in the model")


def test_head_of_another_size():
    state_dict = Classifier(1000).state_dict()
    ranked = explain(lambda: Classifier(10).load_state_dict(state_dict))
    assert_top(ranked, "state-dict-shape-mismatch", "`fc`", "1000", "10", "classes")


def test_wider_model_is_not_a_head_change():
    wide = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16))
    narrow = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))
    ranked = explain(lambda: narrow.load_state_dict(wide.state_dict()))
    assert_top(
        ranked, "state-dict-shape-mismatch", "[16, 3, 3, 3]", "[8, 3, 3, 3]", "hyperparameters"
    )


def test_training_checkpoint_passed_whole():
    checkpoint = {"state_dict": small_net().state_dict(), "optimizer": {}, "epoch": 3}
    ranked = explain(lambda: small_net().load_state_dict(checkpoint))
    assert_top(ranked, "state-dict-key-mismatch", 'checkpoint["state_dict"]', '"epoch"')


def test_renamed_layer():
    class Renamed(Classifier):
        def __init__(self):
            super().__init__(10)
            self.head = self.fc
            del self.fc

    state_dict = Classifier(10).state_dict()
    ranked = explain(lambda: Renamed().load_state_dict(state_dict))
    assert_top(ranked, "state-dict-key-mismatch", "renamed", "`head.weight`", "`fc.weight`")


def test_other_architecture():
    other = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.Linear(4, 2))
    ranked = explain(lambda: small_net().load_state_dict(other.state_dict()))
    assert_top(ranked, "state-dict-key-mismatch")


@pytest.mark.parametrize(
    "content, fragment",
    [
        (
            b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 1024\n",
            "git lfs pull",
        ),
        (b"<!DOCTYPE html><html><body>Sign in</body></html>", "HTML page"),
        (b"", "empty"),
    ],
)
@pytest.mark.parametrize("weights_only", [True, False])
def test_not_a_checkpoint(tmp_path, content, fragment, weights_only):
    path = tmp_path / "model.pth"
    path.write_bytes(content)
    ranked = explain(lambda: torch.load(path, weights_only=weights_only))
    assert_top(ranked, "corrupted-checkpoint", fragment)


def test_truncated_checkpoint(tmp_path):
    path = tmp_path / "model.pth"
    torch.save(small_net().state_dict(), path)
    path.write_bytes(path.read_bytes()[:500])
    ranked = explain(lambda: torch.load(path))
    assert_top(ranked, "corrupted-checkpoint", "cut short")


class Net(nn.Linear):
    """A model class pickled by `torch.save(model)`."""


def test_whole_module_refused_by_weights_only(tmp_path):
    path = tmp_path / "model.pth"
    torch.save(Net(2, 2), path)
    ranked = explain(lambda: torch.load(path, weights_only=True))
    assert_top(ranked, "whole-module-saved", "Net")
    assert "load-weights-only" in [name for name, _, _ in ranked]


def test_numpy_metadata_refused_by_weights_only(tmp_path):
    numpy = pytest.importorskip("numpy")
    path = tmp_path / "checkpoint.pth"
    torch.save({"state_dict": small_net().state_dict(), "best_acc": numpy.float64(0.9)}, path)
    ranked = explain(lambda: torch.load(path, weights_only=True))
    assert_top(ranked, "load-weights-only", "NumPy")
