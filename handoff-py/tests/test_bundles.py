"""Knowledge bundles, task replay and run comparison (issue #18) from Python and ``hc.aio``:
a task's verified knowledge leaves one store and enters another once, share tokens open only
what is shared, hostile bundles change nothing, and a task replays as one timeline."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import handoff_core as hc

OPENAI_KEY = "sk-proj-" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7n"


def curated(store: hc.Store) -> None:
    """The fix-oauth task: a handoff, a verified fact, an invalidated one, a picked conversation."""
    store.create("fix-oauth", "Fix the token refresh", from_agent="claude", to_agent="gemini",
                 decisions=["retry with backoff"])
    conv = store.add_conversation("task/fix-oauth/gemini", [
        {"role": "user", "content": "the refresh fails"},
        {"role": "assistant", "content": "let me add retries with backoff"}])
    store.cherry_pick(conv.id, "task/fix-oauth")
    store.add_facts("task/fix-oauth", [f"refresh needs backoff (the test key was {OPENAI_KEY})",
                                       "tokens last 1h"])
    store.verify("task/fix-oauth", lambda item: 0.9 if "backoff" in item["text"] else 0.1)


def test_a_bundle_leaves_one_store_and_enters_another_once(tmp_path: Path) -> None:
    with hc.Store.memory() as source, hc.open(tmp_path / "other.db") as other:
        curated(source)
        b = source.create_bundle("OAuth2 Token Refresh Fix Playbook", task_id="fix-oauth",
                                 visibility="team", tags=["oauth"])
        assert (b.fact_count, b.conversation_count, b.message_count) == (1, 1, 2)
        token = b.share_token
        assert token is not None and token.startswith("kb_") and len(token) >= 3 + 32
        assert b.visibility == "team" and b.verification_status == "verified"
        portable = b.to_json()
        assert OPENAI_KEY not in portable, "a bundle is redacted by default"
        assert json.loads(portable)["content_hash"] == b.content_hash
        assert source.bundle_by_token(token).id == b.id
        assert [x.id for x in source.list_bundles(visibility="team")] == [b.id]

        checked = other.import_bundle(portable, target_branch="main", dry_run=True)
        assert other.facts("main") == [], "a dry run writes nothing"
        first = other.import_bundle(portable, target_branch="main")
        assert checked.to_dict() == first.to_dict()
        assert (first.facts_added, first.conversations_added, first.messages_added) == (1, 1, 2)
        # bytes, a dict and the Bundle itself are the same bundle: nothing more is added.
        for same in (portable.encode(), json.loads(portable), b):
            again = other.import_bundle(same)
            assert (again.facts_added, again.facts_skipped, again.conversations_skipped) == (0, 1, 1)
        # Unsigned, the bundle's verdicts come in as its claim: kept, not this store's word.
        assert (first.signed_by, first.trusted) == (None, False)
        [fact] = other.facts("main")
        assert fact.status == "active" and fact.score == 0.9
        assert fact.verified_by == "bundle:" + b.content_hash[: len("sha256:") + 16]
        assert [c.verification_status for c in other.list_conversations(branch="main")] == ["unverified"]


def test_private_bundles_have_no_token_and_a_revoked_one_looks_wrong() -> None:
    with hc.Store.memory() as store:
        curated(store)
        b = store.create_bundle("Playbook", task_id="fix-oauth")
        assert b.share_token is None
        assert [x.share_token for x in store.list_bundles()] == [None]
        token = store.set_visibility(b.id, "public").share_token
        assert token is not None and token.startswith("kb_")
        assert store.bundle_by_token(token).id == b.id
        assert store.set_visibility(b.id, "private").share_token is None
        with pytest.raises(hc.NotFound) as revoked:
            store.bundle_by_token(token)
        with pytest.raises(hc.NotFound) as wrong:
            store.bundle_by_token("kb_" + "0" * 64)
        assert str(revoked.value) == str(wrong.value)
        again = store.set_visibility(b.id, "team").share_token
        assert again is not None and again != token
        assert store.bundle_by_token(again).id == b.id
        store.delete_bundle(b.id)
        with pytest.raises(hc.NotFound):
            store.get_bundle(b.id)


def test_hostile_bundles_are_refused_and_change_nothing() -> None:
    with hc.Store.memory() as source, hc.Store.memory() as other:
        curated(source)
        portable = source.create_bundle("Playbook", task_id="fix-oauth").to_json()
        data = json.loads(portable)
        tampered = json.dumps({**data, "facts": [{**data["facts"][0], "text": "tokens never expire"}]})
        cases: list[tuple[Any, str]] = [
            (portable[: len(portable) // 2], "bundle"),
            (tampered, "content_hash"),
            (json.dumps({**data, "schema_version": 2}), "schema_version"),
            ("[" * 10_000 + "]" * 10_000, "bundle"),
            (json.dumps({**data, "facts": data["facts"] * 2}), "facts[1].id"),
            ("x" * (65 << 20), "bundle"),
            (b"\xff\xfe", "bundle"),
            (3, "bundle"),
        ]
        for bad, field in cases:
            with pytest.raises(hc.ValidationError) as err:
                other.import_bundle(bad)
            if field:
                assert err.value.problems[0][0] == field, (field, err.value.problems)
        with pytest.raises(hc.ValidationError) as err:
            other.import_bundle(portable, target_branch="feature/x")
        assert err.value.problems[0][0] == "target_branch"
        assert other.facts("main") == [] and other.list_conversations() == []


def test_a_signed_bundle_is_verified_only_where_its_key_is_trusted() -> None:
    keys = hc.generate_bundle_key()
    assert keys.public_key.startswith("ed25519:") and keys.secret_key.startswith("ed25519-secret:")
    for shown in (repr(keys), str(keys)):
        assert keys.secret_key not in shown and keys.secret_key[len("ed25519-secret:"):] not in shown
        assert keys.public_key in shown and "hidden" in shown
    with hc.Store.memory() as source, hc.Store.memory() as other:
        curated(source)
        made = source.create_bundle("Playbook", task_id="fix-oauth")
        assert "signature" not in made.to_dict()["data"]
        signed = source.sign_bundle(made.id, secret_key=keys.secret_key)
        assert signed.content_hash == made.content_hash
        assert signed.to_dict()["data"]["signature"]["public_key"] == keys.public_key
        portable = signed.to_json()
        assert json.loads(portable)["signature"]["public_key"] == keys.public_key
        assert keys.secret_key not in portable and keys.secret_key not in repr(signed)

        # Signed by a key the other store does not trust: its verdicts stay its claim.
        untrusted = other.import_bundle(portable)
        assert (untrusted.signed_by, untrusted.trusted) == (keys.public_key, False)
        assert untrusted.to_dict()["signed_by"] == keys.public_key and not untrusted.to_dict()["trusted"]
        assert f"signed_by={keys.public_key!r}, trusted=False" in repr(untrusted)
        [fact] = other.facts("main")
        assert fact.status == "active" and fact.verified_by == "bundle:" + made.content_hash[:23]

        # Trusted: the same bundle comes into another branch verified, and says by whose word.
        [trusted_key] = other.trust_bundle_keys(trust=[keys.public_key])
        assert trusted_key.public_key == keys.public_key
        assert isinstance(trusted_key.trusted_at, datetime) and trusted_key.trusted_at.tzinfo is not None
        assert trusted_key.to_dict()["public_key"] == keys.public_key
        assert repr(trusted_key).startswith(f"TrustedKey(public_key={keys.public_key!r}, trusted_at=")
        assert [k.public_key for k in other.trust_bundle_keys()] == [keys.public_key]
        report = other.import_bundle(portable, target_branch="task/rerun")
        assert (report.signed_by, report.trusted, report.facts_added) == (keys.public_key, True, 1)
        [fact] = other.facts("task/rerun")
        assert fact.status == "verified"
        assert fact.verified_by is not None and fact.verified_by.endswith(f"signed by {keys.public_key}")
        [conversation] = other.list_conversations(branch="task/rerun")
        assert conversation.verification_status == "verified"
        assert other.trust_bundle_keys(distrust=[keys.public_key]) == []

        # Another key claimed for the signature does not hold: refused by name, nothing written.
        data = json.loads(portable)
        data["signature"]["public_key"] = hc.generate_bundle_key().public_key
        with pytest.raises(hc.ValidationError) as err:
            other.import_bundle(json.dumps(data), target_branch="task/claimed")
        assert [field for field, _ in err.value.problems] == ["signature"]
        assert other.facts("task/claimed") == []

        # Keys are read by their form, every bad one named and nothing changed.
        with pytest.raises(hc.ValidationError) as err:
            other.trust_bundle_keys(trust=[keys.secret_key, keys.public_key], distrust=["ssh-ed25519 AAAA"])
        assert [field for field, _ in err.value.problems] == ["trust[0]", "distrust[0]"]
        assert other.trust_bundle_keys() == []
        with pytest.raises(hc.ValidationError) as err:
            source.sign_bundle(made.id, secret_key=keys.public_key)
        assert [field for field, _ in err.value.problems] == ["secret_key"]
        assert keys.public_key not in str(err.value)
        with pytest.raises(hc.NotFound):
            source.sign_bundle("no-such-bundle", secret_key=keys.secret_key)


def test_a_task_replays_as_one_timeline_and_runs_compare() -> None:
    with hc.Store.memory() as store:
        curated(store)
        h = store.list(task_id="fix-oauth")[0]
        store.complete(store.claim(h.id, "gemini"), outcome="refresh retried")
        r = store.replay("fix-oauth")
        types = [e["type"] for e in r.timeline]
        assert types[:3] == ["handoff.created", "curation.conversation_added", "curation.cherry_picked"]
        assert "handoff.completed" in types
        times = [datetime.fromisoformat(e["at"]) for e in r.timeline]
        assert times == sorted(times)
        # And as text: times are written in a fixed width (once "…20.294Z" for a time on a
        # whole millisecond, which sorted after "…20.294146Z" and failed this test in CI).
        assert [e["at"] for e in r.timeline] == sorted(e["at"] for e in r.timeline)
        assert {len(e["at"]) for e in r.timeline} == {len("2026-01-01T00:00:00.000000Z")}
        gemini = next(a for a in r.agents if a["agent"] == "gemini")
        assert (gemini["claimed"], gemini["completed"], gemini["curated"]) == (1, 1, 1)
        assert r.outcome["status"] == "completed" and r.outcome["result"] == "refresh retried"
        assert [f.text for f in r.key_facts][0].startswith("refresh needs backoff")
        assert len(r.key_conversations) == 2
        verified = store.replay("fix-oauth", verified_only=True)
        assert (len(verified.key_facts), len(verified.key_conversations)) == (1, 1)

        store.create("fix-oauth-rerun", "Fix the token refresh again", from_agent="codex")
        c = store.compare("fix-oauth", "fix-oauth-rerun")
        assert c.agents == {"only_a": ["claude", "gemini"], "only_b": ["codex"], "both": []}
        assert c.decision_points["only_a"] == ["retry with backoff"]
        assert c.outcome_b["status"] == "in_progress"
        with pytest.raises(hc.NotFound):
            store.replay("no-such-task")


def test_aio_shares_and_replays() -> None:
    async def main() -> None:
        async with hc.aio.Store.memory() as store:
            await store.add_facts("task/t1", ["refresh needs backoff"])
            b = await store.create_bundle("Playbook", task_id="t1", verified_only=False)
            report = await store.import_bundle(b, target_branch="task/t2")
            assert report.facts_added == 1
            keys = hc.generate_bundle_key()
            signed = await store.sign_bundle(b.id, secret_key=keys.secret_key)
            [trusted] = await store.trust_bundle_keys(trust=[keys.public_key])
            assert trusted.public_key == keys.public_key
            again = await store.import_bundle(signed, target_branch="task/t3")
            assert (again.signed_by, again.trusted) == (keys.public_key, True)
            r = await store.replay("t1")
            assert r.timeline[0]["type"] == "curation.facts_added"
            assert (await store.compare("t1", "t2")).facts["both"] == ["refresh needs backoff"]

    asyncio.run(main())
