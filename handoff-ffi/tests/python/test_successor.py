"""The successor's packet from the store (`Store.context_for`): what a predecessor found, what
the plan's earlier steps produced, a character budget, and a foreign summarizer."""

from __future__ import annotations

import pytest

from conftest import hf, new

A = "agent-investigator"
B = "agent-oauth-expert"
FINDING = "token_service.py:142 drops the refresh token after a 401"


def test_an_escalations_successor_reads_the_predecessors_unverified_finding(store: hf.Store) -> None:
    """Seed 001 §8 steps 2–4: A's fact on its own branch reaches B, who accepts A's escalation,
    before anyone verifies it, marked unverified."""
    store.add_facts(f"task/fix-oauth/{A}", [hf.NewFact(text=FINDING, confidence=0.8)])
    escalation = store.create(
        new(
            task_id="fix-oauth",
            goal="Fix the OAuth2 token refresh",
            from_agent=A,
            kind=hf.HandoffKind.ESCALATION,
            instructions="Found the issue in token_service.py:142; needs OAuth2 expertise.",
            blockers=["Unclear OAuth2 state transition after refresh failure"],
        )
    )
    claim = store.claim(escalation.id, B)
    packet = store.context_for(claim.handoff.id)
    md = packet.markdown
    assert f"{FINDING} (unverified)" in md
    assert f"## Unverified Findings of {A} (on task/fix-oauth/{A})" in md
    assert "Unclear OAuth2 state transition" in md
    assert f"Continue on `task/fix-oauth/{B}`" in md
    assert packet.unit == hf.BudgetUnit.TOKENS and packet.budget == 2000
    finding = next(s for s in packet.sections if FINDING in s.text)
    assert finding.kind == hf.ItemKind.FACT and finding.group is not None
    assert not packet.manifest.dropped and not packet.manifest.truncated


def test_a_plan_steps_successor_reads_what_its_dependency_produced(store: hf.Store) -> None:
    steps = [
        hf.StepSpec(id="investigate", name="Identify root cause", agent="investigator"),
        hf.StepSpec(id="fix", name="Implement fix", agent="expert", dependencies=["investigate"]),
        hf.StepSpec(id="test", name="Add regression tests", agent="tester", dependencies=["fix"]),
    ]
    task = store.create_task(
        "fix-oauth-token-refresh", "Token refresh survives a 401 from the identity provider", steps,
        success_criteria=["no user is logged out by an expired token"],
    )
    store.start_task(task.id)
    for agent, outcome in [
        ("investigator", "the state machine resets on a 401"),
        ("expert", "retry with exponential backoff in token_service.py"),
    ]:
        claim = store.claim_next(agent)
        assert claim is not None
        store.complete(claim.reference(), outcome)
    third = store.claim_next("tester")
    assert third is not None
    packet = store.context_for(third.handoff.id)
    md = packet.markdown
    assert "Token refresh survives a 401 from the identity provider" in md
    assert "fix (Implement fix, by expert, completed): retry with exponential backoff" in md
    kinds = {s.kind for s in packet.sections}
    assert {hf.ItemKind.TASK, hf.ItemKind.OUTPUT} <= kinds


def ledger(store: hf.Store) -> hf.Handoff:
    store.add_facts(
        "task/ledger/agent-a",
        [
            hf.NewFact(text=f"finding {i}: the ledger export drifts by one cent on refunds of batch {i}")
            for i in range(60)
        ],
    )
    return store.create(
        new(
            task_id="ledger",
            goal="Find why the ledger export drifts",
            from_agent="agent-a",
            instructions="Start with the refunds of batch 7.",
            blockers=["no access to the production ledger"],
            completed=[f"checked batch {i} against the bank statement" for i in range(40)],
        )
    )


def test_a_character_budget_bounds_the_markdown(store: hf.Store) -> None:
    h = ledger(store)
    packet = store.context_for(h.id, budget_chars=2000)
    assert len(packet.markdown) <= 2000
    assert packet.tokens == len(packet.markdown)
    assert (packet.unit, packet.budget) == (hf.BudgetUnit.CHARS, 2000)
    assert "Find why the ledger export drifts" in packet.markdown
    assert "no access to the production ledger" in packet.markdown
    assert packet.manifest.dropped


def test_a_bad_budget_is_refused_naming_it(store: hf.Store) -> None:
    h = ledger(store)
    before = store.events(h.id)
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.context_for(h.id, budget_chars=0)
    assert [p.field for p in err.value.problems] == ["budget_chars"]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.context_for(h.id, budget_tokens=100, budget_chars=100)
    assert [p.field for p in err.value.problems] == ["budget_chars"]
    with pytest.raises(hf.HandoffError.Validation) as err:
        store.context_for(h.id, transcript=[hf.ContextMessage(role="robot", content="hi")])
    assert [p.field for p in err.value.problems][0].startswith("transcript[0]")
    assert store.events(h.id) == before


class Shortener(hf.Summarizer):
    """Answers every request with a line that fits, and records what it was asked."""

    def __init__(self) -> None:
        self.requests: list[hf.SummaryRequest] = []

    def summarize(self, request: hf.SummaryRequest) -> str:
        self.requests.append(request)
        return f"in short: {request.title.lower()} ({len(request.text)} chars)"


class Failing(hf.Summarizer):
    def summarize(self, request: hf.SummaryRequest) -> str:
        raise ConnectionError("the model is unreachable")


def long_handoff(store: hf.Store) -> hf.Handoff:
    store.add_facts(
        "task/essay/agent-a",
        [hf.NewFact(text="the migration notes say " + "the schema changed in version seven; " * 80)],
    )
    return store.create(new(task_id="essay", goal="Finish the migration", from_agent="agent-a"))


def test_a_summarizer_compresses_what_does_not_fit(store: hf.Store) -> None:
    h = long_handoff(store)
    shortener = Shortener()
    packet = store.context_for(h.id, budget_chars=1200, summarizer=shortener)
    assert shortener.requests, "the summarizer was asked"
    request = shortener.requests[0]
    assert request.unit == hf.BudgetUnit.CHARS and 0 < request.budget < 1200
    summarized = [s.id for s in packet.manifest.summarized]
    assert request.id in summarized
    assert "in short:" in packet.markdown and len(packet.markdown) <= 1200
    assert request.id not in [t.id for t in packet.manifest.truncated]

    # A summarizer that throws leaves the item cut, as without one.
    packet = store.context_for(h.id, budget_chars=1200, summarizer=Failing())
    assert not packet.manifest.summarized
    assert request.id in [t.id for t in packet.manifest.truncated]
    assert len(packet.markdown) <= 1200
