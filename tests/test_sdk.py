"""The contracts between entries and engines: facet signatures, monitor hooks checked at
registration, engine-made findings found by role, and an SDK that costs `check` nothing."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest

from conftest import run_cli
from torchdoctor.catalog import _registry, all_pitfalls, sdk
from torchdoctor.catalog._model import ROLES, Pitfall
from torchdoctor.flake8_plugin import Plugin


def _pitfall() -> Pitfall:
    return Pitfall(code="TD999", name="example", title={"en": "t"}, messages={}, docs={"en": ""})


def test_a_misspelled_monitor_hook_is_refused_at_registration():
    pitfall = _pitfall()
    with pytest.raises(
        TypeError,
        match=r"TD999: .*Late\.after_stpe is not a monitor hook; "
        r"did you mean `after_step`\?",
    ):

        @pitfall.monitor
        class Late(sdk.Monitor):
            def after_stpe(self, optimizer):
                pass

    assert pitfall.monitors == []


def test_a_hook_misspelled_in_a_shared_base_is_refused_too():
    class Base(sdk.Monitor):
        def on_losss(self, name, input, target, kwargs):
            pass

    class Concrete(Base):
        pass

    with pytest.raises(TypeError, match="Base.on_losss is not a monitor hook"):
        _pitfall().monitor(Concrete)


def test_real_hooks_and_helper_methods_register():
    pitfall = _pitfall()

    @pitfall.monitor
    class Fine(sdk.Monitor):
        def on_step(self, optimizer):
            self._remember(optimizer)

        def _remember(self, optimizer):
            pass

    assert pitfall.monitors == [Fine]
    assert set(sdk.HOOKS) >= {"on_step", "after_step", "setup", "teardown"}


def test_every_role_is_taken_by_exactly_one_entry():
    taken = [p.role for p in all_pitfalls() if p.role is not None]
    assert sorted(taken) == sorted(ROLES)
    for role, contract in sdk.ROLE_CONTRACTS.items():
        make = _registry.for_role(role).make_finding
        expected = list(inspect.signature(contract.__call__).parameters)[1:]
        assert list(inspect.signature(make).parameters) == expected, role


def test_findings_are_made_without_a_language():
    """The language is applied when findings are shown (report/localize.py), never where they
    are made: no checker, context or engine-finding function takes one."""
    from torchdoctor.lint import checker, native, notebook

    made_without = [
        checker.check_source,
        checker.fix_source,
        sdk.Context,
        native.check_native,
        native.fix_native,
        sdk.NativeSource,
        notebook.broken_cells,
        *(_registry.for_role(role).make_finding for role in sdk.ROLE_CONTRACTS),
        *(contract.__call__ for contract in sdk.ROLE_CONTRACTS.values()),
    ]
    for function in made_without:
        assert "lang" not in inspect.signature(function).parameters, function


def test_engine_findings_can_be_written_in_every_language():
    from torchdoctor.report.localize import localize, portable

    syntax = _registry.engine_finding(
        "unparsable-source", SyntaxError("bad"), "x.cuda(async=True)\n", "a.py"
    )
    unreadable = _registry.engine_finding("unreadable-source", "binary data", "b.ipynb", cell=2)
    assert portable(syntax) and portable(unreadable)
    localize([syntax, unreadable], "zh")
    assert syntax.message.startswith("语法错误：bad")
    assert syntax.fix is not None and syntax.fix.title == "把 `async=` 改为 `non_blocking=`"
    assert unreadable.message == "无法检查该单元格：binary data"


def test_an_unknown_role_is_an_error_where_it_is_named():
    with pytest.raises(ValueError, match="unknown role 'syntax-eror'"):
        _pitfall().engine_finding("syntax-eror")
    with pytest.raises(KeyError):
        _registry.for_role("syntax-eror")


@pytest.mark.parametrize(
    "facet, contract",
    [
        ("static", sdk.StaticCheck),
        ("native", sdk.NativeScan),
        ("error", sdk.ErrorCheck),
        ("checkpoint", sdk.CheckpointCheck),
    ],
)
def test_every_registered_function_takes_its_facets_arguments(facet, contract):
    functions = {
        "static": lambda p: [d.check for d in p.static_detectors],
        "native": lambda p: p.native_scanners,
        "error": lambda p: [s.check for s in p.error_signatures if s.check is not None],
        "checkpoint": lambda p: p.checkpoint_checks,
    }[facet]
    arguments = list(inspect.signature(contract.__call__).parameters)[1:]
    wrong = []
    for pitfall in all_pitfalls():
        for function in functions(pitfall):
            try:
                inspect.signature(function).bind(*arguments)
            except TypeError:
                wrong.append(f"{pitfall.code} {function.__qualname__}")
    assert wrong == []


def test_the_sdk_loads_neither_torch_nor_the_explain_watch_and_ckpt_engines():
    code = (
        "import sys, torchdoctor.catalog.sdk as sdk; "
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith("
        "('torchdoctor.ckpt', 'torchdoctor.explain.parse', 'torchdoctor.watch.layers'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_names_used_at_explain_watch_or_ckpt_time_come_on_first_use():
    from torchdoctor.ckpt.findings import Subject
    from torchdoctor.explain.parse import is_user_path

    assert sdk.is_user_path is is_user_path and sdk.Subject is Subject
    with pytest.raises(AttributeError, match="no attribute 'Montior'"):
        sdk.Montior  # noqa: B018


def test_a_file_that_does_not_parse_is_an_error_in_sarif_and_left_to_flake8(tmp_path):
    (tmp_path / "bad.py").write_text("import torch\nx = torch.randn(3)\nx.cuda()\n")
    (tmp_path / "broken.py").write_text("def f(:\n")
    result = run_cli("check", "--no-cache", "--format", "sarif", ".", cwd=tmp_path)
    levels = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: r["level"]
        for r in json.loads(result.stdout)["runs"][0]["results"]
    }
    assert levels == {"bad.py": "warning", "broken.py": "error"}
    lines = ["import torch\n", "x = torch.randn(3)\n", "x.cuda()\n", "def f(:\n"]
    assert list(Plugin(None, "broken.py", lines).run()) == []  # flake8 says E999 itself
