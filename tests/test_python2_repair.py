"""Research code of 2016-2018 written for Python 2 (`print x`, `except E, e:`) does not parse on
Python 3: the doctor reports the syntax error once and still checks the rest of the file,
whose old PyTorch idioms are the ones such code holds (recall set f: pytorch-i3d, DiscoGAN,
pytorch-maml...)."""

from __future__ import annotations

import ast
import time

from torchdoctor.catalog import _registry
from torchdoctor.catalog.tooling.td700_syntax_error import (
    repair_empty_blocks,
    repair_missing_colons,
    repair_python2_not_equal,
    repair_python2_statements,
)
from torchdoctor.lint.checker import check_source, fix_source

ALL = frozenset(p.code for p in _registry.all_pitfalls())

PYTHON2 = """\
import sys
import torch


def train(loader, model):
    it = iter(loader)
    x, y = it.next()
    print "batch", x.size()
    print >>sys.stderr, "starting",
    print
    try:
        out = model(x)
    except ValueError, e:
        print e; return
    if out is None: print "none"  # a one-line body
    print("already Python 3")
    print = sys.stdout.write
    return x.cuda(async=True)
"""


def findings(source: str) -> list[tuple[int, int, str]]:
    return [(f.line, f.column, f.code) for f in check_source(source, "old.py", ALL).findings]


def test_the_rest_of_a_python2_file_is_checked():
    found = findings(PYTHON2)
    assert (7, 12, "TD301") in found  # `it.next()`, before the first print: its columns kept
    syntax = [f for f in check_source(PYTHON2, "old.py", ALL).findings if f.code == "TD700"]
    assert [(f.line, f.column) for f in syntax] == [(8, 5), (18, 19)]  # the first print, async
    assert "Missing parentheses in call to 'print'" in syntax[0].message
    assert "non_blocking" in syntax[1].message  # the async repair still applies, chained


def test_statements_are_bracketed_in_place():
    text, places = repair_python2_statements(PYTHON2)
    ast.parse(text.replace("async=", "non_blocking="))  # the other repair's part
    assert places == [(8, 4)]
    old, new = PYTHON2.splitlines(), text.splitlines()
    assert new[7] == '    print("batch", x.size())'
    assert new[8] == '    print(  sys.stderr, "starting",)'
    assert new[9] == "    print()"
    assert new[12] == "    except(ValueError, e):"
    assert new[13] == "        print(e); return"
    assert new[14] == '    if out is None: print("none"  )# a one-line body'
    assert new[15:17] == old[15:17]  # Python 3 calls and `print` as a name: untouched
    for before, after in zip(old, new):  # what was there keeps its column
        assert after.startswith(before[: len(before) - len(before.lstrip())])


def test_python3_sources_are_not_repaired():
    assert repair_python2_statements("print(x)\nprint = log\nexcept_ = 1\n") is None


def test_a_python3_file_with_a_bare_print_and_a_syntax_error_is_one_finding():
    # A bare `print` is Python 3 too: nothing to repair, and no internal error.
    source = "import torch\nprint\nx = = 1\n"
    assert repair_python2_statements(source) is None
    result = check_source(source, "bad.py", ALL)
    assert [(f.line, f.code) for f in result.findings] == [(3, "TD700")]
    assert not result.internal_errors


def test_a_file_with_other_python2_syntax_stays_one_syntax_error():
    source = PYTHON2.replace('print "none"', "x = `out`")
    assert [code for _, _, code in findings(source)] == ["TD700"]


def test_fixes_apply_and_are_idempotent():
    fixed = fix_source(PYTHON2, "old.py", ALL, unsafe=False)
    assert "next(it)" in fixed.source and "non_blocking=True" in fixed.source
    assert 'print "batch"' in fixed.source  # the Python 2 statements are the user's to port
    assert not fixed.remaining.internal_errors
    again = fix_source(fixed.source, "old.py", ALL, unsafe=False)
    assert again.source == fixed.source and again.fixed == 0


def test_many_print_statements_stay_linear():
    body = "".join(f"    print 'step', {i}\n" for i in range(20_000))
    source = "import torch\n\ndef f(x):\n" + body + "    return x.data[0]\n"
    start = time.process_time()
    found = check_source(source, "big.py", ALL).findings
    assert sum(f.code == "TD700" for f in found) == 1
    assert time.process_time() - start < 60  # quadratic would take many minutes


def test_not_equal_of_python2_is_read_as_python3_reads_it():
    # pix2pix.pytorch: `if lambdaIMG <> 0:` hid the whole training script.
    source = (
        "import torch\n\ndef step(loss, weight, loader):\n    batch = iter(loader).next()\n"
        "    if weight <> 0:\n        loss.backward(retain_variables=True)\n"
        "    print('<>', weight<>1)\n    return batch\n"
    )
    text, places = repair_python2_not_equal(source)
    assert places == [(5, 14)]
    assert text == source.replace("weight <> 0", "weight != 0").replace("weight<>1", "weight!=1")
    found = findings(source)
    assert (5, 15, "TD700") in found and (4, 13, "TD301") in found and (6, 23, "TD803") in found
    assert repair_python2_not_equal("x = '<>'\n") is None


def test_a_header_typed_without_its_colon_hides_no_other_finding():
    # FCN-pytorch: `else` without its colon stopped Python at line 4, and the doctor with it.
    source = (
        "import sys\nimport torch\n\nif sys.argv[1] == 'CamVid':\n    root = 'CamVid/'\nelse\n"
        "    root = 'CityScapes/'\n\ndef train(model, optimizer, scheduler, loader)  # one epoch\n"
        "    for x, y in loader:\n        scheduler.step()\n        optimizer.zero_grad()\n"
        "        model(x).sum().backward()\n        optimizer.step()\n"
        "    torch.save(model, 'model.pt')\n"
    )
    text, places = repair_missing_colons(source)
    assert places == [(6, 4), (9, 48)]
    assert text == source.replace("else\n", "else:\n").replace("loader)  #", "loader)  :#")
    found = findings(source)
    assert (6, 5, "TD700") in found and (9, 49, "TD700") in found
    assert (11, 9, "TD203") in found and (15, 5, "TD503") in found
    assert repair_missing_colons("x = {1 2}\n") is None  # another error: not this repair's
    assert repair_missing_colons("x = 1\n") is None


def test_a_block_header_with_no_body_hides_no_other_finding():
    # LSTM-DeepFM's fine-tuning script: `if not debutanizer:` left without its body stopped
    # Python at line 5, and the doctor with it; the same while the code is being typed.
    source = (
        "import torch\n\n\ndef train(loader, model, debug=False):\n    if not debug:  # soon\n"
        "    path = 'x'\n    for x in loader:\n        x.to('cuda')\n        loss = model(x).sum()\n"
        "        loss.backward()\n        print(loss.data[0])\n"
    )
    text, places = repair_empty_blocks(source)
    assert text == source.replace("if not debug:  #", "if not debug: pass  #")
    assert places == [(6, 4)]
    found = findings(source)
    assert (6, 5, "TD700") in found and (11, 15, "TD101") in found
    syntax = [f for f in check_source(source, "train.py", ALL).findings if f.code == "TD700"]
    assert syntax[0].message.startswith("SyntaxError: expected an indented block after 'if'")
    # A body commented out, the header spread over two lines: `pass` after its colon.
    spread = "def f(a,\n      b):\n    # return a + b\n\nx = 1\n"
    assert repair_empty_blocks(spread)[0] == spread.replace("b):", "b): pass")
    # Two such blocks: the parser's message would be about the first only; left unread.
    two = source.replace("    for x in loader:\n", "    for x in loader:\n    for y in x:\n")
    assert [(f.line, f.code) for f in check_source(two, "train.py", ALL).findings] == [(6, "TD700")]
    assert repair_empty_blocks("x = {1 2}\n") is None and repair_empty_blocks("x = 1\n") is None
    # easyrl's script ends with `def make_env():` and nothing after: Python points at the header
    # itself; the rest of the file is still read.
    unfinished_end = "import torch.nn as nn\n\nnn.init.orthogonal(w)\n\ndef make_env():\n"
    assert repair_empty_blocks(unfinished_end)[0] == unfinished_end.replace("():", "(): pass")
    assert (3, 1, "TD803") in findings(unfinished_end)
    assert repair_empty_blocks("x = 1\ndef f():\n\ny = 2\n")[0] == "x = 1\ndef f(): pass\n\ny = 2\n"
    # A header typed without its colon and its body (ATEC2018's `with open(path)`): each place
    # is reported with what Python said there once the one before it was repaired.
    unfinished = (
        "def save(d):\n    with open('out')\n\n    return d\n\nimport torch\nx.cuda(async=True)\n"
    )
    syntax = [f for f in check_source(unfinished, "save.py", ALL).findings if f.code == "TD700"]
    assert [(f.line, f.message) for f in syntax] == [
        (2, "SyntaxError: expected ':'"),
        (4, "SyntaxError: expected an indented block after 'with' statement on line 2"),
        (
            7,
            "SyntaxError: invalid syntax -- `async` is a keyword since Python 3.7; PyTorch renamed "
            "the argument to `non_blocking=`",
        ),
    ]


def test_a_python2_raise_with_a_message_is_bracketed_and_the_rest_checked():
    # pytorch-kaggle-amazon-space's boilerplate: `raise TypeError, '...'` hid its `.data[0]`s.
    source = (
        "import torch\n\n\n"
        "def make(opt_type):\n"
        "    raise TypeError, 'Unknown optimizer type=%s' % (opt_type, )  # why\n\n\n"
        "def train(model, x, y):\n"
        "    loss = torch.nn.CrossEntropyLoss()(model(x), y)\n"
        "    raise ValueError('fine'), None if x else y\n"
        "    return loss.data[0]\n"
    )
    text, places = repair_python2_statements(source)
    assert places == [(5, 4)]  # the first, where Python stops
    assert (
        text.splitlines()[4]
        == "    raise TypeError( 'Unknown optimizer type=%s' % (opt_type, )  )# why"
    )
    assert text.splitlines()[9] == "    raise ValueError('fine')( None if x else y)"
    ast.parse(text)
    assert [(line, code) for line, _, code in findings(source)] == [(5, "TD700"), (11, "TD101")]
    # Python 3's own raise statements are left as they are.
    assert repair_python2_statements("raise ValueError('x') from error\nraise (a, b)\n") is None
