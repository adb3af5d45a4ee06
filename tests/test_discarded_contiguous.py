"""A `.contiguous()` whose result is thrown away before a `.view(...)` of the same name: the
message names the view's line, where the copy was meant to be used."""

from __future__ import annotations

from torchdoctor.lint.api import check

SOURCE = """\
import torch


def edge_distance(am2):
    am2_view = am2.expand(2, 3, 4).transpose(1, 2)
    am2_view.contiguous()
    print(am2_view.shape)
    am2_view = am2_view.view(-1, 4)
    return am2_view
"""


def messages(source: str) -> list[str]:
    return [f.message for f in check(select="TD001", source=source, filename="ged.py")]


def test_the_message_names_the_view_that_still_gets_the_old_tensor():
    [message] = messages(SOURCE)
    assert "`.view(...)` on line 8" in message


def test_a_name_bound_again_before_the_view_is_another_tensor():
    rebound = SOURCE.replace("    print(am2_view.shape)\n", "    am2_view = am2_view.clone()\n")
    [message] = messages(rebound)
    assert "line" not in message and message.endswith("`am2_view` is unchanged")


def test_a_dropped_temporary_names_the_value_it_was_made_from():
    # ppg-vc's decoder: the instance norm of the inputs is computed and thrown away, so the
    # inputs go on as they were; the temporary `self.norm(...)` is nothing to assign back to.
    source = (
        "import torch\n\n\nclass Decoder(torch.nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.norm = torch.nn.InstanceNorm1d(8)\n\n"
        "    def forward(self, inputs):\n"
        "        self.norm(inputs.transpose(1, 2)).transpose(1, 2)\n        return inputs\n"
    )
    [message] = messages(source)
    assert message.endswith("`inputs` is unchanged"), message
