"""`handoff serve`'s operator routes (issue 49): `/metrics` in the Prometheus text format, read
by `prometheus_client`'s own parser, counting what happened; `/healthz` and `/readyz`; who may
read `/metrics`; and one log line per request on stderr."""

from __future__ import annotations

import json
import sqlite3
import time
import urllib.request
import uuid
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from conftest import Server, Servers

TOKEN = "metrics-token-0123456789"


def families(server: Server, **kw: Any) -> dict[str, Any]:
    reply = server.get(server.url + "/metrics", **kw)
    assert reply.status == 200, reply
    assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4"), reply.headers
    return {family.name: family for family in text_string_to_metric_families(reply.text)}


def value(family: Any, sample: str, **labels: str) -> float:
    found = [s.value for s in family.samples if s.name == sample and s.labels == labels]
    assert len(found) == 1, (sample, labels, family.samples)
    return found[0]


def test_metrics_count_ten_creates_seven_completes_and_two_failures(servers: Servers) -> None:
    server = servers.start(token=TOKEN)
    task = "metrics-" + uuid.uuid4().hex[:8]
    ids = []
    for i in range(10):
        body = {"task_id": task, "goal": "count me", "to_agent": "worker", "max_attempts": 1}
        reply = server.post("/handoffs", body)
        assert reply.status == 201, reply
        ids.append(reply.json["handoff"]["id"])
    claims = [server.ok("POST", f"/handoffs/{id}/claim", {"agent": "worker"}) for id in ids[:9]]
    for claim in claims[:7]:
        server.ok("POST", f"/handoffs/{claim['handoff_id']}/complete",
                  {"token": claim["token"], "claim_secret": claim["claim_secret"], "outcome": "done"})
    for claim in claims[7:]:
        server.ok("POST", f"/handoffs/{claim['handoff_id']}/fail",
                  {"token": claim["token"], "claim_secret": claim["claim_secret"], "error": "boom"})

    m = families(server)
    # prometheus_client names a counter's family without its `_total`.
    events = m["handoff_events"]
    assert events.type == "counter"
    assert value(events, "handoff_events_total", kind="created") == 10
    assert value(events, "handoff_events_total", kind="claimed") == 9
    assert value(events, "handoff_events_total", kind="completed") == 7
    assert value(events, "handoff_events_total", kind="failed") == 2
    assert value(events, "handoff_events_total", kind="lease_expired") == 0

    handoffs = m["handoff_handoffs"]
    assert handoffs.type == "gauge"
    assert value(handoffs, "handoff_handoffs", status="completed", agent="worker") == 7
    assert value(handoffs, "handoff_handoffs", status="failed", agent="worker") == 2
    assert value(handoffs, "handoff_handoffs", status="pending", agent="worker") == 1

    for name in ("handoff_claim_wait_seconds", "handoff_work_seconds"):
        histogram = m[name]
        assert histogram.type == "histogram"
        assert value(histogram, name + "_count") == 9
        assert value(histogram, name + "_bucket", le="+Inf") == 9
        buckets = [s.value for s in histogram.samples if s.name == name + "_bucket"]
        assert buckets == sorted(buckets), "cumulative"
        # A local round trip: every wait and every piece of work took under a minute.
        assert value(histogram, name + "_bucket", le="60") == 9
    assert value(m["handoff_open_escalations"], "handoff_open_escalations") == 0
    assert m["handoff_task_steps"].type == "gauge"

    # The same numbers as the catalog operation over the API: one computation.
    api = server.ok("GET", "/metrics")["metrics"]
    created = next(e["count"] for e in api["events"] if e["kind"] == "created")
    assert created == 10


def test_metrics_need_the_operators_token_and_probes_need_none(servers: Servers) -> None:
    server = servers.start(token=TOKEN)
    assert server.get(server.url + "/metrics", auth=False).status == 401
    assert server.get(server.url + "/metrics").status == 200
    for path, text in (("/healthz", "ok"), ("/readyz", "ready")):
        reply = server.get(server.url + path, auth=False)
        assert (reply.status, reply.text.strip()) == (200, text)
    assert server.post(server.url + "/healthz", auth=False).status == 405


def test_readyz_says_when_the_schema_is_not_this_builds(servers: Servers) -> None:
    server = servers.start()
    assert server.get(server.url + "/readyz").status == 200
    # Another build migrated the file meanwhile (here: its version moved by hand).
    with sqlite3.connect(server.db) as db:
        (version,) = db.execute("PRAGMA user_version").fetchone()
        db.execute(f"PRAGMA user_version = {version + 1}")
    reply = server.get(server.url + "/readyz")
    assert reply.status == 503, reply
    assert f"schema is at version {version + 1}" in reply.text, reply
    assert server.get(server.url + "/healthz").text.strip() == "ok", "alive all the same"


def test_every_request_is_logged_as_json_without_its_query(tmp_path: Any) -> None:
    import conftest

    server = conftest.start_server(tmp_path / "logged.db", "--log-format", "json", log_dir=tmp_path)
    try:
        server.get(server.url + "/healthz?token=do-not-log-me")
        server.get("/handoffs/nope")
        deadline = time.monotonic() + 10
        lines: list[dict[str, Any]] = []
        while time.monotonic() < deadline and len(lines) < 2:
            lines = [json.loads(line) for line in server.stderr().splitlines() if '"request"' in line]
            time.sleep(0.05)
    finally:
        server.stop()
    assert "do-not-log-me" not in server.stderr()
    first, second = lines[:2]
    assert first["fields"]["path"] == "/healthz" and first["fields"]["status"] == 200, first
    assert first["fields"]["method"] == "GET" and first["fields"]["duration_ms"] >= 0
    assert second["fields"]["path"] == "/api/v1/handoffs/nope", second
    assert second["fields"]["status"] == 404, second
    assert second["target"] == "handoff::http"
