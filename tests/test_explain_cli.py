"""`torchdoctor explain` as a user runs it: files, stdin, JSON contract, languages, bad input,
and the link from an error to the line of the user's code that caused it."""

from __future__ import annotations

import json
import textwrap

from conftest import run_cli

DEVICE_ERROR = """\
Traceback (most recent call last):
  File "{path}", line 8, in <module>
    out = model(images)
  File "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1751, in _call_impl
    return forward_call(*args, **kwargs)
  File "/usr/lib/python3.11/site-packages/torch/nn/modules/conv.py", line 548, in _conv_forward
    return F.conv2d(
RuntimeError: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be \
the same or input should be a MKLDNN tensor and weight is a dense tensor
"""
TRAIN = """\
import torch
import torch.nn as nn

model = nn.Conv2d(3, 8, 3).cuda()
images = torch.randn(1, 3, 8, 8)
if torch.cuda.is_available():
    images.cuda()
out = model(images)
"""


def explain_json(*args, cwd, stdin=None) -> tuple[int, dict]:
    result = run_cli("explain", "--format", "json", *args, cwd=cwd, stdin=stdin)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def test_text_from_stdin(tmp_path):
    result = run_cli("explain", cwd=tmp_path, stdin=DEVICE_ERROR.format(path="train.py"))
    assert result.returncode == 0, result.stderr
    assert "device-mismatch" in result.stdout
    assert "at train.py:8: out = model(images)" in result.stdout
    assert "torchdoctor rule device-mismatch" in result.stdout


def test_json_contract(tmp_path):
    (tmp_path / "log.txt").write_text(DEVICE_ERROR.format(path="elsewhere.py"))
    code, data = explain_json("log.txt", cwd=tmp_path)
    assert code == 0
    assert set(data) >= {"findings", "error"}
    top = data["findings"][0]
    assert set(top) >= {"code", "name", "title", "confidence", "cause", "fix", "location"}
    assert top["name"] == "device-mismatch" and 0 < top["confidence"] <= 1
    assert top["location"]["path"] == "elsewhere.py" and top["location"]["line"] == 8
    assert data["error"]["type"] == "RuntimeError"
    assert data["error"]["user_frame"]["source"] == "out = model(images)"
    confidences = [f["confidence"] for f in data["findings"]]
    assert confidences == sorted(confidences, reverse=True)


def test_links_the_error_to_the_root_line_in_the_users_file(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    code, data = explain_json(cwd=tmp_path, stdin=DEVICE_ERROR.format(path="train.py"))
    names = [f["name"] for f in data["findings"]]
    assert names[:2] == ["tensor-result-discarded", "device-mismatch"]
    root = data["findings"][0]
    assert root["location"] == {
        "kind": "span",
        "path": "train.py",
        "line": 7,
        "column": 5,
        "source": "images.cuda()",
    }
    assert root["root_of"] == "device-mismatch"
    assert "images = images.cuda(" in root["fix"]
    text = run_cli("explain", cwd=tmp_path, stdin=DEVICE_ERROR.format(path="train.py")).stdout
    assert "likely cause: train.py:7 `images.cuda()` (tensor-result-discarded)" in text


def test_no_link_reads_no_user_file(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    _, data = explain_json("--no-link", cwd=tmp_path, stdin=DEVICE_ERROR.format(path="train.py"))
    assert [f["name"] for f in data["findings"]][0] == "device-mismatch"


def test_chinese(tmp_path):
    result = run_cli(
        "explain", "--lang", "zh", cwd=tmp_path, stdin=DEVICE_ERROR.format(path="train.py")
    )
    assert "原因" in result.stdout and "修复" in result.stdout


def test_unrecognised_error_says_so_and_shows_what_was_parsed(tmp_path):
    text = (
        'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\n'
        "    frobnicate()\nWidgetError: the widget is sad\n"
    )
    result = run_cli("explain", cwd=tmp_path, stdin=text)
    assert result.returncode == 1
    assert "not recognised" in result.stdout
    assert "WidgetError: the widget is sad" in result.stdout


def test_empty_and_binary_input_are_not_crashes(tmp_path):
    empty = run_cli("explain", cwd=tmp_path, stdin="")
    assert empty.returncode == 1 and "no error found" in empty.stdout
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)) * 10)
    binary = run_cli("explain", "blob.bin", cwd=tmp_path)
    assert binary.returncode == 1 and "Traceback" not in binary.stderr


def test_missing_file_is_a_usage_error(tmp_path):
    result = run_cli("explain", "nope.txt", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("torchdoctor: error: nope.txt")


def test_gbk_terminal(tmp_path):
    result = run_cli(
        "explain",
        "--lang",
        "zh",
        cwd=tmp_path,
        encoding="gbk",
        env={"PYTHONIOENCODING": "gbk"},
        stdin=DEVICE_ERROR.format(path="train.py"),
    )
    assert result.returncode == 0, result.stderr
    assert "原因" in result.stdout


def test_python_api_takes_text_and_live_exceptions():
    import torchdoctor

    from_text = torchdoctor.explain(DEVICE_ERROR.format(path="x.py"), lang="en")
    assert from_text["findings"][0]["name"] == "device-mismatch"
    try:
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least "
            "two devices, cuda:0 and cpu!"
        )
    except RuntimeError as error:
        live = torchdoctor.explain(error, lang="en")
    assert live["findings"][0]["name"] == "device-mismatch"
    assert live["error"]["user_frame"]["path"].endswith("test_explain_cli.py")


def test_python_api_never_raises():
    import torchdoctor

    class Unprintable(Exception):
        def __str__(self):
            raise ValueError("no")

    result = torchdoctor.explain(Unprintable())
    assert result["findings"] == [] or isinstance(result["findings"], list)
    assert torchdoctor.explain("")["findings"] == []
    assert textwrap.dedent("ok") == "ok"
