"""The successor's packet from every part of the store (issue #46), from Python and ``hc.aio``:
the predecessor's unverified findings and conversation, a plan step's dependencies, relevant
knowledge on ``main``, a budget in characters, an escalation that names the worker's last
error, a ``summarize`` callable, and bad input named by field. Each scenario runs on an SQLite
file, a folder of JSON files and the memory store."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import handoff_core as hc

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"


@pytest.fixture(params=["sqlite", "files", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[hc.Store]:
    if request.param == "sqlite":
        opened = hc.open(tmp_path / "handoff.db")
    elif request.param == "files":
        opened = hc.connect(f"files:{tmp_path / 'store'}")
    else:
        opened = hc.Store.memory()
    with opened:
        yield opened


def seed_investigation(store: hc.Store) -> hc.Handoff:
    """Seed 001 §8 steps 2–3: agent A finds something on its own branch, talks it through and
    escalates; nothing is verified."""
    branch = "task/fix-oauth/agent-investigator"
    store.add_facts(branch, [{"text": "token_service.py:142 drops the refresh token after a 401", "confidence": 0.8}])
    store.add_conversation(
        branch,
        [
            {"role": "user", "content": "Why does the refresh fail?"},
            {"role": "assistant", "content": "The state machine resets on a 401 before the retry."},
        ],
        title="investigation",
        task_id="fix-oauth",
        agent="agent-investigator",
    )
    return store.create(
        "fix-oauth",
        "Fix the OAuth2 token refresh",
        from_agent="agent-investigator",
        kind="escalation",
        instructions="Found the issue in token_service.py:142; needs OAuth2 expertise.",
        blockers=["Unclear OAuth2 state transition after refresh failure"],
    )


def test_a_successor_receives_what_its_predecessor_knew_before_any_verification(store: hc.Store) -> None:
    escalation = seed_investigation(store)
    claim = store.claim(escalation.id, "agent-oauth-expert")
    assert [f.status for f in store.facts("task/fix-oauth/agent-investigator")] == ["active"]

    packet = store.context_for(claim.handoff.id)
    md = packet.markdown
    assert "token_service.py:142 drops the refresh token after a 401 (unverified)" in md
    assert "## Unverified Findings of agent-investigator (on task/fix-oauth/agent-investigator)" in md
    assert "## Conversation: investigation by agent-investigator, unverified" in md
    assert "The state machine resets on a 401 before the retry." in md
    assert "Unclear OAuth2 state transition" in md
    assert "Continue on `task/fix-oauth/agent-oauth-expert`" in md
    assert packet.unit == "tokens" and packet.tokens <= packet.budget == 2000
    assert packet.manifest.dropped == [] and packet.manifest.truncated == []
    assert packet.manifest.summarized == []
    # The sections say what they are and where they are listed.
    (finding,) = [s for s in packet.sections if s["kind"] == "fact"]
    assert finding["group"] == "Unverified Findings of agent-investigator (on task/fix-oauth/agent-investigator)"
    said = [s for s in packet.sections if s["kind"] == "message"]
    assert {s["group"] for s in said} == {"investigation by agent-investigator, unverified"}
    assert all("group" not in s for s in packet.sections if s["kind"] == "handoff")

    # The next hop reads the one before in its history, and not A's findings.
    store.complete(claim, outcome="fixed the state machine")
    tests = store.create("fix-oauth", "Add regression tests", from_agent="agent-oauth-expert", to_agent="agent-tester")
    packet = store.context_for(tests.id)
    md = packet.markdown
    assert "## Agent History" in md and "agent-investigator → agent-oauth-expert (escalation" in md
    assert "fixed the state machine" in md and "(unverified)" not in md
    assert "history" in {s["kind"] for s in packet.sections}


def test_a_plan_steps_successor_reads_the_goal_and_its_dependencies_outcomes(store: hc.Store) -> None:
    steps: list[dict[str, Any]] = [
        {"id": "investigate", "name": "Identify root cause", "agent": "investigator"},
        {"id": "fix", "name": "Implement fix", "agent": "expert", "dependencies": ["investigate"]},
        {"id": "test", "name": "Add regression tests", "agent": "tester", "dependencies": ["fix"]},
    ]
    task = store.create_task(
        "fix-oauth-token-refresh",
        "Token refresh survives a 401 from the identity provider",
        steps,
        success_criteria=["no user is logged out by an expired token"],
    )
    store.start_task(task.id)
    for agent, outcome in [
        ("investigator", "the state machine resets on a 401"),
        ("expert", "retry with exponential backoff in token_service.py"),
    ]:
        claim = store.claim_next(agent)
        assert claim is not None, agent
        store.complete(claim, outcome=outcome)
    third = store.claim_next("tester")
    assert third is not None

    packet = store.context_for(third.handoff.id)
    md = packet.markdown
    assert "Token refresh survives a 401 from the identity provider" in md
    assert "fix (Implement fix, by expert, completed): retry with exponential backoff" in md
    assert "- [x] investigate Identify root cause" in md
    assert "test Add regression tests (tester, in_progress) ← this handoff" in md
    assert "no user is logged out" in md
    kinds = {s["kind"] for s in packet.sections}
    assert {"task", "output"} <= kinds


def playbook_bundle(keys: hc.BundleKeyPair) -> dict[str, Any]:
    """A bundle made (and signed) in another store: 200 unrelated verified facts and one about
    OAuth."""
    with hc.Store.memory() as elsewhere:
        facts = [f"invoice batch {i} rounds line totals before summing the ledger" for i in range(200)]
        facts.insert(117, "OAuth2 token refresh needs a retry with exponential backoff after a 401")
        elsewhere.add_facts("task/playbook", facts)
        elsewhere.verify("task/playbook", lambda item: 1.0)
        bundle = elsewhere.create_bundle("OAuth2 Token Refresh Fix Playbook", task_id="playbook")
        assert bundle.fact_count == 201
        signed = elsewhere.sign_bundle(bundle.id, secret_key=keys.secret_key)
    portable: dict[str, Any] = json.loads(signed.to_json())
    return portable


def test_knowledge_on_main_reaches_a_new_task_by_relevance(store: hc.Store) -> None:
    # Signed by a key the store trusts, the bundle's verdicts hold here.
    keys = hc.generate_bundle_key()
    store.trust_bundle_keys(trust=[keys.public_key])
    report = store.import_bundle(playbook_bundle(keys), target_branch="main")
    assert (report.facts_added, report.trusted) == (201, True)
    h = store.create(
        "oauth-again",
        "Users are logged out when the OAuth token expires",
        pending=["make the token refresh robust"],
    )
    md = store.context_for(h.id).markdown
    assert "## Relevant Knowledge on main" in md
    assert "OAuth2 token refresh needs a retry with exponential backoff after a 401 (verified by bundle:" in md
    assert "invoice batch" not in md, "unrelated facts stay out"


def ledger_handoff(store: hc.Store) -> hc.Handoff:
    store.add_facts(
        "task/ledger/agent-a",
        [f"finding {i}: the ledger export drifts by one cent on refunds of batch {i}" for i in range(60)],
    )
    return store.create(
        "ledger",
        "Find why the ledger export drifts",
        from_agent="agent-a",
        instructions="Start with the refunds of batch 7.",
        blockers=["no access to the production ledger"],
        completed=[f"checked batch {i} against the bank statement" for i in range(40)],
    )


def test_a_packet_fits_a_budget_in_characters(store: hc.Store) -> None:
    h = ledger_handoff(store)
    packet = store.context_for(h.id, budget_chars=2000)
    md = packet.markdown
    assert len(md) <= 2000
    assert (packet.unit, packet.budget, packet.tokens) == ("chars", 2000, len(md))
    for whole in ["Find why the ledger export drifts", "Start with the refunds of batch 7.", "no access to the production ledger"]:
        assert whole in md
    assert "finding 59:" in md and "finding 0:" not in md, "the most recent findings are kept"
    manifest = packet.manifest
    assert manifest.dropped and all(d["reason"] == "budget" for d in manifest.dropped)
    texts = {s["id"]: s["text"] for s in packet.sections}
    for cut in manifest.truncated:
        assert "…" in texts[cut["id"]]
        assert cut["kept_tokens"] < cut["original_tokens"]
    listed = set(manifest.included) | {c["id"] for c in manifest.truncated} | {d["id"] for d in manifest.dropped}
    assert {s["id"] for s in packet.sections} <= listed
    assert manifest.to_dict()["summarized"] == []


def long_finding(store: hc.Store, task: str = "refunds") -> hc.Handoff:
    """A handoff whose predecessor left one finding far longer than a small packet holds."""
    detail = " ".join(f"step {i}: the refund path rounds the amount twice before posting it." for i in range(40))
    store.add_facts(f"task/{task}/agent-a", [f"Root cause of the drift. {detail}"])
    return store.create(task, "Find why the ledger export drifts", from_agent="agent-a")


def test_a_summarize_callable_compresses_what_does_not_fit(store: hc.Store) -> None:
    h = long_finding(store)
    asked: list[dict[str, Any]] = []

    def summarize(request: dict[str, Any]) -> str:
        asked.append(request)
        return "The refund path rounds twice before posting."

    packet = store.context_for(h.id, budget_chars=600, summarize=summarize)
    (request,) = asked
    assert set(request) == {"id", "title", "text", "budget", "unit"}
    assert request["unit"] == "chars" and 0 < request["budget"] < len(request["text"])
    assert request["text"].startswith("Root cause of the drift.")
    (summarized,) = packet.manifest.summarized
    assert summarized["id"] == request["id"]
    assert summarized["kept_tokens"] < summarized["original_tokens"]
    assert packet.manifest.truncated == []
    assert "The refund path rounds twice before posting." in packet.markdown
    assert len(packet.markdown) <= 600


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(RuntimeError("the model is down"), id="raises"),
        pytest.param(42, id="not-a-str"),
        pytest.param("", id="empty"),
        pytest.param("far too long " * 200, id="does-not-fit"),
    ],
)
def test_a_summarize_that_fails_falls_back_to_cutting(store: hc.Store, answer: Any) -> None:
    h = long_finding(store)
    calls: list[str] = []

    def summarize(request: dict[str, Any]) -> Any:
        calls.append(request["id"])
        if isinstance(answer, BaseException):
            raise answer
        return answer

    packet = store.context_for(h.id, budget_chars=600, summarize=summarize)
    assert calls, "the summarizer was asked"
    assert packet.manifest.summarized == []
    assert [c["id"] for c in packet.manifest.truncated] == calls[:1]
    assert "Root cause of the drift." in packet.markdown and "…" in packet.markdown
    assert len(packet.markdown) <= 600


def test_an_interrupt_in_summarize_is_not_swallowed(store: hc.Store) -> None:
    h = long_finding(store)

    def summarize(request: dict[str, Any]) -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        store.context_for(h.id, budget_chars=600, summarize=summarize)


def test_a_summary_is_redacted_like_any_text(store: hc.Store) -> None:
    h = long_finding(store)
    packet = store.context_for(h.id, budget_chars=600, summarize=lambda request: f"rounds twice; key {SECRET}")
    assert packet.manifest.summarized
    assert SECRET not in packet.markdown and "[REDACTED:openai-api-key]" in packet.markdown


def test_the_transcript_is_one_more_conversation_under_the_budget_and_redaction(store: hc.Store) -> None:
    escalation = seed_investigation(store)
    transcript = [
        {"role": "user", "content": f"Refresh keeps failing, my key is {SECRET}"},
        {"role": "assistant", "content": "Escalating to the OAuth expert."},
    ]
    packet = store.context_for(escalation.id, transcript=transcript)
    md = packet.markdown
    assert "## Conversation: this run" in md and "Escalating to the OAuth expert." in md
    assert SECRET not in md and "[REDACTED:openai-api-key]" in md
    assert any(r["rule"] == "openai-api-key" for r in packet.manifest.redacted)
    # A message object with model_dump() (an SDK item, a LangChain message) reads as its dict.

    class Item:
        def model_dump(self, *, mode: str) -> dict[str, Any]:
            return {"role": "assistant", "content": "from a pydantic item"}

    assert "from a pydantic item" in store.context_for(escalation.id, transcript=[Item()]).markdown
    # Under a small budget it is cut before the goal is.
    small = store.context_for(escalation.id, transcript=transcript * 30, budget_chars=900)
    assert len(small.markdown) <= 900 and "Fix the OAuth2 token refresh" in small.markdown


def test_an_escalation_names_the_workers_last_error(store: hc.Store) -> None:
    """Seed 004: a run escalated past its max_retries names the last error to the human."""

    def take(agent: str) -> hc.Claim:
        claim = store.claim_next(agent)
        assert claim is not None, agent
        return claim

    error: dict[str, Any] = {
        "error_type": "configuration",
        "severity": "high",
        "description": "the sandbox rejects the client id",
        "error_messages": ["invalid_client: unknown client id 4711"],
    }
    store.initialize(
        "task_12345",
        manager="manager",
        worker="worker",
        instructions="Add token refresh to src/auth.js",
        success_criteria=["401 triggers one refresh"],
        context={"project_root": "/app", "constraints": ["no new dependencies"]},
        max_retries=1,
    )
    store.report(take("worker"), "PARTIAL", accomplished=["refresh on 401"],
                 files_modified=[{"path": "src/auth.js", "description": "refresh call"}], issues=["no backoff yet"])
    store.decide(take("manager"), "REFINE", instructions="Add exponential backoff",
                 context_updates={"dependencies_added": ["backoff@2"]})
    store.report_error(take("worker"), **error)
    store.recover(take("manager"), "use the staging client", ["read STAGING_ID", "retry"])
    store.report_error(take("worker"), **error)
    escalation = store.recover(take("manager"), "again", ["retry"])
    assert (escalation.kind, escalation.to_agent) == ("escalation", "human")

    md = escalation.to_markdown()
    assert "## Complete History" in md and "Worker: PARTIAL" in md
    assert "- Description: The run reached its max_retries" in md
    assert "Last error: invalid_client: unknown client id 4711" in md
    assert escalation.protocol is not None
    state = escalation.protocol["current_state"]
    assert state["dependencies"] == ["backoff@2"]
    assert state["configuration"] == ["project root: /app", "constraint: no new dependencies"]
    run = store.protocol_run("task_12345")
    assert run.dependencies == ["backoff@2"]
    assert run.configuration == ["project root: /app", "constraint: no new dependencies"]

    packet = store.context_for(escalation.id, budget_chars=4000)
    assert "invalid_client: unknown client id 4711" in packet.markdown
    assert "task" in {s["kind"] for s in packet.sections}


def test_aio_context_for_with_a_budget_in_characters(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with await hc.aio.open(tmp_path / "handoff.db") as store:
            h = await asyncio.to_thread(ledger_handoff, store.sync)
            packet = await store.context_for(h.id, budget_chars=2000)
            assert packet.unit == "chars" and len(packet.markdown) <= 2000
            assert "Find why the ledger export drifts" in packet.markdown

            long = await asyncio.to_thread(long_finding, store.sync)
            loop = asyncio.get_running_loop()
            ran_on: list[bool] = []

            async def summarize(request: dict[str, Any]) -> str:
                ran_on.append(asyncio.get_running_loop() is loop)
                return "The refund path rounds twice."

            packet = await store.context_for(long.id, budget_chars=600, summarize=summarize)
            assert ran_on == [True], "a coroutine summarizer runs on the event loop"
            assert packet.manifest.summarized and "The refund path rounds twice." in packet.markdown

            with pytest.raises(hc.ValidationError) as raised:
                await store.context_for(h.id, budget_chars=0)
            assert [field for field, _ in raised.value.problems] == ["budget_chars"]

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("arguments", "fields"),
    [
        ({"budget_chars": 0}, ["budget_chars"]),
        ({"budget_tokens": 0}, ["budget_tokens"]),
        ({"budget_tokens": 1000, "budget_chars": 2000}, ["budget_chars"]),
        ({"budget_chars": -5}, ["budget_chars"]),
        ({"budget_chars": "2000"}, ["budget_chars"]),
        ({"transcript": [{"role": "user", "content": "hi"}, {"content": "no role"}]}, ["transcript[1].role"]),
        ({"transcript": "not a list"}, ["transcript"]),
        ({"transcript": [object()]}, ["transcript[0]"]),
    ],
)
def test_bad_input_is_a_typed_error_naming_the_field(store: hc.Store, arguments: dict[str, Any], fields: list[str]) -> None:
    h = store.create("t", "Do the thing")
    with pytest.raises(hc.ValidationError) as raised:
        store.context_for(h.id, **arguments)
    assert [field for field, _ in raised.value.problems] == fields


def test_a_summarize_that_is_not_callable_and_a_missing_handoff(store: hc.Store) -> None:
    h = store.create("t", "Do the thing")
    with pytest.raises(hc.ValidationError) as raised:
        store.context_for(h.id, summarize="shorter please")  # type: ignore[arg-type]
    assert [field for field, _ in raised.value.problems] == ["summarize"]
    with pytest.raises(hc.NotFound):
        store.context_for("no-such-handoff", budget_chars=2000, summarize=lambda r: "x")
    with pytest.raises(TypeError, match="budget"):
        store.context_for(h.id, budget=2000)  # type: ignore[call-arg]
