"""torchdoctor._regex.lazy_compile: a pattern compiled on first use answers as the compiled one."""

from __future__ import annotations

import copy
import re

from torchdoctor._regex import LazyPattern, lazy_compile
from torchdoctor.explain.model import ErrorReport


def test_answers_as_the_compiled_pattern():
    lazy, compiled = (
        lazy_compile(r"(?P<n>\d+) (tensors?)", re.I),
        re.compile(r"(?P<n>\d+) (tensors?)", re.I),
    )
    assert isinstance(lazy, LazyPattern)
    for name in ("pattern", "flags", "groups", "groupindex"):
        assert getattr(lazy, name) == getattr(compiled, name)
    text = "found 2 Tensors and 3 tensor"
    assert lazy.search(text).group("n") == compiled.search(text).group("n")
    assert lazy.findall(text) == compiled.findall(text)
    assert lazy.sub("N", text) == compiled.sub("N", text)
    assert lazy.match(text) is None and copy.copy(lazy).search(text) is not None


def test_compiled_once_and_only_when_used():
    lazy = lazy_compile(r"a+")
    assert lazy._compiled is None
    assert lazy.search is lazy.search  # kept: later reads are plain attribute reads
    assert lazy._compiled is not None


def test_an_error_report_searches_with_one():
    report = ErrorReport(text="CUDA out of memory")
    assert report.search(lazy_compile(r"out of (\w+)")).group(1) == "memory"
