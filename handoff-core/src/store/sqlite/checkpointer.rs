//! Checkpoints off the commit path.
//!
//! In WAL mode SQLite copies the log back into the database (a checkpoint: the pages, then an
//! `fsync` of each file) inside whichever commit finds the log past 1,000 pages, so one write in
//! a hundred or so waits for all of that. Here the writer's commits only count the log's pages,
//! and a thread of the store's own copies them on a connection of its own while writes go on.
//!
//! The log starts again from its beginning only once every page in it has been copied, and
//! the commits made during the thread's copy leave a few pages behind. So once the thread has
//! copied the bulk, the next commit that finds no more than [`TAIL_PAGES`] left copies them
//! itself, and the log restarts. Should the thread fall behind (a long read keeps it from
//! finishing, say), a commit that finds the log at [`INLINE_PAGES`] checkpoints itself, as
//! SQLite would have, so the log stays bounded whatever happens to the thread.

use std::ffi::c_int;
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use rusqlite::Connection;
use rusqlite::config::DbConfig;
use rusqlite::hooks::Wal;
use rusqlite::wal::CheckpointMode;

use crate::error::{Error, Result};

/// Log pages after which a commit asks the thread for a checkpoint (SQLite's own threshold).
const BACKGROUND_PAGES: c_int = 1_000;
/// Log pages after which a commit checkpoints itself.
const INLINE_PAGES: c_int = 4 * BACKGROUND_PAGES;
/// The most pages a commit copies itself after the thread has copied the ones before them.
const TAIL_PAGES: c_int = 100;

/// The store's checkpointing thread; dropping it ends the thread and waits for it.
#[derive(Debug)]
pub(super) struct Checkpointer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// The process that started the thread: a child forked from it has no such thread.
    owner: u32,
}

/// What the thread and the writer's commits share.
#[derive(Debug, Default)]
struct Shared {
    /// How many of the log's pages the thread's latest checkpoint left copied; 0 when it has
    /// not finished one since the log last restarted.
    copied: AtomicI32,
    asks: Mutex<Asks>,
    asked: Condvar,
}

/// What the thread has been asked to do and not done yet.
#[derive(Debug, Default)]
struct Asks {
    checkpoint: bool,
    stop: bool,
}

impl Shared {
    fn asks(&self) -> MutexGuard<'_, Asks> {
        self.asks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn ask(&self, what: impl FnOnce(&mut Asks)) {
        what(&mut self.asks());
        self.asked.notify_one();
    }
}

impl Checkpointer {
    /// Starts the thread on a new connection to the database at `path` and makes `writer`'s
    /// commits hand their checkpoints to it.
    pub(super) fn start(path: &Path, writer: &mut Connection) -> Result<Checkpointer> {
        let conn = super::connect(path, false)?;
        // A connection learns that the file is in WAL mode when it first reads it; until then
        // it has no log to checkpoint.
        conn.query_row("PRAGMA schema_version", [], |_| Ok(()))
            .map_err(|e| super::storage("cannot start the checkpoint connection", e))?;
        // It closes last; closing leaves the files as the store's other connections did
        // before it existed (the reader, read-only, cannot fold the log in), so that a
        // read-only open afterwards finds the log it needs and creates nothing.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
            .map_err(|e| super::storage("cannot start the checkpoint connection", e))?;
        let shared = Arc::new(Shared::default());
        let thread = std::thread::Builder::new()
            .name("handoff-sqlite-checkpoint".into())
            .spawn({
                let shared = Arc::clone(&shared);
                move || checkpoint_when_asked(&conn, &shared)
            })
            .map_err(|e| Error::storage(format!("cannot start the checkpoint thread: {e}")))?;
        let owner = std::process::id();
        let hook = Arc::clone(&shared);
        writer
            .wal_hook(Some(move |wal: &mut Wal, pages: c_int| {
                if pages < BACKGROUND_PAGES {
                    hook.copied.store(0, Ordering::Relaxed); // the log has restarted
                    return Ok(());
                }
                let behind = pages - hook.copied.load(Ordering::Relaxed);
                if pages >= INLINE_PAGES || behind <= TAIL_PAGES || std::process::id() != owner {
                    hook.copied.store(0, Ordering::Relaxed);
                    // What the hook returns becomes the commit's result, though the commit is
                    // made: a checkpoint that cannot run now (another one is) is no error.
                    let _ = wal.checkpoint();
                } else {
                    hook.ask(|asks| asks.checkpoint = true);
                }
                Ok(())
            }))
            .map_err(|e| super::storage("cannot install the checkpoint hook", e))?;
        Ok(Checkpointer {
            shared,
            thread: Some(thread),
            owner,
        })
    }
}

/// The thread's loop. A checkpoint that fails (another process is checkpointing, the disk is
/// full) is left to the next request: the commits that asked have been made durable by the log.
fn checkpoint_when_asked(conn: &Connection, shared: &Shared) {
    loop {
        {
            let mut asks = shared.asks();
            while !asks.checkpoint && !asks.stop {
                asks = shared
                    .asked
                    .wait(asks)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if asks.stop {
                return;
            }
        }
        // PASSIVE never waits for readers or writers: it copies what no reader still needs.
        if let Ok((_, done)) = conn.wal_checkpoint_v2(None::<&str>, CheckpointMode::PASSIVE) {
            shared.copied.store(done, Ordering::Relaxed);
        }
        // The requests made during that checkpoint are the tail's to serve: another
        // checkpoint here now would hold the lock the tail's needs.
        shared.asks().checkpoint = false;
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.shared.ask(|asks| asks.stop = true);
        if let Some(thread) = self
            .thread
            .take()
            .filter(|_| std::process::id() == self.owner)
        {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    use super::{BACKGROUND_PAGES, INLINE_PAGES};
    use crate::{NewHandoff, Store};

    /// Pages in the log now, from its size (a 32-byte header, then a 24-byte header per page).
    fn log_pages(db: &Path) -> u64 {
        let wal = db.with_extension("db-wal");
        std::fs::metadata(wal).map_or(0, |m| m.len().saturating_sub(32) / (4096 + 24))
    }

    fn file_len(path: &Path) -> u64 {
        std::fs::metadata(path).map_or(0, |m| m.len())
    }

    /// A new file store, its path, and the folder that holds them.
    fn fresh_store() -> (Store, PathBuf, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("handoff.db");
        (Store::open(&db).unwrap(), db, dir)
    }

    fn create(store: &Store, n: usize) {
        let goal = format!("work item {n} {}", "x".repeat(3_000));
        store.create(NewHandoff::new("t", goal)).unwrap();
    }

    #[test]
    fn the_thread_copies_the_log_while_no_commit_does() {
        let (store, db, _dir) = fresh_store();
        let empty = file_len(&db);
        let mut n = 0;
        // Past the thread's threshold, far below the one where a commit checkpoints itself.
        while log_pages(&db) <= BACKGROUND_PAGES as u64 {
            n += 1;
            create(&store, n);
        }
        assert!(log_pages(&db) < INLINE_PAGES as u64 / 2);
        // Nothing is written from here on, and in WAL mode only a checkpoint writes to the
        // database file: only the thread can make it grow.
        let deadline = Instant::now() + Duration::from_secs(60);
        while file_len(&db) <= empty {
            assert!(
                Instant::now() < deadline,
                "no checkpoint came from the thread"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(store.list(&Default::default()).unwrap().len(), n);
    }

    #[test]
    fn the_log_stays_bounded() {
        let (store, db, _dir) = fresh_store();
        // About three pages each: several times what the log may hold. The file is reused
        // from its start when the log starts again, so its size is the most it ever held.
        for n in 0..5_000 {
            create(&store, n);
        }
        let most = log_pages(&db);
        // A commit that finds the log at the limit checkpoints; the few after it may find the
        // thread's checkpoint running and try again.
        assert!(
            most <= (INLINE_PAGES + BACKGROUND_PAGES / 2) as u64,
            "the log grew to {most} pages"
        );
    }

    #[test]
    fn a_store_closes_while_its_thread_is_asked_and_busy() {
        for _ in 0..10 {
            let (store, _db, _dir) = fresh_store();
            // About three pages each: past the threshold, each commit asks again, mostly while
            // the thread is copying.
            for n in 0..400 {
                create(&store, n);
            }
            let (closed, is_closed) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                drop(store);
                let _ = closed.send(());
            });
            is_closed
                .recv_timeout(Duration::from_secs(60))
                .expect("the store's drop waited for a thread that never ended");
        }
    }

    #[test]
    fn closing_the_store_keeps_everything() {
        let (store, db, _dir) = fresh_store();
        for n in 0..300 {
            create(&store, n);
        }
        drop(store);
        assert_eq!(
            Store::open(&db)
                .unwrap()
                .list(&Default::default())
                .unwrap()
                .len(),
            300
        );
    }
}
