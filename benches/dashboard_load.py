"""The dashboard's first load on a large store (issue #20: under 1 s with 100,000 handoffs),
beside the cheapest request the same server answers, in one run.

    cargo build --release -p handoff-cli
    python benches/dashboard_load.py [--handoffs 100000] [--bin target/release/handoff]

The store is the dashboard test's demo store plus ``--handoffs`` more records (pending,
spread over four agents). For each page: the first load right after the server starts (cold:
nothing cached by the server), then the median of 20 loads; beside them, the median of 20
``GET /api/v1/capabilities`` (the HTTP floor: no store read).
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "handoff-cli" / "tests" / "dashboard"))

from demo_store import build  # noqa: E402

PAGES = ["/?refresh=0", "/tasks?refresh=0", "/bundles?refresh=0"]


def timed(conn: http.client.HTTPConnection, path: str) -> float:
    start = time.perf_counter()
    conn.request("GET", path)
    answer = conn.getresponse()
    answer.read()
    assert answer.status == 200, (path, answer.status)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--handoffs", type=int, default=100_000)
    parser.add_argument("--bin", default=str(ROOT / "target" / "release" / "handoff"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "big.db"
        start = time.perf_counter()
        build(str(db), args.handoffs)
        print(f"store: {args.handoffs:,} handoffs more than the demo, built in {time.perf_counter() - start:.1f} s")
        server = subprocess.Popen([args.bin, "--db", str(db), "serve", "--bind", "127.0.0.1:0"],
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            url = server.stdout.readline().split("listening on http://")[1].split("/")[0]
            host, port = url.split(":")
            conn = http.client.HTTPConnection(host, int(port), timeout=60)
            results: dict[str, dict[str, float]] = {}
            for page in PAGES:
                first = timed(conn, page)
                warm = statistics.median(timed(conn, page) for _ in range(20))
                results[page] = {"first_ms": first * 1e3, "median_ms": warm * 1e3}
            floor = statistics.median(timed(conn, "/api/v1/capabilities") for _ in range(20))
        finally:
            server.terminate()
            server.wait(30)
    for page, r in results.items():
        print(f"{page:22} first load {r['first_ms']:7.1f} ms   then {r['median_ms']:7.1f} ms "
              f"({r['median_ms'] / (floor * 1e3):.0f}x the floor)")
    print(f"{'API floor':22} {floor * 1e3:7.2f} ms (GET /api/v1/capabilities)")
    if args.json:
        args.json.write_text(json.dumps({"pages": results, "floor_ms": floor * 1e3}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
