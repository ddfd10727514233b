//! Tools and the detector, on fixtures shaped like each provider's documented format.
#![allow(clippy::unwrap_used)]

use handoff_core::tools::{AgentRegistry, Multiple, Provider};
use handoff_core::{ChainPolicy, Error, ErrorKind, Store};
use proptest::prelude::*;
use serde_json::{Value, json};

fn registry() -> AgentRegistry {
    let mut r = AgentRegistry::new();
    r.add(
        "triage",
        "routes requests",
        Some(vec!["billing".into(), "tech.support".into()]),
    )
    .unwrap();
    r.add("billing", "invoices and refunds", None).unwrap();
    r.add(
        "tech.support",
        "debugs customer setups",
        Some(vec!["triage".into()]),
    )
    .unwrap();
    r.add("sales", "quotes and discounts", None).unwrap();
    r
}

const ARGS: &str = r#"{"reason":"refund request","summary":"customer 42 was double charged","pending":["refund the second charge"],"instructions":null}"#;

fn chat_completion(calls: Value) -> Value {
    json!({
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion",
        "created": 1741570283,
        "model": "gpt-4o-2024-08-06",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": null, "tool_calls": calls, "refusal": null},
            "logprobs": null,
            "finish_reason": "tool_calls"
        }],
        "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99}
    })
}

fn chat_call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

fn responses(output: Value) -> Value {
    json!({
        "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
        "object": "response",
        "created_at": 1741476542,
        "status": "completed",
        "model": "gpt-4.1-2025-04-14",
        "output": output,
        "parallel_tool_calls": true,
        "usage": {"input_tokens": 36, "output_tokens": 87, "total_tokens": 123}
    })
}

fn anthropic(content: Value) -> Value {
    json!({
        "id": "msg_01Aq9w938a90dw8q",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": null,
        "usage": {"input_tokens": 472, "output_tokens": 91}
    })
}

#[test]
fn tool_definitions_per_provider() {
    let r = registry();
    let chat = r.tools("triage", Provider::OpenAiChat).unwrap();
    let names: Vec<&str> = chat
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["transfer_to_billing", "transfer_to_tech_support"]);
    let f = &chat[0]["function"];
    assert_eq!(chat[0]["type"], "function");
    assert_eq!(f["strict"], true);
    assert!(
        f["description"]
            .as_str()
            .unwrap()
            .contains("billing (invoices and refunds)")
    );
    // Strict mode: every property required, nothing else allowed, optional ones nullable.
    let params = &f["parameters"];
    let props: Vec<&String> = params["properties"].as_object().unwrap().keys().collect();
    let required: Vec<&str> = params["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(props, required);
    assert_eq!(params["additionalProperties"], false);
    assert_eq!(
        params["properties"]["instructions"]["type"],
        json!(["string", "null"])
    );

    let resp = r.tools("triage", Provider::OpenAiResponses).unwrap();
    assert_eq!(resp[0]["name"], "transfer_to_billing");
    assert_eq!(resp[0]["parameters"], *params);
    let claude = r.tools("triage", Provider::Anthropic).unwrap();
    assert_eq!(claude[0]["input_schema"], *params);
    assert!(claude[0].get("type").is_none());
    let mcp = r.tools("triage", Provider::Mcp).unwrap();
    assert_eq!(mcp[0]["inputSchema"], *params);
    // No collaborators declared: everyone else.
    assert_eq!(r.tools("sales", Provider::Mcp).unwrap().len(), 3);
    assert_eq!(
        "nope".parse::<Provider>().unwrap_err().kind(),
        ErrorKind::Validation
    );
}

#[test]
fn detects_chat_completions_whole_or_message() {
    let r = registry();
    let response = chat_completion(json!([chat_call(
        "call_abc123",
        "transfer_to_billing",
        ARGS
    )]));
    let intent = r
        .detect(&response, "triage", Multiple::Error)
        .unwrap()
        .unwrap();
    assert_eq!(intent.target, "billing");
    assert_eq!(intent.call_id.as_deref(), Some("call_abc123"));
    assert_eq!(
        intent.arguments["summary"],
        "customer 42 was double charged"
    );
    let message = &response["choices"][0]["message"];
    assert_eq!(
        r.detect(message, "triage", Multiple::Error).unwrap(),
        Some(intent)
    );
    // Other tools and plain answers are not handoffs.
    let other = chat_completion(json!([chat_call("c1", "get_weather", "{}")]));
    assert_eq!(r.detect(&other, "triage", Multiple::Error).unwrap(), None);
    let answer = json!({"choices": [{"message": {"role": "assistant", "content": "Hello!"}}]});
    assert_eq!(r.detect(&answer, "triage", Multiple::Error).unwrap(), None);
}

#[test]
fn detects_responses_api_output_items() {
    let r = registry();
    let response = responses(json!([
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "id": "fc_12345xyz", "call_id": "call_12345xyz",
         "name": "transfer_to_tech_support", "arguments": ARGS, "status": "completed"}
    ]));
    let intent = r
        .detect(&response, "triage", Multiple::Error)
        .unwrap()
        .unwrap();
    assert_eq!(intent.target, "tech.support");
    assert_eq!(intent.call_id.as_deref(), Some("call_12345xyz"));
}

#[test]
fn detects_anthropic_tool_use() {
    let r = registry();
    let response = anthropic(json!([
        {"type": "text", "text": "Let me pass you to billing."},
        {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "transfer_to_billing",
         "input": {"reason": "refund", "summary": "double charge", "pending": null, "instructions": "be kind"}}
    ]));
    let intent = r
        .detect(&response, "triage", Multiple::Error)
        .unwrap()
        .unwrap();
    assert_eq!(intent.target, "billing");
    assert_eq!(intent.arguments["instructions"], "be kind");
    let text = serde_json::to_string(&response).unwrap();
    assert_eq!(
        r.detect_json(&text, "triage", Multiple::Error)
            .unwrap()
            .unwrap()
            .target,
        "billing"
    );
}

#[test]
fn typed_errors() {
    let r = registry();
    let field = |e: Error| match e {
        Error::Validation { problems } => problems[0].field.clone(),
        other => panic!("{other}"),
    };
    // Malformed arguments.
    let bad = chat_completion(json!([chat_call("c1", "transfer_to_billing", "{not json")]));
    assert_eq!(
        field(r.detect(&bad, "triage", Multiple::Error).unwrap_err()),
        "choices[0].message.tool_calls[0].function.arguments"
    );
    let array = anthropic(
        json!([{"type": "tool_use", "id": "t", "name": "transfer_to_billing", "input": [1]}]),
    );
    assert_eq!(
        field(r.detect(&array, "triage", Multiple::Error).unwrap_err()),
        "content[0].input"
    );
    // An unknown target.
    let unknown = chat_completion(json!([chat_call("c1", "transfer_to_nobody", ARGS)]));
    assert_eq!(
        field(r.detect(&unknown, "triage", Multiple::Error).unwrap_err()),
        "choices[0].message.tool_calls[0].function.name"
    );
    assert!(
        r.detect(&unknown, "triage", Multiple::Error)
            .unwrap_err()
            .to_string()
            .contains("transfer_to_nobody")
    );
    // A registered agent that is not a collaborator.
    let stranger = chat_completion(json!([chat_call("c1", "transfer_to_sales", ARGS)]));
    let err = r.detect(&stranger, "triage", Multiple::Error).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ChainViolation, "{err}");
    // Several handoffs: an error, or the first wins.
    let two = chat_completion(json!([
        chat_call("c1", "transfer_to_billing", ARGS),
        chat_call("c2", "transfer_to_tech_support", ARGS)
    ]));
    assert_eq!(
        field(r.detect(&two, "triage", Multiple::Error).unwrap_err()),
        "tool_calls"
    );
    assert_eq!(
        r.detect(&two, "triage", Multiple::FirstWins)
            .unwrap()
            .unwrap()
            .target,
        "billing"
    );
    // An unregistered sender, and JSON text that is not JSON or too deep.
    assert_eq!(
        field(r.detect(&two, "ghost", Multiple::Error).unwrap_err()),
        "agent"
    );
    assert_eq!(
        field(r.detect_json("{", "triage", Multiple::Error).unwrap_err()),
        "response"
    );
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(
        field(r.detect_json(&deep, "triage", Multiple::Error).unwrap_err()),
        "response"
    );
}

#[test]
fn an_intent_becomes_a_handoff_under_the_registry_policy() {
    let r = registry();
    let store = Store::memory().with_policy(r.policy(ChainPolicy::default()));
    let response = chat_completion(json!([chat_call("call_9", "transfer_to_billing", ARGS)]));
    let intent = r
        .detect(&response, "triage", Multiple::Error)
        .unwrap()
        .unwrap();
    let h = store
        .create(intent.to_new_handoff("ticket-42", "triage", "Resolve the double charge"))
        .unwrap();
    assert_eq!(h.to_agent.as_deref(), Some("billing"));
    assert_eq!(h.pending_steps, ["refund the second charge"]);
    assert_eq!(h.metadata["call_id"], "call_9");
    // The registry's policy refuses a hop the registry does not allow.
    let refused = handoff_core::NewHandoff::new("ticket-43", "x")
        .from_agent("triage")
        .to_agent("sales");
    assert_eq!(
        store.create(refused).unwrap_err().kind(),
        ErrorKind::ChainViolation
    );
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        prop_oneof![
            Just("transfer_to_billing".to_owned()),
            Just("tool_use".to_owned()),
            Just("function_call".to_owned()),
            ".{0,10}"
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("choices"),
                    Just("message"),
                    Just("tool_calls"),
                    Just("function"),
                    Just("name"),
                    Just("arguments"),
                    Just("output"),
                    Just("type"),
                    Just("content"),
                    Just("input"),
                    Just("id")
                ]
                .prop_map(str::to_owned),
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn the_detector_never_panics(response in arbitrary_json()) {
        let r = registry();
        let _ = r.detect(&response, "triage", Multiple::Error);
        let _ = r.detect(&response, "triage", Multiple::FirstWins);
    }

    #[test]
    fn the_detector_never_panics_on_text(text in ".{0,200}") {
        let _ = registry().detect_json(&text, "triage", Multiple::Error);
    }
}

#[test]
fn nesting_is_refused_even_where_the_detector_would_not_look() {
    let deep = format!("{{\"a\":{}1{}}}", "[".repeat(200), "]".repeat(200));
    let err = registry()
        .detect_json(&deep, "triage", Multiple::Error)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Validation, "{err}");
}

#[test]
fn display_names_become_sdk_tool_names_and_map_back() {
    let mut r = AgentRegistry::new();
    r.add(
        "Triage",
        "",
        Some(vec!["Tech Support".into(), "Billing agent".into()]),
    )
    .unwrap();
    r.add("Tech Support", "fixes setups", None).unwrap();
    r.add("Billing agent", "refunds", None).unwrap();
    let tools = r.tools("Triage", Provider::OpenAiChat).unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["transfer_to_tech_support", "transfer_to_billing_agent"]
    );
    let response = chat_completion(json!([chat_call(
        "call_1",
        "transfer_to_billing_agent",
        ARGS
    )]));
    let intent = r
        .detect(&response, "Triage", Multiple::Error)
        .unwrap()
        .unwrap();
    assert_eq!(intent.target, "Billing agent");
    let new = intent.to_new_handoff("ticket-1", "Triage", "refund");
    let store = Store::memory().with_policy(r.policy(ChainPolicy::default()));
    let h = store.create(new).unwrap();
    let claim = store
        .claim_next("Billing agent", None, std::time::Duration::from_secs(60))
        .unwrap()
        .unwrap();
    assert_eq!(claim.handoff.id, h.id);
}

#[test]
fn detects_langchain_messages_and_lone_blocks() {
    let r = registry();
    let args = json!({"reason": "refund", "summary": "s", "pending": null, "instructions": null});
    // A LangChain AIMessage as a dict (`message.model_dump()` / `message_to_dict`'s data).
    let ai = json!({
        "type": "ai", "content": "", "id": "run-1",
        "tool_calls": [{"name": "transfer_to_billing", "args": args, "id": "call_9", "type": "tool_call"}],
        "invalid_tool_calls": [], "additional_kwargs": {}, "response_metadata": {}
    });
    let intent = r.detect(&ai, "triage", Multiple::Error).unwrap().unwrap();
    assert_eq!(
        (intent.target.as_str(), intent.call_id.as_deref()),
        ("billing", Some("call_9"))
    );
    assert_eq!(intent.arguments["reason"], "refund");
    // Its `dumpd` form.
    let dumped = json!({"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"], "kwargs": ai});
    let intent = r
        .detect_json(&dumped.to_string(), "triage", Multiple::Error)
        .unwrap()
        .unwrap();
    assert_eq!(intent.target, "billing");
    // A LangChain message with no tool call is a known shape without a handoff.
    let plain = json!({"type": "ai", "content": "hello", "tool_calls": []});
    assert!(
        r.detect(&plain, "triage", Multiple::Error)
            .unwrap()
            .is_none()
    );
    // A lone Anthropic tool_use block, and a list of content blocks.
    let block =
        json!({"type": "tool_use", "id": "toolu_01", "name": "transfer_to_billing", "input": args});
    let intent = r
        .detect(&block, "triage", Multiple::Error)
        .unwrap()
        .unwrap();
    assert_eq!(intent.call_id.as_deref(), Some("toolu_01"));
    let blocks = json!([{"type": "text", "text": "handing over"}, block]);
    assert!(
        r.detect(&blocks, "triage", Multiple::Error)
            .unwrap()
            .is_some()
    );
    assert!(
        r.detect_json(&blocks.to_string(), "triage", Multiple::Error)
            .unwrap()
            .is_some()
    );
    // LangChain args missing is an error naming the field.
    let broken = json!({"type": "ai", "tool_calls": [{"name": "transfer_to_billing", "id": "c"}]});
    let err = r.detect(&broken, "triage", Multiple::Error).unwrap_err();
    assert!(err.to_string().contains("tool_calls[0].args"), "{err}");
}

#[test]
fn unknown_shapes_are_errors_not_silence() {
    let r = registry();
    for unknown in [
        json!({}),
        json!({"foo": 1}),
        json!({"message": "hi"}),
        json!(42),
        json!("text"),
    ] {
        let err = r.detect(&unknown, "triage", Multiple::Error).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Validation, "{unknown}");
        assert!(err.to_string().contains("response"), "{err}");
        let err = r
            .detect_json(&unknown.to_string(), "triage", Multiple::Error)
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Validation, "{unknown}");
    }
}

#[test]
fn multiple_has_one_spelling_and_an_alias() {
    assert_eq!(
        "first_wins".parse::<Multiple>().unwrap(),
        Multiple::FirstWins
    );
    assert_eq!("first".parse::<Multiple>().unwrap(), Multiple::FirstWins);
    assert_eq!("error".parse::<Multiple>().unwrap(), Multiple::Error);
    assert_eq!(Multiple::FirstWins.to_string(), "first_wins");
    assert!(matches!(
        "both".parse::<Multiple>(),
        Err(Error::Validation { .. })
    ));
}

#[test]
fn agents_load_from_markdown_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("triage.md"),
        "---\nname: Triage\ndescription: routes requests\n---\n\n## Collaborations\n- **Tech Support**: setups\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("support.md"),
        "# Tech Support\n\nFixes setups.\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not an agent").unwrap();
    let r = AgentRegistry::from_markdown_dir(dir.path()).unwrap();
    let names: Vec<&str> = r.agents().iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["Tech Support", "Triage"]);
    let tools = r.tools("Triage", Provider::Anthropic).unwrap();
    assert_eq!(tools[0]["name"], "transfer_to_tech_support");
    assert!(
        r.tools("Tech Support", Provider::Anthropic)
            .unwrap()
            .is_empty()
    );
    let err = AgentRegistry::from_markdown_dir(dir.path().join("missing")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Validation);
}

#[test]
fn detects_js_agents_sdk_items_and_run_items() {
    let r = registry();
    let item = json!({"type": "function_call", "name": "transfer_to_billing", "callId": "call_9",
                      "arguments": ARGS, "status": "completed"});
    // A raw item (camelCase `callId`), a run's output list, and the run items of `newItems`.
    let intent = r.detect(&item, "triage", Multiple::Error).unwrap().unwrap();
    assert_eq!(
        (intent.target.as_str(), intent.call_id.as_deref()),
        ("billing", Some("call_9"))
    );
    let output = json!([{"type": "message", "role": "assistant", "content": []}, item]);
    assert_eq!(
        r.detect(&output, "triage", Multiple::Error).unwrap(),
        Some(intent.clone())
    );
    let run_items =
        json!([{"type": "tool_call_item", "rawItem": item, "agent": {"name": "triage"}}]);
    assert_eq!(
        r.detect(&run_items, "triage", Multiple::Error).unwrap(),
        Some(intent.clone())
    );
    let text = serde_json::to_string(&run_items).unwrap();
    assert_eq!(
        r.detect_json(&text, "triage", Multiple::Error).unwrap(),
        Some(intent)
    );
}

#[test]
fn detects_the_last_handoff_in_a_transcript() {
    let r = registry();
    let args = json!({"reason": "refund", "summary": "s", "pending": null, "instructions": null});
    let target = |list: &Value| {
        let intent = r.detect(list, "triage", Multiple::Error).unwrap();
        let from_text = r
            .detect_json(&list.to_string(), "triage", Multiple::Error)
            .unwrap();
        assert_eq!(intent, from_text, "{list}");
        intent.map(|i| (i.target, i.call_id))
    };
    // OpenAI chat messages: the handoff, its tool result, a later turn without one.
    let chat = json!([
        {"role": "system", "content": "you route"},
        {"role": "user", "content": "I was charged twice"},
        {"role": "assistant", "content": null, "tool_calls": [chat_call("call_1", "transfer_to_tech_support", "{}")]},
        {"role": "tool", "tool_call_id": "call_1", "content": "refused"},
        {"role": "assistant", "content": null, "tool_calls": [chat_call("call_2", "transfer_to_billing", ARGS)]},
        {"role": "tool", "tool_call_id": "call_2", "content": "ok"},
        {"role": "assistant", "content": "Billing will help you."}
    ]);
    assert_eq!(
        target(&chat),
        Some(("billing".to_owned(), Some("call_2".to_owned())))
    );
    // Anthropic messages.
    let anthropic_messages = json!([
        {"role": "user", "content": "refund please"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "handing over"},
            {"type": "tool_use", "id": "toolu_7", "name": "transfer_to_billing", "input": args}
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_7", "content": "ok"}]}
    ]);
    assert_eq!(
        target(&anthropic_messages),
        Some(("billing".to_owned(), Some("toolu_7".to_owned())))
    );
    // LangChain: `messages_to_dict` and `dumpd` forms.
    let ai = json!({"type": "ai", "content": "", "tool_calls": [
        {"name": "transfer_to_billing", "args": args, "id": "call_lc", "type": "tool_call"}
    ]});
    let dicts = json!([
        {"type": "human", "data": {"type": "human", "content": "refund"}},
        {"type": "ai", "data": ai},
        {"type": "tool", "data": {"type": "tool", "content": "ok", "tool_call_id": "call_lc"}}
    ]);
    assert_eq!(
        target(&dicts),
        Some(("billing".to_owned(), Some("call_lc".to_owned())))
    );
    let dumps = json!([
        {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "HumanMessage"],
         "kwargs": {"type": "human", "content": "refund"}},
        {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"], "kwargs": ai}
    ]);
    assert_eq!(
        target(&dumps),
        Some(("billing".to_owned(), Some("call_lc".to_owned())))
    );
    // The Agents SDK's items (`result.to_input_list()`).
    let items = json!([
        {"role": "user", "content": "refund"},
        {"type": "function_call", "call_id": "call_a", "name": "transfer_to_billing", "arguments": ARGS},
        {"type": "function_call_output", "call_id": "call_a", "output": "{}"},
        {"role": "assistant", "type": "message", "content": [{"type": "output_text", "text": "done"}]}
    ]);
    assert_eq!(
        target(&items),
        Some(("billing".to_owned(), Some("call_a".to_owned())))
    );
    // A transcript without a handoff is none; two handoffs in one turn are one response's.
    let plain =
        json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]);
    assert_eq!(target(&plain), None);
    let twice = json!([
        {"role": "user", "content": "refund"},
        {"role": "assistant", "tool_calls": [
            chat_call("c1", "transfer_to_billing", ARGS),
            chat_call("c2", "transfer_to_tech_support", "{}")
        ]}
    ]);
    let err = r.detect(&twice, "triage", Multiple::Error).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Validation, "{err}");
    // An element that is nothing the detector reads is an error naming it and what it expected.
    let odd = json!([{"role": "user", "content": "hi"}, {"foo": 1}]);
    let err = r.detect(&odd, "triage", Multiple::Error).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Validation);
    assert_eq!(err.problems()[0].field, "response[1]", "{err}");
    assert!(err.to_string().contains("transcript"), "{err}");
}
