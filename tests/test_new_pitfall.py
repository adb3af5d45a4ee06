"""scripts/new_pitfall.py writes an entry skeleton that imports and registers but stays off,
and fixture stubs where the fixture tests look; it never overwrites."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from test_explain_fixtures import read_fixture
from torchdoctor.catalog._model import REQUIRED_SECTIONS

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "src" / "torchdoctor" / "catalog"


def _repository_copy(tmp_path: Path, area: str) -> int:
    """A repository with the area's entry files (empty: only their names matter); the
    highest code in it."""
    area_dir = tmp_path / "src" / "torchdoctor" / "catalog" / area
    area_dir.mkdir(parents=True)
    (area_dir / "__init__.py").write_text("")
    codes = []
    for entry in (CATALOG / area).glob("td[0-9]*.py"):
        (area_dir / entry.name).write_text("")
        codes.append(int(entry.name[2:5]))
    return max(codes)


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "new_pitfall.py"), *args, "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"skeleton_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_skeleton_and_stubs_for_every_facet(tmp_path):
    highest = _repository_copy(tmp_path, "training")
    result = _run(
        tmp_path, "training", "clip-before-unscale", "--static", "--explain", "--watch", "--ckpt"
    )
    assert result.returncode == 0, result.stderr
    code = f"TD{highest + 1:03d}"
    entry = tmp_path / "src/torchdoctor/catalog/training" / f"td{code[2:]}_clip_before_unscale.py"
    pitfall = _load(entry).PITFALL
    assert (pitfall.code, pitfall.name, pitfall.default) == (code, "clip-before-unscale", False)
    assert pitfall.detector_kinds() == ["static", "explain", "runtime", "ckpt"]
    assert [monitor.default for monitor in pitfall.monitors] == [False]
    for lang in ("en", "zh"):
        assert set(REQUIRED_SECTIONS) <= set(pitfall.sections(lang))
    # Registered detectors that find nothing until they are written.
    assert pitfall.error_signatures[0].check(None, None) is None
    assert list(pitfall.checkpoint_checks[0](None)) == []

    fixtures = tmp_path / "tests" / "fixtures"
    lint = fixtures / "lint" / "clip-before-unscale.py"  # as test_catalog looks for it
    assert code in lint.read_text()
    explain = list((fixtures / "explain").glob("*/*.txt"))  # as test_explain_fixtures globs
    assert [p.parent.name for p in explain] == ["clip-before-unscale"]
    assert read_fixture(explain[0])[0]["expect"] == "clip-before-unscale"
    assert (fixtures / "watch" / "clip_before_unscale.py").exists()
    assert (fixtures / "watch" / "clip_before_unscale_fixed.py").exists()
    assert result.stdout.split() == [
        str(p.relative_to(tmp_path))
        for p in (
            entry,
            lint,
            explain[0],
            fixtures / "watch" / "clip_before_unscale.py",
            fixtures / "watch" / "clip_before_unscale_fixed.py",
        )
    ]


def test_only_the_facets_asked_for(tmp_path):
    _repository_copy(tmp_path, "data")
    assert _run(tmp_path, "data", "worker-seed-reuse", "--watch").returncode == 0
    entry = next((tmp_path / "src/torchdoctor/catalog/data").glob("td*_worker_seed_reuse.py"))
    assert _load(entry).PITFALL.detector_kinds() == ["runtime"]
    stubs = sorted(p.name for p in (tmp_path / "tests").rglob("*") if p.is_file())
    assert stubs == ["worker_seed_reuse.py", "worker_seed_reuse_fixed.py"]


def test_refuses_to_overwrite_and_bad_arguments(tmp_path):
    _repository_copy(tmp_path, "tensor")
    assert _run(tmp_path, "tensor", "odd-view", "--static").returncode == 0
    entry = next((tmp_path / "src/torchdoctor/catalog/tensor").glob("td*_odd_view.py"))
    entry.write_text("# written by hand\n")
    again = _run(tmp_path, "tensor", "odd-view", "--static")
    assert again.returncode == 1 and "not overwriting" in again.stderr
    assert entry.read_text() == "# written by hand\n"
    assert len(list(entry.parent.glob("td*_odd_view.py"))) == 1
    for args in (
        ["tensor", "Odd_View", "--static"],
        ["nowhere", "odd", "--static"],
        ["tensor", "odd"],
    ):
        bad = _run(tmp_path, *args)
        assert bad.returncode == 2 and "error:" in bad.stderr, args
