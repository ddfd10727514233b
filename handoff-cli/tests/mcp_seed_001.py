"""Seed 001 §8 over MCP, step by step, with the official MCP Python SDK and the seed's own
argument names (§7.3: `memory_handoff_create`'s, `memory_handoff_accept`'s,
`memory_cherry_pick_conversation`'s, `memory_verify_branch`'s, `memory_bundle_create`'s and
`memory_bundle_import`'s) sent to our tools: three agents, each with its own `handoff mcp`
server on one store, fix a bug; the operator's judge (`handoff mcp --judge-cmd`) verifies; the
bundle is imported into main and the next task's successor reads the fix.

`mcp_e2e.py` runs it (`make test-cli`); alone: python handoff-cli/tests/mcp_seed_001.py
path/to/handoff. The same scenario from the shell is `tests/seed_001_cli.rs`, over HTTP
`tests/http/test_seed_001_scenario.py`, through the core's operations
`handoff-core/tests/seed_001.rs`.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from contextlib import AsyncExitStack
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TASK = "fix-oauth-token-refresh"
TASK_BRANCH = f"task/{TASK}"
FIX = "Token refresh needs retry logic with exponential backoff"
GUESS = "Maybe the clock is skewed"

# Facts that state the cause or the fix pass, guesses fail; a conversation passes when it
# reaches the fix and stays neutral otherwise.
JUDGE = r"""item=$(cat)
case "$item" in
  *'"kind":"fact"'*)
    case "$item" in
      *'"text":"Maybe'*) echo 0.2 ;;
      *) echo '{"score": 0.9, "explanation": "states the cause or the fix"}' ;;
    esac ;;
  *backoff*) echo '{"score": 0.9, "explanation": "reaches the fix"}' ;;
  *) echo 0.5 ;;
esac
"""


async def connect(stack: AsyncExitStack, binary: str, db: str, *extra: str) -> ClientSession:
    params = StdioServerParameters(
        command=binary, args=["mcp", "--db", db, "--tools", "all", *extra], cwd=os.path.dirname(db)
    )
    read, write = await stack.enter_async_context(stdio_client(params))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session


async def ok(session: ClientSession, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(tool, args)
    text = result.content[0].text if result.content else ""
    assert not result.is_error, f"{tool} failed: {text}"
    assert isinstance(result.structured_content, dict), f"{tool}: no structuredContent"
    return result.structured_content


def say(role: str, content: str) -> dict[str, str]:
    return {"role": role, "content": content}


def expert_conversation() -> list[dict[str, str]]:
    """Agent B's conversation: 16 messages, the work and the fix at sequences 5 to 15."""
    messages = [say("user", "Take over the OAuth2 token refresh bug.")]
    messages += [say("assistant", f"Reading the handoff, part {i}.") for i in (1, 2, 3)]
    messages += [
        say("assistant", "Let me look at token_service.py:142 first."),
        say("tool", "def refresh(): ... # no retry"),
        say("assistant", "The root cause is a refresh that runs once and gives up."),
        say("assistant", "I'll add retry logic with exponential backoff."),
        say("tool", "tests: 42 passed"),
        say("assistant", "The fix works: retry with exponential backoff."),
    ]
    while len(messages) < 16:
        messages.append(say("assistant", "Writing up the notes."))
    return messages


def step(task: dict[str, Any], step_id: str) -> dict[str, Any]:
    return next(s for s in task["plan"]["steps"] if s["id"] == step_id)


async def seed_001_scenario(stack: AsyncExitStack, binary: str, db: str) -> None:
    """The nine steps, each agent through a server of its own, the judge the operator's."""
    judge = os.path.join(os.path.dirname(db), "judge.sh")
    with open(judge, "w") as f:
        f.write(JUDGE)
    judged = ("--judge-cmd", f"sh {judge}")
    lead = await connect(stack, binary, db, *judged)
    investigator = await connect(stack, binary, db)
    expert = await connect(stack, binary, db, *judged)
    tester = await connect(stack, binary, db)
    human = await connect(stack, binary, db)

    # Step 1: the task from objectives, under the seed's readable id.
    task = (
        await ok(
            lead,
            "task_create",
            {
                "id": TASK,
                "name": TASK,
                "objectives": [
                    "Identify root cause of token refresh failure",
                    "Implement fix",
                    "Add regression tests",
                ],
            },
        )
    )["task"]
    assert task["id"] == TASK and len(task["plan"]["steps"]) == 3, task
    await ok(lead, "task_start", {"id": TASK})

    # Step 2: agent A joins as investigator with objective 1 (the seed's names), writes its notes.
    joined = (
        await ok(
            investigator,
            "task_join",
            {"task_id": TASK, "agent_id": "agent-investigator", "role": "investigator", "assigned_objectives": [1]},
        )
    )["task"]
    a_branch = f"{TASK_BRANCH}/agent-investigator"
    assert joined["members"][0]["branch"] == a_branch, joined
    assert step(joined, "1")["agent"] == "agent-investigator", joined
    await ok(
        investigator,
        "facts_add",
        {"branch": a_branch, "facts": [{"text": "The failure is in token_service.py:142"}, {"text": GUESS}]},
    )
    await ok(
        investigator,
        "conversation_add",
        {
            "branch": a_branch,
            "title": "Investigation",
            "messages": [
                say("user", "Why does the token refresh fail?"),
                say("assistant", "The failure is in token_service.py:142, inside the OAuth2 state machine."),
            ],
        },
    )

    # Step 3: memory_handoff_create {task_id, handoff_type, instructions, priority_objectives,
    # blockers}, sent to handoff_create.
    escalation = (
        await ok(
            investigator,
            "handoff_create",
            {
                "task_id": TASK,
                "from_agent_id": "agent-investigator",
                "handoff_type": "escalation",
                "instructions": "Found the issue in token_service.py:142 but the fix requires understanding the "
                "OAuth2 state machine. Need someone with OAuth2 expertise.",
                "priority_objectives": [1, 2],
                "blockers": ["Unclear OAuth2 state transition after refresh failure"],
            },
        )
    )["handoff"]
    assert escalation["kind"] == "escalation", escalation
    assert escalation["priority_items"] == ["1", "2"], escalation

    # Step 4: memory_handoff_accept {handoff_id, agent_id}, sent to handoff_claim; the packet
    # holds A's work, unverified.
    claim = await ok(expert, "handoff_claim", {"handoff_id": escalation["id"], "agent_id": "agent-oauth-expert"})
    assert claim["handoff"]["claimed_by"] == "agent-oauth-expert", claim
    packet = (await ok(expert, "context", {"handoff_id": escalation["id"]}))["markdown"]
    for expected in (
        "The failure is in token_service.py:142",
        "Unclear OAuth2 state transition after refresh failure",
        "inside the OAuth2 state machine",
        "(unverified)",
    ):
        assert expected in packet, (expected, packet)

    # Step 5: B fixes it on its branch and completes the escalation; C joins for testing, with
    # the third objective.
    await ok(expert, "task_join", {"task_id": TASK, "agent_id": "agent-oauth-expert", "role": "expert"})
    joined = (
        await ok(
            tester,
            "task_join",
            {"task_id": TASK, "agent_id": "agent-tester", "role": "tester", "assigned_objectives": [3]},
        )
    )["task"]
    b_branch = f"{TASK_BRANCH}/agent-oauth-expert"
    await ok(expert, "facts_add", {"branch": b_branch, "facts": [{"text": FIX}]})
    conversation = (
        await ok(expert, "conversation_add", {"branch": b_branch, "title": "The fix", "messages": expert_conversation()})
    )["conversation"]
    assert conversation["message_count"] == 16, conversation
    done = await ok(
        expert,
        "handoff_complete",
        {
            "handoff_id": escalation["id"],
            "token": claim["token"],
            "claim_secret": claim["claim_secret"],
            "outcome": "Retry with exponential backoff in token_service.py",
        },
    )
    assert done["handoff"]["status"] == "completed", done

    # The tester's step fails on every attempt: the task pauses on an escalation to a human,
    # whose plain handoff_complete skips the step and lets the task go on.
    for attempt in (1, 2, 3):
        current = (await ok(tester, "task_get", {"id": TASK}))["task"]
        offer = step(current, "3")["handoff_id"]
        held = await ok(tester, "handoff_claim", {"handoff_id": offer, "agent": "agent-tester"})
        await ok(
            tester,
            "step_fail",
            {
                "handoff_id": offer,
                "token": held["token"],
                "claim_secret": held["claim_secret"],
                "error": f"attempt {attempt}: the regression test cannot reproduce the expiry",
            },
        )
    paused = (await ok(human, "task_get", {"id": TASK}))["task"]
    assert paused["status"] == "paused" and step(paused, "3")["status"] == "escalated", paused
    decision = await ok(human, "handoff_claim_next", {"agent": "human", "task_id": TASK})
    assert decision["handoff"]["kind"] == "escalation", decision
    await ok(
        human,
        "handoff_complete",
        {
            "handoff_id": decision["handoff_id"],
            "token": decision["token"],
            "claim_secret": decision["claim_secret"],
            "outcome": "Skip it: the expert's run covers the regression",
        },
    )
    going_on = (await ok(human, "task_get", {"id": TASK}))["task"]
    assert going_on["status"] == "in_progress" and step(going_on, "3")["status"] == "skipped", going_on

    # Step 6: memory_cherry_pick_conversation {conversation_id, target_branch, from_sequence,
    # to_sequence, verify}, judged by the server's --judge-cmd; then the decisions.
    picked = (
        await ok(
            expert,
            "cherry_pick",
            {
                "conversation_id": conversation["id"],
                "target_branch": TASK_BRANCH,
                "from_sequence": 5,
                "to_sequence": 15,
                "verify": True,
            },
        )
    )["conversation"]
    assert picked["message_count"] == 11, picked
    assert (picked["verification_status"], picked["verified_by"]) == ("verified", "judge-cmd"), picked
    decisions = (
        await ok(expert, "cherry_pick_decisions", {"conversation_id": conversation["id"], "target_branch": TASK_BRANCH})
    )["conversation"]
    assert decisions["cherry_picked_from"] == conversation["id"], decisions

    # Step 7: memory_verify_branch {branch_name, fact_threshold}, then the task completes into main.
    report = await ok(lead, "verify", {"branch_name": TASK_BRANCH, "fact_threshold": 0.7})
    assert report["verified"] >= 2, report
    assert report["invalidated"] == 1, f"the guess: {report}"
    assert report["failed"] == 0, report
    completed = (
        await ok(
            lead,
            "task_complete",
            {
                "id": TASK,
                "merge_to_main": True,
                "result_summary": "Fixed OAuth2 token refresh by adding retry logic with exponential backoff",
            },
        )
    )["task"]
    assert completed["status"] == "completed", completed
    main = [f["text"] for f in (await ok(lead, "facts_list", {"branch": "main"}))["facts"]]
    assert FIX in main and GUESS not in main, main

    # Step 8: memory_bundle_create {task_id, name, verified_only, visibility}.
    bundle = (
        await ok(
            lead,
            "bundle_create",
            {"task_id": TASK, "name": "OAuth2 Token Refresh Fix Playbook", "verified_only": True, "visibility": "team"},
        )
    )["bundle"]
    assert bundle["fact_count"] == 2, bundle
    assert bundle["conversation_count"] >= 1, bundle
    assert bundle["share_token"].startswith("kb_"), bundle
    shown = (await ok(lead, "bundle_show", {"id": bundle["id"]}))["bundle"]
    assert sorted(f["text"] for f in shown["data"]["facts"]) == sorted(
        ["The failure is in token_service.py:142", FIX]
    ), shown["data"]["facts"]
    assert any(len(c["messages"]) == 11 for c in shown["data"]["conversations"]), shown["data"]["conversations"]

    # Step 9: memory_bundle_import {bundle_id, target_branch}: nothing twice; the next task's
    # successor gets the fix without asking.
    imported = await ok(lead, "bundle_import", {"bundle_id": bundle["id"], "target_branch": "main"})
    assert imported["facts_added"] == 0, f"merged already: {imported}"
    following = (
        await ok(
            lead,
            "handoff_create",
            {
                "task_id": "oauth-login-loop",
                "goal": "Users are logged out when the OAuth token refresh fails",
                "to_agent": "agent-next",
            },
        )
    )["handoff"]
    packet = (await ok(lead, "context", {"handoff_id": following["id"]}))["markdown"]
    assert FIX in packet, packet
    assert GUESS not in packet, packet


async def main(binary: str) -> None:
    db = os.path.join(tempfile.mkdtemp(prefix="handoff-mcp-seed-"), "handoff.db")
    async with AsyncExitStack() as stack:
        await seed_001_scenario(stack, binary, db)
    print("mcp seed 001: ok")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
