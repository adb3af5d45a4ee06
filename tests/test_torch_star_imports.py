"""What a check finds through a star import from torch (`from torch.autograd import *`,
`torch.nn.init`: the names the checker binds, against the installed torch), and the places its
messages name."""

from __future__ import annotations

import importlib

from conftest import import_torch

from torchdoctor.lint.checker import check_source
from torchdoctor.lint.context import TORCH_STAR_EXPORTS

import_torch()


def test_each_name_is_in_the_modules_all():
    for module, names in TORCH_STAR_EXPORTS.items():
        exported = set(importlib.import_module(module).__all__)
        assert set(names) <= exported, (module, set(names) - exported)


def test_names_of_a_star_import_from_torch_are_torchs():
    # MADDPG-on-PyTorch: `from torch.autograd import *`, then `Variable(...)`; easyrl's init.
    source = (
        "import torch\nfrom torch.autograd import *\nfrom torch.nn.init import *\n\n"
        "states = Variable(torch.zeros(3))\northogonal(torch.empty(3, 3))\n"
    )
    found = {
        (f.line, f.code)
        for f in check_source(source, "maddpg.py", frozenset({"TD103", "TD803"})).findings
    }
    assert found == {(5, "TD103"), (6, "TD803")}
    # A name the file binds itself stays its own.
    own = source.replace("\n\nstates", "\n\n\ndef Variable(x):\n    return x\n\n\nstates")
    found = {
        (f.line, f.code)
        for f in check_source(own, "maddpg.py", frozenset({"TD103", "TD803"})).findings
    }
    assert found == {(11, "TD803")}


def test_dataparallel_run_before_a_move_names_the_line_of_the_wrap():
    # conditional-musegan's generate.py: the wrap on one line, the run twenty lines later: the
    # message says where the model was wrapped, where the move belongs.
    source = (
        "import torch\nimport torch.nn as nn\n\n\ndef generate(z):\n    generator = nn.Linear(4, 2)\n"
        "    generator = torch.nn.DataParallel(generator)\n    generator.eval()\n"
        "    return generator(z)\n"
    )
    (finding,) = check_source(source, "generate.py", frozenset({"TD601"})).findings
    assert finding.line == 9 and "DataParallel on line 7 and runs it here" in finding.message


def test_a_star_import_that_gives_the_file_torch_makes_it_torch_code():
    # nnlm's dataset.py: `torch` only through `from utils.utils import *` (a module not at hand),
    # then `torch.device(...)` and a discarded move of torchtext's vectors.
    source = (
        "import torchtext\nfrom utils.utils import *\n\n\ndef load(opt):\n"
        "    device = torch.device(opt.device)\n    vectors = torchtext.vocab.Vectors(name='a')\n"
        "    vectors.vectors.to(device)\n"
    )
    found = [
        (f.line, f.code) for f in check_source(source, "dataset.py", frozenset({"TD001"})).findings
    ]
    assert found == [(8, "TD001")]
    # A file naming `torch` only as another object's attribute is no such file.
    quiet = source.replace("torch.device(opt.device)", "opt.torch.device")
    assert check_source(quiet, "dataset.py", frozenset({"TD001"})).findings == []
