"""The dispatcher: for each hook name, the methods of the monitors that define it, called in
catalog order through one guard.

A monitor that raises (in a hook method or in a module hook of its own) is reported once as
the doctor's own error and disabled: its methods leave the lists, its module hooks go quiet,
and the user's program goes on as if nothing was watched (as pluggy's hook caller and
`torch.utils.hooks` keep one list per hook).
"""

from __future__ import annotations

from typing import Callable

from torchdoctor.watch.monitor import HOOKS, Monitor, overridden_hooks


class Dispatcher:
    def __init__(self, on_error: Callable[[str, Exception, bool], None]) -> None:
        """`on_error(where, error, disabled)` records the doctor's own failures."""
        self.monitors: list[Monitor] = []
        self._on_error = on_error
        self._disabled: set[int] = set()
        self._hooks: dict[str, list] = {name: [] for name in HOOKS}

    def register(self, monitor: Monitor) -> None:
        """Call `monitor` from now on for each hook its class overrides (and only those)."""
        self.monitors.append(monitor)
        for name in overridden_hooks(type(monitor)):
            self._hooks[name].append(getattr(monitor, name))

    def wants(self, hook: str) -> bool:
        """Whether an enabled monitor defines `hook` (costly wrappers are installed only then)."""
        return bool(self._hooks[hook])

    def emit(self, hook: str, *args) -> None:
        for method in self._hooks[hook]:  # `_call` inlined: this runs several times a step
            try:
                method(*args)
            except Exception as error:
                self._disable(method.__self__, error)

    def guard(self, monitor: Monitor, hook: Callable) -> Callable[..., None]:
        """`hook` as the monitor's own module hook: silent once the monitor is disabled, its
        failures the monitor's, and it returns None: it may look, never change values."""

        def guarded(*args) -> None:
            if id(monitor) not in self._disabled:
                self._call(monitor, hook, args)

        return guarded

    def clear(self) -> None:
        """Drop every monitor (the watch is over)."""
        self.monitors = []
        self._hooks = {name: [] for name in HOOKS}

    def _call(self, monitor: Monitor, function: Callable, args: tuple) -> None:
        try:
            function(*args)
        except Exception as error:
            self._disable(monitor, error)

    def _disable(self, monitor: Monitor, error: Exception) -> None:
        if id(monitor) in self._disabled:  # a failure already on its way out
            return
        self._disabled.add(id(monitor))
        # New lists, not edited in place: an `emit` in progress goes on over the old one and
        # still calls every monitor after this one.
        self._hooks = {
            name: [m for m in methods if m.__self__ is not monitor]
            for name, methods in self._hooks.items()
        }
        name = f"{monitor.pitfall.name} ({type(monitor).__name__})"
        self._on_error(f"monitor {name}", error, True)
