"""The successor's packet over HTTP (`GET /handoffs/{id}/context`): seed 001 §8's escalation,
whose taker reads what the escalating agent found before anyone verified it, and the budgets."""

from __future__ import annotations

import uuid

from conftest import Server

FINDING = "token_service.py:142 drops the refresh token after a 401"


def uid() -> str:
    return uuid.uuid4().hex[:12]


def test_the_escalations_taker_reads_the_predecessors_unverified_fact(server: Server) -> None:
    task = "fix-oauth-" + uid()
    a, b = "agent-investigator", "agent-oauth-expert"
    # A records what it found on its own branch, then escalates.
    server.ok("POST", "/facts", {"branch": f"task/{task}/{a}", "facts": [{"text": FINDING, "confidence": 0.8}]})
    escalation = server.ok(
        "POST",
        "/handoffs",
        {
            "task_id": task,
            "goal": "Fix the OAuth2 token refresh",
            "from_agent": a,
            "kind": "escalation",
            "instructions": "Found the issue in token_service.py:142; needs OAuth2 expertise.",
            "blockers": ["Unclear OAuth2 state transition after refresh failure"],
        },
    )["handoff"]
    claim = server.ok("POST", f"/handoffs/{escalation['id']}/claim", {"agent": b})
    assert claim["handoff"]["claimed_by"] == b

    context = server.ok("GET", f"/handoffs/{escalation['id']}/context")
    md = context["markdown"]
    assert f"{FINDING} (unverified)" in md, md
    assert f"## Unverified Findings of {a} (on task/{task}/{a})" in md, md
    assert "Unclear OAuth2 state transition after refresh failure" in md, md
    assert f"Continue on `task/{task}/{b}`" in md, md
    packet = context["packet"]
    assert (packet["unit"], packet["budget"]) == ("tokens", 2000), packet
    finding = next(s for s in packet["sections"] if FINDING in s["text"])
    assert finding["kind"] == "fact", finding
    assert not packet["manifest"]["dropped"] and not packet["manifest"]["truncated"], packet["manifest"]
    # Nobody verified the fact by reading it.
    facts = server.ok("GET", f"/facts?branch=task/{task}/{a}")["facts"]
    assert [f["status"] for f in facts] == ["active"], facts


def test_a_character_budget_bounds_the_markdown_and_bad_budgets_are_named(server: Server) -> None:
    task = "ledger-" + uid()
    server.ok(
        "POST",
        "/facts",
        {
            "branch": f"task/{task}/agent-a",
            "facts": [f"finding {i}: the ledger export drifts by one cent on refunds of batch {i}" for i in range(60)],
        },
    )
    h = server.ok(
        "POST",
        "/handoffs",
        {
            "task_id": task,
            "goal": "Find why the ledger export drifts",
            "from_agent": "agent-a",
            "instructions": "Start with the refunds of batch 7.",
            "completed": [f"checked batch {i} against the bank statement" for i in range(40)],
        },
    )["handoff"]

    context = server.ok("GET", f"/handoffs/{h['id']}/context?budget_chars=2000")
    md = context["markdown"]
    assert len(md) <= 2000, len(md)
    packet = context["packet"]
    assert (packet["unit"], packet["budget"], packet["tokens"]) == ("chars", 2000, len(md)), packet
    assert "Find why the ledger export drifts" in md and "Start with the refunds of batch 7." in md
    assert packet["manifest"]["dropped"], packet["manifest"]

    small = server.ok("GET", f"/handoffs/{h['id']}/context?budget_tokens=300")["packet"]
    assert (small["unit"], small["budget"]) == ("tokens", 300) and small["tokens"] <= 300, small

    events = server.ok("GET", f"/handoffs/{h['id']}/events")
    for query, field in [
        ("budget_chars=0", "budget_chars"),
        ("budget_tokens=0", "budget_tokens"),
        ("budget_tokens=100&budget_chars=100", "budget_chars"),
        ("budget_chars=many", "budget_chars"),
    ]:
        refused = server.get(f"/handoffs/{h['id']}/context?{query}")
        assert refused.status == 400, (query, refused)
        assert refused.error()["code"] == "VALIDATION", refused
        assert [f for f, _ in refused.problems()] == [field], (query, refused)
    # Reading a packet changes nothing.
    assert server.ok("GET", f"/handoffs/{h['id']}/events") == events
    assert server.get("/handoffs/no-such-handoff/context").status == 404
