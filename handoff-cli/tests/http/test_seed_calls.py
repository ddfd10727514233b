"""Seed 001 §8's handoff calls over HTTP exactly as the seed writes them (issue 47): `POST
/handoffs` with seed 001's field names and no goal, `POST /handoffs/{id}/accept` with
`agent_id`, `GET /handoffs?status=accepted`; the OpenAPI document allowing those bodies; and
the routes of the task operations that settle a step with its claim."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import Server


def make_task(server: Server, name: str, goal: str, **fields: Any) -> dict[str, Any]:
    return server.ok("POST", "/tasks", {"name": name, "goal": goal, **fields})["task"]


def test_seed_001_escalation_accept_and_list_as_written(server: Server) -> None:
    task = make_task(server, "fix-oauth-token-refresh", "Fix OAuth2 token refresh")
    # Step 3: Agent A gets stuck — escalation handoff.
    reply = server.post(
        "/handoffs",
        {
            "task_id": task["id"],
            "from_agent_id": "agent-investigator",
            "handoff_type": "escalation",
            "instructions": "Found the issue in token_service.py:142 but the fix requires "
            "understanding the OAuth2 state machine. Need someone with OAuth2 expertise.",
            "blockers": ["Unclear OAuth2 state transition after refresh failure"],
            "priority_objectives": [1, 2],
        },
    )
    assert reply.status == 201, reply
    h = reply.json["handoff"]
    assert h["goal"] == "Fix OAuth2 token refresh"
    assert h["from_agent"] == "agent-investigator"
    assert h["kind"] == "escalation"
    assert h["priority_items"] == ["1", "2"]
    assert h["blockers"] == ["Unclear OAuth2 state transition after refresh failure"]

    pending = server.ok("GET", f"/handoffs?task_id={task['id']}&status=pending")
    assert [x["id"] for x in pending["handoffs"]] == [h["id"]]
    assert [x["id"] for x in server.ok("GET", "/handoffs?pending_only=true")["handoffs"]] == [h["id"]]

    # Step 4: Agent B accepts the handoff: a claim.
    reply = server.post(f"/handoffs/{h['id']}/accept", {"agent_id": "agent-oauth-expert"})
    assert reply.status == 200, reply
    claim = reply.json
    assert claim["handoff_id"] == h["id"]
    assert claim["claim_secret"].startswith("hcs_")
    assert claim["handoff"]["claimed_by"] == "agent-oauth-expert"

    accepted = server.ok("GET", "/handoffs?status=accepted")
    assert [x["id"] for x in accepted["handoffs"]] == [h["id"]]
    assert accepted["handoffs"][0]["status"] == "claimed"
    assert server.ok("GET", "/handoffs?pending_only=true")["handoffs"] == []

    # Accepted twice: the claim's own conflict.
    again = server.post(f"/handoffs/{h['id']}/accept", {"agent_id": "someone-else"})
    assert again.status == 409, again
    assert again.error()["code"] == "ALREADY_CLAIMED"


def test_a_name_and_its_seed_name_together_are_refused_naming_both(server: Server) -> None:
    reply = server.post(
        "/handoffs",
        {"task_id": "t-both", "goal": "g", "from_agent": "a", "from_agent_id": "b", "handoff_type": "sideways"},
    )
    assert reply.status == 400, reply
    problems = reply.error()["problems"]
    assert [p["field"] for p in problems] == ["from_agent_id", "handoff_type"], problems
    assert "from_agent" in problems[0]["rule"]
    # No task, no earlier handoff: the goal cannot be taken from anywhere.
    reply = server.post("/handoffs", {"task_id": "t-none", "handoff_type": "full"})
    assert reply.status == 400, reply
    assert [p["field"] for p in reply.error()["problems"]] == ["goal"]
    reply = server.post("/handoffs/anything/accept", {"agent": "a", "agent_id": "b"})
    assert reply.status == 400, reply
    assert [p["field"] for p in reply.error()["problems"]] == ["agent_id"]
    reply = server.get("/handoffs?status=pending&pending_only=true")
    assert reply.status == 400, reply
    assert [p["field"] for p in reply.error()["problems"]] == ["pending_only"]


def test_the_document_allows_the_seeds_bodies(server: Server) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    doc = server.ok("GET", "/openapi.json")

    def body_schema(method: str, path: str) -> Any:
        schema = doc["paths"]["/api/v1" + path][method]["requestBody"]["content"]["application/json"]["schema"]
        # The body schema with the document's components, for its $refs.
        return {**schema, "components": doc["components"]}

    def valid(method: str, path: str, body: Any) -> bool:
        try:
            jsonschema.validate(body, body_schema(method, path), cls=jsonschema.Draft202012Validator)
        except jsonschema.ValidationError:
            return False
        return True

    create = body_schema("post", "/handoffs")
    for alias, own in [("from_agent_id", "from_agent"), ("handoff_type", "kind"), ("priority_objectives", "priority_items")]:
        assert create["properties"][alias]["deprecated"] is True, alias
        assert own in create["properties"][alias]["description"]
    assert "goal" not in create.get("required", [])
    assert valid(
        "post",
        "/handoffs",
        {"task_id": "t", "from_agent_id": "a", "handoff_type": "escalation", "instructions": "i", "blockers": ["b"], "priority_objectives": [1, 2]},
    )
    assert valid("post", "/handoffs/{id}/accept", {"agent_id": "agent-oauth-expert"})
    assert valid("post", "/handoffs/{id}/accept", {"agent": "agent-oauth-expert"})
    assert not valid("post", "/handoffs/{id}/accept", {})
    list_parameters = {p["name"]: p for p in doc["paths"]["/api/v1/handoffs"]["get"]["parameters"]}
    assert list_parameters["pending_only"]["schema"]["type"] == "boolean"


def test_a_step_fails_and_its_escalation_is_resolved_over_http(server: Server) -> None:
    steps = [{"id": "fix", "name": "fix it", "agent": "worker", "max_attempts": 1}]
    task = make_task(server, "one step", "a step that fails", steps=steps)
    server.ok("POST", f"/tasks/{task['id']}/start", {})
    claim = server.ok("POST", "/handoffs/claim-next", {"agent": "worker", "task_id": task["id"]})
    failed = server.ok(
        "POST",
        f"/handoffs/{claim['handoff_id']}/fail-step",
        {"token": claim["token"], "claim_secret": claim["claim_secret"], "error": "tests red"},
    )
    assert failed["handoff"]["status"] in ("failed", "completed"), failed
    escalation = server.ok("POST", "/handoffs/claim-next", {"agent": "human", "task_id": task["id"]})
    assert escalation["handoff"]["kind"] == "escalation", escalation
    resolved = server.ok(
        "POST",
        f"/handoffs/{escalation['handoff_id']}/resolve-escalation",
        {"token": escalation["token"], "secret": escalation["claim_secret"], "resolution": "skip it", "retry": False},
    )
    assert resolved["task"]["id"] == task["id"], resolved
    pruned = server.ok("POST", "/tasks/prune", {"keep_last": 10})
    assert isinstance(pruned, dict), pruned
