//! A files store's check and repair ([`Store::check`](crate::Store::check)): every file of the
//! layout read; with `repair`, what is damaged moved into `quarantine/<when>/` (never deleted)
//! and what referred to it mended: the index loses entries whose record is gone (and is
//! rebuilt from the records if it is itself unreadable), the event log loses its unreadable
//! lines (kept in the quarantine) and its torn end.
//!
//! A repair writes without the redo journal: it runs under the store's lock, file by file, each
//! file replaced atomically, and running it again finds what a killed repair left.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use serde::de::DeserializeOwned;

use super::{DocFile, FilesBackend, HopFile, Index, Journal, layout, open_entry};
use crate::chain::Hop;
use crate::error::{Error, Result};
use crate::machine::Event;
use crate::record::{Handoff, Status};
use crate::store::CheckReport;
use crate::validate::is_ident;

/// Where damaged files go, made the first time one does.
struct Quarantine<'a> {
    root: &'a Path,
    /// `quarantine/<when>`, relative to the store, once made.
    folder: Option<String>,
}

impl Quarantine<'_> {
    /// Moves the store's file `relative` (a link moves as the link) into the quarantine;
    /// says where.
    fn take(&mut self, relative: &str) -> Result<String> {
        let folder = match &self.folder {
            Some(folder) => folder.clone(),
            None => self.make()?,
        };
        let to = self.root.join(&folder).join(relative);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).map_err(|e| layout::io("cannot create", parent, e))?;
        }
        let from = self.root.join(relative);
        fs::rename(&from, &to).map_err(|e| layout::io("cannot move", &from, e))?;
        Ok(format!("moved to {folder}/{relative}"))
    }

    /// Writes `text` into the quarantine as `name` (lines cut out of the event log).
    fn keep(&mut self, name: &str, text: &str) -> Result<String> {
        let folder = match &self.folder {
            Some(folder) => folder.clone(),
            None => self.make()?,
        };
        let to = self.root.join(&folder).join(name);
        layout::replace(&to, text, crate::store::Synchronous::Full)?;
        Ok(format!("kept in {folder}/{name}"))
    }

    fn make(&mut self) -> Result<String> {
        let top = self.root.join("quarantine");
        if fs::symlink_metadata(&top).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(layout::link(&top));
        }
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
        let mut folder = format!("quarantine/{stamp}");
        let mut n = 1;
        while self.root.join(&folder).exists() {
            n += 1;
            folder = format!("quarantine/{stamp}-{n}");
        }
        let path = self.root.join(&folder);
        fs::create_dir_all(&path).map_err(|e| layout::io("cannot create", &path, e))?;
        self.folder = Some(folder.clone());
        Ok(folder)
    }
}

/// One check run: what it found, and whether it repairs.
struct Run<'a> {
    store: &'a FilesBackend,
    repair: bool,
    report: CheckReport,
    aside: Quarantine<'a>,
}

impl Run<'_> {
    /// Reports `relative` damaged; with `repair`, moves it into the quarantine.
    fn damaged(&mut self, relative: &str, problem: String) -> Result<()> {
        if self.repair {
            let done = self.aside.take(relative)?;
            self.report.repaired(relative, problem, done);
        } else {
            self.report.found(relative, problem);
        }
        Ok(())
    }

    /// The JSON file `relative`, read; `None` when it is missing or was found damaged.
    fn read<T: DeserializeOwned>(&mut self, relative: &str) -> Result<Option<T>> {
        let path = self.store.dir.join(relative);
        match layout::read(&path) {
            Ok(None) => Ok(None),
            Ok(Some(text)) => match serde_json::from_str(&text) {
                Ok(value) => Ok(Some(value)),
                Err(e) => self
                    .damaged(relative, format!("not readable: {e}"))
                    .map(|()| None),
            },
            Err(e) => self.damaged(relative, e.to_string()).map(|()| None),
        }
    }

    /// The files (not folders, not links) of the store's folder `relative`, by name.
    fn files_in(&mut self, relative: &str) -> Result<Vec<String>> {
        Ok(self
            .entries(relative)?
            .into_iter()
            .filter(|(_, is_dir)| !is_dir)
            .map(|(name, _)| name)
            .collect())
    }

    /// The entries of the store's folder `relative` (name, is a folder), links reported as
    /// damage and left out; none when it does not exist, or is itself a link (reported where
    /// it was met: never listed, so nothing outside the store is read).
    fn entries(&mut self, relative: &str) -> Result<Vec<(String, bool)>> {
        let folder = self.store.dir.join(relative);
        if fs::symlink_metadata(&folder).is_ok_and(|m| m.file_type().is_symlink()) {
            return Ok(Vec::new());
        }
        let read = match fs::read_dir(&folder) {
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(layout::io("cannot read", &folder, e)),
        };
        let mut out = Vec::new();
        for entry in read {
            let entry = entry.map_err(|e| layout::io("cannot read", &folder, e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let kind = entry
                .file_type()
                .map_err(|e| layout::io("cannot read", &entry.path(), e))?;
            if kind.is_symlink() {
                let problem = "a symbolic link: a files store never follows one".to_owned();
                self.damaged(&format!("{relative}/{name}"), problem)?;
            } else {
                out.push((name, kind.is_dir()));
            }
        }
        out.sort();
        Ok(out)
    }

    /// The store's top-level files and folders that must not be links.
    fn top_links(&mut self) -> Result<()> {
        for name in [
            "handoffs",
            "tasks",
            "docs",
            "pending.json",
            "settings.json",
            "journal.json",
            "events.jsonl",
            "quarantine",
        ] {
            let path = self.store.dir.join(name);
            if fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
                let problem = "a symbolic link: a files store never follows one".to_owned();
                self.damaged(name, problem)?;
            }
        }
        Ok(())
    }

    /// A journal is a write a killed writer left: finished here if it is one this store could
    /// have written, damage otherwise.
    fn journal(&mut self) -> Result<()> {
        let Some(journal) = self.read::<Journal>("journal.json")? else {
            return Ok(());
        };
        let checked = self
            .store
            .check_log(&journal)
            .and_then(|()| self.store.apply(&journal));
        match checked {
            Ok(()) => Ok(()),
            Err(e) => self.damaged("journal.json", e.to_string()),
        }
    }

    /// Every record file; the ids of those that are readable records.
    fn records(&mut self) -> Result<Vec<Handoff>> {
        let mut records = Vec::new();
        for name in self.files_in("handoffs")? {
            let Some(id) = name.strip_suffix(".json") else {
                continue;
            };
            let relative = format!("handoffs/{name}");
            if !is_ident(id) {
                self.damaged(&relative, "its name is not an id".to_owned())?;
                continue;
            }
            if let Some(record) = self.read::<Handoff>(&relative)? {
                if record.id == id {
                    records.push(record);
                } else {
                    let problem = format!("it holds handoff {}, not {id}", record.id);
                    self.damaged(&relative, problem)?;
                }
            }
        }
        Ok(records)
    }

    /// Every hop file; the highest place they hold. A hop of a record that is not among
    /// `records` (gone or damaged) is damage too: it would break its task's chain.
    fn hops(&mut self, records: &BTreeSet<&str>) -> Result<Option<u64>> {
        let mut highest = None;
        for (name, is_dir) in self.entries("tasks")? {
            if !is_dir {
                if name.strip_suffix(".json").is_some_and(is_ident) {
                    self.read::<Vec<Hop>>(&format!("tasks/{name}"))?;
                }
                continue;
            }
            if !is_ident(&name) {
                continue;
            }
            for file in self.files_in(&format!("tasks/{name}"))? {
                let relative = format!("tasks/{name}/{file}");
                if !file.strip_suffix(".json").is_some_and(is_ident) {
                    continue;
                }
                let Some(hop) = self.read::<HopFile>(&relative)? else {
                    continue;
                };
                if records.contains(hop.hop.handoff_id.as_str()) {
                    highest = highest.max(Some(hop.pos));
                } else {
                    let problem = orphan("a hop of", &hop.hop.handoff_id);
                    self.damaged(&relative, problem)?;
                }
            }
        }
        Ok(highest)
    }

    /// Every document file, folders walked.
    fn docs(&mut self) -> Result<()> {
        let mut folders = vec!["docs".to_owned()];
        while let Some(folder) = folders.pop() {
            for (name, is_dir) in self.entries(&folder)? {
                let relative = format!("{folder}/{name}");
                if is_dir && is_ident(&name) {
                    folders.push(relative);
                } else if !is_dir && layout::place(&relative).is_some() {
                    self.read::<DocFile>(&relative)?;
                }
            }
        }
        Ok(())
    }

    /// The event log: unreadable lines and events of records not among `records` cut out
    /// (kept in the quarantine) and a torn end mended; the highest `seq`.
    fn events(&mut self, records: &BTreeSet<&str>) -> Result<u64> {
        let path = self.store.dir.join("events.jsonl");
        let text = match layout::read(&path) {
            Ok(Some(text)) => text,
            Ok(None) => return Ok(0),
            Err(e) => {
                self.damaged("events.jsonl", e.to_string())?;
                return Ok(0);
            }
        };
        let mut kept = String::with_capacity(text.len());
        let mut cut = String::new();
        let mut highest = 0;
        let mut torn = false;
        for (number, line) in (1..).zip(text.split_inclusive('\n')) {
            let whole = line.strip_suffix('\n');
            match serde_json::from_str::<Event>(whole.unwrap_or(line)) {
                Ok(event) if !records.contains(event.handoff_id.as_str()) => {
                    let what = format!("events.jsonl line {number}");
                    self.report
                        .found(what, orphan("an event of", &event.handoff_id));
                    cut.push_str(line);
                    if whole.is_none() {
                        cut.push('\n');
                    }
                    torn |= whole.is_none();
                }
                Ok(event) => {
                    highest = highest.max(event.seq);
                    kept.push_str(line);
                    if whole.is_none() {
                        kept.push('\n');
                        torn = true;
                        let what = format!("events.jsonl line {number}");
                        self.report.found(what, "the last line has lost its end");
                    }
                }
                Err(e) => {
                    let what = format!("events.jsonl line {number}");
                    match whole {
                        Some(_) => self.report.found(what, format!("not an event: {e}")),
                        None => self.report.found(what, "a torn last line"),
                    }
                    cut.push_str(line);
                    torn |= whole.is_none();
                }
            }
        }
        if self.repair && (!cut.is_empty() || torn) {
            let kept_where = match cut.is_empty() {
                true => None,
                false => Some(self.aside.keep("events.jsonl", &cut)?),
            };
            layout::replace(&path, &kept, self.store.sync)?;
            for damage in self.report.damage.iter_mut() {
                if damage.what.starts_with("events.jsonl line ") && damage.repaired.is_none() {
                    damage.repaired = Some(match &kept_where {
                        Some(at) => format!("the log mended, the lines cut {at}"),
                        None => "the log mended".to_owned(),
                    });
                }
            }
        }
        Ok(highest)
    }

    /// The index: rebuilt from the records when it is gone or unreadable while records are
    /// open; entries whose record is gone taken out. `last_seq` and `last_hop` are the
    /// highest event `seq` and hop place the files hold.
    fn index(&mut self, records: &[Handoff], last_seq: u64, last_hop: u64) -> Result<()> {
        let ids: BTreeSet<&str> = records.iter().map(|h| h.id.as_str()).collect();
        let mut open: Vec<&Handoff> = records
            .iter()
            .filter(|h| matches!(h.status, Status::Pending | Status::Claimed))
            .collect();
        let mut index = match self.read::<Index>("pending.json")? {
            Some(index) => index,
            None if open.is_empty() => return Ok(()),
            None => {
                let problem = format!(
                    "missing or unreadable, while {} records are open",
                    open.len()
                );
                if !self.repair {
                    self.report.found("pending.json", problem);
                    return Ok(());
                }
                open.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
                let index = Index {
                    next_seq: last_seq + 1,
                    next_hop: last_hop + 1,
                    open: open.into_iter().map(|h| open_entry(h, None)).collect(),
                };
                self.write_index(&index)?;
                let done = "rebuilt from the records (claims held now must be made again)";
                self.report.repaired("pending.json", problem, done);
                return Ok(());
            }
        };
        let before = index.open.len();
        let mut gone = Vec::new();
        index.open.retain(|entry| {
            let kept = ids.contains(entry.id.as_str());
            if !kept {
                gone.push(entry.id.clone());
            }
            kept
        });
        for id in &gone {
            let problem = orphan("it names", id);
            match self.repair {
                true => self
                    .report
                    .repaired("pending.json", problem, "taken out of the index"),
                false => self.report.found("pending.json", problem),
            }
        }
        if self.repair && index.open.len() != before {
            self.write_index(&index)?;
        }
        Ok(())
    }

    fn write_index(&self, index: &Index) -> Result<()> {
        let text = serde_json::to_string(index).map_err(|e| Error::storage(e.to_string()))?;
        layout::replace(&self.store.dir.join("pending.json"), &text, self.store.sync)
    }

    /// Files others may read (stores written before every file was created owner-only).
    #[cfg(unix)]
    fn permissions(&mut self, relative: &str) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let path = self.store.dir.join(relative);
        let Ok(meta) = fs::symlink_metadata(&path) else {
            return Ok(());
        };
        if !meta.is_file() || meta.permissions().mode() & 0o077 == 0 {
            return Ok(());
        }
        let problem = format!(
            "readable by others (mode {:o}): it holds what callers wrote",
            meta.permissions().mode() & 0o777
        );
        if self.repair {
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600))
                .map_err(|e| layout::io("cannot change", &path, e))?;
            self.report.repaired(relative, problem, "made owner-only");
        } else {
            self.report.found(relative, problem);
        }
        Ok(())
    }
}

/// The problem of something that refers to a record the store does not have (any more).
fn orphan(what: &str, id: &str) -> String {
    format!("{what} handoff {id}, whose record is missing or damaged")
}

impl FilesBackend {
    /// Checks (and with `repair`, mends) the store; the caller holds the lock.
    pub(super) fn check_files(&self, repair: bool) -> Result<CheckReport> {
        let mut run = Run {
            store: self,
            repair,
            report: CheckReport::default(),
            aside: Quarantine {
                root: &self.dir,
                folder: None,
            },
        };
        run.top_links()?;
        run.journal()?;
        run.read::<std::collections::BTreeMap<String, String>>("settings.json")?;
        let records = run.records()?;
        let ids: BTreeSet<&str> = records.iter().map(|h| h.id.as_str()).collect();
        let last_hop = run.hops(&ids)?.unwrap_or(0);
        run.docs()?;
        let last_seq = run.events(&ids)?;
        run.index(&records, last_seq, last_hop)?;
        #[cfg(unix)]
        for relative in ["events.jsonl", "pending.json", "settings.json"]
            .into_iter()
            .map(str::to_owned)
            .chain(records.iter().map(|h| format!("handoffs/{}.json", h.id)))
        {
            run.permissions(&relative)?;
        }
        Ok(run.report)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Write;
    use std::time::Duration;

    use super::*;
    use crate::store::{Store, Synchronous};
    use crate::{ListFilter, NewHandoff};

    fn whats(report: &CheckReport) -> Vec<&str> {
        report.damage.iter().map(|d| d.what.as_str()).collect()
    }

    #[test]
    fn damage_is_reported_by_name_then_moved_aside_and_the_store_works_again() {
        let outer = tempfile::tempdir().unwrap();
        let dir = outer.path().join("store");
        let store = Store::new(FilesBackend::open(&dir, Synchronous::Normal).unwrap());
        assert!(store.check(false).unwrap().is_clean());
        let gone = store.create(NewHandoff::new("t", "deleted")).unwrap();
        let empty = store.create(NewHandoff::new("t", "emptied")).unwrap();
        let fine = store.create(NewHandoff::new("t", "untouched")).unwrap();
        fs::remove_file(dir.join(format!("handoffs/{}.json", gone.id))).unwrap();
        fs::write(dir.join(format!("handoffs/{}.json", empty.id)), "").unwrap();
        let log = dir.join("events.jsonl");
        let text = fs::read_to_string(&log).unwrap();
        fs::write(&log, text.replacen("{", "{{", 1)).unwrap();
        fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .unwrap()
            .write_all(b"{\"seq\":9")
            .unwrap();
        let outside = outer.path().join("outside.json");
        fs::write(&outside, "keep me").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&outside, dir.join("handoffs/planted.json")).unwrap();

        let before = fs::read(&log).unwrap();
        let found = store.check(false).unwrap();
        let empty_file = format!("handoffs/{}.json", empty.id);
        let hop = |h: &crate::Handoff| format!("tasks/t/{}.json", h.id);
        let (gone_hop, empty_hop) = (hop(&gone), hop(&empty));
        // Line 1 is broken, line 2 the event of the emptied record, line 4 torn.
        let mut expected = vec![
            empty_file.as_str(),
            gone_hop.as_str(),
            empty_hop.as_str(),
            "events.jsonl line 1",
            "events.jsonl line 2",
            "events.jsonl line 4",
            "pending.json",
            "pending.json",
        ];
        #[cfg(unix)]
        expected.insert(0, "handoffs/planted.json");
        assert_eq!(whats(&found), expected, "{found:#?}");
        assert!(found.damage.iter().all(|d| d.repaired.is_none()));
        assert!(
            found.damage[found.damage.len() - 2]
                .problem
                .contains(&gone.id)
        );
        assert_eq!(
            fs::read(&log).unwrap(),
            before,
            "a check alone changes nothing"
        );

        let repaired = store.check(true).unwrap();
        assert_eq!(whats(&repaired), expected);
        assert!(
            repaired.damage.iter().all(|d| d.repaired.is_some()),
            "{repaired:#?}"
        );
        assert!(store.check(false).unwrap().is_clean());
        let aside = dir.join("quarantine");
        let folder = fs::read_dir(&aside)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        assert!(folder.join(&empty_file).exists());
        assert!(
            fs::read_to_string(folder.join("events.jsonl"))
                .unwrap()
                .starts_with("{{")
        );
        assert_eq!(fs::read_to_string(&outside).unwrap(), "keep me");
        // The queue works again: the untouched record is the one to claim.
        let claim = store
            .claim_next("b", None, Duration::from_secs(60))
            .unwrap()
            .unwrap();
        assert_eq!(claim.handoff_id(), fine.id);
        store.complete(&claim, "done").unwrap();
        assert_eq!(store.list(&ListFilter::default()).unwrap().len(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_that_is_a_link_is_reported_and_never_listed() {
        let outer = tempfile::tempdir().unwrap();
        let dir = outer.path().join("store");
        let store = Store::new(FilesBackend::open(&dir, Synchronous::Normal).unwrap());
        store.create(NewHandoff::new("t", "kept")).unwrap();
        let elsewhere = outer.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        fs::write(elsewhere.join("not-ours.json"), "{").unwrap();
        fs::rename(dir.join("handoffs"), outer.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.join("handoffs")).unwrap();
        let found = store.check(false).unwrap();
        assert!(whats(&found).contains(&"handoffs"), "{found:#?}");
        assert!(
            !whats(&found).iter().any(|w| w.contains("not-ours")),
            "{found:#?}"
        );
        store.check(true).unwrap();
        assert!(elsewhere.join("not-ours.json").exists());
        assert!(!dir.join("handoffs").exists());
    }

    #[test]
    fn a_planted_journal_is_moved_aside_by_a_repair() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(FilesBackend::open(dir.path(), Synchronous::Normal).unwrap());
        let h = store.create(NewHandoff::new("t", "kept")).unwrap();
        let planted = r#"{"files":[["../x.json",{}]],"events":[],"events_len":0}"#;
        fs::write(dir.path().join("journal.json"), planted).unwrap();
        assert!(store.get(&h.id).is_err());
        let found = store.check(false).unwrap();
        assert_eq!(whats(&found), ["journal.json"]);
        assert!(dir.path().join("journal.json").exists());
        store.check(true).unwrap();
        assert_eq!(store.get(&h.id).unwrap().goal, "kept");
    }

    #[test]
    fn an_unreadable_index_is_rebuilt_from_the_records() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(FilesBackend::open(dir.path(), Synchronous::Normal).unwrap());
        let first = store.create(NewHandoff::new("t", "first")).unwrap();
        store.create(NewHandoff::new("t", "second")).unwrap();
        fs::write(dir.path().join("pending.json"), "{").unwrap();
        assert!(
            store
                .claim_next("b", None, Duration::from_secs(60))
                .is_err()
        );
        let repaired = store.check(true).unwrap();
        assert_eq!(whats(&repaired), ["pending.json", "pending.json"]);
        let claim = store
            .claim_next("b", None, Duration::from_secs(60))
            .unwrap()
            .unwrap();
        assert_eq!(claim.handoff_id(), first.id);
        // Events after the rebuild follow the log's last one.
        let seqs: Vec<u64> = store.events(None).unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 2, 3]);
    }
}
