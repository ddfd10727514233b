"""Exactly one winner across processes; the GIL is released inside store calls."""

from __future__ import annotations

import multiprocessing as mp
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import handoff_core as hc

from conftest import deadlock_watchdog, write_lock_held

PROCESSES = 8
HANDOFFS = 2000


def _race_worker(path: str, agent: str, barrier: Any, results: Any) -> None:
    claimed = []
    with hc.open(path, synchronous="normal") as store:
        barrier.wait()
        while (claim := store.claim_next(agent, lease_seconds=600)) is not None:
            store.complete(claim, outcome=agent)
            claimed.append(claim.handoff_id)
    results.put((agent, claimed))


def test_multiprocess_race_each_handoff_claimed_exactly_once(tmp_path: Path) -> None:
    path = str(tmp_path / "race.db")
    with hc.open(path, synchronous="normal") as store:
        made = store.create_many([{"task_id": f"task-{i}", "goal": f"job {i}"} for i in range(HANDOFFS)])
    ids = {h.id for h in made}
    assert len(ids) == HANDOFFS

    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    results = ctx.Queue()
    procs = [ctx.Process(target=_race_worker, args=(path, f"w{i}", barrier, results)) for i in range(PROCESSES)]
    for p in procs:
        p.start()
    reports = [results.get(timeout=600) for _ in procs]  # the timeout only turns a hang into a failure
    for p in procs:
        p.join()
        assert p.exitcode == 0

    counts = Counter(hid for _, claimed in reports for hid in claimed)
    assert set(counts) == ids
    assert max(counts.values()) == 1  # nobody claimed a handoff another process had
    with hc.open(path) as store:
        by_agent = {hid: agent for agent, claimed in reports for hid in claimed}
        for h in store.list():
            assert h.status == "completed" and h.claim_token == 1
            assert h.claimed_by == by_agent[h.id] == h.outcome
        claims = Counter(e.handoff_id for e in store.events() if e.kind == "claimed")
        assert set(claims) == ids and set(claims.values()) == {1}


def test_threads_race_each_handoff_claimed_exactly_once() -> None:
    store = hc.Store.memory()
    ids = {h.id for h in store.create_many([{"task_id": f"t{i}", "goal": str(i)} for i in range(400)])}
    won: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        while (claim := store.claim_next("w")) is not None:
            store.complete(claim)
            with lock:
                won.append(claim.handoff_id)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(won) == sorted(ids)


def test_a_thread_runs_while_four_others_are_inside_store_calls(tmp_path: Path) -> None:
    """Four threads block inside `store.create` (another connection holds SQLite's write lock).
    A fifth thread must still run Python code meanwhile, which it can only do if the blocked
    calls released the GIL. If they did not, nothing could run until the core gave up waiting
    for the lock, so a watchdog ends the run instead of letting it hang."""
    with deadlock_watchdog():
        run_four_blocked_and_one_running(tmp_path)


def run_four_blocked_and_one_running(tmp_path: Path) -> None:
    path = tmp_path / "gil.db"
    store = hc.open(path, lock_patience_seconds=20)
    lock = write_lock_held(path)
    lock.__enter__()

    workers = 4
    entered = [threading.Event() for _ in range(workers)]
    returned = [threading.Event() for _ in range(workers)]
    outcomes: list[Any] = [None] * workers

    def worker(i: int) -> None:
        def profile(frame: Any, event: str, arg: Any) -> None:
            # Fires just before the native method runs, in this thread, holding the GIL.
            if event == "c_call" and getattr(arg, "__self__", None) is store:
                entered[i].set()

        sys.setprofile(profile)
        try:
            outcomes[i] = store.create(f"task-{i}", "blocked until the lock is free")
        except BaseException as err:  # noqa: BLE001 - reported below
            outcomes[i] = err
        finally:
            sys.setprofile(None)
            returned[i].set()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for e in entered:
        assert e.wait(timeout=60)

    ticks = 0
    def ticker() -> None:
        nonlocal ticks
        for _ in range(100_000):
            ticks += 1

    tick_thread = threading.Thread(target=ticker)
    tick_thread.start()
    tick_thread.join()
    still_inside = [not r.is_set() for r in returned]
    lock.__exit__(None, None, None)
    for t in threads:
        t.join()
    store.close()

    assert ticks == 100_000
    assert still_inside == [True] * workers, "every worker was still inside its store call"
    assert all(isinstance(o, hc.Handoff) for o in outcomes), outcomes
