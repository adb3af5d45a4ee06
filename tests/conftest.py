import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
UPDATE_SNAPSHOTS = os.environ.get("TORCHDOCTOR_UPDATE_SNAPSHOTS") == "1"


def run_cli(*args: str, cwd: Path | None = None, stdin: str | None = None,
            env: dict | None = None, encoding: str = "utf-8") -> subprocess.CompletedProcess:
    """Run `python -m torchdoctor` as a user would, in a fresh interpreter."""
    full_env = {**os.environ, "NO_COLOR": "1", "TORCHDOCTOR_LANG": "en", **(env or {})}
    return subprocess.run([sys.executable, "-m", "torchdoctor", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, encoding=encoding, env=full_env)


@pytest.fixture
def cli():
    return run_cli
