"""Type aliases of handoff_core's API (wire strings of the core's enums)."""

from __future__ import annotations

import os
from typing import Literal, Union

__all__ = [
    "Kind",
    "Status",
    "EventKind",
    "Synchronous",
    "Provider",
    "Multiple",
    "StrPath",
    "TaskStatus",
]

#: What kind of handoff a record is.
Kind = Literal[
    "full", "partial", "escalation", "checkpoint", "initialization", "progress", "error_recovery"
]
#: Where a handoff is in its lifecycle.
Status = Literal[
    "pending", "claimed", "completed", "rejected", "cancelled", "expired", "failed"
]
#: What an event of the log did.
EventKind = Literal[
    "created",
    "claimed",
    "heartbeat",
    "released",
    "lease_expired",
    "attempt_failed",
    "failed",
    "completed",
    "rejected",
    "cancelled",
    "expired",
    "revoked",
    "retried",
    "priority_changed",
]
#: Where a task stands.
TaskStatus = Literal["pending", "in_progress", "completed", "failed", "paused", "cancelled"]
#: How durable each SQLite commit is.
Synchronous = Literal["full", "normal"]
#: An LLM API whose tool format the agent registry speaks.
Provider = Literal["openai_chat", "openai_responses", "anthropic", "mcp"]
#: What ``AgentRegistry.detect`` does with several handoffs in one response.
Multiple = Literal["error", "first_wins", "first"]
#: A file system path.
StrPath = Union[str, "os.PathLike[str]"]
