"""``with store.lease(claim):`` (issue #19): heartbeats from the core's own thread while the
block runs, completes on success, fails on an exception (which propagates as it is), says when
the claim is gone; and the same with ``async with`` in ``hc.aio``."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta, timezone

import pytest

import handoff_core as hc

LEASE = timedelta(milliseconds=30)


def until(done: object) -> None:
    """Waits (a minute at most: a liveness bound, not a timing claim) until ``done()``."""
    deadline = time.monotonic() + 60
    while not done():  # type: ignore[operator]
        assert time.monotonic() < deadline, "gave up waiting"
        time.sleep(0.005)


def beats(store: hc.Store, handoff_id: str) -> int:
    return sum(1 for e in store.events(handoff_id) if e.kind == "heartbeat")


def still_store() -> hc.Store:
    """A store whose clock stands still, so that no lease lapses while a test waits."""
    return hc.Store.memory(clock=hc.ManualClock(datetime(2026, 1, 1, tzinfo=timezone.utc)))


def test_a_block_heartbeats_and_completes_with_its_outcome() -> None:
    store = still_store()
    h = store.create("t1", "Port the billing service")
    with store.lease(store.claim(h.id, "gemini", lease_seconds=LEASE)) as lease:
        until(lambda: beats(store, h.id) >= 2)
        assert not lease.lost and not lease.settled
        lease.outcome = "ported"
    assert lease.settled
    done = store.get(h.id)
    assert (done.status, done.outcome) == ("completed", "ported")
    after = beats(store, h.id)
    time.sleep(0.1)
    assert beats(store, h.id) == after, "no heartbeat after the block"


def test_an_exception_fails_the_claim_and_propagates() -> None:
    store = still_store()
    h = store.create("t1", "Port the billing service")

    class Broke(Exception):
        pass

    with pytest.raises(Broke, match="refunds round wrongly"):
        with store.lease(store.claim(h.id, "gemini", lease_seconds=LEASE)):
            raise Broke("refunds round wrongly")
    back = store.get(h.id)
    assert (back.status, back.attempts) == ("pending", 1)
    assert store.events(h.id)[-1].detail["error"] == "Broke: refunds round wrongly"


def test_a_lease_knows_its_claim_is_gone_and_settles_once() -> None:
    store = still_store()
    h = store.create("t1", "work", from_agent="boss")
    with pytest.raises(hc.LeaseLost):
        with store.lease(store.claim(h.id, "gemini", lease_seconds=LEASE)) as lease:
            store.cancel(h.id, "boss")
            until(lambda: lease.lost)
    h = store.create("t1", "more work")
    lease = store.lease(store.claim(h.id, "gemini", lease_seconds=LEASE))
    assert lease.complete("done").status == "completed"
    with pytest.raises(hc.ValidationError) as err:
        lease.fail("again")
    assert err.value.problems[0][0] == "lease"
    with pytest.raises(hc.ValidationError):
        store.lease({"handoff_id": h.id, "token": 1, "secret": "no"})  # type: ignore[arg-type]


def test_aio_holds_a_lease_with_async_with() -> None:
    async def main() -> None:
        async with hc.aio.Store.memory(clock=hc.ManualClock(datetime(2026, 1, 1, tzinfo=timezone.utc))) as store:
            h = await store.create("t1", "work")
            claim = await store.claim(h.id, "gemini", lease_seconds=LEASE)
            async with store.lease(claim) as lease:
                while sum(1 for e in await store.events(h.id) if e.kind == "heartbeat") < 2:
                    await asyncio.sleep(0.005)
                lease.outcome = "done"
            assert (await store.get(h.id)).outcome == "done"
            h = await store.create("t1", "more")
            with pytest.raises(KeyError):
                async with store.lease(await store.claim(h.id, "gemini", lease_seconds=LEASE)):
                    raise KeyError("missing")
            assert (await store.get(h.id)).status == "pending"

    asyncio.run(main())
