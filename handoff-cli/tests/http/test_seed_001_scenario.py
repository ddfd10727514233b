"""Seed 001 §8 over HTTP, step by step, with the seed's own routes and request bodies: three
agents fix a bug (a task from objectives, agents join, an escalation, an expert accepts it,
verified cherry-picks, the task's branch verified and merged into main, a bundle shared and
imported into main), and the next task's successor reads the fix in its packet. The server
verifies with a judge command (`handoff serve --judge-cmd`), as a deployment would with a script
around its model. The same scenario from the shell is `tests/seed_001_cli.rs`; through the core's
operations, `handoff-core/tests/seed_001.rs`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import Server, Servers

TASK = "fix-oauth-token-refresh"
FIX = "Token refresh needs retry logic with exponential backoff"
GUESS = "Maybe the clock is skewed"
OBJECTIVES = ["Identify root cause of token refresh failure", "Implement fix", "Add regression tests"]

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


def judged_server(servers: Servers, tmp_path: Path) -> Server:
    judge = tmp_path / "judge.sh"
    judge.write_text(JUDGE)
    return servers.start(None, "--judge-cmd", f"sh {judge}")


def texts(facts: list[dict[str, Any]]) -> list[str]:
    return [f["text"] for f in facts]


def test_three_agents_fix_a_bug_over_http_and_the_next_task_receives_the_fix(
    servers: Servers, tmp_path: Path
) -> None:
    server = judged_server(servers, tmp_path)

    # Step 1: POST /tasks {name, objectives}, with `id` for the seed's readable branch.
    task = server.ok("POST", "/tasks", {"id": TASK, "name": TASK, "objectives": OBJECTIVES})["task"]
    assert task["id"] == TASK, task
    assert [s["name"] for s in task["plan"]["steps"]] == OBJECTIVES, task
    task_branch = f"task/{task['id']}"
    assert task_branch == "task/fix-oauth-token-refresh"
    server.ok("POST", f"/tasks/{TASK}/start", {})

    # Step 2: POST /tasks/{id}/join {agent_id, role, assigned_objectives}; A writes what it found.
    joined = server.ok(
        "POST",
        f"/tasks/{TASK}/join",
        {"agent_id": "agent-investigator", "role": "investigator", "assigned_objectives": [1]},
    )["task"]
    member = joined["members"][0]
    a_branch = f"{task_branch}/agent-investigator"
    assert (member["agent"], member["role"], member["branch"]) == ("agent-investigator", "investigator", a_branch)
    assert member["objectives"] == ["1"], member
    server.ok(
        "POST", "/facts", {"branch": a_branch, "facts": [{"text": "The failure is in token_service.py:142"}, {"text": GUESS}]}
    )
    server.ok(
        "POST",
        "/conversations",
        {
            "branch": a_branch,
            "title": "Investigation",
            "messages": [
                say("user", "Why does the token refresh fail?"),
                say("assistant", "The failure is in token_service.py:142, inside the OAuth2 state machine."),
            ],
        },
    )

    # Step 3: POST /handoffs, the escalation as the seed writes it.
    escalation = server.ok(
        "POST",
        "/handoffs",
        {
            "task_id": TASK,
            "from_agent_id": "agent-investigator",
            "handoff_type": "escalation",
            "instructions": "Found the issue in token_service.py:142 but the fix requires understanding the "
            "OAuth2 state machine. Need someone with OAuth2 expertise.",
            "blockers": ["Unclear OAuth2 state transition after refresh failure"],
        },
    )["handoff"]
    assert escalation["kind"] == "escalation" and escalation["from_agent"] == "agent-investigator", escalation

    # Step 4: POST /handoffs/{id}/accept {agent_id}; B's packet holds A's work, unverified.
    claim = server.ok("POST", f"/handoffs/{escalation['id']}/accept", {"agent_id": "agent-oauth-expert"})
    assert claim["handoff"]["claimed_by"] == "agent-oauth-expert", claim
    packet = server.ok("GET", f"/handoffs/{escalation['id']}/context")["markdown"]
    for expected in (
        "The failure is in token_service.py:142",
        "Unclear OAuth2 state transition after refresh failure",
        "inside the OAuth2 state machine",
        "(unverified)",
        f"{task_branch}/agent-oauth-expert",
    ):
        assert expected in packet, (expected, packet)

    # Step 5: B fixes it on its branch and completes the escalation; C joins for testing.
    server.ok("POST", f"/tasks/{TASK}/join", {"agent_id": "agent-oauth-expert", "role": "expert"})
    server.ok("POST", f"/tasks/{TASK}/join", {"agent_id": "agent-tester", "role": "tester"})
    b_branch = f"{task_branch}/agent-oauth-expert"
    server.ok("POST", "/facts", {"branch": b_branch, "facts": [{"text": FIX}]})
    conversation = server.ok(
        "POST", "/conversations", {"branch": b_branch, "title": "The fix", "messages": expert_conversation()}
    )["conversation"]
    assert conversation["message_count"] == 16, conversation
    done = server.ok(
        "POST",
        f"/handoffs/{escalation['id']}/complete",
        {
            "token": claim["token"],
            "claim_secret": claim["claim_secret"],
            "outcome": "Retry with exponential backoff in token_service.py",
        },
    )
    assert done["handoff"]["status"] == "completed", done

    # Step 6: cherry-pick the work, verified by the server's judge, and the decisions.
    picked = server.ok(
        "POST",
        f"/conversations/{conversation['id']}/cherry-pick",
        {"target_branch": task_branch, "from_sequence": 5, "to_sequence": 15, "verify": True},
    )["conversation"]
    assert picked["message_count"] == 11, picked
    assert (picked["verification_status"], picked["verified_by"]) == ("verified", "judge-cmd"), picked
    decisions = server.ok(
        "POST", f"/conversations/{conversation['id']}/cherry-pick-decisions", {"target_branch": task_branch}
    )["conversation"]
    assert decisions["branch"] == task_branch and decisions["cherry_picked_from"] == conversation["id"], decisions

    # Step 7: POST /branches/task%2Ffix-oauth-token-refresh/verify, then complete into main.
    report = server.ok("POST", "/branches/task%2Ffix-oauth-token-refresh/verify")
    assert report["verified"] >= 2, report
    assert report["invalidated"] == 1, f"the guess: {report}"
    assert report["failed"] == 0, report
    completed = server.ok(
        "POST",
        f"/tasks/{TASK}/complete",
        {
            "merge_to_main": True,
            "result_summary": "Fixed OAuth2 token refresh by adding retry logic with exponential backoff...",
        },
    )["task"]
    assert completed["status"] == "completed", completed
    main = texts(server.ok("GET", "/facts?branch=main")["facts"])
    assert FIX in main, main
    assert GUESS not in main, main

    # Step 8: POST /bundles: the verified facts (2) and the cherry-picked conversations.
    bundle = server.ok(
        "POST",
        "/bundles",
        {"task_id": TASK, "name": "OAuth2 Token Refresh Fix Playbook", "verified_only": True, "visibility": "team"},
    )["bundle"]
    assert bundle["fact_count"] == 2, bundle
    assert bundle["conversation_count"] >= 1, bundle
    assert bundle["share_token"].startswith("kb_"), bundle
    assert bundle["visibility"] == "team"
    stored = server.ok("GET", f"/bundles/{bundle['id']}")["bundle"]
    assert sorted(texts(stored["data"]["facts"])) == sorted(["The failure is in token_service.py:142", FIX]), stored
    assert any(len(c["messages"]) == 11 for c in stored["data"]["conversations"]), stored["data"]["conversations"]
    shared = server.ok("GET", f"/bundles/shared/{bundle['share_token']}")["bundle"]
    assert shared["id"] == bundle["id"], shared

    # Step 9: POST /bundles/{bundle_id}/import {target_branch: "main"}: nothing twice; the next
    # task's successor gets the fix without asking.
    imported = server.ok("POST", f"/bundles/{bundle['id']}/import", {"target_branch": "main"})
    assert imported["facts_added"] == 0, f"merged already: {imported}"
    main = texts(server.ok("GET", "/facts?branch=main")["facts"])
    assert main.count(FIX) == 1, main
    following = server.ok(
        "POST",
        "/handoffs",
        {
            "task_id": "oauth-login-loop",
            "goal": "Users are logged out when the OAuth token refresh fails",
            "to_agent": "agent-next",
        },
    )["handoff"]
    context = server.ok("GET", f"/handoffs/{following['id']}/context")
    assert FIX in context["markdown"], context["markdown"]
    assert GUESS not in context["markdown"], context["markdown"]


def test_a_task_created_without_an_id_gets_a_generated_one_and_its_branch(server: Server) -> None:
    task = server.ok("POST", "/tasks", {"name": TASK, "objectives": OBJECTIVES})["task"]
    assert task["id"] and task["id"] != TASK, task
    assert task["name"] == TASK
    server.ok("POST", f"/tasks/{task['id']}/start", {})
    joined = server.ok(
        "POST",
        f"/tasks/{task['id']}/join",
        {"agent_id": "agent-investigator", "role": "investigator", "assigned_objectives": [1]},
    )["task"]
    assert joined["members"][0]["branch"] == f"task/{task['id']}/agent-investigator", joined
    server.ok("POST", "/facts", {"branch": f"task/{task['id']}/agent-investigator", "facts": [{"text": FIX}]})
    branches = {b["name"]: b.get("parent") for b in server.ok("GET", "/branches")["branches"]}
    assert branches[f"task/{task['id']}/agent-investigator"] == f"task/{task['id']}", branches
    # The same name again is another task; the same id again is refused.
    again = server.ok("POST", "/tasks", {"name": TASK, "objectives": OBJECTIVES})["task"]
    assert again["id"] != task["id"]
    taken = server.post("/tasks", {"id": task["id"], "name": TASK, "objectives": OBJECTIVES})
    assert taken.status == 400, taken
    assert [p["field"] for p in taken.error()["problems"]] == ["id"], taken


def test_a_server_without_a_judge_refuses_to_verify_a_branch(server: Server) -> None:
    server.ok("POST", "/facts", {"branch": "task/t-nojudge/agent-a", "facts": [{"text": FIX}]})
    reply = server.post("/branches/task%2Ft-nojudge/verify")
    assert reply.status == 400, reply
    assert [p["field"] for p in reply.error()["problems"]] == ["judge_cmd"], reply
    facts = server.ok("GET", "/facts?branch=task%2Ft-nojudge%2Fagent-a")["facts"]
    assert [f["status"] for f in facts] == ["active"], facts
