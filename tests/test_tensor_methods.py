"""The out-of-place Tensor methods the checker knows are exactly torch's own."""

from __future__ import annotations

from conftest import import_torch

from torchdoctor.knowledge.tensor_methods import DISTINCTIVE, OUT_OF_PLACE

torch = import_torch()


def test_every_method_with_an_in_place_twin_is_known_and_nothing_else():
    public = {name for name in dir(torch.Tensor) if not name.startswith("_")}
    twins = {
        name
        for name in public
        if not name.endswith("_") and f"{name}_" in public and callable(getattr(torch.Tensor, name))
    }
    assert OUT_OF_PLACE == twins, (
        f"missing: {sorted(twins - OUT_OF_PLACE)}, gone: {sorted(OUT_OF_PLACE - twins)}"
    )


def test_the_distinctive_ones_are_out_of_place_methods():
    assert DISTINCTIVE <= OUT_OF_PLACE
