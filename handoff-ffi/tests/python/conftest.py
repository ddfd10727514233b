"""The tests import the module uniffi generated (`make test-ffi` writes it, with the library
beside it, to target/ffi/python; HANDOFF_FFI_PYTHON points elsewhere). Every store test runs
against the memory store and an SQLite file, on a manual clock, so that no test sleeps."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

GENERATED = Path(
    os.environ.get("HANDOFF_FFI_PYTHON", Path(__file__).resolve().parents[3] / "target/ffi/python")
)
if not (GENERATED / "handoff_ffi.py").exists():
    raise RuntimeError(f"no generated module in {GENERATED}: run `make test-ffi`")
sys.path.insert(0, str(GENERATED))

import handoff_ffi as hf  # noqa: E402


@pytest.fixture
def clock() -> hf.ManualClock:
    return hf.ManualClock()


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: hf.ManualClock) -> Iterator[hf.Store]:
    options = hf.OpenOptions(clock=clock)
    if request.param == "memory":
        yield hf.Store.memory(options)
    else:
        yield hf.Store.open(str(tmp_path / "handoff.db"), options)


def new(task_id: str = "task-1", goal: str = "Write the parser", **fields) -> hf.CreateOptions:
    """Create options with a task and goal, for tests that do not care which."""
    return hf.CreateOptions(task_id=task_id, goal=goal, **fields)
