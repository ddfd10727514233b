"""One trace across a chain of agents in three processes (issue #49, item 7): triage hands over
to billing, billing to refunds, each in a process of its own on one SQLite store, each exporting
its spans over OTLP/HTTP to a receiver in this test. Every span arrives with the same trace id,
and each successor's spans hang under the span that created its handoff."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import handoff_core as hc

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

#: One agent of the chain, as its own process: `python -c HOP <agent> <db>`. It exports with the
#: OTLP/HTTP exporter, which reads the receiver's address from OTEL_EXPORTER_OTLP_ENDPOINT.
HOP = """
import sys

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import handoff_core as hc
from handoff_core import tracing

agent, db = sys.argv[1], sys.argv[2]
provider = TracerProvider(resource=Resource.create({"service.name": agent}))
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)
store = tracing.instrument(hc.open(db))

if agent == "triage":
    with trace.get_tracer("chain").start_as_current_span("triage ticket-7"):
        store.create("ticket-7", "Refund the double charge", from_agent="triage", to_agent="billing")
elif agent == "billing":
    claim = store.claim_next("billing")
    with store.lease(claim) as lease:
        store.create("ticket-7", "Refund order 1042 to the card", from_agent="billing", to_agent="refunds")
        lease.outcome = "handed to refunds"
else:
    claim = store.claim_next("refunds")
    with store.lease(claim) as lease:
        lease.progress({"refunded": 1, "of": 1})
        lease.outcome = "refunded"
provider.shutdown()
"""


class Receiver(BaseHTTPRequestHandler):
    """OTLP/HTTP's trace endpoint: takes each protobuf export and keeps its spans."""

    received: list[dict[str, Any]]

    def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if self.path != "/v1/traces":
            self.send_error(404)
            return
        request: Any = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            service = next(
                a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"
            )
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.received.append(
                        {
                            "service": service,
                            "name": span.name,
                            "trace": span.trace_id.hex(),
                            "span": span.span_id.hex(),
                            "parent": span.parent_span_id.hex() or None,
                            "attributes": {a.key: a.value for a in span.attributes},
                        }
                    )
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """An OTLP/HTTP receiver on a free local port: its endpoint, and the spans it received."""
    received: list[dict[str, Any]] = []
    handler = type("Handler", (Receiver,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def test_three_agents_in_three_processes_are_one_trace(receiver: tuple[str, list[dict[str, Any]]], tmp_path: Path) -> None:
    endpoint, received = receiver
    db = tmp_path / "handoff.db"
    hc.open(db).close()
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
    for agent in ("triage", "billing", "refunds"):
        subprocess.run([sys.executable, "-c", HOP, agent, str(db)], env=env, check=True, timeout=120)

    spans = {(s["service"], s["name"]): s for s in received}
    assert set(spans) == {
        ("triage", "triage ticket-7"),
        ("triage", "handoff.create triage"),
        ("billing", "handoff.claim billing"),
        ("billing", "handoff.work billing"),
        ("billing", "handoff.create billing"),
        ("refunds", "handoff.claim refunds"),
        ("refunds", "handoff.work refunds"),
    }
    assert len(received) == len(spans)
    assert len({s["trace"] for s in received}) == 1, "one trace id across the three processes"

    def parent(service: str, name: str) -> Any:
        return spans[(service, name)]["parent"]

    def span_id(service: str, name: str) -> Any:
        return spans[(service, name)]["span"]

    assert parent("triage", "triage ticket-7") is None
    assert parent("triage", "handoff.create triage") == span_id("triage", "triage ticket-7")
    # Billing's claim and work hang under the span that created its handoff, in another process.
    created_for_billing = span_id("triage", "handoff.create triage")
    assert parent("billing", "handoff.claim billing") == created_for_billing
    assert parent("billing", "handoff.work billing") == created_for_billing
    assert parent("billing", "handoff.create billing") == span_id("billing", "handoff.work billing")
    created_for_refunds = span_id("billing", "handoff.create billing")
    assert parent("refunds", "handoff.claim refunds") == created_for_refunds
    assert parent("refunds", "handoff.work refunds") == created_for_refunds

    with hc.open(db) as store:
        (refund,) = store.list(to_agent="refunds")
        assert (refund.status, refund.progress) == ("completed", {"refunded": 1, "of": 1})
        assert refund.traceparent is not None and refund.traceparent[3:35] == received[0]["trace"]
