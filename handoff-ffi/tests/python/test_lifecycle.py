"""The store's lifecycle through the generated bindings: the core conformance suite's
scenarios, seen from a uniffi host."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from conftest import hf, new

UTC = dt.timezone.utc


def test_create_get_and_native_types(store: hf.Store, clock: hf.ManualClock) -> None:
    h = store.create(
        new(
            from_agent="claude",
            to_agent="gemini",
            kind=hf.HandoffKind.ESCALATION,
            reason=hf.HandoffReason.CONTEXT_LIMIT(percent=85),
            context_pct=85,
            progress="half done",
            completed=["lexer"],
            pending=["parser", "tests"],
            decisions=["hand-written parser"],
            files=["src/parse.rs"],
            instructions="keep the API",
            metadata=json.dumps({"ticket": 42, "tags": ["a"]}),
        )
    )
    assert h.status == hf.HandoffStatus.PENDING
    assert h.kind == hf.HandoffKind.ESCALATION
    assert h.reason == hf.HandoffReason.CONTEXT_LIMIT(percent=85)
    assert h.pending_steps == ["parser", "tests"]
    assert h.modified_files == ["src/parse.rs"]
    assert json.loads(h.metadata) == {"ticket": 42, "tags": ["a"]}
    # Times are aware UTC datetimes, at the store's clock.
    assert h.created_at == clock.now()
    assert h.created_at.tzinfo is not None and h.created_at.utcoffset() == dt.timedelta(0)
    # Optional fields are None, not empty strings.
    assert h.claimed_by is None and h.claim_token is None and h.lease_until is None
    assert h.expires_at is None and h.outcome is None
    assert store.get(h.id) == h
    assert store.events(h.id)[0].change == hf.Change.CREATED(task_id="task-1", to_agent="gemini", priority=0)


def test_full_lifecycle_and_events(store: hf.Store, clock: hf.ManualClock) -> None:
    h = store.create(new(from_agent="claude"))
    claim = store.claim(h.id, "gemini", lease=dt.timedelta(seconds=60))
    assert claim.token == 1
    assert claim.lease == dt.timedelta(seconds=60)
    assert claim.handoff.status == hf.HandoffStatus.CLAIMED
    assert claim.handoff.lease_until == clock.now() + dt.timedelta(seconds=60)

    clock.advance(dt.timedelta(seconds=30))
    beat = store.heartbeat(claim.reference())
    assert beat.lease_until == clock.now() + dt.timedelta(seconds=60)

    done = store.complete(claim.reference(), "parser merged")
    assert done.status == hf.HandoffStatus.COMPLETED
    assert done.outcome == "parser merged"
    assert done.completed_at == clock.now()

    events = store.events(h.id)
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    changes = [e.change for e in events]
    # The created event names the task and the addressee (none: open to any agent); the record
    # itself is `store.get`'s.
    assert changes[0] == hf.Change.CREATED(task_id="task-1", to_agent=None, priority=0)
    assert changes[1] == hf.Change.CLAIMED(agent="gemini", token=1, lease_until=claim.handoff.lease_until)
    assert changes[2].is_HEARTBEAT()
    assert changes[3] == hf.Change.COMPLETED(outcome="parser merged", tokens_used=None)
    assert [e.actor for e in events] == ["claude", "gemini", "gemini", "gemini"]

    chain = store.chain("task-1")
    assert chain.path == ["claude", "gemini"]
    assert chain.text == "claude → gemini"
    assert [hop.handoff_id for hop in chain.hops] == [h.id]


def test_default_lease_is_five_minutes(store: hf.Store) -> None:
    claim = store.claim(store.create(new()).id, "gemini")
    assert claim.lease == dt.timedelta(minutes=5)


def test_idempotent_create_and_conflict(store: hf.Store) -> None:
    first = store.create(new(id="h-1"))
    assert store.create(new(id="h-1")) == first
    with pytest.raises(hf.HandoffError.Conflict) as err:
        store.create(new(id="h-1", goal="something else"))
    assert err.value.id == "h-1"
    assert len(store.list()) == 1


def test_claim_is_exclusive(store: hf.Store) -> None:
    h = store.create(new())
    store.claim(h.id, "a")
    with pytest.raises(hf.HandoffError.AlreadyClaimed) as err:
        store.claim(h.id, "b")
    assert (err.value.id, err.value.holder) == (h.id, "a")
    assert "already claimed by a" in err.value.description


def test_addressed_handoffs_refuse_other_agents(store: hf.Store) -> None:
    h = store.create(new(to_agent="gemini"))
    with pytest.raises(hf.HandoffError.InvalidTransition) as err:
        store.claim(h.id, "codex")
    assert err.value.status == hf.HandoffStatus.PENDING
    assert err.value.event == "claim"
    assert store.claim(h.id, "gemini").handoff.claimed_by == "gemini"


def test_release_and_reclaim_raise_the_token(store: hf.Store) -> None:
    h = store.create(new())
    first = store.claim(h.id, "a")
    released = store.release(first.reference(), "need a bigger context")
    assert released.status == hf.HandoffStatus.PENDING
    assert released.attempts == 1
    second = store.claim(h.id, "b")
    assert second.token > first.token


def test_fail_retries_then_fails_with_the_error(store: hf.Store) -> None:
    h = store.create(new(max_attempts=2))
    first = store.claim(h.id, "a")
    with pytest.raises(hf.HandoffError.Validation) as bad:
        store.fail(first.reference(), " ")
    assert [p.field for p in bad.value.problems] == ["error"]
    retried = store.fail(first.reference(), "the API timed out")
    assert (retried.status, retried.attempts) == (hf.HandoffStatus.PENDING, 1)
    with pytest.raises(hf.HandoffError.LeaseLost):
        store.fail(first.reference(), "again")
    failed = store.fail(store.claim(h.id, "b").reference(), "still timing out")
    assert (failed.status, failed.outcome) == (hf.HandoffStatus.FAILED, "still timing out")
    changes = [e.change for e in store.events(h.id)]
    assert changes[2] == hf.Change.ATTEMPT_FAILED(token=1, error="the API timed out")
    assert changes[4] == hf.Change.FAILED(token=2, error="still timing out")


def test_fencing_a_stale_claim_changes_nothing(store: hf.Store, clock: hf.ManualClock) -> None:
    h = store.create(new())
    stale = store.claim(h.id, "a", lease=dt.timedelta(seconds=10))
    clock.advance(dt.timedelta(seconds=11))
    fresh = store.claim(h.id, "b")
    assert fresh.token > stale.token
    before = (store.get(h.id), store.events(h.id))
    for call in (
        lambda: store.heartbeat(stale.reference()),
        lambda: store.complete(stale.reference(), "late"),
        lambda: store.release(stale.reference(), "late"),
    ):
        with pytest.raises(hf.HandoffError.LeaseLost) as err:
            call()
        assert err.value.token == stale.token
    assert (store.get(h.id), store.events(h.id)) == before
    assert store.complete(fresh.reference(), "done").status == hf.HandoffStatus.COMPLETED


def test_a_lapsed_lease_is_lost_even_without_a_new_claim(store: hf.Store, clock: hf.ManualClock) -> None:
    claim = store.claim(store.create(new()).id, "a", lease=dt.timedelta(seconds=5))
    clock.advance(dt.timedelta(seconds=6))
    with pytest.raises(hf.HandoffError.LeaseLost):
        store.complete(claim.reference(), "too late")


def test_lapses_fail_after_max_attempts(store: hf.Store, clock: hf.ManualClock) -> None:
    h = store.create(new(max_attempts=2))
    for agent in ("a", "b"):
        store.claim(h.id, agent, lease=dt.timedelta(seconds=1))
        clock.advance(dt.timedelta(seconds=2))
    assert store.reap() >= 1
    failed = store.get(h.id)
    assert failed.status == hf.HandoffStatus.FAILED
    assert any(e.change.is_FAILED() for e in store.events(h.id))


def test_pending_expiry(store: hf.Store, clock: hf.ManualClock) -> None:
    h = store.create(new(expires_at=clock.now() + dt.timedelta(minutes=1)))
    clock.advance(dt.timedelta(minutes=2))
    with pytest.raises(hf.HandoffError.InvalidTransition):
        store.claim(h.id, "late")
    # A refused command changes nothing; reaping settles the expiry.
    assert store.reap() == 1
    assert store.get(h.id).status == hf.HandoffStatus.EXPIRED
    assert store.events(h.id)[-1].change == hf.Change.EXPIRED()


def test_terminal_states_accept_nothing(store: hf.Store) -> None:
    h = store.create(new())
    claim = store.claim(h.id, "a")
    store.complete(claim.reference())
    with pytest.raises(hf.HandoffError.InvalidTransition):
        store.claim(h.id, "b")
    with pytest.raises(hf.HandoffError.InvalidTransition):
        store.cancel(h.id, "ops")


def test_reject_and_cancel(store: hf.Store) -> None:
    addressed = store.create(new(to_agent="gemini"))
    rejected = store.reject(addressed.id, "gemini", "not my area")
    assert rejected.status == hf.HandoffStatus.REJECTED
    other = store.create(new(task_id="task-2"))
    cancelled = store.cancel(other.id, "ops", reason="duplicate")
    assert cancelled.status == hf.HandoffStatus.CANCELLED
    assert store.events(other.id)[-1].change == hf.Change.CANCELLED(reason="duplicate")


def test_claim_next_order_and_filters(store: hf.Store, clock: hf.ManualClock) -> None:
    assert store.claim_next("a") is None
    ids = []
    for task in ("t1", "t2", "t3"):
        ids.append(store.create(new(task_id=task)).id)
        clock.advance(dt.timedelta(seconds=1))
    store.create(new(task_id="t4", to_agent="someone-else"))
    assert store.claim_next("a", task_id="t3").handoff.id == ids[2]
    assert store.claim_next("a").handoff.id == ids[0]
    assert store.claim_next("a").handoff.id == ids[1]
    assert store.claim_next("a") is None


def test_list_filters(store: hf.Store) -> None:
    a = store.create(new(task_id="t1", to_agent="gemini"))
    store.create(new(task_id="t2", kind=hf.HandoffKind.PARTIAL))
    store.claim(a.id, "gemini")
    assert [h.id for h in store.list(hf.ListFilter(status=hf.HandoffStatus.CLAIMED))] == [a.id]
    assert [h.task_id for h in store.list(hf.ListFilter(kind=hf.HandoffKind.PARTIAL))] == ["t2"]
    assert [h.id for h in store.list(hf.ListFilter(to_agent="gemini"))] == [a.id]
    assert len(store.list(hf.ListFilter(limit=1))) == 1
    # Pages: each starts after the last record of the one before.
    first = store.list(hf.ListFilter(limit=1))
    rest = store.list(hf.ListFilter(after=first[-1].id))
    assert [h.id for h in first + rest] == [h.id for h in store.list()]
    assert len(store.list()) == 2


def test_chain_policy_refuses_loops(tmp_path, clock: hf.ManualClock) -> None:
    store = hf.Store.memory(hf.OpenOptions(clock=clock, policy=hf.ChainPolicy(max_handoffs=10)))
    store.create(new(from_agent="a", to_agent="b"))
    store.create(new(from_agent="b", to_agent="c"))
    with pytest.raises(hf.HandoffError.ChainViolation) as err:
        store.create(new(from_agent="c", to_agent="a"))
    assert err.value.task_id == "task-1"
    assert err.value.path == ["a", "b", "c", "a"]
    assert err.value.rule == hf.ChainRule.REVISIT(agent="a", limit=0)
    assert len(store.list()) == 2


def test_chain_policy_collaborators(clock: hf.ManualClock) -> None:
    policy = hf.ChainPolicy(collaborators={"a": ["b"]})
    store = hf.Store.memory(hf.OpenOptions(clock=clock, policy=policy))
    store.create(new(from_agent="a", to_agent="b"))
    with pytest.raises(hf.HandoffError.ChainViolation) as err:
        store.create(new(task_id="t2", from_agent="a", to_agent="c"))
    assert err.value.rule == hf.ChainRule.NOT_COLLABORATOR(from_agent="a", to_agent="c")


def test_checkpoints_and_stalled(store: hf.Store, clock: hf.ManualClock) -> None:
    h = store.create(new())
    store.claim(h.id, "worker", lease=dt.timedelta(hours=1))
    cp = store.checkpoint("worker", hf.CreateOptions(task_id="task-1", goal="Write the parser", progress="lexer done"))
    assert cp.kind == hf.HandoffKind.CHECKPOINT
    assert (cp.from_agent, cp.to_agent, cp.status) == ("worker", "worker", hf.HandoffStatus.COMPLETED)
    assert cp.parent_id == h.id
    assert store.stalled(dt.timedelta(minutes=10)) == []
    clock.advance(dt.timedelta(minutes=11))
    assert store.stalled(dt.timedelta(minutes=10)) == ["task-1"]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.checkpoint("worker", new(kind=hf.HandoffKind.FULL))
    assert err.value.problems[0].field == "kind"


def test_create_many_is_all_or_nothing(store: hf.Store) -> None:
    made = store.create_many([new(task_id="t1"), new(task_id="t2")])
    assert [h.task_id for h in made] == ["t1", "t2"]
    with pytest.raises(hf.HandoffError.Validation):
        store.create_many([new(task_id="t3"), new(task_id="t4", goal="")])
    assert sorted(h.task_id for h in store.list()) == ["t1", "t2"]


def test_stats(store: hf.Store, clock: hf.ManualClock) -> None:
    h = store.create(new(from_agent="claude", to_agent="gemini"))
    clock.advance(dt.timedelta(seconds=4))
    store.complete(store.claim(h.id, "gemini").reference())
    [path] = store.stats()
    assert (path.from_agent, path.to_agent, path.total, path.completed) == ("claude", "gemini", 1, 1)
    assert path.median_claim_seconds == pytest.approx(4.0)
    assert store.queue_counts() == [hf.QueueCount(status=hf.HandoffStatus.COMPLETED, to_agent="gemini", count=1)]


def test_markdown_and_json_round_trip(store: hf.Store) -> None:
    h = store.create(new(pending=["tests"], warnings=["flaky CI"]))
    md = hf.handoff_to_markdown(h)
    assert "Write the parser" in md and "flaky CI" in md
    again = hf.handoff_from_json(hf.handoff_to_json(h))
    assert again == h


def test_sqlite_file_is_shared_between_store_objects(tmp_path, clock: hf.ManualClock) -> None:
    path = str(tmp_path / "shared.db")
    one = hf.Store.open(path, hf.OpenOptions(clock=clock, synchronous=hf.Synchronous.NORMAL))
    two = hf.Store.open(path, hf.OpenOptions(clock=clock))
    h = one.create(new())
    claim = two.claim(h.id, "b")
    assert one.get(h.id).claim_token == claim.token
