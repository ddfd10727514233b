//! The writes a transaction holds back and sends together: records' lifecycles, new records and
//! documents, each batch one statement.

use super::*;

/// A record write held back by [`PgTx`]: its new lifecycle, the digest of its new claim secret,
/// or both in one row version.
#[derive(Default)]
pub(super) struct Unsent {
    pub(super) id: String,
    pub(super) record: Option<Handoff>,
    pub(super) secret: Option<Option<Vec<u8>>>,
}

/// How many new records a transaction holds back before it sends them.
pub(super) const MAX_HELD_INSERTS: usize = 16;

/// A new record's row, held back by [`PgTx`], its values as PostgreSQL takes them.
pub(super) struct Insert {
    pub(super) id: String,
    pub(super) task_id: String,
    pub(super) kind: &'static str,
    pub(super) from_agent: Option<String>,
    pub(super) to_agent: Option<String>,
    pub(super) parent_id: Option<String>,
    pub(super) created_at: i64,
    pub(super) expires_at: Option<i64>,
    pub(super) status: &'static str,
    pub(super) claimed_by: Option<String>,
    pub(super) claim_token: Option<i64>,
    pub(super) lease_until: Option<i64>,
    pub(super) heartbeat_at: Option<i64>,
    pub(super) attempts: i32,
    pub(super) completed_at: Option<i64>,
    pub(super) outcome: Option<String>,
    pub(super) priority: i32,
    pub(super) progress: Option<String>,
    pub(super) body: String,
}

impl Insert {
    pub(super) fn of(h: &Handoff) -> Insert {
        Insert {
            id: h.id.clone(),
            task_id: h.task_id.clone(),
            kind: h.kind.as_str(),
            from_agent: h.from_agent.clone(),
            to_agent: h.to_agent.clone(),
            parent_id: h.parent_id.clone(),
            created_at: micros(h.created_at),
            expires_at: opt_micros(h.expires_at),
            status: h.status.as_str(),
            claimed_by: h.claimed_by.clone(),
            claim_token: h.claim_token.map(|t| t as i64),
            lease_until: opt_micros(h.lease_until),
            heartbeat_at: opt_micros(h.heartbeat_at),
            attempts: h.attempts as i32,
            completed_at: opt_micros(h.completed_at),
            outcome: h.outcome.clone(),
            priority: h.priority,
            progress: h.progress.as_ref().map(|p| p.to_string()),
            body: h.stored_body(),
        }
    }

    /// The statement that inserts one row, its values from `$first` on.
    pub(super) fn sql(first: usize) -> String {
        let values: Vec<String> = (first..first + 19).map(|n| format!("${n}")).collect();
        format!(
            "INSERT INTO handoffs (id, task_id, kind, from_agent, to_agent, parent_id, \
             created_at, expires_at, status, claimed_by, claim_token, lease_until, \
             heartbeat_at, attempts, completed_at, outcome, priority, progress, body) VALUES ({})",
            values.join(", ")
        )
    }

    pub(super) fn params(&self) -> [&(dyn ToSql + Sync); 19] {
        [
            &self.id,
            &self.task_id,
            &self.kind,
            &self.from_agent,
            &self.to_agent,
            &self.parent_id,
            &self.created_at,
            &self.expires_at,
            &self.status,
            &self.claimed_by,
            &self.claim_token,
            &self.lease_until,
            &self.heartbeat_at,
            &self.attempts,
            &self.completed_at,
            &self.outcome,
            &self.priority,
            &self.progress,
            &self.body,
        ]
    }
}

/// Document writes held back by [`PgTx`], one per document: a later write of a document
/// already held replaces the held one (an update of a held insert stays an insert).
#[derive(Default)]
pub(super) struct DocWrites {
    pub(super) rows: Vec<DocWrite>,
    /// `(kind, key)` → its place in `rows`.
    pub(super) index: HashMap<(String, String), usize>,
}

pub(super) struct DocWrite {
    pub(super) kind: String,
    pub(super) key: String,
    pub(super) version: i64,
    pub(super) body: String,
    pub(super) insert: bool,
}

/// The columns of `rows`, as arrays for [`doc_writes_sql`].
pub(super) fn doc_columns<'a>(
    rows: &[&'a DocWrite],
) -> (Vec<&'a str>, Vec<&'a str>, Vec<i64>, Vec<&'a str>) {
    (
        rows.iter().map(|w| w.kind.as_str()).collect(),
        rows.iter().map(|w| w.key.as_str()).collect(),
        rows.iter().map(|w| w.version).collect(),
        rows.iter().map(|w| w.body.as_str()).collect(),
    )
}

/// Two data-modifying `WITH` entries that write a batch of [`DocWrites`], their arrays from
/// `$first` on: kinds, keys, versions and bodies of the inserts, then of the updates.
pub(super) fn doc_writes_sql(first: usize) -> String {
    let n = |i: usize| first + i;
    format!(
        "docs_inserted AS (INSERT INTO docs (kind, key, version, body) \
         SELECT * FROM unnest(${}::text[], ${}::text[], ${}::int8[], ${}::text[])), \
         docs_updated AS (UPDATE docs SET version = u.version, body = u.body \
         FROM unnest(${}::text[], ${}::text[], ${}::int8[], ${}::text[]) \
         AS u(kind, key, version, body) WHERE docs.kind = u.kind AND docs.key = u.key)",
        n(0),
        n(1),
        n(2),
        n(3),
        n(4),
        n(5),
        n(6),
        n(7)
    )
}

/// The arrays [`doc_writes_sql`] takes.
pub(super) struct DocArrays<'a> {
    pub(super) inserts: (Vec<&'a str>, Vec<&'a str>, Vec<i64>, Vec<&'a str>),
    pub(super) updates: (Vec<&'a str>, Vec<&'a str>, Vec<i64>, Vec<&'a str>),
}

impl<'a> DocArrays<'a> {
    pub(super) fn of(writes: &'a DocWrites) -> DocArrays<'a> {
        let (inserts, updates): (Vec<&DocWrite>, Vec<&DocWrite>) =
            writes.rows.iter().partition(|w| w.insert);
        DocArrays {
            inserts: doc_columns(&inserts),
            updates: doc_columns(&updates),
        }
    }

    pub(super) fn params(&self) -> [&(dyn ToSql + Sync); 8] {
        let (ik, ikey, iv, ib) = &self.inserts;
        let (uk, ukey, uv, ub) = &self.updates;
        [ik, ikey, iv, ib, uk, ukey, uv, ub]
    }
}

impl DocWrites {
    /// Holds a write; `false` when it is a second insert of a document held already, which
    /// must reach the server after the first (to fail there, as it would have on its own).
    pub(super) fn hold(&mut self, kind: &str, key: &str, doc: &Doc, insert: bool) -> bool {
        let version = doc.version as i64;
        if let Some(&at) = self.index.get(&(kind.to_owned(), key.to_owned())) {
            if insert {
                return false;
            }
            let held = &mut self.rows[at];
            held.version = version;
            held.body.clone_from(&doc.body);
            return true;
        }
        self.index
            .insert((kind.to_owned(), key.to_owned()), self.rows.len());
        self.rows.push(DocWrite {
            kind: kind.to_owned(),
            key: key.to_owned(),
            version,
            body: doc.body.clone(),
            insert,
        });
        true
    }
}

/// The lifecycle columns [`Tx::update`] writes, numbered from `$first` (the id) on; the claim
/// secret's digest follows when `with_secret`.
pub(super) fn update_sql(first: usize, with_secret: bool, record: bool) -> String {
    let n = |i: usize| first + i;
    let mut set: Vec<String> = Vec::new();
    if record {
        for (i, column) in [
            "status",
            "claimed_by",
            "claim_token",
            "lease_until",
            "heartbeat_at",
            "attempts",
            "completed_at",
            "outcome",
            "priority",
            "progress",
        ]
        .iter()
        .enumerate()
        {
            set.push(format!("{column} = ${}", n(i + 1)));
        }
    }
    if with_secret {
        set.push(format!("claim_secret = ${}", n(set.len() + 1)));
    }
    format!("UPDATE handoffs SET {} WHERE id = ${first}", set.join(", "))
}

/// A record's lifecycle fields as PostgreSQL values, in [`update_sql`]'s order.
pub(super) struct Lifecycle<'a> {
    pub(super) status: &'static str,
    pub(super) claimed_by: &'a Option<String>,
    pub(super) claim_token: Option<i64>,
    pub(super) lease_until: Option<i64>,
    pub(super) heartbeat_at: Option<i64>,
    pub(super) attempts: i32,
    pub(super) completed_at: Option<i64>,
    pub(super) outcome: &'a Option<String>,
    pub(super) priority: i32,
    pub(super) progress: Option<String>,
}

impl<'a> Lifecycle<'a> {
    pub(super) fn of(h: &'a Handoff) -> Lifecycle<'a> {
        Lifecycle {
            status: h.status.as_str(),
            claimed_by: &h.claimed_by,
            claim_token: h.claim_token.map(|t| t as i64),
            lease_until: opt_micros(h.lease_until),
            heartbeat_at: opt_micros(h.heartbeat_at),
            attempts: h.attempts as i32,
            completed_at: opt_micros(h.completed_at),
            outcome: &h.outcome,
            priority: h.priority,
            progress: h.progress.as_ref().map(|p| p.to_string()),
        }
    }

    pub(super) fn params(&self) -> [&(dyn ToSql + Sync); 10] {
        [
            &self.status,
            self.claimed_by,
            &self.claim_token,
            &self.lease_until,
            &self.heartbeat_at,
            &self.attempts,
            &self.completed_at,
            self.outcome,
            &self.priority,
            &self.progress,
        ]
    }
}
