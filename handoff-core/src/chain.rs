//! Chains: the hops a task took from agent to agent, and the policy that guards new hops
//! against loops and runaway hand-offs.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::record::{Kind, Status};

/// One hop of a chain: a handoff from one agent to the next.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Hop {
    /// The handoff making this hop.
    pub handoff_id: String,
    /// The handoff it continues, if any.
    pub parent_id: Option<String>,
    /// The agent handing over.
    pub from_agent: Option<String>,
    /// The agent taking over: the addressee, or whoever claimed an open handoff.
    pub to_agent: Option<String>,
    /// The handoff's kind.
    pub kind: Kind,
    /// The handoff's status.
    pub status: Status,
    /// When the hop was created.
    pub created_at: DateTime<Utc>,
}

/// A task's hops in creation order. Checkpoints are not hops and are left out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Chain {
    /// The task.
    pub task_id: String,
    /// Its hops, oldest first.
    pub hops: Vec<Hop>,
}

/// Shown for an open handoff nobody has claimed yet, and for an unnamed sender.
const ANYONE: &str = "*";

impl Chain {
    /// The agents the task passed through, in order: the first sender, then each successor.
    pub fn path(&self) -> Vec<String> {
        path_of(&self.hops)
    }
}

impl fmt::Display for Chain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path().join(" → "))
    }
}

fn path_of(hops: &[Hop]) -> Vec<String> {
    let name = |agent: &Option<String>| agent.clone().unwrap_or_else(|| ANYONE.to_owned());
    let mut path = Vec::with_capacity(hops.len() + 1);
    for (i, hop) in hops.iter().enumerate() {
        // A sender that is not the previous successor starts a new branch of the path.
        if i == 0 || hop.from_agent.is_some() && path.last() != Some(&name(&hop.from_agent)) {
            path.push(name(&hop.from_agent));
        }
        path.push(name(&hop.to_agent));
    }
    path
}

/// Limits on how a task may travel between agents, checked before a hop is created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainPolicy {
    /// Most hops one task may make.
    pub max_handoffs: usize,
    /// How many times an agent may appear again in a task's path (A→B→A is one revisit).
    pub max_revisits: usize,
    /// Who may hand off to whom; `None` allows every pair. A sender missing from the map may
    /// hand off to nobody.
    pub collaborators: Option<BTreeMap<String, BTreeSet<String>>>,
}

impl Default for ChainPolicy {
    fn default() -> Self {
        ChainPolicy {
            max_handoffs: 5,
            max_revisits: 0,
            collaborators: None,
        }
    }
}

impl ChainPolicy {
    /// A policy with no limits at all.
    pub fn unlimited() -> Self {
        ChainPolicy {
            max_handoffs: usize::MAX,
            max_revisits: usize::MAX,
            collaborators: None,
        }
    }

    /// Declares that `from` may hand off to each of `to`.
    pub fn allow<I, S>(mut self, from: impl Into<String>, to: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.collaborators
            .get_or_insert_with(BTreeMap::new)
            .entry(from.into())
            .or_default()
            .extend(to.into_iter().map(Into::into));
        self
    }

    /// Checks a new hop `from → to` against the task's existing hops.
    pub fn check(
        &self,
        task_id: &str,
        hops: &[Hop],
        from: Option<&str>,
        to: Option<&str>,
    ) -> Result<(), ChainViolation> {
        // The path up to the new hop's sender, which the new successor would extend.
        let mut path = path_of(hops);
        let sender = from.unwrap_or(ANYONE);
        if path.is_empty() || from.is_some() && path.last().map(String::as_str) != Some(sender) {
            path.push(sender.to_owned());
        }
        let violation = |rule: ChainRule| {
            let mut path = path.clone();
            path.push(to.unwrap_or(ANYONE).to_owned());
            ChainViolation {
                task_id: task_id.to_owned(),
                path,
                rule,
            }
        };
        if hops.len() >= self.max_handoffs {
            return Err(violation(ChainRule::MaxHandoffs {
                limit: self.max_handoffs,
            }));
        }
        if let (Some(from), Some(to), Some(allowed)) = (from, to, &self.collaborators)
            && !allowed
                .get(from)
                .is_some_and(|targets| targets.contains(to))
        {
            return Err(violation(ChainRule::NotCollaborator {
                from: from.to_owned(),
                to: to.to_owned(),
            }));
        }
        if let Some(to) = to
            && path.iter().filter(|agent| *agent == to).count() > self.max_revisits
        {
            return Err(violation(ChainRule::Revisit {
                agent: to.to_owned(),
                limit: self.max_revisits,
            }));
        }
        Ok(())
    }
}

/// A new hop refused by a [`ChainPolicy`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("chain violation on task {task_id} ({}): {rule}", .path.join(" → "))]
pub struct ChainViolation {
    /// The task.
    pub task_id: String,
    /// The path the task would take with the refused hop at its end.
    pub path: Vec<String>,
    /// The rule the hop breaks.
    pub rule: ChainRule,
}

/// Which rule of a [`ChainPolicy`] a hop breaks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum ChainRule {
    /// The task has made `limit` hops already.
    MaxHandoffs {
        /// The policy's `max_handoffs`.
        limit: usize,
    },
    /// `agent` is in the path already, more often than `limit` revisits allow.
    Revisit {
        /// The agent that would appear again.
        agent: String,
        /// The policy's `max_revisits`.
        limit: usize,
    },
    /// The registry does not let `from` hand off to `to`.
    NotCollaborator {
        /// The sender.
        from: String,
        /// The refused addressee.
        to: String,
    },
}

impl fmt::Display for ChainRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainRule::MaxHandoffs { limit } => {
                write!(f, "the task reached max_handoffs ({limit})")
            }
            ChainRule::Revisit { agent, limit } => {
                write!(
                    f,
                    "{agent} would appear again, beyond max_revisits ({limit})"
                )
            }
            ChainRule::NotCollaborator { from, to } => {
                write!(f, "{from} is not allowed to hand off to {to}")
            }
        }
    }
}
