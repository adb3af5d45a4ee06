"""One watched run: the monitors, what they share (step, models, optimizers, names), the
events the hooks deliver, and the findings.

Every entry point from a hook is guarded: an exception of the doctor is recorded once, the
monitor that raised is disabled, and the user's program goes on as if nothing was watched.
"""
from __future__ import annotations

import os
import sys
import time
import weakref
from pathlib import Path
from typing import Any, Hashable

from torchdoctor.report.finding import Finding
from torchdoctor.report.stream import write_stderr
from torchdoctor.watch.metrics import Metrics
from torchdoctor.watch.monitor import HOOKS, Monitor, overridden_hooks

_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)


class Session:
    """What monitors see. Read-only for them, but for `report` and `grad_norms`.

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
    """

    def __init__(self, entries: list, lang: str = "en", live: bool = True,
                 metrics: bool = True) -> None:
        self.lang = lang
        self.live = live
        self.argv = list(sys.argv)  # the user's command line, for the report
        self.started = time.monotonic()
        self.step = 1
        self.rank = _env_int("RANK")
        self.models: list = []
        self.optimizers: list = []
        self.last_forward: tuple | None = None
        self.backward_calls = 0
        self.last_loss: float | None = None
        self.scaler = None
        self.in_backward = False
        self.in_scheduler_step = False
        self.installed = None  # hooks.Installed, where per-model hooks are added
        self.replaying = False  # a monitor re-runs a model: its forwards are not events
        self.findings: list[Finding] = []
        self.internal_errors: list[str] = []
        self.metrics = Metrics() if metrics else None
        self._reported: set[tuple[str, Hashable]] = set()
        self._kinds = weakref.WeakKeyDictionary()  # module -> True (model) | False (part of one)
        self._module_names = weakref.WeakKeyDictionary()
        # id(param) -> (weak reference, name): tensors compare by value, not usable as weak keys
        self._param_names: dict[int, tuple] = {}
        self._grad_norms: dict[int, tuple[int, list]] = {}
        self._iterators = weakref.WeakKeyDictionary()  # DataLoader iterator -> its loader
        self.monitors: list[Monitor] = [cls(self, pitfall) for pitfall, cls in entries]
        self._hooks: dict[str, list] = {name: [] for name in HOOKS}
        for monitor in self.monitors:
            for name in overridden_hooks(type(monitor)):
                self._hooks[name].append(getattr(monitor, name))

    # ---- what monitors call ----------------------------------------------------------------

    def report(self, pitfall, place: Hashable, variant: str = "", module: str | None = None,
               at: tuple[str, int] | None = None, at_step: int | None = None,
               **fields: Any) -> None:
        key = (pitfall.code, place)
        if key in self._reported:
            return
        self._reported.add(key)
        message = pitfall.message(variant, self.lang, **fields)
        path, line = at or user_location()
        step = self.step if at_step is None else at_step
        extra = {"step": step, "rank": self.rank, "module": module}
        finding = Finding(pitfall.code, pitfall.name, message, origin="runtime", path=path,
                          line=line, column=1, end_line=line, end_column=1, extra=extra)
        self.findings.append(finding)
        if self.live:
            from torchdoctor.watch.report import live_line

            write_stderr(live_line(finding, self.lang))

    def where(self) -> tuple[str, int]:
        """The user's file and line now, for a report made later."""
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
        params = [p for group in optimizer.param_groups for p in group["params"]
                  if p.grad is not None]
        norms = _norms([p.grad for p in params])
        result = list(zip(params, norms))
        self._grad_norms[id(optimizer)] = (self.step, result)
        return result

    def add_module_hook(self, monitor: Monitor, register, hook):
        """Register a monitor's own hook on one module (`register`: e.g.
        `module.register_forward_hook`). It is removed when the watch ends, its failures are
        reported as the monitor's, and it returns None: it may look, never change values."""
        def guarded(*args):
            try:
                hook(*args)
            except Exception as error:
                self._internal(f"monitor {monitor.pitfall.name}", error)

        handle = register(guarded)
        if self.installed is not None:
            self.installed.handle(handle)
        return handle

    def wants(self, hook: str) -> bool:
        """Whether an enabled monitor defines `hook` (costly wrappers are installed only then)."""
        return bool(self._hooks[hook])

    def trainable_models(self) -> list:
        """Models with a parameter in some optimizer."""
        held = {id(p) for opt in self.optimizers for g in opt.param_groups for p in g["params"]}
        return [m for m in self.models if any(id(p) in held for p in m.parameters())]

    def add_model(self, model) -> None:
        if self._kinds.get(model) is None:
            self._new_model(model)

    def add_optimizer(self, optimizer) -> None:
        if not any(o is optimizer for o in self.optimizers):
            self.optimizers.append(optimizer)

    def rename(self, model) -> None:
        """Refresh the qualified names of `model` (its modules or parameters were replaced)."""
        for name, sub in model.named_modules():
            self._module_names[sub] = name
        for name, param in model.named_parameters():
            self._param_names[id(param)] = (weakref.ref(param), name)

    # ---- events from the hooks (never raise) ------------------------------------------------

    def module_pre_hook(self, module, args):
        """Global forward pre-hook: finds new models (a dict lookup for every other call)."""
        if _compiling() or self._kinds.get(module) is not None:
            return None
        try:
            if self._new_model(module):
                self._forward(module, args, {})  # its own hook starts with the next call
        except Exception as error:
            self._internal("forward hook", error)
        return None

    def model_pre_hook(self, module, args, kwargs):
        """A model's own forward pre-hook (with keyword arguments, which global hooks lack)."""
        if _compiling():
            return None
        try:
            if self._kinds.get(module):
                self._forward(module, args, kwargs)
        except Exception as error:
            self._internal("forward hook", error)
        return None

    def _forward(self, module, args, kwargs) -> None:
        if self.replaying:
            return
        self.last_forward = (module, args, kwargs)
        if self._hooks["on_forward"]:
            self._emit("on_forward", module, args, kwargs)

    def step_pre_hook(self, optimizer, args, kwargs) -> None:
        try:
            self.add_optimizer(optimizer)
            if self.metrics is not None and optimizer is self.optimizers[0]:
                self.metrics.before_step(self, optimizer)
            self._emit("on_step", optimizer)
        except Exception as error:
            self._internal("optimizer step pre-hook", error)

    def step_post_hook(self, optimizer, args, kwargs) -> None:
        try:
            self._emit("after_step", optimizer)
            if optimizer is self.optimizers[0]:
                if self.metrics is not None:
                    self.metrics.after_step(self, optimizer)
                self.step += 1
        except Exception as error:
            self._internal("optimizer step post-hook", error)

    def backward_starts(self, tensor) -> None:
        try:
            self.backward_calls += 1
            self.last_loss = _scalar(tensor)
            if self.metrics is not None:
                self.metrics.on_backward(self, tensor)
            self._emit("on_backward", tensor)
        except Exception as error:
            self._internal("backward wrapper", error)

    def backward_ends(self, tensor) -> None:
        try:
            self._emit("after_backward", tensor)
        except Exception as error:
            self._internal("backward wrapper", error)

    def loss_starts(self, name: str, input, target, kwargs: dict) -> None:
        if _compiling():
            return
        try:
            self._emit("on_loss", name, input, target, kwargs)
        except Exception as error:
            self._internal("loss wrapper", error)

    def loss_ends(self, name: str, loss) -> None:
        if _compiling():
            return
        try:
            self._emit("on_loss_result", name, loss)
        except Exception as error:
            self._internal("loss wrapper", error)

    def dataloader_iter(self, loader) -> None:
        try:
            self._emit("on_dataloader_iter", loader)
        except Exception as error:
            self._internal("DataLoader wrapper", error)

    def dataloader_iterator(self, loader, iterator) -> None:
        try:
            if self._hooks["on_first_batch"]:
                self._iterators[iterator] = loader
        except Exception as error:
            self._internal("DataLoader wrapper", error)

    def first_batch(self, iterator, batch) -> None:
        try:
            loader = self._iterators.get(iterator)
            if loader is not None:
                self._emit("on_first_batch", loader, batch)
        except Exception as error:
            self._internal("DataLoader iterator wrapper", error)

    def scheduler_step(self, scheduler) -> None:
        try:
            self._emit("on_scheduler_step", scheduler)
        except Exception as error:
            self._internal("scheduler wrapper", error)

    def scaler_step(self, scaler) -> None:
        self.scaler = scaler

    def start(self) -> None:
        self._emit("setup")

    def finish(self) -> None:
        self._emit("teardown")

    def release(self) -> None:
        """Let go of the user's objects once the reports are written. The program may still
        be alive (a notebook), and at exit a model kept here would outlive the interpreter's
        orderly teardown: a DDP model's gloo threads destroyed that late abort the process
        ("terminate called without an active exception")."""
        self.models, self.optimizers, self.monitors = [], [], []
        self._hooks = {name: [] for name in HOOKS}
        self.last_forward = self.scaler = self.installed = None
        self._grad_norms.clear()
        self._param_names.clear()

    # ---- inside ----------------------------------------------------------------------------

    def _new_model(self, module) -> bool:
        """Classify a module met for the first time; True when it is a (new) top-level model."""
        from torch.nn.modules.loss import _Loss

        if isinstance(module, _Loss):
            self._kinds[module] = False
            return False
        for sub in module.modules():
            if sub is not module:
                self._kinds[sub] = False
        self._kinds[module] = True
        self.models = [m for m in self.models if self._kinds.get(m)]
        self.models.append(module)
        self.rename(module)
        if self.installed is not None:
            self.installed.handle(module.register_forward_pre_hook(self.model_pre_hook,
                                                                   with_kwargs=True))
        self._emit("on_model", module)
        return True

    def _emit(self, hook: str, *args) -> None:
        for method in self._hooks[hook]:
            try:
                method(*args)
            except Exception as error:
                self._disable(method.__self__, error)

    def _disable(self, monitor: Monitor, error: Exception) -> None:
        for methods in self._hooks.values():
            methods[:] = [m for m in methods if m.__self__ is not monitor]
        name = f"{monitor.pitfall.name} ({type(monitor).__name__})"
        self._internal(f"monitor {name}", error, disabled=True)

    def _internal(self, where: str, error: Exception, disabled: bool = False) -> None:
        text = f"{where}: {type(error).__name__}: {error}"
        if text in self.internal_errors:
            return
        self.internal_errors.append(text)
        tail = "; it is disabled" if disabled else ""
        write_stderr(f"torchdoctor: internal error in {text}{tail}; training goes on\n")


def _compiling() -> bool:
    """True while torch.compile traces: the hooks then do nothing (they are not part of the
    graph), so compiled code sees no events from inside it; what runs eagerly still does."""
    import torch

    return torch.compiler.is_compiling()


def _norms(grads: list) -> list[float]:
    import torch

    if not grads:
        return []
    norms = torch._foreach_norm(grads)
    try:
        return torch.stack(norms).tolist()
    except RuntimeError:  # mixed dtypes or devices
        return [float(n) for n in norms]


def _scalar(tensor) -> float | None:
    try:
        return float(tensor.detach()) if tensor.numel() == 1 else None
    except Exception:  # meta or fake tensors (torch.compile tracing) have no value
        return None


def user_location() -> tuple[str, int]:
    """The file and line of the innermost frame of the user's own code on the current stack."""
    from torchdoctor.explain.parse import is_user_path

    frame = sys._getframe(1)
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith(_PACKAGE_DIR) and is_user_path(path):
            return _relative(path), frame.f_lineno
        frame = frame.f_back
    return "", 1


def _relative(path: str) -> str:
    """Relative to the working directory when the file is below it; else as it is."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if relative.startswith(os.pardir) else relative


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else None
