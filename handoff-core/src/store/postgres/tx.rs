//! One write transaction ([`Tx`]): rows locked explicitly, writes batched, events numbered at
//! the end under the event lock.

use super::batch::{
    DocArrays, DocWrites, Insert, Lifecycle, MAX_HELD_INSERTS, Unsent, doc_writes_sql, update_sql,
};
use super::errors::{busy, reason};
use super::sql::{
    CANDIDATES, DOC_LOCKED_SQL, DUE_PROBE, KIND_COLUMN, RowKind, SECRET_COLUMN, corrupt, due_sql,
    hops_from_json, next_ctes, saturated_row, saturation,
};
use super::*;

/// One write transaction.
pub(super) struct PgTx<'c> {
    pub(super) conn: &'c Conn,
    /// Whether `BEGIN` went (with the first statement).
    pub(super) begun: bool,
    /// Whether `COMMIT` went, or was not needed.
    pub(super) ended: bool,
    /// Whether nothing of this transaction can have taken effect: no round trip of it was
    /// answered and no `COMMIT` went. While so, a lost connection means nothing was done; once
    /// a `COMMIT` has gone, a lost answer leaves it unknown, and the write is not run again.
    pub(super) untouched: bool,
    /// The connection's prepared statements.
    pub(super) statements: &'c mut HashMap<String, Statement>,
    /// The last record write not sent yet: held back so that it travels with the next
    /// statement the transaction must send anyway (at best the events' insert at commit),
    /// sent on its own before anything else reads or writes.
    pub(super) unsent: Option<Unsent>,
    /// New records not sent yet: sent before the next statement that reads, or at commit
    /// inside the statement that writes the events.
    pub(super) unsent_inserts: Vec<Insert>,
    /// Document writes not sent yet: sent together, as one statement, before the next
    /// statement that reads or at commit, however many the transaction made.
    pub(super) unsent_docs: DocWrites,
    /// The driver's error behind the last failed call, to tell a retryable failure apart.
    pub(super) error: Option<CallError>,
    /// Events, written at the end under the event lock (see the module doc).
    pub(super) events: Vec<NewEvent>,
    /// The tasks whose path this transaction has locked.
    pub(super) locked_tasks: Vec<String>,
    /// A locked task's path read ahead by `lapsed_or_next`, until this transaction writes.
    pub(super) path: Option<(String, Vec<Hop>)>,
    pub(super) read_secret: ReadSecret,
    pub(super) event_lock: i64,
    pub(super) task_lock_base: i64,
    /// Where to tell waiting workers that work became claimable.
    pub(super) channel: String,
}

impl Drop for PgTx<'_> {
    fn drop(&mut self) {
        // A transaction left unfinished (the closure refused, a statement failed) is rolled
        // back before its connection goes back to the pool; one that cannot be is closed.
        if self.begun && !self.ended {
            let _ = self.conn.batch_execute("ROLLBACK");
        }
    }
}

impl PgTx<'_> {
    /// The statement `sql`, prepared on this connection the first time it is used.
    fn statement(&mut self, sql: &str) -> std::result::Result<Statement, CallError> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.conn.prepare(sql);
        let statement = self.answered(statement)?;
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    /// `result`, noting that the server answered.
    fn answered<T>(
        &mut self,
        result: std::result::Result<T, CallError>,
    ) -> std::result::Result<T, CallError> {
        self.untouched &= result.is_err();
        result
    }

    /// Whether the next statement must carry the transaction's `BEGIN`: the first one does.
    fn begin(&mut self) -> bool {
        !std::mem::replace(&mut self.begun, true)
    }

    /// Runs `sql` as a prepared statement; the rows it returns.
    fn query(&mut self, sql: &str, params: Params<'_>) -> std::result::Result<Vec<Row>, CallError> {
        let statement = self.statement(sql)?;
        let begin = self.begin();
        let rows = self
            .conn
            .query_in_transaction(begin, &statement, params, false);
        self.answered(rows)
    }

    /// Runs `sql` as a prepared statement; how many rows it changed.
    fn execute(&mut self, sql: &str, params: Params<'_>) -> std::result::Result<u64, CallError> {
        self.execute_then(sql, params, false)
    }

    /// Runs `sql` as a prepared statement and commits, in one round trip (with the `BEGIN`
    /// too when it is the transaction's only statement).
    fn execute_and_commit(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> std::result::Result<(), CallError> {
        self.execute_then(sql, params, true).map(drop)
    }

    fn execute_then(
        &mut self,
        sql: &str,
        params: Params<'_>,
        commit: bool,
    ) -> std::result::Result<u64, CallError> {
        let statement = self.statement(sql)?;
        let begin = self.begin();
        if commit {
            self.ended = true;
            self.untouched = false;
        }
        let changed = self
            .conn
            .execute_in_transaction(begin, &statement, params, commit);
        self.answered(changed)
    }

    /// Commits what was sent; a transaction that sent nothing has nothing to commit.
    fn commit(&mut self) -> std::result::Result<(), CallError> {
        if !std::mem::replace(&mut self.ended, true) && self.begun {
            self.untouched = false;
            self.conn.batch_execute("COMMIT")?;
        }
        Ok(())
    }

    fn check<T>(&mut self, what: &str, result: std::result::Result<T, CallError>) -> Result<T> {
        result.map_err(|e| {
            let err = busy(what, &e)
                .unwrap_or_else(|| Error::storage(format!("PostgreSQL: {what}: {}", reason(&e))));
            self.error = Some(e);
            err
        })
    }

    /// Writes the events in commit order (one statement, under the event lock, with the record
    /// write still unsent), tells waiting workers when work became claimable (PostgreSQL
    /// delivers the notification at commit), and commits.
    pub(super) fn finish(&mut self) -> std::result::Result<(), CallError> {
        if self.events.is_empty() {
            self.send_inserts()?;
            self.send_unsent()?;
            // A transaction that wrote only documents (an agent's memory, say) sends them
            // with its `COMMIT`.
            return self.send_docs(true);
        }
        let new_work = self.events.iter().any(|e| {
            matches!(
                e.change,
                Change::Created { .. }
                    | Change::Released { .. }
                    | Change::Revoked { .. }
                    | Change::Retried { .. }
                    | Change::LeaseExpired { .. }
                    | Change::AttemptFailed { .. }
            )
        });
        let events = std::mem::take(&mut self.events);
        let ids: Vec<&str> = events.iter().map(|e| e.handoff_id.as_str()).collect();
        let ats: Vec<i64> = events.iter().map(|e| micros(e.at)).collect();
        let actors: Vec<Option<&str>> = events.iter().map(|e| e.actor.as_deref()).collect();
        let kinds: Vec<&str> = events.iter().map(|e| e.change.kind()).collect();
        let details: Vec<String> = events
            .iter()
            .map(|e| serde_json::to_string(&e.change).unwrap_or_default())
            .collect();
        let lock = self.event_lock;
        // Most transactions write one event (a claim, a completion): its values go as they
        // are, which spares the server the arrays' parsing, their unnesting and its sort.
        let single = events.len() == 1;
        let mut params: Vec<&(dyn ToSql + Sync)> = if single {
            vec![&lock, &ids[0], &ats[0], &actors[0], &kinds[0], &details[0]]
        } else {
            vec![&lock, &ids, &ats, &actors, &kinds, &details]
        };
        // Everything held back travels in this one statement, each write a `WITH` entry.
        let mut with: Vec<String> = Vec::new();
        let inserts = std::mem::take(&mut self.unsent_inserts);
        for (n, insert) in inserts.iter().enumerate() {
            with.push(format!(
                "inserted_{n} AS ({})",
                Insert::sql(params.len() + 1)
            ));
            params.extend(insert.params());
        }
        let unsent = self.unsent.take();
        let lifecycle = unsent
            .as_ref()
            .and_then(|u| u.record.as_ref())
            .map(Lifecycle::of);
        if let Some(u) = &unsent {
            let update = update_sql(params.len() + 1, u.secret.is_some(), lifecycle.is_some());
            with.push(format!("written AS ({update})"));
            params.push(&u.id);
            if let Some(lifecycle) = &lifecycle {
                params.extend(lifecycle.params());
            }
            if let Some(secret) = &u.secret {
                params.push(secret);
            }
        }
        let writes = std::mem::take(&mut self.unsent_docs);
        let arrays = DocArrays::of(&writes);
        if !writes.rows.is_empty() {
            with.push(doc_writes_sql(params.len() + 1));
            params.extend(arrays.params());
        }
        // Every row needs the lock's row, so the lock is held before the first `seq` is
        // drawn; rows are numbered in the order of the array.
        with.push("lock AS (SELECT pg_advisory_xact_lock_shared($1))".to_owned());
        let mut from = "lock".to_owned();
        // Waiting workers learn of new work at commit, from the same statement.
        let channel = self.channel.clone();
        if new_work {
            with.push(format!(
                "notified AS (SELECT pg_notify(${}, ''))",
                params.len() + 1
            ));
            params.push(&channel);
            from.push_str(", notified");
        }
        let rows = if single {
            format!("SELECT $2::text, $3::int8, $4::text, $5::text, $6::text FROM {from}")
        } else {
            format!(
                "SELECT e.handoff_id, e.at, e.actor, e.kind, e.detail FROM {from}, \
                 unnest($2::text[], $3::int8[], $4::text[], $5::text[], $6::text[]) \
                 WITH ORDINALITY AS e(handoff_id, at, actor, kind, detail, n) ORDER BY e.n"
            )
        };
        let sql = format!(
            "WITH {} INSERT INTO events (handoff_id, at, actor, kind, detail) {rows}",
            with.join(", ")
        );
        self.execute_and_commit(&sql, &params)
    }

    /// Sends the record write held back, if any.
    fn send_unsent(&mut self) -> std::result::Result<(), CallError> {
        let Some(u) = self.unsent.take() else {
            return Ok(());
        };
        self.path = None;
        let lifecycle = u.record.as_ref().map(Lifecycle::of);
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&u.id];
        if let Some(lifecycle) = &lifecycle {
            params.extend(lifecycle.params());
        }
        if let Some(secret) = &u.secret {
            params.push(secret);
        }
        let sql = update_sql(1, u.secret.is_some(), lifecycle.is_some());
        self.execute(&sql, &params).map(drop)
    }

    /// The held-back write of the record `id`, to add to: another record's is sent first.
    fn hold(&mut self, id: &str) -> Result<&mut Unsent> {
        let inserted_unsent = self.unsent_inserts.iter().any(|i| i.id == id);
        if inserted_unsent || self.unsent.as_ref().is_some_and(|u| u.id != id) {
            self.flush()?;
        }
        Ok(self.unsent.get_or_insert_with(|| Unsent {
            id: id.to_owned(),
            ..Unsent::default()
        }))
    }

    /// Sends the document writes held back, if any, in one statement; with the transaction's
    /// `COMMIT` when `commit` (which goes alone when there are none).
    fn send_docs(&mut self, commit: bool) -> std::result::Result<(), CallError> {
        let writes = std::mem::take(&mut self.unsent_docs);
        if writes.rows.is_empty() {
            return if commit { self.commit() } else { Ok(()) };
        }
        let arrays = DocArrays::of(&writes);
        let sql = format!("WITH {} SELECT 1", doc_writes_sql(1));
        if commit {
            self.execute_and_commit(&sql, &arrays.params())
        } else {
            self.execute(&sql, &arrays.params()).map(drop)
        }
    }

    /// Sends the new records held back, if any, one statement each.
    fn send_inserts(&mut self) -> std::result::Result<(), CallError> {
        // Every read flushes first: with nothing held, not even the statement's text is made.
        if self.unsent_inserts.is_empty() {
            return Ok(());
        }
        let sql = Insert::sql(1);
        for insert in std::mem::take(&mut self.unsent_inserts) {
            self.execute(&sql, &insert.params())?;
        }
        Ok(())
    }

    /// Sends the writes held back ([`PgTx::send_inserts`], [`PgTx::send_unsent`],
    /// [`PgTx::send_docs`]) before a statement that must see them.
    fn flush(&mut self) -> Result<()> {
        let result = self.send_inserts();
        self.check("cannot insert a record", result)?;
        let result = self.send_unsent();
        self.check("cannot update a record", result)?;
        let result = self.send_docs(false);
        self.check("cannot write a document", result)
    }

    /// Sends the document writes held back before a statement on documents that must see
    /// them. Record writes stay held: no statement on documents reads records, and one
    /// statement less in a claim or a completion that reads its step is a round trip less.
    fn flush_docs(&mut self) -> Result<()> {
        let result = self.send_docs(false);
        self.check("cannot write a document", result)
    }

    /// Holds a document write for [`PgTx::send_docs`].
    fn hold_doc(&mut self, kind: &str, key: &str, doc: &Doc, insert: bool) -> Result<()> {
        if !self.unsent_docs.hold(kind, key, doc, insert) {
            self.flush()?;
            self.unsent_docs.hold(kind, key, doc, insert);
        }
        Ok(())
    }

    /// [`Tx::next_claimable`], looking first at `CANDIDATES[first]` candidates of each scan: a
    /// claim that found every one of the first ones held starts with the next number.
    fn claimable(
        &mut self,
        agent: &str,
        task_id: Option<&str>,
        now: DateTime<Utc>,
        after: Option<&str>,
        first: usize,
    ) -> Result<Option<Handoff>> {
        self.flush()?;
        let now = micros(now);
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&agent, &now];
        let task = task_id.as_ref().map(|task| {
            params.push(task);
            params.len()
        });
        let filter = match &after {
            Some(after) => {
                params.push(after);
                // After the refused record in claim order: a lower priority, or the same and
                // younger (an unknown id refuses nothing).
                format!(
                    " AND NOT EXISTS (SELECT 1 FROM handoffs AS refused WHERE refused.id = ${} \
                     AND (refused.priority < handoffs.priority \
                       OR (refused.priority = handoffs.priority AND refused.pos >= handoffs.pos)))",
                    params.len()
                )
            }
            None => String::new(),
        };
        let limits = CANDIDATES.iter().skip(first).copied().map(Some);
        for limit in limits.chain([None]) {
            let sql = format!(
                "WITH {} SELECT {RECORD_COLUMNS}, {} FROM next{}",
                next_ctes(RECORD_COLUMNS, task, &filter, limit),
                RowKind::Next as i32,
                saturated_row(task, limit)
            );
            let result = self.query(&sql, &params);
            let rows = self.check("cannot read claimable records", result)?;
            match rows.first() {
                Some(row) if RowKind::of(row)? == RowKind::Saturated => continue,
                Some(row) => return record_from_row(row).map(Some),
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    /// The document `key` of `kind`, read by `sql` ([`DOC_SQL`] or [`DOC_LOCKED_SQL`]).
    fn read_doc(&mut self, sql: &str, kind: &str, key: &str) -> Result<Option<Doc>> {
        self.flush_docs()?;
        let rows = self.query(sql, &[&kind, &key]);
        self.check("cannot read a document", rows)?
            .first()
            .map(doc_from_row)
            .transpose()
    }
}

impl Tx for PgTx<'_> {
    fn get(&mut self, id: &str) -> Result<Option<Handoff>> {
        self.flush()?;
        // The transaction reads a record to change it: lock it until commit.
        let rows = self.query(
            &format!(
                "SELECT {RECORD_COLUMNS}, claim_secret FROM handoffs WHERE id = $1 FOR UPDATE"
            ),
            &[&id],
        );
        let Some(row) = self.check("cannot read a record", rows)?.into_iter().next() else {
            return Ok(None);
        };
        let record = record_from_row(&row)?;
        self.read_secret
            .keep(&record.id, stored_digest(row.get(SECRET_COLUMN)));
        Ok(Some(record))
    }

    fn insert(&mut self, h: &Handoff) -> Result<()> {
        self.path = None;
        // A batch sends its records as it goes: one statement takes at most 65,535 values.
        if self.unsent_inserts.len() >= MAX_HELD_INSERTS {
            self.flush()?;
        }
        self.unsent_inserts.push(Insert::of(h));
        Ok(())
    }

    fn update(&mut self, h: &Handoff) -> Result<()> {
        // A record made in this transaction and not sent yet is sent as it is now.
        if let Some(held) = self.unsent_inserts.iter_mut().find(|i| i.id == h.id) {
            *held = Insert::of(h);
            return Ok(());
        }
        let unsent = self.hold(&h.id)?;
        unsent.record = Some(h.clone());
        Ok(())
    }

    fn append(&mut self, event: NewEvent) -> Result<()> {
        self.events.push(event);
        Ok(())
    }

    /// The row (with its claim digest) and its events, in one statement; events of it this
    /// transaction holds back go unwritten.
    fn delete_record(&mut self, id: &str) -> Result<()> {
        self.events.retain(|e| e.handoff_id != id);
        self.flush()?;
        self.read_secret.forget(id);
        self.path = None;
        let result = self.execute(
            "WITH gone AS (DELETE FROM events WHERE handoff_id = $1) \
             DELETE FROM handoffs WHERE id = $1",
            &[&id],
        );
        self.check("cannot remove a record", result).map(drop)
    }

    fn set_setting(&mut self, key: &str, value: &str) -> Result<()> {
        self.flush()?;
        let result = self.execute(
            "INSERT INTO settings (key, value) VALUES ($1, $2) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&key, &value],
        );
        self.check("cannot write a setting", result).map(drop)
    }

    fn claim_secret(&mut self, id: &str) -> Result<Option<[u8; 32]>> {
        if let Some(Unsent {
            id: unsent,
            secret: Some(digest),
            ..
        }) = &self.unsent
            && unsent == id
        {
            return Ok(stored_digest(digest.as_deref()));
        }
        if let Some(secret) = self.read_secret.of(id) {
            return Ok(secret);
        }
        let result = self.query("SELECT claim_secret FROM handoffs WHERE id = $1", &[&id]);
        Ok(self
            .check("cannot read a claim", result)?
            .first()
            .and_then(|row| stored_digest(row.get(0))))
    }

    fn set_claim_secret(&mut self, id: &str, digest: Option<[u8; 32]>) -> Result<()> {
        self.read_secret.forget(id);
        let unsent = self.hold(id)?;
        unsent.secret = Some(digest.map(|d| d.to_vec()));
        Ok(())
    }

    fn hops(&mut self, task_id: &str) -> Result<Vec<Hop>> {
        self.flush()?;
        if let Some((task, hops)) = self.path.take()
            && task == task_id
        {
            return Ok(hops);
        }
        // The chain policy reads the path and then adds to it: one transaction per task at a
        // time, or two could both pass a limit that only one of them may.
        if !self.locked_tasks.iter().any(|t| t == task_id) {
            let key = self.task_lock_base;
            let result = self.execute(
                "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                &[&((key >> 8) as i32), &task_id],
            );
            self.check("cannot lock a task", result)?;
            self.locked_tasks.push(task_id.to_owned());
        }
        let result = self.query(
            &format!("SELECT {HOP_COLUMNS} FROM handoffs WHERE task_id = $1 ORDER BY pos"),
            &[&task_id],
        );
        self.check("cannot read a chain", result)?
            .iter()
            .map(hop_from_row)
            .collect()
    }

    fn next_claimable(
        &mut self,
        agent: &str,
        task_id: Option<&str>,
        now: DateTime<Utc>,
        after: Option<&str>,
    ) -> Result<Option<Handoff>> {
        self.claimable(agent, task_id, now, after, 0)
    }

    fn lapsed(&mut self, now: DateTime<Utc>, limit: usize) -> Result<Vec<Handoff>> {
        self.flush()?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let result = self.query(&due_sql(), &[&limit, &micros(now)]);
        self.check("cannot read lapsed records", result)?
            .iter()
            .map(record_from_row)
            .collect()
    }

    /// One statement with a small plan (PostgreSQL builds every node of a plan again at each
    /// execution, and reading the due records in the same statement made that half of a
    /// claim's CPU): the candidate, locked; its task's path locked and read when asked (after
    /// the row is locked, so only for the row returned), kept for the [`Tx::hops`] that
    /// follows; and whether any record is due, probed on the indexes of leases and expiries.
    /// Only when one is due are they read, by [`Tx::lapsed`].
    fn lapsed_or_next(
        &mut self,
        agent: &str,
        task_id: Option<&str>,
        now: DateTime<Utc>,
        limit: usize,
        lock_open_path: bool,
    ) -> Result<(Vec<Handoff>, Option<Handoff>)> {
        self.flush()?;
        let at = micros(now);
        let path_lock = (self.task_lock_base >> 8) as i32;
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&agent, &at, &lock_open_path, &path_lock];
        let task = task_id.as_ref().map(|task| {
            params.push(task);
            params.len()
        });
        let candidates = Some(CANDIDATES[0]);
        let next = next_ctes(
            &format!("{RECORD_COLUMNS}, to_agent, task_id"),
            task,
            "",
            candidates,
        );
        let saturated = saturation(task, candidates).unwrap_or_else(|| "false".to_owned());
        let sql = format!(
            "WITH probe AS MATERIALIZED (SELECT {DUE_PROBE} AS due), {next} \
             SELECT {RECORD_COLUMNS}, CASE WHEN probe.due THEN {} \
               WHEN next.status IS NOT NULL THEN {} ELSE {} END, \
               CASE WHEN $3 AND NOT probe.due AND next.to_agent IS NULL \
                 AND next.task_id IS NOT NULL THEN locked_path($4, next.task_id) END \
             FROM probe LEFT JOIN next ON true \
             WHERE probe.due OR next.status IS NOT NULL OR {saturated}",
            RowKind::Due as i32,
            RowKind::Next as i32,
            RowKind::Saturated as i32,
        );
        let result = self.query(&sql, &params);
        let rows = self.check("cannot read claimable records", result)?;
        let Some(row) = rows.first() else {
            return Ok((Vec::new(), None));
        };
        match RowKind::of(row)? {
            RowKind::Due => {
                let due = self.lapsed(now, limit)?;
                if due.is_empty() {
                    // Other claimers hold every one of them, to settle them: the claim goes on.
                    return Ok((due, self.claimable(agent, task_id, now, None, 0)?));
                }
                Ok((due, None))
            }
            RowKind::Next => {
                let record = record_from_row(row)?;
                if let Some(hops) = row.get::<_, Option<&str>>(KIND_COLUMN + 1) {
                    self.locked_tasks.push(record.task_id.clone());
                    self.path = Some((record.task_id.clone(), hops_from_json(hops)?));
                }
                Ok((Vec::new(), Some(record)))
            }
            // Every candidate was taken: more of the queue is looked at, and the chain policy's
            // read of the path (`hops`) locks it itself.
            RowKind::Saturated => Ok((Vec::new(), self.claimable(agent, task_id, now, None, 1)?)),
        }
    }

    fn peek_doc(&mut self, kind: &str, key: &str) -> Result<Option<Doc>> {
        self.read_doc(DOC_SQL, kind, key)
    }

    fn doc(&mut self, kind: &str, key: &str) -> Result<Option<Doc>> {
        self.read_doc(DOC_LOCKED_SQL, kind, key)
    }

    /// One round trip, the rows locked in key order.
    fn docs_at(&mut self, places: &[(&str, &str)]) -> Result<Vec<Option<Doc>>> {
        self.flush_docs()?;
        let kinds: Vec<&str> = places.iter().map(|(kind, _)| *kind).collect();
        let keys: Vec<&str> = places.iter().map(|(_, key)| *key).collect();
        let rows = self.query(
            "SELECT d.version, d.body, p.n FROM docs AS d \
             JOIN unnest($1::text[], $2::text[]) WITH ORDINALITY AS p(kind, key, n) \
             ON d.kind = p.kind AND d.key = p.key ORDER BY d.kind, d.key FOR UPDATE OF d",
            &[&kinds, &keys],
        );
        let mut found = vec![None; places.len()];
        for row in self.check("cannot read documents", rows)? {
            let at = usize::try_from(row.get::<_, i64>(2) - 1)
                .map_err(|e| corrupt("document place", e))?;
            if let Some(slot) = found.get_mut(at) {
                *slot = Some(doc_from_row(&row)?);
            }
        }
        Ok(found)
    }

    fn insert_doc(&mut self, kind: &str, key: &str, doc: &Doc) -> Result<()> {
        self.hold_doc(kind, key, doc, true)
    }

    fn update_doc(&mut self, kind: &str, key: &str, doc: &Doc) -> Result<()> {
        self.hold_doc(kind, key, doc, false)
    }

    fn delete_doc(&mut self, kind: &str, key: &str) -> Result<()> {
        self.flush_docs()?;
        let result = self.execute(
            "DELETE FROM docs WHERE kind = $1 AND key = $2",
            &[&kind, &key],
        );
        self.check("cannot remove a document", result).map(drop)
    }

    fn docs(&mut self, kind: &str, prefix: &str) -> Result<Vec<(String, Doc)>> {
        self.flush_docs()?;
        let (sql, end) = docs_sql(prefix);
        let rows = self.query(sql, &[&kind, &prefix, &"", &i64::MAX, &end]);
        self.check("cannot list documents", rows)?
            .iter()
            .map(|row| Ok((row.get::<_, String>(2), doc_from_row(row)?)))
            .collect()
    }
}
