//! Messages in every provider's shape: read into the builder, and rendered back as input each
//! provider accepts (calls paired with results, roles alternating), whatever the builder kept.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;

use chrono::{TimeDelta, TimeZone, Utc};
use handoff_core::context::{ContextBuilder, Message, Packet};
use handoff_core::messages::{ToolCall, normalize};
use handoff_core::{Error, Provider};
use proptest::prelude::*;
use serde_json::{Value, json};

const PROVIDERS: [Provider; 3] = [
    Provider::OpenAiChat,
    Provider::OpenAiResponses,
    Provider::Anthropic,
];

fn fields(e: Error) -> Vec<String> {
    match e {
        Error::Validation { problems } => problems.into_iter().map(|p| p.field).collect(),
        other => panic!("not a validation error: {other}"),
    }
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

fn packet(values: &[Value]) -> Packet {
    let mut b = ContextBuilder::new(100_000);
    b.add_message_values(values).unwrap();
    b.build()
}

// ------------------------------------------------------------------------------------------
// In: every shape.

#[test]
fn reads_openai_chat_messages() {
    let m = normalize(&[
        json!({"role": "developer", "content": "be brief"}),
        json!({"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"},
                                           {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}),
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "grep", "arguments": "{\"q\":\"x\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "ls", "arguments": ""}},
            {"id": "call_3", "type": "function", "function": {"name": "cat", "arguments": "{oops"}}]}),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "3 hits"}),
        json!({"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}),
        json!({"role": "assistant", "content": null, "refusal": "I can't", "annotations": [], "audio": null}),
    ])
    .unwrap();
    assert_eq!(m[0].role, "system");
    assert_eq!(m[1].content, "a\nb\n[image]");
    assert_eq!(
        m[2].tool_calls,
        [
            call("call_1", "grep", json!({"q": "x"})),
            call("call_2", "ls", json!({})),
            call("call_3", "cat", json!("{oops")),
        ]
    );
    assert_eq!(
        (
            m[3].role.as_str(),
            m[3].tool_call_id.as_deref(),
            m[3].content.as_str()
        ),
        ("tool", Some("call_1"), "3 hits")
    );
    assert_eq!(m[4].content, "no");
    assert_eq!(m[5].content, "I can't");
}

#[test]
fn reads_responses_and_agents_sdk_items() {
    let m = normalize(&[
        json!({"role": "user", "content": "hi"}),
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "find x"}]}),
        json!({"type": "reasoning", "id": "rs_1", "summary": []}),
        json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": "looking", "annotations": []}]}),
        json!({"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "grep", "arguments": "{\"q\":\"x\"}"}),
        json!({"type": "function_call_output", "call_id": "call_9", "output": [{"type": "input_text", "text": "none"}]}),
        json!({"type": "web_search_call", "id": "ws_1", "status": "completed"}),
    ])
    .unwrap();
    assert_eq!(m.len(), 5, "{m:#?}");
    assert_eq!(m[1].content, "find x");
    assert_eq!(m[2].id.as_deref(), Some("msg_1"));
    assert_eq!(m[3].tool_calls, [call("call_9", "grep", json!({"q": "x"}))]);
    assert_eq!(m[4].tool_call_id.as_deref(), Some("call_9"));
    assert_eq!(m[4].content, "none");
}

#[test]
fn reads_javascript_shapes() {
    // @openai/agents items, and the camelCase keys the Node binding took before.
    let m = normalize(&[
        json!({"role": "user", "content": [{"type": "input_text", "text": "find x"}]}),
        json!({"type": "function_call", "callId": "call_1", "name": "grep", "arguments": "{}", "status": "completed"}),
        json!({"type": "function_call_result", "callId": "call_1", "name": "grep", "status": "completed",
               "output": {"type": "text", "text": "3 hits"}}),
        json!({"type": "hosted_tool_call", "name": "web_search"}),
        json!({"role": "assistant", "content": "", "toolCalls": [{"id": "c2", "name": "ls", "arguments": {}}]}),
        json!({"role": "tool", "toolCallId": "c2", "content": "a b"}),
    ])
    .unwrap();
    assert_eq!(m.len(), 5, "{m:#?}");
    assert_eq!(m[1].tool_calls, [call("call_1", "grep", json!({}))]);
    assert_eq!(
        (m[2].tool_call_id.as_deref(), m[2].content.as_str()),
        (Some("call_1"), "3 hits")
    );
    assert_eq!(m[3].tool_calls[0].id, "c2");
    assert_eq!(m[4].tool_call_id.as_deref(), Some("c2"));
}

#[test]
fn reads_anthropic_messages() {
    let m = normalize(&[
        json!({"role": "user", "content": "find x"}),
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "text", "text": "looking"},
            {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"q": "x"}},
            {"type": "tool_use", "id": "toolu_2", "name": "ls", "input": {}}]}),
        json!({"role": "user", "id": "u2", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "3 hits"}]},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "denied", "is_error": true},
            {"type": "text", "text": "and?"}]}),
    ])
    .unwrap();
    assert_eq!(m.len(), 5);
    assert_eq!(m[1].content, "looking");
    assert_eq!(m[1].tool_calls.len(), 2);
    assert_eq!(
        (
            m[2].role.as_str(),
            m[2].tool_call_id.as_deref(),
            m[2].content.as_str(),
            m[2].is_error
        ),
        ("tool", Some("toolu_1"), "3 hits", false)
    );
    assert!(m[3].is_error);
    assert_eq!(
        (m[4].role.as_str(), m[4].content.as_str()),
        ("user", "and?")
    );
    // One value gave three messages: each keeps a distinct id.
    assert_eq!(
        [&m[2].id, &m[3].id, &m[4].id].map(|id| id.as_deref().unwrap()),
        ["u2#0", "u2#1", "u2#2"]
    );
}

#[test]
fn reads_langchain_dicts_and_dumps() {
    let m = normalize(&[
        json!({"type": "system", "content": "be brief", "additional_kwargs": {}}),
        json!({"type": "human", "content": "find x", "id": null}),
        json!({"type": "ai", "content": [{"type": "text", "text": "ok"},
                                         {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"q": "x"}}],
               "tool_calls": [{"name": "grep", "args": {"q": "x"}, "id": "toolu_1", "type": "tool_call"}],
               "invalid_tool_calls": []}),
        json!({"type": "tool", "content": "3 hits", "tool_call_id": "toolu_1", "status": "error"}),
        json!({"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"],
               "kwargs": {"content": "done", "type": "ai", "tool_calls": [], "id": "run-1"}}),
        json!({"type": "AIMessageChunk", "content": "more"}),
        json!({"type": "human", "data": {"content": "stored", "type": "human", "id": "h9"}}),
    ])
    .unwrap();
    let roles: Vec<&str> = m.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "assistant",
            "user"
        ]
    );
    assert_eq!(
        (m[6].content.as_str(), m[6].id.as_deref()),
        ("stored", Some("h9"))
    );
    assert_eq!(
        m[2].tool_calls,
        [call("toolu_1", "grep", json!({"q": "x"}))],
        "the same call once"
    );
    assert!(m[3].is_error);
    assert_eq!(
        (m[4].content.as_str(), m[4].id.as_deref()),
        ("done", Some("run-1"))
    );
}

#[test]
fn keeps_the_builders_own_fields_in_every_shape() {
    let m = normalize(&[
        json!({"type": "human", "content": "x", "at": "2026-01-01T00:00:00Z",
                                "id": "m1", "priority": 80}),
    ])
    .unwrap();
    assert_eq!(
        m[0].at,
        Some(Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap())
    );
    assert_eq!((m[0].id.as_deref(), m[0].priority), (Some("m1"), Some(80)));
}

#[test]
fn unreadable_shapes_name_the_message_and_the_rule() {
    let cases: Vec<(Value, &str)> = vec![
        (json!(1), "messages[0]"),
        (json!({"content": "x"}), "messages[0].role"),
        (json!({"role": "user"}), "messages[0].content"),
        (
            json!({"role": "assistant", "content": null}),
            "messages[0].content",
        ),
        (
            json!({"role": "critic", "content": "x"}),
            "messages[0].role",
        ),
        (json!({"role": "user", "content": 5}), "messages[0].content"),
        (
            json!({"role": "user", "content": [{"type": "video", "url": "x"}]}),
            "messages[0].content[0].type",
        ),
        (
            json!({"role": "user", "content": [{"type": "text"}]}),
            "messages[0].content[0].text",
        ),
        (
            json!({"role": "user", "content": "x", "at": "now"}),
            "messages[0].at",
        ),
        (
            json!({"role": "user", "content": "x", "priority": 1e12}),
            "messages[0].priority",
        ),
        (
            json!({"role": "assistant", "content": "x", "tool_calls": "x"}),
            "messages[0].tool_calls",
        ),
        (
            json!({"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"arguments": "{}"}}]}),
            "messages[0].tool_calls[0].function.name",
        ),
        (
            json!({"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "t"}]}),
            "messages[0].content",
        ),
        (
            json!({"role": "user", "content": [{"type": "tool_result", "content": "x"}]}),
            "messages[0].content[0].tool_use_id",
        ),
        (
            json!({"type": "function_call_output", "output": "x"}),
            "messages[0].call_id",
        ),
        (json!({"type": "banana"}), "messages[0].type"),
        (
            json!({"lc": 1, "type": "constructor", "id": ["x", "Thing"], "kwargs": {}}),
            "messages[0].id",
        ),
    ];
    for (value, field) in cases {
        let got = fields(normalize(std::slice::from_ref(&value)).unwrap_err());
        assert!(got.iter().any(|f| f == field), "{value}: {got:?}");
    }
    // Every problem is reported, and nothing is added.
    let mut b = ContextBuilder::new(1_000);
    let err = b
        .add_message_values(&[
            json!({"role": "user", "content": "ok"}),
            json!(2),
            json!({"role": 3}),
        ])
        .unwrap_err();
    assert_eq!(fields(err), ["messages[1]", "messages[2].role"]);
    assert!(b.build().sections.is_empty());
}

#[test]
fn message_json_reads_any_call_shape_and_old_packets_still_read() {
    let m: Message = serde_json::from_value(json!({"role": "assistant", "content": "",
        "tool_calls": [{"name": "grep", "args": {"q": "x"}}]}))
    .unwrap();
    assert_eq!(m.tool_calls, [call("", "grep", json!({"q": "x"}))]);
    assert!(
        serde_json::from_value::<Message>(
            json!({"role": "assistant", "content": "", "tool_calls": [3]})
        )
        .is_err()
    );
    // A packet written before sections carried calls.
    let old = r#"{"sections":[{"id":"m","kind":"message","title":"user","text":"hi","role":"user","tokens":3}],
                 "tokens":3,"budget":10,"manifest":{"included":["m"],"truncated":[],"dropped":[],"redacted":[]}}"#;
    let p: Packet = serde_json::from_str(old).unwrap();
    assert_eq!(p.to_messages(), [json!({"role": "user", "content": "hi"})]);
}

// ------------------------------------------------------------------------------------------
// Out: each provider's shape.

fn conversation() -> Vec<Value> {
    vec![
        json!({"role": "user", "content": "find x"}),
        json!({"role": "assistant", "content": "looking", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "grep", "arguments": "{\"q\":\"x\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "3 hits"}),
        json!({"role": "tool", "tool_call_id": "call_2", "content": "a b"}),
        json!({"role": "assistant", "content": "found it"}),
    ]
}

#[test]
fn openai_chat_pairs_calls_with_results() {
    let mut b = ContextBuilder::new(10_000);
    b.add_facts(["the API is v2"]);
    b.add_message_values(&conversation()).unwrap();
    let chat = b.build().to_messages_for(Provider::OpenAiChat).unwrap();
    assert_eq!(chat[0]["role"], "system");
    assert_eq!(
        chat[1..],
        [
            json!({"role": "user", "content": "find x"}),
            json!({"role": "assistant", "content": "looking", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "grep", "arguments": "{\"q\":\"x\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}),
            json!({"role": "tool", "tool_call_id": "call_1", "content": "3 hits"}),
            json!({"role": "tool", "tool_call_id": "call_2", "content": "a b"}),
            json!({"role": "assistant", "content": "found it"}),
        ]
    );
    assert_eq!(
        b.build().to_messages(),
        chat,
        "to_messages() is the openai_chat form"
    );
}

#[test]
fn openai_responses_items() {
    let items = packet(&conversation())
        .to_messages_for(Provider::OpenAiResponses)
        .unwrap();
    assert_eq!(
        items,
        [
            json!({"role": "user", "content": "find x"}),
            json!({"role": "assistant", "content": "looking"}),
            json!({"type": "function_call", "call_id": "call_1", "name": "grep", "arguments": "{\"q\":\"x\"}"}),
            json!({"type": "function_call", "call_id": "call_2", "name": "ls", "arguments": "{}"}),
            json!({"type": "function_call_output", "call_id": "call_1", "output": "3 hits"}),
            json!({"type": "function_call_output", "call_id": "call_2", "output": "a b"}),
            json!({"role": "assistant", "content": "found it"}),
        ]
    );
}

#[test]
fn anthropic_alternates_and_answers_tool_use_first() {
    let mut b = ContextBuilder::new(10_000);
    b.add_facts(["the API is v2"]);
    let mut values = vec![json!({"role": "system", "content": "be brief"})];
    values.extend(conversation());
    values.push(json!({"role": "assistant", "content": "anything else?  "}));
    b.add_message_values(&values).unwrap();
    let msgs = b.build().to_messages_for(Provider::Anthropic).unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    let first = msgs[0]["content"].as_array().unwrap();
    assert!(first[0]["text"].as_str().unwrap().contains("## Fact"));
    assert_eq!(
        first[1],
        json!({"type": "text", "text": "[system] be brief"})
    );
    assert_eq!(first[2], json!({"type": "text", "text": "find x"}));
    assert_eq!(
        msgs[1]["content"],
        json!([{"type": "text", "text": "looking"},
               {"type": "tool_use", "id": "call_1", "name": "grep", "input": {"q": "x"}},
               {"type": "tool_use", "id": "call_2", "name": "ls", "input": {}}])
    );
    assert_eq!(
        msgs[2]["content"],
        json!([{"type": "tool_result", "tool_use_id": "call_1", "content": "3 hits"},
               {"type": "tool_result", "tool_use_id": "call_2", "content": "a b"}])
    );
    // Consecutive assistant messages merge; the final text loses its trailing whitespace.
    assert_eq!(
        msgs[3]["content"],
        json!([{"type": "text", "text": "found it"}, {"type": "text", "text": "anything else?"}])
    );
}

#[test]
fn a_call_without_its_result_and_a_result_without_its_call_become_text() {
    let values = vec![
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "grep", "arguments": "{\"q\":\"x\"}"}}]}),
        json!({"role": "user", "content": "wait"}),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "3 hits"}),
    ];
    let chat = packet(&values)
        .to_messages_for(Provider::OpenAiChat)
        .unwrap();
    assert_eq!(
        chat,
        [
            json!({"role": "assistant", "content": "[tool call call_1] grep {\"q\":\"x\"}"}),
            json!({"role": "user", "content": "wait"}),
            json!({"role": "user", "content": "[tool result call_1] 3 hits"}),
        ]
    );
    let anthropic = packet(&values)
        .to_messages_for(Provider::Anthropic)
        .unwrap();
    assert_eq!(
        anthropic[0]["role"], "user",
        "a user message opens: {anthropic:?}"
    );
    assert_eq!(anthropic.len(), 3);
}

#[test]
fn ids_the_provider_would_refuse_are_replaced_consistently() {
    let long = "call.".repeat(20);
    let values = vec![
        json!({"role": "assistant", "tool_calls": [{"id": long, "name": "grep", "arguments": {}}]}),
        json!({"role": "tool", "tool_call_id": long, "content": "ok"}),
    ];
    for provider in PROVIDERS {
        let out = packet(&values).to_messages_for(provider).unwrap();
        check(provider, &out).unwrap();
        assert!(!json!(out).to_string().contains("call.call."), "{out:?}");
        assert_eq!(
            out,
            packet(&values).to_messages_for(provider).unwrap(),
            "deterministic"
        );
    }
    // A name no provider accepts: sent as text.
    let bad = vec![
        json!({"role": "assistant", "tool_calls": [{"id": "c1", "name": "run tests!", "arguments": {}}]}),
        json!({"role": "tool", "tool_call_id": "c1", "content": "ok"}),
    ];
    let chat = packet(&bad).to_messages();
    assert_eq!(chat[0]["content"], "[tool call c1] run tests! {}");
}

#[test]
fn mcp_has_no_message_format() {
    let err = packet(&conversation())
        .to_messages_for(Provider::Mcp)
        .unwrap_err();
    assert_eq!(fields(err), ["provider"]);
}

#[test]
fn tool_calls_and_results_are_redacted() {
    let key = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t";
    let values = vec![
        json!({"role": "assistant", "id": "a1", "tool_calls": [{"id": "c1", "type": "function",
               "function": {"name": "login", "arguments": json!({"key": key, "nested": [key]}).to_string()}}]}),
        json!({"role": "tool", "tool_call_id": "c1", "content": format!("used {key}"), "id": "t1"}),
    ];
    let p = packet(&values);
    let rules: Vec<(&str, usize)> = p
        .manifest
        .redacted
        .iter()
        .map(|r| (r.id.as_str(), r.count))
        .collect();
    assert_eq!(rules, [("a1", 2), ("t1", 1)]);
    for provider in PROVIDERS {
        let out = p.to_messages_for(provider).unwrap();
        let text = serde_json::to_string(&out).unwrap();
        assert!(
            !text.contains(key) && text.contains("[REDACTED:openai-api-key]"),
            "{text}"
        );
    }
    assert!(!p.to_markdown().contains(key) && !p.to_json().contains(key));
    // Calls count toward the budget.
    assert!(p.sections[0].tokens > 20, "{:?}", p.sections[0]);
}

// ------------------------------------------------------------------------------------------
// Validators: each provider's rules, as this test reads them.

fn word(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn nonblank(v: &Value) -> bool {
    v.as_str().is_some_and(|s| !s.trim().is_empty())
}

fn check(provider: Provider, out: &[Value]) -> Result<(), String> {
    match provider {
        Provider::OpenAiChat => check_chat(out),
        Provider::OpenAiResponses => check_responses(out),
        _ => check_anthropic(out),
    }
}

fn check_chat(out: &[Value]) -> Result<(), String> {
    let mut ids = HashSet::new();
    let mut i = 0;
    while i < out.len() {
        let m = &out[i];
        match m["role"].as_str() {
            Some("system" | "user") if nonblank(&m["content"]) => i += 1,
            Some("assistant") => {
                let calls = m.get("tool_calls").and_then(Value::as_array);
                match calls {
                    None if nonblank(&m["content"]) => i += 1,
                    Some(calls) if !calls.is_empty() => {
                        if !(m["content"].is_null() || nonblank(&m["content"])) {
                            return Err(format!("[{i}] bad content"));
                        }
                        let mut want = HashSet::new();
                        for c in calls {
                            let id = c["id"].as_str().ok_or("id")?;
                            if !word(id, 40)
                                || !ids.insert(id.to_owned())
                                || c["type"] != "function"
                            {
                                return Err(format!("[{i}] bad or repeated id {id}"));
                            }
                            want.insert(id.to_owned());
                            let args: Value = serde_json::from_str(
                                c["function"]["arguments"].as_str().ok_or("args")?,
                            )
                            .map_err(|e| e.to_string())?;
                            if !args.is_object()
                                || !word(c["function"]["name"].as_str().ok_or("name")?, 64)
                            {
                                return Err(format!("[{i}] bad call {c}"));
                            }
                        }
                        for k in 1..=calls.len() {
                            let t = out.get(i + k).ok_or(format!("[{i}] results missing"))?;
                            let id = t["tool_call_id"].as_str().unwrap_or_default();
                            if t["role"] != "tool" || !want.remove(id) || !t["content"].is_string()
                            {
                                return Err(format!("[{}] not a result of [{i}]: {t}", i + k));
                            }
                        }
                        i += calls.len() + 1;
                    }
                    _ => return Err(format!("[{i}] empty assistant {m}")),
                }
            }
            _ => return Err(format!("[{i}] bad message {m}")),
        }
    }
    Ok(())
}

fn check_responses(out: &[Value]) -> Result<(), String> {
    let mut ids = HashSet::new();
    let mut i = 0;
    while i < out.len() {
        let m = &out[i];
        match m["type"].as_str() {
            None if ["system", "user", "assistant"]
                .contains(&m["role"].as_str().unwrap_or_default())
                && nonblank(&m["content"]) =>
            {
                i += 1;
            }
            Some("function_call") => {
                let mut want = Vec::new();
                while out.get(i).is_some_and(|m| m["type"] == "function_call") {
                    let c = &out[i];
                    let id = c["call_id"].as_str().ok_or("call_id")?;
                    let args: Value = serde_json::from_str(c["arguments"].as_str().ok_or("args")?)
                        .map_err(|e| e.to_string())?;
                    if !word(id, 40) || !ids.insert(id.to_owned()) || !args.is_object() {
                        return Err(format!("[{i}] bad call {c}"));
                    }
                    want.push(id.to_owned());
                    i += 1;
                }
                for id in want {
                    let o = out.get(i).ok_or("output missing")?;
                    if o["type"] != "function_call_output"
                        || o["call_id"] != id.as_str()
                        || !o["output"].is_string()
                    {
                        return Err(format!("[{i}] not the output of {id}: {o}"));
                    }
                    i += 1;
                }
            }
            _ => return Err(format!("[{i}] bad item {m}")),
        }
    }
    Ok(())
}

fn check_anthropic(out: &[Value]) -> Result<(), String> {
    let mut ids = HashSet::new();
    let mut pending: Vec<String> = Vec::new();
    for (i, m) in out.iter().enumerate() {
        let role = m["role"].as_str().ok_or("role")?;
        let want = if i % 2 == 0 { "user" } else { "assistant" };
        if role != want {
            return Err(format!("[{i}] is {role}, expected {want}"));
        }
        let blocks = m["content"]
            .as_array()
            .filter(|b| !b.is_empty())
            .ok_or(format!("[{i}] no blocks"))?;
        let mut answered = 0;
        for (j, b) in blocks.iter().enumerate() {
            match (b["type"].as_str(), role) {
                (Some("text"), _) if nonblank(&b["text"]) => {}
                (Some("tool_use"), "assistant") => {
                    let id = b["id"].as_str().ok_or("id")?;
                    if !word(id, 64) || !ids.insert(id.to_owned()) || !b["input"].is_object() {
                        return Err(format!("[{i}] bad tool_use {b}"));
                    }
                }
                (Some("tool_result"), "user")
                    if j == answered
                        && pending
                            .get(j)
                            .is_some_and(|id| b["tool_use_id"] == id.as_str()) =>
                {
                    answered += 1;
                }
                _ => return Err(format!("[{i}].content[{j}] bad block {b}")),
            }
        }
        if role == "user" && answered != pending.len() {
            return Err(format!(
                "[{i}] answers {answered} of {} calls",
                pending.len()
            ));
        }
        pending = if role == "assistant" {
            blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| b["id"].as_str().unwrap_or_default().to_owned())
                .collect()
        } else {
            Vec::new()
        };
        if i + 1 == out.len() {
            if !pending.is_empty() {
                return Err("tool_use left unanswered at the end".into());
            }
            if role == "assistant"
                && blocks
                    .last()
                    .and_then(|b| b["text"].as_str())
                    .is_some_and(|t| t.ends_with(char::is_whitespace))
            {
                return Err("final assistant text ends in whitespace".into());
            }
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------
// Property: random conversations, random drops, always valid.

fn arb_id() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (0..4u8).prop_map(|n| format!("call_{n}")),
        1 => Just(String::new()),
        1 => Just("toolu.01/x".to_owned()),
        1 => Just("c".repeat(70)),
    ]
}

fn arb_call() -> impl Strategy<Value = ToolCall> {
    (
        arb_id(),
        prop_oneof![5 => Just("grep"), 1 => Just("bad name"), 1 => Just("")],
        0..4u8,
    )
        .prop_map(|(id, name, args)| ToolCall {
            id,
            name: name.to_owned(),
            arguments: match args {
                0 => json!("{not json"),
                1 => json!({}),
                _ => json!({"q": "x", "n": args}),
            },
        })
}

fn arb_message() -> impl Strategy<Value = Message> {
    let text =
        prop_oneof![3 => "[a-z ]{1,30}", 1 => Just(String::new()), 1 => Just("  \n".to_owned())];
    (
        prop_oneof![
            Just("user"),
            Just("assistant"),
            Just("assistant"),
            Just("tool"),
            Just("tool"),
            Just("system"),
            Just("critic")
        ],
        text,
        proptest::collection::vec(arb_call(), 0..3),
        proptest::option::of(arb_id()),
        any::<bool>(),
        0i32..100,
        proptest::option::of(0i64..20),
    )
        .prop_map(
            |(role, content, calls, call_id, is_error, priority, at)| Message {
                role: role.to_owned(),
                content,
                tool_calls: if role == "assistant" {
                    calls
                } else {
                    Vec::new()
                },
                tool_call_id: if role == "tool" { call_id } else { None },
                is_error,
                priority: Some(priority),
                at: at.map(|s| {
                    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() + TimeDelta::seconds(s)
                }),
                ..Message::default()
            },
        )
}

/// An assistant message with calls, then results for some of them in some order (and now and
/// then one for a call it did not make).
fn arb_exchange() -> impl Strategy<Value = Vec<Message>> {
    (
        proptest::collection::vec(arb_call(), 1..4),
        proptest::collection::vec((0..5usize, any::<bool>()), 0..5),
        0i32..100,
    )
        .prop_map(|(calls, answers, priority)| {
            let mut out = vec![Message {
                role: "assistant".into(),
                tool_calls: calls.clone(),
                priority: Some(priority),
                ..Message::default()
            }];
            for (n, is_error) in answers {
                out.push(Message {
                    role: "tool".into(),
                    content: format!("result {n}"),
                    tool_call_id: Some(
                        calls
                            .get(n)
                            .map_or_else(|| format!("call_{n}"), |c| c.id.clone()),
                    ),
                    is_error,
                    priority: Some(priority),
                    ..Message::default()
                });
            }
            out
        })
}

fn arb_conversation() -> impl Strategy<Value = Vec<Message>> {
    proptest::collection::vec(
        prop_oneof![2 => arb_message().prop_map(|m| vec![m]), 1 => arb_exchange()],
        0..12,
    )
    .prop_map(|chunks| chunks.into_iter().flatten().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_provider_gets_valid_input_whatever_is_dropped(
        messages in arb_conversation(),
        budget in 0usize..400,
        briefing in any::<bool>(),
    ) {
        let mut b = ContextBuilder::new(budget);
        if briefing {
            b.add_facts(["the API is v2"]);
        }
        b.add_messages(messages);
        let packet = b.build();
        for provider in PROVIDERS {
            let out = packet.to_messages_for(provider).unwrap();
            if let Err(why) = check(provider, &out) {
                prop_assert!(false, "{:?}: {}\n{}", provider, why, serde_json::to_string_pretty(&out).unwrap());
            }
            prop_assert_eq!(&out, &packet.to_messages_for(provider).unwrap());
        }
    }

    #[test]
    fn normalize_never_panics(values in proptest::collection::vec(arb_json(), 0..6)) {
        if let Ok(messages) = normalize(&values) {
            let mut b = ContextBuilder::new(1_000);
            b.add_messages(messages);
            let packet = b.build();
            for provider in PROVIDERS {
                let out = packet.to_messages_for(provider).unwrap();
                prop_assert!(check(provider, &out).is_ok(), "{:?}", out);
            }
        }
    }
}

/// JSON biased toward message-like objects.
fn arb_json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("role"),
        Just("type"),
        Just("content"),
        Just("text"),
        Just("tool_calls"),
        Just("id"),
        Just("call_id"),
        Just("tool_call_id"),
        Just("tool_use_id"),
        Just("name"),
        Just("arguments"),
        Just("args"),
        Just("input"),
        Just("output"),
        Just("function"),
        Just("at"),
        Just("priority"),
        Just("lc"),
        Just("kwargs"),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop_oneof![
            Just("user"),
            Just("assistant"),
            Just("tool"),
            Just("system"),
            Just("message"),
            Just("function_call"),
            Just("function_call_output"),
            Just("text"),
            Just("tool_use"),
            Just("tool_result"),
            Just("human"),
            Just("ai"),
            Just("constructor"),
            Just("call_1"),
            Just("{\"a\":1}"),
            Just(""),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 64, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(key.clone(), inner, 0..5).prop_map(|m| Value::Object(
                m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
            )),
        ]
    })
}
