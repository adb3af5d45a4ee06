"""What the report plots: loss and learning rate per step, gradient norm per module over time.

Cheap by construction: the loss value is read once per backward (the session needs it anyway),
the learning rate is a dict lookup, and gradient norms cost one foreach kernel on sampled steps
only (every `grad_every` steps). Long runs are thinned: when a series holds `limit` points,
every other point is dropped and the sampling stride doubles.
"""

from __future__ import annotations

import math


class Metrics:
    def __init__(self, grad_every: int = 10, limit: int = 4000) -> None:
        self.grad_every = grad_every
        self.limit = limit
        self.stride = 1
        self.steps: list[int] = []
        self.losses: list[float | None] = []
        self.lrs: list[float | None] = []
        self.grad_steps: list[int] = []
        self.grad_norms: dict[str, list[float | None]] = {}
        self._step_losses: list[float] = []

    def on_backward(self, session, tensor) -> None:
        if session.last_loss is not None:
            self._step_losses.append(session.last_loss)

    def wants_grad_norms(self, step: int) -> bool:
        return (step - 1) % (self.grad_every * self.stride) == 0

    def before_step(self, session, optimizer) -> None:
        if not self.wants_grad_norms(session.step):
            return
        squares: dict[str, float] = {}
        for param, norm in session.grad_norms(optimizer):
            name = session.param_name(param) or f"param{id(param):x}"
            module = name.rpartition(".")[0] or name
            squares[module] = squares.get(module, 0.0) + norm * norm
        index = len(self.grad_steps)
        self.grad_steps.append(session.step)
        for module, square in squares.items():
            series = self.grad_norms.setdefault(module, [None] * index)
            series.append(_json_number(math.sqrt(square)))
        for series in self.grad_norms.values():
            if len(series) < index + 1:
                series.append(None)

    def after_step(self, session, optimizer) -> None:
        losses, self._step_losses = self._step_losses, []
        if (session.step - 1) % self.stride:
            return
        loss = sum(losses) / len(losses) if losses else None
        if loss is not None and session.scaler is not None:
            loss = loss / _scale(session.scaler)
        lr = optimizer.param_groups[0].get("lr") if optimizer.param_groups else None
        self.steps.append(session.step)
        self.losses.append(_json_number(loss))
        self.lrs.append(_json_number(float(lr)) if lr is not None else None)
        if len(self.steps) >= self.limit:
            self._thin()

    def _thin(self) -> None:
        self.stride *= 2
        self.steps, self.losses, self.lrs = self.steps[::2], self.losses[::2], self.lrs[::2]
        self.grad_steps = self.grad_steps[::2]
        self.grad_norms = {name: series[::2] for name, series in self.grad_norms.items()}

    def to_json(self) -> dict:
        return {
            "step": self.steps,
            "loss": self.losses,
            "lr": self.lrs,
            "grad_norm_step": self.grad_steps,
            "grad_norm": self.grad_norms,
        }


def _json_number(value: float | None) -> float | str | None:
    """Strict JSON has no NaN or Infinity: non-finite values become the strings "NaN",
    "Infinity", "-Infinity" (the HTML report marks them); null means not recorded."""
    if value is None or math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _scale(scaler) -> float:
    try:
        scale = float(scaler.get_scale())
    except Exception:  # a scaler that is disabled or not yet used
        return 1.0
    return scale or 1.0
