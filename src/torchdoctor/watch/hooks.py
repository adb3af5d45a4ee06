"""Install and remove the watcher's hooks: PyTorch's official global hooks where they exist,
thin wrappers where none does, every one undone on exit (after a crash too).

Official hooks: a global module forward pre-hook (finds the top-level models), a forward
pre-hook on each model (sees its inputs, keyword arguments too), optimizer step pre/post
hooks. Wrappers (class or module attributes replaced, the original kept and put back):
`Tensor.backward`, `torch.autograd.backward`, `DataLoader.__iter__` (and its iterators'
`__next__`, only when a monitor wants first batches), `step` of the LR schedulers,
`GradScaler.step`, `Optimizer.zero_grad` (only when a monitor wants it), and the loss
functions of `torch.nn.functional` (loss modules call these too). A wrapper always calls the
original with the same arguments and returns its result unchanged; what it tells the session
is guarded, so a bug of the doctor never reaches the user's code.

A name bound before the wrapper was installed (`from torch.nn.functional import cross_entropy`
in a module imported earlier) keeps the original: `torchdoctor run` installs before the user's
code runs; `watch()` inside a program cannot reach such names (loss modules still work).
"""

from __future__ import annotations

import functools
import warnings
import sys
from typing import Callable

# Loss functions of torch.nn.functional seen by `on_loss`: (input, target, ...) signatures.
LOSS_FUNCTIONS = (
    "cross_entropy",
    "nll_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "kl_div",
    "soft_margin_loss",
    "multilabel_soft_margin_loss",
    "poisson_nll_loss",
    "gaussian_nll_loss",
)


class Installed:
    """The owner of every hook handle and patch of one session: `remove()` undoes them all,
    in reverse order, and may be called again (nothing is left to undo). A context manager
    that removes on exit, after a crash too. A handle given once it is removed is removed at
    once: nothing outlives the session.

    It also holds the warnings its wrappers have re-issued (see `call_in_callers_place`)."""

    def __init__(self) -> None:
        self._handles: list = []
        self._patches: list[tuple[object, str, object, bool]] = []
        self.removed = False
        # What was already shown for the "default"/"module"/"once" actions. Python's own
        # registries cannot serve: `catch_warnings` mutates the filters, which empties them.
        self.shown_warnings: set[tuple] = set()

    def __enter__(self) -> Installed:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def handle(self, handle) -> None:
        if self.removed:
            handle.remove()
        else:
            self._handles.append(handle)

    def patch(self, owner: object, name: str, replacement: Callable) -> None:
        if self.removed:
            raise RuntimeError(f"patching {name} after the watch's hooks were removed")
        had_own = name in vars(owner) if isinstance(owner, type) else True
        original = vars(owner).get(name) if isinstance(owner, type) else getattr(owner, name)
        self._patches.append((owner, name, original, had_own))
        setattr(owner, name, replacement)

    def remove(self) -> None:
        self.removed = True
        while self._handles:
            self._handles.pop().remove()
        while self._patches:
            owner, name, original, had_own = self._patches.pop()
            if had_own:
                setattr(owner, name, original)
            else:
                delattr(owner, name)


def install(session) -> None:
    """Install every hook of `session` into its owner of handles, `session.hooks`; on any
    failure, what was installed is removed again."""
    import torch
    from torch.nn.modules import module as module_hooks
    from torch.optim import lr_scheduler
    from torch.optim import optimizer as optimizer_hooks

    installed = session.hooks
    shown = installed.shown_warnings
    try:
        installed.handle(module_hooks.register_module_forward_pre_hook(session.module_pre_hook))
        installed.handle(optimizer_hooks.register_optimizer_step_pre_hook(session.step_pre_hook))
        installed.handle(optimizer_hooks.register_optimizer_step_post_hook(session.step_post_hook))

        installed.patch(torch.Tensor, "backward", _backward_wrapper(torch.Tensor.backward, session))
        installed.patch(
            torch.autograd, "backward", _backward_wrapper(torch.autograd.backward, session)
        )
        loader = torch.utils.data.DataLoader
        installed.patch(loader, "__iter__", _iter_wrapper(loader.__iter__, session))
        if session.wants("on_first_batch"):  # a wrapper on every batch only when needed
            iterator = torch.utils.data.dataloader._BaseDataLoaderIter
            installed.patch(iterator, "__next__", _first_batch_wrapper(iterator.__next__, session))
        if session.wants("on_zero_grad") or session.wants("after_zero_grad"):
            optimizer = torch.optim.Optimizer
            installed.patch(
                optimizer, "zero_grad", _zero_grad_wrapper(optimizer.zero_grad, session)
            )
        for cls in _scheduler_classes(lr_scheduler):
            installed.patch(cls, "step", _scheduler_step_wrapper(cls.step, session, shown))
        scaler = torch.amp.grad_scaler.GradScaler
        installed.patch(scaler, "step", _before(scaler.step, session.scaler_step))
        functional = torch.nn.functional
        for name in LOSS_FUNCTIONS:
            original = getattr(functional, name, None)
            if original is not None:
                installed.patch(functional, name, _loss_wrapper(original, name, session, shown))
    except BaseException:
        installed.remove()
        raise


def _scheduler_classes(lr_scheduler) -> list[type]:
    """LRScheduler and every scheduler class of torch that defines its own `step`."""
    return [
        cls
        for cls in vars(lr_scheduler).values()
        if isinstance(cls, type)
        and issubclass(cls, lr_scheduler.LRScheduler)
        and "step" in vars(cls)
    ]


def _backward_wrapper(original: Callable, session) -> Callable:
    @functools.wraps(original)
    def backward(tensor, *args, **kwargs):
        # Tensor.backward calls torch.autograd.backward: only the outer call is an event.
        if session.in_backward:
            return original(tensor, *args, **kwargs)
        session.in_backward = True
        try:
            session.backward_starts(tensor)
            result = original(tensor, *args, **kwargs)
            session.backward_ends(tensor)
        finally:
            session.in_backward = False
        return result

    return backward


def _zero_grad_wrapper(original: Callable, session) -> Callable:
    @functools.wraps(original)
    def zero_grad(optimizer, *args, **kwargs):
        session.zero_grad_starts(optimizer)
        result = original(optimizer, *args, **kwargs)
        session.zero_grad_ends(optimizer)
        return result

    return zero_grad


def _scheduler_step_wrapper(original: Callable, session, shown: set) -> Callable:
    @functools.wraps(original)
    def step(scheduler, *args, **kwargs):
        # The constructor's own first step (step count 0) and the sub-schedulers that
        # SequentialLR/ChainedScheduler step are not the user's calls.
        if getattr(scheduler, "_step_count", 1) and not session.in_scheduler_step:
            session.in_scheduler_step = True
            try:
                session.scheduler_step(scheduler)
                return call_in_callers_place(original, shown, scheduler, *args, **kwargs)
            finally:
                session.in_scheduler_step = False
        return call_in_callers_place(original, shown, scheduler, *args, **kwargs)

    return step


def _iter_wrapper(original: Callable, session) -> Callable:
    @functools.wraps(original)
    def __iter__(loader):
        session.dataloader_iter(loader)
        iterator = original(loader)
        session.dataloader_iterator(loader, iterator)
        return iterator

    return __iter__


def _first_batch_wrapper(original: Callable, session) -> Callable:
    @functools.wraps(original)
    def __next__(iterator):
        batch = original(iterator)
        if getattr(iterator, "_num_yielded", 0) == 1:  # counted afresh by every iteration
            session.first_batch(iterator, batch)
        return batch

    return __next__


# The loss functions that warn their caller (`stacklevel=2`); the others need no care for it
# (the care costs ~10 us a call).
_WARNING_LOSSES = frozenset({"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div"})


def _loss_wrapper(original: Callable, name: str, session, shown: set) -> Callable:
    @functools.wraps(original)
    def loss(input, target, *args, **kwargs):
        session.loss_starts(name, input, target, kwargs)
        try:
            if name in _WARNING_LOSSES:
                result = call_in_callers_place(original, shown, input, target, *args, **kwargs)
            else:
                result = original(input, target, *args, **kwargs)
        except Exception:
            session.loss_failed(name, input, target, kwargs)
            raise
        session.loss_ends(name, result)
        return result

    return loss


def call_in_callers_place(original: Callable, shown: set, *args, **kwargs):
    """Call `original` as if our wrapper were not on the stack for the warnings it raises.

    torch warns with `stacklevel=2` ("Using a target size ...", "Detected call of
    `lr_scheduler.step()` ..."): through a wrapper that would name this file instead of the
    line that called it. The warnings are caught and re-issued once the call returns, at the
    caller's line for those that named the wrapper, through the registries and the user's
    filters, so they show as Python would have shown them (`shown`: what the session
    already showed once)."""
    caller = sys._getframe(2)  # the user's call of the wrapper
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            return original(*args, **kwargs)
    finally:
        for warning in caught:
            _reissue(warning, caller, shown)


def _reissue(warning, caller, shown: set) -> None:
    filename, lineno, module = warning.filename, warning.lineno, None
    if filename == __file__:
        filename, lineno = caller.f_code.co_filename, caller.f_lineno
        module = caller.f_globals.get("__name__")
    module = module or filename.rsplit("/", 1)[-1].removesuffix(".py")
    text = str(warning.message)
    action = _action(text, warning.category, module, lineno)
    if action == "ignore":
        return
    key = {
        "default": (text, warning.category, filename, lineno),
        "module": (text, warning.category, filename),
        "once": (text, warning.category),
    }.get(action)
    if key is not None:
        if key in shown:
            return
        shown.add(key)
    warnings.warn_explicit(warning.message, warning.category, filename, lineno, module=module)


def _action(text: str, category: type, module: str, lineno: int) -> str:
    """The action the user's warning filters take, matched as `warnings` matches them."""
    for action, message, kind, pattern, line in warnings.filters:
        if (
            (message is None or message.match(text))
            and issubclass(category, kind)
            and (pattern is None or pattern.match(module))
            and line in (0, lineno)
        ):
            return action
    return warnings.defaultaction


def _before(original: Callable, notify: Callable) -> Callable:
    @functools.wraps(original)
    def wrapper(obj, *args, **kwargs):
        notify(obj)
        return original(obj, *args, **kwargs)

    return wrapper
