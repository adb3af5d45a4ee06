"""`invalid syntax` under code written for a newer Python: the interpreter is too old."""

from __future__ import annotations

import pytest

from torchdoctor.explain.match import diagnose
from torchdoctor.explain.parse import parse_text

F_STRING_ON_PYTHON_35 = """\
Traceback (most recent call last):
  File "train.py", line 12, in <module>
    from utils import report
  File "/home/me/project/utils.py", line 40
    print(f"epoch {epoch}: loss {loss:.3f}")
                                          ^
SyntaxError: invalid syntax
"""

WALRUS_ON_PYTHON_37 = """\
  File "data.py", line 9
    if (n := len(items)) > 10:
           ^
SyntaxError: invalid syntax
"""

# An issue title: the line and its caret, no exception at all.
RETOLD_TITLE = "writer.add_scalar(f'loss/{phase}', loss, step) ^"


def top(text: str):
    diagnoses = diagnose(parse_text(text), link=False).diagnoses
    return diagnoses[0] if diagnoses else None


@pytest.mark.parametrize(
    "text, version",
    [(F_STRING_ON_PYTHON_35, "3.6"), (WALRUS_ON_PYTHON_37, "3.8"), (RETOLD_TITLE, "3.6")],
)
def test_code_for_a_newer_python_is_an_old_interpreter(text, version):
    found = top(text)
    assert found is not None and found.pitfall.name == "syntax-error"
    assert f"Python {version} or newer" in found.fix


@pytest.mark.parametrize(
    "text",
    [
        # Newer interpreters say what is wrong in the f-string itself.
        '  File "a.py", line 3\n    print(f"{x["a"]}")\n            ^\n'
        'SyntaxError: f-string: unmatched "["\n',
        # ... or suggest a fix: the code is wrong, not the interpreter.
        '  File "a.py", line 3\n    y = f"{x}" z\n               ^\n'
        "SyntaxError: invalid syntax. Perhaps you forgot a comma?\n",
        # A plain `invalid syntax` under a line with neither.
        '  File "a.py", line 3\n    print "hello"\n                ^\nSyntaxError: invalid syntax\n',
    ],
)
def test_other_syntax_errors_are_not_blamed_on_the_interpreter(text):
    found = top(text)
    assert found is None or "newer" not in found.fix
