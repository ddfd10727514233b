"""Messages in every provider's shape go in; what comes out passes each provider's own types.

The outputs are validated with the `openai` and `anthropic` packages' parameter types (pydantic
TypeAdapters over their TypedDicts), and the pairing and alternation rules those types cannot
express are checked here too.
"""

from __future__ import annotations

import json
import random
import re
from datetime import datetime, timezone
from typing import Any, Optional, get_args, get_type_hints

import anthropic.types
import openai.types.chat
import openai.types.responses
import pytest
from anthropic.types import Message as AnthropicMessage
from langchain_core.load import dumpd
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
    messages_to_dict,
)
from openai.types.chat import ChatCompletionMessage
from openai.types.chat.chat_completion_message_function_tool_call import (
    ChatCompletionMessageFunctionToolCall,
    Function,
)
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from pydantic import TypeAdapter, ValidationError

import handoff_core as hc

CHAT = TypeAdapter(list[openai.types.chat.ChatCompletionMessageParam])
RESPONSES: TypeAdapter[Any] = TypeAdapter(openai.types.responses.ResponseInputParam)
ANTHROPIC = TypeAdapter(list[anthropic.types.MessageParam])
PROVIDERS = ("openai_chat", "openai_responses", "anthropic")
KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3
ID = re.compile(r"^[a-zA-Z0-9_-]+$")

Messages = list[dict[str, Any]]


def check_chat(out: Messages) -> None:
    CHAT.validate_python(out)
    # Only keys the message's own TypedDict declares.
    params = {get_args(get_type_hints(t)["role"])[0]: t for t in get_args(openai.types.chat.ChatCompletionMessageParam)}
    for m in out:
        allowed = params[m["role"]].__required_keys__ | params[m["role"]].__optional_keys__
        assert set(m) <= allowed, m
    i = 0
    while i < len(out):
        m = out[i]
        calls = m.get("tool_calls")
        assert m["role"] != "tool", f"[{i}] a tool message without its call right before it"
        if calls:
            ids = [c["id"] for c in calls]
            results = out[i + 1 : i + 1 + len(calls)]
            assert [r["role"] for r in results] == ["tool"] * len(calls), f"[{i}] results missing"
            assert sorted(r["tool_call_id"] for r in results) == sorted(ids)
            assert all(isinstance(json.loads(c["function"]["arguments"]), dict) for c in calls)
            i += len(calls) + 1
        else:
            assert isinstance(m["content"], str) and m["content"].strip(), f"[{i}] empty"
            i += 1


def check_responses(out: Messages) -> None:
    RESPONSES.validate_python(out)
    i = 0
    while i < len(out):
        item = out[i]
        assert item.get("type") != "function_call_output", f"[{i}] an output without its call"
        if item.get("type") == "function_call":
            ids = []
            while i < len(out) and out[i].get("type") == "function_call":
                ids.append(out[i]["call_id"])
                i += 1
            outputs = out[i : i + len(ids)]
            assert [o.get("type") for o in outputs] == ["function_call_output"] * len(ids)
            assert [o["call_id"] for o in outputs] == ids
            i += len(ids)
        else:
            assert item["content"].strip()
            i += 1


def check_anthropic(out: Messages) -> None:
    ANTHROPIC.validate_python(out)
    asked: list[str] = []
    seen: set[str] = set()
    for i, m in enumerate(out):
        assert m["role"] == ("user" if i % 2 == 0 else "assistant"), f"[{i}] roles must alternate from user"
        blocks = m["content"]
        assert blocks, f"[{i}] empty"
        results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        assert [b["type"] for b in blocks[: len(results)]] == ["tool_result"] * len(results), "results first"
        assert results == asked, f"[{i}] answers {results}, the calls were {asked}"
        for b in blocks:
            if b["type"] == "text":
                assert b["text"].strip()
        asked = [b["id"] for b in blocks if b["type"] == "tool_use"]
        assert all(ID.match(a) and a not in seen for a in asked), asked
        seen.update(asked)
    assert not asked, "a tool_use at the end has no result"
    if out and out[-1]["role"] == "assistant":
        assert not out[-1]["content"][-1]["text"].endswith((" ", "\n"))


CHECKS = {"openai_chat": check_chat, "openai_responses": check_responses, "anthropic": check_anthropic}


def build(messages: list[Any], budget: int = 4000, facts: Optional[list[str]] = None) -> hc.Packet:
    b = hc.ContextBuilder(budget_tokens=budget)
    if facts:
        b.add_facts(facts)
    b.add_messages(messages)
    return b.build()


def test_the_types_refuse_what_packet_messages_used_to_give() -> None:
    with pytest.raises(ValidationError):
        CHAT.validate_python([{"role": "tool", "content": "3 hits"}])
    with pytest.raises(ValidationError):
        ANTHROPIC.validate_python([{"role": "tool", "content": "3 hits"}])


def test_openai_chat_messages_and_sdk_objects() -> None:
    reply = ChatCompletionMessage(
        role="assistant",
        content=None,
        tool_calls=[
            ChatCompletionMessageFunctionToolCall(
                id="call_1", type="function", function=Function(name="grep", arguments='{"q": "x"}')
            )
        ],
    )
    packet = build(
        [
            {"role": "developer", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "find x"}]},
            reply,
            {"role": "tool", "tool_call_id": "call_1", "content": "3 hits"},
            {"role": "assistant", "content": "found it"},
        ],
        facts=["the API is v2"],
    )
    chat = packet.to_messages()
    assert chat == packet.messages == packet.to_messages("openai_chat")
    check_chat(chat)
    assert chat[0]["role"] == "system" and "## Fact" in chat[0]["content"]
    assert chat[3] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "grep", "arguments": '{"q":"x"}'}}],
    }
    assert chat[4] == {"role": "tool", "tool_call_id": "call_1", "content": "3 hits"}
    for provider in PROVIDERS:
        CHECKS[provider](packet.to_messages(provider))  # type: ignore[arg-type]


def test_responses_and_agents_sdk_items() -> None:
    items: list[Any] = [
        {"role": "user", "content": "find x"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        ResponseOutputMessage(
            id="msg_1",
            role="assistant",
            status="completed",
            type="message",
            content=[ResponseOutputText(annotations=[], text="looking", type="output_text")],
        ),
        ResponseFunctionToolCall(call_id="call_9", name="grep", arguments='{"q":"x"}', type="function_call"),
        {"type": "function_call_output", "call_id": "call_9", "output": "3 hits"},
    ]
    packet = build(items)
    out = packet.to_messages("openai_responses")
    check_responses(out)
    assert out == [
        {"role": "user", "content": "find x"},
        {"role": "assistant", "content": "looking"},
        {"type": "function_call", "call_id": "call_9", "name": "grep", "arguments": '{"q":"x"}'},
        {"type": "function_call_output", "call_id": "call_9", "output": "3 hits"},
    ]
    for provider in PROVIDERS:
        CHECKS[provider](packet.to_messages(provider))  # type: ignore[arg-type]


def test_anthropic_messages_and_sdk_objects() -> None:
    reply = AnthropicMessage.model_validate({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
        "content": [{"type": "text", "text": "looking"},
                    {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"q": "x"}}],
        "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
    })
    packet = build(
        [
            {"role": "user", "content": "find x"},
            reply,
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "3 hits"}]},
                {"type": "text", "text": "and?"},
            ]},
        ],
        facts=["the API is v2"],
    )
    out = packet.to_messages("anthropic")
    check_anthropic(out)
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    assert out[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3 hits"},
        {"type": "text", "text": "and?"},
    ]
    for provider in PROVIDERS:
        CHECKS[provider](packet.to_messages(provider))  # type: ignore[arg-type]


def test_langchain_messages_objects_dicts_and_dumps() -> None:
    call = AIMessage(content="", tool_calls=[{"name": "grep", "args": {"q": "x"}, "id": "call_1"}])
    result = ToolMessage(content="3 hits", tool_call_id="call_1")
    for messages in (
        [SystemMessage("be brief"), HumanMessage("find x"), call, result],
        [m.model_dump(mode="json") for m in (SystemMessage("be brief"), HumanMessage("find x"), call, result)],
        [dumpd(m) for m in (SystemMessage("be brief"), HumanMessage("find x"), call, result)],
        messages_to_dict([SystemMessage("be brief"), HumanMessage("find x"), call, result]),
    ):
        packet = build(messages)
        chat = packet.to_messages()
        check_chat(chat)
        assert [m["role"] for m in chat] == ["system", "user", "assistant", "tool"], chat
        # LangChain reads it back.
        back = convert_to_messages(chat)
        assert isinstance(back[-1], ToolMessage) and back[-1].tool_call_id == "call_1"
        for provider in PROVIDERS:
            CHECKS[provider](packet.to_messages(provider))  # type: ignore[arg-type]


@pytest.mark.parametrize("filler", [0, 46], ids=["result-cut", "result-dropped"])
def test_cut_or_dropped_results_leave_valid_input(filler: int) -> None:
    """A result too long for the budget is cut when the room left holds a useful part of it,
    and dropped when the rest of the conversation leaves no such room; either way the input
    is valid for every provider."""
    messages: list[Any] = [
        {"role": "user", "content": "find x" + " in the ledger" * filler, "priority": 90},
        {"role": "assistant", "content": None, "priority": 90,
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "grep", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "x" * 4000, "priority": 1},
        {"role": "assistant", "content": "done", "priority": 90},
    ]
    packet = build(messages, budget=200)
    dropped = any(d["id"] == "message-2" for d in packet.manifest.dropped)
    cut = any(c["id"] == "message-2" for c in packet.manifest.truncated)
    assert (dropped, cut) == ((True, False) if filler else (False, True))
    for provider in PROVIDERS:
        out = packet.to_messages(provider)  # type: ignore[arg-type]
        CHECKS[provider](out)
        if dropped:
            assert "[tool call call_1] grep {}" in json.dumps(out)


def test_secrets_in_calls_and_results_are_redacted() -> None:
    packet = build([
        {"role": "assistant", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "login", "arguments": json.dumps({"key": KEY})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "used " + KEY},
    ])
    for provider in PROVIDERS:
        text = json.dumps(packet.to_messages(provider))  # type: ignore[arg-type]
        assert KEY not in text and "[REDACTED:openai-api-key]" in text
    assert len(packet.manifest.redacted) == 2


def test_at_id_and_priority_in_any_shape() -> None:
    packet = build([
        {"type": "human", "content": "later", "at": datetime(2026, 1, 2, tzinfo=timezone.utc), "id": "m2"},
        {"role": "user", "content": "earlier", "at": "2026-01-01T00:00:00Z", "id": "m1"},
    ])
    assert [s["id"] for s in packet.sections] == ["m1", "m2"]


@pytest.mark.parametrize(("messages", "field"), [
    ([{"role": "critic", "content": "x"}], "messages[0].role"),
    ([{"role": "user", "content": [{"type": "video"}]}], "messages[0].content[0].type"),
    ([{"type": "banana"}], "messages[0].type"),
    ([{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"id": "c"}]}],
     "messages[1].tool_calls[0].name"),
    ([object()], "messages[0]"),
    ([{"role": "user", "content": "x", "at": datetime(2026, 1, 1)}], "messages[0].at"),
])
def test_unreadable_shapes_are_refused_by_name(messages: list[Any], field: str) -> None:
    b = hc.ContextBuilder()
    with pytest.raises(hc.ValidationError) as caught:
        b.add_messages(messages)
    assert field in caught.value.fields
    assert b.build().sections == []


def test_bad_provider() -> None:
    packet = build([{"role": "user", "content": "x"}])
    for provider in ("mcp", "gemini"):
        with pytest.raises(hc.ValidationError) as caught:
            packet.to_messages(provider)  # type: ignore[arg-type]
        assert caught.value.fields == ["provider"]


def _random_conversation(rng: random.Random) -> list[dict[str, Any]]:
    ids = [f"call_{n}" for n in range(4)] + ["toolu.bad/id", "c" * 60]
    out: list[dict[str, Any]] = []
    for _ in range(rng.randrange(12)):
        kind = rng.choice(["user", "assistant", "exchange", "tool", "system", "anthropic"])
        priority = rng.randrange(100)
        text = rng.choice(["", "  ", "some words " * rng.randrange(1, 8)])
        if kind in ("user", "assistant", "system"):
            out.append({"role": kind, "content": text, "priority": priority})
        elif kind == "tool":
            out.append({"role": "tool", "tool_call_id": rng.choice(ids), "content": text, "priority": priority})
        elif kind == "exchange":
            calls = rng.sample(ids, rng.randrange(1, 4))
            out.append({"role": "assistant", "content": text or None, "priority": priority, "tool_calls": [
                {"id": c, "type": "function", "function": {"name": rng.choice(["grep", "bad name"]),
                                                            "arguments": rng.choice(["{}", '{"q": 1}', "{oops"])}}
                for c in calls]})
            for c in rng.sample(calls, rng.randrange(len(calls) + 1)):
                out.append({"role": "tool", "tool_call_id": c, "content": text, "priority": rng.randrange(100)})
        else:
            calls = rng.sample(ids[:4], rng.randrange(1, 3))
            out.append({"role": "assistant", "priority": priority, "content": [
                {"type": "tool_use", "id": c, "name": "grep", "input": {"q": c}} for c in calls]})
            out.append({"role": "user", "priority": rng.randrange(100), "content": [
                {"type": "tool_result", "tool_use_id": c, "content": text} for c in calls] + [{"type": "text", "text": "ok"}]})
    return out


def test_random_conversations_with_random_drops_pass_every_providers_types() -> None:
    rng = random.Random(7)
    for _ in range(300):
        packet = build(_random_conversation(rng), budget=rng.randrange(0, 300),
                       facts=rng.choice([None, ["the API is v2"]]))
        for provider in PROVIDERS:
            CHECKS[provider](packet.to_messages(provider))  # type: ignore[arg-type]


