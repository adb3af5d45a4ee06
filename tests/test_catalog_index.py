"""The generated index (catalog/_index.py) is the catalog: the entries `get` finds and the
signatures `explain` reads through it are the catalog's own, and a stale index is not used."""

from __future__ import annotations

import subprocess
import sys

import pytest

from torchdoctor.catalog import _index, _registry
from torchdoctor.catalog._registry import all_pitfalls, catalog_index, error_signatures, get

REGENERATE = "the index is stale: run `python scripts/generate_catalog_index.py`"


def test_the_index_is_the_catalog():
    assert (
        _index.MODULES,
        _index.ENTRIES,
        _index.SIGNATURES,
        _index.DEFAULT_CODES,
        _index.NEIGHBOUR_READERS,
    ) == catalog_index(), REGENERATE


def test_explain_reads_every_signature_of_the_catalog_in_its_order():
    expected = [(p, s) for p in all_pitfalls() for s in p.error_signatures]
    indexed = error_signatures()
    assert [i.load() for i in indexed] == expected
    for item, (pitfall, signature) in zip(indexed, expected):
        assert (item.name, item.module) == (pitfall.name, pitfall.module)
        assert (item.types, item.regex, item.literals) == (
            signature.types,
            signature.regex,
            signature.literals,
        )


def test_get_finds_every_entry_by_code_and_name():
    for pitfall in all_pitfalls():
        assert get(pitfall.code) is pitfall
        assert get(f" {pitfall.code.lower()} ") is pitfall
        assert get(pitfall.name) is pitfall
    assert get("TD999") is None and get("no-such-pitfall") is None


@pytest.fixture
def stale_index(monkeypatch):
    """An index that misses an entry file, as after a merge that added one."""
    caches = (_registry._index_is_current, _registry._modules_by_key, error_signatures)
    for cache in caches:
        cache.cache_clear()
    monkeypatch.setattr(_index, "MODULES", _index.MODULES[1:])
    monkeypatch.setattr(_index, "ENTRIES", ())
    monkeypatch.setattr(_index, "SIGNATURES", ())
    yield
    for cache in caches:
        cache.cache_clear()


def test_a_stale_index_is_not_used(stale_index):
    assert not _registry._index_is_current()
    assert len(error_signatures()) == sum(len(p.error_signatures) for p in all_pitfalls())
    assert get(all_pitfalls()[0].code) is all_pitfalls()[0]


PROBE = """
import sys
from torchdoctor.explain.api import explain
found = explain(sys.stdin.read(), "en")["findings"]
entries = [m for m in sys.modules if m.startswith("torchdoctor.catalog.") and ".td" in m]
print(found[0]["name"], len(entries))
"""

TRACEBACK = """Traceback (most recent call last):
  File "train.py", line 9, in <module>
    loss.backward()
RuntimeError: Trying to backward through the graph a second time (or directly access saved \
tensors after they have already been freed).
"""


def test_explain_imports_only_the_entries_it_needs():
    """A fresh process: the entries whose function signatures read a RuntimeError, and the one
    whose regex matched; not the whole catalog (its import was most of explain's start-up)."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE], input=TRACEBACK, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    name, imported = result.stdout.split()
    assert name == "backward-through-graph-twice"
    functions = {i.module for i in error_signatures() if i.regex is None}
    assert int(imported) <= len(functions) + 1 < len(all_pitfalls())
