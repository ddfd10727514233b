"""Seed 001 §8 from Python: a task made of objectives under a readable id, agents that join it
with a role and objectives, a step handed on to an expert (``escalate_step``), and the task
completed by its caller with a summary and its verified knowledge merged to ``main`` (steps 1–4
and 7); then what settles a failed step's escalation, ``fail_task``, and a pause that withdraws
the task's offers. One call runs through ``hc.aio``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import handoff_core as hc

ID = "fix-oauth-token-refresh"
OBJECTIVES = ["Identify root cause of token refresh failure", "Implement fix", "Add regression tests"]
TWO_STEPS: list[dict[str, Any]] = [
    {"id": "research", "name": "Research", "agent": "researcher", "max_attempts": 1},
    {"id": "draft", "name": "Draft", "agent": "writer", "dependencies": ["research"]},
]


def statuses(task: hc.Task) -> dict[str, str]:
    return {s["id"]: s["status"] for s in task.steps}


def test_seed_001_objectives_members_an_expert_and_a_merge_to_main() -> None:
    with hc.Store.memory() as store:
        # 1. The task, under the caller's id, made of objectives; its goal is its name.
        created = store.create_task(ID, id=ID, objectives=OBJECTIVES)
        assert (created.id, created.goal, created.members) == (ID, ID, [])
        assert (created.result_summary, created.failure) == (None, None)
        assert [(s["id"], s["name"], s["agent"], s["escalation_id"]) for s in created.steps] == [
            ("1", OBJECTIVES[0], None, None),
            ("2", OBJECTIVES[1], None, None),
            ("3", OBJECTIVES[2], None, None),
        ]
        with pytest.raises(hc.ValidationError) as taken:
            store.create_task(ID, id=ID)
        assert [field for field, _ in taken.value.problems] == ["id"]
        store.start_task(ID)

        # 2. An agent joins with a role and objective 1, by its number.
        offer = store.get_task(ID).steps[0]["handoff_id"]
        joined = store.join_task(ID, "agent-investigator", role="investigator", objectives=[1])
        [member] = joined.members
        assert member["agent"] == "agent-investigator"
        assert member["role"] == "investigator"
        assert member["objectives"] == ["1"]
        assert member["branch"] == f"task/{ID}/agent-investigator"
        assert member["joined_at"]
        assert joined.steps[0]["agent"] == "agent-investigator"
        own = joined.steps[0]["handoff_id"]
        assert own != offer, "objective 1 is offered to its agent alone, by a new offer"
        assert store.get(offer).status == "cancelled"
        join = next(e for e in store.task_events(ID) if e.kind == "agent_join")
        assert join.detail == {"agent": "agent-investigator", "role": "investigator", "objectives": ["1"]}

        # 3. Not a member: nothing is offered to it, and a step of the task cannot be claimed.
        assert store.claim_next("passer-by") is None
        with pytest.raises(hc.InvalidTransition):
            store.claim(store.get_task(ID).steps[1]["handoff_id"], "passer-by")
        with pytest.raises(hc.HandoffError, match="agent-investigator"):
            store.join_task(ID, "agent-late", objectives=["1"])
        # Unknown, under the seed's name: refused, named as the caller wrote it.
        with pytest.raises(hc.ValidationError) as unknown:
            store.join_task(ID, "agent-late", assigned_objectives=[9])  # type: ignore[call-arg]
        assert [field for field, _ in unknown.value.problems] == ["assigned_objectives[0]"]

        # The member claims its objective.
        claim = store.claim(own, "agent-investigator")
        assert claim.handoff.metadata == {"step_id": "1"}
        store.add_facts(member["branch"], ["Refresh needs retry with exponential backoff", "Maybe the clock is skewed"])

        # 4. It hands the step on to an expert: an escalation linked to the step.
        escalation = store.escalate_step(
            claim,
            "oauth-expert",
            instructions="Found it in token_service.py:142; needs OAuth2 expertise",
            blockers=["Unclear OAuth2 state transition after refresh failure"],
            priority_objectives=[1, 2],  # type: ignore[call-arg]
        )
        assert escalation.kind == "escalation"
        assert (escalation.from_agent, escalation.to_agent, escalation.parent_id) == (
            "agent-investigator",
            "oauth-expert",
            own,
        )
        assert escalation.blockers == ["Unclear OAuth2 state transition after refresh failure"]
        assert store.get(own).status == "completed"
        escalated = next(e for e in store.task_events(ID) if e.kind == "step_escalated")
        assert escalated.detail == {"step": "1", "to": "oauth-expert"}
        plain = store.create("elsewhere", "g")
        with pytest.raises(hc.InvalidTransition):
            store.escalate_step(store.claim(plain.id, "someone"), "x")

        # The expert takes it; completing it completes the step.
        expert = store.claim_next("oauth-expert")
        assert expert is not None and expert.handoff.id == escalation.id
        store.complete(expert, outcome="fixed the refresh")
        task = store.get_task(ID)
        assert (task.steps[0]["status"], task.steps[0]["output"]) == ("completed", "fixed the refresh")
        assert task.status == "in_progress"

        # 7. Only what was verified reaches main when the task completes.
        report = store.verify(member["branch"], lambda item: 0.9 if "backoff" in item.get("text", "") else 0.5)
        assert report.verified == 1
        done = store.complete_task(ID, "Fixed OAuth2 token refresh with retry", merge_to_main=True)
        assert (done.status, done.result_summary) == ("completed", "Fixed OAuth2 token refresh with retry")
        assert statuses(done) == {"1": "completed", "2": "skipped", "3": "skipped"}
        assert [f.text for f in store.facts("main")] == ["Refresh needs retry with exponential backoff"]
        merge = next(e for e in store.task_events(ID) if e.kind == "merge")
        assert merge.detail == {"into": "main", "facts": 1, "conversations": 0}
        assert store.task_history(limit=1)[0].summary == "Fixed OAuth2 token refresh with retry"
        [summary] = store.list_tasks(status="completed")
        assert (summary.result_summary, len(summary.members)) == ("Fixed OAuth2 token refresh with retry", 1)
        state = done.to_dict()
        assert state["result_summary"] == "Fixed OAuth2 token refresh with retry"
        assert state["members"][0]["role"] == "investigator"

        # The replay names the member's role and its join.
        replay = store.replay(ID)
        entry = next(e for e in replay.timeline if e["type"] == "task.agent_join")
        assert entry["agent"] == "agent-investigator"
        roles = {a["agent"]: a.get("role") for a in replay.agents}
        assert roles["agent-investigator"] == "investigator"
        assert roles["oauth-expert"] is None


def test_a_failed_steps_escalation_completed_plainly_skips_the_step_and_the_task_goes_on() -> None:
    with hc.Store.memory() as store:
        t = store.create_task("Post", steps=TWO_STEPS)
        store.start_task(t.id)
        first = store.claim_next("researcher")
        assert first is not None
        store.fail(first, "the API timed out")
        task = store.get_task(t.id)
        assert (task.status, task.steps[0]["status"]) == ("paused", "escalated")
        assert task.steps[0]["escalation_id"]
        with pytest.raises(hc.ValidationError, match="resolve_escalation"):
            store.resume_task(t.id)
        human = store.claim_next("human")
        assert human is not None and human.handoff.id == task.steps[0]["escalation_id"]
        store.complete(human, outcome="done by hand")
        task = store.get_task(t.id)
        assert task.status == "in_progress"
        assert statuses(task) == {"research": "skipped", "draft": "ready"}
        assert task.steps[0]["escalation_id"] is None
        assert store.claim_next("writer") is not None


def test_fail_task_ends_a_task_with_its_reason() -> None:
    with hc.Store.memory() as store:
        t = store.create_task("Post", steps=TWO_STEPS)
        store.start_task(t.id)
        for reason in (None, " "):
            with pytest.raises(hc.ValidationError) as refused:
                store.fail_task(t.id, reason)
            assert [field for field, _ in refused.value.problems] == ["reason"]
        failed = store.fail_task(t.id, "requirements changed")
        assert (failed.status, failed.failure) == ("failed", "requirements changed")
        assert statuses(failed) == {"research": "cancelled", "draft": "cancelled"}
        assert store.claim_next("researcher") is None
        last = store.task_events(t.id)[-1]
        assert (last.kind, last.detail) == ("failed", {"reason": "requirements changed"})
        assert store.task_history(limit=1)[0].result == "failure"


def test_pausing_withdraws_offers_and_resuming_makes_them_again() -> None:
    with hc.Store.memory() as store:
        t = store.create_task("Post", steps=TWO_STEPS)
        offer = store.start_task(t.id).steps[0]["handoff_id"]
        paused = store.pause_task(t.id)
        assert (paused.status, paused.steps[0]["status"]) == ("paused", "pending")
        assert store.get(offer).status == "cancelled"
        assert store.claim_next("researcher") is None
        assert store.resume_task(t.id).current_steps == ["research"]
        assert store.claim_next("researcher") is not None


def test_aio_joins_hands_on_and_completes() -> None:
    async def main() -> None:
        async with hc.aio.Store.memory() as store:
            await store.create_task(ID, id=ID, objectives=OBJECTIVES[:1])
            await store.start_task(ID)
            joined = await store.join_task(ID, "agent-b", role="expert", objectives=["1"])
            assert joined.members[0]["role"] == "expert"
            claim = await store.claim_next("agent-b")
            assert claim is not None
            escalation = await store.escalate_step(claim, "oauth-expert", blockers=["stuck"])
            expert = await store.claim_next("oauth-expert")
            assert expert is not None and expert.handoff.id == escalation.id
            await store.complete(expert, outcome="fixed")
            done = await store.complete_task(ID, result_summary="Fixed", merge_to_main=True)
            assert (done.status, done.result_summary) == ("completed", "Fixed")
            other = await store.create_task("Other", "g")
            assert (await store.fail_task(other.id, "dropped")).failure == "dropped"

    asyncio.run(main())
