"""The manager/worker protocol through the generated bindings: a short run from the
initialization to the manager's completion, with a refinement, an escalation decided by the
manager and a human's resolution; the typed body on every message; a malformed report refused
by the name of its field, writing nothing."""

from __future__ import annotations

import json

import pytest

from conftest import hf


def take(store: hf.Store, agent: str) -> hf.Claim:
    claim = store.claim_next(agent)
    assert claim is not None, f"nothing for {agent}"
    return claim


def initialize(store: hf.Store, task_id: str = "task_12345") -> hf.Handoff:
    return store.initialize(
        task_id, "manager", "worker", "Add token refresh", ["expired tokens are refreshed"],
        context=hf.InitContext(project_root="/app", relevant_files=["src/auth.js"]),
    )


def test_a_short_run(store: hf.Store) -> None:
    init = initialize(store)
    assert (init.kind, init.to_agent) == (hf.HandoffKind.INITIALIZATION, "worker")
    assert init.protocol.handoff_type == hf.HandoffType.INITIALIZATION
    assert init.protocol.context.relevant_files == ["src/auth.js"]

    review = store.report(
        take(store, "worker").reference(), hf.WorkerStatus.PARTIAL,
        accomplished=["refresh on 401"],
        files_modified=[hf.FileChange(path="src/auth.js", description="refresh on 401")],
        tests=hf.Tests(added=2, passing=2, coverage="80%"),
        issues=["no retries yet"],
    )
    assert review.to_agent == "manager"
    assert review.protocol.worker_report.status == hf.WorkerStatus.PARTIAL
    assert review.protocol.worker_report.tests.coverage == "80%"

    refine = store.decide(
        take(store, "manager").reference(), hf.Decision.REFINE, instructions="Add retries",
        context_updates=hf.ContextUpdates(new_patterns=["retry with backoff"]),
    )
    assert refine is not None and refine.to_agent == "worker"
    assert (refine.protocol.iteration, refine.protocol.manager_decision) == (2, hf.Decision.REFINE)
    assert refine.protocol.continuation_instructions == "Add retries"

    store.report(take(store, "worker").reference(), hf.WorkerStatus.FAILED, issues=["CI is down"])
    details = hf.EscalationDetails(
        category=hf.Category.RESOURCE, severity=hf.Severity.HIGH, urgency=hf.Urgency.HIGH,
        blocker_type=hf.BlockerType.ENVIRONMENT, description="CI is down",
        impact="Nothing can be tested", recommendation="Restart the runners",
    )
    escalation = store.decide(
        take(store, "manager").reference(), hf.Decision.ESCALATE, escalation_details=details
    )
    assert escalation is not None
    assert (escalation.kind, escalation.to_agent) == (hf.HandoffKind.ESCALATION, "human")
    assert escalation.protocol.escalation_details == details
    history = escalation.protocol.complete_history
    assert [item.outcome for item in history] == ["refine", "escalate"]
    assert json.loads(history[0].worker_report)["status"] == "PARTIAL"
    assert escalation.protocol.current_state.files_modified == ["src/auth.js"]

    resolved = store.resolve(take(store, "human").reference(), "Runners restarted")
    assert resolved.to_agent == "manager"
    assert resolved.protocol.resume_instructions == "Runners restarted"
    assert store.decide(take(store, "manager").reference(), hf.Decision.COMPLETE) is None

    run = store.protocol_run("task_12345")
    assert (run.phase, run.iteration, run.escalations) == (hf.ProtocolPhase.COMPLETED, 2, 1)
    messages = store.protocol_history("task_12345")
    assert [m.protocol.handoff_type for m in messages] == [
        hf.HandoffType.INITIALIZATION, hf.HandoffType.PROGRESS, hf.HandoffType.PROGRESS,
        hf.HandoffType.PROGRESS, hf.HandoffType.ESCALATION, hf.HandoffType.PROGRESS,
    ]
    assert all(hf.handoff_from_json(hf.handoff_to_json(m)) == m for m in messages)
    stats = store.protocol_stats()
    assert (stats.runs, stats.completed, stats.escalated, stats.escalation_rate) == (1, 1, 1, 1.0)
    assert [r.task_id for r in stats.per_run] == ["task_12345"]


def test_a_malformed_report_names_its_field_and_writes_nothing(store: hf.Store) -> None:
    initialize(store)
    claim = take(store, "worker")
    before = (store.list(), store.protocol_run("task_12345"))
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.report(
            claim.reference(), hf.WorkerStatus.FAILED,
            files_modified=[hf.FileChange(path="src/auth.js", description="")],
        )
    assert [p.field for p in err.value.problems] == ["files_modified[0].description", "issues"]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.report(claim.reference(), hf.WorkerStatus.PARTIAL, issues=["x" * (64 * 1024 + 1)])
    assert [p.field for p in err.value.problems] == ["issues[0]"]
    assert (store.list(), store.protocol_run("task_12345")) == before
    # Out of turn: the worker holds instructions, not a report to decide on.
    with pytest.raises(hf.HandoffError.InvalidTransition):
        store.decide(claim.reference(), hf.Decision.COMPLETE)
    with pytest.raises(hf.HandoffError.NotFound):
        store.protocol_run("no-such-task")
