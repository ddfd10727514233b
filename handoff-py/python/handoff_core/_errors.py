"""The exceptions of handoff_core, one class per kind of core error.

The binding raises them from one mapping function (``handoff-py/src/errors.rs``); each carries
the core error's fields as attributes. All of them pickle, so they cross process boundaries
(``multiprocessing``, ``concurrent.futures``) intact.
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = [
    "HandoffError",
    "NotFound",
    "AlreadyClaimed",
    "LeaseLost",
    "InvalidTransition",
    "ValidationError",
    "Conflict",
    "ChainViolation",
    "StorageError",
    "Busy",
]


def _restore(cls: type[HandoffError], message: str, fields: dict[str, Any]) -> HandoffError:
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.__dict__.update(fields)
    return err


class HandoffError(Exception):
    """Base class of every error handoff_core raises.

    ``code`` is the stable error code shared with the other bindings (``NOT_FOUND``, ...).
    """

    code: str = "HANDOFF"

    def __init__(self, message: str, *, code: Optional[str] = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), str(self), dict(self.__dict__)))


class NotFound(HandoffError):
    """No handoff has this ``id``."""

    code = "NOT_FOUND"

    def __init__(self, message: str, *, id: str) -> None:
        super().__init__(message)
        self.id = id


class AlreadyClaimed(HandoffError):
    """Another agent (``holder``) holds a live claim on handoff ``id``."""

    code = "ALREADY_CLAIMED"

    def __init__(self, message: str, *, id: str, holder: str) -> None:
        super().__init__(message)
        self.id = id
        self.holder = holder


class LeaseLost(HandoffError):
    """The claim with fencing ``token`` on handoff ``id`` is no longer current (its lease ran
    out and the handoff was claimed again, released or finished). Nothing was changed."""

    code = "LEASE_LOST"

    def __init__(self, message: str, *, id: str, token: int, reason: str) -> None:
        super().__init__(message)
        self.id = id
        self.token = token
        self.reason = reason


class InvalidTransition(HandoffError):
    """``event`` (claim, complete, reject, ...) is not allowed while handoff ``id`` is
    ``status``, or not for this agent; ``reason`` says why."""

    code = "INVALID_TRANSITION"

    def __init__(self, message: str, *, id: str, status: str, event: str, reason: str) -> None:
        super().__init__(message)
        self.id = id
        self.status = status
        self.event = event
        self.reason = reason


class ValidationError(HandoffError, ValueError):
    """The input broke one or more rules. ``problems`` lists every one as a
    ``(field, rule)`` tuple. Wrong argument types are reported here too, naming the argument.
    Also a ``ValueError``."""

    code = "VALIDATION"

    def __init__(self, message: str, *, problems: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.problems = problems

    @property
    def fields(self) -> list[str]:
        """The fields named by ``problems``, in order."""
        return [field for field, _ in self.problems]


class Conflict(HandoffError):
    """A handoff with the caller-supplied ``id`` exists already with different content.
    (Creating again with the *same* content returns the stored record: ids are idempotency
    keys.) Or a compare-and-swap (``update_task``, ``memory_put``) found ``id`` (a task, a memory
    scope) changed since it was read: it is at ``actual_version``, not ``expected_version``;
    nothing was changed. Both versions are ``None`` for a handoff."""

    code = "CONFLICT"

    def __init__(
        self,
        message: str,
        *,
        id: str,
        expected_version: Optional[int] = None,
        actual_version: Optional[int] = None,
    ) -> None:
        super().__init__(message)
        self.id = id
        self.expected_version = expected_version
        self.actual_version = actual_version


class ChainViolation(HandoffError):
    """The new hop would break the task's chain policy.

    ``path`` is the path the task would take with the refused hop at its end; ``rule`` is
    ``"max_handoffs"``, ``"revisit"`` or ``"not_collaborator"``; ``limit``, ``agent`` and
    ``pair`` (from, to) are set where the rule has them, else ``None``.
    """

    code = "CHAIN_VIOLATION"

    def __init__(
        self,
        message: str,
        *,
        task_id: str,
        path: list[str],
        rule: str,
        limit: Optional[int] = None,
        agent: Optional[str] = None,
        pair: Optional[tuple[str, str]] = None,
    ) -> None:
        super().__init__(message)
        self.task_id = task_id
        self.path = path
        self.rule = rule
        self.limit = limit
        self.agent = agent
        self.pair = pair


class StorageError(HandoffError):
    """The storage backend failed (I/O, corruption, an unknown schema), or the store was
    closed. ``detail`` says what failed; the backend's own error, if any, is the
    ``__cause__``."""

    code = "STORAGE"

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


class Busy(StorageError):
    """Another writer held the store's write lock longer than this store's
    ``lock_patience_seconds`` (it may be stopped or stuck). Nothing was changed and nothing is
    damaged: try again. ``detail`` says what was waited for. A ``StorageError``, so code that
    catches those catches this too."""

    code = "BUSY"


# Shown (and pickled) as `handoff_core.NotFound` etc., where users import them from.
for _cls in (
    HandoffError,
    NotFound,
    AlreadyClaimed,
    LeaseLost,
    InvalidTransition,
    ValidationError,
    Conflict,
    ChainViolation,
    StorageError,
    Busy,
):
    _cls.__module__ = "handoff_core"
del _cls
