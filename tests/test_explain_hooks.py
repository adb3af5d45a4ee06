"""Uncaught exceptions explained where they happen: scripts and a real IPython shell."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from conftest import needs_torch

SCRIPT = """\
import torchdoctor
torchdoctor.install(lang="en")

def forward():
    raise RuntimeError("Expected all tensors to be on the same device, but found at least two "
                       "devices, cuda:0 and cpu!")

forward()
"""


def run_script(tmp_path, text: str, *args: str) -> subprocess.CompletedProcess:
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(text))
    return subprocess.run(
        [sys.executable, *args, str(path)], cwd=tmp_path, capture_output=True, text=True
    )


def test_install_prints_the_traceback_unchanged_then_the_diagnosis(tmp_path):
    plain = run_script(tmp_path, SCRIPT.replace('torchdoctor.install(lang="en")', "pass"))
    hooked = run_script(tmp_path, SCRIPT)
    assert hooked.returncode == plain.returncode == 1
    assert hooked.stderr.startswith(plain.stderr)  # the traceback, byte for byte, comes first
    diagnosis = hooked.stderr[len(plain.stderr) :]
    assert "device-mismatch" in diagnosis
    assert "train.py:5" in diagnosis  # the user's innermost frame: the raise in forward()


def test_import_auto_installs(tmp_path):
    result = run_script(
        tmp_path, SCRIPT.replace('torchdoctor.install(lang="en")', "import torchdoctor.auto")
    )
    assert "RuntimeError: Expected all tensors" in result.stderr
    assert "device-mismatch" in result.stderr


def test_keyboard_interrupt_and_system_exit_are_not_explained(tmp_path):
    result = run_script(
        tmp_path, "import torchdoctor\ntorchdoctor.install()\nraise KeyboardInterrupt\n"
    )
    assert "KeyboardInterrupt" in result.stderr and "torchdoctor" not in result.stderr


def test_a_failure_inside_the_doctor_keeps_the_traceback_and_adds_one_line(tmp_path):
    broken = SCRIPT.replace(
        'torchdoctor.install(lang="en")',
        'torchdoctor.install(lang="en")\n'
        "from torchdoctor.explain import match as m\n"
        'def boom(*a, **k):\n    raise MemoryError("doctor is ill")\n'
        "m.diagnose = boom\nfrom torchdoctor.explain import api\napi.diagnose = boom",
    )
    result = run_script(tmp_path, broken)
    assert "RuntimeError: Expected all tensors" in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("torchdoctor: internal error while explaining this exception")
    assert "doctor is ill" in last


# ---- IPython / Jupyter ----------------------------------------------------------------------

IPython = pytest.importorskip("IPython")


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython() or InteractiveShell.instance()
    yield ip
    ip.extension_manager.unload_extension("torchdoctor")


CELL = """\
import torch_stub
images = [1, 2]
def forward(x):
    raise RuntimeError("Expected all tensors to be on the same device, but found at least two "
                       "devices, cuda:0 and cpu!")
forward(images)
"""


def run_cell(shell, capsys, code: str) -> tuple[str, str]:
    shell.run_cell(code)
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_load_ext_explains_cell_exceptions_after_the_traceback(shell, capsys, monkeypatch):
    monkeypatch.setenv("TORCHDOCTOR_LANG", "en")
    shell.run_line_magic("load_ext", "torchdoctor")
    out, err = run_cell(shell, capsys, CELL.replace("import torch_stub\n", ""))
    shown = out + err
    assert "RuntimeError" in shown and "Expected all tensors" in shown  # the traceback
    assert shown.index("Expected all tensors") < shown.index("device-mismatch")
    assert "torchdoctor rule device-mismatch" in shown


def test_handler_survives_its_own_failure(shell, capsys, monkeypatch):
    """IPython unregisters a custom handler that raises: ours must never raise."""
    from torchdoctor.explain import api

    shell.run_line_magic("load_ext", "torchdoctor")

    def boom(*args, **kwargs):
        raise ValueError("doctor is ill")

    monkeypatch.setattr(api, "diagnose", boom)
    out, err = run_cell(
        shell, capsys, "raise RuntimeError('CUDA out of memory. Tried to allocate 2.00 GiB')"
    )
    assert "CUDA out of memory" in out + err
    assert "internal error while explaining" in out + err
    monkeypatch.undo()
    monkeypatch.setenv("TORCHDOCTOR_LANG", "en")
    out, err = run_cell(
        shell, capsys, "raise RuntimeError('CUDA out of memory. Tried to allocate 2.00 GiB')"
    )
    assert "cuda-out-of-memory" in out + err  # still registered


@needs_torch  # the cell runs `import torch`
def test_links_to_the_cell_source(shell, capsys, monkeypatch):
    monkeypatch.setenv("TORCHDOCTOR_LANG", "en")
    shell.run_line_magic("load_ext", "torchdoctor")
    code = (
        "import torch\n"
        "x = torch.zeros(2)\n"
        "if torch.cuda.is_available():\n"
        "    x.cuda()\n"
        "raise RuntimeError('Expected all tensors to be on the same device, but found at "
        "least two devices, cuda:0 and cpu!')\n"
    )
    out, err = run_cell(shell, capsys, code)
    assert "tensor-result-discarded" in out + err
    assert "x.cuda()" in out + err
