//! The binding's one error type, with the same kinds as the other bindings' errors.

use handoff_core as core;

use crate::record::HandoffStatus;

pub use handoff_core::ChainRule;

/// An error of handoff-core. Each variant carries `description`, the readable text, and the
/// details of its kind.
///
/// The text is not called `message`: a Kotlin exception's `message` is its own property, and
/// a field of that name would not compile there.
#[derive(Debug, thiserror::Error, uniffi::Error)]
#[uniffi::export(Display)]
pub enum HandoffError {
    /// Nothing of this kind has this id.
    #[error("{description}")]
    NotFound {
        /// What went wrong, in words.
        description: String,
        /// What was looked up: `handoff`, `task`.
        what: String,
        /// The id that was looked up.
        id: String,
    },
    /// Another agent holds a live claim on the handoff.
    #[error("{description}")]
    AlreadyClaimed {
        /// What went wrong, in words.
        description: String,
        /// The handoff.
        id: String,
        /// The agent holding the claim.
        holder: String,
    },
    /// The caller's claim is no longer current: its lease ran out, or the handoff was
    /// released, completed or claimed again since. Nothing was changed.
    #[error("{description}")]
    LeaseLost {
        /// What went wrong, in words.
        description: String,
        /// The handoff.
        id: String,
        /// The fencing token the caller presented.
        token: u64,
        /// Why the token is no longer current.
        reason: String,
    },
    /// The event is not allowed in the handoff's current state, or not by this actor.
    #[error("{description}")]
    InvalidTransition {
        /// What went wrong, in words.
        description: String,
        /// The handoff.
        id: String,
        /// Its status when the event was refused.
        status: HandoffStatus,
        /// The refused event (`claim`, `complete`, `reject`, ...).
        event: String,
        /// Why it was refused.
        reason: String,
    },
    /// The input broke one or more rules; every problem found is listed.
    #[error("{description}")]
    Validation {
        /// What went wrong, in words.
        description: String,
        /// Each broken rule, with the field it concerns.
        problems: Vec<ValidationProblem>,
    },
    /// A handoff with this id exists already with different content; or a compare-and-swap
    /// (`update_task`, `memory_put` with `expected_version`) found what it was to change at
    /// another version than the caller read: nothing was changed.
    #[error("{description}")]
    Conflict {
        /// What went wrong, in words.
        description: String,
        /// The caller-supplied id; the task or memory scope of a compare-and-swap.
        id: String,
        /// The version the caller read, for a compare-and-swap.
        expected_version: Option<u64>,
        /// The version it is at, for a compare-and-swap.
        actual_version: Option<u64>,
    },
    /// The new hop would break the task's chain policy.
    #[error("{description}")]
    ChainViolation {
        /// What went wrong, in words.
        description: String,
        /// The task.
        task_id: String,
        /// The path the task would take with the refused hop at its end.
        path: Vec<String>,
        /// The rule the hop breaks.
        rule: ChainRule,
    },
    /// Another writer held the store's write lock for longer than `lock_patience` (it may be
    /// stopped or stuck). Nothing was changed and nothing is damaged: try again.
    #[error("{description}")]
    Busy {
        /// What was waited for, in words.
        description: String,
    },
    /// The storage backend failed (I/O, corruption, a schema it does not know).
    #[error("{description}")]
    Storage {
        /// What went wrong, in words.
        description: String,
    },
    /// Code of the caller's that this binding called (a `MemoryUpdater`) threw something
    /// other than a `HandoffError`. Nothing was written.
    #[error("{description}")]
    Foreign {
        /// What was thrown, as text (Kotlin adds its stack trace).
        description: String,
    },
}

/// One broken validation rule: which field, and which rule.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct ValidationProblem {
    /// The field, as named in the record's JSON form (`goal`, `completed_steps[3]`, ...).
    pub field: String,
    /// The rule it breaks, in words.
    pub rule: String,
}

impl HandoffError {
    /// A validation error with one problem, for input refused before it reaches the core.
    pub(crate) fn invalid(field: &str, rule: impl Into<String>) -> Self {
        core::Error::invalid(field, rule).into()
    }
}

impl From<core::Error> for HandoffError {
    fn from(error: core::Error) -> Self {
        let description = error.to_string();
        match error {
            core::Error::NotFound { what, id } => HandoffError::NotFound {
                description,
                what: what.to_owned(),
                id,
            },
            core::Error::AlreadyClaimed { id, holder } => HandoffError::AlreadyClaimed {
                description,
                id,
                holder,
            },
            core::Error::LeaseLost { id, token, reason } => HandoffError::LeaseLost {
                description,
                id,
                token,
                reason,
            },
            core::Error::InvalidTransition {
                id,
                status,
                event,
                reason,
            } => HandoffError::InvalidTransition {
                description,
                id,
                status,
                event: event.to_owned(),
                reason,
            },
            core::Error::Validation { problems } => HandoffError::Validation {
                description,
                problems: problems
                    .into_iter()
                    .map(|p| ValidationProblem {
                        field: p.field,
                        rule: p.rule,
                    })
                    .collect(),
            },
            core::Error::Conflict { id } => HandoffError::Conflict {
                description,
                id,
                expected_version: None,
                actual_version: None,
            },
            core::Error::VersionConflict {
                id,
                expected,
                actual,
            } => HandoffError::Conflict {
                description,
                id,
                expected_version: Some(expected),
                actual_version: Some(actual),
            },
            core::Error::Busy { .. } => HandoffError::Busy { description },
            core::Error::ChainViolation(violation) => HandoffError::ChainViolation {
                description,
                task_id: violation.task_id,
                path: violation.path,
                rule: violation.rule,
            },
            // `core::Error` is non-exhaustive: a kind added later is reported as storage
            // trouble with its own description until this binding names it.
            _ => HandoffError::Storage { description },
        }
    }
}

/// What a foreign implementation of a trait (a `MemoryUpdater`) threw when it is not a
/// `HandoffError`: uniffi hands it over as text.
impl From<uniffi::UnexpectedUniFFICallbackError> for HandoffError {
    fn from(error: uniffi::UnexpectedUniFFICallbackError) -> Self {
        HandoffError::Foreign {
            description: error.reason,
        }
    }
}

/// `Result` with [`HandoffError`].
pub(crate) type Result<T, E = HandoffError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_core_kind_keeps_its_name_and_details() {
        let cases: Vec<(core::Error, &str)> = vec![
            (
                core::Error::NotFound {
                    what: "handoff",
                    id: "h".into(),
                },
                "NotFound",
            ),
            (
                core::Error::AlreadyClaimed {
                    id: "h".into(),
                    holder: "a".into(),
                },
                "AlreadyClaimed",
            ),
            (
                core::Error::LeaseLost {
                    id: "h".into(),
                    token: 3,
                    reason: "expired".into(),
                },
                "LeaseLost",
            ),
            (
                core::Error::InvalidTransition {
                    id: "h".into(),
                    status: core::Status::Completed,
                    event: "claim",
                    reason: "finished".into(),
                },
                "InvalidTransition",
            ),
            (
                core::Error::invalid("goal", "must not be empty"),
                "Validation",
            ),
            (core::Error::Conflict { id: "h".into() }, "Conflict"),
            (
                core::Error::VersionConflict {
                    id: "t".into(),
                    expected: 1,
                    actual: 2,
                },
                "Conflict",
            ),
            (
                core::Error::ChainViolation(core::ChainViolation {
                    task_id: "t".into(),
                    path: vec!["a".into(), "b".into()],
                    rule: core::ChainRule::MaxHandoffs { limit: 1 },
                }),
                "ChainViolation",
            ),
            (
                core::Error::Busy {
                    message: "a writer held the lock".into(),
                },
                "Busy",
            ),
            (core::Error::storage("disk full"), "Storage"),
        ];
        for (error, kind) in cases {
            let text = error.to_string();
            let ours = HandoffError::from(error);
            assert!(
                format!("{ours:?}").starts_with(kind),
                "{ours:?} is not {kind}"
            );
            assert_eq!(ours.to_string(), text, "the readable text is the core's");
        }
    }

    /// The bindings catch panics only when they unwind: no profile may abort.
    #[test]
    fn every_profile_unwinds() {
        let workspace = include_str!("../../Cargo.toml");
        for profile in ["dev", "release"] {
            let header = format!("[profile.{profile}]");
            let section = workspace
                .split(&header)
                .nth(1)
                .and_then(|rest| rest.split("\n[").next())
                .unwrap_or_else(|| panic!("the workspace has no {header}"));
            assert!(
                section.contains("panic = \"unwind\""),
                "{header} must say panic = \"unwind\""
            );
        }
        let aborts = workspace
            .lines()
            .map(|line| line.split('#').next().unwrap_or_default())
            .any(|setting| setting.contains("panic") && setting.contains("abort"));
        assert!(!aborts, "a profile aborts on panic");
    }
}
