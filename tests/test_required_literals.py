"""The literal texts a signature's regex cannot match without (`ErrorSignature.literals`) keep
`explain` from compiling it for a message that lacks them: they must never rule out a match."""

from __future__ import annotations

import re

import pytest

from conftest import FIXTURES
from test_explain_fixtures import read_fixture
from torchdoctor.catalog import all_pitfalls
from torchdoctor.catalog._model import may_hold, required_literals
from torchdoctor.explain import match
from torchdoctor.explain.model import ErrorBlock
from torchdoctor.explain.parse import parse_text, pytest_failures


@pytest.mark.parametrize(
    ("regex", "literals"),
    [
        (
            "Expected all tensors to be on the same device",
            ("Expected all tensors to be on the same device",),
        ),
        # each alternative's own literal: a match holds one of them
        (
            r"pickle data was truncated|unpickling stack underflow",
            ("pickle data was truncated", "unpickling stack underflow"),
        ),
        (
            r"(?:CUDA|HIP) out of memory|error=2 : out of memory",
            (" out of memory", "error=2 : out of memory"),
        ),
        # a group matched once counts, its name aside
        (r"(?P<status>CUDNN_STATUS_INTERNAL_ERROR)\b", ("CUDNN_STATUS_INTERNAL_ERROR",)),
        (r"ab(?:cdefgh)ij", ("cdefgh",)),
        # flags that leave plain characters as they are
        (r"(?m)^Bus error \(core dumped\)", ("Bus error (core dumped)",)),
        # none known: an alternative without one, a case-insensitive or verbose regex
        (r"long enough literal|\d+", ()),
        (r"(?i)case does not matter here", ()),
        (r"(?x) spaces are not text ", ()),
        # not counted: an optional, repeated or alternating group, a lookaround, a class
        (r"x(?:optional group)?y", ()),
        (r"x(?:repeated group)+y", ()),
        (r"x(?:first|second choice)y", ()),
        (r"x(?!not this text)y", ()),
        (r"[a-z]{4,}", ()),
        # an escape that writes its character as a code: the written text is not the text
        (r"\x41BCD", ()),
        (r"caf\u00e9 au lait", ()),
    ],
)
def test_required_literals(regex, literals):
    assert required_literals(regex) == literals


def _texts() -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted((FIXTURES / "explain").glob("*/*.txt"))]


def test_no_fixture_is_ruled_out_by_the_literals_of_a_regex_that_matches_it():
    texts = _texts()
    signatures = [s for p in all_pitfalls() for s in p.error_signatures if s.regex]
    checked = 0
    for signature in signatures:
        exact = re.compile(signature.regex, re.S)
        folded = re.compile(signature.regex, re.S | re.I)
        for text in texts:
            if exact.search(text):
                assert may_hold(signature.literals, text), signature.regex
                checked += 1
            if folded.search(text):  # as a message pasted alone is read, in any capitalisation
                lowered = [literal.lower() for literal in signature.literals]
                assert may_hold(tuple(lowered), text.lower()), signature.regex
    assert checked > len(texts) // 2  # most fixtures are matched by some regex


def _blocks_read_by_checks(report, whole_report=True):
    """Every block `explain` gives a function signature: the parsed ones, the whole input, the
    input as one message, the messages quoted in prose, and those of each pytest failure."""
    yield report, list(report.blocks)
    whole = [ErrorBlock("", report.text, kind="log")]
    alone = match._message_alone(report)
    quoted = [
        ErrorBlock("", (found.group(1) or found.group(2)).strip(), kind="log")
        for found in match._INLINE_CODE.finditer(report.text)
    ]
    yield report, whole + ([alone] if alone else []) + quoted
    failures = pytest_failures(report) if whole_report else []
    if len(failures) > 1:  # as `diagnose` splits them
        for _, part in failures:
            yield from _blocks_read_by_checks(part, whole_report=False)


def test_no_fixture_a_check_answers_lacks_its_words():
    """A function signature's `words` leave its entry unimported for an input without them:
    every fixture it answers must hold one (any capitalisation, as `explain` folds it)."""
    checks = [
        (p.name, s) for p in all_pitfalls() for s in p.error_signatures if s.check and s.words
    ]
    answered = 0
    for path in sorted((FIXTURES / "explain").glob("*/*.txt")):
        _, text = read_fixture(path)
        report = parse_text(text)
        for owner, blocks in _blocks_read_by_checks(report):
            folded = match.folded_text(owner)
            for name, signature in checks:
                for block in blocks:
                    if signature.check(block, owner) is not None:
                        answered += 1
                        assert any(word in folded for word in signature.words), (name, path.name)
    assert answered or not checks
