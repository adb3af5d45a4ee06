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
