//! The provider-response detector on arbitrary input: `detect_json` on the bytes as text and,
//! when they are JSON, `detect` on the parsed value. Neither may panic, and they must agree:
//! whatever `detect_json` accepts, `detect` reads the same way (the Python and Node bindings
//! pass parsed values, the CLI and MCP server text).
#![no_main]

use std::sync::LazyLock;

use handoff_core::AgentRegistry;
use handoff_core::tools::{Multiple, TOOL_PREFIX};
use libfuzzer_sys::fuzz_target;

/// Agents whose tool names exercise the registry's corners: collaborators, a name that
/// sanitises (`tech.support`), two that sanitise alike (`a.b`, `a:b`) and one cut at 64.
static REGISTRY: LazyLock<AgentRegistry> = LazyLock::new(|| {
    let mut r = AgentRegistry::new();
    let long = "x".repeat(100);
    let agents: [(&str, &str, Option<Vec<String>>); 6] = [
        ("triage", "routes requests", Some(vec!["billing".into(), "tech.support".into()])),
        ("billing", "invoices and refunds", None),
        ("tech.support", "debugs setups", Some(vec!["triage".into()])),
        ("a.b", "", None),
        ("a:b", "", None),
        (&long, "long name", None),
    ];
    for (name, description, collaborators) in agents {
        if r.add(name, description, collaborators).is_err() {
            unreachable!("the fuzz registry's agents are valid");
        }
    }
    r
});

/// Senders: with collaborators, without, and one that is not registered.
const FROM: [&str; 4] = ["triage", "billing", "a.b", "nobody"];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let registry = &*REGISTRY;
    let value = serde_json::from_str::<serde_json::Value>(text).ok();
    for from in FROM {
        let strict = registry.detect_json(text, from, Multiple::Error);
        let first = registry.detect_json(text, from, Multiple::FirstWins);
        match (&strict, &first) {
            // One handoff or none: the policy makes no difference.
            (Ok(a), Ok(b)) => assert_eq!(a, b, "Multiple::Error and FirstWins disagree"),
            // `FirstWins` refuses only what `Error` refuses too.
            (Ok(_), Err(e)) => panic!("FirstWins refused what Error accepted: {e}"),
            _ => {}
        }
        if let Ok(Some(intent)) = &first {
            assert!(intent.tool.starts_with(TOOL_PREFIX), "tool {:?}", intent.tool);
            assert!(
                registry.agents().iter().any(|a| a.name == intent.target),
                "target {:?} is not registered",
                intent.target
            );
            assert_ne!(intent.target, from, "an agent handed off to itself");
        }
        let Some(value) = &value else {
            continue;
        };
        let parsed = registry.detect(value, from, Multiple::FirstWins);
        if let Ok(found) = &first {
            match &parsed {
                Ok(again) => assert_eq!(found, again, "detect_json and detect disagree"),
                Err(e) => panic!("detect refused what detect_json accepted: {e}"),
            }
        }
    }
});
