"""A backslash meant to continue a line with a space after it ("unexpected character after line
continuation character", invisible in an editor) stops Python at the whole file: the doctor
reports it with a fix that deletes the blanks, and still checks the rest of the file (recall set
cl: RuiChen96/MaskRCNN-Knowledge-Distillation's focal loss, whose `reduce=False` went unseen)."""

from __future__ import annotations

import ast

from torchdoctor.catalog import _registry
from torchdoctor.catalog.tooling.td700_syntax_error import repair_blanks_after_continuation
from torchdoctor.lint.checker import check_source, fix_source

ALL = frozenset(p.code for p in _registry.all_pitfalls())

FOCAL_LOSS = (
    "import torch.nn.functional as F\n"
    "\n"
    "\n"
    "def focal_loss(input, target):\n"
    '    assert not target.requires_grad, "nn criterions don\'t compute the gradient " \\ \n'
    '        "w.r.t. targets"\n'
    "    return F.cross_entropy(input, target, reduce=False)\n"
    "\n"
    "\n"
    'NOTE = r"""a backslash \\ \n'
    'in a string is the string\'s"""\n'
)


def test_the_rest_of_the_file_is_checked():
    found = check_source(FOCAL_LOSS, "focal_loss.py", ALL).findings
    assert [(f.line, f.column, f.code) for f in found] == [(5, 82, "TD700"), (7, 43, "TD802")]
    assert "blanks after the backslash" in found[0].message


def test_the_fix_deletes_the_blanks_and_is_idempotent():
    fixed = fix_source(FOCAL_LOSS, "focal_loss.py", frozenset({"TD700"}), unsafe=False).source
    ast.parse(fixed)
    lines = fixed.splitlines()
    assert lines[4].endswith('gradient " \\')
    assert lines[9] == FOCAL_LOSS.splitlines()[9]  # the string keeps its text
    assert fix_source(fixed, "focal_loss.py", frozenset({"TD700"}), unsafe=False).source == fixed


def test_backslashes_in_strings_and_at_line_ends_are_left_alone():
    assert repair_blanks_after_continuation('x = "a \\\\ b"\n') is None
    assert repair_blanks_after_continuation("x = 1 + \\\n    2\n") is None
    assert repair_blanks_after_continuation('s = r"""a \\ \nb"""\n') is None
    text, places = repair_blanks_after_continuation("x = 1 + \\ \t\n    2\n")
    assert (text, places) == ("x = 1 +  \t\\\n    2\n", [(1, 8)])
