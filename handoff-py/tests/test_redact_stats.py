"""Secret redaction and path statistics, as the core computes them."""

from __future__ import annotations

import asyncio

import pytest

import handoff_core as hc

KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3


def test_redact_replaces_secrets_and_reports_str_indices() -> None:
    text = f"héllo wörld → key: {KEY} done"
    clean, found = hc.redact(text)
    assert KEY not in clean and "[REDACTED:" in clean
    assert len(found) == 1
    r = found[0]
    assert isinstance(r, hc.Redaction) and r.rule
    assert text[r.start:r.end] == KEY  # indices into the Python str, not UTF-8 bytes
    assert clean.startswith("héllo wörld → key: [REDACTED:")


def test_redact_leaves_clean_text_alone() -> None:
    assert hc.redact("nothing to see here") == ("nothing to see here", [])


def test_custom_rule() -> None:
    redactor = hc.Redactor().with_rule("acme-token", r"acme_([0-9a-f]{16})", keywords=["acme_"])
    assert "acme-token" in redactor.rule_ids
    clean, found = redactor.redact("token acme_0123456789abcdef end")
    assert clean == "token acme_[REDACTED:acme-token] end"
    assert [f.rule for f in found] == ["acme-token"]
    assert "acme-token" not in hc.Redactor().rule_ids  # with_rule returns a new redactor


def test_bad_redaction_input() -> None:
    with pytest.raises(hc.ValidationError) as caught:
        hc.redact(b"bytes")  # type: ignore[arg-type]
    assert caught.value.fields == ["text"]
    with pytest.raises(hc.ValidationError) as caught:
        hc.Redactor().with_rule("Bad Id", "x")
    assert caught.value.fields == ["rule.id"]
    with pytest.raises(hc.ValidationError) as caught:
        hc.Redactor().with_rule("ok", "(unclosed")
    assert caught.value.fields == ["rule.pattern"]


def test_stats(store: hc.Store, clock: hc.ManualClock) -> None:
    a = store.create("t1", "g", from_agent="claude", to_agent="gemini")
    clock.advance(10)
    c = store.claim(a.id, "gemini")
    clock.advance(20)
    store.complete(c, "ok")
    b = store.create("t2", "g", from_agent="claude", to_agent="gemini")
    store.reject(b.id, "gemini", "no")
    stats = store.stats()
    assert len(stats) == 1
    s = stats[0]
    assert isinstance(s, hc.PathStats)
    assert (s.from_agent, s.to_agent, s.total, s.completed, s.failed, s.rejected) == (
        "claude", "gemini", 2, 1, 0, 1)
    assert s.median_claim_seconds == 10 and s.median_complete_seconds == 30
    assert s.to_dict()["total"] == 2
    # The queue at a glance: per status and addressee.
    store.create("t3", "g", from_agent="claude")
    queue = [(q.status, q.to_agent, q.count) for q in store.queue_counts()]
    assert queue == [("completed", "gemini", 1), ("pending", None, 1), ("rejected", "gemini", 1)]
    assert isinstance(store.queue_counts()[0], hc.QueueCount)


GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
AWS = "AKIAIOSFODNN7EXAMPLE"


def test_events_are_redacted_unless_the_owner_asks(store: hc.Store) -> None:
    h = store.create("t", "g", to_agent="bob")
    store.release(store.claim(h.id, "bob"), f"stuck: token {GITHUB}")
    store.complete(store.claim(h.id, "bob"), f"done, key {AWS}")
    shown = store.events(h.id)
    assert [e.kind for e in shown] == ["created", "claimed", "released", "claimed", "completed"]
    everything = "".join(f"{e.to_json()} {e.detail!r} {e.to_dict()!r}" for e in shown)
    assert GITHUB not in everything and AWS not in everything
    assert shown[2].detail["reason"] == "stuck: token [REDACTED:github-token]"
    assert shown[4].detail["outcome"] == "done, key [REDACTED:aws-access-key-id]"
    # The owner reads the log as written; a page of it too.
    raw = store.events(h.id, redact=False)
    assert raw[2].detail["reason"] == f"stuck: token {GITHUB}"
    assert raw[4].detail["outcome"] == f"done, key {AWS}"
    assert [e.seq for e in raw] == [e.seq for e in shown]
    assert store.events(task_id="t", after=raw[3].seq)[0].detail["outcome"].endswith("[REDACTED:aws-access-key-id]")

    async def main() -> tuple[list[hc.Event], list[hc.Event]]:
        astore = hc.aio.Store(store)
        return await astore.events(h.id), await astore.events(h.id, redact=False)

    redacted, written = asyncio.run(main())
    assert redacted == shown and written == raw
