"""OpenTelemetry spans for handoffs, when ``opentelemetry`` is installed (a no-op otherwise).

The framework adapters (``handoff_core.integrations``) open a span for every create, claim,
complete and fail they do; :func:`instrument` does the same for a store you call yourself::

    store = handoff_core.tracing.instrument(hc.aio.Store(hc.open("handoff.db")))
    claim = await store.claim_next("billing")      # a "handoff.claim billing" span

The OpenTelemetry GenAI conventions have no handoff operation, so a span uses their names where
they fit and a ``handoff.`` namespace for the rest (the Node binding uses the same names):

=========================  =====================================================================
span name                  ``handoff.<op> <acting agent>``, op one of :data:`OPERATIONS`
``gen_ai.operation.name``  ``handoff.<op>``
``gen_ai.agent.name``      the acting agent: who hands over on create, the claimer otherwise
``gen_ai.conversation.id`` the task id
``gen_ai.tool.name``       the transfer tool, when a model's tool call made the handoff
``gen_ai.tool.call.id``    that tool call's id
``handoff.id``             the handoff
``handoff.task_id``        the task
``handoff.from_agent``     who handed over
``handoff.to_agent``       who it is addressed to
``handoff.claim_token``    the claim's fencing token (claim, work, complete, fail)
=========================  =====================================================================

An exception inside a span marks it as an error and is recorded on it.

**One trace across a chain of agents.** ``store.create`` stores the current span's W3C trace
context on the record (``traceparent``, ``tracestate``) unless given one, so the successor can
continue the creator's trace wherever it runs: the span of a claim (made once the claim says
which record it took) and the span of the holder's work (``handoff.work <holder>``: the block of
``with store.lease(claim)`` or ``async with``, and the adapters' ``run_claimed``) are children
of the record's ``traceparent``, linked to the span current in the successor, if any. Anything
created inside the work span carries it on, so triage → billing → refunds across processes is
one trace. :func:`successor_span` opens such a span for work done another way.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import time
from collections.abc import Callable, Iterator
from typing import Any, Optional

from handoff_core import _trace_context
from handoff_core._errors import HandoffError
from handoff_core._native import Claim, ClaimRef, Handoff

try:
    from opentelemetry import trace as _trace
except ImportError:  # tracing is optional
    _trace = None  # type: ignore[assignment]

__all__ = ["OPERATIONS", "instrument", "span", "successor_span"]

#: The operations that get a span: ``work`` is the holder's, from claim to settling.
OPERATIONS = ("create", "claim", "work", "complete", "fail")
TRACER_NAME = "handoff-core"


class Span:
    """The span of one operation, to which the result's attributes are added once known."""

    __slots__ = ("_span",)

    def __init__(self, span: Any) -> None:
        self._span = span

    def record(self, result: object) -> None:
        """Adds what ``result`` (a Handoff or a Claim) says about the handoff."""
        if self._span is None or not self._span.is_recording():
            return
        handoff = result.handoff if isinstance(result, Claim) else result
        if isinstance(result, (Claim, ClaimRef)):
            self._span.set_attribute("handoff.claim_token", result.token)
        if isinstance(handoff, Handoff):
            self._span.set_attributes(_handoff_attributes(handoff))


def _handoff_attributes(h: Handoff) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "handoff.id": h.id,
        "handoff.task_id": h.task_id,
        "gen_ai.conversation.id": h.task_id,
    }
    if h.from_agent is not None:
        attributes["handoff.from_agent"] = h.from_agent
    if h.to_agent is not None:
        attributes["handoff.to_agent"] = h.to_agent
    if h.claim_token is not None:
        attributes["handoff.claim_token"] = h.claim_token
    call_id = h.metadata.get("call_id")
    if isinstance(call_id, str):
        attributes["gen_ai.tool.call.id"] = call_id
    return attributes


def _name_and_attributes(op: str, agent: Optional[str], attributes: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    name = f"handoff.{op} {agent}" if agent else f"handoff.{op}"
    given = {k: v for k, v in attributes.items() if v is not None}
    given["gen_ai.operation.name"] = f"handoff.{op}"
    if agent:
        given["gen_ai.agent.name"] = agent
    return name, given


@contextlib.contextmanager
def span(op: str, agent: Optional[str], **attributes: Any) -> Iterator[Span]:
    """A span for ``op`` (one of :data:`OPERATIONS`) by ``agent``, with ``attributes`` (names
    as in the table above, ``None`` values left out)."""
    if _trace is None:
        yield Span(None)
        return
    tracer = _trace.get_tracer(TRACER_NAME)
    name, given = _name_and_attributes(op, agent, attributes)
    with tracer.start_as_current_span(name, kind=_trace.SpanKind.INTERNAL, attributes=given) as s:
        yield Span(s)


def _under_record(handoff: Optional[Handoff]) -> tuple[Any, list[Any]]:
    """The parent context of a span about ``handoff`` (the remote span its ``traceparent``
    names, or the current context when it carries none) and its links (to the current span,
    when the record's trace replaces it as the parent)."""
    parent = None if handoff is None else _trace_context.parent_of(handoff.traceparent, handoff.tracestate)
    if parent is None:
        return None, []
    current = _trace.get_current_span().get_span_context()
    links = [_trace.Link(current)] if current.is_valid else []
    return parent, links


@contextlib.contextmanager
def successor_span(op: str, agent: Optional[str], handoff: Handoff, **attributes: Any) -> Iterator[Span]:
    """A span for ``op`` by ``agent`` (the successor) on ``handoff``, current inside the block,
    whose parent is the span that created the record (its ``traceparent``), so the successor's
    work continues the creator's trace; the span current here, if any, is linked. Without a
    ``traceparent`` on the record it is an ordinary :func:`span`."""
    if _trace is None:
        yield Span(None)
        return
    name, given = _name_and_attributes(op, agent, {**_handoff_attributes(handoff), **attributes})
    parent, links = _under_record(handoff)
    tracer = _trace.get_tracer(TRACER_NAME)
    with tracer.start_as_current_span(
        name, context=parent, kind=_trace.SpanKind.INTERNAL, attributes=given, links=links
    ) as s:
        yield Span(s)


def _configured() -> bool:
    """Whether an OpenTelemetry SDK (a tracer provider) was set up: without one no span is
    recorded, so reading a record only for its trace context would be wasted."""
    if _trace is None:
        return False
    provider = _trace.get_tracer_provider()
    return not isinstance(provider, (_trace.ProxyTracerProvider, _trace.NoOpTracerProvider))


def work_span(store: Any, claim: Any) -> Optional[contextlib.AbstractContextManager[Span]]:
    """The holder's span for a lease on ``claim`` (not yet entered): ``handoff.work <holder>``
    under the record's trace context; ``None`` when tracing is off. A ``ClaimRef`` carries no
    record, which is then read from ``store`` (only when an SDK is set up)."""
    if isinstance(claim, Claim):
        handoff = claim.handoff
    elif isinstance(claim, ClaimRef) and _configured():
        try:
            handoff = store.get(claim.handoff_id)
        except HandoffError:
            # Tracing changes nothing the lease does: a record that cannot be read (gone, the
            # store closed) is the lease's to report, at its first heartbeat or its settling.
            return None
    else:
        return None
    return successor_span("work", handoff.claimed_by, handoff, **{"handoff.claim_token": claim.token})


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    return kwargs[name] if name in kwargs else (args[index] if len(args) > index else None)


def _text(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _create_span(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Optional[str], dict[str, Any]]:
    task = _text(_arg(args, kwargs, 0, "task_id"))
    return _text(kwargs.get("from_agent")), {
        "handoff.task_id": task,
        "gen_ai.conversation.id": task,
        "handoff.to_agent": _text(kwargs.get("to_agent")),
    }


def _claim_span(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Optional[str], dict[str, Any]]:
    return _text(_arg(args, kwargs, 1, "agent")), {"handoff.id": _text(_arg(args, kwargs, 0, "id"))}


def _claim_next_span(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Optional[str], dict[str, Any]]:
    return _text(_arg(args, kwargs, 0, "agent")), {}


def _settle_span(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Optional[str], dict[str, Any]]:
    claim = _arg(args, kwargs, 0, "claim")
    if isinstance(claim, Claim):
        return claim.handoff.claimed_by, {"handoff.id": claim.handoff_id, "handoff.claim_token": claim.token}
    if isinstance(claim, ClaimRef):
        return None, {"handoff.id": claim.handoff_id, "handoff.claim_token": claim.token}
    return None, {}


_Describe = Callable[[tuple[Any, ...], dict[str, Any]], tuple[Optional[str], dict[str, Any]]]

#: The store methods traced, with their operation and what their arguments say about the span.
_METHODS: dict[str, tuple[str, _Describe]] = {
    "create": ("create", _create_span),
    "claim": ("claim", _claim_span),
    "claim_next": ("claim", _claim_next_span),
    "complete": ("complete", _settle_span),
    "fail": ("fail", _settle_span),
}


def _record_claim_span(op: str, agent: Optional[str], attributes: dict[str, Any], started: int, result: object, error: Optional[BaseException]) -> None:
    """Records the span of a claim once it is made: it started at ``started`` (ns), and its
    parent is the record's trace context, which only the claim's result tells (``claim_next``
    does not know which record it takes); a claim of nothing, or refused, has the current
    context's."""
    handoff = result.handoff if isinstance(result, Claim) else None
    parent, links = _under_record(handoff)
    name, given = _name_and_attributes(op, agent, attributes)
    tracer = _trace.get_tracer(TRACER_NAME)
    s = tracer.start_span(
        name, context=parent, kind=_trace.SpanKind.INTERNAL, attributes=given, links=links, start_time=started
    )
    if error is not None:
        s.record_exception(error)
        s.set_status(_trace.Status(_trace.StatusCode.ERROR, f"{type(error).__name__}: {error}"))
    Span(s).record(result)
    s.end()


def _traced_claim(method: Callable[..., Any], name: str) -> Callable[..., Any]:
    op, describe = _METHODS[name]

    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def traced_async(*args: Any, **kwargs: Any) -> Any:
            agent, attributes = describe(args, kwargs)
            started = time.time_ns()
            try:
                result = await method(*args, **kwargs)
            except BaseException as error:
                _record_claim_span(op, agent, attributes, started, None, error)
                raise
            _record_claim_span(op, agent, attributes, started, result, None)
            return result

        return traced_async

    @functools.wraps(method)
    def traced(*args: Any, **kwargs: Any) -> Any:
        agent, attributes = describe(args, kwargs)
        started = time.time_ns()
        try:
            result = method(*args, **kwargs)
        except BaseException as error:
            _record_claim_span(op, agent, attributes, started, None, error)
            raise
        _record_claim_span(op, agent, attributes, started, result, None)
        return result

    return traced


def _traced_method(method: Callable[..., Any], name: str) -> Callable[..., Any]:
    op, describe = _METHODS[name]
    if op == "claim":
        return _traced_claim(method, name)

    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def traced_async(*args: Any, **kwargs: Any) -> Any:
            agent, attributes = describe(args, kwargs)
            with span(op, agent, **attributes) as s:
                result = await method(*args, **kwargs)
                s.record(result)
                return result

        return traced_async

    @functools.wraps(method)
    def traced(*args: Any, **kwargs: Any) -> Any:
        agent, attributes = describe(args, kwargs)
        with span(op, agent, **attributes) as s:
            result = method(*args, **kwargs)
            s.record(result)
            return result

    return traced


class InstrumentedStore:
    """A store (``handoff_core.Store`` or ``handoff_core.aio.Store``) whose create, claim,
    claim_next, complete and fail open spans; everything else is the store's own."""

    __slots__ = ("_store", "__dict__")

    def __init__(self, store: Any) -> None:
        self._store = store
        for name in _METHODS:
            setattr(self, name, _traced_method(getattr(store, name), name))

    @property
    def wrapped(self) -> Any:
        """The store underneath."""
        return self._store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def __repr__(self) -> str:
        return f"<traced {self._store!r}>"


def instrument(store: Any) -> Any:
    """``store`` with a span around each create, claim, claim_next, complete and fail (the store
    itself when ``opentelemetry`` is not installed). Works for ``handoff_core.Store`` and
    ``handoff_core.aio.Store`` alike, and returns the same kind of calls (plain or coroutines)."""
    if _trace is None or isinstance(store, InstrumentedStore):
        return store
    return InstrumentedStore(store)
