//! The statements the backend sends, built once, and how their rows read back as records,
//! hops, events and documents.

use super::*;

pub(super) const RECORD_COLUMNS: &str = "status, claimed_by, claim_token, lease_until, heartbeat_at, \
                              attempts, completed_at, outcome, priority, progress, body";
/// The column after [`RECORD_COLUMNS`], where a read that needs it selects the claim's secret.
pub(super) const SECRET_COLUMN: usize = 11;
/// Open work at the time `$2` that a claim may take, addressed to anyone (see
/// [`next_ctes`] for whom).
pub(super) const OPEN_WORK: &str = "status = 'pending' AND kind <> 'checkpoint' \
                         AND (expires_at IS NULL OR expires_at > $2)";
/// How many of the oldest open records, and of the oldest addressed to the claimer, a claim
/// considers (see [`next_ctes`]); when other claimers hold every one of them, how many it
/// considers next; and after that, all of them.
pub(super) const CANDIDATES: [usize; 2] = [64, 4_096];

/// What a row of a claim's read is ([`next_claimable`](Tx::next_claimable), `lapsed_or_next`):
/// the value of its column [`KIND_COLUMN`].
#[derive(Clone, Copy, PartialEq)]
pub(super) enum RowKind {
    /// Records are due (`lapsed_or_next`): they are read on their own and settled first, and
    /// the candidate the row may carry is not taken.
    Due = 0,
    /// The row is the record to take.
    Next = 1,
    /// No row is for the taking among the candidates, and all of them may have been taken by
    /// other claimers: there may be more beyond them (more [`CANDIDATES`] look).
    Saturated = 2,
}

/// The column after [`RECORD_COLUMNS`] that says a row's [`RowKind`].
pub(super) const KIND_COLUMN: usize = 11;

impl RowKind {
    pub(super) fn of(row: &Row) -> Result<RowKind> {
        match row.get::<_, i32>(KIND_COLUMN) {
            0 => Ok(RowKind::Due),
            1 => Ok(RowKind::Next),
            2 => Ok(RowKind::Saturated),
            other => Err(corrupt("claim read", other)),
        }
    }
}

/// The `WITH` entries that find the next record a claim may take, locked, skipping the rows
/// other claimers hold: `next`, with the columns `columns`, and for a claim from any task
/// `candidates`. `filter` adds conditions, `task` is the parameter naming the task when there
/// is one, `limit` how many candidates each scan gives (`None`: all).
///
/// A task has few records: they are walked in order. Otherwise the candidates are the oldest
/// of the open records and of the agent's own, two short ordered index scans (so that a claim
/// never walks past the work addressed to other agents), and the record is the oldest of them
/// that nobody holds, read through the primary key in order. Written as a union of the two
/// scans joined to the table, the scans under the join had no limit to stop at, and whether
/// PostgreSQL read a few entries or sorted every pending record depended on its statistics
/// (with small records it sorted: 1.5 ms a claim at 3,000 pending, against 0.1 ms this way).
pub(super) fn next_ctes(
    columns: &str,
    task: Option<usize>,
    filter: &str,
    limit: Option<usize>,
) -> String {
    const LOCK: &str = "ORDER BY priority DESC, pos LIMIT 1 FOR UPDATE OF handoffs SKIP LOCKED";
    if let Some(task) = task {
        return format!(
            "next AS MATERIALIZED (SELECT {columns} FROM handoffs WHERE {OPEN_WORK} \
             AND (to_agent IS NULL OR to_agent = $1) AND task_id = ${task}{filter} {LOCK})"
        );
    }
    let limit = limit.map(|n| format!(" LIMIT {n}")).unwrap_or_default();
    let scan = |addressed: &str| {
        format!(
            "(SELECT pos FROM handoffs WHERE {OPEN_WORK} AND {addressed}{filter} \
             ORDER BY priority DESC, pos{limit})"
        )
    };
    format!(
        "candidates AS MATERIALIZED (SELECT ARRAY({} UNION ALL {}) AS list), \
         next AS MATERIALIZED (SELECT {columns} FROM handoffs \
           WHERE pos = ANY((SELECT list FROM candidates)::int8[]) AND status = 'pending' {LOCK})",
        scan("to_agent IS NULL"),
        scan("to_agent = $1")
    )
}

/// When a claim can have found its candidates all taken by other claimers, so that there may be
/// more beyond them ([`RowKind::Saturated`]): it looked at a `limit` of them (not at a task's
/// records) and there were as many. The condition, over [`next_ctes`]' `candidates`.
pub(super) fn saturation(task: Option<usize>, limit: Option<usize>) -> Option<String> {
    let limit = limit.filter(|_| task.is_none())?;
    Some(format!(
        "(SELECT cardinality(list) FROM candidates) >= {limit}"
    ))
}

/// The row that reports [`RowKind::Saturated`] (every column of a record `NULL`), when the
/// claim took none of its candidates and [`saturation`] holds.
pub(super) fn saturated_row(task: Option<usize>, limit: Option<usize>) -> String {
    let Some(saturated) = saturation(task, limit) else {
        return String::new();
    };
    let nulls = ["NULL"; KIND_COLUMN].join(", ");
    format!(
        " UNION ALL SELECT {nulls}, {} WHERE {saturated} AND NOT EXISTS (SELECT 1 FROM next)",
        RowKind::Saturated as i32
    )
}

/// The records with a time-driven change due at the time `$2`.
pub(super) const DUE: &str = "((status = 'claimed' AND lease_until <= $2) \
                   OR (status = 'pending' AND expires_at IS NOT NULL AND expires_at <= $2))";
/// Whether any record is due at the time `$2` ([`DUE`]): the first entry of each of the two
/// indexes that order leases and expiries, where the search stops at once.
pub(super) const DUE_PROBE: &str = "EXISTS (SELECT 1 FROM handoffs WHERE status = 'claimed' \
                           AND lease_until <= $2) \
                         OR EXISTS (SELECT 1 FROM handoffs WHERE status = 'pending' \
                           AND expires_at IS NOT NULL AND expires_at <= $2)";
/// Up to `$1` records due at `$2` ([`DUE`]), locked, oldest first. They are found as the
/// first entries of the two indexes that order leases and expiries, which stop at once when
/// nothing is due. A plan for `DUE` itself, made once for every time `$2`, could walk the whole
/// table in `pos` order looking for one, and did once most records were claimed (2.5 ms a
/// claim at 3,000 records).
pub(super) fn due_sql() -> String {
    format!(
        "SELECT {RECORD_COLUMNS} FROM handoffs WHERE pos = ANY(ARRAY(\
           (SELECT pos FROM handoffs WHERE status = 'claimed' AND lease_until <= $2 \
            ORDER BY lease_until LIMIT $1) \
           UNION ALL \
           (SELECT pos FROM handoffs WHERE status = 'pending' AND expires_at IS NOT NULL \
            AND expires_at <= $2 ORDER BY expires_at LIMIT $1))) \
         AND {DUE} ORDER BY pos LIMIT $1 FOR UPDATE SKIP LOCKED"
    )
}
pub(super) const HOP_COLUMNS: &str =
    "id, parent_id, from_agent, to_agent, claimed_by, kind, status, created_at";

pub(super) fn corrupt(what: &str, detail: impl std::fmt::Display) -> Error {
    Error::storage(format!("corrupt {what} in the PostgreSQL store: {detail}"))
}

pub(super) fn parsed<T: FromStr>(what: &str, text: &str) -> Result<T> {
    text.parse().map_err(|_| corrupt(what, text))
}

pub(super) fn record_from_row(row: &Row) -> Result<Handoff> {
    let body: String = row.get(10);
    let mut h: Handoff = serde_json::from_str(&body).map_err(|e| corrupt("record body", e))?;
    h.status = parsed("status", row.get::<_, &str>(0))?;
    h.claimed_by = row.get(1);
    h.claim_token = row.get::<_, Option<i64>>(2).map(|t| t as u64);
    h.lease_until = row.get::<_, Option<i64>>(3).map(from_micros);
    h.heartbeat_at = row.get::<_, Option<i64>>(4).map(from_micros);
    h.attempts = row.get::<_, i32>(5) as u32;
    h.completed_at = row.get::<_, Option<i64>>(6).map(from_micros);
    h.outcome = row.get(7);
    h.priority = row.get(8);
    h.progress = match row.get::<_, Option<&str>>(9) {
        Some(text) => Some(serde_json::from_str(text).map_err(|e| corrupt("progress", e))?),
        None => None,
    };
    Ok(h)
}

pub(super) fn hop_from_row(row: &Row) -> Result<Hop> {
    let to_agent: Option<String> = row.get(3);
    let claimed_by: Option<String> = row.get(4);
    Ok(Hop {
        handoff_id: row.get(0),
        parent_id: row.get(1),
        from_agent: row.get(2),
        to_agent: to_agent.or(claimed_by),
        kind: parsed::<Kind>("kind", row.get::<_, &str>(5))?,
        status: parsed::<Status>("status", row.get::<_, &str>(6))?,
        created_at: from_micros(row.get(7)),
    })
}

/// The hops `locked_path` returns.
pub(super) fn hops_from_json(json: &str) -> Result<Vec<Hop>> {
    type Columns = (
        String,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        String,
        String,
        i64,
    );
    let rows: Vec<Columns> = serde_json::from_str(json).map_err(|e| corrupt("task path", e))?;
    rows.into_iter()
        .map(
            |(handoff_id, parent_id, from_agent, to_agent, claimed_by, kind, status, created)| {
                Ok(Hop {
                    handoff_id,
                    parent_id,
                    from_agent,
                    to_agent: to_agent.or(claimed_by),
                    kind: parsed::<Kind>("kind", &kind)?,
                    status: parsed::<Status>("status", &status)?,
                    created_at: from_micros(created),
                })
            },
        )
        .collect()
}

pub(super) fn event_from_row(row: &Row) -> Result<Event> {
    let detail: &str = row.get(4);
    Ok(Event {
        seq: row.get::<_, i64>(0) as u64,
        handoff_id: row.get(1),
        at: from_micros(row.get(2)),
        actor: row.get(3),
        change: serde_json::from_str::<Change>(detail).map_err(|e| corrupt("event", e))?,
    })
}

/// Documents of kind `$1` with keys from `$2` on (the prefix) and below `$5` (the end of the
/// prefix's range, [`prefix_end`]), after `$3`, at most `$4`, in byte order (the keys'
/// collation, as SQLite and the other stores order them).
pub(super) const DOCS_SQL: &str = "SELECT version, body, key FROM docs WHERE kind = $1 \
                        AND key >= $2 AND key < $5 AND key > $3 ORDER BY key LIMIT $4";
/// [`DOCS_SQL`] for a prefix whose range has no end (the empty one): `$5` is unused.
pub(super) const DOCS_TO_END_SQL: &str = "SELECT version, body, key FROM docs WHERE kind = $1 \
                               AND key >= $2 AND key > $3 AND $5::text IS NULL \
                               ORDER BY key LIMIT $4";

/// The least key above every key that starts with `prefix`, in byte order (the order of code
/// points): the prefix with its last character raised by one, a last U+10FFFF dropped and the
/// one before raised; `None` when there is no such key (the empty prefix).
pub(super) fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        // `from_u32` skips the surrogates, which no string holds.
        if let Some(next) = (last as u32 + 1..=char::MAX as u32).find_map(char::from_u32) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// The statement that lists the documents under `prefix`, and its `$5`.
pub(super) fn docs_sql(prefix: &str) -> (&'static str, Option<String>) {
    match prefix_end(prefix) {
        Some(end) => (DOCS_SQL, Some(end)),
        None => (DOCS_TO_END_SQL, None),
    }
}

/// The document of kind `$1` and key `$2`.
pub(super) const DOC_SQL: &str = "SELECT version, body FROM docs WHERE kind = $1 AND key = $2";
/// [`DOC_SQL`], the row locked until the transaction ends.
pub(super) const DOC_LOCKED_SQL: &str =
    "SELECT version, body FROM docs WHERE kind = $1 AND key = $2 FOR UPDATE";

pub(super) fn doc_from_row(row: &Row) -> Result<Doc> {
    let version: i64 = row.get(0);
    Ok(Doc {
        version: u64::try_from(version).map_err(|e| corrupt("document version", e))?,
        body: row.get(1),
    })
}
