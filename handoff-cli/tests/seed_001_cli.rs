//! Seed 001 §8 from the shell, step by step as a user meets it: three agents fix a bug with the
//! `handoff` binary (a task from objectives, agents join, an escalation, an expert accepts it,
//! verified cherry-picks with a judge command, the task's branch verified and merged into
//! `main`, a bundle shared and imported), and the next task's successor reads the fix in
//! `handoff context`. On the way, a step that fails on every attempt is escalated to a human,
//! whose plain `handoff complete` skips it and lets the task go on. The same scenario through
//! the core's operations is `handoff-core/tests/seed_001.rs`; over HTTP,
//! `tests/http/test_seed_001_scenario.py`; over MCP, `tests/mcp_seed_001.py`.

mod common;

use common::Env;
use serde_json::{Value, json};

const OK: i32 = 0;

const TASK: &str = "fix-oauth-token-refresh";
const TASK_BRANCH: &str = "task/fix-oauth-token-refresh";
const FIX: &str = "Token refresh needs retry logic with exponential backoff";
const GUESS: &str = "Maybe the clock is skewed";

/// The judge, as an operator would write one around a model: it reads the item's JSON on
/// standard input and prints a score. Facts that state the cause or the fix pass, guesses fail;
/// a conversation passes when it reaches the fix and stays neutral otherwise.
const JUDGE: &str = r#"item=$(cat)
case "$item" in
  *'"kind":"fact"'*)
    case "$item" in
      *'"text":"Maybe'*) echo 0.2 ;;
      *) echo '{"score": 0.9, "explanation": "states the cause or the fix"}' ;;
    esac ;;
  *backoff*) echo '{"score": 0.9, "explanation": "reaches the fix"}' ;;
  *) echo 0.5 ;;
esac
"#;

fn say(role: &str, content: &str) -> String {
    json!({"role": role, "content": content}).to_string()
}

/// Agent B's conversation: 16 messages, the fix among them (sequences 5 to 15 are the work).
fn expert_conversation() -> Vec<String> {
    let mut messages = vec![say("user", "Take over the OAuth2 token refresh bug.")];
    for i in 1..=3 {
        messages.push(say("assistant", &format!("Reading the handoff, part {i}.")));
    }
    messages.extend([
        say("assistant", "Let me look at token_service.py:142 first."),
        say("tool", "def refresh(): ... # no retry"),
        say(
            "assistant",
            "The root cause is a refresh that runs once and gives up.",
        ),
        say(
            "assistant",
            "I'll add retry logic with exponential backoff.",
        ),
        say("tool", "tests: 42 passed"),
        say(
            "assistant",
            "The fix works: retry with exponential backoff.",
        ),
    ]);
    while messages.len() < 16 {
        messages.push(say("assistant", "Writing up the notes."));
    }
    messages
}

/// `handoff ARGS... --json`, which must succeed: its JSON.
fn ok(env: &Env, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    env.run(&all).expect(OK).json()
}

/// `handoff claim ID --agent AGENT --json`: (token, secret).
fn claim(env: &Env, id: &str, agent: &str) -> (String, String) {
    let claimed = ok(env, &["claim", id, "--agent", agent]);
    assert_eq!(claimed["handoff"]["claimed_by"], agent, "{claimed}");
    (
        claimed["token"].to_string(),
        claimed["claim_secret"]
            .as_str()
            .expect("a claim secret")
            .to_owned(),
    )
}

fn step<'t>(task: &'t Value, id: &str) -> &'t Value {
    task["plan"]["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id}: {task}"))
}

fn texts(facts: &Value) -> Vec<String> {
    facts
        .as_array()
        .expect("facts")
        .iter()
        .map(|f| f["text"].as_str().expect("text").to_owned())
        .collect()
}

#[test]
fn three_agents_fix_a_bug_from_the_shell_and_the_next_task_receives_the_fix() {
    let env = Env::new();
    std::fs::write(env.dir.path().join("judge.sh"), JUDGE).expect("the judge script");
    let judge = ["--judge-cmd", "sh judge.sh"];

    // Step 1: the task, from objectives alone, under the seed's readable id.
    let task = ok(
        &env,
        &[
            "task",
            "create",
            "--id",
            TASK,
            "--name",
            TASK,
            "--objectives",
            "Identify root cause of token refresh failure",
            "--objectives",
            "Implement fix",
            "--objectives",
            "Add regression tests",
        ],
    );
    assert_eq!(task["id"], TASK, "{task}");
    assert_eq!(task["plan"]["steps"].as_array().map(Vec::len), Some(3));
    let started = ok(&env, &["task", "start", TASK]);
    assert_eq!(started["status"], "in_progress", "{started}");

    // Step 2: agent A joins as investigator with objective 1 and writes what it found.
    let joined = ok(
        &env,
        &[
            "task",
            "join",
            TASK,
            "agent-investigator",
            "--role",
            "investigator",
            "--objectives",
            "1",
        ],
    );
    let a_branch = format!("{TASK_BRANCH}/agent-investigator");
    assert_eq!(
        joined["members"][0]["branch"],
        a_branch.as_str(),
        "{joined}"
    );
    assert_eq!(joined["members"][0]["role"], "investigator");
    assert_eq!(step(&joined, "1")["agent"], "agent-investigator");
    ok(
        &env,
        &[
            "facts",
            "add",
            &a_branch,
            "The failure is in token_service.py:142",
            GUESS,
        ],
    );
    ok(
        &env,
        &[
            "conversation",
            "add",
            &a_branch,
            "--title",
            "Investigation",
            &say("user", "Why does the token refresh fail?"),
            &say(
                "assistant",
                "The failure is in token_service.py:142, inside the OAuth2 state machine.",
            ),
        ],
    );

    // Step 3: agent A gets stuck: an escalation handoff, with the seed's words.
    let escalation = ok(
        &env,
        &[
            "create",
            "--task-id",
            TASK,
            "--from-agent",
            "agent-investigator",
            "--kind",
            "escalation",
            "--instructions",
            "Found the issue in token_service.py:142 but the fix requires understanding the \
             OAuth2 state machine. Need someone with OAuth2 expertise.",
            "--blocker",
            "Unclear OAuth2 state transition after refresh failure",
        ],
    );
    let escalation_id = escalation["id"].as_str().expect("an id").to_owned();
    assert_eq!(escalation["kind"], "escalation", "{escalation}");

    // Step 4: agent B accepts it; its packet holds agent A's work, marked unverified.
    let (token, secret) = claim(&env, &escalation_id, "agent-oauth-expert");
    let packet = env.run(&["context", &escalation_id]).expect(OK).stdout;
    for expected in [
        "The failure is in token_service.py:142",
        "Unclear OAuth2 state transition after refresh failure",
        "inside the OAuth2 state machine",
        "(unverified)",
    ] {
        assert!(packet.contains(expected), "{expected}: {packet}");
    }

    // Step 5: B fixes it on its branch and completes the escalation; C joins for the tests.
    ok(
        &env,
        &[
            "task",
            "join",
            TASK,
            "agent-oauth-expert",
            "--role",
            "expert",
        ],
    );
    ok(
        &env,
        &[
            "task",
            "join",
            TASK,
            "agent-tester",
            "--role",
            "tester",
            "--objectives",
            "3",
        ],
    );
    let b_branch = format!("{TASK_BRANCH}/agent-oauth-expert");
    ok(&env, &["facts", "add", &b_branch, FIX]);
    let mut add = vec!["conversation", "add", &b_branch, "--title", "The fix"];
    let messages = expert_conversation();
    add.extend(messages.iter().map(String::as_str));
    let conversation = ok(&env, &add);
    assert_eq!(conversation["message_count"], 16, "{conversation}");
    let conversation_id = conversation["id"].as_str().expect("an id").to_owned();
    let done = ok(
        &env,
        &[
            "complete",
            &escalation_id,
            "--token",
            &token,
            "--secret",
            &secret,
            "--outcome",
            "Retry with exponential backoff in token_service.py",
        ],
    );
    assert_eq!(done["status"], "completed", "{done}");

    // The tester's step fails on every attempt: it goes to a human and the task pauses. The
    // human's plain `handoff complete` of that escalation skips the step; the task goes on.
    for attempt in 1..=3 {
        let task = ok(&env, &["task", "get", TASK]);
        let offer = step(&task, "3")["handoff_id"]
            .as_str()
            .expect("step 3 offered")
            .to_owned();
        let (token, secret) = claim(&env, &offer, "agent-tester");
        env.run(&[
            "step",
            "fail",
            &offer,
            "--token",
            &token,
            "--secret",
            &secret,
            "--error",
            &format!("attempt {attempt}: the regression test cannot reproduce the expiry"),
        ])
        .expect(OK);
    }
    let paused = ok(&env, &["task", "get", TASK]);
    assert_eq!(paused["status"], "paused", "{paused}");
    assert_eq!(step(&paused, "3")["status"], "escalated", "{paused}");
    let waiting = ok(
        &env,
        &[
            "list",
            "--task-id",
            TASK,
            "--to-agent",
            "human",
            "--status",
            "pending",
        ],
    );
    let human = waiting[0]["id"]
        .as_str()
        .expect("the escalation")
        .to_owned();
    assert_eq!(waiting[0]["kind"], "escalation", "{waiting}");
    let (token, secret) = claim(&env, &human, "human");
    ok(
        &env,
        &[
            "complete",
            &human,
            "--token",
            &token,
            "--secret",
            &secret,
            "--outcome",
            "Skip it: the expert's run covers the regression",
        ],
    );
    let going_on = ok(&env, &["task", "get", TASK]);
    assert_eq!(going_on["status"], "in_progress", "{going_on}");
    assert_eq!(step(&going_on, "3")["status"], "skipped", "{going_on}");

    // Step 6: cherry-pick the decisions, the work verified as it is picked by the judge.
    let mut pick = vec![
        "cherry-pick",
        &conversation_id,
        TASK_BRANCH,
        "--from-seq",
        "5",
        "--to-seq",
        "15",
        "--verify",
    ];
    pick.extend(judge);
    let picked = ok(&env, &pick);
    assert_eq!(picked["message_count"], 11, "{picked}");
    assert_eq!(picked["verification_status"], "verified", "{picked}");
    assert_eq!(picked["verified_by"], "judge-cmd");
    assert_eq!(picked["explanation"], "reaches the fix");
    let decisions = ok(
        &env,
        &["cherry-pick-decisions", &conversation_id, TASK_BRANCH],
    );
    assert_eq!(decisions["branch"], TASK_BRANCH, "{decisions}");
    assert_eq!(decisions["cherry_picked_from"], conversation_id.as_str());

    // Step 7: the task's branch and its agents' are verified by the judge, the guess
    // invalidated; the task completes into main with its summary.
    let mut verify = vec!["verify", TASK_BRANCH, "--json"];
    verify.extend(judge);
    let judged = env.run(&verify).expect(OK);
    assert!(!judged.stderr.contains("no judge"), "{judged:?}");
    let report = judged.json();
    assert!(report["verified"].as_u64() >= Some(2), "{report}");
    assert_eq!(report["invalidated"], 1, "the guess: {report}");
    assert_eq!(report["failed"], 0, "{report}");
    let completed = ok(
        &env,
        &[
            "task",
            "complete",
            TASK,
            "--merge-to-main",
            "--result-summary",
            "Fixed OAuth2 token refresh by adding retry logic with exponential backoff",
        ],
    );
    assert_eq!(completed["status"], "completed", "{completed}");
    assert_eq!(
        completed["result_summary"],
        "Fixed OAuth2 token refresh by adding retry logic with exponential backoff"
    );
    let events = env.run(&["task", "events", TASK]).expect(OK).stdout;
    assert!(
        events.contains("merge"),
        "`task complete --merge-to-main` logged no merge: {events}"
    );
    let main = texts(&ok(&env, &["facts", "list", "main"]));
    assert!(
        main.contains(&FIX.to_owned()),
        "`task complete --merge-to-main` left main without the fix: {main:?}"
    );
    assert!(!main.contains(&GUESS.to_owned()), "{main:?}");

    // Step 8: the bundle holds the task's verified knowledge, shared with the team.
    let bundle = ok(
        &env,
        &[
            "bundle",
            "create",
            "OAuth2 Token Refresh Fix Playbook",
            "--task-id",
            TASK,
            "--verified-only",
            "--visibility",
            "team",
        ],
    );
    assert_eq!(bundle["fact_count"], 2, "{bundle}");
    assert!(bundle["conversation_count"].as_u64() >= Some(1), "{bundle}");
    assert_eq!(bundle["visibility"], "team");
    let bundled = texts(&bundle["data"]["facts"]);
    assert!(bundled.contains(&FIX.to_owned()), "{bundled:?}");
    assert!(!bundled.contains(&GUESS.to_owned()), "{bundled:?}");
    let conversations = bundle["data"]["conversations"]
        .as_array()
        .expect("conversations");
    assert!(
        conversations
            .iter()
            .any(|c| c["messages"].as_array().map(Vec::len) == Some(11)),
        "the cherry-pick is in the bundle: {conversations:?}"
    );
    let bundle_id = bundle["id"].as_str().expect("an id").to_owned();
    let token = bundle["share_token"].as_str().expect("a share token");
    assert!(token.starts_with("kb_"), "{token}");
    let shared = ok(&env, &["bundle", "shared", token]);
    assert_eq!(shared["id"], bundle_id.as_str(), "{shared}");

    // Step 9: the bundle imported into main adds nothing twice; the next task's successor
    // gets the fix without asking.
    let imported = ok(
        &env,
        &[
            "bundle",
            "import",
            "--bundle-id",
            &bundle_id,
            "--target-branch",
            "main",
        ],
    );
    assert_eq!(imported["facts_added"], 0, "merged already: {imported}");
    let main = texts(&ok(&env, &["facts", "list", "main"]));
    assert_eq!(
        main.iter().filter(|t| *t == FIX).count(),
        1,
        "once on main: {main:?}"
    );
    let next = ok(
        &env,
        &[
            "create",
            "--task-id",
            "oauth-login-loop",
            "--goal",
            "Users are logged out when the OAuth token refresh fails",
            "--to-agent",
            "agent-next",
        ],
    );
    let next_id = next["id"].as_str().expect("an id");
    let packet = env.run(&["context", next_id]).expect(OK).stdout;
    assert!(packet.contains(FIX), "{packet}");
    assert!(!packet.contains(GUESS), "{packet}");
}

/// `handoff verify` without a judge says that every score is the neutral 0.5, and it must
/// neither hide the agents' work from the judge that comes next nor undo a judge's verdicts.
#[test]
fn verify_without_a_judge_says_so_and_leaves_the_verdicts_alone() {
    let env = Env::new();
    std::fs::write(env.dir.path().join("judge.sh"), JUDGE).expect("the judge script");
    ok(
        &env,
        &[
            "task",
            "create",
            "--id",
            TASK,
            "--name",
            TASK,
            "--objectives",
            "Implement fix",
        ],
    );
    ok(&env, &["task", "start", TASK]);
    ok(&env, &["task", "join", TASK, "agent-oauth-expert"]);
    let b_branch = format!("{TASK_BRANCH}/agent-oauth-expert");
    ok(&env, &["facts", "add", &b_branch, FIX]);
    let status = |env: &Env| -> Value {
        let facts = ok(env, &["facts", "list", &b_branch]);
        facts[0]["status"].clone()
    };

    // First without a judge: said on stderr, nothing verified or invalidated.
    let neutral = env.run(&["verify", TASK_BRANCH, "--json"]).expect(OK);
    assert!(
        neutral.stderr.contains("no judge") && neutral.stderr.contains("--judge-cmd"),
        "{neutral:?}"
    );
    assert!(neutral.stderr.contains("0.5"), "{neutral:?}");
    let report = neutral.json();
    assert_eq!(
        (report["verified"].as_u64(), report["invalidated"].as_u64()),
        (Some(0), Some(0)),
        "{report}"
    );
    assert_eq!(status(&env), "active");

    // Then with the judge, as the note says: the agent's fact is judged and verified.
    let judged = env
        .run(&[
            "verify",
            TASK_BRANCH,
            "--json",
            "--judge-cmd",
            "sh judge.sh",
        ])
        .expect(OK);
    assert!(!judged.stderr.contains("no judge"), "{judged:?}");
    assert_eq!(
        judged.json()["verified"],
        1,
        "the neutral run must not count as the agent's fact having been judged: {judged:?}"
    );
    assert_eq!(status(&env), "verified");

    // Without a judge again: the judge's verdict stands.
    let again = env.run(&["verify", &b_branch, "--json"]).expect(OK);
    assert!(again.stderr.contains("--judge-cmd"), "{again:?}");
    assert_eq!(
        status(&env),
        "verified",
        "a neutral run undid the judge's verdict: {again:?}"
    );
}
