"""Durable handoffs for the OpenAI Agents SDK (``openai-agents``), docs/design.md §13.

A handoff made with :func:`durable_handoff` is recorded in the store instead of run: the model
calls ``transfer_to_<agent>`` as usual, the record is written (idempotently per tool call), and
the run ends there. Any process that claims the record runs the agent with
:func:`run_claimed`::

    triage = Agent(name="triage", handoffs=[durable_handoff(store, billing, from_agent="triage", task_id=ticket)])
    await Runner.run(triage, text)                        # recorded; billing does not run here
    claim = await store.claim_next("billing")             # elsewhere
    result = await run_claimed(store, billing, claim)     # packet in, heartbeats, complete or fail
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Optional, Union

from agents import Agent, Handoff, RunConfig, RunContextWrapper, Runner, RunResult
from agents.handoffs import HandoffInputData
from agents.items import HandoffCallItem, TResponseInputItem
from agents.testing import ModelStep, ScriptedModel, assistant_message

from handoff_core import tracing
from handoff_core._native import AgentRegistry, Claim, ClaimRef
from handoff_core.integrations._records import (
    AnyStore,
    as_async,
    carried_transcript,
    create_once,
    packet,
    record_id,
    settle,
    transcript,
)

__all__ = ["durable_handoff", "run_claimed"]

#: The prefix of the records this adapter writes (the Node twin uses the same).
ID_PREFIX = "oa"

TaskId = Union[str, Callable[[RunContextWrapper[Any]], str]]


def durable_handoff(
    store: AnyStore,
    agent: Agent[Any],
    *,
    from_agent: str,
    task_id: TaskId,
    goal: Optional[str] = None,
    tool_description: Optional[str] = None,
) -> Handoff[Any, Agent[Any]]:
    """A handoff to ``agent`` that is recorded in ``store`` instead of run here.

    The tool is ``transfer_to_<agent name>`` (the SDK's own name) with the registry's strict
    transfer schema (reason, summary, pending, instructions). When the model calls it, a pending
    handoff ``from_agent`` → ``agent.name`` is written: ``task_id`` (a string, or a function of
    the run context), ``goal`` (else the model's summary), the model's pending steps and
    instructions, and in ``metadata`` the tool call's id and the conversation so far (redacted,
    within a budget). Its id comes from the task and the call id, so a retried run writes it
    once. ``agent`` does not run in this process: the run ends with an output naming the id.
    """
    target = agent.name
    registry = (
        AgentRegistry()
        .add(target, agent.handoff_description or target)
        .add(from_agent, from_agent, collaborators=[target])
    )
    (transfer,) = registry.tools(from_agent, "openai_responses")
    tool_name = Handoff.default_tool_name(agent)
    astore = as_async(store)
    # Each invocation's stand-in agent waits here for the id its input filter writes; keyed by
    # the run's context, which the SDK hands to both.
    waiting: dict[int, list[str]] = {}

    async def on_invoke(ctx: RunContextWrapper[Any], _arguments: str) -> Agent[Any]:
        said: list[str] = []
        waiting[id(ctx)] = said

        def answer(_call: object) -> list[Any]:
            return [assistant_message(said[0] if said else f"handoff to {target} was not recorded")]

        return Agent(name=target, model=ScriptedModel([ModelStep.respond(answer)]))

    async def record(data: HandoffInputData) -> HandoffInputData:
        said = waiting.pop(id(data.run_context), None)
        call, before = _handoff_call(data, tool_name)
        if said is None or call is None or data.run_context is None:
            raise RuntimeError(f"{tool_name}: the SDK ran the handoff without its tool call")
        task = task_id(data.run_context) if callable(task_id) else task_id
        intent = registry.detect(
            {"type": "function_call", "call_id": call.call_id, "name": transfer["name"], "arguments": call.arguments},
            from_agent,
        )
        if intent is None:
            raise RuntimeError(f"{tool_name}: the call's arguments were not a transfer")
        summary = intent.arguments.get("summary")
        summary = summary.strip() if isinstance(summary, str) else ""
        fields = intent.create_kwargs(task_id=task, goal=goal or summary or f"Continue as {target}", from_agent=from_agent)
        if not goal:
            fields.pop("progress", None)  # the summary is the goal: once is enough
        fields["id"] = record_id(ID_PREFIX, task, call.call_id)
        fields["metadata"] = {
            **fields.get("metadata", {}),
            "adapter": "openai-agents",
            "transcript": transcript(before),
        }
        with tracing.span(
            "create", from_agent, **{"gen_ai.tool.name": tool_name, "gen_ai.tool.call.id": call.call_id}
        ) as span:
            handoff = await create_once(astore, **fields)
            span.record(handoff)
        said.append(f"Handed off to {target}: handoff {handoff.id} (task {task}) is pending.")
        # The stand-in answers from `said`; it needs none of the conversation.
        return data.clone(input_items=())

    return Handoff(
        tool_name=tool_name,
        tool_description=tool_description or str(transfer["description"]),
        input_json_schema=transfer["parameters"],
        on_invoke_handoff=on_invoke,
        agent_name=target,
        input_filter=record,
        strict_json_schema=True,
    )


def _handoff_call(data: HandoffInputData, tool_name: str) -> tuple[Optional[Any], list[TResponseInputItem]]:
    """The handoff's tool call and the conversation before it, as input items."""
    history: list[TResponseInputItem] = (
        [{"role": "user", "content": data.input_history}]
        if isinstance(data.input_history, str)
        else list(data.input_history)
    )
    history += [item.to_input_item() for item in data.pre_handoff_items]
    for item in data.new_items:
        if isinstance(item, HandoffCallItem) and item.raw_item.name == tool_name:
            return item.raw_item, history
        history.append(item.to_input_item())
    return None, history


async def run_claimed(
    store: AnyStore,
    agent: Agent[Any],
    claim: Union[Claim, ClaimRef],
    *,
    budget_tokens: int = 4000,
    context: Any = None,
    run_config: Optional[RunConfig] = None,
) -> RunResult:
    """Runs ``agent`` on the claimed handoff: its input is the store's packet for it
    (``store.context_for``: the record, the task and its plan, the agents before, the
    predecessor's findings, relevant knowledge on ``main``, and the conversation before the
    handoff that the record carries, redacted, within ``budget_tokens``), the claim heartbeats
    while it runs, and the handoff is completed with the final output, or failed with the
    exception, which propagates."""
    astore = as_async(store)
    handoff = claim.handoff if isinstance(claim, Claim) else await astore.get(claim.handoff_id)
    briefing = await packet(astore, handoff, budget_tokens, carried_transcript(handoff))
    messages = briefing.to_messages("openai_responses")

    def run() -> Awaitable[RunResult]:
        return Runner.run(agent, messages, context=context, run_config=run_config)  # type: ignore[arg-type]

    return await settle(astore, claim, handoff.claimed_by, run, lambda result: _text(result.final_output))


#: An outcome longer than this is cut (and says so): a field holds at most 64 KiB.
MAX_OUTCOME_BYTES = 60_000


def _text(output: Any) -> str:
    """A run's final output as the handoff's outcome: text as it is, anything else as JSON."""
    if isinstance(output, str):
        text = output
    else:
        dump = getattr(output, "model_dump", None)
        try:
            text = json.dumps(dump() if callable(dump) else output, default=str)
        except (TypeError, ValueError):
            text = str(output)
    data = text.encode()
    if len(data) <= MAX_OUTCOME_BYTES:
        return text
    kept = data[:MAX_OUTCOME_BYTES].decode(errors="ignore")
    return f"{kept}\n[cut: the output had {len(data)} bytes]"
