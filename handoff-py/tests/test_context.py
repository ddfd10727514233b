"""The context builder: the core decides; these check that Python reaches every part of it."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

import handoff_core as hc

KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3


def test_packet_from_a_handoff_messages_facts_and_items() -> None:
    with hc.Store.memory() as store:
        h = store.create("t", "Ship the parser", from_agent="a", pending=["tests"], instructions="go")
    b = hc.ContextBuilder(budget_tokens=2000)
    assert b.add_handoff(h) is b  # chaining
    b.add_messages([
        {"role": "user", "content": "please port invoices", "at": datetime(2026, 1, 1, tzinfo=timezone.utc)},
        {"role": "assistant", "content": None, "tool_calls": [{"name": "grep", "args": {"q": "x"}}],
         "name": "ignored provider key"},
    ]).add_facts(["the CI key is " + KEY, {"text": "tests live in tests/"}]).add_item("a note", priority=10)
    packet = b.build()
    assert isinstance(packet, hc.Packet)
    assert "Ship the parser" in packet.markdown
    assert KEY not in packet.markdown and "[REDACTED:" in packet.markdown
    assert 0 < packet.tokens <= packet.budget == 2000
    assert all(isinstance(m, dict) and "role" in m for m in packet.messages)
    manifest = packet.manifest
    assert isinstance(manifest, hc.Manifest) and manifest.included
    assert manifest.redacted and manifest.redacted[0]["count"] >= 1
    assert set(manifest.to_dict()) == {"included", "truncated", "summarized", "dropped", "redacted"}
    assert json.loads(packet.to_json())["tokens"] == packet.tokens
    assert b.build() == packet  # deterministic


def test_small_budget_drops_and_reports() -> None:
    b = hc.ContextBuilder(budget_tokens=30, redact=False)
    b.add_facts([f"fact number {i} " * 5 for i in range(20)])
    packet = b.build()
    assert packet.tokens <= 30
    assert packet.manifest.dropped


def test_redaction_off_and_custom_redactor() -> None:
    plain = hc.ContextBuilder(redact=False).add_facts(["key " + KEY]).build()
    assert KEY in plain.markdown
    redactor = hc.Redactor().with_rule("acme-token", r"acme_([0-9a-f]{16})", ["acme_"])
    custom = hc.ContextBuilder(redactor=redactor).add_facts(["acme_0123456789abcdef"]).build()
    assert "[REDACTED:acme-token]" in custom.markdown


@pytest.mark.parametrize(("call", "field"), [
    (lambda: hc.ContextBuilder(budget_tokens=-1), "budget_tokens"),
    (lambda: hc.ContextBuilder().add_handoff("h"), "h"),  # type: ignore[arg-type]
    (lambda: hc.ContextBuilder().add_messages("hi"), "messages"),  # type: ignore[arg-type]
    (lambda: hc.ContextBuilder().add_messages([{"content": "x"}]), "messages[0].role"),
    (lambda: hc.ContextBuilder().add_messages([{"role": "user", "content": 5}]), "messages[0].content"),
    (lambda: hc.ContextBuilder().add_messages([{"role": "user", "content": "x", "at": "now"}]), "messages[0].at"),
    (lambda: hc.ContextBuilder().add_messages([{"role": "user", "content": "x", "tool_calls": "x"}]),
     "messages[0].tool_calls"),
    (lambda: hc.ContextBuilder().add_messages([1]), "messages[0]"),  # type: ignore[list-item]
    (lambda: hc.ContextBuilder().add_facts([3]), "facts[0]"),  # type: ignore[list-item]
    (lambda: hc.ContextBuilder().add_facts([{"txt": "x"}]), "facts[0].text"),
    (lambda: hc.ContextBuilder().add_item(1, 5), "text"),  # type: ignore[arg-type]
    (lambda: hc.ContextBuilder().add_item("x", 2**40), "priority"),
])
def test_bad_input(call, field) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(hc.ValidationError) as caught:
        call()
    assert field in caught.value.fields
