"""Explain uncaught exceptions where they happen: scripts (sys.excepthook) and IPython/Jupyter.

The user's traceback is always shown first and unchanged; the diagnosis follows. Nothing the
doctor does here may hide the original error: any failure of its own is one line at the end.
"""

from __future__ import annotations

import sys
import traceback

from torchdoctor.report.stream import write_stderr

# Exceptions that are the user's deliberate way out, not errors to explain.
_NOT_ERRORS = (KeyboardInterrupt, SystemExit, GeneratorExit)
_RULE = "-" * 72


def diagnosis_text(error: BaseException, lang: str | None = None) -> str:
    """The explanation printed after a traceback; never raises."""
    try:
        from torchdoctor.explain.api import explanation_of

        return explanation_text(explanation_of(error, lang))
    except Exception as problem:  # the doctor's own bug: one line, the traceback stays
        return _internal(f"{type(problem).__name__}: {problem}")


def explanation_text(explanation) -> str:
    """What follows the traceback: a rule and the explanation, or one line saying the
    explainer failed (an Explanation carrying `internal_error`)."""
    from torchdoctor.explain.render import as_text

    if explanation.internal_error:
        return _internal(explanation.internal_error)
    return f"{_RULE}\n{as_text(explanation)}"


def _internal(what: str) -> str:
    return f"torchdoctor: internal error while explaining this exception ({what})\n"


def install(lang: str | None = None) -> None:
    """Explain uncaught exceptions of this interpreter after Python prints their traceback."""
    if getattr(sys.excepthook, "_torchdoctor", False):
        return
    previous = sys.excepthook

    def excepthook(exc_type, exc, tb):
        previous(exc_type, exc, tb)
        if exc is not None and not isinstance(exc, _NOT_ERRORS):
            write_stderr(diagnosis_text(exc, lang))

    excepthook._torchdoctor = True
    sys.excepthook = excepthook


def load_ipython_extension(shell) -> None:
    """`%load_ext torchdoctor`: IPython never calls sys.excepthook for cells, so register a
    custom exception handler. It must show the traceback itself, and it must never raise:
    IPython silently unregisters a handler that does."""

    def handler(shell, exc_type, exc, tb, tb_offset=None):
        try:
            shell.showtraceback((exc_type, exc, tb), tb_offset=tb_offset)
        except Exception:  # IPython could not format it: Python's own format still can
            traceback.print_exception(exc_type, exc, tb)
        if not isinstance(exc, _NOT_ERRORS):
            write_stderr(diagnosis_text(exc))
        return None

    shell.set_custom_exc((Exception,), handler)


def unload_ipython_extension(shell) -> None:
    shell.set_custom_exc((), None)
