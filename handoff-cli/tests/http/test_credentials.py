"""Who an agent is over `handoff serve` (issue 45): with `--credentials FILE` each request's
bearer token says which agents it may act as, and every argument naming the agent acting is
checked against them; a refusal is 403 `FORBIDDEN`, naming the argument, and changes nothing.
Without the file an agent is whoever a request names, as before."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

from conftest import BIN, Reply, Server, Servers, server_env

GEMINI = "gemini-" + uuid.uuid4().hex
CLAUDE = "claude-" + uuid.uuid4().hex
OPERATOR = "operator-" + uuid.uuid4().hex
SERVE_TOKEN = "serve-token-" + uuid.uuid4().hex


def sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def credentials_file(tmp_path: Path, entries: Any = None, mode: int = 0o600) -> Path:
    path = tmp_path / "credentials.json"
    if entries is None:
        entries = [
            {"name": "gemini's laptop", "sha256": sha256(GEMINI), "agents": ["gemini"]},
            {"sha256": sha256(CLAUDE), "agents": ["claude"]},
            {"sha256": sha256(OPERATOR), "agents": ["*"]},
        ]
    path.write_text(json.dumps({"tokens": entries}))
    os.chmod(path, mode)
    return path


def as_(server: Server, token: str | None, method: str, path: str, body: Any = None) -> Reply:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return server.request(method, path, body, auth=False, headers=headers)


def forbidden(reply: Reply, field: str) -> None:
    assert reply.status == 403, reply
    error = reply.error()
    assert error["code"] == "FORBIDDEN", error
    assert [p["field"] for p in error["problems"]] == [field], error
    assert "(gemini)" in error["problems"][0]["rule"], error
    assert error["message"].startswith(f"refused: {field}: "), error


def state(server: Server, token: str, handoff_id: str) -> tuple[str, int]:
    record = as_(server, token, "GET", f"/handoffs/{handoff_id}").json["handoff"]
    events = as_(server, token, "GET", f"/handoffs/{handoff_id}/events").json["count"]
    return record["status"], events


def test_a_token_acts_only_as_its_agents(servers: Servers, tmp_path: Path) -> None:
    server = servers.start(None, "--credentials", str(credentials_file(tmp_path)))
    for_claude = as_(server, OPERATOR, "POST", "/handoffs",
                     {"task_id": "t1", "goal": "fix the login bug", "from_agent": "codex", "to_agent": "claude"})
    assert for_claude.status == 201, for_claude
    h = for_claude.json["handoff"]["id"]
    before = state(server, GEMINI, h)
    assert before[0] == "pending"

    # Gemini's token cannot act as claude: refuse its handoff, claim it, withdraw it, hand over.
    forbidden(as_(server, GEMINI, "POST", f"/handoffs/{h}/reject", {"agent": "claude", "reason": "not mine"}), "agent")
    forbidden(as_(server, GEMINI, "POST", f"/handoffs/{h}/claim", {"agent": "claude"}), "agent")
    forbidden(as_(server, GEMINI, "POST", "/handoffs/claim-next", {"agent": "claude"}), "agent")
    forbidden(as_(server, GEMINI, "POST", f"/handoffs/{h}/cancel", {"by": "claude"}), "by")
    forbidden(as_(server, GEMINI, "POST", "/handoffs", {"task_id": "t2", "goal": "g", "from_agent": "claude"}),
              "from_agent")
    forbidden(as_(server, GEMINI, "POST", "/protocol/initialize",
                  {"task_id": "t3", "manager": "claude", "worker": "gemini", "instructions": "i",
                   "success_criteria": ["s"]}), "manager")
    assert state(server, GEMINI, h) == before, "a refusal changes nothing"
    assert as_(server, GEMINI, "GET", "/handoffs").json["count"] == 1, "nothing was created"

    # As itself it may: hand over to claude, claim what is addressed to it.
    to_gemini = as_(server, GEMINI, "POST", "/handoffs",
                    {"task_id": "t4", "goal": "review", "from_agent": "gemini", "to_agent": "claude"})
    assert to_gemini.status == 201, to_gemini
    mine = as_(server, CLAUDE, "POST", "/handoffs", {"task_id": "t5", "goal": "g", "to_agent": "gemini"})
    assert mine.status == 201, mine
    claimed = as_(server, GEMINI, "POST", f"/handoffs/{mine.json['handoff']['id']}/claim", {"agent": "gemini"})
    assert claimed.status == 200 and claimed.json["handoff"]["claimed_by"] == "gemini", claimed
    # Settling a claim needs its secret, whoever's token carries it.
    done = as_(server, GEMINI, "POST", f"/handoffs/{mine.json['handoff']['id']}/complete",
               {"token": claimed.json["token"], "claim_secret": claimed.json["claim_secret"]})
    assert done.status == 200, done

    # Claude's token refuses claude's handoff; the operator's acts as anyone.
    assert as_(server, CLAUDE, "POST", f"/handoffs/{h}/reject", {"agent": "claude", "reason": "stale"}).status == 200
    assert as_(server, OPERATOR, "POST", "/handoffs",
               {"task_id": "t6", "goal": "g", "from_agent": "codex"}).status == 201
    # Any valid token reads everything.
    assert as_(server, GEMINI, "GET", "/handoffs?to_agent=claude").json["count"] == 2


def test_no_token_or_an_unknown_one_is_unauthorized(servers: Servers, tmp_path: Path) -> None:
    server = servers.start(None, "--credentials", str(credentials_file(tmp_path)))
    for token in [None, "x" * 40, sha256(GEMINI)]:
        for method, path, body in [
            ("GET", "/handoffs", None),
            ("POST", "/handoffs", {"task_id": "t", "goal": "g", "from_agent": "gemini"}),
            ("POST", "/handoffs/claim-next", {"agent": "gemini"}),
        ]:
            reply = as_(server, token, method, path, body)
            assert reply.status == 401, (token, path, reply)
            assert reply.error()["code"] == "UNAUTHORIZED"
    assert as_(server, OPERATOR, "GET", "/handoffs").json["count"] == 0
    # The dashboard opens with any of the file's tokens, and with no other.
    assert server.get(server.url + "/", auth=False).status == 401
    assert server.get(server.url + "/?token=" + "x" * 40, auth=False).status == 401
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("GET", f"/?token={GEMINI}")
    moved = connection.getresponse()
    assert moved.status == 303 and f"handoff_token={GEMINI};" in (moved.getheader("Set-Cookie") or ""), moved
    connection.close()
    page = server.get(server.url + "/", auth=False, headers={"Cookie": f"handoff_token={GEMINI}"})
    assert page.status == 200 and "<h1>Queue</h1>" in page.text, page
    # The cookie never opens the API.
    assert server.get("/handoffs", auth=False, headers={"Cookie": f"handoff_token={GEMINI}"}).status == 401


def test_the_serve_token_is_the_operators_beside_the_file(servers: Servers, tmp_path: Path) -> None:
    server = servers.start(None, "--credentials", str(credentials_file(tmp_path)), token=SERVE_TOKEN)
    assert server.post("/handoffs", {"task_id": "t", "goal": "g", "from_agent": "anyone"}).status == 201
    forbidden(as_(server, GEMINI, "POST", "/handoffs/claim-next", {"agent": "anyone"}), "agent")
    assert as_(server, GEMINI, "POST", "/handoffs/claim-next", {"agent": "gemini"}).status == 200


def test_without_the_file_an_agent_is_whoever_a_request_names(server: Server) -> None:
    h = server.ok("POST", "/handoffs", {"task_id": "t", "goal": "g", "from_agent": "codex", "to_agent": "claude"})
    rejected = server.post(f"/handoffs/{h['handoff']['id']}/reject", {"agent": "claude", "reason": "anyone may"})
    assert rejected.status == 200, rejected
    assert rejected.json["handoff"]["status"] == "rejected"


def start_failure(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    result = subprocess.run(
        [str(BIN), "--db", str(tmp_path / "store.db"), "serve", "--bind", "127.0.0.1:0", *args],
        stdin=subprocess.DEVNULL, capture_output=True, timeout=30, env=server_env(), cwd=tmp_path,
    )
    assert result.returncode == 2, result
    assert b"listening" not in result.stdout, result
    assert not (tmp_path / "store.db").exists(), "a refused configuration opens no store"
    return result


def test_a_bad_credentials_file_stops_the_server_at_start(tmp_path: Path) -> None:
    writable = credentials_file(tmp_path, mode=0o664)
    assert b"chmod 600" in start_failure(tmp_path, "--credentials", str(writable)).stderr
    raw = credentials_file(tmp_path, [{"token": GEMINI, "agents": ["gemini"]}])
    stderr = start_failure(tmp_path, "--credentials", str(raw)).stderr.decode()
    assert "credentials.tokens[0].token" in stderr and "sha256sum" in stderr, stderr
    assert GEMINI not in stderr
    missing = start_failure(tmp_path, "--credentials", str(tmp_path / "nowhere.json")).stderr
    assert b"credentials" in missing


def test_beyond_loopback_the_file_is_enough(tmp_path: Path) -> None:
    path = credentials_file(tmp_path)
    process = subprocess.Popen(
        [str(BIN), "--db", str(tmp_path / "wide.db"), "serve", "--bind", "0.0.0.0:0", "--credentials", str(path)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=server_env(), cwd=tmp_path,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        assert "listening on http://0.0.0.0:" in line, (line, process.stderr.read() if process.poll() else "")
    finally:
        process.terminate()
        process.wait(timeout=10)
