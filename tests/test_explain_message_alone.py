"""A message pasted alone (an issue title, a chat line, a notebook's last line) is explained."""

from __future__ import annotations

import pytest

from torchdoctor.explain.match import diagnose
from torchdoctor.explain.parse import parse_text


def ranked(text: str) -> list[tuple[str, float]]:
    return [
        (d.pitfall.name, d.confidence) for d in diagnose(parse_text(text), link=False).diagnoses
    ]


@pytest.mark.parametrize(
    "text, expected",
    [
        # no exception class: the signature's exception types cannot be checked
        ("Trying to backward through the graph a second time", "backward-through-graph-twice"),
        ("element 0 of tensors does not require grad and does not have a grad_fn", "no-grad-fn"),
        # a program or logger prefix
        (
            "train_x: Boolean value of Tensor with more than one value is ambiguous",
            "boolean-operator-on-tensors",
        ),
        ("[rank0]: RuntimeError: Torch not compiled with CUDA enabled", "cpu-only-torch-build"),
        (
            "E       Trying to backward through the graph a second time",
            "backward-through-graph-twice",
        ),
        # another capitalisation
        (
            "expected all tensors to be on the same device, but found at least two devices, "
            "cuda:0 and cpu",
            "device-mismatch",
        ),
        ("TRYING TO BACKWARD THROUGH THE GRAPH A SECOND TIME", "backward-through-graph-twice"),
        # only the second half of a long message
        (
            "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which "
            "1.05 GiB is free.",
            "cuda-out-of-memory",
        ),
        ("(GPU 0; 7.79 GiB total capacity; 6.20 GiB already allocated)", "cuda-out-of-memory"),
        (
            "RuntimeError: unable to allocate shared memory(shm) for file </torch_1_2_0>: "
            "No space left on device (28)",
            "dataloader-shm-exhausted",
        ),
    ],
)
def test_message_alone_is_recognised(text, expected):
    names = [name for name, _ in ranked(text)]
    assert names and names[0] == expected, names


def test_a_retyped_message_is_less_certain_than_the_printed_one():
    printed = dict(ranked("RuntimeError: Trying to backward through the graph a second time"))
    alone = dict(ranked("Trying to backward through the graph a second time"))
    retyped = dict(ranked("trying to backward through the graph a second time"))
    key = "backward-through-graph-twice"
    assert printed[key] > alone[key] > retyped[key] >= 0.8


@pytest.mark.parametrize(
    "text",
    [
        "my loss does not go down, any idea?",
        "RuntimeError: something went wrong",
        "Boolean value of Tensor with no values is ambiguous",
        "the model works on the GPU but training is slow",
    ],
)
def test_a_message_of_none_of_ours_gets_no_answer(text):
    assert ranked(text) == []


def test_a_long_log_without_traceback_is_not_read_as_one_message():
    # Typed signatures stay tied to their exception types in a log: a phrase in a printed
    # line is not an error.
    log = "\n".join(f"step {i} ok" for i in range(40))
    log += "\nnote: Trying to backward through the graph a second time is handled below"
    assert ranked(log) == []


def test_the_failing_line_tells_the_truth_value_errors_apart():
    def traceback(line: str) -> str:
        return (
            "Traceback (most recent call last):\n"
            '  File "train.py", line 5, in <module>\n'
            f"    {line}\n"
            "RuntimeError: Boolean value of Tensor with more than one value is ambiguous\n"
        )

    assert ranked(traceback("if 0 < x < 1:"))[0] == ("chained-comparison-on-tensor", 0.9)
    assert ranked(traceback("keep = (x > 0) and (y > 0)"))[0] == (
        "boolean-operator-on-tensors",
        0.9,
    )
    # `if mask:` is neither entry's own pattern: an answer, but not a confident one
    [(name, confidence)] = ranked(traceback("if mask:"))
    assert name == "boolean-operator-on-tensors" and confidence < 0.8


@pytest.mark.parametrize(
    "title",
    [
        "Loss becomes NaN after a few epochs",
        "Getting nan loss after some iterations",
        "The gradients will become NaN sometimes",
        # Chinese posts and logs: `loss` touches the Chinese words around it
        "训练了1w步后开始频繁出现loss为nan的情况",
        "loss 变成了 nan",
        "训练时损失变为NaN",
    ],
)
def test_a_title_telling_of_a_nan_loss_is_divergence_not_a_stopped_run(title):
    diagnoses = diagnose(parse_text(title), link=False).diagnoses
    assert diagnoses and diagnoses[0].pitfall.name == "nan-loss"
    assert "diverged" in diagnoses[0].cause
    assert "your own check" not in diagnoses[0].cause


@pytest.mark.parametrize(
    "text",
    ["information loss in the encoder", "Cannot find the infant dataset", "lossless nano format"],
)
def test_loss_and_nan_as_parts_of_other_words_are_not_a_nan_loss(text):
    assert "nan-loss" not in [name for name, _ in ranked(text)]


def test_a_raised_nan_check_still_says_the_check_stopped_the_run():
    diagnoses = diagnose(parse_text("RuntimeError: loss is nan"), link=False).diagnoses
    assert diagnoses[0].pitfall.name == "nan-loss"
    assert "your own check" in diagnoses[0].cause


@pytest.mark.parametrize(
    "text",
    [
        'the loaded state_dict adds an unexpected key(s) "module.conv1.weight" to the model',
        'Unexpected key "module.backbone.fc.bias" when loading',
    ],
)
def test_a_wrapper_key_retold_in_prose_is_a_prefix_mismatch(text):
    names = [name for name, _ in ranked(text)]
    assert names and names[0] == "state-dict-prefix-mismatch", names


@pytest.mark.parametrize(
    "text",
    [
        "Dreambooth example causes an error when pickling `collate_fn` because it is not a "
        "top-level function",
        "the function collate_fn in data/uea.py can't pickle while running on macOS",
    ],
)
def test_a_collate_function_that_cannot_be_pickled_told_in_prose(text):
    names = [name for name, _ in ranked(text)]
    assert names and names[0] == "dataloader-worker-pickle", names


@pytest.mark.parametrize(
    "line, expected",
    [
        (
            "print(0 < x < 0.5)  # RuntimeError: bool value of Tensor with more than one value "
            "is ambiguous",
            "chained-comparison-on-tensor",
        ),
        (
            "keep = (x > 0) and (x < 1)  # Boolean value of Tensor with more than one value is "
            "ambiguous",
            "boolean-operator-on-tensors",
        ),
    ],
)
def test_an_example_line_carrying_its_error_as_a_comment_is_read(line, expected):
    text = f"Example:\n\n```python\nx = torch.rand(10)\n{line}\n```\n"
    names = [name for name, _ in ranked(text)]
    assert names and names[0] == expected, names


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "训练过程中出现Assertion srcIndex ＜ srcSelectDimSize failed.",
            "embedding-index-out-of-range",
        ),
        (
            "RuntimeError：mat1 and mat2 shapes cannot be multiplied（64x512 and 256x10）",
            "matmul-shape-mismatch",
        ),
    ],
)
def test_a_message_retyped_with_full_width_punctuation_is_read_as_ascii(text, expected):
    names = [name for name, _ in ranked(text)]
    assert names and names[0] == expected, names


def test_full_width_shapes_fill_the_answer():
    diagnosis = diagnose(
        parse_text("RuntimeError：mat1 and mat2 shapes cannot be multiplied（64x512 and 256x10）"),
        link=False,
    ).diagnoses[0]
    assert "in_features=512" in diagnosis.fix


@pytest.mark.parametrize(
    "text",
    [
        "Mat1 and Mat2 shapes cannot be multiplied:",
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied",
    ],
)
def test_the_matmul_message_without_its_shapes_is_a_less_certain_answer(text):
    (name, confidence), *_ = ranked(text)
    assert name == "matmul-shape-mismatch" and 0.5 <= confidence < 0.8
