"""`handoff serve` from the outside: the real binary on a temporary store, driven over HTTP with
the standard library only (``urllib.request``).

The binary is ``$HANDOFF_BIN``, or ``target/debug/handoff`` under the repository root (build it
with ``cargo build -p handoff-cli``). Each test that asks for ``server`` gets a server of its
own on a fresh SQLite file, listening on a free loopback port (``--bind 127.0.0.1:0``, the port
read from the one line the server prints), stopped (terminate, wait) after the test. A server
that died during the test, or wrote a panic to stderr, fails the test.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional, Union

import pytest

REPO = Path(__file__).resolve().parents[3]
BIN = Path(os.environ.get("HANDOFF_BIN") or REPO / "target" / "debug" / "handoff")
if not BIN.is_absolute():
    BIN = REPO / BIN

LISTENING = re.compile(r"^handoff serve: listening on (http://127\.0\.0\.1:\d+)/")
START_TIMEOUT = 30.0

# What the server may be told from the environment: nothing here may leak into a test's server.
SCRUBBED_ENV = (
    "HANDOFF_DB",
    "HANDOFF_SERVE_TOKEN",
    "HANDOFF_SERVE_ALLOW_HOST",
    "HANDOFF_LOCK_PATIENCE",
    "HANDOFF_SYNCHRONOUS",
    "HANDOFF_READ_ONLY",
    "HANDOFF_MAX_HANDOFFS",
    "HANDOFF_MAX_REVISITS",
    "HANDOFF_POLICY",
    "HANDOFF_AGENTS",
    "HANDOFF_CREDENTIALS",
    "HANDOFF_AGENT_TOKEN",
)


def server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    # Keep proxies away from loopback (urllib and the binary alike).
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


@dataclass
class Reply:
    """One HTTP answer: status, headers, raw body and (when it is JSON) the parsed body."""

    status: int
    headers: Any
    raw: bytes
    json: Any = None

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", "replace")

    def error(self) -> dict[str, Any]:
        assert isinstance(self.json, dict) and "error" in self.json, self.text[:2000]
        return self.json["error"]

    def problems(self) -> set[tuple[str, str]]:
        return {(p["field"], p["rule"]) for p in self.error().get("problems", [])}

    def __repr__(self) -> str:
        return f"Reply({self.status}, {self.text[:500]!r})"


# No proxy, even if the environment names one: every request goes to loopback.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass
class Server:
    """A running `handoff serve`."""

    db: Union[Path, str]
    process: subprocess.Popen[bytes]
    url: str
    token: Optional[str] = None
    stderr_path: Optional[Path] = None

    @property
    def api(self) -> str:
        return self.url + "/api/v1"

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: Optional[bytes] = None,
        headers: Optional[dict[str, str]] = None,
        auth: bool = True,
        timeout: float = 60.0,
    ) -> Reply:
        """`path` under /api/v1 (or absolute when it starts with `http`); `body` goes as JSON,
        `raw` as given. The server's token is sent unless `auth` is false."""
        url = path if path.startswith("http") else self.api + path
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        request = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if auth and self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with _OPENER.open(request, timeout=timeout) as response:
                status, hdrs, payload = response.status, response.headers, response.read()
        except urllib.error.HTTPError as e:
            status, hdrs, payload = e.code, e.headers, e.read()
        reply = Reply(status, hdrs, payload)
        if (hdrs.get("Content-Type") or "").startswith("application/json"):
            reply.json = json.loads(payload)
        return reply

    def get(self, path: str, **kw: Any) -> Reply:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Reply:
        return self.request("POST", path, body, **kw)

    def ok(self, method: str, path: str, body: Any = None, status: tuple[int, ...] = (200, 201)) -> Any:
        """The JSON answer of a request that must succeed."""
        reply = self.request(method, path, body)
        assert reply.status in status, f"{method} {path}: {reply!r}"
        return reply.json

    def alive(self) -> bool:
        return self.process.poll() is None

    def stderr(self) -> str:
        if self.stderr_path is None or not self.stderr_path.exists():
            return ""
        return self.stderr_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


def start_server(
    db: Union[Path, str], *args: str, token: Optional[str] = None, log_dir: Optional[Path] = None
) -> Server:
    """Starts `handoff --db DB serve --bind 127.0.0.1:0 [args]` and waits for its line. `db` is a
    store file, or a URL (`postgres://…`, with `log_dir` given) that runs in `log_dir`."""
    home = db.parent if isinstance(db, Path) else log_dir
    name = db.stem if isinstance(db, Path) else "url"
    assert home is not None, "a store URL needs a log_dir to run in"
    if not BIN.exists():
        pytest.fail(f"no handoff binary at {BIN}: build it (cargo build -p handoff-cli) or set HANDOFF_BIN")
    command = [str(BIN), "--db", str(db), "serve", "--bind", "127.0.0.1:0", *args]
    if token is not None:
        command += ["--token", token]
    stderr_path = (log_dir or home) / f"serve-{name}-{os.getpid()}-{threading.get_ident()}.stderr"
    stderr_file = open(stderr_path, "wb")
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr_file,
        env=server_env(),
        cwd=home,
    )
    stderr_file.close()
    line: list[bytes] = []
    reader = threading.Thread(target=lambda: line.append(process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(START_TIMEOUT)
    first = line[0].decode(errors="replace") if line else ""
    match = LISTENING.match(first)
    if not match:
        process.kill()
        process.wait()
        raise AssertionError(
            f"`{' '.join(command)}` did not say where it listens within {START_TIMEOUT}s: "
            f"stdout {first!r}, exit {process.returncode}, stderr {stderr_path.read_text(errors='replace')[:2000]!r}"
        )
    return Server(db=db, process=process, url=match.group(1), token=token, stderr_path=stderr_path)


class Servers:
    """Starts servers for one test and stops them all after it."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[Server] = []

    def start(self, db: Union[Path, str, None] = None, *args: str, token: Optional[str] = None) -> Server:
        db = db or self.tmp_path / f"store{len(self.started)}.db"
        server = start_server(db, *args, token=token, log_dir=self.tmp_path)
        self.started.append(server)
        return server

    def close(self) -> list[str]:
        """Stops every server; what went wrong with them (died early, panicked)."""
        trouble = []
        for server in self.started:
            if not server.alive():
                trouble.append(f"the server on {server.url} exited early ({server.process.returncode}): {server.stderr()[-2000:]}")
            server.stop()
            if "panicked" in server.stderr():
                trouble.append(f"the server on {server.url} panicked: {server.stderr()[-2000:]}")
        return trouble


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    started = Servers(tmp_path)
    try:
        yield started
    finally:
        trouble = started.close()
    assert not trouble, "\n".join(trouble)


@pytest.fixture
def server(servers: Servers) -> Server:
    """A server of this test's own, on a fresh store file."""
    return servers.start()
