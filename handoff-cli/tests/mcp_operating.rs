//! `handoff mcp` under issue 12: every malformed request gets a JSON-RPC answer with its id
//! and the server keeps serving; claims carry a secret that heartbeat, release, complete and a
//! holder's cancel need; the event log comes in pages; the saved policy is readable.

mod common;

use common::{Env, FAKE_SECRET, Mcp};
use serde_json::{Value, json};

fn call_line(id: u64, arguments: &str) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"handoff_list","arguments":{arguments}}}}}"#
    )
    .into_bytes()
}

#[test]
fn every_malformed_request_is_answered_and_the_server_keeps_serving() {
    let env = Env::new();
    let mut mcp = Mcp::start(&env, &[]);
    let mut invalid_utf8 = call_line(101, r#"{"task_id":"x"}"#);
    let at = invalid_utf8.len() - 5;
    invalid_utf8[at] = 0xff;
    let deep = format!(r#"{{"a":{}1{}}}"#, "[".repeat(200), "]".repeat(200));
    let huge = format!(r#"{{"task_id":"{}"}}"#, "a".repeat(64 << 20));
    let cases: Vec<(Vec<u8>, u64, i64)> = vec![
        (invalid_utf8, 101, -32700),
        (call_line(102, r#"{"task_id":"\ud800"}"#), 102, -32700),
        (call_line(103, r#"{"limit":1e400}"#), 103, -32700),
        (call_line(104, r#"{"limit":NaN}"#), 104, -32700),
        (
            br#"{"jsonrpc":"2.0","id":105,"method":"tools/call","params":["handoff_list"]}"#
                .to_vec(),
            105,
            -32602,
        ),
        (call_line(106, &deep), 106, -32600),
        (call_line(107, &huge), 107, -32600),
        (
            br#"{"jsonrpc":"2.0","id":108,"method":"tools/call","params":{"arguments":{}}}"#
                .to_vec(),
            108,
            -32602,
        ),
        (
            br#"{"jsonrpc":"2.0","id":109,"method":"tools/call","params":{"name":"handoff_list""#
                .to_vec(),
            109,
            -32700,
        ),
    ];
    for (line, id, code) in cases {
        let answer = mcp.raw(&line);
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], code, "{answer}");
        assert!(answer["error"]["message"].is_string(), "{answer}");
        // And the next request is served as usual.
        let listed = mcp.ok("handoff_list", json!({}));
        assert_eq!(listed["count"], 0);
    }
    // Lines with no readable id are answered with a null id.
    for line in [
        &b"garbage"[..],
        b"[1,2,3]",
        br#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
    ] {
        let answer = mcp.raw(line);
        assert_eq!(answer["id"], Value::Null, "{answer}");
        assert!(answer["error"]["code"].is_i64(), "{answer}");
    }
    mcp.ok(
        "handoff_create",
        json!({"task_id": "t1", "goal": "still here"}),
    );
}

#[test]
fn claims_are_settled_with_their_secret_only() {
    let env = Env::new();
    let mut mcp = Mcp::start(&env, &[]);
    let tools = mcp.tools();
    let schema = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["inputSchema"].clone())
            .unwrap_or_else(|| panic!("no tool {name}"))
    };
    // The claim, with its secret, is required (the calls below give it flat, as before).
    for tool in ["handoff_heartbeat", "handoff_release", "handoff_complete"] {
        let schema = schema(tool);
        assert!(
            schema["required"]
                .as_array()
                .is_some_and(|r| r.contains(&json!("claim"))),
            "{tool}: {schema}"
        );
        assert!(
            schema["$defs"]["ClaimRef"]["required"]
                .as_array()
                .is_some_and(|r| r.contains(&json!("secret"))),
            "{tool}: {schema}"
        );
    }
    let created = mcp.ok(
        "handoff_create",
        json!({"task_id": "t1", "goal": "g", "from_agent": "claude", "to_agent": "gemini"}),
    );
    let id = created["handoff"]["id"].as_str().expect("id").to_owned();
    let claim = mcp.ok(
        "handoff_claim",
        json!({"handoff_id": id, "agent": "gemini"}),
    );
    let token = claim["token"].clone();
    let secret = claim["claim_secret"]
        .as_str()
        .expect("claim_secret")
        .to_owned();
    assert!(secret.starts_with("hcs_"), "{secret}");
    assert!(
        Mcp::text(&mcp.call("handoff_claim", json!({"agent": "gemini"}))).contains("nothing"),
        "the claimed one is not claimable"
    );

    // Nothing a reader sees holds the secret.
    for (tool, args) in [
        ("handoff_get", json!({"handoff_id": id})),
        ("handoff_list", json!({})),
        ("handoff_events", json!({})),
        ("handoff_chain", json!({"task_id": "t1"})),
    ] {
        let result = mcp.call(tool, args);
        assert!(
            !result.to_string().contains(&secret),
            "{tool} shows the secret"
        );
    }

    // The public token alone, or with a made-up secret, settles nothing.
    let missing = mcp.err(
        "handoff_complete",
        json!({"handoff_id": id, "token": token}),
    );
    assert_eq!(missing["code"], "VALIDATION");
    for (tool, extra) in [
        ("handoff_complete", json!({"outcome": "forged"})),
        ("handoff_release", json!({"reason": "forged"})),
        ("handoff_heartbeat", json!({})),
    ] {
        let mut args = json!({"handoff_id": id, "token": token, "claim_secret": FAKE_SECRET});
        for (k, v) in extra.as_object().expect("object") {
            args[k] = v.clone();
        }
        let forged = mcp.err(tool, args);
        assert_eq!(forged["code"], "LEASE_LOST", "{tool}");
    }
    let malformed = mcp.err(
        "handoff_complete",
        json!({"handoff_id": id, "token": token, "claim_secret": "hcs_short"}),
    );
    assert_eq!(malformed["problems"][0]["field"], "secret");
    let cancel = mcp.err(
        "handoff_cancel",
        json!({"handoff_id": id, "token": token, "claim_secret": FAKE_SECRET}),
    );
    assert_eq!(cancel["code"], "LEASE_LOST");
    let stranger = mcp.err("handoff_cancel", json!({"handoff_id": id, "by": "mallory"}));
    assert_eq!(stranger["code"], "INVALID_TRANSITION");
    let both = mcp.err(
        "handoff_cancel",
        json!({"handoff_id": id, "by": "claude", "token": token, "claim_secret": secret}),
    );
    assert_eq!(both["code"], "VALIDATION");
    let record = mcp.ok("handoff_get", json!({"handoff_id": id}));
    assert_eq!(record["handoff"]["status"], "claimed");
    assert_eq!(record["handoff"]["attempts"], 0);

    let beat = mcp.ok(
        "handoff_heartbeat",
        json!({"handoff_id": id, "token": token, "claim_secret": secret}),
    );
    assert_eq!(beat["handoff"]["status"], "claimed");
    let cancelled = mcp.ok(
        "handoff_cancel",
        json!({"handoff_id": id, "token": token, "claim_secret": secret, "reason": "moot"}),
    );
    assert_eq!(cancelled["handoff"]["status"], "cancelled");
}

#[test]
fn events_come_in_pages_with_a_cursor() {
    let env = Env::new();
    let mut mcp = Mcp::start(&env, &[]);
    for i in 0..5 {
        mcp.ok(
            "handoff_create",
            json!({"task_id": "t1", "goal": format!("step {i}")}),
        );
    }
    let first = mcp.ok("handoff_events", json!({"limit": 2}));
    assert_eq!(first["count"], 2);
    let after = first["next_after"].clone();
    assert_eq!(after, first["events"][1]["seq"]);
    let second = mcp.ok("handoff_events", json!({"limit": 2, "after": after}));
    assert_eq!(second["count"], 2);
    let third = mcp.ok(
        "handoff_events",
        json!({"limit": 2, "after": second["next_after"]}),
    );
    assert_eq!(third["count"], 1);
    assert!(third.get("next_after").is_none(), "{third}");
    let all = mcp.ok("handoff_events", json!({"task_id": "t1"}));
    assert_eq!(all["count"], 5);
    assert!(all.get("next_after").is_none());
}

#[test]
fn the_policy_tool_shows_the_saved_and_the_applied_policy() {
    let env = Env::new();
    let mut mcp = Mcp::start(&env, &["--max-handoffs", "7"]);
    let policy = mcp.ok("handoff_policy", json!({}));
    assert_eq!(policy["saved"], Value::Null);
    assert_eq!(policy["in_force"]["chain_policy"]["max_handoffs"], 7);
    drop(mcp);
    env.run(&["--max-handoffs", "3", "policy", "save"])
        .expect(0);
    let mut mcp = Mcp::start(&env, &[]);
    let policy = mcp.ok("handoff_policy", json!({}));
    assert_eq!(policy["saved"]["chain_policy"]["max_handoffs"], 3);
    assert_eq!(policy["in_force"]["chain_policy"]["max_handoffs"], 3);
}
