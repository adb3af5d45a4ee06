"""`torchdoctor ckpt` on hostile, malformed and misplaced input: it never runs the file, never
hangs or runs out of memory, never shows a traceback, and never writes over what it should not.

Run as a script (`python test_ckpt_robustness.py fuzz SEED COUNT`) it is the fuzz driver that
`test_fuzzed_checkpoints_never_crash_the_reader` starts under a timeout.
"""

from __future__ import annotations

import argparse
import collections
import io
import os
import pickle
import random
import stat
import struct
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import import_torch

torch = import_torch()

from ckpt_builders import Net, safetensors_bytes, training_checkpoint  # noqa: E402
from torchdoctor.ckpt import reader  # noqa: E402
from torchdoctor.cli import main  # noqa: E402
from torchdoctor.knowledge import weights_only as _weights_only  # noqa: E402

TIMEOUT = 60  # seconds: catches a hang, never a slow run


def cli(*args, cwd=None) -> subprocess.CompletedProcess:
    full = {**os.environ, "NO_COLOR": "1", "TORCHDOCTOR_LANG": "en"}
    return subprocess.run(
        [sys.executable, "-m", "torchdoctor", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=full,
    )


def clean_exit(result: subprocess.CompletedProcess) -> None:
    """No traceback, no internal error: what every bad input must end with."""
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr


def one_line_error(result: subprocess.CompletedProcess) -> str:
    clean_exit(result)
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr


def text(value: str) -> bytes:
    """A pickle BINUNICODE opcode pushing `value`."""
    data = value.encode()
    return b"X" + len(data).to_bytes(4, "little") + data


# Safety: a pickle that runs code is a danger, named, never allowlisted, never loaded ----------


def hidden_system_pickle(marker: Path) -> bytes:
    """{'a': posix.system('touch MARKER'), 'b': getattr(__import__('os'), 'getcwd')()}: the
    second call is on an object the pickle built (the repro `ckpthidden`)."""
    return (
        b"\x80\x02}("
        + text("a")
        + b"cposix\nsystem\n"
        + text(f"touch {marker}")
        + b"\x85R"
        + text("b")
        + b"cbuiltins\ngetattr\ncbuiltins\n__import__\n"
        + text("os")
        + b"\x85R"
        + text("getcwd")
        + b"\x86R)Ru."
    )


class ProfilerGadget:
    """Pickles as `cProfile.run(code)`, which runs `code` (the repro `ckptgadget`)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        import cProfile

        return (cProfile.run, (f"import pathlib; pathlib.Path({str(self.marker)!r}).touch()",))


def test_pickle_calling_system_is_a_danger_not_a_damaged_file(tmp_path):
    marker = tmp_path / "PWNED"
    path = tmp_path / "h.pkl"
    path.write_bytes(hidden_system_pickle(marker))
    result = cli("ckpt", "inspect", path)
    clean_exit(result)
    assert result.returncode == 1
    assert "TD502 load-weights-only: DANGER" in result.stdout
    for name in ("`posix.system`", "`builtins.getattr`", "`builtins.__import__`"):
        assert name in result.stdout
    assert "corrupted-checkpoint" not in result.stdout
    assert "allow exactly these" not in result.stdout
    assert not marker.exists()


def test_profiler_gadget_is_a_danger_and_never_allowlisted_or_loaded(tmp_path):
    marker = tmp_path / "PWNED"
    path = tmp_path / "g.pth"
    torch.save({"w": torch.zeros(2), "meta": ProfilerGadget(marker)}, path)
    result = cli("ckpt", "inspect", path)
    clean_exit(result)
    assert result.returncode == 1
    assert "DANGER" in result.stdout and "`cProfile.run`" in result.stdout
    assert "allow exactly these" not in result.stdout and "repairs this" not in result.stdout
    for command in (
        ["fix", path, "-o", tmp_path / "out.pth"],
        ["fix", path, "-o", tmp_path / "out.pth", "--trust"],
    ):
        refused = one_line_error(cli("ckpt", *command))
        assert "never loads" in refused and "cProfile.run" in refused
    with pytest.raises(torchdoctor_api().CheckpointMismatchError, match="not even with trust"):
        torchdoctor_api().load_state_dict(torch.nn.Linear(2, 2), str(path), trust=True)
    assert not marker.exists() and not (tmp_path / "out.pth").exists()


def torchdoctor_api():
    from torchdoctor.ckpt import api

    return api


def test_whole_module_with_a_gadget_gets_no_trust_advice(tmp_path):
    path = tmp_path / "whole.pth"
    model = Net()
    model.hook = ProfilerGadget(tmp_path / "PWNED")
    torch.save(model, path)
    result = cli("ckpt", "inspect", path)
    clean_exit(result)
    assert "DANGER" in result.stdout and "whole-module-saved" in result.stdout
    assert "--trust" not in result.stdout
    assert not (tmp_path / "PWNED").exists()


def test_a_damaged_pickle_still_reports_the_code_it_holds(tmp_path):
    path = tmp_path / "cut.pkl"
    path.write_bytes(
        b"\x80\x02}("
        + text("a")
        + b"cposix\nsystem\n"
        + text("rm -rf ~")
        + b"\x85R"
        + text("b")
        + b"\xff"
    )
    result = cli("ckpt", "inspect", path)
    clean_exit(result)
    assert "corrupted-checkpoint" in result.stdout and "`posix.system`" in result.stdout
    refused = one_line_error(cli("ckpt", "diff", path, path))
    assert "not a readable checkpoint" in refused and "DANGER" in refused


@pytest.mark.parametrize(
    "name, uses, group",
    [
        ("numpy.core.multiarray._reconstruct", {"call"}, "data"),
        ("numpy.dtypes.Float64DType", set(), "data"),
        ("argparse.Namespace", {"new"}, "data"),
        ("collections.defaultdict", {"call"}, "data"),
        ("model.Net", {"new"}, "class"),  # a pickled model of the user's own
        ("config.Mode", {"call-scalar"}, "class"),  # an enum member: Mode("train")
        ("torch.nn.functional.relu", set(), "class"),  # only named, never called
        ("evil.run", {"call-scalar"}, "code"),  # a function called while loading
        ("model.Builder", {"call"}, "code"),  # a class called with built arguments
        ("logging.FileHandler", {"call-scalar"}, "code"),  # the standard library's: opens a file
        ("numpy.dtype", {"call-result"}, "code"),  # calling what the pickle built: a gadget
        ("os.system", set(), "code"),
        ("posix.system", {"call"}, "code"),
        ("subprocess.Popen", {"new"}, "code"),
        ("builtins.eval", {"call"}, "code"),
        ("builtins.getattr", {"call"}, "code"),
        ("cProfile.run", {"call"}, "code"),
        ("pdb.run", {"call"}, "code"),
        ("runpy.run_path", {"call"}, "code"),
        ("importlib.import_module", {"call"}, "code"),
        ("pickle.loads", {"call"}, "code"),
        ("marshal.loads", {"call"}, "code"),
        ("torch.storage._load_from_bytes", {"call"}, "code"),  # torch.load(weights_only=False)
    ],
)
def test_globals_are_judged_by_name_and_use(name, uses, group):
    assert _weights_only.group(name, uses) == group


def test_an_enum_of_the_users_code_needs_trust_but_is_no_danger(tmp_path):
    (tmp_path / "settings.py").write_text(
        "import enum\n\nclass Mode(enum.Enum):\n    TRAIN = 'train'\n"
    )
    save = (
        "import sys, torch; sys.path.insert(0, sys.argv[1]); import settings; "
        "torch.save({'w': torch.zeros(2), 'mode': settings.Mode.TRAIN}, sys.argv[2])"
    )
    path = tmp_path / "ckpt.pth"
    subprocess.run([sys.executable, "-c", save, str(tmp_path), str(path)], check=True)
    result = cli("ckpt", "inspect", path)
    clean_exit(result)
    assert result.returncode == 1 and "DANGER" not in result.stdout
    assert "`settings.Mode`, classes of your code" in result.stdout
    assert "--trust` repairs this" in result.stdout


# Budgets: time and memory in proportion to what is reported -------------------------------


def laughs() -> bytes:
    """268 bytes: nine levels of lists, each holding the level below ten times (the repro)."""
    pickled = b"\x80\x02]q\x00(" + text("x") * 10 + b"e"
    for level in range(1, 9):
        pickled += b"]q" + bytes([level]) + b"(" + (b"h" + bytes([level - 1])) * 10 + b"e"
    return pickled + b"."


def dict_laughs() -> bytes:
    """{"a": level 8} where level N is a dict of ten keys, each holding level N - 1."""
    keys = [text(f"k{i}") for i in range(10)]
    pickled = b"\x80\x02}q\x00(" + b"".join(k + text("x") for k in keys) + b"u0"
    for level in range(1, 9):
        pickled += (
            b"}q"
            + bytes([level])
            + b"("
            + b"".join(k + b"h" + bytes([level - 1]) for k in keys)
            + b"u0"
        )
    return pickled + b"}(" + text("a") + b"h\x08u."


def shared_tuples(depth: int) -> bytes:
    """Pushes a tuple of `depth` levels, each holding the level below twice: hash() of it
    walks 2**depth paths."""
    pickled = b"K\x01K\x01\x86q\x000"
    for level in range(1, depth):
        previous = bytes([level - 1])
        pickled += b"h" + previous + b"h" + previous + b"\x86q" + bytes([level]) + b"0"
    return pickled + b"h" + bytes([depth - 1])


def module_state(key: bytes, children: bytes) -> bytes:
    """BUILD of a pickled module (memo 0 is its class) whose `_modules` are `children`."""
    return (
        b"h\x00)\x81q"
        + key
        + b"}("
        + text("_parameters")
        + b"}"
        + text("_modules")
        + b"}("
        + children
        + b"uub"
    )


@pytest.mark.parametrize(
    "name, pickled, words",
    [
        ("laughs", laughs(), "Nothing to report."),
        ("laughs of dicts", dict_laughs(), "dict of 10 entries"),
        (
            "hash of shared tuples as a dict key",
            b"\x80\x02}" + shared_tuples(60) + b"K\x01s.",
            "nested too deeply",
        ),
        (
            "hash of shared tuples in a set",
            b"\x80\x04\x8f(" + shared_tuples(60) + b"\x90.",
            "nested too deeply",
        ),
        (
            "keys that share one large tuple, each counted once",
            b"\x80\x02("
            + b"K\x07" * 250
            + b"tq\x00}"
            + b"".join(b"h\x00J" + struct.pack("<i", i) + b"\x86K\x01s" for i in range(50_000))
            + b".",
            "Nothing to report.",
        ),
        (
            "hash of shared tuples in an OrderedDict",
            b"\x80\x02ccollections\nOrderedDict\n]((" + shared_tuples(60) + b"K\x01te\x85R.",
            "nested too deeply",
        ),
        (
            "a module nested in itself",
            b"\x80\x02cmodel\nNet\nq\x00" + module_state(b"\x01", text("a") + b"h\x01") + b".",
            "not fully read",
        ),
        (
            "modules shared 2**40 times",
            b"\x80\x02cmodel\nNet\nq\x00"
            + module_state(b"\x01", b"")
            + b"0".join(
                module_state(
                    bytes([level]),
                    text("a") + b"h" + bytes([level - 1]) + text("b") + b"h" + bytes([level - 1]),
                )
                for level in range(2, 42)
            )
            + b".",
            "not fully read",
        ),
        (
            "a tensor of 100,000 dimensions",
            b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n("
            + text("x")
            + b"K\x00("
            + b"K\x02" * 100_000
            + b"tNtR.",
            "100,000 dimensions",
        ),
        (
            "a size claimed larger than the file",
            b"\x80\x05\x96" + struct.pack("<Q", 2**60) + b"x.",
            "cut short",
        ),
        (
            "3,000,000 references to one object",
            b"\x80\x02K\x01" + b"2" * 3_000_000 + b".",
            "not fully read: the pickle runs more than 2,000,000 operations",
        ),
    ],
)
def test_hostile_pickles_are_read_within_budgets(tmp_path, name, pickled, words):
    path = tmp_path / "hostile.pkl"
    path.write_bytes(pickled)
    result = cli("ckpt", "inspect", path)
    clean_exit(result)
    assert result.returncode in (0, 1)
    assert words in result.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_AS is POSIX")
def test_pickle_bomb_stops_at_the_budget_in_bounded_memory(tmp_path):
    """The repro `ckptbomb`, at a fifth of its size: a small zip whose data.pkl is millions of
    EMPTY_LIST opcodes (each a 64-byte list); read under a 1 GiB address-space limit."""
    import resource

    path = tmp_path / "bomb.pth"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("archive/data.pkl", "w", force_zip64=True) as member:
            member.write(b"\x80\x02")
            for _ in range(20):
                member.write(b"]" * 1_000_000)
            member.write(b".")
        archive.writestr("archive/version", "3\n")
    assert path.stat().st_size < 100_000

    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    result = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "ckpt", "inspect", str(path)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        preexec_fn=limit_memory,
    )
    clean_exit(result)
    assert result.returncode == 1
    assert "not fully read: the pickle runs more than" in result.stdout
    refused = one_line_error(cli("ckpt", "fix", path, "-o", tmp_path / "out.pth"))
    assert "not fully read" in refused and not (tmp_path / "out.pth").exists()


# Malformed safetensors headers: a corrupted-checkpoint finding with the reason ---------------


def safetensors_file(header: bytes, data: bytes = b"\0" * 16, length: int | None = None) -> bytes:
    return struct.pack("<Q", len(header) if length is None else length) + header + data


def header(a: dict | None = None, b: dict | None = None) -> bytes:
    """Two float32 tensors of 2 values, `a` then `b`, with fields replaced as given."""
    import json

    first = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8], **(a or {})}
    second = {"dtype": "F32", "shape": [2], "data_offsets": [8, 16], **(b or {})}
    return json.dumps({"a": first, "b": second}).encode()


@pytest.mark.parametrize(
    "content, kind, words",
    [
        (safetensors_file(header({"dtype": 5})), "damaged", "dtype of 'a' is not a string"),
        (
            safetensors_file(header().replace(b"[2]", b"[1e400]", 1)),
            "damaged",
            "shape of 'a' is not a list of sizes",
        ),
        (safetensors_file(header({"shape": [-2]})), "damaged", "shape of 'a'"),
        (safetensors_file(header({"shape": "2"})), "damaged", "shape of 'a'"),
        (safetensors_file(header({"data_offsets": [-8, 0]})), "damaged", "data_offsets of 'a'"),
        (safetensors_file(header({"data_offsets": [8, 0]})), "damaged", "data_offsets of 'a'"),
        (safetensors_file(header({"data_offsets": [0, 8, 16]})), "damaged", "data_offsets of 'a'"),
        (
            safetensors_file(header({"data_offsets": [0, 1e400]}).replace(b"Infinity", b"1e400")),
            "damaged",
            "data_offsets of 'a'",
        ),
        (safetensors_file(header(b={"data_offsets": [4, 12]})), "damaged", "overlaps"),
        (
            safetensors_file(header({"data_offsets": [0, 4]})),
            "damaged",
            "4 bytes for 2 float32 values",
        ),
        (safetensors_file(header({"data_offsets": [16, 24]})), "damaged", "leaves a gap"),
        (safetensors_file(header(), data=b"\0" * 12), "truncated", "cut short"),
        (safetensors_file(header(), data=b"\0" * 20), "damaged", "4 bytes after the last tensor"),
        (safetensors_file(header(), length=10**6), "truncated", "cut short"),
        (safetensors_file(header(), length=2**31), "damaged", "format's limit"),
        (safetensors_file(b"[1, 2]", data=b""), "damaged", "not a JSON object"),
        (safetensors_file(b'{"a": [1, 2]}'), "damaged", "entry 'a' is not an object"),
        (
            safetensors_file(b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
            "damaged",
            "not valid JSON",
        ),
        (safetensors_file(b'{"a": "\xff\xfe"}'), "damaged", "not UTF-8"),
        (safetensors_file(b'{"a": 1,'), "damaged", "not valid JSON"),
        (
            safetensors_file(b'{"__metadata__": {"n": 5}}', data=b""),
            "damaged",
            "__metadata__ is not a map of strings",
        ),
    ],
)
def test_malformed_safetensors_is_a_corrupted_checkpoint(tmp_path, content, kind, words):
    import json

    path = tmp_path / "model.safetensors"
    path.write_bytes(content)
    result = cli("ckpt", "inspect", path, "--format", "json")
    clean_exit(result)
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["problem"]["kind"] == kind
    assert [f["name"] for f in data["findings"]] == ["corrupted-checkpoint"]
    assert words in data["findings"][0]["message"]
    assert words in one_line_error(cli("ckpt", "diff", path, path))


def test_the_safetensors_file_the_cases_start_from_is_valid(tmp_path):
    path = tmp_path / "good.safetensors"
    path.write_bytes(safetensors_file(header()))
    result = cli("ckpt", "inspect", path)
    assert result.returncode == 0 and "Nothing to report." in result.stdout


# Fuzzing: truncations and bit flips of real checkpoints ------------------------------------


def seed_files() -> dict[str, bytes]:
    files = {}
    buffer = io.BytesIO()
    torch.save(training_checkpoint(Net()), buffer)
    files["zip"] = buffer.getvalue()
    buffer = io.BytesIO()
    torch.save(Net(), buffer)
    files["whole"] = buffer.getvalue()
    buffer = io.BytesIO()
    torch.save(Net().state_dict(), buffer, _use_new_zipfile_serialization=False)
    files["legacy"] = buffer.getvalue()
    files["safetensors"] = safetensors_bytes(Net().state_dict())
    value = {
        "a": [1, 2.5, "x", (1, (2, 3))],
        "b": collections.OrderedDict(k=b"z"),
        "c": {frozenset({1}), 3},
        "n": argparse.Namespace(x=1),
        "arr": np.arange(3),
    }
    for protocol in range(6):
        files[f"pickle{protocol}"] = pickle.dumps(value, protocol=protocol)
    return files


def data_pkl(archive_bytes: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(archive_bytes)) as archive:
        return archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl")))


def with_pickle(archive_bytes: bytes, pickled: bytes) -> bytes:
    """The zip checkpoint with its data.pkl replaced (a valid CRC: the reader gets past zip)."""
    with zipfile.ZipFile(io.BytesIO(archive_bytes)) as archive:
        records = {name: archive.read(name) for name in archive.namelist()}
    records[next(n for n in records if n.endswith("data.pkl"))] = pickled
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in records.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def mutated(data: bytes, rng: random.Random) -> bytes:
    if rng.random() < 0.3:
        return data[: rng.randrange(len(data))]
    changed = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        position = rng.randrange(len(changed))
        if rng.random() < 0.5:
            changed[position] ^= 1 << rng.randrange(8)
        else:
            changed[position] = rng.randrange(256)
    return bytes(changed)


def fuzz(seed: int, count: int, directory: Path) -> None:
    """Reads `count` mutants of each seed file as `inspect` and `diff` do; any exception but
    the reader's own verdicts (Unreadable, OSError) is a bug, and is raised."""
    from torchdoctor.ckpt import command
    from torchdoctor.ckpt.diff import compare
    from torchdoctor.ckpt.findings import Subject, findings
    from torchdoctor.ckpt.inspect import listing
    from torchdoctor.report import strings

    rng = random.Random(seed)
    files = seed_files()
    pickles = {name: data_pkl(files[name]) for name in ("zip", "whole")}
    cases = [(name, lambda data=data: mutated(data, rng)) for name, data in files.items()]
    cases += [
        (
            f"{name} data.pkl",
            lambda name=name: with_pickle(files[name], mutated(pickles[name], rng)),
        )
        for name in pickles
        for _ in range(3)
    ]
    path = directory / "mutant.bin"
    for name, make in cases:
        for _ in range(count):
            path.write_bytes(make())
            try:
                try:
                    found = listing(reader.read(str(path)))
                except reader.Unreadable as problem:
                    findings(Subject(str(path), "en", problem=problem))
                    continue
                subject = Subject(str(path), "en", listing=found)
                command._inspect_text(found, strings.labels("ckpt", "en"), True)
                command._inspect_json(subject, findings(subject))
                compare(found.tensors, found.tensors, ())
            except OSError:
                continue
            except Exception as error:
                keep = directory / f"crash-{name.replace(' ', '-')}.bin"
                keep.write_bytes(path.read_bytes())
                raise AssertionError(f"{name}: {type(error).__name__}: {error} ({keep})") from error


def test_fuzzed_checkpoints_never_crash_the_reader(tmp_path):
    result = subprocess.run(
        [sys.executable, __file__, "fuzz", "1", "60", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=Path(__file__).parent,
    )
    assert result.returncode == 0, result.stderr[-3000:]


# `ckpt fix`: classes resolved as in the user's script; the output never clobbered ------------

MODEL_PY = textwrap.dedent("""
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)
            self.bn = nn.BatchNorm1d(2)
""")


def console_script(tmp_path: Path) -> Path:
    """A launcher like the installed `torchdoctor` script: its own directory, not the current
    one, is first on sys.path (`python -m torchdoctor` would add the current one)."""
    launcher = tmp_path / "bin" / "torchdoctor_script.py"
    launcher.parent.mkdir()
    launcher.write_text("import sys\nfrom torchdoctor.cli import main\nsys.exit(main())\n")
    return launcher


def project_with_whole_model(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "model.py").write_text(MODEL_PY)
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import torch, model; torch.manual_seed(0); torch.save(model.Net(), 'whole.pth')",
        ],
        cwd=project,
        check=True,
    )
    return project


def test_fix_trust_finds_the_model_class_in_the_current_directory(tmp_path):
    project = project_with_whole_model(tmp_path)
    launcher = console_script(tmp_path)
    inspected = subprocess.run(
        [sys.executable, str(launcher), "ckpt", "inspect", "whole.pth"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert "`torchdoctor ckpt fix whole.pth -o FIXED.pth --trust`" in inspected.stdout
    fixed = subprocess.run(
        [sys.executable, str(launcher), "ckpt", "fix", "whole.pth", "-o", "weights.pth", "--trust"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    clean_exit(fixed)
    assert fixed.returncode == 0, fixed.stderr
    check = (
        "import torch, model; net = model.Net(); whole = torch.load('whole.pth', "
        "weights_only=False); net.load_state_dict(torch.load('weights.pth', "
        "weights_only=True), strict=True); assert torch.equal(net.fc.weight, "
        "whole.fc.weight)"
    )
    subprocess.run([sys.executable, "-c", check], cwd=project, check=True)


def test_fix_trust_without_the_class_says_where_to_run_it(tmp_path):
    project = project_with_whole_model(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run(
        [
            sys.executable,
            str(console_script(tmp_path)),
            "ckpt",
            "fix",
            str(project / "whole.pth"),
            "-o",
            "weights.pth",
            "--trust",
        ],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    error = one_line_error(result)
    assert "the module `model`" in error and "directory your training script ran in" in error
    assert not (elsewhere / "weights.pth").exists()


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def in_process(capsys, *args) -> tuple[int, str]:
    """(exit code, stderr) of the command run in this process (torch is imported already)."""
    code = main(["ckpt", *map(str, args), "--lang", "en"])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    assert code != 2 or len(err.strip().splitlines()) == 1, err
    return code, err


def test_fix_refuses_to_overwrite_without_force_and_writes_the_usual_mode(tmp_path, capsys):
    source = tmp_path / "model.pth"
    torch.save(Net().state_dict(), source)
    out = tmp_path / "out.pth"
    out.write_bytes(b"precious")
    code, err = in_process(capsys, "fix", source, "-o", out)
    assert code == 2 and "exists; pass --force" in err and out.read_bytes() == b"precious"
    assert in_process(capsys, "fix", source, "-o", out, "--force")[0] == 0
    Net().load_state_dict(torch.load(out, weights_only=True), strict=True)
    new = tmp_path / "new.pth"
    assert in_process(capsys, "fix", source, "-o", new)[0] == 0
    for written in (out, new):
        assert stat.S_IMODE(written.stat().st_mode) == 0o666 & ~current_umask()


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links and FIFOs")
def test_fix_force_never_replaces_links_devices_or_the_input(tmp_path, capsys):
    source = tmp_path / "model.pth"
    torch.save(Net().state_dict(), source)
    target = tmp_path / "target.pth"
    target.write_bytes(b"precious")
    link = tmp_path / "link.pth"
    link.symlink_to(target)
    assert "not a regular file" in in_process(capsys, "fix", source, "-o", link, "--force")[1]
    assert link.is_symlink() and target.read_bytes() == b"precious"
    hard = tmp_path / "hard.pth"
    os.link(source, hard)
    assert "never modified" in in_process(capsys, "fix", source, "-o", hard, "--force")[1]


# Files that are not checkpoints at all: one line each, never a hang ------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and /dev/zero")
@pytest.mark.parametrize(
    "make, words, code",
    [
        (lambda p: p.mkdir(), "a directory, not a regular file", 2),
        (lambda p: os.mkfifo(p), "a FIFO, not a regular file", 2),
        (lambda p: p.symlink_to("/dev/zero"), "a character device", 2),
        (lambda p: p.write_bytes(b""), "empty (0 bytes)", 1),
        (lambda p: p.write_bytes(zip_of({"readme.txt": b"hi"})), "a zip archive without", 1),
        (
            lambda p: p.write_bytes(zip_of({"archive/data.pkl": b"\x80\x02K\x01."})[:60]),
            "cut short",
            1,
        ),
    ],
)
def test_inspect_and_diff_of_what_is_not_a_checkpoint(tmp_path, make, words, code):
    path = tmp_path / "model.pth"
    make(path)
    inspected = cli("ckpt", "inspect", path)
    clean_exit(inspected)
    assert inspected.returncode == code
    assert words in (inspected.stdout if code == 1 else one_line_error(inspected))
    good = tmp_path / "good.pth"
    torch.save(Net().state_dict(), good)
    for args in ([path, good], [good, path]):
        assert words in one_line_error(cli("ckpt", "diff", *args))


def zip_of(records: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in records.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_terminal_escapes_in_keys_are_shown_escaped(tmp_path):
    path = tmp_path / "keys.pth"
    torch.save({"fc.weight\x1b]0;owned\x07": torch.zeros(2), "fc.bias": torch.zeros(2)}, path)
    result = cli("ckpt", "inspect", path)
    assert result.returncode == 0 and "\x1b" not in result.stdout
    assert "fc.weight\\x1b]0;owned\\x07" in result.stdout


@pytest.mark.parametrize(
    "source, spec, words",
    [
        ("import nonexistent_module_xyz\n", "m.py:build", "No module named"),
        ("import sys\nsys.exit(3)\n", "m.py:build", "SystemExit: 3"),
        ("def build(:\n", "m.py:build", "SyntaxError"),
        ("build = 5\n", "m.py:build", "not callable"),
        (
            "def build():\n    raise ValueError('bad width')\n",
            "m.py:build",
            "ValueError: bad width",
        ),
        ("def build():\n    return 5\n", "m.py:build", "not an nn.Module"),
        ("", "absent_package_xyz.models:build", "No module named"),
        ("", "fifo.py:build", "not a regular file"),
    ],
)
def test_a_model_spec_that_fails_is_one_line(tmp_path, capsys, monkeypatch, source, spec, words):
    if sys.platform == "win32" and spec.startswith("fifo"):
        pytest.skip("FIFOs")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # --model adds the file's directory
    (tmp_path / "m.py").write_text(source)
    if spec.startswith("fifo"):
        os.mkfifo(tmp_path / "fifo.py")
    path = tmp_path / "w.pth"
    torch.save(Net().state_dict(), path)
    for command in (
        ["diff", path, "--model", spec],
        ["fix", path, "-o", tmp_path / "out.pth", "--model", spec],
    ):
        code, err = in_process(capsys, *command)
        assert code == 2 and words in err
    assert not (tmp_path / "out.pth").exists()


if __name__ == "__main__":
    if sys.argv[1:2] == ["fuzz"]:
        fuzz(int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))
