//! The one error type of the crate, and what its variants carry ([`Problem`], [`ChainViolation`]).
//! It names nothing above the words of a handoff's state, so every module can use it.
//!
//! The variants form a small, stable set of kinds that every binding maps in exactly one place
//! (Python exception classes, JavaScript `code`s, a uniffi enum). Backend errors are wrapped in
//! [`Error::Storage`] and never leak their own types.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::handoff::status::Status;

/// `Result` with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in handoff-core.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Nothing of this kind has this id.
    #[error("{what} {id} not found")]
    NotFound {
        /// What was looked up: `handoff`, `task`.
        what: &'static str,
        /// The id that was looked up.
        id: String,
    },

    /// Another agent holds a live claim on the handoff.
    #[error("handoff {id} is already claimed by {holder}")]
    AlreadyClaimed {
        /// The handoff.
        id: String,
        /// The agent holding the claim.
        holder: String,
    },

    /// The caller's claim is no longer the current one: its lease ran out, or the handoff was
    /// released, completed or claimed again since. Nothing was changed.
    #[error("lease lost on handoff {id} (token {token}): {reason}")]
    LeaseLost {
        /// The handoff.
        id: String,
        /// The fencing token the caller presented.
        token: u64,
        /// Why: the token is no longer current (and what happened since), or the claim
        /// secret does not match.
        reason: String,
    },

    /// The event is not allowed in the handoff's current state, or not by this actor.
    #[error("cannot {event} handoff {id} while it is {status}: {reason}")]
    InvalidTransition {
        /// The handoff.
        id: String,
        /// Its status when the event was refused.
        status: Status,
        /// The refused event (`claim`, `complete`, `reject`, ...).
        event: &'static str,
        /// Why it was refused.
        reason: String,
    },

    /// The input broke one or more rules; every problem found is listed.
    #[error("invalid input: {}", Problems(.problems))]
    Validation {
        /// Each broken rule, with the field it concerns.
        problems: Vec<Problem>,
    },

    /// A handoff with this id exists already with different content.
    #[error("handoff {id} already exists with different content")]
    Conflict {
        /// The caller-supplied id.
        id: String,
    },

    /// A compare-and-swap found `id` (a task) changed since the caller read it: it is at
    /// version `actual`, not `expected`. Nothing was changed.
    #[error("{id} is at version {actual}, not {expected}: it changed since it was read")]
    VersionConflict {
        /// What was to be changed.
        id: String,
        /// The version the caller read.
        expected: u64,
        /// The version it is at.
        actual: u64,
    },

    /// The new hop would break the task's [`ChainPolicy`](crate::ChainPolicy).
    #[error(transparent)]
    ChainViolation(#[from] ChainViolation),

    /// Another writer held the store's write lock for longer than the caller's patience (it
    /// may be stopped or stuck). Nothing was changed and nothing is damaged: try again.
    #[error("store busy: {message}")]
    Busy {
        /// What was waited for, in words.
        message: String,
    },

    /// The storage backend failed (I/O, corruption, a schema it does not know).
    #[error("storage error: {message}")]
    Storage {
        /// What failed, in words.
        message: String,
        /// The backend's own error, if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },
}

impl Error {
    /// A validation error carrying a single problem.
    pub fn invalid(field: impl Into<String>, rule: impl Into<String>) -> Self {
        Error::Validation {
            problems: vec![Problem::new(field, rule)],
        }
    }

    /// A storage error with a message and no underlying source.
    pub fn storage(message: impl Into<String>) -> Self {
        Error::Storage {
            message: message.into(),
            source: None,
        }
    }

    /// The problems of a validation error; empty for every other error.
    pub fn problems(&self) -> &[Problem] {
        match self {
            Error::Validation { problems } => problems,
            _ => &[],
        }
    }

    /// The stable kind of this error, as the bindings name it.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::AlreadyClaimed { .. } => ErrorKind::AlreadyClaimed,
            Error::LeaseLost { .. } => ErrorKind::LeaseLost,
            Error::InvalidTransition { .. } => ErrorKind::InvalidTransition,
            Error::Validation { .. } => ErrorKind::Validation,
            Error::Conflict { .. } | Error::VersionConflict { .. } => ErrorKind::Conflict,
            Error::ChainViolation(_) => ErrorKind::ChainViolation,
            Error::Busy { .. } => ErrorKind::Busy,
            Error::Storage { .. } => ErrorKind::Storage,
        }
    }
}

/// The stable kinds of [`Error`], one per binding exception class or error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::NotFound`]
    NotFound,
    /// [`Error::AlreadyClaimed`]
    AlreadyClaimed,
    /// [`Error::LeaseLost`]
    LeaseLost,
    /// [`Error::InvalidTransition`]
    InvalidTransition,
    /// [`Error::Validation`]
    Validation,
    /// [`Error::Conflict`]
    Conflict,
    /// [`Error::ChainViolation`]
    ChainViolation,
    /// [`Error::Busy`]
    Busy,
    /// [`Error::Storage`]
    Storage,
}

impl ErrorKind {
    /// The code used by the JavaScript binding and the CLI's `--json` output.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "NOT_FOUND",
            ErrorKind::AlreadyClaimed => "ALREADY_CLAIMED",
            ErrorKind::LeaseLost => "LEASE_LOST",
            ErrorKind::InvalidTransition => "INVALID_TRANSITION",
            ErrorKind::Validation => "VALIDATION",
            ErrorKind::Conflict => "CONFLICT",
            ErrorKind::ChainViolation => "CHAIN_VIOLATION",
            ErrorKind::Busy => "BUSY",
            ErrorKind::Storage => "STORAGE",
        }
    }
}

/// One broken validation rule: which field, and which rule.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Problem {
    /// The field, as named in the JSON form (`goal`, `metadata`, `completed_steps[3]`, ...).
    pub field: String,
    /// The rule it breaks, in words (`must not be empty`, ...).
    pub rule: String,
}

impl Problem {
    /// A problem with `field` breaking `rule`.
    pub fn new(field: impl Into<String>, rule: impl Into<String>) -> Self {
        Problem {
            field: field.into(),
            rule: rule.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.rule)
    }
}

struct Problems<'a>(&'a [Problem]);

impl fmt::Display for Problems<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

/// A new hop refused by a [`ChainPolicy`](crate::ChainPolicy).
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

/// Which rule of a [`ChainPolicy`](crate::ChainPolicy) a hop breaks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum ChainRule {
    /// The new hop's path has made `limit` hops already.
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
        #[cfg_attr(feature = "uniffi", uniffi(name = "from_agent"))]
        from: String,
        /// The refused addressee.
        #[cfg_attr(feature = "uniffi", uniffi(name = "to_agent"))]
        to: String,
    },
}

impl fmt::Display for ChainRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainRule::MaxHandoffs { limit } => {
                write!(f, "the path reached max_handoffs ({limit})")
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
