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


def judge(item: dict[str, Any]) -> float:
    """The seed's LLM judge, by rule: a guess fails, a conversation passes once it reaches the fix."""
    if item.get("kind") == "conversation" or "messages" in item:
        text = " ".join(str(m.get("content", "")) for m in item.get("messages", []))
        return 0.9 if "backoff" in text else 0.5
    return 0.2 if str(item.get("text", "")).startswith("Maybe") else 0.9


def test_seed_001_all_nine_steps_and_the_next_successor() -> None:
    with hc.Store.memory() as store:
        # 1–2: the task and agent A, who writes what it found on its branch.
        store.create_task(ID, id=ID, objectives=OBJECTIVES)
        store.start_task(ID)
        a = store.join_task(ID, "agent-investigator", role="investigator", objectives=[1]).members[0]
        store.add_facts(a["branch"], ["The failure is in token_service.py:142", "Maybe the clock is skewed"])
        store.add_conversation(a["branch"], [
            {"role": "user", "content": "Why does the token refresh fail?"},
            {"role": "assistant", "content": "The failure is in token_service.py:142."},
        ], title="Investigation")
        # 3–4: the escalation as the seed writes it, accepted by the expert, who reads A's work.
        escalation = store.create(ID, from_agent_id="agent-investigator", handoff_type="escalation",  # type: ignore[call-arg]
                                  instructions="Need someone with OAuth2 expertise.",
                                  blockers=["Unclear OAuth2 state transition after refresh failure"])
        accepted = store.claim(escalation.id, "agent-oauth-expert")
        packet = store.context_for(escalation.id).markdown
        assert "The failure is in token_service.py:142" in packet and "(unverified)" in packet
        # 5: B fixes it; C joins to test.
        store.join_task(ID, "agent-oauth-expert", role="expert")
        store.join_task(ID, "agent-tester", role="tester")
        b_branch = f"task/{ID}/agent-oauth-expert"
        store.add_facts(b_branch, ["Token refresh needs retry logic with exponential backoff"])
        messages = [{"role": "assistant", "content": f"Step {i}."} for i in range(1, 17)]
        messages[8] = {"role": "assistant", "content": "I'll add retry logic with exponential backoff."}
        conversation = store.add_conversation(b_branch, messages, title="The fix")
        store.complete(accepted, "Retry with exponential backoff")
        # 6: the picks, the first verified as it is picked.
        picked = store.cherry_pick(conversation.id, f"task/{ID}", judge, from_seq=5, to_seq=15, verify=True)
        assert picked.message_count == 11
        store.cherry_pick_decisions(conversation.id, f"task/{ID}")
        # 7: verify the task's branch (its agents' with it) and complete it into main.
        report = store.verify(f"task/{ID}", judge)
        assert report.invalidated == 1, report.items
        done = store.complete_task(ID, result_summary="Retry with exponential backoff", merge_to_main=True)
        assert done.status == "completed" and done.result_summary == "Retry with exponential backoff"
        fix = "Token refresh needs retry logic with exponential backoff"
        assert fix in [f.text for f in store.facts("main")]
        assert not any(f.text.startswith("Maybe") for f in store.facts("main"))
        # 8: the bundle, made after the merge, holds the task's verified knowledge.
        bundle = store.create_bundle("OAuth2 Token Refresh Fix Playbook", task_id=ID, verified_only=True,
                                     visibility="team")
        assert bundle.fact_count == 2 and bundle.conversation_count >= 1
        assert bundle.share_token is not None and bundle.share_token.startswith("kb_")
        # 9: imported into main by its id (nothing twice), it reaches the next task's successor.
        assert store.import_bundle(bundle_id=bundle.id, target_branch="main").facts_added == 0
        nxt = store.create("oauth-login-loop", "Users are logged out when the OAuth token refresh fails",
                           to_agent="agent-next")
        assert fix in store.context_for(nxt.id).markdown
        # The run again, seeded with what it verified.
        again = store.rerun_task(ID, id=f"{ID}-2", agents={"agent-investigator": "agent-investigator-2"})
        assert again.metadata["rerun_of"] == ID
        assert fix in [f.text for f in store.facts(f"task/{ID}-2")]
