"""Records cross the boundary unchanged: Python ↔ JSON ↔ Rust, and through both stores."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

import handoff_core as hc

NESTED: dict[str, Any] = {
    "z-first": "keys keep their order",
    "unicode": "héllo → 世界 🚀 \u0000 \n\t\"quoted\"",
    "ints": [0, -1, 2**53 + 1, -(2**63), 2**64 - 1],
    "floats": [0.1, -2.5, 1e300, 5e-324, 1.0],
    "bools": [True, False],
    "none": None,
    "empty": {"list": [], "dict": {}, "str": ""},
    "deep": {"a": {"b": {"c": [{"d": [1, [2, [3, {"e": "f"}]]]}]}}},
    "a-last": 1,
}


def test_metadata_round_trips_nested_json_unchanged(store: hc.Store) -> None:
    h = store.create("t", "g", metadata=NESTED)
    for got in (h, store.get(h.id), hc.Handoff.from_json(h.to_json())):
        meta = got.metadata
        assert meta == NESTED
        assert list(meta) == list(NESTED)
        assert [type(x) for x in meta["ints"]] == [int] * 5
        assert [type(x) for x in meta["floats"]] == [float] * 5
        assert [type(x) for x in meta["bools"]] == [bool, bool]
    assert json.loads(h.to_json())["metadata"] == NESTED


def test_metadata_accepts_tuples_as_lists(store: hc.Store) -> None:
    assert store.create("t", "g", metadata={"t": (1, "a")}).metadata == {"t": [1, "a"]}


def test_metadata_dict_is_a_copy(store: hc.Store) -> None:
    h = store.create("t", "g", metadata={"a": 1})
    h.metadata["a"] = 2
    assert h.metadata == {"a": 1}


def full_record(store: hc.Store, clock: hc.ManualClock) -> hc.Handoff:
    parent = store.create("t", "parent", from_agent="a", to_agent="b")
    h = store.create(
        "t", "everything", from_agent="b", to_agent="c", kind="escalation",
        reason="error: it broke", context_pct=99, progress="p", completed=["1"], pending=["2"],
        decisions=["3"], assumptions=["4"], warnings=["5"], errors=["6"], files=["7"],
        instructions="8", metadata=NESTED, id="rt-1", parent_id=parent.id, session_id="s",
        blockers=["9"], locked_files=["10"], priority_items=["11"], success_criteria=["12"],
        expires_at=clock.now() + timedelta(days=1, microseconds=7), max_attempts=4,
    )
    claim = store.claim(h.id, "c", lease_seconds=90.5)
    store.heartbeat(claim)
    return store.complete(claim, "finished")


def test_record_round_trips_through_json(store: hc.Store, clock: hc.ManualClock) -> None:
    h = full_record(store, clock)
    text = h.to_json()
    again = hc.Handoff.from_json(text)
    assert again == h
    assert again.to_json() == text
    assert hc.Handoff.from_json(text.encode()) == h


def test_python_dict_to_rust_and_back(store: hc.Store, clock: hc.ManualClock) -> None:
    """A record written by Python code as plain JSON is read by Rust and written back equal."""
    data = json.loads(full_record(store, clock).to_json())
    data["goal"] = "edited in Python ✓"
    data["metadata"] = {"from": "python", "n": [1, 2.5, None]}
    data["completed_steps"].append("one more")
    back = json.loads(hc.Handoff.from_json(json.dumps(data)).to_json())
    assert back == data


def test_to_dict_matches_json_with_datetimes(store: hc.Store, clock: hc.ManualClock) -> None:
    h = full_record(store, clock)
    d = h.to_dict()
    j = json.loads(h.to_json())
    assert list(d) == list(j)
    for key, value in d.items():
        if isinstance(value, datetime):
            assert value.tzinfo is not None and value.utcoffset() == timedelta(0)
            assert value == datetime.fromisoformat(j[key].replace("Z", "+00:00")), key
        else:
            assert value == j[key], key
    assert d["lease_until"] is None and d["completed_at"] == clock.now()
    for key in d:
        assert getattr(h, key) == d[key], key


def test_times_are_aware_utc_with_microseconds(store: hc.Store) -> None:
    local = timezone(timedelta(hours=5, minutes=30))
    expires = datetime(2040, 2, 29, 23, 59, 59, 999999, tzinfo=local)
    h = store.create("t", "g", expires_at=expires)
    assert h.expires_at == expires
    assert h.expires_at is not None and h.expires_at.tzinfo == timezone.utc
    assert h.expires_at.microsecond == 999999


def test_the_created_event_names_the_task_and_the_addressee(store: hc.Store, clock: hc.ManualClock) -> None:
    # The record itself is read with `get`: the event carries only where the work goes.
    h = full_record(store, clock)
    created = store.events(h.id)[0]
    assert created.kind == "created" and created.handoff_id == h.id
    assert created.detail == {"task_id": h.task_id, "to_agent": h.to_agent}
    assert json.loads(created.to_json())["detail"] == {"task_id": h.task_id, "to_agent": h.to_agent}
    assert created.to_dict()["detail"] == created.detail
    anyone = store.create("t", "for whoever comes")
    assert store.events(anyone.id)[0].detail == {"task_id": "t", "to_agent": None}


def test_chain_json(store: hc.Store) -> None:
    store.create("t", "1", from_agent="a", to_agent="b")
    data = json.loads(store.chain("t").to_json())
    assert data["task_id"] == "t" and [hop["to_agent"] for hop in data["hops"]] == ["b"]


@pytest.mark.parametrize("protocol", [2, 5])
def test_pickle_round_trip(store: hc.Store, clock: hc.ManualClock, protocol: int) -> None:
    import pickle

    h = full_record(store, clock)
    assert pickle.loads(pickle.dumps(h, protocol)) == h
    claim = store.claim(store.create("t2", "g").id, "w", lease_seconds=12)
    copy = pickle.loads(pickle.dumps(claim, protocol))
    assert copy == claim and copy.lease_seconds == 12
    assert store.complete(copy, "via a copy").status == "completed"
