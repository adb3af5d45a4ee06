"""load-weights-only reports `torch.load` without `weights_only=` only in code that shows it
runs on PyTorch older than 2.6 (the fixture has such a check; here the cases without one)."""

from __future__ import annotations

import pytest

from torchdoctor.lint.checker import check_source

LOAD = 'import torch\n{before}\nstate = torch.load("model.pt")\n'


def _codes(source: str) -> list[str]:
    return [f.code for f in check_source(source, "train.py", frozenset({"TD502"})).findings]


@pytest.mark.parametrize(
    "before",
    [
        "",
        "print(torch.__version__)",
        'logger.info("torch %s", torch.__version__)',
    ],
    ids=["no version check", "version printed", "version logged"],
)
def test_a_load_without_the_flag_is_not_reported_without_a_version_check(before):
    assert _codes(LOAD.format(before=before)) == []


@pytest.mark.parametrize(
    "before",
    [
        "if torch.__version__ >= '2.6':\n    pass",
        "OLD = version.parse(torch.__version__) < version.parse('2.6')",
        "from transformers.utils import is_torch_greater_or_equal",
        "if TORCH_VERSION < (2, 6):\n    pass",
        "if _TORCH_GREATER_EQUAL_2_4:\n    pass",
    ],
    ids=["compared", "parsed", "helper", "constant", "lightning flag"],
)
def test_a_load_without_the_flag_is_reported_where_the_version_is_checked(before):
    assert _codes(LOAD.format(before=before)) == ["TD502"]
