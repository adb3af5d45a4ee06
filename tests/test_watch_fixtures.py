"""Every watch fixture script, run through `torchdoctor run`'s runner in this process (torch is
imported once for all of them), gives exactly the findings its header names; a fixed twin
(`<name>_fixed.py`) gives none. The header, at the top of the script:

    #| expect: TD201 step=2 line=13 module=1   one line per finding, in order; the fields
                                              after the code are optional (`none`: nothing)
    #| exit: 1                                the exit code, when not 0
    #| select: TD901,TD902                    the checks to run, when not the default ones
    #| env: NAME=VALUE                        set while the script runs
    #| torchrun: 2                            run under torchrun with this many processes
                                              (gloo, CPU), for checks that need several ranks;
                                              every rank's report gives the findings

The command line itself, and what needs a fresh interpreter, is tested in test_watch_run.py
and test_run_robustness.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import pytest

from conftest import FIXTURES, GLOO_TEARDOWN_ABORT, import_torch

torch = import_torch()
# The scripts' own warnings (torch's, about the pitfalls they show) are theirs, not the test's.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

WATCH = FIXTURES / "watch"
_HEADER = re.compile(r"^#\| (expect|exit|select|env|torchrun): (.*)$", re.M)


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str
    report: dict

    def findings(self, code: str | None = None) -> list[dict]:
        return [f for f in self.report["findings"] if code is None or f["code"] == code]


def run_watched(script: str, *args: str, select=None, env: dict | None = None) -> Run:
    """Run a fixture script (a name under tests/fixtures/watch, run from there) as
    `torchdoctor run` runs it, in this process; its output and JSON report."""
    from torchdoctor.watch.runner import run

    saved_cwd, saved_env = os.getcwd(), dict(os.environ)
    stdout, stderr = io.StringIO(), io.StringIO()
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        try:
            os.chdir(WATCH)
            os.environ.update(env or {})
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                code = run(script, list(args), select=select, lang="en", report_json=report)
        finally:
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
        with open(report, encoding="utf-8") as handle:
            return Run(code, stdout.getvalue(), stderr.getvalue(), json.load(handle))


def run_torchrun(script: str, processes: int, select=None, env: dict | None = None) -> list:
    """Run a fixture script under torchrun (this interpreter's, `--standalone`: the rendezvous
    binds a free port itself) with `processes` ranks, each through `torchdoctor run`; one Run per
    rank, in rank order, with the output of all ranks together."""
    for _ in range(_TEARDOWN_TRIES - 1):
        runs = _torchrun_once(script, processes, select, env)
        if not _gloo_teardown_abort(runs[0]):
            return runs
    return _torchrun_once(script, processes, select, env)


# A rank of torch's gloo backend can abort at interpreter exit, after the program's last line
# and its reports ("terminate called without an active exception": a gloo worker thread still
# holding work while the interpreter is torn down; pytorch/pytorch#179291 describes it). Seen
# once in a whole suite's run on a quiet 2-core machine, never when the test runs alone: such a
# run is tried again, at most this many times in all.
_TEARDOWN_TRIES = 3


def _gloo_teardown_abort(run: Run) -> bool:
    return run.exit_code != 0 and GLOO_TEARDOWN_ABORT in run.stderr


def _torchrun_once(script: str, processes: int, select, env: dict | None) -> list:
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
        command += [f"--nproc_per_node={processes}", "-m", "torchdoctor", "run"]
        command += ["--report-json", report, *(["--select", select] if select else []), script]
        done = subprocess.run(
            command,
            cwd=WATCH,
            capture_output=True,
            text=True,
            timeout=120,
            env={
                **os.environ,
                **(env or {}),
                "NO_COLOR": "1",
                "TORCHDOCTOR_LANG": "en",
                "OMP_NUM_THREADS": "1",
            },
        )
        runs = []
        for rank in range(processes):
            path = os.path.join(tmp, f"report.rank{rank}.json")
            assert os.path.exists(path), done.stderr[-3000:]
            with open(path, encoding="utf-8") as handle:
                runs.append(Run(done.returncode, done.stdout, done.stderr, json.load(handle)))
        return runs


def header(script) -> dict:
    """The expectations of a fixture script: findings (dicts of the fields given), exit code,
    selection, environment."""
    expected = {"expect": [], "exit": 0, "select": None, "env": {}, "torchrun": 0}
    for key, value in _HEADER.findall(script.read_text(encoding="utf-8")):
        if key == "expect" and value.strip() == "none":  # a fixed twin says so
            continue
        if key == "expect":
            code, *fields = value.split()
            finding = {"code": code}
            for field in fields:
                name, _, text = field.partition("=")
                finding[name] = int(text) if name in ("step", "line") else text
            expected["expect"].append(finding)
        elif key == "exit":
            expected["exit"] = int(value)
        elif key == "select":
            expected["select"] = value
        elif key == "torchrun":
            expected["torchrun"] = int(value)
        else:
            name, _, text = value.partition("=")
            expected["env"][name] = text
    return expected


def _hooks_in_place() -> tuple:
    from torch.nn.modules import module
    from torch.optim import optimizer

    return (
        dict(module._global_forward_pre_hooks),
        dict(optimizer._global_optimizer_pre_hooks),
        torch.Tensor.backward,
        torch.utils.data.DataLoader.__iter__,
        torch.nn.functional.cross_entropy,
        vars(optimizer.Optimizer)["zero_grad"],
    )


SCRIPTS = sorted(WATCH.glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.stem)
def test_fixture_script_gives_the_findings_its_header_names(script):
    expected = header(script)
    fixed = script.stem.endswith("_fixed")
    assert fixed == (not expected["expect"]), (
        "a fixed twin expects nothing; any other script names its findings in a header"
    )
    if expected["torchrun"]:
        runs = run_torchrun(
            script.name, expected["torchrun"], select=expected["select"], env=expected["env"]
        )
        for rank, run in enumerate(runs):
            _check(run, expected, script.name, rank)
        return
    before = _hooks_in_place()
    run = run_watched(script.name, select=expected["select"], env=expected["env"])
    assert _hooks_in_place() == before  # nothing left behind, after a crash too
    _check(run, expected, script.name, None)


def _check(run: Run, expected: dict, name: str, rank: int | None) -> None:
    """The run (one rank's report, under torchrun) gives the findings the header names."""
    assert run.exit_code == expected["exit"], run.stderr
    assert run.report["internal_errors"] == [], run.stderr
    found = run.findings()
    assert [f["code"] for f in found] == [e["code"] for e in expected["expect"]], run.stderr
    tag = "" if rank is None else f"[rank {rank}] "
    for finding, want in zip(found, expected["expect"]):
        assert {key: finding[key] for key in want} == want
        assert finding["origin"] == "runtime" and finding["path"] == name
        assert finding["rank"] == rank
        assert (
            f"torchdoctor: {tag}{name}:{finding['line']}: {finding['code']} "
            f"{finding['name']} (step {finding['step']}): "
        ) in run.stderr  # printed live
    summary = f"{len(found)} finding(s)" if found else "no findings"
    assert summary in run.stderr
