//! The JSON-files backend (`files:DIR`): the seed's own storage, human-readable and
//! git-trackable, shared safely by the processes of one machine.
//!
//! ```text
//! DIR/handoffs/<id>.json   each record as it is now (claim secrets are never in it)
//! DIR/tasks/<task>/<id>.json  one hop of a task's chain (as the chain policy reads it) and
//!                          its place in the chain, so that a record's change rewrites its
//!                          hop alone; a store written before keeps a task's hops as one array
//!                          in DIR/tasks/<task>.json until a write to the task replaces it
//! DIR/pending.json         the index of open records (pending or claimed), in order, with
//!                          what claiming needs; and the next event's seq
//! DIR/events.jsonl         the event log, one event per line
//! DIR/settings.json        store-wide settings (the saved chain policy)
//! DIR/docs/<kind>/<key>.json  versioned documents (a task, one of its steps); a key's `/`
//!                          separates folders, and every part follows the id rule
//! DIR/journal.json         only between the two steps of a write (see below)
//! DIR/.lock                the cross-process lock (the same fair turnstile as SQLite's)
//! ```
//!
//! Ids and task ids are checked by the core before they name a file, and their rule (letters,
//! digits, `._:@-`, not only dots) keeps them inside `DIR`.
//!
//! A write is atomic across files with a redo journal: every file the transaction changes is
//! first written, whole, into `journal.json` (temporary file, fsync, rename, fsync of the
//! folder); then each file is replaced by the same steps and the events are appended; then the
//! journal is removed. A process killed at any point leaves either no journal (the write did
//! not happen, or finished) or a complete one, which the next process to take the lock applies
//! again before doing anything else. Reads take the lock too, so they never see half a write.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::turnstile::{Turn, Turnstile};
use super::{hex, unhex};
use crate::chain::Hop;
use crate::error::{Error, Result};
use crate::machine::{Change, Event, NewEvent};
use crate::record::{Handoff, Kind, Status};
use crate::store::backend::Watch;
use crate::store::{
    Backend, Capabilities, Doc, EventFilter, Exported, ListFilter, Synchronous, Tx, WorkSignal,
    hop_of,
};
use layout::{Place, io, replace, sync_dir};

mod check;
mod layout;

/// How long a call waits for another process's write before it fails with `Busy`.
const DEFAULT_LOCK_PATIENCE: Duration = Duration::from_secs(60);

/// An open record in `pending.json`: what claiming, lapsing and listing need without reading
/// the record.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct OpenEntry {
    id: String,
    task_id: String,
    kind: Kind,
    status: Status,
    to_agent: Option<String>,
    #[serde(with = "crate::clock::rfc3339::option")]
    expires_at: Option<DateTime<Utc>>,
    #[serde(with = "crate::clock::rfc3339::option")]
    lease_until: Option<DateTime<Utc>>,
    /// Claims take the highest first.
    #[serde(default, skip_serializing_if = "is_zero")]
    priority: i32,
    /// SHA-256 of the current claim's secret, in hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    claim_secret_sha256: Option<String>,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// A hop's file: the hop and its place in its task's chain.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct HopFile {
    pos: u64,
    #[serde(flatten)]
    hop: Hop,
}

/// A document's file: its key, version and body (embedded as JSON, so that it reads as such).
#[derive(Debug, Serialize, Deserialize)]
struct DocFile {
    key: String,
    version: u64,
    body: Box<RawValue>,
}

/// Where the document `key` of `kind` lives, relative to the store: refused unless every part
/// follows the id rule, so that no key names a file outside `DIR/docs`.
fn doc_path(kind: &str, key: &str) -> Result<String> {
    if !crate::validate::is_ident(kind) || !key.split('/').all(crate::validate::is_ident) {
        return Err(Error::storage(format!(
            "a files store keeps no document named {kind}/{key}: each part must be an id"
        )));
    }
    Ok(format!("docs/{kind}/{key}.json"))
}

/// `pending.json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Index {
    /// The `seq` the next event gets.
    next_seq: u64,
    /// The place the next hop gets in its task's chain (one count for every task: places
    /// only order the hops of one task).
    #[serde(default)]
    next_hop: u64,
    /// The open records, oldest first.
    open: Vec<OpenEntry>,
}

/// A write in progress: every file it replaces (path relative to the store, content), and the
/// event lines it appends after `events_len` bytes of the log. Contents are embedded as JSON,
/// not as strings, so that writing the journal costs no escaping.
#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    files: Vec<(String, Box<RawValue>)>,
    /// Files the write removes (relative paths).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    removed: Vec<String>,
    events_len: u64,
    events: Vec<Box<RawValue>>,
    /// Records the write removes (pruning): their event lines go too, by a rewrite of the
    /// whole log (see [`FilesBackend::rewrite_log`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    dropped: Vec<String>,
}

/// A store in a folder of JSON files.
#[derive(Debug)]
pub struct FilesBackend {
    dir: PathBuf,
    /// Whether each write is on disk before it returns, or only safe from a killed process.
    sync: Synchronous,
    /// How long a write waits for the lock before it fails with [`Error::Busy`].
    lock_patience: Duration,
    turnstile: Turnstile,
    /// Threads of this process take turns here first: a `flock` does not exclude the other
    /// threads holding the same file description.
    local: Mutex<()>,
}

/// A record as people read it: indented.
fn pretty(value: &impl Serialize) -> Result<Box<RawValue>> {
    let text = serde_json::to_string_pretty(value).map_err(|e| Error::storage(e.to_string()))?;
    RawValue::from_string(text).map_err(|e| Error::storage(e.to_string()))
}

/// An index as the store reads it: one line.
fn compact(value: &impl Serialize) -> Result<Box<RawValue>> {
    serde_json::value::to_raw_value(value).map_err(|e| Error::storage(e.to_string()))
}

/// Where the last line of a log of `len` bytes begins and its bytes, when it has no end
/// (`None` when the log ends with a newline).
fn torn_tail(log: &mut File, len: u64) -> std::io::Result<Option<(u64, Vec<u8>)>> {
    let mut last = [0u8];
    log.seek(SeekFrom::Start(len - 1))?;
    log.read_exact(&mut last)?;
    if last[0] == b'\n' {
        return Ok(None);
    }
    // Backwards, a block at a time, to the newline before it (or the log's start).
    let mut tail = Vec::new();
    let mut end = len;
    while end > 0 {
        let start = end.saturating_sub(64 * 1024);
        let mut block = vec![0u8; usize::try_from(end - start).unwrap_or(0)];
        log.seek(SeekFrom::Start(start))?;
        log.read_exact(&mut block)?;
        let newline = memchr::memrchr(b'\n', &block);
        block.extend_from_slice(&tail);
        tail = block;
        if let Some(at) = newline {
            let line = tail.split_off(at + 1);
            return Ok(Some((start + at as u64 + 1, line)));
        }
        end = start;
    }
    Ok(Some((0, tail)))
}

impl FilesBackend {
    /// Opens the store in `dir`, creating the folder and its layout if needed, and finishing a
    /// write that a killed process left half done. With [`Synchronous::Full`] every write is
    /// on disk (fsync of files and folders) before it returns; with `Normal` a write survives
    /// a killed process (renames are atomic) but a power loss may lose the last ones.
    pub fn open(dir: impl AsRef<Path>, sync: Synchronous) -> Result<FilesBackend> {
        FilesBackend::open_with(dir, sync, DEFAULT_LOCK_PATIENCE)
    }

    /// [`FilesBackend::open`], with how long a write waits for another process's lock before
    /// it fails with [`Error::Busy`].
    pub fn open_with(
        dir: impl AsRef<Path>,
        sync: Synchronous,
        lock_patience: Duration,
    ) -> Result<FilesBackend> {
        let dir = dir.as_ref().to_path_buf();
        for sub in [dir.clone(), dir.join("handoffs"), dir.join("tasks")] {
            fs::create_dir_all(&sub).map_err(|e| io("cannot create", &sub, e))?;
        }
        let turnstile = Turnstile::at(dir.join(".lock"))
            .map_err(|e| io("cannot create", &dir.join(".lock"), e))?;
        let backend = FilesBackend {
            dir,
            sync,
            lock_patience,
            turnstile,
            local: Mutex::new(()),
        };
        backend.locked(|_| Ok(()))?;
        Ok(backend)
    }

    /// Runs `op` holding the store's lock (threads, then processes), after recovering any
    /// write a killed process left half done.
    fn locked<T>(&self, op: impl FnOnce(&Self) -> Result<T>) -> Result<T> {
        self.exclusive(|store| {
            store.recover()?;
            op(store)
        })
    }

    /// Runs `op` holding the store's lock (threads, then processes), as it finds the files.
    fn exclusive<T>(&self, op: impl FnOnce(&Self) -> Result<T>) -> Result<T> {
        let deadline = Instant::now() + self.lock_patience;
        let _local = loop {
            match self.local.try_lock() {
                Ok(guard) => break guard,
                Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_micros(fastrand::u64(50..500)));
                }
                Err(std::sync::TryLockError::WouldBlock) => return Err(self.busy()),
            }
        };
        let turn = self
            .turnstile
            .enter(Some(deadline))
            .map_err(|_| self.busy())?;
        if matches!(turn, Turn::Skipped) {
            return Err(Error::storage(format!(
                "the file system of {} cannot lock files (flock): a files store needs it",
                self.dir.display()
            )));
        }
        op(self)
    }

    fn busy(&self) -> Error {
        Error::Busy {
            message: format!(
                "another process held the files store's lock for longer than {:?}; \
                 the store is not damaged, try again",
                self.lock_patience
            ),
        }
    }

    /// Where the layout's file `relative` is (see [`layout::resolve`]): refused when it is no
    /// file of the layout (an id read from a file that is not one) or a link is on the way.
    fn path(&self, relative: &str) -> Result<PathBuf> {
        layout::resolve(&self.dir, relative, "the store's files")
    }

    fn read_text(&self, relative: &str) -> Result<Option<String>> {
        layout::read(&self.path(relative)?)
    }

    fn read_json<T: for<'de> Deserialize<'de>>(&self, relative: &str) -> Result<Option<T>> {
        self.read_text(relative)?
            .map(|text| {
                serde_json::from_str(&text).map_err(|e| {
                    Error::storage(format!(
                        "corrupt {}: {e}; `handoff check --repair` moves it aside",
                        self.dir.join(relative).display()
                    ))
                })
            })
            .transpose()
    }

    fn index(&self) -> Result<Index> {
        Ok(self.read_json("pending.json")?.unwrap_or_default())
    }

    fn record(&self, id: &str) -> Result<Option<Handoff>> {
        self.read_json(&format!("handoffs/{id}.json"))
    }

    fn read_doc(&self, kind: &str, key: &str) -> Result<Option<Doc>> {
        Ok(self
            .read_json::<DocFile>(&doc_path(kind, key)?)?
            .map(|file| Doc {
                version: file.version,
                body: file.body.get().to_owned(),
            }))
    }

    /// Every key of `kind` (the files under `docs/<kind>`, folders walked), in no order.
    fn doc_keys(&self, kind: &str) -> Result<Vec<String>> {
        let root = self.dir.join("docs").join(kind);
        if !crate::validate::is_ident(kind) {
            return Ok(Vec::new());
        }
        let mut keys = Vec::new();
        let mut folders = vec![(root.clone(), String::new())];
        while let Some((folder, prefix)) = folders.pop() {
            let entries = match fs::read_dir(&folder) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io("cannot read", &folder, e)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| io("cannot read", &folder, e))?;
                let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                    continue;
                };
                let path = entry.path();
                let kind = entry.file_type().map_err(|e| io("cannot read", &path, e))?;
                if kind.is_symlink() {
                    return Err(layout::link(&path));
                } else if kind.is_dir() {
                    if crate::validate::is_ident(&name) {
                        folders.push((path, format!("{prefix}{name}/")));
                    }
                } else if let Some(stem) = name.strip_suffix(".json")
                    && crate::validate::is_ident(stem)
                {
                    keys.push(format!("{prefix}{stem}"));
                }
            }
        }
        Ok(keys)
    }

    fn task(&self, task_id: &str) -> Result<Vec<Hop>> {
        Ok(self
            .task_files(task_id)?
            .into_iter()
            .map(|file| file.hop)
            .collect())
    }

    /// A task's hops in chain order: its folder's files, or else the array a store written
    /// before per-hop files keeps (placed by their order in it).
    fn task_files(&self, task_id: &str) -> Result<Vec<HopFile>> {
        // Checked as the folder of one of its files is: never a link.
        self.path(&format!("tasks/{task_id}/{task_id}.json"))?;
        let folder = self.dir.join("tasks").join(task_id);
        let entries = match fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(self.legacy_task(task_id)?.unwrap_or_default());
            }
            Err(e) => return Err(io("cannot read", &folder, e)),
        };
        let mut files = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io("cannot read", &folder, e))?;
            // A `.tmp` left by a killed writer is not a hop.
            let Some(id) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .filter(|id| crate::validate::is_ident(id))
                .map(str::to_owned)
            else {
                continue;
            };
            if let Some(file) = self.read_json::<HopFile>(&format!("tasks/{task_id}/{id}.json"))? {
                files.push(file);
            }
        }
        files.sort_by_key(|file| file.pos);
        Ok(files)
    }

    /// A task's hops as a store written before per-hop files keeps them, if it does.
    fn legacy_task(&self, task_id: &str) -> Result<Option<Vec<HopFile>>> {
        Ok(self
            .read_json::<Vec<Hop>>(&format!("tasks/{task_id}.json"))?
            .map(|hops| {
                (0u64..)
                    .zip(hops)
                    .map(|(pos, hop)| HopFile { pos, hop })
                    .collect()
            }))
    }

    /// Applies a journal left by a killed writer, if there is one, once it is known to be one
    /// this store could have written: every path a file of the layout, and the event log as
    /// long as it says (or longer by part of what it appends, where the writer was killed
    /// while appending). Any other journal is refused and left as it is.
    fn recover(&self) -> Result<()> {
        if let Some(journal) = self.read_json::<Journal>("journal.json")? {
            // A journal that drops records rewrites the log whole, whatever a killed writer
            // left of it, so its length says nothing; the ids are compared, never paths.
            if journal.dropped.is_empty() {
                self.check_log(&journal)?;
            } else if let Some(id) = journal
                .dropped
                .iter()
                .find(|id| !crate::validate::is_ident(id))
            {
                return Err(layout::foreign(id, "journal.json"));
            }
            self.apply(&journal)?;
        }
        Ok(())
    }

    /// Whether the event log agrees with `journal` (see [`FilesBackend::recover`]).
    fn check_log(&self, journal: &Journal) -> Result<()> {
        let refuse = |why: String| {
            Err(Error::storage(format!(
                "{} was refused and left as it is: {why}; a killed writer leaves no such \
                 journal (`handoff check --repair` moves it aside)",
                self.dir.join("journal.json").display()
            )))
        };
        let path = self.path("events.jsonl")?;
        let len = self.log_len(&path)?;
        let appended: Vec<u8> = journal
            .events
            .iter()
            .flat_map(|line| line.get().bytes().chain([b'\n']))
            .collect();
        let at = journal.events_len;
        if at > len || len - at > appended.len() as u64 {
            return refuse(format!(
                "it appends to an event log of {at} bytes, and the log has {len}"
            ));
        }
        if len == 0 {
            return Ok(());
        }
        // The byte before `events_len` (a line's end) and what follows it.
        let from = at.saturating_sub(1);
        let mut tail = Vec::new();
        layout::open(&path, fs::OpenOptions::new().read(true))
            .and_then(|mut log| {
                log.seek(SeekFrom::Start(from))?;
                log.take(len - from).read_to_end(&mut tail)
            })
            .map_err(|e| io("cannot read", &path, e))?;
        let rest = match at {
            0 => &tail[..],
            _ if tail.first() == Some(&b'\n') => &tail[1..],
            _ => return refuse(format!("byte {at} of the event log does not end a line")),
        };
        if !appended.starts_with(rest) {
            return refuse(format!(
                "the event log goes on past byte {at} with lines the journal does not hold"
            ));
        }
        Ok(())
    }

    /// The second step of a write: replace the files, append the events, drop the journal.
    /// Running it twice gives the same result. Every path is checked before anything is
    /// written: a journal naming anything but the layout's data files changes nothing.
    fn apply(&self, journal: &Journal) -> Result<()> {
        let data = |relative: &String| match layout::place(relative) {
            Some(Place::Data) => layout::resolve(&self.dir, relative, "journal.json"),
            _ => Err(layout::foreign(relative, "journal.json")),
        };
        let files = journal
            .files
            .iter()
            .map(|(relative, content)| Ok((data(relative)?, content)))
            .collect::<Result<Vec<_>>>()?;
        let removed = journal
            .removed
            .iter()
            .map(data)
            .collect::<Result<Vec<_>>>()?;
        let mut folders: std::collections::BTreeSet<PathBuf> = ["handoffs", "tasks"]
            .iter()
            .map(|sub| self.dir.join(sub))
            .collect();
        for (path, content) in files {
            if let Some(folder) = path.parent()
                && folders.insert(folder.to_path_buf())
            {
                fs::create_dir_all(folder).map_err(|e| io("cannot create", folder, e))?;
            }
            replace(&path, content.get(), self.sync)?;
        }
        for path in removed {
            match fs::remove_file(&path) {
                Ok(()) => {
                    if let Some(folder) = path.parent() {
                        folders.insert(folder.to_path_buf());
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("cannot remove", &path, e)),
            }
        }
        for folder in &folders {
            sync_dir(folder, self.sync)?;
        }
        if !journal.dropped.is_empty() {
            self.rewrite_log(journal)?;
        } else if !journal.events.is_empty() {
            let path = self.path("events.jsonl")?;
            let mut log = layout::open_log(&path)?;
            // A killed writer may have appended part of its lines: cut back to where it began.
            log.set_len(journal.events_len)
                .and_then(|()| log.seek(SeekFrom::End(0)).map(drop))
                .and_then(|()| {
                    journal
                        .events
                        .iter()
                        .try_for_each(|line| writeln!(log, "{}", line.get()))
                })
                .and_then(|()| match self.sync {
                    Synchronous::Full => log.sync_all(),
                    Synchronous::Normal => Ok(()),
                })
                .map_err(|e| io("cannot append to", &path, e))?;
        }
        let path = self.path("journal.json")?;
        fs::remove_file(&path).or_else(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Ok(()),
            _ => Err(io("cannot remove", &path, e)),
        })?;
        sync_dir(&self.dir, self.sync)
    }

    /// The log without the events of the records `journal` drops, with the events it appends:
    /// written whole beside it and renamed over it. Running it again gives the same log: the
    /// journal's own events (numbered from its first) are taken out before they are added,
    /// and a torn last line is left out unless it is a whole event.
    fn rewrite_log(&self, journal: &Journal) -> Result<()> {
        let path = self.path("events.jsonl")?;
        let text = layout::read(&path)?.unwrap_or_default();
        let dropped: std::collections::HashSet<&str> =
            journal.dropped.iter().map(String::as_str).collect();
        let first_new = journal
            .events
            .first()
            .and_then(|line| serde_json::from_str::<Event>(line.get()).ok())
            .map(|event| event.seq);
        let mut kept = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            let whole = line.strip_suffix('\n');
            match serde_json::from_str::<Event>(whole.unwrap_or(line)) {
                Ok(event) => {
                    let gone = dropped.contains(event.handoff_id.as_str())
                        || first_new.is_some_and(|first| event.seq >= first);
                    if !gone {
                        kept.push_str(whole.unwrap_or(line));
                        kept.push('\n');
                    }
                }
                // Damage is kept for `handoff check` to report, unless it is a torn tail.
                Err(_) if whole.is_some() => kept.push_str(line),
                Err(_) => {}
            }
        }
        for line in &journal.events {
            kept.push_str(line.get());
            kept.push('\n');
        }
        replace(&path, &kept, self.sync)
    }

    /// The event log's length in bytes (0 when there is none).
    fn log_len(&self, path: &Path) -> Result<u64> {
        match fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => Err(layout::link(path)),
            Ok(meta) => Ok(meta.len()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(io("cannot read", path, e)),
        }
    }

    /// Where the next event line goes: the log's length, once a torn last line is mended.
    /// The store's own writes end every line (or leave a journal that does), so a last line
    /// without its end is damage from outside: a whole event that lost only its newline gets
    /// it back, anything else is cut away.
    fn events_len(&self) -> Result<u64> {
        let path = self.path("events.jsonl")?;
        let len = self.log_len(&path)?;
        if len == 0 {
            return Ok(0);
        }
        let mut log = layout::open_log(&path)?;
        let torn = torn_tail(&mut log, len).map_err(|e| io("cannot read", &path, e))?;
        let Some((start, line)) = torn else {
            return Ok(len);
        };
        if serde_json::from_slice::<Event>(&line).is_ok() {
            log.seek(SeekFrom::End(0))
                .and_then(|_| log.write_all(b"\n"))
                .map_err(|e| io("cannot append to", &path, e))?;
            Ok(len + 1)
        } else {
            log.set_len(start).map_err(|e| io("cannot cut", &path, e))?;
            Ok(start)
        }
    }

    /// Every event in the log, in order. A torn last line (see [`FilesBackend::events_len`])
    /// is read as the next write will leave it; any other line that is not an event is
    /// reported with its number.
    fn all_events(&self) -> Result<Vec<Event>> {
        let path = self.path("events.jsonl")?;
        let Some(text) = layout::read(&path)? else {
            return Ok(Vec::new());
        };
        let mut events = Vec::new();
        for (number, line) in (1..).zip(text.split_inclusive('\n')) {
            match line.strip_suffix('\n') {
                Some(line) => events.push(serde_json::from_str(line).map_err(|e| {
                    Error::storage(format!(
                        "corrupt event on line {number} of {}: {e}; `handoff check --repair` \
                         moves it aside",
                        path.display()
                    ))
                })?),
                None => events.extend(serde_json::from_str::<Event>(line).ok()),
            }
        }
        Ok(events)
    }

    fn records_of(&self, ids: &[String]) -> Result<Vec<Handoff>> {
        ids.iter().map(|id| self.named_record(id)).collect()
    }

    /// The record `id`, which the store's index, log or chain names: missing, it is damage,
    /// reported by name (never read as an empty queue).
    fn named_record(&self, id: &str) -> Result<Handoff> {
        self.record(id)?.ok_or_else(|| {
            Error::storage(format!(
                "the store names handoff {id}, but {} is missing; `handoff check --repair` \
                 takes it out of the index",
                self.dir
                    .join("handoffs")
                    .join(format!("{id}.json"))
                    .display()
            ))
        })
    }
}

impl Backend for FilesBackend {
    fn name(&self) -> &'static str {
        "files"
    }

    fn check(&self, repair: bool) -> Result<crate::store::CheckReport> {
        self.exclusive(|store| store.check_files(repair))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            durable: true,
            shared_by_processes: true,
            // A network file system's locks are not to be trusted with exactly-once claims.
            shared_by_machines: false,
            backup: true,
            wakes_waiters: false,
        }
    }

    /// Under the store's lock, so writers wait for the snapshot; records in the order of
    /// their `created` events, as listing reads them.
    fn export(&self, sink: &mut dyn FnMut(Exported) -> Result<()>) -> Result<()> {
        self.locked(|store| {
            let settings: BTreeMap<String, String> =
                store.read_json("settings.json")?.unwrap_or_default();
            for (key, value) in settings {
                sink(Exported::Setting { key, value })?;
            }
            let secrets: BTreeMap<String, [u8; 32]> = store
                .index()?
                .open
                .into_iter()
                .filter_map(|e| {
                    let digest = unhex(e.claim_secret_sha256.as_deref()?)?;
                    Some((e.id, digest))
                })
                .collect();
            let events = store.all_events()?;
            for event in &events {
                if matches!(event.change, Change::Created { .. }) {
                    let record = store.named_record(&event.handoff_id)?;
                    let claim_secret = secrets.get(&record.id).copied();
                    sink(Exported::Record {
                        record: Box::new(record),
                        claim_secret,
                    })?;
                }
            }
            for event in events {
                sink(Exported::Event(event))?;
            }
            let root = store.dir.join("docs");
            let mut kinds = Vec::new();
            match fs::read_dir(&root) {
                Ok(entries) => {
                    for entry in entries {
                        let entry = entry.map_err(|e| io("cannot read", &root, e))?;
                        if let Some(kind) = entry.file_name().to_str()
                            && crate::validate::is_ident(kind)
                        {
                            kinds.push(kind.to_owned());
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("cannot read", &root, e)),
            }
            kinds.sort();
            for kind in kinds {
                let mut keys = store.doc_keys(&kind)?;
                keys.sort();
                for key in keys {
                    if let Some(doc) = store.read_doc(&kind, &key)? {
                        sink(Exported::Doc {
                            kind: kind.clone(),
                            key,
                            doc,
                        })?;
                    }
                }
            }
            Ok(())
        })
    }

    fn write(&self, work: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        self.locked(|store| {
            let mut tx = FilesTx {
                store,
                index: store.index()?,
                records: BTreeMap::new(),
                hops: BTreeMap::new(),
                looked_at: Default::default(),
                chains: BTreeMap::new(),
                converted: Vec::new(),
                events: Vec::new(),
                settings: None,
                changed_index: false,
                docs: BTreeMap::new(),
                deleted: BTreeMap::new(),
            };
            work(&mut tx)?;
            let journal = tx.into_journal()?;
            if journal.files.is_empty() && journal.removed.is_empty() && journal.events.is_empty() {
                return Ok(());
            }
            let text =
                serde_json::to_string(&journal).map_err(|e| Error::storage(e.to_string()))?;
            replace(&store.path("journal.json")?, &text, store.sync)?;
            sync_dir(&store.dir, store.sync)?;
            store.apply(&journal)
        })
    }

    fn get(&self, id: &str) -> Result<Option<Handoff>> {
        self.locked(|store| store.record(id))
    }

    fn list(&self, filter: &ListFilter) -> Result<Vec<Handoff>> {
        self.locked(|store| {
            // Insertion order is the order of the `created` events.
            let order: Vec<String> = match &filter.task_id {
                Some(task) => store
                    .task(task)?
                    .into_iter()
                    .map(|hop| hop.handoff_id)
                    .collect(),
                None => store
                    .all_events()?
                    .into_iter()
                    .filter(|e| matches!(e.change, Change::Created { .. }))
                    .map(|e| e.handoff_id)
                    .collect(),
            };
            let start = match &filter.after {
                Some(after) => match order.iter().position(|id| id == after) {
                    Some(at) => at + 1,
                    None => return Ok(Vec::new()),
                },
                None => 0,
            };
            let ids = &order[start..];
            let mut out = Vec::new();
            for h in store.records_of(ids)? {
                let wanted = filter.status.is_none_or(|s| h.status == s)
                    && filter
                        .to_agent
                        .as_ref()
                        .is_none_or(|a| h.to_agent.as_ref() == Some(a))
                    && filter.kind.is_none_or(|k| h.kind == k);
                if wanted {
                    out.push(h);
                    if filter.limit.is_some_and(|limit| out.len() >= limit) {
                        break;
                    }
                }
            }
            Ok(out)
        })
    }

    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>> {
        self.locked(|store| {
            let of_task = match &filter.task_id {
                Some(task) => Some(store.task(task)?),
                None => None,
            };
            let mut out = Vec::new();
            for event in store.all_events()? {
                let wanted = filter.after.is_none_or(|after| event.seq > after)
                    && filter
                        .handoff_id
                        .as_ref()
                        .is_none_or(|id| *id == event.handoff_id)
                    && of_task
                        .as_ref()
                        .is_none_or(|hops| hops.iter().any(|h| h.handoff_id == event.handoff_id));
                if wanted {
                    out.push(event);
                    if filter.limit.is_some_and(|limit| out.len() >= limit) {
                        break;
                    }
                }
            }
            Ok(out)
        })
    }

    fn hops(&self, task_id: &str) -> Result<Vec<Hop>> {
        self.locked(|store| store.task(task_id))
    }

    /// Watches `pending.json`, which every write that opens or closes work replaces (a new
    /// file by rename): a `stat` per look, without the store's lock.
    fn subscribe(&self) -> Result<Box<dyn WorkSignal + '_>> {
        let index = self.path("pending.json")?;
        let fingerprint = move || {
            Ok(fs::metadata(&index).ok().map(|m| {
                #[cfg(unix)]
                let inode = std::os::unix::fs::MetadataExt::ino(&m);
                #[cfg(not(unix))]
                let inode = 0u64;
                (inode, m.len(), m.modified().ok())
            }))
        };
        Ok(Box::new(Watch::new(fingerprint)?))
    }

    fn setting(&self, key: &str) -> Result<Option<String>> {
        self.locked(|store| {
            let settings: BTreeMap<String, String> =
                store.read_json("settings.json")?.unwrap_or_default();
            Ok(settings.get(key).cloned())
        })
    }

    fn doc(&self, kind: &str, key: &str) -> Result<Option<Doc>> {
        self.locked(|store| store.read_doc(kind, key))
    }

    fn docs(
        &self,
        kind: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Doc)>> {
        self.locked(|store| {
            if !crate::validate::is_ident(kind) {
                return Ok(Vec::new());
            }
            let mut keys: Vec<String> = store
                .doc_keys(kind)?
                .into_iter()
                .filter(|key| key.starts_with(prefix) && after.is_none_or(|a| key.as_str() > a))
                .collect();
            keys.sort();
            keys.truncate(limit);
            keys.into_iter()
                .filter_map(|key| match store.read_doc(kind, &key) {
                    Ok(Some(doc)) => Some(Ok((key, doc))),
                    Ok(None) => None,
                    Err(e) => Some(Err(e)),
                })
                .collect()
        })
    }
}

/// One write: reads go to the files (or to what this write changed), changes are kept here
/// until the journal takes them.
struct FilesTx<'a> {
    store: &'a FilesBackend,
    index: Index,
    records: BTreeMap<String, Handoff>,
    /// The hops this write made or changed, by task and record.
    hops: BTreeMap<(String, String), HopFile>,
    /// The tasks this write has checked for hops kept the old way.
    looked_at: std::collections::BTreeSet<String>,
    /// The chains this write has read from the files, by task (read once per write).
    chains: BTreeMap<String, Vec<HopFile>>,
    /// The tasks whose hops this write moves from one array to a file each.
    converted: Vec<String>,
    events: Vec<Event>,
    settings: Option<BTreeMap<String, String>>,
    changed_index: bool,
    /// Documents this write changed, by path (`None`: removed).
    docs: BTreeMap<String, Option<DocFile>>,
    /// Records this write removes: id → task.
    deleted: BTreeMap<String, String>,
}

impl FilesTx<'_> {
    fn into_journal(self) -> Result<Journal> {
        let mut files = Vec::new();
        for (id, record) in &self.records {
            files.push((format!("handoffs/{id}.json"), pretty(record)?));
        }
        for ((task, id), hop) in &self.hops {
            files.push((format!("tasks/{task}/{id}.json"), compact(hop)?));
        }
        if let Some(settings) = &self.settings {
            files.push(("settings.json".to_owned(), pretty(settings)?));
        }
        let mut removed: Vec<String> = self
            .converted
            .iter()
            .map(|task| format!("tasks/{task}.json"))
            .collect();
        for (path, doc) in &self.docs {
            match doc {
                Some(doc) => files.push((path.clone(), pretty(doc)?)),
                None => removed.push(path.clone()),
            }
        }
        for (id, task) in &self.deleted {
            removed.push(format!("handoffs/{id}.json"));
            removed.push(format!("tasks/{task}/{id}.json"));
        }
        if self.changed_index || !self.events.is_empty() {
            files.push(("pending.json".to_owned(), compact(&self.index)?));
        }
        let events = self
            .events
            .iter()
            .map(compact)
            .collect::<Result<Vec<_>>>()?;
        Ok(Journal {
            files,
            removed,
            events_len: self.store.events_len()?,
            events,
            dropped: self.deleted.keys().cloned().collect(),
        })
    }

    fn entry(&mut self, id: &str) -> Option<&mut OpenEntry> {
        self.index.open.iter_mut().find(|e| e.id == id)
    }

    /// Before the first change to a task's hops: a task whose hops a store written before
    /// keeps as one array gets a file per hop in this write (and the array goes), in order.
    fn convert(&mut self, task_id: &str) -> Result<()> {
        if !self.looked_at.insert(task_id.to_owned()) {
            return Ok(());
        }
        if self.store.dir.join("tasks").join(task_id).is_dir() {
            return Ok(());
        }
        let Some(old) = self.store.legacy_task(task_id)? else {
            return Ok(());
        };
        for file in old {
            let pos = self.place();
            let key = (task_id.to_owned(), file.hop.handoff_id.clone());
            self.hops.insert(key, HopFile { pos, hop: file.hop });
        }
        self.converted.push(task_id.to_owned());
        Ok(())
    }

    /// The place of a new hop in its task's chain.
    fn place(&mut self) -> u64 {
        let pos = self.index.next_hop;
        self.index.next_hop += 1;
        self.changed_index = true;
        pos
    }

    /// The hop of record `id` in task `task_id`, as this write has it.
    fn hop(&self, task_id: &str, id: &str) -> Result<Option<HopFile>> {
        if self.deleted.contains_key(id) {
            return Ok(None);
        }
        match self.hops.get(&(task_id.to_owned(), id.to_owned())) {
            Some(file) => Ok(Some(file.clone())),
            None => self.store.read_json(&format!("tasks/{task_id}/{id}.json")),
        }
    }

    fn load(&mut self, id: &str) -> Result<Option<Handoff>> {
        if self.deleted.contains_key(id) {
            return Ok(None);
        }
        match self.records.get(id) {
            Some(h) => Ok(Some(h.clone())),
            None => self.store.record(id),
        }
    }

    /// An open record of the index, which must have its file.
    fn open_record(&mut self, id: &str) -> Result<Handoff> {
        match self.records.get(id) {
            Some(h) => Ok(h.clone()),
            None => self.store.named_record(id),
        }
    }
}

fn open_entry(h: &Handoff, secret: Option<String>) -> OpenEntry {
    OpenEntry {
        id: h.id.clone(),
        task_id: h.task_id.clone(),
        kind: h.kind,
        status: h.status,
        to_agent: h.to_agent.clone(),
        expires_at: h.expires_at,
        lease_until: h.lease_until,
        priority: h.priority,
        claim_secret_sha256: secret,
    }
}

fn is_open(status: Status) -> bool {
    matches!(status, Status::Pending | Status::Claimed)
}

impl Tx for FilesTx<'_> {
    fn get(&mut self, id: &str) -> Result<Option<Handoff>> {
        self.load(id)
    }

    fn insert(&mut self, record: &Handoff) -> Result<()> {
        self.deleted.remove(&record.id);
        if is_open(record.status) {
            self.index.open.push(open_entry(record, None));
        }
        self.changed_index = true;
        self.convert(&record.task_id)?;
        let pos = self.place();
        let key = (record.task_id.clone(), record.id.clone());
        self.hops.insert(
            key,
            HopFile {
                pos,
                hop: hop_of(record),
            },
        );
        self.records.insert(record.id.clone(), record.clone());
        Ok(())
    }

    fn update(&mut self, record: &Handoff) -> Result<()> {
        if is_open(record.status) {
            match self.entry(&record.id) {
                Some(entry) => {
                    let secret = entry.claim_secret_sha256.take();
                    *entry = open_entry(record, secret);
                }
                None => self.index.open.push(open_entry(record, None)),
            }
        } else {
            self.index.open.retain(|e| e.id != record.id);
        }
        self.changed_index = true;
        self.convert(&record.task_id)?;
        let hop = hop_of(record);
        if let Some(mut stored) = self.hop(&record.task_id, &record.id)?
            && stored.hop != hop
        {
            stored.hop = hop;
            let key = (record.task_id.clone(), record.id.clone());
            self.hops.insert(key, stored);
        }
        self.records.insert(record.id.clone(), record.clone());
        Ok(())
    }

    fn append(&mut self, event: NewEvent) -> Result<()> {
        let seq = self.index.next_seq.max(1);
        self.index.next_seq = seq + 1;
        self.events.push(Event {
            seq,
            handoff_id: event.handoff_id,
            at: event.at,
            actor: event.actor,
            change: event.change,
        });
        Ok(())
    }

    fn delete_record(&mut self, id: &str) -> Result<()> {
        let Some(record) = self.load(id)? else {
            return Ok(());
        };
        let task = record.task_id;
        self.convert(&task)?;
        self.index.open.retain(|e| e.id != id);
        self.changed_index = true;
        self.records.remove(id);
        self.hops.remove(&(task.clone(), id.to_owned()));
        if let Some(chain) = self.chains.get_mut(&task) {
            chain.retain(|file| file.hop.handoff_id != id);
        }
        self.events.retain(|e| e.handoff_id != id);
        self.deleted.insert(id.to_owned(), task);
        Ok(())
    }

    fn set_setting(&mut self, key: &str, value: &str) -> Result<()> {
        let mut settings = match self.settings.take() {
            Some(settings) => settings,
            None => self.store.read_json("settings.json")?.unwrap_or_default(),
        };
        settings.insert(key.to_owned(), value.to_owned());
        self.settings = Some(settings);
        Ok(())
    }

    fn claim_secret(&mut self, id: &str) -> Result<Option<[u8; 32]>> {
        Ok(self
            .entry(id)
            .and_then(|e| e.claim_secret_sha256.as_deref())
            .and_then(unhex))
    }

    fn set_claim_secret(&mut self, id: &str, digest: Option<[u8; 32]>) -> Result<()> {
        if let Some(entry) = self.entry(id) {
            entry.claim_secret_sha256 = digest.as_ref().map(|d| hex(d));
            self.changed_index = true;
        }
        Ok(())
    }

    fn hops(&mut self, task_id: &str) -> Result<Vec<Hop>> {
        if !self.chains.contains_key(task_id) {
            let files = self.store.task_files(task_id)?;
            self.chains.insert(task_id.to_owned(), files);
        }
        let mut files = self.chains.get(task_id).cloned().unwrap_or_default();
        // What this write made or changed replaces what the files hold.
        let mine: Vec<&HopFile> = self
            .hops
            .range((task_id.to_owned(), String::new())..)
            .take_while(|((task, _), _)| task == task_id)
            .map(|(_, file)| file)
            .collect();
        files.retain(|file| {
            !mine.iter().any(|m| m.hop.handoff_id == file.hop.handoff_id)
                && !self.deleted.contains_key(&file.hop.handoff_id)
        });
        files.extend(mine.into_iter().cloned());
        files.sort_by_key(|file| file.pos);
        Ok(files.into_iter().map(|file| file.hop).collect())
    }

    fn next_claimable(
        &mut self,
        agent: &str,
        task_id: Option<&str>,
        now: DateTime<Utc>,
        after: Option<&str>,
    ) -> Result<Option<Handoff>> {
        // Claim order: the highest priority first, then the earliest in the list (the order
        // records became open). A refused record's place is where the search resumes.
        let open = &self.index.open;
        let place = |at: usize| (std::cmp::Reverse(open[at].priority), at);
        let from = after
            .and_then(|after| open.iter().position(|e| e.id == after))
            .map(|at| (std::cmp::Reverse(open[at].priority), at + 1));
        let found = (0..open.len())
            .filter(|at| from.is_none_or(|from| place(*at) >= from))
            .filter(|at| {
                let e = &open[*at];
                e.status == Status::Pending
                    && e.kind != Kind::Checkpoint
                    && e.expires_at.is_none_or(|at| at > now)
                    && e.to_agent.as_deref().is_none_or(|to| to == agent)
                    && task_id.is_none_or(|task| e.task_id == task)
            })
            .min_by_key(|at| place(*at))
            .map(|at| &open[at]);
        match found.map(|e| e.id.clone()) {
            Some(id) => self.open_record(&id).map(Some),
            None => Ok(None),
        }
    }

    fn lapsed(&mut self, now: DateTime<Utc>, limit: usize) -> Result<Vec<Handoff>> {
        let due: Vec<String> = self
            .index
            .open
            .iter()
            .filter(|e| match e.status {
                Status::Claimed => e.lease_until.is_some_and(|at| at <= now),
                Status::Pending => e.expires_at.is_some_and(|at| at <= now),
                _ => false,
            })
            .take(limit)
            .map(|e| e.id.clone())
            .collect();
        let mut out = Vec::with_capacity(due.len());
        for id in due {
            out.push(self.open_record(&id)?);
        }
        Ok(out)
    }

    fn doc(&mut self, kind: &str, key: &str) -> Result<Option<Doc>> {
        let path = doc_path(kind, key)?;
        match self.docs.get(&path) {
            Some(Some(file)) => Ok(Some(Doc {
                version: file.version,
                body: file.body.get().to_owned(),
            })),
            Some(None) => Ok(None),
            None => self.store.read_doc(kind, key),
        }
    }

    fn insert_doc(&mut self, kind: &str, key: &str, doc: &Doc) -> Result<()> {
        self.update_doc(kind, key, doc)
    }

    fn docs(&mut self, kind: &str, prefix: &str) -> Result<Vec<(String, Doc)>> {
        let mut keys: std::collections::BTreeSet<String> = self
            .store
            .doc_keys(kind)?
            .into_iter()
            .filter(|key| key.starts_with(prefix))
            .collect();
        let folder = format!("docs/{kind}/");
        keys.extend(self.docs.iter().filter_map(|(path, file)| match file {
            Some(file) if path.starts_with(&folder) && file.key.starts_with(prefix) => {
                Some(file.key.clone())
            }
            _ => None,
        }));
        keys.into_iter()
            .filter_map(|key| match Tx::doc(self, kind, &key) {
                Ok(Some(doc)) => Some(Ok((key, doc))),
                Ok(None) => None,
                Err(e) => Some(Err(e)),
            })
            .collect()
    }

    fn update_doc(&mut self, kind: &str, key: &str, doc: &Doc) -> Result<()> {
        let body = RawValue::from_string(doc.body.clone())
            .map_err(|e| Error::storage(format!("a document's body is not JSON: {e}")))?;
        self.docs.insert(
            doc_path(kind, key)?,
            Some(DocFile {
                key: key.to_owned(),
                version: doc.version,
                body,
            }),
        );
        Ok(())
    }

    fn delete_doc(&mut self, kind: &str, key: &str) -> Result<()> {
        self.docs.insert(doc_path(kind, key)?, None);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::{NewHandoff, Store};
    use std::fs::OpenOptions;

    fn store_with(sync: Synchronous) -> (Store, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(FilesBackend::open(dir.path(), sync).unwrap());
        (store, dir)
    }

    fn store() -> (Store, tempfile::TempDir) {
        store_with(Synchronous::Full)
    }

    // Without the fsyncs: the suite checks behaviour, which the two modes share (and the tests
    // below use `Full`).
    crate::conformance_tests!(store_with(Synchronous::Normal));

    #[test]
    fn a_task_kept_as_one_array_gets_a_file_per_hop_at_its_next_write() {
        let (store, dir) = store();
        let first = store
            .create(NewHandoff::new("t", "one").from_agent("a").to_agent("b"))
            .unwrap();
        let second = store
            .create(NewHandoff::new("t", "two").from_agent("b").to_agent("c"))
            .unwrap();
        // The task as a store written before per-hop files keeps it.
        let folder = dir.path().join("tasks/t");
        let hops = store.chain("t").unwrap().hops;
        fs::remove_dir_all(&folder).unwrap();
        let array = serde_json::to_string(&hops).unwrap();
        fs::write(dir.path().join("tasks/t.json"), array).unwrap();
        assert_eq!(store.chain("t").unwrap().hops, hops);
        // A change to one of its records moves every hop to a file, in the same order.
        let claim = store
            .claim(&second.id, "c", std::time::Duration::from_secs(60))
            .unwrap();
        assert!(!dir.path().join("tasks/t.json").exists());
        assert_eq!(fs::read_dir(&folder).unwrap().count(), 2);
        let after = store.chain("t").unwrap().hops;
        let ids: Vec<&str> = after.iter().map(|h| h.handoff_id.as_str()).collect();
        assert_eq!(ids, [first.id.as_str(), second.id.as_str()]);
        assert_eq!(after[1].status, Status::Claimed);
        store.complete(&claim, "done").unwrap();
        let third = store
            .create(NewHandoff::new("t", "three").from_agent("c").to_agent("d"))
            .unwrap();
        let last = store.chain("t").unwrap().hops;
        assert_eq!(last.len(), 3);
        assert_eq!(last[2].handoff_id, third.id);
    }

    #[test]
    fn a_killed_write_is_finished_by_the_next_process() {
        let (store, dir) = store();
        let h = store
            .create(NewHandoff::new("t", "before the crash"))
            .unwrap();
        // A writer that wrote its journal and died before applying it: the claim is in the
        // journal only.
        let backend = FilesBackend::open(dir.path(), Synchronous::Full).unwrap();
        let mut claimed = h.clone();
        claimed.status = Status::Claimed;
        claimed.claimed_by = Some("b".into());
        let index: Index = backend.read_json("pending.json").unwrap().unwrap();
        let mut after = index.clone();
        after.open[0].status = Status::Claimed;
        let journal = Journal {
            files: vec![
                (format!("handoffs/{}.json", h.id), pretty(&claimed).unwrap()),
                ("pending.json".into(), compact(&after).unwrap()),
            ],
            removed: Vec::new(),
            events_len: backend.events_len().unwrap(),
            events: vec![RawValue::from_string("{\"line\":\"the whole line\"}".into()).unwrap()],
            dropped: Vec::new(),
        };
        replace(
            &dir.path().join("journal.json"),
            &serde_json::to_string(&journal).unwrap(),
            Synchronous::Full,
        )
        .unwrap();
        // Half a line already appended: recovery cuts it back before appending again.
        let mut log = OpenOptions::new()
            .append(true)
            .open(dir.path().join("events.jsonl"))
            .unwrap();
        log.write_all(b"{\"line\":\"the wh").unwrap();

        let reopened = FilesBackend::open(dir.path(), Synchronous::Full).unwrap();
        assert!(!dir.path().join("journal.json").exists());
        assert_eq!(
            reopened.get(&h.id).unwrap().unwrap().status,
            Status::Claimed
        );
        let text = fs::read_to_string(dir.path().join("events.jsonl")).unwrap();
        assert!(text.ends_with("{\"line\":\"the whole line\"}\n"), "{text}");
        assert_eq!(text.matches("the wh").count(), 1, "{text}");
    }

    #[test]
    fn the_layout_is_readable_json() {
        let (store, dir) = store();
        let h = store
            .create(NewHandoff::new("task-1", "readable").from_agent("a"))
            .unwrap();
        let record: serde_json::Value = serde_json::from_str(
            &fs::read_to_string(dir.path().join(format!("handoffs/{}.json", h.id))).unwrap(),
        )
        .unwrap();
        assert_eq!(record["goal"], "readable");
        let index: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(dir.path().join("pending.json")).unwrap())
                .unwrap();
        assert_eq!(index["open"][0]["id"], h.id.as_str());
        let claim = store.claim(&h.id, "b", Duration::from_secs(60)).unwrap();
        let text = fs::read_to_string(dir.path().join(format!("handoffs/{}.json", h.id))).unwrap();
        assert!(
            !text.contains(claim.secret.expose()),
            "no secret in the record file"
        );
        store.complete(&claim, "done").unwrap();
        let index: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(dir.path().join("pending.json")).unwrap())
                .unwrap();
        assert_eq!(index["open"], serde_json::json!([]));
        let lines = fs::read_to_string(dir.path().join("events.jsonl")).unwrap();
        assert_eq!(lines.lines().count(), 3);
    }

    /// A store in `<tmp>/store`, with room beside it for what must stay untouched.
    fn store_in_folder() -> (Store, tempfile::TempDir, PathBuf) {
        let outer = tempfile::tempdir().unwrap();
        let dir = outer.path().join("store");
        let store = Store::new(FilesBackend::open(&dir, Synchronous::Full).unwrap());
        (store, outer, dir)
    }

    #[test]
    fn a_planted_journal_is_refused_and_writes_nothing_outside_the_store() {
        let (store, outer, dir) = store_in_folder();
        store.create(NewHandoff::new("t", "before")).unwrap();
        let victim = outer.path().join("victim.txt");
        fs::write(&victim, "keep me").unwrap();
        let log_before = fs::read(dir.join("events.jsonl")).unwrap();
        let planted = r#"{"files":[["../written.json",["x"]]],"removed":["../victim.txt"],"events":[],"events_len":0}"#;
        fs::write(dir.join("journal.json"), planted).unwrap();
        // Even a read replays the journal first: refused, by name, and left as it is.
        let err = store.list(&ListFilter::default()).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Storage);
        assert!(err.to_string().contains("journal.json"), "{err}");
        assert!(victim.exists());
        assert!(!outer.path().join("written.json").exists());
        assert_eq!(fs::read(dir.join("events.jsonl")).unwrap(), log_before);
        assert_eq!(
            fs::read_to_string(dir.join("journal.json")).unwrap(),
            planted
        );
        // Paths that try other ways out, or at files that are not the store's data.
        for path in [
            "/tmp/x.json",
            "handoffs/../../x.json",
            ".git/config",
            "journal.json",
        ] {
            let journal = serde_json::json!({"files": [[path, {}]], "events": [],
                                             "events_len": log_before.len()});
            fs::write(dir.join("journal.json"), journal.to_string()).unwrap();
            let err = store.get("anything").unwrap_err();
            assert!(err.to_string().contains(path), "{path}: {err}");
        }
    }

    #[test]
    fn a_journal_that_disagrees_with_the_event_log_is_refused() {
        let (store, _outer, dir) = store_in_folder();
        let h = store.create(NewHandoff::new("t", "before")).unwrap();
        let log = fs::read(dir.join("events.jsonl")).unwrap();
        let len = log.len() as u64;
        let line = r#"{"line":"x"}"#;
        let cases = [
            (len + 10, vec![line]), // past the log's end
            (len - 3, vec![line]),  // not at a line's end
            (0, vec![line]),        // would cut the whole log
            (len - 1, Vec::new()),  // not at a line's end, nothing appended
        ];
        for (events_len, events) in cases {
            let journal = serde_json::json!({"files": [], "events_len": events_len,
                "events": events.iter().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).collect::<Vec<_>>()});
            fs::write(dir.join("journal.json"), journal.to_string()).unwrap();
            let err = store.get(&h.id).unwrap_err();
            assert!(err.to_string().contains("refused"), "{events_len}: {err}");
            assert_eq!(
                fs::read(dir.join("events.jsonl")).unwrap(),
                log,
                "{events_len}"
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn writes_never_follow_a_planted_link() {
        let (store, outer, dir) = store_in_folder();
        let target = outer.path().join("target.txt");
        fs::write(&target, "keep me").unwrap();
        std::os::unix::fs::symlink("../target.txt", dir.join("pending.tmp")).unwrap();
        store
            .create(NewHandoff::new("t", "after the link"))
            .unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep me");
        // A folder of the layout that is a link elsewhere is refused by name.
        let elsewhere = outer.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        fs::rename(dir.join("handoffs"), outer.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.join("handoffs")).unwrap();
        let err = store
            .create(NewHandoff::new("t", "through the link"))
            .unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
        // The event log too.
        fs::remove_file(dir.join("handoffs")).unwrap();
        fs::rename(outer.path().join("moved"), dir.join("handoffs")).unwrap();
        fs::rename(dir.join("events.jsonl"), outer.path().join("log")).unwrap();
        std::os::unix::fs::symlink(&target, dir.join("events.jsonl")).unwrap();
        let err = store
            .create(NewHandoff::new("t", "into the log"))
            .unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep me");
    }

    #[test]
    fn an_id_read_from_the_index_that_is_a_path_is_refused() {
        let (store, outer, dir) = store_in_folder();
        // A record outside the store, which a claim would rewrite if the id were followed.
        let h = store.create(NewHandoff::new("t", "outside")).unwrap();
        let mut record: serde_json::Value = serde_json::from_str(
            &fs::read_to_string(dir.join(format!("handoffs/{}.json", h.id))).unwrap(),
        )
        .unwrap();
        record["id"] = "../../x".into();
        let outside = outer.path().join("x.json");
        fs::write(&outside, record.to_string()).unwrap();
        let index = fs::read_to_string(dir.join("pending.json"))
            .unwrap()
            .replace(&h.id, "../../x");
        fs::write(dir.join("pending.json"), index).unwrap();
        let err = store
            .claim_next("b", None, Duration::from_secs(60))
            .unwrap_err();
        assert!(err.to_string().contains("../../x"), "{err}");
        assert_eq!(fs::read_to_string(&outside).unwrap(), record.to_string());
    }

    #[test]
    fn a_missing_or_empty_record_is_reported_by_name_never_as_an_empty_queue() {
        let (store, _outer, dir) = store_in_folder();
        let h = store.create(NewHandoff::new("t", "listed")).unwrap();
        let file = dir.join(format!("handoffs/{}.json", h.id));
        fs::remove_file(&file).unwrap();
        let err = store
            .claim_next("b", None, Duration::from_secs(60))
            .unwrap_err();
        assert!(err.to_string().contains(&h.id), "{err}");
        assert!(err.to_string().contains("missing"), "{err}");
        fs::write(&file, "").unwrap();
        let err = store
            .claim_next("b", None, Duration::from_secs(60))
            .unwrap_err();
        assert!(err.to_string().contains(&format!("{}.json", h.id)), "{err}");
    }

    #[test]
    fn a_torn_last_event_line_is_cut_at_the_next_write() {
        let (store, _outer, dir) = store_in_folder();
        let first = store.create(NewHandoff::new("t", "one")).unwrap();
        let log = dir.join("events.jsonl");
        OpenOptions::new()
            .append(true)
            .open(&log)
            .unwrap()
            .write_all(b"{\"seq\":2,\"hand")
            .unwrap();
        // Read as the next write will leave it.
        assert_eq!(store.events(None).unwrap().len(), 1);
        let second = store.create(NewHandoff::new("t", "two")).unwrap();
        let events = store.events(None).unwrap();
        let ids: Vec<&str> = events.iter().map(|e| e.handoff_id.as_str()).collect();
        assert_eq!(ids, [first.id.as_str(), second.id.as_str()]);
        assert!(fs::read_to_string(&log).unwrap().ends_with("}\n"));
        // A whole event that lost only its newline keeps its place.
        let text = fs::read_to_string(&log).unwrap();
        fs::write(&log, text.trim_end()).unwrap();
        store.create(NewHandoff::new("t", "three")).unwrap();
        assert_eq!(store.events(None).unwrap().len(), 3);
        // A broken line inside the log is named by its number.
        let text = fs::read_to_string(&log).unwrap();
        fs::write(&log, text.replacen("{", "{{", 1)).unwrap();
        let err = store.events(None).unwrap_err();
        assert!(err.to_string().contains("line 1 of"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn every_file_is_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let (store, _outer, dir) = store_in_folder();
        let h = store.create(NewHandoff::new("t", "private")).unwrap();
        for file in [
            "events.jsonl",
            "pending.json",
            &format!("handoffs/{}.json", h.id),
        ] {
            let mode = fs::metadata(dir.join(file)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{file}");
        }
    }
}
