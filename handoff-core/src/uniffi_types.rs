//! What uniffi needs to carry the core's result types to Swift, Kotlin and Python (the
//! `uniffi` feature, which `handoff-ffi` turns on): the types that the records hold and uniffi
//! does not know, each as a type it does.
//!
//! The records and enums themselves derive `uniffi::Record`/`uniffi::Enum` where they are
//! defined (`#[cfg_attr(feature = "uniffi", derive(…))]`), beside their serde derives: one
//! definition for every face. uniffi files them under this crate's namespace; `handoff-ffi`'s
//! generation step puts them in its one module (see its README).

use chrono::{DateTime, Utc};

use crate::curation::Branch;
use std::time::SystemTime;

/// A time: the core's `DateTime<Utc>`, a `SystemTime` across (Swift's `Date`, Kotlin's
/// `Instant`, Python's aware `datetime`).
pub(crate) type Timestamp = DateTime<Utc>;

/// Free-form JSON: a `serde_json::Value`, as JSON text across (what the faces parsed before
/// uniffi carried the core's records, and what Swift's and Kotlin's own JSON readers take).
pub(crate) type JsonValue = serde_json::Value;

/// A record's metadata, a JSON object: as JSON text across, like [`JsonValue`].
pub(crate) type JsonObject = crate::Metadata;

/// A count the core keeps as a `usize`, which uniffi does not carry: a `u64` across.
pub(crate) type Count = usize;

uniffi::custom_type!(Timestamp, SystemTime, {
    remote,
    lower: |at| at.into(),
    try_lift: |at| within_records(at),
});

uniffi::custom_type!(JsonValue, String, {
    remote,
    lower: |value| value.to_string(),
    try_lift: |text| Ok(serde_json::from_str(&text)?),
});

uniffi::custom_type!(JsonObject, String, {
    remote,
    lower: |object| serde_json::Value::Object(object).to_string(),
    try_lift: |text| Ok(serde_json::from_str(&text)?),
});

uniffi::custom_type!(Count, u64, {
    remote,
    lower: |n| n as u64,
    try_lift: |n| Ok(usize::try_from(n)?),
});

// A curated-memory branch is its name across (`main`, `task/<id>`, `task/<id>/<agent>`), read
// back by the core's rules.
uniffi::custom_type!(Branch, String, {
    lower: |branch| branch.into(),
    try_lift: |name| Ok(Branch::try_from(name)?),
});

/// `at` in UTC, when a record can hold it: records hold the years -262143..=262142, and a
/// Kotlin `Instant` or a Swift `Date` can reach further. (`DateTime::from(SystemTime)` would
/// panic there.)
fn within_records(at: SystemTime) -> uniffi::Result<Timestamp> {
    let span = |d: std::time::Duration| chrono::TimeDelta::from_std(d).ok();
    let utc = match at.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => span(after).and_then(|d| DateTime::UNIX_EPOCH.checked_add_signed(d)),
        Err(before) => {
            span(before.duration()).and_then(|d| DateTime::UNIX_EPOCH.checked_sub_signed(d))
        }
    };
    utc.ok_or_else(|| {
        uniffi::deps::anyhow::anyhow!("{at:?} is outside the years a record can hold")
    })
}
