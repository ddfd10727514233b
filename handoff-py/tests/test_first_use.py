"""What a new user meets first (issue 11): secrets on the way out, queues and paths, open
handoffs under the policy, the seed's own payload, display names and the shapes frameworks
hand to the detector."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import handoff_core as hc

SECRET = "sk-proj-Zq3mN8vR2xT7bK4pL9wY1cH6fJ0dS5gA2eU8iO3nM7rV"
AWS = "AKIAZ3MSJV6WIBXQNJKH"


def with_secret(field: str) -> str:
    return f"{field}: use {SECRET} and {AWS}"


def secret_everywhere(store: hc.Store) -> hc.Handoff:
    return store.create(
        "t-secret",
        with_secret("goal"),
        from_agent="a",
        to_agent="b",
        reason="error: " + with_secret("reason"),
        progress=with_secret("progress"),
        completed=[with_secret("completed")],
        pending=[with_secret("pending")],
        decisions=[with_secret("decisions")],
        assumptions=[with_secret("assumptions")],
        warnings=[with_secret("warnings")],
        errors=[with_secret("errors")],
        files=[with_secret("files")],
        instructions=with_secret("instructions"),
        metadata={"nested": {"deep": [with_secret("metadata")]}},
        blockers=[with_secret("blockers")],
        locked_files=[with_secret("locked")],
        priority_items=[with_secret("priorities")],
        success_criteria=[with_secret("criteria")],
    )


def test_markdown_is_redacted_by_default_and_json_stays_whole(store: hc.Store) -> None:
    h = secret_everywhere(store)
    claim = store.claim(h.id, "b")
    done = store.complete(claim, outcome=with_secret("outcome"))
    for record in (h, claim.handoff, done):
        md = record.to_markdown()
        assert SECRET not in md and AWS not in md
        assert "[REDACTED:openai-api-key]" in md and "[REDACTED:aws-access-key-id]" in md
        assert SECRET in record.to_markdown(redact=False)
        assert SECRET in record.to_json()
    assert SECRET in store.get(h.id).to_json()


def test_a_queue_of_a_thousand_items_in_one_task(store: hc.Store) -> None:
    store.create_many([{"task_id": "queue", "goal": f"item {i}", "from_agent": "planner"} for i in range(1000)])
    taken = set()
    for i in range(1000):
        claim = store.claim_next(f"worker-{i % 4}", task_id="queue", lease_seconds=60)
        assert claim is not None
        taken.add(claim.handoff_id)
        store.complete(claim, outcome="done")
    assert len(taken) == 1000
    # One at a time too, not only in one transaction.
    for i in range(20):
        store.create("plan", f"step {i}", from_agent="planner", to_agent=f"worker-{i}")


def test_a_six_hop_path_is_refused(store: hc.Store) -> None:
    agents = ["a", "b", "c", "d", "e", "f"]
    parent = None
    for sender, successor in zip(agents, agents[1:]):
        parent = store.create("path", "goal", from_agent=sender, to_agent=successor, parent_id=parent).id
    with pytest.raises(hc.ChainViolation) as refused:
        store.create("path", "goal", from_agent="f", to_agent="g", parent_id=parent)
    assert "max_handoffs (5)" in str(refused.value)
    # Without naming a parent, the hop that gave `f` its work continues the same path.
    with pytest.raises(hc.ChainViolation):
        store.create("path", "goal", from_agent="f", to_agent="g")
    # A record with no sender starts a new path.
    store.create("path", "fresh start", to_agent="g")


def test_an_open_handoff_is_refused_to_a_non_collaborator(tmp_path: Path) -> None:
    registry = hc.AgentRegistry()
    registry.add("manager", "plans", ["worker"])
    registry.add("worker", "does", ["manager"])
    registry.add("stranger", "", [])
    store = hc.open(tmp_path / "h.db", policy=registry.policy())
    with store:
        h = store.create("t1", "open work", from_agent="manager")
        before = store.get(h.id)
        with pytest.raises(hc.ChainViolation) as refused:
            store.claim(h.id, "stranger")
        assert "manager is not allowed to hand off to stranger" in str(refused.value)
        assert store.get(h.id) == before
        assert store.claim_next("stranger") is None
        claim = store.claim_next("worker")
        assert claim is not None and claim.handoff_id == h.id


def test_the_masc_seed_payload_is_accepted(store: hc.Store) -> None:
    seed: dict[str, Any] = {
        "task_id": "task-001",
        "session_id": "session-xyz",
        "reason": "context_limit",
        "context_pct": 85,
        "goal": "PK-32008 LocalStorage SSR 버그 수정",
        "progress": "원인 파악 완료",
        "completed": ["버그 재현", "원인 분석"],
        "pending": ["수정", "테스트", "PR"],
        "decisions": ["SSR-safe 패턴 사용"],
        "assumptions": ["Next.js 14 환경"],
        "warnings": ["hydration mismatch 주의"],
        "errors": [],
        "files": ["src/hooks/useLocalStorage.ts"],
    }
    h = store.create(**seed)
    assert h.reason == "context_limit_85" and h.context_usage_percent == 85
    (many,) = store.create_many([dict(seed, task_id="task-002")])
    assert many.reason == "context_limit_85"
    timeout = store.create("t", "g", reason="timeout", timeout_seconds=300)
    assert timeout.reason == "timeout_300s"
    with pytest.raises(hc.ValidationError) as missing:
        store.create("t", "g", reason="context_limit")
    assert missing.value.fields == ["reason"]
    with pytest.raises(hc.ValidationError) as disagree:
        store.create("t", "g", reason="context_limit_80", context_pct=85)
    assert disagree.value.fields == ["context_pct"]


def test_display_names_from_registry_to_claim(store: hc.Store) -> None:
    registry = hc.AgentRegistry()
    registry.add("Triage", "routes", ["Tech Support", "Billing agent"])
    registry.add("Tech Support", "fixes setups")
    registry.add("Billing agent", "refunds")
    names = [t["function"]["name"] for t in registry.tools("Triage", "openai_chat")]
    assert names == ["transfer_to_tech_support", "transfer_to_billing_agent"]
    response = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {
                    "name": "transfer_to_tech_support",
                    "arguments": json.dumps({"reason": "r", "summary": "s", "pending": None, "instructions": None}),
                },
            }
        ],
    }
    intent = registry.detect(response, "Triage")
    assert intent is not None and intent.target == "Tech Support"
    h = store.create(**intent.create_kwargs(task_id="ticket-1", goal="fix it", from_agent="Triage"))
    claim = store.claim_next("Tech Support")
    assert claim is not None and claim.handoff_id == h.id
    assert [x.id for x in store.list(to_agent="Tech Support")] == [h.id]
    with pytest.raises(hc.ValidationError) as bad:
        store.claim_next(" padded")
    assert bad.value.fields[0] == "agent"
    with pytest.raises(hc.ValidationError):
        store.create("t", "g", id="Tech Support")


def test_registry_from_markdown_dir(tmp_path: Path) -> None:
    (tmp_path / "triage.md").write_text(
        "---\nname: Triage\ndescription: routes requests\n---\n\n## Collaborations\n"
        "- **Tech Support**: setups\n- [Billing agent](billing.md)\n",
        encoding="utf-8",
    )
    (tmp_path / "support.md").write_text("# Tech Support\n\nFixes setups.\n", encoding="utf-8")
    (tmp_path / "billing.md").write_text("# Billing agent\n\nRefunds.\n", encoding="utf-8")
    registry = hc.AgentRegistry.from_markdown_dir(tmp_path)
    assert sorted(a.name for a in registry.agents) == ["Billing agent", "Tech Support", "Triage"]
    assert [t["name"] for t in registry.tools("Triage", "anthropic")] == [
        "transfer_to_billing_agent",
        "transfer_to_tech_support",
    ]
    assert registry.tools("Tech Support", "anthropic") == []
    with pytest.raises(hc.ValidationError):
        hc.AgentRegistry.from_markdown_dir(tmp_path / "missing")


ARGS = {"reason": "refund", "summary": "double charge", "pending": None, "instructions": None}


@pytest.fixture
def registry() -> hc.AgentRegistry:
    r = hc.AgentRegistry()
    r.add("triage", "", ["billing"])
    r.add("billing", "")
    return r


def test_detects_langchain_messages(registry: hc.AgentRegistry) -> None:
    message = {
        "type": "ai",
        "content": "",
        "tool_calls": [{"name": "transfer_to_billing", "args": ARGS, "id": "call_7", "type": "tool_call"}],
    }
    intent = registry.detect(message, "triage")
    assert intent is not None and intent.target == "billing" and intent.call_id == "call_7"
    assert registry.detect({"type": "ai", "content": "hi", "tool_calls": []}, "triage") is None


def test_detects_a_langchain_aimessage_object(registry: hc.AgentRegistry) -> None:
    from langchain_core.messages import AIMessage

    message = AIMessage(
        content="", tool_calls=[{"name": "transfer_to_billing", "args": ARGS, "id": "call_8"}]
    )
    intent = registry.detect(message, "triage")
    assert intent is not None and intent.call_id == "call_8"


def test_detects_a_lone_anthropic_block_and_lists(registry: hc.AgentRegistry) -> None:
    block = {"type": "tool_use", "id": "toolu_01", "name": "transfer_to_billing", "input": ARGS}
    intent = registry.detect(block, "triage")
    assert intent is not None and intent.call_id == "toolu_01"
    assert registry.detect([{"type": "text", "text": "over to billing"}, block], "triage") is not None


@pytest.mark.parametrize("shape", [{}, {"foo": 1}, {"message": "hello"}, "42", "[1, 2]"])
def test_an_unknown_shape_is_an_error_not_silence(registry: hc.AgentRegistry, shape: Any) -> None:
    with pytest.raises(hc.ValidationError) as refused:
        registry.detect(shape, "triage")
    # A list's element is named by its place.
    assert refused.value.fields[0] == ("response[0]" if shape == "[1, 2]" else "response")


def test_multiple_has_one_spelling_and_an_alias(registry: hc.AgentRegistry) -> None:
    call = {"name": "transfer_to_billing", "args": ARGS, "id": "c"}
    message = {"type": "ai", "content": "", "tool_calls": [call, dict(call, id="d")]}
    with pytest.raises(hc.ValidationError):
        registry.detect(message, "triage")
    for spelling in ("first_wins", "first"):
        intent = registry.detect(message, "triage", multiple=spelling)
        assert intent is not None and intent.call_id == "c"
    with pytest.raises(hc.ValidationError) as bad:
        registry.detect(message, "triage", multiple="both")  # type: ignore[arg-type]
    assert bad.value.fields[0] == "multiple"
