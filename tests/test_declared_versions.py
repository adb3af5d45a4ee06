"""The torch and torchvision releases a project says it supports, and the deprecation rules
that then do not advise an API those releases lack (TD707, TD804, TD805, TD807)."""

from __future__ import annotations

import subprocess
import sys

from torchdoctor.lint.declared_versions import declared_minimums
from torchdoctor.lint.project import facts_for


def _write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _check(root, *args):
    return subprocess.run(
        [sys.executable, "-m", "torchdoctor", "check", *args, "."],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_lower_bounds_of_requirements_setup_conda_and_readme(tmp_path):
    _write(
        tmp_path,
        {
            "requirements.txt": "numpy\ntorch>=1.7,<2\npytorch-lightning>=0.9\n",
            "setup.py": 'setup(extras_require={"vision": ["torchvision >= 0.8.1"]})\n',
            "environment.yml": "dependencies:\n  - pytorch>=1.9\n",
            "README.md": "## Requirements\n- PyTorch>=1.4.0 (tested on 1.7)\n",
        },
    )
    # The oldest of each the metadata gives (the README's, which goes stale, is not read when
    # the metadata has one); lightning's bound is not torch's.
    assert declared_minimums(tmp_path) == (("torch", "1.7.0"), ("torchvision", "0.8.1"))
    (tmp_path / "requirements.txt").unlink()
    (tmp_path / "setup.py").unlink()
    (tmp_path / "environment.yml").unlink()
    assert declared_minimums(tmp_path) == (("torch", "1.4.0"),)


def test_an_exact_pin_or_a_bare_name_is_no_promise(tmp_path):
    _write(
        tmp_path,
        {
            "requirements.txt": "torch==1.7.0\ntorchvision\ntorch_geometric>=1.6\n",
            "README.md": "Built with libtorch>=1.3 and torchaudio>=0.5.\n",
        },
    )
    assert declared_minimums(tmp_path) == ()


def test_readme_bounds_as_people_write_them(tmp_path):
    # pytorch-pfn-extras: "* PyTorch 2.2+"; a local label (`+cu110`) is no bound
    _write(tmp_path, {"README.md": "## Requirements\n* Python 3.9+\n* PyTorch 2.2+\n"})
    assert declared_minimums(tmp_path) == (("torch", "2.2.0"),)
    _write(tmp_path, {"README.md": "Tested with torch 1.7.0+cu110 and torchvision 0.8 or later.\n"})
    assert declared_minimums(tmp_path) == (("torchvision", "0.8.0"),)
    _write(tmp_path, {"README.md": "Needs PyTorch 1.4 and above; torch 1.10 is what we used.\n"})
    assert declared_minimums(tmp_path) == (("torch", "1.4.0"),)


def test_a_package_one_folder_below_the_checked_one(tmp_path):
    # an unpacked sdist checked from the folder above it (hummingbird-ml-0.4.12/hummingbird-ml-0.4.12)
    _write(
        tmp_path,
        {"pkg-1.0/setup.py": 'install_requires=["torch>1.7.0"]\n', "notes/a.txt": "torch>=0.4\n"},
    )
    assert declared_minimums(tmp_path) == (("torch", "1.7.0"),)
    # a folder with code of its own keeps a package below it as a vendored library
    _write(
        tmp_path,
        {
            "src/train.py": "import torch\n",
            "src/apex/setup.py": 'install_requires=["torch>=0.4"]\n',
        },
    )
    assert declared_minimums(tmp_path / "src") == ()
    # a root with packaging metadata of its own is not looked below
    _write(tmp_path, {"pyproject.toml": '[project]\ndependencies = ["torch>=2.0"]\n'})
    assert declared_minimums(tmp_path) == (("torch", "2.0.0"),)


def test_the_facts_tell_which_releases_lack_a_successor(tmp_path):
    _write(tmp_path, {"requirements/base.txt": "torch ~= 1.8\n", "train.py": "import torch\n"})
    facts = facts_for(tmp_path)
    assert facts.supports_before("torch", "1.9")
    assert not facts.supports_before("torch", "1.8")
    assert not facts.supports_before("torchvision", "0.13")


TRAIN = (
    "import torch\nimport torchvision\n\n"
    "def distance(a, b):\n    return torch.norm(a - b)\n\n"
    "model = torchvision.models.resnet18(pretrained=True)\n"
)


def test_deprecations_whose_successor_the_supported_release_lacks_are_not_reported(tmp_path):
    _write(tmp_path, {"train.py": TRAIN, "requirements.txt": "torch==1.7.0\ntorchvision==0.8.1\n"})
    pinned = _check(tmp_path, "--no-cache", "--select", "TD805,TD807").stdout
    # Pinned: whoever installs it today runs a torch with the successors.
    assert "train.py:5:12: TD805" in pinned and "train.py:7:37: TD807" in pinned, pinned
    _write(tmp_path, {"requirements.txt": "torch>=1.7\ntorchvision>=0.8.1\n"})
    promised = _check(tmp_path, "--no-cache", "--select", "TD805,TD807")
    assert "TD805" not in promised.stdout and "TD807" not in promised.stdout, promised.stdout
    # A promise the successors keep (torch.linalg.vector_norm arrived in 1.9).
    _write(tmp_path, {"requirements.txt": "torch>=1.9\ntorchvision>=0.13\n"})
    kept = _check(tmp_path, "--no-cache", "--select", "TD805,TD807").stdout
    assert "TD805" in kept and "TD807" in kept, kept


def test_a_cached_result_is_not_reused_once_the_requirements_change(tmp_path):
    _write(tmp_path, {"train.py": TRAIN, "requirements.txt": "torch>=1.7\n"})
    assert "TD805" not in _check(tmp_path, "--select", "TD805").stdout
    _write(tmp_path, {"requirements.txt": "torch>=2.0\n"})
    assert "train.py:5:12: TD805" in _check(tmp_path, "--select", "TD805").stdout


def test_a_cpp_extension_of_a_project_supporting_torch_before_1_3_keeps_data(tmp_path):
    kernel = (
        "#include <torch/extension.h>\nvoid run(at::Tensor x) {\n  float* p = x.data<float>();\n}\n"
    )
    _write(tmp_path, {"lib/op.cpp": kernel, "README.md": "Software: PyTorch>=1.1.0, Python3\n"})
    assert "TD707" not in _check(tmp_path, "--no-cache", "--select", "TD707").stdout
    _write(tmp_path, {"README.md": "Software: PyTorch>=1.3.0, Python3\n"})
    assert "lib/op.cpp:3:16: TD707" in _check(tmp_path, "--no-cache", "--select", "TD707").stdout


CHECKPOINTED = (
    "import torch.utils.checkpoint as cp\n\n\n"
    "def forward(self, x):\n    return cp.checkpoint(self.block, x)\n"
)


def test_use_reentrant_is_not_advised_to_a_project_supporting_torch_before_1_11(tmp_path):
    # OpenMMLab's packages: `torch>=1.3` in the sdist's own metadata, no requirements file.
    _write(
        tmp_path,
        {
            "setup.py": "from setuptools import setup\nsetup(name='mmx')\n",
            "mmx.egg-info/requires.txt": "numpy\ntorch>=1.3\n\n[tests]\npytest\n",
            "mmx/blocks.py": CHECKPOINTED,
        },
    )
    assert declared_minimums(tmp_path) == (("torch", "1.3.0"),)
    assert "TD804" not in _check(tmp_path, "--no-cache", "--select", "TD804").stdout
    _write(tmp_path, {"mmx.egg-info/requires.txt": "torch>=1.11\n"})
    found = _check(tmp_path, "--no-cache", "--select", "TD804").stdout
    assert "mmx/blocks.py:5:12: TD804" in found, found
