"""The seeds' own names (issue 47) from Python: keyword arguments under seed 001's names
(``from_agent_id``, ``handoff_type``, ``priority_objectives``) and seed 000's
(``pending_only``) reach the core's operations, which read them as their own arguments; a goal
left out is the task's; ``accepted`` is ``claimed``."""

from __future__ import annotations

from typing import Any

import pytest

import handoff_core as hc


def problems_of(call: Any) -> list[tuple[str, str]]:
    with pytest.raises(hc.ValidationError) as caught:
        call()
    return caught.value.problems


def test_seed_001_escalation_then_accepted() -> None:
    with hc.Store.memory() as store:
        task = store.create_task("fix-oauth-token-refresh", "Fix the OAuth2 token refresh")
        h = store.create(
            task.id,
            from_agent_id="agent-investigator",  # type: ignore[call-arg]
            handoff_type="escalation",
            instructions="Found the issue in token_service.py:142",
            blockers=["Unclear OAuth2 state transition after refresh failure"],
            priority_objectives=[1, 2],
        )
        assert h.goal == "Fix the OAuth2 token refresh"
        assert h.from_agent == "agent-investigator"
        assert h.kind == "escalation"
        assert h.priority_items == ["1", "2"]
        assert [x.id for x in store.list(pending_only=True)] == [h.id]
        store.claim(h.id, "agent-oauth-expert")
        assert [x.id for x in store.list(status="accepted")] == [h.id]  # type: ignore[arg-type]
        assert store.list(pending_only=True) == []


def test_a_name_and_its_seed_name_together_are_refused() -> None:
    with hc.Store.memory() as store:
        with pytest.raises(TypeError, match="'kind' \\(given as 'kind' and 'handoff_type'\\)"):
            store.create("t", "g", kind="full", handoff_type="partial")  # type: ignore[call-arg]
        assert problems_of(lambda: store.create("t", "g", handoff_type="sideways"))[0][0] == "handoff_type"  # type: ignore[call-arg]
        assert [f for f, _ in problems_of(lambda: store.list(status="pending", pending_only=True))] == [
            "pending_only"
        ]
        # No task and no earlier handoff to take a goal from.
        assert [f for f, _ in problems_of(lambda: store.create("t-new"))] == ["goal"]
