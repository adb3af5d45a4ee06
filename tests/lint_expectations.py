"""Inline expectations of lint fixtures: `code()  # expect: TD001` or `# expect: TD001, TD201`."""

from __future__ import annotations

import io
import json
import re
import tokenize
from collections import Counter

_EXPECT_NATIVE = re.compile(r"//\s*expect:\s*(?P<codes>TD\d{3}(?:\s*,\s*TD\d{3})*)")
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


def expected_native_findings(source: str) -> Counter:
    """(line, code) from `// expect: TD707` comments of a C++/CUDA fixture."""
    expected: Counter = Counter()
    for number, line in enumerate(source.splitlines(), start=1):
        match = _EXPECT_NATIVE.search(line)
        if match:
            for code in match.group("codes").split(","):
                expected[(number, code.strip())] += 1
    return expected


def expected_notebook_findings(text: str) -> Counter:
    """(cell, line, code) from the `# expect:` comments of a notebook's code cells."""
    expected: Counter = Counter()
    for number, cell in enumerate(json.loads(text)["cells"], start=1):
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for (line, code), count in expected_findings(_without_magics(source)).items():
            expected[(number, line, code)] += count
    return expected


def _without_magics(source: str) -> str:
    """Magic lines are not Python: blank them so the comments of other lines can be read."""
    return "\n".join(
        "" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()
    )
