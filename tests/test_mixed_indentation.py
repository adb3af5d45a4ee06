"""Python 2 code indented with tabs and spaces (a tab reaching the next multiple of eight) raises
TabError on Python 3 and used to hide the whole file: it is reported once, where Python stops,
and the rest is read as Python 2 read it (set s: Shufflenet-v2's `eval.py`)."""

from __future__ import annotations

from torchdoctor.catalog import _registry
from torchdoctor.lint.checker import check_source, fix_source
from torchdoctor.lint.indentation import expand_indentation_tabs

ALL = frozenset(p.code for p in _registry.all_pitfalls())

# The body of `validate` is indented by one tab, its loop body by a tab and four spaces, the
# loop itself by eight spaces: Python 2 read them as 8, 12 and 8 columns.
MIXED = (
    "import torch\n"
    "\n"
    "def validate(loader, model, criterion):\n"
    "\tmodel.eval()\n"
    "        for input, target in loader:\n"
    "\t    target = target.cuda(async=True)\n"
    "\t    input_var = torch.autograd.Variable(input, volatile=True)\n"
    "\t    loss = criterion(model(input_var), target)\n"
    "\t    print(loss.data[0])\n"
)


def found(source: str) -> list[tuple[int, str, bool]]:
    return [
        (f.line, f.code, f.fix is not None) for f in check_source(source, "old.py", ALL).findings
    ]


def test_the_rest_of_a_file_with_mixed_indentation_is_checked():
    result = check_source(MIXED, "old.py", ALL)
    assert not result.internal_errors
    syntax = [f for f in result.findings if f.code == "TD700"]
    assert [f.line for f in syntax] == [5, 6]  # Python's TabError, then the async argument
    assert "inconsistent use of tabs and spaces" in syntax[0].message
    assert "non_blocking" in syntax[1].message
    codes = {(line, code) for line, code, _ in found(MIXED)}
    assert {(7, "TD103"), (9, "TD101")} <= codes


def test_only_the_repairs_own_fix_is_offered_its_columns_are_the_files():
    # The rules saw the expanded text: their edits would land on the wrong characters.
    assert [(line, code) for line, code, fixable in found(MIXED) if fixable] == [(6, "TD700")]
    fixed = fix_source(MIXED, "old.py", ALL, unsafe=True)
    assert fixed.source == MIXED.replace("async=True", "non_blocking=True")
    assert fix_source(fixed.source, "old.py", ALL, unsafe=True).source == fixed.source


def test_tabs_expand_to_the_next_multiple_of_eight_in_indentation_only():
    text = expand_indentation_tabs("a\n  \tx = '\t'\n\t\ty\r\n")
    assert text == "a\n        x = '\t'\n                y\r\n"
    assert expand_indentation_tabs("x = '\t'\n") is None  # no tab in any indentation
    assert expand_indentation_tabs("x = 1\n") is None


def test_a_file_broken_otherwise_stays_one_syntax_error():
    source = MIXED + "\tx = = 1\n"
    assert [code for _, code, _ in found(source)] == ["TD700"]


def test_consistent_tabs_are_not_touched():
    source = (
        "import torch\n\ndef f(model, criterion, x, y):\n"
        "\tloss = criterion(model(x), y)\n\treturn loss.data[0]\n"
    )
    result = check_source(source, "t.py", ALL)
    assert [(f.line, f.column, f.code) for f in result.findings] == [(5, 9, "TD101")]
    assert result.findings[0].fix is not None


# ADDA-PyTorch's Phase2MNISTtoUSPS.py: one line of four tabs among lines of sixteen spaces. Read
# with tabs of eight columns it is indented too deep (no Python ran it); the author's editor
# showed tabs of four, and so the rest of the file is read.
FOUR_COLUMN_TABS = (
    "import torch\n"
    "\n"
    "def train(loader, model, criterion):\n"
    "    for i, (x, y) in enumerate(loader):\n"
    "        loss = criterion(model(x), y)\n"
    "        if i % 100 == 0:\n"
    "            print(i, loss.data[0])\n"
    "            if i % 300 == 0:\n"
    "                correct = 0\n"
    "\t\t\t\ttotal = 0\n"
    "                for images, labels in loader:\n"
    "                    total += labels.size(0)\n"
)


def test_tabs_read_as_four_columns_when_eight_do_not_parse():
    result = check_source(FOUR_COLUMN_TABS, "old.py", ALL)
    assert [(f.line, f.code) for f in result.findings if f.code == "TD700"] == [(10, "TD700")]
    assert (7, "TD101") in {(f.line, f.code) for f in result.findings}
    # Tabs that fit neither width: one syntax error, as before.
    broken = FOUR_COLUMN_TABS.replace("\t\t\t\ttotal", "\t\t\ttotal")
    assert [f.code for f in check_source(broken, "old.py", ALL).findings] == ["TD700"]
