"""Operating a store: a stuck writer (Busy), read-only opens, the saved policy, the event log
read in pages."""

from __future__ import annotations

import fcntl
import os
import pickle
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import handoff_core as hc

from conftest import deadlock_watchdog


@contextmanager
def turnstile_held(db: Path) -> Iterator[None]:
    """Holds the writers' lock file (`<db>-lock`) as a stopped or stuck writer would.

    `flock` locks belong to an open file description, so this conflicts with the store's own
    descriptor although both are in this process.
    """
    fd = os.open(f"{db}-lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def test_a_stuck_writer_makes_writes_busy_and_reads_go_on(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with deadlock_watchdog(60), hc.open(db, lock_patience_seconds=0.5) as store:
        h = store.create("t", "before")
        with turnstile_held(db):
            started = time.monotonic()
            with pytest.raises(hc.Busy) as caught:
                store.create("t", "while stuck")
            waited = time.monotonic() - started
            assert waited >= 0.4, waited  # the watchdog bounds it from above
            err = caught.value
            assert isinstance(err, hc.StorageError) and err.code == "BUSY" and err.detail
            assert "busy" in str(err).lower()
            copy = pickle.loads(pickle.dumps(err))
            assert type(copy) is hc.Busy and copy.detail == err.detail
            # Reads never wait for a writer, and neither does opening a current store (one
            # that did would raise Busy after its patience, or hang until the watchdog).
            assert [r.id for r in store.list()] == [h.id]
            assert store.get(h.id) == h
            assert len(store.events()) == 1
            with hc.open(db, lock_patience_seconds=0.5) as other:
                assert other.get(h.id) == h
        # Nothing was changed or damaged: the next write goes through.
        assert store.create("t", "after").goal == "after"
        assert len(store.list()) == 2


def test_busy_is_caught_as_a_storage_error() -> None:
    assert issubclass(hc.Busy, hc.StorageError) and hc.Busy.code == "BUSY"
    assert hc.Busy.__module__ == "handoff_core"


def test_aio_writes_are_busy_too(tmp_path: Path) -> None:
    import asyncio

    db = tmp_path / "h.db"

    async def main() -> None:
        async with await hc.aio.open(db, lock_patience_seconds=0.3) as store:
            await store.create("t", "g")
            with turnstile_held(db):
                with pytest.raises(hc.Busy):
                    await store.create("t", "g2")
                assert len(await store.list()) == 1

    with deadlock_watchdog(60):
        asyncio.run(main())


# Read-only opens: nothing on disk is created or changed.


def test_read_only_refuses_an_empty_file_and_leaves_it_empty(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    with pytest.raises(hc.StorageError) as caught:
        hc.open(empty, read_only=True)
    assert "empty" in str(caught.value)
    assert empty.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]
    missing = tmp_path / "missing.db"
    with pytest.raises(hc.StorageError):
        hc.open(missing, read_only=True)
    assert not missing.exists()


@pytest.fixture
def written(tmp_path: Path) -> tuple[Path, hc.Handoff]:
    db = tmp_path / "h.db"
    with hc.open(db) as store:
        h = store.create("t", "g", from_agent="a", to_agent="b")
        store.claim(h.id, "b")
        h = store.get(h.id)
    return db, h


def test_read_only_reads_and_refuses_writes(written: tuple[Path, hc.Handoff]) -> None:
    db, h = written
    with hc.open(db, read_only=True) as store:
        assert "read-only" in repr(store)
        assert store.get(h.id) == h and store.list() == [h]
        assert [e.kind for e in store.events(h.id)] == ["created", "claimed"]
        assert str(store.chain("t")) == "a → b"
        assert len(store.stats()) == 1
        writes: list[Callable[[], object]] = [
            lambda: store.create("t", "more"),
            lambda: store.claim(store.create("u", "g").id, "x"),
            lambda: store.cancel(h.id, "a"),
            lambda: store.reap(),
            lambda: store.save_policy(),
        ]
        for write in writes:
            with pytest.raises(hc.StorageError) as caught:
                write()
            assert "read-only" in str(caught.value), caught.value
        assert store.list() == [h]


def test_read_only_reads_a_read_only_file(written: tuple[Path, hc.Handoff]) -> None:
    db, h = written
    db.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    try:
        with hc.open(db, read_only=True) as store:
            assert store.list() == [h]
    finally:
        db.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_aio_opens_read_only(written: tuple[Path, hc.Handoff]) -> None:
    import asyncio

    db, h = written

    async def main() -> None:
        async with await hc.aio.open(db, read_only=True) as store:
            assert await store.get(h.id) == h
            with pytest.raises(hc.StorageError, match="read-only"):
                await store.create("t", "g")

    asyncio.run(main())


def test_store_files_are_private(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with hc.open(db) as store:
        store.create("t", "g")
        for path in tmp_path.iterdir():
            assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


# The saved policy: every opener without its own applies it.


def loop(store: hc.Store, task: str) -> None:
    """manager → worker → manager: one revisit."""
    store.create(task, "do it", from_agent="manager", to_agent="worker")
    store.create(task, "check it", from_agent="worker", to_agent="manager")


def test_a_saved_policy_applies_to_openers_without_their_own(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with hc.open(db) as plain:
        assert plain.saved_policy() is None
        with pytest.raises(hc.ChainViolation):
            loop(plain, "t0")
    policy = hc.ChainPolicy(max_handoffs=4, max_revisits=1)
    limits = hc.Limits(max_field_bytes=1000)
    with hc.open(db, policy=policy, limits=limits) as owner:
        owner.save_policy()
        saved = owner.saved_policy()
        assert saved is not None
        assert (saved[0].max_handoffs, saved[0].max_revisits) == (4, 1)
        assert saved[1].max_field_bytes == 1000
    with hc.open(db) as worker:
        assert worker.policy.max_revisits == 1 and worker.limits.max_field_bytes == 1000
        loop(worker, "t1")
        assert str(worker.chain("t1")) == "manager → worker → manager"
        with pytest.raises(hc.ValidationError) as caught:
            worker.create("t9", "x" * 2000)
        assert caught.value.fields == ["goal"]
    with hc.open(db, policy=hc.ChainPolicy(), limits=hc.Limits()) as own:
        assert own.policy.max_revisits == 0
        with pytest.raises(hc.ChainViolation):
            loop(own, "t2")
        assert own.create("t9", "x" * 2000).goal == "x" * 2000
    with hc.open(db, read_only=True) as reader:
        assert reader.policy.max_revisits == 1


def test_save_policy_in_memory_and_aio() -> None:
    import asyncio

    async def main() -> None:
        store = hc.aio.Store.memory(policy=hc.ChainPolicy(max_revisits=2))
        assert await store.saved_policy() is None
        await store.save_policy()
        saved = await store.saved_policy()
        assert saved is not None and saved[0].max_revisits == 2
        assert store.policy.max_revisits == 2 and store.limits.max_depth == hc.Limits().max_depth

    asyncio.run(main())


# The event log in pages.


def test_paging_through_a_thousand_events(store: hc.Store) -> None:
    store.create_many([{"task_id": "t", "goal": f"step {i}"} for i in range(1000)])
    other = store.create("other", "g")
    everything = store.events()
    assert len(everything) == 1001
    seen: list[hc.Event] = []
    after = None
    pages = 0
    while True:
        page = store.events(task_id="t", after=after, limit=128)
        if not page:
            break
        assert len(page) <= 128
        pages += 1
        seen.extend(page)
        after = page[-1].seq
    assert pages == 8 and len(seen) == 1000
    assert [e.seq for e in seen] == sorted({e.seq for e in seen})
    assert seen == [e for e in everything if e.handoff_id != other.id]
    assert store.events(id=other.id) == [everything[-1]]
    assert store.events(after=everything[-2].seq) == [everything[-1]]
    assert store.events(limit=0) == []
    assert store.events(task_id="nobody") == []


def test_paged_events_refuse_bad_arguments(store: hc.Store) -> None:
    for kwargs, field in [
        ({"after": -1}, "after"), ({"after": "1"}, "after"), ({"limit": -5}, "limit"),
        ({"limit": 1.5}, "limit"), ({"task_id": "bad id!"}, "task_id"), ({"id": 3}, "id"),
    ]:
        with pytest.raises(hc.ValidationError) as caught:
            store.events(**kwargs)  # type: ignore[arg-type]
        assert caught.value.fields == [field], kwargs


def test_aio_pages_events() -> None:
    import asyncio

    async def main() -> None:
        async with hc.aio.Store.memory() as store:
            for i in range(5):
                await store.create("t", f"g{i}")
            first = await store.events(task_id="t", limit=2)
            rest = await store.events(task_id="t", after=first[-1].seq)
            assert len(first) == 2 and len(rest) == 3

    asyncio.run(main())


def test_backup_copies_a_store_in_use(tmp_path: Path) -> None:
    db = tmp_path / "handoff.db"
    with hc.open(db) as store:
        h = store.create("t", "g")
        claim = store.claim(h.id, "w")
        copy = tmp_path / "copy.backup"
        store.backup(copy)
        store.complete(claim, outcome="after the backup")
        assert stat.S_IMODE(os.stat(copy).st_mode) == 0o600
        # Any store restores it: a folder of files here.
        with hc.connect(f"files:{tmp_path / 'moved'}") as restored:
            restored.restore(copy)
            assert restored.get(h.id).status == "claimed"
            # The claim's secret came along: its holder settles it on the copy too.
            assert restored.complete(claim, outcome="on the copy").status == "completed"
            # A store with something in it is refused, naming the store.
            with pytest.raises(hc.ValidationError) as full:
                restored.restore(copy)
            assert full.value.fields == ["store"]
        before = db.read_bytes()
        with pytest.raises(hc.ValidationError) as refused:
            store.backup(db)
        assert refused.value.fields == ["path"]
        assert db.read_bytes() == before


def test_backup_through_aio(tmp_path: Path) -> None:
    import asyncio

    from handoff_core import aio

    async def main() -> None:
        store = await aio.open(tmp_path / "handoff.db")
        await store.create("t", "g")
        await store.backup(tmp_path / "copy.backup")
        moved = await aio.open(tmp_path / "moved.db")
        await moved.restore(tmp_path / "copy.backup")

    asyncio.run(main())
    assert len(hc.open(tmp_path / "moved.db").list()) == 1


def test_restore_refuses_a_damaged_or_foreign_file_and_writes_nothing(tmp_path: Path) -> None:
    with hc.open(tmp_path / "handoff.db") as store:
        store.create("t", "g")
        store.backup(tmp_path / "good.backup")
    text = (tmp_path / "good.backup").read_text()
    (tmp_path / "cut.backup").write_text(text[: len(text) // 2])
    (tmp_path / "edited.backup").write_text(text.replace('"goal":"g"', '"goal":"G"', 1))
    (tmp_path / "foreign.backup").write_text("id,goal\n1,hello\n")
    for name, says in [("cut", "cut short"), ("edited", "checksum"),
                       ("foreign", "not a handoff backup")]:
        with hc.Store.memory() as target:
            with pytest.raises(hc.ValidationError) as refused:
                target.restore(tmp_path / f"{name}.backup")
            assert refused.value.fields == ["path"], name
            assert says in str(refused.value), (name, str(refused.value))
            assert target.list() == [], name
