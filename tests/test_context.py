"""The lint context: qualified names through imports and kinds inferred from how values were made."""

from __future__ import annotations

import ast
import textwrap

import pytest

from torchdoctor.lint.checker import CheckResult, _walk, with_context_hooks
from torchdoctor.lint.context import Context, Kind


def kinds_at_probe(source: str) -> dict[str, Kind]:
    """Kinds of the names in `probe(a, b, ...)` calls, as the context sees them at that point."""
    source = textwrap.dedent(source)
    tree = ast.parse(source)
    ctx = Context("t.py", source, tree)
    seen: dict[str, Kind] = {}

    def probe(node, ctx):
        for arg in node.args:
            seen[ast.unparse(arg)] = ctx.kind_of(arg)
        return ()

    _walk(
        tree,
        ctx,
        with_context_hooks({ast.Call: ([], {"probe": [(None, probe)]}, None)}),
        (frozenset(), frozenset()),
        CheckResult([]),
    )
    return seen


def qualnames(source: str) -> dict[str, str | None]:
    source = textwrap.dedent(source)
    tree = ast.parse(source)
    ctx = Context("t.py", source, tree)
    found = {}

    def probe(node, ctx):
        for arg in node.args:
            found[ast.unparse(arg)] = ctx.qualname(arg)
        return ()

    _walk(
        tree,
        ctx,
        with_context_hooks({ast.Call: ([], {"probe": [(None, probe)]}, None)}),
        (frozenset(), frozenset()),
        CheckResult([]),
    )
    return found


def test_qualnames_through_imports_and_aliases():
    found = qualnames("""
        import torch as T
        import torch.nn.functional as F
        from torch import nn
        from torch.optim import SGD as Sgd
        import numpy
        probe(T.randn, F.relu, nn.Linear, nn.functional.sigmoid, Sgd, numpy.zeros, undefined.x)
    """)
    assert found == {
        "T.randn": "torch.randn",
        "F.relu": "torch.nn.functional.relu",
        "nn.Linear": "torch.nn.Linear",
        "nn.functional.sigmoid": "torch.nn.functional.sigmoid",
        "Sgd": "torch.optim.SGD",
        "numpy.zeros": "numpy.zeros",
        "undefined.x": None,
    }


def test_rebinding_shadows_an_import():
    found = qualnames("""
        import torch.nn.functional as F
        def f(F):
            probe(F.relu)
        F = object()
        probe(F.relu)
    """)
    assert found == {"F.relu": None}


def test_parameters_shadow_imports():
    found = qualnames("""
        from torch.nn.functional import sigmoid
        import torch.nn.functional as F
        def f(sigmoid, F=None):
            probe(sigmoid, F.relu)
        probe(sigmoid)
    """)
    assert found == {"sigmoid": "torch.nn.functional.sigmoid", "F.relu": None}


def test_a_function_reads_an_import_the_module_makes_further_down():
    # capsule-networks: the functions run once the module is loaded, with its imports done.
    found = qualnames("""
        def route(x):
            probe(Variable, F.relu, shadowed, later)
        def local(Variable):
            probe(Variable.x)
        probe(F.softmax)
        if __name__ == "__main__":
            from torch.autograd import Variable
            import torch.nn.functional as F
            from torch import shadowed
            from . import later
        shadowed = None
    """)
    assert found == {
        "Variable": "torch.autograd.Variable",
        "F.relu": "torch.nn.functional.relu",
        "shadowed": None,  # the top level binds it otherwise too
        "later": None,  # relative: not followed
        "Variable.x": None,  # a parameter
        "F.softmax": None,  # the top level runs in order: not imported yet
    }


def test_relative_imports_are_not_torch():
    assert qualnames("from . import torch\nprobe(torch.randn)\n") == {"torch.randn": None}


def test_torch_from_a_star_import_is_torch():
    # DeepRL's agents: `from ..network import *` brings `torch` (and every other name).
    assert qualnames("from ..network import *\nprobe(torch.where)\n") == {
        "torch.where": "torch.where"
    }
    found = qualnames("""
        torch = load_plugin()
        from helpers import *
        def f(torch):
            probe(torch.where)
    """)
    assert found == {"torch.where": None}
    assert qualnames("from helpers import *\nprobe(nn.Linear)\n") == {"nn.Linear": None}


def test_kinds_from_how_values_were_made():
    kinds = kinds_at_probe("""
        import numpy as np
        import torch
        import torchvision
        from torch import nn, optim
        from torch.utils.data import DataLoader, DistributedSampler

        class Base(nn.Module):
            pass

        class Net(Base):
            pass

        class NotAModule:
            pass

        model = Net()
        resnet = torchvision.models.resnet18()
        seq = nn.Sequential(nn.Linear(2, 2))
        x = torch.randn(3)
        y = model(x)
        z = x.cuda().float()
        w = x * 2
        opt = optim.SGD(model.parameters(), lr=0.1)
        sched = optim.lr_scheduler.StepLR(opt, 1)
        loader = DataLoader([], batch_size=2)
        sampler = DistributedSampler([])
        arr = np.zeros(3)
        plain = NotAModule()
        moved = model.to("cuda")
        compiled = torch.compile(model)
        probe(model, resnet, seq, x, y, z, w, opt, sched, loader, sampler, arr, plain, moved, compiled)
    """)
    assert kinds == {
        "model": Kind.MODULE,
        "resnet": Kind.MODULE,
        "seq": Kind.MODULE,
        "x": Kind.TENSOR,
        "y": Kind.TENSOR,
        "z": Kind.TENSOR,
        "w": Kind.TENSOR,
        "opt": Kind.OPTIMIZER,
        "sched": Kind.SCHEDULER,
        "loader": Kind.LOADER,
        "sampler": Kind.SAMPLER,
        "arr": Kind.NDARRAY,
        "plain": Kind.UNKNOWN,
        "moved": Kind.MODULE,
        "compiled": Kind.MODULE,
    }


def test_kinds_from_annotations_loops_and_attributes():
    kinds = kinds_at_probe("""
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader

        def train(net: nn.Module, batch: torch.Tensor, other):
            probe(net, batch, other)

        for images, labels in DataLoader([]):
            probe(images, labels)

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)
                self.scale = torch.ones(2)

            def forward(self, x):
                probe(self.fc, self.scale)
    """)
    assert kinds == {
        "net": Kind.MODULE,
        "batch": Kind.TENSOR,
        "other": Kind.UNKNOWN,
        "images": Kind.TENSOR,
        "labels": Kind.TENSOR,
        "self.fc": Kind.MODULE,
        "self.scale": Kind.TENSOR,
    }


def test_kinds_through_local_functions_and_tuple_assignment():
    kinds = kinds_at_probe("""
        import torch
        from torch.utils.data import DataLoader

        def make_loaders():
            return DataLoader([]), DataLoader([])

        def make_tensor():
            return torch.zeros(2)

        def batches():
            yield torch.zeros(2)
            return torch.zeros(2)

        train_loader, val_loader = make_loaders()
        t = make_tensor()
        g = batches()
        a, b = t.cuda(), 3
        probe(train_loader, val_loader, t, g, a, b)
    """)
    assert kinds == {
        "train_loader": Kind.LOADER,
        "val_loader": Kind.LOADER,
        "t": Kind.TENSOR,
        "g": Kind.UNKNOWN,
        "a": Kind.TENSOR,
        "b": Kind.UNKNOWN,
    }


def test_kinds_of_tuples_of_tensors_and_in_place_methods():
    kinds = kinds_at_probe("""
        import torch

        x = torch.randn(4, 3)
        first, second = torch.chunk(x, 2)
        values, indices = x.max(dim=1)
        low, high = torch.max(x, 1)
        pair = torch.split(x, 2)
        filled = torch.zeros_like(x).scatter_(1, indices[:, None], 1)
        larger = torch.max(x, x)
        a, b = unknown(x)
        c, d = torch.max(x, x)
        probe(first, second, values, indices, low, high, pair, filled, larger, a, b, c)
    """)
    assert kinds == {
        "first": Kind.TENSOR,
        "second": Kind.TENSOR,
        "values": Kind.TENSOR,
        "indices": Kind.TENSOR,
        "low": Kind.TENSOR,
        "high": Kind.TENSOR,
        "pair": Kind.UNKNOWN,  # the tuple itself
        "filled": Kind.TENSOR,
        "larger": Kind.TENSOR,
        "a": Kind.UNKNOWN,
        "b": Kind.UNKNOWN,
        "c": Kind.UNKNOWN,  # elementwise max of two tensors: one tensor, unpacked by rows
    }


def test_bindings_are_flow_sensitive():
    kinds = kinds_at_probe("""
        import torch
        x = torch.zeros(2)
        probe(x)
        x = "text"
        probe(x)
    """)
    assert kinds == {"x": Kind.UNKNOWN}  # the later probe wins in the dict


@pytest.mark.parametrize("source, line, column", [("x = 1\n", 1, 1), ("a = '中'; b = 2\n", 1, 10)])
def test_positions_are_character_based(source, line, column):
    tree = ast.parse(source)
    ctx = Context("t.py", source, tree)
    node = tree.body[-1] if len(tree.body) == 1 else tree.body[1]
    assert ctx.position(ctx.span(node)[0]) == (line, column)


def test_names_are_read_as_python_reads_them_in_a_file_with_other_than_ascii():
    # A comment in Chinese no longer opens every name gate of the file (half of transformers'
    # files hold such text), and a name spelled in full-width letters is still that name.
    source = "# 训练模型\nｍｏｄｅｌ = build()\nmodel.cuda()\n"
    ctx = Context("t.py", source, ast.parse(source), None)
    assert ctx.may_name("model") and ctx.may_name("build")
    assert not ctx.may_name("optimizer")
    plain = "model = build()\n"
    assert not Context("p.py", plain, ast.parse(plain), None).may_name("optimizer")


def test_a_call_spelled_in_full_width_letters_is_a_call_of_that_name():
    from torchdoctor.lint.values import may_be_called

    source = "# 注释\ndef step():\n    pass\n\n\nｓｔｅｐ()\n"
    ctx = Context("t.py", source, ast.parse(source), None)
    assert may_be_called(ctx, "step")
    assert not may_be_called(ctx, "train")


def test_a_check_leaves_no_cycle_holding_the_tree():
    """Rules keep objects that hold the file's Context in its memos; once the check is over
    the Context forgets them, so the tree is freed at once rather than left to the cyclic
    collector (which would walk all of it again: milliseconds per edit in the server)."""
    import gc

    from torchdoctor.catalog import _registry
    from torchdoctor.lint.checker import check_source

    source = textwrap.dedent(
        """
        import torch
        import torch.nn as nn

        model = nn.Linear(2, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                loss.backward()
                optimizer.step()
            total = total + loss
            model.eval()
            evaluate(model)
        torch.save(model, "m.pth")
        """
    )
    codes = frozenset(p.code for p in _registry.all_pitfalls())
    tree = ast.parse(source)
    enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        assert check_source(source, "t.py", codes, tree=tree).findings  # the rules did work
        del tree
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = [type(o).__name__ for o in gc.garbage if isinstance(o, (ast.AST, Context))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
    assert left == []


def test_a_none_placeholder_attribute_takes_the_kind_of_what_is_built_later():
    kinds = kinds_at_probe(
        """
        import torch.nn as nn

        class Trainer:
            def __init__(self):
                self.model = None
                self.other = nn.Linear(2, 2)

            def build(self):
                self.model = nn.Linear(2, 2)
                self.other = make_something()

            def save(self):
                probe(self.model, self.other)
        """
    )
    assert kinds == {"self.model": Kind.MODULE, "self.other": Kind.UNKNOWN}


def test_a_scope_s_other_bindings_are_read_once_for_all_its_names(monkeypatch):
    # Imports, definitions and `global`s of a scope are gathered once and shared by every name
    # asked about: gathered once per name, a long module costs the square of its length (a
    # decorator once slipped off this helper; bench_scaling's flat module caught it).
    from torchdoctor.lint import bindings as lint_bindings

    built = []
    original = lint_bindings._OtherBindings.__init__

    def counting(self, scope, found):
        built.append(scope)
        original(self, scope, found)

    monkeypatch.setattr(lint_bindings._OtherBindings, "__init__", counting)
    source = "import torch\n" + "".join(f"x{i} = torch.zeros({i})\n" for i in range(50))
    tree = ast.parse(source)
    ctx = Context("flat.py", source, tree)
    for i in range(50):
        assert lint_bindings.bindings(ctx, tree, f"x{i}")[0].value is not None
    assert len(built) == 1
