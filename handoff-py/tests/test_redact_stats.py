"""Secret redaction and path statistics, as the core computes them."""

from __future__ import annotations

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
