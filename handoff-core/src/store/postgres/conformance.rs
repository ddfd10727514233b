//! The conformance suite on a schema of its own per case, when `HANDOFF_TEST_POSTGRES` names
//! a server (CI always sets it, and then an unreachable server fails the tests).

#![allow(clippy::unwrap_used)]

use super::{PostgresBackend, PostgresOptions};
use crate::Store;

/// A fresh schema, dropped when the case ends.
pub(super) struct Schema {
    url: String,
    name: String,
}

impl Schema {
    /// A new schema's name on the server at `url` (created by the first store on it).
    pub(super) fn fresh(url: &str) -> Schema {
        Schema {
            url: url.to_owned(),
            name: format!("hc_test_{:016x}", fastrand::u64(..)),
        }
    }

    /// The URL of this schema's store on `server` (the test server, or another way to
    /// reach it), with `params` (`&key=value…`) after the schema.
    pub(super) fn url_on(&self, server: &str, params: &str) -> String {
        let separator = if server.contains('?') { '&' } else { '?' };
        format!("{server}{separator}schema={}{params}", self.name)
    }

    /// The URL of this schema's store on the test server.
    pub(super) fn store_url(&self) -> String {
        self.url_on(&self.url, "")
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.url, postgres::NoTls) {
            let _ =
                client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name));
        }
    }
}

/// A store on a new schema, or `None` (with a note) when no server is configured.
pub(super) fn store() -> Option<(Store, Schema)> {
    let Ok(url) = std::env::var("HANDOFF_TEST_POSTGRES") else {
        eprintln!("HANDOFF_TEST_POSTGRES is not set: skipping a PostgreSQL case");
        return None;
    };
    let schema = Schema::fresh(&url);
    let backend = PostgresBackend::connect(&schema.store_url(), &PostgresOptions::default())
        .unwrap_or_else(|e| panic!("HANDOFF_TEST_POSTGRES={url} is unreachable: {e}"));
    Some((Store::new(backend), schema))
}

crate::conformance_tests!(optional store());

/// How a store moves from SQLite to PostgreSQL: a backup of the one restored into the
/// other answers `list`, `events`, `get_task` and `replay` the same, and work goes on.
#[cfg(feature = "sqlite")]
#[test]
fn a_sqlite_store_moves_to_postgresql_by_backup_and_restore() {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::plan::StepSpec;
    use crate::task::NewTask;
    use crate::{EventFilter, ListFilter, ManualClock, NewHandoff};

    let Some((target, _schema)) = store() else {
        return;
    };
    let minute = Duration::from_secs(60);
    let clock = Arc::new(ManualClock::at_epoch());
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Store::open(dir.path().join("handoff.db"))
        .unwrap()
        .with_clock(clock.clone());
    let target = target.with_clock(clock.clone());
    let first = sqlite
        .create(
            NewHandoff::new("move", "Move the store")
                .from_agent("ops")
                .to_agent("db"),
        )
        .unwrap();
    let held = sqlite.claim(&first.id, "db", minute).unwrap();
    let task = sqlite
        .create_task(NewTask {
            name: "Two steps".into(),
            steps: vec![
                StepSpec::new("dump", "Dump", "db"),
                StepSpec::new("load", "Load", "db").after(["dump"]),
            ],
            ..NewTask::default()
        })
        .unwrap()
        .header
        .id;
    sqlite.start_task(&task).unwrap();
    clock.advance(Duration::from_secs(5));
    let dump = sqlite
        .claim_next("db", Some(&task), minute)
        .unwrap()
        .unwrap();
    sqlite.complete(&dump, "dumped").unwrap();

    let path = dir.path().join("move.backup");
    let written = sqlite.backup(&path).unwrap();
    assert_eq!(target.restore(&path).unwrap(), written);

    let all = ListFilter::default();
    assert_eq!(sqlite.list(&all).unwrap(), target.list(&all).unwrap());
    assert_eq!(sqlite.events(None).unwrap(), target.events(None).unwrap());
    let of_task = EventFilter {
        task_id: Some(task.clone()),
        ..EventFilter::default()
    };
    assert_eq!(
        sqlite.events_page(&of_task).unwrap(),
        target.events_page(&of_task).unwrap()
    );
    assert_eq!(
        sqlite.get_task(&task).unwrap(),
        target.get_task(&task).unwrap()
    );
    assert_eq!(
        sqlite.replay(&task, false).unwrap(),
        target.replay(&task, false).unwrap()
    );
    // The claim taken on SQLite is settled on PostgreSQL; the task goes on there.
    target.complete(&held, "moved").unwrap();
    let load = target
        .claim_next("db", Some(&task), minute)
        .unwrap()
        .unwrap();
    target.complete(&load, "loaded").unwrap();
    assert_eq!(
        target.get_task(&task).unwrap().header.status,
        crate::task::TaskStatus::Completed
    );
}

/// A store called from async code and dropped there, as an MCP server drops its store
/// inside its runtime and as a Rust caller may use one from `#[tokio::main]`: tokio
/// refuses, with a panic, to block on one runtime inside another and to wait for a
/// runtime's threads as it drops. Neither may reach the caller, on either kind of runtime,
/// from a task, from the runtime's own `block_on`, or from `spawn_blocking`.
#[test]
fn a_store_is_called_and_dropped_inside_an_async_runtime() {
    use std::sync::Arc;
    let Some((store, _schema)) = store() else {
        return;
    };
    let store = Arc::new(store);
    fn lifecycle(store: &crate::Store, task: &str) {
        let lease = std::time::Duration::from_secs(60);
        let created = store
            .create(crate::NewHandoff::new(task, "Called from async code").to_agent(task))
            .unwrap();
        let claim = store.claim_next(task, None, lease).unwrap().unwrap();
        assert_eq!(claim.handoff_id(), created.id);
        store.complete(&claim, "done").unwrap();
        // A wait listens on a connection of its own.
        let nothing = store
            .claim_next_wait(task, None, lease, std::time::Duration::from_millis(50))
            .unwrap();
        assert!(nothing.is_none());
    }
    for multi in [false, true] {
        let mut builder = if multi {
            tokio::runtime::Builder::new_multi_thread()
        } else {
            tokio::runtime::Builder::new_current_thread()
        };
        let runtime = builder.enable_all().build().unwrap();
        let tag = if multi { "multi" } else { "current" };
        let (a, b) = (Arc::clone(&store), Arc::clone(&store));
        runtime.block_on(async move {
            lifecycle(&a, &format!("{tag}-block-on"));
            tokio::spawn(async move { lifecycle(&b, &format!("{tag}-task")) })
                .await
                .unwrap();
        });
        let c = Arc::clone(&store);
        let blocking = runtime.spawn_blocking(move || lifecycle(&c, &format!("{tag}-blocking")));
        runtime.block_on(blocking).unwrap();
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move { drop(store) });
}

/// Writers number their events without waiting for one another, so one can commit a
/// larger `seq` before another commits a smaller one: a reader following the log must
/// not hand out the larger one first (its cursor would then skip the smaller for good).
#[test]
fn a_cursor_never_skips_an_event_that_commits_late() {
    let Ok(url) = std::env::var("HANDOFF_TEST_POSTGRES") else {
        return;
    };
    let schema = Schema::fresh(&url);
    let backend = PostgresBackend::connect(&schema.store_url(), &Default::default()).unwrap();
    let event_lock = backend.lock_key(super::EVENT_LOCK);
    let store = Store::new(backend);
    let first = store.create(crate::NewHandoff::new("t", "first")).unwrap();
    let cursor = store.events(Some(&first.id)).unwrap()[0].seq;

    // A writer in flight: its event has its number and is not committed.
    let mut late = postgres::Client::connect(&schema.url, postgres::NoTls).unwrap();
    let mut tx = late.transaction().unwrap();
    tx.batch_execute(&format!("SET LOCAL search_path TO \"{}\"", schema.name))
        .unwrap();
    tx.execute("SELECT pg_advisory_xact_lock_shared($1)", &[&event_lock])
        .unwrap();
    tx.execute(
        "INSERT INTO events (handoff_id, at, actor, kind, detail) \
         SELECT handoff_id, at, actor, kind, detail FROM events WHERE handoff_id = $1",
        &[&first.id],
    )
    .unwrap();
    // Another commits after it, with a larger number.
    let second = store.create(crate::NewHandoff::new("t", "second")).unwrap();

    let page = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            store.events_page(&crate::EventFilter {
                after: Some(cursor),
                ..Default::default()
            })
        });
        std::thread::sleep(std::time::Duration::from_millis(300));
        tx.commit().unwrap();
        reader.join().unwrap().unwrap()
    });
    let ids: Vec<&str> = page.iter().map(|e| e.handoff_id.as_str()).collect();
    assert_eq!(ids, [first.id.as_str(), second.id.as_str()], "{page:?}");
    assert!(page[0].seq < page[1].seq);
}

/// A claim reads the task's path after taking its lock, so a change another transaction
/// made to the path while holding the lock is seen: here the parent's claim by `w` makes
/// `w` taking the child a revisit, which the default policy refuses.
#[test]
fn a_claim_sees_the_path_as_the_lock_holder_left_it() {
    let Some((store, schema)) = store() else {
        return;
    };
    let parent = store
        .create(crate::NewHandoff::new("t", "parent").from_agent("a"))
        .unwrap();
    let child = store
        .create(
            crate::NewHandoff::new("t", "child")
                .from_agent("b")
                .parent_id(&parent.id),
        )
        .unwrap();

    // Another writer holds the path and gives the parent to `w`.
    let mut other = postgres::Client::connect(&schema.url, postgres::NoTls).unwrap();
    let mut tx = other.transaction().unwrap();
    tx.batch_execute(&format!("SET LOCAL search_path TO \"{}\"", schema.name))
        .unwrap();
    let path_lock = store_lock_base(&schema) >> 8;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, hashtext('t'))",
        &[&(path_lock as i32)],
    )
    .unwrap();
    tx.execute(
        "UPDATE handoffs SET status = 'claimed', claimed_by = 'w' WHERE id = $1",
        &[&parent.id],
    )
    .unwrap();

    let claimed = std::thread::scope(|scope| {
        let claimer =
            scope.spawn(|| store.claim_next("w", None, std::time::Duration::from_secs(60)));
        std::thread::sleep(std::time::Duration::from_millis(300));
        tx.commit().unwrap();
        claimer.join().unwrap().unwrap()
    });
    assert!(claimed.is_none(), "{claimed:?}");
    assert_eq!(store.get(&child.id).unwrap().status, crate::Status::Pending);
}

/// A session (a process stopped inside its transaction, say) that holds every record's
/// lock and the event log's end, until it rolls back.
fn stuck_session(schema: &Schema) -> postgres::Client {
    let mut stuck = postgres::Client::connect(&schema.url, postgres::NoTls).unwrap();
    stuck
        .batch_execute(&format!(
            "BEGIN; SET LOCAL search_path TO \"{}\"; \
             SELECT 1 FROM handoffs FOR UPDATE; \
             SELECT pg_advisory_xact_lock_shared({})",
            schema.name,
            store_lock_base(schema) | super::EVENT_LOCK
        ))
        .unwrap();
    stuck
}

/// With a stuck session holding every lock, a claim and a read of the log through `other`
/// (a second store on the same schema) each fail as `check` expects, changing nothing;
/// once the session rolls back, the same calls succeed.
fn stuck_then_freed(
    store: &crate::Store,
    schema: &Schema,
    other: &crate::Store,
    check: impl Fn(&crate::Error),
) {
    let h = store.create(crate::NewHandoff::new("t", "g")).unwrap();
    let lease = std::time::Duration::from_secs(60);
    let mut stuck = stuck_session(schema);
    let before = store.get(&h.id).unwrap();
    check(&other.claim(&h.id, "w", lease).unwrap_err());
    check(&other.events(None).unwrap_err());
    assert_eq!(store.get(&h.id).unwrap(), before);

    stuck.batch_execute("ROLLBACK").unwrap();
    assert!(other.claim(&h.id, "w", lease).is_ok());
    assert_eq!(other.events(None).unwrap().len(), 2);
}

/// A session that holds a record's lock (a process stopped inside its transaction) delays
/// a writer of that record, and a reader of the log, at most the store's lock patience:
/// then `Busy`, with nothing changed; once the lock is gone the same calls succeed.
#[test]
fn a_stuck_session_makes_others_busy_not_hung() {
    let Some((store, schema)) = store() else {
        return;
    };
    let options = crate::ConnectOptions {
        lock_patience: std::time::Duration::from_millis(300),
        ..Default::default()
    };
    let patient = crate::Store::connect_with(&schema.store_url(), &options).unwrap();
    stuck_then_freed(&store, &schema, &patient, |err| {
        assert_eq!(err.kind(), crate::ErrorKind::Busy, "{err}");
    });
}

/// A call the server does not answer (its process stopped, its disk hung: the socket stays
/// open and the kernel keeps acknowledging, so no TCP limit ends the wait) gives up after
/// the URL's `reply_timeout` with a storage error naming it, and closes its connection;
/// the store's next call, on a new connection, succeeds. Here a session holding the
/// locks, with the store's lock patience far longer, stands in for the silent server.
#[test]
fn a_call_gives_up_after_the_reply_timeout_and_the_next_recovers() {
    let Some((store, schema)) = store() else {
        return;
    };
    let impatient =
        crate::Store::connect(&schema.url_on(&schema.url, "&reply_timeout=0.3")).unwrap();
    stuck_then_freed(&store, &schema, &impatient, |err| {
        assert_eq!(err.kind(), crate::ErrorKind::Storage, "{err}");
        assert!(err.to_string().contains("reply_timeout"), "{err}");
    });
}

/// `pool_size` bounds the connections a store opens: with one, a read made while a
/// claim holds it (waiting on a stuck session's lock until its reply timeout) waits for
/// that connection instead of opening a second, so it ends after the claim.
#[test]
fn a_store_opens_no_more_connections_than_its_pool_size() {
    let Some((store, schema)) = store() else {
        return;
    };
    let h = store.create(crate::NewHandoff::new("t", "g")).unwrap();
    let name = format!("hc_pool_{:08x}", fastrand::u32(..));
    let url = schema.url_on(
        &schema.url,
        &format!("&reply_timeout=1&application_name={name}"),
    );
    let options = crate::ConnectOptions {
        pool_size: 1,
        lock_patience: std::time::Duration::from_secs(60),
        ..Default::default()
    };
    let small = crate::Store::connect_with(&url, &options).unwrap();
    let mut stuck = stuck_session(&schema);
    let mut watch = postgres::Client::connect(&schema.url, postgres::NoTls).unwrap();
    let (done, finished) = std::sync::mpsc::channel();
    let (small, id) = (&small, h.id.as_str());
    std::thread::scope(|scope| {
        let claim_done = done.clone();
        scope.spawn(move || {
            let claim = small.claim(id, "w", std::time::Duration::from_secs(60));
            claim_done.send(("claim", claim.is_ok())).unwrap();
        });
        // Once the claim waits on the lock, its connection is the pool's only one.
        let started = std::time::Instant::now();
        while watch
            .query_one(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE application_name = $1 AND wait_event_type = 'Lock'",
                &[&name],
            )
            .unwrap()
            .get::<_, i64>(0)
            == 0
        {
            assert!(started.elapsed() < std::time::Duration::from_secs(60));
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        scope.spawn(move || {
            let read = small.get(id);
            done.send(("read", read.is_ok())).unwrap();
        });
        assert_eq!(finished.recv().unwrap(), ("claim", false));
        assert_eq!(finished.recv().unwrap(), ("read", true));
    });
    stuck.batch_execute("ROLLBACK").unwrap();
    assert!(
        small
            .claim(&h.id, "w", std::time::Duration::from_secs(60))
            .is_ok()
    );
}

/// A claim looks at the oldest few open records first: when other claimers hold every
/// one of them, it looks further instead of answering that there is nothing to claim,
/// through `claim_next` (one statement with the lapsed leases) and on its own (after the
/// chain policy skipped a record).
#[test]
fn a_claim_finds_work_past_every_candidate_others_hold() {
    let Some((store, schema)) = store() else {
        return;
    };
    let news =
        (0..super::sql::CANDIDATES[0] + 2).map(|i| crate::NewHandoff::new(format!("t{i}"), "g"));
    let created = store.create_many(news.collect()).unwrap();
    let mut other = postgres::Client::connect(&schema.url, postgres::NoTls).unwrap();
    let mut tx = other.transaction().unwrap();
    tx.batch_execute(&format!(
        "SET LOCAL search_path TO \"{}\"; \
         SELECT 1 FROM handoffs ORDER BY pos LIMIT {} FOR UPDATE",
        schema.name,
        super::sql::CANDIDATES[0]
    ))
    .unwrap();
    let lease = std::time::Duration::from_secs(60);
    let first = store.claim_next("w", None, lease).unwrap().unwrap();
    assert_eq!(first.handoff.id, created[super::sql::CANDIDATES[0]].id);
    // `next_claimable` on its own, as a claim calls it after the policy refused a record.
    let mut found = None;
    store
        .backend
        .write(&mut |tx| {
            found = tx.next_claimable("w", None, chrono::Utc::now(), None)?;
            Ok(())
        })
        .unwrap();
    assert_eq!(
        found.map(|h| h.id),
        Some(created[super::sql::CANDIDATES[0] + 1].id.clone())
    );
    tx.rollback().unwrap();
    assert_eq!(
        store
            .claim_next("w", None, lease)
            .unwrap()
            .unwrap()
            .handoff
            .id,
        created[0].id
    );
}

/// A claim reads due records only when its probe finds one; when other claimers hold
/// every due record (to settle it), it takes the open work instead of answering that
/// there is nothing, and the next claim settles and takes the lapsed record first.
#[test]
fn a_claim_takes_open_work_while_others_settle_the_lapsed() {
    let Some((store, schema)) = store() else {
        return;
    };
    let clock = std::sync::Arc::new(crate::clock::ManualClock::at_epoch());
    let store = store.with_clock(clock.clone());
    let lapsing = store.create(crate::NewHandoff::new("t1", "g")).unwrap();
    let open = store.create(crate::NewHandoff::new("t2", "g")).unwrap();
    let lease = std::time::Duration::from_secs(60);
    let held = store.claim_next("w", None, lease).unwrap().unwrap();
    assert_eq!(held.handoff.id, lapsing.id);
    clock.advance(std::time::Duration::from_secs(61));

    let mut other = postgres::Client::connect(&schema.url, postgres::NoTls).unwrap();
    let mut tx = other.transaction().unwrap();
    tx.batch_execute(&format!(
        "SET LOCAL search_path TO \"{}\"; \
         SELECT 1 FROM handoffs WHERE id = '{}' FOR UPDATE",
        schema.name, lapsing.id
    ))
    .unwrap();
    let taken = store.claim_next("v", None, lease).unwrap().unwrap();
    assert_eq!(taken.handoff.id, open.id);
    tx.rollback().unwrap();

    let retaken = store.claim_next("v", None, lease).unwrap().unwrap();
    assert_eq!(retaken.handoff.id, lapsing.id);
    assert_eq!(
        retaken.handoff.attempts, 1,
        "the lapsed lease was settled first"
    );
}

/// The advisory-lock namespace of the store on `schema`.
fn store_lock_base(schema: &Schema) -> i64 {
    PostgresBackend::connect(&schema.store_url(), &Default::default())
        .unwrap()
        .lock_base
}

/// Several hosts are tried in order, as libpq tries them: a first one that refuses
/// (here a port nothing listens on) leaves the store on the next, which a primary/standby
/// pair relies on with `target_session_attrs=read-write`.
#[test]
fn a_url_with_several_hosts_reaches_the_one_that_answers() {
    let Some((store, schema)) = store() else {
        return;
    };
    let h = store.create(crate::NewHandoff::new("t", "g")).unwrap();
    let url = schema.url_on(&schema.url, "&target_session_attrs=read-write");
    let (scheme, rest) = url.split_once("://").unwrap();
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (user, hosts) = match authority.rsplit_once('@') {
        Some((user, hosts)) => (format!("{user}@"), hosts),
        None => (String::new(), authority),
    };
    let several = format!("{scheme}://{user}127.0.0.1:1,{hosts}/{path}");
    let other = crate::Store::connect(&several).unwrap();
    assert_eq!(other.get(&h.id).unwrap(), h);
}

#[test]
fn schemas_keep_stores_apart_and_connect_reads_the_url() {
    let (Some((a, _one)), Some((b, _two))) = (store(), store()) else {
        return;
    };
    a.create(crate::NewHandoff::new("t", "only in a")).unwrap();
    assert_eq!(a.list(&Default::default()).unwrap().len(), 1);
    assert!(b.list(&Default::default()).unwrap().is_empty());

    let schema = Schema::fresh(&std::env::var("HANDOFF_TEST_POSTGRES").unwrap());
    let store = Store::connect(&schema.store_url()).unwrap();
    store
        .create(crate::NewHandoff::new("t", "via connect"))
        .unwrap();
    let again = Store::connect(&schema.store_url()).unwrap();
    assert_eq!(
        again.list(&Default::default()).unwrap()[0].goal,
        "via connect"
    );
}
