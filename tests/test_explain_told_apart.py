"""Messages that two causes share, told apart by what else the text shows: the answer of one
cause is not given where the text contradicts its premise (set k's cases, and their neighbours)."""

from __future__ import annotations

from torchdoctor.explain.match import diagnose
from torchdoctor.explain.parse import parse_text


def names(text: str) -> list[str]:
    return [d.pitfall.name for d in diagnose(parse_text(text), link=False).diagnoses]


GROUPS = (
    "RuntimeError: Given groups=3, expected weight to be divisible by 3 at dimension 0, "
    "but got weight of size [128, 1, 2, 2] instead"
)


def test_weight_not_fitting_groups_is_a_groups_mismatch():
    assert names(GROUPS)[:1] == ["conv-groups-mismatch"]


def test_groups_read_off_the_input_is_not_blamed_on_the_weight():
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/wavelet.py", line 34, in wavelet_transform\n'
        "    x = F.conv2d(x, filters, stride=2, groups=c, padding=pad)\n" + GROUPS + "\n"
    )
    assert "conv-groups-mismatch" not in names(text)


def test_ran_out_of_input_next_to_workers_is_the_workers():
    text = "EOFError: Ran out of input\n\nIt only happens on Windows with num_workers=4.\n"
    assert names(text)[:1] == ["dataloader-worker-pickle"]


def test_ran_out_of_input_of_a_load_is_not_the_workers():
    text = (
        "EOFError: Ran out of input\n\nwhen I call torch.load('model.pth') on Windows, "
        "num_workers=4\n"
    )
    assert "dataloader-worker-pickle" not in names(text)


def test_async_argument_in_frames_of_another_exception_is_not_a_syntax_error():
    text = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 134, in loss_calc\n'
        "    label = Variable(label).cuda(gpu0)\n"
        '  File "/usr/lib/python2.7/dist-packages/torch/_utils.py", line 66, in _cuda\n'
        "    return new_type(self.size()).copy_(self, async)\n"
        '  File "/usr/lib/python2.7/dist-packages/torch/x.py", line 9, in forward\n'
        "    return i.cuda(device_id, async=async)\n"
        "RuntimeError: cuda runtime error (59) : device-side assert triggered\n"
    )
    assert names(text)[:1] == ["device-side-assert"]
    assert "syntax-error" not in names(text)


def test_deprecated_activation_retold_beside_a_crash_is_only_a_guess():
    text = (
        "I replaced F.sigmoid since it is deprecated, and now:\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        "    loss = crit(out, y)\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    assert names(text)[:1] == ["cuda-illegal-memory-access"]
