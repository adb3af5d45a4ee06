"""The run as monitors see it (`self.session` of a Monitor): written by the watch session as
events arrive, read by the monitors.

- `step`: 1-based index of the training step in progress (steps of the first optimizer
  seen; 1 until its first `step()` has run).
- `models`: top-level modules seen (forward calls that no known model contains).
- `optimizers`: optimizers seen (stepped or given to `watch`).
- `module_name(module)`, `param_name(param)`: qualified names inside their model.
- `last_forward`: (model, args, kwargs) of the latest top-level forward.
- `last_loss`: the value of the tensor of the latest backward call (a float; None when it
  is not a single number). Under a GradScaler it is the scaled loss.
- `backward_calls`: how many backward calls so far; `scaler`: the GradScaler in use, if any.
- `rank`: the distributed rank (RANK), or None.
- `metrics`: the report's plots (None when not recorded).

What a monitor may do to it: `rename(model)` after the model's parameters were replaced,
set `replaying` while it re-runs a model (those forwards are not events), and
`add_module_hook(...)` (see Monitor).
"""

from __future__ import annotations

import os
import weakref
from typing import TYPE_CHECKING, Any

from torchdoctor.watch.metrics import Metrics

if TYPE_CHECKING:  # pragma: no cover
    from torchdoctor.watch.dispatch import Dispatcher
    from torchdoctor.watch.hooks import Installed
    from torchdoctor.watch.monitor import Monitor


class RunState:
    def __init__(self, handles: Installed, dispatcher: Dispatcher, metrics: bool = True) -> None:
        self.step = 1
        self.rank = _env_int("RANK")
        self.models: list = []
        self.optimizers: list = []
        self.last_forward: tuple | None = None
        self.backward_calls = 0
        self.last_loss: float | None = None
        self.scaler = None
        self.replaying = False
        self.metrics = Metrics() if metrics else None
        self._handles = handles
        self._dispatcher = dispatcher
        self._module_names: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        # id(param) -> (weak reference, name): tensors compare by value, not usable as weak keys
        self._param_names: dict[int, tuple] = {}
        self._grad_norms: dict[int, tuple[int, list]] = {}

    def where(self) -> tuple[str, int]:
        """The user's file and line now, for a report made later."""
        from torchdoctor.watch.reporter import user_location

        return user_location()

    def module_name(self, module) -> str | None:
        return self._module_names.get(module)

    def param_name(self, param) -> str | None:
        entry = self._param_names.get(id(param))
        return entry[1] if entry is not None and entry[0]() is param else None

    def grad_norms(self, optimizer) -> list[tuple[Any, float]]:
        """(parameter, norm of its gradient) for this step's parameters that have a gradient;
        computed once per step and optimizer with one foreach kernel."""
        cached = self._grad_norms.get(id(optimizer))
        if cached is not None and cached[0] == self.step:
            return cached[1]
        params = [
            p for group in optimizer.param_groups for p in group["params"] if p.grad is not None
        ]
        norms = _norms([p.grad for p in params])
        result = list(zip(params, norms))
        self._grad_norms[id(optimizer)] = (self.step, result)
        return result

    def trainable_models(self) -> list:
        """Models with a parameter in some optimizer."""
        held = {id(p) for opt in self.optimizers for g in opt.param_groups for p in g["params"]}
        return [m for m in self.models if any(id(p) in held for p in m.parameters())]

    def rename(self, model) -> None:
        """Refresh the qualified names of `model` (its modules or parameters were replaced)."""
        for name, sub in model.named_modules():
            self._module_names[sub] = name
        for name, param in model.named_parameters():
            self._param_names[id(param)] = (weakref.ref(param), name)

    def add_module_hook(self, monitor: Monitor, register, hook):
        """Register a monitor's own hook on one module (`register`: e.g.
        `module.register_forward_hook`). It is removed when the watch ends, its failures are
        reported as the monitor's, and it returns None: it may look, never change values."""
        handle = register(self._dispatcher.guard(monitor, hook))
        self._handles.handle(handle)
        return handle

    def release(self) -> None:
        """Let go of the user's objects (see Session.release)."""
        self.models, self.optimizers = [], []
        self.last_forward = self.scaler = None
        self._grad_norms.clear()
        self._param_names.clear()


def _norms(grads: list) -> list[float]:
    import torch

    if not grads:
        return []
    norms = torch._foreach_norm(grads)
    try:
        return torch.stack(norms).tolist()
    except RuntimeError:  # mixed dtypes or devices
        return [float(n) for n in norms]


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else None
