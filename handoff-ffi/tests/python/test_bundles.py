"""Knowledge bundles, task replays and run comparisons through the generated bindings (docs/design.md
§9): a task curated on task/fix-oauth with a Python verifier, packaged as a redacted bundle with
a kb_ share token that finds it unless it is private (a private bundle's token and a wrong one
give the same NotFound), its portable JSON imported into a second store once (the second
import adds nothing; an unsigned bundle's verdicts kept as its claim), a signed bundle imported
verified only where its key is trusted, hostile bundles (tampered, another schema version,
truncated, deeply nested, a signature claimed for another key) refused without writing anything,
the task's run replayed as one ordered timeline and compared with a rerun, and a bundle deleted
while what was imported from it stays."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from conftest import hf, new

TASK_ID = "fix-oauth"
TASK = "task/fix-oauth"
BRANCH = "task/fix-oauth/agent-b"
# A secret in a fact: a bundle is redacted by default, so its portable JSON never holds it.
KEY = "sk-proj-aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7n"
BACKOFF = f"the refresh needs retries with backoff; the staging key was {KEY}"
MAYBE = "the refresh may also need a lock"
WRONG = "access tokens last a day"
SECOND = timedelta(seconds=1)


def say(role: str, content: str, **fields) -> hf.ContextMessage:
    return hf.ContextMessage(role=role, content=content, **fields)


CONVERSATION = [
    say("user", "fix the auth bug"),
    say("assistant", "let me retry the refresh with backoff"),
    say("assistant", "", tool_calls=[json.dumps({"id": "c1", "name": "Bash", "arguments": {"cmd": "pytest"}})]),
    say("tool", "12 passed", tool_call_id="c1"),
    say("assistant", "all tests pass"),
]


class Reviewer(hf.Verifier):
    """Verifies the backoff fact and the conversation, leaves the lock fact in between and
    invalidates the one about token lifetimes."""

    def name(self) -> str:
        return "reviewer"

    def verify(self, item: hf.VerifyItem) -> hf.Score:
        if item.kind == hf.VerifyItemKind.CONVERSATION:
            return hf.Score(score=0.8, explanation="a clean fix")
        if "backoff" in item.text:
            return hf.Score(score=0.9, explanation="matches auth.py")
        if "lock" in item.text:
            return hf.Score(score=0.5)
        return hf.Score(score=0.1, explanation="they last 15 minutes")


def curate(store: hf.Store, clock: hf.ManualClock) -> hf.Handoff:
    """agent-a hands task fix-oauth to agent-b, which curates what it learnt on its branch
    (verified by a Python verifier) and completes; one second between steps."""
    handoff = store.create(new(
        task_id=TASK_ID, goal="Fix the token refresh", from_agent="agent-a", to_agent="agent-b",
        decisions=["retry with backoff"],
    ))
    clock.advance(SECOND)
    claim = store.claim(handoff.id, "agent-b")
    clock.advance(SECOND)
    store.add_conversation(BRANCH, CONVERSATION, title="OAuth refresh")
    clock.advance(SECOND)
    store.add_facts(BRANCH, [hf.NewFact(text=BACKOFF, source="auth.py"), hf.NewFact(text=MAYBE), hf.NewFact(text=WRONG)])
    clock.advance(SECOND)
    report = store.verify(BRANCH, Reviewer())
    assert (report.verified, report.unverified, report.invalidated) == (2, 1, 1)
    clock.advance(SECOND)
    store.complete(claim.reference(), outcome="refresh retried")
    clock.advance(SECOND)
    return handoff


def team_bundle(store: hf.Store) -> hf.Bundle:
    return store.create_bundle(
        "OAuth2 Token Refresh Fix Playbook", task_id=TASK_ID, visibility=hf.Visibility.TEAM,
        tags=["oauth", "auth"], description="How the refresh was fixed",
    )


@pytest.fixture
def other(tmp_path: Path) -> hf.Store:
    """A second store (an SQLite file) to import into."""
    return hf.Store.open(str(tmp_path / "other.db"))


def nothing_in(store: hf.Store) -> tuple:
    return (store.facts("main"), store.list_conversations(), store.branches(), store.curation_events(),
            store.list_bundles())


def test_a_bundle_of_a_curated_task(store: hf.Store, clock: hf.ManualClock) -> None:
    curate(store, clock)
    bundle = team_bundle(store)

    assert bundle.share_token is not None
    assert bundle.share_token.startswith("kb_") and len(bundle.share_token) >= 3 + 32
    assert (bundle.name, bundle.description, bundle.tags) == (
        "OAuth2 Token Refresh Fix Playbook", "How the refresh was fixed", ["oauth", "auth"],
    )
    assert (bundle.bundle_type, bundle.visibility) == (hf.BundleType.TASK_EXPORT, hf.Visibility.TEAM)
    assert (bundle.source_task_id, bundle.source_branch) == (TASK_ID, TASK)
    # Verified only, by default: the backoff fact and the conversation, not the one in between.
    assert (bundle.fact_count, bundle.conversation_count, bundle.message_count) == (1, 1, 5)
    assert bundle.verification_status == hf.BundleStatus.VERIFIED
    assert bundle.verification_score == pytest.approx(0.85)
    assert bundle.verified_by == "reviewer"
    assert bundle.created_at == bundle.updated_at == clock.now()

    # The portable form: versioned, hashed, redacted.
    assert KEY not in bundle.portable_json
    portable = json.loads(bundle.portable_json)
    assert (portable["schema_version"], portable["content_hash"]) == (1, bundle.content_hash)
    assert bundle.content_hash.startswith("sha256:")
    [fact] = portable["facts"]
    assert fact["text"].startswith("the refresh needs retries with backoff") and "[REDACTED" in fact["text"]
    assert [m["content"] for m in portable["conversations"][0]["messages"]][:2] == [
        "fix the auth bug", "let me retry the refresh with backoff",
    ]
    # Printing it shows neither the token nor the portable form.
    printed = str(bundle)
    assert bundle.id in printed and bundle.share_token not in printed and "schema_version" not in printed

    assert store.get_bundle(bundle.id) == bundle
    assert store.list_bundles() == [bundle]
    assert store.list_bundles(visibility=hf.Visibility.TEAM) == [bundle]
    assert store.list_bundles(visibility=hf.Visibility.PUBLIC) == []
    assert store.curation_events(task_id=TASK_ID)[-1].kind == hf.CurationChange.BUNDLE_CREATED

    # Everything not invalidated, and the owner's opt-out of redaction.
    clock.advance(SECOND)
    everything = store.create_bundle("everything", task_id=TASK_ID, verified_only=False, redact=False)
    assert (everything.fact_count, everything.visibility) == (2, hf.Visibility.PRIVATE)
    assert everything.verification_status == hf.BundleStatus.DRAFT
    assert KEY in everything.portable_json
    assert WRONG not in everything.portable_json
    # A branch's knowledge, curated by hand.
    clock.advance(SECOND)
    curated = store.create_bundle("agent-b's notes", branch=BRANCH, bundle_type=hf.BundleType.CURATED)
    assert (curated.source_branch, curated.source_task_id, curated.bundle_type) == (BRANCH, None, hf.BundleType.CURATED)
    assert [b.id for b in store.list_bundles()] == [bundle.id, everything.id, curated.id]


def test_a_share_token_finds_only_a_bundle_that_is_not_private(store: hf.Store, clock: hf.ManualClock) -> None:
    curate(store, clock)
    team = team_bundle(store)
    private = store.create_bundle("private notes", task_id=TASK_ID)
    assert private.visibility == hf.Visibility.PRIVATE and private.share_token is None
    assert team.share_token is not None

    assert store.bundle_by_token(team.share_token) == team
    # A token that was shared, then made private: it never works again.
    shared = store.set_visibility(private.id, hf.Visibility.TEAM).share_token
    assert shared is not None
    assert store.set_visibility(private.id, hf.Visibility.PRIVATE).share_token is None
    with pytest.raises(hf.HandoffError.NotFound) as hidden:
        store.bundle_by_token(shared)
    with pytest.raises(hf.HandoffError.NotFound) as wrong:
        store.bundle_by_token("kb_" + "0" * 64)
    with pytest.raises(hf.HandoffError.NotFound) as garbage:
        store.bundle_by_token("x" * 10_000)
    # Nothing tells a private bundle's token from a wrong one.
    assert (hidden.value.description, hidden.value.what, hidden.value.id) == (
        wrong.value.description, wrong.value.what, wrong.value.id,
    ) == (garbage.value.description, garbage.value.what, garbage.value.id)
    assert private.id not in str(hidden.value)

    clock.advance(SECOND)
    public = store.set_visibility(private.id, hf.Visibility.PUBLIC)
    assert public.visibility == hf.Visibility.PUBLIC
    assert public.share_token is not None and public.share_token != shared
    assert public.updated_at == private.updated_at + SECOND
    assert store.bundle_by_token(public.share_token) == public
    hidden_again = store.set_visibility(team.id, hf.Visibility.PRIVATE)
    assert store.get_bundle(team.id) == hidden_again
    with pytest.raises(hf.HandoffError.NotFound):
        store.bundle_by_token(team.share_token)
    with pytest.raises(hf.HandoffError.NotFound):
        store.set_visibility("no-such-bundle", hf.Visibility.TEAM)


def test_a_bundle_is_imported_into_another_store_once(store: hf.Store, clock: hf.ManualClock, other: hf.Store) -> None:
    curate(store, clock)
    bundle = team_bundle(store)

    checked = other.import_bundle(bundle.portable_json, dry_run=True)
    assert other.list_conversations(None, None) == []
    first = other.import_bundle(bundle.portable_json)
    assert checked == first
    assert first == hf.ImportReport(
        bundle=bundle.name, target_branch="main", facts_added=1, facts_skipped=0,
        conversations_added=1, conversations_skipped=0, messages_added=5, signed_by=None, trusted=False,
    )
    again = other.import_bundle(bundle.portable_json, target_branch="main")
    assert (again.facts_added, again.facts_skipped, again.conversations_added, again.conversations_skipped,
            again.messages_added) == (0, 1, 0, 1, 0)

    # Unsigned: what the bundle says of its items is its claim, kept, not this store's word.
    claim = "bundle:" + bundle.content_hash[: len("sha256:") + 16]
    [fact] = other.facts("main")
    assert fact.status == hf.FactStatus.ACTIVE and KEY not in fact.text and "backoff" in fact.text
    assert (fact.score, fact.verified_by) == (0.9, claim)
    [conversation] = other.list_conversations(branch="main")
    assert conversation.message_count == 5 and conversation.verification_status == hf.Verdict.UNVERIFIED
    assert (conversation.verification_score, conversation.verified_by) == (0.8, claim)
    assert [m.content for m in other.messages(conversation.id)][-1] == "all tests pass"
    assert [e.kind for e in other.curation_events()] == [hf.CurationChange.BUNDLE_IMPORTED] * 2

    # Into a task's branch of the same store, as a starting point for a rerun.
    into_task = store.import_bundle(bundle.portable_json, target_branch="task/fix-oauth-rerun")
    assert (into_task.target_branch, into_task.facts_added) == ("task/fix-oauth-rerun", 1)
    assert len(store.facts("task/fix-oauth-rerun")) == 1


def test_a_signed_bundle_is_verified_only_where_its_key_is_trusted(
    store: hf.Store, clock: hf.ManualClock, other: hf.Store
) -> None:
    keys = hf.generate_bundle_key()
    assert keys.public_key.startswith("ed25519:") and len(keys.public_key) == len("ed25519:") + 64
    assert keys.secret_key.startswith("ed25519-secret:") and len(keys.secret_key) == len("ed25519-secret:") + 64
    hex_secret = keys.secret_key[len("ed25519-secret:"):]
    for printed in (str(keys), repr(keys), f"{keys}"):
        assert hex_secret not in printed, printed
    assert keys.public_key in str(keys)

    curate(store, clock)
    bundle = team_bundle(store)
    assert "signature" not in json.loads(bundle.portable_json)
    clock.advance(SECOND)
    signed = store.sign_bundle(bundle.id, keys.secret_key)
    assert (signed.id, signed.content_hash, signed.updated_at) == (bundle.id, bundle.content_hash, clock.now())
    assert store.get_bundle(bundle.id) == signed
    signature = json.loads(signed.portable_json)["signature"]
    assert signature["public_key"] == keys.public_key and len(signature["signature"]) == 128
    assert hex_secret not in signed.portable_json and hex_secret not in str(signed)

    # Into a store that does not trust the key: signed by it, not trusted, the verdicts a claim.
    untrusted = other.import_bundle(signed.portable_json)
    assert (untrusted.signed_by, untrusted.trusted, untrusted.facts_added) == (keys.public_key, False, 1)
    [fact] = other.facts("main")
    assert fact.status == hf.FactStatus.ACTIVE and fact.verified_by == "bundle:" + bundle.content_hash[:23]

    # Trusted: into another branch, verified, saying whose word it is.
    assert other.trust_bundle_keys() == []
    [trusted] = other.trust_bundle_keys(trust=[keys.public_key])
    assert trusted.public_key == keys.public_key and trusted.trusted_at.tzinfo is not None
    assert other.trust_bundle_keys(trust=[keys.public_key]) == [trusted], "trusting again changes nothing"
    report = other.import_bundle(signed.portable_json, target_branch="task/rerun")
    assert (report.signed_by, report.trusted, report.facts_added, report.conversations_added) == (
        keys.public_key, True, 1, 1,
    )
    [fact] = other.facts("task/rerun")
    assert fact.status == hf.FactStatus.VERIFIED
    assert fact.verified_by is not None and fact.verified_by.endswith(f"signed by {keys.public_key}")
    [conversation] = other.list_conversations(branch="task/rerun")
    assert conversation.verification_status == hf.Verdict.VERIFIED
    assert other.trust_bundle_keys(distrust=[keys.public_key]) == []

    # The signature claimed for another key does not hold: refused by name, nothing written.
    claimed = json.loads(signed.portable_json)
    claimed["signature"]["public_key"] = hf.generate_bundle_key().public_key
    with pytest.raises(hf.HandoffError.Validation) as err:
        other.import_bundle(json.dumps(claimed), target_branch="task/claimed")
    assert [p.field for p in err.value.problems] == ["signature"]
    assert other.facts("task/claimed") == []

    # Keys are read by their form: every bad one named, nothing trusted.
    with pytest.raises(hf.HandoffError.Validation) as err:
        other.trust_bundle_keys(trust=[keys.secret_key, keys.public_key], distrust=["ssh-ed25519 AAAA"])
    assert [p.field for p in err.value.problems] == ["trust[0]", "distrust[0]"]
    assert hex_secret not in str(err.value)
    assert other.trust_bundle_keys() == []
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.sign_bundle(bundle.id, keys.public_key)
    assert [p.field for p in err.value.problems] == ["secret_key"]
    with pytest.raises(hf.HandoffError.NotFound):
        store.sign_bundle("no-such-bundle", keys.secret_key)


def test_hostile_bundles_are_refused_and_change_nothing(store: hf.Store, clock: hf.ManualClock, other: hf.Store) -> None:
    curate(store, clock)
    text = team_bundle(store).portable_json
    before = nothing_in(other)

    def refused(bundle: str, target_branch: str | None = None) -> list[hf.ValidationProblem]:
        with pytest.raises(hf.HandoffError.Validation) as err:
            other.import_bundle(bundle, target_branch=target_branch)
        return err.value.problems

    # Changed after it was made: the content no longer matches its hash.
    tampered = text.replace("all tests pass", "all tests fail")
    assert tampered != text
    assert [p.field for p in refused(tampered)] == ["content_hash"]
    # A bundle of another version is named as such.
    versioned = json.loads(text)
    versioned["schema_version"] = 99
    [problem] = refused(json.dumps(versioned))
    assert problem.field == "schema_version" and "99" in problem.rule
    assert refused('{"schema_version": 2}')[0].field == "schema_version"
    # Cut short.
    assert any("EOF" in p.rule for p in refused(text[: len(text) // 2]))
    # Nested deeper than any reader reads: refused before it is parsed.
    deep = '{"schema_version": 1, "name": "x", "task": ' + "[" * 100_000 + "]" * 100_000 + "}"
    [problem] = refused(deep)
    assert problem.field == "bundle" and "nest" in problem.rule
    # Not a bundle at all, and a good one into a bad branch.
    assert refused("42")[0].field == "bundle"
    assert refused("[1, 2]")
    assert refused("")[0].field == "bundle"
    assert [p.field for p in refused(text, target_branch="feature/x")] == ["target_branch"]

    assert nothing_in(other) == before == ([], [], [], [], [])
    # The good bundle still imports.
    assert other.import_bundle(text).facts_added == 1


def test_a_run_replayed_and_compared_with_its_rerun(store: hf.Store, clock: hf.ManualClock) -> None:
    handoff = curate(store, clock)
    bundle = team_bundle(store)

    replay = store.replay(TASK_ID)
    assert replay.task_id == TASK_ID
    kinds = [e.kind for e in replay.timeline]
    assert kinds == [
        "handoff.created", "handoff.claimed", "curation.conversation_added", "curation.facts_added",
        "curation.verified", "handoff.completed", "curation.bundle_created",
    ]
    times = [e.at for e in replay.timeline]
    assert times == sorted(times) and times[0] == handoff.created_at
    created, claimed = replay.timeline[:2]
    assert (created.agent, claimed.agent) == ("agent-a", "agent-b")
    assert handoff.id in created.summary
    completed = replay.timeline[5]
    assert json.loads(completed.data)["outcome"] == "refresh retried"
    assert json.loads(replay.timeline[-1].data)["bundle_id"] == bundle.id
    # An entry without data (a claim, say) has JSON null, as the other bindings show it.
    assert all(isinstance(json.loads(e.data), (dict, list, type(None))) for e in replay.timeline)

    agents = {a.agent: a for a in replay.agents}
    assert set(agents) == {"agent-a", "agent-b"}
    assert (agents["agent-a"].handed_off, agents["agent-a"].claimed) == (1, 0)
    b = agents["agent-b"]
    assert (b.claimed, b.completed, b.failed, b.curated) == (1, 1, 0, 3)
    assert (b.first_at, b.last_at) == (times[1], times[5])

    outcome = replay.outcome
    assert (outcome.status, outcome.result) == ("completed", "refresh retried")
    assert (outcome.started_at, outcome.finished_at) == (times[0], times[-1])
    assert outcome.duration_seconds == 6
    # Not invalidated by default; verified only on request.
    assert [f.text for f in replay.key_facts] == [BACKOFF, MAYBE]
    assert [f.text for f in store.replay(TASK_ID, verified_only=True).key_facts] == [BACKOFF]
    assert [c.title for c in replay.key_conversations] == ["OAuth refresh"]

    # The rerun: agent-a hands the same task to agent-c, which decides more and learns else.
    rerun = store.create(new(
        task_id="fix-oauth-rerun", goal="Fix the token refresh", from_agent="agent-a",
        to_agent="agent-c", decisions=["retry with backoff", "cache the token"],
    ))
    store.add_facts("task/fix-oauth-rerun/agent-c", [hf.NewFact(text=MAYBE), hf.NewFact(text="access tokens last an hour")])
    clock.advance(SECOND)
    compared = store.compare(TASK_ID, "fix-oauth-rerun")
    assert (compared.task_a, compared.task_b) == (TASK_ID, "fix-oauth-rerun")
    assert compared.agents == hf.Overlap(only_a=["agent-b"], only_b=["agent-c"], both=["agent-a"])
    assert compared.decision_points == hf.Overlap(only_a=[], only_b=["cache the token"], both=["retry with backoff"])
    assert compared.facts == hf.Overlap(only_a=[BACKOFF], only_b=["access tokens last an hour"], both=[MAYBE])
    assert compared.outcome_a == store.replay(TASK_ID).outcome
    assert compared.outcome_b.status == "in_progress" and compared.outcome_b.result is None
    assert (compared.timeline_length_a, compared.timeline_length_b) == (7, 2)
    assert rerun.id in store.replay("fix-oauth-rerun").timeline[0].summary

    with pytest.raises(hf.HandoffError.NotFound) as err:
        store.replay("no-such-task")
    assert err.value.what == "task"
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.replay("../x")
    assert [p.field for p in err.value.problems] == ["task_id"]
    with pytest.raises(hf.HandoffError.NotFound):
        store.compare(TASK_ID, "no-such-task")


def test_a_deleted_bundle_is_gone_and_its_imports_stay(store: hf.Store, clock: hf.ManualClock, other: hf.Store) -> None:
    curate(store, clock)
    bundle = team_bundle(store)
    other.import_bundle(bundle.portable_json)

    assert store.delete_bundle(bundle.id) is None
    with pytest.raises(hf.HandoffError.NotFound) as err:
        store.get_bundle(bundle.id)
    assert (err.value.what, err.value.id) == ("bundle", bundle.id)
    with pytest.raises(hf.HandoffError.NotFound):
        store.bundle_by_token(bundle.share_token)
    with pytest.raises(hf.HandoffError.NotFound):
        store.delete_bundle(bundle.id)
    assert store.list_bundles() == []
    # What was imported stays, and the portable form still imports: it is self-contained.
    assert len(other.facts("main")) == 1
    assert store.import_bundle(bundle.portable_json).facts_added == 1


def test_bad_arguments_are_named_and_write_nothing(store: hf.Store, clock: hf.ManualClock) -> None:
    curate(store, clock)
    events = store.curation_events(task_id=TASK_ID)
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.create_bundle("nothing to package")
    assert [p.field for p in err.value.problems] == ["task_id"]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.create_bundle("x", branch="feature/x")
    assert [p.field for p in err.value.problems] == ["branch"]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.create_bundle(" ", task_id=TASK_ID)
    assert [p.field for p in err.value.problems] == ["name"]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.create_bundle("x", task_id="../etc")
    assert [p.field for p in err.value.problems] == ["task_id"]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.get_bundle("../x")
    assert [p.field for p in err.value.problems] == ["id"]
    assert store.list_bundles() == []
    assert store.curation_events(task_id=TASK_ID) == events
