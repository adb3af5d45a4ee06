"""`torchdoctor run script.py args` / `torchdoctor run -m module args`: run a program exactly as
`python` would (same sys.argv, `__main__`, sys.path[0], cwd, stdin, output, exit code) with the
watcher installed before its first line, and explain a crash with the live values around it."""
from __future__ import annotations

import os
import runpy
import sys
import traceback
from pathlib import Path

from torchdoctor.report.stream import write_stderr

_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)
_CONTEXT_TITLE = {"en": "Tensors in the failing frames (shape, dtype, device):",
                  "zh": "出错帧中的张量（形状、数据类型、设备）："}
MAX_FRAMES = 3
MAX_TENSORS = 12


def run(target: str, args: list[str], module: bool = False, select=None, ignore=None,
        lang: str = "en", report_json: str | None = None,
        report_html: str | None = None) -> int:
    """Run the program; return the exit code `python` would have given."""
    from torchdoctor.watch.watcher import watch

    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [target, *args]
    if module:
        sys.path[0] = os.getcwd()
    else:
        sys.path[0] = os.path.dirname(os.path.realpath(target))
    watcher = watch(select=select, ignore=ignore, lang=lang, report_json=report_json,
                    report_html=report_html)
    crash, exit_code = None, 0
    try:
        if module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            # python compiles a script under its absolute path (tracebacks show that).
            runpy.run_path(os.path.abspath(target), run_name="__main__")
    except SystemExit as stop:
        exit_code = _exit_code(stop.code)
    except KeyboardInterrupt:
        _print_traceback(*sys.exc_info())
        exit_code = 130
    except BaseException as error:  # the user's crash: shown as python shows it, then explained
        _print_traceback(type(error), error, error.__traceback__)
        crash = _explain(error, lang)
        exit_code = 1
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None:
            sys.path[0] = saved_path0
        _flush()
        watcher.stop(crash=crash, exit_code=exit_code)
    return exit_code


def _exit_code(code) -> int:
    """What python exits with for `sys.exit(code)`; a message is printed as python does."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
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
    traceback.print_exception(exc_type, error, error.__traceback__ if error is not None else tb)


def _explain(error: BaseException, lang: str) -> dict | None:
    """Print the explanation with live context; return the crash part of the JSON report."""
    try:
        from torchdoctor.explain.api import explanation_of
        from torchdoctor.explain.hooks import explanation_text

        context = live_context(error.__traceback__)
        explanation = explanation_of(error, lang)
        text = explanation_text(explanation)
        if context and not explanation.internal_error:
            lines = [_CONTEXT_TITLE.get(lang, _CONTEXT_TITLE["en"])]
            for frame in context:
                lines.append(f"  {frame['path']}:{frame['line']} in {frame['function']}:")
                lines += [f"    {t['name']}: {tuple(t['shape'])} {t['dtype']} {t['device']}"
                          for t in frame["tensors"]]
            text += "\n".join(lines) + "\n"
        write_stderr(text)
        crash = explanation.to_json()
        crash["context"] = context
        return crash
    except Exception as problem:  # the doctor's own bug: one line, the traceback stays
        write_stderr(f"torchdoctor: internal error while explaining this exception "
                     f"({type(problem).__name__}: {problem})\n")
        return None


def live_context(tb) -> list[dict]:
    """The tensors among the locals of the user's innermost frames of a traceback."""
    import torch

    from torchdoctor.explain.parse import is_user_path
    from torchdoctor.watch.session import _relative

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
                tensors.append({"name": name, "shape": list(value.shape),
                                "dtype": str(value.dtype).replace("torch.", ""),
                                "device": str(value.device)})
        if tensors:
            context.append({"path": _relative(frame.f_code.co_filename),
                            "line": line, "function": frame.f_code.co_name,
                            "tensors": tensors})
    return context


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # closed by the program
            pass
