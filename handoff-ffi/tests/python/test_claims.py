"""Claim secrets and cancel rights (docs/design.md §3, issue 12 item 2): only the claimer settles a
claim, whatever anyone can read; cancel by the creator, the holder with its claim, or anyone
when there is no creator."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from conftest import hf, new

SECRET = re.compile(r"hcs_[0-9a-f]{64}")
OTHER = "hcs_" + "0" * 64


def forged(store: hf.Store, handoff_id: str, secret: str = OTHER) -> hf.ClaimRef:
    """What anyone can build from what `get` shows: the id, the current token, a guess."""
    h = store.get(handoff_id)
    return hf.ClaimRef(handoff_id=h.id, token=h.claim_token, secret=secret, lease=dt.timedelta(minutes=5))


def snapshot(store: hf.Store, handoff_id: str) -> tuple:
    return store.get(handoff_id), store.events(handoff_id)


def test_a_claim_carries_a_secret_that_nothing_else_shows(store: hf.Store) -> None:
    h = store.create(new(from_agent="planner"))
    claim = store.claim(h.id, "coder")
    assert SECRET.fullmatch(claim.secret)
    assert store.claim(store.create(new()).id, "coder").secret != claim.secret
    ref = claim.reference()
    assert ref == hf.ClaimRef(handoff_id=h.id, token=claim.token, secret=claim.secret, lease=claim.lease)
    # Not in the record, its JSON, the list or the event log.
    record = store.get(h.id)
    assert record.claim_token == claim.token
    for shown in (hf.handoff_to_json(record), hf.handoff_to_markdown(record, redact=False), repr(store.list()),
                  repr([str(e.change) for e in store.events()]), repr(store.events())):
        assert claim.secret not in shown
    # Printing a claim or a reference hides it too.
    for printed in (str(claim), str(ref), repr(claim), repr(ref)):
        assert claim.secret not in printed and claim.secret[4:] not in printed
    assert h.id in str(claim) and h.id in str(ref)


def test_a_forged_reference_is_lease_lost_and_changes_nothing(store: hf.Store) -> None:
    h = store.create(new(from_agent="planner"))
    claim = store.claim(h.id, "coder", lease=dt.timedelta(seconds=60))
    fake = forged(store, h.id)
    assert fake.token == claim.token
    before = snapshot(store, h.id)
    for call in (
        lambda: store.heartbeat(fake),
        lambda: store.release(fake, "mine now"),
        lambda: store.complete(fake, "forged"),
        lambda: store.cancel_claim(fake, "forged"),
    ):
        with pytest.raises(hf.HandoffError.LeaseLost) as err:
            call()
        assert (err.value.id, err.value.token) == (h.id, claim.token)
        assert "secret" in err.value.reason
    assert snapshot(store, h.id) == before
    # The real reference works, built from the claim or from its four values by another
    # process that was handed them.
    assert store.heartbeat(claim.reference()).status == hf.HandoffStatus.CLAIMED
    handed_on = hf.ClaimRef(handoff_id=h.id, token=claim.token, secret=claim.secret, lease=claim.lease)
    done = store.complete(handed_on, "done")
    assert (done.status, done.outcome) == (hf.HandoffStatus.COMPLETED, "done")
    assert store.events(h.id)[-1].actor == "coder"


def test_a_malformed_secret_is_a_validation_error(store: hf.Store) -> None:
    h = store.create(new())
    claim = store.claim(h.id, "coder")
    before = snapshot(store, h.id)
    for bad in ("", "hcs_", "hcs_xyz", claim.secret.upper(), claim.secret[:-1], claim.secret + "0"):
        ref = claim.reference()
        ref.secret = bad
        with pytest.raises(hf.HandoffError.Validation) as err:
            store.complete(ref, "x")
        assert [p.field for p in err.value.problems] == ["secret"]
    assert snapshot(store, h.id) == before


def test_the_secret_of_an_earlier_claim_does_not_settle_a_later_one(store: hf.Store) -> None:
    h = store.create(new())
    first = store.claim(h.id, "a")
    store.release(first.reference(), "back")
    second = store.claim(h.id, "a")
    assert second.secret != first.secret
    stolen = hf.ClaimRef(handoff_id=h.id, token=second.token, secret=first.secret, lease=second.lease)
    with pytest.raises(hf.HandoffError.LeaseLost):
        store.complete(stolen, "late")
    assert store.complete(second.reference()).status == hf.HandoffStatus.COMPLETED


def test_cancel_by_the_creator_only(store: hf.Store) -> None:
    h = store.create(new(from_agent="planner"))
    before = snapshot(store, h.id)
    with pytest.raises(hf.HandoffError.InvalidTransition) as err:
        store.cancel(h.id, "intruder", reason="mine")
    assert (err.value.event, err.value.status) == ("cancel", hf.HandoffStatus.PENDING)
    assert "planner" in err.value.reason
    assert snapshot(store, h.id) == before
    cancelled = store.cancel(h.id, "planner", reason="plan changed")
    assert cancelled.status == hf.HandoffStatus.CANCELLED
    last = store.events(h.id)[-1]
    assert (last.actor, last.change) == ("planner", hf.Change.CANCELLED(reason="plan changed"))


def test_cancel_by_anyone_without_a_creator(store: hf.Store) -> None:
    h = store.create(new())
    assert store.cancel(h.id, "ops").status == hf.HandoffStatus.CANCELLED
    assert store.events(h.id)[-1].actor == "ops"


def test_the_holder_cancels_with_its_claim(store: hf.Store) -> None:
    h = store.create(new(from_agent="planner"))
    claim = store.claim(h.id, "coder")
    # By name, the holder is not the creator.
    with pytest.raises(hf.HandoffError.InvalidTransition):
        store.cancel(h.id, "coder")
    with pytest.raises(hf.HandoffError.LeaseLost):
        store.cancel_claim(forged(store, h.id))
    cancelled = store.cancel_claim(claim.reference(), "cannot be done")
    assert cancelled.status == hf.HandoffStatus.CANCELLED
    last = store.events(h.id)[-1]
    assert (last.actor, last.change) == ("coder", hf.Change.CANCELLED(reason="cannot be done"))
    # The reason is optional; a finished handoff cannot be cancelled again.
    other = store.claim(store.create(new(task_id="t2")).id, "coder")
    assert store.cancel_claim(other.reference()).status == hf.HandoffStatus.CANCELLED
    with pytest.raises(hf.HandoffError.InvalidTransition):
        store.cancel_claim(other.reference())


def test_the_creator_may_cancel_a_claimed_handoff(store: hf.Store) -> None:
    h = store.create(new(from_agent="planner"))
    claim = store.claim(h.id, "coder")
    assert store.cancel(h.id, "planner").status == hf.HandoffStatus.CANCELLED
    # The holder's claim is no longer current.
    with pytest.raises(hf.HandoffError.LeaseLost) as err:
        store.complete(claim.reference(), "too late")
    assert "cancelled" in err.value.reason


def test_a_stale_claim_cannot_cancel(store: hf.Store, clock: hf.ManualClock) -> None:
    h = store.create(new())
    stale = store.claim(h.id, "a", lease=dt.timedelta(seconds=10))
    clock.advance(dt.timedelta(seconds=11))
    store.claim(h.id, "b")
    before = snapshot(store, h.id)
    with pytest.raises(hf.HandoffError.LeaseLost):
        store.cancel_claim(stale.reference())
    assert snapshot(store, h.id) == before
