#![cfg(unix)] // The successor is a shell command.
//! Secrets leave neither the CLI nor the MCP server (docs/design.md §2): a key written into every text
//! field of a record never appears in what `show`, `list`, `claim`, `claim-next`, `events`,
//! `create`, `complete`, the spawned successor's prompt and the MCP tools return, unless the
//! owner asks for `--no-redact`. `export` stays lossless.

mod common;

use common::{Env, Mcp};
use serde_json::{Value, json};

/// An OpenAI project key and an AWS access key id, as the built-in rules know them.
fn secrets() -> [String; 2] {
    let openai = format!("sk-proj-{}", "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7n");
    let aws = "AKIAQ3EGRTZ4KLMNB2VX".to_owned();
    [openai, aws]
}

fn assert_clean(what: &str, output: &str) {
    for secret in secrets() {
        assert!(
            !output.contains(&secret),
            "{what} shows a secret:\n{output}"
        );
    }
    // The prefix of a key is not shown either (tables clip long text).
    assert!(
        !output.contains("sk-proj-aB3"),
        "{what} shows part of a key:\n{output}"
    );
}

fn assert_leaks(what: &str, output: &str) {
    for secret in secrets() {
        assert!(
            output.contains(&secret),
            "{what} should show {secret}:\n{output}"
        );
    }
}

/// Text with both secrets in it.
fn with_secrets(label: &str) -> String {
    let [openai, aws] = secrets();
    format!("{label} {openai} and {aws}")
}

/// `create` flags putting both secrets into every text field the CLI takes.
fn secret_flags() -> Vec<String> {
    let mut flags = vec!["--task-id".to_owned(), "t-secret".to_owned()];
    for flag in [
        "--goal",
        "--progress",
        "--instructions",
        "--completed",
        "--pending",
        "--decision",
        "--assumption",
        "--warning",
        "--error",
        "--file",
        "--blocker",
        "--locked-file",
        "--priority-item",
        "--success-criterion",
    ] {
        flags.push(flag.to_owned());
        flags.push(with_secrets(flag.trim_start_matches("--")));
    }
    flags.push("--metadata".to_owned());
    flags.push(
        json!({"token": with_secrets("meta"), "nested": {"list": [with_secrets("deep")]}})
            .to_string(),
    );
    flags.push("--from-agent".to_owned());
    flags.push("claude".to_owned());
    flags
}

/// The same content as `handoff_create` arguments.
fn secret_args(task_id: &str) -> Value {
    let mut args = json!({"task_id": task_id, "from_agent": "claude"});
    for field in ["goal", "progress", "instructions"] {
        args[field] = json!(with_secrets(field));
    }
    for field in [
        "completed",
        "pending",
        "decisions",
        "assumptions",
        "warnings",
        "errors",
        "files",
        "blockers",
        "locked_files",
        "priority_items",
        "success_criteria",
    ] {
        args[field] = json!([with_secrets(field)]);
    }
    args["metadata"] = json!({"token": with_secrets("meta"), "nested": [with_secrets("deep")]});
    args
}

#[test]
fn the_cli_redacts_every_record_it_prints_unless_told_not_to() {
    let env = Env::new();
    let flags = secret_flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut create = vec!["create"];
    create.extend(&flags);
    let created = env.run(&create).expect(0);
    assert_clean("create", &created.stdout);
    let mut create_json = create.clone();
    create_json.push("--json");
    let created = env.run(&create_json).expect(0);
    assert_clean("create --json", &created.stdout);
    let id = created.json()["id"].as_str().expect("id").to_owned();
    // An `error:` reason carries its message into the record.
    let failing = env.create(&[
        "--task-id",
        "t-err",
        "--goal",
        "g",
        "--reason",
        &format!("error: {}", with_secrets("crashed")),
    ]);

    for args in [
        vec!["show", id.as_str()],
        vec!["show", id.as_str(), "--json"],
        vec!["show", failing.as_str()],
        vec!["show", failing.as_str(), "--json"],
        vec!["list"],
        vec!["list", "--json"],
        vec!["events"],
        vec!["events", "--json"],
    ] {
        let run = env.run(&args).expect(0);
        assert_clean(&args.join(" "), &run.stdout);
    }
    // The owner's opt-out, and the lossless export. (The event log holds no record content:
    // a created event names the task and the addressee; the outcome below is in it.)
    for args in [
        vec!["show", id.as_str(), "--no-redact"],
        vec!["--no-redact", "show", id.as_str(), "--json"],
        vec!["list", "--json", "--no-redact"],
        vec!["export"],
    ] {
        let run = env.run(&args).expect(0);
        assert_leaks(&args.join(" "), &run.stdout);
    }
    let unredacted = env.run(&["show", &failing, "--no-redact"]).expect(0);
    assert_leaks("show error reason --no-redact", &unredacted.stdout);

    let claim = env
        .run(&["claim", &id, "--agent", "gemini", "--json"])
        .expect(0);
    assert_clean("claim --json", &claim.stdout);
    let token = claim.json()["token"].to_string();
    let secret = claim.json()["claim_secret"]
        .as_str()
        .expect("secret")
        .to_owned();
    let outcome = with_secrets("outcome");
    let done = env
        .run(&[
            "complete",
            &id,
            "--token",
            &token,
            "--secret",
            &secret,
            "--outcome",
            &outcome,
        ])
        .expect(0);
    assert_clean("complete", &done.stdout);
    for args in [
        vec!["show", id.as_str()],
        vec!["show", id.as_str(), "--json"],
        vec!["events", id.as_str()],
        vec!["events", id.as_str(), "--json"],
    ] {
        assert_clean(&args.join(" "), &env.run(&args).expect(0).stdout);
    }
    let raw = env.run(&["events", &id, "--json", "--no-redact"]).expect(0);
    assert!(raw.stdout.contains(&secrets()[0]), "{}", raw.stdout);

    // claim-next in text, then claim --spawn: the successor's prompt and the report.
    let second = env.run(&create).expect(0);
    assert_clean("create", &second.stdout);
    let next = env.run(&["claim-next", "--agent", "codex"]).expect(0);
    assert_clean("claim-next", &next.stdout);
    assert!(next.stdout.contains("[REDACTED:"), "{}", next.stdout);
    env.run(&create).expect(0);
    let prompt = env.dir.path().join("prompt.md");
    let spawn = format!("cat > '{}'; echo done", prompt.display());
    let more = with_secrets("also");
    let report = env
        .run(&[
            "claim-next",
            "--agent",
            "local",
            "--spawn",
            &spawn,
            "--additional-instructions",
            &more,
            "--json",
        ])
        .expect(0);
    assert_clean("claim-next --spawn report", &report.stdout);
    let written = std::fs::read_to_string(&prompt).expect("prompt");
    assert_clean("the successor's prompt", &written);
    assert!(written.contains("## Additional Instructions"), "{written}");
    assert!(written.contains("## Current Goal"), "{written}");

    // With --no-redact the successor's packet stays redacted (the core always redacts it):
    // only the caller's own additional instructions reach it as written.
    env.run(&create).expect(0);
    env.run(&[
        "--no-redact",
        "claim-next",
        "--agent",
        "local",
        "--spawn",
        &spawn,
        "--additional-instructions",
        &more,
    ])
    .expect(0);
    let written = std::fs::read_to_string(&prompt).expect("prompt");
    let (packet, more) = written
        .split_once("## Additional Instructions")
        .expect("the additional instructions");
    assert_clean("the successor's packet with --no-redact", packet);
    assert!(packet.contains("[REDACTED:"), "{packet}");
    assert_leaks("the additional instructions with --no-redact", more);
}

#[test]
fn errors_that_quote_their_input_are_redacted_too() {
    let env = Env::new();
    let [openai, _] = secrets();
    for args in [
        vec![
            "create",
            "--task-id",
            "t",
            "--goal",
            "g",
            "--reason",
            openai.as_str(),
        ],
        vec![
            "create",
            "--task-id",
            "t",
            "--goal",
            "g",
            "--reason",
            openai.as_str(),
            "--json",
        ],
        // A usage error, from clap.
        vec![
            "claim",
            "h1",
            "--agent",
            "a",
            "--lease-seconds",
            openai.as_str(),
        ],
        vec![
            "claim",
            "h1",
            "--agent",
            "a",
            "--lease-seconds",
            openai.as_str(),
            "--json",
        ],
    ] {
        let run = env.run(&args).expect(2);
        assert_clean(&args.join(" "), &run.stderr);
        assert!(run.stderr.contains("[REDACTED:"), "{}", run.stderr);
    }
    let run = env
        .run(&[
            "create",
            "--task-id",
            "t",
            "--goal",
            "g",
            "--reason",
            &openai,
            "--no-redact",
        ])
        .expect(2);
    assert!(run.stderr.contains(&openai), "{}", run.stderr);

    let mut mcp = Mcp::start(&env, &[]);
    let result = mcp.call(
        "handoff_create",
        json!({"task_id": "t", "goal": "g", "reason": openai}),
    );
    assert_eq!(result["isError"], true, "{result}");
    assert_clean("a tool error", &result.to_string());
}

#[test]
fn mcp_redacts_every_tool_result_and_the_successor_prompt() {
    let env = Env::new();
    let prompt = env.dir.path().join("prompt.md");
    let spawn = format!("cat > '{}'; echo done", prompt.display());
    let mut mcp = Mcp::start(&env, &["--spawn", &spawn]);

    let every_text = |result: &Value| result.to_string();
    let created = mcp.call("handoff_create", secret_args("t-mcp"));
    assert_clean("handoff_create", &every_text(&created));
    let id = created["structuredContent"]["handoff"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let failing = mcp.call(
        "handoff_create",
        json!({"task_id": "t-err", "goal": "g", "reason": format!("error: {}", with_secrets("boom"))}),
    );
    assert_clean("handoff_create error reason", &every_text(&failing));
    let failing = failing["structuredContent"]["handoff"]["id"]
        .as_str()
        .expect("id")
        .to_owned();

    for (tool, args) in [
        ("handoff_get", json!({"handoff_id": id})),
        ("handoff_get", json!({"handoff_id": failing})),
        ("handoff_list", json!({})),
        ("handoff_events", json!({})),
    ] {
        let result = mcp.call(tool, args);
        assert_ne!(result["isError"], true, "{result}");
        assert_clean(tool, &every_text(&result));
    }
    let claim = mcp.call(
        "handoff_claim",
        json!({"handoff_id": id, "agent": "gemini"}),
    );
    assert_clean("handoff_claim", &every_text(&claim));
    assert!(Mcp::text(&claim).contains("[REDACTED:"), "{claim}");
    let token = claim["structuredContent"]["token"].clone();
    let secret = claim["structuredContent"]["claim_secret"].clone();
    let done = mcp.call(
        "handoff_complete",
        json!({"handoff_id": id, "token": token, "claim_secret": secret, "outcome": with_secrets("outcome")}),
    );
    assert_clean("handoff_complete", &every_text(&done));
    let events = mcp.call("handoff_events", json!({"handoff_id": id}));
    assert_clean("handoff_events", &every_text(&events));

    // Claim-and-spawn: the prompt, with the call's additional instructions, and the report.
    mcp.ok("handoff_create", secret_args("t-spawn"));
    let ran = mcp.call(
        "handoff_claim_and_spawn",
        json!({"agent": "local", "task_id": "t-spawn",
               "additional_instructions": with_secrets("more")}),
    );
    assert_eq!(ran["structuredContent"]["succeeded"], true, "{ran}");
    assert_clean("handoff_claim_and_spawn", &every_text(&ran));
    let written = std::fs::read_to_string(&prompt).expect("prompt");
    assert_clean("the successor's prompt", &written);
    assert!(
        written.contains("## Additional Instructions\n\nmore [REDACTED:"),
        "{written}"
    );
    // A model cannot turn redaction off: no tool takes such an argument.
    let refused = mcp.err("handoff_get", json!({"handoff_id": id, "redact": false}));
    assert_eq!(refused["code"], "VALIDATION");
    drop(mcp);

    // The owner can, when starting the server.
    let mut raw = Mcp::start(&env, &["--no-redact", "--spawn", &spawn]);
    let got = raw.ok("handoff_get", json!({"handoff_id": id}));
    assert_leaks("handoff_get on a --no-redact server", &got.to_string());
    raw.ok("handoff_create", secret_args("t-raw"));
    raw.ok(
        "handoff_claim_and_spawn",
        json!({"agent": "local", "task_id": "t-raw", "additional_instructions": with_secrets("more")}),
    );
    let written = std::fs::read_to_string(&prompt).expect("prompt");
    assert_leaks("the prompt of a --no-redact server", &written);
}
