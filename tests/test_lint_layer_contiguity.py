"""non-contiguous-view takes a convolution's or a Linear layer's output as contiguous, unless the
file or its project uses the channels-last memory format, which keeps feature maps permuted."""

from __future__ import annotations

from torchdoctor.lint.api import check

MODEL = """\
import torch
import torch.nn as nn


class RegionProposal(nn.Module):
    def __init__(self):
        super().__init__()
        self.bbox_conv = nn.Conv2d(512, 36, 1)

    def forward(self, features):
        rpn_bbox_pred = self.bbox_conv(features)
        return rpn_bbox_pred.permute(0, 2, 3, 1).view(-1, 4)
"""


def codes(**kwargs) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check(select="TD403", **kwargs)]


def test_a_convolution_output_permuted_then_flattened():
    assert codes(source=MODEL, filename="model.py") == [("TD403", 12)]


def test_not_in_a_file_that_uses_channels_last():
    source = MODEL + "\nmodel = RegionProposal().to(memory_format=torch.channels_last)\n"
    assert codes(source=source, filename="model.py") == []


def test_not_in_a_project_that_uses_channels_last(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text(MODEL)
    assert [f.code for f in check(tmp_path / "model.py", select="TD403")] == ["TD403"]
    (tmp_path / "train.py").write_text(
        "import torch\nfrom model import RegionProposal\n\n"
        "net = RegionProposal().to(memory_format=torch.channels_last)\n"
    )
    assert [f.code for f in check(tmp_path / "model.py", select="TD403")] == []


def test_the_topk_accuracy_message_says_since_which_version_it_fails():
    # The old ImageNet example's accuracy ran up to PyTorch 1.6 (pytorch/examples#836): a
    # message that said it always fails would be wrong for code pinned to an older torch.
    source = (
        "import torch\n\n\n"
        "def accuracy(output, target, topk=(1, 5)):\n"
        "    _, pred = output.topk(max(topk), 1)\n"
        "    pred = pred.t()\n"
        "    correct = pred.eq(target.view(1, -1).expand_as(pred))\n"
        "    return [correct[:k].view(-1).float().sum(0) for k in topk]\n"
    )
    (finding,) = check(source=source, filename="metrics.py", select="TD403")
    assert finding.line == 8
    assert "since PyTorch 1.7 an elementwise result keeps" in finding.message
    (chinese,) = check(source=source, filename="metrics.py", select="TD403", lang="zh")
    assert "从 PyTorch 1.7 起" in chinese.message
