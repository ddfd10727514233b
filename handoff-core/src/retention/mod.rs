//! Retention and backup (seed 003): pruning finished tasks down to their history, and the
//! portable backup file that every backend writes and every backend restores (how a store
//! moves from SQLite to PostgreSQL).
//!
//! A backup is JSON Lines behind a magic line:
//!
//! ```text
//! handoff-backup 1
//! {"setting":{"key":"policy","value":"…"}}                  settings, by key
//! {"record":{"record":{…},"claim_secret_sha256":"…"}}        records, in insertion order
//! {"event":{"seq":1,"handoff_id":"…",…}}                     events, by seq
//! {"doc":{"kind":"task","key":"…","version":3,"body":"…"}}   documents, by kind then key
//! {"end":{"settings":1,"records":…,"sha256":"…"}}            counts, and SHA-256 of every byte before
//! ```
//!
//! A restore reads the whole file once to check it (the magic line, every line's form and
//! place, the counts, the checksum) before the one write transaction that reads it again, so a
//! damaged, cut or foreign file is refused with nothing written.
//!
//! The folder: this file prunes, backs up and restores the [`Store`](crate::Store); `ops` holds
//! the operations `prune`, `backup` and `restore`.

pub(crate) mod ops;

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::machine::{Event, NewEvent};
use crate::memory::sessions;
use crate::record::Handoff;
use crate::store::{Doc, Exported, Store, Tx, hex, unhex};
use crate::task::TaskHeader;
use crate::task::store::{EVENT as TASK_EVENT, STEP, header, write_header};
use crate::validate;

/// How many finished tasks keep their details when the caller does not say (seed 003).
pub const DEFAULT_KEEP_LAST: usize = 100;

/// How many days a finished task keeps its details when the caller does not say (seed 003).
pub const DEFAULT_KEEP_DETAILS_DAYS: u32 = 30;

/// The first line of every backup: what the file is, and the version of its format.
pub const BACKUP_MAGIC: &str = "handoff-backup 1";

/// The longest line a restore reads: a damaged file cannot make it hold more than this.
const MAX_LINE: u64 = 256 * 1024 * 1024;

/// What a backup holds (and what a restore wrote), counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupSummary {
    /// Store-wide settings.
    pub settings: u64,
    /// Handoff records.
    pub records: u64,
    /// Events of the log.
    pub events: u64,
    /// Documents of every kind (tasks, steps, memory, conversations, facts, bundles, ...).
    pub documents: u64,
    /// SHA-256 of the file's content before its last line, in hex.
    pub sha256: String,
}

/// One line of a backup after the magic line.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Line {
    Setting {
        key: String,
        value: String,
    },
    Record {
        record: Box<Handoff>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        claim_secret_sha256: Option<String>,
    },
    Event(Box<Event>),
    Doc {
        kind: String,
        key: String,
        version: u64,
        /// The document's JSON text as stored, byte for byte.
        body: String,
    },
    End(BackupSummary),
}

impl Line {
    /// Where the line's section comes in the file: settings, records, events, documents.
    fn section(&self) -> u8 {
        match self {
            Line::Setting { .. } => 0,
            Line::Record { .. } => 1,
            Line::Event(_) => 2,
            Line::Doc { .. } => 3,
            Line::End(_) => 4,
        }
    }
}

impl From<Exported> for Line {
    fn from(piece: Exported) -> Line {
        match piece {
            Exported::Setting { key, value } => Line::Setting { key, value },
            Exported::Record {
                record,
                claim_secret,
            } => Line::Record {
                record,
                claim_secret_sha256: claim_secret.map(|digest| hex(&digest)),
            },
            Exported::Event(event) => Line::Event(Box::new(event)),
            Exported::Doc { kind, key, doc } => Line::Doc {
                kind,
                key,
                version: doc.version,
                body: doc.body,
            },
        }
    }
}

/// A refusal of the file at `path`: the argument `path`, and what is wrong with the file.
fn refused(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::invalid(
        "path",
        format!(
            "{} cannot be restored: {why}; nothing was written",
            path.display()
        ),
    )
}

fn io(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::Storage {
        message: format!("{what} {}: {e}", path.display()),
        source: Some(Box::new(e)),
    }
}

/// Writes the backup's lines to a file, hashing and counting them.
struct Writer {
    out: BufWriter<File>,
    hash: Sha256,
    summary: BackupSummary,
}

impl Writer {
    fn put(&mut self, line: &Line) -> Result<()> {
        let mut text = serde_json::to_vec(line).map_err(|e| Error::storage(e.to_string()))?;
        text.push(b'\n');
        self.raw(&text)
    }

    fn raw(&mut self, bytes: &[u8]) -> Result<()> {
        self.hash.update(bytes);
        self.out
            .write_all(bytes)
            .map_err(|e| Error::storage(format!("cannot write the backup: {e}")))
    }
}

/// A temporary file beside `path`, new and owner-only (a backup holds every record and
/// claim digest of the store), removed on drop unless kept.
struct Temporary {
    path: PathBuf,
    kept: bool,
}

impl Drop for Temporary {
    fn drop(&mut self) {
        if !self.kept {
            let _ = fs::remove_file(&self.path);
        }
    }
}

fn temporary_beside(path: &Path) -> Result<(Temporary, File)> {
    let name = path
        .file_name()
        .ok_or_else(|| Error::invalid("path", "must name a file"))?
        .to_string_lossy()
        .into_owned();
    let folder = path.parent().unwrap_or(Path::new(""));
    for _ in 0..16 {
        let tmp = folder.join(format!(".{name}.{:016x}.tmp", fastrand::u64(..)));
        let mut options = fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        match options.open(&tmp) {
            Ok(file) => {
                return Ok((
                    Temporary {
                        path: tmp,
                        kept: false,
                    },
                    file,
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io("cannot create", &tmp, e)),
        }
    }
    Err(Error::storage(format!(
        "cannot create a temporary file beside {}",
        path.display()
    )))
}

/// Gives `tmp` the name `path` unless something took it: a hard link never replaces a file
/// (a rename would), then the temporary name goes.
fn publish(tmp: &mut Temporary, path: &Path) -> Result<()> {
    match fs::hard_link(&tmp.path, path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(exists(path)),
        // A file system without hard links: a rename, after looking once more.
        Err(_) => {
            if fs::symlink_metadata(path).is_ok() {
                return Err(exists(path));
            }
            fs::rename(&tmp.path, path).map_err(|e| io("cannot write", path, e))?;
            tmp.kept = true;
        }
    }
    if let Some(folder) = path.parent().filter(|f| !f.as_os_str().is_empty()) {
        // The new name is durable once its folder is.
        let _ = File::open(folder).and_then(|f| f.sync_all());
    }
    Ok(())
}

fn exists(path: &Path) -> Error {
    Error::invalid(
        "path",
        format!(
            "{} exists already: a backup never overwrites a file",
            path.display()
        ),
    )
}

/// Reads a backup's lines, hashing every byte before the `end` line.
struct Reader<'p> {
    path: &'p Path,
    input: BufReader<File>,
    hash: Sha256,
    number: u64,
    buffer: Vec<u8>,
}

impl<'p> Reader<'p> {
    /// Opens `path` and checks its magic line.
    fn open(path: &'p Path) -> Result<Reader<'p>> {
        let file = File::open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                Error::invalid("path", format!("{} does not exist", path.display()))
            }
            _ => io("cannot read", path, e),
        })?;
        let mut reader = Reader {
            path,
            input: BufReader::new(file),
            hash: Sha256::new(),
            number: 0,
            buffer: Vec::new(),
        };
        let magic = reader.next_bytes()?;
        if magic.as_deref() != Some(format!("{BACKUP_MAGIC}\n").as_bytes()) {
            return Err(refused(
                path,
                format!("it is not a handoff backup (its first line is not `{BACKUP_MAGIC}`)"),
            ));
        }
        let magic = magic.unwrap_or_default();
        reader.hash.update(&magic);
        Ok(reader)
    }

    /// The next line with its newline (unhashed), `None` at the end of the file.
    fn next_bytes(&mut self) -> Result<Option<Vec<u8>>> {
        self.buffer.clear();
        let read = (&mut self.input)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut self.buffer)
            .map_err(|e| io("cannot read", self.path, e))?;
        if read == 0 {
            return Ok(None);
        }
        self.number += 1;
        if self.buffer.last() != Some(&b'\n') {
            let why = if read as u64 > MAX_LINE {
                format!(
                    "line {} is longer than a backup's lines can be",
                    self.number
                )
            } else {
                format!("it is cut short (line {} has no end)", self.number)
            };
            return Err(refused(self.path, why));
        }
        Ok(Some(std::mem::take(&mut self.buffer)))
    }

    /// The next line read (hashed unless it is the `end` line); an error when the file ends
    /// before its `end` line.
    fn next(&mut self) -> Result<Line> {
        let Some(bytes) = self.next_bytes()? else {
            return Err(refused(
                self.path,
                "it is cut short (its last line, `end`, is missing)",
            ));
        };
        let line: Line = serde_json::from_slice(&bytes).map_err(|e| {
            refused(
                self.path,
                format!("line {} is not a backup line: {e}", self.number),
            )
        })?;
        if !matches!(line, Line::End(_)) {
            self.hash.update(&bytes);
        }
        Ok(line)
    }

    /// After the `end` line: the file must end there.
    fn finish(&mut self) -> Result<String> {
        let mut rest = [0u8; 1];
        let more = self
            .input
            .read(&mut rest)
            .map_err(|e| io("cannot read", self.path, e))?;
        if more != 0 {
            return Err(refused(
                self.path,
                format!("it goes on after its `end` line (line {})", self.number),
            ));
        }
        Ok(hex(&std::mem::take(&mut self.hash).finalize()))
    }
}

/// What a restore's first reading learns, to compare the second with.
struct Checked {
    summary: BackupSummary,
}

/// Checks every line of the backup at `path` without writing anything: its form, its order,
/// what its events name, its counts and its checksum.
fn check_backup(path: &Path) -> Result<Checked> {
    let mut reader = Reader::open(path)?;
    let mut counted = BackupSummary::default();
    let mut section = 0u8;
    let mut records: HashSet<String> = HashSet::new();
    let mut last_setting: Option<String> = None;
    let mut last_seq = 0u64;
    let mut last_doc: Option<(String, String)> = None;
    loop {
        let line = reader.next()?;
        let at = reader.number;
        let wrong = |why: String| refused(path, format!("line {at} {why}"));
        if line.section() < section {
            return Err(wrong(
                "is out of place (settings, records, events, documents, end)".to_owned(),
            ));
        }
        section = line.section();
        match line {
            Line::Setting { key, .. } => {
                if key.is_empty() || last_setting.as_ref().is_some_and(|last| key <= *last) {
                    return Err(wrong(format!(
                        "holds setting `{key}` out of key order or twice"
                    )));
                }
                last_setting = Some(key);
                counted.settings += 1;
            }
            Line::Record {
                record,
                claim_secret_sha256,
            } => {
                for (field, value) in [
                    ("record.id", &record.id),
                    ("record.task_id", &record.task_id),
                ] {
                    if let Err(e) = validate::ident(field, value) {
                        return Err(wrong(format!("holds a record that is not valid: {e}")));
                    }
                }
                if let Some(digest) = &claim_secret_sha256
                    && unhex::<32>(digest).is_none()
                {
                    return Err(wrong(format!(
                        "holds record {} with a claim digest that is not 64 hex digits",
                        record.id
                    )));
                }
                if !records.insert(record.id.clone()) {
                    return Err(wrong(format!("holds record {} twice", record.id)));
                }
                counted.records += 1;
            }
            Line::Event(event) => {
                if event.seq <= last_seq {
                    return Err(wrong(format!("holds event {} out of order", event.seq)));
                }
                last_seq = event.seq;
                if !records.contains(&event.handoff_id) {
                    return Err(wrong(format!(
                        "holds an event of handoff {}, which the backup does not hold",
                        event.handoff_id
                    )));
                }
                counted.events += 1;
            }
            Line::Doc {
                kind, key, body, ..
            } => {
                if !validate::is_ident(&kind) || key.is_empty() {
                    return Err(wrong(format!(
                        "holds a document named `{kind}/{key}`, which no store keeps"
                    )));
                }
                if serde_json::from_str::<serde::de::IgnoredAny>(&body).is_err() {
                    return Err(wrong(format!(
                        "holds document {kind}/{key}, whose body is not JSON"
                    )));
                }
                let place = (kind, key);
                if last_doc.as_ref().is_some_and(|last| place <= *last) {
                    return Err(wrong(format!(
                        "holds document {}/{} out of order or twice",
                        place.0, place.1
                    )));
                }
                last_doc = Some(place);
                counted.documents += 1;
            }
            Line::End(end) => {
                let sha256 = reader.finish()?;
                counted.sha256 = sha256;
                if end.sha256 != counted.sha256 {
                    return Err(refused(
                        path,
                        "it is damaged: its content does not match its checksum (it was \
                         edited or cut)",
                    ));
                }
                if end != counted {
                    return Err(refused(
                        path,
                        format!(
                            "it is damaged: its `end` line counts {} settings, {} records, {} \
                             events and {} documents, and it holds {}, {}, {} and {}",
                            end.settings,
                            end.records,
                            end.events,
                            end.documents,
                            counted.settings,
                            counted.records,
                            counted.events,
                            counted.documents
                        ),
                    ));
                }
                return Ok(Checked { summary: counted });
            }
        }
    }
}

/// Writes the lines of the checked backup at `path` into `tx`, checking that the file is the
/// one checked (its checksum again): a file changed since fails the transaction.
fn write_backup(tx: &mut dyn Tx, path: &Path, checked: &Checked) -> Result<()> {
    let mut reader = Reader::open(path)?;
    let mut last_record: Option<String> = None;
    loop {
        let line = reader.next()?;
        // A backend may hold new records back and send several in one statement that does not
        // promise their order (PostgreSQL): reading one makes it write them now, in order,
        // before anything else.
        if line.section() > 1
            && let Some(id) = last_record.take()
        {
            tx.get(&id)?;
        }
        match line {
            Line::Setting { key, value } => tx.set_setting(&key, &value)?,
            Line::Record {
                record,
                claim_secret_sha256,
            } => {
                last_record = Some(record.id.clone());
                tx.insert(&record)?;
                if let Some(digest) = claim_secret_sha256.as_deref().and_then(unhex::<32>) {
                    tx.set_claim_secret(&record.id, Some(digest))?;
                }
            }
            Line::Event(event) => tx.append(NewEvent {
                handoff_id: event.handoff_id,
                at: event.at,
                actor: event.actor,
                change: event.change,
            })?,
            Line::Doc {
                kind,
                key,
                version,
                body,
            } => tx.insert_doc(&kind, &key, &Doc { version, body })?,
            Line::End(_) => {
                if reader.finish()? != checked.summary.sha256 {
                    return Err(refused(path, "it changed while it was being restored"));
                }
                return Ok(());
            }
        }
    }
}

impl Store {
    /// Keeps the details (steps, log and handoff records) of the newest `keep_last` finished
    /// tasks finished less than `keep_details_days` ago (seed 003: 100 and 30, see
    /// [`DEFAULT_KEEP_LAST`]); older finished tasks keep only their header, marked `pruned`,
    /// which their history and the statistics read. Their finished handoffs go with their
    /// events and claim digests, and leave the sessions that listed them. Unfinished tasks are
    /// never touched. How many tasks were pruned.
    pub fn prune(&self, keep_last: usize, keep_details_days: u32) -> Result<usize> {
        let cut = self.clock.now() - chrono::TimeDelta::days(i64::from(keep_details_days));
        let mut finished: Vec<TaskHeader> = self
            .list_tasks(None, None, None)?
            .into_iter()
            .filter(|h| h.status.is_finished() && !h.pruned)
            .collect();
        finished.sort_by(|a, b| b.completed_at.cmp(&a.completed_at).then(b.id.cmp(&a.id)));
        let mut pruned = 0;
        for (rank, stale) in finished.iter().enumerate() {
            if rank < keep_last && stale.completed_at.is_some_and(|at| at >= cut) {
                continue;
            }
            self.backend.write(&mut |tx| {
                let Some((mut header, version)) = header(tx, &stale.id)? else {
                    return Ok(());
                };
                for kind in [STEP, TASK_EVENT] {
                    for (key, _) in tx.docs(kind, &format!("{}/", header.id))? {
                        tx.delete_doc(kind, &key)?;
                    }
                }
                // The task's handoffs, read along its path (which locks it). One still open
                // (nothing of a finished task should be) is someone's work: it stays.
                for hop in tx.hops(&header.id)? {
                    if !hop.status.is_terminal() {
                        continue;
                    }
                    if let Some(record) = tx.get(&hop.handoff_id)? {
                        sessions::forget(tx, &record)?;
                        tx.delete_record(&record.id)?;
                    }
                }
                header.pruned = true;
                write_header(tx, &header, version)
            })?;
            pruned += 1;
        }
        Ok(pruned)
    }

    /// Writes a portable backup of the whole store to `path`, which must not exist, while the
    /// store stays in use: every setting, record (with its claim digest, so current claims
    /// can still be settled after a restore), event and document, from one consistent
    /// snapshot, streamed into a new owner-only file that takes the name `path` only once it
    /// is complete. Any backend restores it ([`Store::restore`]).
    pub fn backup(&self, path: impl AsRef<Path>) -> Result<BackupSummary> {
        let path = path.as_ref();
        if fs::symlink_metadata(path).is_ok() {
            return Err(exists(path));
        }
        let (mut tmp, file) = temporary_beside(path)?;
        let mut writer = Writer {
            out: BufWriter::new(file),
            hash: Sha256::new(),
            summary: BackupSummary::default(),
        };
        writer.raw(format!("{BACKUP_MAGIC}\n").as_bytes())?;
        self.backend.export(&mut |piece| {
            match &piece {
                Exported::Setting { .. } => writer.summary.settings += 1,
                Exported::Record { .. } => writer.summary.records += 1,
                Exported::Event(_) => writer.summary.events += 1,
                Exported::Doc { .. } => writer.summary.documents += 1,
            }
            writer.put(&Line::from(piece))
        })?;
        let mut summary = std::mem::take(&mut writer.summary);
        summary.sha256 = hex(&std::mem::take(&mut writer.hash).finalize());
        writer.put(&Line::End(summary.clone()))?;
        let file = writer
            .out
            .into_inner()
            .map_err(|e| Error::storage(format!("cannot write the backup: {e}")))?;
        file.sync_all()
            .map_err(|e| io("cannot write", &tmp.path, e))?;
        publish(&mut tmp, path)?;
        Ok(summary)
    }

    /// Restores the backup at `path` (written by [`Store::backup`] on any backend) into this
    /// store, which must be empty: every line is checked first (a foreign, damaged or cut
    /// file is refused naming what is wrong, and nothing is written), then everything is
    /// written in one transaction. Records, documents, settings and claim digests come back
    /// as they were; events in their order, numbered anew by this store. A saved policy
    /// applies to the stores opened afterwards.
    pub fn restore(&self, path: impl AsRef<Path>) -> Result<BackupSummary> {
        let path = path.as_ref();
        let checked = check_backup(path)?;
        self.refuse_unless_empty()?;
        self.backend
            .write(&mut |tx| write_backup(tx, path, &checked))?;
        Ok(checked.summary)
    }

    /// Refuses a store that holds anything: a restore adds a whole store, and merged into
    /// another its ids, claims and task logs would clash.
    fn refuse_unless_empty(&self) -> Result<()> {
        let mut found: Option<&'static str> = None;
        let looked = self.backend.export(&mut |piece| {
            found = Some(match piece {
                Exported::Setting { .. } => "a setting",
                Exported::Record { .. } => "a handoff",
                Exported::Event(_) => "an event",
                Exported::Doc { .. } => "a document",
            });
            Err(Error::storage("stop at the first piece"))
        });
        match found {
            Some(what) => Err(Error::invalid(
                "store",
                format!("must be empty to restore into, and it holds {what} already"),
            )),
            None => looked,
        }
    }
}
