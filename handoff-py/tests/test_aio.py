"""handoff_core.aio: the same store as coroutines."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import handoff_core as hc
from handoff_core import aio

from conftest import deadlock_watchdog, write_lock_held


def test_lifecycle_as_coroutines(tmp_path: Path) -> None:
    async def main() -> None:
        async with await aio.open(tmp_path / "a.db") as store:
            h = await store.create("t", "g", from_agent="a", to_agent="b", metadata={"x": [1]})
            assert (await store.get(h.id)) == h
            claim = await store.claim(h.id, "b", lease_seconds=5)
            assert (await store.heartbeat(claim)).status == "claimed"
            assert (await store.release(claim, "later")).status == "pending"
            claim2 = await store.claim_next("b")
            assert claim2 is not None
            assert (await store.fail(claim2, "broke")).status == "pending"
            claim3 = await store.claim_next("b")
            assert claim3 is not None
            assert (await store.complete(claim3, "ok")).outcome == "ok"
            assert [e.kind for e in await store.events(h.id)] == [
                "created", "claimed", "heartbeat", "released", "claimed", "attempt_failed",
                "claimed", "completed"]
            assert str(await store.chain("t")) == "a → b"
            assert len(await store.list(status="completed")) == 1
            other = await store.create("t2", "g2", to_agent="c")
            assert (await store.reject(other.id, "c", "no")).status == "rejected"
            third = await store.create("t3", "g3")
            assert (await store.cancel(third.id, "boss")).status == "cancelled"
            cp = await store.checkpoint("t", "b", goal="g", progress="p")
            assert cp.kind == "checkpoint"
            assert await store.stalled(3600) == []
            assert await store.reap() == 0
            assert len(await store.create_many([{"task_id": "m", "goal": "g"}])) == 1
            assert isinstance(store.sync, hc.Store)
            assert store.now().tzinfo is not None
        assert store.closed

    with deadlock_watchdog():
        asyncio.run(main())


def test_errors_are_the_same_exceptions() -> None:
    async def main() -> None:
        store = aio.Store.memory()
        with pytest.raises(hc.NotFound):
            await store.get("nope")
        with pytest.raises(hc.ValidationError):
            await store.create("t", "")

    with deadlock_watchdog():
        asyncio.run(main())


def test_event_loop_runs_while_a_call_waits(tmp_path: Path) -> None:
    path = tmp_path / "loop.db"
    hc.open(path).close()

    async def main() -> None:
        store = await aio.open(path, lock_patience_seconds=20)
        with write_lock_held(path):
            task = asyncio.ensure_future(store.create("t", "waits for the lock"))
            steps = 0
            for _ in range(50):
                await asyncio.sleep(0)
                steps += 1
            # The loop kept going while the call waits for the lock.
            assert steps == 50 and not task.done()
        h = await task
        assert h.goal == "waits for the lock"

    with deadlock_watchdog():
        asyncio.run(main())


@pytest.mark.parametrize("call", ["claim", "claim_next"])
def test_a_claim_its_cancelled_task_never_received_is_released(tmp_path: Path, call: str) -> None:
    """Cancelling the task leaves the worker thread to finish its call; the claim it then makes
    would be held by nobody until its lease lapsed. It is given back instead."""
    path = tmp_path / "cancel.db"
    with hc.open(path) as sync:
        h = sync.create("t", "wanted once", to_agent="w")

    async def main() -> None:
        store = await aio.open(path, lock_patience_seconds=30)
        with write_lock_held(path):
            # The call waits for the write lock another process holds: cancelled meanwhile.
            task: asyncio.Future[Any]
            if call == "claim":
                task = asyncio.ensure_future(store.claim(h.id, "w", lease_seconds=3600))
            else:
                task = asyncio.ensure_future(store.claim_next("w", lease_seconds=3600))
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        # The thread now claims, finds nobody waiting, and releases (30 s, within the watchdog's
        # minute, to see it happen).
        for _ in range(300):
            kinds = [e.kind for e in await store.events(h.id)]
            if "released" in kinds:
                break
            await asyncio.sleep(0.1)
        assert kinds == ["created", "claimed", "released"]
        again = await store.claim_next("w")
        assert again is not None and again.handoff_id == h.id
        store.close()

    with deadlock_watchdog():
        asyncio.run(main())


def test_a_cancelled_waiting_claim_stops_waiting(tmp_path: Path) -> None:
    """A worker's `claim_next(wait_seconds=...)` cancelled (a shutdown, `asyncio.wait_for`)
    stops waiting: work created afterwards is left for the next worker, not claimed by a
    thread nobody listens to."""
    path = tmp_path / "wait.db"

    async def main() -> None:
        store = await aio.open(path)
        waiting = asyncio.ensure_future(store.claim_next("w", wait_seconds=60))
        await asyncio.sleep(0.3)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        # Eight slices' time for the thread to see the cancellation; without it, the thread
        # waits out its minute and claims what comes.
        await asyncio.sleep(2)
        h = await store.create("t", "arrives after the worker left", to_agent="w")
        await asyncio.sleep(1)
        assert [e.kind for e in await store.events(h.id)] == ["created"]
        store.close()

    with deadlock_watchdog():
        asyncio.run(main())
