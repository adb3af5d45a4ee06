"""The torch.nn classes the checker takes for parameter-free (their output requires grad only when
their input does) are so in the installed torch."""

from __future__ import annotations

import pytest

from torchdoctor.lint.parameter_free import PARAMETER_FREE

torch = pytest.importorskip("torch", reason="the list is checked against the installed torch")

# Classes whose constructor needs an argument: the smallest one that builds it.
ARGUMENTS = {
    "Threshold": (0.1, 0.0),
    "PixelShuffle": (2,),
    "PixelUnshuffle": (2,),
    "Unflatten": (1, (2, 2)),
}
ARGUMENTS.update(
    {
        name: (2,)
        for name in PARAMETER_FREE
        if "Pool" in name or name in ("ChannelShuffle", "ZeroPad2d")
    }
)


@pytest.mark.parametrize("name", sorted(PARAMETER_FREE))
def test_has_no_parameters(name):
    module = getattr(torch.nn, name)(*ARGUMENTS.get(name, ()))
    assert list(module.parameters()) == []
