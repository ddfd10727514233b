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
    assert changes[0] == hf.Change.CREATED(task_id="url-task", to_agent=None, priority=0)
    assert changes[1].is_CLAIMED() and changes[-1].is_COMPLETED()
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
    # Each store reads the options that concern it: a folder of files its durability and
    # lock patience, memory none of them; PostgreSQL's pool_size and connect_timeout are
    # left by the others.
    everything = hf.OpenOptions(clock=clock, synchronous=hf.Synchronous.NORMAL,
                                lock_patience=dt.timedelta(seconds=1), pool_size=2,
                                connect_timeout=dt.timedelta(seconds=3))
    for url in (f"files:{tmp_path / 'store'}", "memory:", str(tmp_path / "a.db")):
        store = hf.Store.connect(url, everything)
        assert store.create(new()).created_at == clock.now()


def test_read_only_is_for_sqlite_stores(tmp_path: Path) -> None:
    writer = hf.Store.connect(f"sqlite:{tmp_path / 'a.db'}")
    h = writer.create(new())
    reader = hf.Store.connect(f"sqlite:{tmp_path / 'a.db'}", hf.OpenOptions(read_only=True))
    assert reader.get(h.id) == h
    with pytest.raises(hf.HandoffError.Storage):
        reader.create(new(goal="refused"))
    assert hf.Store.open(str(tmp_path / "a.db"), hf.OpenOptions(read_only=True)).list() == [h]
    # Nothing is created for a read-only open of a store that is not there.
    with pytest.raises(hf.HandoffError.Storage):
        hf.Store.connect(str(tmp_path / "missing.db"), hf.OpenOptions(read_only=True))
    assert not (tmp_path / "missing.db").exists()
    # Any other store refuses it, naming the option, before anything is made.
    for url in ("memory:", f"files:{tmp_path / 'store'}", "postgres://u@127.0.0.1:1/db"):
        with pytest.raises(hf.HandoffError.Validation) as err:
            hf.Store.connect(url, hf.OpenOptions(read_only=True))
        assert [p.field for p in err.value.problems] == ["read_only"], url
    with pytest.raises(hf.HandoffError.Validation) as err:
        hf.Store.memory(hf.OpenOptions(read_only=True))
    assert [p.field for p in err.value.problems] == ["read_only"]
    assert not (tmp_path / "store").exists()


def test_capabilities_say_what_each_store_can_do(tmp_path: Path) -> None:
    memory = hf.Store.connect("memory:").capabilities()
    assert memory == hf.Capabilities(durable=False, shared_by_processes=False,
                                     shared_by_machines=False, backup=True, wakes_waiters=False)
    assert hf.Store.memory().capabilities() == memory
    sqlite = hf.Store.connect(str(tmp_path / "a.db")).capabilities()
    assert sqlite == hf.Capabilities(durable=True, shared_by_processes=True,
                                     shared_by_machines=False, backup=True, wakes_waiters=False)
    assert hf.Store.open(str(tmp_path / "a.db")).capabilities() == sqlite
    # A private in-memory SQLite database is neither durable nor shared, and still backs up.
    assert hf.Store.open(":memory:").capabilities() == hf.Capabilities(
        durable=False, shared_by_processes=False, shared_by_machines=False, backup=True,
        wakes_waiters=False)
    files = hf.Store.connect(f"files:{tmp_path / 'store'}").capabilities()
    assert files == hf.Capabilities(durable=True, shared_by_processes=True,
                                    shared_by_machines=False, backup=True, wakes_waiters=False)
    # Every store backs up into one portable file, which any empty store restores.
    source = hf.Store.connect(f"files:{tmp_path / 'store'}")
    made = source.create(new())
    source.backup(str(tmp_path / "copy"))
    moved = hf.Store.connect(str(tmp_path / "moved.db"))
    moved.restore(str(tmp_path / "copy"))
    assert moved.get(made.id) == made
    with pytest.raises(hf.HandoffError.Validation) as refused:
        moved.restore(str(tmp_path / "copy"))
    assert [p.field for p in refused.value.problems] == ["store"]


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("", "url"),
        ("http://example.com/x", "url"),
        ("files:", "url"),
        ("postgres://u@h:notaport/db", "url.port"),
        ("postgres://u@h/db?bogus=1", "url.bogus"),
        ("postgres://u@h/db?schema=Bad-Name", "url.schema"),
        ("postgres://u@h/db?sslmode=verify", "url.sslmode"),
        ("postgres://u@h/db?sslcert=client.pem", "url.sslcert"),
        ("postgres://u@h/db?reply_timeout=-1", "url.reply_timeout"),
        ("postgres://u@h/db?tcp_user_timeout=1.5", "url.tcp_user_timeout"),
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
    options = hf.OpenOptions(pool_size=1, connect_timeout=dt.timedelta(seconds=5))
    again = hf.Store.connect(postgres_url, options)
    assert again.get(done.id) == done
    assert [h.id for h in again.list()] == [done.id]
    assert again.capabilities() == hf.Capabilities(
        durable=True, shared_by_processes=True, shared_by_machines=True, backup=True,
        wakes_waiters=True)
    with pytest.raises(hf.HandoffError.Validation) as err:
        hf.Store.connect(postgres_url, hf.OpenOptions(read_only=True))
    assert [p.field for p in err.value.problems] == ["read_only"]


def test_claim_next_waits_for_work_on_postgres(postgres_url: str) -> None:
    # Woken by the server (LISTEN/NOTIFY) when another connection creates the work.
    waiting_worker_is_woken(hf.Store.connect(postgres_url), hf.Store.connect(postgres_url))
