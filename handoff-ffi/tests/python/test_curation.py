"""Curated memory through the generated bindings (docs/design.md §9): a conversation on an agent's
branch, cherry-picks by range, by decision points (the heuristics, or a Python judge) and by
tool sequences, facts, verification with no verifier (the neutral 0.5, nothing written) and with a Python one
(one that raises, one that answers NaN: each reported, its item left as it was), merges that
move verified knowledge up once, the successor's packet with the verified facts, and the
curation log; bad input named by its field, writing nothing."""

from __future__ import annotations

import json
import math

import pytest

from conftest import hf, new

BRANCH = "task/fix-oauth/agent-b"
TASK = "task/fix-oauth"


def say(role: str, content: str, **fields) -> hf.ContextMessage:
    return hf.ContextMessage(role=role, content=content, **fields)


def call(call_id: str, name: str, arguments: dict) -> str:
    return json.dumps({"id": call_id, "name": name, "arguments": arguments})


# The seed's example conversation: its decision points are seqs 2, 5 and 8, its tool sequences
# 3-4, 6-7 and 8-9.
SEED = [
    say("user", "fix the auth bug"),
    say("assistant", "let me investigate..."),
    say("assistant", "", tool_calls=[call("c1", "Read", {"path": "auth.py"})]),
    say("tool", "def check_token(t): ...", tool_call_id="c1"),
    say("assistant", "found the issue: the expiry is compared in seconds"),
    say("assistant", "", tool_calls=[call("c2", "Edit", {"path": "auth.py"})]),
    say("tool", "edited", tool_call_id="c2"),
    say("assistant", "fixed, let me test", tool_calls=[call("c3", "Bash", {"cmd": "pytest"})]),
    say("tool", "12 passed", tool_call_id="c3"),
    say("assistant", "all tests pass"),
    say("user", "thanks"),
]

FACTS = [
    hf.NewFact(text="the refresh needs retries with backoff", confidence=0.8, source="auth.py"),
    hf.NewFact(text="access tokens last a day"),
    hf.NewFact(text="the model times out on this one"),
]


def contents(store: hf.Store, conversation: hf.Conversation) -> list[str]:
    return [m.content for m in store.messages(conversation.id)]


class Users(hf.DecisionJudge):
    """Takes the user's messages; remembers what it was asked."""

    def __init__(self) -> None:
        self.asked: list[int] = []

    def is_decision(self, index: int, message: hf.ConversationMessage) -> bool:
        self.asked.append(index)
        return message.role == "user"


class Broken(hf.DecisionJudge):
    def is_decision(self, index: int, message: hf.ConversationMessage) -> bool:
        raise ConnectionError("the judge is unreachable")


class Reviewer(hf.Verifier):
    """Verifies the retries fact and the conversation, invalidates the other fact and raises
    on the one about time-outs."""

    def __init__(self) -> None:
        self.seen: list[tuple[hf.VerifyItemKind, str]] = []

    def name(self) -> str:
        return "reviewer"

    def verify(self, item: hf.VerifyItem) -> hf.Score:
        self.seen.append((item.kind, item.id))
        if "times out" in item.text:
            raise TimeoutError("the model timed out")
        if item.kind == hf.VerifyItemKind.CONVERSATION:
            assert item.conversation is not None and item.conversation.id == item.id
            assert [m.seq for m in item.messages] == list(range(1, 12))
            assert item.text.startswith("user: fix the auth bug\nassistant: let me investigate")
            assert json.loads(item.json)["kind"] == "conversation"
            return hf.Score(score=0.9, explanation="a clean fix")
        assert item.fact is not None and item.fact.text == item.text
        if "retries" in item.text:
            return hf.Score(score=0.95, explanation="matches auth.py")
        return hf.Score(score=0.1, explanation="they last 15 minutes")


def test_a_conversation_on_an_agents_branch(store: hf.Store) -> None:
    conversation = store.add_conversation(BRANCH, SEED, title="OAuth refresh")
    assert (conversation.branch, conversation.task_id, conversation.agent) == (
        BRANCH, "fix-oauth", "agent-b",
    )
    assert conversation.message_count == 11
    assert conversation.verification_status == hf.Verdict.UNVERIFIED
    assert store.get_conversation(conversation.id) == conversation

    read, result = store.messages(conversation.id, from_seq=3, to_seq=4)
    assert (read.seq, result.seq) == (3, 4)
    assert [(c.id, c.name) for c in read.tool_calls] == [("c1", "Read")]
    assert json.loads(read.tool_calls[0].arguments) == {"path": "auth.py"}
    assert (result.role, result.tool_call_id, result.is_error) == ("tool", "c1", False)
    assert not read.is_cherry_picked and read.cherry_picked_to == []

    failed = say("tool", "boom", tool_call_id="c9", is_error=True)
    appended = store.append_messages(conversation.id, [say("assistant", "", tool_calls=[call("c9", "Bash", {})]), failed])
    assert appended.message_count == 13
    assert store.messages(conversation.id, from_seq=13)[0].is_error
    assert store.list_conversations(branch=BRANCH) == [appended]
    assert store.list_conversations(task_id="fix-oauth") == [appended]
    assert store.list_conversations(branch="main") == []
    assert [(b.name, b.parent) for b in store.branches()] == [(BRANCH, TASK)]
    with pytest.raises(hf.HandoffError.NotFound):
        store.get_conversation("no-such-conversation")


def test_cherry_picks(store: hf.Store) -> None:
    source = store.add_conversation(BRANCH, SEED)

    picked = store.cherry_pick(source.id, TASK, from_seq=2, to_seq=5, title="the diagnosis")
    assert (picked.branch, picked.title, picked.message_count) == (TASK, "the diagnosis", 4)
    assert picked.cherry_picked_from == source.id
    assert contents(store, picked)[0] == "let me investigate..."
    marked = [m.seq for m in store.messages(source.id) if m.is_cherry_picked]
    assert marked == [2, 3, 4, 5]
    to = store.messages(source.id, from_seq=2, to_seq=2)[0].cherry_picked_to
    assert [(t.conversation_id, t.branch) for t in to] == [(picked.id, TASK)]
    assert store.cherry_pick(source.id, "main").message_count == 11

    decisions = store.cherry_pick_decisions(source.id, TASK)
    assert contents(store, decisions) == [
        "let me investigate...",
        "found the issue: the expiry is compared in seconds",
        "fixed, let me test",
    ]
    judge = Users()
    judged = store.cherry_pick_decisions(source.id, TASK, judge=judge)
    assert contents(store, judged) == ["fix the auth bug", "thanks"]
    assert judge.asked == list(range(11))

    tools = store.cherry_pick_tools(source.id, TASK)
    assert [m.role for m in store.messages(tools.id)] == ["assistant", "tool"] * 3
    assert [c.name for m in store.messages(tools.id) for c in m.tool_calls] == ["Read", "Edit", "Bash"]


def test_a_judge_that_raises_writes_nothing(store: hf.Store) -> None:
    source = store.add_conversation(BRANCH, SEED)
    with pytest.raises(hf.HandoffError.Foreign) as err:
        store.cherry_pick_decisions(source.id, TASK, judge=Broken())
    assert "the judge is unreachable" in err.value.description
    assert store.list_conversations() == [source]
    assert not any(m.is_cherry_picked for m in store.messages(source.id))


def test_verification_merges_and_the_successors_packet(store: hf.Store) -> None:
    conversation = store.add_conversation(BRANCH, SEED)
    facts = store.add_facts(BRANCH, FACTS)
    assert [f.status for f in facts] == [hf.FactStatus.ACTIVE] * 3
    assert (facts[0].confidence, facts[0].source) == (0.8, "auth.py")
    assert store.facts(BRANCH) == facts

    # Without a verifier every score is the neutral 0.5: nothing verified, nothing invalidated,
    # nothing written.
    neutral = store.verify(BRANCH)
    assert (neutral.branch, neutral.verified, neutral.invalidated, neutral.unverified) == (BRANCH, 0, 0, 4)
    assert {i.score for i in neutral.items} == {0.5}
    assert [f.status for f in store.facts(BRANCH)] == [hf.FactStatus.ACTIVE] * 3
    assert store.facts(BRANCH)[0].verified_by is None
    assert store.merge(BRANCH) == hf.MergeReport(branch=BRANCH, into=TASK, facts=0, conversations=0, kept=4)

    reviewer = Reviewer()
    report = store.verify(BRANCH, reviewer)
    assert (report.verified, report.invalidated, report.unverified, report.failed) == (2, 1, 0, 1)
    assert reviewer.seen == [(hf.VerifyItemKind.FACT, f.id) for f in facts] + [
        (hf.VerifyItemKind.CONVERSATION, conversation.id)
    ]
    thrown = report.items[2]
    assert (thrown.id, thrown.score, thrown.verdict) == (facts[2].id, None, None)
    assert "the model timed out" in thrown.error
    verified, invalidated, untouched = store.facts(BRANCH)
    assert (verified.status, verified.score, verified.explanation, verified.verified_by) == (
        hf.FactStatus.VERIFIED, 0.95, "matches auth.py", "reviewer",
    )
    assert invalidated.status == hf.FactStatus.INVALIDATED
    # The item the verifier raised on is left as it was (the neutral pass wrote nothing).
    assert (untouched.status, untouched.score, untouched.verified_by) == (hf.FactStatus.ACTIVE, None, None)
    assert store.get_conversation(conversation.id).verification_status == hf.Verdict.VERIFIED

    merged = store.merge(BRANCH)
    assert (merged.branch, merged.into, merged.facts, merged.conversations, merged.kept) == (BRANCH, TASK, 1, 1, 2)
    assert store.merge(BRANCH) == hf.MergeReport(branch=BRANCH, into=TASK, facts=0, conversations=0, kept=2)
    [copy] = store.facts(TASK, status=hf.FactStatus.VERIFIED)
    assert (copy.text, copy.origin) == (verified.text, verified.id)
    assert [f.id for f in store.facts(BRANCH, status=hf.FactStatus.PROMOTED)] == [verified.id]
    assert [c.origin for c in store.list_conversations(branch=TASK)] == [conversation.id]
    assert [b.name for b in store.branches()] == [TASK, BRANCH]

    handoff = store.create(new(task_id="fix-oauth", goal="Ship the OAuth fix"))
    packet = store.context_for(handoff.id, budget_tokens=4000)
    assert "Ship the OAuth fix" in packet.markdown
    assert "the refresh needs retries with backoff" in packet.markdown
    assert "access tokens last a day" not in packet.markdown
    assert any(s.kind == hf.ItemKind.FACT for s in packet.sections)
    assert packet.budget == 4000
    with pytest.raises(hf.HandoffError.NotFound):
        store.context_for("no-such-handoff")

    events = store.curation_events(task_id="fix-oauth")
    assert [e.kind for e in events] == [
        # The neutral verification wrote nothing, its log entry neither.
        hf.CurationChange.CONVERSATION_ADDED, hf.CurationChange.FACTS_ADDED,
        hf.CurationChange.MERGED,
        hf.CurationChange.VERIFIED, hf.CurationChange.MERGED, hf.CurationChange.MERGED,
    ]
    assert {e.branch for e in events} == {BRANCH}
    assert json.loads(events[4].detail)["into"] == TASK
    assert store.curation_events() == []


def test_a_score_out_of_range_is_reported(store: hf.Store) -> None:
    store.add_facts(BRANCH, [hf.NewFact(text="one"), hf.NewFact(text="two")])

    class Sloppy(hf.Verifier):
        def name(self) -> str:
            return "sloppy"

        def verify(self, item: hf.VerifyItem) -> hf.Score:
            return hf.Score(score=math.nan if item.text == "one" else 1.5)

    report = store.verify(BRANCH, Sloppy())
    assert (report.failed, report.verified) == (2, 0)
    assert all("score" in i.error for i in report.items)
    assert [(f.status, f.score) for f in store.facts(BRANCH)] == [(hf.FactStatus.ACTIVE, None)] * 2


def test_bad_input_is_named_and_changes_nothing(store: hf.Store) -> None:
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.add_conversation("feature/x", SEED)
    assert [p.field for p in err.value.problems] == ["branch"]
    assert (store.list_conversations(), store.branches(), store.curation_events()) == ([], [], [])

    source = store.add_conversation(BRANCH, SEED)
    before = (store.list_conversations(), store.messages(source.id), store.curation_events(task_id="fix-oauth"))
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.cherry_pick(source.id, TASK, from_seq=9, to_seq=12)
    assert [p.field for p in err.value.problems] == ["to_seq"]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.cherry_pick(source.id, "feature/x")
    assert [p.field for p in err.value.problems] == ["target_branch"]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.add_conversation(BRANCH, [say("wizard", "abracadabra"), say("assistant", "x", tool_calls=["{oops"])])
    assert [p.field for p in err.value.problems] == ["messages[1].tool_calls[0]"]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.add_conversation(BRANCH, [say("wizard", "abracadabra")])
    assert [p.field for p in err.value.problems] == ["messages[0].role"]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.add_facts(BRANCH, [hf.NewFact(text=" "), hf.NewFact(text="x", confidence=3.0)])
    assert [p.field for p in err.value.problems] == ["facts[0].text", "facts[1].confidence"]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.add_facts(BRANCH, [hf.NewFact(text="x", confidence=math.nan)])
    assert [p.field for p in err.value.problems] == ["facts[0].confidence"]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.verify(BRANCH, fact_threshold=math.nan)
    assert [p.field for p in err.value.problems] == ["fact_threshold"]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.verify(BRANCH, fact_threshold=0.3, invalidate_below=0.5)
    assert [p.field for p in err.value.problems] == ["invalidate_below"]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.merge("main")
    assert [p.field for p in err.value.problems] == ["into"]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.context_for("h", budget_tokens=0)
    assert [p.field for p in err.value.problems] == ["budget_tokens"]
    assert (store.list_conversations(), store.messages(source.id), store.curation_events(task_id="fix-oauth")) == before
    assert store.facts(BRANCH) == []


class Always(hf.Verifier):
    """Scores every item the same."""

    def __init__(self, score: float) -> None:
        self.score = score

    def name(self) -> str:
        return "always"

    def verify(self, item: hf.VerifyItem) -> hf.Score:
        return hf.Score(score=self.score, explanation=None)


class Down(hf.Verifier):
    def name(self) -> str:
        return "down"

    def verify(self, item: hf.VerifyItem) -> hf.Score:
        raise ConnectionError("the verifier is unreachable")


class Lister(hf.FactExtractor):
    """Draws one fact per assistant message that says `found`."""

    def name(self) -> str:
        return "lister"

    def extract(self, item: hf.VerifyItem) -> list[hf.NewFact]:
        assert item.kind == hf.VerifyItemKind.CONVERSATION
        return [hf.NewFact(text=m.content) for m in item.messages if "found" in m.content]


def test_curation_in_the_seeds_order(store: hf.Store) -> None:
    """Issue 47: a verified cherry-pick, facts drawn from a conversation, a bundle's
    verification recorded on it; a verifier that throws writes nothing."""
    source = store.add_conversation(BRANCH, SEED)
    picked = store.cherry_pick(source.id, TASK, from_seq=3, to_seq=9, verifier=Always(0.8))
    assert (picked.message_count, picked.verification_status, picked.verified_by) == (
        7,
        hf.Verdict.VERIFIED,
        "always",
    )
    with pytest.raises(hf.HandoffError.Validation):
        store.cherry_pick(source.id, TASK, verify=True)
    with pytest.raises(hf.HandoffError.Foreign) as err:
        store.cherry_pick(source.id, TASK, verifier=Down())
    assert "unreachable" in err.value.description
    assert len(store.list_conversations()) == 2

    heuristics = store.cherry_pick_to_facts(source.id, TASK)
    assert [f.text for f in heuristics] == ["found the issue: the expiry is compared in seconds"]
    drawn = store.cherry_pick_to_facts(source.id, "main", extractor=Lister())
    assert [(f.text, f.status) for f in drawn] == [
        ("found the issue: the expiry is compared in seconds", hf.FactStatus.ACTIVE)
    ]

    bundle = store.create_bundle("Playbook", task_id="fix-oauth", verified_only=False)
    with pytest.raises(hf.HandoffError.Validation):
        store.verify_bundle(bundle.id)
    verified = store.verify_bundle(bundle.id, verifier=Always(0.9))
    assert verified.verified_by == "always"
    assert verified.verification_score == pytest.approx(0.9)
