//! One description per operation (issue #13): every operation of the core's catalog is a CLI
//! subcommand and an MCP tool whose input schema is the operation's argument schema, and both
//! report the core's problems, the same list as every other face, for the shared bad create.

mod common;

use common::{Env, Mcp, secret_in};
use handoff_core::ops;
use serde_json::{Value, json};

const OK: i32 = 0;
const INVALID: i32 = 2;

/// Catalog operations that are no MCP tool: a model must not choose where an unredacted copy
/// of the whole store is written, nor replace a store's content with a file of its choosing.
const NOT_TOOLS: &[&str] = &["backup", "restore"];

/// The fixture every face feeds through its own door: `(input, problems)`.
fn bad_create() -> (Value, Value) {
    let fixture: Value = serde_json::from_str(include_str!(
        "../../handoff-core/tests/fixtures/bad_create.json"
    ))
    .expect("the fixture is JSON");
    (fixture["input"].clone(), fixture["problems"].clone())
}

/// `[[field, rule], ...]` of an error object.
fn problems(error: &Value) -> Value {
    let problems = error["problems"].as_array().expect("problems");
    Value::Array(
        problems
            .iter()
            .map(|p| json!([p["field"], p["rule"]]))
            .collect(),
    )
}

#[test]
fn the_cli_reports_the_shared_problems_of_a_bad_create() {
    let env = Env::new();
    let (input, expected) = bad_create();
    // Each argument as its flag; a list as a repeated one.
    let mut args = vec!["create".to_owned(), "--json".to_owned()];
    for (name, value) in input.as_object().expect("named arguments") {
        let flag = format!("--{}", name.replace('_', "-"));
        let values = match value {
            Value::Array(items) => items.clone(),
            other => vec![other.clone()],
        };
        for value in values {
            args.push(flag.clone());
            args.push(value.as_str().expect("text").to_owned());
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = env.run(&args).expect(INVALID);
    assert_eq!(run.error()["code"], "VALIDATION");
    assert_eq!(problems(&run.error()), expected);
    assert!(env.files().is_empty(), "{:?}", env.files());
}

#[test]
fn the_mcp_server_reports_the_shared_problems_of_a_bad_create() {
    let env = Env::new();
    let (input, expected) = bad_create();
    let mut mcp = Mcp::start(&env, &[]);
    let error = mcp.err("handoff_create", input);
    assert_eq!(error["code"], "VALIDATION");
    assert_eq!(problems(&error), expected);
}

#[test]
fn every_operation_is_a_tool_with_its_argument_schema_and_a_subcommand() {
    let env = Env::new();
    let mut mcp = Mcp::start(&env, &[]);
    let tools = mcp.tools();
    for op in ops::catalog() {
        let name = op.tool();
        let tool = tools.iter().find(|t| t["name"] == name.as_str());
        if NOT_TOOLS.contains(&op.name) {
            assert!(tool.is_none(), "{name} is a tool");
        } else {
            let tool = tool.unwrap_or_else(|| panic!("no tool {name}"));
            // The tools that can ask the client's model take one switch more.
            let mut schema = tool["inputSchema"].clone();
            if let Some(properties) = schema.get_mut("properties").and_then(|p| p.as_object_mut()) {
                properties.remove("use_client_model");
            }
            // The core's arguments, in the compact form a tool lists them (see `mcp::compact`).
            let names = |schema: &Value| {
                schema["properties"]
                    .as_object()
                    .map(|p| p.keys().cloned().collect::<Vec<_>>())
            };
            assert_eq!(names(&schema), names(&op.arguments), "{name}");
            assert_eq!(schema["required"], op.arguments["required"], "{name}");
            assert!(schema.get("$schema").is_none(), "{name}");
            let first_words: String = op.description().chars().take(12).collect();
            assert!(
                tool["description"]
                    .as_str()
                    .is_some_and(|d| d.starts_with(&first_words)),
                "{name}: {tool}"
            );
        }
        let subcommand: Vec<String> = match op.command {
            Some(("", verb)) => vec![verb.to_owned()],
            Some((group, verb)) => vec![group.to_owned(), verb.replace('_', "-")],
            None => vec![op.name.replace('_', "-")],
        };
        let mut args: Vec<&str> = subcommand.iter().map(String::as_str).collect();
        args.push("--help");
        let help = env.run(&args).expect(OK);
        assert!(help.stdout.contains("Usage: handoff"), "{subcommand:?}");
    }
}

#[test]
fn arguments_go_by_flag_or_by_position_under_the_core_names() {
    let env = Env::new();
    // create's positional arguments: the task and the goal.
    let created = env
        .run(&["create", "t1", "Fix it", "--decisions", "keep", "--json"])
        .expect(OK)
        .json();
    assert_eq!(created["goal"], "Fix it");
    assert_eq!(created["key_decisions"], json!(["keep"]));
    let id = created["id"].as_str().expect("id").to_owned();
    // `get` is `show`.
    assert_eq!(env.run(&["get", &id, "--json"]).expect(OK).json()["id"], id);
    // A value given both ways is a usage error.
    env.run(&["get", &id, "--id", &id]).expect(INVALID);

    let batch = env
        .run(&[
            "create-many",
            r#"{"task_id": "t2", "goal": "one"}"#,
            r#"{"task_id": "t3", "goal": "two", "pending": ["p"]}"#,
            "--json",
        ])
        .expect(OK)
        .json();
    assert_eq!(batch.as_array().map(Vec::len), Some(2));
    let refused = env
        .run(&[
            "create-many",
            r#"{"task_id": "t4", "goal": "fine"}"#,
            r#"{"task_id": "t5", "goal": ""}"#,
            "--json",
        ])
        .expect(INVALID);
    assert_eq!(refused.error()["problems"][0]["field"], "items[1].goal");

    // The claim spread into flags; `cancel-claim` withdraws as the holder.
    let claim = env.run(&["claim", &id, "--agent", "a"]).expect(OK);
    let secret = secret_in(&claim.stdout);
    let beat = env
        .run(&[
            "heartbeat",
            "--handoff-id",
            &id,
            "--token",
            "1",
            "--secret",
            &secret,
            "--lease-seconds",
            "1.5",
            "--json",
        ])
        .expect(OK)
        .json();
    assert_eq!(beat["status"], "claimed");
    let cancelled = env
        .run(&[
            "cancel-claim",
            &id,
            "--token",
            "1",
            "--secret",
            &secret,
            "--reason",
            "moot",
            "--json",
        ])
        .expect(OK)
        .json();
    assert_eq!(cancelled["status"], "cancelled");

    assert_eq!(env.run(&["reap", "--json"]).expect(OK).json(), json!(0));
    let pending = env.run(&["list", "pending", "--json"]).expect(OK).json();
    assert_eq!(pending.as_array().map(Vec::len), Some(2));
    let after_first = env
        .run(&["list", "--after", &id, "--limit", "1", "--json"])
        .expect(OK)
        .json();
    assert_eq!(after_first[0]["id"], pending[0]["id"]);
}

#[test]
fn tools_take_the_core_names_and_their_first_spelling() {
    let env = Env::new();
    let mut mcp = Mcp::start(&env, &[]);
    let id =
        mcp.ok("handoff_create", json!({"task_id": "t1", "goal": "g"}))["handoff"]["id"].clone();
    assert_eq!(
        mcp.ok("handoff_get", json!({"id": id}))["handoff"]["id"],
        id
    );
    assert_eq!(
        mcp.ok("handoff_get", json!({"handoff_id": id}))["handoff"]["id"],
        id
    );
    let claim = mcp.ok("handoff_claim_next", json!({"agent": "a"}));
    let reference = json!({"handoff_id": id, "token": claim["token"],
                           "secret": claim["claim_secret"]});
    let bad = mcp.err(
        "handoff_release",
        json!({"claim": {"handoff_id": id, "token": "one", "secret": "nope"}, "reason": 3}),
    );
    let fields: Vec<&str> = bad["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter_map(|p| p["field"].as_str())
        .collect();
    assert_eq!(fields, ["claim.token", "reason", "claim.secret"], "{bad}");
    let released = mcp.ok(
        "handoff_release",
        json!({"claim": reference, "reason": "later"}),
    );
    assert_eq!(released["handoff"]["status"], "pending");
    assert_eq!(mcp.ok("handoff_reap", json!({}))["count"], 0);
    let batch = mcp.ok(
        "handoff_create_many",
        json!({"items": [{"task_id": "t2", "goal": "a"}, {"task_id": "t3", "goal": "b"}]}),
    );
    assert_eq!(batch["count"], 2);
    let first = mcp.ok("handoff_list", json!({"limit": 1}));
    assert_eq!(first["next_after"], first["handoffs"][0]["id"]);
    let rest = mcp.ok("handoff_list", json!({"after": first["next_after"]}));
    assert_eq!(rest["count"], 2);
    assert!(rest.get("next_after").is_none(), "{rest}");
}

#[test]
fn a_plan_runs_from_the_command_line() {
    let env = Env::new();
    // A bad plan: every problem at once, and no store left behind.
    let bad = env
        .run(&[
            "task",
            "create",
            "Broken",
            "g",
            "--steps",
            r#"{"id": "a", "name": "A", "agent": "x", "dependencies": ["a", "nowhere"]}"#,
            "--json",
        ])
        .expect(INVALID);
    assert!(bad.error()["problems"].as_array().expect("problems").len() >= 2);
    assert!(env.files().is_empty(), "{:?}", env.files());

    let created = env
        .run(&[
            "task",
            "create",
            "Write a post",
            "A bilingual blog post",
            "--steps",
            r#"{"id": "research", "name": "Research", "agent": "researcher"}"#,
            "--steps",
            r#"{"id": "draft-ko", "name": "Draft", "agent": "writer", "dependencies": ["research"]}"#,
            "--json",
        ])
        .expect(OK)
        .json();
    assert_eq!(
        created["plan"]["steps"][1]["dependencies"],
        json!(["research"])
    );
    let id = created["id"].as_str().expect("id").to_owned();
    env.run(&["task", "start", &id]).expect(OK);
    let claim = env
        .run(&["claim-next", "researcher", "--json"])
        .expect(OK)
        .json();
    let handoff = claim["handoff_id"].as_str().expect("handoff id");
    let token = claim["token"].to_string();
    let secret = claim["claim_secret"].as_str().expect("secret");
    env.run(&[
        "complete",
        handoff,
        "--token",
        &token,
        "--secret",
        secret,
        "--tokens-used",
        "700",
    ])
    .expect(OK);
    // `show` is `get`.
    let task = env.run(&["task", "show", &id, "--json"]).expect(OK).json();
    assert_eq!(task["plan"]["current_steps"], json!(["draft-ko"]));
    assert_eq!(task["tokens_used"], 700);
    let listed = env.run(&["task", "list", "--json"]).expect(OK).json();
    assert_eq!(listed[0]["id"], id.as_str());
    assert!(listed[0].get("roots").is_none());
    let stale = env
        .run(&["task", "update", &id, "1", "--goal", "Another", "--json"])
        .expect(4);
    assert_eq!(stale.error()["code"], "CONFLICT");
    env.run(&["task", "get", "no-such-task"]).expect(3);

    env.run(&[
        "memory",
        "put",
        "shared",
        r#"{"n": 1}"#,
        "--expected-version",
        "0",
    ])
    .expect(OK);
    env.run(&[
        "memory",
        "put",
        "shared",
        r#"{"n": 2}"#,
        "--expected-version",
        "0",
    ])
    .expect(4);
    let memory = env
        .run(&["memory", "get", "shared", "--json"])
        .expect(OK)
        .json();
    assert_eq!(
        (memory["version"].clone(), memory["value"]["n"].clone()),
        (json!(1), json!(1))
    );
}

#[test]
fn a_protocol_run_goes_round_from_the_command_line() {
    let env = Env::new();
    let bad = env
        .run(&[
            "protocol",
            "initialize",
            "oauth",
            "--manager",
            "lead",
            "--worker",
            "dev",
            "--instructions",
            " ",
            "--success-criteria",
            "",
            "--max-iterations",
            "0",
            "--json",
        ])
        .expect(INVALID);
    let fields: Vec<_> = bad.error()["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|p| p["field"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        fields,
        ["instructions", "success_criteria[0]", "max_iterations"],
        "{fields:?}"
    );
    assert!(env.files().is_empty(), "{:?}", env.files());
    env.run(&[
        "protocol",
        "initialize",
        "oauth",
        "--manager",
        "lead",
        "--worker",
        "dev",
        "--instructions",
        "Add token refresh",
        "--success-criteria",
        "401 triggers one refresh",
    ])
    .expect(OK);
    let take = |agent: &str| -> [String; 3] {
        let claim = env.run(&["claim-next", agent, "--json"]).expect(OK).json();
        [
            claim["handoff_id"].as_str().expect("handoff id").to_owned(),
            claim["token"].to_string(),
            claim["claim_secret"].as_str().expect("secret").to_owned(),
        ]
    };
    let [id, token, secret] = take("dev");
    let claim = ["--token", &token, "--secret", &secret];
    // A wrong enum value and nesting far past any limit: refused by name, nothing written.
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let before = env
        .run(&["protocol", "show", "oauth", "--json"])
        .expect(OK)
        .json();
    let bad = env
        .run(&[&["protocol", "report", &id, "DONE", "--json"][..], &claim].concat())
        .expect(INVALID);
    assert_eq!(bad.error()["problems"][0]["field"], "status");
    let bad = env
        .run(
            &[
                &[
                    "protocol",
                    "report",
                    &id,
                    "PARTIAL",
                    "--files-modified",
                    &deep,
                    "--json",
                ][..],
                &claim,
            ]
            .concat(),
        )
        .expect(INVALID);
    assert!(
        bad.error()["problems"][0]["field"]
            .as_str()
            .is_some_and(|f| f.starts_with("files_modified")),
        "{}",
        bad.error()
    );
    let after = env
        .run(&["protocol", "show", "oauth", "--json"])
        .expect(OK)
        .json();
    assert_eq!(before, after);
    let sent = env
        .run(
            &[
                &[
                    "protocol",
                    "report",
                    &id,
                    "COMPLETED",
                    "--files-modified",
                    r#"{"path": "src/auth.js", "description": "refresh on 401"}"#,
                    "--json",
                ][..],
                &claim,
            ]
            .concat(),
        )
        .expect(OK)
        .json();
    assert_eq!(sent["protocol"]["worker_report"]["status"], "COMPLETED");
    let [id, token, secret] = take("lead");
    let done = env
        .run(&[
            "protocol", "decide", &id, "COMPLETE", "--token", &token, "--secret", &secret, "--json",
        ])
        .expect(OK)
        .json();
    assert!(done.is_null(), "{done}");
    let run = env
        .run(&["protocol", "show", "oauth", "--json"])
        .expect(OK)
        .json();
    assert_eq!(run["phase"], "completed");
    let text = env.run(&["protocol", "stats"]).expect(OK).stdout;
    assert!(text.contains("first_try_completion_rate  1.0"), "{text}");
}
