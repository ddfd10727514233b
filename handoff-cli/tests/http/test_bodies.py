"""Request bodies: one that stops arriving after its head is cut off after `--idle-timeout`, a
length over the limit is refused as soon as it is announced, and the bodies buffered at once
are bounded, so that many large ones cannot take the machine's memory.

Time bounds here are hang detectors, far from the durations they guard: without the fixes these
waits never end (a body awaited for good) or the memory grows with every body at once."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.parse

from conftest import Server, Servers

# `MAX_BODY_BYTES` in api.rs: a bundle's largest (64 MiB) and 64 KiB for the arguments around it.
MAX_BODY_BYTES = 67_174_400
HANG = 30.0


def connect(server: Server, timeout: float = HANG) -> socket.socket:
    address = urllib.parse.urlsplit(server.url)
    return socket.create_connection((address.hostname, address.port), timeout=timeout)


def head(server: Server, length: int, path: str = "/handoffs", extra: str = "") -> bytes:
    return (
        f"POST /api/v1{path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n{extra}\r\n"
    ).encode()


def answer(sock: socket.socket) -> tuple[int, dict, float]:
    """The server's answer and when it came; fails if none came within the socket's timeout."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
            if b"\r\n\r\n" in received:
                head, _, body = received.partition(b"\r\n\r\n")
                length = int(next((l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")), b"0"))
                if len(body) >= length:
                    break
    except socket.timeout:
        raise AssertionError(f"no answer within {sock.gettimeout()} s: {received[:300]!r}") from None
    except ConnectionResetError:
        pass
    at = time.monotonic()
    assert received.startswith(b"HTTP/1.1 "), received[:300]
    head, _, body = received.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body), at


def test_a_body_that_stops_arriving_is_cut_off(servers: Servers) -> None:
    """The issue's repro: 1 of 1,000 announced bytes, then nothing. Each such connection is
    answered 408 and closed once the idle timeout has passed since its head, while the others
    are served."""
    server = servers.start(None, "--idle-timeout", "2")
    stalled = []
    for _ in range(20):
        sock = connect(server)
        sock.sendall(head(server, 1000) + b"{")
        stalled.append(sock)
    sent = time.monotonic()
    assert server.ok("GET", "/handoffs")["count"] == 0, "others are served meanwhile"
    for sock in stalled:
        status, body, at = answer(sock)
        assert status == 408, body
        assert [p["field"] for p in body["error"]["problems"]] == ["body"], body
        assert at - sent < 15, "answered long after the deadline"
        sock.close()
    assert server.ok("GET", "/handoffs")["count"] == 0


def test_a_body_that_arrives_slowly_but_in_time_is_taken(servers: Servers) -> None:
    server = servers.start(None, "--idle-timeout", "3")
    body = json.dumps({"task_id": "slow", "goal": "sent in pieces", "to_agent": "b"}).encode()
    with connect(server) as sock:
        sock.sendall(head(server, len(body)))
        for i in range(0, len(body), 16):
            time.sleep(0.05)
            sock.sendall(body[i : i + 16])
        status, reply, _ = answer(sock)
    assert status == 201, reply


def test_an_announced_length_over_the_limit_is_refused_at_once(server: Server) -> None:
    """`Content-Length: 10^12`, no body: 413 at once, naming the limit; nothing is awaited."""
    for length in (10**12, MAX_BODY_BYTES + 1):
        with connect(server, timeout=10) as sock:
            sock.sendall(head(server, length))
            status, body, _ = answer(sock)
        assert status == 413, body
        error = body["error"]
        assert [p["field"] for p in error["problems"]] == ["body"], error
        assert str(MAX_BODY_BYTES) in error["message"], error
    # A client that asks first (`Expect: 100-continue`, as curl does for a large body) is told
    # before it sends anything.
    with connect(server, timeout=10) as sock:
        sock.sendall(head(server, 10**12, extra="Expect: 100-continue\r\n"))
        status, body, _ = answer(sock)
    assert status == 413, body
    assert server.ok("GET", "/handoffs")["count"] == 0


def test_a_chunked_body_over_the_limit_is_refused(server: Server) -> None:
    with connect(server, timeout=60) as sock:
        sock.sendall(
            f"POST /api/v1/handoffs HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        chunk = b"a" * (1 << 20)
        try:
            for _ in range(MAX_BODY_BYTES // len(chunk) + 2):
                sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        status, body, _ = answer(sock)
    assert status == 413, body
    assert str(MAX_BODY_BYTES) in body["error"]["message"], body


def peak_memory_kib(server: Server) -> int:
    with open(f"/proc/{server.process.pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_the_bodies_buffered_at_once_are_bounded(servers: Servers) -> None:
    """Six bodies of 60 MiB at once (each refused in the end: its goal is too long). Buffered
    all at once they took 1.6 GB; the server holds two of the largest at a time (0.65 GB), and
    the others wait their turn (the idle timeout is long here, so that a slow machine's turns
    are waited for rather than answered 503)."""
    server = servers.start(None, "--idle-timeout", "300")
    payload = b'{"task_id": "big", "goal": "' + b"a" * (60 << 20) + b'"}'
    statuses: list[int] = []

    def post() -> None:
        with connect(server, timeout=120) as sock:
            sock.sendall(head(server, len(payload)) + payload)
            statuses.append(answer(sock)[0])

    threads = [threading.Thread(target=post) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(180)
    assert statuses == [400] * 6, statuses
    peak = peak_memory_kib(server)
    assert peak < 1_200_000, f"the server's memory peaked at {peak // 1024} MiB"
