"""A store with something on every dashboard page: agents handing tasks along (some waiting,
some being worked on, one stalled), a plan mid-way, a manager/worker run and a shared bundle.

    python handoff-cli/tests/dashboard/demo_store.py demo.db [--handoffs 100000]

``--handoffs`` adds that many more records, spread over agents and statuses, for measuring a
large store (created in batches, each batch one transaction).
"""

from __future__ import annotations

import argparse
from datetime import datetime, timedelta, timezone

import handoff_core as hc

AGENTS = ["claude", "gemini", "codex", "llama"]


def build(path: str, extra: int = 0) -> None:
    # Ten minutes ago: claims made now look stalled to a server on the real clock.
    clock = hc.ManualClock(datetime.now(timezone.utc) - timedelta(minutes=10))
    with hc.open(path, clock=clock) as store:
        # Chains of handoffs between agents.
        for n in range(6):
            task = f"migrate-billing-{n}"
            h = store.create(task, "Migrate the billing service to sqlx", from_agent="claude", to_agent="gemini",
                             pending=["port the queries", "run the tests"], progress="schema mapped")
            if n < 4:
                claim = store.claim(h.id, "gemini")
                store.complete(claim, outcome="queries ported")
                h2 = store.create(task, "Run and fix the test suite", from_agent="gemini", to_agent="codex",
                                  parent_id=h.id, warnings=["flaky test in payments"])
                if n < 2:
                    store.complete(store.claim(h2.id, "codex"), outcome="all green")
                elif n == 2:
                    store.claim(h2.id, "codex")  # held, and quiet since: stalled
        # A plan mid-way.
        task = store.create_task("Write a post", "A bilingual blog post on durable handoffs", steps=[
            {"id": "research", "name": "Research", "agent": "researcher", "dependencies": []},
            {"id": "draft-ko", "name": "Draft (ko)", "agent": "writer", "dependencies": ["research"]},
            {"id": "draft-en", "name": "Draft (en)", "agent": "writer", "dependencies": ["research"]},
            {"id": "review", "name": "Review", "agent": "reviewer", "dependencies": ["draft-ko", "draft-en"]},
        ])
        store.start_task(task.id)
        step = store.claim_next("researcher")
        assert step is not None
        store.complete(step, outcome="notes in research.md")
        # A manager/worker run, one iteration in.
        store.initialize("auth-refactor", manager="manager", worker="worker",
                         instructions="Replace the session middleware", success_criteria=["tests pass"])
        work = store.claim_next("worker")
        assert work is not None
        store.report(work, "PARTIAL", accomplished=["middleware replaced"],
                     files_modified=[{"path": "src/auth.rs", "description": "new middleware"}],
                     issues=["the logout route still uses the old session"])
        # Knowledge, shared.
        store.add_facts("task/migrate-billing-0", ["sqlx needs offline mode in CI", "payments uses numeric(12,2)"])
        store.create_bundle("Billing migration notes", task_id="migrate-billing-0", verified_only=False,
                            visibility="team")
        # Many more, for a large store.
        batch: list[dict[str, object]] = []
        for i in range(extra):
            a, b = AGENTS[i % 4], AGENTS[(i + 1) % 4]
            batch.append({"task_id": f"bulk-{i}", "goal": f"Item {i}: carry on with the refactor",
                          "from_agent": a, "to_agent": b})
            if len(batch) == 1000:
                store.create_many(batch)
                batch.clear()
        if batch:
            store.create_many(batch)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path")
    parser.add_argument("--handoffs", type=int, default=0)
    args = parser.parse_args()
    build(args.path, args.handoffs)
