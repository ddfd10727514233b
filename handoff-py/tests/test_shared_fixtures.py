"""The fixtures every face feeds through its own door, with the same result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import handoff_core as hc

FIXTURES = Path(__file__).resolve().parents[2] / "handoff-core" / "tests" / "fixtures"


def test_one_bad_create_gives_the_shared_problem_list() -> None:
    fixture: dict[str, Any] = json.loads((FIXTURES / "bad_create.json").read_text())
    with hc.Store.memory() as store, pytest.raises(hc.ValidationError) as caught:
        store.create(**fixture["input"])
    assert caught.value.problems == [tuple(p) for p in fixture["problems"]]
