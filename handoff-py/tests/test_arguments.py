"""Arguments as the core reads them: Python values become the JSON the core's argument types
read (one description per operation, docs/design.md §15), so names, defaults and problems are the
core's, and the stubs and ``aio`` come from the same catalog."""

from __future__ import annotations

import enum
import inspect
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import handoff_core as hc
from handoff_core import _native


def problems_of(call: Any) -> list[tuple[str, str]]:
    with pytest.raises(hc.ValidationError) as caught:
        call()
    return caught.value.problems


def test_events_takes_the_cores_name_too() -> None:
    with hc.Store.memory() as store:
        h = store.create("t", "g")
        store.create("t", "other")
        assert store.events(h.id) == store.events(id=h.id) == store.events(handoff_id=h.id)
        assert len(store.events(handoff_id=h.id)) == 1
        with pytest.raises(TypeError, match="multiple values"):
            store.events(h.id, handoff_id=h.id)
        # A problem is named as the caller spelled the argument.
        assert [f for f, _ in problems_of(lambda: store.events(id=3))] == ["id"]  # type: ignore[arg-type]
        assert [f for f, _ in problems_of(lambda: store.events(handoff_id=3))] == ["handoff_id"]  # type: ignore[arg-type]


def test_names_python_does_not_know_are_type_errors() -> None:
    with hc.Store.memory() as store:
        with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
            store.get("x", colour=1)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="'agent'"):
            store.checkpoint("t")  # type: ignore[call-arg]


class Urgency(enum.Enum):
    PARTIAL = "partial"


def test_python_values_become_what_the_schema_asks_for(tmp_path: Path) -> None:
    with hc.open(tmp_path / "h.db") as store:
        h = store.create("t", "g", kind=Urgency.PARTIAL,  # type: ignore[arg-type]
                         expires_at=datetime(2999, 1, 1, 1, tzinfo=timezone(timedelta(hours=1))))
        assert h.kind == "partial" and h.expires_at == datetime(2999, 1, 1, tzinfo=timezone.utc)
        claim = store.claim(h.id, "w", lease_seconds=timedelta(minutes=2))
        assert claim.lease_seconds == 120.0
        assert store.stalled(timedelta(hours=1)) == []
        timeout = store.create("t", "g", reason="timeout", timeout_seconds=timedelta(seconds=90))  # type: ignore[arg-type]
        assert timeout.reason == "timeout_90s"
        store.backup(tmp_path / "copy.db")  # any os.PathLike where a path goes
        assert (tmp_path / "copy.db").exists()
        # None in a create_many item is the default, as for create's own arguments.
        (made,) = store.create_many([{"task_id": "t", "goal": "g", "completed": None, "kind": None}])
        assert made.completed_steps == [] and made.kind == "full"


def test_what_json_cannot_hold_is_named_with_the_cores_problems() -> None:
    with hc.Store.memory() as store:
        got = problems_of(lambda: store.create(
            "t", "", completed=[b"x", "ok", 3], metadata={"s": {1}}))  # type: ignore[list-item]
        assert [f for f, _ in got] == ["completed[0]", "metadata.s", "completed[2]", "goal"], got
        assert dict(got)["completed[0]"] == "must be a str, not bytes"
        assert dict(got)["completed[2]"] == "must be a string"  # the core's words
        assert store.list() == []


def test_list_pages_with_the_cores_after() -> None:
    with hc.Store.memory() as store:
        ids = [store.create("t", f"g{i}").id for i in range(3)]
        first = store.list(limit=2)
        assert [h.id for h in first] == ids[:2]
        assert [h.id for h in store.list(after=first[-1].id)] == ids[2:]


#: What a method takes beyond the catalog's arguments: code, which JSON cannot carry.
CALLABLES = {
    "verify": ["verifier"],
    "cherry_pick": ["verifier"],
    "cherry_pick_to_facts": ["extractor"],
    "verify_bundle": ["verifier"],
    "cherry_pick_decisions": ["judge"],
    "context_for": ["summarize"],
}
#: And options of Python's own (scripts/gen_stubs.py's OPTIONS).
OPTIONS = {"events": ["redact"]}


def test_every_catalog_operation_is_in_python_and_aio() -> None:
    for op in json.loads(_native._catalog_json()):
        for store in (hc.Store, hc.aio.Store):
            method = getattr(store, op["name"])
            assert method.__doc__, (store, op["name"])
        params = list(inspect.signature(getattr(hc.aio.Store, op["name"])).parameters)[1:]
        expected = list(op["arguments"].get("properties", {})) + list(op["aliases"])
        expected += CALLABLES.get(op["name"], []) + OPTIONS.get(op["name"], [])
        assert sorted(params) == sorted(expected), op["name"]
        assert params[: len(op["positional"])] == op["positional"], op["name"]
