//! Fair, fast and bounded hand-over of the write lock between processes, for the stores kept
//! in files (SQLite, JSON files).
//!
//! SQLite's write lock has no queue: a waiting process can only poll, so either it sleeps
//! long and a busy process keeps winning (starvation), or it polls often and burns the CPU the
//! lock holder needs. Writers therefore first take an exclusive `flock` on a sidecar file
//! (`<db>-lock`): the kernel wakes a waiter the moment the holder lets go, and the holder, busy
//! returning its result, rarely gets back in first. The SQLite lock is still taken (and
//! contention with writers that do not use the turnstile, such as the `sqlite3` shell, is
//! still retried).
//!
//! A process that dies releases its `flock` with its file descriptors, but one that is stopped
//! (SIGSTOP, a debugger, a paused container) keeps it. So a wait is bounded: when the lock is
//! taken, a helper thread waits for it on a description of its own, and the writer gives up at
//! its deadline; a wait given up finishes on its own and lets the lock go at once. Where the
//! file system has no `flock` the turnstile is skipped.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Instant;

/// The sidecar lock file of one store.
#[derive(Debug)]
pub(crate) struct Turnstile {
    path: PathBuf,
    file: File,
}

/// Holding the turnstile; leaving it lets the next writer in.
pub(crate) enum Turn<'a> {
    /// Taken on the turnstile's own descriptor, without waiting.
    Shared(&'a File),
    /// Taken by a helper thread on a descriptor of its own, after waiting.
    Own(File),
    /// The file system has no `flock`: writers rely on SQLite's lock alone.
    Skipped,
}

/// The turnstile stayed taken until the deadline.
#[derive(Debug)]
pub(crate) struct Busy;

/// Opens `path` for writing, creating it readable and writable by its owner only: a store's
/// files hold every secret its callers wrote.
pub(crate) fn private_file(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

impl Turnstile {
    /// The turnstile of the store file `db` (`<db>-lock`), created (owner-only) if missing;
    /// `None` when it cannot be (then writers rely on SQLite's lock alone).
    #[cfg(feature = "sqlite")]
    pub(crate) fn open(db: &Path) -> Option<Turnstile> {
        let mut path = db.as_os_str().to_owned();
        path.push("-lock");
        Turnstile::at(PathBuf::from(path)).ok()
    }

    /// The turnstile whose lock file is `path`, created (owner-only) if missing.
    pub(crate) fn at(path: PathBuf) -> std::io::Result<Turnstile> {
        let file = private_file(&path)?;
        Ok(Turnstile { path, file })
    }

    /// Waits for the turnstile until `deadline` (`None`: as long as it takes).
    pub(crate) fn enter(&self, deadline: Option<Instant>) -> Result<Turn<'_>, Busy> {
        match self.file.try_lock() {
            Ok(()) => return Ok(Turn::Shared(&self.file)),
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(_)) => return Ok(Turn::Skipped),
        }
        let Some(deadline) = deadline else {
            return Ok(match self.file.lock() {
                Ok(()) => Turn::Shared(&self.file),
                Err(_) => Turn::Skipped,
            });
        };
        // A fresh description: a lock taken on it after the writer gave up belongs to the
        // helper alone, which lets it go as soon as it has it.
        let Ok(waiter) = OpenOptions::new().write(true).open(&self.path) else {
            return Ok(Turn::Skipped);
        };
        let (send, receive) = mpsc::sync_channel(1);
        let spawned = std::thread::Builder::new()
            .name("handoff-turnstile".into())
            .spawn(move || {
                if waiter.lock().is_ok() {
                    // When the writer is gone the file is dropped here, which unlocks it.
                    let _ = send.send(waiter);
                }
            });
        if spawned.is_err() {
            return Err(Busy);
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        receive.recv_timeout(wait).map(Turn::Own).map_err(|_| Busy)
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        match self {
            // Closing would release it too; unlocking keeps the descriptor for reuse.
            Turn::Shared(file) => {
                let _ = file.unlock();
            }
            Turn::Own(file) => {
                let _ = file.unlock();
            }
            Turn::Skipped => {}
        }
    }
}
