"""Shared fixtures: every contract test runs against the memory store and an SQLite file."""

from __future__ import annotations

import faulthandler
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
def deadlock_watchdog(seconds: float = 60) -> Iterator[None]:
    """Ends the whole test process if the block has not finished after `seconds`.

    For tests about the GIL: if a native call blocked while holding it, no Python code (so no
    Python-level timeout) could run again, and the run would hang instead of failing.
    faulthandler's watchdog is a C thread that needs no GIL.
    """
    faulthandler.dump_traceback_later(seconds, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


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



_EXPORTER: list[Any] = []


@pytest.fixture
def spans() -> Any:
    """An in-memory exporter of the spans finished during the test, installed once as the
    process's tracer provider (OpenTelemetry lets it be set only once): ``spans.get_finished_spans()``."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    if not _EXPORTER:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        _EXPORTER.append(exporter)
    _EXPORTER[0].clear()
    return _EXPORTER[0]
