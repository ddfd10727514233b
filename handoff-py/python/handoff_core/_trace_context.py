"""The W3C trace context a handoff record carries (``traceparent``, ``tracestate``): taken from
the ambient OpenTelemetry context when a handoff is created, and read back as the parent of the
successor's spans, so that a chain of agents across processes is one trace.

OpenTelemetry is optional. Nothing here imports it until the application has: without
``opentelemetry.trace`` loaded no span can be current, so a create costs one dictionary lookup.
"""

from __future__ import annotations

import sys
from typing import Any, Optional

#: The carrier keys of the W3C Trace Context propagator, which are also the record's fields.
FIELDS = ("traceparent", "tracestate")

_propagator: Any = None


def _trace_context_propagator() -> Any:
    """The W3C Trace Context propagator (``opentelemetry-api``'s own), made once. Used directly
    rather than the global one: the record's fields are W3C trace context whatever else the
    application propagates (baggage, B3)."""
    global _propagator
    if _propagator is None:
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        _propagator = TraceContextTextMapPropagator()
    return _propagator


def imported() -> bool:
    """Whether the application imported OpenTelemetry's API: before it did, no span is current
    and none can be recorded."""
    return "opentelemetry.trace" in sys.modules


def ambient() -> dict[str, str]:
    """The current OpenTelemetry context as ``{"traceparent", "tracestate"}`` (``tracestate``
    only when there is one), or ``{}`` when no valid span is current (or OpenTelemetry was
    never imported)."""
    if not imported():
        return {}
    carrier: dict[str, str] = {}
    # The propagator writes nothing for an invalid span context: no span, or a no-op tracer's.
    _trace_context_propagator().inject(carrier)
    return {key: carrier[key] for key in FIELDS if carrier.get(key)}


def with_ambient(arguments: dict[str, Any]) -> dict[str, Any]:
    """``create``'s ``arguments`` with ``traceparent``/``tracestate`` from the current
    OpenTelemetry context, unless the caller gave either (a ``None`` is not giving one)."""
    if any(arguments.get(key) is not None for key in FIELDS):
        return arguments
    context = ambient()
    if not context:
        return arguments
    return {**arguments, **context}


def parent_of(traceparent: Optional[str], tracestate: Optional[str] = None) -> Any:
    """The OpenTelemetry ``Context`` whose span is the remote one ``traceparent`` names (with
    ``tracestate``), or ``None`` when there is none or it is malformed (the propagator's own
    reading of W3C Trace Context decides)."""
    if not traceparent:
        return None
    from opentelemetry import trace

    carrier = {"traceparent": traceparent}
    if tracestate:
        carrier["tracestate"] = tracestate
    context = _trace_context_propagator().extract(carrier)
    if not trace.get_current_span(context).get_span_context().is_valid:
        return None
    return context


def lease_span(store: Any, claim: Any) -> Any:
    """The holder's span for a lease on ``claim`` (``handoff_core.tracing.work_span``), not yet
    entered, or ``None`` when OpenTelemetry was never imported (no span can be recorded then).
    The native ``Lease`` opens it when its block starts."""
    if not imported():
        return None
    from handoff_core import tracing

    return tracing.work_span(store, claim)
