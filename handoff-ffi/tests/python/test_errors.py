"""Bad input gets a typed error naming the field and the rule, and changes nothing; an
internal failure arrives as an exception, never as an abort."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from conftest import hf, new

KINDS = {
    "NotFound", "AlreadyClaimed", "LeaseLost", "InvalidTransition", "Validation", "Conflict",
    "ChainViolation", "Storage",
}


def test_the_error_kinds_are_those_of_the_other_bindings() -> None:
    variants = {name for name, value in vars(hf.HandoffError).items() if isinstance(value, type)}
    assert KINDS <= variants
    for kind in KINDS:
        assert issubclass(getattr(hf.HandoffError, kind), hf.HandoffError)


def test_not_found_is_readable(store: hf.Store) -> None:
    with pytest.raises(hf.HandoffError.NotFound) as err:
        store.get("nope")
    assert err.value.id == "nope"
    assert err.value.description == "handoff nope not found"
    assert "handoff nope not found" in str(err.value)


def test_validation_lists_every_problem_and_changes_nothing(store: hf.Store) -> None:
    store.create(new())
    before = (store.list(), store.events())
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.create(new(task_id="bad id!", goal="", context_pct=101, completed=["ok", ""]))
    fields = {p.field for p in err.value.problems}
    # Named by the arguments, as in every binding: `context_pct`, not the record's field.
    assert {"task_id", "goal", "context_pct"} <= fields
    assert all(p.rule for p in err.value.problems)
    assert "task_id" in err.value.description
    assert (store.list(), store.events()) == before


FIXTURE = Path(__file__).resolve().parents[3] / "handoff-core/tests/fixtures/bad_create.json"


def test_one_bad_create_gives_the_shared_problem_list(store: hf.Store) -> None:
    """The bad create every face is fed reports the same problems, in the same order."""
    fixture = json.loads(FIXTURE.read_text())
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.create_json(json.dumps(fixture["input"]))
    assert [[p.field, p.rule] for p in err.value.problems] == fixture["problems"]
    # The typed door says the same but for the reason, which its type cannot get wrong.
    typed = {name: value for name, value in fixture["input"].items() if name != "reason"}
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.create(hf.CreateOptions(**typed))
    expected = [problem for problem in fixture["problems"] if problem[0] != "reason"]
    assert [[p.field, p.rule] for p in err.value.problems] == expected
    assert store.list() == []


def test_create_json_takes_the_arguments_of_every_face(store: hf.Store) -> None:
    h = store.create_json(json.dumps({
        "task_id": "t1", "goal": "g", "reason": "context_limit", "context_pct": 85,
        "files": ["a.rs"], "metadata": {"ticket": 42},
    }))
    assert h.reason == hf.HandoffReason.CONTEXT_LIMIT(percent=85)
    assert (h.modified_files, json.loads(h.metadata)) == (["a.rs"], {"ticket": 42})
    for text, field in [("{", "arguments_json"), ("[1]", "arguments"), ('{"task_id": "t"}', "goal")]:
        with pytest.raises(hf.HandoffError.Validation) as err:
            store.create_json(text)
        assert [p.field for p in err.value.problems] == [field], text


@pytest.mark.parametrize(
    ("metadata", "rule"),
    [("[1, 2]", "must be a JSON object"), ("{not json", "is not valid JSON")],
)
def test_metadata_must_be_a_json_object(store: hf.Store, metadata: str, rule: str) -> None:
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.create(new(metadata=metadata))
    [problem] = err.value.problems
    assert problem.field == "metadata" and rule in problem.rule
    assert store.list() == []


def test_deeply_nested_metadata_is_refused_not_crashed(store: hf.Store) -> None:
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.create(new(metadata='{"a":' * 5000 + "1" + "}" * 5000))
    assert err.value.problems[0].field == "metadata"


def test_bad_leases_are_validation_errors(store: hf.Store) -> None:
    h = store.create(new())
    for lease in (dt.timedelta(0), dt.timedelta(days=400)):
        with pytest.raises(hf.HandoffError.Validation) as err:
            store.claim(h.id, "a", lease=lease)
        assert err.value.problems[0].field == "lease"
    assert store.get(h.id).status == hf.HandoffStatus.PENDING


def test_bad_json_record(store: hf.Store) -> None:
    with pytest.raises(hf.HandoffError.Validation):
        hf.handoff_from_json('{"goal": ""}')
    with pytest.raises(hf.HandoffError.Validation):
        hf.handoff_from_json("[" * 100_000)


def test_an_edited_record_with_bad_metadata_is_refused(store: hf.Store) -> None:
    h = store.create(new())
    h.metadata = "not an object"
    # The record is the core's own type: uniffi reads it back, and refuses it naming the argument.
    with pytest.raises(hf.InternalError) as err:
        hf.handoff_to_markdown(h)
    assert "handoff" in str(err.value)


def test_foreign_files_are_storage_errors(tmp_path) -> None:
    path = tmp_path / "not-a-store.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(hf.HandoffError.Storage):
        hf.Store.open(str(path))
    assert path.read_bytes() == b"this is not sqlite" * 100


def test_unsupported_values_fail_on_the_python_side_before_the_call(store: hf.Store) -> None:
    with pytest.raises((TypeError, ValueError)):
        store.claim("x", "a", lease=dt.timedelta(seconds=-1))
    with pytest.raises(TypeError):
        store.get(42)  # type: ignore[arg-type]


class Exploding(hf.Tokenizer):
    """A tokenizer that fails: the Rust side panics when a callback raises, and the panic
    must come back to Python as an exception, not abort the process."""

    def count_tokens(self, text: str) -> int:
        raise RuntimeError("tokenizer crashed")


def test_an_internal_panic_arrives_as_an_exception_and_the_process_lives_on() -> None:
    builder = hf.ContextBuilder(budget_tokens=100, tokenizer=Exploding())
    builder.add_facts(["a fact"])
    with pytest.raises(hf.InternalError) as err:
        builder.build()
    assert "tokenizer crashed" in str(err.value) or "Callback" in str(err.value)
    # The builder and the library still work afterwards.
    assert builder.add_item("more") is None
    store = hf.Store.memory()
    assert store.create(new()).status == hf.HandoffStatus.PENDING
