"""A swarm as SDK users name it: display names through registry → tools → detect → create →
claim_next; agents from Markdown files; the shapes the detector reads and refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import hf

AGENT_RULE = "must be 1 to 128 printable characters, with no control, bidirectional or zero-width characters and no space at either end"
ARGS = {"reason": "VPN drops", "summary": "customer 42 cannot connect", "pending": ["check the logs"],
        "instructions": "be kind"}


def chat(name: str, arguments: dict | None = None, call_id: str = "call_1") -> str:
    return json.dumps({"choices": [{"index": 0, "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": name, "arguments": json.dumps(ARGS if arguments is None else arguments)}}]}}]})


@pytest.fixture
def swarm() -> hf.AgentRegistry:
    r = hf.AgentRegistry()
    r.add("Triage", "routes requests", ["Tech Support", "Billing agent"])
    r.add("Tech Support", "fixes setups", ["Billing agent"])
    r.add("Billing agent", "refunds and invoices", [])
    return r


def test_display_names_from_registry_to_claim(swarm: hf.AgentRegistry, store: hf.Store) -> None:
    tools = json.loads(swarm.tools("Triage", hf.Provider.OPENAI_CHAT))
    assert [t["function"]["name"] for t in tools] == ["transfer_to_tech_support", "transfer_to_billing_agent"]
    intent = swarm.detect(chat("transfer_to_tech_support"), "Triage")
    assert intent is not None
    assert (intent.target, intent.tool, intent.call_id) == ("Tech Support", "transfer_to_tech_support", "call_1")
    options = intent.to_create_options("T-1", "Triage", "Fix the VPN")
    assert (options.from_agent, options.to_agent) == ("Triage", "Tech Support")
    h = store.create(options)
    assert h.to_agent == "Tech Support"
    assert [x.id for x in store.list(hf.ListFilter(to_agent="Tech Support"))] == [h.id]
    assert store.claim_next("Billing agent") is None
    claim = store.claim_next("Tech Support")
    assert claim is not None and claim.handoff.id == h.id and claim.handoff.claimed_by == "Tech Support"
    nxt = swarm.detect(chat("transfer_to_billing_agent", {"reason": "refund"}, "call_2"), "Tech Support")
    assert nxt is not None
    more = nxt.to_create_options("T-1", "Tech Support", "Refund the month")
    more.parent_id = h.id
    h2 = store.create(more)
    assert store.claim_next("Billing agent").handoff.id == h2.id
    assert store.chain("T-1").text == "Triage → Tech Support → Billing agent"


def test_bad_agent_names_get_the_cores_problem(store: hf.Store) -> None:
    r = hf.AgentRegistry()
    for name in [" padded", "trailing ", "", "tab\there", "x" * 129]:
        with pytest.raises(hf.HandoffError.Validation) as err:
            r.add(name)
        assert [(p.field, p.rule) for p in err.value.problems] == [("name", AGENT_RULE)], repr(name)
    with pytest.raises(hf.HandoffError.Validation) as err:
        r.add("ok", "", ["Tech Support", "new\nline"])
    assert err.value.problems[0].field == "collaborators[1]"
    r.add("x" * 128)
    r.add("Ünïcödé agent ✓")
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.create(hf.CreateOptions(task_id="t", goal="g", from_agent="bell\x07", to_agent=" Tech Support"))
    assert sorted((p.field, p.rule) for p in err.value.problems) == [("from_agent", AGENT_RULE), ("to_agent", AGENT_RULE)]
    h = store.create(hf.CreateOptions(task_id="t", goal="g", from_agent="Triage"))
    for call in (lambda: store.claim(h.id, "x\ny"), lambda: store.claim_next(""),
                 lambda: store.reject(h.id, " Billing", "no")):
        with pytest.raises(hf.HandoffError.Validation) as err:
            call()
        assert [(p.field, p.rule) for p in err.value.problems] == [("agent", AGENT_RULE)]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.cancel(h.id, "by\r", None)
    assert err.value.problems[0].field == "by"


def test_registry_from_markdown_dir(tmp_path: Path, store: hf.Store) -> None:
    (tmp_path / "tech-support.md").write_text(
        "---\nname: Tech Support\ndescription: Fixes customer setups\n---\n# Support desk\n\n"
        "## Collaborations\n- **Billing agent**: refunds\n")
    (tmp_path / "billing.md").write_text(
        "# Billing agent\n\nRefunds and\ninvoices.\n\n## Collaborations\n"
        "- [Tech Support](tech-support.md) — when it is technical\n\n## Tools\n- stripe\n")
    (tmp_path / "triage.md").write_text(
        "# Triage\n\nRoutes requests.\n\n## Collaborations\n- Tech Support\n- Billing agent (money)\n")
    (tmp_path / "notes.txt").write_text("# Not an agent\n")
    r = hf.AgentRegistry.from_markdown_dir(str(tmp_path))
    assert r.agents() == [
        hf.Agent(name="Billing agent", description="Refunds and invoices.", collaborators=["Tech Support"]),
        hf.Agent(name="Tech Support", description="Fixes customer setups", collaborators=["Billing agent"]),
        hf.Agent(name="Triage", description="Routes requests.", collaborators=["Tech Support", "Billing agent"]),
    ]
    tools = json.loads(r.tools("Triage", hf.Provider.OPENAI_RESPONSES))
    assert [t["name"] for t in tools] == ["transfer_to_billing_agent", "transfer_to_tech_support"]
    assert r.detect(chat("transfer_to_billing_agent"), "Tech Support").target == "Billing agent"
    guarded = hf.Store.memory(hf.OpenOptions(policy=r.policy()))
    with pytest.raises(hf.HandoffError.ChainViolation):
        guarded.create(hf.CreateOptions(task_id="t", goal="g", from_agent="Billing agent", to_agent="Triage"))

    with pytest.raises(hf.HandoffError.Validation) as err:
        hf.AgentRegistry.from_markdown_dir(str(tmp_path / "missing"))
    assert err.value.problems[0].field == "path"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "bad_agent.md").write_text("---\nname: bell\x07\n---\n")
    with pytest.raises(hf.HandoffError.Validation) as err:
        hf.AgentRegistry.from_markdown_dir(str(bad))
    assert [(p.field, p.rule) for p in err.value.problems] == [("bad_agent.name", AGENT_RULE)]


def test_detects_langchain_and_lone_blocks_and_refuses_unknown_shapes(swarm: hf.AgentRegistry) -> None:
    call = {"name": "transfer_to_tech_support", "args": ARGS, "id": "call_lc", "type": "tool_call"}
    ai_message = {"type": "ai", "content": "", "tool_calls": [call], "invalid_tool_calls": [],
                  "additional_kwargs": {}, "response_metadata": {}, "id": "run-1"}
    intent = swarm.detect(json.dumps(ai_message), "Triage")
    assert intent is not None
    assert (intent.target, intent.tool, intent.call_id) == ("Tech Support", "transfer_to_tech_support", "call_lc")
    assert json.loads(intent.arguments) == ARGS
    dumped = {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"],
              "kwargs": {"content": "", "type": "ai", "tool_calls": [call]}}
    assert swarm.detect(json.dumps(dumped), "Triage").target == "Tech Support"
    block = {"type": "tool_use", "id": "toolu_1", "name": "transfer_to_billing_agent", "input": {"reason": "refund"}}
    lone = swarm.detect(json.dumps(block), "Triage")
    assert lone is not None and (lone.target, lone.call_id) == ("Billing agent", "toolu_1")
    assert swarm.detect(json.dumps([{"type": "text", "text": "Passing on."}, block]), "Triage").target == "Billing agent"
    for none in [{"type": "ai", "content": "Hello!", "tool_calls": []}, {"role": "assistant", "content": "Hello!"},
                 {"type": "text", "text": "Hello!"}]:
        assert swarm.detect(json.dumps(none), "Triage") is None, none
    # An element of a list (a transcript) that is no message is named by its place.
    for unknown, field in [({"foo": 1}, "response"), ({}, "response"), ([1, 2], "response[0]")]:
        with pytest.raises(hf.HandoffError.Validation) as err:
            swarm.detect(json.dumps(unknown), "Triage")
        assert err.value.problems[0].field == field


def test_multiple_first_wins(swarm: hf.AgentRegistry) -> None:
    two = json.loads(chat("transfer_to_tech_support"))
    two["choices"][0]["message"]["tool_calls"].append(
        {"id": "call_2", "type": "function", "function": {"name": "transfer_to_billing_agent", "arguments": "{}"}})
    with pytest.raises(hf.HandoffError.Validation):
        swarm.detect(json.dumps(two), "Triage", hf.Multiple.ERROR)
    assert swarm.detect(json.dumps(two), "Triage", hf.Multiple.FIRST_WINS).target == "Tech Support"
