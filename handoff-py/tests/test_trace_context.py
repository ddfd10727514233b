"""The creator's W3C trace context on the record, and the successor's spans under it (in one
process; tests/test_one_trace.py follows a chain across three)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

import handoff_core as hc
from handoff_core import tracing

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def _traceparent(span: Any) -> str:
    context = span.get_span_context()
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def test_create_takes_the_current_span_unless_given_one(spans: Any) -> None:
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    store = hc.Store.memory()
    assert store.create("t", "no span").traceparent is None
    remote = TraceContextTextMapPropagator().extract({"traceparent": TRACEPARENT, "tracestate": "vendor=abc"})
    with trace.get_tracer("test").start_as_current_span("triage", context=remote) as span:
        ambient = store.create("t", "in a span")
        given = store.create("t", "given", traceparent="00-" + "1" * 32 + "-" + "2" * 16 + "-00")
        # A tracestate alone is the caller's too, and the core refuses it without a traceparent.
        with pytest.raises(hc.ValidationError, match="tracestate"):
            store.create("t", "given state", tracestate="mine=1")
    assert ambient.traceparent == _traceparent(span)
    assert ambient.tracestate == "vendor=abc"
    assert (given.traceparent, given.tracestate) == ("00-" + "1" * 32 + "-" + "2" * 16 + "-00", None)
    with pytest.raises(hc.ValidationError, match="traceparent"):
        store.create("t", "bad", traceparent="00-NOT-HEX")


def test_aio_create_takes_the_current_span_too(spans: Any) -> None:
    from opentelemetry import trace

    async def scenario() -> tuple[str, Any]:
        store = hc.aio.Store.memory()
        with trace.get_tracer("test").start_as_current_span("triage") as span:
            h = await store.create("t", "in a span")
        return _traceparent(span), h.traceparent

    made, stored = asyncio.run(scenario())
    assert stored == made


def test_a_lease_is_the_holders_span_under_the_records_trace(spans: Any) -> None:
    from opentelemetry import trace

    store = hc.Store.memory()
    h = store.create("t", "refund", to_agent="billing", traceparent=TRACEPARENT)
    claim = store.claim(h.id, "billing")
    with trace.get_tracer("test").start_as_current_span("poll") as poll:
        with store.lease(claim) as lease:
            onward = store.create("t", "refund the card", from_agent="billing", to_agent="refunds")
            lease.outcome = "handed on"
    (work,) = [s for s in spans.get_finished_spans() if s.name == "handoff.work billing"]
    assert f"{work.context.trace_id:032x}" == TRACEPARENT[3:35]
    assert f"{work.parent.span_id:016x}" == TRACEPARENT[36:52] and work.parent.is_remote
    assert [link.context.span_id for link in work.links] == [poll.get_span_context().span_id]
    assert work.attributes["handoff.id"] == h.id and work.attributes["handoff.claim_token"] == claim.token
    # What the holder creates continues the same trace, under its work span.
    assert onward.traceparent == f"00-{work.context.trace_id:032x}-{work.context.span_id:016x}-01"
    assert store.get(h.id).status == "completed"


def test_a_lease_on_a_claim_ref_reads_the_record_for_its_trace(spans: Any) -> None:
    from opentelemetry.trace import StatusCode

    store = hc.Store.memory()
    h = store.create("t", "refund", traceparent=TRACEPARENT)
    claim = store.claim(h.id, "billing")
    reference = hc.ClaimRef(claim.handoff_id, claim.token, claim.secret)
    with pytest.raises(RuntimeError, match="ledger"):
        with store.lease(reference):
            raise RuntimeError("the ledger is down")
    (work,) = [s for s in spans.get_finished_spans() if s.name == "handoff.work billing"]
    assert f"{work.context.trace_id:032x}" == TRACEPARENT[3:35]
    assert work.status.status_code is StatusCode.ERROR
    assert store.get(h.id).status == "pending"


def test_a_lease_on_a_claim_ref_whose_record_is_gone_works_as_without_tracing(spans: Any) -> None:
    store = hc.Store.memory()
    reference = hc.ClaimRef("no-such-handoff", 1, "hcs_" + "0" * 64)
    # The block runs; settling says the record is gone, as it does untraced.
    ran = []
    with pytest.raises(hc.NotFound):
        with store.lease(reference):
            ran.append(True)
    assert ran == [True]
    assert [s.name for s in spans.get_finished_spans()] == []


def test_an_aio_lease_is_the_holders_span_too(spans: Any) -> None:
    async def scenario() -> str:
        store = hc.aio.Store.memory()
        h = await store.create("t", "refund", traceparent=TRACEPARENT)
        claim = await store.claim(h.id, "billing")
        async with store.lease(claim) as lease:
            onward = await store.create("t", "next")
            lease.outcome = "ok"
        return onward.traceparent or ""

    onward = asyncio.run(scenario())
    (work,) = [s for s in spans.get_finished_spans() if s.name == "handoff.work billing"]
    assert f"{work.parent.span_id:016x}" == TRACEPARENT[36:52]
    assert onward == f"00-{work.context.trace_id:032x}-{work.context.span_id:016x}-01"


def test_an_instrumented_claim_is_a_child_of_the_records_trace(spans: Any) -> None:
    store = tracing.instrument(hc.Store.memory())
    h = store.create("t", "refund", to_agent="billing", traceparent=TRACEPARENT)
    claim = store.claim_next("billing")
    assert claim is not None
    assert store.claim_next("billing") is None
    with pytest.raises(hc.NotFound):
        store.claim("nope", "billing")
    claimed, nothing, refused = [s for s in spans.get_finished_spans() if s.name == "handoff.claim billing"]
    assert f"{claimed.parent.span_id:016x}" == TRACEPARENT[36:52]
    assert claimed.attributes["handoff.id"] == h.id
    assert claimed.start_time is not None and claimed.end_time is not None and claimed.start_time <= claimed.end_time
    # Nothing claimed, or refused: an ordinary span, in a trace of its own.
    assert nothing.parent is None and refused.parent is None
    assert not refused.status.is_ok


def test_successor_span_continues_the_trace_for_work_done_another_way(spans: Any) -> None:
    store = hc.Store.memory()
    h = store.create("t", "refund", traceparent=TRACEPARENT)
    with tracing.successor_span("work", "billing", h) as span:
        span.record(h)
    (work,) = spans.get_finished_spans()
    assert f"{work.context.trace_id:032x}" == TRACEPARENT[3:35]
    untraced = store.create("t", "no trace")
    with tracing.successor_span("work", "billing", untraced):
        pass
    assert spans.get_finished_spans()[-1].parent is None


def test_a_store_does_not_import_opentelemetry_on_its_own() -> None:
    # Without the application importing it no span can be current: create and lease cost nothing.
    code = (
        "import sys, handoff_core as hc\n"
        "s = hc.Store.memory(); h = s.create('t', 'g')\n"
        "with s.lease(s.claim(h.id, 'a')): pass\n"
        "print(h.traceparent, any(m.startswith('opentelemetry') for m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["None", "False"]
