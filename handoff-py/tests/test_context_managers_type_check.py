"""`with store.lease(...)` and `with hc.open(...)` let an exception through (their `__exit__`
returns `None`), so a function that returns inside the block type-checks under `mypy --strict`
(which runs over this file in `make test`) and the exception still propagates at run time."""

from __future__ import annotations

import pytest

import handoff_core as hc
from handoff_core import aio


def finish(store: hc.Store, claim: hc.Claim) -> str:
    with store.lease(claim) as lease:
        return lease.complete("done").id


def count(path: str) -> int:
    with hc.open(path) as store:
        return len(store.list())


async def finish_async(store: aio.Store, claim: hc.Claim) -> str:
    async with store.lease(claim) as lease:
        return (await lease.complete("done")).id


def test_returning_inside_the_block_settles_and_closes(tmp_path: object) -> None:
    store = hc.open(f"{tmp_path}/h.db")
    created = store.create("t1", "goal")
    claim = store.claim(created.id, "a")
    assert finish(store, claim) == created.id
    assert count(f"{tmp_path}/h.db") == 1


def test_an_exception_inside_the_block_propagates(tmp_path: object) -> None:
    store = hc.open(f"{tmp_path}/h.db")
    claim = store.claim(store.create("t1", "goal").id, "a")
    with pytest.raises(RuntimeError):
        with store.lease(claim):
            raise RuntimeError("the work broke")
    assert store.get(claim.handoff_id).status == "pending"  # failed back to the queue
