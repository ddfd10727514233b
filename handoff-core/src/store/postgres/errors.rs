//! What a failed call means: busy, lost connection, retryable, or a storage error in the
//! server's own words.

use super::*;

pub(super) fn storage(what: &str, e: CallError) -> Error {
    if let Some(busy) = busy(what, &e) {
        return busy;
    }
    Error::Storage {
        message: format!("PostgreSQL: {what}: {}", reason(&e)),
        source: Some(Box::new(e)),
    }
}

/// Why a connection would find prepared statements it did not make, or miss its own: its
/// server session is shared between clients, which the store cannot work with (it keeps its
/// schema, settings and statements in its session).
pub(super) const SHARED_SESSION: &str = "; the server session is shared with other clients between \
    transactions, as a pooler in transaction mode does (PgBouncer's pool_mode=transaction): \
    connect directly or through session pooling";

/// [`Error::Busy`] when `e` is the session's `lock_timeout` running out.
pub(super) fn busy(what: &str, e: &CallError) -> Option<Error> {
    (e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE)).then(|| Error::Busy {
        message: format!(
            "PostgreSQL: {what}: another session held a lock for longer than the store's lock \
             patience (it may be stopped or stuck); nothing was changed"
        ),
    })
}

/// What the server said, when it refused (the driver's own text is only "db error"), or the
/// driver's description of what went wrong on its side with its causes (a refused certificate
/// is the cause of "error performing TLS handshake").
pub(super) fn reason(e: &CallError) -> String {
    let Some(e) = e.driver() else {
        return e.to_string();
    };
    match e.as_db_error() {
        Some(db) => {
            let shared = [
                SqlState::DUPLICATE_PSTATEMENT,
                SqlState::INVALID_SQL_STATEMENT_NAME,
            ]
            .contains(db.code());
            let hint = if shared { SHARED_SESSION } else { "" };
            format!("{} ({}){hint}", db.message(), db.code().code())
        }
        None => {
            let mut text = e.to_string();
            let mut cause = std::error::Error::source(e);
            while let Some(inner) = cause {
                text = format!("{text}: {inner}");
                cause = inner.source();
            }
            text
        }
    }
}

/// Whether a failed call found its connection gone: closed, broken (an I/O error), or ended by
/// the server, whose FATAL errors end the session ("terminating connection due to
/// administrator command" is what a connection that sat idle through a restart says first).
pub(super) fn connection_lost(e: &CallError) -> bool {
    let Some(e) = e.driver() else {
        // Given up on: running the write again on a new connection could wait as long again.
        return false;
    };
    e.is_closed()
        || e.as_db_error()
            .is_some_and(|db| db.parsed_severity() == Some(Severity::Fatal))
        || std::error::Error::source(e).is_some_and(|cause| cause.is::<std::io::Error>())
}

/// Whether running the transaction again can succeed.
pub(super) fn is_retryable(e: &CallError) -> bool {
    e.code().is_some_and(|code| {
        *code == SqlState::T_R_SERIALIZATION_FAILURE
            || *code == SqlState::T_R_DEADLOCK_DETECTED
            || *code == SqlState::UNIQUE_VIOLATION
    })
}
