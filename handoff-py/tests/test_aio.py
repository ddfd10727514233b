"""handoff_core.aio: the same store as coroutines."""

from __future__ import annotations

import asyncio
from pathlib import Path

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
