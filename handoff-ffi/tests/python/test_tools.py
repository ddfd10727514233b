"""Swarm tools through the generated bindings: tools per provider, detection in each
provider's response format, the registry's policy, and an intent turned into a handoff."""

from __future__ import annotations

import json

import pytest

from conftest import hf

ARGS = {"reason": "refund request", "summary": "customer 42 was double charged",
        "pending": ["refund the second charge"], "instructions": "check the ledger first"}


@pytest.fixture
def registry() -> hf.AgentRegistry:
    r = hf.AgentRegistry()
    r.add("triage", "routes requests", ["billing", "tech.support"])
    r.add("billing", "invoices and refunds")
    r.add("tech.support", "debugs customer setups", ["triage"])
    r.add("sales", "quotes and discounts")
    return r


def chat(name: str, arguments: str, call_id: str = "call_1") -> str:
    return json.dumps({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": name, "arguments": arguments}}]}}],
    })


def test_tools_per_provider(registry: hf.AgentRegistry) -> None:
    chat_tools = json.loads(registry.tools("triage", hf.Provider.OPENAI_CHAT))
    assert [t["function"]["name"] for t in chat_tools] == ["transfer_to_billing", "transfer_to_tech_support"]
    anthropic = json.loads(registry.tools("triage", hf.Provider.ANTHROPIC))
    assert {t["name"] for t in anthropic} == {"transfer_to_billing", "transfer_to_tech_support"}
    assert all("input_schema" in t for t in anthropic)
    responses = json.loads(registry.tools("triage", hf.Provider.OPENAI_RESPONSES))
    assert all(t["type"] == "function" and "name" in t for t in responses)
    mcp = json.loads(registry.tools("billing", hf.Provider.MCP))
    assert len(mcp) == 3 and all("inputSchema" in t for t in mcp)
    assert [a.name for a in registry.agents()] == ["triage", "billing", "tech.support", "sales"]


def test_detects_a_chat_completion_handoff_and_makes_the_handoff(registry: hf.AgentRegistry) -> None:
    intent = registry.detect(chat("transfer_to_billing", json.dumps(ARGS)), "triage")
    assert intent is not None
    assert (intent.target, intent.tool, intent.call_id) == ("billing", "transfer_to_billing", "call_1")
    assert json.loads(intent.arguments) == ARGS

    store = hf.Store.memory(hf.OpenOptions(policy=registry.policy()))
    h = store.create(intent.to_create_options("T-9", "triage", "Refund customer 42"))
    assert (h.from_agent, h.to_agent, h.goal) == ("triage", "billing", "Refund customer 42")
    assert h.progress_summary == ARGS["summary"] and h.pending_steps == ARGS["pending"]
    assert h.instructions == ARGS["instructions"]
    assert json.loads(h.metadata) == {"handoff_reason": "refund request", "call_id": "call_1"}


def test_detects_an_anthropic_tool_use(registry: hf.AgentRegistry) -> None:
    response = json.dumps({
        "id": "msg_1", "type": "message", "role": "assistant", "stop_reason": "tool_use",
        "content": [{"type": "text", "text": "Handing over."},
                    {"type": "tool_use", "id": "toolu_1", "name": "transfer_to_tech_support", "input": ARGS}],
    })
    intent = registry.detect(response, "triage")
    assert intent is not None and intent.target == "tech.support" and intent.call_id == "toolu_1"


def test_no_handoff_is_none(registry: hf.AgentRegistry) -> None:
    plain = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]})
    assert registry.detect(plain, "triage") is None


def test_refusals_are_typed(registry: hf.AgentRegistry) -> None:
    with pytest.raises(hf.HandoffError.ChainViolation) as violation:
        registry.detect(chat("transfer_to_sales", "{}"), "triage")
    assert violation.value.rule == hf.ChainRule.NOT_COLLABORATOR(from_agent="triage", to_agent="sales")
    with pytest.raises(hf.HandoffError.Validation) as unknown:
        registry.detect(chat("transfer_to_nobody", "{}"), "triage")
    assert unknown.value.problems[0].field.endswith("name")
    with pytest.raises(hf.HandoffError.Validation) as bad_args:
        registry.detect(chat("transfer_to_billing", "{not json"), "triage")
    assert "arguments" in bad_args.value.problems[0].field
    with pytest.raises(hf.HandoffError.Validation) as not_json:
        registry.detect("[" * 10_000, "triage")
    assert not_json.value.problems[0].field == "response"
    with pytest.raises(hf.HandoffError.Validation):
        registry.add(" bad name", "x")
    with pytest.raises(hf.HandoffError.Validation):
        registry.detect(chat("transfer_to_billing", "{}"), "not-registered")


def test_several_handoffs_need_first_wins(registry: hf.AgentRegistry) -> None:
    two = json.loads(chat("transfer_to_billing", "{}"))
    calls = two["choices"][0]["message"]["tool_calls"]
    calls.append({"id": "call_2", "type": "function",
                  "function": {"name": "transfer_to_tech_support", "arguments": "{}"}})
    text = json.dumps(two)
    with pytest.raises(hf.HandoffError.Validation):
        registry.detect(text, "triage")
    intent = registry.detect(text, "triage", hf.Multiple.FIRST_WINS)
    assert intent is not None and intent.target == "billing"


def test_the_registry_policy_guards_the_store(registry: hf.AgentRegistry) -> None:
    policy = registry.policy()
    assert sorted(policy.collaborators["triage"]) == ["billing", "tech.support"]
    store = hf.Store.memory(hf.OpenOptions(policy=policy))
    with pytest.raises(hf.HandoffError.ChainViolation):
        store.create(hf.CreateOptions(task_id="t", goal="g", from_agent="triage", to_agent="sales"))
