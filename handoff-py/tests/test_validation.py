"""Bad argument types and values: always a typed exception naming the field, never a crash."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

import pytest

import handoff_core as hc


@pytest.fixture
def mem() -> hc.Store:
    return hc.Store.memory()


def fields_of(call: Any) -> list[str]:
    with pytest.raises(hc.ValidationError) as caught:
        call()
    assert caught.value.problems, "a ValidationError lists its problems"
    return caught.value.fields


BAD_CREATE_TYPES: list[tuple[str, Any]] = [
    ("task_id", 1), ("goal", None), ("goal", b"bytes"), ("from_agent", 3.5), ("to_agent", ["x"]),
    ("kind", 1), ("reason", 85), ("context_pct", "85"), ("context_pct", 85.0),
    ("context_pct", True), ("progress", 0), ("completed", "not a list"), ("completed", [1]),
    ("pending", {"a": 1}), ("decisions", [None]), ("assumptions", 5), ("warnings", [b"x"]),
    ("errors", "e"), ("files", ("a", 2)), ("instructions", []), ("metadata", []),
    ("metadata", "{}"), ("metadata", {1: "int key"}), ("metadata", {"x": object()}),
    ("metadata", {"x": {1, 2}}), ("metadata", {"x": b"bytes"}), ("id", 7), ("parent_id", 7),
    ("session_id", 7), ("blockers", 7), ("locked_files", 7), ("priority_items", 7),
    ("success_criteria", 7), ("expires_at", "2030-01-01"), ("expires_at", 0),
    ("max_attempts", "3"), ("max_attempts", 1.5),
]


@pytest.mark.parametrize(("field", "value"), BAD_CREATE_TYPES)
def test_create_bad_types(mem: hc.Store, field: str, value: Any) -> None:
    args: dict[str, Any] = {"task_id": "t", "goal": "g", field: value}
    fields = fields_of(lambda: mem.create(**args))
    assert any(f == field or f.startswith((field + "[", field + ".")) for f in fields), fields


BAD_CREATE_VALUES: list[tuple[str, Any, str]] = [
    ("task_id", "", "task_id"), ("task_id", "a/b", "task_id"), ("task_id", "x" * 129, "task_id"),
    ("task_id", "..", "task_id"), ("goal", "", "goal"), ("goal", "   ", "goal"),
    ("from_agent", "has\nnewline", "from_agent"), ("to_agent", " padded", "to_agent"),
    ("to_agent", "x" * 129, "to_agent"),
    ("kind", "sideways", "kind"), ("reason", "because", "reason"),
    ("reason", "context_limit_101", "reason"), ("reason", "timeout_-1s", "reason"),
    ("context_pct", 101, "context_pct"), ("context_pct", -1, "context_pct"),
    ("context_pct", 10**30, "context_pct"), ("id", "../../etc/passwd", "id"),
    ("parent_id", "no-such-parent", "parent_id"), ("goal", "x" * (64 * 1024 + 1), "goal"),
    ("completed", ["x"] * 1025, "completed"),
    ("metadata", {"n": math.nan}, "metadata.n"), ("metadata", {"n": math.inf}, "metadata.n"),
    ("metadata", {"n": 2**64}, "metadata.n"),
    ("expires_at", datetime(2000, 1, 1, tzinfo=timezone.utc), "expires_at"),
    ("expires_at", datetime(2030, 1, 1), "expires_at"),  # naive: no timezone
    ("max_attempts", 0, "max_attempts"), ("max_attempts", -1, "max_attempts"),
    ("goal", "\ud800", "goal"),  # a lone surrogate cannot be UTF-8
]


@pytest.mark.parametrize(("field", "value", "reported"), BAD_CREATE_VALUES)
def test_create_bad_values(mem: hc.Store, field: str, value: Any, reported: str) -> None:
    args: dict[str, Any] = {"task_id": "t", "goal": "g", field: value}
    assert reported in fields_of(lambda: mem.create(**args))
    assert mem.list() == []  # nothing was written


def test_deep_and_self_referencing_metadata(mem: hc.Store) -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(200):
        node["d"] = {}
        node = node["d"]
    assert fields_of(lambda: mem.create("t", "g", metadata=deep))[0].startswith("metadata")
    loop: dict[str, Any] = {}
    loop["self"] = loop
    assert fields_of(lambda: mem.create("t", "g", metadata=loop))[0].startswith("metadata")
    items: list[Any] = []
    items.append(items)
    assert fields_of(lambda: mem.create("t", "g", metadata={"l": items}))[0].startswith("metadata")


def test_missing_required_arguments_are_type_errors(mem: hc.Store) -> None:
    with pytest.raises(TypeError):
        mem.create(goal="g")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        mem.create("t", "g", no_such_field=1)  # type: ignore[call-arg]


BAD_CALLS: list[tuple[str, Any, str]] = [
    ("get", lambda s: s.get(1), "id"),
    ("get", lambda s: s.get("a b"), "id"),
    ("list", lambda s: s.list(status="done"), "status"),
    ("list", lambda s: s.list(status=1), "status"),
    ("list", lambda s: s.list(task_id=1), "task_id"),
    ("list", lambda s: s.list(to_agent="a\0b"), "to_agent"),
    ("list", lambda s: s.list(limit=-1), "limit"),
    ("list", lambda s: s.list(limit="10"), "limit"),
    ("list", lambda s: s.list(kind="odd"), "kind"),
    ("claim", lambda s: s.claim(None, "a"), "id"),
    ("claim", lambda s: s.claim("x", 5), "agent"),
    ("claim", lambda s: s.claim("x", "a", lease_seconds=0), "lease_seconds"),
    ("claim", lambda s: s.claim("x", "a", lease_seconds=-5), "lease_seconds"),
    ("claim", lambda s: s.claim("x", "a", lease_seconds=math.nan), "lease_seconds"),
    ("claim", lambda s: s.claim("x", "a", lease_seconds=math.inf), "lease_seconds"),
    ("claim", lambda s: s.claim("x", "a", lease_seconds=10**12), "lease_seconds"),
    ("claim", lambda s: s.claim("x", "a", lease_seconds="60"), "lease_seconds"),
    ("claim", lambda s: s.claim("x", "a", lease_seconds=True), "lease_seconds"),
    ("claim_next", lambda s: s.claim_next(["a"]), "agent"),
    ("claim_next", lambda s: s.claim_next("a", task_id=3), "task_id"),
    ("claim_next", lambda s: s.claim_next("a", lease_seconds=-1), "lease_seconds"),
    ("heartbeat", lambda s: s.heartbeat("claim"), "claim"),
    ("heartbeat", lambda s: s.heartbeat(None), "claim"),
    ("release", lambda s: s.release(object(), "r"), "claim"),
    ("release", lambda s: s.release(s.claim(s.create("t", "g").id, "a"), 5), "reason"),
    ("complete", lambda s: s.complete({"token": 1}), "claim"),
    ("complete", lambda s: s.complete(s.claim(s.create("t", "g").id, "a"), outcome=1), "outcome"),
    ("complete", lambda s: s.complete(s.claim(s.create("t", "g").id, "a"), "x" * 70000), "outcome"),
    ("reject", lambda s: s.reject(1, "a", "r"), "id"),
    ("reject", lambda s: s.reject("x", None, "r"), "agent"),
    ("reject", lambda s: s.reject("x", "a", None), "reason"),
    ("cancel", lambda s: s.cancel("x", 1), "by"),
    ("cancel", lambda s: s.cancel("x", "", None), "by"),
    ("cancel", lambda s: s.cancel("x", "b", reason=[]), "reason"),
    ("events", lambda s: s.events(1), "id"),
    ("events", lambda s: s.events("a/b"), "id"),
    ("chain", lambda s: s.chain(None), "task_id"),
    ("chain", lambda s: s.chain(""), "task_id"),
    ("checkpoint", lambda s: s.checkpoint(1, "a", goal="g"), "task_id"),
    ("checkpoint", lambda s: s.checkpoint("t", 2, goal="g"), "agent"),
    ("checkpoint", lambda s: s.checkpoint("t", "a", goal=""), "goal"),
    ("checkpoint", lambda s: s.checkpoint("t", "a", goal="g", completed="x"), "completed"),
    ("stalled", lambda s: s.stalled("60"), "older_than_seconds"),
    ("stalled", lambda s: s.stalled(-1), "older_than_seconds"),
    ("stalled", lambda s: s.stalled(None), "older_than_seconds"),
    ("create_many", lambda s: s.create_many("nope"), "records"),
    ("create_many", lambda s: s.create_many([1]), "records[0]"),
    ("create_many", lambda s: s.create_many([{"goal": "g", "task_id": "t", "colour": 1}]), "records[0].colour"),
    ("create_many", lambda s: s.create_many([{"task_id": "t"}]), "records[0].goal"),
]


@pytest.mark.parametrize(("name", "call", "field"), BAD_CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD_CALLS)])
def test_bad_call_arguments(mem: hc.Store, name: str, call: Any, field: str) -> None:
    assert field in fields_of(lambda: call(mem))


def test_bad_open_arguments(tmp_path: Any) -> None:
    assert fields_of(lambda: hc.open(5)) == ["path"]  # type: ignore[arg-type]
    assert fields_of(lambda: hc.open(tmp_path / "x.db", synchronous="off")) == ["synchronous"]  # type: ignore[arg-type]
    assert fields_of(lambda: hc.open(tmp_path / "x.db", synchronous=1)) == ["synchronous"]  # type: ignore[arg-type]
    assert fields_of(lambda: hc.open(tmp_path / "x.db", lock_patience_seconds=-1)) == ["lock_patience_seconds"]
    with pytest.raises(TypeError):
        hc.open(tmp_path / "x.db", clock="not a clock")  # type: ignore[arg-type]


def test_bad_helper_arguments() -> None:
    assert fields_of(lambda: hc.ManualClock("2030")) == ["start"]  # type: ignore[arg-type]
    assert fields_of(lambda: hc.ManualClock().advance(-1)) == ["seconds"]
    assert fields_of(lambda: hc.ManualClock().set(None)) == ["at"]  # type: ignore[arg-type]
    assert fields_of(lambda: hc.ChainPolicy(max_handoffs=-1)) == ["max_handoffs"]
    assert fields_of(lambda: hc.ChainPolicy(collaborators=["a"])) == ["collaborators"]  # type: ignore[arg-type]
    assert fields_of(lambda: hc.Limits(max_depth="deep")) == ["max_depth"]  # type: ignore[arg-type]
    secret = "hcs_" + "0" * 64
    assert fields_of(lambda: hc.ClaimRef(1, 1, secret)) == ["handoff_id"]  # type: ignore[arg-type]
    assert fields_of(lambda: hc.ClaimRef("h", -1, secret)) == ["token"]
    assert fields_of(lambda: hc.ClaimRef("h", 1, "hcs_x", lease_seconds=0)) == ["secret"]
    assert fields_of(lambda: hc.ClaimRef("h", 1, None)) == ["secret"]  # type: ignore[arg-type]
    assert fields_of(lambda: hc.Handoff.from_json(5)) == ["s"]  # type: ignore[arg-type]


BAD_JSON = [
    "", "not json", "[]", "{}", '{"id": 1}', "{" * 100000, "[" * 70 + "]" * 70,
    '{"schema_version": 999}', "\"" + "x" * 300000 + "\"",
]


@pytest.mark.parametrize("text", BAD_JSON, ids=range(len(BAD_JSON)))
def test_from_json_rejects_bad_text(text: str) -> None:
    with pytest.raises(hc.ValidationError):
        hc.Handoff.from_json(text)


def test_from_json_rejects_bad_bytes() -> None:
    assert fields_of(lambda: hc.Handoff.from_json(b"\xff\xfe")) == ["s"]


def test_from_json_names_unknown_and_wrong_fields() -> None:
    with hc.Store.memory() as s:
        good = s.create("t", "g").to_json()
    assert "colour" in str(fields_of(lambda: hc.Handoff.from_json(good[:-1] + ', "colour": 1}')))
    bad_kind = good.replace('"kind":"full"', '"kind":"sideways"')
    assert bad_kind != good
    assert fields_of(lambda: hc.Handoff.from_json(bad_kind)) == ["kind"]
