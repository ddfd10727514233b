"""The OpenAPI document fuzzed by schemathesis against the live server: a bounded run (about 25
examples per operation, a time cap) whose one demand is no 5xx and no crash
(`not_a_server_error`), on a store seeded with real records so that requests get past "not
found" to the operations' own logic.

The run's seed is printed (schemathesis's "Seed:" line); set HANDOFF_FUZZ_SEED to replay it, and
HANDOFF_FUZZ_EXAMPLES (examples per operation) or HANDOFF_FUZZ_MAX_TIME (seconds: fuzz until
they are spent) to fuzz longer. A failure shows schemathesis's
report, with a curl command for each request that failed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import Server

pytest.importorskip("schemathesis", reason="schemathesis is not installed (pip install schemathesis==4.32.5)")

EXAMPLES = int(os.environ.get("HANDOFF_FUZZ_EXAMPLES", "25"))
# With --max-time schemathesis keeps fuzzing until the time is spent: only when asked.
MAX_TIME = os.environ.get("HANDOFF_FUZZ_MAX_TIME")
# The run's hard limit (it takes about 30 s with the debug binary and 25 examples).
TIMEOUT = 240 + int(MAX_TIME or 0)
SEED = os.environ.get("HANDOFF_FUZZ_SEED")

# `st` is the console script; run it from this interpreter, wherever its bin folder is.
ST = [sys.executable, "-c", "import sys; from schemathesis.cli import schemathesis; sys.argv[0] = 'st'; sys.exit(schemathesis())"]


def seed_store(server: Server) -> dict[str, list[Any]]:
    """Real records of every kind a path or query names, made over the API."""
    ids: dict[str, list[Any]] = {k: [] for k in ("handoffs", "tasks", "plans", "bundles", "tokens", "conversations", "scopes", "sessions", "branches")}

    def made(method: str, path: str, body: Any) -> Any:
        return server.ok(method, path, body)

    for n in range(3):
        task = f"fuzz-task-{n}"
        h = made("POST", "/handoffs", {"task_id": task, "goal": f"goal {n}", "from_agent": "a", "to_agent": "b", "session_id": f"session-{n}"})["handoff"]
        ids["handoffs"].append(h["id"])
        ids["sessions"].append(f"session-{n}")
        ids["branches"] += [f"task/{task}", f"task/{task}/b"]
        made("POST", "/facts", {"branch": f"task/{task}", "facts": [f"fact {n}", {"text": f"scored fact {n}", "confidence": 0.8}]})
        conv = made(
            "POST",
            "/conversations",
            {"branch": f"task/{task}", "task_id": task, "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "I'll check the logs"}]},
        )
        ids["conversations"].append(conv["conversation"]["id"])
    # One claimed, one completed, one left pending.
    claim = made("POST", f"/handoffs/{ids['handoffs'][0]}/claim", {"agent": "b"})
    made("POST", f"/handoffs/{ids['handoffs'][0]}/complete", {"token": claim["token"], "secret": claim["claim_secret"]})
    made("POST", f"/handoffs/{ids['handoffs'][1]}/claim", {"agent": "b"})

    for n in range(2):
        steps = [{"id": "first", "name": "first", "agent": "b"}, {"id": "second", "name": "second", "agent": "c", "dependencies": ["first"]}]
        plan = made("POST", "/tasks", {"name": f"fuzz plan {n}", "goal": "a plan to fuzz", "steps": steps})["task"]
        ids["plans"].append(plan["id"])
    made("POST", f"/tasks/{ids['plans'][0]}/start", {})
    ids["tasks"] += [*ids["plans"], "fuzz-task-0", "fuzz-task-1"]
    made("POST", "/protocol/initialize", {"task_id": "fuzz-proto", "manager": "m", "worker": "w", "instructions": "do it", "success_criteria": ["done"]})
    ids["tasks"].append("fuzz-proto")

    for visibility in ("private", "team"):
        b = made("POST", "/bundles", {"name": f"fuzz {visibility}", "task_id": "fuzz-task-0", "verified_only": False, "visibility": visibility})["bundle"]
        ids["bundles"].append(b["id"])
        if b["share_token"] is not None:
            ids["tokens"].append(b["share_token"])
    for scope in ("fuzz-scope", "fuzz-scope-2"):
        made("PUT", f"/memory/{scope}", {"value": {"k": "v"}})
        ids["scopes"].append(scope)
    ids["branches"].append("main")
    return ids


def config(ids: dict[str, list[Any]]) -> str:
    """A schemathesis.toml: each path and query parameter drawn from the real ids often."""

    def values(xs: list[Any]) -> str:
        return json.dumps([str(x) for x in xs])

    lines = ["[dictionaries]"]
    lines += [f"{name} = {{ values = {values(xs)} }}" for name, xs in ids.items() if xs]
    lines.append("waits = { values = [0, 0.05, 0.2] }")
    lines.append("")
    lines.append("[parameters]")
    bindings = {
        "path.handoff_id": "handoffs",
        "path.task_id": "tasks",
        "path.conversation_id": "conversations",
        "path.token": "tokens",
        "path.scope": "scopes",
        "path.session_id": "sessions",
        "query.task_id": "tasks",
        "query.task_a": "tasks",
        "query.task_b": "tasks",
        "query.handoff_id": "handoffs",
        "query.branch": "branches",
    }
    lines += [f'"{key}" = {{ dictionary = "{name}", probability = 0.7 }}' for key, name in bindings.items()]
    # claim-next waits up to `wait_seconds` (the server caps it at 50 s) for work: a long poll,
    # not a hang, but fuzzed values would spend the run's time waiting. test_api.py tests the
    # wait itself; here it stays short.
    lines.append('"body.wait_seconds" = { dictionary = "waits", probability = 1.0 }')
    # `{id}` names a different kind of record under each prefix.
    for prefix, name in [("bundles", "bundles"), ("handoffs", "handoffs"), ("tasks", "plans"), ("conversations", "conversations")]:
        lines += [
            "",
            "[[operations]]",
            f'include-path-regex = "/{prefix}/\\\\{{id\\\\}}"',
            f'parameters = {{ "path.id" = {{ dictionary = "{name}", probability = 0.7 }} }}',
        ]
    return "\n".join(lines) + "\n"


def test_schemathesis_finds_no_server_error(server: Server, tmp_path: Path) -> None:
    ids = seed_store(server)
    config_file = tmp_path / "schemathesis.toml"
    config_file.write_text(config(ids))
    operations = sum(
        1 for item in server.ok("GET", "/openapi.json")["paths"].values() for m in item if m in ("get", "post", "put", "patch", "delete")
    )
    command = [
        *ST,
        "--config-file",
        str(config_file),
        "run",
        f"{server.api}/openapi.json",
        "--checks",
        "not_a_server_error",
        "--max-examples",
        str(EXAMPLES),
        "--workers",
        "2",
        "--request-timeout",
        "60",
        "--report",
        "junit",
        "--report-dir",
        str(tmp_path / "report"),
        "--continue-on-failure",
        "--output-truncate",
        "false",
    ]
    if SEED:
        command += ["--seed", SEED]
    if MAX_TIME:
        command += ["--max-time", MAX_TIME]
    env = dict(os.environ, NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost", NO_COLOR="1", COLUMNS="120")
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    output = result.stdout + result.stderr
    print(output[-6000:])
    assert server.alive(), f"the server died during the run:\n{server.stderr()[-3000:]}\n{output[-20000:]}"
    assert result.returncode == 0, f"schemathesis found problems (exit {result.returncode}):\n{output[-20000:]}"
    tested = re.search(r"Tested:\s+(\d+)", output)
    assert tested and int(tested.group(1)) == operations, output[-3000:]
    generated = re.search(r"(\d+) generated", output)
    assert generated and int(generated.group(1)) >= operations, output[-3000:]
    # The server still answers, and the records seeded are still readable.
    assert server.ok("GET", "/stats") is not None
    assert server.get(f"/handoffs/{ids['handoffs'][2]}").status in (200, 404)
