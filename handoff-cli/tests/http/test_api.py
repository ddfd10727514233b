"""`handoff serve`'s JSON API over real HTTP (docs/design.md §12, issue 20): the lifecycle, the same store
as the library's, errors as every face shows them, the seed's bundle API, redaction, the bearer
token, the limits on what a request may carry, and the OpenAPI document."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from conftest import BIN, Server, Servers, server_env

# `MAX_BODY_BYTES` in api.rs: `handoff_core::bundle::MAX_BUNDLE_BYTES + 64 * 1024`, with
# `MAX_BUNDLE_BYTES = 64 << 20` in handoff-core/src/bundle.rs.
MAX_BODY_BYTES = (64 << 20) + 64 * 1024

# Secrets of the shapes the redactor knows (made up, never real).
OPENAI_KEY = "sk-proj-" + "Zq7Hn2Lw9Tx4Vb6Kp1Rm8Yc3Fd5Gs0Aj" + "Wx8Ue2Pi"
AWS_KEY_ID = "AKIA" + "Z3MUSTREDACTQQ23"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "Hn2Lw9Tx4V"
SECRETS = (OPENAI_KEY, AWS_KEY_ID, AWS_SECRET)
assert len(AWS_SECRET) == 40


def uid() -> str:
    return uuid.uuid4().hex[:12]


def create(server: Server, task_id: str, goal: str = "write the report", **fields: Any) -> dict[str, Any]:
    body = {"task_id": task_id, "goal": goal, "from_agent": "planner", "to_agent": "writer", **fields}
    reply = server.post("/handoffs", body)
    assert reply.status == 201, reply
    assert set(reply.json) == {"handoff"}, reply
    return reply.json["handoff"]


def claim_body(claim: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"token": claim["token"], "claim_secret": claim["claim_secret"], **extra}


def counts(server: Server) -> tuple[int, int, int]:
    """What the store holds, as the API lists it: handoffs, events, bundles."""
    handoffs = server.ok("GET", "/handoffs?limit=1000")["count"]
    events = server.ok("GET", "/events?limit=1000")["count"]
    bundles = server.ok("GET", "/bundles")["count"]
    return handoffs, events, bundles


# --- the lifecycle ----------------------------------------------------------------------------


def test_lifecycle_create_claim_next_heartbeat_complete_then_chain_and_events(server: Server) -> None:
    task = "task-" + uid()
    first = create(server, task, from_agent="planner", to_agent="writer")
    assert first["status"] == "pending"
    assert first["task_id"] == task

    claim = server.ok("POST", "/handoffs/claim-next", {"agent": "writer", "task_id": task, "wait_seconds": 1})
    assert claim["handoff_id"] == first["id"]
    assert claim["token"] == 1
    assert claim["claim_secret"].startswith("hcs_")
    assert claim["handoff"]["status"] == "claimed"
    assert claim["handoff"]["claimed_by"] == "writer"

    beat = server.ok("POST", f"/handoffs/{first['id']}/heartbeat", claim_body(claim))
    assert beat["handoff"]["status"] == "claimed"
    assert beat["handoff"]["heartbeat_at"] >= claim["handoff"]["heartbeat_at"]

    # `secret` is accepted as well as `claim_secret`.
    done = server.ok(
        "POST",
        f"/handoffs/{first['id']}/complete",
        {"token": claim["token"], "secret": claim["claim_secret"], "outcome": "report written"},
    )
    assert done["handoff"]["status"] == "completed"
    assert done["handoff"]["outcome"] == "report written"

    # Nothing left to claim: an empty answer, not an error.
    assert server.ok("POST", "/handoffs/claim-next", {"agent": "writer"}) == {"claimed": False}

    # A second hop: the writer hands to a reviewer, who claims it by id.
    second = create(server, task, "review the report", from_agent="writer", to_agent="reviewer", parent_id=first["id"])
    claim2 = server.ok("POST", f"/handoffs/{second['id']}/claim", {"agent": "reviewer"})
    assert claim2["handoff_id"] == second["id"]
    server.ok("POST", f"/handoffs/{second['id']}/complete", claim_body(claim2, outcome="approved"))

    got = server.ok("GET", f"/handoffs/{first['id']}")["handoff"]
    assert got["status"] == "completed" and got["outcome"] == "report written"

    chain = server.ok("GET", f"/tasks/{task}/chain")
    assert chain["task_id"] == task
    assert chain["path"] == ["planner", "writer", "reviewer"]
    assert [h["handoff_id"] for h in chain["hops"]] == [first["id"], second["id"]]
    assert [h["status"] for h in chain["hops"]] == ["completed", "completed"]

    events = server.ok("GET", f"/handoffs/{first['id']}/events")
    assert [e["kind"] for e in events["events"]] == ["created", "claimed", "heartbeat", "completed"]
    assert events["count"] == 4
    assert {e["handoff_id"] for e in events["events"]} == {first["id"]}
    seqs = [e["seq"] for e in events["events"]]
    assert seqs == sorted(seqs)

    by_task = server.ok("GET", f"/events?task_id={task}")
    assert by_task["count"] == 7  # 4 for the first, created/claimed/completed for the second
    assert {e["handoff_id"] for e in by_task["events"]} == {first["id"], second["id"]}

    listed = server.ok("GET", f"/handoffs?task_id={task}&status=completed")
    assert [h["id"] for h in listed["handoffs"]] == [first["id"], second["id"]]

    stats = server.ok("GET", "/stats")
    pairs = {(p["from_agent"], p["to_agent"]): p for p in stats["paths"]}
    assert pairs[("planner", "writer")]["completed"] == 1
    assert pairs[("writer", "reviewer")]["completed"] == 1


def test_claim_next_waits_for_work(server: Server) -> None:
    # Nothing there: an empty answer after about the wait.
    started = time.monotonic()
    assert server.ok("POST", "/handoffs/claim-next", {"agent": "writer", "wait_seconds": 1}) == {"claimed": False}
    assert 0.8 <= time.monotonic() - started < 10

    # Work arriving while a worker waits is handed to it at once.
    answer: list[Any] = []
    waiter = threading.Thread(
        target=lambda: answer.append(server.post("/handoffs/claim-next", {"agent": "writer", "wait_seconds": 30})),
        daemon=True,
    )
    started = time.monotonic()
    waiter.start()
    time.sleep(0.5)
    h = create(server, "wait-" + uid())
    waiter.join(30)
    assert answer and answer[0].status == 200, answer
    assert answer[0].json["handoff_id"] == h["id"]
    assert time.monotonic() - started < 10


POSTGRES = os.environ.get("HANDOFF_TEST_POSTGRES")


@pytest.mark.skipif(not POSTGRES, reason="HANDOFF_TEST_POSTGRES is not set (e.g. postgres://postgres@127.0.0.1:5432/test)")
def test_a_postgres_store_is_served_and_the_server_stops_cleanly(servers: Servers) -> None:
    """The server on a PostgreSQL store (a schema of this test's own): the lifecycle, a waiting
    claim, and a clean stop (it drops its store inside its async runtime, which panicked)."""
    assert POSTGRES is not None
    schema = "hc_serve_" + uid()
    joiner = "&" if "?" in POSTGRES else "?"
    try:
        server = servers.start(f"{POSTGRES}{joiner}schema={schema}")
        test_lifecycle_create_claim_next_heartbeat_complete_then_chain_and_events(server)
        test_claim_next_waits_for_work(server)
        servers.started.remove(server)
        server.stop()
        assert server.process.returncode == 0 and "panicked" not in server.stderr(), server.stderr()
    finally:
        drop = f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'
        subprocess.run(["psql", POSTGRES, "-qc", drop], check=False, capture_output=True, timeout=60)


def test_paging_gives_next_after(server: Server) -> None:
    task = "page-" + uid()
    ids = [create(server, task, f"step {i}")["id"] for i in range(5)]
    page = server.ok("GET", f"/handoffs?task_id={task}&limit=2")
    assert [h["id"] for h in page["handoffs"]] == ids[:2]
    assert page["count"] == 2 and "next_after" in page
    seen = [h["id"] for h in page["handoffs"]]
    while "next_after" in page:
        page = server.ok("GET", f"/handoffs?task_id={task}&limit=2&after={page['next_after']}")
        seen += [h["id"] for h in page["handoffs"]]
    assert seen == ids


def test_the_same_store_as_the_library(server: Server) -> None:
    hc = pytest.importorskip("handoff_core")
    task = "shared-" + uid()
    h = create(server, task, "written over HTTP", metadata={"via": "http"})
    claim = server.ok("POST", f"/handoffs/{h['id']}/claim", {"agent": "writer"})
    server.ok("POST", f"/handoffs/{h['id']}/complete", claim_body(claim, outcome="done over HTTP"))

    with hc.open(server.db) as store:
        record = store.get(h["id"])
        assert record.status == "completed"
        assert record.outcome == "done over HTTP"
        assert record.goal == "written over HTTP"
        assert record.metadata == {"via": "http"}
        assert [e.kind for e in store.events(h["id"])] == ["created", "claimed", "completed"]
        assert store.chain(task).path == ["planner", "writer"]

        # The other way: written by the library, claimed over HTTP, completed by the library
        # with the claim HTTP handed out.
        mine = store.create(task, "written by the library", from_agent="writer", to_agent="reviewer", parent_id=h["id"])
        store.add_facts(f"task/{task}", ["the library wrote this fact"])
    claim = server.ok("POST", "/handoffs/claim-next", {"agent": "reviewer"})
    assert claim["handoff_id"] == mine.id
    assert claim["handoff"]["goal"] == "written by the library"
    with hc.open(server.db) as store:
        store.complete(hc.ClaimRef(mine.id, claim["token"], claim["claim_secret"]), "done by the library")
    got = server.ok("GET", f"/handoffs/{mine.id}")["handoff"]
    assert got["status"] == "completed" and got["outcome"] == "done by the library"
    facts = server.ok("GET", f"/facts?branch=task/{task}")
    assert [f["text"] for f in facts["facts"]] == ["the library wrote this fact"]
    assert server.ok("GET", f"/tasks/{task}/chain")["path"] == ["planner", "writer", "reviewer"]


# --- errors -----------------------------------------------------------------------------------


def test_validation_lists_every_problem_and_changes_nothing(server: Server) -> None:
    create(server, "before-" + uid())
    before = counts(server)

    reply = server.post(
        "/handoffs",
        {"goal": 5, "task_id": "", "kind": "weird", "context_pct": 900, "completed": "not a list", "nonsense": 1},
    )
    assert reply.status == 400, reply
    error = reply.error()
    assert error["code"] == "VALIDATION"
    fields = {field for field, _ in reply.problems()}
    assert fields == {"goal", "task_id", "kind", "context_pct", "completed", "nonsense"}, reply
    for problem in error["problems"]:
        assert problem["rule"].strip(), problem
    # The message names each of them too.
    for field in fields:
        assert field in error["message"]

    # Every required argument, at once, for an empty body.
    empty = server.post("/handoffs", raw=b"")
    assert empty.status == 400
    # (`goal` may be left out: the task's is taken, so only `task_id` is missing here.)
    assert {"task_id"} <= {f for f, _ in empty.problems()}

    # Query arguments are checked the same way.
    bad_query = server.get("/handoffs?limit=ten&status=sideways")
    assert bad_query.status == 400
    assert {f for f, _ in bad_query.problems()} == {"limit", "status"}

    # A batch of facts with one bad item: every problem, and none of the good ones written.
    branch = "task/facts-" + uid()
    facts = server.post("/facts", {"branch": branch, "facts": ["fine", {"text": 5}, {"text": "ok", "confidence": 7}]})
    assert facts.status == 400, facts
    assert len(facts.error()["problems"]) >= 2
    assert all(f.startswith("facts") for f, _ in facts.problems()), facts
    assert server.ok("GET", f"/facts?branch={branch}")["count"] == 0

    # A claim's arguments: the secret is required.
    h = create(server, "claims-" + uid())
    claim = server.ok("POST", f"/handoffs/{h['id']}/claim", {"agent": "writer"})
    missing = server.post(f"/handoffs/{h['id']}/complete", {"token": claim["token"]})
    assert missing.status == 400
    assert any("secret" in f for f, _ in missing.problems()), missing
    assert server.ok("GET", f"/handoffs/{h['id']}")["handoff"]["status"] == "claimed"

    after = counts(server)
    # The claim above is the only change: one record more and its created + claimed events.
    assert after == (before[0] + 1, before[1] + 2, before[2])


def test_not_found_for_an_unknown_id_and_route(server: Server) -> None:
    unknown = str(uuid.uuid4())
    for method, path, body in [
        ("GET", f"/handoffs/{unknown}", None),
        ("POST", f"/handoffs/{unknown}/claim", {"agent": "writer"}),
        ("POST", f"/handoffs/{unknown}/complete", {"token": 1, "secret": "hcs_" + "0" * 64}),
        ("GET", f"/bundles/{unknown}", None),
        ("DELETE", f"/bundles/{unknown}", None),
        ("GET", f"/conversations/{unknown}", None),
        ("GET", f"/tasks/{unknown}", None),
    ]:
        reply = server.request(method, path, body)
        assert reply.status == 404, (method, path, reply)
        assert reply.error()["code"] == "NOT_FOUND", (method, path, reply)

    for path in ["/nope", "/handoffs/a/b/c/d", "/bundles/shared"]:
        reply = server.get(path)
        assert reply.status == 404, (path, reply)
        assert reply.error()["code"] == "NOT_FOUND"

    # A known route with another method: 405, in the same error form.
    reply = server.request("DELETE", "/handoffs")
    assert reply.status == 405, reply
    assert "code" in reply.error()


def test_conflicts_claiming_twice_and_a_stale_token(server: Server) -> None:
    h = create(server, "conflict-" + uid())
    first = server.ok("POST", f"/handoffs/{h['id']}/claim", {"agent": "writer"})
    again = server.post(f"/handoffs/{h['id']}/claim", {"agent": "writer"})
    assert again.status == 409, again
    assert again.error()["code"] == "ALREADY_CLAIMED"

    # Released and claimed again: the first claim's token is stale.
    server.ok("POST", f"/handoffs/{h['id']}/release", claim_body(first, reason="handing it back"))
    second = server.ok("POST", f"/handoffs/{h['id']}/claim", {"agent": "writer"})
    assert second["token"] > first["token"]
    stale = server.post(f"/handoffs/{h['id']}/complete", claim_body(first, outcome="too late"))
    assert stale.status == 409, stale
    assert stale.error()["code"] == "LEASE_LOST"
    # The right token with the wrong secret is refused the same way, and the secret given is not echoed.
    forged = "hcs_" + "1" * 64
    wrong = server.post(f"/handoffs/{h['id']}/complete", {"token": second["token"], "secret": forged})
    assert wrong.status == 409 and wrong.error()["code"] == "LEASE_LOST", wrong
    assert forged not in wrong.text and second["claim_secret"] not in wrong.text

    server.ok("POST", f"/handoffs/{h['id']}/complete", claim_body(second, outcome="done"))
    finished = server.post(f"/handoffs/{h['id']}/complete", claim_body(second, outcome="twice"))
    assert finished.status == 409 and finished.error()["code"] == "LEASE_LOST", finished
    assert server.ok("GET", f"/handoffs/{h['id']}")["handoff"]["outcome"] == "done"


# --- the seed's bundle API --------------------------------------------------------------------


def test_bundle_api_end_to_end(server: Server) -> None:
    task = "bundle-" + uid()
    create(server, task, "gather what we know")
    added = server.ok(
        "POST",
        "/facts",
        {"branch": f"task/{task}", "facts": ["the cache is cold on Mondays", {"text": "retries cap at 3", "confidence": 0.9}]},
    )
    assert added["count"] == 2

    created = server.post("/bundles", {"name": "what we know", "task_id": task, "verified_only": False, "tags": ["ops"]})
    assert created.status == 201, created
    bundle = created.json["bundle"]
    assert bundle["visibility"] == "private"
    assert bundle["fact_count"] == 2
    assert bundle["share_token"] is None, "a private bundle has no token"
    assert bundle["content_hash"].startswith("sha256:")
    bid = bundle["id"]

    listed = server.ok("GET", "/bundles")
    assert [b["id"] for b in listed["bundles"]] == [bid]
    assert server.ok("GET", "/bundles?visibility=team")["count"] == 0
    got = server.ok("GET", f"/bundles/{bid}")["bundle"]
    assert got["name"] == "what we know"
    assert sorted(f["text"] for f in got["data"]["facts"]) == ["retries cap at 3", "the cache is cold on Mondays"]

    assert all(b["share_token"] is None for b in listed["bundles"])

    # Sharing issues a token; making it private again kills it (the same answer as a wrong
    # token), and sharing once more issues another.
    shared = server.request("PATCH", f"/bundles/{bid}/visibility", {"visibility": "team"})
    assert shared.status == 200, shared
    assert shared.json["bundle"]["visibility"] == "team"
    revoked = shared.json["bundle"]["share_token"]
    assert revoked.startswith("kb_")
    assert server.ok("GET", f"/bundles/shared/{revoked}")["bundle"]["id"] == bid
    server.ok("PATCH", f"/bundles/{bid}/visibility", {"visibility": "private"})
    private = server.get(f"/bundles/shared/{revoked}")
    wrong = server.get("/bundles/shared/kb_" + "0" * 64)
    assert private.status == wrong.status == 404
    assert private.json == wrong.json
    assert revoked not in private.text
    token = server.ok("PATCH", f"/bundles/{bid}/visibility", {"visibility": "team"})["bundle"]["share_token"]
    assert token != revoked
    assert server.get(f"/bundles/shared/{revoked}").status == 404
    by_token = server.ok("GET", f"/bundles/shared/{token}")["bundle"]
    assert by_token["id"] == bid
    assert server.ok("GET", "/bundles?visibility=team")["count"] == 1
    assert server.get("/bundles/shared/kb_" + "0" * 64).status == 404

    bad = server.request("PATCH", f"/bundles/{bid}/visibility", {"visibility": "everyone"})
    assert bad.status == 400 and "visibility" in {f for f, _ in bad.problems()}, bad

    # A dry run of the import counts and writes nothing.
    target = "task/imported-" + uid()
    before = server.ok("GET", f"/facts?branch={target}")["count"]
    assert before == 0
    verified = server.post(f"/bundles/{bid}/import", {"target_branch": target, "dry_run": True})
    assert verified.status in (200, 201), verified
    assert verified.json["facts_added"] == 2 and verified.json["facts_skipped"] == 0
    # Verifying a bundle needs the server's judge: without one it is refused, nothing recorded.
    unjudged = server.post(f"/bundles/{bid}/verify", {})
    assert unjudged.status == 400 and {f for f, _ in unjudged.problems()} == {"verifier"}, unjudged
    assert server.ok("GET", f"/facts?branch={target}")["count"] == 0
    assert target not in {b["name"] for b in server.ok("GET", "/branches").get("branches", [])}

    imported = server.post(f"/bundles/{bid}/import", {"target_branch": target})
    assert imported.status in (200, 201), imported
    assert imported.json["facts_added"] == 2
    assert server.ok("GET", f"/facts?branch={target}")["count"] == 2
    # Twice adds nothing; a dry run now says so too.
    again = server.ok("POST", f"/bundles/{bid}/import", {"target_branch": target})
    assert again["facts_added"] == 0 and again["facts_skipped"] == 2
    dry = {"target_branch": target, "dry_run": True}
    assert server.ok("POST", f"/bundles/{bid}/import", dry)["facts_added"] == 0

    # The portable JSON imports through /bundles/import as well.
    portable = json.dumps(got["data"])
    other = "task/portable-" + uid()
    assert server.ok("POST", "/bundles/import", {"bundle": portable, "target_branch": other})["facts_added"] == 2

    # Unsigned, the bundle's verdicts came in as its claim; signed by a trusted key, as verified.
    claimed = server.ok("GET", f"/facts?branch={target}")["facts"]
    assert {f["verified_by"][:14] for f in claimed} == {"bundle:sha256:"}, claimed
    key_file = Path(tempfile.mkdtemp()) / "bundle.key"
    made = subprocess.run([str(BIN), "keygen", str(key_file), "--json"], check=True, capture_output=True, text=True)
    keys = json.loads(made.stdout)
    secret = key_file.read_text().strip()
    signed = server.ok("POST", f"/bundles/{bid}/sign", {"secret_key": secret})["bundle"]
    assert signed["data"]["signature"]["public_key"] == keys["public_key"]
    assert secret not in json.dumps(signed)
    bad = server.post(f"/bundles/{bid}/sign", {"secret_key": keys["public_key"]})
    assert bad.status == 400 and "secret_key" in {f for f, _ in bad.problems()}, bad
    trusted = server.ok("POST", "/bundle-keys", {"trust": [keys["public_key"]]})
    assert [k["public_key"] for k in trusted["trusted_keys"]] == [keys["public_key"]], trusted
    vouched = "task/vouched-" + uid()
    report = server.ok("POST", f"/bundles/{bid}/import", {"target_branch": vouched})
    assert (report["signed_by"], report["trusted"]) == (keys["public_key"], True), report
    assert server.ok("POST", "/check", {})["damage"] == []

    deleted = server.request("DELETE", f"/bundles/{bid}")
    assert deleted.status == 200, deleted
    assert server.get(f"/bundles/{bid}").status == 404
    assert server.get(f"/bundles/shared/{token}").status == 404
    assert server.ok("GET", "/bundles")["count"] == 0
    assert server.post(f"/bundles/{bid}/import", {"target_branch": target}).status == 404
    # The imported facts stay.
    assert server.ok("GET", f"/facts?branch={target}")["count"] == 2


# --- what leaves the server -------------------------------------------------------------------


def leaks(reply: Any, where: str) -> list[str]:
    """Where `reply` shows one of the secrets, each with what surrounds it."""
    found = []
    for secret in SECRETS:
        at = reply.text.find(secret)
        if at >= 0:
            found.append(f"{where}: ...{reply.text[max(0, at - 160) : at + len(secret) + 20]}...")
    return found


def assert_clean(reply: Any, where: str) -> None:
    found = leaks(reply, where)
    assert not found, "\n".join(found)


def test_secrets_redacted_in_every_response(server: Server) -> None:
    task = "secret-" + uid()
    goal = f"call the API with {OPENAI_KEY} and AWS {AWS_KEY_ID}"
    metadata = {"openai": OPENAI_KEY, "nested": {"aws": f"aws_secret_access_key={AWS_SECRET}", "id": AWS_KEY_ID}}
    reply = server.post(
        "/handoffs",
        {
            "task_id": task,
            "goal": goal,
            "from_agent": "planner",
            "to_agent": "writer",
            "metadata": metadata,
            "progress": f"tried {OPENAI_KEY}",
            "decisions": [f"use {AWS_KEY_ID}"],
        },
    )
    assert reply.status == 201
    assert_clean(reply, "create")
    h = reply.json["handoff"]
    assert "[REDACTED:openai-api-key]" in h["goal"]
    assert "[REDACTED:aws-access-key-id]" in h["goal"]
    assert "[REDACTED:" in json.dumps(h["metadata"])

    claimed = server.post("/handoffs/claim-next", {"agent": "writer"})
    assert claimed.status == 200 and claimed.json["handoff_id"] == h["id"]
    assert_clean(claimed, "claim-next")
    claim = claimed.json
    beat = server.post(f"/handoffs/{h['id']}/heartbeat", claim_body(claim))
    assert_clean(beat, "heartbeat")
    done = server.post(f"/handoffs/{h['id']}/complete", claim_body(claim, outcome=f"used {OPENAI_KEY}"))
    assert done.status == 200
    assert_clean(done, "complete")

    # A second one, claimed by id.
    h2 = create(server, task, f"again {AWS_KEY_ID}", from_agent="writer", to_agent="reviewer", parent_id=h["id"])
    claim_by_id = server.post(f"/handoffs/{h2['id']}/claim", {"agent": "reviewer"})
    assert claim_by_id.status == 200
    assert_clean(claim_by_id, "claim")
    # Failing with a secret in the error: once with attempts left (an `attempt_failed` event),
    # once for good (`failed`); releasing, rejecting and cancelling with one in the reason.
    failed = server.post(f"/handoffs/{h2['id']}/fail", claim_body(claim_by_id.json, error=f"denied for {OPENAI_KEY}"))
    assert failed.status == 200
    assert_clean(failed, "fail")
    last = create(server, task, "one try only", from_agent="writer", to_agent="reviewer", max_attempts=1)
    claim_last = server.ok("POST", f"/handoffs/{last['id']}/claim", {"agent": "reviewer"})
    final = server.post(f"/handoffs/{last['id']}/fail", claim_body(claim_last, error=f"gave up on {AWS_KEY_ID}"))
    assert final.status == 200 and final.json["handoff"]["status"] == "failed", final
    assert_clean(final, "fail (last attempt)")
    again = server.ok("POST", f"/handoffs/{h2['id']}/claim", {"agent": "reviewer"})
    assert_clean(server.post(f"/handoffs/{h2['id']}/release", claim_body(again, reason=f"back: {OPENAI_KEY}")), "release")
    assert_clean(server.post(f"/handoffs/{h2['id']}/reject", {"agent": "reviewer", "reason": f"no: {AWS_KEY_ID}"}), "reject")
    other = create(server, task, "to be cancelled", from_agent="writer", to_agent="reviewer")
    assert_clean(server.post(f"/handoffs/{other['id']}/cancel", {"by": "writer", "reason": f"moot: {OPENAI_KEY}"}), "cancel")

    server.ok("POST", "/facts", {"branch": f"task/{task}", "facts": [f"the key is {OPENAI_KEY}"]})
    bundle = server.post("/bundles", {"name": "secrets", "task_id": task, "verified_only": False})
    assert_clean(bundle, "create bundle")

    shown: list[str] = []
    for path in [
        "/handoffs",
        f"/handoffs?task_id={task}",
        f"/handoffs/{h['id']}",
        f"/handoffs/{h2['id']}",
        f"/handoffs/{h['id']}/events",
        f"/handoffs/{h2['id']}/events",
        f"/handoffs/{last['id']}/events",
        f"/handoffs/{other['id']}/events",
        "/events",
        f"/events?task_id={task}",
        f"/tasks/{task}/chain",
        f"/tasks/{task}/replay",
        f"/handoffs/{h2['id']}/context",
        f"/facts?branch=task/{task}",
        "/bundles",
        f"/bundles/{bundle.json['bundle']['id']}",
        "/stats",
    ]:
        reply = server.get(path)
        assert reply.status == 200, (path, reply)
        shown += leaks(reply, "GET /api/v1" + path)
    # The dashboard's pages too, whatever they show.
    for page in ["/", f"/handoffs/{h['id']}", f"/handoffs/{h2['id']}", f"/tasks/{task}", "/bundles"]:
        shown += leaks(server.get(server.url + page), "GET " + page)
    assert not shown, "secrets shown:\n" + "\n".join(shown)

    # The store itself holds them as written (what the library reads).
    hc = pytest.importorskip("handoff_core")
    with hc.open(server.db) as store:
        raw = store.get(h["id"])
        assert OPENAI_KEY in raw.goal and AWS_KEY_ID in raw.goal


def test_no_claim_secret_in_any_listing(server: Server) -> None:
    task = "hcs-" + uid()
    a = create(server, task, "one")
    b = create(server, task, "two", from_agent="writer", to_agent="reviewer", parent_id=a["id"])
    create(server, task, "three (never claimed)", from_agent="writer", to_agent="nobody")
    claim_a = server.ok("POST", f"/handoffs/{a['id']}/claim", {"agent": "writer"})
    server.ok("POST", f"/handoffs/{a['id']}/heartbeat", claim_body(claim_a))
    server.ok("POST", f"/handoffs/{a['id']}/complete", claim_body(claim_a, outcome="done"))
    claim_b = server.ok("POST", "/handoffs/claim-next", {"agent": "reviewer"})  # stays claimed
    secrets = {claim_a["claim_secret"], claim_b["claim_secret"]}
    assert all(s.startswith("hcs_") for s in secrets)

    for path in [
        "/handoffs",
        "/handoffs?status=claimed",
        f"/handoffs?task_id={task}",
        f"/handoffs/{a['id']}",
        f"/handoffs/{b['id']}",
        f"/handoffs/{a['id']}/events",
        f"/handoffs/{b['id']}/events",
        "/events",
        f"/events?task_id={task}",
        "/stats",
        "/stalled?older_than_seconds=0",
        f"/tasks/{task}/chain",
        f"/tasks/{task}/replay",
        f"/handoffs/{b['id']}/context",
        "/capabilities",
    ]:
        reply = server.get(path)
        assert reply.status == 200, (path, reply)
        assert "hcs_" not in reply.text, f"{path} shows a claim secret: {reply.text[:3000]}"
    stalled = server.ok("GET", "/stalled?older_than_seconds=0")
    assert task in json.dumps(stalled)
    for page in ["/", f"/handoffs/{b['id']}", f"/tasks/{task}"]:
        assert "hcs_" not in server.get(server.url + page).text, page


# --- the token and the bind address -----------------------------------------------------------


def test_a_token_is_required_when_given_and_bearer_is_accepted(servers: Servers) -> None:
    token = "t0k3n-" + uuid.uuid4().hex[:26]
    assert len(token) == 32
    server = servers.start(token=token)

    for method, path, body in [
        ("GET", "/stats", None),
        ("GET", "/handoffs", None),
        ("POST", "/handoffs", {"task_id": "t", "goal": "g"}),
        ("GET", "/openapi.json", None),
        ("GET", "/nope", None),
    ]:
        reply = server.request(method, path, body, auth=False)
        assert reply.status == 401, (path, reply)
        assert reply.error()["code"] == "UNAUTHORIZED"
        assert reply.headers.get("WWW-Authenticate") == "Bearer", reply.headers
        wrong = server.request(method, path, body, auth=False, headers={"Authorization": "Bearer " + "x" * 32})
        assert wrong.status == 401, (path, wrong)
        assert token not in reply.text + wrong.text
    assert server.get(server.url + "/", auth=False).status == 401
    assert server.ok("GET", "/handoffs")["count"] == 0  # nothing was created without the token

    # With `Authorization: Bearer <token>`, everything works.
    h = create(server, "auth-" + uid())
    claim = server.ok("POST", f"/handoffs/{h['id']}/claim", {"agent": "writer"})
    server.ok("POST", f"/handoffs/{h['id']}/complete", claim_body(claim))
    assert server.ok("GET", "/stats")["count"] == 1
    assert server.get("/openapi.json").status == 200
    # The scheme is case-insensitive; the token never goes in the URL of an API call.
    assert server.get("/stats", auth=False, headers={"Authorization": f"bearer {token}"}).status == 200
    assert server.get(f"/stats?token={token}", auth=False).status == 401


def test_beyond_loopback_without_a_token_fails_at_once(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(BIN), "--db", str(tmp_path / "store.db"), "serve", "--bind", "0.0.0.0:0"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
        env=server_env(),
        cwd=tmp_path,
    )
    assert result.returncode != 0, result
    assert "bind" in result.stderr.decode(), result
    assert b"listening" not in result.stdout, result

    short = subprocess.run(
        [str(BIN), "--db", str(tmp_path / "store.db"), "serve", "--bind", "127.0.0.1:0", "--token", "short"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
        env=server_env(),
        cwd=tmp_path,
    )
    assert short.returncode != 0 and "token" in short.stderr.decode(), short
    assert not (tmp_path / "store.db").exists(), "a refused configuration opens no store"


def test_waiting_workers_never_starve_other_requests(server: Server) -> None:
    """More workers waiting for work than the server has threads for waits: the others are
    answered while they all still wait (a starved server answered only once the waits were
    over), and work created meanwhile reaches a waiting worker."""
    answers: list[int] = []

    def wait() -> None:
        answers.append(server.post("/handoffs/claim-next", {"agent": "nobody", "wait_seconds": 10}, timeout=60).status)

    waiters = [threading.Thread(target=wait) for _ in range(600)]
    for w in waiters:
        w.start()
    time.sleep(1)
    assert server.get("/stats").status == 200
    created = server.post("/handoffs", {"task_id": "t-" + uid(), "goal": "g", "to_agent": "nobody"})
    assert created.status == 201
    assert server.ok("GET", f"/handoffs/{created.json['handoff']['id']}")["handoff"]["status"] in ("pending", "claimed")
    waited = len(answers)
    for w in waiters:
        w.join(60)
    assert waited <= 1, "the other requests were answered while the workers waited"
    assert answers.count(200) == 600
    assert server.ok("GET", f"/handoffs/{created.json['handoff']['id']}")["handoff"]["status"] == "claimed"


# --- limits on what a request carries ---------------------------------------------------------


def raw_post(server: Server, path: str, payload: bytes) -> tuple[int, bytes]:
    """A POST of a large body on a socket of its own: the server may answer (and close) before
    it has read everything, so what it says is read even if sending the rest fails."""
    head = (
        f"POST /api/v1{path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        sock.sendall(head)
        try:
            view = memoryview(payload)
            for start in range(0, len(payload), 1 << 20):
                sock.sendall(view[start : start + (1 << 20)])
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = b""
        try:
            while chunk := sock.recv(1 << 16):
                answer += chunk
        except ConnectionResetError:
            pass
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line.startswith(b"HTTP/1.1 "), answer[:500]
    body = rest.partition(b"\r\n\r\n")[2]
    return int(status_line.split()[1]), body


def test_a_body_over_the_limit_is_refused_naming_body(server: Server) -> None:
    before = counts(server)
    filler = b"a" * (MAX_BODY_BYTES + 4096)
    payload = b'{"task_id": "big", "goal": "' + filler + b'"}'
    status, body = raw_post(server, "/handoffs", payload)
    assert status == 413, body[:500]
    error = json.loads(body)["error"]
    assert error["code"] == "VALIDATION"
    assert [p["field"] for p in error["problems"]] == ["body"], error
    assert str(MAX_BODY_BYTES) in error["message"], error
    assert server.alive()
    assert counts(server) == before

    # Under the limit the body is read; the goal is then too long for a record (its own field).
    under = b'{"task_id": "big", "goal": "' + b"a" * (MAX_BODY_BYTES - 1024) + b'"}'
    status, body = raw_post(server, "/handoffs", under)
    assert status == 400, body[:500]
    fields = [p["field"] for p in json.loads(body)["error"]["problems"]]
    assert "goal" in fields and "body" not in fields, body[:500]
    assert server.alive()
    assert counts(server) == before


def test_deep_nesting_is_refused_and_the_server_stays_up(server: Server) -> None:
    before = counts(server)
    depth = 10_000
    arrays = b'{"task_id": "deep", "goal": "g", "metadata": {"x": ' + b"[" * depth + b"]" * depth + b"}}"
    objects = b'{"task_id": "deep", "goal": "g", "metadata": ' + b'{"a":' * depth + b"1" + b"}" * depth + b"}"
    for payload in (arrays, objects):
        reply = server.post("/handoffs", raw=payload)
        assert reply.status == 400, reply
        assert [f for f, _ in reply.problems()] == ["body"], reply
        assert "nest" in reply.error()["message"], reply
        assert server.alive()
    # Unbalanced: deep and never closed.
    reply = server.post("/handoffs", raw=b"[" * 100_000)
    assert reply.status == 400, reply
    assert server.alive()
    assert server.ok("GET", "/stats")["count"] == 0
    assert counts(server) == before
    create(server, "still-" + uid())  # and it still works


@pytest.mark.parametrize(
    "payload",
    [b"[]", b"[1, 2]", b'"text"', b"5", b"null", b"true", b"{", b'{"task_id": "t",}', b"\xff\xfe{}", b"{} {}"],
    ids=["array", "array2", "string", "number", "null", "bool", "truncated", "trailing-comma", "not-utf8", "two"],
)
def test_a_body_that_is_not_one_json_object_is_refused(server: Server, payload: bytes) -> None:
    reply = server.post("/handoffs", raw=payload)
    assert reply.status == 400, reply
    assert reply.error()["code"] == "VALIDATION"
    assert [f for f, _ in reply.problems()] == ["body"], reply
    assert server.ok("GET", "/handoffs")["count"] == 0


# --- the OpenAPI document ---------------------------------------------------------------------


# Every route served before routes were derived from the command names (issue #48): each
# still is, documented.
ROUTES_BEFORE = {
    ("POST", "/api/v1/bundles"),
    ("GET", "/api/v1/bundles"),
    ("GET", "/api/v1/bundles/{id}"),
    ("GET", "/api/v1/bundles/shared/{token}"),
    ("POST", "/api/v1/bundles/{id}/import"),
    ("POST", "/api/v1/bundles/{id}/verify"),
    ("PATCH", "/api/v1/bundles/{id}/visibility"),
    ("POST", "/api/v1/bundles/{id}/sign"),
    ("POST", "/api/v1/bundle-keys"),
    ("DELETE", "/api/v1/bundles/{id}"),
    ("POST", "/api/v1/bundles/import"),
    ("GET", "/api/v1/handoffs"),
    ("POST", "/api/v1/handoffs"),
    ("POST", "/api/v1/handoffs/claim-next"),
    ("GET", "/api/v1/handoffs/{id}"),
    ("POST", "/api/v1/handoffs/{id}/claim"),
    ("POST", "/api/v1/handoffs/{id}/accept"),
    ("POST", "/api/v1/handoffs/{id}/reject"),
    ("POST", "/api/v1/handoffs/{id}/cancel"),
    ("GET", "/api/v1/handoffs/{handoff_id}/events"),
    ("GET", "/api/v1/handoffs/{handoff_id}/context"),
    ("GET", "/api/v1/events"),
    ("GET", "/api/v1/stats"),
    ("GET", "/api/v1/queue"),
    ("GET", "/api/v1/stalled"),
    ("POST", "/api/v1/reap"),
    ("GET", "/api/v1/capabilities"),
    ("POST", "/api/v1/check"),
    ("GET", "/api/v1/tasks"),
    ("POST", "/api/v1/tasks"),
    ("GET", "/api/v1/tasks/history"),
    ("GET", "/api/v1/tasks/statistics"),
    ("GET", "/api/v1/tasks/compare"),
    ("POST", "/api/v1/tasks/prune"),
    ("POST", "/api/v1/tasks/rerun"),
    ("GET", "/api/v1/tasks/{id}"),
    ("PATCH", "/api/v1/tasks/{id}"),
    ("POST", "/api/v1/tasks/{id}/start"),
    ("POST", "/api/v1/tasks/{id}/pause"),
    ("POST", "/api/v1/tasks/{id}/resume"),
    ("POST", "/api/v1/tasks/{id}/cancel"),
    ("POST", "/api/v1/tasks/{id}/join"),
    ("POST", "/api/v1/tasks/{id}/complete"),
    ("POST", "/api/v1/tasks/{id}/fail"),
    ("GET", "/api/v1/tasks/{id}/events"),
    ("GET", "/api/v1/tasks/{task_id}/chain"),
    ("GET", "/api/v1/tasks/{task_id}/replay"),
    ("POST", "/api/v1/protocol/initialize"),
    ("GET", "/api/v1/protocol/stats"),
    ("GET", "/api/v1/protocol/{task_id}"),
    ("GET", "/api/v1/protocol/{task_id}/history"),
    ("GET", "/api/v1/conversations"),
    ("POST", "/api/v1/conversations"),
    ("GET", "/api/v1/conversations/{id}"),
    ("GET", "/api/v1/conversations/{id}/messages"),
    ("POST", "/api/v1/conversations/{conversation_id}/messages"),
    ("POST", "/api/v1/conversations/{conversation_id}/cherry-pick"),
    ("POST", "/api/v1/conversations/{conversation_id}/cherry-pick-decisions"),
    ("POST", "/api/v1/conversations/{conversation_id}/cherry-pick-tools"),
    ("POST", "/api/v1/conversations/{conversation_id}/cherry-pick-to-facts"),
    ("GET", "/api/v1/branches"),
    ("POST", "/api/v1/branches/{branch}/verify"),
    ("GET", "/api/v1/facts"),
    ("POST", "/api/v1/facts"),
    ("POST", "/api/v1/merge"),
    ("GET", "/api/v1/curation/events"),
    ("GET", "/api/v1/memory"),
    ("GET", "/api/v1/memory/{scope}"),
    ("PUT", "/api/v1/memory/{scope}"),
    ("DELETE", "/api/v1/memory/{scope}"),
    ("GET", "/api/v1/sessions/{session_id}"),
    ("POST", "/api/v1/handoffs/{handoff_id}/heartbeat"),
    ("POST", "/api/v1/handoffs/{handoff_id}/complete"),
    ("POST", "/api/v1/handoffs/{handoff_id}/release"),
    ("POST", "/api/v1/handoffs/{handoff_id}/fail"),
    ("POST", "/api/v1/handoffs/{handoff_id}/fail-step"),
    ("POST", "/api/v1/handoffs/{handoff_id}/escalate-step"),
    ("POST", "/api/v1/handoffs/{handoff_id}/resolve-escalation"),
    ("POST", "/api/v1/protocol/{handoff_id}/report"),
    ("POST", "/api/v1/protocol/{handoff_id}/decide"),
    ("POST", "/api/v1/protocol/{handoff_id}/report-error"),
    ("POST", "/api/v1/protocol/{handoff_id}/recover"),
    ("POST", "/api/v1/protocol/{handoff_id}/escalate"),
    ("POST", "/api/v1/protocol/{handoff_id}/resolve"),
}


SEED_BUNDLE_API = {
    ("POST", "/api/v1/bundles"),
    ("GET", "/api/v1/bundles"),
    ("GET", "/api/v1/bundles/{id}"),
    ("GET", "/api/v1/bundles/shared/{token}"),
    ("POST", "/api/v1/bundles/{id}/import"),
    ("POST", "/api/v1/bundles/{id}/verify"),
    ("PATCH", "/api/v1/bundles/{id}/visibility"),
    ("DELETE", "/api/v1/bundles/{id}"),
}


def test_the_openapi_document_has_every_route(server: Server) -> None:
    reply = server.get("/openapi.json")
    assert reply.status == 200
    assert reply.headers.get("Content-Type", "").startswith("application/json")
    doc = json.loads(reply.raw)
    assert doc["openapi"] == "3.1.0"
    assert doc["info"]["title"] and doc["info"]["version"]

    documented = set()
    operation_ids = []
    problems: list[str] = []
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method in ("parameters", "summary", "description", "servers"):
                continue
            documented.add((method.upper(), path))
            operation_ids.append(op["operationId"])
            declared = {p["name"] for p in op.get("parameters", []) + item.get("parameters", []) if p["in"] == "path"}
            assert declared == set(re.findall(r"\{(\w+)\}", path)), (method, path, declared)
            assert op.get("responses"), (method, path)
            # A body's schema describes every argument it requires (with additionalProperties
            # false, one it does not describe could never be given).
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
            if "properties" in body:
                undescribed = [name for name in body.get("required", []) if name not in body["properties"]]
                if undescribed:
                    problems.append(f"{method.upper()} {path}: requires {undescribed} without describing them")
    assert not problems, "\n".join(problems)
    assert ROUTES_BEFORE - documented == set(), "routes missing from the document"
    assert SEED_BUNDLE_API <= documented
    assert len(operation_ids) == len(set(operation_ids)), "operationIds repeat"

    # Every $ref resolves.
    text = json.dumps(doc)
    for ref in set(re.findall(r'"\$ref": "#/([^"]+)"', text)):
        node: Any = doc
        for part in ref.split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
    assert "bearer" in json.dumps(doc["components"].get("securitySchemes", {})).lower()


JUDGE = """item=$(cat)
case "$item" in
  *'"ask":"facts"'*) echo '["the refresh is retried 3 times with backoff"]' ;;
  *backoff*) echo '{"score": 0.9, "explanation": "matches the fix"}' ;;
  *) echo 0.2 ;;
esac
"""


def test_seed_001_curation_calls_as_written_with_the_servers_judge(servers: Servers, tmp_path: Path) -> None:
    """Seed 001 §8's curation calls, as the seed writes them, on a server with `--judge-cmd`;
    and without a judge, verifying a branch is refused instead of scoring the neutral 0.5."""
    judge = tmp_path / "judge.sh"
    judge.write_text(JUDGE)
    plain = servers.start()
    task = "fix-oauth-token-refresh"
    conv = plain.ok("POST", "/conversations", {"branch": f"task/{task}/agent-oauth-expert", "messages": [
        {"role": "user", "content": "the token refresh fails"},
        {"role": "assistant", "content": "The root cause is a single refresh attempt."},
        {"role": "assistant", "content": "I'll retry the refresh with backoff."},
        {"role": "assistant", "content": "All tests pass."},
    ]})["conversation"]
    refused = plain.post(f"/branches/task%2F{task}/verify", {})
    assert refused.status == 400 and {f for f, _ in refused.problems()} == {"judge_cmd"}, refused
    unjudged = plain.post(f"/conversations/{conv['id']}/cherry-pick",
                          {"target_branch": f"task/{task}", "from_sequence": 2, "to_sequence": 3, "verify": True})
    assert unjudged.status == 400 and {f for f, _ in unjudged.problems()} == {"verify"}, unjudged

    # The same store, served with a judge.
    server = servers.start(plain.db, "--judge-cmd", f"sh {judge}")
    # Step 6: cherry-pick with verify, then the decisions.
    picked = server.ok("POST", f"/conversations/{conv['id']}/cherry-pick",
                       {"target_branch": f"task/{task}", "from_sequence": 2, "to_sequence": 3, "verify": True})
    picked = picked["conversation"]
    assert (picked["message_count"], picked["verification_status"]) == (2, "verified"), picked
    assert picked["verified_by"] == "judge-cmd"
    decisions = server.ok("POST", f"/conversations/{conv['id']}/cherry-pick-decisions",
                          {"target_branch": f"task/{task}"})["conversation"]
    assert decisions["message_count"] >= 1, decisions
    facts = server.ok("POST", f"/conversations/{conv['id']}/cherry-pick-to-facts",
                      {"target_branch": f"task/{task}"})
    assert [f["text"] for f in facts["facts"]] == ["the refresh is retried 3 times with backoff"], facts
    # Step 7: verify the task's branch by its URL-encoded name, then merge it into main.
    report = server.ok("POST", f"/branches/task%2F{task}/verify", {"fact_threshold": 0.7})
    assert report["branch"] == f"task/{task}" and report["verified"] >= 2, report
    server.ok("POST", "/merge", {"branch": f"task/{task}"})
    # Step 8: the bundle, made after the merge, holds the task's verified knowledge.
    bundle = server.ok("POST", "/bundles", {"task_id": task, "name": "OAuth2 Token Refresh Fix Playbook",
                                            "verified_only": True, "visibility": "team"})["bundle"]
    assert bundle["fact_count"] == 1 and bundle["conversation_count"] >= 1, bundle
    assert bundle["share_token"].startswith("kb_")
    # The seed's bundle verification, recorded on the bundle.
    verified = server.ok("POST", f"/bundles/{bundle['id']}/verify", {})["bundle"]
    assert verified["verified_by"] == "judge-cmd" and verified["verification_score"] is not None, verified
    assert server.ok("GET", f"/bundles/{bundle['id']}")["bundle"]["verified_by"] == "judge-cmd"
    # Step 9: import it into main by its id.
    imported = server.ok("POST", f"/bundles/{bundle['id']}/import", {"target_branch": "main"})
    assert imported["facts_added"] + imported["facts_skipped"] == 1, imported
