"""What the framework adapters cost per handoff, beside the same work done without them, in one
run on the same SQLite store (issue #19: adapter ≤ 1.2× a plain durable lifecycle).

    make bench-adapters        # in make test's venv (the pinned SDKs)

For each framework, one handoff triage → billing, both agents on scripted models (no network):

- in-process: the framework's own handoff, billing running right away in the same run; nothing
  is durable. For scale only.
- by hand: the plainest durable handoff a user writes without this library's adapters: the
  triage run stops at the handoff (a stand-in target), the record is created from Python, then
  claimed, billing runs on the record's goal, and the claim is completed (3 commits). No
  transcript, no redaction, no heartbeats, no idempotency.
- adapter: the durable handoff (the run stops at the handoff, which is recorded with its
  redacted transcript, once per call), then ``claim_next`` and ``run_claimed`` (billing runs on
  the packet, with heartbeats, completes).

The target is adapter / by hand.

The contenders take turns block by block (a block is 20 handoffs), the first one rotating, so
the disk's fsync noise falls on both alike; a figure is the median block.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

from agents import Agent, Runner, handoff, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages import ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END
from langgraph.prebuilt import InjectedState
from langgraph.types import Command
from pydantic import BaseModel
from langgraph_swarm import create_handoff_tool, create_swarm

import handoff_core as hc
from handoff_core.integrations import langgraph as lg
from handoff_core.integrations import openai_agents as oa

BLOCK = 20
TRANSFER = {"reason": "a billing question", "summary": "Customer was charged twice for order 1042",
            "pending": ["refund the duplicate charge"], "instructions": None}
QUESTION = "I was charged twice for order 1042, please fix it."


class Scripted(BaseChatModel):
    replies: list[AIMessage]

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **_: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.replies.pop(0))])

    def bind_tools(self, tools: Any, **_: Any) -> Scripted:
        return self

    @property
    def _llm_type(self) -> str:
        return "scripted"


class Transfer(BaseModel):
    reason: str
    summary: str
    pending: Optional[list[str]]
    instructions: Optional[str]


def sdk_agents(durable: hc.aio.Store | None, task: str) -> Agent[Any]:
    billing = Agent(name="billing", model=ScriptedModel([[assistant_message("Refunded the second charge on order 1042.")]]))
    made = oa.durable_handoff(durable, billing, from_agent="triage", task_id=task) if durable else handoff(billing)
    call = function_call("transfer_to_billing", json.dumps(TRANSFER), call_id="call_1")
    return Agent(name="triage", model=ScriptedModel([[call]]), handoffs=[made])


async def sdk_in_process(store: hc.aio.Store, task: str) -> None:
    await Runner.run(sdk_agents(None, task), QUESTION)


async def sdk_by_hand(store: hc.aio.Store, task: str) -> None:
    recorded: list[str] = []

    def on_handoff(_ctx: Any, transfer: Transfer) -> None:
        h = store.sync.create(task, transfer.summary, from_agent="triage", to_agent="billing", pending=transfer.pending)
        recorded.append(h.id)

    stand_in = Agent(name="billing", model=ScriptedModel([[assistant_message("handed over")]]))
    made = handoff(stand_in, on_handoff=on_handoff, input_type=Transfer)
    call = function_call("transfer_to_billing", json.dumps(TRANSFER), call_id="call_1")
    await Runner.run(Agent(name="triage", model=ScriptedModel([[call]]), handoffs=[made]), QUESTION)
    claim = store.sync.claim(recorded[0], "billing")
    billing = Agent(name="billing", model=ScriptedModel([[assistant_message("Refunded the second charge on order 1042.")]]))
    result = await Runner.run(billing, claim.handoff.goal)
    store.sync.complete(claim, outcome=str(result.final_output))


async def sdk_adapter(store: hc.aio.Store, task: str) -> None:
    await Runner.run(sdk_agents(store, task), QUESTION)
    claim = await store.claim_next("billing")
    assert claim is not None
    billing = Agent(name="billing", model=ScriptedModel([[assistant_message("Refunded the second charge on order 1042.")]]))
    await oa.run_claimed(store, billing, claim)


def swarm(tool: Any, checkpointer: Any) -> Any:
    call = AIMessage(content="", tool_calls=[{"name": "transfer_to_billing", "args": TRANSFER, "id": "call_1"}])
    triage = create_agent(Scripted(replies=[call]), tools=[tool], name="triage", system_prompt="Route.")
    billing = create_agent(Scripted(replies=[AIMessage(content="Refunded.")]), tools=[], name="billing", system_prompt="Bill.")
    return create_swarm([triage, billing], default_active_agent="triage").compile(checkpointer=checkpointer)


def thread(task: str) -> RunnableConfig:
    return {"configurable": {"thread_id": task}}


async def graph_in_process(store: hc.aio.Store, task: str) -> None:
    graph = swarm(create_handoff_tool(agent_name="billing"), InMemorySaver())
    await asyncio.to_thread(graph.invoke, {"messages": [{"role": "user", "content": QUESTION}]}, thread(task))


@tool("transfer_to_billing", description="Hand over to billing")
def stop_at_billing(summary: str, state: Annotated[Any, InjectedState], tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    said = ToolMessage(content="handed over", name="transfer_to_billing", tool_call_id=tool_call_id)
    return Command(goto=END, graph=Command.PARENT, update={"messages": [*state["messages"], said], "active_agent": "billing"})


stop_at_billing.metadata = {"__handoff_destination": "billing"}


async def graph_by_hand(store: hc.aio.Store, task: str) -> None:
    graph = swarm(stop_at_billing, InMemorySaver())
    await asyncio.to_thread(graph.invoke, {"messages": [{"role": "user", "content": QUESTION}]}, thread(task))
    # The record after the run, so that its checkpoint is saved before anyone can claim it.
    h = store.sync.create(task, str(TRANSFER["summary"]), from_agent="triage", to_agent="billing", metadata={"thread_id": task})
    claim = store.sync.claim(h.id, "billing")
    result = await asyncio.to_thread(graph.invoke, {"messages": [{"role": "user", "content": h.goal}]}, thread(task))
    store.sync.complete(claim, outcome=str(result["messages"][-1].content))


async def graph_adapter(store: hc.aio.Store, task: str) -> None:
    graph = swarm(lg.handoff_tool("billing"), lg.durable_checkpointer(InMemorySaver(), store))
    await asyncio.to_thread(graph.invoke, {"messages": [{"role": "user", "content": QUESTION}]}, thread(task))
    claim = await store.claim_next("billing")
    assert claim is not None
    await lg.run_claimed(store, graph, claim)


Contender = Callable[[hc.aio.Store, str], Any]


async def block(contender: Contender, store: hc.aio.Store, name: str, round_: int) -> float:
    start = time.perf_counter()
    for i in range(BLOCK):
        await contender(store, f"{name}-{round_}-{i}")
    return (time.perf_counter() - start) / BLOCK


async def compare(store: hc.aio.Store, pair: dict[str, Contender], rounds: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in pair}
    names = list(pair)
    for name in names:  # warm up
        await block(pair[name], store, f"warm-{name}".replace(" ", "-"), 0)
    for r in range(rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            times[name].append(await block(pair[name], store, name.replace(" ", "-"), r))
    return {name: statistics.median(t) for name, t in times.items()}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    set_tracing_disabled(True)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = hc.aio.Store(hc.open(Path(tmp) / "bench.db"))
        for framework, pair in {
            "openai-agents": {"in-process": sdk_in_process, "by hand": sdk_by_hand, "adapter": sdk_adapter},
            "langgraph": {"in-process": graph_in_process, "by hand": graph_by_hand, "adapter": graph_adapter},
        }.items():
            medians = await compare(store, pair, args.rounds)
            ratio = medians["adapter"] / medians["by hand"]
            results[framework] = {**{k: v * 1e3 for k, v in medians.items()}, "adapter/by hand": ratio}
            figures = "   ".join(f"{name} {median * 1e3:6.2f} ms" for name, median in medians.items())
            print(f"{framework:14} {figures}   adapter/by hand {ratio:.2f}x")
        store.close()
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
