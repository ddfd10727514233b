"""End-to-end test of `handoff mcp`, driven by the official MCP Python SDK (the `mcp` package).

Run: python handoff-cli/tests/mcp_e2e.py path/to/handoff   (`make test-cli` does this)

Several servers share one store file, as several coding agents would: one per client.
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
from mcp.shared.exceptions import MCPError

TOOLS = {
    "handoff_create",
    "handoff_list",
    "handoff_get",
    "handoff_claim",
    "handoff_heartbeat",
    "handoff_release",
    "handoff_complete",
    "handoff_chain",
    "handoff_claim_and_spawn",
}


async def connect(stack: AsyncExitStack, binary: str, db: str, *extra: str) -> ClientSession:
    params = StdioServerParameters(command=binary, args=["mcp", "--db", db, *extra])
    read, write = await stack.enter_async_context(stdio_client(params))
    session = await stack.enter_async_context(ClientSession(read, write))
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
        assert set(create_schema["required"]) == {"task_id", "goal"}

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
        assert "## Current Goal" in claim["markdown"] and "Fix the login bug" in claim["markdown"]
        token = claim["token"]

        # The DNA, as Markdown.
        got = await ok(claude, "handoff_get", {"handoff_id": handoff_id})
        assert got["markdown"].startswith("# Handoff")
        assert "- [ ] fix the session check" in got["markdown"]
        assert "keep bcrypt" in got["markdown"]

        # Errors are tool errors, and the server keeps serving after each.
        lost = await tool_error(claude, "handoff_heartbeat", {"handoff_id": handoff_id, "token": token + 7})
        assert lost["code"] == "LEASE_LOST"
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
        beat = await ok(winner_session, "handoff_heartbeat", {"handoff_id": handoff_id, "token": token})
        assert beat["handoff"]["status"] == "claimed"
        done = await ok(
            winner_session,
            "handoff_complete",
            {"handoff_id": handoff_id, "token": token, "outcome": "fixed in a1b2c3"},
        )
        assert done["handoff"]["status"] == "completed"
        assert done["handoff"]["outcome"] == "fixed in a1b2c3"
        again = await tool_error(winner_session, "handoff_release", {"handoff_id": handoff_id, "token": token})
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

    print("mcp e2e: ok")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
