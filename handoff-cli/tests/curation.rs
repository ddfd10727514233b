//! Curated memory from the shell: `handoff conversation add`, `cherry-pick`, `facts add`,
//! `verify`, `merge`, `context`, and bad input refused by name with nothing written.

mod common;

use common::{Env, Mcp};
use serde_json::Value;

const OK: i32 = 0;
const INVALID: i32 = 2;
const NOT_FOUND: i32 = 3;

fn field_names(error: &Value) -> Vec<String> {
    error["problems"]
        .as_array()
        .map(|problems| {
            problems
                .iter()
                .filter_map(|p| p["field"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn knowledge_moves_up_from_the_shell_once_verified() {
    let env = Env::new();
    let added = env
        .run(&[
            "conversation",
            "add",
            "task/fix-oauth/agent-b",
            r#"{"role": "user", "content": "the token refresh fails"}"#,
            r#"{"role": "assistant", "content": "let me add retries with backoff"}"#,
            r#"{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "retries added"}]}"#,
            "--title",
            "OAuth refresh",
            "--json",
        ])
        .expect(OK)
        .json();
    assert_eq!(added["message_count"], 3);
    let id = added["id"].as_str().expect("an id").to_owned();

    // Refused whole, naming the argument; nothing written.
    let bad = env
        .run(&["cherry-pick", &id, "feature/x", "--json"])
        .expect(INVALID);
    assert_eq!(field_names(&bad.error()), ["target_branch"]);
    let bad = env
        .run(&[
            "cherry-pick",
            &id,
            "task/fix-oauth",
            "--from-seq",
            "3",
            "--to-seq",
            "2",
            "--json",
        ])
        .expect(INVALID);
    assert_eq!(field_names(&bad.error()), ["to_seq"]);
    env.run(&["cherry-pick", "no-such", "task/fix-oauth"])
        .expect(NOT_FOUND);
    let log = env
        .run(&["curation-events", "--task-id", "fix-oauth", "--json"])
        .expect(OK)
        .json();
    assert_eq!(log.as_array().map(Vec::len), Some(1), "{log}");

    let picked = env
        .run(&[
            "cherry-pick",
            &id,
            "task/fix-oauth",
            "--from-seq",
            "2",
            "--to-seq",
            "3",
            "--json",
        ])
        .expect(OK)
        .json();
    assert_eq!(picked["message_count"], 2);
    let shown = env
        .run(&["conversation", "messages", &id, "--json"])
        .expect(OK)
        .json();
    let marks: Vec<&Value> = shown
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| &m["is_cherry_picked"])
        .collect();
    assert_eq!(marks, [false, true, true]);

    env.run(&[
        "facts",
        "add",
        "task/fix-oauth/agent-b",
        "refresh needs retries with backoff",
        r#"{"text": "the backoff starts at 1s", "confidence": 0.8}"#,
    ])
    .expect(OK);
    // Without a verifier the gate is neutral: nothing verified, nothing merged.
    let neutral = env
        .run(&["verify", "task/fix-oauth/agent-b", "--json"])
        .expect(OK)
        .json();
    assert_eq!(neutral["unverified"], 3);
    let merged = env
        .run(&["merge", "task/fix-oauth/agent-b", "--json"])
        .expect(OK)
        .json();
    assert_eq!(
        (merged["facts"].as_u64(), merged["kept"].as_u64()),
        (Some(0), Some(3))
    );
    // Lowered thresholds do not make the neutral score a verdict: without a judge nothing is
    // written, whatever the thresholds.
    env.run(&[
        "verify",
        "task/fix-oauth/agent-b",
        "--fact-threshold",
        "0.5",
        "--conversation-threshold",
        "0.5",
    ])
    .expect(OK);
    let unchanged = env
        .run(&["merge", "task/fix-oauth/agent-b", "--json"])
        .expect(OK)
        .json();
    assert_eq!(unchanged["facts"].as_u64(), Some(0));
    // A judge (a command that scores every item 0.9) verifies.
    env.run(&[
        "verify",
        "task/fix-oauth/agent-b",
        "--judge-cmd",
        "echo 0.9",
    ])
    .expect(OK);
    let merged = env
        .run(&["merge", "task/fix-oauth/agent-b", "--json"])
        .expect(OK)
        .json();
    assert_eq!(
        (merged["facts"].as_u64(), merged["conversations"].as_u64()),
        (Some(2), Some(1))
    );
    let again = env
        .run(&["merge", "task/fix-oauth/agent-b", "--json"])
        .expect(OK)
        .json();
    assert_eq!(
        (again["facts"].as_u64(), again["conversations"].as_u64()),
        (Some(0), Some(0))
    );
    let bad = env
        .run(&["verify", "main", "--invalidate-below", "0.9", "--json"])
        .expect(INVALID);
    assert_eq!(field_names(&bad.error()), ["invalidate_below"]);

    let handoff = env
        .run(&["create", "fix-oauth", "Ship the refresh fix", "--json"])
        .expect(OK)
        .json();
    let handoff_id = handoff["id"].as_str().expect("an id");
    let packet = env
        .run(&["context", handoff_id, "--budget-tokens", "4000"])
        .expect(OK);
    assert!(
        packet.stdout.contains("refresh needs retries with backoff"),
        "{}",
        packet.stdout
    );
    let short = env
        .run(&["context", handoff_id, "--budget-chars", "300"])
        .expect(OK);
    assert!(
        short.stdout.trim_end().chars().count() <= 300,
        "{}",
        short.stdout
    );
    let short = env
        .run(&["context", handoff_id, "--budget-chars", "300", "--json"])
        .expect(OK)
        .json();
    assert_eq!(
        (short["unit"].as_str(), short["budget"].as_u64()),
        (Some("chars"), Some(300))
    );
    for (args, field) in [
        (vec!["--budget-chars", "0"], "budget_chars"),
        (vec!["--budget-tokens", "0"], "budget_tokens"),
        (
            vec!["--budget-tokens", "10", "--budget-chars", "10"],
            "budget_chars",
        ),
    ] {
        let mut command = vec!["context", handoff_id, "--json"];
        command.extend(args);
        let bad = env.run(&command).expect(INVALID);
        assert_eq!(field_names(&bad.error()), [field]);
    }
    let branches = env.run(&["branches", "--json"]).expect(OK).json();
    assert_eq!(branches[0]["name"], "task/fix-oauth");
    assert_eq!(branches[0]["parent"], "main");
}

#[test]
fn bundles_go_from_one_store_to_another_and_a_task_replays() {
    let source = Env::new();
    let target = Env::new();
    source
        .run(&[
            "facts",
            "add",
            "task/fix-oauth",
            "refresh needs retries with backoff",
        ])
        .expect(OK);
    source
        .run(&["verify", "task/fix-oauth", "--judge-cmd", "echo 0.9"])
        .expect(OK);
    source
        .run(&["create", "fix-oauth", "Ship it", "--from-agent", "claude"])
        .expect(OK);
    let bundle = source
        .run(&[
            "bundle",
            "create",
            "OAuth Playbook",
            "--task-id",
            "fix-oauth",
            "--visibility",
            "team",
            "--json",
        ])
        .expect(OK)
        .json();
    assert!(
        bundle["share_token"]
            .as_str()
            .is_some_and(|t| t.starts_with("kb_"))
    );
    let token = bundle["share_token"].as_str().unwrap_or_default();
    let shared = source
        .run(&["bundle", "shared", token, "--json"])
        .expect(OK)
        .json();
    assert_eq!(shared["id"], bundle["id"]);

    let file = target.dir.path().join("playbook.json");
    std::fs::write(&file, bundle["data"].to_string()).expect("written");
    let file = file.to_str().expect("a path");
    let first = target
        .run(&["bundle", "import", file, "--json"])
        .expect(OK)
        .json();
    assert_eq!(first["facts_added"], 1);
    let again = target
        .run(&["bundle", "import", file, "--json"])
        .expect(OK)
        .json();
    assert_eq!(
        (
            again["facts_added"].as_u64(),
            again["facts_skipped"].as_u64()
        ),
        (Some(0), Some(1))
    );
    // Unsigned: the bundle's verdicts are its claim, not the target's verification.
    let facts = target
        .run(&["facts", "list", "main", "--json"])
        .expect(OK)
        .json();
    assert_eq!(facts[0]["status"], "active", "{facts}");
    assert!(
        facts[0]["verified_by"]
            .as_str()
            .is_some_and(|by| by.starts_with("bundle:sha256:") && !by.contains("signed")),
        "{facts}"
    );
    assert_eq!(first["trusted"], false);

    // Signed with a key the target trusts: the verdicts come in.
    let key_file = source.dir.path().join("bundle.key");
    let key_path = key_file.to_str().expect("a path");
    let made = source
        .run(&["keygen", key_path, "--json"])
        .expect(OK)
        .json();
    let public_key = made["public_key"].as_str().unwrap_or_default().to_owned();
    assert!(public_key.starts_with("ed25519:"), "{made}");
    source.run(&["keygen", key_path]).expect(INVALID);
    let id = bundle["id"].as_str().unwrap_or_default();
    let signed = source
        .run(&["bundle", "sign", id, "--secret-key", key_path, "--json"])
        .expect(OK);
    let secret = std::fs::read_to_string(&key_file).expect("the key file");
    assert!(!signed.stdout.contains(secret.trim()), "{}", signed.stdout);
    let signed = signed.json();
    assert_eq!(
        signed["data"]["signature"]["public_key"],
        public_key.as_str()
    );
    let trusted = target
        .run(&["bundle", "trust", "--trust", &public_key, "--json"])
        .expect(OK)
        .json();
    assert_eq!(trusted[0]["public_key"], public_key.as_str());
    let signed_file = target.dir.path().join("signed.json");
    std::fs::write(&signed_file, signed["data"].to_string()).expect("written");
    let vouched = target
        .run(&[
            "bundle",
            "import",
            signed_file.to_str().expect("a path"),
            "--target-branch",
            "task/vouched",
        ])
        .expect(OK);
    assert!(
        vouched
            .stdout
            .lines()
            .any(|l| l.split_whitespace().eq(["trusted", "yes"])),
        "{}",
        vouched.stdout
    );
    // Its verdicts are taken (a neutral 0.5 stays under the gate) as the signer's.
    let facts = target
        .run(&["facts", "list", "task/vouched", "--json"])
        .expect(OK)
        .json();
    let by = facts[0]["verified_by"].as_str().unwrap_or_default();
    assert!(by.ends_with(&format!("signed by {public_key}")), "{facts}");
    let tampered = bundle["data"].to_string().replace("backoff", "no backoff");
    let bad = target
        .run(&["bundle", "import", &tampered, "--json"])
        .expect(INVALID);
    assert_eq!(field_names(&bad.error()), ["content_hash"]);

    // `handoff replay TASK` is `handoff task replay TASK`: a readable timeline.
    let replay = source.run(&["replay", "fix-oauth"]).expect(OK);
    assert!(
        replay.stdout.contains("handoff.created"),
        "{}",
        replay.stdout
    );
    assert!(
        replay.stdout.contains("curation.bundle_created"),
        "{}",
        replay.stdout
    );
    let json = source
        .run(&["task", "replay", "fix-oauth", "--json"])
        .expect(OK)
        .json();
    assert_eq!(json["agents"][0]["agent"], "claude");
    source.run(&["replay", "no-such-task"]).expect(NOT_FOUND);

    let id = bundle["id"].as_str().unwrap_or_default();
    source
        .run(&["bundle", "visibility", id, "private"])
        .expect(OK);
    source.run(&["bundle", "shared", token]).expect(NOT_FOUND);
    source.run(&["bundle", "delete", id]).expect(OK);
    source.run(&["bundle", "show", id]).expect(NOT_FOUND);
}

/// A judge outside code (`--judge-cmd`): the item's JSON on its standard input, a score on its
/// standard output; used by `verify`, `cherry-pick --verify`, `bundle verify` and
/// `cherry-pick-to-facts`. One that hangs is killed at its timeout, one that fails is named.
#[test]
fn a_judge_command_verifies_picks_bundles_and_draws_facts() {
    let env = Env::new();
    // Scores what mentions backoff high, the rest low; draws one fact when asked for facts.
    // It also records what it read, to show that secrets never reach it.
    std::fs::write(
        env.dir.path().join("judge.sh"),
        r#"item=$(cat)
printf '%s\n' "$item" >> read.log
case "$item" in
  *'"ask":"facts"'*) echo '["the refresh is retried 3 times with backoff"]' ;;
  *backoff*) echo '{"score": 0.9, "explanation": "matches the fix"}' ;;
  *) echo 0.2 ;;
esac
"#,
    )
    .expect("judge script");
    let judge = ["--judge-cmd", "sh judge.sh"];
    let key = "sk-proj-aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7n";
    let added = env
        .run(&[
            "conversation",
            "add",
            "task/fix-oauth/agent-b",
            r#"{"role": "user", "content": "the token refresh fails"}"#,
            r#"{"role": "assistant", "content": "The root cause is a single refresh attempt."}"#,
            r#"{"role": "assistant", "content": "I'll retry the refresh with backoff."}"#,
            "--json",
        ])
        .expect(OK)
        .json();
    let id = added["id"].as_str().expect("an id").to_owned();
    env.run(&[
        "facts",
        "add",
        "task/fix-oauth/agent-b",
        "refresh needs retries with backoff",
        &format!("the test key is {key}"),
    ])
    .expect(OK);

    let mut verify = vec!["verify", "task/fix-oauth/agent-b", "--json"];
    verify.extend(judge);
    let report = env.run(&verify).expect(OK);
    assert!(!report.stderr.contains("neutral"), "{}", report.stderr);
    let report = report.json();
    assert_eq!(
        (report["verified"].as_u64(), report["invalidated"].as_u64()),
        (Some(2), Some(1))
    );
    let read = std::fs::read_to_string(env.dir.path().join("read.log")).expect("the judge read");
    assert!(read.contains(r#""ask":"score""#), "{read}");
    assert!(!read.contains(key) && read.contains("[REDACTED"), "{read}");
    // Without a judge, the CLI says what the neutral score means.
    let neutral = env.run(&["verify", "task/fix-oauth/agent-b"]).expect(OK);
    assert!(neutral.stderr.contains("--judge-cmd"), "{}", neutral.stderr);

    // A verified cherry-pick, with the seed's argument names.
    let mut pick = vec![
        "cherry-pick",
        &id,
        "task/fix-oauth",
        "--from-seq",
        "2",
        "--verify",
        "--json",
    ];
    pick.extend(judge);
    let picked = env.run(&pick).expect(OK).json();
    assert_eq!(picked["verification_status"], "verified");
    assert_eq!(picked["verified_by"], "judge-cmd");
    assert_eq!(picked["explanation"], "matches the fix");
    // `--verify` without a judge is refused by name, nothing written.
    let bad = env
        .run(&["cherry-pick", &id, "task/fix-oauth", "--verify", "--json"])
        .expect(INVALID);
    assert_eq!(field_names(&bad.error()), ["verify"]);

    // Facts drawn by the judge, then by the heuristics.
    let mut draw = vec!["cherry-pick-to-facts", &id, "task/fix-oauth", "--json"];
    draw.extend(judge);
    let drawn = env.run(&draw).expect(OK).json();
    assert_eq!(
        drawn[0]["text"],
        "the refresh is retried 3 times with backoff"
    );
    assert_eq!(drawn[0]["status"], "active");
    let heuristic = env
        .run(&["cherry-pick-to-facts", &id, "main", "--json"])
        .expect(OK)
        .json();
    let texts: Vec<&str> = heuristic
        .as_array()
        .expect("facts")
        .iter()
        .filter_map(|f| f["text"].as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "The root cause is a single refresh attempt.",
            "I'll retry the refresh with backoff."
        ]
    );

    // A bundle's verification is recorded on it.
    let bundle = env
        .run(&[
            "bundle",
            "create",
            "Playbook",
            "--branch",
            "task/fix-oauth",
            "--verified-only",
            "--json",
        ])
        .expect(OK)
        .json();
    let bundle_id = bundle["id"].as_str().expect("a bundle").to_owned();
    let bad = env
        .run(&["bundle", "verify", &bundle_id, "--json"])
        .expect(INVALID);
    assert_eq!(field_names(&bad.error()), ["verifier"]);
    let mut check = vec!["bundle", "verify", &bundle_id, "--json"];
    check.extend(judge);
    let verified = env.run(&check).expect(OK).json();
    assert_eq!(verified["verified_by"], "judge-cmd");
    assert!(
        verified["verification_score"].as_f64().is_some(),
        "{verified}"
    );

    // A judge that hangs is killed at its timeout; one that fails is named, with what it said.
    let started = std::time::Instant::now();
    let hung = env
        .run(&[
            "cherry-pick",
            &id,
            "main",
            "--verify",
            "--judge-cmd",
            "sleep 30",
            "--judge-timeout",
            "1",
            "--json",
        ])
        .expect(INVALID)
        .error();
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(field_names(&hung), ["judge_cmd"]);
    assert!(
        hung["problems"][0]["rule"]
            .as_str()
            .is_some_and(|r| r.contains("timed out")),
        "{hung}"
    );
    // A branch's verification reports the item and goes on.
    let failed = env
        .run(&[
            "verify",
            "task/fix-oauth",
            "--judge-cmd",
            "echo no model key >&2; exit 3",
            "--json",
        ])
        .expect(OK)
        .json();
    assert_eq!(failed["failed"], 2, "{failed}");
    let error = failed["items"][0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("exit code 3") && error.contains("no model key"),
        "{failed}"
    );
}

/// `handoff mcp --judge-cmd`: the operator's judge verifies a pick with the seed's argument
/// names, draws facts and verifies a bundle, for a client that cannot sample.
#[test]
fn the_mcp_server_asks_its_judge_command() {
    let env = Env::new();
    std::fs::write(
        env.dir.path().join("judge.sh"),
        r#"case "$(cat)" in
  *'"ask":"facts"'*) echo '{"facts": ["tokens last 1h"]}' ;;
  *) echo '[0.8, "plausible"]' ;;
esac
"#,
    )
    .expect("judge script");
    let mut mcp = Mcp::start(&env, &["--judge-cmd", "sh judge.sh"]);
    let added = mcp.ok(
        "conversation_add",
        serde_json::json!({"branch": "task/fix-oauth/agent-b", "messages": [
            {"role": "user", "content": "the refresh fails"},
            {"role": "assistant", "content": "I'll retry the refresh with backoff."},
        ]}),
    );
    let id = added["conversation"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    // memory_cherry_pick_conversation's names.
    let picked = mcp.ok(
        "cherry_pick",
        serde_json::json!({"conversation_id": id, "target_branch": "task/fix-oauth",
                           "from_sequence": 1, "to_sequence": 2, "verify": true}),
    );
    assert_eq!(
        picked["conversation"]["verified_by"], "judge-cmd",
        "{picked}"
    );
    assert_eq!(picked["conversation"]["explanation"], "plausible");
    let facts = mcp.ok(
        "cherry_pick_to_facts",
        serde_json::json!({"conversation_id": id, "target_branch": "task/fix-oauth"}),
    );
    assert_eq!(facts["facts"][0]["text"], "tokens last 1h", "{facts}");
    // memory_verify_branch's names.
    let report = mcp.ok(
        "verify",
        serde_json::json!({"branch_name": "task/fix-oauth", "fact_threshold": 0.7}),
    );
    // The pick and the fact (an agent's conversation reaches the task by a cherry-pick).
    assert_eq!(report["verified"], 2, "{report}");
    let bundle = mcp.ok(
        "bundle_create",
        serde_json::json!({"name": "Playbook", "branch_name": "task/fix-oauth"}),
    );
    let bundle_id = bundle["bundle"]["id"]
        .as_str()
        .expect("a bundle")
        .to_owned();
    let verified = mcp.ok("bundle_verify", serde_json::json!({"bundle_id": bundle_id}));
    assert_eq!(
        verified["bundle"]["verification_status"], "verified",
        "{verified}"
    );
    assert_eq!(verified["bundle"]["verified_by"], "judge-cmd");
}
