"""The context builder and redaction through the generated bindings."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from conftest import hf, new

SECRET = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t"


def test_packet_fits_the_budget_and_accounts_for_everything() -> None:
    store = hf.Store.memory()
    h = store.create(new(pending=["tests"], instructions="keep the API"))
    builder = hf.ContextBuilder(budget_tokens=120)
    builder.add_handoff(h)
    builder.add_facts([f"fact number {i} " + "x" * 80 for i in range(10)])
    builder.add_messages([hf.ContextMessage(role="user", content="hello", at=dt.datetime.now(dt.timezone.utc))])
    packet = builder.build()
    assert packet.tokens <= packet.budget == 120
    assert "Write the parser" in packet.markdown
    m = packet.manifest
    # Every fact offered is either in the packet or listed as dropped: none vanishes.
    accounted = [s.id for s in packet.sections] + [d.id for d in m.dropped]
    assert len([i for i in accounted if i.startswith("fact-")]) == 10
    assert m.dropped and all(d.reason == hf.DropReason.BUDGET for d in m.dropped)
    assert packet.messages[0].role == "system"


def test_secrets_are_redacted_and_reported() -> None:
    builder = hf.ContextBuilder()
    builder.add_facts([f"the CI key is {SECRET}"])
    packet = builder.build()
    assert SECRET not in packet.markdown and SECRET not in packet.json
    assert "[REDACTED:openai-api-key]" in packet.markdown
    assert [(r.rule, r.count) for r in packet.manifest.redacted] == [("openai-api-key", 1)]

    plain = hf.ContextBuilder(redact=False)
    plain.add_facts([f"the CI key is {SECRET}"])
    assert SECRET in plain.build().markdown


def test_redact_reports_utf8_byte_offsets() -> None:
    text = f"clé: {SECRET} ok"
    result = hf.redact(text)
    [found] = result.redactions
    assert text.encode()[found.start : found.end].decode() == SECRET
    assert SECRET not in result.text


class Words(hf.Tokenizer):
    """One token a word, except that anything mentioning "expensive" costs a thousand."""

    def count_tokens(self, text: str) -> int:
        return 1000 if "expensive" in text else len(text.split())


def test_a_foreign_tokenizer_counts_the_tokens() -> None:
    builder = hf.ContextBuilder(budget_tokens=500, tokenizer=Words())
    builder.add_item("an expensive note", priority=90)
    builder.add_item("a cheap note", priority=10)
    packet = builder.build()
    # Too dear whole, so it is cut to what the tokenizer says fits.
    [cut] = packet.manifest.truncated
    assert cut.original_tokens >= 1000 and cut.kept_tokens < 500
    assert "a cheap note" in packet.markdown
    assert packet.tokens <= 500


def test_bad_tool_call_json_names_the_message() -> None:
    builder = hf.ContextBuilder()
    try:
        builder.add_messages([hf.ContextMessage(role="assistant", content="x", tool_calls=["{oops"])])
    except hf.HandoffError.Validation as err:
        assert err.problems[0].field == "messages[0].tool_calls[0]"
    else:
        raise AssertionError("expected a validation error")


# Messages in every provider's shape, and the packet as each provider's input.

CALL = {"id": "call_1", "type": "function", "function": {"name": "grep", "arguments": '{"q": "x"}'}}


def _anthropic_valid(out: list[dict[str, Any]]) -> None:
    from anthropic.types import MessageParam
    from pydantic import TypeAdapter

    TypeAdapter(list[MessageParam]).validate_python(out)
    asked: list[str] = []
    for i, m in enumerate(out):
        assert m["role"] == ("user" if i % 2 == 0 else "assistant")
        results = [b["tool_use_id"] for b in m["content"] if b["type"] == "tool_result"]
        assert results == asked and [b["type"] for b in m["content"][: len(results)]] == ["tool_result"] * len(results)
        asked = [b["id"] for b in m["content"] if b["type"] == "tool_use"]
    assert not asked


def test_provider_shapes_in_and_each_providers_input_out() -> None:
    from openai.types.chat import ChatCompletionMessageParam
    from openai.types.responses import ResponseInputParam
    from pydantic import TypeAdapter

    builder = hf.ContextBuilder()
    builder.add_facts(["the API is v2"])
    builder.add_messages_json(json.dumps([
        {"role": "user", "content": [{"type": "text", "text": "find x"}]},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"type": "function_call_output", "call_id": "call_1", "output": "3 hits"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_2", "name": "ls", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "a b"}]},
        {"type": "ai", "content": "found it"},
    ]))
    packet = builder.build()
    chat = json.loads(packet.to_messages(hf.Provider.OPENAI_CHAT))
    TypeAdapter(list[ChatCompletionMessageParam]).validate_python(chat)
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert chat[2]["tool_calls"][0]["id"] == chat[3]["tool_call_id"] == "call_1"
    responses = json.loads(packet.to_messages(hf.Provider.OPENAI_RESPONSES))
    TypeAdapter(ResponseInputParam).validate_python(responses)
    assert [i.get("type") for i in responses].count("function_call_output") == 2
    _anthropic_valid(json.loads(packet.to_messages(hf.Provider.ANTHROPIC)))
    # The records' own messages keep the simple form.
    assert packet.messages[0].role == "system"


def test_typed_messages_pair_calls_with_results_and_drops_stay_valid() -> None:
    # Too little room to show even a cut of the tool's result: it is left out.
    builder = hf.ContextBuilder(budget_tokens=40)
    builder.add_messages([
        hf.ContextMessage(role="user", content="log in", priority=90),
        hf.ContextMessage(role="assistant", content="", tool_calls=[json.dumps(CALL)], priority=90),
        hf.ContextMessage(role="tool", content="x" * 2000, tool_call_id="call_1", priority=1),
    ])
    packet = builder.build()
    assert [d.id for d in packet.manifest.dropped] == ["message-2"]
    chat = json.loads(packet.to_messages(hf.Provider.OPENAI_CHAT))
    assert chat[-1] == {"role": "assistant", "content": '[tool call call_1] grep {"q":"x"}'}
    _anthropic_valid(json.loads(packet.to_messages(hf.Provider.ANTHROPIC)))


def test_unreadable_messages_and_mcp_are_validation_errors() -> None:
    builder = hf.ContextBuilder()
    for text, field in [
        ('[{"role": "critic", "content": "x"}]', "messages[0].role"),
        ('[{"type": "banana"}]', "messages[0].type"),
        ('{"role": "user"}', "messages_json"),
    ]:
        try:
            builder.add_messages_json(text)
        except hf.HandoffError.Validation as err:
            assert field in [p.field for p in err.problems], (text, err.problems)
        else:
            raise AssertionError(f"expected a validation error for {text}")
    packet = builder.build()
    assert packet.sections == []
    try:
        packet.to_messages(hf.Provider.MCP)
    except hf.HandoffError.Validation as err:
        assert err.problems[0].field == "provider"
    else:
        raise AssertionError("expected a validation error")
