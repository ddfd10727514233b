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
from datetime import datetime
from typing import Any, Optional, Union

from handoff_core import _native
from handoff_core._native import (
    Chain,
    ChainPolicy,
    Claim,
    ClaimRef,
    Event,
    Handoff,
    Limits,
    ManualClock,
    PathStats,
)
from handoff_core._types import Kind, Status, StrPath, Synchronous

__all__ = ["Store", "open"]

_Texts = Optional[Sequence[str]]
_Seconds = Union[int, float]
_AnyClaim = Union[Claim, ClaimRef]


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

    async def __aexit__(self, *_exc: object) -> bool:
        self._store.close()
        return False

    def close(self) -> None:
        self._store.close()

    def now(self) -> datetime:
        """The store clock's current time (no I/O, so not a coroutine)."""
        return self._store.now()

    def __repr__(self) -> str:
        return f"<handoff_core.aio.Store of {self._store!r}>"

    async def create(
        self,
        task_id: str,
        goal: str,
        *,
        from_agent: Optional[str] = None,
        to_agent: Optional[str] = None,
        kind: Optional[Kind] = None,
        reason: Optional[str] = None,
        context_pct: Optional[int] = None,
        progress: Optional[str] = None,
        completed: _Texts = None,
        pending: _Texts = None,
        decisions: _Texts = None,
        assumptions: _Texts = None,
        warnings: _Texts = None,
        errors: _Texts = None,
        files: _Texts = None,
        instructions: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        id: Optional[str] = None,
        parent_id: Optional[str] = None,
        session_id: Optional[str] = None,
        blockers: _Texts = None,
        locked_files: _Texts = None,
        priority_items: _Texts = None,
        success_criteria: _Texts = None,
        expires_at: Optional[datetime] = None,
        max_attempts: Optional[int] = None,
        timeout_seconds: Optional[int] = None,
    ) -> Handoff:
        return await asyncio.to_thread(
            self._store.create,
            task_id,
            goal,
            from_agent=from_agent,
            to_agent=to_agent,
            kind=kind,
            reason=reason,
            context_pct=context_pct,
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
            timeout_seconds=timeout_seconds,
        )

    async def create_many(self, records: Sequence[Mapping[str, Any]]) -> builtins.list[Handoff]:
        return await asyncio.to_thread(self._store.create_many, records)

    async def get(self, id: str) -> Handoff:
        return await asyncio.to_thread(self._store.get, id)

    async def list(
        self,
        status: Optional[Status] = None,
        task_id: Optional[str] = None,
        to_agent: Optional[str] = None,
        limit: Optional[int] = None,
        *,
        kind: Optional[Kind] = None,
    ) -> builtins.list[Handoff]:
        return await asyncio.to_thread(self._store.list, status, task_id, to_agent, limit, kind=kind)

    async def claim(self, id: str, agent: str, lease_seconds: Optional[_Seconds] = None) -> Claim:
        return await asyncio.to_thread(self._store.claim, id, agent, lease_seconds)

    async def claim_next(
        self, agent: str, task_id: Optional[str] = None, lease_seconds: Optional[_Seconds] = None
    ) -> Optional[Claim]:
        return await asyncio.to_thread(self._store.claim_next, agent, task_id, lease_seconds)

    async def heartbeat(self, claim: _AnyClaim) -> Handoff:
        return await asyncio.to_thread(self._store.heartbeat, claim)

    async def release(self, claim: _AnyClaim, reason: str) -> Handoff:
        return await asyncio.to_thread(self._store.release, claim, reason)

    async def complete(self, claim: _AnyClaim, outcome: Optional[str] = None) -> Handoff:
        return await asyncio.to_thread(self._store.complete, claim, outcome)

    async def cancel_claim(self, claim: _AnyClaim, reason: Optional[str] = None) -> Handoff:
        return await asyncio.to_thread(self._store.cancel_claim, claim, reason)

    async def reject(self, id: str, agent: str, reason: str) -> Handoff:
        return await asyncio.to_thread(self._store.reject, id, agent, reason)

    async def cancel(self, id: str, by: str, reason: Optional[str] = None) -> Handoff:
        return await asyncio.to_thread(self._store.cancel, id, by, reason)

    async def reap(self) -> int:
        return await asyncio.to_thread(self._store.reap)

    async def backup(self, path: StrPath) -> None:
        await asyncio.to_thread(self._store.backup, path)

    async def events(
        self,
        id: Optional[str] = None,
        task_id: Optional[str] = None,
        after: Optional[int] = None,
        limit: Optional[int] = None,
    ) -> builtins.list[Event]:
        return await asyncio.to_thread(self._store.events, id, task_id, after, limit)

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

    async def chain(self, task_id: str) -> Chain:
        return await asyncio.to_thread(self._store.chain, task_id)

    async def checkpoint(
        self,
        task_id: str,
        agent: str,
        *,
        goal: str,
        reason: Optional[str] = None,
        context_pct: Optional[int] = None,
        progress: Optional[str] = None,
        completed: _Texts = None,
        pending: _Texts = None,
        decisions: _Texts = None,
        assumptions: _Texts = None,
        warnings: _Texts = None,
        errors: _Texts = None,
        files: _Texts = None,
        instructions: Optional[str] = None,
        metadata: Optional[Mapping[str, Any]] = None,
        id: Optional[str] = None,
        parent_id: Optional[str] = None,
        session_id: Optional[str] = None,
        blockers: _Texts = None,
        locked_files: _Texts = None,
        priority_items: _Texts = None,
        success_criteria: _Texts = None,
        expires_at: Optional[datetime] = None,
        max_attempts: Optional[int] = None,
        timeout_seconds: Optional[int] = None,
    ) -> Handoff:
        return await asyncio.to_thread(
            self._store.checkpoint,
            task_id,
            agent,
            goal=goal,
            reason=reason,
            context_pct=context_pct,
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
            timeout_seconds=timeout_seconds,
        )

    async def stalled(self, older_than_seconds: _Seconds) -> builtins.list[str]:
        return await asyncio.to_thread(self._store.stalled, older_than_seconds)

    async def stats(self) -> builtins.list[PathStats]:
        return await asyncio.to_thread(self._store.stats)
