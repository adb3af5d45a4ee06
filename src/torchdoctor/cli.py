"""The command line: subcommands and their options, nothing else."""

from __future__ import annotations

import argparse
import json
import sys

from torchdoctor import __version__
from torchdoctor._lang import LANGS, default_lang
from torchdoctor._output import OutputError, ReaderGone, end_quietly, guarded_stdout
from torchdoctor.errors import UsageError
from torchdoctor.report.render import FORMATS
from torchdoctor.report.stream import write_stderr


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="torchdoctor",
        description="Catches the mistakes PyTorch users make again and again, and explains them.",
    )
    parser.add_argument("--version", action="version", version=f"torchdoctor {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = commands.add_parser("check", help="read code and report pitfalls (no torch needed)")
    check.add_argument("paths", nargs="*", metavar="PATH", help="files or directories (default: .)")
    check.add_argument(
        "--select",
        action="append",
        metavar="RULES",
        help="rules to enable: codes, code prefixes, names or ALL (comma-separated)",
    )
    check.add_argument(
        "--extend-select",
        action="append",
        metavar="RULES",
        help="rules to enable on top of the default or configured set",
    )
    check.add_argument("--ignore", action="append", metavar="RULES", help="rules to disable")
    check.add_argument(
        "--exclude",
        action="append",
        metavar="PATTERNS",
        help="gitignore-style patterns of paths to skip",
    )
    check.add_argument(
        "--force-exclude",
        action="store_true",
        help="apply exclusions to files named on the command line too (pre-commit)",
    )
    check.add_argument("--format", choices=FORMATS, default="text", help="output format")
    check.add_argument("--statistics", action="store_true", help="show counts per rule")
    check.add_argument("--fix", action="store_true", help="apply safe fixes")
    check.add_argument("--unsafe-fixes", action="store_true", help="also apply unsafe fixes")
    check.add_argument("--diff", action="store_true", help="show fixes as a diff, write nothing")
    check.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=0,
        metavar="N",
        help="parallel workers (default: all cores)",
    )
    check.add_argument("--no-cache", action="store_true", help="ignore and do not write the cache")
    check.add_argument(
        "--stdin-filename", metavar="NAME", help="check source read from stdin, reported as NAME"
    )
    check.add_argument("--config", metavar="FILE", help="pyproject.toml to read settings from")
    _add_lang(check)

    explain = commands.add_parser(
        "explain", help="read a traceback or log and explain the error (no torch needed)"
    )
    explain.add_argument(
        "file",
        nargs="?",
        metavar="FILE|-",
        help="file holding the traceback or log (default: stdin)",
    )
    explain.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    explain.add_argument(
        "--no-link", action="store_true", help="do not read the user files named in the traceback"
    )
    _add_lang(explain)

    rule = commands.add_parser("rule", help="explain one pitfall")
    rule.add_argument("rule", metavar="NAME|CODE")
    rule.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    _add_lang(rule)

    rules = commands.add_parser("rules", help="list every pitfall in the catalog")
    rules.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    _add_lang(rules)

    ckpt = commands.add_parser(
        "ckpt", help="inspect, diff and repair checkpoint files (inspect needs no torch)"
    )
    ckpt_commands = ckpt.add_subparsers(
        dest="ckpt_command", metavar="inspect|diff|fix", required=True
    )
    inspect = ckpt_commands.add_parser(
        "inspect", help="what the file is and holds; never runs code from it"
    )
    inspect.add_argument("file", metavar="FILE")
    inspect.add_argument("--keys", action="store_true", help="list every key")
    inspect.add_argument("--format", choices=("text", "json"), default="text")
    _add_lang(inspect)
    diff = ckpt_commands.add_parser(
        "diff", help="keys that differ from another checkpoint or a model, by cause"
    )
    diff.add_argument("file", metavar="FILE")
    diff.add_argument("other", nargs="?", metavar="OTHER", help="a checkpoint to compare with")
    diff.add_argument(
        "--model",
        metavar="SPEC",
        help="path/to/file.py:factory or "
        "package.module:factory returning the nn.Module (imports your code)",
    )
    diff.add_argument("--format", choices=("text", "json"), default="text")
    _add_lang(diff)
    fix = ckpt_commands.add_parser(
        "fix", help="write a repaired copy (the input is never modified)"
    )
    fix.add_argument("file", metavar="FILE")
    fix.add_argument("-o", "--output", required=True, metavar="OUT", help="the new file")
    fix.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
    fix.add_argument(
        "--model",
        metavar="SPEC",
        help="repair against this model and prove the result loads into it with strict=True",
    )
    fix.add_argument(
        "--to-safetensors", action="store_true", help="write the weights in the safetensors format"
    )
    fix.add_argument(
        "--dtype",
        choices=("float32", "float16", "bfloat16", "float64"),
        help="convert floating-point tensors",
    )
    fix.add_argument(
        "--trust",
        action="store_true",
        help="allow a full unpickle (runs code "
        "from the file): needed for whole pickled modules and unknown classes",
    )
    _add_lang(fix)

    run = commands.add_parser(
        "run",
        help="run a training script with the watcher (needs torch)",
        usage="torchdoctor run [OPTIONS] (SCRIPT | -m MODULE) [ARGS...]",
        description="Runs the program as `python SCRIPT ARGS` / `python -m MODULE ARGS` would, "
        "watching the training for pitfalls. Everything after the script or module "
        "belongs to the program.",
    )
    run.add_argument("-m", dest="module", metavar="MODULE", help="run a module, as python -m")
    run.add_argument("program", nargs="?", metavar="SCRIPT", help="the script to run")
    run.add_argument(
        "--report-json",
        metavar="FILE",
        help="write the JSON report (under torchrun: FILE with .rankN before the extension)",
    )
    run.add_argument("--report-html", metavar="FILE", help="write the HTML report")
    run.add_argument(
        "--select",
        action="append",
        metavar="RULES",
        help="runtime checks to enable (default: the default-on ones)",
    )
    run.add_argument("--ignore", action="append", metavar="RULES", help="checks to disable")
    _add_lang(run)

    server = commands.add_parser(
        "server",
        help="serve the checks to an editor: a language server over stdio (needs pygls)",
    )
    _add_lang(server)
    return parser


def _add_lang(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lang",
        choices=LANGS,
        default=None,
        help="language of messages (default: TORCHDOCTOR_LANG or the locale)",
    )


def main(argv: list[str] | None = None) -> int:
    _survive_narrow_encodings()
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    program: list[str] = []
    if argv[:1] == ["run"]:  # everything after the script (or -m MODULE) is the program's
        argv, program = _split_run(argv)
    try:
        with guarded_stdout():
            args = parser.parse_args(argv)
            if args.command not in ("run", "server"):
                return _command(args, parser)
        if args.command == "server":  # stdout carries the protocol, written by the server
            from torchdoctor.server import serve

            return serve(args.lang)
        return _run(args, program)  # the program's stdout is its own, as under python
    except ReaderGone:
        return end_quietly()
    except OutputError as error:
        write_stderr(f"torchdoctor: error: cannot write the output: {error}\n")
        return 2
    except UsageError as error:
        write_stderr(f"torchdoctor: error: {error}\n")
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # the doctor's own bug: one clear line, exit 2
        write_stderr(f"torchdoctor: internal error: {type(error).__name__}: {error}\n")
        return 2


def _command(args, parser: argparse.ArgumentParser) -> int:
    if args.command is None:
        parser.print_help()
        return 2
    if args.command == "check":
        from torchdoctor.lint.command import run_check

        return run_check(args, default_lang())
    if args.command == "explain":
        from torchdoctor.explain.command import run_explain

        return run_explain(args, args.lang or default_lang())
    if args.command == "ckpt":
        from torchdoctor.ckpt.command import run_ckpt

        return run_ckpt(args, args.lang or default_lang())
    if args.command == "rule":
        return _rule(args)
    return _rules(args)


def _rule(args) -> int:
    from torchdoctor.catalog import _docs, get

    pitfall = get(args.rule)
    if pitfall is None:
        raise UsageError(f"unknown rule {args.rule!r} (see `torchdoctor rules`)")
    lang = args.lang or default_lang()
    if args.format == "json":
        print(json.dumps(_docs.as_json(pitfall, lang), indent=2, ensure_ascii=False))
    elif args.format == "markdown":
        sys.stdout.write(_docs.as_markdown(pitfall, lang))
    else:
        sys.stdout.write(_docs.as_text(pitfall, lang))
    return 0


def _rules(args) -> int:
    from torchdoctor.catalog import _docs, all_pitfalls, pick

    lang = args.lang or default_lang()
    pitfalls = all_pitfalls()
    if args.format == "json":
        rows = [
            {k: v for k, v in _docs.as_json(p, lang).items() if k != "sections"} for p in pitfalls
        ]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    elif args.format == "markdown":
        sys.stdout.write(_docs.reference_markdown(pitfalls, lang))
    else:
        width = max(len(p.name) for p in pitfalls)
        print(f"{'code':6} {'name':{width}}  {'default':7}  {'detectors':9}  {'fix':6}  title")
        for p in pitfalls:
            print(
                f"{p.code:6} {p.name:{width}}  {'on' if p.default else 'off':7}  "
                f"{','.join(p.detector_kinds()) or '-':9}  {p.fix_applicability or '-':6}  "
                f"{pick(p.title, lang)}"
            )
    return 0


_RUN_VALUE_OPTIONS = ("--report-json", "--report-html", "--select", "--ignore", "--lang")


def _split_run(argv: list[str]) -> tuple[list[str], list[str]]:
    """`run [OPTIONS] SCRIPT ARGS...` -> (`run [OPTIONS] SCRIPT`, ARGS); `-m MODULE` likewise."""
    index = 1
    while index < len(argv):
        token = argv[index]
        if token == "-m" or not token.startswith("-") or token == "-":
            end = index + 2 if token == "-m" else index + 1
            return argv[:end], argv[end:]
        if token in _RUN_VALUE_OPTIONS:
            index += 1
        index += 1
    return argv, []


def _run(args, program: list[str]) -> int:
    from torchdoctor.watch.runner import run

    target = args.program if args.module is None else args.module
    if target is None:
        raise UsageError("run: give a script or -m MODULE")
    return run(
        target,
        program,
        module=args.module is not None,
        select=args.select,
        ignore=args.ignore,
        lang=args.lang or default_lang(),
        report_json=args.report_json,
        report_html=args.report_html,
    )


def _survive_narrow_encodings() -> None:
    """A GBK console cannot print every character of user code: replace, never crash."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="replace")
        except (AttributeError, ValueError):
            pass
