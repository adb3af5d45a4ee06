"""Explain: from a PyTorch error (text or live exception) to its ranked causes and fixes.

`torchdoctor.explain` is both this package and the public function: calling the package
explains (see api.explain), and `import torchdoctor.explain.parse` keeps working.
"""
import sys
import types


class _CallablePackage(types.ModuleType):
    def __call__(self, error, lang=None) -> dict:
        """Explain a live exception or the text of a traceback/log:
        `{"findings": [...ranked causes...], "error": {...what was parsed...}}`. Never raises."""
        from torchdoctor.explain.api import explain

        return explain(error, lang)


sys.modules[__name__].__class__ = _CallablePackage
