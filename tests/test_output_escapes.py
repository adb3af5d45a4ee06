"""Text from checked files never drives the terminal: controls are shown escaped, carets aligned.

A comment holding `ESC ] 0 ; TITLE BEL ESC [ 2 J` once retitled the terminal and cleared the
screen when `check` printed its excerpt; bidi overrides can reorder what a line appears to say.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\u2066")


def td(*args: str, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_COLOR": "1", "TORCHDOCTOR_LANG": "en"}
    return subprocess.run(
        [sys.executable, "-m", "torchdoctor", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=60,
    )


def write(path, text: str) -> None:
    path.write_bytes(text.encode("utf-8"))


def excerpt(output: str) -> tuple[str, str]:
    """The first excerpt's source line and caret line, after their `N | ` gutters."""
    lines = output.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("  ") and " | " in line)
    return lines[at].split(" | ", 1)[1], lines[at + 1].split(" | ", 1)[1]


def test_terminal_sequences_in_a_checked_file_are_shown_escaped(tmp_path):
    write(
        tmp_path / "a.py", "import torch\nx = torch.zeros(3)\nx.cuda()  # \x1b]0;TITLE\x07\x1b[2J\n"
    )
    result = td("check", "--no-cache", "a.py", cwd=tmp_path)
    assert result.returncode == 1
    assert not any(char in result.stdout for char in RAW)
    assert excerpt(result.stdout) == ("x.cuda()  # \\x1b]0;TITLE\\x07\\x1b[2J", "^^^^^^^^")


def test_messages_help_and_paths_are_escaped_too(tmp_path):
    name = "e\x1b[2J.py"
    write(tmp_path / name, 'import torch\nx = torch.zeros(3)\nx.to("\x1b[31m\u202e")\n')
    result = td("check", "--no-cache", name, cwd=tmp_path)
    assert not any(char in result.stdout for char in RAW)
    header = result.stdout.split("\n")[0]
    assert header.startswith(
        'e\\x1b[2J.py:3:1: TD001 `x.to("\\x1b[31m\\u202e")` returns a new tensor'
    )

    github = td("check", "--no-cache", "--format", "github", name, cwd=tmp_path).stdout
    assert not any(char in github for char in RAW)
    assert "\\x1b[31m\\u202e" in github

    # JSON keeps the text exactly, escaped by the encoder.
    data = td("check", "--no-cache", "--format", "json", name, cwd=tmp_path).stdout
    assert "\x1b" not in data
    assert '"\x1b[31m\u202e"' in json.loads(data)[0]["message"]


def test_carets_stay_under_the_finding_after_tabs_escapes_and_wide_characters(tmp_path):
    write(tmp_path / "a.py", 'import torch\nx = torch.zeros(3)\ns = "\x1b数据\t"; x.cuda()\n')
    source, carets = excerpt(td("check", "--no-cache", "a.py", cwd=tmp_path).stdout)
    # `s = "` 5 columns, `\x1b` 4, two wide characters 4, the tab up to column 16, `"; ` 3.
    assert source == 's = "\\x1b数据   "; x.cuda()'
    assert carets == " " * 19 + "^" * len("x.cuda()")


def test_a_finding_after_a_form_feed_shows_its_own_line(tmp_path):
    write(
        tmp_path / "a.py", "import torch\nx = torch.zeros(3)\n# page\x0cbreak\u2028here\nx.cuda()\n"
    )
    result = td("check", "--no-cache", "a.py", cwd=tmp_path)
    assert result.stdout.startswith("a.py:4:1: TD001 ")
    assert excerpt(result.stdout) == ("x.cuda()", "^^^^^^^^")
