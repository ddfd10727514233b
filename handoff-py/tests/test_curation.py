"""Curated memory (issue #17) from Python and ``hc.aio``: conversations in any provider's shape,
cherry-picks (a range, decision points by the heuristics or a judge, tool sequences), facts
through the verification gate with plain and async callables, merges, and the successor's
packet; bad input refused by name with nothing written."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

import handoff_core as hc

OPENAI_KEY = "sk-proj-" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7n"
AGENT = "task/fix-oauth/agent-b"
TASK = "task/fix-oauth"

MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "the token refresh fails with 401"},
    {"role": "assistant", "content": "let me look at the refresh call"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": '{"q": "refresh"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "src/auth.js:42 refresh()"},
    # The Anthropic shape, read on the way in.
    {"role": "assistant", "content": [{"type": "text", "text": "the refresh has no retry; adding backoff"}]},
    {"role": "user", "content": f"thanks, the key is {OPENAI_KEY}"},
]


def by_text(item: dict[str, Any]) -> tuple[float, str]:
    """A judge that trusts what is said about retries and backoff."""
    if "backoff" in item["text"] or "retries" in item["text"]:
        return 0.9, "matches the fix"
    return 0.1, "tokens last 15 minutes, not 1h"


def test_the_issue_example_moves_verified_knowledge_up(store: hc.Store) -> None:
    conv = store.add_conversation(AGENT, MESSAGES, task_id="fix-oauth", title="OAuth refresh")
    assert (conv.message_count, conv.branch, conv.task_id, conv.agent) == (6, AGENT, "fix-oauth", "agent-b")
    assert conv.verification_status == "unverified"

    ranged = store.cherry_pick(conv.id, TASK, from_seq=2, to_seq=5)
    assert (ranged.message_count, ranged.cherry_picked_from) == (4, conv.id)
    decisions = store.cherry_pick_decisions(conv.id, TASK)
    assert decisions.message_count >= 1
    tools = store.cherry_pick_tools(conv.id, TASK)
    assert [m["role"] for m in store.messages(tools.id)] == ["assistant", "tool"]
    shown = store.messages(conv.id)
    assert [m["seq"] for m in shown] == [1, 2, 3, 4, 5, 6]
    assert [m["is_cherry_picked"] for m in shown] == [False, True, True, True, True, False]
    assert shown[1]["cherry_picked_to"][0]["branch"] == TASK

    facts = store.add_facts(AGENT, ["refresh needs retries with backoff",
                                    {"text": "tokens last 1h", "confidence": 0.6, "source": "docs"}])
    assert [f.status for f in facts] == ["active", "active"]
    report = store.verify(AGENT, verifier=by_text)
    # Two facts and the conversation, whose text (its transcript) mentions backoff.
    assert (report.verified, report.invalidated, report.unverified, report.failed) == (2, 1, 0, 0)
    checked = {f.text: f for f in store.facts(AGENT)}
    assert checked["tokens last 1h"].status == "invalidated"
    assert checked["tokens last 1h"].explanation == "tokens last 15 minutes, not 1h"
    assert checked["refresh needs retries with backoff"].verified_by == "by_text"

    merged = store.merge(AGENT)
    assert (merged.branch, merged.into, merged.facts, merged.conversations, merged.kept) == (AGENT, TASK, 1, 1, 1)
    assert store.merge(AGENT).facts == 0, "merging twice adds nothing"
    assert [f.text for f in store.facts(TASK, status="verified")] == ["refresh needs retries with backoff"]
    assert [f.status for f in store.facts(AGENT)] == ["promoted", "invalidated"]
    assert {b["name"]: b["parent"] for b in store.branches()} == {TASK: "main", AGENT: TASK}

    h = store.create("fix-oauth", "Ship the refresh fix", from_agent="agent-b")
    packet = store.context_for(h.id, budget_tokens=4000)
    assert "refresh needs retries with backoff" in packet.markdown
    assert "tokens last 1h" not in packet.markdown
    assert OPENAI_KEY not in packet.markdown, "the packet is redacted"
    kinds = [e["kind"] for e in store.curation_events(task_id="fix-oauth")]
    assert kinds[0] == "conversation_added" and kinds[-1] == "merged"


def test_no_verifier_is_neutral_and_writes_nothing(store: hc.Store) -> None:
    store.add_facts(AGENT, ["a", "b"])
    report = store.verify(AGENT)
    assert (report.verified, report.invalidated, report.unverified) == (0, 0, 2)
    assert {f.score for f in store.facts(AGENT)} == {None}
    assert {f.verified_by for f in store.facts(AGENT)} == {None}
    # Lowered thresholds do not turn the neutral score into a verdict: nothing is written.
    store.verify(AGENT, fact_threshold=0.5)
    assert {f.status for f in store.facts(AGENT)} == {"active"}


def test_a_failing_verifier_leaves_its_item_and_is_reported(store: hc.Store) -> None:
    store.add_facts(AGENT, ["raises", "nan", "too high", "words", "good"])

    def picky(item: dict[str, Any]) -> Any:
        answers: dict[str, Any] = {"nan": math.nan, "too high": 1.5, "words": "very", "good": {"score": 0.8}}
        if item["text"] == "raises":
            raise RuntimeError("the model timed out")
        return answers[item["text"]]

    report = store.verify(AGENT, picky)
    assert (report.verified, report.failed) == (1, 4)
    errors = [i["error"] for i in report.items if i["error"]]
    assert "the model timed out" in errors[0]
    assert all(f.status == "active" and f.score is None for f in store.facts(AGENT) if f.text != "good")


def test_a_judge_picks_decision_points_and_its_exception_writes_nothing(store: hc.Store) -> None:
    conv = store.add_conversation(AGENT, MESSAGES)
    asked: list[int] = []

    def judge(message: dict[str, Any]) -> bool:
        asked.append(message["index"])
        return bool(message["role"] == "user")

    picked = store.cherry_pick_decisions(conv.id, TASK, judge=judge)
    assert asked == [0, 1, 2, 3, 4, 5]
    assert [m["role"] for m in store.messages(picked.id)] == ["user", "user"]

    class Broken(Exception):
        pass

    def broken(message: dict[str, Any]) -> bool:
        raise Broken("no model")

    before = store.list_conversations()
    with pytest.raises(Broken):
        store.cherry_pick_decisions(conv.id, TASK, broken)
    with pytest.raises(hc.ValidationError) as err:
        store.cherry_pick_decisions(conv.id, TASK, lambda m: "yes")  # type: ignore[arg-type, return-value]
    assert err.value.problems[0][0] == "judge"
    assert [c.id for c in store.list_conversations()] == [c.id for c in before]


def test_bad_input_is_named_and_writes_nothing(store: hc.Store) -> None:
    conv = store.add_conversation(AGENT, MESSAGES[:2])
    with pytest.raises(hc.ValidationError) as err:
        store.add_conversation("feature/x", [{"role": "user", "content": "x" * 70_000}, {"role": "robot"}])
    assert [field for field, _ in err.value.problems] == ["branch", "messages[1].role"]
    with pytest.raises(hc.ValidationError) as err:
        store.add_conversation("feature/x", [{"role": "user", "content": "x" * 70_000}])
    assert [field for field, _ in err.value.problems] == ["branch", "messages[0].content"]
    with pytest.raises(hc.ValidationError) as err:
        store.cherry_pick(conv.id, TASK, from_seq=2, to_seq=9)
    assert [field for field, _ in err.value.problems] == ["to_seq"]
    with pytest.raises(hc.ValidationError) as err:
        store.add_facts(AGENT, ["", {"text": "x", "confidence": 2}])
    assert [field for field, _ in err.value.problems] == ["facts[0].text", "facts[1].confidence"]
    with pytest.raises(hc.ValidationError) as err:
        store.verify(AGENT, invalidate_below=0.9)
    assert [field for field, _ in err.value.problems] == ["invalidate_below"]
    with pytest.raises(hc.ValidationError):
        store.merge("main")
    with pytest.raises(hc.NotFound):
        store.cherry_pick("no-such", TASK)
    assert [c.id for c in store.list_conversations()] == [conv.id]
    assert store.facts(AGENT) == []
    assert [e["kind"] for e in store.curation_events(task_id="fix-oauth")] == ["conversation_added"]


def test_aio_takes_async_verifiers_and_judges() -> None:
    async def main() -> None:
        async with hc.aio.Store.memory() as store:
            conv = await store.add_conversation(AGENT, MESSAGES)
            await store.add_facts(AGENT, ["refresh needs retries with backoff", "tokens last 1h"])
            loop = asyncio.get_running_loop()
            on_loop: list[bool] = []

            async def model(item: dict[str, Any]) -> tuple[float, str]:
                on_loop.append(asyncio.get_running_loop() is loop)
                await asyncio.sleep(0)
                return by_text(item)

            report = await store.verify(AGENT, model)
            assert (report.verified, report.invalidated) == (2, 1)
            assert on_loop == [True, True, True], "an async verifier runs on the event loop"
            assert {f.verified_by for f in await store.facts(AGENT)} == {"model"}

            async def judge(message: dict[str, Any]) -> bool:
                return bool(message["role"] == "tool")

            picked = await store.cherry_pick_decisions(conv.id, TASK, judge)
            assert picked.message_count == 1
            # A plain function works too.
            plain = await store.verify(AGENT, lambda item: 0.95)
            assert plain.verified == 3
            merged = await store.merge(AGENT)
            assert merged.facts == 2

    asyncio.run(main())


def test_curation_in_the_seeds_order(store: hc.Store) -> None:
    """Issue 47: a verified cherry-pick with the seed's names, facts drawn from a conversation,
    the bundle of a merged task, and its verification recorded on it."""
    conv = store.add_conversation(AGENT, MESSAGES)

    # cherry_pick_conversation(verify=True), in the seed's names; the pick is scored before it is written.
    seen: list[int] = []

    def judge(item: dict[str, Any]) -> tuple[float, str]:
        seen.append(len(item["messages"]))
        return by_text(item)

    picked = store.cherry_pick(conv.id, TASK, judge, from_sequence=2, to_sequence=5, verify=True)  # type: ignore[call-arg]
    assert seen == [4]
    assert (picked.message_count, picked.verification_status, picked.verified_by) == (4, "verified", "judge")
    with pytest.raises(hc.ValidationError) as err:
        store.cherry_pick(conv.id, TASK, verify=True)
    assert err.value.problems[0][0] == "verify"

    class Broken(Exception):
        pass

    def broken(item: dict[str, Any]) -> float:
        raise Broken("no model")

    before = [c.id for c in store.list_conversations()]
    with pytest.raises(Broken):
        store.cherry_pick(conv.id, TASK, broken)
    assert [c.id for c in store.list_conversations()] == before

    # cherry_pick_to_facts: the heuristics, then an extractor; candidates until verified.
    notes = store.add_conversation(AGENT, [
        {"role": "user", "content": "why does it fail?"},
        {"role": "assistant", "content": "The root cause is the missing retry in src/auth.js:42. Shall I fix it?"},
    ])
    drawn = store.cherry_pick_to_facts(notes.id, AGENT)
    assert [f.text for f in drawn] == ["The root cause is the missing retry in src/auth.js:42."]
    assert drawn[0].status == "active" and drawn[0].source == f"conversation:{notes.id}#2"
    extracted = store.cherry_pick_to_facts(
        conv.id, AGENT, lambda c: ["refresh needs retries with backoff", {"text": "tokens last 1h", "confidence": 0.4}]
    )
    assert [(f.text, f.confidence) for f in extracted] == [
        ("refresh needs retries with backoff", None),
        ("tokens last 1h", 0.4),
    ]
    with pytest.raises(Broken):
        store.cherry_pick_to_facts(conv.id, AGENT, broken)
    assert len(store.facts(AGENT)) == 3

    # The task merged into main: its bundle still holds what it verified.
    store.verify(AGENT, verifier=by_text)
    store.merge(AGENT)
    store.verify(TASK, verifier=by_text)
    store.merge(TASK)
    bundle = store.create_bundle("Playbook", task_id="fix-oauth", visibility="team")
    # Each piece of knowledge once, though merges copied it up twice.
    assert (bundle.fact_count, bundle.conversation_count) == (1, 2), bundle
    with pytest.raises(hc.ValidationError) as err:
        store.verify_bundle(bundle.id)
    assert err.value.problems[0][0] == "verifier"
    checked = store.verify_bundle(bundle.id, lambda item: 0.95)
    assert (checked.verification_status, checked.verified_by) == ("verified", "<lambda>")
    assert store.get_bundle(bundle.id).verification_score == pytest.approx(0.95)
    # The seed's memory_bundle_import: by the bundle's id or its share token.
    report = store.import_bundle(bundle_id=bundle.id, target_branch="task/other")
    assert report.facts_added == 1
    assert store.import_bundle(share_token=bundle.share_token, target_branch="task/other").facts_skipped == 1
