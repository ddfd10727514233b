"""Tasks, steps, memory and sessions through the generated bindings: a plan's steps go to
their agents as handoffs, a bad plan reports every problem at once, a stale update changes
nothing, memory is versioned and updated through a Python updater."""

from __future__ import annotations

import json

import pytest

from conftest import hf, new


def plan() -> list[hf.StepSpec]:
    return [
        hf.StepSpec(id="research", name="Research", agent="researcher"),
        hf.StepSpec(id="draft-ko", name="Draft in Korean", agent="writer", dependencies=["research"]),
        hf.StepSpec(id="review", name="Review", agent="reviewer", dependencies=["draft-ko"]),
    ]


def create(store: hf.Store, steps: list[hf.StepSpec] | None = None) -> hf.Task:
    return store.create_task(
        "Blog post", "A bilingual post", plan() if steps is None else steps,
        success_criteria=["published"], context=json.dumps({"user_request": "write it"}),
    )


def test_a_plan_goes_to_its_agents_step_by_step(store: hf.Store) -> None:
    task = create(store)
    assert task.status == hf.TaskStatus.PENDING
    assert [s.id for s in task.steps] == ["research", "draft-ko", "review"]
    assert json.loads(task.context) == {"user_request": "write it"}
    assert store.claim_next("researcher") is None

    task = store.start_task(task.id)
    assert task.status == hf.TaskStatus.IN_PROGRESS
    assert task.steps[0].status == hf.StepStatus.READY
    assert store.claim_next("writer") is None

    claim = store.claim_next("researcher")
    assert claim is not None and claim.handoff.id == store.get_task(task.id).steps[0].handoff_id
    done = store.complete(claim.reference(), "three sources", tokens_used=1200)
    assert store.events(done.id)[-1].change == hf.Change.COMPLETED(
        outcome="three sources", tokens_used=1200
    )

    task = store.get_task(task.id)
    research, draft, review = task.steps
    assert (research.status, research.output, research.tokens_used) == (
        hf.StepStatus.COMPLETED, "three sources", 1200
    )
    assert (draft.status, review.status) == (hf.StepStatus.READY, hf.StepStatus.PENDING)
    assert task.tokens_used == 1200 and task.steps_done == 1

    writer = store.claim_next("writer")
    assert writer is not None
    assert writer.handoff.id == draft.handoff_id and writer.handoff.to_agent == "writer"

    # The seed's task-state.json form, for whoever reads what the seed wrote.
    seed = json.loads(store.get_task(task.id).task_json)
    assert seed["plan"]["goal"] == "A bilingual post"
    assert seed["plan"]["current_steps"] == ["draft-ko"]
    assert seed["plan"]["steps"][1]["dependencies"] == ["research"]
    assert seed["plan"]["steps"][0]["tokens_used"] == 1200

    kinds = [e.kind for e in store.task_events(task.id)]
    assert kinds[:4] == ["created", "started", "step_offered", "step_started"]
    completed = next(e for e in store.task_events(task.id) if e.kind == "step_completed")
    assert (json.loads(completed.detail), completed.actor) == ({"step": "research"}, "researcher")
    [summary] = store.list_tasks(status=hf.TaskStatus.IN_PROGRESS)
    assert (summary.id, summary.steps_total, summary.steps_open) == (task.id, 3, 2)


def test_a_bad_plan_reports_every_problem_at_once(store: hf.Store) -> None:
    bad = [
        hf.StepSpec(id="a", name="A", agent="researcher", dependencies=["c"]),
        hf.StepSpec(id="a", name="A again", agent="writer"),
        hf.StepSpec(id="b", name="B", agent="writer", dependencies=["ghost"]),
        hf.StepSpec(id="c", name="C", agent="reviewer", dependencies=["a"]),
    ]
    with pytest.raises(hf.HandoffError.Validation) as err:
        create(store, bad)
    problems = [(p.field, p.rule) for p in err.value.problems]
    assert [field for field, _ in problems] == [
        "steps[1].id", "steps[2].dependencies[0]", "steps[0].dependencies",
    ]
    assert "ghost" in problems[1][1] and "a → c → a" in problems[2][1]
    assert store.list_tasks() == []


def test_a_stale_update_is_a_version_conflict_and_changes_nothing(store: hf.Store) -> None:
    task = create(store)
    with pytest.raises(hf.HandoffError.Conflict) as err:
        store.update_task(task.id, task.version + 1, goal="Another goal")
    assert (err.value.id, err.value.expected_version, err.value.actual_version) == (
        task.id, task.version + 1, task.version,
    )
    assert str(task.version) in err.value.description
    assert store.get_task(task.id) == task

    updated = store.update_task(
        task.id, task.version, goal="Another goal",
        artifacts=[json.dumps({"path": "post.md"})],
        add_steps=[hf.StepSpec(id="publish", name="Publish", agent="writer", dependencies=["review"])],
    )
    assert updated.version > task.version and updated.goal == "Another goal"
    assert [json.loads(a) for a in updated.artifacts] == [{"path": "post.md"}]
    assert [s.id for s in updated.steps][-1] == "publish"


def test_an_unknown_task_is_not_found(store: hf.Store) -> None:
    with pytest.raises(hf.HandoffError.NotFound) as err:
        store.get_task("nope")
    assert (err.value.what, err.value.id) == ("task", "nope")


def test_a_failed_step_escalates_and_a_human_resolves_it(store: hf.Store) -> None:
    steps = plan()
    steps[0].max_attempts = 1
    task = store.start_task(create(store, steps).id)
    claim = store.claim_next("researcher")
    assert claim is not None
    assert store.fail_step(claim.reference(), "no sources").attempts == 1
    task = store.get_task(task.id)
    assert (task.status, task.steps[0].status) == (hf.TaskStatus.PAUSED, hf.StepStatus.ESCALATED)

    escalation = store.claim_next("human")
    assert escalation is not None
    task = store.resolve_escalation(escalation.reference(), "skip it")
    assert task.steps[0].status == hf.StepStatus.SKIPPED
    assert task.steps[1].status == hf.StepStatus.READY

    cancelled = store.cancel_task(task.id, reason="enough")
    assert cancelled.status == hf.TaskStatus.CANCELLED
    [entry] = store.task_history()
    assert (entry.id, entry.result) == (task.id, hf.TaskResult.FAILURE)
    assert store.task_statistics().by_result == {"failure": 1}
    assert store.prune(0, keep_details_days=0) == 1


def test_pause_and_resume(store: hf.Store) -> None:
    task = store.start_task(create(store).id)
    assert store.pause_task(task.id).status == hf.TaskStatus.PAUSED
    assert store.resume_task(task.id).status == hf.TaskStatus.IN_PROGRESS


class Increment(hf.MemoryUpdater):
    def __init__(self) -> None:
        self.calls = 0

    def update(self, current: str) -> str:
        self.calls += 1
        value = json.loads(current)
        value["n"] = value.get("n", 0) + 1
        return json.dumps(value)


class Refuses(hf.MemoryUpdater):
    def __init__(self, error: Exception) -> None:
        self.error = error

    def update(self, current: str) -> str:
        raise self.error


def test_memory_is_versioned(store: hf.Store) -> None:
    assert store.memory_get("agent:writer") is None
    first = store.memory_put("agent:writer", json.dumps({"tone": "warm"}), expected_version=0)
    assert (first.version, json.loads(first.value)) == (1, {"tone": "warm"})
    with pytest.raises(hf.HandoffError.Conflict) as err:
        store.memory_put("agent:writer", "{}", expected_version=0)
    assert (err.value.expected_version, err.value.actual_version) == (0, 1)
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.memory_put("agent:writer", "[1]")
    assert err.value.problems[0].field == "value"
    assert store.memory_get("agent:writer") == first

    second = store.memory_put("agent:writer", json.dumps({"tone": "dry"}), expected_version=1)
    assert second.version == 2
    assert [m.scope for m in store.memory_list(prefix="agent:")] == ["agent:writer"]
    assert store.memory_delete("agent:writer", expected_version=2)
    assert store.memory_get("agent:writer") is None and store.memory_list() == []


def test_memory_update_goes_through_the_updater(store: hf.Store) -> None:
    increment = Increment()
    store.memory_update("shared", increment)
    memory = store.memory_update("shared", increment)
    assert (memory.version, json.loads(memory.value), increment.calls) == (2, {"n": 2}, 2)


def test_an_updater_that_throws_writes_nothing(store: hf.Store) -> None:
    store.memory_put("shared", json.dumps({"n": 1}))
    before = store.memory_get("shared")
    # A Python exception arrives as `Foreign`, carrying its text.
    with pytest.raises(hf.HandoffError.Foreign) as err:
        store.memory_update("shared", Refuses(ValueError("the model said no")))
    assert "the model said no" in err.value.description
    # A HandoffError arrives as it was thrown.
    mine = hf.HandoffError.Validation(
        description="mine: no", problems=[hf.ValidationProblem(field="mine", rule="no")]
    )
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.memory_update("shared", Refuses(mine))
    assert err.value.problems[0].field == "mine"
    assert store.memory_get("shared") == before


def test_a_session_knows_who_owns_it(store: hf.Store) -> None:
    store.create(new(from_agent="triage", to_agent="billing", session_id="s1"))
    store.memory_put("session:s1", json.dumps({"lang": "ko"}))
    session = store.session("s1")
    assert session.current_agent == "triage"
    assert store.claim_next("billing") is not None
    session = store.session("s1")
    assert session.current_agent == "billing"
    assert [hop.to_agent for hop in session.handoff_chain] == ["billing"]
    assert json.loads(session.context) == {"lang": "ko"}


def test_objectives_members_an_expert_a_merge_and_a_rerun(store: hf.Store) -> None:
    """Seed 001 §8 through the generated bindings: objectives under a readable id, a member
    with its objective, a step handed on to an expert, the task completed into main, and run
    again with another agent."""
    task = store.create_task("fix-oauth", id="fix-oauth", objectives=["Find the cause", "Fix it"])
    assert [(s.id, s.agent) for s in task.steps] == [("1", None), ("2", None)]
    store.start_task(task.id)
    assert store.claim_next("passer-by") is None  # not a member
    joined = store.join_task(task.id, "investigator", role="investigator", objectives=["1"])
    assert joined.members[0].branch == "task/fix-oauth/investigator"
    assert joined.steps[0].agent == "investigator"
    own = joined.steps[0].handoff_id
    assert own is not None
    mine = store.claim(own, "investigator")
    assert mine.handoff.to_agent == "investigator"
    escalation = store.escalate_step(mine.reference(), "oauth-expert", blockers=["the state machine"])
    assert (escalation.kind, escalation.from_agent) == (hf.HandoffKind.ESCALATION, "investigator")
    expert = store.claim_next("oauth-expert")
    assert expert is not None and expert.handoff.id == escalation.id
    store.complete(expert.reference(), "fixed")
    assert store.get_task(task.id).steps[0].status == hf.StepStatus.COMPLETED

    store.add_facts("task/fix-oauth/investigator", [hf.NewFact(text="Retry with backoff")])
    done = store.complete_task(task.id, result_summary="Retried with backoff", merge_to_main=True)
    assert (done.status, done.result_summary) == (hf.TaskStatus.COMPLETED, "Retried with backoff")
    assert done.steps[1].status == hf.StepStatus.SKIPPED
    kinds = [e.kind for e in store.task_events(task.id)]
    assert "agent_join" in kinds and "merge" in kinds

    again = store.rerun_task(task_id=task.id, id="fix-oauth-2", agents={"investigator": "investigator-2"})
    assert json.loads(again.metadata)["rerun_of"] == "fix-oauth"
    assert again.steps[0].agent == "investigator-2"
    failed = store.fail_task(again.id, "not needed")
    assert (failed.status, failed.failure) == (hf.TaskStatus.FAILED, "not needed")
