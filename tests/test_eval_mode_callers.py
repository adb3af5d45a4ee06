"""eval-mode-missing's no-grad finding asks the callers of the evaluation function, however far
up the file: PointRCNN's `eval_rcnn.py` runs its evaluation under `with torch.no_grad():` in
`__main__`, three calls above the loop."""

from __future__ import annotations

from torchdoctor.lint.api import check

SCRIPT = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.fc(x))


def eval_one_epoch_rcnn(model, dataloader):
    model.eval()
    results = []
    for batch in dataloader:
        results.append(model(batch))
    return results


def eval_one_epoch(model, dataloader):
    return eval_one_epoch_rcnn(model, dataloader)


def eval_single_ckpt(dataloader):
    model = Net()
    model.load_state_dict(torch.load("ckpt.pth"))
    return eval_one_epoch(model, dataloader)


if __name__ == "__main__":
{main}
"""


def found(main: str) -> list[tuple[int, str]]:
    source = SCRIPT.format(main=main)
    return [
        (f.line, f.message) for f in check(source=source, filename="eval_rcnn.py", select="TD205")
    ]


def test_gradients_turned_off_three_calls_up_are_off_in_the_loop():
    assert found("    with torch.no_grad():\n        eval_single_ckpt([torch.randn(2, 8)])") == []


def test_without_them_the_loop_records_a_graph_for_every_batch():
    [(line, message)] = found("    eval_single_ckpt([torch.randn(2, 8)])")
    assert line == 19
    assert "records an autograd graph for every batch" in message


def test_a_cycle_of_calls_neither_hangs_nor_invents_a_no_grad():
    # Two functions calling each other above the loop's function: read once, nothing found.
    cycle = SCRIPT.replace(
        "def eval_single_ckpt(dataloader):",
        "def retry(dataloader):\n    return eval_single_ckpt(dataloader)\n\n\ndef eval_single_ckpt(dataloader):\n"
        "    if not dataloader:\n        return retry(dataloader)",
    )
    source = cycle.format(main="    eval_single_ckpt([torch.randn(2, 8)])")
    findings = check(source=source, filename="eval_rcnn.py", select="TD205")
    assert [f.line for f in findings] == [19]
