"""The docs that are generated from the catalog are up to date."""

import argparse
import contextlib
import io
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs_torch

from torchdoctor import cli
from torchdoctor.catalog import _docs, _registry, all_pitfalls, get
from torchdoctor.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent


def test_rules_reference_is_current():
    current = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert current == _docs.reference_markdown(all_pitfalls(), "en"), (
        "docs/rules.md is stale: python -m torchdoctor rules --format markdown --lang en > docs/rules.md"
    )


def test_readme_quick_start_has_exactly_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = [b for b in quick_start.split("```bash\n")[1:]]
    commands = [b.split("```", 1)[0].strip() for b in blocks]
    assert len(commands) == 2
    assert "torchdoctor check examples/" in commands[0]
    assert "pytest" in commands[1] and "torch==2.13.0" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "torch==2.13.0" in ci and "pytest" in ci


# --- Commands in the docs are checked against the real command line -------------------------

DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCED_BLOCK = re.compile(r"^```[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
QUOTED_COMMAND = re.compile(r"`((?:python -m )?torchdoctor [^`\n]+)`")
# Shell operators between commands (a pipe, `&&`, a redirection): a command ends there.
SHELL_OPERATOR = re.compile(r"(?:^|\s)(?:\|\||&&|\||2>&1|>>?|<)(?=\s|$)|;(?=\s|$)")
# Words that may stand before `torchdoctor` on a line that runs it: a prompt, a YAML step,
# `exec`.
LEADING_WORDS = {"$", "-", "run:", "entry:", "exec"}
COMMENT = re.compile(r"(?:^|\s)#.*")
RULE_OPTIONS = {"--select", "--extend-select", "--ignore"}


def command_lines(text: str) -> tuple[list[list[str]], list[list[str]]]:
    """The torchdoctor argv of every command line in `text`'s fenced code blocks, and of every
    command quoted in backticks, in prose or in printed output (`torchdoctor rule NAME`): those
    may leave out what a complete command needs."""
    commands = []
    for block in FENCED_BLOCK.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            for segment in SHELL_OPERATOR.split(COMMENT.sub("", line)):
                argv = _torchdoctor_argv(segment)
                if argv is not None:
                    commands.append(argv)
    quoted = [
        argv
        for span in QUOTED_COMMAND.findall(text)
        for argv in [_torchdoctor_argv(SHELL_OPERATOR.split(span)[0])]
        if argv is not None
    ]
    return commands, quoted


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment, comments=True)
    except ValueError:  # an apostrophe in printed output: not a command anyway
        return segment.split()


def _torchdoctor_argv(segment: str) -> list[str] | None:
    words = _words(segment)
    for index, word in enumerate(words):
        if word != "torchdoctor" and not word.endswith("/torchdoctor"):
            continue
        if set(words[:index]) <= LEADING_WORDS or words[index - 1] == "-m":
            return words[index + 1 :]
    return None


def _alternatives(argv: list[str]) -> list[list[str]]:
    """A synopsis (`ckpt inspect FILE [--keys] [--format text|json]`) as the concrete command
    lines it stands for."""
    choices = [word.strip("[]").split("|") if word != "|" else [word] for word in argv]
    return [list(words) for words in itertools.product(*choices)]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def problems_of(argv: list[str], complete: bool = True) -> list[str]:
    """What is wrong with `torchdoctor ARGV` for the real parser: a subcommand or an option
    that does not exist, a value outside an option's choices, an unknown rule; when
    `complete`, also whatever makes `parse_args` refuse it (a missing argument)."""
    problems = []
    for words in _alternatives(argv):
        if words[:1] == ["run"]:
            words, _program = cli._split_run(words)
        parser, rest = cli.build_parser(), list(words)
        while _subparsers(parser) and rest and not rest[0].startswith("-"):
            name = rest.pop(0)
            if name not in _subparsers(parser):
                problems.append(f"no subcommand {name!r}")
                break
            parser = _subparsers(parser)[name]
            if parser.prog.endswith(" rule") and rest:
                problems += _unknown_rules(rest[0])
        problems += _option_problems(parser, rest)
        if complete and not problems:
            problems += _refused(words)
    return problems


def _option_problems(parser: argparse.ArgumentParser, words: list[str]) -> list[str]:
    problems = []
    for index, word in enumerate(words):
        if not word.startswith("-") or word == "-":
            continue
        name, _, value = word.partition("=")
        action = parser._option_string_actions.get(name)
        if action is None:
            problems.append(f"{parser.prog}: no option {name!r}")
            continue
        if action.nargs != 0 and not value:
            value = words[index + 1] if index + 1 < len(words) else ""
        if action.choices is not None and value not in action.choices:
            problems.append(f"{parser.prog} {name}: {value!r} is not one of {action.choices}")
        if name in RULE_OPTIONS:
            problems += _unknown_rules(value)
    return problems


def _unknown_rules(selectors: str) -> list[str]:
    """What is wrong with a comma-separated list of rules; a placeholder (`CODE`) is fine."""
    named = [s for s in selectors.split(",") if not (s.isalpha() and s.isupper() and s != "ALL")]
    try:
        _registry.resolve(named)
    except UsageError as error:
        return [str(error)]
    return []


def _refused(words: list[str]) -> list[str]:
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            cli.build_parser().parse_args(words)
    except SystemExit:
        return [stderr.getvalue().strip().splitlines()[-1]]
    return []


def test_the_command_checker_finds_what_is_wrong():
    assert problems_of(["check", "--format", "github", "."]) == []
    assert problems_of(["check", "--no-such-flag", "."]) == [
        "torchdoctor check: no option '--no-such-flag'"
    ]
    assert problems_of(["chek", "."]) == ["no subcommand 'chek'"]
    assert "is not one of" in problems_of(["check", "--format=html"])[0]
    assert "unknown rule selector 'TD999'" in problems_of(["check", "--select", "TD999"])[0]
    assert "unknown rule" in problems_of(["rule", "no-such-rule"])[0]
    assert "required" in problems_of(["ckpt", "fix", "in.pth"])[0]  # -o is missing
    assert problems_of(["ckpt", "fix"], complete=False) == []
    # argparse would take `--stat` for `--statistics`; the docs must spell options out
    assert problems_of(["check", "--stat"]) != []


def test_commands_in_readme_and_docs_exist_in_the_cli():
    found, problems = set(), []
    for path in DOC_FILES:
        commands, quoted = command_lines(path.read_text(encoding="utf-8"))
        for argv, complete in [(a, True) for a in commands] + [(a, False) for a in quoted]:
            found.add(argv[0] if argv else "")
            problems += [
                f"{path.name}: torchdoctor {shlex.join(argv)}: {p}"
                for p in problems_of(argv, complete)
            ]
    assert problems == []
    assert {"check", "explain", "run", "ckpt", "rule"} <= found


# --- The GitHub Action (action.yml) ------------------------------------------------------------

ACTION = ROOT / "action.yml"


def action_scripts() -> dict[str, str]:
    """The `run: |` script of each step of action.yml, by step name (read by indentation: the
    file is plain block YAML, and the tests need no YAML library)."""
    scripts, name, lines = {}, "", ACTION.read_text(encoding="utf-8").splitlines()
    for index, line in enumerate(lines):
        step = re.match(r"\s*- name: (.+)", line)
        if step:
            name = step.group(1)
        if line.strip() == "run: |":
            indent = len(line) - len(line.lstrip()) + 2
            body = itertools.takewhile(
                lambda text: not text.strip() or text.startswith(" " * indent), lines[index + 1 :]
            )
            scripts[name] = "\n".join(text[indent:] for text in body).strip() + "\n"
    return scripts


def action_input_defaults() -> dict[str, str]:
    text = ACTION.read_text(encoding="utf-8")
    inputs = text.split("\ninputs:\n", 1)[1].split("\nruns:\n", 1)[0]
    defaults, name = {}, ""
    for line in inputs.splitlines():
        if re.match(r"  [\w-]+:$", line):
            name = line.strip()[:-1]
        if line.startswith("    default: "):
            defaults[name] = json.loads(line.split(": ", 1)[1])
    return defaults


def test_the_action_installs_its_own_checkout_and_runs_real_commands():
    scripts = action_scripts()
    assert set(scripts) == {"Install torchdoctor", "Check"}
    assert 'pip install --quiet "${{ github.action_path }}"' in scripts["Install torchdoctor"]
    assert action_input_defaults() == {"paths": ".", "args": "", "sarif": ""}
    for args in ("", "--select ALL --ignore TD204", "--extend-select TD9 --exclude build/"):
        script = scripts["Check"].replace("$ARGS", args).replace("$PATHS", "src tests")
        commands, _ = command_lines(f"```bash\n{script}```\n")
        assert [argv[:3] for argv in commands] == [
            ["check", "--format", "github"],
            ["check", "--format", "sarif"],
        ]
        assert all(problems_of(argv) == [] for argv in commands), commands


@pytest.fixture
def run_action_check(tmp_path):
    """Runs the action's Check step as the runner would, with this interpreter's doctor
    installed where the Install step puts it."""
    doctor = tmp_path / "runner" / "torchdoctor" / "bin" / "torchdoctor"
    doctor.parent.mkdir(parents=True)
    doctor.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m torchdoctor "$@"\n')
    doctor.chmod(0o755)
    (tmp_path / "train.py").write_text("import torch\nx = torch.zeros(2)\nx.cuda()\n")

    def run(paths: str, args: str = "", sarif: str = "") -> subprocess.CompletedProcess:
        env = {**os.environ, "RUNNER_TEMP": str(doctor.parents[2]), "TORCHDOCTOR_LANG": "en"}
        env.update(PATHS=paths, ARGS=args, SARIF=sarif)
        return subprocess.run(
            ["bash", "-e", "-c", action_scripts()["Check"]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    return run


@pytest.mark.skipif(sys.platform == "win32", reason="the action's steps run in bash")
def test_the_action_annotates_findings_and_fails_the_step(run_action_check):
    result = run_action_check("train.py", "--select TD001")
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("::warning file=train.py,line=3,")
    assert "TD001 tensor-result-discarded" in result.stdout
    assert run_action_check("train.py", "--ignore TD001").returncode == 0


@pytest.mark.skipif(sys.platform == "win32", reason="the action's steps run in bash")
def test_the_action_writes_sarif_for_upload_and_fails_only_an_incomplete_check(
    run_action_check, tmp_path
):
    result = run_action_check("train.py", sarif="torchdoctor.sarif")
    assert result.returncode == 0, result.stderr
    sarif = json.loads((tmp_path / "torchdoctor.sarif").read_text(encoding="utf-8"))
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["TD001"]
    result = run_action_check("train.py missing.py", sarif="torchdoctor.sarif")
    assert result.returncode == 2
    assert "missing.py" in result.stderr


# --- The bundled examples are marked with the moment that catches each pitfall ------------------

EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
MARK = re.compile(r"# (check|run): (TD\d{3})")


def marked(moment: str) -> set[tuple[str, int, str]]:
    """(file name, line, code) of every `# check: TDnnn` or `# run: TDnnn` in the examples."""
    return {
        (path.name, number, mark.group(2))
        for path in EXAMPLES
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for mark in MARK.finditer(line)
        if mark.group(1) == moment
    }


def test_check_finds_exactly_the_pitfalls_marked_for_it_in_the_examples(cli):
    assert len(marked("check")) >= 9
    on_by_default = {mark for mark in marked("check") if get(mark[2]).default}
    for rules, expected in (([], on_by_default), (["--select", "ALL"], marked("check"))):
        result = cli("check", "--no-cache", "--format", "json", *rules, "examples", cwd=ROOT)
        found = {(Path(f["path"]).name, f["line"], f["code"]) for f in json.loads(result.stdout)}
        assert found == expected, rules


@needs_torch
def test_run_finds_exactly_the_pitfalls_marked_for_it_in_the_examples(cli, tmp_path):
    found = set()
    for path in EXAMPLES:
        report = tmp_path / f"{path.stem}.json"
        cli("run", "--report-json", str(report), str(path), cwd=tmp_path)
        data = json.loads(report.read_text(encoding="utf-8"))
        causes = data["findings"] + (data["crash"] or {"findings": []})["findings"][:1]
        found |= {(path.name, f["location"]["line"], f["code"]) for f in causes}
    assert found == marked("run") and found


def test_the_readme_shows_what_check_prints_on_the_examples(cli):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = readme.split("$ torchdoctor check examples/\n", 1)[1].split("\n...\n", 1)[0]
    result = cli("check", "--no-cache", "examples/", cwd=ROOT)
    assert result.returncode == 1
    assert result.stdout.startswith(shown + "\n")


COUNT = re.compile(
    r"\b(\d[\d,]*) (default-on |opt-in |static |runtime )?(rules|pitfalls|entries)\b"
)


def test_counts_of_the_catalog_in_the_docs_are_the_catalogs():
    """A number of rules typed by hand goes stale with the next entry: the docs give none, or
    the one the catalog has."""
    pitfalls = all_pitfalls()
    counts = {
        "": len(pitfalls),
        "default-on ": sum(p.default for p in pitfalls),
        "opt-in ": sum(not p.default for p in pitfalls),
        "static ": sum("static" in p.detector_kinds() for p in pitfalls),
        "runtime ": sum("runtime" in p.detector_kinds() for p in pitfalls),
    }
    wrong = [
        f"{path.name}: {match.group(0)!r}, the catalog has {counts[match.group(2) or '']}"
        for path in DOC_FILES
        for match in COUNT.finditer(path.read_text(encoding="utf-8"))
        if int(match.group(1).replace(",", "")) != counts[match.group(2) or ""]
    ]
    assert wrong == []
    assert COUNT.search("a check with all 50 rules") and COUNT.search("the 77 default-on rules")
