# Stubs of the compiled module. Checked against the built module by `mypy.stubtest` in
# `make test`, so that they cannot drift from the Rust code.
import builtins
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal, Optional, Protocol, Union, final

from handoff_core._types import (
    EventKind,
    Kind,
    Multiple,
    Provider,
    Status,
    StrPath,
    Synchronous,
    TaskStatus,
)

_Seconds = Union[int, float]
#: A span of time a store operation takes: seconds, or a timedelta.
_Span = Union[int, float, timedelta]

class _SdkResponse(Protocol):
    """A provider SDK's response object (pydantic): OpenAI, Anthropic."""

    def model_dump_json(self) -> str: ...

_Response = Union[Mapping[str, Any], Sequence[Mapping[str, Any]], str, bytes, _SdkResponse]

class _ModelDump(Protocol):
    """A pydantic message object: an SDK item, a LangChain message."""

    def model_dump(self, *, mode: str) -> Any: ...

#: A verifier's answer: a score from 0 to 1, ``(score, explanation)`` or
#: ``{"score": ..., "explanation": ...}``.
_Score = Union[float, tuple[float, Optional[str]], Mapping[str, Any]]
#: Scores an item of curated memory (a ``dict``: ``kind``, ``text``, the fact's or the
#: conversation's fields, a conversation's ``messages``).
_Verifier = Callable[[dict[str, Any]], _Score]
#: Says whether a message (a ``dict`` with its ``index`` from 0) is a decision point.
_Judge = Callable[[dict[str, Any]], bool]
#: Draws facts from a conversation (a ``dict`` as a verifier reads it): a list of texts or
#: ``{"text", "confidence", "source"}`` dicts, or ``{"facts": [...]}``.
_Extractor = Callable[[dict[str, Any]], Any]
#: ``summarize(request) -> str``: ``request`` is ``{"id", "title", "text", "budget", "unit"}``.
_Summarizer = Callable[[dict[str, Any]], str]

#: An API whose chat input ``Packet.to_messages`` writes.
_MessageProvider = Literal["openai_chat", "openai_responses", "anthropic"]

__all__ = [
    "Agent",
    "AgentRegistry",
    "Bundle",
    "BundleKeyPair",
    "Capabilities",
    "Chain",
    "ChainPolicy",
    "CheckReport",
    "Claim",
    "ClaimRef",
    "ContextBuilder",
    "Conversation",
    "Damage",
    "Event",
    "Fact",
    "Handoff",
    "HandoffIntent",
    "HistoryEntry",
    "Hop",
    "ImportReport",
    "Lease",
    "Limits",
    "MAX_DEPTH",
    "Manifest",
    "ManualClock",
    "Memory",
    "MergeReport",
    "Packet",
    "PathStats",
    "ProtocolRun",
    "ProtocolStats",
    "QueueCount",
    "Redaction",
    "Redactor",
    "SCHEMA_VERSION",
    "Session",
    "Store",
    "Task",
    "TaskComparison",
    "TaskEvent",
    "TaskReplay",
    "TaskStatistics",
    "TaskSummary",
    "TrustedKey",
    "VerifyReport",
    "__version__",
    "connect",
    "generate_bundle_key",
    "open",
    "redact",
]

SCHEMA_VERSION: int
MAX_DEPTH: int
_UNRECEIVED: str
__version__: str

@final
class Handoff:
    @staticmethod
    def from_json(s: Union[str, bytes], *, limits: Optional[Limits] = None) -> Handoff: ...
    def to_json(self) -> str: ...
    def to_dict(self) -> dict[str, Any]: ...
    def to_markdown(self, *, redact: bool = True) -> str: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __reduce__(self) -> tuple[Any, tuple[str]]: ...
    @property
    def schema_version(self) -> int: ...
    @property
    def id(self) -> str: ...
    @property
    def task_id(self) -> str: ...
    @property
    def session_id(self) -> Optional[str]: ...
    @property
    def parent_id(self) -> Optional[str]: ...
    @property
    def kind(self) -> Kind: ...
    @property
    def reason(self) -> str: ...
    @property
    def from_agent(self) -> Optional[str]: ...
    @property
    def to_agent(self) -> Optional[str]: ...
    @property
    def goal(self) -> str: ...
    @property
    def progress_summary(self) -> str: ...
    @property
    def completed_steps(self) -> list[str]: ...
    @property
    def pending_steps(self) -> list[str]: ...
    @property
    def key_decisions(self) -> list[str]: ...
    @property
    def assumptions(self) -> list[str]: ...
    @property
    def warnings(self) -> list[str]: ...
    @property
    def unresolved_errors(self) -> list[str]: ...
    @property
    def blockers(self) -> list[str]: ...
    @property
    def modified_files(self) -> list[str]: ...
    @property
    def locked_files(self) -> list[str]: ...
    @property
    def instructions(self) -> Optional[str]: ...
    @property
    def priority_items(self) -> list[str]: ...
    @property
    def success_criteria(self) -> list[str]: ...
    @property
    def context_usage_percent(self) -> Optional[int]: ...
    @property
    def metadata(self) -> dict[str, Any]: ...
    @property
    def protocol(self) -> Optional[dict[str, Any]]:
        """A manager/worker protocol message's body (the seed's field names), or None."""
        ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def expires_at(self) -> Optional[datetime]: ...
    @property
    def max_attempts(self) -> int: ...
    @property
    def status(self) -> Status: ...
    @property
    def claimed_by(self) -> Optional[str]: ...
    @property
    def claim_token(self) -> Optional[int]: ...
    @property
    def lease_until(self) -> Optional[datetime]: ...
    @property
    def heartbeat_at(self) -> Optional[datetime]: ...
    @property
    def attempts(self) -> int: ...
    @property
    def completed_at(self) -> Optional[datetime]: ...
    @property
    def outcome(self) -> Optional[str]: ...

@final
class Claim:
    """Made only by ``Store.claim`` and ``Store.claim_next``; see ``ClaimRef``."""

    @property
    def handoff(self) -> Handoff: ...
    @property
    def token(self) -> int: ...
    @property
    def secret(self) -> str: ...
    @property
    def handoff_id(self) -> str: ...
    @property
    def lease_seconds(self) -> float: ...
    def reference(self) -> ClaimRef: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __reduce__(self) -> tuple[Any, tuple[Handoff, int, str, float]]: ...

@final
class ClaimRef:
    def __new__(
        cls, handoff_id: str, token: int, secret: str, lease_seconds: Optional[_Seconds] = None
    ) -> ClaimRef: ...
    @property
    def handoff_id(self) -> str: ...
    @property
    def token(self) -> int: ...
    @property
    def secret(self) -> str: ...
    @property
    def lease_seconds(self) -> float: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __reduce__(self) -> tuple[Any, tuple[str, int, str, float]]: ...

_AnyClaim = Union[Claim, ClaimRef]

@final
class Event:
    @property
    def seq(self) -> int: ...
    @property
    def handoff_id(self) -> str: ...
    @property
    def at(self) -> datetime: ...
    @property
    def actor(self) -> Optional[str]: ...
    @property
    def kind(self) -> EventKind: ...
    @property
    def detail(self) -> dict[str, Any]: ...
    def to_dict(self) -> dict[str, Any]: ...
    def to_json(self) -> str: ...
    def __eq__(self, value: object, /) -> bool: ...

@final
class Hop:
    @property
    def handoff_id(self) -> str: ...
    @property
    def parent_id(self) -> Optional[str]: ...
    @property
    def from_agent(self) -> Optional[str]: ...
    @property
    def to_agent(self) -> Optional[str]: ...
    @property
    def kind(self) -> Kind: ...
    @property
    def status(self) -> Status: ...
    @property
    def created_at(self) -> datetime: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __eq__(self, value: object, /) -> bool: ...

@final
class Chain:
    @property
    def task_id(self) -> str: ...
    @property
    def hops(self) -> list[Hop]: ...
    @property
    def path(self) -> list[str]: ...
    def to_dict(self) -> dict[str, Any]: ...
    def to_json(self) -> str: ...
    def __len__(self) -> int: ...
    def __eq__(self, value: object, /) -> bool: ...

@final
class ChainPolicy:
    def __new__(
        cls,
        max_handoffs: Optional[int] = None,
        max_revisits: Optional[int] = None,
        collaborators: Optional[Mapping[str, Sequence[str]]] = None,
    ) -> ChainPolicy: ...
    @staticmethod
    def unlimited() -> ChainPolicy: ...
    @property
    def max_handoffs(self) -> int: ...
    @property
    def max_revisits(self) -> int: ...
    @property
    def collaborators(self) -> Optional[dict[str, list[str]]]: ...

@final
class Limits:
    def __new__(
        cls,
        max_record_bytes: Optional[int] = None,
        max_field_bytes: Optional[int] = None,
        max_list_items: Optional[int] = None,
        max_depth: Optional[int] = None,
    ) -> Limits: ...
    @property
    def max_record_bytes(self) -> int: ...
    @property
    def max_field_bytes(self) -> int: ...
    @property
    def max_list_items(self) -> int: ...
    @property
    def max_depth(self) -> int: ...

@final
class ManualClock:
    def __new__(cls, start: Optional[datetime] = None) -> ManualClock: ...
    def now(self) -> datetime: ...
    def advance(self, seconds: _Seconds) -> None: ...
    def set(self, at: datetime) -> None: ...

@final
class PathStats:
    @property
    def from_agent(self) -> str: ...
    @property
    def to_agent(self) -> str: ...
    @property
    def total(self) -> int: ...
    @property
    def completed(self) -> int: ...
    @property
    def failed(self) -> int: ...
    @property
    def rejected(self) -> int: ...
    @property
    def median_claim_seconds(self) -> Optional[float]: ...
    @property
    def median_complete_seconds(self) -> Optional[float]: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __eq__(self, value: object, /) -> bool: ...

@final
class QueueCount:
    """How many handoffs are in one status for one addressee (``Store.queue_counts``)."""

    @property
    def status(self) -> Status: ...
    @property
    def to_agent(self) -> Optional[str]: ...
    @property
    def count(self) -> int: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __eq__(self, value: object, /) -> bool: ...

@final
class Capabilities:
    """What a store can do beyond what every store does (``Store.capabilities()``)."""

    @property
    def durable(self) -> bool: ...
    @property
    def shared_by_processes(self) -> bool: ...
    @property
    def shared_by_machines(self) -> bool: ...
    @property
    def backup(self) -> bool: ...
    @property
    def wakes_waiters(self) -> bool: ...
    def to_dict(self) -> dict[str, bool]: ...
    def __eq__(self, value: object, /) -> bool: ...

@final
class Damage:
    """One piece of damage ``Store.check()`` found."""

    @property
    def what(self) -> str: ...
    @property
    def problem(self) -> str: ...
    @property
    def repaired(self) -> Optional[str]: ...
    def to_dict(self) -> dict[str, Optional[str]]: ...
    def __eq__(self, value: object, /) -> bool: ...

@final
class CheckReport:
    """What ``Store.check()`` found: nothing damaged when ``damage`` is empty."""

    @property
    def damage(self) -> list[Damage]: ...
    def is_clean(self) -> bool: ...
    def to_dict(self) -> dict[str, list[dict[str, Optional[str]]]]: ...
    def __eq__(self, value: object, /) -> bool: ...

@final
class Redaction:
    @property
    def rule(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    def __eq__(self, value: object, /) -> bool: ...

@final
class Redactor:
    def __new__(cls) -> Redactor: ...
    def with_rule(self, id: str, pattern: str, keywords: Optional[Sequence[str]] = None) -> Redactor: ...
    @property
    def rule_ids(self) -> list[str]: ...
    def redact(self, text: str) -> tuple[str, list[Redaction]]: ...

def redact(text: str) -> tuple[str, list[Redaction]]: ...

@final
class ContextBuilder:
    def __new__(
        cls, budget_tokens: Optional[int] = None, redact: bool = True, redactor: Optional[Redactor] = None
    ) -> ContextBuilder: ...
    def add_handoff(self, h: Handoff) -> ContextBuilder: ...
    def add_messages(self, messages: Sequence[Union[Mapping[str, Any], _ModelDump]]) -> ContextBuilder: ...
    def add_facts(self, facts: Sequence[Union[str, Mapping[str, Any]]]) -> ContextBuilder: ...
    def add_item(self, text: str, priority: int, at: Optional[datetime] = None) -> ContextBuilder: ...
    def build(self) -> Packet: ...

@final
class Agent:
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def collaborators(self) -> Optional[list[str]]: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __eq__(self, value: object, /) -> bool: ...

@final
class HandoffIntent:
    @property
    def target(self) -> str: ...
    @property
    def arguments(self) -> dict[str, Any]: ...
    @property
    def call_id(self) -> Optional[str]: ...
    @property
    def tool(self) -> str: ...
    def to_dict(self) -> dict[str, Any]: ...
    def create_kwargs(self, *, task_id: str, goal: str, from_agent: str) -> dict[str, Any]: ...
    def __eq__(self, value: object, /) -> bool: ...

@final
class AgentRegistry:
    def __new__(cls) -> AgentRegistry: ...
    @staticmethod
    def from_markdown_dir(path: StrPath) -> AgentRegistry: ...
    def add(
        self, name: str, description: str, collaborators: Optional[Sequence[str]] = None
    ) -> AgentRegistry: ...
    @property
    def agents(self) -> list[Agent]: ...
    def __len__(self) -> int: ...
    def __contains__(self, name: object, /) -> bool: ...
    def tools(self, agent: str, provider: Provider) -> list[dict[str, Any]]: ...
    def detect(
        self, response: _Response, from_agent: str, multiple: Optional[Multiple] = None
    ) -> Optional[HandoffIntent]: ...
    def policy(self, max_handoffs: Optional[int] = None, max_revisits: Optional[int] = None) -> ChainPolicy: ...

@final
class Manifest:
    @property
    def included(self) -> list[str]: ...
    @property
    def truncated(self) -> list[dict[str, Any]]: ...
    @property
    def dropped(self) -> list[dict[str, Any]]: ...
    @property
    def redacted(self) -> list[dict[str, Any]]: ...
    @property
    def summarized(self) -> list[dict[str, Any]]:
        """``[{"id", "original_tokens", "kept_tokens"}]`` of the items a ``summarize`` callable
        compressed instead of cutting them (costs in the packet's ``unit``)."""
    def to_dict(self) -> dict[str, Any]: ...
    def __eq__(self, value: object, /) -> bool: ...

@final
class Packet:
    @property
    def markdown(self) -> str: ...
    @property
    def messages(self) -> list[dict[str, Any]]: ...
    def to_messages(self, provider: Optional[_MessageProvider] = None) -> list[dict[str, Any]]: ...
    @property
    def tokens(self) -> int: ...
    @property
    def budget(self) -> int: ...
    @property
    def unit(self) -> Literal["tokens", "chars"]:
        """What ``budget`` and ``tokens`` count: tokens, or characters of the Markdown."""
    @property
    def sections(self) -> list[dict[str, Any]]:
        """Each a dict: ``id``, ``kind`` (``task``, ``history``, ``output``, ``handoff``,
        ``fact``, ``message``, ``note``), ``title``, ``text``, ``role``, ``tokens``, and ``group``
        (the heading it is listed under with others) when it has one."""
    @property
    def manifest(self) -> Manifest: ...
    def to_json(self) -> str: ...
    def __eq__(self, value: object, /) -> bool: ...

@final
class Task:
    """A task: its goal, its plan's steps and where each stands. ``to_dict()`` is the seed's
    ``task-state.json`` form (``plan.goal``, ``plan.steps[].dependencies``)."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def status(self) -> TaskStatus: ...
    @property
    def version(self) -> int: ...
    @property
    def goal(self) -> str: ...
    @property
    def success_criteria(self) -> list[str]: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def started_at(self) -> Optional[datetime]: ...
    @property
    def updated_at(self) -> datetime: ...
    @property
    def completed_at(self) -> Optional[datetime]: ...
    @property
    def orchestrator(self) -> Optional[str]: ...
    @property
    def escalate_to(self) -> str: ...
    @property
    def steps_total(self) -> int: ...
    @property
    def steps_done(self) -> int: ...
    @property
    def retries(self) -> int: ...
    @property
    def tokens_used(self) -> Optional[int]: ...
    @property
    def context(self) -> dict[str, Any]: ...
    @property
    def metadata(self) -> dict[str, Any]: ...
    @property
    def artifacts(self) -> list[Any]: ...
    @property
    def issues(self) -> list[Any]: ...
    @property
    def members(self) -> list[dict[str, Any]]:
        """The agents that joined it (``join_task``), in the order they joined: ``agent``,
        ``role``, ``objectives``, ``branch``, ``joined_at``."""
    @property
    def result_summary(self) -> Optional[str]:
        """What came of it, as whoever completed it said (``complete_task``)."""
    @property
    def failure(self) -> Optional[str]:
        """Why it failed, when it did."""
    @property
    def steps(self) -> list[dict[str, Any]]: ...
    @property
    def current_steps(self) -> list[str]: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class TaskSummary:
    """A task without its steps, as ``list_tasks`` returns it."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def status(self) -> TaskStatus: ...
    @property
    def version(self) -> int: ...
    @property
    def goal(self) -> str: ...
    @property
    def success_criteria(self) -> list[str]: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def started_at(self) -> Optional[datetime]: ...
    @property
    def updated_at(self) -> datetime: ...
    @property
    def completed_at(self) -> Optional[datetime]: ...
    @property
    def orchestrator(self) -> Optional[str]: ...
    @property
    def escalate_to(self) -> str: ...
    @property
    def steps_total(self) -> int: ...
    @property
    def steps_done(self) -> int: ...
    @property
    def retries(self) -> int: ...
    @property
    def tokens_used(self) -> Optional[int]: ...
    @property
    def context(self) -> dict[str, Any]: ...
    @property
    def metadata(self) -> dict[str, Any]: ...
    @property
    def artifacts(self) -> list[Any]: ...
    @property
    def issues(self) -> list[Any]: ...
    @property
    def members(self) -> list[dict[str, Any]]:
        """The agents that joined it (``join_task``), in the order they joined: ``agent``,
        ``role``, ``objectives``, ``branch``, ``joined_at``."""
    @property
    def result_summary(self) -> Optional[str]:
        """What came of it, as whoever completed it said (``complete_task``)."""
    @property
    def failure(self) -> Optional[str]:
        """Why it failed, when it did."""
    def to_dict(self) -> dict[str, Any]: ...

@final
class TaskEvent:
    """One entry of a task's log."""

    @property
    def seq(self) -> int: ...
    @property
    def task_id(self) -> str: ...
    @property
    def at(self) -> datetime: ...
    @property
    def actor(self) -> Optional[str]: ...
    @property
    def kind(self) -> str: ...
    @property
    def detail(self) -> Optional[dict[str, Any]]: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class HistoryEntry:
    """A finished task in the seed's ``task-history.json`` form."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def result(self) -> Literal["success", "partial", "failure"]: ...
    @property
    def started_at(self) -> Optional[datetime]: ...
    @property
    def completed_at(self) -> datetime: ...
    @property
    def duration_seconds(self) -> Optional[float]: ...
    @property
    def summary(self) -> str: ...
    @property
    def artifacts(self) -> list[Any]: ...
    @property
    def metrics(self) -> dict[str, Any]: ...
    @property
    def lessons(self) -> list[Any]: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class TaskStatistics:
    """Statistics over finished tasks."""

    @property
    def total_tasks(self) -> int: ...
    @property
    def success_rate(self) -> float: ...
    @property
    def avg_duration_seconds(self) -> Optional[float]: ...
    @property
    def by_result(self) -> dict[str, int]: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class ProtocolRun:
    """A task's manager/worker run as it stands."""

    @property
    def task_id(self) -> str: ...
    @property
    def manager(self) -> str: ...
    @property
    def worker(self) -> str: ...
    @property
    def escalate_to(self) -> str: ...
    @property
    def goal(self) -> str: ...
    @property
    def success_criteria(self) -> list[str]: ...
    @property
    def phase(self) -> Literal["working", "reviewing", "recovering", "escalated", "resuming", "completed"]: ...
    @property
    def message_id(self) -> Optional[str]: ...
    @property
    def iteration(self) -> int: ...
    @property
    def max_iterations(self) -> int: ...
    @property
    def retry_count(self) -> int: ...
    @property
    def max_retries(self) -> int: ...
    @property
    def escalations(self) -> int: ...
    @property
    def history(self) -> list[dict[str, Any]]: ...
    @property
    def files_modified(self) -> list[str]: ...
    @property
    def project_status(self) -> str: ...
    @property
    def dependencies(self) -> list[str]:
        """Dependencies the manager's context updates added so far, in order."""
    @property
    def configuration(self) -> list[str]:
        """The initialization's settings, in words (``project root: …``, ``constraint: …``)."""
    @property
    def started_at(self) -> datetime: ...
    @property
    def updated_at(self) -> datetime: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class ProtocolStats:
    """How the store's protocol runs went."""

    @property
    def runs(self) -> int: ...
    @property
    def completed(self) -> int: ...
    @property
    def first_try_completions(self) -> int: ...
    @property
    def first_try_completion_rate(self) -> float: ...
    @property
    def escalated(self) -> int: ...
    @property
    def escalation_rate(self) -> float: ...
    @property
    def retries(self) -> int: ...
    @property
    def mean_iterations(self) -> float: ...
    @property
    def median_iteration_seconds(self) -> Optional[float]: ...
    @property
    def per_run(self) -> list[dict[str, Any]]: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class Conversation:
    """A conversation on a branch of curated memory; its messages are kept beside it."""

    @property
    def id(self) -> str: ...
    @property
    def branch(self) -> str: ...
    @property
    def title(self) -> Optional[str]: ...
    @property
    def task_id(self) -> Optional[str]: ...
    @property
    def agent(self) -> Optional[str]: ...
    @property
    def message_count(self) -> int: ...
    @property
    def verification_status(self) -> Literal["verified", "unverified", "invalidated"]: ...
    @property
    def verification_score(self) -> Optional[float]: ...
    @property
    def explanation(self) -> Optional[str]: ...
    @property
    def verified_by(self) -> Optional[str]: ...
    @property
    def cherry_picked_from(self) -> Optional[str]: ...
    @property
    def origin(self) -> Optional[str]: ...
    @property
    def promoted(self) -> bool: ...
    @property
    def created_at(self) -> datetime: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class Fact:
    """A fact on a branch, with what the verification gate made of it."""

    @property
    def id(self) -> str: ...
    @property
    def branch(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def confidence(self) -> Optional[float]: ...
    @property
    def source(self) -> Optional[str]: ...
    @property
    def status(self) -> Literal["active", "verified", "invalidated", "promoted", "superseded"]: ...
    @property
    def score(self) -> Optional[float]: ...
    @property
    def explanation(self) -> Optional[str]: ...
    @property
    def verified_by(self) -> Optional[str]: ...
    @property
    def verified_at(self) -> Optional[datetime]: ...
    @property
    def origin(self) -> Optional[str]: ...
    @property
    def created_at(self) -> datetime: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class VerifyReport:
    """What a verification did."""

    @property
    def branch(self) -> Optional[str]: ...
    @property
    def verified(self) -> int: ...
    @property
    def invalidated(self) -> int: ...
    @property
    def unverified(self) -> int: ...
    @property
    def failed(self) -> int: ...
    @property
    def items(self) -> list[dict[str, Any]]: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class MergeReport:
    """What a merge did."""

    @property
    def branch(self) -> Optional[str]: ...
    @property
    def into(self) -> Optional[str]: ...
    @property
    def facts(self) -> int: ...
    @property
    def conversations(self) -> int: ...
    @property
    def kept(self) -> int: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class Bundle:
    """A knowledge bundle: a task's or a branch's verified knowledge, shareable by token."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> Optional[str]: ...
    @property
    def bundle_type(self) -> Literal["task_export", "curated", "template"]: ...
    @property
    def source_task_id(self) -> Optional[str]: ...
    @property
    def source_branch(self) -> Optional[str]: ...
    @property
    def fact_count(self) -> int: ...
    @property
    def conversation_count(self) -> int: ...
    @property
    def message_count(self) -> int: ...
    @property
    def verification_status(self) -> Literal["draft", "verified"]: ...
    @property
    def verification_score(self) -> Optional[float]: ...
    @property
    def verified_by(self) -> Optional[str]: ...
    @property
    def share_token(self) -> Optional[str]: ...
    @property
    def visibility(self) -> Literal["private", "team", "public"]: ...
    @property
    def tags(self) -> list[str]: ...
    @property
    def content_hash(self) -> str: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def updated_at(self) -> datetime: ...
    def to_json(self) -> str: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class ImportReport:
    """What an import added and what it found already there."""

    @property
    def bundle(self) -> str: ...
    @property
    def target_branch(self) -> Optional[str]: ...
    @property
    def facts_added(self) -> int: ...
    @property
    def facts_skipped(self) -> int: ...
    @property
    def conversations_added(self) -> int: ...
    @property
    def conversations_skipped(self) -> int: ...
    @property
    def messages_added(self) -> int: ...
    @property
    def signed_by(self) -> Optional[str]: ...
    @property
    def trusted(self) -> bool: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class TrustedKey:
    """A public key the store trusts to vouch for bundles: ``trust_bundle_keys`` lists them."""

    @property
    def public_key(self) -> str: ...
    @property
    def trusted_at(self) -> datetime: ...
    def to_dict(self) -> dict[str, str]: ...

@final
class BundleKeyPair:
    """A key pair for signing bundles, from ``generate_bundle_key()``; its ``repr`` hides the
    secret key."""

    @property
    def public_key(self) -> str: ...
    @property
    def secret_key(self) -> str: ...

def generate_bundle_key() -> BundleKeyPair: ...

@final
class TaskReplay:
    """A task's whole run: its timeline, its agents, its key knowledge and how it ended."""

    @property
    def task_id(self) -> str: ...
    @property
    def timeline(self) -> list[dict[str, Any]]: ...
    @property
    def agents(self) -> list[dict[str, Any]]: ...
    @property
    def key_facts(self) -> list[Fact]: ...
    @property
    def key_conversations(self) -> list[Conversation]: ...
    @property
    def outcome(self) -> dict[str, Any]: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class TaskComparison:
    """Two runs side by side."""

    @property
    def task_a(self) -> str: ...
    @property
    def task_b(self) -> str: ...
    @property
    def agents(self) -> dict[str, list[str]]: ...
    @property
    def decision_points(self) -> dict[str, list[str]]: ...
    @property
    def facts(self) -> dict[str, list[str]]: ...
    @property
    def outcome_a(self) -> dict[str, Any]: ...
    @property
    def outcome_b(self) -> dict[str, Any]: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class Lease:
    """A claim held while its work runs: heartbeats until it is completed or failed."""

    outcome: str
    @property
    def handoff_id(self) -> str: ...
    @property
    def lost(self) -> bool: ...
    @property
    def settled(self) -> bool: ...
    def complete(self, outcome: Optional[str] = None) -> Handoff: ...
    def fail(self, error: str) -> Handoff: ...
    def __enter__(self) -> Lease: ...
    def __exit__(self, *exc: object) -> bool: ...

@final
class Memory:
    """One scope's memory: a JSON document and its version."""

    @property
    def scope(self) -> str: ...
    @property
    def value(self) -> dict[str, Any]: ...
    @property
    def version(self) -> int: ...
    @property
    def updated_at(self) -> datetime: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class Session:
    """A conversation as the store knows it: who owns it now, and its handoffs as hops."""

    @property
    def session_id(self) -> str: ...
    @property
    def current_agent(self) -> Optional[str]: ...
    @property
    def handoff_chain(self) -> list[Hop]: ...
    @property
    def context(self) -> dict[str, Any]: ...
    def to_dict(self) -> dict[str, Any]: ...

@final
class Store:
    @staticmethod
    def memory(
        *,
        clock: Optional[ManualClock] = None,
        policy: Optional[ChainPolicy] = None,
        limits: Optional[Limits] = None,
    ) -> Store: ...
    def save_policy(self) -> None: ...
    def saved_policy(self) -> Optional[tuple[ChainPolicy, Limits]]: ...
    @property
    def policy(self) -> ChainPolicy: ...
    @property
    def limits(self) -> Limits: ...
    # >>> GENERATED by scripts/gen_stubs.py from the operation catalog: do not edit
    def create(
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
    ) -> Handoff:
        """Creates a pending handoff. With a caller-supplied `id`, creating again with the same
        content returns the stored record; with other content it fails with `Conflict`.

        Args:
            task_id: The task this handoff belongs to; a task's handoffs form its chain.
            goal: What the successor must achieve. Never empty. Left out, the goal of the task
                `task_id` names (made with `create_task`), else that of the task's latest handoff.
            from_agent: The agent handing over.
            to_agent: The agent addressed; any agent may claim when absent.
            kind: What kind of handoff this is (default `full`).
            reason: Why the agent hands over (default `explicit`): `explicit`, `task_complete`,
                `context_limit_85`, `timeout_300s`, `error: <message>`, or the bare `context_limit`
                (with `context_pct`) and `timeout` (with `timeout_seconds`).
            context_pct: How full the handing-over agent's context window was, in percent.
            timeout_seconds: With the bare reason `timeout`: how long the agent ran, in seconds.
            progress: Where the work stands, in prose.
            completed: Steps already done.
            pending: Steps still to do, in order.
            decisions: Decisions taken, and why.
            assumptions: Assumptions the work rests on.
            warnings: Things the successor must be careful about.
            errors: Errors seen and not yet fixed.
            files: Files changed so far.
            instructions: Guidance for the successor.
            metadata: Free-form JSON object, carried along unchanged.
            id: A caller-chosen id: creating again with the same content returns the same record.
            parent_id: The handoff this one continues.
            session_id: The handing-over agent's session.
            blockers: What stops progress right now.
            locked_files: Files the work holds locks on.
            priority_items: What matters most, first: text, or objectives by number (kept as their
                digits).
            success_criteria: How the successor knows it is done.
            expires_at: When an unclaimed handoff expires (RFC 3339).
            max_attempts: How many claims may lapse before the handoff fails (default 3).
        """
    def create_many(self, records: Sequence[Mapping[str, Any]]) -> builtins.list[Handoff]:
        """Creates several handoffs in one transaction: all of them, or none when one is refused.

        Args:
            records: The handoffs, each with `create`'s arguments.
        """
    def get(self, id: str) -> Handoff:
        """The handoff with this id; `NotFound` if there is none.

        Args:
            id: The handoff's id.
        """
    def list(
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
        """Handoffs matching the filter, oldest first.

        Args:
            status: Only records in this status (`accepted` reads as `claimed`).
            task_id: Only records of this task.
            to_agent: Only records addressed to this agent.
            limit: At most this many records.
            kind: Only records of this kind.
            after: Only records after the one with this id (the last of the previous page).
            pending_only: Only pending records: the same as `status` `pending`, so not with a
                `status`.
        """
    def claim(self, id: str, agent: str, lease_seconds: Optional[_Span] = None) -> Claim:
        """Claims the handoff `id` for `agent`. `AlreadyClaimed` while another claim is live;
        `InvalidTransition` when it is finished or addressed to another agent.

        Args:
            id: The handoff to claim.
            agent: The agent taking it.
            lease_seconds: How long the claim lives without a heartbeat (default 300).
        """
    def claim_next(
        self,
        agent: str,
        task_id: Optional[str] = None,
        lease_seconds: Optional[_Span] = None,
        *,
        wait_seconds: Optional[_Span] = None,
    ) -> Optional[Claim]:
        """Claims the oldest pending handoff `agent` may take (addressed to it or to anyone);
        nothing when there is none, after waiting up to `wait_seconds` for some to arrive.

        Args:
            agent: The agent taking work.
            task_id: Only work of this task.
            lease_seconds: How long the claim lives without a heartbeat (default 300).
            wait_seconds: How long to wait for work when there is none (default 0: answer at once).
                The worker sleeps until work arrives: woken by PostgreSQL at once, by a short poll
                elsewhere.
        """
    def heartbeat(self, claim: _AnyClaim) -> Handoff:
        """Renews the claim's lease. `LeaseLost` once the claim has lapsed or moved on.

        Args:
            claim: The claim, as `claim` or `claim_next` returned it.
        """
    def release(self, claim: _AnyClaim, reason: str) -> Handoff:
        """Gives the handoff back to the queue, with why.

        Args:
            claim: The claim, as `claim` or `claim_next` returned it.
            reason: Why the holder gives it back.
        """
    def fail(self, claim: _AnyClaim, error: str) -> Handoff:
        """Reports that the work failed: pending again with one more attempt counted, or `failed`
        (the error its outcome) after the last of its `max_attempts`.

        Args:
            claim: The claim, as `claim` or `claim_next` returned it.
            error: What went wrong.
        """
    def complete(
        self,
        claim: _AnyClaim,
        outcome: Optional[str] = None,
        *,
        tokens_used: Optional[int] = None,
    ) -> Handoff:
        """Finishes the handoff, with what came of it.

        Args:
            claim: The claim, as `claim` or `claim_next` returned it.
            outcome: What came of the work.
            tokens_used: The model tokens the work took, if you count them: a task step adds them to
                its task's metrics.
        """
    def reject(self, id: str, agent: str, reason: str) -> Handoff:
        """Refuses the handoff as `agent`, its addressee (or, for an open handoff, its holder).

        Args:
            id: The handoff.
            agent: The agent refusing it.
            reason: Why.
        """
    def cancel(self, id: str, by: str, reason: Optional[str] = None) -> Handoff:
        """Withdraws a pending or claimed handoff, as `by`: its creator, or anyone when it has none.

        Args:
            id: The handoff.
            by: Who withdraws it.
            reason: Why.
        """
    def cancel_claim(self, claim: _AnyClaim, reason: Optional[str] = None) -> Handoff:
        """Withdraws the handoff as its holder.

        Args:
            claim: The claim, as `claim` or `claim_next` returned it.
            reason: Why.
        """
    def events(
        self,
        id: Optional[str] = None,
        task_id: Optional[str] = None,
        after: Optional[int] = None,
        limit: Optional[int] = None,
        *,
        handoff_id: Optional[str] = None,
        redact: bool = True,
    ) -> builtins.list[Event]:
        """The event log, oldest first: all of it, one handoff's or one task's, a page at a time.

        Args:
            id: Only this handoff's events (`id` is accepted too).
            task_id: Only the events of this task's handoffs.
            after: Only events after this cursor: the `seq` of the last event already read.
            limit: At most this many events (a page).
            handoff_id: The same as `id`.
            redact: Replace secrets in each event's texts (a reason, an outcome, an error, the
                addressee) with ``[REDACTED:<rule>]``, as the CLI shows them; ``False`` is the
                owner's opt-out.
        """
    def chain(self, task_id: str) -> Chain:
        """The task's chain: who handed to whom, in order.

        Args:
            task_id: The task.
        """
    def checkpoint(
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
    ) -> Handoff:
        """Saves `agent`'s progress on `task_id` without changing who owns what.

        Args:
            task_id: The task.
            agent: The agent saving its progress; it keeps the work.
            goal: What the successor must achieve. Never empty. Left out, the goal of the task
                `task_id` names (made with `create_task`), else that of the task's latest handoff.
            reason: Why the agent hands over (default `explicit`): `explicit`, `task_complete`,
                `context_limit_85`, `timeout_300s`, `error: <message>`, or the bare `context_limit`
                (with `context_pct`) and `timeout` (with `timeout_seconds`).
            context_pct: How full the handing-over agent's context window was, in percent.
            timeout_seconds: With the bare reason `timeout`: how long the agent ran, in seconds.
            progress: Where the work stands, in prose.
            completed: Steps already done.
            pending: Steps still to do, in order.
            decisions: Decisions taken, and why.
            assumptions: Assumptions the work rests on.
            warnings: Things the successor must be careful about.
            errors: Errors seen and not yet fixed.
            files: Files changed so far.
            instructions: Guidance for the successor.
            metadata: Free-form JSON object, carried along unchanged.
            id: A caller-chosen id: creating again with the same content returns the same record.
            parent_id: The handoff this one continues.
            session_id: The handing-over agent's session.
            blockers: What stops progress right now.
            locked_files: Files the work holds locks on.
            priority_items: What matters most, first: text, or objectives by number (kept as their
                digits).
            success_criteria: How the successor knows it is done.
            expires_at: When an unclaimed handoff expires (RFC 3339).
            max_attempts: How many claims may lapse before the handoff fails (default 3).
        """
    def stalled(self, older_than_seconds: _Span) -> builtins.list[str]:
        """Ids of tasks in progress whose last sign of life (claim, heartbeat, checkpoint) is older
        than `older_than_seconds`.

        Args:
            older_than_seconds: How long without a sign of life makes a task stalled.
        """
    def stats(self) -> builtins.list[PathStats]:
        """Per from→to pair of agents: totals, outcomes and median times to claim and complete."""
    def queue_counts(self) -> builtins.list[QueueCount]:
        """The queue at a glance: how many handoffs are in each status, per addressee (checkpoints
        left out), in status then agent order.
        """
    def reap(self) -> int:
        """Applies every lapse that is due (leases, expiries) now; returns how many records changed."""
    def backup(self, path: StrPath) -> None:
        """Writes a portable backup of the whole store to `path` (a new file: an existing one is
        refused) while others keep working: settings, handoffs with their claim digests, events and
        every document, one consistent snapshot, checksummed. `restore` reads it into any store.

        Args:
            path: Where the backup goes.
        """
    def restore(self, path: StrPath) -> None:
        """Restores the backup at `path` (written by `backup` on any kind of store) into this store,
        which must be empty. The whole file is checked first: a damaged, cut or foreign file is
        refused, naming what is wrong, and nothing is written.

        Args:
            path: The backup to read.
        """
    def check(self, *, repair: Optional[bool] = None) -> CheckReport:
        """Looks through the whole store for damage (files deleted, emptied or edited by hand, links
        planted, a bad disk) and reports each piece by name. With `repair`, a files store moves what
        is damaged into its `quarantine/` folder and mends what referred to it; a database store
        reports only (restore a backup).

        Args:
            repair: Move what is damaged aside and mend what referred to it (a files store).
        """
    def capabilities(self) -> Capabilities:
        """What the store can do beyond what every store does: durable, shared by processes or by
        machines, backups, waking waiting workers.
        """
    def create_task(
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

        Args:
            name: What the task is called.
            goal: What it must achieve (the name when not given).
            steps: The plan: steps with an `id`, a `name`, the `agent` that works on it and the ids
                of the steps it waits for (`dependencies`); optionally `instructions`,
                `max_attempts` (default 3) and `cluster`.
            id: The task's id, chosen by the caller (an id: `[A-Za-z0-9._:@-]{1,128}`), so that its
                branch reads `task/<id>`; a time-ordered one when not given. Taken already: refused.
            objectives: Objectives without agents, in words: each becomes a step `"1"`, `"2"`, ...
                offered to the task's members (`join_task` assigns them).
            success_criteria: How to tell that the goal is reached.
            context: Context every step shares (the seed's `user_request`, `constraints`, ...).
            metadata: Free-form JSON object kept with the task (`lessons`, a list, goes to its
                history).
            orchestrator: The agent that drives the task, if any: the task's log and its steps'
                `created` events name it as who offered them.
            escalate_to: Who gets a step that failed on every attempt (default `human`).
        """
    def start_task(self, id: str) -> Task:
        """Starts a pending task: the steps that wait for nothing are offered as handoffs to their
        agents, who take them with `claim_next`.

        Args:
            id: The task.
        """
    def get_task(self, id: str) -> Task:
        """The task with this id, with its plan and each step's status; `NotFound` if there is none.

        Args:
            id: The task.
        """
    def list_tasks(
        self,
        status: Optional[TaskStatus] = None,
        limit: Optional[int] = None,
        *,
        after: Optional[str] = None,
    ) -> builtins.list[TaskSummary]:
        """Task summaries (no steps), oldest first, a page at a time.

        Args:
            status: Only tasks in this status.
            limit: At most this many (a page).
            after: Only tasks after this one: the id of the last task of the previous page.
        """
    def update_task(
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

        Args:
            id: The task.
            expected_version: The version the caller read (the task's `version`).
            goal: A new goal.
            success_criteria: New success criteria.
            context: New shared context.
            metadata: New metadata.
            add_steps: Steps to add; they may depend on the plan's steps and on each other.
            artifacts: New artifacts (what the task produced).
            issues: New issues (what went wrong along the way).
        """
    def pause_task(self, id: str) -> Task:
        """Pauses a task: its offers nobody holds are withdrawn and no step is offered until it
        resumes; steps already claimed may finish.

        Args:
            id: The task.
        """
    def resume_task(self, id: str) -> Task:
        """Resumes a paused task: the steps it withdrew or whose dependencies finished meanwhile are
        offered. A task that cannot go on (every open step waits for an escalation) is refused,
        naming the escalations and what to call.

        Args:
            id: The task.
        """
    def cancel_task(self, id: str, reason: Optional[str] = None) -> Task:
        """Cancels a task: offers nobody took are withdrawn and its unfinished steps cancelled;
        steps already claimed may finish.

        Args:
            id: The task.
            reason: Why.
        """
    def join_task(
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

        Args:
            id: The task.
            agent: The agent that joins.
            role: Its role in the task (`investigator`, `reviewer`, ...).
            objectives: The steps assigned to it, by id or number.
        """
    def complete_task(
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

        Args:
            id: The task.
            result_summary: What came of the task, in words (its history's summary).
            merge_to_main: Merge the task's verified knowledge into `main` too.
        """
    def fail_task(self, id: str, reason: Optional[str] = None) -> Task:
        """Fails a task for `reason`: offers and escalations nobody holds are withdrawn and its
        unfinished steps cancelled (steps already claimed may finish); its history says it failed.

        Args:
            id: The task.
            reason: Why it failed (required).
        """
    def escalate_step(
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

        Args:
            claim: The step's claim, as `claim` or `claim_next` returned it.
            to_agent: Who takes the step on.
            instructions: What the successor is to do.
            blockers: What stopped the holder.
            priority_items: What to do first (the seed's priority objectives).
        """
    def rerun_task(
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

        Args:
            task_id: The task whose plan runs again; its verified knowledge seeds the new run.
            bundle_id: A bundle of a task: its task's plan runs again, seeded with the bundle's
                knowledge.
            id: The new task's id (a time-ordered one when not given).
            name: The new task's name (the earlier one's, marked as a rerun, when not given).
            agents: Other agents: by step id, or by the earlier agent's name, the agent that takes
                the step now.
            instructions: Other instructions, by step id.
            context: Other parameters: merged over the earlier task's shared context.
        """
    def fail_step(self, claim: _AnyClaim, error: str) -> Handoff:
        """Reports that a step's work failed, with its claim: the step is offered again while
        attempts remain, then escalated (the task paused until `resolve_escalation`).
        `InvalidTransition` for a handoff that carries no step.

        Args:
            claim: The step's claim, as `claim` or `claim_next` returned it.
            error: What went wrong.
        """
    def resolve_escalation(
        self,
        claim: _AnyClaim,
        resolution: str,
        retry: Optional[bool] = None,
    ) -> Task:
        """A human's answer to a step that failed on every attempt, given with the escalation's
        claim: the escalation completes with `resolution` and the step is offered again with its
        attempts reset (`retry`) or skipped, its dependents going on without it; a task the
        escalation paused resumes.

        Args:
            claim: The escalation's claim, as `claim` or `claim_next` returned it.
            resolution: What the human decided, in words.
            retry: Try the step again (true) or skip it (false, the default).
        """
    def task_events(self, id: str) -> builtins.list[TaskEvent]:
        """The task's log, oldest first: created, started, each step offered, started, completed,
        failed, escalated or skipped, paused, resumed, updated, cancelled, completed.

        Args:
            id: The task.
        """
    def task_history(self, limit: Optional[int] = None) -> builtins.list[HistoryEntry]:
        """Finished tasks, newest first, in the seed's `task-history.json` form: how each ended
        (`success`, `partial` with skipped steps, `failure`), its duration, steps, retries and the
        tokens its workers reported.

        Args:
            limit: At most this many.
        """
    def task_statistics(self) -> TaskStatistics:
        """Statistics over every finished task: how many, the share that succeeded, the mean
        duration, and how many ended each way.
        """
    def prune(
        self,
        keep_last: Optional[int] = None,
        keep_details_days: Optional[int] = None,
    ) -> int:
        """Keeps the details (steps, log and handoff records) of the newest `keep_last` finished
        tasks (default 100) finished less than `keep_details_days` ago (default 30); older finished
        tasks keep only their history entry, and their handoffs go with their events. Unfinished
        tasks are never touched. Returns how many tasks were pruned.

        Args:
            keep_last: How many finished tasks keep their details (default 100).
            keep_details_days: How many days a finished task keeps its details (default 30).
        """
    def memory_get(self, scope: str) -> Optional[Memory]:
        """The memory of `scope` (`agent:writer`, `session:s1`, `shared`, ...) with its version;
        nothing when none was written.

        Args:
            scope: The scope (an id: `[A-Za-z0-9._:@-]{1,128}`).
        """
    def memory_put(
        self,
        scope: str,
        value: Mapping[str, Any],
        expected_version: Optional[int] = None,
    ) -> Memory:
        """Writes the memory of `scope`. With `expected_version` (0: nothing written yet) the write
        happens only if the scope is still at that version, else `Conflict` naming both versions.

        Args:
            scope: The scope (an id: `[A-Za-z0-9._:@-]{1,128}`).
            value: The document: a JSON object, within the record limits' size and depth.
            expected_version: The version the caller read (0: nothing written yet).
        """
    def memory_list(self, prefix: Optional[str] = None) -> builtins.list[Memory]:
        """Every scope's memory whose scope starts with `prefix` (all without one), in scope order.

        Args:
            prefix: Only scopes that start with this (`agent:`).
        """
    def memory_delete(self, scope: str, expected_version: Optional[int] = None) -> bool:
        """Forgets the memory of `scope`; with `expected_version`, only if it is still at it
        (`Conflict` otherwise). Whether there was anything to forget.

        Args:
            scope: The scope.
            expected_version: The version the caller read.
        """
    def session(self, session_id: str) -> Session:
        """Who currently owns a conversation (the holder of its latest handoff once taken, else its
        sender), its handoffs as hops, and its shared context (the memory `session:<id>`).

        Args:
            session_id: The session, as handoffs name it in `session_id`.
        """
    def initialize(
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

        Args:
            task_id: The task the run works on (an id).
            manager: The agent that reviews and decides.
            worker: The agent that does the work.
            instructions: What the worker is to do.
            success_criteria: How success is judged: at least one criterion.
            context: The context: `project_root`, `relevant_files`, `patterns`, `constraints`.
            quality_gates: Standards the work must meet.
            max_iterations: Iterations allowed before a CONTINUE or REFINE escalates instead
                (default 10).
            max_retries: Recoveries allowed before the run escalates by itself (default 3).
            escalate_to: Who gets an escalation (default `human`).
        """
    def report(
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

        Args:
            claim: The claim of the instructions, as `claim` or `claim_next` returned it.
            status: How far the work got.
            accomplished: What was done.
            files_modified: The files changed, each with `path` and `description`.
            tests: Tests: `added`, `passing`, `coverage`.
            issues: Problems met (required unless the status is COMPLETED).
            validation: How the work was verified.
        """
    def decide(
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

        Args:
            claim: The claim of the report, as `claim` or `claim_next` returned it.
            decision: The decision.
            instructions: What the worker is to do next (required for CONTINUE and REFINE; the
                message's `continuation_instructions`).
            context_updates: What the manager learnt: `new_patterns`, `architecture_changes`,
                `dependencies_added`.
            escalation_details: Why a human is needed (required for ESCALATE).
            summary: The manager's words on the report: the answered message's outcome, beside the
                decision.
        """
    def report_error(
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

        Args:
            claim: The claim of the instructions, as `claim` or `claim_next` returned it.
            error_type: What kind of error.
            severity: How bad it is.
            description: What went wrong.
            context: Where it happened.
            attempted_solutions: What was tried.
            error_messages: The messages seen.
            affected_files: The files involved.
        """
    def recover(
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

        Args:
            claim: The claim of the error report, as `claim` or `claim_next` returned it.
            strategy: The approach, in a sentence.
            steps: What the worker is to do, in order (at least one step).
            alternatives: Other approaches if this one fails.
            success_indicators: How to tell the recovery worked.
            escalation_trigger: When the worker should give up and report an error again.
        """
    def escalate(
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

        Args:
            claim: The claim of the report or error report, as `claim` or `claim_next` returned it.
            category: What the escalation is about.
            severity: How bad it is (at least medium).
            urgency: How soon a human must act.
            blocker_type: What blocks the run.
            description: What blocks the run.
            impact: What happens if nobody acts.
            recommendation: What the manager suggests.
        """
    def resolve(
        self,
        claim: _AnyClaim,
        resolution: str,
        *,
        resume_instructions: Optional[str] = None,
    ) -> Handoff:
        """A human's answer to the escalation they hold: a `progress` message carrying it goes to
        the manager, who decides how the worker goes on; the run's iteration and retry allowances
        start afresh.

        Args:
            claim: The claim of the escalation, as `claim` or `claim_next` returned it.
            resolution: What the human decided or did.
            resume_instructions: How the run is to go on, when it is not plain from the resolution.
        """
    def protocol_run(self, task_id: str) -> ProtocolRun:
        """A task's protocol run as it stands: its phase (who holds the latest message), the
        iteration, retries, escalations, history and the id of the message in flight.

        Args:
            task_id: The run's task.
        """
    def protocol_history(self, task_id: str) -> builtins.list[Handoff]:
        """The messages of a task's run, oldest first, each a handoff with its `protocol` body.

        Args:
            task_id: The run's task.
        """
    def protocol_stats(self) -> ProtocolStats:
        """How the store's protocol runs went: runs, completions, the first-try completion rate, the
        escalation rate, retries, iterations per run and the median time per iteration.
        """
    def add_conversation(
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

        Args:
            branch: The branch it goes on.
            messages: Its messages, in order: `{"role", "content", "tool_calls"?, "tool_call_id"?}`
                or a provider's own shape.
            title: What it is about.
            task_id: The task it belongs to (by default the branch's).
            agent: The agent that had it (by default the branch's).
        """
    def append_messages(self, conversation_id: str, messages: Sequence[Any]) -> Conversation:
        """Adds messages at the end of a conversation, numbered after its last.

        Args:
            conversation_id: The conversation's id.
            messages: The messages, in order, in any shape `add_conversation` reads.
        """
    def get_conversation(self, id: str) -> Conversation:
        """The conversation with this id; `NotFound` if there is none.

        Args:
            id: The conversation's id.
        """
    def messages(
        self,
        id: str,
        *,
        from_seq: Optional[int] = None,
        to_seq: Optional[int] = None,
    ) -> builtins.list[dict[str, Any]]:
        """A conversation's messages `from_seq..=to_seq` (all of them by default), in order, each
        with its `seq` and where it was cherry-picked to.

        Args:
            id: The conversation's id.
            from_seq: The first message (from 1).
            to_seq: The last message.
        """
    def list_conversations(
        self,
        *,
        branch: Optional[str] = None,
        task_id: Optional[str] = None,
    ) -> builtins.list[Conversation]:
        """The conversations of a branch, of a task, or of the whole store, oldest first.

        Args:
            branch: Only those on this branch.
            task_id: Only those of this task.
        """
    def cherry_pick(
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

        Args:
            conversation_id: The conversation to pick from.
            target_branch: Where the new conversation goes.
            verifier: Scores the pick before it is written (as ``verify`` scores a conversation):
                with it, ``verify`` defaults to ``True``; an exception it raises is raised as it is,
                nothing written.
            from_seq: The first message to take (from 1; `from_sequence` is accepted too).
            to_seq: The last message to take (`to_sequence` is accepted too).
            title: The new conversation's title.
            verify: Run the verification gate on the pick (default false): verified at 0.6,
                invalidated below 0.4, as `verify` scores a conversation.
        """
    def cherry_pick_decisions(
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

        Args:
            conversation_id: The conversation to pick from.
            target_branch: Where the new conversation goes.
            judge: Decides for each message (a dict with its ``index``) in place of the heuristics:
                ``judge(message) -> bool``.
        """
    def cherry_pick_tools(self, conversation_id: str, target_branch: str) -> Conversation:
        """Copies a conversation's tool-call sequences (each call with its results) into a new
        conversation on `target_branch`.

        Args:
            conversation_id: The conversation to pick from.
            target_branch: Where the new conversation goes.
        """
    def cherry_pick_to_facts(
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

        Args:
            conversation_id: The conversation to draw facts from.
            target_branch: Where the facts go.
            extractor: Draws the facts instead of the heuristics: ``extractor(conversation) ->
                list`` of texts or ``{"text", "confidence", "source"}`` dicts; an exception it
                raises is raised as it is, nothing written.
        """
    def add_facts(self, branch: str, facts: Sequence[Any]) -> builtins.list[Fact]:
        """Writes facts on a branch (status `active`), checked whole first: every problem at once,
        nothing written when there is one.

        Args:
            branch: The branch they go on.
            facts: The facts: texts, or `{"text", "confidence"?, "source"?}`.
        """
    def facts(
        self,
        branch: str,
        *,
        status: Optional[Literal["active", "verified", "invalidated", "promoted", "superseded"]] = None,
    ) -> builtins.list[Fact]:
        """The facts of a branch, oldest first, optionally only those in one status (`active`,
        `verified`, `invalidated`, `promoted`, `superseded`).

        Args:
            branch: The branch.
            status: Only facts in this status.
        """
    def branches(self) -> builtins.list[dict[str, Any]]:
        """Every branch that holds a conversation or a fact, with its parent, in name order."""
    def verify(
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

        Args:
            branch: The branch to verify (`branch_name` is accepted too).
            verifier: Scores each item: ``verifier(item) -> score``, ``(score, explanation)`` or
                ``{"score", "explanation"}``; without one every score is the neutral 0.5 and nothing
                is written.
            fact_threshold: A fact scoring at least this is verified (default 0.7).
            invalidate_below: A fact or a conversation scoring below this is invalidated (default
                0.4).
            conversation_threshold: A conversation scoring at least this is verified (default 0.6).
        """
    def merge(self, branch: str, *, into: Optional[str] = None) -> MergeReport:
        """Moves a branch's verified knowledge into its parent (or `into`): verified facts are
        copied (their sources become `promoted`) and verified or cherry-picked conversations are
        copied with their messages; unverified and invalidated items stay. Merging twice adds
        nothing.

        Args:
            branch: The branch to merge.
            into: Where to (by default its parent: the name minus its last segment).
        """
    def context_for(
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

        Args:
            handoff_id: The handoff's id.
            budget_tokens: The packet's budget in tokens (default 2000 when no budget is given).
            budget_chars: The packet's budget in characters of its Markdown, instead of tokens (the
                seed's packets hold 2000).
            transcript: The framework's own transcript of the run, in any provider's message shape:
                one more conversation in the packet, under the same budget and redaction.
            summarize: Compresses an item that does not fit whole instead of cutting it:
                ``summarize(request) -> str``, ``request`` a dict (``id``, ``title``, ``text``,
                ``budget``, ``unit``); an exception or an answer that is no ``str`` (or does not
                fit) cuts the item as without one.
        """
    def curation_events(self, *, task_id: Optional[str] = None) -> builtins.list[dict[str, Any]]:
        """The curation log of a task (every change on its branches: conversations added, messages
        appended, cherry-picks, facts, verifications, merges), or of `main` without one, in order.

        Args:
            task_id: The task (by default `main`'s log).
        """
    def create_bundle(
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

        Args:
            name: The bundle's name.
            task_id: Package this task's knowledge (`task/<task>` and its agents' branches)…
            branch: …or this branch's (`branch_name` is accepted too).
            verified_only: Only verified facts and conversations (default true); false: everything
                not invalidated.
            visibility: Who may find it by its token: `private` (default, nobody), `team` or
                `public`.
            bundle_type: What it is: `task_export` (default), `curated` or `template`.
            tags: Labels for finding it.
            description: What it holds.
            redact: Replace secrets with `[REDACTED:<rule>]` (default true).
        """
    def get_bundle(self, id: str) -> Bundle:
        """The bundle with this id; `NotFound` if there is none.

        Args:
            id: The bundle's id.
        """
    def list_bundles(
        self,
        *,
        visibility: Optional[Literal["private", "team", "public"]] = None,
    ) -> builtins.list[Bundle]:
        """The store's bundles, oldest first, optionally only those of one visibility.

        Args:
            visibility: Only bundles of this visibility.
        """
    def bundle_by_token(self, token: str) -> Bundle:
        """The bundle a share token opens. A private bundle is never found by its token; a wrong
        token, a private bundle's and a missing bundle all give the same `NotFound`.

        Args:
            token: The share token (`kb_…`).
        """
    def set_visibility(self, id: str, visibility: Literal["private", "team", "public"]) -> Bundle:
        """Changes who may find a bundle by its token.

        Args:
            id: The bundle's id.
            visibility: `private`, `team` or `public`.
        """
    def sign_bundle(self, id: str, *, secret_key: str) -> Bundle:
        """Signs a bundle with a secret key (`ed25519-secret:...`): a store that trusts its public
        key imports the bundle's verdicts as verified. The signature travels in the portable form.

        Args:
            id: The bundle's id.
            secret_key: `ed25519-secret:` and 64 hex digits (a key pair comes from `handoff keygen
                FILE` or `generate_bundle_key`).
        """
    def trust_bundle_keys(
        self,
        *,
        trust: Optional[Sequence[str]] = None,
        distrust: Optional[Sequence[str]] = None,
    ) -> builtins.list[TrustedKey]:
        """Trusts public keys (`ed25519:...`) to vouch for bundles, or stops trusting them: a bundle
        signed by a trusted key is imported with its verdicts; any other bundle's verdicts stay its
        claim. Returns the keys trusted afterwards (none given: only lists them).

        Args:
            trust: Public keys to trust.
            distrust: Public keys to stop trusting.
        """
    def delete_bundle(self, id: str) -> None:
        """Deletes a bundle and its share token; what was imported from it stays.

        Args:
            id: The bundle's id.
        """
    def import_bundle(
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

        Args:
            bundle: The bundle's portable JSON (what `to_json` wrote), as text or as an object; or
                give `bundle_id` or `share_token` instead.
            bundle_id: A bundle of this store, by its id.
            share_token: A shared bundle of this store, by its token (`kb_…`; a private bundle is
                never found so).
            target_branch: Where its knowledge goes (default `main`).
            dry_run: Only check it (default false): the bundle is read and checked whole, and the
                report counts what importing it would add; nothing is written.
        """
    def verify_bundle(
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

        Args:
            id: The bundle's id (`bundle_id` is accepted too).
            verifier: Scores each of the bundle's facts and conversations, as ``verify`` does;
                required (a bundle's status says a judge looked at it). An exception it raises is
                raised as it is.
            fact_threshold: A fact scoring at least this passes (default 0.7).
            invalidate_below: A fact or a conversation scoring below this is invalidated (default
                0.4).
            conversation_threshold: A conversation scoring at least this passes (default 0.6).
        """
    def replay(self, task_id: str, *, verified_only: Optional[bool] = None) -> TaskReplay:
        """A task's whole run as one timeline, oldest first (`at`, `type`, `agent`, `summary`,
        `data`): its handoffs' events, its plan's log and its curation log; each agent's
        contribution; its key facts and conversations; how it ended.

        Args:
            task_id: The task.
            verified_only: Key facts and conversations only if verified (default false: everything
                not invalidated).
        """
    def compare(self, task_a: str, task_b: str) -> TaskComparison:
        """Two runs side by side (an original and its rerun): their agents, decision points, key
        facts (only in one, in both), outcomes and durations.

        Args:
            task_a: The first task.
            task_b: The second.
        """
    # <<< GENERATED
    def now(self) -> datetime: ...
    def lease(self, claim: _AnyClaim) -> Lease:
        """Holds ``claim`` while its work runs: ``with store.lease(claim) as lease:`` heartbeats
        every third of its lease from a thread of its own; leaving the block completes the claim
        (with ``lease.outcome``) or fails it with the exception that ended the block."""
    def memory_update(self, scope: str, change: Callable[[dict[str, Any]], Mapping[str, Any]]) -> Memory:
        """Reads the memory of ``scope`` (``{}`` when none), calls ``change`` with it and writes
        what it returns if nobody wrote meanwhile; otherwise reads and calls it again. When
        ``change`` raises, nothing is written and the exception propagates as it is."""
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> Store: ...
    def __exit__(self, *_exc: object) -> bool: ...

def _catalog_json() -> str:
    """The store operations as Python shows them, as JSON: what ``scripts/gen_stubs.py`` reads."""

def open(
    path: StrPath,
    synchronous: Optional[Synchronous] = None,
    *,
    clock: Optional[ManualClock] = None,
    policy: Optional[ChainPolicy] = None,
    limits: Optional[Limits] = None,
    lock_patience_seconds: Optional[_Seconds] = None,
    read_only: bool = False,
) -> Store: ...

def connect(
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
    """Opens the store ``url`` names: a path or ``sqlite:PATH``, ``memory:``, ``files:DIR`` or
    ``postgres://…`` (``?schema=NAME`` to share a database). ``ValidationError`` naming ``url``
    (or the part that is wrong: ``url.schema``, ``url.sslmode``, ``url.sslrootcert``; TLS as
    libpq reads ``sslmode``) for a URL that names no store.

    Each store reads the options that concern it: ``synchronous`` (SQLite, files),
    ``lock_patience_seconds`` (SQLite, files, PostgreSQL), ``read_only`` (SQLite only; any other URL is a
    ``ValidationError`` naming ``read_only``), ``pool_size`` (at least 1) and
    ``connect_timeout_seconds`` (PostgreSQL)."""
