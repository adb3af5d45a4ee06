"""`explain` on a pytest report: each failure explained on its own, in order, with its own line.

The reports are real (tests/make_explain_fixtures.py, cases `pytest-two-failures*`): two tests
of one file, the first hitting a matmul shape mismatch, the second a dtype mismatch.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import FIXTURES
from test_explain_fixtures import read_fixture
from test_json_schema import validate
from torchdoctor.explain.api import explanation_of
from torchdoctor.explain.parse import parse_text
from torchdoctor.explain.render import as_text

REPORTS = FIXTURES / "explain" / "matmul-shape-mismatch"
TESTS = ["test_head_accepts_feature_maps", "test_head_runs_in_double"]
CAUSES = ["matmul-shape-mismatch", "dtype-mismatch"]
MESSAGES = [
    "mat1 and mat2 shapes cannot be multiplied (4x400 and 256x10)",
    "mat1 and mat2 must have the same dtype, but got Double and Float",
]


def report(what):
    return read_fixture(REPORTS / f"torch213-pytest-{what}.txt")[1]


@pytest.mark.parametrize(
    "what, user_lines",
    [
        ("two-failures", [("test_model.py", 11), ("test_model.py", 17)]),
        ("two-failures-short", [("test_model.py", 11), ("test_model.py", 17)]),
        # `--tb=no`: only the short summary tells, and it names the test, not the line.
        ("two-failures-tb-no", [("test_model.py", None), ("test_model.py", None)]),
    ],
)
def test_each_failure_has_its_own_cause_and_user_line(what, user_lines):
    explanation = explanation_of(report(what), "en", link=False)
    assert [test.rsplit("::", 1)[-1] for test, _ in explanation.failures] == TESTS
    for (_, part), cause, message, user_line in zip(
        explanation.failures, CAUSES, MESSAGES, user_lines
    ):
        assert part.diagnoses[0].pitfall.name == cause
        assert part.report.final.message == message  # the full `E   ` text, not the summary's
        location = part.diagnoses[0].location
        assert (location.path, location.line) == user_line
    # The first failure's cause comes first, as a log's first root cause does.
    assert explanation.diagnoses[0].pitfall.name == CAUSES[0]


def test_text_shows_each_failure_in_order():
    text = as_text(explanation_of(report("two-failures"), "en", link=False))
    first, second = text.split("[2/2] test_head_runs_in_double\n")
    assert first.startswith("[1/2] test_head_accepts_feature_maps\n")
    assert f"RuntimeError: {MESSAGES[0]}\n  at test_model.py:11:" in first
    assert "matmul-shape-mismatch" in first and "dtype-mismatch" not in first
    assert f"RuntimeError: {MESSAGES[1]}\n  at test_model.py:17:" in second
    assert "dtype-mismatch" in second and "matmul-shape-mismatch" not in second
    assert "mat1 and..." not in text and "mat2 ..." not in text  # no truncated summary line


def test_json_lists_each_failure(tmp_path):
    path = tmp_path / "report.txt"
    path.write_text(report("two-failures-short"), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "explain", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    validate(data, "explain_output")
    assert data["findings"][0]["name"] == CAUSES[0]
    failures = data["failures"]
    assert [f["test"] for f in failures] == TESTS
    assert [f["findings"][0]["name"] for f in failures] == CAUSES
    assert [f["error"]["message"] for f in failures] == MESSAGES
    assert [f["error"]["user_frame"]["line"] for f in failures] == [11, 17]


def test_short_traceback_message_ends_at_the_next_section():
    blocks = parse_text(report("two-failures-short")).blocks
    assert [b.message for b in blocks] == MESSAGES
    assert [b.frames[0].line for b in blocks] == [11, 17]


def test_summary_line_of_a_failure_with_a_section_is_dropped():
    blocks = parse_text(report("two-failures")).blocks
    assert [b.message for b in blocks] == MESSAGES


def test_truncated_summary_alone_is_not_guessed():
    # `-q --tb=no` in an 80-column terminal: the messages are cut before they say anything.
    text = (
        "FF" + " " * 71 + "[100%]\n"
        "=========================== short test summary info ============================\n"
        "FAILED test_model.py::test_head_accepts_feature_maps - RuntimeError: mat1 and...\n"
        "FAILED test_model.py::test_head_runs_in_double - RuntimeError: mat1 and mat2 ...\n"
        "2 failed in 1.10s\n"
    )
    explanation = explanation_of(text, "en", link=False)
    assert [test for test, _ in explanation.failures] == TESTS
    assert [part.report.final.message for _, part in explanation.failures] == [
        "mat1 and...",
        "mat1 and mat2 ...",
    ]
    assert explanation.diagnoses == []


def test_one_failure_reads_as_before():
    text = "\n".join(
        [
            "___________________ test_forward ___________________",
            "",
            "    def test_forward():",
            ">       out = model(torch.randn(4, 16, 5, 5))",
            "",
            "tests/test_model.py:9: ",
            "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _",
            "",
            ">       return F.linear(input, self.weight, self.bias)",
            "E       RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x400 and 256x10)",
            "",
            "/usr/lib/python3.11/site-packages/torch/nn/modules/linear.py:134: RuntimeError",
            "=========================== short test summary info ============================",
            "FAILED tests/test_model.py::test_forward - RuntimeError: mat1 and mat2 shapes canno...",
            "1 failed in 1.10s",
        ]
    )
    explanation = explanation_of(text, "en", link=False)
    assert explanation.failures == []
    assert [b.message for b in explanation.report.blocks] == [MESSAGES[0]]
    assert explanation.diagnoses[0].pitfall.name == CAUSES[0]
    assert as_text(explanation).startswith(f"torchdoctor: RuntimeError: {MESSAGES[0]}\n")
