"""The base class of runtime checks: one concern per class, no-op hook methods.

A catalog entry attaches a monitor to its pitfall:

    @PITFALL.monitor
    class StaleGradients(Monitor):
        def after_step(self, optimizer):
            ...
            self.report(place=id(optimizer), step="optimizer.step()")

The watcher (watch.session.Session) builds one instance per watched run, for every enabled
entry; its dispatcher (watch.dispatch) calls only the hook methods a class overrides, so an
unused hook costs nothing.
This module must not import torch: catalog entries import it, and `check` never loads torch.

Hook points, in the order a training step meets them. Every hook may read the run,
`self.session` (a `RunState`: step, models, optimizers, names, rank; see watch.state):

- `setup()`: once, when the watch starts.
- `on_model(model)`: a top-level module seen for the first time (its first forward call, or
  given to `watch(model, ...)`). Submodules and loss modules are not models.
- `on_forward(model, args, kwargs)`: before each forward of a top-level model.
- `on_dataloader_iter(loader)`: `iter(DataLoader)` (an epoch starts), before workers start.
- `on_first_batch(loader, batch)`: the first batch of each iteration of a DataLoader, as the
  user's loop receives it (never fetched by the doctor). Only monitors that define it make
  the watcher wrap the iterators' `__next__`.
- `on_loss(name, input, target, kwargs)`: before a loss function of `torch.nn.functional`
  runs (`name` e.g. "cross_entropy"; loss modules call these too). May inspect, never modify.
- `on_loss_result(name, loss)`: the tensor a loss function returned.
- `on_loss_error(name, input, target, kwargs)`: the loss function raised (the exception goes
  on to the user unchanged once the monitors have looked).
- `on_backward(tensor)`: before `tensor.backward()` / `torch.autograd.backward(tensor)`.
- `after_backward(tensor)`: after it returned.
- `on_step(optimizer)`: optimizer step pre-hook, gradients final, parameters not yet changed.
  Not called for steps a GradScaler skips. `self.session.grad_norms(optimizer)` gives the
  per-parameter gradient norms of this step, computed once and shared by all monitors.
- `after_step(optimizer)`: optimizer step post-hook.
- `on_zero_grad(optimizer)`: before `optimizer.zero_grad()` clears the gradients;
  `after_zero_grad(optimizer)`: after it returned. Only monitors that define one make the
  watcher wrap `Optimizer.zero_grad` (`Module.zero_grad` is not seen).
- `on_scheduler_step(scheduler)`: before a user's `lr_scheduler.step()` (not the one the
  scheduler's constructor makes).
- `teardown()`: once, when the watch ends (normal exit or crash).

A monitor that needs a hook on particular modules (a ReLU's output, a BatchNorm's input)
registers it with `self.session.add_module_hook(self, module.register_forward_hook, fn)`:
removed when the watch ends, its failures reported as the monitor's.

A monitor reports with `self.report(place, variant="", module=None, **fields)`: a Finding of
its pitfall, message variant `variant` formatted with `fields`, at most once per place. A
monitor that raises is reported once as the doctor's own error and disabled; training goes on.
Monitors never change values, RNG state, data order or dtypes: they only look.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Hashable

if TYPE_CHECKING:  # pragma: no cover
    from torchdoctor.catalog._model import Pitfall
    from torchdoctor.watch.reporter import Reporter
    from torchdoctor.watch.state import RunState

HOOKS = (
    "setup",
    "on_model",
    "on_forward",
    "on_dataloader_iter",
    "on_first_batch",
    "on_loss",
    "on_loss_result",
    "on_loss_error",
    "on_backward",
    "after_backward",
    "on_step",
    "after_step",
    "on_zero_grad",
    "after_zero_grad",
    "on_scheduler_step",
    "teardown",
)


class Monitor:
    """One runtime check. Subclasses override the hooks they need; see the module docstring."""

    # False: opt-in (statistical symptoms); enabled only by --select.
    default = True

    def __init__(self, session: RunState, pitfall: Pitfall, reporter: Reporter) -> None:
        self.session = session
        self.pitfall = pitfall
        self._reporter = reporter

    def report(
        self,
        place: Hashable,
        variant: str = "",
        module: str | None = None,
        at: tuple[str, int] | None = None,
        at_step: int | None = None,
        **fields: Any,
    ) -> None:
        """Report this monitor's pitfall at `place` (once per place), with message `variant`.

        `module`: qualified name of the module concerned. The finding's file and line are the
        user's innermost frame now, and its step the current one, unless a deferred report
        gives them (`at=(path, line)` from `self.session.where()`, `at_step`)."""
        self._reporter.report(
            self.pitfall, place, variant, module=module, at=at, at_step=at_step, **fields
        )

    def setup(self) -> None:
        pass

    def on_model(self, model) -> None:
        pass

    def on_forward(self, model, args: tuple, kwargs: dict) -> None:
        pass

    def on_dataloader_iter(self, loader) -> None:
        pass

    def on_first_batch(self, loader, batch) -> None:
        pass

    def on_loss(self, name: str, input, target, kwargs: dict) -> None:
        pass

    def on_loss_result(self, name: str, loss) -> None:
        pass

    def on_loss_error(self, name: str, input, target, kwargs: dict) -> None:
        pass

    def on_backward(self, tensor) -> None:
        pass

    def after_backward(self, tensor) -> None:
        pass

    def on_step(self, optimizer) -> None:
        pass

    def after_step(self, optimizer) -> None:
        pass

    def on_zero_grad(self, optimizer) -> None:
        pass

    def after_zero_grad(self, optimizer) -> None:
        pass

    def on_scheduler_step(self, scheduler) -> None:
        pass

    def teardown(self) -> None:
        pass


def overridden_hooks(cls: type) -> list[str]:
    """The hook methods `cls` defines itself or inherits from a Monitor subclass."""
    return [name for name in HOOKS if getattr(cls, name) is not getattr(Monitor, name)]
