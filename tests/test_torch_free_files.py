"""A file that never mentions torch is walked only by the rules that can fire there (those with
`needs_torch=False`): the others cannot, and half of a library's files are such files."""

from __future__ import annotations

import textwrap

from torchdoctor.catalog import _registry
from torchdoctor.lint.checker import check_source

# No "torch" anywhere: an OpenCV script with a reversed-channel image, the top-k accuracy helper
# of a `utils/eval.py`, and code a PyTorch rule would report in a file that imports torch.
TORCH_FREE = textwrap.dedent(
    """\
    import cv2

    image = cv2.imread("a.png")
    cv2.rectangle(image[:, :, ::-1], (1, 1), (9, 9), (255, 0, 0), 2)


    def accuracy(output, target, topk=(1,)):
        _, pred = output.topk(max(topk), 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        return [correct[:k].view(-1).float().sum(0) for k in topk]


    accuracy(None, None, topk=(1, 5))
    losses = []
    for x, y in data:
        loss = criterion(model(x), y)
        loss.backward()
        losses.append(loss)
    """
)


def codes_found(source: str, codes: frozenset[str]) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in check_source(source, "utils.py", codes).findings]


def test_rules_that_need_torch_are_not_walked_in_a_torch_free_file():
    every = frozenset(p.code for p in _registry.all_pitfalls())
    assert codes_found(TORCH_FREE, every) == [(4, "TD410"), (11, "TD403")]


def test_the_same_code_mentioning_torch_is_checked_by_every_rule():
    source = "import torch\n" + TORCH_FREE
    every = frozenset(p.code for p in _registry.all_pitfalls())
    found = codes_found(source, every)
    assert (20, "TD102") in found and (5, "TD410") in found and (12, "TD403") in found


def test_only_rules_that_need_torch_selected_leave_a_torch_free_file_alone():
    assert codes_found(TORCH_FREE, frozenset({"TD102", "TD403"})) == [(11, "TD403")]
    assert codes_found(TORCH_FREE, frozenset({"TD102"})) == []
