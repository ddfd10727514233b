"""`connect(url)`: the store a URL names (`memory:`, `files:DIR`, a path, PostgreSQL), the
options each store reads, what each store can do (`capabilities()`), and a
`claim_next(wait_seconds=...)` woken by work that another thread creates.

The PostgreSQL tests run when HANDOFF_TEST_POSTGRES names a server (CI sets it to
postgres://postgres@127.0.0.1:5432/test), each in a schema of its own that is dropped
afterwards. Set but unreachable, they fail: a skip would hide a broken CI service.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Callable, Optional

import pytest

import handoff_core as hc

from conftest import deadlock_watchdog

POSTGRES = os.environ.get("HANDOFF_TEST_POSTGRES")
needs_postgres = pytest.mark.skipif(
    not POSTGRES,
    reason="HANDOFF_TEST_POSTGRES is not set (e.g. postgres://postgres@127.0.0.1:5432/test)",
)


def problems_of(call: Callable[[], object]) -> list[tuple[str, str]]:
    with pytest.raises(hc.ValidationError) as info:
        call()
    return info.value.problems


def lifecycle(store: hc.Store) -> str:
    """create → claim → heartbeat → complete, with what a second claimer and readers see."""
    h = store.create("billing", "Port invoices", from_agent="claude", to_agent="gemini",
                     completed=["schema"], pending=["invoices"], metadata={"pr": 1234})
    assert store.get(h.id).to_json() == h.to_json()
    assert [x.id for x in store.list(status="pending")] == [h.id]
    claim = store.claim(h.id, "gemini", lease_seconds=60)
    with pytest.raises(hc.AlreadyClaimed):
        store.claim(h.id, "gemini")
    store.heartbeat(claim)
    done = store.complete(claim, outcome="invoices ported")
    assert (done.status, done.outcome, done.metadata) == ("completed", "invoices ported", {"pr": 1234})
    with pytest.raises(hc.LeaseLost):
        store.heartbeat(claim)
    assert str(store.chain("billing")) == "claude → gemini"
    kinds = [e.kind for e in store.events(h.id)]
    assert kinds[0] == "created" and kinds[-1] == "completed", kinds
    return h.id


def wait_is_woken_by_a_create(waiter: hc.Store, creator: hc.Store) -> None:
    """A worker waiting in `claim_next` on `waiter` gets what another thread creates on
    `creator`: the wait releases the GIL (else the create could not run) and wakes up."""
    got: dict[str, object] = {}

    def worker() -> None:
        got["claim"] = waiter.claim_next("worker", wait_seconds=30)

    with deadlock_watchdog(120):
        thread = threading.Thread(target=worker)
        thread.start()
        time.sleep(0.3)
        assert thread.is_alive(), got  # waiting: there was nothing to claim
        h = creator.create("queue", "new work", to_agent="worker")
        # Woken by the create, not by the end of its 30 s: no clock beyond that margin,
        # since these machines are shared and a busy one may be slow to schedule the thread.
        thread.join(20)
        assert not thread.is_alive()
    claim = got["claim"]
    assert isinstance(claim, hc.Claim) and claim.handoff_id == h.id


def test_memory_url_is_a_private_memory_store() -> None:
    with hc.connect("memory:") as store:
        lifecycle(store)
        with hc.connect("memory:") as other:
            assert other.list() == []  # each memory: store is its own
    assert store.closed


def test_files_url_keeps_records_for_the_next_connect(tmp_path: Path) -> None:
    url = f"files:{tmp_path / 'store'}"
    with hc.connect(url) as store:
        done = lifecycle(store)
        # Open at the same time: each sees what the other wrote.
        with hc.connect(url) as other:
            assert other.get(done).status == "completed"
            later = other.create("billing", "Refunds", from_agent="gemini")
            assert store.get(later.id).goal == "Refunds"
    with hc.connect(url) as again:
        assert [h.id for h in again.list()] == [done, later.id]
        assert [e.kind for e in again.events(done)][-1] == "completed"
    assert (tmp_path / "store").is_dir()


def test_a_path_or_sqlite_url_is_an_sqlite_store(tmp_path: Path) -> None:
    with hc.connect(tmp_path / "a.db") as store:  # any os.PathLike
        made = store.create("t", "g")
    with hc.connect(f"sqlite:{tmp_path / 'a.db'}") as store, hc.open(tmp_path / "a.db") as same:
        assert store.get(made.id).to_json() == same.get(made.id).to_json()


def test_connect_takes_the_store_options(tmp_path: Path) -> None:
    clock = hc.ManualClock()
    policy = hc.ChainPolicy(max_handoffs=1)
    with hc.connect(f"files:{tmp_path}", clock=clock, policy=policy, limits=hc.Limits(max_field_bytes=64)) as store:
        assert store.now() == clock.now()
        assert store.policy.max_handoffs == 1 and store.limits.max_field_bytes == 64
        assert [f for f, _ in problems_of(lambda: store.create("t", "g" * 65))] == ["goal"]
        store.save_policy()
    with hc.connect(f"files:{tmp_path}") as store:  # saved in the folder, applied on connect
        assert store.policy.max_handoffs == 1 and store.limits.max_field_bytes == 64


@pytest.mark.parametrize("url", ["", "files:", "http://example.com/store", "sqlite:"])
def test_a_url_that_names_no_store_is_a_validation_error_naming_url(url: str) -> None:
    assert [f for f, _ in problems_of(lambda: hc.connect(url))] == ["url"]


def test_a_bad_schema_name_is_named_url_schema() -> None:
    # Refused while reading the URL, before any connection is tried.
    got = problems_of(lambda: hc.connect("postgres://u@127.0.0.1:1/db?schema=Bad-Name"))
    assert [f for f, _ in got] == ["url.schema"], got


@pytest.mark.parametrize(
    ("url", "field"),
    [
        # What the driver cannot read.
        ("postgres://u@127.0.0.1:notaport/db", "url.port"),
        ("postgres://u@127.0.0.1/db?connect_timeout=soon", "url.connect_timeout"),
        ("postgres://u@127.0.0.1/db?bogus=1", "url.bogus"),
        # The store's own parameters.
        ("postgres://u@127.0.0.1:1/db?reply_timeout=soon", "url.reply_timeout"),
        ("postgres://u@127.0.0.1:1/db?reply_timeout=-1", "url.reply_timeout"),
        ("postgres://u@127.0.0.1:1/db?reply_timeout=inf", "url.reply_timeout"),
        # libpq's milliseconds, and its name for the keepalive count beside the driver's.
        ("postgres://u@127.0.0.1:1/db?tcp_user_timeout=1.5", "url.tcp_user_timeout"),
        ("postgres://u@127.0.0.1:1/db?keepalives_count=3&keepalives_retries=3", "url.keepalives_retries"),
        ("postgres://u@127.0.0.1:1/db?sslmode=verify", "url.sslmode"),
        ("postgres://u@127.0.0.1:1/db?sslcert=client.pem", "url.sslcert"),
        ("postgres://u@127.0.0.1:1/db?sslmode=verify-ca&sslrootcert=/no/such/root.pem", "url.sslrootcert"),
    ],
)
def test_the_wrong_part_of_a_postgres_url_is_named(url: str, field: str) -> None:
    assert [f for f, _ in problems_of(lambda: hc.connect(url))] == [field]


@pytest.mark.parametrize("url", ["postgres://u:pw1@127.0.0.1:1/db", "postgres://u@127.0.0.1:1/db?password=pw1"])
def test_an_unreachable_server_error_never_shows_the_password(url: str) -> None:
    with pytest.raises(hc.StorageError) as info:
        hc.connect(url, connect_timeout_seconds=5)
    shown = str(info.value)
    # The core masks the password (`***`); a mask in a URL is redacted again on the way out.
    assert "pw1" not in shown and ("***" in shown or "[REDACTED:url-password]" in shown), shown


def test_url_must_be_text() -> None:
    got = problems_of(lambda: hc.connect(3))  # type: ignore[arg-type]
    assert [f for f, _ in got] == ["url"] and "str" in got[0][1]
    assert [f for f, _ in problems_of(lambda: hc.connect("\ud800"))] == ["url"]


def test_an_unreachable_postgres_server_is_a_storage_error() -> None:
    with pytest.raises(hc.StorageError):
        hc.connect("postgres://nobody@127.0.0.1:1/none?connect_timeout=2")


@pytest.mark.parametrize("backend", ["memory", "sqlite", "files"])
def test_claim_next_waits_until_another_thread_creates_work(backend: str, tmp_path: Path) -> None:
    url = {"memory": "memory:", "sqlite": str(tmp_path / "w.db"), "files": f"files:{tmp_path}"}[backend]
    with hc.connect(url) as store:
        wait_is_woken_by_a_create(store, store)


def test_a_wait_sees_work_created_through_another_connection(tmp_path: Path) -> None:
    url = f"files:{tmp_path}"
    with hc.connect(url) as waiter, hc.connect(url) as creator:
        wait_is_woken_by_a_create(waiter, creator)


def test_claim_next_waits_no_longer_than_asked() -> None:
    with deadlock_watchdog(60), hc.Store.memory() as store:
        started = time.monotonic()
        assert store.claim_next("w", wait_seconds=timedelta(milliseconds=200)) is None
        assert time.monotonic() - started >= 0.19  # and the watchdog bounds it from above
        assert store.claim_next("w", wait_seconds=0) is None  # the default: answer at once
        got = problems_of(lambda: store.claim_next("w", wait_seconds=-1))
        assert [f for f, _ in got] == ["wait_seconds"]


@contextmanager
def ctrl_c_raises() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt meanwhile, as in a terminal, even where Python started
    with it ignored (a command started in the background by a non-interactive shell, such as
    `make test &`)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_ends_a_waiting_claim_next() -> None:
    # The wait is far longer than the watchdog: only the interrupt can end it in time, so the
    # test needs no clock of its own (which a loaded machine could outrun).
    with hc.Store.memory() as store, deadlock_watchdog(120), ctrl_c_raises():
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        try:
            with pytest.raises(KeyboardInterrupt):
                timer.start()
                store.claim_next("w", wait_seconds=3600)
        finally:
            timer.join()


def test_aio_connect_and_a_wait_leave_the_event_loop_running(tmp_path: Path) -> None:
    async def main() -> tuple[Optional[hc.Claim], str, int]:
        async with await hc.aio.connect(f"files:{tmp_path}") as store:
            ticks = 0
            waiting = asyncio.ensure_future(store.claim_next("w", wait_seconds=30))
            for _ in range(10):  # the loop runs while the worker thread waits
                await asyncio.sleep(0.02)
                ticks += 1
            assert not waiting.done()
            h = await store.create("t", "g", to_agent="w")
            claim = await asyncio.wait_for(waiting, 20)
        return claim, h.id, ticks

    with deadlock_watchdog(120):
        claim, made, ticks = asyncio.run(main())
    assert claim is not None and claim.handoff_id == made and ticks == 10


# What each store can do.

# Every store writes portable backups.
MEMORY = {"durable": False, "shared_by_processes": False, "shared_by_machines": False,
          "backup": True, "wakes_waiters": False}
SQLITE = {**MEMORY, "durable": True, "shared_by_processes": True}
FILES = {**MEMORY, "durable": True, "shared_by_processes": True}
POSTGRES_CAN = {**MEMORY, "durable": True, "shared_by_processes": True, "shared_by_machines": True,
                "wakes_waiters": True}


def test_capabilities_of_each_local_store(tmp_path: Path) -> None:
    cases = [
        (hc.connect("memory:"), MEMORY),
        (hc.Store.memory(), MEMORY),
        (hc.connect(tmp_path / "a.db"), SQLITE),
        (hc.open(tmp_path / "b.db"), SQLITE),
        (hc.connect(f"files:{tmp_path / 'files'}"), FILES),
    ]
    for store, expected in cases:
        with store:
            got = store.capabilities()
            assert isinstance(got, hc.Capabilities)
            assert got.to_dict() == expected, store
            assert {name: getattr(got, name) for name in expected} == expected
            assert got == store.capabilities()
            assert repr(got).startswith("Capabilities(durable=")
    with hc.open(":memory:") as store:  # SQLite in memory: gone with the process, not shared
        assert store.capabilities().to_dict() == {**SQLITE, "durable": False, "shared_by_processes": False}
    with hc.Store.memory() as store, pytest.raises(TypeError):
        store.capabilities(colour=1)  # type: ignore[call-arg]
    store = hc.connect("memory:")
    store.close()
    with pytest.raises(hc.StorageError):
        store.capabilities()


def test_capabilities_as_a_coroutine(tmp_path: Path) -> None:
    async def main() -> tuple[hc.Capabilities, hc.Capabilities]:
        async with await hc.aio.connect(f"files:{tmp_path}") as files, hc.aio.Store.memory() as memory:
            got = await files.capabilities(), await memory.capabilities()
        return got

    files, memory = asyncio.run(main())
    assert files.to_dict() == FILES and memory.to_dict() == MEMORY


# Connect options: each store reads those that concern it; bad ones are refused by name, before
# anything is created.


def fields_of(call: Callable[[], object]) -> list[str]:
    return [field for field, _ in problems_of(call)]


def test_read_only_opens_an_sqlite_store_that_refuses_writes(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with hc.connect(f"sqlite:{db}") as store:
        h = store.create("t", "g", to_agent="b")
    for url in (str(db), f"sqlite:{db}"):
        with hc.connect(url, read_only=True) as store:
            assert "read-only" in repr(store)
            assert store.get(h.id) == h and [e.kind for e in store.events(h.id)] == ["created"]
            for write in (lambda: store.create("t", "more"), lambda: store.claim(h.id, "b"), store.reap):
                with pytest.raises(hc.StorageError, match="read-only"):
                    write()
            assert store.list() == [h]
    missing = tmp_path / "missing.db"
    with pytest.raises(hc.StorageError):
        hc.connect(missing, read_only=True)
    assert not missing.exists()


@pytest.mark.parametrize("url", ["memory:", "files:{tmp}/store", "postgres://u@127.0.0.1:1/db"])
def test_read_only_elsewhere_is_a_validation_error_naming_read_only(url: str, tmp_path: Path) -> None:
    url = url.format(tmp=tmp_path)
    got = problems_of(lambda: hc.connect(url, read_only=True))
    assert [f for f, _ in got] == ["read_only"] and "SQLite" in got[0][1], got
    assert not (tmp_path / "store").exists()


def test_bad_connect_options_are_named_and_create_nothing(tmp_path: Path) -> None:
    db, folder = tmp_path / "x.db", tmp_path / "folder"
    for url in (str(db), f"files:{folder}", "memory:"):
        assert fields_of(lambda: hc.connect(url, synchronous="off")) == ["synchronous"]  # type: ignore[arg-type]
        assert fields_of(lambda: hc.connect(url, synchronous=1)) == ["synchronous"]  # type: ignore[arg-type]
        assert fields_of(lambda: hc.connect(url, lock_patience_seconds=-1)) == ["lock_patience_seconds"]
        assert fields_of(lambda: hc.connect(url, lock_patience_seconds="1")) == ["lock_patience_seconds"]  # type: ignore[arg-type]
        for size in (0, -3, 1.5, "8", True):
            assert fields_of(lambda: hc.connect(url, pool_size=size)) == ["pool_size"], size  # type: ignore[arg-type]
        for timeout in (0, -1, "10"):
            assert fields_of(lambda: hc.connect(url, connect_timeout_seconds=timeout)) == [  # type: ignore[arg-type]
                "connect_timeout_seconds"
            ], timeout
    assert sorted(tmp_path.iterdir()) == []
    # Every problem at once, the URL's too.
    got = fields_of(lambda: hc.connect(3, synchronous="off", pool_size=0))  # type: ignore[arg-type]
    assert got == ["url", "synchronous", "pool_size"], got
    with pytest.raises(TypeError):
        hc.connect("memory:", colour=1)  # type: ignore[call-arg]


def test_options_that_concern_another_store_are_accepted_and_left(tmp_path: Path) -> None:
    # One set of options serves any URL: a store reads those that concern it.
    options = dict(synchronous="normal", lock_patience_seconds=2.5, pool_size=2, connect_timeout_seconds=3)
    for url in ("memory:", str(tmp_path / "a.db"), f"files:{tmp_path / 'f'}"):
        with hc.connect(url, **options) as store:  # type: ignore[arg-type]
            h = store.create("t", "g")
            assert store.get(h.id) == h


@contextmanager
def lock_held(path: Path) -> Iterator[None]:
    """Holds a store's writers' lock file as a stopped or stuck writer would."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@pytest.mark.parametrize("backend", ["sqlite", "files"])
def test_lock_patience_reaches_the_store(backend: str, tmp_path: Path) -> None:
    url, lock = {
        "sqlite": (str(tmp_path / "h.db"), tmp_path / "h.db-lock"),
        "files": (f"files:{tmp_path}", tmp_path / ".lock"),
    }[backend]
    with deadlock_watchdog(60), hc.connect(url, lock_patience_seconds=0.3) as store:
        store.create("t", "before")
        with lock_held(lock):
            started = time.monotonic()
            with pytest.raises(hc.Busy):
                store.create("t", "while stuck")
            assert time.monotonic() - started >= 0.25  # the watchdog bounds it from above
        assert store.create("t", "after").goal == "after"


def test_aio_connect_takes_the_same_options(tmp_path: Path) -> None:
    db = tmp_path / "h.db"

    async def main() -> None:
        async with await hc.aio.connect(db, synchronous="normal", lock_patience_seconds=1) as store:
            h = await store.create("t", "g")
        async with await hc.aio.connect(f"sqlite:{db}", read_only=True) as store:
            assert await store.get(h.id) == h
            with pytest.raises(hc.StorageError, match="read-only"):
                await store.create("t", "g")
        with pytest.raises(hc.ValidationError) as caught:
            await hc.aio.connect("memory:", read_only=True)
        assert [f for f, _ in caught.value.problems] == ["read_only"]
        with pytest.raises(hc.ValidationError) as caught:
            await hc.aio.connect("memory:", pool_size=0)
        assert [f for f, _ in caught.value.problems] == ["pool_size"]

    asyncio.run(main())


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """The test server's URL with a fresh schema, dropped afterwards."""
    assert POSTGRES is not None
    schema = f"hc_py_{secrets.token_hex(6)}"
    separator = "&" if "?" in POSTGRES else "?"
    try:
        yield f"{POSTGRES}{separator}schema={schema}"
    finally:
        subprocess.run(
            ["psql", POSTGRES, "-v", "ON_ERROR_STOP=1", "-qc", f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'],
            check=True,
            capture_output=True,
            timeout=60,
        )


@needs_postgres
def test_postgres_lifecycle_and_a_second_connect(postgres_url: str) -> None:
    with hc.connect(postgres_url) as store:
        done = lifecycle(store)
    with hc.connect(postgres_url) as again:
        assert again.get(done).status == "completed"
        assert [h.id for h in again.list()] == [done]
        assert "postgres" in repr(again)


def psql(sql: str) -> str:
    assert POSTGRES is not None
    done = subprocess.run(["psql", POSTGRES, "-Atqc", sql], check=True, capture_output=True, text=True, timeout=60)
    return done.stdout.strip()


@needs_postgres
def test_postgres_over_tls_with_sslmode_require(postgres_url: str) -> None:
    application = f"hc_py_tls_{secrets.token_hex(4)}"
    url = f"{postgres_url}&sslmode=require&application_name={application}"
    if psql("SHOW ssl") != "on":
        with pytest.raises(hc.StorageError, match="TLS"):
            hc.connect(url)
        return
    with hc.connect(url) as store:
        lifecycle(store)
        encrypted = psql(
            "SELECT bool_and(s.ssl) FROM pg_stat_ssl AS s JOIN pg_stat_activity AS a USING (pid) "
            f"WHERE a.application_name = '{application}'"
        )
        assert encrypted == "t", encrypted


@needs_postgres
def test_postgres_wait_is_woken_by_a_create(postgres_url: str) -> None:
    with hc.connect(postgres_url) as waiter, hc.connect(postgres_url) as creator:
        wait_is_woken_by_a_create(waiter, creator)
        wait_is_woken_by_a_create(waiter, waiter)


@needs_postgres
def test_postgres_capabilities_and_options(postgres_url: str) -> None:
    with hc.connect(postgres_url, pool_size=2, connect_timeout_seconds=5, synchronous="normal") as store:
        assert store.capabilities().to_dict() == POSTGRES_CAN
        lifecycle(store)

    async def main() -> hc.Capabilities:
        async with await hc.aio.connect(postgres_url, pool_size=1) as store:
            got = await store.capabilities()
        return got

    assert asyncio.run(main()).to_dict() == POSTGRES_CAN
    assert fields_of(lambda: hc.connect(postgres_url, read_only=True)) == ["read_only"]
    assert fields_of(lambda: hc.connect(postgres_url, pool_size=0)) == ["pool_size"]
