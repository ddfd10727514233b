"""The manager/worker protocol (issue #16) from Python and ``hc.aio``: a run through REFINE, an
error recovery, an escalation and its resolution; malformed bodies refused by name with the
store unchanged."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import handoff_core as hc

OPENAI_KEY = "sk-proj-" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7n"
ERROR: dict[str, Any] = {
    "error_type": "configuration",
    "severity": "high",
    "description": "the OAuth sandbox rejects the client id",
}


def take(store: hc.Store, agent: str) -> hc.Claim:
    claim = store.claim_next(agent)
    assert claim is not None, f"no message for {agent}"
    return claim


def start(store: hc.Store, task_id: str = "task_12345", **kwargs: Any) -> hc.Handoff:
    return store.initialize(
        task_id,
        manager="manager",
        worker="worker",
        instructions="Add token refresh to src/auth.js",
        success_criteria=["401 triggers one refresh", "retries back off"],
        context={"project_root": "/app", "relevant_files": ["src/auth.js"]},
        **kwargs,
    )


def test_the_issue_example_runs_through_refine_recovery_and_escalation() -> None:
    with hc.Store.memory() as store:
        init = start(store, max_retries=1)
        assert init.kind == "initialization" and init.to_agent == "worker"
        assert init.protocol is not None and init.protocol["handoff_type"] == "initialization"
        assert init.protocol["context"]["relevant_files"] == ["src/auth.js"]

        claim = take(store, "worker")
        review = store.report(
            claim,
            status="PARTIAL",
            accomplished=["refresh on 401"],
            files_modified=[{"path": "src/auth.js", "description": "refresh call"}],
            tests={"added": 5, "passing": 5, "coverage": "85%"},
            issues=["no backoff yet"],
        )
        assert review.kind == "progress" and review.to_agent == "manager"
        assert review.parent_id == claim.handoff.id
        assert store.get(claim.handoff.id).outcome == "reported PARTIAL"
        assert "## Worker Report: PARTIAL" in review.to_markdown()

        refine = store.decide(take(store, "manager"), "REFINE", instructions="Add exponential backoff")
        assert refine is not None and refine.protocol is not None
        assert (refine.protocol["iteration"], refine.protocol["manager_decision"]) == (2, "REFINE")
        assert refine.protocol["continuation_instructions"] == "Add exponential backoff"

        store.report_error(take(store, "worker"), **ERROR)
        retry = store.recover(take(store, "manager"), "use the staging client", ["read STAGING_ID", "retry"])
        assert retry.protocol is not None and retry.protocol["retry_count"] == 1
        store.report_error(take(store, "worker"), **ERROR)
        forced = store.recover(take(store, "manager"), "again", ["retry"])
        assert (forced.kind, forced.to_agent) == ("escalation", "human")
        assert forced.protocol is not None
        assert [h["outcome"] for h in forced.protocol["complete_history"]] == ["refine", "error", "error"]
        assert forced.protocol["current_state"]["files_modified"] == ["src/auth.js"]

        resumed = store.resolve(take(store, "human"), "Registered the client id",
                                resume_instructions="finish the backoff")
        assert resumed.protocol is not None
        assert "finish the backoff" in resumed.protocol["resume_instructions"]
        last = take(store, "manager")
        assert store.decide(last, "COMPLETE", summary="refresh and backoff done") is None
        assert store.get(last.handoff.id).outcome == "COMPLETE: refresh and backoff done"

        run = store.protocol_run("task_12345")
        assert (run.phase, run.retry_count, run.escalations, run.message_id) == ("completed", 1, 1, None)
        assert run.to_dict()["history"][0]["outcome"] == "refine"
        kinds = [h.kind for h in store.protocol_history("task_12345")]
        assert kinds[0] == "initialization" and kinds[-2:] == ["escalation", "progress"]
        stats = store.protocol_stats()
        assert (stats.runs, stats.completed, stats.escalated, stats.retries) == (1, 1, 1, 1)
        assert stats.escalation_rate == 1.0 and stats.per_run[0]["iterations"] == 2


def test_an_explicit_escalation_and_a_call_out_of_turn() -> None:
    with hc.Store.memory() as store:
        start(store)
        work = take(store, "worker")
        with pytest.raises(hc.InvalidTransition):
            store.decide(work, "COMPLETE")
        store.report(work, "COMPLETED")
        # docs/design.md §8's signature: every detail by position.
        escalation = store.escalate(take(store, "manager"), "security", "critical", "immediate", "access",
                                    "the client secret is in the repo", "anyone can mint tokens", "rotate it")
        assert escalation.protocol is not None
        assert escalation.protocol["escalation_details"]["urgency"] == "immediate"
        with pytest.raises(hc.NotFound):
            store.protocol_run("nope")
        with pytest.raises(hc.ValidationError) as err:
            start(store)  # a task runs the protocol once
        assert err.value.problems[0][0] == "task_id"


def test_malformed_bodies_name_the_field_and_change_nothing() -> None:
    with hc.Store.memory() as store:
        start(store)
        claim = take(store, "worker")
        before = (store.list(), store.protocol_run("task_12345").to_dict())

        def fields(**kwargs: Any) -> list[str]:
            with pytest.raises(hc.ValidationError) as err:
                store.report(claim, **kwargs)
            return [field for field, _ in err.value.problems]

        assert fields(status="DONE", files_modified=[{"path": "a"}]) == [
            "status", "files_modified[0].description"]
        assert fields(status="PARTIAL", issues=["x" * (store.limits.max_field_bytes + 1)]) == ["issues[0]"]
        assert fields(status="FAILED") == ["issues"]
        with pytest.raises(TypeError, match="mood"):
            store.report(claim, "PARTIAL", issues=["i"], mood="good")  # type: ignore[call-arg]
        deep: Any = "leaf"
        for _ in range(10_000):
            deep = [deep]
        assert fields(status="PARTIAL", issues=["i"], accomplished=deep)[0].startswith("accomplished")
        assert (store.list(), store.protocol_run("task_12345").to_dict()) == before


def test_secrets_in_a_body_are_redacted_where_they_leave_the_library() -> None:
    with hc.Store.memory() as store:
        start(store)
        review = store.report(take(store, "worker"), "PARTIAL", issues=[f"the key {OPENAI_KEY} leaked"])
        assert review.protocol is not None and OPENAI_KEY in review.protocol["worker_report"]["issues"][0]
        assert OPENAI_KEY not in review.to_markdown()


def test_aio_runs_the_loop() -> None:
    async def main() -> None:
        async with hc.aio.Store.memory() as store:
            await store.initialize("t1", manager="m", worker="w", instructions="Do it",
                                   success_criteria=["done"])
            work = await store.claim_next("w")
            assert work is not None
            await store.report(work, "COMPLETED")
            review = await store.claim_next("m")
            assert review is not None
            assert await store.decide(review, "COMPLETE") is None
            assert (await store.protocol_run("t1")).phase == "completed"
            assert len(await store.protocol_history("t1")) == 2
            assert (await store.protocol_stats()).first_try_completion_rate == 1.0

    asyncio.run(main())
