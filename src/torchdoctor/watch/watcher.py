"""`torchdoctor.watch(...)`: start and stop a watched run from inside a program."""

from __future__ import annotations

import atexit
import os

from torchdoctor.watch import report
from torchdoctor.watch.exits import ExitHooks
from torchdoctor.watch.session import Session

# The sessions started and not yet stopped, outermost first. Only the outermost installs hooks;
# a nested watch() joins it, so nesting never installs anything twice.
_ACTIVE: list[Watch] = []


class Watch:
    """A running watch. A context manager; `stop()` ends it (also called at interpreter exit)."""

    def __init__(
        self,
        objects: tuple,
        select=None,
        ignore=None,
        lang: str | None = None,
        report_json: str | None = None,
        report_html: str | None = None,
        summary: bool = True,
        live: bool = True,
    ) -> None:
        from torchdoctor._lang import default_lang

        self.lang = lang or default_lang()
        self.summary = summary
        self.owner = not _ACTIVE
        self.pid = os.getpid()  # only this process writes the report, not a forked child
        self._exits = None
        self.stopped = False
        self.report_json = self.report_html = None
        if self.owner:
            self.session = Session(enabled_monitors(select, ignore), self.lang, live=live)
            # Resolved now: the program may change directory; checked now: a run is not wasted
            # on a report that cannot be written.
            self.report_json = report.prepare_path(report_json, self.session.rank)
            self.report_html = report.prepare_path(report_html, self.session.rank)
            self.session.start()
            from torchdoctor.watch.hooks import install

            install(self.session)
            atexit.register(self.stop)
            self._exits = ExitHooks(lambda code: self.stop(exit_code=code))
            self._exits.install()
        else:
            self.session = _ACTIVE[0].session
        _ACTIVE.append(self)
        for obj in objects:
            self.add(obj)

    @property
    def findings(self) -> list:
        return self.session.findings

    def add(self, obj) -> None:
        """Watch a model or optimizer from now on (others are found as they are used)."""
        import torch

        if isinstance(obj, torch.nn.Module):
            self.session.add_model(obj)
        elif isinstance(obj, torch.optim.Optimizer):
            self.session.add_optimizer(obj)
        else:
            raise TypeError(f"watch() takes models and optimizers, not {type(obj).__name__}")

    def stop(self, crash: dict | None = None, exit_code: int | None = None) -> dict | None:
        """Remove every hook; print the summary and write the reports (outermost watch only).
        Returns the report, or None for a nested watch or a second call."""
        if not self._end():
            return None
        with self.session.hooks:
            self.session.finish()
        result = report.build(self.session, crash, exit_code)
        report.write(result, self.session, self.report_json, self.report_html, self.lang)
        if self.summary:
            report.print_summary(self.session, self.lang)
        self.session.release()
        return result

    def cancel(self) -> None:
        """Remove every hook; no summary, no report (the program never started)."""
        if self._end():
            self.session.hooks.remove()
            self.session.release()

    def _end(self) -> bool:
        """Mark the watch stopped; True when this is the outermost watch in its own process,
        which has hooks to remove and a report to write."""
        if self.stopped:
            return False
        self.stopped = True
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        if not self.owner or os.getpid() != self.pid:
            return False
        atexit.unregister(self.stop)
        self._exits.remove()
        return True

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.stop()


def watch(
    *objects,
    select=None,
    ignore=None,
    lang: str | None = None,
    report_json: str | None = None,
    report_html: str | None = None,
    summary: bool = True,
    live: bool = True,
) -> Watch:
    """Watch training from now on: `with torchdoctor.watch(): ...`, or
    `torchdoctor.watch(model, optimizer)` (stops at exit, or with `.stop()`).

    `select`/`ignore`: rule codes, prefixes, names or ALL, as for `check`; without `select`,
    the default-on monitors run. `live`: print each finding when it happens (stderr);
    `summary`: print a summary when the watch stops."""
    return Watch(
        objects,
        select=select,
        ignore=ignore,
        lang=lang,
        report_json=report_json,
        report_html=report_html,
        summary=summary,
        live=live,
    )


def enabled_monitors(select=None, ignore=None) -> list[tuple]:
    """(pitfall, monitor class) of every enabled runtime check, in catalog order."""
    from torchdoctor.catalog._registry import all_pitfalls, resolve

    selected = resolve(_as_list(select)) if select is not None else None
    ignored = resolve(_as_list(ignore)) if ignore else set()
    entries = []
    for pitfall in all_pitfalls():
        if pitfall.code in ignored:
            continue
        for cls in pitfall.monitors:
            if cls.default if selected is None else pitfall.code in selected:
                entries.append((pitfall, cls))
    return entries


def _as_list(selectors) -> list[str]:
    if isinstance(selectors, str):
        selectors = [selectors]
    return [part for item in selectors for part in item.split(",")]
