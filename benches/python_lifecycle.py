"""The handoff lifecycle from Python beside the same lifecycle from Rust, and beside the nearest
peers, in one run on the same machine and the same SQLite settings.

    make bench-python          # sets up target/bench-venv and runs this
    # or by hand, in a venv with `pip install ./handoff-py langgraph langgraph-checkpoint-sqlite openai-agents`:
    cargo build --release -p handoff-benches --bin lifecycle_rust
    python benches/python_lifecycle.py --rust-bin target/release/lifecycle_rust [--json out.json]

How: for each setting, every contender keeps one store open and runs short blocks of operations
(40 lifecycles or puts on SQLite, 1,000 in memory), the contenders taking turns block by block
with the first one rotating, 60 blocks each; a figure is the median block. Interleaving short
blocks makes the disk's fsync noise (other work on the machine) fall on every contender alike,
which separate long runs do not. The Rust side runs in its own process
(`lifecycle_rust <mode> serve`), driven block by block over a pipe.

What is measured:

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


# The same record as `record()` in benches/src/lib.rs (the Rust side, `lifecycle_rust`, uses it).
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


class Contender:
    """Keeps its store open across blocks; `run(n)` returns microseconds per operation."""

    def run(self, n: int) -> float:
        raise NotImplementedError

    def close(self) -> None:
        pass


class PythonLifecycle(Contender):
    """create → claim → complete through handoff_core."""

    def __init__(self, mode: str, tmp: Path) -> None:
        self.store = hc.Store.memory() if mode == "memory" else hc.open(tmp / f"py-{mode}.db", synchronous=mode)
        self.done = 0

    def run(self, n: int) -> float:
        create, claim, complete = self.store.create, self.store.claim, self.store.complete
        start = self.done
        self.done += n
        started = time.perf_counter()
        for i in range(start, start + n):
            h = create(f"task-{i:07}", **RECORD)
            c = claim(h.id, "gemini", 300)
            complete(c, "done")
        return (time.perf_counter() - started) * 1e6 / n

    def close(self) -> None:
        self.store.close()


class RustLifecycle(Contender):
    """The same lifecycle through the core's `Store`, in `lifecycle_rust <mode> serve`."""

    def __init__(self, binary: Path, mode: str, tmp: Path) -> None:
        env = {**os.environ, "BENCH_TMPDIR": str(tmp)}
        self.proc = subprocess.Popen([str(binary), mode, "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)

    def run(self, n: int) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{n}\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


class RawSqlite3Lifecycle(Contender):
    """Python's sqlite3 writing a record plus an event in each of 3 transactions: what the
    durability of 3 commits costs from Python without handoff-core."""

    def __init__(self, mode: str, tmp: Path) -> None:
        self.body = json.dumps({"task_id": "t", **RECORD})
        self.conn = sqlite3.connect(tmp / f"raw-{mode}.db", isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(f"PRAGMA synchronous={mode.upper()}")
        self.conn.execute("CREATE TABLE handoffs (id TEXT PRIMARY KEY, task_id TEXT, status TEXT, "
                          "claimed_by TEXT, claim_token INTEGER, outcome TEXT, body TEXT)")
        self.conn.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY, handoff_id TEXT, kind TEXT, detail TEXT)")
        self.done = 0

    def one(self, n: int) -> None:
        conn, hid = self.conn, f"h-{n:09}"
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO handoffs VALUES (?, ?, 'pending', NULL, NULL, NULL, ?)", (hid, f"t-{n}", self.body))
        conn.execute("INSERT INTO events (handoff_id, kind, detail) VALUES (?, 'created', ?)", (hid, self.body))
        conn.execute("COMMIT")
        for status, detail in (("claimed", '{"agent":"gemini","token":1}'), ("completed", '{"outcome":"done"}')):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("SELECT status, body FROM handoffs WHERE id = ?", (hid,)).fetchone()
            conn.execute("UPDATE handoffs SET status = ?, claimed_by = 'gemini', claim_token = 1 WHERE id = ?",
                         (status, hid))
            conn.execute("INSERT INTO events (handoff_id, kind, detail) VALUES (?, ?, ?)", (hid, status, detail))
            conn.execute("COMMIT")

    def run(self, n: int) -> float:
        start = self.done
        self.done += n
        started = time.perf_counter()
        for i in range(start, start + n):
            self.one(i)
        return (time.perf_counter() - started) * 1e6 / n

    def close(self) -> None:
        self.conn.close()


class LangGraphPut(Contender):
    """`SqliteSaver.put`, one commit each, carrying a payload the size of our record."""

    def __init__(self, mode: str, tmp: Path) -> None:
        from langgraph.checkpoint.base import empty_checkpoint
        from langgraph.checkpoint.sqlite import SqliteSaver

        self.empty_checkpoint = empty_checkpoint
        self.conn = sqlite3.connect(tmp / f"lg-{mode}.db", check_same_thread=False)
        self.saver = SqliteSaver(self.conn)
        self.saver.setup()  # sets WAL
        self.conn.execute(f"PRAGMA synchronous={mode.upper()}")
        self.config: Any = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}
        self.done = 0

    def run(self, n: int) -> float:
        start = self.done
        self.done += n
        started = time.perf_counter()
        for i in range(start, start + n):
            checkpoint = self.empty_checkpoint()
            checkpoint["channel_values"] = {"handoff": {"task_id": f"task-{i}", **RECORD}}
            checkpoint["channel_versions"] = {"handoff": i + 1}
            self.config = self.saver.put(self.config, checkpoint, {"source": "loop", "step": i, "parents": {}},
                                         {"handoff": i + 1})
        return (time.perf_counter() - started) * 1e6 / n

    def close(self) -> None:
        self.conn.close()


def have_langgraph() -> bool:
    try:
        import langgraph.checkpoint.sqlite  # noqa: F401
    except ImportError:
        return False
    return True


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
    parser.add_argument("--rounds", type=int, default=60, help="interleaved blocks per contender")
    parser.add_argument("--block", type=int, default=40, help="operations per block on SQLite")
    parser.add_argument("--memory-block", type=int, default=1000, help="lifecycles per block in memory")
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
        for mode in ("memory", "full", "normal"):
            contenders: list[tuple[str, Contender]] = [
                (f"rust {mode}", RustLifecycle(binary, mode, tmp)),
                (f"python {mode}", PythonLifecycle(mode, tmp)),
            ]
            if mode != "memory":
                contenders.append((f"sqlite3 {mode}", RawSqlite3Lifecycle(mode, tmp)))
                if have_langgraph():
                    contenders.append((f"langgraph put {mode}", LangGraphPut(mode, tmp)))
            block = args.memory_block if mode == "memory" else args.block
            for _, contender in contenders:  # warm-up block, not recorded
                contender.run(block)
            # Short blocks, interleaved, with the first contender rotating: disk noise from the
            # rest of the machine falls on every contender alike.
            for r in range(args.rounds):
                shift = r % len(contenders)
                for name, contender in contenders[shift:] + contenders[:shift]:
                    record(name, contender.run(block))
            for _, contender in contenders:
                contender.close()
            print(f"{mode} done", file=sys.stderr)
        for r in range(max(1, args.rounds // 10)):
            agents = agents_handoff(args.agent_runs)
            if agents is not None:
                record("agents run with handoff", agents[0])
                record("agents run without handoff", agents[1])
                record("agents handoff overhead", agents[0] - agents[1])

    m = {name: median(values) for name, values in results.items()}
    best = {name: min(values) for name, values in results.items()}
    print(f"\n{args.rounds} interleaved blocks each; µs per operation (lower is better); "
          "commits/s from the median\n")
    print("| measurement | median µs | best µs | commits/s |")
    print("|---|---:|---:|---:|")
    for name, value in m.items():
        commits = 3 if name.split()[0] in ("rust", "python", "sqlite3") and "memory" not in name else (
            1 if name.startswith("langgraph") else 0)
        rate = f"{commits * 1e6 / value:,.0f}" if commits else ""
        print(f"| {name} | {value:,.1f} | {best[name]:,.1f} | {rate} |")

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
    print("\n| ratio (from medians) | value | target | met |")
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
