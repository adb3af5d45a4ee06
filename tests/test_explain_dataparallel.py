"""DataParallel's `device_ids[0]` error: the fix names the user's device, never a fixed cuda:0
(issue 14)."""

from __future__ import annotations

import pytest

from torchdoctor.explain.match import diagnose
from torchdoctor.explain.parse import parse_text

ERROR = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 9, in <module>\n'
    "    out = model(x)\n"
    "RuntimeError: module must have its parameters and buffers on device {device} "
    "(device_ids[0]) but found one of them on device: cpu\n"
)


@pytest.mark.parametrize("device", ["cuda:1", "cuda:3"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_fix_names_the_device_of_the_error(device, lang):
    [top, *_] = diagnose(parse_text(ERROR.format(device=device)), lang, link=False).diagnoses
    assert top.pitfall.name == "device-mismatch"
    assert f'model.to("{device}")' in top.fix
    assert "cuda:0" not in top.fix
