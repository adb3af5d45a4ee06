"""Explain: from a PyTorch error (text or live exception) to its ranked causes and fixes.

The public function is `torchdoctor.explain` (defined in torchdoctor/__init__.py, see api.explain).
"""
