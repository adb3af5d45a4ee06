"""`loss.sum().data[0]`: a sum (or mean) of every element is 0-dim, a tensor's or numpy's, and
neither can be indexed; so the read is reported even in a file that never imports torch and
cannot tell what `loss` is (qqiang00/Reinforce's agents: the loss their project's `fit`
returns)."""

from __future__ import annotations

from torchdoctor.lint.api import check

SOURCE = """\
# the loss is a torch Variable
from approximator import NetApproximator


class Agent:
    def learn(self, x, y):
        loss = self.behavior_Q.fit(x=x, y=y)
        mean_loss = loss.sum().data[0] / self.batch_size
        first_row = loss.sum(0).data[0]
        return mean_loss, first_row, loss.data[0]
"""


def lines(source: str) -> list[int]:
    return [f.line for f in check(select="TD101", source=source, filename="agents.py")]


def test_a_whole_sum_indexed_is_reported_without_torch_imported():
    assert lines(SOURCE) == [8]  # not the sum along a dimension, nor the loss itself


def test_the_mean_too():
    assert lines(SOURCE.replace("loss.sum().data", "loss.mean().data")) == [8]
