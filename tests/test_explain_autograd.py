"""Autograd and loss errors are ranked and explained with what their messages say.

The messages are real: printed by torch 2.13.0 CPU, or quoted in the issue thread named next to
them; the short tracebacks around them only give each a frame. Fixtures in tests/fixtures/explain
cover whole outputs; these pin the details of the causes."""

from __future__ import annotations

import pytest

from torchdoctor.explain.match import diagnose
from torchdoctor.explain.parse import parse_text


def traceback(line: str, error: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 42, in <module>\n'
        f"    {line}\n"
        f"{error}\n"
    )


def ranked(text: str, lang: str = "en"):
    return diagnose(parse_text(text), lang, link=False).diagnoses


CASES = [
    # (expected name, text, fragments of the cause)
    (
        "inplace-modified-for-grad",
        traceback(
            "z.sum().backward()",
            "RuntimeError: one of the variables needed for gradient computation has been modified "
            "by an inplace operation: [torch.FloatTensor [64, 128]], which is output 0 of Relu, is "
            "at version 1; expected version 0 instead. Hint: enable anomaly detection to find the "
            "operation that failed to compute its gradient, with "
            "torch.autograd.set_detect_anomaly(True, check_nan=False).",
        ),
        ["torch.FloatTensor", "[64, 128]", "`Relu`", "version 1", "expected 0"],
    ),
    # torch 0.4.1, tamakoji/pytorch-syncbn#4: no tensor named.
    (
        "inplace-modified-for-grad",
        traceback(
            "loss.mean().backward()",
            "RuntimeError: one of the variables needed for gradient computation has been modified "
            "by an inplace operation",
        ),
        ["`+=`", "`optimizer.step()`"],
    ),
    (
        "backward-through-graph-twice",
        traceback(
            "y.backward()",
            "RuntimeError: Trying to backward through the graph a second time (or directly access "
            "saved tensors after they have already been freed). Saved intermediate values of the "
            "graph are freed when you call .backward() or autograd.grad(). Specify "
            "retain_graph=True if you need to backward through the graph a second time or if you "
            "need to access saved tensors after calling backward.",
        ),
        ["previous iteration", "retain_graph=True"],
    ),
    # pytorch/examples#151, torch 0.1.
    (
        "backward-through-graph-twice",
        traceback(
            "loss.backward()",
            "RuntimeError: Trying to backward through the graph second time, but the buffers have "
            "already been freed. Please specify retain_variables=True when calling backward for "
            "the first time.",
        ),
        ["previous iteration"],
    ),
    (
        "no-grad-fn",
        traceback(
            "loss.backward()",
            "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn",
        ),
        ["torch.no_grad()"],
    ),
    (
        "non-scalar-backward",
        traceback(
            "(x * 2).backward()",
            "RuntimeError: grad can be implicitly created only for scalar outputs",
        ),
        ["reduction='none'"],
    ),
    (
        "optimize-non-leaf-tensor",
        traceback(
            "opt = torch.optim.SGD([x], lr=0.1)", "ValueError: can't optimize a non-leaf Tensor"
        ),
        ["`.cuda()`"],
    ),
    (
        "autograd-function-gradient-count",
        traceback(
            "MyFn.apply(a, torch.randn(3)).sum().backward()",
            "RuntimeError: function MyFnBackward returned an incorrect number of gradients "
            "(expected 2, got 1)",
        ),
        ["`MyFn`", "returned 1 value", "takes 2 argument"],
    ),
    (
        "cross-entropy-target-dtype",
        traceback(
            "loss = crit(torch.randn(4, 3), torch.tensor([0., 1., 2., 0.]))",
            "RuntimeError: expected target dtype to be Long or Byte, but got Float",
        ),
        ["as Float", "int64"],
    ),
    # torch 1.x, wording quoted in pytorch/pytorch#133833.
    (
        "cross-entropy-target-dtype",
        traceback(
            "cel(input=tensor1, target=tensor2)",
            "RuntimeError: expected scalar type Long but found Float",
        ),
        ["Float"],
    ),
    (
        "cross-entropy-target-dtype",
        traceback(
            "loss = F.cross_entropy(logits, torch.eye(3, dtype=torch.long)[labels])",
            "RuntimeError: Expected floating point type for target with class probabilities, "
            "got Long",
        ),
        ["one-hot"],
    ),
    (
        "cross-entropy-target-range",
        traceback(
            "loss = crit(torch.randn(4, 3), torch.tensor([0, 1, 3, 0]))",
            "IndexError: Target 3 is out of bounds.",
        ),
        ["label of 3", "numbered from 1"],
    ),
    (
        "cross-entropy-target-range",
        traceback("loss = crit(logits, labels)", "IndexError: Target -1 is out of bounds."),
        ["-1", "ignore_index"],
    ),
    # xiaojunxu/SQLNet#41, torch 1.0 on Windows.
    (
        "cross-entropy-target-range",
        traceback(
            "loss += self.CE(sel_score, sel_truth_var)",
            "RuntimeError: Assertion `cur_target >= 0 && cur_target < n_classes' failed.  at "
            "c:\\new-builder_3\\win-wheel\\pytorch\\aten\\src\\thnn\\generic/ClassNLLCriterion.c:93",
        ),
        ["`[0, num_classes)`"],
    ),
    (
        "loss-batch-size-mismatch",
        traceback(
            "loss = F.cross_entropy(torch.randn(32, 3), torch.zeros(64, dtype=torch.long))",
            "ValueError: Expected input batch_size (32) to match target batch_size (64).",
        ),
        ["32 rows", "64 targets", "view(-1, n)"],
    ),
    (
        "loss-target-shape-mismatch",
        traceback(
            "loss = nn.BCEWithLogitsLoss()(torch.randn(16, 1), torch.rand(16))",
            "ValueError: Target size (torch.Size([16])) must be the same as input size "
            "(torch.Size([16, 1]))",
        ),
        ["torch.Size([16, 1])", "torch.Size([16])"],
    ),
    (
        "loss-target-shape-mismatch",
        "/usr/lib/python3.11/site-packages/torch/nn/modules/loss.py:630: UserWarning: Using a "
        "target size (torch.Size([16])) that is different to the input size "
        "(torch.Size([16, 1])). This will likely lead to incorrect results due to broadcasting. "
        "Please ensure they have the same size.\n"
        "  return F.mse_loss(input, target, reduction=self.reduction)\n",
        ["broadcast"],
    ),
    (
        "nan-loss",
        traceback(
            "(torch.log(x) * 0).sum().backward()",
            "RuntimeError: Function 'LogBackward0' returned nan values in its 0th output.",
        ),
        ["`LogBackward0`"],
    ),
    ("nan-loss", traceback("assert not torch.isnan(loss)", "AssertionError"), ["your own check"]),
    (
        "batchnorm-single-sample-batch",
        traceback(
            "m(torch.randn(1, 4))",
            "ValueError: Expected more than 1 value per channel when training, got input size "
            "torch.Size([1, 256])",
        ),
        ["torch.Size([1, 256])", "len(dataset) % batch_size == 1"],
    ),
    (
        "loss-data-index",
        traceback(
            "print(loss.data[0])",
            "IndexError: invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
            "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number",
        ),
        ["`loss.data[0]`"],
    ),
    (
        "legacy-autograd-function",
        traceback(
            "Legacy()(torch.randn(3))",
            "RuntimeError: Legacy autograd function with non-static forward method is deprecated. "
            "Please use new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)",
        ),
        ["legacy style"],
    ),
    (
        "scheduler-step-order",
        "train.py:6: UserWarning: Detected call of `lr_scheduler.step()` before "
        "`optimizer.step()`. In PyTorch 1.1.0 and later, you should call them in the opposite "
        "order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will result "
        "in PyTorch skipping the first value of the learning rate schedule. See more details at "
        "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate\n"
        "  s.step()\n",
        ["first value"],
    ),
]


@pytest.mark.parametrize(
    "name, text, fragments", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_top_cause_and_details(name, text, fragments):
    diagnoses = ranked(text)
    assert diagnoses and diagnoses[0].pitfall.name == name, [d.pitfall.name for d in diagnoses]
    for fragment in fragments:
        assert fragment in diagnoses[0].cause, diagnoses[0].cause
    assert "{" not in diagnoses[0].cause + diagnoses[0].fix, "a field was left unfilled"


NON_LEAF_WARNING = (
    "train.py:6: UserWarning: The .grad attribute of a Tensor that is not a leaf Tensor is being "
    "accessed. Its .grad attribute won't be populated during autograd.backward(). If you indeed "
    "want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the "
    "non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you access the "
    "leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information. "
    "(Triggered internally at /__w/pytorch/pytorch/build/aten/src/ATen/core/TensorBody.h:493.)\n"
    "  x = x - 0.1 * x.grad\n"
)
NONE_ERROR = traceback(
    "x = x - 0.1 * x.grad", "TypeError: unsupported operand type(s) for *: 'float' and 'NoneType'"
)


@pytest.mark.parametrize(
    "error, expected",
    [
        # github.com/winycg/l-mcl/issues/1: the paste ends inside the exception line
        ("RuntimeError: grad can be implicitly create", "non-scalar-backward"),
        ("RuntimeError: grad can be implicitly created only for sca", "non-scalar-backward"),
        ("RuntimeError: grad can be", None),  # too little left to tell
    ],
)
def test_exception_line_cut_short(error, expected):
    diagnoses = ranked(traceback("loss.backward()", error))
    assert (diagnoses[0].pitfall.name if diagnoses else None) == expected


def test_error_on_none_grad_is_explained_by_the_non_leaf_warning():
    diagnoses = ranked(NON_LEAF_WARNING + NONE_ERROR)
    assert diagnoses[0].pitfall.name == "non-leaf-grad-access"
    assert "non-leaf" in diagnoses[0].cause


def test_error_on_none_without_the_warning_is_not_claimed():
    assert "non-leaf-grad-access" not in [d.pitfall.name for d in ranked(NONE_ERROR)]


def test_long_expected_without_a_loss_is_less_certain():
    with_loss = ranked(
        "Traceback (most recent call last):\n"
        '  File "train.py", line 9, in <module>\n'
        "    loss = F.cross_entropy(out, labels)\n"
        '  File "/usr/lib/python3.10/site-packages/torch/nn/functional.py", line 3029, '
        "in cross_entropy\n"
        "    return torch._C._nn.cross_entropy_loss(input, target, weight)\n"
        "RuntimeError: expected scalar type Long but found Float\n"
    )[0]
    without = ranked(
        traceback("out = layer(x)", "RuntimeError: expected scalar type Long but found Float")
    )[0]
    assert with_loss.pitfall.name == without.pitfall.name == "cross-entropy-target-dtype"
    assert without.confidence < with_loss.confidence


def test_device_side_assert_inside_nll_loss_outranks_the_generic_one():
    text = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 60, in train\n'
        "    loss = criterion(outputs[0], labels)\n"
        '  File "/usr/lib/python3.7/site-packages/torch/nn/functional.py", line 1871, '
        "in nll_loss\n"
        "    ret = torch._C._nn.nll_loss(input, target, weight)\n"
        "RuntimeError: CUDA error: device-side assert triggered\n"
    )
    assert ranked(text)[0].pitfall.name == "cross-entropy-target-range"


def test_causes_read_in_chinese():
    diagnoses = ranked(CASES[0][1], "zh")
    assert "[64, 128]" in diagnoses[0].cause
    assert any("\u4e00" <= ch <= "\u9fff" for ch in diagnoses[0].cause + diagnoses[0].fix)
