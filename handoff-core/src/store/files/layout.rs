//! Which paths a files store reads and writes, and how it opens them.
//!
//! The folder is meant to be tracked by git, so anything in it may come from someone else's
//! commit: a journal naming `../victim.txt`, a record id in `pending.json` that is a path, a
//! `pending.tmp` that is a link to a file outside. So the store touches only the files of its
//! own layout, each named by a path whose every part follows the id rule (no `..`, nothing
//! absolute), never through a symbolic link: a link met on the way is refused by name, never
//! followed, and temporary files are created new, exclusively.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::store::Synchronous;
use crate::validate::is_ident;

/// What a path of the layout is to the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// A file a write replaces or removes through its journal: `pending.json`,
    /// `settings.json`, `handoffs/<id>.json`, `tasks/<task>.json`, `tasks/<task>/<id>.json`,
    /// `docs/<kind>/<key>.json`.
    Data,
    /// `journal.json` and `events.jsonl`: written by the store's own steps, never as the
    /// content of a journal.
    Own,
}

/// Where `relative` (`/`-separated) sits in the layout, or `None` when it is no file of it.
pub(super) fn place(relative: &str) -> Option<Place> {
    let json = |name: &str| name.strip_suffix(".json").is_some_and(is_ident);
    let parts: Vec<&str> = relative.split('/').collect();
    let data = match parts.as_slice() {
        ["journal.json" | "events.jsonl"] => return Some(Place::Own),
        ["pending.json" | "settings.json"] => true,
        ["handoffs" | "tasks", file] => json(file),
        ["tasks", task, file] => is_ident(task) && json(file),
        ["docs", kind, folders @ .., file] => {
            is_ident(kind) && folders.iter().all(|f| is_ident(f)) && json(file)
        }
        _ => false,
    };
    data.then_some(Place::Data)
}

/// The error for a path that is no file of the layout; `from` says where it was read.
pub(super) fn foreign(relative: &str, from: &str) -> Error {
    Error::storage(format!(
        "{from} names `{relative}`, which is not a file of a files store (each part of its \
         path must be an id: no `..`, nothing absolute); it was refused and nothing was written"
    ))
}

/// The error for a symbolic link met where the store keeps a file or folder.
pub(super) fn link(path: &Path) -> Error {
    Error::storage(format!(
        "{} is a symbolic link: a files store never follows one (it could lead outside the \
         store); move it aside, or run `handoff check --repair`",
        path.display()
    ))
}

pub(super) fn io(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::Storage {
        message: format!("{what} {}: {e}", path.display()),
        source: Some(Box::new(e)),
    }
}

/// `root/relative` for a file of the layout, after checking that no folder on the way from
/// `root` is a symbolic link. The file itself is opened without following one.
pub(super) fn resolve(root: &Path, relative: &str, from: &str) -> Result<PathBuf> {
    if place(relative).is_none() {
        return Err(foreign(relative, from));
    }
    let mut folder = root.to_path_buf();
    let mut parts = relative.split('/').peekable();
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            return Ok(root.join(relative));
        }
        folder.push(part);
        match fs::symlink_metadata(&folder) {
            Ok(meta) if meta.file_type().is_symlink() => return Err(link(&folder)),
            Ok(_) => {}
            // Folders not made yet are made by the write, as real folders.
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(root.join(relative)),
            Err(e) => return Err(io("cannot read", &folder, e)),
        }
    }
    Ok(root.join(relative))
}

/// Adds "do not follow a link in the last part" where the platform can say so.
fn no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(options, libc::O_NOFOLLOW);
    options
}

/// Owner-only permissions for a file created: a store's files hold what its callers wrote.
fn private(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(options, 0o600);
    options
}

/// Whether `e` is what opening a symbolic link without following it gives.
fn is_link_error(e: &std::io::Error, path: &Path) -> bool {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        return true;
    }
    let _ = e;
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Opens `path` as `options` say, never through a link in its last part.
pub(super) fn open(path: &Path, options: &mut OpenOptions) -> std::io::Result<File> {
    no_follow(options).open(path)
}

/// The text of `path`, `None` if there is no such file.
pub(super) fn read(path: &Path) -> Result<Option<String>> {
    let mut file = match open(path, OpenOptions::new().read(true)) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) if is_link_error(&e, path) => return Err(link(path)),
        Err(e) => return Err(io("cannot read", path, e)),
    };
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|e| io("cannot read", path, e))?;
    Ok(Some(text))
}

/// Opens the event log for appending and cutting, creating it owner-only.
pub(super) fn open_log(path: &Path) -> Result<File> {
    open(
        path,
        private(
            OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true),
        ),
    )
    .map_err(|e| match is_link_error(&e, path) {
        true => link(path),
        false => io("cannot open", path, e),
    })
}

/// Replaces `path` with `content` atomically: a temporary file beside it, created new and
/// owner-only (a leftover of a killed writer, or a link planted there, is removed first: the
/// link itself, never what it points to), fsync (with [`Synchronous::Full`]), rename (which
/// replaces a link at `path` rather than writing through it).
pub(super) fn replace(path: &Path, content: &str, sync: Synchronous) -> Result<()> {
    let tmp = path.with_extension("tmp");
    match fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(io("cannot remove", &tmp, e)),
    }
    let mut file = open(
        &tmp,
        private(OpenOptions::new().write(true).create_new(true)),
    )
    .map_err(|e| io("cannot write", &tmp, e))?;
    file.write_all(content.as_bytes())
        .and_then(|()| match sync {
            Synchronous::Full => file.sync_all(),
            Synchronous::Normal => Ok(()),
        })
        .map_err(|e| io("cannot write", &tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| io("cannot replace", path, e))
}

pub(super) fn sync_dir(dir: &Path, sync: Synchronous) -> Result<()> {
    if sync == Synchronous::Normal {
        return Ok(());
    }
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io("cannot sync", dir, e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn only_the_layouts_files_have_a_place() {
        for path in [
            "pending.json",
            "settings.json",
            "handoffs/h-1.json",
            "tasks/t1.json",
            "tasks/t1/h-1.json",
            "docs/task/t1.json",
            "docs/step/t1/s1.json",
        ] {
            assert_eq!(place(path), Some(Place::Data), "{path}");
        }
        assert_eq!(place("journal.json"), Some(Place::Own));
        assert_eq!(place("events.jsonl"), Some(Place::Own));
        for path in [
            "../written.json",
            "../victim.txt",
            "/etc/passwd",
            "handoffs/../../x.json",
            "handoffs/...json",
            "handoffs/x.txt",
            "handoffs//x.json",
            ".git/hooks/post-checkout",
            ".lock",
            "tasks/t/u/v.json",
            "docs/task.json",
            "",
        ] {
            assert_eq!(place(path), None, "{path}");
        }
    }

    #[test]
    fn a_link_on_the_way_is_refused_by_name() {
        let outside = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(outside.path(), root.path().join("handoffs")).unwrap();
        #[cfg(unix)]
        {
            let err = resolve(root.path(), "handoffs/x.json", "test").unwrap_err();
            assert!(err.to_string().contains("is a symbolic link"), "{err}");
        }
        assert!(resolve(root.path(), "tasks/t/x.json", "test").is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn replacing_never_writes_through_a_planted_link() {
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("target.txt");
        fs::write(&target, "mine").unwrap();
        let root = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&target, root.path().join("pending.tmp")).unwrap();
        std::os::unix::fs::symlink(&target, root.path().join("settings.json")).unwrap();
        replace(&root.path().join("pending.json"), "{}", Synchronous::Full).unwrap();
        replace(&root.path().join("settings.json"), "{}", Synchronous::Full).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "mine");
        assert_eq!(
            fs::read_to_string(root.path().join("pending.json")).unwrap(),
            "{}"
        );
        std::os::unix::fs::symlink(&target, root.path().join("events.jsonl")).unwrap();
        let err = open_log(&root.path().join("events.jsonl")).unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        std::os::unix::fs::symlink(&target, root.path().join("handoffs.json")).unwrap();
        let err = read(&root.path().join("handoffs.json")).unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
    }
}
