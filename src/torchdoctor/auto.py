"""`import torchdoctor.auto`: explain this program's uncaught exceptions (same as install())."""

from torchdoctor.explain.hooks import install

install()
