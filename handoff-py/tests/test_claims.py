"""Claim secrets and cancel rights (docs/design.md §3): nobody settles a claim from what they can read."""

from __future__ import annotations

import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import handoff_core as hc

FORGED = "hcs_" + "0" * 64


def test_a_claim_carries_a_secret_its_repr_hides(store: hc.Store) -> None:
    h = store.create("t", "g", from_agent="a", to_agent="b")
    claim = store.claim(h.id, "b", lease_seconds=60)
    assert claim.secret.startswith("hcs_") and len(claim.secret) == 4 + 64
    assert claim.secret[4:] not in repr(claim)
    assert claim.secret[4:] not in repr(claim.reference())
    assert "secret=<hidden>" in repr(claim)
    # A second claim (after a release) gets a new secret.
    store.release(claim, "later")
    again = store.claim(h.id, "b")
    assert again.secret != claim.secret and again.token > claim.token


def test_the_secret_is_shown_nowhere_else(store: hc.Store) -> None:
    h = store.create("t", "g", to_agent="b")
    claim = store.claim(h.id, "b")
    store.heartbeat(claim)
    hexpart = claim.secret[4:]
    seen = [store.get(h.id).to_json(), str(store.get(h.id).to_dict()), str(store.chain("t").to_dict())]
    seen += [r.to_json() for r in store.list()]
    seen += [e.to_json() for e in store.events()]
    seen.append(store.get(h.id).to_markdown(redact=False))
    assert not any(hexpart in text for text in seen)


def test_a_claim_cannot_be_built_from_what_anyone_reads(store: hc.Store) -> None:
    with pytest.raises(TypeError):
        hc.Claim(store.create("t", "x"), 1)  # type: ignore[call-arg]
    h = store.create("t", "g", to_agent="b")
    claim = store.claim(h.id, "b")
    before = store.get(h.id)
    events_before = store.events(h.id)
    token = before.claim_token
    assert token is not None
    forged = hc.ClaimRef(h.id, token, FORGED, lease_seconds=300)
    settle: list[Callable[[], object]] = [
        lambda: store.complete(forged, "stolen"),
        lambda: store.heartbeat(forged),
        lambda: store.release(forged, "mine now"),
        lambda: store.cancel_claim(forged, "gone"),
    ]
    for call in settle:
        with pytest.raises(hc.LeaseLost) as caught:
            call()
        assert "secret" in caught.value.reason and caught.value.token == token
    assert store.get(h.id) == before and store.events(h.id) == events_before
    assert store.complete(claim, "mine").status == "completed"


def test_a_claim_ref_settles_a_claim_without_its_record(store: hc.Store) -> None:
    h = store.create("t", "g", to_agent="b")
    claim = store.claim(h.id, "b", lease_seconds=30)
    ref = hc.ClaimRef(claim.handoff_id, claim.token, claim.secret, lease_seconds=30)
    assert ref == claim.reference()
    assert (ref.handoff_id, ref.token, ref.secret, ref.lease_seconds) == (
        h.id, claim.token, claim.secret, 30)
    assert ref.secret[4:] not in repr(ref)
    assert pickle.loads(pickle.dumps(ref)) == ref
    assert store.heartbeat(ref).status == "claimed"
    assert store.release(ref, "back").status == "pending"
    # A stale ref (the claim was released) is refused as a stale token, not for its secret.
    with pytest.raises(hc.LeaseLost):
        store.complete(ref)
    claim2 = store.claim(h.id, "b")
    assert store.complete(claim2.reference(), "done").outcome == "done"


def test_another_process_settles_a_claim_it_was_handed(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    with hc.open(path) as store:
        h = store.create("t", "g", to_agent="b")
        claim = store.claim(h.id, "b")
    child = (
        "import sys, handoff_core as hc\n"
        "path, id, token, secret = sys.argv[1:]\n"
        "with hc.open(path) as s:\n"
        "    print(s.complete(hc.ClaimRef(id, int(token), secret), 'from a child').status)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", child, str(path), claim.handoff_id, str(claim.token), claim.secret],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "completed"


@pytest.mark.parametrize("protocol", [2, 5])
def test_a_pickled_claim_keeps_its_secret_for_the_claimer(store: hc.Store, protocol: int) -> None:
    claim = store.claim(store.create("t", "g").id, "w")
    copy = pickle.loads(pickle.dumps(claim, protocol))
    assert copy == claim and copy.secret == claim.secret and copy.handoff == claim.handoff
    assert store.cancel_claim(copy, "via a copy").status == "cancelled"


def test_bad_claim_refs_are_refused_naming_the_field(store: hc.Store) -> None:
    with pytest.raises(hc.ValidationError) as caught:
        hc.ClaimRef("h", 1, "hcs_" + "G" * 64)
    assert caught.value.fields == ["secret"] and "hcs_" in caught.value.problems[0][1]
    with pytest.raises(hc.ValidationError) as caught:
        store.complete("not a claim")  # type: ignore[arg-type]
    assert caught.value.fields == ["claim"]
    with pytest.raises(hc.NotFound):
        store.complete(hc.ClaimRef("nope", 1, FORGED))


# Cancel rights: the creator by name, the holder with its claim, anyone when there is no
# creator; everyone else gets an InvalidTransition naming the rule.


def test_the_creator_cancels_by_name(store: hc.Store) -> None:
    h = store.create("t", "g", from_agent="boss", to_agent="b")
    store.claim(h.id, "b")
    done = store.cancel(h.id, "boss", "plans changed")
    assert done.status == "cancelled"
    assert store.events(h.id)[-1].actor == "boss"


@pytest.mark.parametrize("claimed", [False, True])
def test_others_cannot_cancel_by_name(store: hc.Store, claimed: bool) -> None:
    h = store.create("t", "g", from_agent="boss", to_agent="b")
    if claimed:
        store.claim(h.id, "b")
    before = store.get(h.id)
    for who in ("mallory", "b"):
        with pytest.raises(hc.InvalidTransition) as caught:
            store.cancel(h.id, who)
        err = caught.value
        assert err.event == "cancel" and err.id == h.id
        assert "creator" in err.reason and "boss" in err.reason, err.reason
    assert store.get(h.id) == before


def test_the_holder_cancels_with_its_claim(store: hc.Store) -> None:
    h = store.create("t", "g", from_agent="boss", to_agent="b")
    claim = store.claim(h.id, "b")
    done = store.cancel_claim(claim, "cannot do it")
    assert done.status == "cancelled"
    assert store.events(h.id)[-1].actor == "b"
    # Settled: the claim is no longer current.
    with pytest.raises((hc.LeaseLost, hc.InvalidTransition)):
        store.cancel_claim(claim)


def test_anyone_cancels_when_there_is_no_creator(store: hc.Store) -> None:
    h = store.create("t", "g", to_agent="b")
    assert store.cancel(h.id, "anyone").status == "cancelled"
    claimed = store.create("t", "g2")
    store.claim(claimed.id, "w")
    assert store.cancel(claimed.id, "someone else").status == "cancelled"
