"""Depth limits that every reader can read back, deep input that never crashes the host, and
text that is never altered silently (lone surrogates refused everywhere)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from typing import Any

import pytest

import handoff_core as hc


def nest(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"d": value}
    return value


def fields_of(call: Any) -> list[str]:
    with pytest.raises(hc.ValidationError) as caught:
        call()
    return caught.value.fields


def test_a_depth_limit_past_what_readers_read_is_refused() -> None:
    assert hc.MAX_DEPTH == 100
    for too_deep in (10**6, hc.MAX_DEPTH + 1, 0):
        with pytest.raises(hc.ValidationError) as caught:
            hc.Limits(max_depth=too_deep)
        assert caught.value.fields == ["max_depth"]
    assert "at most 100" in caught.value.problems[0][1] or "at least 1" in caught.value.problems[0][1]
    with pytest.raises(hc.ValidationError, match="at most 100"):
        hc.Limits(max_depth=10**6)
    assert hc.Limits(max_depth=hc.MAX_DEPTH).max_depth == 100


def test_what_the_deepest_limit_lets_through_reads_back(tmp_path: Any) -> None:
    limits = hc.Limits(max_depth=hc.MAX_DEPTH)
    path = tmp_path / "h.db"
    with hc.open(path, limits=limits) as store:
        h = store.create("t", "g", metadata=nest(hc.MAX_DEPTH - 1))
        assert "metadata" in fields_of(lambda: store.create("t", "g", metadata=nest(hc.MAX_DEPTH)))[0]
    with hc.open(path) as reader:  # default limits: still reads every row
        assert reader.get(h.id) == h and reader.list() == [h]
        assert len(reader.events()) == 1 and len(reader.stats()) == 1
        claim = reader.claim_next("w")
        assert claim is not None and claim.handoff_id == h.id
        assert pickle.loads(pickle.dumps(claim)) == claim
    assert pickle.loads(pickle.dumps(h)) == h
    assert hc.Handoff.from_json(h.to_json(), limits=limits) == h
    with pytest.raises(hc.ValidationError):
        hc.Handoff.from_json(h.to_json())  # the default limits are lower


DEEP_SCRIPT = r"""
import json, handoff_core as hc

def nest_dict(n):
    v = {}
    for _ in range(n):
        v = {"d": v}
    return v

def nest_list(n):
    v = []
    for _ in range(n):
        v = [v]
    return v

def refused(call, prefix):
    try:
        call()
    except hc.ValidationError as e:
        assert e.fields[0].startswith(prefix), e.fields
        return
    raise SystemExit("accepted: " + prefix)

N = 5000
for limits in (None, hc.Limits(max_depth=hc.MAX_DEPTH)):
    s = hc.Store.memory(limits=limits)
    for deep in (nest_dict(N), nest_list(N)):
        refused(lambda: s.create("t", "g", metadata={"m": deep}), "metadata")
        refused(lambda: s.create_many([{"task_id": "t", "goal": "g", "metadata": {"m": deep}}]), "records[0].metadata")
        refused(lambda: s.checkpoint("t", "a", goal="g", metadata={"m": deep}), "metadata")
        refused(lambda: hc.ContextBuilder().add_messages([{"role": "user", "content": "x", "extra": deep}]), "messages[0]")
        refused(lambda: hc.AgentRegistry().detect({"m": deep}, "a"), "response")
    assert s.list() == []
try:
    hc.Limits(max_depth=10**6)
    raise SystemExit("Limits(max_depth=10**6) accepted")
except hc.ValidationError as e:
    assert e.fields == ["max_depth"]
text = '{"a":' * N + "1" + "}" * N
refused(lambda: hc.Handoff.from_json(text), "record")
refused(lambda: hc.Handoff.from_json("[" * N), "record")
refused(lambda: hc.AgentRegistry().detect(text, "a"), "response")
print("survived")
"""


def test_five_thousand_levels_never_crash_the_host() -> None:
    # In a child process, so that a crash (SIGSEGV from a stack overflow) fails this test
    # instead of ending the whole run.
    run = subprocess.run(
        [sys.executable, "-c", DEEP_SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, (run.returncode, run.stdout, run.stderr[-2000:])
    assert run.stdout.strip() == "survived"


# Lone surrogates cannot be UTF-8: every text path refuses them, naming the field.

SURROGATE = "\ud800"


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"metadata": {SURROGATE: 1}}, "metadata"),
    ({"metadata": {"\ud800": 1, "\udc00": 2}}, "metadata"),  # would collapse into one key
    ({"metadata": {"a": {"b\udfff": [1]}}}, "metadata.a"),
    ({"metadata": {"a": [{"\udbff": None}]}}, "metadata.a[0]"),
    ({"metadata": {"a": SURROGATE}}, "metadata.a"),
    ({"metadata": {"a": ["ok", "x\udc80"]}}, "metadata.a[1]"),
    ({"completed": ["ok", SURROGATE]}, "completed[1]"),
    ({"id": SURROGATE}, "id"),
    ({"from_agent": SURROGATE}, "from_agent"),
    ({"goal": "g" + SURROGATE}, "goal"),
    ({"instructions": SURROGATE}, "instructions"),
])
def test_lone_surrogates_are_refused_naming_the_field(kwargs: dict[str, Any], field: str) -> None:
    with hc.Store.memory() as store:
        args: dict[str, Any] = {"task_id": "t", "goal": "g", **kwargs}
        with pytest.raises(hc.ValidationError) as caught:
            store.create(**args)
        assert caught.value.fields[0] == field, caught.value.problems
        assert "surrogate" in caught.value.problems[0][1]
        assert store.list() == []


def test_lone_surrogates_in_other_calls() -> None:
    with hc.Store.memory() as store:
        h = store.create("t", "g", to_agent="b")
        assert fields_of(lambda: store.get(SURROGATE)) == ["id"]
        assert fields_of(lambda: store.claim(h.id, SURROGATE)) == ["agent"]
        assert fields_of(lambda: store.events(task_id=SURROGATE)) == ["task_id"]
        assert fields_of(lambda: store.cancel(h.id, "b", SURROGATE)) == ["reason"]
        assert fields_of(lambda: store.checkpoint("t", "a", goal="g", metadata={SURROGATE: 1})) == ["metadata"]
        assert fields_of(lambda: store.create_many([{"task_id": "t", "goal": "g", "metadata": {SURROGATE: 1}}])) == [
            "records[0].metadata"]
        claim = store.claim(h.id, "b")
        assert fields_of(lambda: store.complete(claim, SURROGATE)) == ["outcome"]
        assert fields_of(lambda: hc.ClaimRef(SURROGATE, 1, claim.secret)) == ["handoff_id"]
        assert fields_of(lambda: hc.ClaimRef(h.id, 1, claim.secret[:-1] + SURROGATE)) == ["secret"]
        assert len(store.list()) == 1
    assert fields_of(lambda: hc.ContextBuilder().add_messages(
        [{"role": "user", "content": "x", "extra": {SURROGATE: 1}}]))[0].startswith("messages[0]")
    assert fields_of(lambda: hc.ContextBuilder().add_facts([SURROGATE])) == ["facts[0]"]
    assert fields_of(lambda: hc.AgentRegistry().detect({SURROGATE: 1}, "a"))[0] == "response"
    assert fields_of(lambda: hc.ChainPolicy(collaborators={SURROGATE: ["b"]}))[0] == "collaborators"
    assert fields_of(lambda: hc.Handoff.from_json(SURROGATE)) == ["s"]
