//! The seeds' own calls over MCP (issue 47): seed 000's `masc_handover_*` arguments and seed
//! 001's `memory_handoff_*` arguments, sent to the handoff tools as they are, with no tool of
//! their own; and the CLI's `--pending-only`.

mod common;

use common::{Env, Mcp};
use serde_json::{Value, json};

fn ids(list: &Value) -> Vec<String> {
    list["handoffs"]
        .as_array()
        .expect("handoffs")
        .iter()
        .map(|h| h["id"].as_str().expect("id").to_owned())
        .collect()
}

#[test]
fn seed_000_masc_handover_arguments_reach_the_handoff_tools() {
    let env = Env::new();
    let mut mcp = Mcp::start(&env, &[]);
    let created = mcp.ok(
        "handoff_create",
        json!({"task_id": "task-001", "session_id": "session-xyz", "reason": "context_limit",
               "context_pct": 85, "goal": "PK-32008", "pending": ["수정"]}),
    );
    let id = created["handoff"]["id"].as_str().expect("id").to_owned();
    let other = mcp.ok(
        "handoff_create",
        json!({"task_id": "task-002", "goal": "g"}),
    );
    let other = other["handoff"]["id"].as_str().expect("id").to_owned();
    mcp.ok("handoff_claim", json!({"id": other, "agent": "claude"}));

    // masc_handover_list {pending_only}
    let pending = mcp.ok("handoff_list", json!({"pending_only": true}));
    assert_eq!(ids(&pending), std::slice::from_ref(&id));
    // masc_handover_claim {handover_id, agent_name}
    let claim = mcp.ok(
        "handoff_claim",
        json!({"handover_id": id, "agent_name": "gemini"}),
    );
    assert_eq!(claim["handoff"]["claimed_by"], "gemini", "{claim}");
    assert!(claim["claim_secret"].is_string(), "{claim}");
    // masc_handover_get {handover_id}
    let got = mcp.ok("handoff_get", json!({"handover_id": id}));
    assert_eq!(got["handoff"]["id"], id.as_str(), "{got}");
}

#[test]
fn seed_001_memory_handoff_arguments_reach_the_handoff_tools() {
    let env = Env::new();
    let mut mcp = Mcp::start(&env, &[]);
    let names: Vec<String> = mcp
        .tools()
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with("memory_handoff")),
        "no tool of the seed's own: {names:?}"
    );
    let task = mcp.ok(
        "task_create",
        json!({"name": "fix-oauth-token-refresh", "goal": "Fix the OAuth2 token refresh"}),
    );
    let task_id = task["task"]["id"].as_str().expect("task id").to_owned();

    // memory_handoff_create: no goal (the task's is taken), seed 001's names and numbers.
    let created = mcp.ok(
        "handoff_create",
        json!({"task_id": task_id, "handoff_type": "escalation",
               "instructions": "Need someone with OAuth2 expertise",
               "priority_objectives": [1, 2],
               "blockers": ["Unclear OAuth2 state transition after refresh failure"]}),
    );
    let h = &created["handoff"];
    assert_eq!(h["goal"], "Fix the OAuth2 token refresh", "{h}");
    assert_eq!(h["kind"], "escalation");
    assert_eq!(h["priority_items"], json!(["1", "2"]));
    let id = h["id"].as_str().expect("id").to_owned();

    // memory_handoff_list {task_id, status: 'pending'}
    let pending = mcp.ok(
        "handoff_list",
        json!({"task_id": task_id, "status": "pending"}),
    );
    assert_eq!(ids(&pending), std::slice::from_ref(&id));
    // memory_handoff_accept {handoff_id, agent_id}
    let claim = mcp.ok(
        "handoff_claim",
        json!({"handoff_id": id, "agent_id": "agent-oauth-expert"}),
    );
    assert_eq!(claim["handoff"]["claimed_by"], "agent-oauth-expert");
    // memory_handoff_list {status: 'accepted'}
    let accepted = mcp.ok(
        "handoff_list",
        json!({"task_id": task_id, "status": "accepted"}),
    );
    assert_eq!(ids(&accepted), [id]);

    // A name and its other name together: refused, naming both.
    let both = mcp.err(
        "handoff_create",
        json!({"task_id": task_id, "kind": "full", "handoff_type": "partial"}),
    );
    assert_eq!(both["code"], "VALIDATION");
    let problem = &both["problems"][0];
    assert_eq!(problem["field"], "handoff_type", "{both}");
    assert!(
        problem["rule"].as_str().expect("rule").contains("kind"),
        "{both}"
    );
    // The schema a client sees names the other names.
    let tools = mcp.tools();
    let create = tools
        .iter()
        .find(|t| t["name"] == "handoff_create")
        .expect("handoff_create");
    assert_eq!(
        create["inputSchema"]["properties"]["kind"]["x-aliases"],
        json!(["handoff_type"])
    );
}

#[test]
fn the_cli_lists_pending_only() {
    let env = Env::new();
    let a = env.create(&["t1", "first"]);
    let b = env.create(&["t2", "second"]);
    env.run(&["claim", &b, "--agent", "w"]).expect(0);
    let listed = env
        .run(&["list", "--pending-only", "--json"])
        .expect(0)
        .json();
    let listed: Vec<&str> = listed
        .as_array()
        .expect("list")
        .iter()
        .map(|h| h["id"].as_str().expect("id"))
        .collect();
    assert_eq!(listed, [a.as_str()]);
    let accepted = env
        .run(&["list", "--status", "accepted", "--json"])
        .expect(0)
        .json();
    assert_eq!(accepted.as_array().map(Vec::len), Some(1), "{accepted}");
}
