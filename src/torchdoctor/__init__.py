"""torchdoctor: catches the mistakes PyTorch users make again and again.

The public API: `check`, `explain`, `install`, `watch`, `load_state_dict` (with `LoadResult` and
`CheckpointMismatchError`), and the IPython extension hooks. Importing it never imports torch.
"""

__version__ = "0.1.0"

# The engine packages `torchdoctor.explain` and `torchdoctor.watch` are imported first, so that
# the functions of the same name defined below are what the names mean from then on (Python
# binds a subpackage to its parent's name only when it first imports it). Inside the package,
# import engine modules with `from torchdoctor.explain.parse import ...`, never as attributes.
from torchdoctor import explain as _explain_engine, watch as _watch_engine  # noqa: E402,F401

# The rest is imported on first use (PEP 562): `import torchdoctor` stays light.
_LAZY = {
    "check": "torchdoctor.lint.api",
    "IncompleteCheck": "torchdoctor.errors",
    "load_state_dict": "torchdoctor.ckpt.api",
    "LoadResult": "torchdoctor.ckpt.api",
    "CheckpointMismatchError": "torchdoctor.ckpt.api",
}

__all__ = [
    "__version__",
    "check",
    "explain",
    "install",
    "watch",
    "load_ipython_extension",
    "unload_ipython_extension",
    "load_state_dict",
    "LoadResult",
    "CheckpointMismatchError",
    "IncompleteCheck",
]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'torchdoctor' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_LAZY[name]), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def explain(error, lang: str | None = None) -> dict:
    """Explain a live exception or the text of a traceback or log (bytes are read as UTF-8):
    `{"findings": [...ranked causes...], "error": {...what was parsed...}}`. Never raises."""
    from torchdoctor.explain.api import explain as _explain

    return _explain(error, lang)


def watch(
    *objects,
    select=None,
    ignore=None,
    lang: str | None = None,
    report_json: str | None = None,
    report_html: str | None = None,
    summary: bool = True,
    live: bool = True,
):
    """Watch training from now on: `with torchdoctor.watch(): ...`, or
    `torchdoctor.watch(model, optimizer)` (stops at exit, or with `.stop()`).

    `select`/`ignore`: rule codes, prefixes, names or ALL, as for `check`; without `select`,
    the default-on monitors run. `live`: print each finding when it happens (stderr);
    `summary`: print a summary when the watch stops. `report_json`/`report_html`: files
    written when it stops."""
    from torchdoctor.watch.watcher import watch as _watch

    return _watch(
        *objects,
        select=select,
        ignore=ignore,
        lang=lang,
        report_json=report_json,
        report_html=report_html,
        summary=summary,
        live=live,
    )


def install(lang: str | None = None) -> None:
    """Explain the uncaught exceptions of this program after their normal traceback."""
    from torchdoctor.explain.hooks import install as _install

    _install(lang)


def load_ipython_extension(shell) -> None:
    """`%load_ext torchdoctor`: explain exceptions raised in notebook cells."""
    from torchdoctor.explain.hooks import load_ipython_extension as _load

    _load(shell)


def unload_ipython_extension(shell) -> None:
    """`%unload_ext torchdoctor`: stop explaining them."""
    from torchdoctor.explain.hooks import unload_ipython_extension as _unload

    _unload(shell)
