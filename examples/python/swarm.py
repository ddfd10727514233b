"""A small scripted swarm: three agents share one task, each handing over when its (fake)
model's context window fills up. Every handoff is persisted in an SQLite file, so another
process could pick the work up; at the end the task's chain is printed.

    pip install ./handoff-py
    python examples/python/swarm.py            # writes ./handoff.db
    python examples/python/swarm.py --db /tmp/x.db

No network: the "model" is a script that spends context tokens on each step and decides to
hand off at 85% usage, the way a real agent loop would on a context-limit signal.
"""

from __future__ import annotations

import argparse
import uuid
from dataclasses import dataclass, field
from typing import Optional

import handoff_core as hc

STEPS = [
    "read the grammar",
    "design the token enum",
    "write the lexer loop",
    "handle string escapes",
    "handle numbers",
    "error recovery",
    "unit tests",
    "fuzz the lexer",
    "write the docs",
]


@dataclass
class FakeModel:
    """Spends context on each step; asks to hand off past `limit_pct` of its window."""

    window: int
    cost_per_step: int
    used: int = 0
    limit_pct: int = 85

    def work_on(self, step: str) -> str:
        self.used += self.cost_per_step
        return f"done: {step}"

    @property
    def usage_pct(self) -> int:
        return min(100, self.used * 100 // self.window)

    def wants_handoff(self) -> bool:
        return self.usage_pct >= self.limit_pct


@dataclass
class Agent:
    name: str
    model: FakeModel
    next_agent: Optional[str]
    decisions: list[str] = field(default_factory=list)

    def run(self, store: hc.Store, task_id: str, goal: str, claim: Optional[hc.Claim]) -> None:
        inherited = claim.handoff if claim else None
        done = list(inherited.completed_steps) if inherited else []
        todo = list(inherited.pending_steps) if inherited else list(STEPS)
        decisions = list(inherited.key_decisions) if inherited else []
        if inherited:
            print(f"\n--- {self.name} claims handoff {inherited.id} (token {claim.token if claim else '-'})")
            print(inherited.to_markdown())
        else:
            print(f"\n--- {self.name} starts task {task_id}")

        while todo:
            step = todo.pop(0)
            print(f"[{self.name}] {self.model.work_on(step)} (context {self.model.usage_pct}%)")
            done.append(step)
            decisions.append(f"{self.name}: {step} settled")
            if claim:
                store.heartbeat(claim)  # still alive: keeps the lease
            if len(done) % 2 == 0:
                store.checkpoint(task_id, self.name, goal=goal, progress=f"{len(done)} steps done",
                                 completed=done, pending=todo)
            if todo and self.model.wants_handoff() and self.next_agent:
                handoff = store.create(
                    task_id=task_id,
                    goal=goal,
                    from_agent=self.name,
                    to_agent=self.next_agent,
                    reason=f"context_limit_{self.model.usage_pct}",
                    context_pct=self.model.usage_pct,
                    progress=f"{len(done)} of {len(STEPS)} steps done",
                    completed=done,
                    pending=todo,
                    decisions=decisions[-3:],
                    warnings=["string escapes are subtle: keep the tests green"],
                    instructions=f"continue with '{todo[0]}'",
                    parent_id=inherited.id if inherited else None,
                    metadata={"model": {"window": self.model.window, "used": self.model.used}},
                )
                print(f"[{self.name}] context at {self.model.usage_pct}%: handed off to "
                      f"{self.next_agent} as {handoff.id}")
                if claim:
                    store.complete(claim, outcome=f"handed off to {self.next_agent} as {handoff.id}")
                return
        if claim:
            store.complete(claim, outcome=f"all {len(STEPS)} steps done")
        print(f"[{self.name}] finished the task")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="handoff.db", help="SQLite file (default ./handoff.db)")
    args = parser.parse_args()

    agents = {
        "claude": Agent("claude", FakeModel(window=1000, cost_per_step=300), "gemini"),
        "gemini": Agent("gemini", FakeModel(window=2000, cost_per_step=450), "codex"),
        "codex": Agent("codex", FakeModel(window=8000, cost_per_step=500), None),
    }
    task_id = f"tokenizer-{uuid.uuid4().hex[:8]}"
    goal = "Write a tokenizer for the config language"

    with hc.open(args.db) as store:
        agents["claude"].run(store, task_id, goal, claim=None)
        # Each successor looks for work addressed to it, as a separate worker process would.
        for name in ("gemini", "codex"):
            claim = store.claim_next(name, task_id=task_id, lease_seconds=60)
            if claim is None:
                break
            agents[name].run(store, task_id, goal, claim)

        chain = store.chain(task_id)
        print(f"\nchain of {task_id}: {chain}")
        for hop in chain.hops:
            print(f"  {hop.from_agent} → {hop.to_agent}: {hop.status}")
        events = [e for h in store.list(task_id=task_id) for e in store.events(h.id)]
        print(f"{len(store.list(task_id=task_id))} records, {len(events)} events in {args.db}")


if __name__ == "__main__":
    main()
