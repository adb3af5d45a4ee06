"""`check`, `explain`, `rule` and `rules` never import torch: they must work where torch is not
installed; and a re-run the cache answers whole imports no more than it needs."""

from __future__ import annotations

import subprocess
import sys

from conftest import run_cli

PROBE = """
import sys
from torchdoctor.cli import main
code = main(sys.argv[1:])
assert "torch" not in sys.modules, "torch was imported"
print("exit", code)
print("pathspec imported" if "pathspec" in sys.modules else "pathspec not imported")
"""


def run_probe(*args, cwd):
    return subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=cwd, capture_output=True, text=True
    )


TRACEBACK = """Traceback (most recent call last):
  File "train.py", line 3, in <module>
    y = model(x)
RuntimeError: Expected all tensors to be on the same device, but found at least two devices, \
cuda:0 and cpu!
"""


def test_check_explain_rule_and_rules_do_not_import_torch(tmp_path):
    (tmp_path / "train.py").write_text("import torch\nx = torch.randn(3)\nx.cuda()\n")
    (tmp_path / "error.txt").write_text(TRACEBACK)
    for args, expected in (
        (["check", "--no-cache", "--select", "ALL", "train.py"], "exit 1"),
        (["explain", "error.txt"], "exit 0"),
        (["rule", "TD001"], "exit 0"),
        (["rules"], "exit 0"),
    ):
        result = run_probe(*args, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.strip().splitlines()
        assert lines[-2] == expected
        # pathspec's import starts asyncio (40-50 ms): only patterns to match need it.
        assert lines[-1] == "pathspec not imported"


def test_check_imports_pathspec_only_for_patterns(tmp_path):
    (tmp_path / "train.py").write_text("import torch\nx = torch.randn(3)\nx.cuda()\n")
    (tmp_path / "skipped.py").write_text("import torch\nx = torch.randn(3)\nx.cuda()\n")
    args = ("check", "--no-cache", "--format", "github", ".")
    plain = run_probe(*args, cwd=tmp_path)
    assert plain.stdout.strip().splitlines()[-1] == "pathspec not imported", plain.stderr
    assert "skipped.py" in plain.stdout
    (tmp_path / ".gitignore").write_text("skipped.py\n")
    ignoring = run_probe(*args, cwd=tmp_path)
    assert ignoring.stdout.strip().splitlines()[-1] == "pathspec imported", ignoring.stderr
    assert "skipped.py" not in ignoring.stdout and "train.py" in ignoring.stdout


def test_check_works_when_torch_cannot_be_imported(tmp_path):
    """A `torch` package that raises on import stands in for a machine without torch."""
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('torch is not installed here')\n")
    (tmp_path / "train.py").write_text("import torch\nx = torch.randn(3)\nx.cuda()\n")
    result = run_cli(
        "check",
        "--no-cache",
        "--select",
        "ALL",
        "--jobs",
        "1",
        "train.py",
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path / "fake")},
    )
    assert result.returncode == 1, result.stderr
    assert "TD001" in result.stdout


CHECKER_PROBE = """
import sys
from torchdoctor.cli import main
code = main(sys.argv[1:])
print("exit", code)
print(sorted(m for m in ("torchdoctor.lint.checker", "multiprocessing") if m in sys.modules))
"""


def test_a_rerun_the_cache_answers_imports_neither_the_checker_nor_a_pool(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    for name in "abcdefghij":  # more files than a pool is started for
        (tmp_path / f"{name}.py").write_text("import torch\nx = torch.randn(3)\nx.cuda()\n")

    def run() -> list[str]:
        result = subprocess.run(
            [sys.executable, "-c", CHECKER_PROBE, "check", "--jobs", "2", "."],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout.strip().splitlines()[-2:]

    assert run() == ["exit 1", "['multiprocessing', 'torchdoctor.lint.checker']"]
    assert run() == ["exit 1", "[]"]  # every file from the cache
