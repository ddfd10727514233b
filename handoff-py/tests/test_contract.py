"""Every call of docs/design.md §10 (Python), with the argument names shown there."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

import pytest

import handoff_core as hc


def test_open_memory_and_context_manager(tmp_path: Path) -> None:
    for store in (hc.Store.memory(), hc.open(tmp_path / "a.db"), hc.open(":memory:"),
                  hc.open(str(tmp_path / "b.db"), synchronous="normal"),
                  hc.open(tmp_path / "c.db", "full")):
        with store as s:
            assert s is store
            assert not s.closed
            s.create(task_id="t", goal="g")
        assert store.closed
        with pytest.raises(hc.StorageError, match="closed"):
            store.get("anything")


def test_sqlite_store_persists_across_opens(tmp_path: Path) -> None:
    path = tmp_path / "handoff.db"
    with hc.open(path) as store:
        h = store.create(task_id="t", goal="persist me", from_agent="a")
    with hc.open(path) as store:
        assert store.get(h.id) == h


def test_create_with_every_argument(store: hc.Store) -> None:
    parent = store.create(task_id="t1", goal="first", from_agent="claude", to_agent="gemini")
    expires = datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=timezone.utc)
    h = store.create(
        task_id="t1",
        goal="Ship the parser",
        from_agent="gemini",
        to_agent="codex",
        kind="partial",
        reason="context_limit_85",
        context_pct=85,
        progress="tokenizer done",
        completed=["tokenizer"],
        pending=["error recovery", "tests"],
        decisions=["hand-written lexer"],
        assumptions=["UTF-8 input"],
        warnings=["slow on huge files"],
        errors=["E1 in test_x"],
        files=["src/lexer.rs"],
        instructions="start with tests",
        metadata={"model": "gemini", "n": 3},
        id="my-id-1",
        parent_id=parent.id,
        session_id="s-1",
        blockers=["need API key"],
        locked_files=["Cargo.lock"],
        priority_items=["correctness"],
        success_criteria=["all tests pass"],
        expires_at=expires,
        max_attempts=5,
    )
    assert isinstance(h, hc.Handoff)
    assert (h.id, h.task_id, h.parent_id, h.session_id) == ("my-id-1", "t1", parent.id, "s-1")
    assert (h.from_agent, h.to_agent, h.kind, h.reason) == ("gemini", "codex", "partial", "context_limit_85")
    assert h.context_usage_percent == 85
    assert h.progress_summary == "tokenizer done"
    assert h.completed_steps == ["tokenizer"]
    assert h.pending_steps == ["error recovery", "tests"]
    assert h.key_decisions == ["hand-written lexer"]
    assert h.assumptions == ["UTF-8 input"]
    assert h.warnings == ["slow on huge files"]
    assert h.unresolved_errors == ["E1 in test_x"]
    assert h.modified_files == ["src/lexer.rs"]
    assert h.instructions == "start with tests"
    assert h.metadata == {"model": "gemini", "n": 3}
    assert h.blockers == ["need API key"]
    assert h.locked_files == ["Cargo.lock"]
    assert h.priority_items == ["correctness"]
    assert h.success_criteria == ["all tests pass"]
    assert h.expires_at == expires
    assert h.max_attempts == 5
    assert h.status == "pending"
    assert h.schema_version == hc.SCHEMA_VERSION
    assert store.get(h.id) == h


def test_defaults_and_absent_fields(store: hc.Store, clock: hc.ManualClock) -> None:
    h = store.create("t", "goal only")
    assert h.kind == "full" and h.reason == "explicit"
    assert h.from_agent is None and h.to_agent is None and h.instructions is None
    assert h.context_usage_percent is None and h.parent_id is None and h.session_id is None
    assert h.expires_at is None and h.lease_until is None and h.completed_at is None
    assert h.claimed_by is None and h.claim_token is None and h.outcome is None
    assert h.progress_summary == "" and h.completed_steps == [] and h.metadata == {}
    assert h.attempts == 0 and h.max_attempts >= 1
    assert h.created_at == clock.now()
    assert h.created_at.tzinfo is not None and h.created_at.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "reason", ["explicit", "task_complete", "context_limit_85", "timeout_300s", "error: disk full"]
)
def test_reasons_keep_their_wire_form(store: hc.Store, reason: str) -> None:
    assert store.create("t", "g", reason=reason).reason == reason


def test_get_and_not_found(store: hc.Store) -> None:
    h = store.create("t", "g")
    assert store.get(h.id) == h
    with pytest.raises(hc.NotFound) as caught:
        store.get("missing-id")
    assert caught.value.id == "missing-id"


def test_list_filters(store: hc.Store) -> None:
    a = store.create("t1", "a", to_agent="x")
    b = store.create("t2", "b", to_agent="y")
    c = store.create("t1", "c")
    store.complete(store.claim(c.id, "z"), "done")
    assert [h.id for h in store.list()] == [a.id, b.id, c.id]
    assert [h.id for h in store.list(task_id="t1")] == [a.id, c.id]
    assert [h.id for h in store.list(to_agent="y")] == [b.id]
    assert [h.id for h in store.list(status="completed")] == [c.id]
    assert [h.id for h in store.list(status="pending", task_id="t1")] == [a.id]
    assert [h.id for h in store.list(limit=2)] == [a.id, b.id]
    assert store.list(limit=0) == []
    assert [h.id for h in store.list(kind="full")] == [a.id, b.id, c.id]


def test_claim_and_already_claimed(store: hc.Store, clock: hc.ManualClock) -> None:
    h = store.create("t", "g", from_agent="a")
    claim = store.claim(h.id, "b", lease_seconds=30)
    assert isinstance(claim, hc.Claim)
    assert claim.token == 1 and claim.handoff_id == h.id and claim.lease_seconds == 30
    assert claim.handoff.status == "claimed" and claim.handoff.claimed_by == "b"
    assert claim.handoff.lease_until == clock.now() + timedelta(seconds=30)
    with pytest.raises(hc.AlreadyClaimed) as caught:
        store.claim(h.id, "c")
    assert (caught.value.id, caught.value.holder) == (h.id, "b")


def test_claim_default_lease_is_the_cores(store: hc.Store, clock: hc.ManualClock) -> None:
    claim = store.claim(store.create("t", "g").id, "b")
    assert claim.lease_seconds == 300
    assert claim.handoff.lease_until == clock.now() + timedelta(seconds=300)


def test_claim_addressed_to_another_agent(store: hc.Store) -> None:
    h = store.create("t", "g", to_agent="gemini")
    with pytest.raises(hc.InvalidTransition) as caught:
        store.claim(h.id, "codex")
    err = caught.value
    assert (err.id, err.status, err.event) == (h.id, "pending", "claim")
    assert "gemini" in err.reason


def test_claim_next(store: hc.Store) -> None:
    assert store.claim_next("w") is None
    a = store.create("t1", "a", to_agent="other")
    b = store.create("t2", "b")
    c = store.create("t1", "c")
    first = store.claim_next("w", lease_seconds=10)
    assert first is not None and first.handoff_id == b.id
    in_task = store.claim_next("w", task_id="t1")
    assert in_task is not None and in_task.handoff_id == c.id
    assert store.claim_next("w") is None
    mine = store.claim_next("other")
    assert mine is not None and mine.handoff_id == a.id


def test_heartbeat_extends_lease(store: hc.Store, clock: hc.ManualClock) -> None:
    claim = store.claim(store.create("t", "g").id, "b", lease_seconds=10)
    clock.advance(8)
    h = store.heartbeat(claim)
    assert h.lease_until == clock.now() + timedelta(seconds=10)
    assert h.heartbeat_at == clock.now()
    clock.advance(8)  # past the first lease, inside the renewed one
    assert store.complete(claim, outcome="ok").status == "completed"


def test_release_makes_it_pending_again(store: hc.Store) -> None:
    h = store.create("t", "g")
    claim = store.claim(h.id, "b")
    released = store.release(claim, "need a bigger model")
    assert released.status == "pending" and released.attempts == 1
    again = store.claim(h.id, "c")
    assert again.token == 2


def test_fail_retries_then_fails_with_the_error(store: hc.Store) -> None:
    h = store.create("t", "g", max_attempts=2)
    first = store.claim(h.id, "b")
    with pytest.raises(hc.ValidationError) as bad:
        store.fail(first, "  ")
    assert bad.value.fields == ["error"]
    retried = store.fail(first, "the API timed out")
    assert (retried.status, retried.attempts) == ("pending", 1)
    with pytest.raises(hc.LeaseLost):
        store.fail(first, "again")
    failed = store.fail(store.claim(h.id, "c"), error="still timing out")
    assert (failed.status, failed.attempts, failed.outcome) == ("failed", 2, "still timing out")
    log = store.events(h.id)
    assert [e.kind for e in log] == ["created", "claimed", "attempt_failed", "claimed", "failed"]
    assert log[2].detail == {"token": 1, "error": "the API timed out"}
    assert log[4].detail == {"token": 2, "error": "still timing out"}


def test_complete_with_and_without_outcome(store: hc.Store, clock: hc.ManualClock) -> None:
    done = store.complete(store.claim(store.create("t", "g").id, "b"), outcome="42")
    assert (done.status, done.outcome, done.completed_at) == ("completed", "42", clock.now())
    assert store.complete(store.claim(store.create("t2", "g").id, "b")).outcome == ""


def test_fencing_lease_lost_after_takeover(store: hc.Store, clock: hc.ManualClock) -> None:
    h = store.create("t", "g")
    old = store.claim(h.id, "slow", lease_seconds=10)
    clock.advance(11)  # the lease runs out; another agent takes over
    new = store.claim(h.id, "fast", lease_seconds=10)
    assert new.token > old.token
    calls: list[Callable[[], object]] = [
        lambda: store.heartbeat(old), lambda: store.complete(old, "late"), lambda: store.release(old, "late")]
    for call in calls:
        with pytest.raises(hc.LeaseLost) as caught:
            call()
        assert (caught.value.id, caught.value.token) == (h.id, old.token)
        assert caught.value.reason
    assert store.get(h.id).claimed_by == "fast"  # nothing changed
    assert store.complete(new, "won").outcome == "won"
    with pytest.raises(hc.LeaseLost):
        store.complete(new, "twice")


def test_lease_lapses_to_failed_at_max_attempts(store: hc.Store, clock: hc.ManualClock) -> None:
    h = store.create("t", "g", max_attempts=1)
    store.claim(h.id, "b", lease_seconds=1)
    clock.advance(2)
    assert store.reap() == 1
    assert store.get(h.id).status == "failed"


def test_expiry(store: hc.Store, clock: hc.ManualClock) -> None:
    h = store.create("t", "g", expires_at=clock.now() + timedelta(seconds=5))
    clock.advance(6)
    assert store.claim_next("w") is None
    assert store.get(h.id).status == "expired"


def test_reject(store: hc.Store) -> None:
    h = store.create("t", "g", to_agent="gemini")
    with pytest.raises(hc.InvalidTransition):
        store.reject(h.id, "codex", "not mine")
    rejected = store.reject(h.id, "gemini", "out of scope")
    assert (rejected.status, rejected.outcome) == ("rejected", "out of scope")
    with pytest.raises(hc.InvalidTransition) as caught:
        store.claim(h.id, "gemini")
    assert caught.value.status == "rejected"


def test_cancel(store: hc.Store) -> None:
    a = store.create("t", "g")
    assert store.cancel(a.id, "boss").status == "cancelled"
    b = store.create("t2", "g")
    store.claim(b.id, "w")
    cancelled = store.cancel(b.id, by="boss", reason="plan changed")
    assert (cancelled.status, cancelled.outcome) == ("cancelled", "plan changed")
    with pytest.raises(hc.InvalidTransition):
        store.cancel(b.id, "boss")


def test_events(store: hc.Store, clock: hc.ManualClock) -> None:
    h = store.create("t", "g", from_agent="a")
    claim = store.claim(h.id, "b", lease_seconds=60)
    store.complete(claim, "ok")
    other = store.create("t2", "g")
    events = store.events(h.id)
    assert [e.kind for e in events] == ["created", "claimed", "completed"]
    assert [e.actor for e in events] == ["a", "b", "b"]
    assert all(e.handoff_id == h.id and e.at == clock.now() for e in events)
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    assert events[0].detail == {"task_id": "t", "to_agent": None}
    assert events[1].detail == {
        "agent": "b",
        "token": 1,
        "lease_until": (clock.now() + timedelta(seconds=60)).isoformat(timespec="microseconds").replace("+00:00", "Z"),
    }
    assert events[2].detail == {"outcome": "ok"}
    every = store.events()
    assert [e.handoff_id for e in every][-1] == other.id and len(every) == 4
    d = events[1].to_dict()
    assert set(d) == {"seq", "handoff_id", "at", "actor", "kind", "detail"}
    assert isinstance(d["at"], datetime)
    assert json.loads(events[1].to_json())["kind"] == "claimed"
    # Times as text are one fixed width wherever they show, so that they sort as text.
    assert json.loads(events[1].to_json())["at"].endswith(".000000Z")
    assert repr(hc.ManualClock()) == "ManualClock(2026-01-01T00:00:00.000000Z)"


def test_chain(store: hc.Store) -> None:
    store.create("task", "step 1", from_agent="claude", to_agent="gemini")
    store.create("task", "step 2", from_agent="gemini", to_agent="codex")
    chain = store.chain("task")
    assert isinstance(chain, hc.Chain)
    assert chain.task_id == "task"
    assert chain.path == ["claude", "gemini", "codex"]
    assert str(chain) == "claude → gemini → codex"
    assert len(chain) == 2
    assert [(hop.from_agent, hop.to_agent) for hop in chain.hops] == [("claude", "gemini"), ("gemini", "codex")]
    assert chain.to_dict()["path"] == chain.path
    assert store.chain("no-such-task").hops == []


def test_chain_violation(store: hc.Store) -> None:
    store.create("loop", "1", from_agent="a", to_agent="b")
    with pytest.raises(hc.ChainViolation) as caught:
        store.create("loop", "2", from_agent="b", to_agent="a")
    err = caught.value
    assert (err.task_id, err.path, err.rule, err.agent) == ("loop", ["a", "b", "a"], "revisit", "a")
    assert err.limit == 0


def test_chain_policy_and_collaborators() -> None:
    policy = hc.ChainPolicy(max_handoffs=2, collaborators={"a": ["b"], "b": ["c"]})
    with hc.Store.memory(policy=policy) as store:
        store.create("t", "1", from_agent="a", to_agent="b")
        with pytest.raises(hc.ChainViolation) as caught:
            store.create("t", "2", from_agent="b", to_agent="a")
        assert caught.value.rule == "not_collaborator" and caught.value.pair == ("b", "a")
        store.create("t", "2", from_agent="b", to_agent="c")
        with pytest.raises(hc.ChainViolation) as caught:
            store.create("t", "3", from_agent="c", to_agent="d")
        assert caught.value.rule == "max_handoffs" and caught.value.limit == 2
    with hc.Store.memory(policy=hc.ChainPolicy(max_revisits=1)) as store:
        store.create("t", "1", from_agent="a", to_agent="b")
        store.create("t", "2", from_agent="b", to_agent="a")  # a manager/worker loop
    assert hc.ChainPolicy.unlimited().max_handoffs > 1000


def test_idempotent_create_and_conflict(store: hc.Store) -> None:
    first = store.create("t", "g", id="key-1")
    assert store.create("t", "g", id="key-1") == first
    with pytest.raises(hc.Conflict) as caught:
        store.create("t", "different", id="key-1")
    assert caught.value.id == "key-1"
    assert isinstance(caught.value, hc.HandoffError)


def test_create_many(store: hc.Store) -> None:
    made = store.create_many([{"task_id": "t", "goal": "a"}, {"task_id": "u", "goal": "b", "kind": "partial"}])
    assert [h.goal for h in made] == ["a", "b"] and made[1].kind == "partial"
    with pytest.raises(hc.ValidationError) as caught:
        store.create_many([{"task_id": "v", "goal": "ok"}, {"task_id": "v", "goal": ""}])
    assert caught.value.fields == ["records[1].goal"]
    assert store.list(task_id="v") == []  # all or nothing


def test_checkpoint_and_stalled(store: hc.Store, clock: hc.ManualClock) -> None:
    h = store.create("task", "build it", from_agent="claude", to_agent="gemini")
    store.claim(h.id, "gemini", lease_seconds=3600)
    cp = store.checkpoint("task", "gemini", goal="build it", progress="half way", completed=["design"],
                          metadata={"step": 3})
    assert (cp.kind, cp.from_agent, cp.to_agent, cp.task_id) == ("checkpoint", "gemini", "gemini", "task")
    assert cp.progress_summary == "half way" and cp.metadata == {"step": 3}
    assert cp.parent_id == h.id
    assert str(store.chain("task")) == "claude → gemini"  # a checkpoint is not a hop
    assert store.stalled(older_than_seconds=60) == []
    clock.advance(61)
    assert store.stalled(60) == ["task"]
    assert store.stalled(older_than_seconds=120.5) == []
    with pytest.raises(TypeError):
        store.checkpoint("task", "gemini", goal="x", to_agent="other")  # type: ignore[call-arg]


def test_markdown(store: hc.Store) -> None:
    h = store.create("t", "Ship the parser", from_agent="a", pending=["tests"], instructions="be careful")
    md = h.to_markdown()
    assert "Ship the parser" in md and "tests" in md and "be careful" in md
    assert "## Current Goal" in md
    assert "Key Decisions" not in md  # empty sections are left out


def test_now_and_manual_clock() -> None:
    start = datetime(2030, 1, 1, tzinfo=timezone.utc)
    clock = hc.ManualClock(start)
    with hc.Store.memory(clock=clock) as store:
        assert store.now() == start
        clock.advance(1.5)
        assert store.now() == start + timedelta(seconds=1.5)
        clock.set(datetime(2031, 1, 1, 1, tzinfo=timezone(timedelta(hours=1))))
        assert store.now() == datetime(2031, 1, 1, tzinfo=timezone.utc)


def test_limits() -> None:
    with hc.Store.memory(limits=hc.Limits(max_field_bytes=8)) as store:
        with pytest.raises(hc.ValidationError) as caught:
            store.create("t", "a goal longer than eight bytes")
        assert caught.value.fields == ["goal"]
    assert hc.Limits().max_depth == 64

