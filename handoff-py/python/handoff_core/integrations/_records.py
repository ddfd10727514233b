"""What every adapter writes into a handoff record, the same way in Python and Node, so that a
worker in either language can take a record written from the other."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Optional, TypeVar, Union

from handoff_core import aio, tracing
from handoff_core._errors import Conflict
from handoff_core._native import Claim, ClaimRef, ContextBuilder, Handoff, Packet, Store

#: The transcript kept on a record: enough for the successor, bounded so the record stays small.
TRANSCRIPT_BUDGET_TOKENS = 4000

AnyStore = Union[Store, aio.Store]
T = TypeVar("T")


def as_async(store: AnyStore) -> aio.Store:
    """The store's calls as coroutines (an ``aio.Store`` is used as it is)."""
    if isinstance(store, aio.Store):
        return store
    if isinstance(store, Store):
        return aio.Store(store)
    wrapped = getattr(store, "wrapped", None)  # a tracing.instrument()ed store
    if wrapped is not None:
        return as_async(wrapped)
    raise TypeError(f"store: expected handoff_core.Store or handoff_core.aio.Store, got {type(store).__name__}")


def record_id(prefix: str, task_id: str, call_id: str) -> str:
    """The id of the record a tool call writes: the same for the same task and call, so a run
    retried with the same call writes one record. ``<prefix>-`` + 32 hex digits of SHA-256."""
    digest = hashlib.sha256(f"{task_id}\n{call_id}".encode()).hexdigest()
    return f"{prefix}-{digest[:32]}"


def transcript(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """The conversation so far as chat messages, redacted and within
    :data:`TRANSCRIPT_BUDGET_TOKENS` (the newest kept), in any shape ``ContextBuilder`` reads."""
    return ContextBuilder(TRANSCRIPT_BUDGET_TOKENS).add_messages(messages).build().messages


def carried_transcript(handoff: Handoff) -> Optional[list[Mapping[str, Any]]]:
    """The transcript a record written by an adapter carries (``metadata.transcript``), or
    None."""
    carried = handoff.metadata.get("transcript")
    if not isinstance(carried, list):
        return None
    return [m for m in carried if isinstance(m, Mapping)] or None


async def packet(store: aio.Store, handoff: Handoff, budget_tokens: int, transcript: Optional[Sequence[Any]]) -> Packet:
    """The successor's packet: what the store knows for ``handoff`` (the task and its plan, the
    agents before, the outputs it depends on, the predecessor's findings, relevant knowledge),
    with the framework's ``transcript`` as one more conversation, redacted, within
    ``budget_tokens``."""
    return await store.context_for(handoff.id, budget_tokens=budget_tokens, transcript=transcript)


def create_once_sync(store: Store, **record: Any) -> Handoff:
    """Creates the record with its caller-chosen ``id``, or returns the one already there: a
    retried run (same call, same id) writes nothing new even if its transcript differs."""
    try:
        return store.create(**record)
    except Conflict:
        return store.get(record["id"])


async def create_once(store: aio.Store, **record: Any) -> Handoff:
    """:func:`create_once_sync` in a worker thread (one hop, also when the record is there)."""
    return await asyncio.to_thread(create_once_sync, store.sync, **record)


async def settle(store: aio.Store, claim: Union[Claim, ClaimRef], holder: Optional[str], work: Callable[[], Awaitable[T]], outcome: Callable[[T], str]) -> T:
    """Runs ``work()`` while ``claim`` heartbeats, then completes the handoff with
    ``outcome(result)``, or fails it with the exception, which propagates; each in a span."""
    async with store.lease(claim) as lease:
        try:
            result = await work()
        except BaseException as error:
            failure = {"handoff.claim_token": claim.token, "error.type": type(error).__name__}
            with tracing.span("fail", holder, **failure) as span:
                span.record(await lease.fail(f"{type(error).__name__}: {error}"))
            raise
        with tracing.span("complete", holder, **{"handoff.claim_token": claim.token}) as span:
            span.record(await lease.complete(outcome(result)))
    return result
