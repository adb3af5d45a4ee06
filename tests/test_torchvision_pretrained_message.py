"""`pretrained=<flag>`: the weights load only when the flag is true, and the message says so
(a reader found "here it loads ..." untrue where the flag may be false)."""

from __future__ import annotations

from torchdoctor.lint.api import check

SOURCE = """\
from torchvision import models


def build(args):
    return models.resnet18(pretrained=args.pretrained)
"""


def messages(source: str, lang: str = "en") -> list[str]:
    return [f.message for f in check(select="TD807", source=source, filename="m.py", lang=lang)]


def test_a_flag_loads_the_weights_only_when_true():
    [message] = messages(SOURCE)
    assert "when `args.pretrained` is true it loads `ResNet18_Weights.IMAGENET1K_V1`" in message
    assert 'pass `weights="IMAGENET1K_V1" if args.pretrained else None`' in message
    assert "here it loads" not in message


def test_a_constant_true_loads_them_here():
    [message] = messages(SOURCE.replace("args.pretrained", "True"))
    assert "here it loads `ResNet18_Weights.IMAGENET1K_V1`" in message


def test_the_flag_message_in_chinese():
    [message] = messages(SOURCE, lang="zh")
    assert "当 `args.pretrained` 为真时" in message
