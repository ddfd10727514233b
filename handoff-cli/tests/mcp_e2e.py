"""End-to-end test of `handoff mcp`, driven by the official MCP Python SDK (the `mcp` package).

Run: python handoff-cli/tests/mcp_e2e.py path/to/handoff   (`make test-cli` does this)

Several servers share one store file, as several coding agents would: one per client.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from contextlib import AsyncExitStack
from typing import Any

import mcp_types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp_seed_001 import seed_001_scenario

# A tool per store operation of the core's catalog (but `backup` and `restore`: a model must not
# choose where an unredacted copy of the store goes, nor what replaces its content), and the
# server's own two.
OPERATION_TOOLS = {
    "handoff_create",
    "handoff_create_many",
    "handoff_get",
    "handoff_list",
    "handoff_claim",
    "handoff_claim_next",
    "handoff_heartbeat",
    "handoff_release",
    "handoff_fail",
    "handoff_complete",
    "handoff_reject",
    "handoff_cancel",
    "handoff_retry",
    "handoff_revoke_claim",
    "handoff_set_priority",
    "handoff_cancel_claim",
    "handoff_events",
    "handoff_chain",
    "handoff_checkpoint",
    "handoff_stalled",
    "handoff_stats",
    "handoff_queue_counts",
    "handoff_metrics",
    "handoff_reap",
    "handoff_check",
    "handoff_capabilities",
    "task_create",
    "task_start",
    "task_get",
    "task_list",
    "task_update",
    "task_pause",
    "task_resume",
    "task_cancel",
    "task_join",
    "task_complete",
    "task_fail",
    "task_rerun",
    "step_fail",
    "step_escalate",
    "task_resolve",
    "task_events",
    "task_history",
    "task_statistics",
    "task_prune",
    "memory_get",
    "memory_put",
    "memory_list",
    "memory_delete",
    "session_get",
    "protocol_initialize",
    "protocol_report",
    "protocol_decide",
    "protocol_report_error",
    "protocol_recover",
    "protocol_escalate",
    "protocol_resolve",
    "protocol_show",
    "protocol_history",
    "protocol_stats",
    "conversation_add",
    "conversation_append",
    "conversation_show",
    "conversation_messages",
    "conversation_list",
    "cherry_pick",
    "cherry_pick_decisions",
    "cherry_pick_tools",
    "cherry_pick_to_facts",
    "facts_add",
    "facts_list",
    "branches",
    "verify",
    "merge",
    "context",
    "curation_events",
    "bundle_create",
    "bundle_show",
    "bundle_list",
    "bundle_shared",
    "bundle_visibility",
    "bundle_sign",
    "bundle_trust",
    "bundle_delete",
    "bundle_import",
    "bundle_verify",
    "task_replay",
    "task_compare",
}
TOOLS = OPERATION_TOOLS | {"handoff_claim_and_spawn", "handoff_policy"}

# The bad create every face feeds through its own door, and the problems each must report.
FIXTURE = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "handoff-core", "tests", "fixtures", "bad_create.json"
)

# An OpenAI project key and an AWS access key id: what must never leave the server unredacted.
OPENAI_KEY = "sk-proj-" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7n"
AWS_KEY = "AKIA" + "Q3EGRTZ4KLMNB2VX"
SECRETS = (OPENAI_KEY, AWS_KEY)

# MASC's `masc_handover_create` example, exactly as the seed sends it.
SEED_PAYLOAD = {
    "task_id": "task-001",
    "session_id": "session-xyz",
    "reason": "context_limit",
    "context_pct": 85,
    "goal": "PK-32008 LocalStorage SSR 버그 수정",
    "progress": "원인 파악 완료",
    "completed": ["버그 재현", "원인 분석"],
    "pending": ["수정", "테스트", "PR"],
    "decisions": ["SSR-safe 패턴 사용"],
    "assumptions": ["Next.js 14 환경"],
    "warnings": ["hydration mismatch 주의"],
    "errors": [],
    "files": ["src/hooks/useLocalStorage.ts"],
}


async def connect(stack: AsyncExitStack, binary: str, db: str, *extra: str, sampling: Any = None) -> ClientSession:
    # Every tool unless the caller picks its sets: the cases call tools of every set.
    tools = [] if "--tools" in extra else ["--tools", "all"]
    params = StdioServerParameters(command=binary, args=["mcp", "--db", db, *tools, *extra])
    read, write = await stack.enter_async_context(stdio_client(params))
    session = await stack.enter_async_context(ClientSession(read, write, sampling_callback=sampling))
    await session.initialize()
    return session


async def ok(session: ClientSession, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(tool, args)
    text = result.content[0].text if result.content else ""
    assert not result.is_error, f"{tool} failed: {text}"
    assert text, f"{tool} returned no readable text"
    assert isinstance(result.structured_content, dict), f"{tool}: no structuredContent"
    return result.structured_content


async def tool_error(session: ClientSession, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(tool, args)
    assert result.is_error, f"{tool} should have failed: {result}"
    assert result.content and result.content[0].text, "a tool error needs a readable message"
    error = result.structured_content["error"]
    assert error["message"] in result.content[0].text
    return error


def secret_text(label: str) -> str:
    return f"{label} {OPENAI_KEY} and {AWS_KEY}"


def secret_handoff(task_id: str) -> dict[str, Any]:
    """handoff_create arguments with both secrets in every text field."""
    args: dict[str, Any] = {"task_id": task_id, "from_agent": "claude"}
    for field in ("goal", "progress", "instructions"):
        args[field] = secret_text(field)
    for field in (
        "completed", "pending", "decisions", "assumptions", "warnings", "errors", "files",
        "blockers", "locked_files", "priority_items", "success_criteria",
    ):
        args[field] = [secret_text(field)]
    args["metadata"] = {"token": secret_text("meta"), "nested": [secret_text("deep")]}
    return args


async def everything(session: ClientSession, tool: str, args: dict[str, Any]) -> str:
    """A tool result's text and structured content, as one string to search."""
    result = await session.call_tool(tool, args)
    assert not result.is_error, f"{tool} failed: {result}"
    texts = [block.text for block in result.content if hasattr(block, "text")]
    return "\n".join(texts) + json.dumps(result.structured_content, ensure_ascii=False)


def assert_clean(what: str, output: str) -> None:
    for secret in SECRETS:
        assert secret not in output, f"{what} shows a secret: {output[:2000]}"
    assert "sk-proj-aB3" not in output, f"{what} shows part of a key"


async def redaction(stack: AsyncExitStack, binary: str, db: str) -> None:
    """Every record a tool returns, and the successor's prompt, is redacted by default."""
    prompt = os.path.join(os.path.dirname(db), "prompt.md")
    spawn = f"cat > '{prompt}'; echo done"
    server = await connect(stack, binary, db, "--spawn", spawn)
    created = await server.call_tool("handoff_create", secret_handoff("secrets"))
    assert not created.is_error, created
    handoff_id = created.structured_content["handoff"]["id"]
    assert_clean("handoff_create", created.content[0].text + json.dumps(created.structured_content))
    for tool, args in [
        ("handoff_get", {"handoff_id": handoff_id}),
        ("handoff_list", {}),
        ("handoff_events", {"handoff_id": handoff_id}),
    ]:
        assert_clean(tool, await everything(server, tool, args))
    claim = await server.call_tool("handoff_claim", {"handoff_id": handoff_id, "agent": "gemini"})
    assert_clean("handoff_claim", claim.content[0].text + json.dumps(claim.structured_content))
    assert "[REDACTED:" in claim.structured_content["markdown"]
    done = await everything(
        server,
        "handoff_complete",
        {
            "handoff_id": handoff_id,
            "token": claim.structured_content["token"],
            "claim_secret": claim.structured_content["claim_secret"],
            "outcome": secret_text("done"),
        },
    )
    assert_clean("handoff_complete", done)

    await ok(server, "handoff_create", secret_handoff("secrets-spawn"))
    ran = await everything(
        server,
        "handoff_claim_and_spawn",
        {"agent": "local", "task_id": "secrets-spawn", "additional_instructions": secret_text("more")},
    )
    assert_clean("handoff_claim_and_spawn", ran)
    with open(prompt, encoding="utf-8") as f:
        written = f.read()
    assert_clean("the successor's prompt", written)
    assert "## Additional Instructions\n\nmore [REDACTED:" in written, written

    # Only the owner, starting the server, can turn it off; a tool call cannot.
    refused = await tool_error(server, "handoff_get", {"handoff_id": handoff_id, "redact": False})
    assert refused["code"] == "VALIDATION"
    raw = await connect(stack, binary, db, "--no-redact")
    got = await everything(raw, "handoff_get", {"handoff_id": handoff_id})
    assert all(secret in got for secret in SECRETS)


async def seed_and_policy(stack: AsyncExitStack, binary: str, db: str) -> None:
    """The seed's own payload; a manager → worker → manager loop, refused then allowed."""
    server = await connect(stack, binary, db)
    created = await ok(server, "handoff_create", SEED_PAYLOAD)
    assert created["handoff"]["reason"] == "context_limit_85"
    assert created["handoff"]["context_usage_percent"] == 85
    timeout = await ok(
        server, "handoff_create", {"task_id": "t-timeout", "goal": "g", "reason": "timeout", "timeout_seconds": 300}
    )
    assert timeout["handoff"]["reason"] == "timeout_300s"
    bare = await tool_error(server, "handoff_create", {"task_id": "t", "goal": "g", "reason": "context_limit"})
    assert bare["code"] == "VALIDATION" and bare["problems"][0]["field"] == "reason"

    async def loop(session: ClientSession, task: str) -> Any:
        first = await ok(
            session,
            "handoff_create",
            {"task_id": task, "goal": "plan", "from_agent": "manager", "to_agent": "worker"},
        )
        first_id = first["handoff"]["id"]
        await ok(session, "handoff_claim", {"handoff_id": first_id, "agent": "worker"})
        return await session.call_tool(
            "handoff_create",
            {"task_id": task, "goal": "report", "from_agent": "worker", "to_agent": "manager", "parent_id": first_id},
        )

    refused = await loop(server, "loop-default")
    assert refused.is_error and refused.structured_content["error"]["code"] == "CHAIN_VIOLATION", refused
    loose = await connect(stack, binary, db, "--max-revisits", "1")
    accepted = await loop(loose, "loop-revisits")
    assert not accepted.is_error, accepted

    # Display names, from create to claim.
    named = await ok(
        server,
        "handoff_create",
        {"task_id": "billing", "goal": "Refund", "from_agent": "Tech Support", "to_agent": "Billing agent"},
    )
    claim = await ok(server, "handoff_claim", {"handoff_id": named["handoff"]["id"], "agent": "Billing agent"})
    assert claim["handoff"]["claimed_by"] == "Billing agent"


async def new_tools(stack: AsyncExitStack, binary: str, db: str) -> None:
    """reject, cancel, events, stats, checkpoint and stalled."""
    server = await connect(stack, binary, db)

    async def create(task: str, to: str) -> str:
        made = await ok(server, "handoff_create", {"task_id": task, "goal": "g", "from_agent": "claude", "to_agent": to})
        return made["handoff"]["id"]

    a = await create("tools-a", "gemini")
    wrong = await tool_error(server, "handoff_reject", {"handoff_id": a, "agent": "mallory", "reason": "mine"})
    assert wrong["code"] == "INVALID_TRANSITION"
    rejected = await ok(server, "handoff_reject", {"handoff_id": a, "agent": "gemini", "reason": "not my area"})
    assert rejected["handoff"]["status"] == "rejected"
    b = await create("tools-b", "codex")
    cancelled = await ok(server, "handoff_cancel", {"handoff_id": b, "by": "claude", "reason": "plans changed"})
    assert cancelled["handoff"]["status"] == "cancelled"
    missing = await tool_error(server, "handoff_cancel", {"handoff_id": "no-such-handoff", "by": "claude"})
    assert missing["code"] == "NOT_FOUND"

    events = await ok(server, "handoff_events", {"handoff_id": a})
    assert [e["kind"] for e in events["events"]] == ["created", "rejected"]
    # A created event names where the work goes; the record is handoff_get's.
    assert events["events"][0]["detail"] == {"task_id": "tools-a", "to_agent": "gemini"}, events
    by_task = await ok(server, "handoff_events", {"task_id": "tools-b"})
    assert [e["kind"] for e in by_task["events"]] == ["created", "cancelled"]
    first = await ok(server, "handoff_events", {"limit": 1})
    page = await ok(server, "handoff_events", {"after": first["events"][0]["seq"], "limit": 2})
    assert [e["seq"] for e in page["events"]] == [first["events"][0]["seq"] + 1, first["events"][0]["seq"] + 2]

    stats = await ok(server, "handoff_stats", {})
    assert any(
        p["from_agent"] == "claude" and p["to_agent"] == "gemini" and p["rejected"] >= 1 for p in stats["paths"]
    ), stats
    queue = await ok(server, "handoff_queue_counts", {})
    assert {"status": "rejected", "to_agent": "gemini", "count": 1} in queue["queue"], queue

    saved = await ok(
        server,
        "handoff_checkpoint",
        {"task_id": "tools-c", "agent": "claude", "goal": "Refactor auth", "progress": "half", "pending": ["rest"]},
    )
    assert saved["handoff"]["kind"] == "checkpoint"
    bad = await tool_error(server, "handoff_checkpoint", {"task_id": "tools-c", "agent": "claude", "goal": ""})
    assert bad["code"] == "VALIDATION"
    quiet = await ok(server, "handoff_stalled", {"older_than_seconds": 3600})
    assert "tools-c" not in quiet["task_ids"]
    await asyncio.sleep(1.1)
    stalled = await ok(server, "handoff_stalled", {"older_than_seconds": 1})
    assert "tools-c" in stalled["task_ids"], stalled


async def tasks_and_memory(stack: AsyncExitStack, binary: str, db: str) -> None:
    """A plan run through the task tools by two servers, a step that fails into an escalation a
    human resolves, memory by compare-and-swap, and a session."""
    server = await connect(stack, binary, db)
    worker = await connect(stack, binary, db)
    bad = await tool_error(
        server,
        "task_create",
        {
            "name": "Broken",
            "goal": "g",
            "steps": [
                {"id": "a", "name": "A", "agent": "x", "dependencies": ["b"]},
                {"id": "b", "name": "B", "agent": "x", "dependencies": ["a"]},
                {"id": "b", "name": "B again", "agent": "x", "dependencies": ["nowhere"]},
            ],
        },
    )
    assert bad["code"] == "VALIDATION", bad
    assert len(bad["problems"]) >= 3, bad["problems"]
    assert (await ok(server, "task_list", {}))["count"] == 0, "a refused plan leaves nothing"

    created = await ok(
        server,
        "task_create",
        {
            "name": "Write a post",
            "goal": "A bilingual blog post",
            "escalate_to": "editor",
            "steps": [
                {"id": "research", "name": "Research", "agent": "researcher"},
                {"id": "draft-ko", "name": "Draft (ko)", "agent": "writer", "dependencies": ["research"],
                 "max_attempts": 1},
                {"id": "review", "name": "Review", "agent": "reviewer", "dependencies": ["draft-ko"]},
            ],
        },
    )
    task = created["task"]
    assert [s["dependencies"] for s in task["plan"]["steps"]] == [[], ["research"], ["draft-ko"]]
    started = await ok(server, "task_start", {"id": task["id"]})
    assert started["task"]["plan"]["current_steps"] == ["research"]

    step = await ok(worker, "handoff_claim_next", {"agent": "researcher"})
    claim = {"handoff_id": step["handoff"]["id"], "token": step["token"], "secret": step["claim_secret"]}
    await ok(worker, "handoff_complete", {"claim": claim, "outcome": "notes", "tokens_used": 900})
    draft = await ok(worker, "handoff_claim_next", {"agent": "writer"})
    assert draft["handoff"]["metadata"]["step_id"] == "draft-ko"
    failed = await ok(
        worker,
        "step_fail",
        {"handoff_id": draft["handoff"]["id"], "token": draft["token"], "claim_secret": draft["claim_secret"],
         "error": "the model refused"},
    )
    assert failed["handoff"]["status"] == "failed", failed
    paused = await ok(server, "task_get", {"id": task["id"]})
    assert paused["task"]["status"] == "paused"
    assert paused["task"]["plan"]["steps"][1]["status"] == "escalated"

    escalation = await ok(worker, "handoff_claim_next", {"agent": "editor"})
    resolved = await ok(
        worker,
        "task_resolve",
        {"claim": {"handoff_id": escalation["handoff"]["id"], "token": escalation["token"],
                   "secret": escalation["claim_secret"]},
         "resolution": "skip the Korean draft", "retry": False},
    )
    assert resolved["task"]["status"] == "in_progress"
    review = await ok(worker, "handoff_claim_next", {"agent": "reviewer"})
    await ok(
        worker,
        "handoff_complete",
        {"claim": {"handoff_id": review["handoff"]["id"], "token": review["token"], "secret": review["claim_secret"]}},
    )
    history = await ok(server, "task_history", {})
    assert history["history"][0]["result"] == "partial", history
    assert history["history"][0]["metrics"]["tokens_used"] == 900
    kinds = [e["kind"] for e in (await ok(server, "task_events", {"id": task["id"]}))["events"]]
    assert "step_escalated" in kinds and "step_skipped" in kinds and kinds[-1] == "completed", kinds
    stats = await ok(server, "task_statistics", {})
    assert stats["total_tasks"] == 1
    missing = await tool_error(server, "task_get", {"id": "no-such-task"})
    assert missing["code"] == "NOT_FOUND"

    # A secret written into memory is redacted on the way out.
    put = await ok(server, "memory_put", {"scope": "shared", "value": {"key": OPENAI_KEY}, "expected_version": 0})
    assert put["memory"]["version"] == 1
    assert OPENAI_KEY not in json.dumps(put)
    stale = await tool_error(worker, "memory_put", {"scope": "shared", "value": {"n": 2}, "expected_version": 0})
    assert stale["code"] == "CONFLICT", stale
    assert (stale["expected_version"], stale["actual_version"]) == (0, 1), stale
    got = await ok(worker, "memory_get", {"scope": "shared"})
    assert got["memory"]["version"] == 1
    assert (await ok(worker, "memory_delete", {"scope": "shared", "expected_version": 1}))["deleted"] is True
    assert (await ok(worker, "memory_get", {"scope": "shared"}))["memory"] is None

    await ok(server, "handoff_create", {"task_id": "chat", "goal": "Answer", "from_agent": "triage",
                                        "to_agent": "billing", "session_id": "s1"})
    session = await ok(server, "session_get", {"session_id": "s1"})
    assert session["session"]["current_agent"] == "triage"
    assert len(session["session"]["handoff_chain"]) == 1


async def protocol_loop(stack: AsyncExitStack, binary: str, db: str) -> None:
    """Two agents run the manager/worker loop over MCP with tool calls only: a report, a
    REFINE, an error and its recovery, an escalation a human resolves, COMPLETE; bad bodies are
    refused by name and change nothing; secrets in a report are redacted on the way out."""
    manager = await connect(stack, binary, db)
    worker = await connect(stack, binary, db)

    async def take(session: ClientSession, agent: str) -> dict[str, Any]:
        got = await ok(session, "handoff_claim_next", {"agent": agent})
        assert got["claimed"], f"{agent} has no message"
        assert "## Protocol:" in got["markdown"], got["markdown"]
        return {"handoff_id": got["handoff"]["id"], "token": got["token"], "secret": got["claim_secret"]}

    bad = await tool_error(manager, "protocol_initialize", {"task_id": "oauth", "manager": "lead",
                                                             "worker": "dev", "instructions": " ",
                                                             "success_criteria": []})
    assert bad["code"] == "VALIDATION" and {p["field"] for p in bad["problems"]} == {
        "instructions", "success_criteria"}, bad
    init = await ok(manager, "protocol_initialize", {
        "task_id": "oauth", "manager": "lead", "worker": "dev", "max_retries": 1,
        "instructions": "Add token refresh to src/auth.js", "success_criteria": ["401 triggers one refresh"],
        "context": {"project_root": "/app", "relevant_files": ["src/auth.js"]}})
    assert init["handoff"]["protocol"]["handoff_type"] == "initialization", init

    work = await take(worker, "dev")
    before = await ok(manager, "protocol_show", {"task_id": "oauth"})
    bad = await tool_error(worker, "protocol_report", {"claim": work, "status": "DONE",
                                                       "files_modified": [{"path": "src/auth.js"}]})
    assert {p["field"] for p in bad["problems"]} == {"status", "files_modified[0].description"}, bad
    deep: Any = "leaf"
    for _ in range(100):  # past the server's nesting limit (64; the client refuses much deeper)
        deep = [deep]
    bad = await tool_error(worker, "protocol_report", {"claim": work, "status": "PARTIAL",
                                                       "issues": ["i"], "accomplished": deep})
    assert bad["code"] == "VALIDATION", bad
    huge = await tool_error(worker, "protocol_report", {"claim": work, "status": "PARTIAL",
                                                        "issues": ["x" * 70_000]})
    assert [p["field"] for p in huge["problems"]] == ["issues[0]"], huge
    out_of_turn = await tool_error(worker, "protocol_decide", {"claim": work, "decision": "COMPLETE"})
    assert out_of_turn["code"] == "INVALID_TRANSITION", out_of_turn
    assert await ok(manager, "protocol_show", {"task_id": "oauth"}) == before, "refusals change nothing"
    report = await ok(worker, "protocol_report", {
        "claim": work, "status": "PARTIAL", "accomplished": ["refresh on 401"],
        "files_modified": [{"path": "src/auth.js", "description": "refresh call"}],
        "tests": {"added": 2, "passing": 2, "coverage": "81%"},
        "issues": [f"hard-coded key {OPENAI_KEY} in the test fixture"]})
    assert OPENAI_KEY not in json.dumps(report), "a report is redacted on the way out"
    assert report["handoff"]["to_agent"] == "lead"

    review = await take(manager, "lead")
    refine = await ok(manager, "protocol_decide", {"claim": review, "decision": "REFINE",
                                                   "instructions": "Add exponential backoff"})
    assert refine["handoff"]["protocol"]["iteration"] == 2
    error = {"error_type": "configuration", "severity": "high",
             "description": "the sandbox rejects the client id"}
    await ok(worker, "protocol_report_error", {"claim": await take(worker, "dev"), **error})
    await ok(manager, "protocol_recover", {"claim": await take(manager, "lead"),
                                           "strategy": "use the staging client", "steps": ["retry"]})
    await ok(worker, "protocol_report_error", {"claim": await take(worker, "dev"), **error})
    forced = await ok(manager, "protocol_recover", {"claim": await take(manager, "lead"),
                                                    "strategy": "again", "steps": ["retry"]})
    escalation = forced["handoff"]
    assert (escalation["kind"], escalation["to_agent"]) == ("escalation", "human"), escalation
    assert len(escalation["protocol"]["complete_history"]) == 3

    resumed = await ok(worker, "protocol_resolve", {"claim": await take(worker, "human"),
                                                    "resolution": "Registered the staging client"})
    assert resumed["handoff"]["protocol"]["resume_instructions"] == "Registered the staging client"
    done = await ok(manager, "protocol_decide", {"claim": await take(manager, "lead"), "decision": "COMPLETE"})
    assert done["run_completed"] is True, done
    run = await ok(manager, "protocol_show", {"task_id": "oauth"})
    assert run["run"]["phase"] == "completed"
    history = await ok(manager, "protocol_history", {"task_id": "oauth"})
    assert [h["kind"] for h in history["handoffs"]][-2:] == ["escalation", "progress"], history
    stats = await ok(manager, "protocol_stats", {})
    assert (stats["runs"], stats["completed"], stats["escalated"], stats["retries"]) == (1, 1, 1, 1), stats


async def curation(stack: AsyncExitStack, binary: str, db: str) -> None:
    """Curated memory over MCP: a conversation, a range and its decision points picked up to the
    task's branch, facts verified by the client's own model (MCP sampling) and merged, and the
    successor's packet; bad input refused by name, changing nothing."""
    asked: list[str] = []

    async def model(context: Any, params: Any) -> Any:
        """A scripted model: scores facts about retries high, everything else low; calls a
        message a decision point when it says "let me"."""
        prompt = params.messages[0].content.text
        asked.append(prompt)
        if "decision points" in (params.system_prompt or ""):
            answer = "yes" if "let me" in prompt else "no"
        elif "retries" in prompt:
            answer = 'Here you go: {"score": 0.9, "explanation": "matches the fix"}'
        else:
            answer = '{"score": 0.1, "explanation": "tokens last 15 minutes"}'
        return mcp_types.CreateMessageResult(
            role="assistant", content=mcp_types.TextContent(type="text", text=answer), model="scripted")

    agent = await connect(stack, binary, db, sampling=model)
    plain = await connect(stack, binary, db)
    tools = {t.name: t.input_schema for t in (await agent.list_tools()).tools}
    assert "use_client_model" in tools["verify"]["properties"], tools["verify"]

    messages = [
        {"role": "user", "content": "the token refresh fails"},
        {"role": "assistant", "content": "let me add retries with backoff"},
        {"role": "assistant", "content": [{"type": "text", "text": "retries added"}]},  # Anthropic shape
        {"role": "user", "content": f"the key is {OPENAI_KEY}"},
    ]
    added = await ok(agent, "conversation_add", {"branch": "task/fix-oauth/agent-b", "messages": messages,
                                                 "title": "OAuth refresh"})
    conv = added["conversation"]
    assert (conv["message_count"], conv["task_id"]) == (4, "fix-oauth"), conv
    before = await ok(plain, "curation_events", {"task_id": "fix-oauth"})
    bad = await tool_error(agent, "cherry_pick", {"conversation_id": conv["id"], "target_branch": "feature/x"})
    assert [p["field"] for p in bad["problems"]] == ["target_branch"], bad
    bad = await tool_error(agent, "cherry_pick", {"conversation_id": conv["id"], "target_branch": "task/fix-oauth",
                                                  "from_seq": 3, "to_seq": 9})
    assert [p["field"] for p in bad["problems"]] == ["to_seq"], bad
    bad = await tool_error(agent, "facts_add", {"branch": "task/fix-oauth/agent-b",
                                                "facts": ["", {"text": "x", "confidence": 2}]})
    assert [p["field"] for p in bad["problems"]] == ["facts[0].text", "facts[1].confidence"], bad
    assert await ok(plain, "curation_events", {"task_id": "fix-oauth"}) == before, "refusals write nothing"

    picked = await ok(agent, "cherry_pick", {"conversation_id": conv["id"], "target_branch": "task/fix-oauth",
                                             "from_seq": 2, "to_seq": 3})
    assert picked["conversation"]["message_count"] == 2
    decisions = await ok(agent, "cherry_pick_decisions", {"conversation_id": conv["id"],
                                                          "target_branch": "task/fix-oauth"})
    assert decisions["conversation"]["message_count"] == 1, decisions
    assert sum("Message" in p for p in asked) == 4, "the client's model judged every message"
    shown = await ok(plain, "conversation_messages", {"id": conv["id"]})
    assert [m["is_cherry_picked"] for m in shown["messages"]] == [False, True, True, False], shown
    assert OPENAI_KEY not in json.dumps(shown), "messages are redacted on the way out"

    await ok(agent, "facts_add", {"branch": "task/fix-oauth/agent-b",
                                  "facts": ["refresh needs retries with backoff", {"text": "tokens last 1h"}]})
    neutral = await ok(plain, "verify", {"branch": "task/fix-oauth/agent-b"})
    assert (neutral["verified"], neutral["invalidated"], neutral["unverified"]) == (0, 0, 3), neutral
    off = await ok(agent, "verify", {"branch": "task/fix-oauth/agent-b", "use_client_model": False})
    assert off["unverified"] == 3, off
    judged = await ok(agent, "verify", {"branch": "task/fix-oauth/agent-b"})
    # The conversation's transcript mentions retries too.
    assert (judged["verified"], judged["invalidated"]) == (2, 1), judged
    facts = await ok(plain, "facts_list", {"branch": "task/fix-oauth/agent-b"})
    assert {f["verified_by"] for f in facts["facts"]} == {"mcp-client-model"}, facts
    merged = await ok(agent, "merge", {"branch": "task/fix-oauth/agent-b"})
    assert (merged["facts"], merged["conversations"]) == (1, 1), merged
    again = await ok(agent, "merge", {"branch": "task/fix-oauth/agent-b"})
    assert (again["facts"], again["conversations"]) == (0, 0), again
    branches = await ok(plain, "branches", {})
    assert [b["name"] for b in branches["branches"]] == ["task/fix-oauth", "task/fix-oauth/agent-b"], branches

    handoff = await ok(agent, "handoff_create", {"task_id": "fix-oauth", "goal": "Ship the refresh fix"})
    packet = await ok(plain, "context", {"handoff_id": handoff["handoff"]["id"], "budget_tokens": 4000})
    # The tool's name before `handoff context-for` became `handoff context` still answers.
    old = await ok(plain, "context_for", {"handoff_id": handoff["handoff"]["id"], "budget_tokens": 4000})
    assert old["markdown"] == packet["markdown"]
    assert "refresh needs retries with backoff" in packet["markdown"], packet["markdown"]
    assert "tokens last 1h" not in packet["markdown"], "an invalidated fact never reaches the successor"
    assert OPENAI_KEY not in json.dumps(packet)


async def successor_packet(stack: AsyncExitStack, binary: str, db: str) -> None:
    """The successor's packet over MCP: seed 001 §8's escalation, whose taker reads the
    escalating agent's unverified finding in the claim (structured `context` and a second text);
    `handoff_get` carries it too; `context` within 2,000 characters, its bad budgets named;
    and what does not fit compressed by the client's own model (MCP sampling)."""
    asked: list[str] = []

    async def model(context: Any, params: Any) -> Any:
        """A scripted model that answers every request for compression with one short line."""
        prompt = params.messages[0].content.text
        asked.append(prompt)
        return mcp_types.CreateMessageResult(
            role="assistant",
            content=mcp_types.TextContent(type="text", text="in short: the notes say the schema changed"),
            model="scripted",
        )

    agent = await connect(stack, binary, db, sampling=model)
    plain = await connect(stack, binary, db)
    finding = "token_service.py:142 drops the refresh token after a 401"
    await ok(plain, "facts_add", {"branch": "task/fix-oauth/agent-investigator", "facts": [finding]})
    escalation = await ok(plain, "handoff_create", {
        "task_id": "fix-oauth", "goal": "Fix the OAuth2 token refresh", "from_agent": "agent-investigator",
        "kind": "escalation", "blockers": ["Unclear OAuth2 state transition after refresh failure"],
    })
    hid = escalation["handoff"]["id"]
    result = await plain.call_tool("handoff_claim", {"id": hid, "agent": "agent-oauth-expert"})
    assert not result.is_error, result
    claim = result.structured_content
    # The claim is as it was, with the packet beside it.
    assert claim["claimed"] is True and claim["claim_secret"].startswith("hcs_"), claim
    assert claim["markdown"].startswith("# Handoff"), claim["markdown"]
    packet_md = claim["context"]
    assert f"{finding} (unverified)" in packet_md, packet_md
    assert "Continue on `task/fix-oauth/agent-oauth-expert`" in packet_md, packet_md
    assert [c.text for c in result.content][1:] == [packet_md], result.content
    assert claim["claim_secret"] not in packet_md

    got = await plain.call_tool("handoff_get", {"id": hid})
    assert got.structured_content["context"] == packet_md, got.structured_content
    assert [c.text for c in got.content][1:] == [packet_md]
    await ok(plain, "handoff_complete", {"claim": {"handoff_id": hid, "token": claim["token"],
                                                   "secret": claim["claim_secret"]},
                                         "outcome": "fixed the state machine"})
    # claim_next gives the packet of what it claimed; nothing claimed, no packet.
    await ok(plain, "handoff_create", {"task_id": "fix-oauth", "goal": "Add regression tests",
                                       "from_agent": "agent-oauth-expert", "to_agent": "agent-tester"})
    nxt = await ok(plain, "handoff_claim_next", {"agent": "agent-tester"})
    assert "## Agent History" in nxt["context"], nxt["context"]
    assert await ok(plain, "handoff_claim_next", {"agent": "agent-tester"}) == {"claimed": False}

    # A packet within 2,000 characters of Markdown.
    await ok(plain, "facts_add", {"branch": "task/ledger/agent-a", "facts": [
        f"finding {i}: the ledger export drifts by one cent on refunds of batch {i}" for i in range(60)]})
    ledger = await ok(plain, "handoff_create", {
        "task_id": "ledger", "goal": "Find why the ledger export drifts", "from_agent": "agent-a",
        "completed": [f"checked batch {i} against the bank statement" for i in range(40)]})
    lid = ledger["handoff"]["id"]
    short = await ok(plain, "context", {"handoff_id": lid, "budget_chars": 2000})
    assert len(short["markdown"]) <= 2000, len(short["markdown"])
    assert (short["packet"]["unit"], short["packet"]["budget"]) == ("chars", 2000), short["packet"]
    assert short["packet"]["manifest"]["dropped"], short["packet"]["manifest"]
    for args, field in [({"budget_chars": 0}, "budget_chars"),
                        ({"budget_tokens": 10, "budget_chars": 10}, "budget_chars")]:
        bad = await tool_error(plain, "context", {"handoff_id": lid, **args})
        assert [p["field"] for p in bad["problems"]] == [field], bad

    # The client's model compresses what does not fit, instead of cutting it.
    tools = {t.name: t.input_schema for t in (await agent.list_tools()).tools}
    assert "use_client_model" in tools["context"]["properties"], tools["context"]
    await ok(plain, "facts_add", {"branch": "task/essay/agent-a", "facts": [
        "the migration notes say " + "the schema changed in version seven; " * 80]})
    essay = await ok(plain, "handoff_create", {"task_id": "essay", "goal": "Finish the migration",
                                               "from_agent": "agent-a"})
    eid = essay["handoff"]["id"]
    summarized = await ok(agent, "context", {"handoff_id": eid, "budget_chars": 1200})
    assert asked and all("Compress" in p for p in asked), asked
    assert summarized["packet"]["manifest"]["summarized"], summarized["packet"]["manifest"]
    assert "in short: the notes say the schema changed" in summarized["markdown"], summarized["markdown"]
    assert len(summarized["markdown"]) <= 1200
    before = len(asked)
    cut = await ok(agent, "context", {"handoff_id": eid, "budget_chars": 1200, "use_client_model": False})
    assert len(asked) == before and not cut["packet"]["manifest"]["summarized"], cut["packet"]["manifest"]
    assert cut["packet"]["manifest"]["truncated"], cut["packet"]["manifest"]


async def bundles_and_replay(stack: AsyncExitStack, binary: str, db: str) -> None:
    """A task's verified knowledge leaves one store as a bundle and enters another once; the
    share token opens a team bundle only; hostile bundles change nothing; the task replays."""
    # The operator's judge scores every item 0.9: without one, verify writes no verdict.
    source = await connect(stack, binary, db, "--judge-cmd", "echo 0.9")
    other = await connect(stack, binary, db.replace(".db", "-other.db"))
    await ok(source, "facts_add", {"branch": "task/fix-oauth",
                                   "facts": [f"refresh needs backoff; the key was {OPENAI_KEY}"]})
    await ok(source, "verify", {"branch": "task/fix-oauth"})
    await ok(source, "handoff_create", {"task_id": "fix-oauth", "goal": "Ship it", "from_agent": "claude"})
    made = (await ok(source, "bundle_create", {"name": "OAuth Playbook", "task_id": "fix-oauth"}))["bundle"]
    assert made["share_token"] is None and OPENAI_KEY not in json.dumps(made), made
    team = (await ok(source, "bundle_visibility", {"id": made["id"], "visibility": "team"}))["bundle"]
    assert team["share_token"].startswith("kb_"), team
    shared = await ok(source, "bundle_shared", {"token": team["share_token"]})
    assert shared["bundle"]["id"] == made["id"]
    await ok(source, "bundle_visibility", {"id": made["id"], "visibility": "private"})
    revoked = await tool_error(source, "bundle_shared", {"token": team["share_token"]})
    wrong = await tool_error(source, "bundle_shared", {"token": "kb_nope"})
    assert revoked == wrong and revoked["code"] == "NOT_FOUND", (revoked, wrong)
    # Whose word a bundle is: no key trusted yet, and a key that is not one is named.
    assert (await ok(other, "bundle_trust", {}))["trusted_keys"] == []
    bad_key = await tool_error(other, "bundle_trust", {"trust": ["ssh-ed25519 AAAA"]})
    assert bad_key["code"] == "VALIDATION" and bad_key["problems"][0]["field"] == "trust[0]", bad_key
    unsigned = await tool_error(source, "bundle_sign", {"id": made["id"], "secret_key": "nope"})
    assert unsigned["problems"][0]["field"] == "secret_key", unsigned

    portable = made["data"]
    for bad in ({**portable, "content_hash": "sha256:00"}, {**portable, "schema_version": 7}, "{\"facts\": [",
                "[" * 10_000):
        error = await tool_error(other, "bundle_import", {"bundle": bad})
        assert error["code"] == "VALIDATION", error
    first = await ok(other, "bundle_import", {"bundle": portable, "target_branch": "main"})
    again = await ok(other, "bundle_import", {"bundle": json.dumps(portable)})
    assert (first["facts_added"], again["facts_added"], again["facts_skipped"]) == (1, 0, 1), (first, again)

    replay = (await ok(source, "task_replay", {"task_id": "fix-oauth"}))["replay"]
    types = [entry["type"] for entry in replay["timeline"]]
    assert "handoff.created" in types and "curation.bundle_created" in types, types
    compared = await ok(source, "task_compare", {"task_a": "fix-oauth", "task_b": "fix-oauth"})
    assert compared["agents"]["both"] == ["claude"], compared
    await ok(source, "bundle_delete", {"id": made["id"]})


async def spawn_options(stack: AsyncExitStack, binary: str, db: str) -> None:
    """claim_and_spawn's per-call additional_instructions and timeout_seconds."""
    server = await connect(stack, binary, db, "--spawn", "cat; sleep 30")
    await ok(server, "handoff_create", {"task_id": "slow", "goal": "Take your time", "to_agent": "slowpoke"})
    for bad in (0, 86_401):
        error = await tool_error(server, "handoff_claim_and_spawn", {"agent": "slowpoke", "timeout_seconds": bad})
        assert error["code"] == "VALIDATION", error
    ran = await ok(
        server,
        "handoff_claim_and_spawn",
        {"agent": "slowpoke", "timeout_seconds": 1, "additional_instructions": "Answer in French."},
    )
    assert ran["timed_out"] is True and ran["succeeded"] is False, ran
    assert ran["handoff"]["status"] == "pending"
    assert "## Additional Instructions\n\nAnswer in French." in ran["stdout"]


# Lines the official clients never send, but a broken or hostile one might: each is a request
# (id "probe-N") that the server must answer with a JSON-RPC error, then keep serving.
HOSTILE_LINES = [
    b'{"jsonrpc":"2.0","id":"probe-1","method":"tools/call","params":{"name":"\xff"}}',
    b'{"jsonrpc":"2.0","id":"probe-2","method":"tools/call","params":{"name":"handoff_list","arguments":{"limit":1e400}}}',
    b'{"jsonrpc":"2.0","id":"probe-3","method":"tools/call","params":["handoff_list"]}',
    b'{"jsonrpc":"2.0","id":"probe-4","method":"tools/call","params":{"name":"handoff_list","arguments":{"x":'
    + b"[" * 200
    + b"]" * 200
    + b"}}}",
    b"not json at all",
]


RELAY = r"""
import json, subprocess, sys, threading
lines, binary, db, answers = sys.argv[1:5]
server = subprocess.Popen([binary, "mcp", "--db", db, "--tools", "all"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
with open(lines, "rb") as f:
    server.stdin.write(f.read())
server.stdin.flush()

def pump():
    for line in sys.stdin.buffer:
        server.stdin.write(line)
        server.stdin.flush()
    server.stdin.close()

threading.Thread(target=pump, daemon=True).start()
with open(answers, "ab") as kept:
    for line in server.stdout:
        try:
            message = json.loads(line)
        except ValueError:
            message = {}
        if "id" in message and (message["id"] is None or str(message["id"]).startswith("probe-")):
            kept.write(line)
            kept.flush()
        else:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
server.wait()
"""


async def hostile_lines(stack: AsyncExitStack, binary: str, db: str) -> None:
    """The official client still works on a server that was sent malformed lines first.

    A relay (RELAY) writes the hostile lines to the server's stdin ahead of the client's own
    messages, and keeps the server's answers to them (the client would not know their ids) in a
    file; the client then initialises and works as usual on the same server.
    """
    folder = os.path.dirname(db)
    lines = os.path.join(folder, "hostile.jsonl")
    answers = os.path.join(folder, "answers.jsonl")
    with open(lines, "wb") as f:
        f.write(b"\n".join(HOSTILE_LINES) + b"\n")
    params = StdioServerParameters(command=sys.executable, args=["-c", RELAY, lines, binary, db, answers])
    read, write = await stack.enter_async_context(stdio_client(params))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    created = await ok(session, "handoff_create", {"task_id": "after-bad-lines", "goal": "still served"})
    claim = await ok(session, "handoff_claim", {"handoff_id": created["handoff"]["id"], "agent": "a"})
    done = await ok(
        session,
        "handoff_complete",
        {"handoff_id": claim["handoff_id"], "token": claim["token"], "claim_secret": claim["claim_secret"]},
    )
    assert done["handoff"]["status"] == "completed"
    with open(answers, encoding="utf-8") as f:
        got = [json.loads(line) for line in f if line.strip()]
    by_id = {answer["id"]: answer["error"]["code"] for answer in got}
    assert by_id == {
        "probe-1": -32700,
        "probe-2": -32700,
        "probe-3": -32602,
        "probe-4": -32600,
        None: -32700,
    }, got


async def one_description(stack: AsyncExitStack, binary: str, db: str) -> None:
    """Tool schemas are the core's argument schemas; a bad create reports the core's problems."""
    server = await connect(stack, binary, db)
    listed = await server.list_tools()
    schemas = {tool.name: tool.input_schema for tool in listed.tools}
    with open(FIXTURE, encoding="utf-8") as f:
        fixture = json.load(f)
    error = await tool_error(server, "handoff_create", fixture["input"])
    assert error["code"] == "VALIDATION", error
    assert [[p["field"], p["rule"]] for p in error["problems"]] == fixture["problems"], error
    # The new spelling of a claim, as the schemas give it.
    created = await ok(server, "handoff_create", {"task_id": "t-new", "goal": "g"})
    claim = await ok(server, "handoff_claim", {"id": created["handoff"]["id"], "agent": "a"})
    reference = {"handoff_id": claim["handoff_id"], "token": claim["token"], "secret": claim["claim_secret"]}
    assert schemas["handoff_heartbeat"]["required"] == ["claim"]
    await ok(server, "handoff_heartbeat", {"claim": reference})
    done = await ok(server, "handoff_complete", {"claim": reference, "outcome": "done"})
    assert done["handoff"]["status"] == "completed"
    forged = await tool_error(server, "handoff_complete", {"claim": {**reference, "secret": "hcs_short"}})
    assert [p["field"] for p in forged["problems"]] == ["claim.secret"], forged
    # A failure: retried while attempts remain, with the error in the log.
    retried = await ok(server, "handoff_create", {"task_id": "t-fail", "goal": "g"})
    claim = await ok(server, "handoff_claim", {"id": retried["handoff"]["id"], "agent": "a"})
    reference = {"handoff_id": claim["handoff_id"], "token": claim["token"], "secret": claim["claim_secret"]}
    failed = await ok(server, "handoff_fail", {"claim": reference, "error": "the API timed out"})
    assert (failed["handoff"]["status"], failed["handoff"]["attempts"]) == ("pending", 1), failed
    empty = await tool_error(server, "handoff_fail", {"claim": reference, "error": ""})
    assert empty["code"] == "VALIDATION", empty


async def waiting_on_files(stack: AsyncExitStack, binary: str, db: str) -> None:
    """A files: store, and a claim that waits for work while its server answers other calls."""
    url = "files:" + os.path.join(os.path.dirname(db), "store")
    worker = await connect(stack, binary, url)
    creator = await connect(stack, binary, url)
    waiting = asyncio.ensure_future(
        ok(worker, "handoff_claim_next", {"agent": "worker", "wait_seconds": 20})
    )
    await asyncio.sleep(0.3)
    # The waiting call holds up neither its own session nor another.
    await ok(worker, "handoff_list", {})
    assert not waiting.done()
    created = await ok(creator, "handoff_create", {"task_id": "late", "goal": "arrives while it waits"})
    claim = await asyncio.wait_for(waiting, timeout=15)
    assert claim["handoff_id"] == created["handoff"]["id"], claim
    assert os.path.isdir(os.path.join(os.path.dirname(db), "store", "handoffs"))


async def capabilities(stack: AsyncExitStack, binary: str, db: str) -> None:
    """What each store can do, as handoff_capabilities reports it: an SQLite file and a folder
    of files both back up, and neither is shared by machines or wakes a waiting claim."""
    sqlite = await ok(await connect(stack, binary, db), "handoff_capabilities", {})
    assert sqlite == {
        "durable": True, "shared_by_processes": True, "shared_by_machines": False,
        "backup": True, "wakes_waiters": False,
    }, sqlite
    url = "files:" + os.path.join(os.path.dirname(db), "store")
    files = await ok(await connect(stack, binary, url), "handoff_capabilities", {})
    assert files == sqlite, files
    session = await connect(stack, binary, db)
    result = await session.call_tool("handoff_capabilities", {})
    assert "backup" in result.content[0].text and "yes" in result.content[0].text
    listed = await session.list_tools()
    tool = next(t for t in listed.tools if t.name == "handoff_capabilities")
    assert tool.annotations is not None and tool.annotations.read_only_hint, tool
    bad = await tool_error(session, "handoff_capabilities", {"durable": True})
    assert bad["code"] == "VALIDATION", bad


async def tool_sets(stack: AsyncExitStack, binary: str, db: str) -> None:
    """The default set fits a coding agent's context; a client picks other sets by name."""
    default = await connect(stack, binary, db, "--tools", "handoffs")
    listed = (await default.list_tools()).tools
    names = {tool.name for tool in listed}
    assert len(names) <= 15, names
    assert {"handoff_create", "handoff_claim", "handoff_complete", "handoff_claim_and_spawn"} <= names, names
    dumped = [tool.model_dump(by_alias=True, exclude_none=True) for tool in listed]
    size = len(json.dumps(dumped, separators=(",", ":"), ensure_ascii=False))
    assert size <= 16 * 1024, size
    created = await ok(default, "handoff_create", {"task_id": "t-sets", "goal": "g"})
    assert created["handoff"]["status"] == "pending"
    with_tasks = await connect(stack, binary, db, "--tools", "tasks")
    names = {tool.name for tool in (await with_tasks.list_tools()).tools}
    assert "task_create" in names and "handoff_create" not in names, names


async def main(binary: str) -> None:
    db = os.path.join(tempfile.mkdtemp(prefix="handoff-mcp-"), "handoff.db")
    async with AsyncExitStack() as stack:
        claude = await connect(stack, binary, db)
        gemini = await connect(stack, binary, db)
        codex = await connect(stack, binary, db)

        # The tools, with schemas generated from the argument types.
        listed = await claude.list_tools()
        names = {tool.name for tool in listed.tools}
        assert names == TOOLS, names
        create_schema = next(t for t in listed.tools if t.name == "handoff_create").input_schema
        assert {"task_id", "goal", "completed", "pending", "decisions"} <= set(create_schema["properties"])
        # The goal may be left out: the task's is taken (seed 001's memory_handoff_create has none).
        assert set(create_schema["required"]) == {"task_id"}

        # Claude hands over, to whoever takes it.
        created = await ok(
            claude,
            "handoff_create",
            {
                "task_id": "login-bug",
                "goal": "Fix the login bug",
                "from_agent": "claude",
                "reason": "context_limit_85",
                "context_pct": 85,
                "completed": ["reproduced it with a failing test"],
                "pending": ["fix the session check", "run the suite"],
                "decisions": ["keep bcrypt"],
                "metadata": {"ticket": 42},
            },
        )
        handoff_id = created["handoff"]["id"]
        assert created["handoff"]["status"] == "pending"
        assert created["handoff"]["metadata"] == {"ticket": 42}

        listed_pending = await ok(codex, "handoff_list", {"status": "pending"})
        assert [h["id"] for h in listed_pending["handoffs"]] == [handoff_id]

        # Two agents race for it through two servers: exactly one wins.
        results = await asyncio.gather(
            gemini.call_tool("handoff_claim", {"handoff_id": handoff_id, "agent": "gemini"}),
            codex.call_tool("handoff_claim", {"handoff_id": handoff_id, "agent": "codex"}),
        )
        winners = [r for r in results if not r.is_error]
        losers = [r for r in results if r.is_error]
        assert len(winners) == 1 and len(losers) == 1, results
        assert losers[0].structured_content["error"]["code"] == "ALREADY_CLAIMED"
        claim = winners[0].structured_content
        winner_session, winner = (gemini, "gemini") if results[0] is winners[0] else (codex, "codex")
        assert claim["handoff"]["claimed_by"] == winner
        assert isinstance(claim["token"], int)
        assert claim["claim_secret"].startswith("hcs_"), claim
        secret = claim["claim_secret"]
        assert "## Current Goal" in claim["markdown"] and "Fix the login bug" in claim["markdown"]
        token = claim["token"]

        # The DNA, as Markdown.
        got = await ok(claude, "handoff_get", {"handoff_id": handoff_id})
        assert got["markdown"].startswith("# Handoff")
        assert "- [ ] fix the session check" in got["markdown"]
        assert "keep bcrypt" in got["markdown"]

        # Errors are tool errors, and the server keeps serving after each.
        lost = await tool_error(
            claude, "handoff_heartbeat", {"handoff_id": handoff_id, "token": token + 7, "claim_secret": secret}
        )
        assert lost["code"] == "LEASE_LOST"
        # The token is public; without the claim's secret it settles nothing.
        forged = await tool_error(
            claude,
            "handoff_complete",
            {"handoff_id": handoff_id, "token": token, "claim_secret": "hcs_" + "0" * 64, "outcome": "forged"},
        )
        assert forged["code"] == "LEASE_LOST"
        no_secret = await tool_error(claude, "handoff_complete", {"handoff_id": handoff_id, "token": token})
        assert no_secret["code"] == "VALIDATION"
        for tool in ("handoff_get", "handoff_list", "handoff_events"):
            shown = await everything(claude, tool, {"handoff_id": handoff_id} if tool == "handoff_get" else {})
            assert secret not in shown, f"{tool} shows the claim secret"
        missing = await tool_error(claude, "handoff_get", {"handoff_id": "no-such-handoff"})
        assert missing["code"] == "NOT_FOUND"
        bad = await tool_error(claude, "handoff_create", {"task_id": "t"})
        assert bad["code"] == "VALIDATION" and "goal" in bad["message"]
        bad = await tool_error(claude, "handoff_create", {"task_id": "t", "goal": "g", "context_pct": 300})
        assert bad["code"] == "VALIDATION"
        bad = await tool_error(claude, "handoff_create", {"task_id": "t", "goal": " ", "from_agent": "no spaces"})
        assert bad["code"] == "VALIDATION" and len(bad["problems"]) >= 1
        both = await tool_error(claude, "handoff_claim", {"agent": "x", "handoff_id": handoff_id, "task_id": "t"})
        assert both["code"] == "VALIDATION"
        no_spawn = await tool_error(claude, "handoff_claim_and_spawn", {"agent": "x"})
        assert no_spawn["code"] == "VALIDATION" and "--spawn" in no_spawn["message"]
        try:
            await claude.call_tool("handoff_unknown", {})
            raise AssertionError("an unknown tool must be refused")
        except MCPError:
            pass
        await ok(claude, "handoff_list", {})

        # The winner works, heartbeats and completes; the token then no longer works.
        beat = await ok(
            winner_session, "handoff_heartbeat", {"handoff_id": handoff_id, "token": token, "claim_secret": secret}
        )
        assert beat["handoff"]["status"] == "claimed"
        done = await ok(
            winner_session,
            "handoff_complete",
            {"handoff_id": handoff_id, "token": token, "claim_secret": secret, "outcome": "fixed in a1b2c3"},
        )
        assert done["handoff"]["status"] == "completed"
        assert done["handoff"]["outcome"] == "fixed in a1b2c3"
        again = await tool_error(
            winner_session, "handoff_release", {"handoff_id": handoff_id, "token": token, "claim_secret": secret}
        )
        assert again["code"] in {"LEASE_LOST", "INVALID_TRANSITION"}

        # The chain: claude handed the task to the winner.
        chain = await ok(codex, "handoff_chain", {"task_id": "login-bug"})
        assert chain["path"] == ["claude", winner], chain
        assert [hop["handoff_id"] for hop in chain["hops"]] == [handoff_id]

        # Claim-and-spawn: a server configured with a successor command.
        spawner = await connect(stack, binary, db, "--spawn", "wc -l")
        second = await ok(
            claude,
            "handoff_create",
            {"task_id": "docs", "goal": "Write the docs", "from_agent": "claude", "to_agent": "local"},
        )
        ran = await ok(spawner, "handoff_claim_and_spawn", {"agent": "local", "task_id": "docs"})
        assert ran["succeeded"] is True and ran["exit_code"] == 0, ran
        assert ran["handoff"]["id"] == second["handoff"]["id"]
        assert ran["handoff"]["status"] == "completed"
        # `wc -l` counted the lines of the DNA it read on stdin: that count is the outcome.
        assert int(ran["handoff"]["outcome"]) > 5, ran["handoff"]["outcome"]
        nothing = await ok(spawner, "handoff_claim_and_spawn", {"agent": "local"})
        assert nothing == {"claimed": False}

        spawn_schema = next(t for t in listed.tools if t.name == "handoff_claim_and_spawn").input_schema
        assert {"additional_instructions", "timeout_seconds"} <= set(spawn_schema["properties"])

    for part in (
        tool_sets,
        one_description,
        redaction,
        seed_and_policy,
        new_tools,
        tasks_and_memory,
        protocol_loop,
        curation,
        successor_packet,
        bundles_and_replay,
        spawn_options,
        hostile_lines,
        waiting_on_files,
        capabilities,
        seed_001_scenario,
    ):
        part_db = os.path.join(tempfile.mkdtemp(prefix="handoff-mcp-"), "handoff.db")
        async with AsyncExitStack() as stack:
            await part(stack, binary, part_db)

    print("mcp e2e: ok")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
