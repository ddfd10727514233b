//! The chain policy of a run: `--policy FILE`, `--agents DIR`, `--max-handoffs`,
//! `--max-revisits` (or their `HANDOFF_*` variables), over the store's own policy.
//!
//! Precedence, weakest first: the store's policy in force (the saved one, or the default); the
//! file, which replaces it (a key it leaves out takes the default, as in a saved policy); the
//! agents folder (collaborators only); the two flags. Files are read and checked before the
//! store is opened, so that a bad one creates nothing.

use std::path::Path;

use handoff_core::{AgentRegistry, ChainPolicy, Error, Store};

use crate::args::PolicyOpts;
use crate::error::{CliError, CliResult};

/// The most a policy file may hold; a policy is a few lines.
const MAX_POLICY_BYTES: u64 = 1 << 20;

/// What the options ask for, read and checked; applied to a store by [`Overrides::apply`].
#[derive(Default)]
pub(crate) struct Overrides {
    file: Option<ChainPolicy>,
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
    pub(crate) fn policy(&self, base: &ChainPolicy) -> ChainPolicy {
        let mut policy = self.file.as_ref().unwrap_or(base).clone();
        if let Some(registry) = &self.agents {
            policy = registry.policy(policy);
        }
        if let Some(n) = self.max_handoffs {
            policy.max_handoffs = n;
        }
        if let Some(n) = self.max_revisits {
            policy.max_revisits = n;
        }
        policy
    }

    /// The store with the policy these options make of its own; unchanged without options.
    pub(crate) fn apply(&self, store: Store) -> Store {
        if self.is_empty() {
            return store;
        }
        let policy = self.policy(store.policy());
        store.with_policy(policy)
    }
}

/// Reads a policy file; the core's reader names the key at fault.
fn read_file(path: &Path) -> CliResult<ChainPolicy> {
    use std::io::Read;
    let name = path.display().to_string();
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_POLICY_BYTES + 1).read_to_string(&mut text))
        .map_err(|e| CliError::io(format!("cannot read the policy file {name}"), e))?;
    if text.len() as u64 > MAX_POLICY_BYTES {
        return Err(Error::invalid(
            "policy",
            format!("{name} is larger than {MAX_POLICY_BYTES} bytes"),
        )
        .into());
    }
    Ok(ChainPolicy::from_json(&text)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_replaces_the_store_policy_and_flags_win() {
        let file = ChainPolicy::from_json(
            r#"{"max_handoffs": 10, "collaborators": {"manager": ["worker"], "worker": ["manager"]}}"#,
        )
        .expect("valid");
        let overrides = Overrides {
            file: Some(file),
            max_revisits: Some(1),
            ..Overrides::default()
        };
        let saved = ChainPolicy {
            max_handoffs: 2,
            max_revisits: 4,
            collaborators: None,
        };
        let policy = overrides.policy(&saved);
        assert_eq!(policy.max_handoffs, 10);
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
        assert_eq!(Overrides::default().policy(&base), base);
    }
}
