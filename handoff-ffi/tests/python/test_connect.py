"""Stores opened by URL (`Store.connect`): memory, a folder of JSON files and, when
HANDOFF_TEST_POSTGRES points at a server, PostgreSQL in a schema of its own; and workers that
wait in `claim_next` until work arrives. Waiting is real time, so these tests use the system
clock and keep their waits short."""

from __future__ import annotations

import datetime as dt
import os
import secrets
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import hf, new

POSTGRES = os.environ.get("HANDOFF_TEST_POSTGRES")
# Long enough never to run out on a loaded machine; a woken worker returns long before.
PATIENCE = dt.timedelta(seconds=30)


def lifecycle(store: hf.Store) -> hf.Handoff:
    """Create, claim, heartbeat and complete one handoff; returns the finished record."""
    h = store.create(new(task_id="url-task", from_agent="planner", pending=["tests"]))
    assert store.get(h.id) == h
    claim = store.claim_next("coder", task_id="url-task", lease=dt.timedelta(seconds=60))
    assert claim is not None and claim.handoff.id == h.id and claim.token == 1
    store.heartbeat(claim.reference())
    done = store.complete(claim.reference(), "merged")
    assert done.status == hf.HandoffStatus.COMPLETED and done.outcome == "merged"
    assert store.claim_next("coder") is None
    changes = [e.change for e in store.events(h.id)]
    assert changes[0].is_CREATED() and changes[1].is_CLAIMED() and changes[-1].is_COMPLETED()
    assert store.chain("url-task").path == ["planner", "coder"]
    return done


def test_connect_memory() -> None:
    lifecycle(hf.Store.connect("memory:"))
    # Each `memory:` is a store of its own.
    assert hf.Store.connect("memory:").list() == []


def test_connect_files_and_again(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    done = lifecycle(hf.Store.connect(f"files:{folder}"))
    assert folder.is_dir()
    again = hf.Store.connect(f"files:{folder}")
    assert again.get(done.id) == done
    assert [h.id for h in again.list()] == [done.id]
    assert [e.change.is_COMPLETED() for e in again.events(done.id)][-1]


def test_connect_takes_a_path_and_sqlite_urls(tmp_path: Path) -> None:
    done = lifecycle(hf.Store.connect(str(tmp_path / "a.db")))
    assert hf.Store.open(str(tmp_path / "a.db")).get(done.id) == done
    lifecycle(hf.Store.connect(f"sqlite:{tmp_path / 'b.db'}"))


def test_connect_applies_the_options(tmp_path: Path) -> None:
    clock = hf.ManualClock()
    store = hf.Store.connect(f"files:{tmp_path / 'store'}", hf.OpenOptions(clock=clock))
    assert store.create(new()).created_at == clock.now()
    # SQLite's settings are Store.open's: connect refuses them rather than drop them.
    with pytest.raises(hf.HandoffError.Validation) as err:
        hf.Store.connect("memory:", hf.OpenOptions(synchronous=hf.Synchronous.NORMAL,
                                                   lock_patience=dt.timedelta(seconds=1)))
    assert [p.field for p in err.value.problems] == ["synchronous", "lock_patience"]


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("", "url"),
        ("http://example.com/x", "url"),
        ("files:", "url"),
        ("postgres://u@h:notaport/db", "url"),
        ("postgres://u@h/db?schema=Bad-Name", "url.schema"),
    ],
)
def test_a_bad_url_is_named(url: str, field: str) -> None:
    with pytest.raises(hf.HandoffError.Validation) as err:
        hf.Store.connect(url)
    assert [p.field for p in err.value.problems] == [field]


def waiting_worker_is_woken(store: hf.Store, creator: hf.Store) -> None:
    """`claim_next(wait=…)` on `store` sleeps until `creator` (the same store, or another
    connection to it) creates work from another thread, and takes it."""
    started = threading.Event()

    def create_later() -> None:
        started.wait()
        time.sleep(0.2)
        creator.create(new(task_id="late", to_agent="worker"))

    thread = threading.Thread(target=create_later)
    thread.start()
    begun = time.monotonic()
    started.set()
    claim = store.claim_next("worker", wait=PATIENCE)
    waited = time.monotonic() - begun
    thread.join(timeout=30)
    assert claim is not None and claim.handoff.task_id == "late"
    assert 0.15 < waited < 15, waited


@pytest.fixture(params=["memory", "files", "sqlite"])
def waiting_store(request: pytest.FixtureRequest, tmp_path: Path) -> hf.Store:
    return hf.Store.connect({
        "memory": "memory:",
        "files": f"files:{tmp_path / 'store'}",
        "sqlite": str(tmp_path / "wait.db"),
    }[request.param])


def test_claim_next_waits_for_work(waiting_store: hf.Store) -> None:
    waiting_worker_is_woken(waiting_store, waiting_store)


def test_claim_next_waits_no_longer_than_asked(waiting_store: hf.Store) -> None:
    begun = time.monotonic()
    assert waiting_store.claim_next("worker", wait=dt.timedelta(milliseconds=200)) is None
    assert 0.15 < time.monotonic() - begun < 15
    # No wait (and a zero one) answers at once.
    assert waiting_store.claim_next("worker") is None
    assert waiting_store.claim_next("worker", wait=dt.timedelta(0)) is None


def test_claim_next_wakes_for_a_create_through_another_connection(tmp_path: Path) -> None:
    url = f"files:{tmp_path / 'store'}"
    waiting_worker_is_woken(hf.Store.connect(url), hf.Store.connect(url))


# PostgreSQL: a fresh schema per test, dropped afterwards. Not set: skipped, saying why; set
# but unreachable: connect fails, and so does the test.


@pytest.fixture
def postgres_url() -> Iterator[str]:
    if not POSTGRES:
        pytest.skip("HANDOFF_TEST_POSTGRES is not set (CI sets it to postgres://postgres@127.0.0.1:5432/test)")
    reached = subprocess.run(["psql", POSTGRES, "-Atqc", "SELECT 1"], capture_output=True, text=True)
    if reached.returncode != 0:
        pytest.fail(f"HANDOFF_TEST_POSTGRES is set, and its server cannot be reached: {reached.stderr.strip()}")
    schema = f"hc_ffi_{secrets.token_hex(6)}"
    separator = "&" if "?" in POSTGRES else "?"
    try:
        yield f"{POSTGRES}{separator}schema={schema}"
    finally:
        subprocess.run(["psql", POSTGRES, "-q", "-c", f"DROP SCHEMA IF EXISTS {schema} CASCADE"], check=True)


def test_connect_postgres(postgres_url: str) -> None:
    done = lifecycle(hf.Store.connect(postgres_url))
    again = hf.Store.connect(postgres_url)
    assert again.get(done.id) == done
    assert [h.id for h in again.list()] == [done.id]


def test_claim_next_waits_for_work_on_postgres(postgres_url: str) -> None:
    # Woken by the server (LISTEN/NOTIFY) when another connection creates the work.
    waiting_worker_is_woken(hf.Store.connect(postgres_url), hf.Store.connect(postgres_url))
