//! The words of a handoff's state: its [`Kind`] and its [`Status`], with their wire names. The
//! base of the crate: nothing here uses another module, so the error type can name a status.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

macro_rules! string_enum {
    // `| "other"`: another word read as this value (never written), for callers that name it so.
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal $(| $also:literal)*),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vmeta])* $(#[serde(alias = $also)])* $variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wire name of this value.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// The value this wire name (or another word for it) names. `FromStr`, which
            /// says why a word is refused, is in `record.rs`.
            pub(super) fn from_word(s: &str) -> Option<$name> {
                match s {
                    $($text $(| $also)* => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

    };
}

string_enum! {
    /// What kind of handoff a record is.
    #[derive(Default)]
    #[cfg_attr(feature = "uniffi", derive(uniffi::Enum), uniffi(name = "HandoffKind"))]
    Kind {
        /// The whole task passes to the successor.
        #[default]
        Full => "full",
        /// Part of the task passes; the rest stays.
        Partial => "partial",
        /// Handed up to someone more capable (a stronger model, a human).
        Escalation => "escalation",
        /// Progress saved by its owner; not a hop and not claimable.
        Checkpoint => "checkpoint",
        /// A manager starts a worker.
        Initialization => "initialization",
        /// A worker reports back.
        Progress => "progress",
        /// Another attempt after an error.
        ErrorRecovery => "error_recovery",
    }
}

string_enum! {
    /// Where a handoff is in its lifecycle.
    #[derive(Default)]
    #[cfg_attr(feature = "uniffi", derive(uniffi::Enum), uniffi(name = "HandoffStatus"))]
    Status {
        /// Waiting for a claim.
        #[default]
        Pending => "pending",
        /// Held by an agent under a lease. `accepted` (seed 001's word for a handoff taken
        /// over) reads as this.
        Claimed => "claimed" | "accepted",
        /// Finished by its holder.
        Completed => "completed",
        /// Refused by the addressed agent.
        Rejected => "rejected",
        /// Withdrawn.
        Cancelled => "cancelled",
        /// Nobody claimed it before `expires_at`.
        Expired => "expired",
        /// Its claims lapsed `max_attempts` times.
        Failed => "failed",
    }
}

impl Status {
    /// Terminal statuses accept no further event.
    pub fn is_terminal(self) -> bool {
        !matches!(self, Status::Pending | Status::Claimed)
    }
}
