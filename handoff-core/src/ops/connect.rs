//! How a face opens a store, described once: the options of `open` and `connect` under the
//! names every face shows (`synchronous`, `lock_patience_seconds`, `read_only`, `pool_size`,
//! `connect_timeout_seconds`), read from JSON like an operation's arguments, so that every face
//! reports the same problems for the same bad option.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::Arguments;
use crate::error::Problem;
#[cfg(feature = "sqlite")]
use crate::store::sqlite::SqliteOptions;
use crate::store::{ConnectOptions, Synchronous};
use crate::validate::Limits;

/// How a store is opened. Each store reads the options that concern it and leaves the others:
/// `synchronous` (SQLite, files), `lock_patience_seconds` (SQLite, files, PostgreSQL),
/// `read_only` (SQLite only: any other URL refuses it), `pool_size` and
/// `connect_timeout_seconds` (PostgreSQL).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectArgs {
    /// How durable each write is: `"full"` (default) or `"normal"`, which trades the last
    /// commits before a power loss for speed.
    #[serde(default)]
    pub synchronous: Option<String>,
    /// How long a call waits for another process's lock before it fails with `BUSY` (default
    /// 60; 0: not at all).
    #[serde(default)]
    pub lock_patience_seconds: Option<f64>,
    /// Opens an existing store without creating or changing anything on disk; writes fail.
    #[serde(default)]
    pub read_only: bool,
    /// At most this many connections (default 8).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub pool_size: Option<u64>,
    /// How long connecting may take (default 10, or the URL's `connect_timeout`).
    #[serde(default)]
    pub connect_timeout_seconds: Option<f64>,
}

impl Arguments for ConnectArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        if let Some(sync) = &self.synchronous
            && sync.parse::<Synchronous>().is_err()
        {
            problems.push(Problem::new(
                "synchronous",
                "must be \"full\" or \"normal\"",
            ));
        }
        if self
            .lock_patience_seconds
            .is_some_and(|s| s.is_nan() || s < 0.0)
        {
            problems.push(Problem::new(
                "lock_patience_seconds",
                "must be at least 0 seconds",
            ));
        }
        if self.pool_size == Some(0) {
            problems.push(Problem::new(
                "pool_size",
                "must be a whole number of at least 1",
            ));
        }
        if self
            .connect_timeout_seconds
            .is_some_and(|s| s.is_nan() || s <= 0.0)
        {
            problems.push(Problem::new(
                "connect_timeout_seconds",
                "must be more than 0 seconds",
            ));
        }
        problems
    }
}

impl ConnectArgs {
    /// The options, the core's defaults where none is given. Read through
    /// [`Arguments::read`], which has refused what does not fit; a value it would have refused
    /// is left at its default here.
    pub fn options(&self) -> ConnectOptions {
        let defaults = ConnectOptions::default();
        ConnectOptions {
            synchronous: self
                .synchronous
                .as_deref()
                .and_then(|s| s.parse().ok())
                .unwrap_or(defaults.synchronous),
            lock_patience: self
                .lock_patience_seconds
                .and_then(seconds)
                .unwrap_or(defaults.lock_patience),
            read_only: self.read_only,
            pool_size: self
                .pool_size
                .filter(|size| *size > 0)
                .map_or(defaults.pool_size, |size| {
                    usize::try_from(size).unwrap_or(usize::MAX)
                }),
            connect_timeout: self
                .connect_timeout_seconds
                .filter(|s| *s > 0.0)
                .and_then(seconds)
                .unwrap_or(defaults.connect_timeout),
        }
    }

    /// The options that concern an SQLite store opened by path.
    #[cfg(feature = "sqlite")]
    pub fn sqlite(&self) -> SqliteOptions {
        let options = self.options();
        SqliteOptions {
            synchronous: options.synchronous,
            lock_patience: options.lock_patience,
        }
    }
}

/// A number of seconds as a duration: the longest one for a number too large to be one;
/// `None` for a negative number or NaN.
fn seconds(secs: f64) -> Option<Duration> {
    match Duration::try_from_secs_f64(secs) {
        Ok(duration) => Some(duration),
        Err(_) if secs > 0.0 => Some(Duration::MAX),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn read(value: serde_json::Value) -> crate::Result<ConnectArgs> {
        ConnectArgs::read(value, &Limits::default())
    }

    #[test]
    fn defaults_are_the_cores() {
        assert_eq!(
            read(json!({})).unwrap().options(),
            ConnectOptions::default()
        );
    }

    #[test]
    fn every_bad_option_at_once_by_its_name() {
        let err = read(
            json!({"synchronous": "sometimes", "lock_patience_seconds": -1,
                              "pool_size": 0, "connect_timeout_seconds": 0}),
        )
        .unwrap_err();
        let fields: Vec<_> = err.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "synchronous",
                "lock_patience_seconds",
                "pool_size",
                "connect_timeout_seconds"
            ]
        );
        let err = read(json!({"pool_size": "many", "colour": 1})).unwrap_err();
        let fields: Vec<_> = err.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["colour", "pool_size"]);
    }

    #[test]
    fn given_options_are_kept() {
        let args = read(
            json!({"synchronous": "normal", "lock_patience_seconds": 0.5,
                               "read_only": true, "pool_size": 2,
                               "connect_timeout_seconds": 1e300}),
        )
        .unwrap();
        let options = args.options();
        assert_eq!(options.synchronous, Synchronous::Normal);
        assert_eq!(options.lock_patience, Duration::from_millis(500));
        assert!(options.read_only);
        assert_eq!(options.pool_size, 2);
        assert_eq!(options.connect_timeout, Duration::MAX);
        #[cfg(feature = "sqlite")]
        assert_eq!(args.sqlite().lock_patience, Duration::from_millis(500));
    }
}
