"""`handoff serve`'s connections: a client that connects and sends part of a request, or keeps
a connection open between requests, holds it for `--idle-timeout` at most and cannot keep a
stopping server from exiting; a worker waiting for work is answered when the server stops; a
claim made for a client that disconnected is given back.

Time bounds here are hang detectors, far from the durations they guard: without the deadlines
these waits never end (a connection held for good, a stop that never exits)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from conftest import Server, Servers

HANG = 60.0


def connect(server: Server) -> socket.socket:
    address = urllib.parse.urlsplit(server.url)
    return socket.create_connection((address.hostname, address.port), timeout=HANG)


def closed_by_server(sock: socket.socket) -> bool:
    """Reads until the server closes the connection; false if it is still open after `HANG`."""
    try:
        while sock.recv(65536):
            pass
        return True
    except socket.timeout:
        return False
    except ConnectionResetError:
        return True


def stopped(server: Server) -> int:
    """Sends SIGTERM and waits for the exit; its status."""
    server.process.terminate()
    return server.process.wait(timeout=HANG)


def test_a_client_that_sends_part_of_a_request_head_is_disconnected(servers: Servers) -> None:
    server = servers.start(None, "--idle-timeout", "1")
    slow = connect(server)
    slow.sendall(b"GET /api/v1/handoffs HTTP/1.1\r\nHost: x\r\n")
    # Others are served while it dawdles.
    assert server.ok("GET", "/handoffs")["handoffs"] == []
    assert closed_by_server(slow), "a connection with half a request head was held open"


def test_a_kept_alive_connection_is_closed_after_the_idle_timeout(servers: Servers) -> None:
    server = servers.start(None, "--idle-timeout", "1")
    sock = connect(server)
    sock.sendall(b"GET /api/v1/handoffs HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    head = sock.recv(65536)
    assert head.startswith(b"HTTP/1.1 200"), head
    assert closed_by_server(sock), "an idle kept-alive connection was held open"


def test_a_half_sent_request_does_not_keep_a_stopping_server_alive(servers: Servers) -> None:
    server = servers.start(None, "--idle-timeout", "3600")
    slow = connect(server)
    slow.sendall(b"POST /api/v1/handoffs HTTP/1.1\r\nHost: x\r\n")
    assert server.ok("GET", "/handoffs")["handoffs"] == []
    servers.started.remove(server)
    assert stopped(server) == 0, server.stderr()
    assert "panicked" not in server.stderr()
    slow.close()


def test_a_waiting_worker_is_answered_when_the_server_stops(servers: Servers) -> None:
    server = servers.start(None)
    answers: list[Any] = []
    body = {"agent": "worker", "wait_seconds": 50}
    waiter = threading.Thread(target=lambda: answers.append(server.request("POST", "/handoffs/claim-next", body)))
    started = time.monotonic()
    waiter.start()
    # The request must be under way before the stop (a stopping server accepts no connection).
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline and not _waiting(server):
        time.sleep(0.05)
    time.sleep(0.5)  # from the kernel's queue to the server's accept
    servers.started.remove(server)
    assert stopped(server) == 0, server.stderr()
    waiter.join(HANG)
    assert answers, "the waiting claim got no answer"
    reply = answers[0]
    assert reply.status == 200 and reply.json == {"claimed": False}, reply
    # Its 50 s were cut short by the stop, not waited out.
    assert time.monotonic() - started < 40, "the stop waited out the worker's wait"


def _waiting(server: Server) -> bool:
    """Whether a connection to the server is established (the waiting claim's: the only one)."""
    pid = server.process.pid
    port = int(urllib.parse.urlsplit(server.url).port or 0)
    try:
        with open(f"/proc/{pid}/net/tcp") as table:
            rows = table.read().splitlines()[1:]
    except OSError:
        return True
    # Local address `0100007F:PORT` in state 01 (ESTABLISHED), in hex.
    local = f":{port:04X}"
    return any(row.split()[1].endswith(local) and row.split()[3] == "01" for row in rows)



@contextmanager
def write_lock_held(db: Path) -> Iterator[None]:
    """SQLite's write lock on `db`, held by another process until the block ends."""
    script = Path(__file__).parent.parent / "common" / "hold_write_lock.py"
    holder = subprocess.Popen([sys.executable, str(script), str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.wait(timeout=HANG) == 0


def test_a_claim_made_for_a_client_that_disconnected_is_given_back(servers: Servers) -> None:
    server = servers.start(None)
    h = server.ok("POST", "/handoffs", {"task_id": "t", "goal": "wanted once", "to_agent": "worker"})["handoff"]
    assert isinstance(server.db, Path)
    with write_lock_held(server.db):
        # The claim waits for the lock another process holds; its client leaves meanwhile.
        client = connect(server)
        body = b'{"agent": "worker"}'
        client.sendall(
            b"POST /api/v1/handoffs/claim-next HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        time.sleep(0.3)
        client.close()
        time.sleep(0.3)
    # The call now claims, for nobody: the claim is given back, not left to lapse.
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        kinds = [e["kind"] for e in server.ok("GET", f"/handoffs/{h['id']}/events")["events"]]
        if "released" in kinds:
            break
        time.sleep(0.1)
    assert kinds == ["created", "claimed", "released"]
    again = server.ok("POST", "/handoffs/claim-next", {"agent": "worker"})
    assert again["handoff_id"] == h["id"]
