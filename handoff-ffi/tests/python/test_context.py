"""The context builder and redaction through the generated bindings."""

from __future__ import annotations

import datetime as dt

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
    [dropped] = packet.manifest.dropped
    assert dropped.tokens >= 1000
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
