"""Swarm tools: the agent registry, its transfer tools per provider, and the detector.

The responses below follow each provider's documented shapes: OpenAI Chat Completions
(`choices[].message.tool_calls[].function.arguments` as a JSON string), the OpenAI Responses API
(`output[]` items of type `function_call`, arguments a JSON string) and Anthropic Messages
(`content[]` blocks of type `tool_use`, `input` an object).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import handoff_core as hc

ARGS = {
    "reason": "The customer wants a refund",
    "summary": "Verified the order #4411 and the customer's identity.",
    "pending": ["issue the refund", "email the receipt"],
    "instructions": "Refund to the original card only.",
}
PROVIDERS: list[hc.Provider] = ["openai_chat", "openai_responses", "anthropic", "mcp"]


def chat_completion(*calls: tuple[str, str], content: Any = None) -> dict[str, Any]:
    """A Chat Completions response whose message calls `calls` (name, arguments JSON)."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None, "annotations": []}
    if calls:
        message["tool_calls"] = [
            {"id": f"call_{i}abc", "type": "function", "function": {"name": name, "arguments": arguments}}
            for i, (name, arguments) in enumerate(calls)
        ]
    return {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion",
        "created": 1741570283,
        "model": "gpt-4o-2024-08-06",
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": None,
            "finish_reason": "tool_calls" if calls else "stop",
        }],
        "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99},
        "service_tier": "default",
        "system_fingerprint": "fp_06737a9306",
    }


def responses_api(*calls: tuple[str, str]) -> dict[str, Any]:
    """A Responses API response whose `output` has a reasoning item, then `calls`."""
    output: list[dict[str, Any]] = [{"type": "reasoning", "id": "rs_67ccd2bf", "summary": []}]
    output += [
        {"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}xyz", "name": name,
         "arguments": arguments, "status": "completed"}
        for i, (name, arguments) in enumerate(calls)
    ]
    return {
        "id": "resp_67ccd2bed1ec8190b14f964abc054267",
        "object": "response",
        "created_at": 1741476542,
        "status": "completed",
        "model": "gpt-4.1-2025-04-14",
        "output": output,
        "parallel_tool_calls": True,
        "tools": [],
        "usage": {"input_tokens": 291, "output_tokens": 23, "total_tokens": 314},
    }


def anthropic_message(*calls: tuple[str, Any]) -> dict[str, Any]:
    """An Anthropic Messages response: a text block, then a `tool_use` block per call."""
    content: list[dict[str, Any]] = [{"type": "text", "text": "I'll pass this to the right team."}]
    content += [
        {"type": "tool_use", "id": f"toolu_0{i}A09q90qw90lq917835lq9", "name": name, "input": tool_input}
        for i, (name, tool_input) in enumerate(calls)
    ]
    return {
        "id": "msg_01Aq9w938a90dw8q",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 472, "output_tokens": 91},
    }


@pytest.fixture
def registry() -> hc.AgentRegistry:
    """triage may hand off to billing only; billing and support to anyone."""
    return (
        hc.AgentRegistry()
        .add("triage", "Reads new tickets and routes them", collaborators=["billing"])
        .add("billing", "Refunds, invoices and payment problems")
        .add("support", "Technical support for the product")
    )


# --- the registry ----------------------------------------------------------------------------


def test_registry_holds_agents_in_order(registry: hc.AgentRegistry) -> None:
    assert [a.name for a in registry.agents] == ["triage", "billing", "support"]
    triage = registry.agents[0]
    assert isinstance(triage, hc.Agent)
    assert triage.collaborators == ["billing"] and registry.agents[1].collaborators is None
    assert triage.to_dict() == {
        "name": "triage", "description": "Reads new tickets and routes them", "collaborators": ["billing"]}
    assert len(registry) == 3 and "billing" in registry and "nobody" not in registry and 5 not in registry
    assert "billing" in repr(registry)
    registry.add("billing", "Money matters")  # replaces, keeps the place
    assert [a.description for a in registry.agents][1] == "Money matters" and len(registry) == 3


def test_policy_follows_collaborators(registry: hc.AgentRegistry) -> None:
    policy = registry.policy(max_handoffs=10, max_revisits=2)
    assert isinstance(policy, hc.ChainPolicy)
    assert (policy.max_handoffs, policy.max_revisits) == (10, 2)
    assert policy.collaborators == {
        "billing": ["support", "triage"], "support": ["billing", "triage"], "triage": ["billing"]}
    default = registry.policy()
    assert (default.max_handoffs, default.max_revisits) == (hc.ChainPolicy().max_handoffs, 0)


# --- tools -----------------------------------------------------------------------------------

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def strict_ok(schema: dict[str, Any]) -> None:
    """OpenAI strict mode: every object lists every property as required and allows no other."""
    if schema.get("type") == "object" or "properties" in schema:
        assert schema["additionalProperties"] is False
        assert schema["required"] == list(schema["properties"])
    for sub in schema.get("properties", {}).values():
        strict_ok(sub)
    if isinstance(schema.get("items"), dict):
        strict_ok(schema["items"])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_tools_have_each_providers_shape(registry: hc.AgentRegistry, provider: hc.Provider) -> None:
    tools = registry.tools("billing", provider)
    assert isinstance(tools, list) and len(tools) == 2
    assert json.loads(json.dumps(tools)) == tools  # plain JSON values only
    for tool, target in zip(tools, ["triage", "support"]):
        if provider == "openai_chat":
            assert list(tool) == ["type", "function"] and tool["type"] == "function"
            spec = tool["function"]
            assert list(spec) == ["name", "description", "parameters", "strict"] and spec["strict"] is True
            schema = spec["parameters"]
        elif provider == "openai_responses":
            assert list(tool) == ["type", "name", "description", "parameters", "strict"]
            assert tool["type"] == "function" and tool["strict"] is True
            spec, schema = tool, tool["parameters"]
        elif provider == "anthropic":
            assert list(tool) == ["name", "description", "input_schema"]
            spec, schema = tool, tool["input_schema"]
        else:
            assert list(tool) == ["name", "description", "inputSchema"]
            spec, schema = tool, tool["inputSchema"]
        assert spec["name"] == f"transfer_to_{target}" and NAME.match(spec["name"])
        assert target in spec["description"]
        assert list(schema["properties"]) == ["reason", "summary", "pending", "instructions"]
        strict_ok(schema)


def test_tools_follow_collaborators_and_sanitise_names() -> None:
    registry = hc.AgentRegistry().add("boss", "", ["gemini-2.5@google", "x" * 100]).add(
        "gemini-2.5@google", "a model").add("x" * 100, "long").add("idle", "never called")
    names = [t["name"] for t in registry.tools("boss", "mcp")]
    assert names[0] == "transfer_to_gemini_2_5_google"  # the agent SDKs' own transform
    assert len(names) == 2 and all(NAME.match(n) for n in names)
    assert registry.tools("idle", "anthropic")[0]["name"] == "transfer_to_boss"


# --- detection -------------------------------------------------------------------------------


def cases() -> Iterator[tuple[str, Any, str]]:
    """(label, response, call id) for one handoff to billing, in every accepted shape."""
    arguments = json.dumps(ARGS)
    chat = chat_completion(("transfer_to_billing", arguments))
    yield "chat, whole response", chat, "call_0abc"
    yield "chat, just the message", chat["choices"][0]["message"], "call_0abc"
    yield "chat, as JSON text", json.dumps(chat), "call_0abc"
    yield "chat, as UTF-8 bytes", json.dumps(chat).encode(), "call_0abc"
    responses = responses_api(("transfer_to_billing", arguments))
    yield "responses, whole response", responses, "call_0xyz"
    yield "responses, one output item", responses["output"][1], "call_0xyz"
    yield "responses, as JSON text", json.dumps(responses), "call_0xyz"
    message = anthropic_message(("transfer_to_billing", ARGS))
    yield "anthropic, message", message, "toolu_00A09q90qw90lq917835lq9"
    yield "anthropic, as JSON text", json.dumps(message), "toolu_00A09q90qw90lq917835lq9"


@pytest.mark.parametrize(("label", "response", "call_id"), list(cases()), ids=[c[0] for c in cases()])
def test_detects_a_handoff(registry: hc.AgentRegistry, label: str, response: Any, call_id: str) -> None:
    intent = registry.detect(response, "triage")
    assert isinstance(intent, hc.HandoffIntent), label
    assert intent.target == "billing" and intent.tool == "transfer_to_billing"
    assert intent.call_id == call_id
    assert intent.arguments == ARGS and list(intent.arguments) == list(ARGS)  # key order kept
    assert intent.to_dict() == {"target": "billing", "arguments": ARGS, "call_id": call_id,
                                "tool": "transfer_to_billing"}
    assert intent == registry.detect(response, "triage")
    assert "billing" in repr(intent)


def test_an_sdk_response_object_is_read_through_model_dump_json(registry: hc.AgentRegistry) -> None:
    class ChatCompletion:  # what openai / anthropic return: pydantic models
        def model_dump_json(self) -> str:
            return json.dumps(chat_completion(("transfer_to_billing", json.dumps(ARGS))))

    intent = registry.detect(ChatCompletion(), "triage")
    assert intent is not None and intent.target == "billing"


def test_a_transcript_is_read_to_its_last_handoff(registry: hc.AgentRegistry) -> None:
    """Chat messages, LangChain message objects and the Agents SDK's items, as lists."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    chat = [
        {"role": "user", "content": "refund please"},
        chat_completion(("transfer_to_sales", "{}"))["choices"][0]["message"],
        {"role": "tool", "tool_call_id": "call_0abc", "content": "no"},
        chat_completion(("transfer_to_billing", json.dumps(ARGS)))["choices"][0]["message"],
        {"role": "tool", "tool_call_id": "call_0abc", "content": "ok"},
        {"role": "assistant", "content": "Billing takes it from here."},
    ]
    intent = registry.detect(chat, "triage")
    assert intent is not None and intent.target == "billing" and intent.arguments == ARGS
    assert registry.detect(json.dumps(chat), "triage") == intent
    messages = [
        HumanMessage("refund please"),
        AIMessage("", tool_calls=[{"name": "transfer_to_billing", "args": ARGS, "id": "call_lc"}]),
        ToolMessage("ok", tool_call_id="call_lc"),
    ]
    intent = registry.detect(messages, "triage")
    assert intent is not None and (intent.target, intent.call_id) == ("billing", "call_lc")
    assert registry.detect([HumanMessage("hi"), AIMessage("hello")], "triage") is None
    items = [
        {"role": "user", "content": "refund please"},
        {"type": "function_call", "call_id": "call_sdk", "name": "transfer_to_billing",
         "arguments": json.dumps(ARGS)},
        {"type": "function_call_output", "call_id": "call_sdk", "output": "{}"},
    ]
    intent = registry.detect(items, "triage")
    assert intent is not None and intent.call_id == "call_sdk"
    with pytest.raises(hc.ValidationError) as refused:
        registry.detect([{"role": "user", "content": "hi"}, {"what": 1}], "triage")
    assert refused.value.problems[0][0] == "response[1]"


@pytest.mark.parametrize("response", [
    chat_completion(content="Here is your answer."),
    chat_completion(("get_weather", '{"city": "Paris"}')),
    responses_api(),
    {"type": "message", "role": "assistant", "content": "plain text"},
    anthropic_message(),
    anthropic_message(("search_docs", {"q": "refund"})),
    {"type": "ai", "content": "a LangChain message", "tool_calls": []},
    [{"type": "text", "text": "a list of blocks"}],
])
def test_no_handoff_is_none(registry: hc.AgentRegistry, response: Any) -> None:
    assert registry.detect(response, "triage") is None


def test_other_tools_beside_the_handoff_are_ignored(registry: hc.AgentRegistry) -> None:
    response = chat_completion(("get_weather", '{"city": "Paris"}'), ("transfer_to_billing", json.dumps(ARGS)))
    intent = registry.detect(response, "triage")
    assert intent is not None and intent.call_id == "call_1abc"


def test_empty_arguments_are_an_empty_object(registry: hc.AgentRegistry) -> None:
    intent = registry.detect(chat_completion(("transfer_to_billing", "")), "triage")
    assert intent is not None and intent.arguments == {}


def test_arguments_are_a_fresh_copy(registry: hc.AgentRegistry) -> None:
    intent = registry.detect(anthropic_message(("transfer_to_billing", copy.deepcopy(ARGS))), "triage")
    assert intent is not None
    intent.arguments["pending"].append("mutated")
    assert intent.arguments == ARGS


@pytest.mark.parametrize("make", [
    lambda *calls: chat_completion(*[(n, json.dumps(a)) for n, a in calls]),
    lambda *calls: responses_api(*[(n, json.dumps(a)) for n, a in calls]),
    lambda *calls: anthropic_message(*calls),
], ids=["chat", "responses", "anthropic"])
def test_several_handoffs(registry: hc.AgentRegistry, make: Any) -> None:
    response = make(("transfer_to_triage", ARGS), ("transfer_to_support", ARGS))
    with pytest.raises(hc.ValidationError) as caught:
        registry.detect(response, "billing")
    assert caught.value.fields == ["tool_calls"] and "2 handoffs" in caught.value.problems[0][1]
    with pytest.raises(hc.ValidationError):
        registry.detect(response, "billing", multiple="error")
    first = registry.detect(response, "billing", multiple="first")
    assert first is not None and first.target == "triage"


# --- detection errors ------------------------------------------------------------------------


@pytest.mark.parametrize(("response", "field", "rule"), [
    (chat_completion(("transfer_to_billing", '{"reason": "x", ')),
     "choices[0].message.tool_calls[0].function.arguments", "not valid JSON"),
    (chat_completion(("transfer_to_billing", '["a", "list"]')),
     "choices[0].message.tool_calls[0].function.arguments", "must be a JSON object"),
    (chat_completion(("transfer_to_billing", "null"))["choices"][0]["message"],
     "tool_calls[0].function.arguments", "must be a JSON object"),
    (responses_api(("transfer_to_billing", "{oops}")), "output[1].arguments", "not valid JSON"),
    (anthropic_message(("transfer_to_billing", "a string")), "content[1].input", "must be a JSON object"),
    ({"content": [{"type": "tool_use", "id": "t", "name": "transfer_to_billing"}]},
     "content[0].input", "missing"),
    (chat_completion(("transfer_to_nobody", "{}")),
     "choices[0].message.tool_calls[0].function.name", "names no registered agent"),
    (anthropic_message(("transfer_to_billing_2", {})), "content[1].name", "names no registered agent"),
])
def test_bad_calls_name_the_field(registry: hc.AgentRegistry, response: Any, field: str, rule: str) -> None:
    for form in (response, json.dumps(response)):
        with pytest.raises(hc.ValidationError) as caught:
            registry.detect(form, "triage")
        assert caught.value.fields == [field]
        assert rule in caught.value.problems[0][1]


def test_a_registered_agent_outside_the_collaborators_is_a_chain_violation(registry: hc.AgentRegistry) -> None:
    for response in (chat_completion(("transfer_to_support", json.dumps(ARGS))),
                     anthropic_message(("transfer_to_support", ARGS))):
        with pytest.raises(hc.ChainViolation) as caught:
            registry.detect(response, "triage")
        err = caught.value
        assert err.rule == "not_collaborator" and err.pair == ("triage", "support")
        assert err.path == ["triage", "support"]
    # Handing off to yourself is not one of your tools either.
    with pytest.raises(hc.ChainViolation):
        registry.detect(anthropic_message(("transfer_to_triage", ARGS)), "triage")


def deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.mark.parametrize(("call", "field"), [
    (lambda r: r.detect(42, "triage"), "response"),
    (lambda r: r.detect(["choices"], "triage"), "response[0]"),
    (lambda r: r.detect(b"\xff\xfe", "triage"), "response"),
    (lambda r: r.detect("not json", "triage"), "response"),
    (lambda r: r.detect("[" * 10_000, "triage"), "response"),
    (lambda r: r.detect(" " * (5 * 1024 * 1024), "triage"), "response"),
    (lambda r: r.detect({"choices": [{"message": {1: "x"}}]}, "triage"), "response.choices[0].message"),
    (lambda r: r.detect({"choices": {"x"}}, "triage"), "response.choices"),
    (lambda r: r.detect({"x": float("nan")}, "triage"), "response.x"),
    (lambda r: r.detect({"choices": [{"message": "hi"}]}, "triage"), "response"),
    (lambda r: r.detect({}, 5), "from_agent"),
    (lambda r: r.detect({"role": "assistant", "content": "hi"}, "nobody"), "from_agent"),
    (lambda r: r.detect({}, "triage", multiple="all"), "multiple"),
    (lambda r: r.detect({}, "triage", multiple=True), "multiple"),
    (lambda r: r.tools(1, "mcp"), "agent"),
    (lambda r: r.tools("nobody", "mcp"), "agent"),
    (lambda r: r.tools("triage", "gemini"), "provider"),
    (lambda r: r.tools("triage", None), "provider"),
    (lambda r: r.add(5, "x"), "name"),
    (lambda r: r.add("bad\nname", "x"), "name"),
    (lambda r: r.add(" padded", "x"), "name"),
    (lambda r: r.add("", "x"), "name"),
    (lambda r: r.add("a", None), "description"),
    (lambda r: r.add("a", "d", "billing"), "collaborators"),
    (lambda r: r.add("a", "d", ["billing", 7]), "collaborators[1]"),
    (lambda r: r.add("a", "d", ["ok", "not\tok"]), "collaborators[1]"),
    (lambda r: r.policy(max_handoffs=-1), "max_handoffs"),
    (lambda r: r.policy(max_revisits="2"), "max_revisits"),
])
def test_bad_input(registry: hc.AgentRegistry, call: Any, field: str) -> None:
    before = [a.to_dict() for a in registry.agents]
    with pytest.raises(hc.ValidationError) as caught:
        call(registry)
    assert caught.value.fields[0] == field, caught.value.problems
    assert [a.to_dict() for a in registry.agents] == before  # nothing changed


def test_nesting_is_refused_not_followed(registry: hc.AgentRegistry) -> None:
    with pytest.raises(hc.ValidationError) as caught:
        registry.detect(deep(200), "triage")
    assert caught.value.fields[0].startswith("response.a.a")
    with pytest.raises(hc.ValidationError):
        registry.detect(json.dumps(deep(200)), "triage")
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    with pytest.raises(hc.ValidationError):
        registry.detect(cyclic, "triage")


def test_an_sdk_object_that_fails_raises_its_own_error(registry: hc.AgentRegistry) -> None:
    class Broken:
        def model_dump_json(self) -> str:
            raise RuntimeError("no network")

    with pytest.raises(RuntimeError, match="no network"):
        registry.detect(Broken(), "triage")


# --- from intent to a stored, claimed handoff ------------------------------------------------


def test_create_kwargs(registry: hc.AgentRegistry) -> None:
    intent = registry.detect(chat_completion(("transfer_to_billing", json.dumps(ARGS))), "triage")
    assert intent is not None
    assert intent.create_kwargs(task_id="ticket-4411", goal="Refund order #4411", from_agent="triage") == {
        "task_id": "ticket-4411",
        "from_agent": "triage",
        "to_agent": "billing",
        "goal": "Refund order #4411",
        "progress": ARGS["summary"],
        "pending": ARGS["pending"],
        "instructions": ARGS["instructions"],
        "metadata": {"handoff_reason": ARGS["reason"], "call_id": "call_0abc"},
    }
    sparse = registry.detect(anthropic_message(("transfer_to_billing", {
        "reason": "r", "summary": "s", "pending": None, "instructions": None})), "triage")
    assert sparse is not None
    kwargs = sparse.create_kwargs(task_id="t", goal="g", from_agent="triage")
    assert "pending" not in kwargs and "instructions" not in kwargs  # null: the defaults
    with pytest.raises(hc.ValidationError) as caught:
        sparse.create_kwargs(task_id=1, goal=None, from_agent="triage")  # type: ignore[arg-type]
    assert caught.value.fields == ["task_id", "goal"]
    with pytest.raises(TypeError):
        sparse.create_kwargs("t", "g", "triage")  # type: ignore[misc]


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_detect_then_create_with_the_registrys_policy_then_claim(
    registry: hc.AgentRegistry, backend: str, tmp_path: Path
) -> None:
    policy = registry.policy(max_handoffs=10)
    store = hc.Store.memory(policy=policy) if backend == "memory" else hc.open(tmp_path / "h.db", policy=policy)
    with store:
        response = responses_api(("transfer_to_billing", json.dumps(ARGS)))
        intent = registry.detect(json.dumps(response), "triage")
        assert intent is not None
        h = store.create(**intent.create_kwargs(task_id="ticket-4411", goal="Refund order #4411",
                                                from_agent="triage"))
        assert (h.from_agent, h.to_agent, h.status) == ("triage", "billing", "pending")
        assert h.progress_summary == ARGS["summary"] and h.pending_steps == ARGS["pending"]
        assert h.instructions == ARGS["instructions"]
        assert h.metadata == {"handoff_reason": ARGS["reason"], "call_id": "call_0xyz"}
        claim = store.claim(h.id, intent.target)
        assert claim.handoff.status == "claimed" and claim.handoff.claimed_by == "billing"
        assert store.chain("ticket-4411").path == ["triage", "billing"]
        # The store applies the same collaborators: triage may not reach support directly ...
        with pytest.raises(hc.ChainViolation) as caught:
            store.create("ticket-4411", "Fix the app", from_agent="triage", to_agent="support")
        assert caught.value.pair == ("triage", "support")
        # ... but billing may, and its intent goes through create_many too.
        nxt = registry.detect(anthropic_message(("transfer_to_support", ARGS)), "billing")
        assert nxt is not None
        [h2] = store.create_many([nxt.create_kwargs(task_id="ticket-4411", goal="Fix the app",
                                                    from_agent="billing")])
        assert store.chain("ticket-4411").path == ["triage", "billing", "support"]
        assert store.claim(h2.id, "support").handoff.to_agent == "support"
