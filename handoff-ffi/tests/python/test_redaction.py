"""Markdown leaves for an LLM or a terminal, so secrets are redacted by default; the record,
`to_json` and the store keep what the caller wrote (DESIGN §2)."""

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
    for md in (h.to_markdown(), h.to_markdown(redact=True), h.to_markdown(True)):
        assert SECRET not in md
        assert "[REDACTED:openai-api-key]" in md
        assert "deploy with [REDACTED:openai-api-key]" in md
    raw = h.to_markdown(redact=False)
    # Every field the Markdown shows carries the secret as written.
    assert raw.count(SECRET) >= 4 + len(LISTS)
    for name in LISTS:
        assert f"{name}: {SECRET}" in raw
    assert f"401 for {SECRET}" in raw


def test_json_and_the_record_keep_secrets(store: hf.Store) -> None:
    h = secret_everywhere(store)
    assert h.goal == f"deploy with {SECRET}"
    text = h.to_json()
    # goal, progress, instructions, reason, outcome, two metadata strings and every list.
    assert text.count(SECRET) == 7 + len(LISTS)
    assert hf.handoff_from_json(text) == h
    assert json.loads(h.metadata)["nested"]["list"][1] == f"bearer {SECRET}"
