"""The same store as coroutines, for asyncio programs.

Each call runs the blocking store call in a worker thread (``asyncio.to_thread``). The native
call releases the GIL for its whole duration, so the event loop and other tasks keep running
while a call waits on SQLite (a lock, an fsync). Results and exceptions are exactly those of the
synchronous :class:`handoff_core.Store`.

>>> import asyncio, handoff_core as hc
>>> async def main() -> str:
...     async with hc.aio.Store.memory() as store:
...         h = await store.create("t", "Write the report", from_agent="a")
...         claim = await store.claim(h.id, "b")
...         return (await store.complete(claim)).status
>>> asyncio.run(main())
'completed'
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
import inspect
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Optional, TypeVar, Union

from handoff_core import _native, _trace_context
from handoff_core._native import (
    Bundle,
    Chain,
    ChainPolicy,
    Claim,
    ClaimRef,
    Event,
    Handoff,
    Limits,
    ManualClock,
    Packet,
    Session,
    Task,
    TaskSummary,
)
# Every record, so that the generated coroutines may return any of them.
from handoff_core._records import *  # noqa: F403
from handoff_core._errors import Busy, Conflict, HandoffError
from handoff_core._types import Kind, Status, StrPath, Synchronous, TaskStatus

__all__ = ["Lease", "Store", "connect", "open"]

_Seconds = Union[int, float]
_Span = Union[int, float, timedelta]
_AnyClaim = Union[Claim, ClaimRef]
_Change = Callable[[dict[str, Any]], Union[Mapping[str, Any], Awaitable[Mapping[str, Any]]]]

#: What ``claim`` and ``claim_next`` return (``_claiming``).
_Claimed = TypeVar("_Claimed", Claim, Optional[Claim])

_Score = Union[float, tuple[float, Optional[str]], Mapping[str, Any]]
#: A verifier (``Store.verify``): a plain function or a coroutine function.
_Verifier = Callable[[dict[str, Any]], Union[_Score, Awaitable[_Score]]]
#: A decision judge (``Store.cherry_pick_decisions``): a plain function or a coroutine function.
_Judge = Callable[[dict[str, Any]], Union[bool, Awaitable[bool]]]
#: A fact extractor (``Store.cherry_pick_to_facts``): a plain function or a coroutine function.
_Extractor = Callable[[dict[str, Any]], Any]
#: A summarizer (``Store.context_for``): a plain function or a coroutine function.
_Summarizer = Callable[[dict[str, Any]], Union[str, Awaitable[str]]]


def _from_thread(function: Optional[Callable[[Any], Any]]) -> Optional[Callable[[Any], Any]]:
    """``function`` as the worker thread running a store call may call it: a coroutine function
    runs on the event loop (the thread waits for it), a plain one in the thread. Its name goes
    along, as the verifier's name the store keeps."""
    if function is None:
        return None
    loop = asyncio.get_running_loop()

    async def awaited(pending: Awaitable[Any]) -> Any:
        return await pending

    def call(argument: Any) -> Any:
        answer = function(argument)
        if inspect.isawaitable(answer):
            return asyncio.run_coroutine_threadsafe(awaited(answer), loop).result()
        return answer

    call.__name__ = getattr(function, "__name__", type(function).__name__)
    return call


async def _claiming(store: _native.Store, call: Callable[[Callable[[], bool]], _Claimed]) -> _Claimed:
    """``call(stop)``, the ``store``'s ``claim`` or ``claim_next``, in a worker thread.

    Cancelling the awaiting task does not stop the thread, and a claim the thread made after
    the cancellation would be held by nobody until its lease lapsed: the work delayed by a
    lease and an attempt counted. So ``stop`` says once the task is gone (a waiting
    ``claim_next`` asks between the slices of its wait), and a claim the task did not receive
    is given back."""
    lock = threading.Lock()
    abandoned = False
    received: Optional[Claim] = None

    def run() -> _Claimed:
        nonlocal received
        claim = call(lambda: abandoned)
        with lock:
            gone = abandoned
            if not gone:
                received = claim
        if gone and claim is not None:
            _give_back(store, claim)
        return claim

    pending = asyncio.ensure_future(asyncio.to_thread(run))
    try:
        return await asyncio.shield(pending)
    except asyncio.CancelledError:
        with lock:
            abandoned = True
            claim = received
        if claim is not None:
            threading.Thread(target=_give_back, args=(store, claim)).start()
        # The thread's own end (an error included) has nobody left to hear it.
        pending.add_done_callback(lambda done: done.cancelled() or done.exception())
        raise


def _give_back(store: _native.Store, claim: Claim) -> None:
    """Gives back a claim nobody received; if that fails (the lease lapsed, the store closed),
    the claim lapses as any abandoned one does."""
    try:
        store._give_back(claim)
    except HandoffError:
        pass


#: How often ``memory_update`` reads and writes again after other writers came first (the
#: synchronous store's bound too: the core's `MAX_MEMORY_UPDATE_ROUNDS`).
_MAX_UPDATE_ROUNDS = 10_000


async def open(
    path: StrPath,
    synchronous: Optional[Synchronous] = None,
    *,
    clock: Optional[ManualClock] = None,
    policy: Optional[ChainPolicy] = None,
    limits: Optional[Limits] = None,
    lock_patience_seconds: Optional[_Seconds] = None,
    read_only: bool = False,
) -> Store:
    """Opens (or creates) an SQLite store at ``path``; see :func:`handoff_core.open`."""
    store = await asyncio.to_thread(
        _native.open,
        path,
        synchronous,
        clock=clock,
        policy=policy,
        limits=limits,
        lock_patience_seconds=lock_patience_seconds,
        read_only=read_only,
    )
    return Store(store)


async def connect(
    url: StrPath,
    *,
    synchronous: Optional[Synchronous] = None,
    lock_patience_seconds: Optional[_Seconds] = None,
    read_only: bool = False,
    pool_size: Optional[int] = None,
    connect_timeout_seconds: Optional[_Seconds] = None,
    clock: Optional[ManualClock] = None,
    policy: Optional[ChainPolicy] = None,
    limits: Optional[Limits] = None,
) -> Store:
    """Opens the store ``url`` names, with the same options; see :func:`handoff_core.connect`."""
    store = await asyncio.to_thread(
        _native.connect,
        url,
        synchronous=synchronous,
        lock_patience_seconds=lock_patience_seconds,
        read_only=read_only,
        pool_size=pool_size,
        connect_timeout_seconds=connect_timeout_seconds,
        clock=clock,
        policy=policy,
        limits=limits,
    )
    return Store(store)


class Lease:
    """A claim held while its work runs, as an async context manager: heartbeats from the
    core's own thread until the block ends, then completes the claim (with ``outcome``) or
    fails it with the exception that ended the block, which propagates as it is. With
    OpenTelemetry in use the block is the holder's span, under the record's trace context (see
    :mod:`handoff_core.tracing`)."""

    __slots__ = ("_store", "_claim", "_lease", "_outcome", "_span")

    def __init__(self, store: _native.Store, claim: _AnyClaim) -> None:
        self._store = store
        self._claim = claim
        self._lease: Optional[_native.Lease] = None
        self._outcome = ""
        self._span: Any = None

    def _held(self) -> _native.Lease:
        if self._lease is None:
            raise RuntimeError("use the lease inside `async with store.lease(claim)`")
        return self._lease

    async def __aenter__(self) -> Lease:
        # Taking a lease only schedules its heartbeats: no I/O, so no worker thread.
        self._lease = self._store.lease(self._claim)
        self._lease.outcome = self._outcome
        # The span is entered here, in the task's context, so that it is current in the block
        # (the native lease's own `__enter__`, which would open it too, is not called). Making
        # it may read the record of a ClaimRef: in a worker thread.
        span = None
        if _trace_context.imported():
            span = await asyncio.to_thread(_trace_context.lease_span, self._store, self._claim)
        if span is not None:
            span.__enter__()
            self._span = span
        return self

    async def __aexit__(self, *exc: Any) -> None:
        lease = self._held()
        try:
            if not lease.settled:  # else completed or failed inside the block: nothing to write
                lease.outcome = self._outcome
                await asyncio.to_thread(lease.__exit__, *exc)
        except BaseException as refused:
            if self._span is not None:
                self._span.__exit__(type(refused), refused, refused.__traceback__)
                self._span = None
            raise
        if self._span is not None:
            self._span.__exit__(*exc)
            self._span = None

    @property
    def outcome(self) -> str:
        """What completing the claim on leaving the block says it came to."""
        return self._outcome

    @outcome.setter
    def outcome(self, outcome: str) -> None:
        self._outcome = outcome

    @property
    def handoff_id(self) -> str:
        return self._held().handoff_id

    @property
    def lost(self) -> bool:
        """Whether a heartbeat found the claim gone: the work should stop."""
        return self._held().lost

    @property
    def settled(self) -> bool:
        return self._held().settled

    async def progress(self, progress: Any) -> Handoff:
        """Reports how the work is going: a heartbeat carrying ``progress`` (a small JSON value),
        sent now; the record keeps it until the next report. ``LeaseLost`` once the claim is gone."""
        return await asyncio.to_thread(self._held().progress, progress)

    async def complete(self, outcome: Optional[str] = None) -> Handoff:
        """Stops the heartbeats and completes the claim (with ``outcome``, else ``self.outcome``)."""
        return await asyncio.to_thread(self._held().complete, outcome if outcome is not None else self._outcome)

    async def fail(self, error: str) -> Handoff:
        """Stops the heartbeats and fails the claim with ``error``."""
        return await asyncio.to_thread(self._held().fail, error)


class Store:
    """A :class:`handoff_core.Store` whose calls are coroutines. ``async with`` closes it."""

    __slots__ = ("_store",)

    def __init__(self, store: _native.Store) -> None:
        self._store = store

    @classmethod
    def memory(
        cls,
        *,
        clock: Optional[ManualClock] = None,
        policy: Optional[ChainPolicy] = None,
        limits: Optional[Limits] = None,
    ) -> Store:
        """An in-memory store."""
        return cls(_native.Store.memory(clock=clock, policy=policy, limits=limits))

    @property
    def sync(self) -> _native.Store:
        """The underlying synchronous store (shared, not a copy)."""
        return self._store

    @property
    def closed(self) -> bool:
        return self._store.closed

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        self._store.close()

    def close(self) -> None:
        self._store.close()

    def now(self) -> datetime:
        """The store clock's current time (no I/O, so not a coroutine)."""
        return self._store.now()

    def __repr__(self) -> str:
        return f"<handoff_core.aio.Store of {self._store!r}>"

    async def save_policy(self) -> None:
        await asyncio.to_thread(self._store.save_policy)

    async def saved_policy(self) -> Optional[tuple[ChainPolicy, Limits]]:
        return await asyncio.to_thread(self._store.saved_policy)

    @property
    def policy(self) -> ChainPolicy:
        """The chain policy in force (no I/O, so not a coroutine)."""
        return self._store.policy

    @property
    def limits(self) -> Limits:
        """The limits in force (no I/O, so not a coroutine)."""
        return self._store.limits

    def lease(self, claim: _AnyClaim) -> Lease:
        """``async with store.lease(claim) as lease:`` holds ``claim`` while its work runs; see
        :meth:`handoff_core.Store.lease`."""
        return Lease(self._store, claim)

    async def memory_update(self, scope: str, change: _Change) -> Memory:
        """Reads the memory of ``scope`` (``{}`` when none), calls ``change`` with it (a plain
        function or a coroutine function) and writes what it returns if nobody wrote meanwhile;
        otherwise reads and calls it again. ``change`` runs on the event loop, never holding a
        lock: a slow one (a model call) blocks no other writer. When it raises, nothing is
        written and the exception propagates as it is."""
        for _ in range(_MAX_UPDATE_ROUNDS):
            current = await self.memory_get(scope)
            value, version = (current.value, current.version) if current else ({}, 0)
            changed = change(value)
            if inspect.isawaitable(changed):
                changed = await changed
            try:
                return await self.memory_put(scope, changed, expected_version=version)
            except Conflict as conflict:
                if conflict.expected_version is None:
                    raise
        raise Busy(f"memory {scope} changed under every one of {_MAX_UPDATE_ROUNDS} updates")

    # >>> GENERATED by scripts/gen_stubs.py from the operation catalog: do not edit
    async def create(
        self,
        task_id: str,
        goal: Optional[str] = None,
        *,
        from_agent: Optional[str] = None,
        to_agent: Optional[str] = None,
        kind: Optional[Kind] = None,
        reason: Optional[str] = None,
        context_pct: Optional[int] = None,
        timeout_seconds: Optional[int] = None,
        progress: Optional[str] = None,
        completed: Optional[Sequence[str]] = None,
        pending: Optional[Sequence[str]] = None,
        decisions: Optional[Sequence[str]] = None,
        assumptions: Optional[Sequence[str]] = None,
        warnings: Optional[Sequence[str]] = None,
        errors: Optional[Sequence[str]] = None,
        files: Optional[Sequence[str]] = None,
        instructions: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        id: Optional[str] = None,
        parent_id: Optional[str] = None,
        session_id: Optional[str] = None,
        blockers: Optional[Sequence[str]] = None,
        locked_files: Optional[Sequence[str]] = None,
        priority_items: Optional[Sequence[str]] = None,
        success_criteria: Optional[Sequence[str]] = None,
        expires_at: Optional[datetime] = None,
        max_attempts: Optional[int] = None,
        priority: Optional[int] = None,
        traceparent: Optional[str] = None,
        tracestate: Optional[str] = None,
    ) -> Handoff:
        """Creates a pending handoff. With a caller-supplied `id`, creating again with the same
        content returns the stored record; with other content it fails with `Conflict`.
        """
        return await asyncio.to_thread(
            self._store.create,
            task_id,
            goal,
            from_agent=from_agent,
            to_agent=to_agent,
            kind=kind,
            reason=reason,
            context_pct=context_pct,
            timeout_seconds=timeout_seconds,
            progress=progress,
            completed=completed,
            pending=pending,
            decisions=decisions,
            assumptions=assumptions,
            warnings=warnings,
            errors=errors,
            files=files,
            instructions=instructions,
            metadata=metadata,
            id=id,
            parent_id=parent_id,
            session_id=session_id,
            blockers=blockers,
            locked_files=locked_files,
            priority_items=priority_items,
            success_criteria=success_criteria,
            expires_at=expires_at,
            max_attempts=max_attempts,
            priority=priority,
            traceparent=traceparent,
            tracestate=tracestate,
        )

    async def create_many(self, records: Sequence[Mapping[str, Any]]) -> builtins.list[Handoff]:
        """Creates several handoffs in one transaction: all of them, or none when one is refused."""
        return await asyncio.to_thread(self._store.create_many, records)

    async def get(self, id: str) -> Handoff:
        """The handoff with this id; `NotFound` if there is none."""
        return await asyncio.to_thread(self._store.get, id)

    async def list(
        self,
        status: Optional[Status] = None,
        task_id: Optional[str] = None,
        to_agent: Optional[str] = None,
        limit: Optional[int] = None,
        *,
        kind: Optional[Kind] = None,
        after: Optional[str] = None,
        pending_only: Optional[bool] = None,
    ) -> builtins.list[Handoff]:
        """Handoffs matching the filter, oldest first."""
        return await asyncio.to_thread(
            self._store.list,
            status,
            task_id,
            to_agent,
            limit,
            kind=kind,
            after=after,
            pending_only=pending_only,
        )

    async def claim(self, id: str, agent: str, lease_seconds: Optional[_Span] = None) -> Claim:
        """Claims the handoff `id` for `agent`. `AlreadyClaimed` while another claim is live;
        `InvalidTransition` when it is finished or addressed to another agent.
        """
        return await _claiming(
            self._store,
            lambda stop: self._store.claim(id, agent, lease_seconds),
        )

    async def claim_next(
        self,
        agent: str,
        task_id: Optional[str] = None,
        lease_seconds: Optional[_Span] = None,
        *,
        wait_seconds: Optional[_Span] = None,
    ) -> Optional[Claim]:
        """Claims the next pending handoff `agent` may take (addressed to it or to anyone), the
        highest priority first, then the oldest; nothing when there is none, after waiting up to
        `wait_seconds` for some to arrive.
        """
        return await _claiming(
            self._store,
            lambda stop: self._store._claim_next(
                {
                    "agent": agent,
                    "task_id": task_id,
                    "lease_seconds": lease_seconds,
                    "wait_seconds": wait_seconds,
                },
                stop,
            ),
        )

    async def heartbeat(self, claim: _AnyClaim, progress: Optional[Any] = None) -> Handoff:
        """Renews the claim's lease, reporting progress if given. `LeaseLost` once the claim has
        lapsed or moved on.
        """
        return await asyncio.to_thread(self._store.heartbeat, claim, progress)

    async def release(self, claim: _AnyClaim, reason: str) -> Handoff:
        """Gives the handoff back to the queue, with why."""
        return await asyncio.to_thread(self._store.release, claim, reason)

    async def fail(self, claim: _AnyClaim, error: str) -> Handoff:
        """Reports that the work failed: pending again with one more attempt counted, or `failed`
        (the error its outcome) after the last of its `max_attempts`.
        """
        return await asyncio.to_thread(self._store.fail, claim, error)

    async def complete(
        self,
        claim: _AnyClaim,
        outcome: Optional[str] = None,
        *,
        tokens_used: Optional[int] = None,
    ) -> Handoff:
        """Finishes the handoff, with what came of it."""
        return await asyncio.to_thread(
            self._store.complete,
            claim,
            outcome,
            tokens_used=tokens_used,
        )

    async def reject(self, id: str, agent: str, reason: str) -> Handoff:
        """Refuses the handoff as `agent`, its addressee (or, for an open handoff, its holder)."""
        return await asyncio.to_thread(self._store.reject, id, agent, reason)

    async def cancel(self, id: str, by: str, reason: Optional[str] = None) -> Handoff:
        """Withdraws a pending or claimed handoff, as `by`: its creator, or anyone when it has none."""
        return await asyncio.to_thread(self._store.cancel, id, by, reason)

    async def retry(self, id: str, by: str, reason: Optional[str] = None) -> Handoff:
        """Puts a failed, rejected or cancelled handoff back in the queue, as the operator `by`: its
        attempts count afresh, and its log keeps the earlier ones.
        """
        return await asyncio.to_thread(self._store.retry, id, by, reason)

    async def revoke_claim(self, id: str, by: str, reason: str) -> Handoff:
        """Takes a live claim away from its holder, as the operator `by`: pending again, one more
        attempt counted, the holder's token no longer works.
        """
        return await asyncio.to_thread(self._store.revoke_claim, id, by, reason)

    async def set_priority(self, id: str, priority: int, by: str) -> Handoff:
        """Changes the priority of a pending or claimed handoff: `claim_next` takes the highest
        first.
        """
        return await asyncio.to_thread(self._store.set_priority, id, priority, by)

    async def cancel_claim(self, claim: _AnyClaim, reason: Optional[str] = None) -> Handoff:
        """Withdraws the handoff as its holder."""
        return await asyncio.to_thread(self._store.cancel_claim, claim, reason)

    async def events(
        self,
        id: Optional[str] = None,
        task_id: Optional[str] = None,
        after: Optional[int] = None,
        limit: Optional[int] = None,
        *,
        handoff_id: Optional[str] = None,
        redact: bool = True,
    ) -> builtins.list[Event]:
        """The event log, oldest first: all of it, one handoff's or one task's, a page at a time."""
        return await asyncio.to_thread(
            self._store.events,
            id,
            task_id,
            after,
            limit,
            handoff_id=handoff_id,
            redact=redact,
        )

    async def chain(self, task_id: str) -> Chain:
        """The task's chain: who handed to whom, in order."""
        return await asyncio.to_thread(self._store.chain, task_id)

    async def checkpoint(
        self,
        task_id: str,
        agent: str,
        *,
        goal: Optional[str] = None,
        reason: Optional[str] = None,
        context_pct: Optional[int] = None,
        timeout_seconds: Optional[int] = None,
        progress: Optional[str] = None,
        completed: Optional[Sequence[str]] = None,
        pending: Optional[Sequence[str]] = None,
        decisions: Optional[Sequence[str]] = None,
        assumptions: Optional[Sequence[str]] = None,
        warnings: Optional[Sequence[str]] = None,
        errors: Optional[Sequence[str]] = None,
        files: Optional[Sequence[str]] = None,
        instructions: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        id: Optional[str] = None,
        parent_id: Optional[str] = None,
        session_id: Optional[str] = None,
        blockers: Optional[Sequence[str]] = None,
        locked_files: Optional[Sequence[str]] = None,
        priority_items: Optional[Sequence[str]] = None,
        success_criteria: Optional[Sequence[str]] = None,
        expires_at: Optional[datetime] = None,
        max_attempts: Optional[int] = None,
        priority: Optional[int] = None,
        traceparent: Optional[str] = None,
        tracestate: Optional[str] = None,
    ) -> Handoff:
        """Saves `agent`'s progress on `task_id` without changing who owns what."""
        return await asyncio.to_thread(
            self._store.checkpoint,
            task_id,
            agent,
            goal=goal,
            reason=reason,
            context_pct=context_pct,
            timeout_seconds=timeout_seconds,
            progress=progress,
            completed=completed,
            pending=pending,
            decisions=decisions,
            assumptions=assumptions,
            warnings=warnings,
            errors=errors,
            files=files,
            instructions=instructions,
            metadata=metadata,
            id=id,
            parent_id=parent_id,
            session_id=session_id,
            blockers=blockers,
            locked_files=locked_files,
            priority_items=priority_items,
            success_criteria=success_criteria,
            expires_at=expires_at,
            max_attempts=max_attempts,
            priority=priority,
            traceparent=traceparent,
            tracestate=tracestate,
        )

    async def stalled(self, older_than_seconds: _Span) -> builtins.list[str]:
        """Ids of tasks in progress whose last sign of life (claim, heartbeat, checkpoint) is older
        than `older_than_seconds`.
        """
        return await asyncio.to_thread(self._store.stalled, older_than_seconds)

    async def stats(self) -> builtins.list[PathStats]:
        """Per from→to pair of agents: totals, outcomes and median times to claim and complete."""
        return await asyncio.to_thread(self._store.stats)

    async def queue_counts(self) -> builtins.list[QueueCount]:
        """The queue at a glance: how many handoffs are in each status, per addressee (checkpoints
        left out), in status then agent order.
        """
        return await asyncio.to_thread(self._store.queue_counts)

    async def metrics(self) -> Metrics:
        """The store at a glance, for operators and their monitoring: handoffs by status and
        addressee, events by kind (created, claimed, completed, failed, retried, revoked,
        lease_expired, ...), the time from creation to first claim and from claim to settling as
        histograms, open escalations and task steps by status. Computed from the store, so every
        server over one database reports the same.
        """
        return await asyncio.to_thread(self._store.metrics)

    async def reap(self) -> int:
        """Applies every lapse that is due (leases, expiries) now; returns how many records changed."""
        return await asyncio.to_thread(self._store.reap)

    async def backup(self, path: StrPath) -> None:
        """Writes a portable backup of the whole store to `path` (a new file: an existing one is
        refused) while others keep working: settings, handoffs with their claim digests, events and
        every document, one consistent snapshot, checksummed. `restore` reads it into any store.
        """
        await asyncio.to_thread(self._store.backup, path)

    async def restore(self, path: StrPath) -> None:
        """Restores the backup at `path` (written by `backup` on any kind of store) into this store,
        which must be empty. The whole file is checked first: a damaged, cut or foreign file is
        refused, naming what is wrong, and nothing is written.
        """
        await asyncio.to_thread(self._store.restore, path)

    async def check(self, *, repair: Optional[bool] = None) -> CheckReport:
        """Looks through the whole store for damage (files deleted, emptied or edited by hand, links
        planted, a bad disk) and reports each piece by name. With `repair`, a files store moves what
        is damaged into its `quarantine/` folder and mends what referred to it; a database store
        reports only (restore a backup).
        """
        return await asyncio.to_thread(self._store.check, repair=repair)

    async def capabilities(self) -> Capabilities:
        """What the store can do beyond what every store does: durable, shared by processes or by
        machines, backups, waking waiting workers.
        """
        return await asyncio.to_thread(self._store.capabilities)

    async def create_task(
        self,
        name: str,
        goal: Optional[str] = None,
        steps: Optional[Sequence[Mapping[str, Any]]] = None,
        *,
        id: Optional[str] = None,
        objectives: Optional[Sequence[str]] = None,
        success_criteria: Optional[Sequence[str]] = None,
        context: Optional[Mapping[str, Any]] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        orchestrator: Optional[str] = None,
        escalate_to: Optional[str] = None,
    ) -> Task:
        """Creates a task (status `pending`) with its plan, checked whole: every problem at once
        (duplicate step ids, unknown dependencies, cycles named as a path, agent names, sizes);
        nothing is written when there is one. `start_task` offers its first steps.
        """
        return await asyncio.to_thread(
            self._store.create_task,
            name,
            goal,
            steps,
            id=id,
            objectives=objectives,
            success_criteria=success_criteria,
            context=context,
            metadata=metadata,
            orchestrator=orchestrator,
            escalate_to=escalate_to,
        )

    async def start_task(self, id: str) -> Task:
        """Starts a pending task: the steps that wait for nothing are offered as handoffs to their
        agents, who take them with `claim_next`.
        """
        return await asyncio.to_thread(self._store.start_task, id)

    async def get_task(self, id: str) -> Task:
        """The task with this id, with its plan and each step's status; `NotFound` if there is none."""
        return await asyncio.to_thread(self._store.get_task, id)

    async def list_tasks(
        self,
        status: Optional[TaskStatus] = None,
        limit: Optional[int] = None,
        *,
        after: Optional[str] = None,
    ) -> builtins.list[TaskSummary]:
        """Task summaries (no steps), oldest first, a page at a time."""
        return await asyncio.to_thread(self._store.list_tasks, status, limit, after=after)

    async def update_task(
        self,
        id: str,
        expected_version: int,
        *,
        goal: Optional[str] = None,
        success_criteria: Optional[Sequence[str]] = None,
        context: Optional[Mapping[str, Any]] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        add_steps: Optional[Sequence[Mapping[str, Any]]] = None,
        artifacts: Optional[Sequence[Any]] = None,
        issues: Optional[Sequence[Any]] = None,
    ) -> Task:
        """Changes a task if it is still at `expected_version` (compare-and-swap), else `Conflict`
        naming both versions: each field given replaces the task's, and `add_steps` extends its plan
        (checked with the plan, every problem at once).
        """
        return await asyncio.to_thread(
            self._store.update_task,
            id,
            expected_version,
            goal=goal,
            success_criteria=success_criteria,
            context=context,
            metadata=metadata,
            add_steps=add_steps,
            artifacts=artifacts,
            issues=issues,
        )

    async def pause_task(self, id: str) -> Task:
        """Pauses a task: its offers nobody holds are withdrawn and no step is offered until it
        resumes; steps already claimed may finish.
        """
        return await asyncio.to_thread(self._store.pause_task, id)

    async def resume_task(self, id: str) -> Task:
        """Resumes a paused task: the steps it withdrew or whose dependencies finished meanwhile are
        offered. A task that cannot go on (every open step waits for an escalation) is refused,
        naming the escalations and what to call.
        """
        return await asyncio.to_thread(self._store.resume_task, id)

    async def cancel_task(self, id: str, reason: Optional[str] = None) -> Task:
        """Cancels a task: offers nobody took are withdrawn and its unfinished steps cancelled;
        steps already claimed may finish.
        """
        return await asyncio.to_thread(self._store.cancel_task, id, reason)

    async def join_task(
        self,
        id: str,
        agent: str,
        *,
        role: Optional[str] = None,
        objectives: Optional[Sequence[Any]] = None,
    ) -> Task:
        """`agent` joins a task, with an optional `role`; the steps named in `objectives` (steps
        without an agent, such as the objectives `"1"`, `"2"`, ... of a task created with
        `objectives`) are assigned to it, and offered to it alone. Its branch is
        `task/<id>/<agent>`; the task's log and replay show an `agent_join`. Steps without an agent
        are offered to the task's members: joining is how an agent may take them.
        """
        return await asyncio.to_thread(
            self._store.join_task,
            id,
            agent,
            role=role,
            objectives=objectives,
        )

    async def complete_task(
        self,
        id: str,
        result_summary: Optional[str] = None,
        merge_to_main: Optional[bool] = None,
    ) -> Task:
        """Completes a task on its caller's word, with `result_summary`: the steps nobody holds that
        are not done are skipped (offers and escalations withdrawn); a step a worker holds refuses
        it. With `merge_to_main`, in the same transaction, the verified facts and the verified or
        cherry-picked conversations of every branch of the task reach `main`; unverified items stay
        on the task's branches. A task that completed by itself takes the summary and the merge.
        """
        return await asyncio.to_thread(self._store.complete_task, id, result_summary, merge_to_main)

    async def fail_task(self, id: str, reason: Optional[str] = None) -> Task:
        """Fails a task for `reason`: offers and escalations nobody holds are withdrawn and its
        unfinished steps cancelled (steps already claimed may finish); its history says it failed.
        """
        return await asyncio.to_thread(self._store.fail_task, id, reason)

    async def escalate_step(
        self,
        claim: _AnyClaim,
        to_agent: str,
        *,
        instructions: Optional[str] = None,
        blockers: Optional[Sequence[str]] = None,
        priority_items: Optional[Sequence[Any]] = None,
    ) -> Handoff:
        """The holder of a step hands it on, with its claim, as an `escalation` handoff to
        `to_agent`, linked to the step: it carries `instructions`, `blockers` and `priority_items`,
        and its successor packet what the holder knew; completing it completes the step. The
        holder's handoff completes, saying so. Returns the escalation.
        """
        return await asyncio.to_thread(
            self._store.escalate_step,
            claim,
            to_agent,
            instructions=instructions,
            blockers=blockers,
            priority_items=priority_items,
        )

    async def rerun_task(
        self,
        task_id: Optional[str] = None,
        *,
        bundle_id: Optional[str] = None,
        id: Optional[str] = None,
        name: Optional[str] = None,
        agents: Optional[Mapping[str, Any]] = None,
        instructions: Optional[Mapping[str, Any]] = None,
        context: Optional[Mapping[str, Any]] = None,
    ) -> Task:
        """Runs a task again: a new task (pending; `start_task` starts it) with the plan of
        `task_id`, or of the task `bundle_id` was made from, with other `agents`, `instructions` or
        `context` where given; its branch `task/<id>` starts with the earlier run's verified
        knowledge (the bundle's, or a bundle made of the task's), and its metadata names the earlier
        run (`rerun_of`), so that `compare` sets the two side by side.
        """
        return await asyncio.to_thread(
            self._store.rerun_task,
            task_id,
            bundle_id=bundle_id,
            id=id,
            name=name,
            agents=agents,
            instructions=instructions,
            context=context,
        )

    async def fail_step(self, claim: _AnyClaim, error: str) -> Handoff:
        """Reports that a step's work failed, with its claim: the step is offered again while
        attempts remain, then escalated (the task paused until `resolve_escalation`).
        `InvalidTransition` for a handoff that carries no step.
        """
        return await asyncio.to_thread(self._store.fail_step, claim, error)

    async def resolve_escalation(
        self,
        claim: _AnyClaim,
        resolution: str,
        retry: Optional[bool] = None,
    ) -> Task:
        """A human's answer to a step that failed on every attempt, given with the escalation's
        claim: the escalation completes with `resolution` and the step is offered again with its
        attempts reset (`retry`) or skipped, its dependents going on without it; a task the
        escalation paused resumes.
        """
        return await asyncio.to_thread(self._store.resolve_escalation, claim, resolution, retry)

    async def task_events(self, id: str) -> builtins.list[TaskEvent]:
        """The task's log, oldest first: created, started, each step offered, started, completed,
        failed, escalated or skipped, paused, resumed, updated, cancelled, completed.
        """
        return await asyncio.to_thread(self._store.task_events, id)

    async def task_history(self, limit: Optional[int] = None) -> builtins.list[HistoryEntry]:
        """Finished tasks, newest first, in the seed's `task-history.json` form: how each ended
        (`success`, `partial` with skipped steps, `failure`), its duration, steps, retries and the
        tokens its workers reported.
        """
        return await asyncio.to_thread(self._store.task_history, limit)

    async def task_statistics(self) -> TaskStatistics:
        """Statistics over every finished task: how many, the share that succeeded, the mean
        duration, and how many ended each way.
        """
        return await asyncio.to_thread(self._store.task_statistics)

    async def prune(
        self,
        keep_last: Optional[int] = None,
        keep_details_days: Optional[int] = None,
    ) -> int:
        """Keeps the details (steps, log and handoff records) of the newest `keep_last` finished
        tasks (default 100) finished less than `keep_details_days` ago (default 30); older finished
        tasks keep only their history entry, and their handoffs go with their events. Unfinished
        tasks are never touched. Returns how many tasks were pruned.
        """
        return await asyncio.to_thread(self._store.prune, keep_last, keep_details_days)

    async def memory_get(self, scope: str) -> Optional[Memory]:
        """The memory of `scope` (`agent:writer`, `session:s1`, `shared`, ...) with its version;
        nothing when none was written.
        """
        return await asyncio.to_thread(self._store.memory_get, scope)

    async def memory_put(
        self,
        scope: str,
        value: Mapping[str, Any],
        expected_version: Optional[int] = None,
    ) -> Memory:
        """Writes the memory of `scope`. With `expected_version` (0: nothing written yet) the write
        happens only if the scope is still at that version, else `Conflict` naming both versions.
        """
        return await asyncio.to_thread(self._store.memory_put, scope, value, expected_version)

    async def memory_list(self, prefix: Optional[str] = None) -> builtins.list[Memory]:
        """Every scope's memory whose scope starts with `prefix` (all without one), in scope order."""
        return await asyncio.to_thread(self._store.memory_list, prefix)

    async def memory_delete(self, scope: str, expected_version: Optional[int] = None) -> bool:
        """Forgets the memory of `scope`; with `expected_version`, only if it is still at it
        (`Conflict` otherwise). Whether there was anything to forget.
        """
        return await asyncio.to_thread(self._store.memory_delete, scope, expected_version)

    async def session(self, session_id: str) -> Session:
        """Who currently owns a conversation (the holder of its latest handoff once taken, else its
        sender), its handoffs as hops, and its shared context (the memory `session:<id>`).
        """
        return await asyncio.to_thread(self._store.session, session_id)

    async def initialize(
        self,
        task_id: str,
        *,
        manager: str,
        worker: str,
        instructions: str,
        success_criteria: Sequence[str],
        context: Optional[Mapping[str, Any]] = None,
        quality_gates: Optional[Sequence[str]] = None,
        max_iterations: Optional[int] = None,
        max_retries: Optional[int] = None,
        escalate_to: Optional[str] = None,
    ) -> Handoff:
        """Starts a manager/worker run on a task: the initialization (iteration 1) goes to the
        worker, who takes it with `claim_next` and answers with `report` or `report_error`. The
        manager → worker checks run first (instructions given, at least one success criterion),
        every problem at once; a task runs the protocol once.
        """
        return await asyncio.to_thread(
            self._store.initialize,
            task_id,
            manager=manager,
            worker=worker,
            instructions=instructions,
            success_criteria=success_criteria,
            context=context,
            quality_gates=quality_gates,
            max_iterations=max_iterations,
            max_retries=max_retries,
            escalate_to=escalate_to,
        )

    async def report(
        self,
        claim: _AnyClaim,
        status: Literal["COMPLETED", "PARTIAL", "FAILED"],
        *,
        accomplished: Optional[Sequence[str]] = None,
        files_modified: Optional[Sequence[Mapping[str, Any]]] = None,
        tests: Optional[Mapping[str, Any]] = None,
        issues: Optional[Sequence[str]] = None,
        validation: Optional[Sequence[str]] = None,
    ) -> Handoff:
        """The worker's report on the instructions it holds: a `progress` message goes to the
        manager. The worker → manager checks run first: every changed file described, issues given
        unless the status is COMPLETED.
        """
        return await asyncio.to_thread(
            self._store.report,
            claim,
            status,
            accomplished=accomplished,
            files_modified=files_modified,
            tests=tests,
            issues=issues,
            validation=validation,
        )

    async def decide(
        self,
        claim: _AnyClaim,
        decision: Literal["COMPLETE", "CONTINUE", "ESCALATE", "REFINE"],
        *,
        instructions: Optional[str] = None,
        context_updates: Optional[Mapping[str, Any]] = None,
        escalation_details: Optional[Mapping[str, Any]] = None,
        summary: Optional[str] = None,
    ) -> Optional[Handoff]:
        """The manager's decision on the report (or the human's resolution) it holds. CONTINUE and
        REFINE send `instructions` to the worker for the next iteration (or, past `max_iterations`,
        an escalation); COMPLETE ends the run and returns nothing; ESCALATE sends
        `escalation_details` to whoever the run escalates to.
        """
        return await asyncio.to_thread(
            self._store.decide,
            claim,
            decision,
            instructions=instructions,
            context_updates=context_updates,
            escalation_details=escalation_details,
            summary=summary,
        )

    async def report_error(
        self,
        claim: _AnyClaim,
        error_type: Literal["implementation", "configuration", "dependency", "integration"],
        severity: Literal["low", "medium", "high", "critical"],
        description: str,
        *,
        context: Optional[str] = None,
        attempted_solutions: Optional[Sequence[str]] = None,
        error_messages: Optional[Sequence[str]] = None,
        affected_files: Optional[Sequence[str]] = None,
    ) -> Handoff:
        """The worker's error report on the instructions it holds: an `error_recovery` message goes
        to the manager, who answers with `recover` or `escalate`.
        """
        return await asyncio.to_thread(
            self._store.report_error,
            claim,
            error_type,
            severity,
            description,
            context=context,
            attempted_solutions=attempted_solutions,
            error_messages=error_messages,
            affected_files=affected_files,
        )

    async def recover(
        self,
        claim: _AnyClaim,
        strategy: str,
        steps: Sequence[str],
        *,
        alternatives: Optional[Sequence[str]] = None,
        success_indicators: Optional[Sequence[str]] = None,
        escalation_trigger: Optional[str] = None,
    ) -> Handoff:
        """The manager's recovery steps for the error report it holds: an `error_recovery` message
        goes to the worker with one retry more; past `max_retries` the run escalates instead.
        """
        return await asyncio.to_thread(
            self._store.recover,
            claim,
            strategy,
            steps,
            alternatives=alternatives,
            success_indicators=success_indicators,
            escalation_trigger=escalation_trigger,
        )

    async def escalate(
        self,
        claim: _AnyClaim,
        category: Literal["technical", "configuration", "architectural", "resource", "security"],
        severity: Literal["low", "medium", "high", "critical"],
        urgency: Literal["low", "medium", "high", "immediate"],
        blocker_type: Literal["skill", "access", "design", "environment", "dependency"],
        description: str,
        impact: str,
        recommendation: str,
    ) -> Handoff:
        """The manager hands the run to a human: an `escalation` goes to whoever the run escalates
        to, with the whole history and where the work stands.
        """
        return await asyncio.to_thread(
            self._store.escalate,
            claim,
            category,
            severity,
            urgency,
            blocker_type,
            description,
            impact,
            recommendation,
        )

    async def resolve(
        self,
        claim: _AnyClaim,
        resolution: str,
        *,
        resume_instructions: Optional[str] = None,
    ) -> Handoff:
        """A human's answer to the escalation they hold: a `progress` message carrying it goes to
        the manager, who decides how the worker goes on; the run's iteration and retry allowances
        start afresh.
        """
        return await asyncio.to_thread(
            self._store.resolve,
            claim,
            resolution,
            resume_instructions=resume_instructions,
        )

    async def protocol_run(self, task_id: str) -> ProtocolRun:
        """A task's protocol run as it stands: its phase (who holds the latest message), the
        iteration, retries, escalations, history and the id of the message in flight.
        """
        return await asyncio.to_thread(self._store.protocol_run, task_id)

    async def protocol_history(self, task_id: str) -> builtins.list[Handoff]:
        """The messages of a task's run, oldest first, each a handoff with its `protocol` body."""
        return await asyncio.to_thread(self._store.protocol_history, task_id)

    async def protocol_stats(self) -> ProtocolStats:
        """How the store's protocol runs went: runs, completions, the first-try completion rate, the
        escalation rate, retries, iterations per run and the median time per iteration.
        """
        return await asyncio.to_thread(self._store.protocol_stats)

    async def add_conversation(
        self,
        branch: str,
        messages: Sequence[Any],
        *,
        title: Optional[str] = None,
        task_id: Optional[str] = None,
        agent: Optional[str] = None,
    ) -> Conversation:
        """Writes a conversation on a branch (`main`, `task/<task>` or `task/<task>/<agent>`,
        created on first use), its messages numbered from 1 (`seq`). Messages come in the OpenAI
        chat shape or as Responses / Agents SDK items, Anthropic messages or LangChain message
        dicts.
        """
        return await asyncio.to_thread(
            self._store.add_conversation,
            branch,
            messages,
            title=title,
            task_id=task_id,
            agent=agent,
        )

    async def append_messages(self, conversation_id: str, messages: Sequence[Any]) -> Conversation:
        """Adds messages at the end of a conversation, numbered after its last."""
        return await asyncio.to_thread(self._store.append_messages, conversation_id, messages)

    async def get_conversation(self, id: str) -> Conversation:
        """The conversation with this id; `NotFound` if there is none."""
        return await asyncio.to_thread(self._store.get_conversation, id)

    async def messages(
        self,
        id: str,
        *,
        from_seq: Optional[int] = None,
        to_seq: Optional[int] = None,
    ) -> builtins.list[dict[str, Any]]:
        """A conversation's messages `from_seq..=to_seq` (all of them by default), in order, each
        with its `seq` and where it was cherry-picked to.
        """
        return await asyncio.to_thread(self._store.messages, id, from_seq=from_seq, to_seq=to_seq)

    async def list_conversations(
        self,
        *,
        branch: Optional[str] = None,
        task_id: Optional[str] = None,
    ) -> builtins.list[Conversation]:
        """The conversations of a branch, of a task, or of the whole store, oldest first."""
        return await asyncio.to_thread(
            self._store.list_conversations,
            branch=branch,
            task_id=task_id,
        )

    async def cherry_pick(
        self,
        conversation_id: str,
        target_branch: str,
        verifier: Optional[_Verifier] = None,
        *,
        from_seq: Optional[int] = None,
        to_seq: Optional[int] = None,
        title: Optional[str] = None,
        verify: Optional[bool] = None,
    ) -> Conversation:
        """Copies the messages `from_seq..=to_seq` of a conversation (all of it by default) into a
        new conversation on `target_branch`; the source messages are marked `cherry_picked_to` it.
        The range must lie inside the conversation, `from_seq ≤ to_seq`. With `verify`, the
        verification gate scores what was picked before it is written (a verifier, the judge
        command, or the MCP client's model), and the pick is written with its verdict; without a
        judge to ask, `verify` is refused and nothing is written.
        """
        return await asyncio.to_thread(
            self._store.cherry_pick,
            conversation_id,
            target_branch,
            _from_thread(verifier),
            from_seq=from_seq,
            to_seq=to_seq,
            title=title,
            verify=verify,
        )

    async def cherry_pick_decisions(
        self,
        conversation_id: str,
        target_branch: str,
        judge: Optional[_Judge] = None,
    ) -> Conversation:
        """Copies a conversation's decision points into a new conversation on `target_branch`: by
        the seed's heuristics, assistant messages that state an approach ("I'll", "let me", "the
        approach", "decided"), the first one after a tool that failed, and the one that leads to a
        tool call that succeeded. A judge (a face's callable, or the MCP client's model) may decide
        instead; when it fails, nothing is written.
        """
        return await asyncio.to_thread(
            self._store.cherry_pick_decisions,
            conversation_id,
            target_branch,
            _from_thread(judge),
        )

    async def cherry_pick_tools(self, conversation_id: str, target_branch: str) -> Conversation:
        """Copies a conversation's tool-call sequences (each call with its results) into a new
        conversation on `target_branch`.
        """
        return await asyncio.to_thread(
            self._store.cherry_pick_tools,
            conversation_id,
            target_branch,
        )

    async def cherry_pick_to_facts(
        self,
        conversation_id: str,
        target_branch: str,
        extractor: Optional[_Extractor] = None,
    ) -> builtins.list[Fact]:
        """Draws facts from a conversation and writes them on `target_branch` as candidates (status
        `active`, for the gate to verify later): by an extractor (a face's callable, the judge
        command, or the MCP client's model) or, without one, by the heuristics: sentences of the
        assistant's messages that state a conclusion or a decision ("the root cause is", "fixed by",
        "I'll", "the approach is", ...) or name a file or a number. Each fact's `source` is the
        conversation (and the message). A conversation that states nothing writes nothing.
        """
        return await asyncio.to_thread(
            self._store.cherry_pick_to_facts,
            conversation_id,
            target_branch,
            _from_thread(extractor),
        )

    async def add_facts(self, branch: str, facts: Sequence[Any]) -> builtins.list[Fact]:
        """Writes facts on a branch (status `active`), checked whole first: every problem at once,
        nothing written when there is one.
        """
        return await asyncio.to_thread(self._store.add_facts, branch, facts)

    async def facts(
        self,
        branch: str,
        *,
        status: Optional[Literal["active", "verified", "invalidated", "promoted", "superseded"]] = None,
    ) -> builtins.list[Fact]:
        """The facts of a branch, oldest first, optionally only those in one status (`active`,
        `verified`, `invalidated`, `promoted`, `superseded`).
        """
        return await asyncio.to_thread(self._store.facts, branch, status=status)

    async def branches(self) -> builtins.list[dict[str, Any]]:
        """Every branch that holds a conversation or a fact, with its parent, in name order."""
        return await asyncio.to_thread(self._store.branches)

    async def verify(
        self,
        branch: str,
        verifier: Optional[_Verifier] = None,
        *,
        fact_threshold: Optional[float] = None,
        invalidate_below: Optional[float] = None,
        conversation_threshold: Optional[float] = None,
    ) -> VerifyReport:
        """Scores a branch's facts and conversations and stores the verdicts: a fact scoring at
        least `fact_threshold` is verified, a conversation at least `conversation_threshold`; below
        `invalidate_below` either is invalidated. Without a verifier every score is the neutral 0.5
        and nothing is written (no verdict given or undone; the report says what a judge would
        score); an item the verifier fails on, or scores with NaN or outside 0..1, is left as it was
        and reported.
        """
        return await asyncio.to_thread(
            self._store.verify,
            branch,
            _from_thread(verifier),
            fact_threshold=fact_threshold,
            invalidate_below=invalidate_below,
            conversation_threshold=conversation_threshold,
        )

    async def merge(self, branch: str, *, into: Optional[str] = None) -> MergeReport:
        """Moves a branch's verified knowledge into its parent (or `into`): verified facts are
        copied (their sources become `promoted`) and verified or cherry-picked conversations are
        copied with their messages; unverified and invalidated items stay. Merging twice adds
        nothing.
        """
        return await asyncio.to_thread(self._store.merge, branch, into=into)

    async def context_for(
        self,
        handoff_id: str,
        *,
        budget_tokens: Optional[int] = None,
        budget_chars: Optional[int] = None,
        transcript: Optional[Sequence[Any]] = None,
        summarize: Optional[_Summarizer] = None,
    ) -> Packet:
        """The successor's packet for a handoff: everything the store knows that the next agent
        needs (the task's goal and plan, the agents before, the outputs it depends on, verified and
        predecessor's knowledge, relevant knowledge on `main`), within the budget, redacted, with
        the manifest of what was kept, cut and left out.
        """
        return await asyncio.to_thread(
            self._store.context_for,
            handoff_id,
            budget_tokens=budget_tokens,
            budget_chars=budget_chars,
            transcript=transcript,
            summarize=_from_thread(summarize),
        )

    async def curation_events(
        self,
        *,
        task_id: Optional[str] = None,
    ) -> builtins.list[dict[str, Any]]:
        """The curation log of a task (every change on its branches: conversations added, messages
        appended, cherry-picks, facts, verifications, merges), or of `main` without one, in order.
        """
        return await asyncio.to_thread(self._store.curation_events, task_id=task_id)

    async def create_bundle(
        self,
        name: str,
        *,
        task_id: Optional[str] = None,
        branch: Optional[str] = None,
        verified_only: Optional[bool] = None,
        visibility: Optional[Literal["private", "team", "public"]] = None,
        bundle_type: Optional[Literal["task_export", "curated", "template"]] = None,
        tags: Optional[Sequence[str]] = None,
        description: Optional[str] = None,
        redact: Optional[bool] = None,
    ) -> Bundle:
        """Packages a task's (or a branch's) knowledge as a bundle: its verified facts and key
        conversations with their messages, the task's summary and the scores, redacted by default,
        with a share token (`kb_` and 256 random bits) that finds it unless it is private.
        """
        return await asyncio.to_thread(
            self._store.create_bundle,
            name,
            task_id=task_id,
            branch=branch,
            verified_only=verified_only,
            visibility=visibility,
            bundle_type=bundle_type,
            tags=tags,
            description=description,
            redact=redact,
        )

    async def get_bundle(self, id: str) -> Bundle:
        """The bundle with this id; `NotFound` if there is none."""
        return await asyncio.to_thread(self._store.get_bundle, id)

    async def list_bundles(
        self,
        *,
        visibility: Optional[Literal["private", "team", "public"]] = None,
    ) -> builtins.list[Bundle]:
        """The store's bundles, oldest first, optionally only those of one visibility."""
        return await asyncio.to_thread(self._store.list_bundles, visibility=visibility)

    async def bundle_by_token(self, token: str) -> Bundle:
        """The bundle a share token opens. A private bundle is never found by its token; a wrong
        token, a private bundle's and a missing bundle all give the same `NotFound`.
        """
        return await asyncio.to_thread(self._store.bundle_by_token, token)

    async def set_visibility(
        self,
        id: str,
        visibility: Literal["private", "team", "public"],
    ) -> Bundle:
        """Changes who may find a bundle by its token."""
        return await asyncio.to_thread(self._store.set_visibility, id, visibility)

    async def sign_bundle(self, id: str, *, secret_key: str) -> Bundle:
        """Signs a bundle with a secret key (`ed25519-secret:...`): a store that trusts its public
        key imports the bundle's verdicts as verified. The signature travels in the portable form.
        """
        return await asyncio.to_thread(self._store.sign_bundle, id, secret_key=secret_key)

    async def trust_bundle_keys(
        self,
        *,
        trust: Optional[Sequence[str]] = None,
        distrust: Optional[Sequence[str]] = None,
    ) -> builtins.list[TrustedKey]:
        """Trusts public keys (`ed25519:...`) to vouch for bundles, or stops trusting them: a bundle
        signed by a trusted key is imported with its verdicts; any other bundle's verdicts stay its
        claim. Returns the keys trusted afterwards (none given: only lists them).
        """
        return await asyncio.to_thread(
            self._store.trust_bundle_keys,
            trust=trust,
            distrust=distrust,
        )

    async def delete_bundle(self, id: str) -> None:
        """Deletes a bundle and its share token; what was imported from it stays."""
        await asyncio.to_thread(self._store.delete_bundle, id)

    async def import_bundle(
        self,
        bundle: Optional[Any] = None,
        *,
        bundle_id: Optional[str] = None,
        share_token: Optional[str] = None,
        target_branch: Optional[str] = None,
        dry_run: Optional[bool] = None,
    ) -> ImportReport:
        """Imports a bundle into a branch: its portable JSON (as text or as an object), or a bundle
        of this store by its id or its share token. It is checked whole before anything is written:
        size and nesting before parsing, the schema version, the content hash, every id, text and
        message. Importing the same bundle again adds nothing; the report says what was added and
        what was already there.
        """
        return await asyncio.to_thread(
            self._store.import_bundle,
            bundle,
            bundle_id=bundle_id,
            share_token=share_token,
            target_branch=target_branch,
            dry_run=dry_run,
        )

    async def verify_bundle(
        self,
        id: str,
        verifier: Optional[_Verifier] = None,
        *,
        fact_threshold: Optional[float] = None,
        invalidate_below: Optional[float] = None,
        conversation_threshold: Optional[float] = None,
    ) -> Bundle:
        """Runs the verification gate on a bundle's contents: a verifier (a face's callable, the
        judge command, or the MCP client's model) scores each of its facts and conversations, and
        the bundle records the outcome: `verification_status` `verified` when every item passed
        (otherwise `draft`), `verification_score` (the mean) and `verified_by` (the verifier). Its
        portable form stays as it was (its hash and signature valid); each item's score goes to the
        curation log. Without a judge to ask, or when it fails on an item, nothing is recorded.
        """
        return await asyncio.to_thread(
            self._store.verify_bundle,
            id,
            _from_thread(verifier),
            fact_threshold=fact_threshold,
            invalidate_below=invalidate_below,
            conversation_threshold=conversation_threshold,
        )

    async def replay(self, task_id: str, *, verified_only: Optional[bool] = None) -> TaskReplay:
        """A task's whole run as one timeline, oldest first (`at`, `type`, `agent`, `summary`,
        `data`): its handoffs' events, its plan's log and its curation log; each agent's
        contribution; its key facts and conversations; how it ended.
        """
        return await asyncio.to_thread(self._store.replay, task_id, verified_only=verified_only)

    async def compare(self, task_a: str, task_b: str) -> TaskComparison:
        """Two runs side by side (an original and its rerun): their agents, decision points, key
        facts (only in one, in both), outcomes and durations.
        """
        return await asyncio.to_thread(self._store.compare, task_a, task_b)
    # <<< GENERATED
