import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
UPDATE_SNAPSHOTS = os.environ.get("TORCHDOCTOR_UPDATE_SNAPSHOTS") == "1"

# `check` and `explain` need no torch, and neither do most tests: without torch, the tests of
# `run`, `ckpt` and of what torch itself does are skipped, saying what is missing.
# What gloo prints when a rank's process exits while one of its threads still runs: torch's own
# teardown race, seen with plain torchrun too (1 run in 10 before the torchrun scripts' barrier,
# still now and then on a loaded machine). A torchrun test that ends so is run once more.
GLOO_TEARDOWN_ABORT = "terminate called without an active exception"
NEEDS_TORCH = "needs torch: pip install torch (the CPU build: see the README's quick start)"
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason=NEEDS_TORCH)


def import_torch():
    """torch; where it is not installed, a skip of the test, or at a module's top of the whole
    module, that says so."""
    return pytest.importorskip("torch", reason=NEEDS_TORCH)


# The programs the tests start see python's defaults, whatever the shell that runs pytest sets:
# unbuffered output hid a failure that only showed on a machine without it (CI).
for _variable in ("PYTHONUNBUFFERED",):
    os.environ.pop(_variable, None)


def run_cli(
    *args: str,
    cwd: Path | None = None,
    stdin: str | None = None,
    env: dict | None = None,
    encoding: str = "utf-8",
) -> subprocess.CompletedProcess:
    """Run `python -m torchdoctor` as a user would, in a fresh interpreter."""
    full_env = {**os.environ, "NO_COLOR": "1", "TORCHDOCTOR_LANG": "en", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "torchdoctor", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        encoding=encoding,
        env=full_env,
    )


@pytest.fixture
def cli():
    return run_cli


def pytest_make_parametrize_id(config, val, argname):
    """A short id for a long parameter (the hostile inputs of the robustness tests run to
    megabytes). Older pytest puts the whole id in PYTEST_CURRENT_TEST, which every program a
    test starts inherits, and exec fails on an environment string over 128 KiB (E2BIG)."""
    if isinstance(val, (str, bytes)) and len(val) > 60:
        return f"{argname}-{len(val)}-{type(val).__name__}"
    return None
