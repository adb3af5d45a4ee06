"""Watch: runtime diagnosis of training, with hooks, without changing what the run computes.

The public function is `torchdoctor.watch` (defined in torchdoctor/__init__.py, see
watcher.watch). Importing this package does not import torch.
"""
