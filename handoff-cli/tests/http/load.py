"""A bounded load test of `handoff serve` on loopback, beside the same work done in-process.

    cargo build --release -p handoff-cli
    target/py-venv/bin/python handoff-cli/tests/http/load.py [--seconds 30] [--connections 8] [--json FILE]

What it does, in a fresh temporary folder:

1. HTTP: starts `handoff --db http.db serve --bind 127.0.0.1:0` (the binary: --bin, else
   $HANDOFF_BIN, else target/release/handoff, else target/debug/handoff) and runs
   `--connections` threads for `--seconds`, each with one keep-alive `http.client.HTTPConnection`,
   each iteration one lifecycle of 3 requests: create (POST /api/v1/handoffs, a ~1.5 KB record),
   claim by id (POST /api/v1/handoffs/{id}/claim), complete (POST .../complete with the claim's
   token and secret). Every answer is read and checked (status and the record's status).
2. In-process: the same lifecycle through `handoff_core.open(inproc.db)` (one store shared by the
   threads, a separate fresh file in the same folder, the same `synchronous` as the server's)
   from as many threads for as long.

The two sides take turns (`--rounds`, 3 by default: seconds/3 each, HTTP first), so that whatever
else the machine is doing falls on both alike; each warms up first (`--warmup` lifecycles per
worker, not counted).

It reports requests/s, lifecycles/s, p50/p99 latency per request kind, errors (must be 0), and
the ratio of the time a claim + complete takes over HTTP to the time it takes in-process (issue
20's target: at most 1.5). Latencies are measured in the client, so the HTTP side includes
Python's own HTTP and JSON work, as any Python caller of the API pays it. The server and the
clients share this machine's cores.

Exit status: 0 when there were no errors (and, with --check-ratio X, the ratio is at most X).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

REPO = Path(__file__).resolve().parents[3]
LISTENING = re.compile(r"^handoff serve: listening on http://(127\.0\.0\.1):(\d+)/")


def line(topic: str, i: int) -> str:
    return f"{topic} {i}: checked the module boundaries and wrote down what the next agent needs"


# The record of benches/python_lifecycle.py: ~1.5 KB, as an agent hands work over.
RECORD: dict[str, Any] = dict(
    goal="Migrate the billing service from the legacy ORM to sqlx",
    from_agent="claude",
    to_agent="gemini",
    reason="context_limit_85",
    context_pct=85,
    progress="Half of the repositories are ported; invoices and refunds remain. Tests pass.",
    completed=[line("ported", i) for i in range(4)],
    pending=[line("port", i) for i in range(4)],
    decisions=[line("decided", i) for i in range(3)],
    assumptions=["the schema is frozen until the release"],
    warnings=["refunds use a different rounding mode"],
    files=["src/billing/invoices.rs", "src/billing/refunds.rs", "src/db.rs"],
    instructions="Port invoices first; run the billing tests after each repository.",
)
AGENT = "gemini"
KINDS = ("create", "claim", "complete")


@dataclass
class Tally:
    """One worker's measurements (merged at the end)."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    claim_complete: list[float] = field(default_factory=list)
    lifecycles: int = 0
    requests: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)

    def error(self, what: str) -> None:
        self.errors += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(what[:500])

    def merge(self, other: "Tally") -> None:
        for k in KINDS:
            self.latencies[k] += other.latencies[k]
        self.claim_complete += other.claim_complete
        self.lifecycles += other.lifecycles
        self.requests += other.requests
        self.errors += other.errors
        self.error_samples += other.error_samples[: max(0, 5 - len(self.error_samples))]


def percentile(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(p / 100 * len(xs) + 0.5)) - 1))]


def run_threads(n: int, seconds: float, work: Callable[[int, Tally, Callable[[], bool]], None]) -> tuple[Tally, float]:
    """`n` threads running `work(worker, tally, going)` together for `seconds`."""
    tallies = [Tally() for _ in range(n)]
    barrier = threading.Barrier(n + 1)
    deadline = [0.0]

    def going() -> bool:
        return time.perf_counter() < deadline[0]

    def body(i: int) -> None:
        barrier.wait()
        try:
            work(i, tallies[i], going)
        except Exception as e:  # a worker that dies is an error, not a hang
            tallies[i].error(f"worker {i} stopped: {e!r}")

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    deadline[0] = time.perf_counter() + seconds
    started = time.perf_counter()
    barrier.wait()
    for t in threads:
        t.join(seconds + 120)
    elapsed = time.perf_counter() - started
    total = Tally()
    for tally in tallies:
        total.merge(tally)
    if any(t.is_alive() for t in threads):
        total.error("a worker did not stop")
    return total, elapsed


# --- HTTP -------------------------------------------------------------------------------------


class Server:
    def __init__(self, binary: Path, db: Path, synchronous: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HANDOFF_")}
        self.stderr = open(db.with_suffix(".stderr"), "wb")
        self.process = subprocess.Popen(
            [str(binary), "--db", str(db), "--synchronous", synchronous, "serve", "--bind", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
        )
        first = self.process.stdout.readline().decode(errors="replace")  # type: ignore[union-attr]
        match = LISTENING.match(first)
        if not match:
            self.stop()
            raise SystemExit(f"the server did not start: {first!r} {db.with_suffix('.stderr').read_text()[:2000]}")
        self.host, self.port = match.group(1), int(match.group(2))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # its graceful shutdown
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.terminate()
                self.process.wait(timeout=10)
        self.stderr.close()


class Client:
    """One keep-alive connection."""

    def __init__(self, host: str, port: int) -> None:
        self.conn = http.client.HTTPConnection(host, port, timeout=60)
        self.headers = {"Content-Type": "application/json", "Connection": "keep-alive"}

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        self.conn.request("POST", "/api/v1" + path, json.dumps(body), self.headers)
        response = self.conn.getresponse()
        payload = response.read()
        if response.getheader("Connection", "").lower() == "close":
            self.conn.close()
        return response.status, json.loads(payload) if payload else None

    def close(self) -> None:
        self.conn.close()


def http_lifecycles(server: Server, prefix: str, count: Optional[int] = None) -> Callable[[int, Tally, Callable[[], bool]], None]:
    def work(worker: int, tally: Tally, going: Callable[[], bool]) -> None:
        client = Client(server.host, server.port)
        clock = time.perf_counter
        i = 0
        try:
            while (count is None and going()) or (count is not None and i < count):
                i += 1
                body = dict(RECORD, task_id=f"{prefix}-{worker}-{i:07}")
                t0 = clock()
                status, answer = client.post("/handoffs", body)
                t1 = clock()
                tally.requests += 1
                if status != 201:
                    tally.error(f"create: {status} {answer}")
                    continue
                hid = answer["handoff"]["id"]
                status, claim = client.post(f"/handoffs/{hid}/claim", {"agent": AGENT, "lease_seconds": 300})
                t2 = clock()
                tally.requests += 1
                if status != 200 or claim.get("handoff_id") != hid:
                    tally.error(f"claim: {status} {claim}")
                    continue
                status, done = client.post(
                    f"/handoffs/{hid}/complete",
                    {"token": claim["token"], "claim_secret": claim["claim_secret"], "outcome": "done"},
                )
                t3 = clock()
                tally.requests += 1
                if status != 200 or done["handoff"]["status"] != "completed":
                    tally.error(f"complete: {status} {done}")
                    continue
                tally.latencies["create"].append(t1 - t0)
                tally.latencies["claim"].append(t2 - t1)
                tally.latencies["complete"].append(t3 - t2)
                tally.claim_complete.append(t3 - t1)
                tally.lifecycles += 1
        finally:
            client.close()

    return work


# --- in-process -------------------------------------------------------------------------------


def inprocess_lifecycles(store: Any, prefix: str, count: Optional[int] = None) -> Callable[[int, Tally, Callable[[], bool]], None]:
    def work(worker: int, tally: Tally, going: Callable[[], bool]) -> None:
        create, claim, complete = store.create, store.claim, store.complete
        record = {k: v for k, v in RECORD.items()}
        clock = time.perf_counter
        i = 0
        while (count is None and going()) or (count is not None and i < count):
            i += 1
            try:
                t0 = clock()
                h = create(f"{prefix}-{worker}-{i:07}", **record)
                t1 = clock()
                c = claim(h.id, AGENT, 300)
                t2 = clock()
                done = complete(c, "done")
                t3 = clock()
            except Exception as e:
                tally.error(repr(e))
                continue
            tally.requests += 3
            if done.status != "completed":
                tally.error(f"complete: {done.status}")
                continue
            tally.latencies["create"].append(t1 - t0)
            tally.latencies["claim"].append(t2 - t1)
            tally.latencies["complete"].append(t3 - t2)
            tally.claim_complete.append(t3 - t1)
            tally.lifecycles += 1

    return work


# --- the report -------------------------------------------------------------------------------


def summary(name: str, tally: Tally, elapsed: float) -> dict[str, Any]:
    ms = lambda s: round(s * 1000, 3)  # noqa: E731
    return {
        "name": name,
        "seconds": round(elapsed, 2),
        "requests": tally.requests,
        "lifecycles": tally.lifecycles,
        "requests_per_second": round(tally.requests / elapsed, 1),
        "lifecycles_per_second": round(tally.lifecycles / elapsed, 1),
        "errors": tally.errors,
        "error_samples": tally.error_samples,
        "latency_ms": {
            k: {"p50": ms(percentile(v, 50)), "p99": ms(percentile(v, 99)), "mean": ms(statistics.fmean(v)) if v else None}
            for k, v in tally.latencies.items()
        },
        "claim_complete_ms": {
            "p50": ms(percentile(tally.claim_complete, 50)),
            "p99": ms(percentile(tally.claim_complete, 99)),
            "mean": ms(statistics.fmean(tally.claim_complete)) if tally.claim_complete else None,
        },
    }


def show(s: dict[str, Any]) -> None:
    print(f"\n{s['name']}: {s['seconds']} s, {s['requests']} requests, {s['lifecycles']} lifecycles, {s['errors']} errors")
    print(f"  {s['requests_per_second']:>10} requests/s   {s['lifecycles_per_second']:>8} lifecycles/s")
    print(f"  {'':10} {'p50 ms':>9} {'p99 ms':>9} {'mean ms':>9}")
    for k, v in [*s["latency_ms"].items(), ("claim+complete", s["claim_complete_ms"])]:
        print(f"  {k:<14} {v['p50']:>9} {v['p99']:>9} {v['mean']:>9}")
    for e in s["error_samples"]:
        print(f"  error: {e}")


def default_binary() -> Path:
    if os.environ.get("HANDOFF_BIN"):
        return Path(os.environ["HANDOFF_BIN"])
    release = REPO / "target" / "release" / "handoff"
    return release if release.exists() else REPO / "target" / "debug" / "handoff"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0, help="how long each side runs (default 30)")
    parser.add_argument("--connections", type=int, default=8, help="HTTP connections, and in-process threads (default 8)")
    parser.add_argument("--bin", type=Path, default=None, help="the handoff binary (default: $HANDOFF_BIN, target/release/handoff, target/debug/handoff)")
    parser.add_argument("--synchronous", choices=("full", "normal"), default="full", help="SQLite durability on both sides (default full, the CLI's default)")
    parser.add_argument("--warmup", type=int, default=20, help="lifecycles per worker before measuring (default 20)")
    parser.add_argument("--rounds", type=int, default=3, help="the sides take turns this many times, seconds/rounds each (default 3)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures to this file")
    parser.add_argument("--check-ratio", type=float, default=None, help="exit 1 when the claim+complete ratio is above this")
    args = parser.parse_args()
    if args.seconds <= 0 or args.seconds > 600 or not 1 <= args.connections <= 64 or not 1 <= args.rounds <= 100:
        parser.error("--seconds must be in (0, 600], --connections in [1, 64], --rounds in [1, 100]")
    binary = (args.bin or default_binary()).resolve()
    if not binary.exists():
        parser.error(f"no binary at {binary}: cargo build --release -p handoff-cli")

    import handoff_core as hc

    with tempfile.TemporaryDirectory(prefix="handoff-load-") as tmp:
        tmpdir = Path(tmp)
        print(f"binary {binary}\nstores in {tmpdir} (SQLite, synchronous={args.synchronous}); "
              f"{args.connections} connections/threads, {args.seconds:g} s each, {os.cpu_count()} cores")

        server = Server(binary, tmpdir / "http.db", args.synchronous)
        store = hc.open(tmpdir / "inproc.db", synchronous=args.synchronous)
        http_tally, local_tally = Tally(), Tally()
        http_elapsed = local_elapsed = 0.0
        try:
            run_threads(args.connections, 600, http_lifecycles(server, "warm", args.warmup))
            run_threads(args.connections, 600, inprocess_lifecycles(store, "warm", args.warmup))
            # The two sides take turns, so that whatever else the machine does falls on both.
            block = args.seconds / args.rounds
            for r in range(args.rounds):
                tally, elapsed = run_threads(args.connections, block, http_lifecycles(server, f"load{r}"))
                http_tally.merge(tally)
                http_elapsed += elapsed
                tally, elapsed = run_threads(args.connections, block, inprocess_lifecycles(store, f"load{r}"))
                local_tally.merge(tally)
                local_elapsed += elapsed
            # The store agrees: every lifecycle counted is a completed record.
            conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
            conn.request("GET", "/api/v1/stats")
            stats = json.loads(conn.getresponse().read())
            conn.close()
            completed = sum(p["completed"] for p in stats["paths"])
            expected = http_tally.lifecycles + args.warmup * args.connections
            if completed != expected:
                http_tally.error(f"the store has {completed} completed handoffs, the clients counted {expected}")
            alive = server.process.poll() is None
        finally:
            server.stop()
            store.close()
        if not alive:
            http_tally.error("the server died")

    http_s = summary(f"HTTP ({args.connections} keep-alive connections)", http_tally, http_elapsed)
    local_s = summary(f"in-process handoff_core ({args.connections} threads, one store)", local_tally, local_elapsed)
    show(http_s)
    show(local_s)
    ratio_mean = http_s["claim_complete_ms"]["mean"] / local_s["claim_complete_ms"]["mean"]
    ratio_p50 = http_s["claim_complete_ms"]["p50"] / local_s["claim_complete_ms"]["p50"]
    throughput = local_s["lifecycles_per_second"] / http_s["lifecycles_per_second"]
    print(f"\nclaim+complete, HTTP / in-process: {ratio_mean:.2f}x (mean), {ratio_p50:.2f}x (p50)  [target <= 1.5x]")
    print(f"lifecycles/s, in-process / HTTP: {throughput:.2f}x")
    result = {
        "binary": str(binary),
        "cores": os.cpu_count(),
        "connections": args.connections,
        "seconds": args.seconds,
        "rounds": args.rounds,
        "synchronous": args.synchronous,
        "http": http_s,
        "in_process": local_s,
        "claim_complete_ratio_mean": round(ratio_mean, 3),
        "claim_complete_ratio_p50": round(ratio_p50, 3),
        "throughput_ratio_in_process_over_http": round(throughput, 3),
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    errors = http_tally.errors + local_tally.errors
    if errors:
        print(f"\nFAILED: {errors} errors")
        return 1
    if args.check_ratio is not None and ratio_mean > args.check_ratio:
        print(f"\nFAILED: the ratio {ratio_mean:.2f} is above {args.check_ratio}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
