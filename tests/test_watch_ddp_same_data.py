"""ddp-loader-without-distributed-sampler at run time, on synthetic events: each rank's
digest of its first batch goes to a store (a fake one here, shared by two sessions playing two
ranks), and a rank whose digest equals another's reports. End to end under torchrun:
tests/fixtures/watch/ddp_loader_without_distributed_sampler.py (and its fixed twin), run by
test_watch_fixtures.py."""

from __future__ import annotations

import pytest
from conftest import import_torch

torch = import_torch()
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, IterableDataset, TensorDataset  # noqa: E402
from torch.utils.data.distributed import DistributedSampler  # noqa: E402

from torchdoctor.catalog import get  # noqa: E402
from torchdoctor.catalog.distributed import td607_ddp_loader_without_distributed_sampler as td607  # noqa: E402
from torchdoctor.watch.session import Session  # noqa: E402


class FakeStore:
    """The part of a c10d store the monitor uses, counting the calls."""

    def __init__(self, fail: bool = False) -> None:
        self.data: dict[str, bytes] = {}
        self.checks = 0
        self.gets = 0
        self.fail = fail

    def set(self, key: str, value: bytes) -> None:
        if self.fail:
            raise RuntimeError("store gone")
        self.data[key] = value

    def check(self, keys: list[str]) -> bool:
        self.checks += 1
        return all(key in self.data for key in keys)

    def get(self, key: str) -> bytes:
        self.gets += 1
        return self.data[key]


def _session():
    pitfall = get("ddp-loader-without-distributed-sampler")
    return Session([(pitfall, cls) for cls in pitfall.monitors], live=False, metrics=False)


def _first_batch(session, loader):
    """The events of `for batch in loader:` up to its first batch."""
    session.dataloader_iter(loader)
    iterator = iter(loader)
    session.dataloader_iterator(loader, iterator)
    batch = next(iterator)
    session.first_batch(iterator, batch)
    return batch


def _rank(monkeypatch, store, rank, world=2):
    monkeypatch.setattr(td607, "_group", lambda: (store, rank, world))


def _dataset(seed=0):
    generator = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randn(32, 4, generator=generator), torch.arange(32))


def _steps(session, steps):
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        session.step_pre_hook(optimizer, (), {})
        session.step_post_hook(optimizer, (), {})


def _two_ranks(monkeypatch, loaders, store=None, steps=1):
    """Two sessions, rank 0 and rank 1, each taking the first batch of its loader, then
    `steps` optimizer steps each; their findings."""
    store = store or FakeStore()
    sessions = [_session(), _session()]
    for rank, (session, loader) in enumerate(zip(sessions, loaders)):
        _rank(monkeypatch, store, rank)
        session.start()
        _first_batch(session, loader)
    for rank, session in enumerate(sessions):
        _rank(monkeypatch, store, rank)
        _steps(session, steps)
        session.finish()
        assert session.internal_errors == []
    return [session.findings for session in sessions], store


def test_identical_first_batches_are_reported_on_every_rank(monkeypatch):
    dataset = _dataset()
    loaders = [DataLoader(dataset, batch_size=8), DataLoader(dataset, batch_size=8)]
    (zero, one), _ = _two_ranks(monkeypatch, loaders)
    assert (
        [f.name for f in zero]
        == [f.name for f in one]
        == ["ddp-loader-without-distributed-sampler"]
    )
    assert "rank 0's first batch from this DataLoader (TensorDataset" in zero[0].message
    assert "is identical to rank 1's" in zero[0].message
    assert "sampler=DistributedSampler(dataset)" in one[0].message


def test_different_first_batches_are_not(monkeypatch):
    loaders = [DataLoader(_dataset(0), batch_size=8), DataLoader(_dataset(1), batch_size=8)]
    (zero, one), store = _two_ranks(monkeypatch, loaders)
    assert zero == one == [] and store.gets == 2  # compared, and found different


@pytest.mark.parametrize(
    "loader",
    [
        lambda d: DataLoader(
            d, batch_size=8, sampler=DistributedSampler(d, num_replicas=2, rank=0)
        ),
        lambda d: DataLoader(
            d,
            batch_sampler=torch.utils.data.BatchSampler(
                DistributedSampler(d, num_replicas=2, rank=0), 8, False
            ),
        ),
    ],
    ids=["sampler", "batch-sampler"],
)
def test_a_distributed_sampler_is_not_compared(monkeypatch, loader):
    dataset = _dataset()
    (zero, one), store = _two_ranks(monkeypatch, [loader(dataset), loader(dataset)])
    assert zero == one == [] and store.data == {}


class Stream(IterableDataset):
    def __iter__(self):
        return iter(torch.ones(16, 4))


def test_an_iterable_dataset_and_evaluation_are_not_compared(monkeypatch):
    (zero, _), store = _two_ranks(monkeypatch, [DataLoader(Stream()), DataLoader(Stream())])
    assert zero == [] and store.data == {}
    dataset = _dataset()
    store = FakeStore()
    _rank(monkeypatch, store, 0)
    session = _session()
    session.start()
    with torch.no_grad():  # an evaluation loop
        _first_batch(session, DataLoader(dataset, batch_size=8))
    session.finish()
    assert store.data == {}


def test_one_process_and_a_failing_store_are_silent(monkeypatch):
    session = _session()  # no process group: the real `_group` says so
    session.start()
    _first_batch(session, DataLoader(_dataset(), batch_size=8))
    session.finish()
    assert session.findings == [] and session.internal_errors == []
    loaders = [DataLoader(_dataset(), batch_size=8) for _ in range(2)]
    (zero, one), _ = _two_ranks(monkeypatch, loaders, store=FakeStore(fail=True))
    assert zero == one == []


def test_a_missing_rank_is_asked_for_at_doubling_intervals_never_waited_for(monkeypatch):
    store = FakeStore()
    _rank(monkeypatch, store, 0)
    session = _session()
    session.start()
    _first_batch(session, DataLoader(_dataset(), batch_size=8))
    _steps(session, 100)
    assert store.checks <= 8 and store.gets == 0  # steps 1, 2, 4... 64 (and first batches)
    session.finish()
    assert session.findings == [] and session.internal_errors == []


def test_only_the_first_iteration_is_digested_and_nothing_is_changed(monkeypatch):
    store = FakeStore()
    _rank(monkeypatch, store, 0)
    session = _session()
    session.start()
    loader = DataLoader(_dataset(), batch_size=8, shuffle=True)
    torch.manual_seed(3)
    batch = _first_batch(session, loader)  # watched
    state, copy = torch.get_rng_state(), [t.clone() for t in batch]
    digest = td607.batch_digest(batch)
    assert torch.equal(state, torch.get_rng_state())  # no random number drawn
    assert all(torch.equal(a, b) for a, b in zip(batch, copy))
    torch.manual_seed(3)
    assert torch.equal(next(iter(loader))[1], batch[1])  # unwatched: the same order
    _first_batch(session, loader)  # the second epoch
    session.finish()
    assert (
        list(store.data) == ["torchdoctor/td607/0/0"]
        and store.data["torchdoctor/td607/0/0"] == digest
    )


def test_the_digest_reads_shapes_dtypes_and_values():
    ones = torch.ones(4, 3)
    assert td607.batch_digest([ones]) == td607.batch_digest([ones.clone()])
    assert td607.batch_digest([ones]) != td607.batch_digest([ones.double()])
    assert td607.batch_digest([ones]) != td607.batch_digest([ones.reshape(3, 4)])
    assert td607.batch_digest({"x": ones, "mask": ones.bool()}) is not None
    assert td607.batch_digest(["no tensor"]) is None
    big = torch.zeros(1_000_000)
    assert td607.batch_digest(big) != td607.batch_digest(torch.ones(1_000_000))
