"""Runtime checks of loss arguments: cross-entropy-target-range (TD208), cross-entropy-target-dtype
(TD207), loss-target-shape-mismatch (TD210). End to end through `torchdoctor run`'s runner on a
buggy script (its fixed twin is run by test_watch_fixtures.py), then the edge cases in process
with `torchdoctor.watch()`."""

from __future__ import annotations

import warnings

import pytest
from conftest import import_torch

torch = import_torch()
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import torchdoctor  # noqa: E402
from test_watch_fixtures import run_watched  # noqa: E402

# torch's own warning for the broadcasting cases these tests make on purpose
pytestmark = pytest.mark.filterwarnings("ignore:Using a target size:UserWarning")
MINE = "TD207,TD208,TD210"
# name -> fixture
RUNS = {
    "range": "cross_entropy_target_range.py",
    "dtype": "cross_entropy_target_dtype.py",
    "shape": "loss_target_shape_mismatch.py",
}


@pytest.fixture(scope="module")
def runs():
    """Every end-to-end run, through the runner in this process."""
    return {name: run_watched(fixture) for name, fixture in RUNS.items()}


def names(run):
    return [f["name"] for f in run.findings()]


def test_range_end_to_end_reported_before_the_crash(runs):
    run = runs["range"]
    assert run.exit_code == 1  # the user's IndexError, unchanged
    assert "IndexError: Target 5 is out of bounds." in run.stderr
    [finding] = run.findings()
    assert finding["name"] == "cross-entropy-target-range" and finding["step"] == 1
    # `cross_entropy` was imported by name at the top of the script: `run` patches first.
    assert finding["path"] == "cross_entropy_target_range.py" and finding["line"] == 24
    assert "from 0 to 5 for an input with 5 classes" in finding["message"]
    assert "`ignore_index` (-100)" in finding["message"]
    # the live line comes before Python's traceback, and the crash is explained too
    assert run.stderr.index("TD208 cross-entropy-target-range") < run.stderr.index("Traceback")
    assert run.report["crash"]["findings"][0]["name"] == "cross-entropy-target-range"


def test_dtype_end_to_end(runs):
    run = runs["dtype"]
    assert run.exit_code == 1
    assert "expected target dtype to be Long or Byte, but got Float" in run.stderr
    [finding] = run.findings()
    assert finding["name"] == "cross-entropy-target-dtype" and finding["line"] == 19
    assert "dtype float32 (shape [16], input [16, 3])" in finding["message"]


def test_shape_end_to_end(runs):
    run = runs["shape"]
    assert run.exit_code == 0, run.stderr  # torch only warns: the run finishes with a wrong loss
    [finding] = run.findings()
    assert finding["name"] == "loss-target-shape-mismatch" and finding["line"] == 20
    assert "input [32, 1] and target [32]: they broadcast to [32, 32]" in finding["message"]


# ---- in process -------------------------------------------------------------------------------


def watched(loss_calls, select=MINE):
    """Run `loss_calls()` under a watch; return (what it returned or raised, findings)."""
    with torchdoctor.watch(select=select, live=False, summary=False) as watcher:
        try:
            result = loss_calls()
        except Exception as error:  # the user's own error must come through unchanged
            result = error
    return result, watcher.findings


def found(loss_calls, select=MINE):
    return [(f.name, f.message) for f in watched(loss_calls, select)[1]]


LOGITS = torch.randn(6, 4)


@pytest.mark.parametrize(
    "call",
    [
        lambda: F.cross_entropy(LOGITS, torch.tensor([0, 1, 2, 3, -100, -100])),  # default ignore
        lambda: F.cross_entropy(LOGITS, torch.tensor([0, 255, 3, 255, 1, 2]), ignore_index=255),
        lambda: nn.CrossEntropyLoss(ignore_index=-1)(LOGITS, torch.tensor([-1, 0, 3, -1, 2, 1])),
        lambda: F.cross_entropy(LOGITS, torch.tensor([-100] * 6)),  # every position ignored
        lambda: F.cross_entropy(LOGITS, torch.softmax(torch.randn(6, 4), 1)),  # soft labels
        lambda: F.cross_entropy(LOGITS, torch.softmax(torch.randn(6, 4, dtype=torch.float64), 1)),
        lambda: F.cross_entropy(torch.randn(4), torch.tensor(3)),  # unbatched: classes in dim 0
        lambda: F.cross_entropy(torch.randn(4), torch.softmax(torch.randn(4), 0)),
        lambda: F.nll_loss(F.log_softmax(LOGITS, 1), torch.tensor([3, 2, 1, 0, 0, 1])),
        lambda: F.cross_entropy(torch.randn(2, 4, 3, 3), torch.randint(0, 4, (2, 3, 3))),
        lambda: F.cross_entropy(LOGITS, torch.tensor([0, 1, 2, 3, 0, 1], dtype=torch.uint8)),
        lambda: F.cross_entropy(LOGITS[:0], torch.zeros(0, dtype=torch.long)),  # empty batch
        lambda: F.mse_loss(torch.randn(8, 3), torch.randn(3)),  # one target per feature
        lambda: F.mse_loss(torch.randn(8, 1), torch.tensor(0.5)),  # a scalar target
        lambda: F.l1_loss(torch.randn(1, 1), torch.randn(1)),  # one sample: nothing is mixed
        lambda: F.mse_loss(torch.randn(8, 1), torch.randn(8, 1)),
        lambda: F.binary_cross_entropy_with_logits(torch.randn(8), torch.rand(8)),
    ],
)
def test_correct_calls_are_not_reported(call):
    result, findings = watched(call)
    assert isinstance(result, torch.Tensor), result
    assert findings == []


def test_range_cases():
    assert found(lambda: F.cross_entropy(LOGITS, torch.tensor([0, 1, 4, 3, 2, 1]))) == [
        (
            "cross-entropy-target-range",
            "`cross_entropy` got class labels from 0 to 4 for an "
            "input with 4 classes: every label must be in `[0, 4)` or equal to `ignore_index` "
            "(-100). On the CPU the loss raises `IndexError: Target ... is out of bounds`; on a "
            "GPU it trips a device-side assert that breaks every later CUDA call",
        )
    ]
    # -1 padding without ignore_index=-1; the -100 padding next to it is fine
    [(_, message)] = found(lambda: F.cross_entropy(LOGITS, torch.tensor([-1, 0, -100, 3, 2, 1])))
    assert "from -1 to 3 for an input with 4 classes" in message
    # 255 "void" pixels of a uint8 segmentation mask
    [(_, message)] = found(
        lambda: F.nll_loss(
            F.log_softmax(LOGITS, 1), torch.tensor([0, 255, 1, 2, 3, 0], dtype=torch.uint8)
        )
    )
    assert message.startswith("`nll_loss` got class labels from 0 to 255")
    # unbatched: C is dimension 0
    [(_, message)] = found(lambda: F.cross_entropy(torch.randn(4), torch.tensor(4)))
    assert "from 4 to 4 for an input with 4 classes" in message
    # the loss module, with an ignore_index that does not cover the bad label
    [(_, message)] = found(
        lambda: nn.CrossEntropyLoss(ignore_index=255)(
            torch.randn(2, 3, 4, 4), torch.full((2, 4, 4), 3)
        )
    )
    assert "from 3 to 3 for an input with 3 classes" in message and "(255)" in message


def test_range_error_reaches_the_user_unchanged():
    result, findings = watched(lambda: nn.CrossEntropyLoss()(LOGITS, torch.tensor([4] * 6)))
    assert type(result) is IndexError and str(result) == "Target 4 is out of bounds."
    assert [f.name for f in findings] == ["cross-entropy-target-range"]


def test_range_reads_no_label_on_the_cpu_until_the_loss_raises(monkeypatch):
    """The CPU kernel checks every label itself: the range is read only once it has raised."""
    reads = []
    aminmax = torch.aminmax
    monkeypatch.setattr(torch, "aminmax", lambda *args: reads.append(args) or aminmax(*args))
    result, findings = watched(lambda: F.cross_entropy(LOGITS, torch.tensor([0, 1, 2, 3, 2, 1])))
    assert isinstance(result, torch.Tensor) and findings == [] and reads == []
    result, findings = watched(lambda: F.cross_entropy(LOGITS, torch.tensor([0, 1, 2, 3, 2, 4])))
    assert isinstance(result, IndexError) and len(reads) == 1
    assert [f.name for f in findings] == ["cross-entropy-target-range"]


def test_reported_once_per_place():
    def loop():
        for _ in range(3):
            try:
                F.cross_entropy(LOGITS, torch.tensor([5] * 6))
            except IndexError:
                pass

    assert len(found(loop)) == 1


@pytest.mark.parametrize(
    "dtype, input_shape, target_shape",
    [
        (torch.float32, (6, 4), (6,)),
        (torch.float64, (6, 4), (6,)),
        (torch.int32, (6, 4), (6,)),
        (torch.int16, (6, 4), (6,)),
        (torch.bool, (6, 4), (6,)),
        (torch.int32, (4,), ()),  # unbatched
        (torch.uint8, (2, 4, 3, 3), (2, 3, 3)),  # uint8 works for (N, C), not with spatial dims
    ],
)
def test_dtype_reported_when_the_loss_fails(dtype, input_shape, target_shape):
    target = torch.zeros(target_shape, dtype=dtype)
    result, findings = watched(lambda: F.cross_entropy(torch.randn(input_shape), target))
    assert isinstance(result, RuntimeError)  # verified on torch 2.13: each of these raises
    [finding] = findings
    assert finding.name == "cross-entropy-target-dtype"
    assert f"dtype {str(dtype)[6:]}" in finding.message


def test_dtype_not_reported_where_the_shape_is_the_problem():
    # float (N, 1) labels: the loss refuses the shape ("multi-target"), not the dtype
    result, findings = watched(lambda: F.cross_entropy(LOGITS, torch.zeros(6, 1)))
    assert isinstance(result, RuntimeError) and "multi-target" in str(result)
    assert findings == []


def test_nll_loss_with_log_softmax_and_modules():
    target = torch.tensor([0, 1, 2, 3, 0, 1], dtype=torch.int32)
    assert [n for n, _ in found(lambda: nn.NLLLoss()(F.log_softmax(LOGITS, 1), target))] == [
        "cross-entropy-target-dtype"
    ]
    assert [n for n, _ in found(lambda: nn.CrossEntropyLoss()(LOGITS, target.float()))] == [
        "cross-entropy-target-dtype"
    ]


def test_shape_cases():
    [(name, message)] = found(lambda: nn.MSELoss()(torch.randn(8, 1), torch.randn(8)))
    assert name == "loss-target-shape-mismatch"
    assert message.startswith(
        "`mse_loss` got input [8, 1] and target [8]: they broadcast to [8, 8]"
    )
    for loss in (nn.L1Loss(), nn.SmoothL1Loss(), nn.HuberLoss()):
        [(_, message)] = found(lambda: loss(torch.randn(8), torch.randn(8, 1)))
        assert "input [8] and target [8, 1]: they broadcast to [8, 8]" in message
    # segmentation: [B, 1, H, W] against [B, H, W]
    [(_, message)] = found(lambda: F.mse_loss(torch.randn(2, 1, 4, 4), torch.randn(2, 4, 4)))
    assert "broadcast to [2, 2, 4, 4]" in message
    # the binary cross-entropy losses raise on any difference: reported before they do
    for loss in (nn.BCELoss(), nn.BCEWithLogitsLoss()):
        result, findings = watched(lambda: loss(torch.rand(8, 1), torch.rand(8)))
        assert isinstance(result, ValueError)
        [finding] = findings
        assert "input [8, 1] and target [8]" in finding.message and "ValueError" in finding.message
    # shapes that do not broadcast: the loss raises its own error, nothing to add
    result, findings = watched(lambda: F.mse_loss(torch.randn(4), torch.randn(5)))
    assert isinstance(result, RuntimeError) and findings == []


def test_messages_in_chinese():
    with torchdoctor.watch(select=MINE, lang="zh", live=False, summary=False) as watcher:
        F.mse_loss(torch.randn(8, 1), torch.randn(8))
    [finding] = watcher.findings
    assert "广播成 [8, 8]" in finding.message


def test_name_bound_before_the_watch_is_not_seen():
    """`from torch.nn.functional import cross_entropy` made before `watch()` keeps the original
    function (FACTS.md); loss modules look `F.cross_entropy` up at each call and are seen.
    `torchdoctor run` patches before the script runs (test_range_end_to_end...)."""
    from torch.nn.functional import cross_entropy

    target = torch.tensor([0, 1, 2, 3, 0, 4])
    result, findings = watched(lambda: cross_entropy(LOGITS, target))
    assert isinstance(result, IndexError) and findings == []
    result, findings = watched(lambda: nn.CrossEntropyLoss()(LOGITS, target))
    assert isinstance(result, IndexError) and len(findings) == 1


def _train(seed=0):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(5):
        x, y = torch.randn(8, 6), torch.randint(0, 3, (8,))
        y[0] = -100  # padding, ignored
        optimizer.zero_grad()
        loss = (
            F.cross_entropy(model(x), y)
            + F.nll_loss(F.log_softmax(model(x), 1), y)
            + F.mse_loss(model(x), torch.randn(8, 3))
            + F.binary_cross_entropy_with_logits(model(x), torch.rand(8, 3))
        )
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, torch.rand(3)  # the RNG state after the run


def test_watched_run_computes_the_same():
    plain_losses, plain_rng = _train()
    with torchdoctor.watch(select=MINE, live=False, summary=False) as watcher:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # nor does the doctor make torch warn
            watched_losses, watched_rng = _train()
    assert watcher.findings == []
    assert watched_losses == plain_losses  # bit for bit
    assert torch.equal(watched_rng, plain_rng)
