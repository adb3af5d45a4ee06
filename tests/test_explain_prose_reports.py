"""Issues that tell their error in words, with no error pasted: what the words must say for
`explain` to answer, and the look-alikes it leaves alone."""

from __future__ import annotations

import pytest

from torchdoctor.explain.match import diagnose
from torchdoctor.explain.parse import parse_text


def names(text: str) -> list[str]:
    return [d.pitfall.name for d in diagnose(parse_text(text), link=False).diagnoses]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("On PyTorch 1.8 torch.irfft has been removed, please port the code.", "removed-torch-api"),
        ("The script calls the now removed `torch.symeig`.", "removed-torch-api"),
        (
            "load_state_dict fails with missing keys: the model's keys are prefixed with "
            "'_orig_mod.' and the saved ones are not.",
            "state-dict-prefix-mismatch",
        ),
        (
            "Half of the scalars are missing in TensorBoard; the writer is never closed at the "
            "end of train.py.",
            "tensorboard-writer-not-closed",
        ),
        (
            "opt = torch.optim.SGD(itertools.chain(*model.encoder.parameters(), [w]))\nValueError",
            "optimize-non-leaf-tensor",
        ),
    ],
)
def test_a_cause_told_in_words_is_recognised(text, expected):
    found = names(text)
    assert found and found[0] == expected, found


@pytest.mark.parametrize(
    "text",
    [
        # deprecated, not removed; and a name that was never removed
        "torch.rfft is deprecated and will be removed, should we port it?",
        "torch.matmul was removed from the hot loop, now it is fast.",
        # an error shown is the story: the words around it are not read
        "I replaced torch.rfft, which was removed, and now get\n"
        "Traceback (most recent call last):\n"
        '  File "a.py", line 3, in <module>\n    y = f(x)\n'
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 4x5)",
        # a prefix without any failed load
        'The layer names start with "module." because I use DataParallel.',
        # the writer is closed, or nothing is missing
        "I close the SummaryWriter at the end and all scalars appear in TensorBoard.",
        "The SummaryWriter is never closed in run_glue.py, is that on purpose? TensorBoard "
        "works fine.",
        # no star: the parameters themselves
        "opt = torch.optim.Adam(itertools.chain(model.parameters(), [w]))\nValueError",
    ],
)
def test_look_alikes_are_left_alone(text):
    assert not {
        "removed-torch-api",
        "state-dict-prefix-mismatch",
        "tensorboard-writer-not-closed",
        "optimize-non-leaf-tensor",
    } & set(names(text))


@pytest.mark.parametrize(
    "text",
    [
        "Running the notebook in Colab, `images, labels = dataiter.next()` gives an AttributeError.",
        "batch = iter(train_loader).next()  -> AttributeError (screenshot below)",
    ],
)
def test_a_quoted_next_call_and_the_error_named_is_the_python_2_method(text):
    assert names(text)[:1] == ["deprecated-iterator-next"]


@pytest.mark.parametrize(
    "text",
    [
        # the error's own message is printed: it tells which attribute is missing
        "x = dataiter.next()\nAttributeError: 'Tensor' object has no attribute 'foo'",
        # `.next()` quoted, but no AttributeError
        "images, labels = dataiter.next() returns the same batch every time",
        # an AttributeError, and `.next` is not called on an iterator
        "AttributeError when calling node.next() in my linked list",
    ],
)
def test_a_next_call_is_not_blamed_without_its_error_or_against_the_printed_one(text):
    assert "deprecated-iterator-next" not in names(text)
