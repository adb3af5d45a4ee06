"""Inline expectations of lint fixtures: `code()  # expect: TD001` or `# expect: TD001, TD201`."""
from __future__ import annotations

import io
import re
import tokenize
from collections import Counter

_EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>TD\d{3}(?:\s*,\s*TD\d{3})*)")


def expected_findings(source: str) -> Counter:
    """(line, code) pairs, counted, read from comments only (never from strings)."""
    expected: Counter = Counter()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        match = _EXPECT.search(token.string)
        if match:
            for code in match.group("codes").split(","):
                expected[(token.start[0], code.strip())] += 1
    return expected
