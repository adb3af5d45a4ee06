"""`torchdoctor run script.py args` / `torchdoctor run -m module args`: run a program exactly as
`python` would (same sys.argv, `__main__`, `__file__`, sys.path[0], cwd, stdin, output, exit
code, and python's own one-line refusals) with the watcher installed before its first line,
and explain a crash with the live values around it."""

from __future__ import annotations

import builtins
import marshal
import os
import pkgutil
import runpy
import sys
import traceback
import types
from importlib.machinery import BuiltinImporter, SourceFileLoader, SourcelessFileLoader
from importlib.util import MAGIC_NUMBER
from pathlib import Path

from torchdoctor.errors import UsageError
from torchdoctor.report import strings
from torchdoctor.report.stream import write_stderr

_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)
MAX_FRAMES = 3
MAX_TENSORS = 12


class CannotStart(Exception):
    """Python would not start the program: its one-line reason and exit code."""

    exit_code = 1


class _CannotOpen(CannotStart):
    exit_code = 2


def run(
    target: str,
    args: list[str],
    module: bool = False,
    select=None,
    ignore=None,
    lang: str = "en",
    report_json: str | None = None,
    report_html: str | None = None,
) -> int:
    """Run the program; return the exit code `python` would have given."""
    _need_torch()
    from torchdoctor.watch.watcher import watch

    saved_argv, saved_path = sys.argv, sys.path[:]
    sys.argv = [target, *args]
    try:
        watcher = watch(
            select=select,
            ignore=ignore,
            lang=lang,
            report_json=report_json,
            report_html=report_html,
        )
        # After the watch is in place: the doctor's own imports never see the program's files.
        _set_path0(_path0(target, module), launcher=saved_argv[0] if saved_argv else "")
        return _run_watched(target, module, lang, watcher)
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path


def _run_watched(target: str, module: bool, lang: str, watcher) -> int:
    crash, exit_code = None, 0
    try:
        code, attributes = _load(target, module)
        _run_as_main(code, attributes)
    except CannotStart as problem:  # nothing ran: no report, as python prints one line
        watcher.cancel()
        write_stderr(f"torchdoctor: {problem}\n")
        return problem.exit_code
    except SystemExit as stop:
        exit_code = _exit_code(stop.code)
    except KeyboardInterrupt:
        _print_traceback(*sys.exc_info())
        exit_code = 130
    except BaseException as error:  # the user's crash: shown as python shows it, then explained
        _print_traceback(type(error), error, error.__traceback__)
        crash = _explain(error, lang)
        exit_code = 1
    _flush()
    watcher.stop(crash=crash, exit_code=exit_code)
    return exit_code


def _need_torch() -> None:
    """Say what to install, instead of an ImportError from inside the watcher."""
    try:
        import torch  # noqa: F401
    except ModuleNotFoundError as error:
        if error.name != "torch":
            raise UsageError(
                f"run needs PyTorch, which fails to import ({error}): "
                "reinstall it (pip install torch)"
            ) from None
        raise UsageError(
            "run needs PyTorch, which is not installed here (pip install torch)"
        ) from None
    except Exception as error:  # a broken install: a missing library, a failed import inside
        raise UsageError(
            f"run needs PyTorch, which fails to import "
            f"({type(error).__name__}: {error}): reinstall it "
            "(pip install torch)"
        ) from None


def _path0(target: str, module: bool) -> str:
    """The first entry python puts on sys.path for this program."""
    if module:
        return os.getcwd()
    if target == "-":
        return ""
    path = _absolute(target)
    if _is_path_entry(path):  # a directory or zip file with __main__.py: itself
        return path
    return os.path.dirname(os.path.realpath(path))


def _set_path0(entry: str, launcher: str) -> None:
    """Put the program's entry first on sys.path. The `torchdoctor` console script's directory,
    python's entry for the launcher, gives way to it; `python -m torchdoctor` removed its own
    entry already (see __main__.py), so there the program's entry is added."""
    if sys.path and launcher and sys.path[0] == os.path.dirname(os.path.realpath(launcher)):
        sys.path[0] = entry
    else:
        sys.path.insert(0, entry)


def _absolute(path: str) -> str:
    """As python makes a script path absolute (3.9+): joined to the working directory, not
    normalised (`./s.py` -> `/cwd/./s.py`), but `.` and `` are the directory itself;
    `__file__` and tracebacks show this."""
    if path in ("", os.curdir):
        return os.getcwd()
    return os.path.join(os.getcwd(), path)


def _is_path_entry(path: str) -> bool:
    return pkgutil.get_importer(path) is not None


def _load(target: str, module: bool) -> tuple[types.CodeType, dict]:
    """The program's code and its `__main__` attributes, found as python finds them: for a
    module, a directory or a zip file, with the private runpy helpers `python -m` and
    `python DIR` call themselves, so the refusals are python's own words."""
    if module:
        _, spec, code = runpy._get_module_details(target, CannotStart)
        sys.argv[0] = spec.origin
        return code, _spec_attributes(spec)
    if target == "-":
        source = sys.stdin.buffer.read() if sys.stdin is not None else b""
        code = compile(source, "<stdin>", "exec", dont_inherit=True)
        return code, {"__file__": "<stdin>", "__loader__": BuiltinImporter}
    path = _absolute(target)
    if _is_path_entry(path):
        _, spec, code = runpy._get_main_module_details(CannotStart)
        return code, _spec_attributes(spec)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise _CannotOpen(
            f"can't open file {path!r}: [Errno {error.errno}] {error.strerror}"
        ) from None
    if data[:4] == MAGIC_NUMBER:  # a compiled file (16-byte header): python runs it too
        loader = SourcelessFileLoader("__main__", path)
        return marshal.loads(data[16:]), {"__file__": path, "__loader__": loader}
    code = compile(data, path, "exec", dont_inherit=True)
    return code, {"__file__": path, "__loader__": SourceFileLoader("__main__", path)}


def _spec_attributes(spec) -> dict:
    return {
        "__file__": spec.origin,
        "__cached__": spec.cached,
        "__loader__": spec.loader,
        "__package__": spec.parent,
        "__spec__": spec,
    }


def _run_as_main(code: types.CodeType, attributes: dict) -> None:
    """Run code as a fresh `__main__` module, as python does (pickle and multiprocessing look
    for the program's classes there); the doctor's own `__main__` is put back after."""
    main = types.ModuleType("__main__")
    main.__dict__.update(
        {
            "__builtins__": builtins,
            "__cached__": None,
            "__package__": None,
            "__spec__": None,
            **attributes,
        }
    )
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def _exit_code(code) -> int:
    """What python exits with for `sys.exit(code)`; a message is printed as python does."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    write_stderr(f"{code}\n")
    return 1


def _user_traceback(tb):
    """The traceback without the doctor's and runpy's frames on top of the user's."""
    while tb is not None and _is_ours(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return tb


def _is_ours(path: str) -> bool:
    return path.startswith(_PACKAGE_DIR) or path == runpy.__file__ or "<frozen runpy>" in path


def _print_traceback(exc_type, error, tb) -> None:
    if error is not None:
        error.__traceback__ = _user_traceback(tb)
        tb = error.__traceback__
    write_stderr("".join(traceback.format_exception(exc_type, error, tb)))


def _explain(error: BaseException, lang: str) -> dict | None:
    """Print the explanation with live context; return the crash part of the JSON report."""
    try:
        from torchdoctor.explain.api import explanation_of
        from torchdoctor.explain.hooks import explanation_text

        context = live_context(error.__traceback__)
        explanation = explanation_of(error, lang)
        text = explanation_text(explanation)
        if context and not explanation.internal_error:
            lines = [strings.text("watch.context", lang)]
            for frame in context:
                lines.append(f"  {frame['path']}:{frame['line']} in {frame['function']}:")
                lines += [
                    f"    {t['name']}: {tuple(t['shape'])} {t['dtype']} {t['device']}"
                    for t in frame["tensors"]
                ]
            text += "\n".join(lines) + "\n"
        write_stderr(text)
        crash = explanation.to_json()
        crash["context"] = context
        return crash
    except Exception as problem:  # the doctor's own bug: one line, the traceback stays
        write_stderr(
            f"torchdoctor: internal error while explaining this exception "
            f"({type(problem).__name__}: {problem})\n"
        )
        return None


def live_context(tb) -> list[dict]:
    """The tensors among the locals of the user's innermost frames of a traceback."""
    import torch

    from torchdoctor.explain.parse import is_user_path
    from torchdoctor.watch.reporter import relative_path

    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if is_user_path(code.co_filename) and not _is_ours(code.co_filename):
            frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    context = []
    for frame, line in frames[-MAX_FRAMES:][::-1]:
        tensors = []
        for name, value in list(frame.f_locals.items()):
            if isinstance(value, torch.Tensor) and len(tensors) < MAX_TENSORS:
                tensors.append(
                    {
                        "name": name,
                        "shape": list(value.shape),
                        "dtype": str(value.dtype).replace("torch.", ""),
                        "device": str(value.device),
                    }
                )
        if tensors:
            context.append(
                {
                    "path": relative_path(frame.f_code.co_filename),
                    "line": line,
                    "function": frame.f_code.co_name,
                    "tensors": tensors,
                }
            )
    return context


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # closed by the program
            pass
