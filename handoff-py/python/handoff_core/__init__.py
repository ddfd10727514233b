"""handoff_core: hand unfinished agent work to exactly one successor.

>>> import handoff_core as hc
>>> with hc.Store.memory() as store:
...     h = store.create("task-1", "Summarise the logs", from_agent="claude")
...     claim = store.claim(h.id, "gemini", lease_seconds=60)
...     done = store.complete(claim, outcome="summary in notes.md")
...     print(done.status, str(store.chain("task-1")))
completed claude → gemini

Everything here is the Rust core (``handoff-core``) seen from Python; ``handoff_core.aio``
offers the same store as coroutines.
"""

from handoff_core._errors import (
    AlreadyClaimed,
    Busy,
    ChainViolation,
    Conflict,
    HandoffError,
    InvalidTransition,
    LeaseLost,
    NotFound,
    StorageError,
    ValidationError,
)
from handoff_core._native import (
    MAX_DEPTH,
    SCHEMA_VERSION,
    Agent,
    AgentRegistry,
    Capabilities,
    Chain,
    ChainPolicy,
    Claim,
    ClaimRef,
    ContextBuilder,
    Event,
    Handoff,
    HandoffIntent,
    HistoryEntry,
    Hop,
    Limits,
    Manifest,
    ManualClock,
    Memory,
    Packet,
    PathStats,
    ProtocolRun,
    ProtocolStats,
    Redaction,
    Redactor,
    Session,
    Store,
    Task,
    TaskEvent,
    TaskStatistics,
    TaskSummary,
    __version__,
    connect,
    open,
    redact,
)
from handoff_core._types import EventKind, Kind, Multiple, Provider, Status, Synchronous, TaskStatus

from handoff_core import aio  # noqa: E402  (needs the names above)

__all__ = [
    "MAX_DEPTH",
    "SCHEMA_VERSION",
    "Agent",
    "AgentRegistry",
    "AlreadyClaimed",
    "Busy",
    "Capabilities",
    "Chain",
    "ChainPolicy",
    "ChainViolation",
    "Claim",
    "ClaimRef",
    "Conflict",
    "ContextBuilder",
    "Event",
    "EventKind",
    "Handoff",
    "HandoffError",
    "HandoffIntent",
    "HistoryEntry",
    "Hop",
    "InvalidTransition",
    "Kind",
    "LeaseLost",
    "Limits",
    "Manifest",
    "ManualClock",
    "Memory",
    "Multiple",
    "NotFound",
    "Packet",
    "PathStats",
    "ProtocolRun",
    "ProtocolStats",
    "Provider",
    "Redaction",
    "Redactor",
    "Session",
    "Status",
    "StorageError",
    "Store",
    "Synchronous",
    "Task",
    "TaskEvent",
    "TaskStatistics",
    "TaskStatus",
    "TaskSummary",
    "ValidationError",
    "__version__",
    "aio",
    "connect",
    "open",
    "redact",
]
