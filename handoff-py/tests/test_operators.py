"""The operators' operations from Python, plain and ``hc.aio``: priorities that ``claim_next``
follows, retrying a dead handoff, revoking a claim, and progress reported with heartbeats
(by hand or through a lease)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import handoff_core as hc


def test_claim_next_takes_the_highest_priority_first_then_the_oldest(clock_store: tuple[hc.ManualClock, hc.Store]) -> None:
    _, store = clock_store
    low = store.create("t", "low")
    urgent = store.create("t", "urgent", priority=10)
    normal = store.create("t", "normal", priority=5)
    also_urgent = store.create("t", "also urgent", priority=10)
    assert (low.priority, urgent.priority) == (0, 10)
    taken = [store.claim_next("worker") for _ in range(4)]
    assert [c.handoff_id for c in taken if c] == [urgent.id, also_urgent.id, normal.id, low.id]


def test_set_priority_moves_a_pending_handoff_up_the_queue(clock_store: tuple[hc.ManualClock, hc.Store]) -> None:
    _, store = clock_store
    first = store.create("t", "first")
    later = store.create("t", "later")
    raised = store.set_priority(later.id, 3, "ops")
    assert raised.priority == 3 and store.get(later.id).priority == 3
    assert store.events(later.id)[-1].kind == "priority_changed"
    claim = store.claim_next("worker")
    assert claim is not None and claim.handoff_id == later.id
    assert store.claim_next("worker").handoff_id == first.id  # type: ignore[union-attr]
    done = store.create("t", "done")
    store.complete(store.claim(done.id, "w"), outcome="ok")
    with pytest.raises(hc.InvalidTransition):
        store.set_priority(done.id, 1, "ops")


def test_retry_puts_a_dead_handoff_back_and_a_worker_completes_it(clock_store: tuple[hc.ManualClock, hc.Store]) -> None:
    _, store = clock_store
    h = store.create("t", "flaky", max_attempts=1)
    dead = store.fail(store.claim(h.id, "w"), "boom")
    assert (dead.status, dead.attempts) == ("failed", 1)
    back = store.retry(h.id, "ops", reason="the ledger is back")
    assert (back.status, back.attempts) == ("pending", 0)
    retried = store.events(h.id)[-1]
    assert retried.kind == "retried" and retried.actor == "ops"
    assert store.complete(store.claim(h.id, "w"), outcome="done").status == "completed"
    with pytest.raises(hc.InvalidTransition):
        store.retry(h.id, "ops")


def test_revoke_claim_takes_a_claim_away_and_its_token_stops_working(clock_store: tuple[hc.ManualClock, hc.Store]) -> None:
    _, store = clock_store
    h = store.create("t", "stuck")
    claim = store.claim(h.id, "w")
    back = store.revoke_claim(h.id, "ops", "the worker hangs")
    assert (back.status, back.attempts) == ("pending", 1)
    assert store.events(h.id)[-1].kind == "revoked"
    with pytest.raises(hc.LeaseLost):
        store.complete(claim, outcome="late")
    with pytest.raises(hc.ValidationError):
        store.revoke_claim(h.id, "ops", "")


def test_heartbeat_progress_is_kept_on_the_record_and_in_the_event(clock_store: tuple[hc.ManualClock, hc.Store]) -> None:
    _, store = clock_store
    h = store.create("t", "long job")
    claim = store.claim(h.id, "w")
    beat = store.heartbeat(claim, progress={"done": 3, "of": 10})
    assert beat.progress == {"done": 3, "of": 10}
    assert store.get(h.id).progress == {"done": 3, "of": 10}
    assert store.events(h.id)[-1].detail.get("progress") == {"done": 3, "of": 10}
    assert store.heartbeat(claim).progress == {"done": 3, "of": 10}, "a bare heartbeat keeps it"
    with pytest.raises(hc.ValidationError, match="progress"):
        store.heartbeat(claim, progress="x" * 5000)


def test_a_lease_reports_progress_that_its_own_heartbeats_keep() -> None:
    store = hc.Store.memory()
    h = store.create("t", "long job")
    with store.lease(store.claim(h.id, "w", lease_seconds=0.05)) as lease:
        assert lease.progress({"step": "download", "pct": 40}).progress == {"step": "download", "pct": 40}
        # A few of the lease's own heartbeats (every third of 50 ms) go by meanwhile.
        before = len(store.events(h.id))
        while len(store.events(h.id)) < before + 2:
            pass
        assert store.get(h.id).progress == {"step": "download", "pct": 40}
        with pytest.raises(hc.ValidationError, match="progress"):
            lease.progress({"blob": "x" * 5000})
        with pytest.raises(hc.ValidationError):
            lease.progress(object())
        lease.outcome = "done"
    assert store.get(h.id).status == "completed"
    with pytest.raises(hc.ValidationError, match="lease"):
        lease.progress({"late": True})


def test_a_lease_whose_claim_was_revoked_says_so_when_reporting() -> None:
    store = hc.Store.memory()
    h = store.create("t", "job")
    lease = store.lease(store.claim(h.id, "w"))
    store.revoke_claim(h.id, "ops", "reassigned")
    with pytest.raises(hc.LeaseLost):
        lease.progress({"pct": 90})
    assert lease.lost


def test_the_same_from_aio() -> None:
    async def scenario() -> dict[str, Any]:
        store = hc.aio.Store.memory()
        low = await store.create("t", "low")
        high = await store.create("t", "high", priority=2)
        claim = await store.claim_next("w")
        assert claim is not None and claim.handoff_id == high.id
        await store.heartbeat(claim, progress={"pct": 10})
        async with store.lease(claim) as lease:
            await lease.progress({"pct": 50})
            assert (await store.get(high.id)).progress == {"pct": 50}
            lease.outcome = "done"
        assert (await store.set_priority(low.id, 7, "ops")).priority == 7
        held = await store.claim(low.id, "w")
        assert (await store.revoke_claim(low.id, "ops", "stuck")).status == "pending"
        with pytest.raises(hc.LeaseLost):
            await store.heartbeat(held)
        dead = await store.create("t", "dead", max_attempts=1)
        await store.fail(await store.claim(dead.id, "w"), "boom")
        back = await store.retry(dead.id, "ops", reason="fixed")
        return {"status": back.status, "attempts": back.attempts, "done": (await store.get(high.id)).status}

    assert asyncio.run(scenario()) == {"status": "pending", "attempts": 0, "done": "completed"}
