"""The exception hierarchy and the fields each exception carries."""

from __future__ import annotations

import pickle

import pytest

import handoff_core as hc

SUBCLASSES: list[type[hc.HandoffError]] = [
    hc.NotFound,
    hc.AlreadyClaimed,
    hc.LeaseLost,
    hc.InvalidTransition,
    hc.ValidationError,
    hc.ChainViolation,
    hc.StorageError,
    hc.Conflict,
    hc.Busy,
]


@pytest.mark.parametrize("cls", SUBCLASSES)
def test_every_error_is_a_handoff_error(cls: type[hc.HandoffError]) -> None:
    assert issubclass(cls, hc.HandoffError) and issubclass(cls, Exception)
    assert cls.__module__ == "handoff_core"
    assert cls.code.isupper()


def test_codes_match_the_other_bindings() -> None:
    assert [cls.code for cls in SUBCLASSES] == [
        "NOT_FOUND", "ALREADY_CLAIMED", "LEASE_LOST", "INVALID_TRANSITION", "VALIDATION",
        "CHAIN_VIOLATION", "STORAGE", "CONFLICT", "BUSY",
    ]


def test_validation_error_is_also_a_value_error() -> None:
    with pytest.raises(ValueError), hc.Store.memory() as store:
        store.create("t", "")


def test_validation_error_reports_every_problem() -> None:
    with hc.Store.memory() as store, pytest.raises(hc.ValidationError) as caught:
        store.create("bad task id!", "", from_agent="", context_pct=101, reason="because")
    problems = caught.value.problems
    assert all(isinstance(p, tuple) and len(p) == 2 for p in problems)
    fields = [field for field, _ in problems]
    # `reason` and `context_pct` are read by the binding; the rest are the core's rules.
    for field in ("reason", "context_pct", "task_id", "from_agent", "goal"):
        assert field in fields, (field, problems)
    assert "must not be empty" in dict(problems)["goal"]


@pytest.mark.parametrize("make", [
    lambda s: s.get("nope"),
    lambda s: s.claim(s.claim(s.create("t", "g").id, "a").handoff_id, "b"),
    lambda s: s.create("t", ""),
    lambda s: s.cancel(s.cancel(s.create("t2", "g").id, "x").id, "x"),
])
def test_errors_pickle_with_their_fields(make) -> None:  # type: ignore[no-untyped-def]
    with hc.Store.memory() as store, pytest.raises(hc.HandoffError) as caught:
        make(store)
    err = caught.value
    copy = pickle.loads(pickle.dumps(err))
    assert type(copy) is type(err) and str(copy) == str(err)
    assert copy.__dict__ == err.__dict__


def test_storage_error_on_a_file_that_is_not_a_store(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "not-a-db"
    path.write_bytes(b"this is not an SQLite database, just some text" * 100)
    with pytest.raises(hc.StorageError) as caught:
        hc.open(path)
    assert caught.value.detail
    assert str(path) in str(caught.value)


def test_storage_error_on_a_missing_directory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(hc.StorageError):
        hc.open(tmp_path / "no" / "such" / "dir" / "x.db")


# Tokens as errors quote them back: glued to a word by `_` (an id, a reason), in a path, an agent.
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
AWS = "AKIAIOSFODNN7EXAMPLE"


@pytest.mark.parametrize(("make", "cls"), [
    (lambda s, _: s.create("t", "g", reason=f"context_limit_{GITHUB}"), hc.ValidationError),
    (lambda s, _: s.get(f"x_{AWS}"), hc.NotFound),
    (lambda s, tmp: hc.open(tmp / "missing" / f"key {GITHUB}" / "h.db"), hc.StorageError),
    (lambda s, _: s.claim(s.create("t", "g", from_agent=f"x_{AWS}").id, f"x_{AWS}"), hc.ChainViolation),
])
def test_error_texts_are_redacted(make, cls, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with hc.Store.memory() as store, pytest.raises(cls) as caught:
        make(store, tmp_path)
    err = caught.value
    shown = f"{err} {err!r} {err.__dict__!r}"
    assert GITHUB not in shown and AWS not in shown, shown
    assert "[REDACTED:" in str(err), str(err)
    # What is not a secret is still there to say what went wrong.
    if isinstance(err, hc.ValidationError):
        assert err.fields == ["reason"] and "unknown value" in err.problems[0][1]
    copy = pickle.loads(pickle.dumps(err))
    assert str(copy) == str(err) and copy.__dict__ == err.__dict__
