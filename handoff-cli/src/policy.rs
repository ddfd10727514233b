//! The chain policy of a run: `--policy FILE`, `--agents DIR`, `--max-handoffs`,
//! `--max-revisits` (or their `HANDOFF_*` variables), over the store's own policy.
//!
//! Precedence, weakest first: the store's policy in force (the one saved in it with `handoff
//! policy save`, or the default); the file, whose keys replace the store's (a key it leaves
//! out keeps the store's value); the agents folder (collaborators only); the two flags. Files
//! are read and checked before the store is opened, so that a bad one creates nothing.

use std::path::Path;

use handoff_core::{AgentRegistry, ChainPolicy, Error, Store};
use serde_json::{Map, Value};

use crate::args::PolicyOpts;
use crate::error::{CliError, CliResult};

/// The most a policy file may hold; a policy is a few lines.
const MAX_POLICY_BYTES: u64 = 1 << 20;

/// What the options ask for, read and checked; applied to a store by [`Overrides::apply`].
#[derive(Default)]
pub(crate) struct Overrides {
    /// The keys the policy file sets (checked: together they make a valid policy).
    file: Option<Map<String, Value>>,
    agents: Option<AgentRegistry>,
    max_handoffs: Option<usize>,
    max_revisits: Option<usize>,
}

impl Overrides {
    /// Reads the policy file and the agents folder the options name.
    pub(crate) fn load(opts: &PolicyOpts) -> CliResult<Overrides> {
        Ok(Overrides {
            file: opts.policy_file.as_deref().map(read_file).transpose()?,
            agents: opts
                .agents
                .as_deref()
                .map(AgentRegistry::from_markdown_dir)
                .transpose()?,
            max_handoffs: opts.max_handoffs,
            max_revisits: opts.max_revisits,
        })
    }

    fn is_empty(&self) -> bool {
        self.file.is_none()
            && self.agents.is_none()
            && self.max_handoffs.is_none()
            && self.max_revisits.is_none()
    }

    /// The policy `base` becomes under these options.
    pub(crate) fn policy(&self, base: &ChainPolicy) -> CliResult<ChainPolicy> {
        let mut policy = match &self.file {
            Some(keys) => {
                let mut merged = match serde_json::to_value(base) {
                    Ok(Value::Object(map)) => map,
                    _ => Map::new(),
                };
                merged.extend(keys.clone());
                ChainPolicy::from_json(&Value::Object(merged).to_string())?
            }
            None => base.clone(),
        };
        if let Some(registry) = &self.agents {
            policy = registry.policy(policy);
        }
        if let Some(n) = self.max_handoffs {
            policy.max_handoffs = n;
        }
        if let Some(n) = self.max_revisits {
            policy.max_revisits = n;
        }
        Ok(policy)
    }

    /// The store with the policy these options make of its own; unchanged without options.
    pub(crate) fn apply(&self, store: Store) -> CliResult<Store> {
        if self.is_empty() {
            return Ok(store);
        }
        let policy = self.policy(store.policy())?;
        Ok(store.with_policy(policy))
    }
}

/// Reads a policy file; the core's reader names the key at fault. Returns the keys it sets.
fn read_file(path: &Path) -> CliResult<Map<String, Value>> {
    use std::io::Read;
    let name = path.display().to_string();
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_POLICY_BYTES + 1).read_to_string(&mut text))
        .map_err(|e| CliError::input("policy", format!("cannot read the policy file {name}"), e))?;
    if text.len() as u64 > MAX_POLICY_BYTES {
        return Err(Error::invalid(
            "policy",
            format!("{name} is larger than {MAX_POLICY_BYTES} bytes"),
        )
        .into());
    }
    ChainPolicy::from_json(&text)?;
    match serde_json::from_str(&text) {
        Ok(Value::Object(keys)) => Ok(keys),
        _ => Err(Error::invalid("policy", format!("{name} is not a JSON object")).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(json: &str) -> Map<String, Value> {
        match serde_json::from_str(json) {
            Ok(Value::Object(map)) => map,
            other => panic!("not an object: {other:?}"),
        }
    }

    #[test]
    fn a_file_goes_over_the_store_policy_and_flags_win() {
        let overrides = Overrides {
            file: Some(keys(
                r#"{"max_handoffs": 10, "collaborators": {"manager": ["worker"], "worker": ["manager"]}}"#,
            )),
            max_handoffs: None,
            ..Overrides::default()
        };
        let saved = ChainPolicy {
            max_handoffs: 2,
            max_revisits: 4,
            collaborators: None,
        };
        let policy = overrides.policy(&saved).expect("policy");
        assert_eq!(policy.max_handoffs, 10);
        // A key the file leaves out keeps the store's value.
        assert_eq!(policy.max_revisits, 4);
        let overrides = Overrides {
            max_revisits: Some(1),
            ..overrides
        };
        let policy = overrides.policy(&saved).expect("policy");
        assert_eq!(policy.max_revisits, 1);
        let pairs = policy.collaborators.expect("collaborators");
        assert!(pairs["manager"].contains("worker"));
    }

    #[test]
    fn unknown_keys_are_refused_by_name() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("policy.json");
        std::fs::write(&path, r#"{"max_handoffs": 3, "max_hops": 4}"#).expect("write");
        let err = read_file(&path).expect_err("unknown key");
        assert_eq!(err.code(), "VALIDATION");
        assert!(err.to_string().contains("max_hops"), "{err}");
    }

    #[test]
    fn no_options_leave_the_store_policy() {
        let base = ChainPolicy {
            max_handoffs: 9,
            ..ChainPolicy::default()
        };
        assert_eq!(Overrides::default().policy(&base).expect("policy"), base);
    }
}
