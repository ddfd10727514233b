"""The plain records the operations return, generated from the catalog's result schemas
(``handoff_core._records``): read-only, equal by their fields, their times ``datetime``s,
``to_dict()`` their JSON, and they pickle."""

from __future__ import annotations

import pickle
from datetime import datetime, timezone

import pytest

import handoff_core as hc


def test_a_record_is_read_only_and_equal_by_its_fields() -> None:
    with hc.Store.memory() as store:
        store.create("t", "g", from_agent="a", to_agent="b")
        (count,) = store.queue_counts()
        assert count == store.queue_counts()[0] and hash(count) == hash(store.queue_counts()[0])
        assert (count.status, count.to_agent, count.count) == ("pending", "b", 1)
        assert repr(count) == "QueueCount(status='pending', to_agent='b', count=1)"
        with pytest.raises(AttributeError):
            count.count = 2
        assert pickle.loads(pickle.dumps(count)) == count


def test_times_are_datetimes_and_to_dict_is_the_json() -> None:
    with hc.Store.memory(clock=hc.ManualClock()) as store:
        memory = store.memory_put("shared", {"k": 1})
        assert isinstance(memory, hc.Memory)
        assert memory.updated_at == store.now() and memory.updated_at.tzinfo == timezone.utc
        assert isinstance(memory.to_dict()["updated_at"], str)
        assert datetime.fromisoformat(memory.to_dict()["updated_at"].replace("Z", "+00:00")) == memory.updated_at
        changed = store.memory_update("shared", lambda value: {**value, "k": 2})
        assert isinstance(changed, hc.Memory) and changed.value == {"k": 2} and changed.version == 2


def test_nested_records_are_records() -> None:
    with hc.Store.memory() as store:
        report = store.check()
        assert isinstance(report, hc.CheckReport) and report.is_clean() and report.damage == []
