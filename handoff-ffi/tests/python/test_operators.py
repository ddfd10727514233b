"""What an operator meets through the generated bindings (docs/design.md §14, issue 12): a stuck writer
costs others at most their lock patience (`Busy`), reads never wait, read-only opens change
nothing, the policy is saved in the store, depth limits stay readable, and the event log is
read in pages."""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import hf, new

PATIENCE = dt.timedelta(milliseconds=300)


@contextmanager
def stuck_writer(db: Path) -> Iterator[None]:
    """Holds `<db>-lock` the way a writer stopped (SIGSTOP, a debugger) inside a write does."""
    fd = os.open(f"{db}-lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def test_a_stuck_writer_makes_writers_busy_and_readers_read(tmp_path: Path) -> None:
    db = tmp_path / "handoff.db"
    store = hf.Store.open(str(db), hf.OpenOptions(lock_patience=PATIENCE))
    h = store.create(new(goal="before"))
    with stuck_writer(db):
        started = time.monotonic()
        with pytest.raises(hf.HandoffError.Busy) as err:
            store.create(new(goal="during"))
        assert time.monotonic() - started < 10, "the writer waited far past its patience"
        assert "busy" in err.value.description and "not damaged" in err.value.description
        with pytest.raises(hf.HandoffError.Busy):
            store.claim(h.id, "coder")
        # Reads do not wait, and a store opened meanwhile reads too.
        assert store.get(h.id) == h
        assert [r.id for r in store.list()] == [h.id]
        assert len(store.events(h.id)) == 1
        other = hf.Store.open(str(db), hf.OpenOptions(lock_patience=PATIENCE))
        assert [r.goal for r in other.list()] == ["before"]
        assert store.get(h.id).status == hf.HandoffStatus.PENDING, "a Busy write changed nothing"
    assert store.create(new(goal="after")).goal == "after"
    assert [r.goal for r in other.list()] == ["before", "after"]


def test_busy_is_its_own_kind() -> None:
    assert issubclass(hf.HandoffError.Busy, hf.HandoffError)
    assert not issubclass(hf.HandoffError.Busy, hf.HandoffError.Storage)


def test_read_only_opens_read_and_change_nothing(tmp_path: Path) -> None:
    db = tmp_path / "handoff.db"
    writer = hf.Store.open(str(db))
    h = writer.create(new(from_agent="planner"))
    del writer
    files = sorted(p.name for p in tmp_path.iterdir())
    before = db.read_bytes()

    reader = hf.Store.open_read_only(str(db))
    assert reader.get(h.id) == h
    assert [r.id for r in reader.list()] == [h.id]
    assert reader.events(h.id)[0].change.is_CREATED()
    assert reader.chain("task-1").path == ["planner", "*"]
    with pytest.raises(hf.HandoffError.Storage) as err:
        reader.create(new(goal="refused"))
    assert "read-only" in err.value.description
    del reader
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == files


def test_read_only_refuses_what_is_not_a_store_as_it_is(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    with pytest.raises(hf.HandoffError.Storage) as err:
        hf.Store.open_read_only(str(empty))
    assert "empty" in err.value.description
    assert empty.stat().st_size == 0, "an empty file became a store"
    with pytest.raises(hf.HandoffError):
        hf.Store.open_read_only(str(tmp_path / "missing.db"))
    assert not (tmp_path / "missing.db").exists()


def test_a_saved_policy_applies_to_the_next_open(tmp_path: Path) -> None:
    db = str(tmp_path / "handoff.db")
    policy = hf.ChainPolicy(max_handoffs=2, collaborators={"planner": ["coder"], "coder": ["reviewer"]})
    first = hf.Store.open(db, hf.OpenOptions(policy=policy, limits=hf.Limits(max_depth=8)))
    assert first.saved_policy() is None
    first.save_policy()
    saved = first.saved_policy()
    assert saved.policy == hf.ChainPolicy(max_handoffs=2, max_revisits=0, collaborators=policy.collaborators)
    assert saved.limits.max_depth == 8
    assert saved.limits.max_list_items == 1024
    del first

    # A second open with no policy of its own applies the saved one.
    second = hf.Store.open(db)
    assert second.saved_policy() == saved
    with pytest.raises(hf.HandoffError.ChainViolation) as err:
        second.create(new(from_agent="planner", to_agent="reviewer"))
    assert err.value.rule == hf.ChainRule.NOT_COLLABORATOR(from_agent="planner", to_agent="reviewer")
    deep = json.dumps({"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": 1}}}}}}}}})
    with pytest.raises(hf.HandoffError.Validation):
        second.create(new(from_agent="planner", to_agent="coder", metadata=deep))
    assert second.create(new(from_agent="planner", to_agent="coder")).to_agent == "coder"
    assert hf.Store.open_read_only(db).saved_policy() == saved

    # An opener with its own policy uses it instead.
    own = hf.Store.open(db, hf.OpenOptions(policy=hf.ChainPolicy()))
    assert own.create(new(task_id="t2", from_agent="planner", to_agent="reviewer")).to_agent == "reviewer"


def test_depth_limits_past_what_readers_read_back_are_refused(tmp_path: Path) -> None:
    for depth in (101, 10**6, 0):
        for open_ in (
            lambda o: hf.Store.memory(o),
            lambda o: hf.Store.open(str(tmp_path / "deep.db"), o),
        ):
            with pytest.raises(hf.HandoffError.Validation) as err:
                open_(hf.OpenOptions(limits=hf.Limits(max_depth=depth)))
            assert [p.field for p in err.value.problems] == ["max_depth"]
    assert not (tmp_path / "deep.db").exists(), "a refused open created the store"
    # 100 is allowed, and a record that deep can be written and read back.
    store = hf.Store.open(str(tmp_path / "h.db"), hf.OpenOptions(limits=hf.Limits(max_depth=100)))
    nested: dict = {}
    for _ in range(99):
        nested = {"k": nested}
    h = store.create(new(metadata=json.dumps(nested)))
    assert json.loads(store.get(h.id).metadata) == nested
    assert store.events(h.id)[0].change == hf.Change.CREATED(task_id="task-1", to_agent=None, priority=0)
    assert json.loads(hf.handoff_to_json(store.get(h.id)))["metadata"] == nested


def test_events_are_read_in_pages_by_cursor(store: hf.Store) -> None:
    ids = [store.create(new(task_id="t1", goal=f"step {i}")).id for i in range(7)]
    store.create(new(task_id="t2"))
    store.complete(store.claim(ids[0], "coder").reference(), "done")
    everything = store.events()
    assert len(everything) == 10

    pages, after = [], None
    while page := store.events(task_id="t1", after=after, limit=4):
        assert len(page) <= 4
        pages.append(page)
        after = page[-1].seq
    seen = [e for page in pages for e in page]
    assert [len(p) for p in pages] == [4, 4, 1]
    assert seen == [e for e in everything if e.handoff_id in ids]
    assert [e.seq for e in seen] == sorted({e.seq for e in seen})

    one = store.events(id=ids[0], after=store.events(id=ids[0])[0].seq)
    assert [e.change.is_CREATED() for e in one] == [False, False]
    assert store.events(after=everything[-1].seq) == []
    assert store.events(limit=0) == []
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.events(task_id="bad id!")
    assert [p.field for p in err.value.problems] == ["task_id"]


def test_backup_copies_a_store_in_use(tmp_path: Path) -> None:
    db = tmp_path / "handoff.db"
    store = hf.Store.open(str(db), hf.OpenOptions())
    h = store.create(new(goal="g"))
    claim = store.claim(h.id, "w")
    store.backup(str(tmp_path / "copy.backup"))
    store.complete(claim.reference(), "after the backup")
    # The portable backup restores into any empty store: here a new SQLite file.
    restored = hf.Store.open(str(tmp_path / "copy.db"), hf.OpenOptions())
    restored.restore(str(tmp_path / "copy.backup"))
    assert restored.get(h.id).status == hf.HandoffStatus.CLAIMED
    assert restored.complete(claim.reference(), "on the copy").status == hf.HandoffStatus.COMPLETED
    before = db.read_bytes()
    with pytest.raises(hf.HandoffError.Validation):
        store.backup(str(db))
    assert db.read_bytes() == before


def test_priorities_revoked_claims_and_retries(store: hf.Store) -> None:
    """An operator reorders the queue, takes a hung claim away and sends a dead handoff back."""
    low = store.create(new(goal="low"))
    high = store.create(new(goal="high", priority=5))
    assert (low.priority, high.priority) == (0, 5)
    assert store.set_priority(low.id, 9, "ops").priority == 9
    claim = store.claim_next("worker")
    assert claim is not None and claim.handoff.id == low.id
    revoked = store.revoke_claim(low.id, "ops", "hung")
    assert (revoked.status, revoked.attempts) == (hf.HandoffStatus.PENDING, 1)
    with pytest.raises(hf.HandoffError.LeaseLost):
        store.heartbeat(claim.reference())
    store.cancel(high.id, "ops")
    retried = store.retry(high.id, "ops", reason="try again")
    assert (retried.status, retried.attempts) == (hf.HandoffStatus.PENDING, 0)
    traced = store.create(new(traceparent="00-" + "a" * 32 + "-" + "b" * 16 + "-01"))
    assert store.get(traced.id).traceparent == traced.traceparent


def test_heartbeats_report_progress(store: hf.Store) -> None:
    h = store.create(new())
    claim = store.claim(h.id, "worker")
    beat = store.heartbeat(claim.reference(), progress='{"done": 3, "of": 7}')
    assert json.loads(beat.progress) == {"done": 3, "of": 7}
    assert json.loads(store.heartbeat(claim.reference()).progress) == {"done": 3, "of": 7}
    with pytest.raises(hf.HandoffError.Validation) as refused:
        store.heartbeat(claim.reference(), progress="{not json")
    assert "progress" in str(refused.value)


def test_metrics_count_the_queue_and_the_log(store: hf.Store) -> None:
    store.create(new())
    claim = store.claim_next("worker")
    assert claim is not None
    store.complete(claim.reference(), "done")
    m = store.metrics()
    assert {e.kind: e.count for e in m.events}["completed"] == 1
    assert (m.claim_wait.count, m.work_time.count, m.open_escalations) == (1, 1, 0)
