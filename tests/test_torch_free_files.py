"""A file that never mentions torch is walked only when some selected rule can fire there
(`needs_torch=False`); then every selected rule walks it, since a helper module that never
imports torch still gets the model, the optimizer and the losses of the script that calls it."""

from __future__ import annotations

import textwrap

from torchdoctor.catalog import _registry
from torchdoctor.lint.checker import check_source

# No "torch" anywhere: the top-k accuracy helper of a `utils/eval.py`, and a trainer's loop
# over the losses of a model it is given.
TORCH_FREE = textwrap.dedent(
    """\
    def accuracy(output, target, topk=(1,)):
        _, pred = output.topk(max(topk), 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        return [correct[:k].view(-1).float().sum(0) for k in topk]


    accuracy(None, None, topk=(1, 5))
    losses = []
    for x, y in data:
        loss = criterion(model(x), y)
        loss.backward()
        losses.append(loss)
    """
)


def codes_found(source: str, codes: frozenset[str]) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in check_source(source, "utils.py", codes).findings]


def test_every_rule_walks_a_torch_free_file_when_one_can_fire_there():
    every = frozenset(p.code for p in _registry.all_pitfalls())
    assert codes_found(TORCH_FREE, every) == [(5, "TD403"), (13, "TD102")]
    # The top-k helper's view is such a rule's (it lives in utils files that never say torch).
    assert codes_found(TORCH_FREE, frozenset({"TD403"})) == [(5, "TD403")]


def test_a_torch_free_file_is_not_walked_when_every_rule_needs_torch():
    assert codes_found(TORCH_FREE, frozenset({"TD102"})) == []
    assert codes_found("import torch\n" + TORCH_FREE, frozenset({"TD102"})) == [(14, "TD102")]
