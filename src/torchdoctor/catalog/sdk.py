"""Everything a catalog entry uses from outside its own area, in one place.

An entry imports this module and its area's private helpers (`catalog/<area>/_*.py`), nothing
else of torchdoctor; engines never import an entry (tests/test_import_contracts.py keeps both
so). The names are re-exported from where they live. What is only needed at explain, watch or
ckpt time is imported on first use, so `check` pays nothing for it and never loads torch.

The facets an entry registers on its `PITFALL`, and the contract each function keeps:

- `@PITFALL.static(*node_types, names=...)`: a `StaticCheck`, fed every matching AST node.
- `@PITFALL.native`: a `NativeScan` of C++/CUDA extension sources.
- `PITFALL.error(regex, ...)` / `@PITFALL.error_check(types=...)`: an `ErrorCheck` that reads
  one block of a parsed traceback or log and returns a `Clue`, or None for "not mine".
- `@PITFALL.monitor`: a `Monitor` subclass overriding some of `HOOKS`; a method named like a
  hook that is not one is refused at import. It reads the run through `self.session`, a
  `RunState`.
- `@PITFALL.checkpoint`: a `CheckpointCheck` reading a `Subject` (the checkpoint's listing,
  its difference from a model, or why it cannot be read).
- `@PITFALL.source_repair`: a `SourceRepair` of a source that does not parse only because of
  an old idiom: the same text with it replaced in place, so the rest of the file is checked.
- `@PITFALL.engine_finding(role)`: the finding an engine makes itself for one of `ROLES`
  (`UnparsableSource`, `UnreadableSource`).

Every finding is made once, in English, with its `template` (variant, fields) and its fix's
`titles`: the language is applied when it is shown (report/localize.py), never by a facet.
"""

from __future__ import annotations

import ast
import importlib
from typing import TYPE_CHECKING, Iterable, Protocol

from torchdoctor._regex import lazy_compile
from torchdoctor.catalog._model import ROLES, Clue, Pitfall, Text, pick
from torchdoctor.knowledge import dtypes, state_dicts, tensor_methods, weights_only
from torchdoctor.lint.bindings import (
    assigned_before,
    binds_in_header,
    bindings,
    import_rebound_before,
    import_replaced,
    bound_between,
    plain_assignments,
    reaching_assignment,
    scope_of,
)
from torchdoctor.lint.context import (
    CNN_FACTORIES,
    MODULE_SELF_METHODS,
    TORCH_STAR_EXPORTS,
    VARIABLE_QUALNAMES,
    unwrap_self_methods,
    assigned_name,
    Context,
    Kind,
    file_of_tests,
    is_name,
    nested_statements,
    per_file,
    shorten,
    subtree_parents,
    top_level_classes,
    top_level_functions,
)
from torchdoctor.lint.gradients import (
    records_nothing,
    runs_without_gradients,
    turns_recording_off,
)
from torchdoctor.lint.lines import split_lines
from torchdoctor.lint.project import (
    CALLED_WITHOUT_GRAD,
    FORWARD_CALLED,
    MASK_FROM,
    INVERTED_MASK_FROM,
    LOSS_BASE,
    HANDS_BACK_FIRST,
    VOLATILE_HELPER,
    OWN_METHOD,
    MASK_SETTER,
    INDEX_MASK_FROM,
    ACCUMULATES,
    ACCUMULATING_UPDATE,
    PLAIN_STEP,
    RUNS_ITSELF,
    DETACHED_FROM,
    WEIGHTS_NAME,
    MODEL_WRAPPERS,
    MODE_WORDS,
    SETS_A_MODE_WORDS,
    SCHEDULE_ENDINGS,
    SCHEDULE_REACHES,
    holds_marker,
)
from torchdoctor.lint.parameter_free import parameter_free_module, weightless_module
from torchdoctor.lint.values import (
    assignments,
    attribute_values,
    backward_without_gradient,
    built_from,
    builds_a_loss_module,
    computes_a_loss,
    constant_range,
    dotted_name,
    root_name,
    expects_an_error,
    from_project_class,
    hands_back,
    in_compat_fallback,
    is_self_attribute,
    keeps_itself,
    makes_generator,
    may_be_called,
    module_function_calls,
    methods_defined_once,
    moves_itself,
    name_words,
    names_a_model,
    names_assigned,
    names_assigned_calls_of,
    only_identified,
    is_parameter,
    unrebound_parameter,
    parameter_default,
    passed_by_every_call,
    extra_keywords_of_every_call,
    bound_only_to,
    constant_default_kept,
    constructed_with,
    MODULE_MOVES,
    left_none_by_every_call,
    imported_roots,
    started_with,
    passed_values,
    read_as_tensor,
    returned_values,
    runs_as_script,
    tensor_rank,
    tensor_type,
)
from torchdoctor.lint.occurrences import (
    BlockKey,
    FileIndex,
    block_names,
    call_name,
    children,
    first_in_walk,
    index,
    argument,
    index_of,
    keyword_value,
    lineage,
    in_other_branches,
    statements,
    subtree,
)
from torchdoctor.report.finding import Edit, Finding, Fix
from torchdoctor.watch.monitor import HOOKS, Monitor

if TYPE_CHECKING:  # pragma: no cover; re-exported on first use (below), named here for checkers
    from torchdoctor.ckpt.diff import Diff, Difference  # noqa: F401
    from torchdoctor.ckpt.findings import Subject
    from torchdoctor.ckpt.inspect import Listing  # noqa: F401
    from torchdoctor.explain.model import ErrorBlock, ErrorReport, Frame  # noqa: F401
    from torchdoctor.lint.native import NativeSource
    from torchdoctor.lint.neighbours import directory_listing, top_level_names  # noqa: F401

# Name -> module, imported when an entry first asks for the name.
_ON_FIRST_USE = {
    # Only the entries that scan extension sources or read a file's neighbours ask for these:
    # `explain` imports entries to run their signatures, and needs neither.
    "NativeSource": "torchdoctor.lint.native",
    "directory_listing": "torchdoctor.lint.neighbours",
    "top_level_names": "torchdoctor.lint.neighbours",
    "is_user_path": "torchdoctor.explain.parse",
    "ErrorBlock": "torchdoctor.explain.model",
    "ErrorReport": "torchdoctor.explain.model",
    "Frame": "torchdoctor.explain.model",
    "is_frozen": "torchdoctor.watch.layers",
    "mode_dependent_layers": "torchdoctor.watch.layers",
    "RunState": "torchdoctor.watch.state",
    "Subject": "torchdoctor.ckpt.findings",
    "Listing": "torchdoctor.ckpt.inspect",
    "Diff": "torchdoctor.ckpt.diff",
    "Difference": "torchdoctor.ckpt.diff",
}


def __getattr__(name: str):
    if name not in _ON_FIRST_USE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_ON_FIRST_USE[name]), name)
    globals()[name] = value  # later reads (a monitor's, every step) find it directly
    return value


class StaticCheck(Protocol):
    def __call__(self, node: ast.AST, ctx: Context) -> Iterable[Finding]: ...


class NativeScan(Protocol):
    def __call__(self, source: NativeSource) -> Iterable[Finding]: ...


class ErrorCheck(Protocol):
    def __call__(self, block: ErrorBlock, report: ErrorReport) -> Clue | None: ...


class CheckpointCheck(Protocol):
    def __call__(self, subject: Subject) -> Iterable[Finding]: ...


class UnparsableSource(Protocol):
    def __call__(self, error: Exception, source: str, path: str) -> Finding: ...


class SourceRepair(Protocol):
    def __call__(self, source: str) -> tuple[str, list[tuple[int, int]]] | None: ...


class UnreadableSource(Protocol):
    def __call__(self, reason: str, path: str, cell: int | None = None) -> Finding: ...


# The contract of each role's `make_finding` (roles without one have their finding made by a
# facet above).
ROLE_CONTRACTS = {"unparsable-source": UnparsableSource, "unreadable-source": UnreadableSource}

__all__ = [
    "CNN_FACTORIES",
    "CALLED_WITHOUT_GRAD",
    "FORWARD_CALLED",
    "MASK_FROM",
    "INVERTED_MASK_FROM",
    "LOSS_BASE",
    "HANDS_BACK_FIRST",
    "VOLATILE_HELPER",
    "OWN_METHOD",
    "MASK_SETTER",
    "INDEX_MASK_FROM",
    "ACCUMULATES",
    "ACCUMULATING_UPDATE",
    "PLAIN_STEP",
    "RUNS_ITSELF",
    "DETACHED_FROM",
    "WEIGHTS_NAME",
    "MODEL_WRAPPERS",
    "lazy_compile",
    "records_nothing",
    "runs_without_gradients",
    "turns_recording_off",
    "call_name",
    "attribute_values",
    "is_name",
    "is_self_attribute",
    "makes_generator",
    "may_be_called",
    "module_function_calls",
    "methods_defined_once",
    "moves_itself",
    "constant_range",
    "dotted_name",
    "root_name",
    "is_parameter",
    "unrebound_parameter",
    "parameter_default",
    "passed_by_every_call",
    "extra_keywords_of_every_call",
    "bound_only_to",
    "constant_default_kept",
    "constructed_with",
    "MODULE_MOVES",
    "left_none_by_every_call",
    "imported_roots",
    "started_with",
    "passed_values",
    "read_as_tensor",
    "keeps_itself",
    "hands_back",
    "returned_values",
    "parameter_free_module",
    "weightless_module",
    "HOOKS",
    "MODULE_SELF_METHODS",
    "unwrap_self_methods",
    "TORCH_STAR_EXPORTS",
    "VARIABLE_QUALNAMES",
    "ROLES",
    "ROLE_CONTRACTS",
    "BlockKey",
    "CheckpointCheck",
    "Clue",
    "Context",
    "Edit",
    "ErrorCheck",
    "FileIndex",
    "Finding",
    "Fix",
    "Kind",
    "Monitor",
    "NativeScan",
    "Pitfall",
    "SourceRepair",
    "StaticCheck",
    "Text",
    "UnparsableSource",
    "UnreadableSource",
    "assigned_before",
    "backward_without_gradient",
    "built_from",
    "bindings",
    "import_rebound_before",
    "import_replaced",
    "block_names",
    "bound_between",
    "children",
    "computes_a_loss",
    "builds_a_loss_module",
    "expects_an_error",
    "dtypes",
    "first_in_walk",
    "from_project_class",
    "holds_marker",
    "MODE_WORDS",
    "SETS_A_MODE_WORDS",
    "SCHEDULE_ENDINGS",
    "SCHEDULE_REACHES",
    "index",
    "in_compat_fallback",
    "index_of",
    "name_words",
    "names_a_model",
    "names_assigned",
    "names_assigned_calls_of",
    "only_identified",
    "nested_statements",
    "per_file",
    "file_of_tests",
    "pick",
    "plain_assignments",
    "assignments",
    "reaching_assignment",
    "binds_in_header",
    "scope_of",
    "shorten",
    "assigned_name",
    "tensor_methods",
    "runs_as_script",
    "tensor_rank",
    "tensor_type",
    "lineage",
    "in_other_branches",
    "argument",
    "keyword_value",
    "split_lines",
    "state_dicts",
    "statements",
    "subtree",
    "subtree_parents",
    "top_level_classes",
    "top_level_functions",
    "weights_only",
    *_ON_FIRST_USE,
]
