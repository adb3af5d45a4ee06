"""torchdoctor: catches the mistakes PyTorch users make again and again."""

__version__ = "0.1.0"

# `torchdoctor.explain(error)` calls the explain package itself (see explain/__init__.py), so
# that the function and `import torchdoctor.explain.parse` can share the name.
from torchdoctor import explain  # noqa: E402
# `torchdoctor.watch(...)` likewise calls the watch package (watch/__init__.py); no torch import.
from torchdoctor import watch  # noqa: E402

__all__ = ["__version__", "explain", "install", "watch", "load_ipython_extension",
           "unload_ipython_extension", "load_state_dict"]


def install(lang=None) -> None:
    """Explain the uncaught exceptions of this program after their normal traceback."""
    from torchdoctor.explain.hooks import install as _install

    _install(lang)


def load_ipython_extension(shell) -> None:
    """`%load_ext torchdoctor`: explain exceptions raised in notebook cells."""
    from torchdoctor.explain.hooks import load_ipython_extension as _load

    _load(shell)


def unload_ipython_extension(shell) -> None:
    from torchdoctor.explain.hooks import unload_ipython_extension as _unload

    _unload(shell)


def load_state_dict(model, path_or_dict, *, strict=True, **options):
    """Load a checkpoint into `model` after the safe repairs (nesting, `module.`/`_orig_mod.`
    prefixes, `num_batches_tracked`); raises an error listing what still does not fit."""
    from torchdoctor.ckpt.api import load_state_dict as _load

    return _load(model, path_or_dict, strict=strict, **options)
