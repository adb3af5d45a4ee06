"""Evidence from use (lint/values.py): what a callee's name and `.backward()` say of a value."""

from __future__ import annotations

import ast

import pytest

from torchdoctor.lint.values import computes_a_loss, name_words


def call(text: str) -> ast.Call:
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Call)
    return node


def test_name_words_split_snake_and_camel_case():
    assert name_words("compute_loss") == ["compute", "loss"]
    assert name_words("CrossEntropyLoss2d") == ["cross", "entropy", "loss", "2d"]
    assert name_words("set_forward_loss") == ["set", "forward", "loss"]


@pytest.mark.parametrize(
    "text",
    [
        "criterion(out, y)",
        "self.criterion(out, y)",
        "loss_fn(out, y)",
        "self.set_forward_loss(x)",
        "mixup_criterion(criterion, out, a, b, lam)",
        "nll_gaussian(out, target, var)",
        "crit(out, y, reduction='mean')",
    ],
)
def test_callees_named_as_a_loss(text):
    assert computes_a_loss(call(text))


@pytest.mark.parametrize(
    "text",
    [
        "model(x)",
        "compute_losses(out, y)",  # many
        "loss_fn(out, y, reduction='none')",  # one per element
        "loss_fn(out, y, reduce=False)",
        "loss_fn(out, y, **options)",  # could ask for one per element
        "nn.MSELoss(size_average=False)",  # builds a loss module
        "CrossEntropyLoss2d(weight)",
        "loss_weights(step)",
        "loss_per_sample(out, y)",
    ],
)
def test_callees_that_are_not_one_loss(text):
    assert not computes_a_loss(call(text))


@pytest.mark.parametrize(
    "source, name, expected",
    [
        ("def train(model):\n    pass\n", "train", False),  # only its definition
        ("def train(model):\n    pass\ntrain(net)\n", "train", True),
        (
            "class T:\n    def step(self):\n        pass\n    def run(self):\n        self.step()\n",
            "step",
            True,
        ),
        ("def train(model):\n    pass\npretrain(net)\n", "train", False),  # another name's call
        ("async def fetch(x):\n    pass\n", "fetch", False),
        ("def f():\n    pass\nx = 'f('\n", "f", True),  # text, not code: only a maybe
        ("def trainé():\n    pass\n", "train", False),  # read as Python reads names: not `train`
        ("def step():\n    pass\nｓｔｅｐ()\n", "step", True),  # full-width letters: `step`
    ],
)
def test_may_be_called_reads_the_calls_in_the_text(source, name, expected):
    from torchdoctor.lint.context import Context
    from torchdoctor.lint.values import may_be_called

    ctx = Context("t.py", source, ast.parse(source))
    assert may_be_called(ctx, name) is expected


# `passed_values` of a module function, read from where its name occurs in the text before the
# file has an index, must give what the index gives (and leave the question to it when unsure).
PASSED_SOURCES = {
    "called at the top and in a function": """
def train(model, loader):
    return loader

train(net, DataLoader(data))
def main():
    return train(model=net, loader=make())
train(*args)
""",
    "named in a comment": """
def train(model, loader):
    return loader

train(net, DataLoader(data))  # train again
""",
    "shadowed in a caller": """
def train(model, loader):
    return loader

def other():
    train = lambda *a: None
    train(net, first)
train(net, second)
""",
    "called as a method": """
def train(model, loader):
    return loader

trainer.train(net, first)
train(net, second)
""",
    "declared global": """
def train(model, loader):
    return loader

def other():
    global train
    train(net, first)
""",
    "decorated, two statements on a line": """
@decorate
def train(model, loader):
    return loader

a = 1; train(net, first)
""",
    "called in its own body": """
def train(model, loader):
    return train(model, loader[1:])
""",
}


@pytest.mark.parametrize("source", PASSED_SOURCES.values(), ids=PASSED_SOURCES.keys())
def test_calls_found_in_the_text_are_the_index_calls(source):
    from torchdoctor.lint.context import Context
    from torchdoctor.lint.occurrences import index
    from torchdoctor.lint.values import passed_values

    def passed(with_index: bool) -> list[tuple[int, int, str]]:
        tree = ast.parse(source)
        ctx = Context("t.py", source, tree)
        if with_index:
            index(ctx)
        function = next(node for node in tree.body if isinstance(node, ast.FunctionDef))
        return [
            (call.lineno, call.col_offset, ast.dump(value))
            for call, value in passed_values(ctx, function, "loader")
        ]

    assert passed(with_index=False) == passed(with_index=True)


def test_calls_are_found_in_the_text_without_the_index():
    from torchdoctor.lint.context import Context
    from torchdoctor.lint.values import passed_values

    source = PASSED_SOURCES["called at the top and in a function"]
    tree = ast.parse(source)
    ctx = Context("t.py", source, tree)
    found = passed_values(ctx, tree.body[0], "loader")
    assert [ast.unparse(value) for _, value in found] == ["DataLoader(data)", "make()"]
    assert ctx.file_index is None
