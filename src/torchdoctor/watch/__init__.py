"""Watch: runtime diagnosis of training, with hooks, without changing what the run computes.

`torchdoctor.watch` is both this package and the public function (see watcher.watch):
`with torchdoctor.watch(): ...` or `torchdoctor.watch(model, optimizer)`; and
`import torchdoctor.watch.monitor` keeps working. Importing it does not import torch.
"""
import sys
import types


class _CallablePackage(types.ModuleType):
    def __call__(self, *objects, **options):
        """Start watching (see watch.watcher.watch); use as a context manager or call `.stop()`."""
        from torchdoctor.watch.watcher import watch

        return watch(*objects, **options)


sys.modules[__name__].__class__ = _CallablePackage
