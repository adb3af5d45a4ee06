"""One JSON schema for the four commands: the real output of check, explain, run and ckpt is
validated against the schema file the package ships, and the schema itself is valid."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest

from conftest import FIXTURES, import_torch, needs_torch, run_cli

SCHEMA = json.loads(
    (resources.files("torchdoctor") / "report/schema/findings.schema.json").read_text(
        encoding="utf-8"
    )
)
BAD = "import torch\nx = torch.randn(3)\nx.cuda()\nloss = x.sum()\nprint(loss.data[0])\n"
DEVICE_ERROR = """\
Traceback (most recent call last):
  File "train.py", line 5, in main
    out = model(images)
  File "/usr/lib/python3.11/site-packages/torch/nn/modules/conv.py", line 548, in _conv_forward
    return F.conv2d(
RuntimeError: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be \
the same or input should be a MKLDNN tensor and weight is a dense tensor
"""
TRAIN = """\
import torch
model = torch.nn.Conv2d(3, 8, 3).cuda()
images = torch.randn(1, 3, 8, 8)
images.cuda()
out = model(images)
"""


def validate(data, output: str) -> None:
    """`data` is valid output of one command, and so valid under the schema's root too."""
    jsonschema.Draft202012Validator(
        {"$ref": f"#/$defs/{output}", "$defs": SCHEMA["$defs"]}
    ).validate(data)
    jsonschema.Draft202012Validator(SCHEMA).validate(data)


def test_the_schema_is_valid_draft_2020_12():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_check_output_with_a_notebook_cell(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "nb.ipynb").write_text(
        json.dumps(
            {
                "cells": [
                    {"cell_type": "markdown", "metadata": {}, "source": "# notes"},
                    {
                        "cell_type": "code",
                        "metadata": {},
                        "outputs": [],
                        "execution_count": 1,
                        "source": BAD,
                    },
                ],
                "metadata": {},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )
    result = run_cli("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)
    validate(findings, "check_output")
    cell = next(f for f in findings if f["path"] == "nb.ipynb" and f["code"] == "TD001")
    # The flat fields consumers read stay; the location says the same, typed.
    assert cell["location"] == {
        "kind": "span",
        "path": "nb.ipynb",
        "line": 3,
        "column": 1,
        "end_line": 3,
        "end_column": 9,
        "cell": 2,
    }
    assert (cell["cell"], cell["line"], cell["column"]) == (2, 3, 1)
    fixes = {
        f["code"]: (f["fixable"], f["fix"]["applicability"])
        for f in findings
        if f["path"] == "bad.py"
    }
    assert fixes == {"TD001": (True, "unsafe"), "TD101": (True, "safe")}


def test_check_output_of_a_file_that_does_not_parse(tmp_path):
    (tmp_path / "broken.py").write_text("def f(:\n")
    result = run_cli("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    findings = json.loads(result.stdout)
    validate(findings, "check_output")
    assert [(f["name"], f["location"]["kind"]) for f in findings] == [("syntax-error", "span")]


def test_explain_output_with_a_frame_and_a_linked_line(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    result = run_cli("explain", "--format", "json", cwd=tmp_path, stdin=DEVICE_ERROR)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    validate(data, "explain_output")
    assert (data["tool"], data["command"]) == ("torchdoctor", "explain")
    by_name = {f["name"]: f for f in data["findings"]}
    root = by_name["tensor-result-discarded"]
    assert root["location"] == {
        "kind": "span",
        "path": "train.py",
        "line": 4,
        "column": 1,
        "source": "images.cuda()",
    }
    assert root["root_of"] == "device-mismatch" and root["origin"] == "explain"
    crash = by_name["device-mismatch"]
    assert crash["location"] == {
        "kind": "frame",
        "path": "train.py",
        "line": 5,
        "column": None,
        "function": "main",
        "source": "out = model(images)",
    }
    assert crash["message"] == crash["cause"] and isinstance(crash["fix"], str)
    assert crash["linked"][0]["location"]["kind"] == "span"


def test_explain_output_of_an_unknown_error(tmp_path):
    result = run_cli(
        "explain", "--format", "json", cwd=tmp_path, stdin="SomeError: nothing anyone has seen\n"
    )
    assert result.returncode == 1
    data = json.loads(result.stdout)
    validate(data, "explain_output")
    assert data["findings"] == []


@needs_torch
def test_run_report_with_a_run_site_and_an_explained_crash(tmp_path):
    script = (FIXTURES / "watch" / "batchnorm_single_sample_batch.py").read_text()
    (tmp_path / "train.py").write_text(script)
    result = run_cli("run", "--report-json", "r.json", "train.py", cwd=tmp_path)
    assert result.returncode == 1  # the script crashes at the end of its first epoch
    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    validate(data, "run_output")
    assert (data["tool"], data["command"]) == ("torchdoctor", "run")
    finding = data["findings"][0]
    assert finding["location"] == {
        "kind": "run",
        "step": finding["step"],
        "module": "1",
        "rank": None,
        "path": "train.py",
        "line": finding["line"],
    }
    assert finding["name"] == "batchnorm-single-sample-batch" and finding["step"] >= 1
    cause = data["crash"]["findings"][0]
    assert cause["location"]["kind"] == "frame" and cause["location"]["function"] == "<module>"


@pytest.fixture
def prefixed_checkpoint(tmp_path):
    torch = import_torch()
    from ckpt_builders import Net, data_parallel_state, write_models

    path = tmp_path / "dp.pth"
    torch.save(data_parallel_state(Net()), path)
    return path, write_models(tmp_path)


def test_ckpt_inspect_output_with_checkpoint_keys(prefixed_checkpoint):
    path, _ = prefixed_checkpoint
    result = run_cli("ckpt", "inspect", "--format", "json", path.name, cwd=path.parent)
    data = json.loads(result.stdout)
    validate(data, "ckpt_inspect_output")
    assert (data["tool"], data["command"], data["format"]) == ("torchdoctor", "ckpt inspect", "zip")


def test_ckpt_diff_output_with_checkpoint_keys(prefixed_checkpoint):
    path, models = prefixed_checkpoint
    result = run_cli(
        "ckpt", "diff", "--format", "json", path.name, "--model", f"{models}:build", cwd=path.parent
    )
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    validate(data, "ckpt_diff_output")
    prefix = next(f for f in data["findings"] if f["name"] == "state-dict-prefix-mismatch")
    assert prefix["location"]["kind"] == "checkpoint"
    assert prefix["location"]["keys"] and all(
        key.startswith("module.") for key in prefix["location"]["keys"]
    )
    assert prefix["fixable"] is True and prefix["keys"] == prefix["location"]["keys"]


def test_an_unreadable_checkpoint_is_a_finding_about_the_whole_file(tmp_path):
    (tmp_path / "empty.pth").write_bytes(b"")
    result = run_cli("ckpt", "inspect", "--format", "json", "empty.pth", cwd=tmp_path)
    data = json.loads(result.stdout)
    validate(data, "ckpt_inspect_output")
    assert [f["location"] for f in data["findings"]] == [
        {"kind": "checkpoint", "path": "empty.pth", "keys": []}
    ]
