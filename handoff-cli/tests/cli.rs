//! Every command of the `handoff` binary on a temporary store: output, `--json`, exit codes,
//! and bad input that leaves the store as it was.

mod common;

use common::{Env, FAKE_SECRET, binary, finish, secret_in};
use serde_json::Value;

const OK: i32 = 0;
const INVALID: i32 = 2;
const NOT_FOUND: i32 = 3;
const CONFLICT: i32 = 4;
const CHAIN_VIOLATION: i32 = 5;
const STORAGE: i32 = 6;
const INVALID_TRANSITION: i32 = 7;

#[test]
fn read_commands_on_a_missing_store_fail_and_create_nothing() {
    let env = Env::new();
    let commands: &[&[&str]] = &[
        &["list"],
        &["show", "h1"],
        &["chain", "t1"],
        &["events"],
        &["stats"],
        &["export"],
        &["claim", "h1", "--agent", "a"],
        &["claim-next", "--agent", "a"],
        &["heartbeat", "h1", "--token", "1", "--secret", FAKE_SECRET],
        &["release", "h1", "--token", "1", "--secret", FAKE_SECRET],
        &["complete", "h1", "--token", "1", "--secret", FAKE_SECRET],
        &["cancel", "h1", "--token", "1", "--secret", FAKE_SECRET],
        &["policy", "show"],
        &["reject", "h1", "--agent", "a", "--reason", "no"],
        &["cancel", "h1", "--by", "a"],
    ];
    for args in commands {
        let run = env.run(args).expect(STORAGE);
        assert!(
            run.stderr.contains("does not exist"),
            "{args:?}: {}",
            run.stderr
        );
        let mut json_args = args.to_vec();
        json_args.push("--json");
        let error = env.run(&json_args).expect(STORAGE).error();
        assert_eq!(error["code"], "STORAGE");
        assert!(
            error["path"]
                .as_str()
                .is_some_and(|p| p.ends_with("handoff.db"))
        );
    }
    assert!(
        env.files().is_empty(),
        "files were created: {:?}",
        env.files()
    );
}

#[test]
fn a_corrupt_store_is_refused_and_left_untouched() {
    let env = Env::new();
    let garbage = "this is not an SQLite database\n".repeat(200);
    std::fs::write(&env.db, &garbage).expect("write garbage");
    for args in [
        &["list"][..],
        &["create", "--task-id", "t1", "--goal", "g"],
        &["import", "-"],
    ] {
        let run = env.run_with_input(args, Some("")).expect(STORAGE);
        assert!(
            run.stderr.contains("not a usable handoff-core store"),
            "{}",
            run.stderr
        );
    }
    assert_eq!(std::fs::read_to_string(&env.db).expect("read"), garbage);
    assert_eq!(env.files(), ["handoff.db"]);
}

#[test]
fn create_list_show_in_tables_and_json() {
    let env = Env::new();
    let id = env.create(&[
        "--task-id",
        "login-bug",
        "--goal",
        "Fix the login bug",
        "--from-agent",
        "claude",
        "--to-agent",
        "gemini",
        "--kind",
        "partial",
        "--reason",
        "context_limit_85",
        "--context-pct",
        "85",
        "--progress",
        "Reproduced; the fix is next",
        "--completed",
        "wrote a failing test",
        "--pending",
        "fix the session check",
        "--pending",
        "run the suite",
        "--decision",
        "keep bcrypt",
        "--warning",
        "the staging db is shared",
        "--file",
        "src/auth.rs",
        "--instructions",
        "Start from the failing test",
        "--metadata",
        r#"{"ticket": 42, "labels": ["auth"]}"#,
    ]);
    let h = env.show(&id);
    assert_eq!(h["status"], "pending");
    assert_eq!(h["kind"], "partial");
    assert_eq!(h["reason"], "context_limit_85");
    assert_eq!(h["context_usage_percent"], 85);
    assert_eq!(
        h["pending_steps"],
        serde_json::json!(["fix the session check", "run the suite"])
    );
    assert_eq!(h["key_decisions"], serde_json::json!(["keep bcrypt"]));
    assert_eq!(h["modified_files"], serde_json::json!(["src/auth.rs"]));
    assert_eq!(
        h["metadata"],
        serde_json::json!({"ticket": 42, "labels": ["auth"]})
    );

    let table = env.run(&["list"]).expect(OK).stdout;
    assert!(table.starts_with("ID"), "{table}");
    assert!(
        table.contains(&id) && table.contains("claude → gemini"),
        "{table}"
    );
    assert!(table.contains("Fix the login bug"), "{table}");

    let md = env.run(&["show", &id]).expect(OK).stdout;
    assert!(md.contains("## Current Goal\n\nFix the login bug"), "{md}");
    assert!(md.contains("- [ ] fix the session check"), "{md}");
    assert!(md.contains("keep bcrypt"), "{md}");

    let listed = env.run(&["list", "--json"]).expect(OK).json();
    assert_eq!(listed.as_array().map(Vec::len), Some(1));
    assert_eq!(listed[0], h);

    // Filters.
    env.create(&["--task-id", "other", "--goal", "Another"]);
    let by_task = env
        .run(&["list", "--task-id", "other", "--json"])
        .expect(OK)
        .json();
    assert_eq!(by_task.as_array().map(Vec::len), Some(1));
    let by_agent = env
        .run(&["list", "--to-agent", "gemini", "--json"])
        .expect(OK)
        .json();
    assert_eq!(by_agent[0]["id"], id.as_str());
    let limited = env
        .run(&["list", "--limit", "1", "--json"])
        .expect(OK)
        .json();
    assert_eq!(limited.as_array().map(Vec::len), Some(1));
    let none = env
        .run(&["list", "--status", "completed"])
        .expect(OK)
        .stdout;
    assert_eq!(none, "no handoffs\n");
}

#[test]
fn db_is_taken_before_or_after_the_subcommand_or_from_the_environment() {
    let env = Env::new();
    let db = env.db.to_str().expect("utf-8 path");
    let mut after = std::process::Command::new(binary());
    after
        .args(["create", "--task-id", "t1", "--goal", "g", "--db", db])
        .env_remove("HANDOFF_DB");
    finish(&mut after, None).expect(OK);
    let mut from_env = std::process::Command::new(binary());
    from_env.args(["list", "--json"]).env("HANDOFF_DB", db);
    let listed = finish(&mut from_env, None).expect(OK).json();
    assert_eq!(listed.as_array().map(Vec::len), Some(1));
    // The default is ./handoff.db.
    let mut default = std::process::Command::new(binary());
    default
        .args(["list", "--json"])
        .env_remove("HANDOFF_DB")
        .current_dir(env.dir.path());
    let listed = finish(&mut default, None).expect(OK).json();
    assert_eq!(listed.as_array().map(Vec::len), Some(1));
}

#[test]
fn bad_create_input_is_refused_with_exit_2_and_writes_nothing() {
    let env = Env::new();
    // Usage errors (clap) and validation errors (the core) alike.
    let cases: &[&[&str]] = &[
        &["create", "--goal", "no task"],
        &["create", "--task-id", "t1"],
        &[
            "create",
            "--task-id",
            "t1",
            "--goal",
            "g",
            "--kind",
            "sideways",
        ],
        &[
            "create",
            "--task-id",
            "t1",
            "--goal",
            "g",
            "--reason",
            "bored",
        ],
        &[
            "create",
            "--task-id",
            "t1",
            "--goal",
            "g",
            "--context-pct",
            "300",
        ],
        &[
            "create",
            "--task-id",
            "t1",
            "--goal",
            "g",
            "--context-pct",
            "150",
        ],
        &["create", "--task-id", "t1", "--goal", "  "],
        &["create", "--task-id", "bad id!", "--goal", "g"],
        &[
            "create",
            "--task-id",
            "t1",
            "--goal",
            "g",
            "--metadata",
            "[1]",
        ],
        &[
            "create",
            "--task-id",
            "t1",
            "--goal",
            "g",
            "--metadata",
            "{oops",
        ],
        &[
            "create",
            "--task-id",
            "t1",
            "--goal",
            "g",
            "--expires-at",
            "tomorrow",
        ],
        &["create", "--json-input", "-", "--goal", "g"],
        &["frobnicate"],
        &["list", "--status", "sleeping"],
        &["claim", "h1"],
        &["heartbeat", "h1", "--token", "minus-one"],
    ];
    for args in cases {
        let run = env.run(args);
        assert_eq!(run.code, INVALID, "{args:?}: {run:#?}");
        assert!(!run.stderr.is_empty(), "{args:?}: no message");
    }
    assert!(
        env.files().is_empty(),
        "files were created: {:?}",
        env.files()
    );

    // With --json, a usage error is JSON too.
    let usage = env.run(&["claim", "h1", "--json"]).expect(INVALID).error();
    assert_eq!(usage["code"], "VALIDATION");
    assert!(
        usage["message"]
            .as_str()
            .is_some_and(|m| m.contains("--agent")),
        "{usage}"
    );

    // With --json, a validation error lists every problem.
    let run = env
        .run(&[
            "create",
            "--json",
            "--task-id",
            "bad id!",
            "--goal",
            "",
            "--context-pct",
            "101",
        ])
        .expect(INVALID);
    let error = run.error();
    assert_eq!(error["code"], "VALIDATION");
    let fields: Vec<&str> = error["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter_map(|p| p["field"].as_str())
        .collect();
    // Named by the arguments (issue #13): `--context-pct` fills context_usage_percent.
    for field in ["task_id", "goal", "context_pct"] {
        assert!(fields.contains(&field), "{field} missing from {fields:?}");
    }
    assert!(env.files().is_empty());
}

#[test]
fn create_reads_a_new_handoff_json_and_is_idempotent_with_an_id() {
    let env = Env::new();
    let input = r#"{"id": "h-fixed", "task_id": "t1", "goal": "From JSON",
                    "pending_steps": ["one", "two"], "metadata": {"k": [1, 2]}}"#;
    let first = env
        .run_with_input(&["create", "--json", "--json-input", "-"], Some(input))
        .expect(OK)
        .json();
    assert_eq!(first["id"], "h-fixed");
    assert_eq!(first["pending_steps"], serde_json::json!(["one", "two"]));
    let file = env.dir.path().join("new.json");
    std::fs::write(&file, input).expect("write");
    let again = env
        .run(&[
            "create",
            "--json",
            "--json-input",
            file.to_str().expect("path"),
        ])
        .expect(OK)
        .json();
    assert_eq!(
        again, first,
        "same id and content returns the stored record"
    );

    let different = r#"{"id": "h-fixed", "task_id": "t1", "goal": "Something else"}"#;
    let run = env
        .run_with_input(&["create", "--json", "--json-input", "-"], Some(different))
        .expect(CONFLICT);
    assert_eq!(run.error()["code"], "CONFLICT");

    let unknown = r#"{"task_id": "t1", "goal": "g", "pending": ["python name"]}"#;
    let run = env
        .run_with_input(&["create", "--json-input", "-"], Some(unknown))
        .expect(INVALID);
    assert!(run.stderr.contains("unknown field"), "{}", run.stderr);
    let run = env
        .run(&["create", "--json-input", "/no/such/file.json"])
        .expect(INVALID);
    assert!(run.stderr.contains("cannot read"), "{}", run.stderr);
    assert_eq!(
        env.run(&["list", "--json"])
            .expect(OK)
            .json()
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[test]
fn claim_heartbeat_complete_with_fencing_tokens() {
    let env = Env::new();
    let id = env.create(&[
        "--task-id",
        "t1",
        "--goal",
        "Ship it",
        "--from-agent",
        "claude",
    ]);
    let run = env.run(&["claim", &id, "--agent", "gemini"]).expect(OK);
    assert!(run.stdout.contains("with token 1"), "{}", run.stdout);
    let secret = secret_in(&run.stdout);
    assert!(
        run.stdout.contains("## Current Goal\n\nShip it"),
        "{}",
        run.stdout
    );

    // A second claimer loses while the lease is live.
    let lost = env
        .run(&["claim", &id, "--agent", "codex", "--json"])
        .expect(CONFLICT);
    assert_eq!(lost.error()["code"], "ALREADY_CLAIMED");
    assert_eq!(lost.error()["holder"], "gemini");

    // Only the current token works.
    let stale = env
        .run(&[
            "heartbeat",
            &id,
            "--token",
            "9",
            "--secret",
            &secret,
            "--json",
        ])
        .expect(CONFLICT);
    assert_eq!(stale.error()["code"], "LEASE_LOST");
    let beat = env
        .run(&[
            "heartbeat",
            &id,
            "--token",
            "1",
            "--secret",
            &secret,
            "--lease-seconds",
            "600",
            "--json",
        ])
        .expect(OK)
        .json();
    assert_eq!(beat["status"], "claimed");

    let done = env
        .run(&[
            "complete",
            &id,
            "--token",
            "1",
            "--secret",
            &secret,
            "--outcome",
            "shipped",
            "--json",
        ])
        .expect(OK)
        .json();
    assert_eq!(done["status"], "completed");
    assert_eq!(done["outcome"], "shipped");

    // Finished: the token is spent and the handoff cannot be claimed again.
    env.run(&["complete", &id, "--token", "1", "--secret", &secret])
        .expect(CONFLICT);
    let finished = env
        .run(&["claim", &id, "--agent", "codex", "--json"])
        .expect(INVALID_TRANSITION);
    assert_eq!(finished.error()["code"], "INVALID_TRANSITION");
    assert_eq!(finished.error()["status"], "completed");

    let missing = env.run(&["show", "no-such-id", "--json"]).expect(NOT_FOUND);
    assert_eq!(missing.error()["code"], "NOT_FOUND");
    env.run(&["claim", "no-such-id", "--agent", "a"])
        .expect(NOT_FOUND);
    env.run(&["show", "not an id"]).expect(INVALID);
}

#[test]
fn claim_next_release_reject_cancel() {
    let env = Env::new();
    let nothing = env.run(&["claim-next", "--agent", "a"]);
    // A missing store is an error; an empty one has nothing to claim.
    assert_eq!(nothing.code, STORAGE);
    let first = env.create(&["--task-id", "t1", "--goal", "first"]);
    let second = env.create(&["--task-id", "t2", "--goal", "second", "--to-agent", "bob"]);

    let claim = env
        .run(&["claim-next", "--agent", "alice", "--json"])
        .expect(OK)
        .json();
    assert_eq!(claim["handoff_id"], first.as_str());
    assert_eq!(claim["token"], 1);
    assert!(
        claim["markdown"]
            .as_str()
            .is_some_and(|m| m.contains("first"))
    );
    // The other one is addressed to bob.
    let none = env
        .run(&["claim-next", "--agent", "alice", "--json"])
        .expect(OK);
    assert_eq!(none.json(), Value::Null);
    assert_eq!(
        env.run(&["claim-next", "--agent", "alice"])
            .expect(OK)
            .stdout,
        "nothing to claim\n"
    );

    let released = env
        .run(&[
            "release",
            &first,
            "--token",
            "1",
            "--secret",
            claim["claim_secret"].as_str().expect("secret"),
            "--reason",
            "out of time",
            "--json",
        ])
        .expect(OK)
        .json();
    assert_eq!(released["status"], "pending");
    assert_eq!(released["attempts"], 1);
    let again = env
        .run(&[
            "claim-next",
            "--agent",
            "carol",
            "--task-id",
            "t1",
            "--json",
        ])
        .expect(OK)
        .json();
    assert_eq!(again["token"], 2, "fencing tokens grow with every claim");
    let failed = env
        .run(&[
            "fail",
            &first,
            "--token",
            "2",
            "--secret",
            again["claim_secret"].as_str().expect("secret"),
            "--error",
            "the API timed out",
            "--json",
        ])
        .expect(OK)
        .json();
    assert_eq!(failed["status"], "pending");
    assert_eq!(failed["attempts"], 2);
    let events = env.run(&["events", &first, "--json"]).expect(OK).json();
    assert!(
        events.as_array().and_then(|e| e.last()).is_some_and(
            |e| e["kind"] == "attempt_failed" && e["detail"]["error"] == "the API timed out"
        ),
        "{events}"
    );

    // Only the addressee may reject.
    env.run(&[
        "reject", &second, "--agent", "mallory", "--reason", "mine now",
    ])
    .expect(INVALID_TRANSITION);
    let rejected = env
        .run(&[
            "reject",
            &second,
            "--agent",
            "bob",
            "--reason",
            "not my area",
            "--json",
        ])
        .expect(OK)
        .json();
    assert_eq!(rejected["status"], "rejected");

    let cancelled = env
        .run(&[
            "cancel", &first, "--by", "claude", "--reason", "obsolete", "--json",
        ])
        .expect(OK)
        .json();
    assert_eq!(cancelled["status"], "cancelled");
    env.run(&["cancel", &first, "--by", "claude"])
        .expect(INVALID_TRANSITION);
}

#[test]
fn chain_events_and_stats() {
    let env = Env::new();
    let a = env.create(&[
        "--task-id",
        "t1",
        "--goal",
        "g",
        "--from-agent",
        "claude",
        "--to-agent",
        "gemini",
    ]);
    let claim = env
        .run(&["claim", &a, "--agent", "gemini", "--json"])
        .expect(OK)
        .json();
    let token = claim["token"].to_string();
    let secret = claim["claim_secret"].as_str().expect("secret");
    env.run(&["complete", &a, "--token", &token, "--secret", secret])
        .expect(OK);
    env.create(&[
        "--task-id",
        "t1",
        "--goal",
        "g2",
        "--from-agent",
        "gemini",
        "--to-agent",
        "codex",
        "--parent-id",
        &a,
    ]);

    let chain = env.run(&["chain", "t1", "--json"]).expect(OK).json();
    assert_eq!(
        chain["path"],
        serde_json::json!(["claude", "gemini", "codex"])
    );
    assert_eq!(chain["hops"].as_array().map(Vec::len), Some(2));
    let text = env.run(&["chain", "t1"]).expect(OK).stdout;
    assert!(text.starts_with("t1: claude → gemini → codex"), "{text}");
    assert_eq!(
        env.run(&["chain", "empty"]).expect(OK).stdout,
        "task empty has no hops\n"
    );

    // A hop back to an earlier agent breaks the default chain policy.
    let revisit = env
        .run(&[
            "create",
            "--json",
            "--task-id",
            "t1",
            "--goal",
            "g3",
            "--from-agent",
            "codex",
            "--to-agent",
            "claude",
        ])
        .expect(CHAIN_VIOLATION);
    assert_eq!(revisit.error()["code"], "CHAIN_VIOLATION");

    let events = env.run(&["events", &a, "--json"]).expect(OK).json();
    let kinds: Vec<&str> = events
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["created", "claimed", "completed"]);
    // A created event names where the work goes; the record is `show`'s.
    assert_eq!(
        events[0]["detail"],
        serde_json::json!({"task_id": "t1", "to_agent": "gemini"})
    );
    let all = env.run(&["events", "--json"]).expect(OK).json();
    assert_eq!(all.as_array().map(Vec::len), Some(4));
    let table = env.run(&["events"]).expect(OK).stdout;
    assert!(
        table.starts_with("SEQ") && table.contains("completed"),
        "{table}"
    );
    let created = table
        .lines()
        .find(|line| line.contains(&a) && line.contains("created"))
        .unwrap_or_else(|| panic!("no created row for {a}:\n{table}"));
    assert!(
        created.contains("claude") && created.ends_with("task_id=t1 to_agent=gemini"),
        "{created}"
    );
    // An open handoff is addressed to `*`, as in the tables of records.
    let open = env.create(&["--task-id", "t2", "--goal", "anyone"]);
    let table = env.run(&["events", &open]).expect(OK).stdout;
    assert!(table.contains("task_id=t2 to_agent=*"), "{table}");
    let json = env.run(&["events", &open, "--json"]).expect(OK).json();
    assert_eq!(
        json[0]["detail"],
        serde_json::json!({"task_id": "t2", "to_agent": null})
    );

    let stats = env.run(&["stats", "--json"]).expect(OK).json();
    let pair = stats
        .as_array()
        .expect("stats")
        .iter()
        .find(|s| s["from_agent"] == "claude")
        .expect("claude → gemini");
    assert_eq!(pair["to_agent"], "gemini");
    assert_eq!(pair["total"], 1);
    assert_eq!(pair["completed"], 1);
    assert!(pair["median_claim_seconds"].is_number());
    let table = env.run(&["stats"]).expect(OK).stdout;
    assert!(
        table
            .lines()
            .any(|l| l.split_whitespace().take(2).eq(["claude", "gemini"])),
        "{table}"
    );
}

#[test]
fn export_then_import_is_idempotent_and_validated() {
    let source = Env::new();
    let a = source.create(&[
        "--task-id",
        "t1",
        "--goal",
        "first",
        "--from-agent",
        "claude",
        "--metadata",
        r#"{"n": 1}"#,
    ]);
    source.create(&[
        "--task-id",
        "t1",
        "--goal",
        "second",
        "--from-agent",
        "gemini",
        "--parent-id",
        &a,
    ]);
    let claim = source
        .run(&["claim", &a, "--agent", "gemini", "--json"])
        .expect(OK)
        .json();
    source
        .run(&[
            "complete",
            &a,
            "--token",
            &claim["token"].to_string(),
            "--secret",
            claim["claim_secret"].as_str().expect("secret"),
        ])
        .expect(OK);
    let lines = source.run(&["export"]).expect(OK).stdout;
    assert_eq!(lines.lines().count(), 2);
    for line in lines.lines() {
        let _: Value = serde_json::from_str(line).expect("each line is a JSON record");
    }
    let file = source.dir.path().join("export.jsonl");
    source
        .run(&["export", "--output", file.to_str().expect("path")])
        .expect(OK);
    assert_eq!(std::fs::read_to_string(&file).expect("read"), lines);

    let target = Env::new();
    let first = target
        .run(&["import", file.to_str().expect("path"), "--json"])
        .expect(OK)
        .json();
    assert_eq!(first["created"], 2);
    assert_eq!(first["finished_in_source"], 1);
    let second = target
        .run_with_input(&["import", "--json"], Some(&lines))
        .expect(OK)
        .json();
    assert_eq!(second["created"], 0, "importing again changes nothing");
    assert_eq!(second["already_present"], 2);
    let imported = target.run(&["list", "--json"]).expect(OK).json();
    let source_records = source.run(&["list", "--json"]).expect(OK).json();
    for (got, want) in imported
        .as_array()
        .expect("list")
        .iter()
        .zip(source_records.as_array().expect("list"))
    {
        for field in [
            "id",
            "task_id",
            "goal",
            "parent_id",
            "from_agent",
            "metadata",
        ] {
            assert_eq!(got[field], want[field], "{field}");
        }
    }
    assert_eq!(
        target
            .run(&["events", "--json"])
            .expect(OK)
            .json()
            .as_array()
            .map(Vec::len),
        Some(2)
    );

    // --unfinished-only leaves finished records out (a record whose parent is left out is
    // refused: its parent_id would point nowhere).
    let mixed = Env::new();
    let done = mixed.create(&["--task-id", "t1", "--goal", "done"]);
    mixed.create(&["--task-id", "t2", "--goal", "open"]);
    let claim = mixed
        .run(&["claim", &done, "--agent", "a", "--json"])
        .expect(OK)
        .json();
    mixed
        .run(&[
            "complete",
            &done,
            "--token",
            &claim["token"].to_string(),
            "--secret",
            claim["claim_secret"].as_str().expect("secret"),
        ])
        .expect(OK);
    let mixed_lines = mixed.run(&["export"]).expect(OK).stdout;
    let partial = Env::new();
    let only = partial
        .run_with_input(
            &["import", "--unfinished-only", "--json"],
            Some(&mixed_lines),
        )
        .expect(OK)
        .json();
    assert_eq!(only["created"], 1);
    assert_eq!(only["skipped"], 1);
    let kept = partial.run(&["list", "--json"]).expect(OK).json();
    assert_eq!(kept[0]["goal"], "open");
    let orphan = Env::new();
    orphan
        .run_with_input(&["import", "--unfinished-only"], Some(&lines))
        .expect(INVALID);

    // A bad line is refused with its line number; nothing is imported.
    let fresh = Env::new();
    let bad = format!(
        "{}\n{{\"not\": \"a record\"}}\n",
        lines.lines().next().expect("line")
    );
    let run = fresh
        .run_with_input(&["import"], Some(&bad))
        .expect(INVALID);
    assert!(run.stderr.contains("line 2"), "{}", run.stderr);
    assert!(fresh.files().is_empty(), "{:?}", fresh.files());
    fresh.run(&["import", "/no/such/file"]).expect(INVALID);
}

#[test]
fn help_documents_exit_codes() {
    let mut help = std::process::Command::new(binary());
    help.arg("--help");
    let run = finish(&mut help, None).expect(OK);
    assert!(run.stdout.contains("Exit codes"), "{}", run.stdout);
    for code in [
        "VALIDATION",
        "NOT_FOUND",
        "ALREADY_CLAIMED",
        "LEASE_LOST",
        "CONFLICT",
        "CHAIN_VIOLATION",
        "STORAGE",
        "INVALID_TRANSITION",
        "BUSY",
    ] {
        assert!(run.stdout.contains(code), "{code} missing from help");
    }
    for command in [
        "list",
        "show",
        "create",
        "claim",
        "claim-next",
        "mcp",
        "import",
        "export",
    ] {
        assert!(run.stdout.contains(command), "{command} missing from help");
    }
}
