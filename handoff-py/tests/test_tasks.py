"""Tasks whose plan steps run as handoffs, memory with compare-and-swap, and sessions (issue #15),
from Python and from ``hc.aio``."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from typing import Any

import pytest

import handoff_core as hc

POST: list[dict[str, Any]] = [
    {"id": "research", "name": "Research", "agent": "researcher", "dependencies": []},
    {"id": "draft-ko", "name": "Draft (ko)", "agent": "writer", "dependencies": ["research"]},
    {"id": "review", "name": "Review", "agent": "reviewer", "dependencies": ["draft-ko"]},
]


def finish(store: hc.Store, agent: str, **kwargs: Any) -> hc.Handoff:
    claim = store.claim_next(agent)
    assert claim is not None, f"nothing offered to {agent}"
    return store.complete(claim, **kwargs)


def test_the_issue_example_runs_a_plan_step_by_step() -> None:
    with hc.Store.memory() as store:
        t = store.create_task("Write a post", "A bilingual blog post", steps=POST)
        assert (t.status, t.version, t.steps_total) == ("pending", 1, 3)
        store.start_task(t.id)
        c = store.claim_next("researcher")
        assert c is not None and c.handoff.kind == "initialization"
        assert c.handoff.metadata["step_id"] == "research"
        store.complete(c, outcome="notes in research.md", tokens_used=1200)
        task = store.get_task(t.id)
        assert task.current_steps == ["draft-ko"]
        assert task.steps[0]["output"] == "notes in research.md"
        finish(store, "writer", outcome="draft", tokens_used=800)
        finish(store, "reviewer")
        done = store.get_task(t.id)
        assert (done.status, done.steps_done, done.tokens_used) == ("completed", 3, 2000)

        state = done.to_dict()
        assert state["plan"]["goal"] == "A bilingual blog post"
        assert [s["dependencies"] for s in state["plan"]["steps"]] == [[], ["research"], ["draft-ko"]]

        [entry] = store.task_history()
        assert (entry.result, entry.metrics["steps_completed"], entry.metrics["tokens_used"]) == (
            "success",
            3,
            2000,
        )
        stats = store.task_statistics()
        assert (stats.total_tasks, stats.success_rate, stats.by_result) == (1, 1.0, {"success": 1})
        kinds = [e.kind for e in store.task_events(t.id)]
        assert kinds[:3] == ["created", "started", "step_offered"]
        assert kinds[-1] == "completed"
        assert [s.id for s in store.list_tasks(status="completed")] == [t.id]


def test_a_failing_step_is_retried_then_escalated_and_resolved() -> None:
    with hc.Store.memory() as store:
        steps: list[dict[str, Any]] = [{**POST[0], "max_attempts": 2}, *POST[1:]]
        t = store.start_task(store.create_task("Post", "g", steps, escalate_to="editor").id)
        for attempt in (1, 2):
            claim = store.claim_next("researcher")
            assert claim is not None
            store.fail_step(claim, f"the search API failed ({attempt})")
        paused = store.get_task(t.id)
        assert paused.status == "paused"
        assert paused.steps[0]["status"] == "escalated"
        assert paused.retries == 2

        escalation = store.claim_next("editor")
        assert escalation is not None and escalation.handoff.kind == "escalation"
        assert "the search API failed (2)" in escalation.handoff.unresolved_errors
        resumed = store.resolve_escalation(escalation, "try once more", retry=True)
        assert resumed.status == "in_progress"
        finish(store, "researcher")
        assert store.get_task(t.id).current_steps == ["draft-ko"]


def test_fail_step_refuses_a_handoff_that_is_no_step() -> None:
    with hc.Store.memory() as store:
        store.create("t1", "Fix the login bug")
        claim = store.claim_next("anyone")
        assert claim is not None
        with pytest.raises(hc.InvalidTransition):
            store.fail_step(claim, "x")
        assert store.get(claim.handoff_id).attempts == 0


def test_pause_resume_and_cancel() -> None:
    with hc.Store.memory() as store:
        t = store.start_task(store.create_task("Post", "g", POST).id)
        claim = store.claim_next("researcher")
        assert claim is not None
        store.pause_task(t.id)
        store.complete(claim, outcome="notes")  # a claimed step may finish
        assert store.claim_next("writer") is None  # a paused task offers nothing
        store.resume_task(t.id)
        draft = store.claim_next("writer")
        assert draft is not None
        cancelled = store.cancel_task(t.id, reason="plans changed")
        assert cancelled.status == "cancelled"
        assert store.task_history()[0].result == "failure"


def test_a_bad_plan_reports_every_problem_and_leaves_nothing() -> None:
    with hc.Store.memory() as store:
        with pytest.raises(hc.ValidationError) as refused:
            store.create_task(
                "Broken",
                " ",  # blank (left out, it is the name)
                [
                    {"id": "a", "name": "A", "agent": "x", "dependencies": ["b"]},
                    {"id": "b", "name": "B", "agent": "x", "dependencies": ["a"]},
                    {"id": "b", "name": "B again", "agent": "bad agent!", "dependencies": ["nowhere"]},
                ],
            )
        problems = refused.value.problems
        assert "goal" in {field for field, _ in problems}
        assert len(problems) >= 4, problems
        assert any("cycle" in rule for _, rule in problems), problems
        assert store.list_tasks() == []
        with pytest.raises(TypeError):
            store.create_task("x", "y", POST, unknown=1)  # type: ignore[call-arg]


def test_update_task_is_compare_and_swap() -> None:
    with hc.Store.memory() as store:
        t = store.create_task("Post", "g", POST)
        updated = store.update_task(t.id, t.version, goal="A better goal", artifacts=["post.md"])
        assert (updated.goal, updated.version, updated.artifacts) == ("A better goal", 2, ["post.md"])
        with pytest.raises(hc.Conflict) as stale:
            store.update_task(t.id, t.version, goal="lost update")
        assert (stale.value.expected_version, stale.value.actual_version) == (1, 2)
        assert store.get_task(t.id).goal == "A better goal"
        with pytest.raises(hc.NotFound):
            store.get_task("no-such-task")


def test_memory_versions_and_updates() -> None:
    with hc.Store.memory() as store:
        assert store.memory_get("agent:writer") is None
        first = store.memory_put("agent:writer", {"style": "terse"}, expected_version=0)
        assert (first.version, first.value) == (1, {"style": "terse"})
        with pytest.raises(hc.Conflict):
            store.memory_put("agent:writer", {"style": "lost"}, expected_version=0)
        bumped = store.memory_update("shared", lambda v: {**v, "n": v.get("n", 0) + 1})
        assert bumped.value == {"n": 1}

        def refuse(_: dict[str, Any]) -> dict[str, Any]:
            raise RuntimeError("the model said no")

        with pytest.raises(RuntimeError, match="the model said no"):
            store.memory_update("shared", refuse)
        assert store.memory_get("shared").version == 1  # type: ignore[union-attr]
        with pytest.raises(hc.ValidationError):
            store.memory_update("shared", lambda v: ["not", "a", "dict"])  # type: ignore[arg-type,return-value]
        assert [m.scope for m in store.memory_list(prefix="agent:")] == ["agent:writer"]
        assert store.memory_delete("agent:writer", expected_version=1) is True
        assert store.memory_delete("agent:writer") is False
        with pytest.raises(hc.ValidationError):
            store.memory_put("bad scope", {})


def test_a_session_says_who_owns_it() -> None:
    with hc.Store.memory() as store:
        h = store.create("chat", "Answer the billing question", from_agent="triage", to_agent="billing", session_id="s1")
        assert store.session("s1").current_agent == "triage"
        claim = store.claim(h.id, "billing")
        s = store.session("s1")
        assert (s.current_agent, [hop.handoff_id for hop in s.handoff_chain]) == ("billing", [h.id])
        store.complete(claim)
        assert store.session("nobody").current_agent is None


def _increment(path: str, rounds: int) -> None:
    store = hc.open(path)
    for _ in range(rounds):
        store.memory_update("counter", lambda v: {"n": v.get("n", 0) + 1})


def test_processes_count_exactly_through_memory_update(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "count.db")
    hc.open(path).close()
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_increment, args=(path, 50)) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
        assert w.exitcode == 0
    memory = hc.open(path).memory_get("counter")
    assert memory is not None and memory.value == {"n": 200}


def test_aio_runs_tasks_and_concurrent_async_updates() -> None:
    async def main() -> None:
        async with hc.aio.Store.memory() as store:
            t = await store.create_task("Post", "g", POST)
            await store.start_task(t.id)
            claim = await store.claim_next("researcher")
            assert claim is not None
            await store.complete(claim, outcome="notes")
            assert (await store.get_task(t.id)).current_steps == ["draft-ko"]

            async def add_one(value: dict[str, Any]) -> dict[str, Any]:
                await asyncio.sleep(0)
                return {"n": value.get("n", 0) + 1}

            await asyncio.gather(*(store.memory_update("shared", add_one) for _ in range(20)))
            memory = await store.memory_get("shared")
            assert memory is not None and memory.value == {"n": 20}
            assert (await store.session("s")).current_agent is None

    asyncio.run(main())
