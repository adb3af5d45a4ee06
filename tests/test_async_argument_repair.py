"""`x.cuda(async=True)` (PyTorch 0.3) does not parse since Python 3.7: the doctor reports it
with its fix on every such line and still checks the rest of the file (issue 13)."""

from __future__ import annotations

import subprocess
import sys
import time

from torchdoctor.catalog import _registry
from torchdoctor.lint.checker import check_source, fix_source

ALL = frozenset(p.code for p in _registry.all_pitfalls())

OLD_SCRIPT = """\
import torch
from torch.autograd import Variable


def train(loader, model, optimizer):
    for images, labels in loader:
        images = images.cuda(async=True)
        target = labels.cuda(
            async=True)
        loss = model(images, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(loss.data[0])
"""


def codes_by_line(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in check_source(source, "train.py", ALL).findings]


def test_each_async_argument_is_reported_and_the_rest_is_checked():
    found = codes_by_line(OLD_SCRIPT)
    assert (7, "TD700") in found and (9, "TD700") in found
    assert (14, "TD101") in found  # after the syntax errors: the file was checked
    syntax = [f for f in check_source(OLD_SCRIPT, "train.py", ALL).findings if f.code == "TD700"]
    assert all("non_blocking" in f.message and f.fix is not None for f in syntax)
    assert [f.column for f in syntax] == [30, 13]  # at `async`, where the fix renames it


def test_fix_renames_every_argument_and_is_idempotent():
    fixed = fix_source(OLD_SCRIPT, "train.py", ALL, unsafe=False)
    assert "async" not in fixed.source
    assert fixed.source.count("non_blocking=True") == 2
    assert "loss.item()" in fixed.source
    again = fix_source(fixed.source, "train.py", ALL, unsafe=False)
    assert again.source == fixed.source and again.fixed == 0


def test_async_of_another_function_stays_a_plain_syntax_error():
    # `non_blocking` is right only for torch's cuda/to/copy_: a function of the user's is not
    # renamed, and the file is not checked further.
    source = OLD_SCRIPT + "\nschedule(async=True)\n"
    found = check_source(source, "train.py", ALL).findings
    assert [(f.line, f.code) for f in found] == [(7, "TD700")]  # the parser's first error only


def test_the_command_line_reports_the_rest_of_the_file(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(OLD_SCRIPT, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "check", "--no-cache", "--select", "ALL", "train.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1
    assert "train.py:7:30: TD700" in run.stdout and "train.py:14:15: TD101" in run.stdout
    assert script.read_text(encoding="utf-8") == OLD_SCRIPT  # nothing written without --fix


def test_many_async_lines_stay_linear():
    body = "".join(f"    x{i} = x.cuda(async=True)\n" for i in range(20_000))
    source = "import torch\n\ndef f(x):\n" + body
    start = time.process_time()
    found = check_source(source, "big.py", ALL).findings
    assert sum(f.code == "TD700" for f in found) == 20_000
    assert time.process_time() - start < 60  # quadratic would take many minutes


MULTIPROCESSING_SCRIPT = """\
import torch


def discount_all(pool, rewards, model, loss_fn, optimizer):
    results = [pool.apply_async(discount, [r]) for r in rewards]
    rewards = [async.get() for async in results]
    loss = loss_fn(model(torch.FloatTensor(rewards)))
    loss.backward()
    print(loss.data[0])
"""


def test_async_as_a_name_is_reported_and_the_rest_is_checked():
    found = check_source(MULTIPROCESSING_SCRIPT, "fitter.py", ALL).findings
    syntax = [f for f in found if f.code == "TD700"]
    assert [(f.line, f.column) for f in syntax] == [(6, 16), (6, 32)]
    assert all("can no longer name a variable" in f.message and f.fix is None for f in syntax)
    assert (9, "TD101") in [(f.line, f.code) for f in found]  # the file was read past them
    fixed = fix_source(MULTIPROCESSING_SCRIPT, "fitter.py", ALL, unsafe=False)
    assert "async.get() for async in results" in fixed.source  # never renamed by a fix


def test_async_assigned_leaves_the_file_unread():
    # `async = ...` would get the `non_blocking=` message of an argument: not repaired.
    source = MULTIPROCESSING_SCRIPT.replace(
        "    rewards = [async", "    async = results[0]\n    rewards = [async"
    )
    found = check_source(source, "fitter.py", ALL).findings
    assert [(f.line, f.code) for f in found] == [(6, "TD700")]
    assert "non_blocking" not in found[0].message and found[0].fix is None
