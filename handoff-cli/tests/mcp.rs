//! `handoff mcp` spoken to in JSON-RPC, and the CLI commands that mirror its tools: the seed's
//! own create payload, the chain policy from flags, a file or agent files, reject, cancel,
//! events, stats, checkpoint, stalled, display names, claim-and-spawn's per-call
//! instructions and timeout, and agent-scoped credentials.

mod common;

use common::{Env, Mcp};
use serde_json::{Value, json};

const CHAIN_VIOLATION: i32 = 5;
const INVALID: i32 = 2;

/// MASC's `masc_handover_create` example, exactly as the seed sends it.
fn seed_payload() -> Value {
    json!({
        "task_id": "task-001",
        "session_id": "session-xyz",
        "reason": "context_limit",
        "context_pct": 85,
        "goal": "PK-32008 LocalStorage SSR 버그 수정",
        "progress": "원인 파악 완료",
        "completed": ["버그 재현", "원인 분석"],
        "pending": ["수정", "테스트", "PR"],
        "decisions": ["SSR-safe 패턴 사용"],
        "assumptions": ["Next.js 14 환경"],
        "warnings": ["hydration mismatch 주의"],
        "errors": [],
        "files": ["src/hooks/useLocalStorage.ts"]
    })
}

#[test]
fn the_seed_payload_and_bare_reasons_are_accepted() {
    let env = Env::new();
    let mut mcp = Mcp::start(&env, &[]);
    let created = mcp.ok("handoff_create", seed_payload());
    let h = &created["handoff"];
    assert_eq!(h["reason"], "context_limit_85");
    assert_eq!(h["context_usage_percent"], 85);
    assert_eq!(h["session_id"], "session-xyz");
    assert_eq!(h["pending_steps"], json!(["수정", "테스트", "PR"]));

    let timeout = mcp.ok(
        "handoff_create",
        json!({"task_id": "t2", "goal": "g", "reason": "timeout", "timeout_seconds": 300}),
    );
    assert_eq!(timeout["handoff"]["reason"], "timeout_300s");

    let bare = mcp.err(
        "handoff_create",
        json!({"task_id": "t3", "goal": "g", "reason": "context_limit"}),
    );
    assert_eq!(bare["code"], "VALIDATION");
    assert_eq!(bare["problems"][0]["field"], "reason");
    let unknown = mcp.err(
        "handoff_create",
        json!({"task_id": "t3", "goal": "g", "reason": "sleepy"}),
    );
    assert_eq!(unknown["code"], "VALIDATION");
    drop(mcp);

    // The CLI takes the same bare forms.
    let run = env
        .run(&[
            "create",
            "--task-id",
            "t4",
            "--goal",
            "g",
            "--reason",
            "context_limit",
            "--context-pct",
            "85",
            "--json",
        ])
        .expect(0);
    assert_eq!(run.json()["reason"], "context_limit_85");
    let run = env
        .run(&[
            "create",
            "--task-id",
            "t5",
            "--goal",
            "g",
            "--reason",
            "timeout",
            "--timeout-seconds",
            "300",
            "--json",
        ])
        .expect(0);
    assert_eq!(run.json()["reason"], "timeout_300s");
    let bad = env
        .run(&[
            "create",
            "--task-id",
            "t6",
            "--goal",
            "g",
            "--reason",
            "timeout",
            "--json",
        ])
        .expect(INVALID);
    assert_eq!(bad.error()["problems"][0]["field"], "reason");
}

/// manager → worker, then worker → manager continuing it: one revisit of the manager.
fn manager_worker_manager(mcp: &mut Mcp, task: &str) -> Value {
    let first = mcp.ok(
        "handoff_create",
        json!({"task_id": task, "goal": "plan", "from_agent": "manager", "to_agent": "worker"}),
    );
    let id = first["handoff"]["id"].as_str().expect("id").to_owned();
    mcp.ok(
        "handoff_claim",
        json!({"handoff_id": id, "agent": "worker"}),
    );
    mcp.call(
        "handoff_create",
        json!({"task_id": task, "goal": "report", "from_agent": "worker",
               "to_agent": "manager", "parent_id": id}),
    )
}

#[test]
fn the_chain_policy_comes_from_flags_a_file_or_agent_files() {
    let env = Env::new();
    let mut strict = Mcp::start(&env, &[]);
    let refused = manager_worker_manager(&mut strict, "loop-1");
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(
        refused["structuredContent"]["error"]["code"],
        "CHAIN_VIOLATION"
    );
    drop(strict);

    let mut loose = Mcp::start(&env, &["--max-revisits", "1"]);
    let accepted = manager_worker_manager(&mut loose, "loop-2");
    assert_ne!(accepted["isError"], true, "{accepted}");
    drop(loose);

    // A policy file, and an environment variable.
    let policy = env.dir.path().join("policy.json");
    std::fs::write(
        &policy,
        r#"{"max_handoffs": 10, "max_revisits": 3, "collaborators": {"manager": ["worker"], "worker": ["manager"]}}"#,
    )
    .expect("write policy");
    let policy = policy.to_str().expect("utf-8 path");
    let mut filed = Mcp::start(&env, &["--policy", policy]);
    assert_ne!(
        manager_worker_manager(&mut filed, "loop-3")["isError"],
        true
    );
    // The file's collaborators: the manager may not hand off to a stranger.
    let stranger = filed.err(
        "handoff_create",
        json!({"task_id": "loop-3b", "goal": "g", "from_agent": "manager", "to_agent": "stranger"}),
    );
    assert_eq!(stranger["code"], "CHAIN_VIOLATION");
    drop(filed);
    let mut command = env.command(&[]);
    command.env("HANDOFF_MAX_REVISITS", "1");
    let mut from_env = Mcp::start_with(command, &[]);
    assert_ne!(
        manager_worker_manager(&mut from_env, "loop-4")["isError"],
        true
    );
    drop(from_env);

    // The CLI: refused by default, accepted with --max-revisits 1 or the file.
    let first = env.create(&[
        "--task-id",
        "cli-loop",
        "--goal",
        "plan",
        "--from-agent",
        "manager",
        "--to-agent",
        "worker",
    ]);
    env.run(&["claim", &first, "--agent", "worker"]).expect(0);
    let back = [
        "create",
        "--task-id",
        "cli-loop",
        "--goal",
        "report",
        "--from-agent",
        "worker",
        "--to-agent",
        "manager",
        "--parent-id",
        first.as_str(),
        "--json",
    ];
    let refused = env.run(&back).expect(CHAIN_VIOLATION);
    assert_eq!(refused.error()["code"], "CHAIN_VIOLATION");
    let mut with_flag = back.to_vec();
    with_flag.extend(["--max-revisits", "1"]);
    env.run(&with_flag).expect(0);
    let mut with_file = back.to_vec();
    with_file.extend(["--policy", policy, "--max-revisits", "0"]);
    // The flag overrides the file.
    env.run(&with_file).expect(CHAIN_VIOLATION);

    // An unknown key is refused, naming it, before anything is opened or created.
    let fresh = Env::new();
    let bad = fresh.dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"max_handoffs": 3, "max_hops": 4}"#).expect("write");
    let run = fresh
        .run(&[
            "create",
            "--task-id",
            "t",
            "--goal",
            "g",
            "--policy",
            bad.to_str().expect("utf-8"),
            "--json",
        ])
        .expect(INVALID);
    let error = run.error();
    assert_eq!(error["code"], "VALIDATION");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("max_hops")),
        "{error}"
    );
    assert_eq!(fresh.files(), ["bad.json"]);

    // Agent files: who may hand off to whom, from their `## Collaborations` sections.
    let agents = env.dir.path().join("agents");
    std::fs::create_dir(&agents).expect("mkdir");
    std::fs::write(
        agents.join("manager.md"),
        "# manager\n\nPlans.\n\n## Collaborations\n- **worker**: does the work\n",
    )
    .expect("write");
    std::fs::write(
        agents.join("worker.md"),
        "# worker\n\nWorks.\n\n## Collaborations\n- **manager**: reports back\n",
    )
    .expect("write");
    let agents = agents.to_str().expect("utf-8");
    let mut registry = Mcp::start(&env, &["--agents", agents, "--max-revisits", "1"]);
    assert_ne!(
        manager_worker_manager(&mut registry, "loop-5")["isError"],
        true
    );
    let stranger = registry.err(
        "handoff_create",
        json!({"task_id": "loop-6", "goal": "g", "from_agent": "worker", "to_agent": "stranger"}),
    );
    assert_eq!(stranger["code"], "CHAIN_VIOLATION");
}

#[test]
fn reject_cancel_events_stats_checkpoint_and_stalled_tools() {
    let env = Env::new();
    let mut mcp = Mcp::start(&env, &[]);
    let names: Vec<String> = mcp
        .tools()
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect();
    for tool in [
        "handoff_reject",
        "handoff_cancel",
        "handoff_events",
        "handoff_stats",
        "handoff_checkpoint",
        "handoff_stalled",
    ] {
        assert!(
            names.iter().any(|n| n == tool),
            "{tool} missing from {names:?}"
        );
    }
    let tools = mcp.tools();
    let schema = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["inputSchema"].clone())
            .expect("tool")
    };
    // The core's argument names; the calls below still use the tools' first spelling.
    assert_eq!(
        schema("handoff_reject")["required"],
        json!(["id", "agent", "reason"])
    );
    assert_eq!(
        schema("handoff_stalled")["required"],
        json!(["older_than_seconds"])
    );
    let checkpoint_required = schema("handoff_checkpoint")["required"].clone();
    // The goal may be left out: the task's is kept (seed 001's `checkpoint(task_id, agent_id)`).
    assert_eq!(checkpoint_required, json!(["task_id", "agent"]));

    let create = |mcp: &mut Mcp, task: &str, to: &str| {
        mcp.ok(
            "handoff_create",
            json!({"task_id": task, "goal": "g", "from_agent": "claude", "to_agent": to}),
        )["handoff"]["id"]
            .as_str()
            .expect("id")
            .to_owned()
    };
    let a = create(&mut mcp, "ta", "gemini");
    let wrong = mcp.err(
        "handoff_reject",
        json!({"handoff_id": a, "agent": "mallory", "reason": "mine"}),
    );
    assert_eq!(wrong["code"], "INVALID_TRANSITION");
    let rejected = mcp.ok(
        "handoff_reject",
        json!({"handoff_id": a, "agent": "gemini", "reason": "not my area"}),
    );
    assert_eq!(rejected["handoff"]["status"], "rejected");
    let missing = mcp.err(
        "handoff_reject",
        json!({"handoff_id": a, "agent": "gemini"}),
    );
    assert_eq!(missing["code"], "VALIDATION");

    let b = create(&mut mcp, "tb", "codex");
    let cancelled = mcp.ok(
        "handoff_cancel",
        json!({"handoff_id": b, "by": "claude", "reason": "plans changed"}),
    );
    assert_eq!(cancelled["handoff"]["status"], "cancelled");
    let c = create(&mut mcp, "tc", "codex");
    mcp.ok("handoff_cancel", json!({"handoff_id": c, "by": "claude"}));
    let again = mcp.err("handoff_cancel", json!({"handoff_id": c, "by": "claude"}));
    assert_eq!(again["code"], "INVALID_TRANSITION");
    let nothing = mcp.err(
        "handoff_cancel",
        json!({"handoff_id": "no-such-handoff", "by": "claude"}),
    );
    assert_eq!(nothing["code"], "NOT_FOUND");

    let events = mcp.ok("handoff_events", json!({"handoff_id": a}));
    let kinds: Vec<&str> = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["kind"].as_str().expect("kind"))
        .collect();
    assert_eq!(kinds, ["created", "rejected"]);
    assert_eq!(events["count"], 2);
    let all = mcp.ok("handoff_events", json!({}));
    assert_eq!(all["count"], 6);
    let page = mcp.ok("handoff_events", json!({"after": 2, "limit": 2}));
    let seqs: Vec<u64> = page["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["seq"].as_u64().expect("seq"))
        .collect();
    assert_eq!(seqs, [3, 4]);
    let by_task = mcp.ok("handoff_events", json!({"task_id": "tb"}));
    assert_eq!(by_task["count"], 2);
    // Both filters apply together, as the core reads them (the tool used to refuse the pair).
    let both = mcp.ok("handoff_events", json!({"handoff_id": a, "task_id": "ta"}));
    assert_eq!(both["count"], 2);
    let neither = mcp.ok("handoff_events", json!({"handoff_id": a, "task_id": "tb"}));
    assert_eq!(neither["count"], 0);

    let stats = mcp.ok("handoff_stats", json!({}));
    let paths = stats["paths"].as_array().expect("paths");
    assert!(
        paths.iter().any(|p| p["from_agent"] == "claude"
            && p["to_agent"] == "gemini"
            && p["rejected"] == 1),
        "{stats}"
    );
    assert_eq!(
        mcp.err("handoff_stats", json!({"x": 1}))["code"],
        "VALIDATION"
    );

    let saved = mcp.ok(
        "handoff_checkpoint",
        json!({"task_id": "td", "agent": "claude", "goal": "Refactor auth",
               "progress": "half way", "pending": ["the other half"]}),
    );
    assert_eq!(saved["handoff"]["kind"], "checkpoint");
    assert_eq!(saved["handoff"]["from_agent"], "claude");
    let bad = mcp.err(
        "handoff_checkpoint",
        json!({"task_id": "td", "agent": "claude", "goal": ""}),
    );
    assert_eq!(bad["code"], "VALIDATION");

    let none = mcp.ok("handoff_stalled", json!({"older_than_seconds": 3600}));
    assert_eq!(none["task_ids"], json!([]));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let stalled = mcp.ok("handoff_stalled", json!({"older_than_seconds": 1}));
    assert_eq!(stalled["task_ids"], json!(["td"]));
    let negative = mcp.err("handoff_stalled", json!({"older_than_seconds": -1}));
    assert_eq!(negative["code"], "VALIDATION");
    drop(mcp);

    // The same through the CLI.
    let run = env
        .run(&[
            "checkpoint",
            "--task-id",
            "te",
            "--agent",
            "gemini",
            "--goal",
            "g",
            "--progress",
            "p",
            "--json",
        ])
        .expect(0);
    assert_eq!(run.json()["kind"], "checkpoint");
    let text = env.run(&["stalled", "--older-than-seconds", "1"]).expect(0);
    assert!(text.stdout.contains("td"), "{}", text.stdout);
    let json = env
        .run(&["stalled", "--older-than-seconds", "3600", "--json"])
        .expect(0)
        .json();
    assert_eq!(json, json!([]));
    let page = env
        .run(&["events", "--after", "2", "--limit", "1", "--json"])
        .expect(0)
        .json();
    assert_eq!(page[0]["seq"], 3);
    let by_task = env
        .run(&["events", "--task-id", "ta", "--json"])
        .expect(0)
        .json();
    assert_eq!(by_task.as_array().map(Vec::len), Some(2));
}

#[test]
fn display_names_go_from_create_to_claim() {
    let env = Env::new();
    let mut mcp = Mcp::start(&env, &[]);
    let created = mcp.ok(
        "handoff_create",
        json!({"task_id": "billing-1", "goal": "Refund the order", "from_agent": "Tech Support",
               "to_agent": "Billing agent"}),
    );
    let id = created["handoff"]["id"].as_str().expect("id").to_owned();
    let claim = mcp.ok(
        "handoff_claim",
        json!({"handoff_id": id, "agent": "Billing agent"}),
    );
    assert_eq!(claim["handoff"]["claimed_by"], "Billing agent");
    assert!(
        Mcp::text(&mcp.call("handoff_get", json!({"handoff_id": id}))).contains("Tech Support")
    );
    let bad = mcp.err(
        "handoff_claim",
        json!({"handoff_id": id, "agent": "bad\u{7}name"}),
    );
    assert_eq!(bad["code"], "VALIDATION");
}

#[cfg(unix)]
#[test]
fn claim_and_spawn_takes_instructions_and_a_bounded_timeout() {
    let env = Env::new();
    let mut mcp = Mcp::start(&env, &["--spawn", "cat; sleep 30"]);
    let spawn = mcp
        .tools()
        .into_iter()
        .find(|t| t["name"] == "handoff_claim_and_spawn")
        .expect("tool");
    let props = &spawn["inputSchema"]["properties"];
    assert!(props.get("additional_instructions").is_some(), "{spawn}");
    assert!(props.get("timeout_seconds").is_some(), "{spawn}");

    mcp.ok(
        "handoff_create",
        json!({"task_id": "slow", "goal": "Take your time", "to_agent": "local"}),
    );
    for bad in [json!(0), json!(86_401), json!(-5), json!("soon")] {
        let error = mcp.err(
            "handoff_claim_and_spawn",
            json!({"agent": "local", "timeout_seconds": bad}),
        );
        assert_eq!(error["code"], "VALIDATION", "{bad}: {error}");
    }
    // A refused timeout claimed nothing.
    let listed = mcp.ok("handoff_list", json!({"status": "pending"}));
    assert_eq!(listed["count"], 1);

    let started = std::time::Instant::now();
    let ran = mcp.call(
        "handoff_claim_and_spawn",
        json!({"agent": "local", "timeout_seconds": 1,
               "additional_instructions": "Write the summary in French."}),
    );
    let report = &ran["structuredContent"];
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "not killed in time"
    );
    assert_eq!(report["timed_out"], true, "{ran}");
    assert_eq!(report["timeout_seconds"], 1);
    assert_eq!(report["succeeded"], false);
    assert_eq!(
        report["handoff"]["status"], "pending",
        "released after the timeout"
    );
    assert!(Mcp::text(&ran).contains("timed out after 1s"), "{ran}");
    // `cat` echoed the prompt: the DNA, then the call's instructions under their heading.
    let stdout = report["stdout"].as_str().expect("stdout");
    assert!(
        stdout.contains("## Current Goal\n\nTake your time"),
        "{stdout}"
    );
    assert!(
        stdout.contains("## Additional Instructions\n\nWrite the summary in French."),
        "{stdout}"
    );
}

/// A credentials file (owner-only) giving `gemini_token` the agent gemini, in `env`'s folder.
fn credentials(env: &Env, gemini_token: &str) -> String {
    let path = env.dir.path().join("credentials.json");
    let file = json!({"tokens": [
        {"sha256": handoff_core::bundle::token_digest(gemini_token), "agents": ["gemini"]},
    ]});
    std::fs::write(&path, file.to_string()).expect("write credentials");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    path.to_string_lossy().into_owned()
}

#[test]
fn credentials_fix_the_agents_a_session_may_act_as() {
    let env = Env::new();
    let token = "gemini-session-token-0123456789abcdef";
    let file = credentials(&env, token);
    // Made from the shell, which has the store itself: no credentials there.
    let for_claude = env.create(&[
        "--task-id",
        "t1",
        "--goal",
        "g",
        "--from-agent",
        "codex",
        "--to-agent",
        "claude",
    ]);
    let for_gemini = env.create(&[
        "--task-id",
        "t2",
        "--goal",
        "g",
        "--from-agent",
        "codex",
        "--to-agent",
        "gemini",
    ]);
    let before = env.show(&for_claude);

    let mut command = env.command(&[]);
    command.env("HANDOFF_AGENT_TOKEN", token);
    let mut mcp = Mcp::start_with(command, &["--credentials", &file, "--spawn", "true"]);
    let forbidden = |error: Value, field: &str| {
        assert_eq!(error["code"], "FORBIDDEN", "{error}");
        assert_eq!(error["problems"][0]["field"], field, "{error}");
        let rule = error["problems"][0]["rule"].as_str().expect("rule");
        assert!(rule.contains("may act as (gemini)"), "{rule}");
    };
    forbidden(
        mcp.err(
            "handoff_reject",
            json!({"id": for_claude, "agent": "claude", "reason": "not mine"}),
        ),
        "agent",
    );
    forbidden(
        mcp.err(
            "handoff_claim",
            json!({"id": for_claude, "agent": "claude"}),
        ),
        "agent",
    );
    forbidden(
        mcp.err("handoff_claim_next", json!({"agent": "claude"})),
        "agent",
    );
    // The tools' first spelling (a claim without an id is claim_next) is checked the same.
    forbidden(
        mcp.err("handoff_claim", json!({"agent": "claude"})),
        "agent",
    );
    forbidden(
        mcp.err("handoff_cancel", json!({"id": for_claude, "by": "codex"})),
        "by",
    );
    forbidden(
        mcp.err(
            "handoff_claim_and_spawn",
            json!({"handoff_id": for_claude, "agent": "claude"}),
        ),
        "agent",
    );
    forbidden(
        mcp.err(
            "handoff_create",
            json!({"task_id": "t3", "goal": "g", "from_agent": "claude"}),
        ),
        "from_agent",
    );
    forbidden(
        mcp.err(
            "handoff_create_many",
            json!({"items": [{"task_id": "t4", "goal": "g"}, {"task_id": "t5", "goal": "g", "from_agent": "claude"}]}),
        ),
        "items[1].from_agent",
    );
    forbidden(
        mcp.err(
            "handoff_checkpoint",
            json!({"task_id": "t1", "agent": "claude", "goal": "g"}),
        ),
        "agent",
    );
    assert_eq!(env.show(&for_claude), before, "a refusal changes nothing");
    assert_eq!(
        mcp.ok("handoff_list", json!({}))["count"],
        2,
        "nothing was created"
    );

    // As gemini it may; and it reads everything.
    let claim = mcp.ok(
        "handoff_claim",
        json!({"id": for_gemini, "agent": "gemini"}),
    );
    assert_eq!(claim["handoff"]["claimed_by"], "gemini");
    mcp.ok(
        "handoff_create",
        json!({"task_id": "t2", "goal": "review", "from_agent": "gemini", "to_agent": "claude"}),
    );
    assert_eq!(
        mcp.ok("handoff_get", json!({"id": for_claude}))["handoff"]["status"],
        "pending"
    );
    drop(mcp);

    // No token, or one the file does not list: the server does not start.
    for given in [None, Some("another-token-0123456789abcdef")] {
        let mut command = env.command(&["mcp", "--credentials", &file]);
        if let Some(given) = given {
            command.env("HANDOFF_AGENT_TOKEN", given);
        }
        let run = common::finish(&mut command, None).expect(INVALID);
        assert!(
            run.stderr.contains("unauthorized: HANDOFF_AGENT_TOKEN"),
            "{run:?}"
        );
    }

    // Without the file an agent is whoever a call names, as before.
    let mut open = Mcp::start(&env, &[]);
    let rejected = open.ok(
        "handoff_reject",
        json!({"id": for_claude, "agent": "claude", "reason": "anyone may"}),
    );
    assert_eq!(rejected["handoff"]["status"], "rejected");
}

#[test]
fn the_server_offers_the_handoff_tools_unless_told_which_sets() {
    let env = Env::new();
    let names = |mcp: &mut Mcp| -> Vec<String> {
        mcp.tools()
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    // The default: handing work on and taking it over, and nothing else.
    let mut command = env.command(&[]);
    command.env("HANDOFF_MCP_TOOLS", "handoffs");
    let mut default = Mcp::start_with(command, &[]);
    let offered = names(&mut default);
    for tool in [
        "handoff_create",
        "handoff_claim",
        "handoff_claim_next",
        "handoff_complete",
        "handoff_claim_and_spawn",
        "context",
    ] {
        assert!(
            offered.iter().any(|n| n == tool),
            "{tool} missing: {offered:?}"
        );
    }
    assert!(offered.len() <= 15, "{offered:?}");
    assert!(!offered.iter().any(|n| n == "task_create"), "{offered:?}");
    // A tool of another set is not answered.
    let refused = default.request(
        "tools/call",
        json!({"name": "task_create", "arguments": {"name": "t"}}),
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown tool")),
        "{refused}"
    );
    // A holder withdraws with `cancel` given its claim, though `cancel_claim` is not listed.
    let created = default.ok("handoff_create", json!({"task_id": "t1", "goal": "g"}));
    let claim = default.ok(
        "handoff_claim",
        json!({"id": created["handoff"]["id"], "agent": "a"}),
    );
    // The secret by the name the claim gave it.
    let reference = json!({
        "handoff_id": claim["handoff_id"],
        "token": claim["token"],
        "claim_secret": claim["claim_secret"],
    });
    let cancelled = default.ok("handoff_cancel", json!({"claim": reference}));
    assert_eq!(cancelled["handoff"]["status"], "cancelled");
    drop(default);

    // Sets by name, from the flag; the environment says the same.
    let mut tasks = Mcp::start(&env, &["--tools", "tasks,admin"]);
    let offered = names(&mut tasks);
    assert!(offered.iter().any(|n| n == "task_create"), "{offered:?}");
    assert!(offered.iter().any(|n| n == "handoff_retry"), "{offered:?}");
    assert!(
        !offered.iter().any(|n| n == "handoff_create"),
        "{offered:?}"
    );
    drop(tasks);

    // An unknown set: the server does not start, and says which sets there are.
    let mut command = env.command(&["mcp", "--tools", "handoffs,nope"]);
    let run = common::finish(&mut command, None).expect(INVALID);
    assert!(
        run.stderr.contains("nope") && run.stderr.contains("curation"),
        "{run:?}"
    );
}
