"""A durable LangGraph swarm handoff: triage hands the thread to billing, and billing resumes
it in another process that claims the handoff from the store.

    pip install ./handoff-py langgraph langgraph-swarm langgraph-checkpoint-sqlite
    python examples/python/langgraph_swarm.py --db /tmp/swarm.db

The thread's checkpoints live beside the handoffs (LangGraph's own SqliteSaver when it is
installed, else in memory, and then the worker runs in this process). No network: the agents
run on a small scripted chat model (swap in a real one). The lines marked ``glue`` are all a
user writes to make the handoff durable.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import subprocess
import sys
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_swarm import create_swarm

# glue:start
import handoff_core as hc
from handoff_core.integrations.langgraph import durable_checkpointer, handoff_tool, run_claimed
# glue:end

THREAD = {"configurable": {"thread_id": "ticket-7"}}


class Scripted(BaseChatModel):
    """Answers from a script, as a model would."""

    replies: list[AIMessage]

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **_: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.replies.pop(0))])

    def bind_tools(self, tools: Any, **_: Any) -> Scripted:
        return self

    @property
    def _llm_type(self) -> str:
        return "scripted"


def saver(db: str) -> BaseCheckpointSaver[Any]:
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        return InMemorySaver()
    return SqliteSaver(sqlite3.connect(f"{db}.checkpoints", check_same_thread=False))


def graph(db: str, store: Any) -> Any:
    transfer = {"reason": "a billing question", "summary": "Refund the double charge on order 7", "pending": ["refund"]}
    triage_model = Scripted(replies=[AIMessage(content="", tool_calls=[{"name": "transfer_to_billing", "args": transfer, "id": "call_1"}])])
    billing_model = Scripted(replies=[AIMessage(content="Refunded the second charge on order 7.")])
    billing = create_agent(billing_model, tools=[], name="billing", system_prompt="You resolve billing problems.")
    # glue:start
    triage = create_agent(triage_model, tools=[handoff_tool("billing")], name="triage", system_prompt="Route the customer.")
    checkpointer = durable_checkpointer(saver(db), store)
    # glue:end
    return create_swarm([triage, billing], default_active_agent="triage").compile(checkpointer=checkpointer)


def hand_over(db: str, store: Any) -> Any:
    app = graph(db, store)
    out = app.invoke({"messages": [{"role": "user", "content": "I was charged twice for order 7."}]}, THREAD)
    print(f"triage: {out['messages'][-1].content} (active agent now: {out['active_agent']})")
    return app


async def work(app: Any, store: Any) -> None:
    # glue:start
    claim = await store.claim_next("billing", wait_seconds=30)
    assert claim is not None, "no thread for billing within 30 s"
    result = await run_claimed(store, app, claim)
    # glue:end
    print(f"billing: {result['messages'][-1].content}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="handoff.db")
    parser.add_argument("--worker", action="store_true", help="run as the billing worker")
    args = parser.parse_args()
    # glue:start
    store = hc.aio.Store(hc.open(args.db))
    # glue:end
    if args.worker:
        asyncio.run(work(graph(args.db, store), store))
        return 0
    app = hand_over(args.db, store)
    if isinstance(app.checkpointer.saver, InMemorySaver):
        asyncio.run(work(app, store))  # the thread lives in this process only
    else:
        subprocess.run([sys.executable, __file__, "--db", args.db, "--worker"], check=True)
    (done,) = store.sync.list(task_id="ticket-7")
    print(f"store: {done.id} {done.from_agent} -> {done.to_agent} {done.status}: {done.outcome}")
    return 0 if done.status == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
