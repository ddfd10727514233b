"""Chain limits along a hop's path (docs/design.md §4): fan-out is free, a long path is refused, and an
open handoff is checked against the policy when it is claimed. Also how a typed reason and
`context_pct` combine."""

from __future__ import annotations

import pytest

from conftest import hf, new

AGENTS = ["a1", "a2", "a3", "a4", "a5", "a6", "a7"]


def test_a_thousand_parallel_handoffs_in_one_task(store: hf.Store) -> None:
    made = store.create_many([
        new(task_id="queue", goal=f"work item {i}", from_agent="planner", to_agent="worker" if i % 2 else None)
        for i in range(1000)
    ])
    assert len(made) == 1000
    for i in range(3):
        store.create(new(task_id="queue", goal=f"more {i}", from_agent="planner", to_agent="worker"))
    claim = store.claim_next("worker", "queue")
    assert claim is not None
    store.create(new(task_id="queue", goal="review", from_agent="worker", to_agent="reviewer", parent_id=claim.handoff.id))


def test_a_six_hop_path_is_refused(store: hf.Store) -> None:
    parent = None
    for hop in range(5):
        parent = store.create(new(task_id="long", from_agent=AGENTS[hop], to_agent=AGENTS[hop + 1], parent_id=parent)).id
    with pytest.raises(hf.HandoffError.ChainViolation) as err:
        store.create(new(task_id="long", from_agent="a6", to_agent="a7", parent_id=parent))
    assert err.value.task_id == "long"
    assert err.value.rule == hf.ChainRule.MAX_HANDOFFS(limit=5)
    assert err.value.path == AGENTS
    # Someone who got no work along that path starts a fresh one.
    store.create(new(task_id="long", from_agent="z", to_agent="a7"))


def test_an_open_handoff_is_refused_to_a_non_collaborator_at_claim_time(clock: hf.ManualClock, tmp_path) -> None:
    policy = hf.ChainPolicy(collaborators={"triage": ["billing"], "billing": []})
    for store in (hf.Store.memory(hf.OpenOptions(clock=clock, policy=policy)),
                  hf.Store.open(str(tmp_path / "policy.db"), hf.OpenOptions(clock=clock, policy=policy))):
        h = store.create(new(task_id="ticket", goal="refund", from_agent="triage"))
        with pytest.raises(hf.HandoffError.ChainViolation) as err:
            store.claim(h.id, "sales")
        assert err.value.rule == hf.ChainRule.NOT_COLLABORATOR(from_agent="triage", to_agent="sales")
        assert store.get(h.id).status == hf.HandoffStatus.PENDING
        assert store.claim_next("sales") is None
        assert store.claim_next("sales", "ticket") is None
        claim = store.claim_next("billing")
        assert claim is not None and claim.handoff.id == h.id
        assert store.chain("ticket").text == "triage → billing"
        anyone = store.create(new(task_id="ticket", goal="anything"))
        assert store.claim_next("sales").handoff.id == anyone.id


def test_context_pct_must_agree_with_a_context_limit_reason(store: hf.Store) -> None:
    # The reason is typed here, so there is no bare `context_limit` to combine; a percent given
    # twice that disagrees is refused as Python and Node refuse `context_limit_85` + 90.
    h = store.create(new(reason=hf.HandoffReason.CONTEXT_LIMIT(percent=85), context_pct=85))
    assert (h.reason, h.context_usage_percent) == (hf.HandoffReason.CONTEXT_LIMIT(percent=85), 85)
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.create(new(reason=hf.HandoffReason.CONTEXT_LIMIT(percent=85), context_pct=90))
    assert [p.field for p in err.value.problems] == ["context_pct"]
    assert "85" in err.value.problems[0].rule
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.checkpoint("worker", new(reason=hf.HandoffReason.CONTEXT_LIMIT(percent=85), context_pct=90))
    assert [p.field for p in err.value.problems] == ["context_pct"]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.create(new(reason=hf.HandoffReason.CONTEXT_LIMIT(percent=101)))
    assert err.value.problems[0].field in ("reason", "context_pct")
    # Other reasons leave the percent alone: it is only the context usage.
    assert store.create(new(reason=hf.HandoffReason.TIMEOUT(seconds=300), context_pct=40)).context_usage_percent == 40
