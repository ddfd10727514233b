//! Detecting a handoff in a typical 2 KB provider response, from JSON text and from a parsed
//! value.
#![allow(clippy::unwrap_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use handoff_core::tools::{AgentRegistry, Multiple};
use serde_json::json;

fn response() -> String {
    let args = json!({
        "reason": "the customer needs a refund, which is billing's job",
        "summary": "Customer 42 was charged twice for invoice INV-2024-0042 on the 3rd. ".repeat(12),
        "pending": ["refund the second charge", "email the customer", "close the ticket"],
        "instructions": "Check the payment provider's dashboard before refunding."
    });
    json!({
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "object": "chat.completion",
        "created": 1741570283, "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null, "message": {
            "role": "assistant", "content": null, "refusal": null,
            "tool_calls": [{"id": "call_abc123", "type": "function",
                "function": {"name": "transfer_to_billing", "arguments": args.to_string()}}]}}],
        "usage": {"prompt_tokens": 820, "completion_tokens": 170, "total_tokens": 990},
        "system_fingerprint": "fp_6b68a8204b"
    })
    .to_string()
}

fn detect(c: &mut Criterion) {
    let mut registry = AgentRegistry::new();
    registry.add("triage", "routes requests", None).unwrap();
    registry
        .add("billing", "invoices and refunds", None)
        .unwrap();
    registry.add("support", "debugs setups", None).unwrap();
    let text = response();
    eprintln!("response size: {} bytes", text.len());
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut group = c.benchmark_group("detect");
    group.bench_function("chat_completion_2kb_text", |b| {
        b.iter(|| {
            registry
                .detect_json(&text, "triage", Multiple::Error)
                .unwrap()
        })
    });
    group.bench_function("chat_completion_2kb_value", |b| {
        b.iter(|| registry.detect(&value, "triage", Multiple::Error).unwrap())
    });
    group.finish();
}

criterion_group!(benches, detect);
criterion_main!(benches);
