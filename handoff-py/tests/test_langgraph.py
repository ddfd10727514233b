"""``handoff_core.integrations.langgraph`` against the real ``langgraph`` and ``langgraph-swarm``,
with a scripted chat model: the hop is recorded only once its checkpoint is saved (a worker that
claims at the worst moment finds nothing; the obvious tool that writes the record itself is
caught by the same check), the worker resumes the thread on the packet, failures are recorded."""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated, Any, Optional

import pytest
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ChatMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END
from langgraph.prebuilt import InjectedState
from langgraph.types import Command
from langgraph_swarm import create_swarm

import handoff_core as hc
from handoff_core.integrations.langgraph import durable_checkpointer, handoff_tool, run_claimed

SECRET = "AKIAIOSFODNN7EXAMPLE"


class Scripted(BaseChatModel):
    """A chat model that answers from a script and keeps what it was asked."""

    replies: list[Any]
    calls: list[list[BaseMessage]] = []

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **_: Any) -> ChatResult:
        self.calls.append(list(messages))
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Any, **_: Any) -> Scripted:
        return self

    @property
    def _llm_type(self) -> str:
        return "scripted"


def transfer(call_id: str = "call_1") -> AIMessage:
    arguments = {"reason": "a billing question", "summary": "Refund the double charge on order 7", "pending": ["refund"]}
    return AIMessage(content="", tool_calls=[{"name": "transfer_to_billing", "args": arguments, "id": call_id}])


def swarm(checkpointer: Any, transfer_tool: Optional[BaseTool] = None, billing_reply: Any = None, calls: int = 1) -> tuple[Any, Scripted]:
    """triage (hands over at once, ``calls`` times) and billing, compiled on ``checkpointer``."""
    triage_model = Scripted(replies=[transfer(f"call_{i}") for i in range(calls)], calls=[])
    billing_model = Scripted(replies=[billing_reply or AIMessage(content="Refunded order 7")], calls=[])
    triage = create_agent(triage_model, tools=[transfer_tool or handoff_tool("billing")], name="triage", system_prompt="Route.")
    billing = create_agent(billing_model, tools=[], name="billing", system_prompt="You handle billing.")
    graph = create_swarm([triage, billing], default_active_agent="triage").compile(checkpointer=checkpointer)
    return graph, billing_model


def thread(name: str) -> RunnableConfig:
    return {"configurable": {"thread_id": name}}


def ask(graph: Any, name: str = "ticket-7") -> Any:
    return graph.invoke({"messages": [{"role": "user", "content": f"Charged twice for order 7, key {SECRET}"}]}, thread(name))


def test_the_hop_is_recorded_and_the_target_does_not_run_here() -> None:
    store = hc.Store.memory()
    graph, billing_model = swarm(durable_checkpointer(InMemorySaver(), store))
    out = ask(graph)
    assert out["active_agent"] == "billing" and billing_model.calls == []
    (h,) = store.list()
    assert (h.status, h.task_id, h.from_agent, h.to_agent) == ("pending", "ticket-7", "triage", "billing")
    assert (h.goal, h.pending_steps) == ("Refund the double charge on order 7", ["refund"])
    assert (h.metadata["thread_id"], h.metadata["call_id"]) == ("ticket-7", "call_0")
    assert graph.get_state(thread("ticket-7")).config["configurable"]["checkpoint_id"] == h.metadata["checkpoint_id"]


class WorkerAtTheWorstMoment(InMemorySaver):
    """A saver that, before each top-level checkpoint lands, lets a worker try to claim: the
    moment a record written too early would be taken with no checkpoint to resume from."""

    def __init__(self, store: hc.Store) -> None:
        super().__init__()
        self.store = store
        self.early: list[str] = []

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions) -> RunnableConfig:
        if not (config.get("configurable") or {}).get("checkpoint_ns"):
            claim = self.store.claim_next("billing")
            if claim is not None:
                h = claim.handoff
                saved = self.get_tuple(thread(h.metadata.get("thread_id", h.task_id)))
                if saved is None or saved.checkpoint["channel_values"].get("active_agent") != "billing":
                    self.early.append(h.id)  # nothing to resume from yet
                self.store.complete(claim)
        return super().put(config, checkpoint, metadata, new_versions)


def test_no_worker_can_claim_before_the_checkpoint_is_saved() -> None:
    store = hc.Store.memory()
    saver = WorkerAtTheWorstMoment(store)
    graph, _ = swarm(durable_checkpointer(saver, store), calls=5)
    for n in range(5):
        ask(graph, f"ticket-{n}")
    assert saver.early == []
    assert len(store.list()) == 5


def test_the_check_catches_a_tool_that_writes_the_record_itself() -> None:
    """The obvious version, for contrast: the record is written inside the tool, before the
    graph has saved the checkpoint with the hop; the same worker takes it too early."""
    store = hc.Store.memory()

    @tool("transfer_to_billing", description="Hand over to billing")
    def eager(summary: str, state: Annotated[Any, InjectedState], tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        store.create("ticket-7", summary, from_agent="triage", to_agent="billing")
        said = ToolMessage(content="handed over", name="transfer_to_billing", tool_call_id=tool_call_id)
        return Command(goto=END, graph=Command.PARENT, update={"messages": [*state["messages"], said], "active_agent": "billing"})

    eager.metadata = {"__handoff_destination": "billing"}
    saver = WorkerAtTheWorstMoment(store)
    graph, _ = swarm(saver, transfer_tool=eager)
    ask(graph)
    assert len(saver.early) == 1


def test_workers_racing_the_graph_always_find_the_hop_saved() -> None:
    store = hc.Store.memory()
    saver = InMemorySaver()
    graph, _ = swarm(durable_checkpointer(saver, store), calls=20)
    seen: list[Optional[str]] = []
    stop = threading.Event()

    def worker() -> None:
        while not stop.is_set() or store.list(status="pending"):
            claim = store.claim_next("billing")
            if claim is None:
                continue
            saved = saver.get_tuple(thread(claim.handoff.metadata["thread_id"]))
            seen.append(saved.checkpoint["channel_values"].get("active_agent") if saved else None)
            store.complete(claim)

    workers = [threading.Thread(target=worker) for _ in range(4)]
    for w in workers:
        w.start()
    try:
        for n in range(20):
            ask(graph, f"ticket-{n}")
    finally:
        stop.set()
        for w in workers:
            w.join(60)
    assert seen == ["billing"] * 20


def test_a_retry_of_the_same_call_writes_one_record() -> None:
    store = hc.Store.memory()
    saver = InMemorySaver()
    graph, _ = swarm(durable_checkpointer(saver, store))
    ask(graph)
    # A second process with its own checkpointer saves the same checkpoint again.
    latest = saver.get_tuple(thread("ticket-7"))
    assert latest is not None
    again = durable_checkpointer(InMemorySaver(), store)
    again.put(latest.config, latest.checkpoint, latest.metadata, {})
    assert len(store.list()) == 1


def test_the_worker_resumes_the_thread_on_the_packet_and_completes() -> None:
    store = hc.aio.Store.memory()
    graph, billing_model = swarm(durable_checkpointer(InMemorySaver(), store))
    ask(graph)

    async def work() -> tuple[hc.Claim, Any]:
        claim = await store.claim_next("billing")
        assert claim is not None
        return claim, await run_claimed(store, graph, claim)

    claim, result = asyncio.run(work())
    assert result["messages"][-1].content == "Refunded order 7"
    (asked,) = billing_model.calls
    briefing = asked[-1].content
    assert "Refund the double charge on order 7" in briefing and "- refund" in briefing
    assert any("Charged twice" in str(m.content) for m in asked), "the thread's history is resumed"
    done = store.sync.get(claim.handoff_id)
    assert (done.status, done.outcome) == ("completed", "Refunded order 7")


def resumed(redact: Optional[bool] = None) -> list[BaseMessage]:
    """What the successor's model was asked when it resumed a thread holding a secret."""
    store = hc.aio.Store.memory()
    graph, billing_model = swarm(durable_checkpointer(InMemorySaver(), store))
    ask(graph)

    async def work() -> Any:
        claim = await store.claim_next("billing")
        assert claim is not None
        if redact is None:
            return await run_claimed(store, graph, claim)
        return await run_claimed(store, graph, claim, redact=redact)

    asyncio.run(work())
    (asked,) = billing_model.calls
    return asked


def test_the_successor_model_reads_the_redacted_packet_in_place_of_the_thread() -> None:
    asked = resumed()
    seen = repr([m.model_dump() for m in asked])
    assert SECRET not in seen, "a secret of the predecessor's thread reached the successor's model"
    # The thread gave way to the store's packet, which holds it as one more conversation.
    assert [type(m).__name__ for m in asked] == ["SystemMessage", "HumanMessage"]
    packet = str(asked[-1].content)
    assert "## Conversation: this run" in packet
    assert "key [REDACTED:aws-access-key-id]" in packet and "Charged twice" in packet
    assert "[tool call call_0] transfer_to_billing" in packet


def test_the_successor_reads_what_the_store_knows_within_the_budget() -> None:
    """The packet is the store's: the predecessor's findings reach the successor's model, and a
    thread longer than the budget is cut to it, the goal kept."""
    store = hc.aio.Store.memory()
    graph, billing_model = swarm(durable_checkpointer(InMemorySaver(), store))
    store.sync.add_facts("task/ticket-7/triage", ["order 7 was charged on March 2 and again on March 3"])
    chatter = [{"role": "user", "content": f"Message {i}: still waiting on order 7, key {SECRET}"} for i in range(200)]
    graph.invoke({"messages": chatter}, thread("ticket-7"))

    async def work() -> Any:
        claim = await store.claim_next("billing")
        assert claim is not None
        return await run_claimed(store, graph, claim, budget_tokens=600)

    asyncio.run(work())
    (asked,) = billing_model.calls
    packet = str(asked[-1].content)
    assert "order 7 was charged on March 2 and again on March 3 (unverified)" in packet
    assert "Refund the double charge on order 7" in packet
    assert "Message 199:" in packet and "Message 0:" not in packet, "the thread's latest part is kept"
    assert SECRET not in repr([m.model_dump() for m in asked])
    assert len(packet) < 600 * 8


def test_a_thread_message_the_core_cannot_read_is_left_out_of_the_packet() -> None:
    store = hc.aio.Store.memory()
    graph, billing_model = swarm(durable_checkpointer(InMemorySaver(), store))
    odd = ChatMessage(role="critic", content="A critic's aside")
    graph.invoke({"messages": [odd, {"role": "user", "content": "Charged twice for order 7"}]}, thread("ticket-7"))

    async def work() -> Any:
        claim = await store.claim_next("billing")
        assert claim is not None
        return await run_claimed(store, graph, claim)

    assert asyncio.run(work())["messages"][-1].content == "Refunded order 7"
    (asked,) = billing_model.calls
    packet = str(asked[-1].content)
    assert "Charged twice for order 7" in packet and "A critic's aside" not in packet


def test_the_owner_may_resume_the_thread_as_written() -> None:
    assert SECRET in repr([m.model_dump() for m in resumed(redact=False)])


def test_an_async_graph_records_through_aput() -> None:
    store = hc.aio.Store.memory()
    graph, _ = swarm(durable_checkpointer(InMemorySaver(), store))
    asyncio.run(graph.ainvoke({"messages": [{"role": "user", "content": "Charged twice"}]}, thread("ticket-9")))
    assert [h.task_id for h in store.sync.list()] == ["ticket-9"]


def test_a_failing_worker_is_recorded_and_the_error_propagates() -> None:
    store = hc.Store.memory()
    graph, _ = swarm(durable_checkpointer(InMemorySaver(), store), billing_reply=RuntimeError("ledger down"))
    ask(graph)
    claim = store.claim_next("billing")
    assert claim is not None
    with pytest.raises(RuntimeError, match="ledger down"):
        asyncio.run(run_claimed(store, graph, claim))
    back = store.get(claim.handoff_id)
    assert (back.status, back.attempts) == ("pending", 1)
    assert "ledger down" in store.events(back.id)[-1].detail["error"]


def test_a_record_of_another_kind_is_refused_without_running() -> None:
    store = hc.Store.memory()
    graph, billing_model = swarm(durable_checkpointer(InMemorySaver(), store))
    h = store.create("t", "Refund", to_agent="billing")
    claim = store.claim(h.id, "billing")
    with pytest.raises(hc.HandoffError, match="thread_id"):
        asyncio.run(run_claimed(store, graph, claim))
    assert billing_model.calls == []


def test_the_record_is_created_in_a_span(spans: Any) -> None:
    store = hc.Store.memory()
    graph, _ = swarm(durable_checkpointer(InMemorySaver(), store))
    ask(graph)
    (created,) = [s for s in spans.get_finished_spans() if s.name == "handoff.create triage"]
    assert created.attributes["gen_ai.tool.name"] == "transfer_to_billing"
    assert created.attributes["gen_ai.tool.call.id"] == "call_0"
    assert created.attributes["handoff.to_agent"] == "billing"
