"""The pitfall catalog: one file per pitfall under `catalog/<area>/`.

Codes by hundreds (one place that says so; `docs/rules.md` repeats it):
TD0xx device & dtype · TD1xx autograd · TD2xx training loop · TD3xx data ·
TD4xx tensor semantics · TD5xx serialization · TD6xx parallel & distributed ·
TD7xx environment & tooling · TD8xx removed and deprecated APIs · TD9xx experimental.
"""

from torchdoctor.catalog._model import Pitfall, pick
from torchdoctor.catalog._registry import all_pitfalls, get

__all__ = ["Pitfall", "all_pitfalls", "get", "pick"]
