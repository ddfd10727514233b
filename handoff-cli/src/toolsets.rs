//! Which MCP tools a server offers: named sets (`handoff mcp --tools handoffs,tasks`), so that a
//! client's context holds the tools its agent needs rather than all of them (a coding agent
//! reads every tool's schema in every conversation, and some clients pass only the first 40
//! tools on). A set is the operations of a group of commands (`task …` is `tasks`); `handoffs`,
//! the default, is what an agent handing work on or taking it over needs.

use crate::error::{CliError, CliResult};
use crate::operations::Op;
use handoff_core::Error;

/// The tool that claims and runs the configured successor, written by hand in `mcp`.
pub(crate) const CLAIM_AND_SPAWN: &str = "handoff_claim_and_spawn";
/// The tool that shows the chain policy, written by hand in `mcp`.
pub(crate) const POLICY: &str = "handoff_policy";

/// The named sets, with what each is for (shown by `--help` and in errors).
pub(crate) const SETS: &[(&str, &str)] = &[
    (
        "handoffs",
        "hand work on and take it over: create, find, claim, renew, settle, and the successor's packet (the default)",
    ),
    (
        "tasks",
        "plans whose steps run as handoffs, their escalations and replays",
    ),
    ("protocol", "the manager/worker protocol"),
    (
        "memory",
        "versioned memory per scope, and who owns a session",
    ),
    (
        "curation",
        "conversations, facts, cherry-picks, the verification gate and merges",
    ),
    ("bundles", "shareable bundles of verified knowledge"),
    (
        "admin",
        "the log, chains, statistics, metrics, retries, priorities, policy and repairs",
    ),
    ("all", "every tool"),
];

/// The default set's operations (and [`CLAIM_AND_SPAWN`]): seed 000's create, list, claim, get,
/// claim-and-spawn and complete, and what holding a claim needs besides. (A holder withdraws
/// with `cancel` given its claim, which the server reads as `cancel_claim`: one tool fewer.)
const HANDOFFS: &[&str] = &[
    "create",
    "list",
    "get",
    "claim",
    "claim_next",
    "heartbeat",
    "complete",
    "release",
    "fail",
    "reject",
    "cancel",
    "context_for",
];

/// The set a command group's operations belong to.
fn set_of_group(group: &str, name: &str) -> &'static str {
    match group {
        "task" if name == "prune" => "admin",
        "task" | "step" => "tasks",
        "protocol" => "protocol",
        "memory" | "session" => "memory",
        "conversation" | "facts" | "" => "curation",
        "bundle" => "bundles",
        _ => "admin",
    }
}

/// The sets `op`'s tool belongs to (besides `all`).
pub(crate) fn sets_of_op(op: &Op) -> Vec<&'static str> {
    let mut sets = Vec::new();
    if HANDOFFS.contains(&op.name()) {
        sets.push("handoffs");
    }
    match op.info.command {
        Some((group, _)) => sets.push(set_of_group(group, op.name())),
        None if sets.is_empty() => sets.push("admin"),
        None => {}
    }
    sets
}

/// The sets a hand-written tool belongs to.
pub(crate) fn sets_of_tool(tool: &str) -> &'static [&'static str] {
    match tool {
        CLAIM_AND_SPAWN => &["handoffs"],
        _ => &["admin"],
    }
}

/// A choice of sets, as `--tools` or `HANDOFF_MCP_TOOLS` gives it: names separated by commas.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Selection(Vec<&'static str>);

impl Selection {
    /// Reads `text` (`handoffs,tasks`, `all`); `None` is the default, `handoffs`.
    pub(crate) fn parse(text: Option<&str>) -> CliResult<Selection> {
        let Some(text) = text else {
            return Ok(Selection(vec!["handoffs"]));
        };
        let mut chosen = Vec::new();
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match SETS.iter().find(|(set, _)| *set == name) {
                Some((set, _)) => chosen.push(*set),
                None => {
                    let names: Vec<&str> = SETS.iter().map(|(set, _)| *set).collect();
                    return Err(CliError::Core(Error::invalid(
                        "tools",
                        format!(
                            "unknown tool set {name:?}; the sets are {}",
                            names.join(", ")
                        ),
                    )));
                }
            }
        }
        if chosen.is_empty() {
            return Err(CliError::Core(Error::invalid(
                "tools",
                "names no tool set (say all for every tool)",
            )));
        }
        Ok(Selection(chosen))
    }

    /// Whether a tool of `sets` is offered.
    pub(crate) fn offers(&self, sets: &[&str]) -> bool {
        self.0.contains(&"all") || self.0.iter().any(|chosen| sets.contains(chosen))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::operations;

    #[test]
    fn every_tool_is_in_a_named_set_and_the_default_is_the_handoff_tools() {
        for op in operations::all() {
            let sets = sets_of_op(op);
            assert!(!sets.is_empty(), "{} is in no set", op.name());
            for set in sets {
                assert!(SETS.iter().any(|(name, _)| *name == set), "{set}");
            }
        }
        for name in HANDOFFS {
            assert!(operations::find(name).is_some(), "{name} is no operation");
        }
        let default = Selection::parse(None).unwrap();
        assert_eq!(default, Selection::parse(Some("handoffs")).unwrap());
        assert!(default.offers(sets_of_tool(CLAIM_AND_SPAWN)));
        assert!(!default.offers(sets_of_tool(POLICY)));
        let create_task = operations::find("create_task").unwrap();
        assert!(!default.offers(&sets_of_op(create_task)));
        assert!(
            Selection::parse(Some(" tasks, admin "))
                .unwrap()
                .offers(&sets_of_op(create_task))
        );
        assert!(Selection::parse(Some("all")).unwrap().offers(&["admin"]));
    }

    #[test]
    fn an_unknown_set_is_refused_by_name() {
        for bad in ["handoff", "", " , "] {
            let err = Selection::parse(Some(bad)).unwrap_err().to_string();
            assert!(err.contains("tools"), "{err}");
        }
    }
}
