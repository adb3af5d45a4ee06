"""state-dict-prefix-mismatch leaves `k[7:]` alone in a script whose every saved model is wrapped
in DataParallel: it reads back checkpoints it wrote itself, each key of which has `module.`
(DeepLabv3.pytorch's main.py, read in the sixth precision reading)."""

from __future__ import annotations

from torchdoctor.lint.api import check

SCRIPT = """\
import torch
import torch.nn as nn


def main(args):
    model = Net()
    if args.train:
        model = {wrap}
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(10):
            train(model, optimizer)
            torch.save({{"state_dict": model.state_dict(), "optimizer": optimizer.state_dict()}},
                       "model.pth")
    else:
        model = model.cuda()
        checkpoint = torch.load("model.pth")
        state_dict = {{k[7:]: v for k, v in checkpoint["state_dict"].items()}}
        model.load_state_dict(state_dict)
"""


def lines(source: str) -> list[int]:
    return [f.line for f in check(source=source, filename="main.py", select="TD504")]


def test_a_script_reading_back_what_it_saved_from_dataparallel():
    assert lines(SCRIPT.format(wrap="nn.DataParallel(model).cuda()")) == []


def test_distributed_data_parallel_too():
    wrap = "nn.parallel.DistributedDataParallel(model, device_ids=[0])"
    assert lines(SCRIPT.format(wrap=wrap)) == []


def test_reported_when_the_saved_model_is_not_wrapped():
    assert lines(SCRIPT.format(wrap="model.cuda()")) == [17]


def test_reported_when_the_wrapping_is_in_a_branch_of_its_own():
    source = SCRIPT.format(wrap="model.cuda()").replace(
        "        model = model.cuda()\n        optimizer",
        "        if args.multi_gpu:\n            model = nn.DataParallel(model)\n        optimizer",
    )
    assert "if args.multi_gpu" in source
    assert lines(source) == [18]


def test_reported_when_the_file_also_saves_the_unwrapped_model():
    source = SCRIPT.format(wrap="nn.DataParallel(model)") + (
        '\n\ndef export(net):\n    torch.save(net.state_dict(), "plain.pth")\n'
    )
    assert lines(source) == [17]
