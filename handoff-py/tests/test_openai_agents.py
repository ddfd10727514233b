"""``handoff_core.integrations.openai_agents`` against the real ``openai-agents`` package, its
models scripted (``agents.testing.ScriptedModel``): the handoff is recorded, not run; once per
tool call; the successor runs on the redacted packet; a failure is recorded; spans are emitted."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from agents import Agent, RunContextWrapper, Runner, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

import handoff_core as hc
from handoff_core import tracing
from handoff_core.integrations.openai_agents import durable_handoff, run_claimed

set_tracing_disabled(True)  # the SDK's own traces would go to OpenAI's servers

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
QUESTION = f"I was charged twice for order 1042. My API key is {SECRET}"


def transfer(call_id: str = "call_1", summary: str = "Customer was charged twice for order 1042") -> Any:
    arguments = {"reason": "a billing question", "summary": summary, "pending": ["refund the double charge"], "instructions": "Check the ledger first"}
    return function_call("transfer_to_billing", json.dumps(arguments), call_id=call_id)


def agents(store: Any, *, task_id: Any = "ticket-1042", call_id: str = "call_1") -> tuple[Agent[Any], Agent[Any], ScriptedModel]:
    """A triage agent whose model hands over to billing at once, and billing, which answers."""
    billing_model = ScriptedModel([[assistant_message("Refunded the second charge of order 1042")]])
    billing = Agent(name="billing", instructions="You handle billing.", model=billing_model)
    triage = Agent(
        name="triage",
        instructions="Route the customer.",
        model=ScriptedModel([[transfer(call_id)]]),
        handoffs=[durable_handoff(store, billing, from_agent="triage", task_id=task_id)],
    )
    return triage, billing, billing_model


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_the_handoff_is_recorded_and_the_target_does_not_run() -> None:
    store = hc.aio.Store.memory()
    triage, _, billing_model = agents(store)
    result = run(Runner.run(triage, QUESTION))
    (h,) = store.sync.list(task_id="ticket-1042")
    assert (h.status, h.from_agent, h.to_agent) == ("pending", "triage", "billing")
    assert h.goal == "Customer was charged twice for order 1042"
    assert h.pending_steps == ["refund the double charge"]
    assert h.instructions == "Check the ledger first"
    assert h.metadata["call_id"] == "call_1" and h.metadata["adapter"] == "openai-agents"
    assert h.id in result.final_output
    assert billing_model.calls == (), "billing must not run in the process that hands over"
    # The transcript on the record is the conversation before the handoff, redacted.
    (said,) = h.metadata["transcript"]
    assert said["role"] == "user" and "order 1042" in said["content"]
    assert SECRET not in json.dumps(h.metadata)


def test_a_retried_run_writes_the_record_once() -> None:
    store = hc.Store.memory()  # the synchronous store works too
    for _ in range(2):
        triage, _, _ = agents(store)
        run(Runner.run(triage, QUESTION))
    assert len(store.list(task_id="ticket-1042")) == 1
    # Another call is another handoff.
    triage, _, _ = agents(store, call_id="call_2")
    run(Runner.run(triage, QUESTION))
    assert len(store.list(task_id="ticket-1042")) == 2


def test_the_task_id_can_come_from_the_run_context() -> None:
    store = hc.aio.Store.memory()

    def ticket(ctx: RunContextWrapper[Any]) -> str:
        return f"ticket-{ctx.context['ticket']}"

    triage, _, _ = agents(store, task_id=ticket)
    run(Runner.run(triage, QUESTION, context={"ticket": 7}))
    assert [h.task_id for h in store.sync.list()] == ["ticket-7"]


def test_the_successor_runs_on_the_redacted_packet_and_completes() -> None:
    store = hc.aio.Store.memory()
    triage, billing, billing_model = agents(store)
    run(Runner.run(triage, QUESTION))

    async def worker() -> Any:
        claim = await store.claim_next("billing")
        assert claim is not None
        return claim, await run_claimed(store, billing, claim)

    claim, result = run(worker())
    assert result.final_output == "Refunded the second charge of order 1042"
    (call,) = billing_model.calls
    seen = json.dumps(call.input)
    assert "charged twice for order 1042" in seen and "Check the ledger first" in seen
    assert SECRET not in seen and "[REDACTED:" in seen
    done = store.sync.get(claim.handoff_id)
    assert (done.status, done.outcome) == ("completed", "Refunded the second charge of order 1042")


def test_the_successor_reads_the_stores_packet() -> None:
    """What billing's model receives is ``store.context_for``: the predecessor's findings and
    the task's plan reach it beside the record and the carried conversation."""
    store = hc.aio.Store.memory()
    triage, billing, billing_model = agents(store)
    run(Runner.run(triage, QUESTION))
    store.sync.add_facts("task/ticket-1042/triage", ["order 1042 was charged on March 2 and again on March 3"])

    async def worker() -> Any:
        claim = await store.claim_next("billing")
        assert claim is not None
        expected = await store.context_for(claim.handoff_id, budget_tokens=4000, transcript=claim.handoff.metadata["transcript"])
        await run_claimed(store, billing, claim)
        return expected

    expected = run(worker())
    (call,) = billing_model.calls
    seen = json.dumps(call.input)
    assert "order 1042 was charged on March 2 and again on March 3 (unverified)" in seen
    # The carried conversation follows the briefing as the messages it was.
    assert call.input[-1] == {"role": "user", "content": QUESTION.replace(SECRET, "[REDACTED:openai-api-key]")}
    assert call.input == expected.to_messages("openai_responses")
    assert SECRET not in seen


def test_a_failing_successor_is_recorded_and_the_error_propagates() -> None:
    store = hc.aio.Store.memory()
    billing_model = ScriptedModel([RuntimeError("the ledger is down")])
    billing = Agent(name="billing", model=billing_model)
    triage = Agent(
        name="triage",
        model=ScriptedModel([[transfer()]]),
        handoffs=[durable_handoff(store, billing, from_agent="triage", task_id="ticket-1042")],
    )

    async def scenario() -> str:
        await Runner.run(triage, QUESTION)
        claim = await store.claim_next("billing")
        assert claim is not None
        with pytest.raises(RuntimeError, match="the ledger is down"):
            await run_claimed(store, billing, claim)
        return claim.handoff_id

    handoff_id = run(scenario())
    back = store.sync.get(handoff_id)
    assert (back.status, back.attempts) == ("pending", 1)
    assert store.sync.events(handoff_id)[-1].detail["error"] == "RuntimeError: the ledger is down"


def test_agents_are_named_as_the_sdk_names_them() -> None:
    store = hc.aio.Store.memory()
    billing = Agent(name="Billing agent", model=ScriptedModel([]))
    made = durable_handoff(store, billing, from_agent="Triage agent", task_id="t")
    assert made.tool_name == "transfer_to_billing_agent"
    triage = Agent(name="Triage agent", model=ScriptedModel([[function_call(made.tool_name, json.dumps({"reason": "r", "summary": "s", "pending": None, "instructions": None}), call_id="c9")]]), handoffs=[made])
    run(Runner.run(triage, "hi"))
    (h,) = store.sync.list()
    assert (h.from_agent, h.to_agent) == ("Triage agent", "Billing agent")


def test_an_agent_name_the_store_refuses_is_named_before_any_run() -> None:
    with pytest.raises(hc.ValidationError, match="name"):
        durable_handoff(hc.Store.memory(), Agent(name="billing\n"), from_agent="triage", task_id="t")


def test_spans_for_create_claim_and_complete(spans: Any) -> None:
    store = tracing.instrument(hc.aio.Store.memory())
    triage, billing, _ = agents(store)
    run(Runner.run(triage, QUESTION))

    async def worker() -> None:
        claim = await store.claim_next("billing")
        await run_claimed(store, billing, claim)

    run(worker())
    by_name: dict[str, Any] = {s.name: s for s in spans.get_finished_spans()}
    assert set(by_name) == {"handoff.create triage", "handoff.claim billing", "handoff.work billing", "handoff.complete billing"}
    # One trace: the claim and the holder's work continue from the span that created the record,
    # the completion is part of the work.
    created, work = by_name["handoff.create triage"].context, by_name["handoff.work billing"]
    assert {s.context.trace_id for s in by_name.values()} == {created.trace_id}
    assert by_name["handoff.claim billing"].parent.span_id == created.span_id
    assert work.parent.span_id == created.span_id
    assert by_name["handoff.complete billing"].parent.span_id == work.context.span_id
    create = by_name["handoff.create triage"].attributes
    assert create["gen_ai.operation.name"] == "handoff.create"
    assert create["gen_ai.tool.name"] == "transfer_to_billing"
    assert create["gen_ai.tool.call.id"] == "call_1"
    assert (create["handoff.task_id"], create["handoff.from_agent"], create["handoff.to_agent"]) == ("ticket-1042", "triage", "billing")
    claim = by_name["handoff.claim billing"].attributes
    assert claim["handoff.id"] == create["handoff.id"] and claim["handoff.claim_token"] == 1
    assert claim["gen_ai.agent.name"] == "billing"
    complete = by_name["handoff.complete billing"].attributes
    assert complete["handoff.claim_token"] == 1 and complete["gen_ai.conversation.id"] == "ticket-1042"


def test_a_failed_run_gives_an_error_span(spans: Any) -> None:
    from opentelemetry.trace import StatusCode

    store = hc.aio.Store.memory()
    billing = Agent(name="billing", model=ScriptedModel([RuntimeError("the ledger is down")]))
    h = store.sync.create("t", "Refund order 1042", from_agent="triage", to_agent="billing")
    claim = store.sync.claim(h.id, "billing")
    with pytest.raises(RuntimeError):
        run(run_claimed(store, billing, claim))
    (failed,) = [s for s in spans.get_finished_spans() if s.name == "handoff.fail billing"]
    assert failed.attributes["handoff.id"] == h.id
    assert failed.attributes["error.type"] == "RuntimeError"
    # Recording the failure worked: the span of that operation is not itself an error.
    assert failed.status.status_code is not StatusCode.ERROR
