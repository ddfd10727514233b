"""Racing claimers in threads: exactly one wins each handoff. ctypes releases the GIL during
every call into the library, so the threads really do run at the same time."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import hf, new

THREADS = 8


@pytest.fixture(params=["memory", "sqlite"])
def shared(request: pytest.FixtureRequest, tmp_path) -> hf.Store:
    if request.param == "memory":
        return hf.Store.memory()
    return hf.Store.open(str(tmp_path / "race.db"), hf.OpenOptions(synchronous=hf.Synchronous.NORMAL))


def test_threads_racing_for_one_handoff(shared: hf.Store) -> None:
    for round_ in range(20):
        h = shared.create(new(task_id=f"t{round_}"))
        start = threading.Barrier(THREADS)

        def race(agent: str) -> str:
            start.wait()
            try:
                shared.claim(h.id, agent)
                return "won"
            except hf.HandoffError.AlreadyClaimed:
                return "lost"

        with ThreadPoolExecutor(THREADS) as pool:
            outcomes = Counter(pool.map(race, [f"agent-{i}" for i in range(THREADS)]))
        assert outcomes == {"won": 1, "lost": THREADS - 1}
        assert shared.get(h.id).claim_token == 1


def test_claim_next_workers_take_each_handoff_exactly_once(shared: hf.Store) -> None:
    total = 200
    shared.create_many([new(task_id=f"t{i}") for i in range(total)])
    taken: list[list[str]] = [[] for _ in range(THREADS)]

    def work(worker: int) -> None:
        while (claim := shared.claim_next(f"worker-{worker}")) is not None:
            taken[worker].append(claim.handoff.id)
            shared.complete(claim.reference(), f"done by {worker}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a worker hung"
    ids = [i for worker in taken for i in worker]
    assert len(ids) == total and len(set(ids)) == total
    assert all(h.status == hf.HandoffStatus.COMPLETED for h in shared.list())
    claims = [e for e in shared.events() if e.change.is_CLAIMED()]
    assert len(claims) == total
