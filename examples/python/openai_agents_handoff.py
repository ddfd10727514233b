"""A durable OpenAI Agents SDK handoff: triage hands a ticket to billing, and billing runs in
another process that claims it from the store.

    pip install ./handoff-py openai-agents
    python examples/python/openai_agents_handoff.py --db /tmp/agents.db

No network: both agents run on the SDK's scripted test model (swap in a real one). The lines
marked ``glue`` are all a user writes to make the handoff durable.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys

from agents import Agent, Runner, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

# glue:start
import handoff_core as hc
from handoff_core.integrations.openai_agents import durable_handoff, run_claimed
# glue:end

TICKET = "ticket-1042"


def billing_agent() -> Agent[None]:
    model = ScriptedModel([[assistant_message("Refunded the second charge on order 1042.")]])
    return Agent(name="billing", instructions="You resolve billing problems.", model=model)


async def hand_over(db: str) -> None:
    """The front desk: triage's model decides billing should take the ticket."""
    summary = {"reason": "a billing question", "summary": "Customer was charged twice for order 1042",
               "pending": ["refund the duplicate charge"], "instructions": None}
    triage_model = ScriptedModel([[function_call("transfer_to_billing", json.dumps(summary), call_id="call_1")]])
    # glue:start
    store = hc.aio.Store(hc.open(db))
    triage = Agent(name="triage", instructions="Route the customer.", model=triage_model,
                   handoffs=[durable_handoff(store, billing_agent(), from_agent="triage", task_id=TICKET)])
    # glue:end
    result = await Runner.run(triage, "I was charged twice for order 1042, please fix it.")
    print(f"triage: {result.final_output}")


async def work(db: str) -> None:
    """A billing worker, in its own process: takes the ticket and runs billing on its packet."""
    # glue:start
    store = hc.aio.Store(hc.open(db))
    claim = await store.claim_next("billing", wait_seconds=30)
    assert claim is not None, "no ticket for billing within 30 s"
    result = await run_claimed(store, billing_agent(), claim)
    # glue:end
    print(f"billing (pid-separate worker): {result.final_output}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="handoff.db")
    parser.add_argument("--worker", action="store_true", help="run as the billing worker")
    args = parser.parse_args()
    set_tracing_disabled(True)  # the SDK's own traces would be sent to OpenAI
    if args.worker:
        asyncio.run(work(args.db))
        return 0
    asyncio.run(hand_over(args.db))
    subprocess.run([sys.executable, __file__, "--db", args.db, "--worker"], check=True)
    with hc.open(args.db) as store:
        (done,) = store.list(task_id=TICKET)
    print(f"store: {done.id} {done.from_agent} -> {done.to_agent} {done.status}: {done.outcome}")
    return 0 if done.status == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
