//! What an operator meets (docs/design.md §14): private files, foreign and read-only files left as they
//! are, opens and reads that never wait for a writer, and writers that wait at most their
//! `lock_patience` for one that is stopped.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use handoff_core::{Error, ErrorKind, ListFilter, NewHandoff, SqliteOptions, Store, Synchronous};

fn patience(millis: u64) -> SqliteOptions {
    SqliteOptions {
        synchronous: Synchronous::Normal,
        lock_patience: Duration::from_millis(millis),
    }
}

/// Holds `<db>-lock` the way a writer stopped inside a write does.
fn hold_turnstile(db: &Path) -> std::fs::File {
    let mut path = db.as_os_str().to_owned();
    path.push("-lock");
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.lock().unwrap();
    file
}

#[cfg(unix)]
#[test]
fn store_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let store = Store::open(&db).unwrap();
    store.create(NewHandoff::new("t", "g")).unwrap();
    for suffix in ["", "-wal", "-shm", "-lock"] {
        let mut path = db.as_os_str().to_owned();
        path.push(suffix);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{suffix}: {mode:o}");
    }
}

#[test]
fn a_foreign_database_is_refused_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("app.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine');")
        .unwrap();
    drop(conn);
    let before = std::fs::read(&db).unwrap();
    let err = Store::open(&db).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Storage, "{err}");
    assert!(err.to_string().contains("another application"), "{err}");
    assert_eq!(std::fs::read(&db).unwrap(), before, "the file changed");
    let mode: String = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "delete", "the foreign file was switched to WAL");
    assert!(!dir.path().join("app.db-lock").exists());
}

#[test]
fn read_only_opens_read_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let err = Store::open_read_only(&empty, &SqliteOptions::default()).unwrap_err();
    assert!(err.to_string().contains("empty"), "{err}");
    assert_eq!(
        std::fs::metadata(&empty).unwrap().len(),
        0,
        "an empty file became a store"
    );
    assert!(
        Store::open_read_only(dir.path().join("missing.db"), &SqliteOptions::default()).is_err()
    );
    assert!(!dir.path().join("missing.db").exists());

    let db = dir.path().join("h.db");
    let h = Store::open(&db)
        .unwrap()
        .create(NewHandoff::new("t", "g"))
        .unwrap();
    let reader = Store::open_read_only(&db, &SqliteOptions::default()).unwrap();
    assert_eq!(reader.get(&h.id).unwrap(), h);
    assert_eq!(reader.list(&ListFilter::default()).unwrap().len(), 1);
    let refused = reader.create(NewHandoff::new("t", "g2")).unwrap_err();
    assert!(refused.to_string().contains("read-only"), "{refused}");
}

/// Opening a current store takes no write lock, and reads never wait for a writer: both work
/// while another process holds the write lock (here a plain SQLite connection, and the
/// turnstile, as a stopped writer would).
#[test]
fn opens_and_reads_do_not_wait_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let h = Store::open(&db)
        .unwrap()
        .create(NewHandoff::new("t", "g"))
        .unwrap();
    let holder = rusqlite::Connection::open(&db).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let _turn = hold_turnstile(&db);
    // An hour of patience: if opening or reading waited for the writer, the test would hang.
    let store = Store::open_with(&db, &patience(3_600_000)).unwrap();
    assert_eq!(store.get(&h.id).unwrap(), h);
    assert_eq!(store.list(&ListFilter::default()).unwrap().len(), 1);
    assert_eq!(store.events(Some(&h.id)).unwrap().len(), 1);
    assert_eq!(store.chain("t").unwrap().hops.len(), 1);
}

/// A writer stopped while it holds the turnstile delays another at most its patience, which
/// then gets a typed `Busy` (not a corruption report), with nothing changed.
#[test]
fn a_stuck_writer_makes_others_busy_not_hung() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let store = Store::open_with(&db, &patience(300)).unwrap();
    store.create(NewHandoff::new("t", "before")).unwrap();
    let turn = hold_turnstile(&db);
    let err = store.create(NewHandoff::new("t", "g")).unwrap_err();
    assert!(matches!(err, Error::Busy { .. }), "{err}");
    assert_eq!(err.kind().code(), "BUSY");
    assert!(err.to_string().contains("not damaged"), "{err}");
    // A second store opened meanwhile can read, and fails its writes the same way.
    let other = Store::open_with(&db, &patience(300)).unwrap();
    assert_eq!(other.list(&ListFilter::default()).unwrap().len(), 1);
    assert_eq!(other.reap().unwrap_err().kind(), ErrorKind::Busy);
    drop(turn);
    store.create(NewHandoff::new("t", "after")).unwrap();
    assert_eq!(other.list(&ListFilter::default()).unwrap().len(), 2);
}

/// The SIGSTOP test: a writer process is frozen at random moments of a write loop (holding
/// the locks or not); meanwhile writers with a 2 s patience return or fail `Busy` within a
/// bound far above it, and readers keep reading. The bound catches hangs, not slowness.
#[cfg(unix)]
#[test]
fn writers_frozen_at_random_moments_never_hang_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let store = Store::open_with(&db, &patience(2_000)).unwrap();
    store.create(NewHandoff::new("t", "seed")).unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut writer = Command::new(exe)
        .args([
            "--exact",
            "frozen_writer_loop",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("HANDOFF_FROZEN_DB", &db)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = writer.id().to_string();
    let signal = |name: &str| {
        let ok = Command::new("kill")
            .args([name, &pid])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {name} failed");
    };
    let (mut busy, mut written) = (0, 0);
    for round in 0..6 {
        std::thread::sleep(Duration::from_millis(fastrand::u64(20..200)));
        signal("-STOP");
        for _ in 0..3 {
            let started = Instant::now();
            match store.create(NewHandoff::new("t", format!("round {round}"))) {
                Ok(_) => written += 1,
                Err(Error::Busy { .. }) => busy += 1,
                Err(other) => panic!("neither done nor busy: {other}"),
            }
            assert!(started.elapsed() < Duration::from_secs(30), "a write hung");
            let started = Instant::now();
            store
                .list(&ListFilter {
                    limit: Some(10),
                    ..ListFilter::default()
                })
                .unwrap();
            assert!(started.elapsed() < Duration::from_secs(30), "a read hung");
        }
        signal("-CONT");
    }
    writer.kill().unwrap();
    writer.wait().unwrap();
    assert_eq!(busy + written, 18);
    // Whatever the frozen writer left half done was rolled back: the file is intact.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

/// The process the SIGSTOP test freezes: writes as fast as it can until killed.
#[test]
fn frozen_writer_loop() {
    let Some(db) = std::env::var_os("HANDOFF_FROZEN_DB") else {
        return;
    };
    let store = Store::open_with(&db, &patience(3_600_000)).unwrap();
    loop {
        let _ = store.create(NewHandoff::new("t", "from the writer that gets frozen"));
    }
}

/// docs/design.md §3: the policy belongs to the store. Openers without their own apply the saved one.
#[test]
fn a_saved_policy_applies_to_every_opener() {
    use handoff_core::{ChainPolicy, Limits};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let loops = ChainPolicy {
        max_revisits: 1,
        ..ChainPolicy::default()
    };
    let strict = Limits {
        max_field_bytes: 100,
        ..Limits::default()
    };
    let owner = Store::open(&db)
        .unwrap()
        .with_policy(loops.clone())
        .with_limits(strict.clone());
    assert!(owner.saved_policy().unwrap().is_none());
    owner.save_policy().unwrap();

    let other = Store::open(&db).unwrap();
    assert_eq!(other.policy(), &loops);
    assert_eq!(other.limits(), &strict);
    assert_eq!(other.saved_policy().unwrap(), Some((loops.clone(), strict)));
    // manager → worker → manager is a revisit the saved policy allows.
    let a = other
        .create(
            NewHandoff::new("t", "g")
                .from_agent("manager")
                .to_agent("worker"),
        )
        .unwrap();
    other
        .create(
            NewHandoff::new("t", "g")
                .from_agent("worker")
                .to_agent("manager")
                .parent_id(a.id),
        )
        .unwrap();
    let long = other
        .create(NewHandoff::new("t", "x".repeat(200)))
        .unwrap_err();
    assert_eq!(long.kind(), ErrorKind::Validation);
    // Read-only openers apply it too; an opener with its own policy keeps its own.
    let reader = Store::open_read_only(&db, &SqliteOptions::default()).unwrap();
    assert_eq!(reader.policy(), &loops);
    let own = Store::open(&db)
        .unwrap()
        .with_policy(ChainPolicy::default());
    assert_eq!(own.policy(), &ChainPolicy::default());
}

/// docs/design.md §14: no limit can be raised past what every reader reads back.
#[test]
fn depth_limits_stop_where_readers_stop() {
    use handoff_core::{Limits, MAX_DEPTH};
    let deep = Limits {
        max_depth: 1_000_000,
        ..Limits::default()
    };
    let err = deep.check().unwrap_err();
    assert!(err.to_string().contains("max_depth"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let store = Store::open(&db).unwrap().with_limits(deep);
    assert_eq!(store.limits().max_depth, MAX_DEPTH);
    let nest = |levels: usize| {
        let mut value = serde_json::json!("leaf");
        for _ in 0..levels {
            value = serde_json::json!({ "k": value });
        }
        let mut metadata = handoff_core::Metadata::new();
        metadata.insert("m".into(), value);
        metadata
    };
    let refused = store
        .create(NewHandoff::new("t", "g").metadata(nest(300)))
        .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Validation);
    // The deepest record allowed is read back by every reader.
    let h = store
        .create(NewHandoff::new("t", "g").metadata(nest(MAX_DEPTH - 1)))
        .unwrap();
    let again = Store::open(&db).unwrap();
    assert_eq!(again.get(&h.id).unwrap(), h);
    assert_eq!(again.list(&ListFilter::default()).unwrap().len(), 1);
    assert_eq!(again.events(None).unwrap().len(), 1);
    assert_eq!(handoff_core::Handoff::from_json(&h.to_json()).unwrap(), h);
    assert!(
        again
            .claim_next("w", None, Duration::from_secs(60))
            .unwrap()
            .is_some()
    );
}

/// A backup is a consistent, private copy taken while the store is in use, and never
/// overwrites a file.
#[test]
fn backups_copy_a_store_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let store = Store::open(&db).unwrap();
    let h = store.create(NewHandoff::new("t", "g")).unwrap();
    let claim = store.claim(&h.id, "w", Duration::from_secs(60)).unwrap();
    let copy = dir.path().join("copy.backup");
    store.backup(&copy).unwrap();
    store.complete(&claim, "after the backup").unwrap();
    // The portable file restores into any empty store: here a new SQLite file.
    let restored = Store::open(dir.path().join("restored.db")).unwrap();
    restored.restore(&copy).unwrap();
    assert_eq!(restored.get(&h.id).unwrap(), claim.handoff);
    assert_eq!(restored.events(None).unwrap().len(), 2);
    // The claim secret's digest came along: the claimer can still settle on the copy.
    restored.complete(&claim, "on the copy").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let before = std::fs::read(&db).unwrap();
    let err = store.backup(&db).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Validation, "{err}");
    assert_eq!(std::fs::read(&db).unwrap(), before);
    // Every backend writes it, the memory store too.
    Store::memory().backup(dir.path().join("m.backup")).unwrap();
}
