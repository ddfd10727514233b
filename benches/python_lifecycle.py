"""The handoff lifecycle from Python beside the same lifecycle from Rust, and beside the nearest
peers, in one run on the same machine and the same SQLite settings.

    make bench-python          # sets up target/bench-venv and runs this
    # or by hand, in a venv with `pip install ./handoff-py langgraph langgraph-checkpoint-sqlite openai-agents`:
    cargo build --release -p handoff-benches --bin lifecycle_rust
    python benches/python_lifecycle.py [--rounds 7] [--json out.json]

What is measured (each a median over rounds; the rounds interleave the contenders so that
drift in the disk's fsync time hits all of them alike):

- lifecycle = create → claim → complete of a ~1.5 KB record: 3 atomic commits, each writing
  the record and its event. From Rust (`benches/src/bin/lifecycle_rust.rs`, the core's `Store`)
  and from Python (`handoff_core`), on the memory store and on SQLite with synchronous FULL and
  NORMAL (WAL in both).
- Python's own sqlite3 doing a comparable raw lifecycle (3 commits, no validation, no state
  machine): what durability costs from Python without handoff-core.
- LangGraph's `SqliteSaver.put` (langgraph-checkpoint-sqlite), one commit per call, with a
  checkpoint carrying a payload of the same size, on a WAL database with the same synchronous
  setting.
- The OpenAI Agents SDK: `Runner.run` of agent A handing off to agent B, both driven by a scripted
  model (no network, tracing off), against B answering alone; the difference is the in-process
  cost of one handoff. The SDK persists nothing of it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

import handoff_core as hc

ROOT = Path(__file__).resolve().parent.parent


def line(topic: str, i: int) -> str:
    return f"{topic} {i}: checked the module boundaries and wrote down what the next agent needs"


# The same record as `record()` in benches/src/bin/lifecycle_rust.rs.
RECORD: dict[str, Any] = dict(
    goal="Migrate the billing service from the legacy ORM to sqlx",
    from_agent="claude",
    reason="context_limit_85",
    context_pct=85,
    progress="Half of the repositories are ported; invoices and refunds remain. Tests pass.",
    completed=[line("ported", i) for i in range(4)],
    pending=[line("port", i) for i in range(4)],
    decisions=[line("decided", i) for i in range(3)],
    assumptions=["the schema is frozen until the release"],
    warnings=["refunds use a different rounding mode"],
    files=["src/billing/invoices.rs", "src/billing/refunds.rs", "src/db.rs"],
    instructions="Port invoices first; run the billing tests after each repository.",
)


def open_store(mode: str, tmp: Path) -> hc.Store:
    if mode == "memory":
        return hc.Store.memory()
    path = tmp / f"hc-{mode}-{time.monotonic_ns()}.db"
    return hc.open(path, synchronous=mode)


def python_lifecycle(mode: str, iterations: int, tmp: Path) -> float:
    """Microseconds per create → claim → complete from Python."""
    with open_store(mode, tmp) as store:
        create, claim, complete = store.create, store.claim, store.complete
        for n in range(iterations // 10):  # warm-up, as the Rust runner does
            complete(claim(create(f"w-{n:07}", **RECORD).id, "gemini", 300), "done")
        started = time.perf_counter()
        for n in range(iterations):
            h = create(f"task-{n:07}", **RECORD)
            c = claim(h.id, "gemini", 300)
            complete(c, "done")
        return (time.perf_counter() - started) * 1e6 / iterations


def rust_lifecycle(binary: Path, mode: str, iterations: int) -> float:
    out = subprocess.run([str(binary), mode, str(iterations)], check=True, capture_output=True, text=True)
    return float(json.loads(out.stdout)["per_op_us"])


def sqlite3_lifecycle(mode: str, iterations: int, tmp: Path) -> float:
    """Python's sqlite3 writing a record plus an event in each of 3 transactions."""
    body = json.dumps({"task_id": "t", **RECORD})
    conn = sqlite3.connect(tmp / f"raw-{mode}-{time.monotonic_ns()}.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={mode.upper()}")
    conn.execute("CREATE TABLE handoffs (id TEXT PRIMARY KEY, task_id TEXT, status TEXT, "
                 "claimed_by TEXT, claim_token INTEGER, outcome TEXT, body TEXT)")
    conn.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY, handoff_id TEXT, kind TEXT, detail TEXT)")

    def one(n: int) -> None:
        hid = f"h-{n:09}"
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO handoffs VALUES (?, ?, 'pending', NULL, NULL, NULL, ?)", (hid, f"t-{n}", body))
        conn.execute("INSERT INTO events (handoff_id, kind, detail) VALUES (?, 'created', ?)", (hid, body))
        conn.execute("COMMIT")
        for status, detail in (("claimed", '{"agent":"gemini","token":1}'), ("completed", '{"outcome":"done"}')):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("SELECT status, body FROM handoffs WHERE id = ?", (hid,)).fetchone()
            conn.execute("UPDATE handoffs SET status = ?, claimed_by = 'gemini', claim_token = 1 WHERE id = ?",
                         (status, hid))
            conn.execute("INSERT INTO events (handoff_id, kind, detail) VALUES (?, ?, ?)", (hid, status, detail))
            conn.execute("COMMIT")

    for n in range(iterations // 10):
        one(-n - 1)
    started = time.perf_counter()
    for n in range(iterations):
        one(n)
    elapsed = time.perf_counter() - started
    conn.close()
    return elapsed * 1e6 / iterations


def langgraph_put(mode: str, iterations: int, tmp: Path) -> Optional[float]:
    """Microseconds per `SqliteSaver.put` (one commit each)."""
    try:
        from langgraph.checkpoint.base import empty_checkpoint
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        return None
    conn = sqlite3.connect(tmp / f"lg-{mode}-{time.monotonic_ns()}.db", check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()  # sets WAL
    conn.execute(f"PRAGMA synchronous={mode.upper()}")
    config: Any = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}

    def put(i: int) -> None:
        nonlocal config
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"handoff": {"task_id": f"task-{i}", **RECORD}}
        checkpoint["channel_versions"] = {"handoff": i + 1}
        config = saver.put(config, checkpoint, {"source": "loop", "step": i, "parents": {}}, {"handoff": i + 1})

    for i in range(iterations // 10):
        put(i)
    started = time.perf_counter()
    for i in range(iterations):
        put(iterations + i)
    elapsed = time.perf_counter() - started
    conn.close()
    return elapsed * 1e6 / iterations


def agents_handoff(iterations: int) -> Optional[tuple[float, float]]:
    """Microseconds per `Runner.run` with one handoff A → B, and with B answering alone."""
    try:
        from agents import Agent, Runner, set_tracing_disabled
        from agents.items import ModelResponse
        from agents.models.interface import Model
        from agents.usage import Usage
        from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
    except ImportError:
        return None
    set_tracing_disabled(True)

    class ScriptedModel(Model):
        """Hands off when it can and is told to; otherwise answers. No network."""

        def __init__(self, hand_off: bool) -> None:
            self.hand_off = hand_off
            self.calls = 0

        async def get_response(self, system_instructions: Any, input: Any, model_settings: Any, tools: Any,
                               output_schema: Any, handoffs: Any, tracing: Any, **_: Any) -> Any:
            self.calls += 1
            if self.hand_off and handoffs:
                call = ResponseFunctionToolCall(
                    id=f"fc_{self.calls}", call_id=f"call_{self.calls}", name=handoffs[0].tool_name,
                    arguments="{}", type="function_call", status="completed",
                )
                return ModelResponse(output=[call], usage=Usage(), response_id=None)
            text = ResponseOutputText(text="invoices ported", type="output_text", annotations=[])
            message = ResponseOutputMessage(id=f"msg_{self.calls}", content=[text], role="assistant",
                                            status="completed", type="message")
            return ModelResponse(output=[message], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    b = Agent(name="agent_b", instructions="Finish the migration.", model=ScriptedModel(False))
    a = Agent(name="agent_a", instructions="Route the task.", model=ScriptedModel(True), handoffs=[b])

    async def timed(agent: Any, expect: str) -> float:
        for _ in range(iterations // 10):
            await Runner.run(agent, "Migrate the billing service")
        started = time.perf_counter()
        for _ in range(iterations):
            result = await Runner.run(agent, "Migrate the billing service")
        elapsed = time.perf_counter() - started
        assert result.last_agent.name == expect, result.last_agent.name
        return elapsed * 1e6 / iterations

    async def both() -> tuple[float, float]:
        return await timed(a, "agent_b"), await timed(b, "agent_b")

    return asyncio.run(both())


def median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description="handoff lifecycle: Python vs Rust vs peers")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--iterations", type=int, default=600, help="lifecycles per SQLite measurement")
    parser.add_argument("--memory-iterations", type=int, default=20000)
    parser.add_argument("--agent-runs", type=int, default=300)
    parser.add_argument("--rust-bin", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()

    binary = args.rust_bin
    if binary is None:
        subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "handoff-benches", "--bin", "lifecycle_rust"],
                       check=True, cwd=ROOT)
        binary = ROOT / "target" / "release" / "lifecycle_rust"

    results: dict[str, list[float]] = {}

    def record(name: str, value: Optional[float]) -> None:
        if value is not None:
            results.setdefault(name, []).append(value)

    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMPDIR")) as tmp_name:
        tmp = Path(tmp_name)
        for r in range(args.rounds):
            for mode in ("memory", "full", "normal"):
                n = args.memory_iterations if mode == "memory" else args.iterations
                record(f"rust {mode}", rust_lifecycle(binary, mode, n))
                record(f"python {mode}", python_lifecycle(mode, n, tmp))
                if mode != "memory":
                    record(f"sqlite3 {mode}", sqlite3_lifecycle(mode, n, tmp))
                    record(f"langgraph put {mode}", langgraph_put(mode, n, tmp))
            agents = agents_handoff(args.agent_runs)
            if agents is not None:
                record("agents run with handoff", agents[0])
                record("agents run without handoff", agents[1])
                record("agents handoff overhead", agents[0] - agents[1])
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)

    m = {name: median(values) for name, values in results.items()}
    print(f"\nmedian of {args.rounds} rounds; µs per operation (lower is better)\n")
    print("| measurement | µs | commits/s |")
    print("|---|---:|---:|")
    for name, value in m.items():
        commits = 3 if name.split()[0] in ("rust", "python", "sqlite3") and "memory" not in name else (
            1 if name.startswith("langgraph") else 0)
        rate = f"{commits * 1e6 / value:,.0f}" if commits else ""
        print(f"| {name} | {value:,.1f} | {rate} |")

    ratios: dict[str, float] = {}
    for mode in ("memory", "full", "normal"):
        ratios[f"python/rust throughput, {mode}"] = m[f"rust {mode}"] / m[f"python {mode}"]
    for mode in ("full", "normal"):
        if f"langgraph put {mode}" in m:
            ratios[f"python commits/s ÷ SqliteSaver.put commits/s, {mode}"] = (
                (3e6 / m[f"python {mode}"]) / (1e6 / m[f"langgraph put {mode}"]))
    if "agents handoff overhead" in m:
        ratios["python FULL lifecycle ÷ Agents SDK handoff overhead"] = m["python full"] / m["agents handoff overhead"]
        ratios["python FULL lifecycle ÷ Agents SDK run with handoff"] = m["python full"] / m["agents run with handoff"]
    targets = {
        "python/rust throughput, full": (">=", 0.9),
        "python/rust throughput, normal": (">=", 0.8),
        "python commits/s ÷ SqliteSaver.put commits/s, full": (">=", 1.2),
        "python commits/s ÷ SqliteSaver.put commits/s, normal": (">=", 1.2),
        "python FULL lifecycle ÷ Agents SDK handoff overhead": ("<", 0.5),
    }
    print("\n| ratio | value | target | met |")
    print("|---|---:|---|---|")
    for name, value in ratios.items():
        target = targets.get(name)
        if target is None:
            print(f"| {name} | {value:.2f} | | |")
            continue
        op, bound = target
        met = value >= bound if op == ">=" else value < bound
        print(f"| {name} | {value:.2f} | {op} {bound} | {'yes' if met else 'NO'} |")

    if args.json:
        args.json.write_text(json.dumps({"medians_us": m, "ratios": ratios, "rounds": results}, indent=2))


if __name__ == "__main__":
    main()
