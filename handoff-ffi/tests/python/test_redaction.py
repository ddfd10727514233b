"""Markdown leaves for an LLM or a terminal, so secrets are redacted by default; the record,
`handoff_to_json` and the store keep what the caller wrote (docs/design.md §2)."""

from __future__ import annotations

import json

from conftest import hf, new

# An OpenAI project key: `sk-proj-` and 48 letters and digits.
SECRET = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk6l"
LISTS = ["completed", "pending", "decisions", "assumptions", "warnings", "errors", "files",
         "blockers", "locked_files", "priority_items", "success_criteria"]


def secret_everywhere(store: hf.Store) -> hf.Handoff:
    """A completed record with the secret in every text field, and in its outcome."""
    fields = {name: [f"{name}: {SECRET}"] for name in LISTS}
    h = store.create(new(
        goal=f"deploy with {SECRET}", progress=f"used {SECRET} twice",
        instructions=f"export OPENAI_API_KEY={SECRET}",
        reason=hf.HandoffReason.ERROR(message=f"401 for {SECRET}"),
        metadata=json.dumps({"key": SECRET, "nested": {"list": ["x", f"bearer {SECRET}"]}}),
        **fields,
    ))
    store.complete(store.claim(h.id, "worker").reference(), f"done with {SECRET}")
    return store.get(h.id)


def test_markdown_is_redacted_by_default_and_not_when_asked(store: hf.Store) -> None:
    h = secret_everywhere(store)
    assert h.outcome == f"done with {SECRET}"
    for md in (hf.handoff_to_markdown(h), hf.handoff_to_markdown(h, redact=True), hf.handoff_to_markdown(h, True)):
        assert SECRET not in md
        assert "[REDACTED:openai-api-key]" in md
        assert "deploy with [REDACTED:openai-api-key]" in md
    raw = hf.handoff_to_markdown(h, redact=False)
    # Every field the Markdown shows carries the secret as written.
    assert raw.count(SECRET) >= 4 + len(LISTS)
    for name in LISTS:
        assert f"{name}: {SECRET}" in raw
    assert f"401 for {SECRET}" in raw


def test_json_and_the_record_keep_secrets(store: hf.Store) -> None:
    h = secret_everywhere(store)
    assert h.goal == f"deploy with {SECRET}"
    text = hf.handoff_to_json(h)
    # goal, progress, instructions, reason, outcome, two metadata strings and every list.
    assert text.count(SECRET) == 7 + len(LISTS)
    assert hf.handoff_from_json(text) == h
    assert json.loads(h.metadata)["nested"]["list"][1] == f"bearer {SECRET}"


GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
AWS = "AKIAIOSFODNN7EXAMPLE"


def test_events_are_redacted_unless_the_owner_asks(store: hf.Store) -> None:
    """As the CLI shows them, and as Python and Node read them."""
    h = store.create(new(to_agent="bob"))
    store.release(store.claim(h.id, "bob").reference(), f"stuck: token {GITHUB}")
    store.fail(store.claim(h.id, "bob").reference(), f"401 for x_{AWS}")
    store.complete(store.claim(h.id, "bob").reference(), f"done, key {AWS}")
    shown = store.events(h.id)
    texts = repr([(vars(e), vars(e.change)) for e in shown])
    assert GITHUB not in texts and AWS not in texts, texts
    assert shown[2].change == hf.Change.RELEASED(reason="stuck: token [REDACTED:github-token]")
    assert shown[4].change.error == "401 for x_[REDACTED:aws-access-key-id]"
    assert shown[6].change.outcome == "done, key [REDACTED:aws-access-key-id]"
    assert store.events(h.id, redact=True) == shown
    assert store.events(task_id="task-1", after=shown[5].seq) == shown[6:]
    raw = store.events(h.id, redact=False)
    assert raw[2].change == hf.Change.RELEASED(reason=f"stuck: token {GITHUB}")
    assert raw[4].change.error == f"401 for x_{AWS}"
    assert raw[6].change.outcome == f"done, key {AWS}"
    assert [e.seq for e in raw] == [e.seq for e in shown]
