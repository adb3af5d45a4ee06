"""The reporter of a watched run: the findings (at most one per pitfall and place), each
printed live when it happens, and the doctor's own errors, each printed once."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Hashable

from torchdoctor.report.finding import Finding
from torchdoctor.report.stream import write_stderr

if TYPE_CHECKING:  # pragma: no cover
    from torchdoctor.watch.state import RunState

_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)


class Reporter:
    def __init__(self, run: RunState, lang: str = "en", live: bool = True) -> None:
        self.run = run
        self.lang = lang
        self.live = live
        self.findings: list[Finding] = []
        self.internal_errors: list[str] = []
        self._reported: set[tuple[str, Hashable]] = set()

    def report(
        self,
        pitfall,
        place: Hashable,
        variant: str = "",
        module: str | None = None,
        at: tuple[str, int] | None = None,
        at_step: int | None = None,
        **fields: Any,
    ) -> None:
        """A finding of `pitfall` at `place`, unless one was made there already; at the user's
        innermost frame now and the current step unless `at`/`at_step` say otherwise."""
        key = (pitfall.code, place)
        if key in self._reported:
            return
        self._reported.add(key)
        message = pitfall.message(variant, self.lang, **fields)
        path, line = at or user_location()
        step = self.run.step if at_step is None else at_step
        extra = {"step": step, "rank": self.run.rank, "module": module}
        finding = Finding(
            pitfall.code,
            pitfall.name,
            message,
            origin="runtime",
            path=path,
            line=line,
            column=1,
            end_line=line,
            end_column=1,
            extra=extra,
        )
        self.findings.append(finding)
        if self.live:
            from torchdoctor.watch.report import live_line

            write_stderr(live_line(finding, self.lang))

    def internal(self, where: str, error: Exception, disabled: bool = False) -> None:
        """The doctor's own failure: one line on stderr the first time; training goes on."""
        text = f"{where}: {type(error).__name__}: {error}"
        if text in self.internal_errors:
            return
        self.internal_errors.append(text)
        tail = "; it is disabled" if disabled else ""
        write_stderr(f"torchdoctor: internal error in {text}{tail}; training goes on\n")


def user_location() -> tuple[str, int]:
    """The file and line of the innermost frame of the user's own code on the current stack."""
    from torchdoctor.explain.parse import is_user_path

    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith(_PACKAGE_DIR) and is_user_path(path):
            return relative_path(path), frame.f_lineno
        frame = frame.f_back
    return "", 1


def relative_path(path: str) -> str:
    """Relative to the working directory when the file is below it; else as it is."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if relative.startswith(os.pardir) else relative
