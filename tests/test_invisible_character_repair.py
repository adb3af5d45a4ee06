"""A zero-width space or a no-break space pasted with the code (from a web page, a chat, a PDF)
stops Python at the whole file ("invalid non-printable character U+200B"): the doctor reports
each such character with a fix that deletes it, and still checks the rest of the file (recall
set w: V2LLAIN/Vision_Generation's VAE, whose `size_average=` went unseen)."""

from __future__ import annotations

import ast

from torchdoctor.catalog import _registry
from torchdoctor.catalog.tooling.td700_syntax_error import repair_invisible_characters
from torchdoctor.lint.checker import check_source, fix_source

ALL = frozenset(p.code for p in _registry.all_pitfalls())

PASTED = (
    "import torch\n"
    "import torch.nn.functional as F\n"
    "\n"
    "\n"
    "def loss_function(recon_x, x, mu, logvar):\n"
    "    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), size_average=False)\n"
    "\u00a0   KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())\n"
    "    return BCE + KLD\u200b\n"
    "\n"
    "\n"
    'NOTE = "a\u200bb"  # kept: inside a string, and in this comment\u200b\n'
)


def test_the_rest_of_the_file_is_checked():
    found = check_source(PASTED, "vae.py", ALL).findings
    assert [(f.line, f.column, f.code) for f in found] == [
        (6, 60, "TD802"),  # seen only once the file is read
        (7, 1, "TD700"),
        (8, 21, "TD700"),
    ]
    assert "no-break space (U+00A0)" in found[1].message
    assert "zero-width space (U+200B)" in found[2].message


def test_the_fix_deletes_the_characters_and_is_idempotent():
    fixed = fix_source(PASTED, "vae.py", frozenset({"TD700"}), unsafe=False).source
    ast.parse(fixed)
    lines = fixed.splitlines()
    assert lines[6] == "    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())"
    assert lines[7] == "    return BCE + KLD"
    assert lines[10] == PASTED.splitlines()[10]  # the string and the comment keep theirs
    assert fix_source(fixed, "vae.py", frozenset({"TD700"}), unsafe=False).source == fixed


def test_characters_in_strings_and_comments_are_left_alone():
    assert repair_invisible_characters('x = "a\u200bb"  # c\u200b\n') is None
    assert repair_invisible_characters("x = 1\n") is None
    text, places = repair_invisible_characters("x = 1\u200b\n")
    assert (text, places) == ("x = 1 \n", [(1, 5)])


def test_a_file_that_parses_is_not_reported():
    source = 'import torch\nNOTE = "\u200b"\n'
    assert check_source(source, "ok.py", ALL).findings == []
