"""Leases (issue 19 item 3): `Store.lease(claim)` renews the claim from a thread of the
library's own until `complete` or `fail` settles it, once; a lease released unsettled fails its
claim; `is_lost()` says when a heartbeat found the claim gone.

The stores stand on a manual clock, so no lease can lapse whatever the heartbeats' pace: the
heartbeats are counted in the event log, polled with a generous deadline (a liveness bound, not
a timing claim)."""

from __future__ import annotations

import datetime as dt
import gc
import time
from collections.abc import Callable

import pytest

from conftest import hf, new

LEASE = dt.timedelta(milliseconds=30)
# The core's `handoff_core::store::DROPPED`: the error a lease released unsettled fails with.
DROPPED = "the holder stopped without completing or failing its claim"


def until(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.005)


def beats(store: hf.Store, handoff_id: str) -> int:
    return sum(isinstance(e.change, hf.Change.HEARTBEAT) for e in store.events(handoff_id))


def held(store: hf.Store, **fields) -> tuple[hf.Handoff, hf.Lease]:
    h = store.create(new(**fields))
    return h, store.lease(store.claim(h.id, "coder", lease=LEASE).reference())


def assert_settled(call: Callable[[], object]) -> None:
    with pytest.raises(hf.HandoffError.Validation) as err:
        call()
    assert [p.field for p in err.value.problems] == ["lease"]


def test_a_lease_heartbeats_while_held_and_completes(store: hf.Store) -> None:
    h, lease = held(store)
    assert lease.claim().handoff_id == h.id
    until(lambda: beats(store, h.id) >= 2, "two heartbeats")
    assert not lease.is_lost()
    done = lease.complete("ported")
    assert (done.status, done.outcome) == (hf.HandoffStatus.COMPLETED, "ported")
    assert store.events(h.id)[-1].change == hf.Change.COMPLETED("ported", None)
    # Settled: no heartbeat follows, and releasing it changes nothing.
    after = store.events(h.id)
    del lease
    gc.collect()
    assert store.events(h.id) == after


def test_fail_settles_the_claim_with_its_error(store: hf.Store) -> None:
    h, lease = held(store)
    back = lease.fail("the API timed out")
    assert (back.status, back.attempts) == (hf.HandoffStatus.PENDING, 1)
    assert store.events(h.id)[-1].change.error == "the API timed out"


def test_a_lease_released_unsettled_fails_its_claim(store: hf.Store) -> None:
    h, lease = held(store)
    del lease
    gc.collect()
    back = store.get(h.id)
    assert (back.status, back.attempts) == (hf.HandoffStatus.PENDING, 1)
    last = store.events(h.id)[-1].change
    assert isinstance(last, hf.Change.ATTEMPT_FAILED) and last.error == DROPPED
    # The work went back at once: another agent takes it without waiting for a lapse.
    assert store.claim_next("reviewer").handoff.id == h.id


def test_a_cancelled_handoff_makes_the_lease_lost(store: hf.Store) -> None:
    h, lease = held(store, from_agent="planner")
    store.cancel(h.id, "planner")
    until(lease.is_lost, "a heartbeat to find the claim gone")
    with pytest.raises(hf.HandoffError.LeaseLost) as err:
        lease.complete("done")
    assert err.value.id == h.id
    assert lease.is_lost()
    assert store.get(h.id).status == hf.HandoffStatus.CANCELLED


def test_settling_twice_or_after_an_error_is_a_validation_error(store: hf.Store) -> None:
    h, lease = held(store)
    lease.complete("done")
    for again in (lambda: lease.complete("again"), lambda: lease.fail("late")):
        assert_settled(again)
    assert store.get(h.id).outcome == "done"

    # A settle that threw settled the lease too: the claim is the store's to settle.
    h, lease = held(store, from_agent="planner")
    store.cancel(h.id, "planner")
    with pytest.raises(hf.HandoffError.LeaseLost):
        lease.complete("done")
    assert_settled(lambda: lease.fail("late"))
    assert lease.claim().handoff_id == h.id


def test_a_malformed_claim_is_refused_before_anything_starts(store: hf.Store) -> None:
    h = store.create(new())
    ref = store.claim(h.id, "coder").reference()
    ref.secret = "hcs_"
    ref.lease = dt.timedelta(0)
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.lease(ref)
    assert [p.field for p in err.value.problems] == ["secret", "lease"]
    assert [type(e.change) for e in store.events(h.id)] == [hf.Change.CREATED, hf.Change.CLAIMED]
