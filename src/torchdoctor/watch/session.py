"""One watched run: turns what the hooks see into events for the monitors.

Its parts: the run state monitors read (watch.state.RunState), the dispatcher that calls the
monitors through one guard (watch.dispatch), the reporter that collects findings
(watch.reporter), and the owner of every hook handle and patch (watch.hooks.Installed).
Every entry point from a hook is guarded: an exception of the doctor is recorded once and the
user's program goes on as if nothing was watched.
"""

from __future__ import annotations

import functools
import sys
import time
import weakref
from typing import Callable

from torchdoctor.watch.dispatch import Dispatcher
from torchdoctor.watch.hooks import Installed
from torchdoctor.watch.reporter import Reporter
from torchdoctor.watch.state import RunState


def _event(where: str, skip_when_compiling: bool = False) -> Callable:
    """A hook's entry point into the session: the doctor's own failure inside it is reported
    (once, as an error in `where`) and swallowed; it returns None, as hooks that only look."""

    def decorate(method: Callable) -> Callable:
        @functools.wraps(method)
        def event(self, *args) -> None:
            if skip_when_compiling and self._tracing():
                return
            try:
                method(self, *args)
            except Exception as error:
                self.reporter.internal(where, error)

        return event

    return decorate


class Session:
    """The events of one watched run, and what the report reads (`step`, `findings`,
    `internal_errors`, `rank`, `metrics`, `argv`, `started`)."""

    def __init__(
        self, entries: list, lang: str = "en", live: bool = True, metrics: bool = True
    ) -> None:
        self.argv = list(sys.argv)  # the user's command line, for the report
        self.started = time.monotonic()
        self.hooks = Installed()
        self.in_backward = False
        self.in_scheduler_step = False
        self.dispatcher = Dispatcher(self._monitor_failed)
        self.run = RunState(self.hooks, self.dispatcher, metrics=metrics)
        self.reporter = Reporter(self.run, lang, live)
        for pitfall, cls in entries:
            self.dispatcher.register(cls(self.run, pitfall, self.reporter))
        # id(module) -> (weak reference, True: a model | False: part of one, or a loss). By id,
        # not a WeakKeyDictionary: the global hook looks every module call up, and a
        # WeakKeyDictionary makes a new weak reference for each lookup.
        self._kinds: dict[int, tuple[weakref.ref, bool]] = {}
        import torch  # a watched program has it

        # True while torch.compile traces: the hooks then do nothing (they are not part of the
        # graph), so compiled code sees no events from inside it; what runs eagerly still does.
        # torch's own function, called directly: the tracer reads it as True.
        self._tracing = torch.compiler.is_compiling
        # DataLoader iterator -> its loader
        self._iterators: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    # ---- what the report and the watcher read ----------------------------------------------

    @property
    def step(self) -> int:
        return self.run.step

    @property
    def rank(self) -> int | None:
        return self.run.rank

    @property
    def metrics(self):
        return self.run.metrics

    @property
    def findings(self) -> list:
        return self.reporter.findings

    @property
    def internal_errors(self) -> list[str]:
        return self.reporter.internal_errors

    def wants(self, hook: str) -> bool:
        return self.dispatcher.wants(hook)

    def add_model(self, model) -> None:
        if self._kind(model) is None:
            self._new_model(model)

    def add_optimizer(self, optimizer) -> None:
        if not any(o is optimizer for o in self.run.optimizers):
            self.run.optimizers.append(optimizer)

    # ---- events from the hooks (never raise) ------------------------------------------------

    def module_pre_hook(self, module, args):
        """Global forward pre-hook: finds new models (a dict lookup for every other call)."""
        if self._tracing():
            return None
        known = self._kinds.get(id(module))  # `_kind`, inlined: every module call runs this
        if known is not None and known[0]() is module:
            return None
        self._module_seen(module, args)
        return None

    @_event("forward hook")
    def _module_seen(self, module, args) -> None:
        if self._new_model(module):
            self._forward(module, args, {})  # its own hook starts with the next call

    @_event("forward hook", skip_when_compiling=True)
    def model_pre_hook(self, module, args, kwargs) -> None:
        """A model's own forward pre-hook (with keyword arguments, which global hooks lack)."""
        if self._kind(module):
            self._forward(module, args, kwargs)

    def _forward(self, module, args, kwargs) -> None:
        if self.run.replaying:
            return
        self.run.last_forward = (module, args, kwargs)
        self.dispatcher.emit("on_forward", module, args, kwargs)

    @_event("optimizer step pre-hook")
    def step_pre_hook(self, optimizer, args, kwargs) -> None:
        self.add_optimizer(optimizer)
        if self.run.metrics is not None and optimizer is self.run.optimizers[0]:
            self.run.metrics.before_step(self.run, optimizer)
        self.dispatcher.emit("on_step", optimizer)

    @_event("optimizer step post-hook")
    def step_post_hook(self, optimizer, args, kwargs) -> None:
        self.dispatcher.emit("after_step", optimizer)
        if optimizer is self.run.optimizers[0]:
            if self.run.metrics is not None:
                self.run.metrics.after_step(self.run, optimizer)
            self.run.step += 1

    @_event("zero_grad wrapper")
    def zero_grad_starts(self, optimizer) -> None:
        self.dispatcher.emit("on_zero_grad", optimizer)

    @_event("zero_grad wrapper")
    def zero_grad_ends(self, optimizer) -> None:
        self.dispatcher.emit("after_zero_grad", optimizer)

    @_event("backward wrapper")
    def backward_starts(self, tensor) -> None:
        self.run.backward_calls += 1
        self.run.last_loss = _scalar(tensor)
        if self.run.metrics is not None:
            self.run.metrics.on_backward(self.run, tensor)
        self.dispatcher.emit("on_backward", tensor)

    @_event("backward wrapper")
    def backward_ends(self, tensor) -> None:
        self.dispatcher.emit("after_backward", tensor)

    @_event("loss wrapper", skip_when_compiling=True)
    def loss_starts(self, name: str, input, target, kwargs: dict) -> None:
        self.dispatcher.emit("on_loss", name, input, target, kwargs)

    @_event("loss wrapper", skip_when_compiling=True)
    def loss_ends(self, name: str, loss) -> None:
        self.dispatcher.emit("on_loss_result", name, loss)

    @_event("loss wrapper", skip_when_compiling=True)
    def loss_failed(self, name: str, input, target, kwargs: dict) -> None:
        self.dispatcher.emit("on_loss_error", name, input, target, kwargs)

    @_event("DataLoader wrapper")
    def dataloader_iter(self, loader) -> None:
        self.dispatcher.emit("on_dataloader_iter", loader)

    @_event("DataLoader wrapper")
    def dataloader_iterator(self, loader, iterator) -> None:
        if self.dispatcher.wants("on_first_batch"):
            self._iterators[iterator] = loader

    @_event("DataLoader iterator wrapper")
    def first_batch(self, iterator, batch) -> None:
        loader = self._iterators.get(iterator)
        if loader is not None:
            self.dispatcher.emit("on_first_batch", loader, batch)

    @_event("scheduler wrapper")
    def scheduler_step(self, scheduler) -> None:
        self.dispatcher.emit("on_scheduler_step", scheduler)

    def scaler_step(self, scaler) -> None:
        self.run.scaler = scaler

    def start(self) -> None:
        self.dispatcher.emit("setup")

    def finish(self) -> None:
        self.dispatcher.emit("teardown")

    def release(self) -> None:
        """Let go of the user's objects once the reports are written. The program may still
        be alive (a notebook), and at exit a model kept here would outlive the interpreter's
        orderly teardown: a DDP model's gloo threads destroyed that late abort the process
        ("terminate called without an active exception")."""
        self.run.release()
        self.dispatcher.clear()

    # ---- inside ----------------------------------------------------------------------------

    def _new_model(self, module) -> bool:
        """Classify a module met for the first time; True when it is a (new) top-level model."""
        from torch.nn.modules.loss import _Loss

        if isinstance(module, _Loss):
            self._classify(module, False)
            return False
        for sub in module.modules():
            if sub is not module:
                self._classify(sub, False)
        self._classify(module, True)
        self.run.models = [m for m in self.run.models if self._kind(m)]
        self.run.models.append(module)
        self.run.rename(module)
        self.hooks.handle(module.register_forward_pre_hook(self.model_pre_hook, with_kwargs=True))
        self.dispatcher.emit("on_model", module)
        return True

    def _kind(self, module) -> bool | None:
        """True: a model; False: part of one, or a loss; None: not met yet."""
        known = self._kinds.get(id(module))
        return known[1] if known is not None and known[0]() is module else None

    def _classify(self, module, is_model: bool) -> None:
        kinds, key = self._kinds, id(module)

        def forget(reference) -> None:
            known = kinds.get(key)
            if known is not None and known[0] is reference:  # not a later module's, same id
                del kinds[key]

        kinds[key] = (weakref.ref(module, forget), is_model)

    def _monitor_failed(self, where: str, error: Exception, disabled: bool) -> None:
        self.reporter.internal(where, error, disabled)


def _scalar(tensor) -> float | None:
    try:
        return float(tensor.detach()) if tensor.numel() == 1 else None
    except Exception:  # meta or fake tensors (torch.compile tracing) have no value
        return None
