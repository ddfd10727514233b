"""Durable handoffs for LangGraph swarm graphs (``langgraph-swarm``), docs/design.md §13.

The handoff tool moves the thread to the next agent and ends the run; the checkpointer records
the handoff in the store *after* it has saved the checkpoint that holds the hop, so a worker
never claims a record whose checkpoint does not exist yet. The worker resumes the thread::

    triage = create_agent(model, tools=[handoff_tool("billing")], name="triage")
    graph = create_swarm([triage, billing], default_active_agent="triage").compile(
        checkpointer=durable_checkpointer(InMemorySaver(), store))
    graph.invoke({"messages": [...]}, {"configurable": {"thread_id": "ticket-7"}})  # recorded
    claim = await store.claim_next("billing")                                      # elsewhere
    result = await run_claimed(store, graph, claim)    # billing runs on the packet, completes
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Annotated, Any, Optional, Union

from langchain_core.messages import BaseMessage, RemoveMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.graph import END
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.prebuilt import InjectedState
from langgraph.pregel import Pregel
from langgraph.types import Command
from pydantic import BaseModel, Field

from handoff_core import tracing
from handoff_core._errors import HandoffError, ValidationError
from handoff_core._native import AgentRegistry, Claim, ClaimRef, Handoff, Store
from handoff_core.integrations._records import AnyStore, as_async, create_once, create_once_sync, record_id, settle

__all__ = ["HandoffCheckpointer", "durable_checkpointer", "handoff_tool", "run_claimed"]

#: The prefix of the records this adapter writes.
ID_PREFIX = "lg"
#: Where the handoff tool leaves the record's fields, on its ToolMessage's artifact.
ARTIFACT_KEY = "handoff_core"
#: The key langgraph-swarm reads a handoff tool's destination from (so the swarm adds the edge).
SWARM_DESTINATION_KEY = "__handoff_destination"


def _transfer_properties() -> dict[str, Any]:
    """The registry's transfer arguments (the same for every pair of agents)."""
    registry = AgentRegistry().add("next", "").add("agent", "", collaborators=["next"])
    (transfer,) = registry.tools("agent", "openai_chat")
    properties: dict[str, Any] = transfer["function"]["parameters"]["properties"]
    return properties


_TRANSFER = _transfer_properties()


class _TransferArguments(BaseModel):
    """What the model says when it hands over: the registry's transfer schema, plus what the
    tool node injects."""

    reason: str = Field(description=_TRANSFER["reason"]["description"])
    summary: str = Field(description=_TRANSFER["summary"]["description"])
    pending: Optional[list[str]] = Field(default=None, description=_TRANSFER["pending"]["description"])
    instructions: Optional[str] = Field(default=None, description=_TRANSFER["instructions"]["description"])
    state: Annotated[Any, InjectedState]
    tool_call_id: Annotated[str, InjectedToolCallId]


def handoff_tool(agent_name: str, *, from_agent: Optional[str] = None, description: Optional[str] = None) -> BaseTool:
    """A ``transfer_to_<agent_name>`` tool for an agent of a langgraph-swarm graph: the thread's
    active agent becomes ``agent_name`` and the run ends; the record is written by
    :func:`durable_checkpointer` once that checkpoint is saved.

    The arguments are the registry's transfer schema (reason, summary, pending, instructions);
    ``from_agent`` defaults to the swarm node the calling agent runs in.
    """
    handing = from_agent or "agent"
    registry = AgentRegistry().add(agent_name, description or agent_name).add(handing, handing, collaborators=[agent_name])
    (transfer,) = registry.tools(handing, "openai_chat")
    name = f"transfer_to_{'_'.join(agent_name.split()).lower()}"
    def transfer_to(
        reason: str,
        summary: str,
        state: Any,
        tool_call_id: str,
        config: RunnableConfig,
        pending: Optional[list[str]] = None,
        instructions: Optional[str] = None,
    ) -> Command[Any]:
        # A swarm runs each agent as a subgraph whose namespace starts with its node's name.
        namespace = str((config.get("configurable") or {}).get("checkpoint_ns", ""))
        source = from_agent or namespace.split(":", 1)[0] or handing
        fields = {
            "reason": reason,
            "summary": summary,
            "pending": pending,
            "instructions": instructions,
            "from_agent": source,
            "to_agent": agent_name,
            "tool": name,
        }
        said = ToolMessage(
            content=f"Handed off to {agent_name}: it continues from the saved thread.",
            name=name,
            tool_call_id=tool_call_id,
            artifact={ARTIFACT_KEY: fields},
        )
        messages = state["messages"] if isinstance(state, Mapping) else state.messages
        return Command(goto=END, graph=Command.PARENT, update={"messages": [*messages, said], "active_agent": agent_name})

    made = StructuredTool.from_function(
        func=transfer_to,
        name=name,
        description=str(transfer["function"]["description"]),
        args_schema=_TransferArguments,
        infer_schema=False,
    )
    made.metadata = {SWARM_DESTINATION_KEY: agent_name}
    return made


def _hop(config: RunnableConfig, checkpoint: Checkpoint) -> Optional[tuple[str, dict[str, Any]]]:
    """The handoff a top-level checkpoint ends on: its tool call id and fields, or None."""
    configurable = config.get("configurable") or {}
    if configurable.get("checkpoint_ns", ""):
        return None  # an agent's own subgraph checkpoint: the hop is in the parent's
    messages = checkpoint["channel_values"].get("messages")
    if not isinstance(messages, Sequence) or not messages:
        return None
    last = messages[-1]
    if not isinstance(last, ToolMessage) or not isinstance(last.artifact, Mapping):
        return None
    fields = last.artifact.get(ARTIFACT_KEY)
    return (last.tool_call_id, dict(fields)) if isinstance(fields, Mapping) else None


class HandoffCheckpointer(BaseCheckpointSaver[Any]):
    """A checkpointer that saves through ``saver`` and then, when the saved checkpoint ends on
    a :func:`handoff_tool` hop, writes the handoff record (once per tool call)."""

    def __init__(self, saver: BaseCheckpointSaver[Any], store: AnyStore, *, task_id: Optional[str] = None) -> None:
        super().__init__(serde=saver.serde)
        self.saver = saver
        self._store = as_async(store)
        self._task_id = task_id
        self._recorded: set[str] = set()

    # What the hop becomes in the store.

    def _record(self, saved: RunnableConfig, hop: tuple[str, dict[str, Any]]) -> Optional[dict[str, Any]]:
        """The handoff record for ``hop``, saved at ``saved``; None once written."""
        call_id, fields = hop
        configurable = saved.get("configurable") or {}
        thread = str(configurable.get("thread_id", ""))
        task = self._task_id or thread
        handoff_id = record_id(ID_PREFIX, task, call_id)
        if handoff_id in self._recorded:
            return None
        summary = str(fields.get("summary") or "").strip()
        return {
            "id": handoff_id,
            "task_id": task,
            "goal": summary or f"Continue as {fields.get('to_agent')}",
            "from_agent": fields.get("from_agent"),
            "to_agent": fields.get("to_agent"),
            "pending": fields.get("pending") or None,
            "instructions": fields.get("instructions") or None,
            "metadata": {
                "adapter": "langgraph",
                "handoff_reason": fields.get("reason"),
                "call_id": call_id,
                "thread_id": thread,
                "checkpoint_id": configurable.get("checkpoint_id"),
            },
        }

    def _hop_record(self, config: RunnableConfig, checkpoint: Checkpoint, saved: RunnableConfig) -> Optional[tuple[dict[str, Any], dict[str, Any]]]:
        """The record to write for the checkpoint just saved, and its span's attributes."""
        hop = _hop(config, checkpoint)
        record = self._record(saved, hop) if hop else None
        if hop is None or record is None:
            return None
        return record, {"gen_ai.tool.name": hop[1].get("tool"), "gen_ai.tool.call.id": hop[0]}

    def put(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> RunnableConfig:
        saved = self.saver.put(config, checkpoint, metadata, new_versions)
        found = self._hop_record(config, checkpoint, saved)
        if found:
            record, attributes = found
            with tracing.span("create", record["from_agent"], **attributes) as span:
                handoff = create_once_sync(self._store.sync, **record)
                span.record(handoff)
            self._recorded.add(handoff.id)
        return saved

    async def aput(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> RunnableConfig:
        saved = await self.saver.aput(config, checkpoint, metadata, new_versions)
        found = self._hop_record(config, checkpoint, saved)
        if found:
            record, attributes = found
            with tracing.span("create", record["from_agent"], **attributes) as span:
                handoff = await create_once(self._store, **record)
                span.record(handoff)
            self._recorded.add(handoff.id)
        return saved

    # Everything else is the saver's own.

    @property
    def config_specs(self) -> list[Any]:
        return self.saver.config_specs

    def get_tuple(self, config: RunnableConfig) -> Optional[CheckpointTuple]:
        return self.saver.get_tuple(config)

    def list(
        self,
        config: Optional[RunnableConfig],
        *,
        filter: Optional[dict[str, Any]] = None,
        before: Optional[RunnableConfig] = None,
        limit: Optional[int] = None,
    ) -> Iterator[CheckpointTuple]:
        return self.saver.list(config, filter=filter, before=before, limit=limit)

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        self.saver.put_writes(config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        self.saver.delete_thread(thread_id)

    async def aget_tuple(self, config: RunnableConfig) -> Optional[CheckpointTuple]:
        return await self.saver.aget_tuple(config)

    async def alist(
        self,
        config: Optional[RunnableConfig],
        *,
        filter: Optional[dict[str, Any]] = None,
        before: Optional[RunnableConfig] = None,
        limit: Optional[int] = None,
    ) -> AsyncIterator[CheckpointTuple]:
        async for item in self.saver.alist(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        await self.saver.aput_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await self.saver.adelete_thread(thread_id)

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.saver.get_next_version(current, channel)


def durable_checkpointer(saver: BaseCheckpointSaver[Any], store: AnyStore, *, task_id: Optional[str] = None) -> HandoffCheckpointer:
    """``saver`` (any LangGraph checkpointer) made to record the graph's :func:`handoff_tool`
    hops in ``store``, each right after the checkpoint that holds it is saved. The task is
    ``task_id``, else the thread's id."""
    return HandoffCheckpointer(saver, store, task_id=task_id)


def _briefing(store: Store, handoff: Handoff, budget_tokens: int, thread: Optional[Sequence[Any]]) -> dict[str, str]:
    """The store's packet as the next agent's input (``store.context_for``: the record, the
    task and its plan, the agents before, the predecessor's findings, relevant knowledge on
    ``main``), with ``thread`` (the graph's messages, if given) as one more conversation,
    redacted, within the budget. A message of the thread the core cannot read (a
    ``ChatMessage`` with a role of its own, say) is left out rather than failing the handoff."""
    try:
        packet = store.context_for(handoff.id, budget_tokens=budget_tokens, transcript=thread)
    except ValidationError as error:
        found = [_MESSAGE_FIELD.match(field) for field, _ in error.problems]
        if thread is None or not found or not all(found):
            raise
        unread = {int(m.group(1)) for m in found if m}
        kept = [message for i, message in enumerate(thread) if i not in unread]
        packet = store.context_for(handoff.id, budget_tokens=budget_tokens, transcript=kept)
    return {"role": "user", "content": packet.markdown}


#: A problem the core found in one message of a transcript: ``transcript[3].role``.
_MESSAGE_FIELD = re.compile(r"transcript\[(\d+)\]")


def _transcript(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """The thread's messages as the core reads them (a LangChain message's ``model_dump``);
    anything else in the channel is left out."""
    return [m.model_dump(mode="json") if isinstance(m, BaseMessage) else dict(m) for m in messages if isinstance(m, (BaseMessage, Mapping))]


def _outcome(result: Any) -> str:
    messages = result.get("messages") if isinstance(result, Mapping) else None
    if isinstance(messages, Sequence) and messages and isinstance(messages[-1], BaseMessage):
        text = messages[-1].text
        return text if isinstance(text, str) else str(text)
    return ""


async def run_claimed(
    store: AnyStore,
    graph: Pregel[Any, Any, Any, Any],
    claim: Union[Claim, ClaimRef],
    *,
    budget_tokens: int = 4000,
    config: Optional[RunnableConfig] = None,
    redact: bool = True,
) -> Any:
    """Resumes the claimed handoff's thread: the thread's active agent (the one handed to) runs
    with the store's packet as its input, the claim heartbeats meanwhile, and the handoff is
    completed with the agent's last message, or failed with the exception, which propagates.

    The packet (``store.context_for``) holds the record, the task and its plan, the agents
    before, the predecessor's findings and relevant knowledge on ``main``, and the thread's
    messages as one more conversation, all redacted and within ``budget_tokens``. It takes the
    thread's place in the resumed state: the successor's model reads the redacted packet, not
    the thread as written, however long the thread grew (the checkpoints before it keep what was
    written). ``redact=False`` is the owner's opt-out: the thread is resumed as written, and the
    packet, without it, follows it."""
    astore = as_async(store)
    handoff = claim.handoff if isinstance(claim, Claim) else await astore.get(claim.handoff_id)
    thread = handoff.metadata.get("thread_id")
    if not isinstance(thread, str) or not thread:
        raise HandoffError(f"handoff {handoff.id} was not written by this adapter: it names no thread_id")
    run_config: RunnableConfig = {**(config or {})}
    run_config["configurable"] = {**(run_config.get("configurable") or {}), "thread_id": thread}

    def resume() -> Any:
        values = graph.get_state(run_config).values
        active = values.get("active_agent")
        if active != handoff.to_agent:
            raise HandoffError(f"thread {thread}'s active agent is {active!r}, not {handoff.to_agent!r}")
        thread_messages = list(values.get("messages") or [])
        if not redact:
            briefing = _briefing(astore.sync, handoff, budget_tokens, None)
            return graph.invoke({"messages": [briefing]}, run_config)
        briefing = _briefing(astore.sync, handoff, budget_tokens, _transcript(thread_messages))
        # The thread gives way to the packet (the swarm's reducer).
        return graph.invoke({"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), briefing]}, run_config)

    # The graph's synchronous API, in a worker thread: every checkpointer has it (SqliteSaver
    # has no async one; an async saver's sync calls from another thread run on this loop).
    return await settle(astore, claim, handoff.claimed_by, lambda: asyncio.to_thread(resume), _outcome)
