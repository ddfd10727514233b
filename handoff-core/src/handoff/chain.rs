//! Chains: the hops a task took from agent to agent, and the policy that guards new hops
//! against loops and runaway hand-offs.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::error::{ChainRule, ChainViolation};
use crate::handoff::status::{Kind, Status};

/// One hop of a chain: a handoff from one agent to the next.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
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
    #[serde(with = "crate::clock::rfc3339")]
    #[schemars(with = "DateTime<Utc>")]
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

fn path_of<'h>(hops: impl IntoIterator<Item = &'h Hop>) -> Vec<String> {
    let name = |agent: &Option<String>| agent.clone().unwrap_or_else(|| ANYONE.to_owned());
    let mut path = Vec::new();
    for (i, hop) in hops.into_iter().enumerate() {
        // A sender that is not the previous successor starts a new branch of the path.
        if i == 0 || hop.from_agent.is_some() && path.last() != Some(&name(&hop.from_agent)) {
            path.push(name(&hop.from_agent));
        }
        path.push(name(&hop.to_agent));
    }
    path
}

/// Limits on how a task may travel between agents, checked before a hop is created and when
/// an open handoff is claimed.
///
/// Its JSON form (for a config file, or [`Store::save_policy`](crate::Store)) is
/// `{"max_handoffs": 5, "max_revisits": 0, "collaborators": {"manager": ["worker"]}}`, every
/// key optional, unknown keys refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ChainPolicy {
    /// Most hops one path of a task may make (see [`ChainPolicy::check`]).
    pub max_handoffs: usize,
    /// How many times an agent may appear again in one path (A→B→A is one revisit).
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
    /// Reads a policy from its JSON form; a bad one is a validation error naming the key.
    pub fn from_json(json: &str) -> crate::Result<ChainPolicy> {
        crate::validate::parse_json(
            "policy",
            crate::validate::FieldNames::Prefixed,
            json,
            &crate::Limits::default(),
        )
    }

    /// A policy with no limits at all.
    pub fn unlimited() -> Self {
        ChainPolicy {
            max_handoffs: usize::MAX,
            max_revisits: usize::MAX,
            collaborators: None,
        }
    }

    /// Whether this policy refuses nothing ([`ChainPolicy::unlimited`]).
    pub fn is_unlimited(&self) -> bool {
        self.max_handoffs == usize::MAX
            && self.max_revisits == usize::MAX
            && self.collaborators.is_none()
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

    /// Checks a new hop `from → to` against the task's existing hops (checkpoints left out).
    ///
    /// Limits and revisits are counted along the new hop's path only: its ancestors by
    /// `parent_id`, or, without one, the hop that gave `from` its work and that hop's own
    /// ancestors. A hop with neither starts a new path, so a task may fan out to any number of
    /// parallel handoffs. `hops` must be in creation order; the new hop is not among them.
    pub fn check(
        &self,
        task_id: &str,
        hops: &[Hop],
        new: NewHop<'_>,
    ) -> Result<(), ChainViolation> {
        // The path is walked back at most one hop past the limit: that is enough to refuse.
        // A task's first hop has no path to walk, and needs no index of the others.
        let ancestors = if hops.is_empty() {
            Vec::new()
        } else {
            Lineage::new(hops).path(new.parent_id, new.from, self.max_handoffs.saturating_add(1))
        };
        let mut path = path_of(ancestors.iter().map(|i| &hops[*i]));
        let sender = new.from.unwrap_or(ANYONE);
        if path.is_empty() || new.from.is_some() && path.last().map(String::as_str) != Some(sender)
        {
            path.push(sender.to_owned());
        }
        let violation = |rule: ChainRule| {
            let mut path = path.clone();
            path.push(new.to.unwrap_or(ANYONE).to_owned());
            ChainViolation {
                task_id: task_id.to_owned(),
                path,
                rule,
            }
        };
        if ancestors.len() >= self.max_handoffs {
            return Err(violation(ChainRule::MaxHandoffs {
                limit: self.max_handoffs,
            }));
        }
        if let (Some(from), Some(to), Some(allowed)) = (new.from, new.to, &self.collaborators)
            && !allowed
                .get(from)
                .is_some_and(|targets| targets.contains(to))
        {
            return Err(violation(ChainRule::NotCollaborator {
                from: from.to_owned(),
                to: to.to_owned(),
            }));
        }
        if let Some(to) = new.to
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

/// A hop about to be made: created, or an open handoff about to be claimed (then `to` is the
/// claimant).
#[derive(Clone, Copy, Debug, Default)]
pub struct NewHop<'a> {
    /// The handoff the new one continues.
    pub parent_id: Option<&'a str>,
    /// The agent handing over.
    pub from: Option<&'a str>,
    /// The agent taking over; `None` for an open handoff not yet claimed.
    pub to: Option<&'a str>,
}

/// Who came before whom in a task: each hop's predecessor is its parent, or else the latest
/// earlier hop that gave its sender the work.
struct Lineage<'h> {
    hops: &'h [Hop],
    /// Each hop's index by id.
    by_id: HashMap<&'h str, usize>,
    /// For each agent, the indices of the hops that led to it, oldest first.
    by_successor: HashMap<&'h str, Vec<usize>>,
}

impl<'h> Lineage<'h> {
    fn new(hops: &'h [Hop]) -> Self {
        let mut by_id = HashMap::with_capacity(hops.len());
        let mut by_successor: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, hop) in hops.iter().enumerate() {
            by_id.insert(hop.handoff_id.as_str(), i);
            if let Some(to) = &hop.to_agent {
                by_successor.entry(to.as_str()).or_default().push(i);
            }
        }
        Lineage {
            hops,
            by_id,
            by_successor,
        }
    }

    /// The hop a hop with this parent and sender continues, among the hops before `before`.
    fn predecessor(
        &self,
        parent: Option<&str>,
        from: Option<&str>,
        before: usize,
    ) -> Option<usize> {
        // A parent that is not a hop of this task (a checkpoint, another task's record) says
        // nothing about the path; the sender's last hop does.
        if let Some(i) = parent
            .and_then(|p| self.by_id.get(p))
            .filter(|i| **i < before)
        {
            return Some(*i);
        }
        let led_to = self.by_successor.get(from?)?;
        // The latest hop before `before` that led to `from`.
        let earlier = led_to.partition_point(|i| *i < before);
        earlier.checked_sub(1).map(|k| led_to[k])
    }

    /// The hops of the new hop's path, oldest first, at most `limit` of them (the latest).
    fn path(&self, parent: Option<&str>, from: Option<&str>, limit: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut next = self.predecessor(parent, from, self.hops.len());
        while let Some(i) = next
            && path.len() < limit
        {
            path.push(i);
            let hop = &self.hops[i];
            // Predecessors come strictly earlier, so the walk ends.
            next = self.predecessor(hop.parent_id.as_deref(), hop.from_agent.as_deref(), i);
        }
        path.reverse();
        path
    }
}
