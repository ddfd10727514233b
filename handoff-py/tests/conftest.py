"""Shared fixtures: every contract test runs against the memory store and an SQLite file."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import handoff_core as hc


@pytest.fixture(params=["memory", "sqlite"])
def clock_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[hc.ManualClock, hc.Store]]:
    """A store on a manual clock, so that tests move time instead of sleeping."""
    clock = hc.ManualClock()
    if request.param == "memory":
        store = hc.Store.memory(clock=clock)
    else:
        store = hc.open(tmp_path / "handoff.db", clock=clock)
    with store:
        yield clock, store


@pytest.fixture
def store(clock_store: tuple[hc.ManualClock, hc.Store]) -> hc.Store:
    return clock_store[1]


@pytest.fixture
def clock(clock_store: tuple[hc.ManualClock, hc.Store]) -> hc.ManualClock:
    return clock_store[0]


@contextmanager
def write_lock_held(path: Path) -> Iterator[None]:
    """Holds SQLite's write lock on `path` from another process until the block ends.

    Another process, because POSIX file locks do not conflict within one process: Python's own
    sqlite3 library would not block the store's (separately linked) SQLite at all.
    """
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.stdin.write("release\n")
        holder.stdin.flush()
        assert holder.wait(timeout=60) == 0


_HOLD_LOCK = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
con.execute("ROLLBACK")
"""
