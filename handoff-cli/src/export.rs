//! `export`: every record as one canonical JSON line, to stdout or to a file.
//!
//! A file export never lands on the store: an output that is the database or one of its
//! companions (`-wal`, `-shm`, `-lock`, `-journal`), or inside a `files:` store's folder, is
//! refused, whatever path names it (a symlink, `..`, a hard link). The file is written beside its target under a temporary name and
//! renamed over it once complete, so a failed export leaves the old file as it was.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use handoff_core::{Error, ListFilter, Store};

use crate::error::{CliError, CliResult};
use crate::location::{Location, OnDisk};

/// The files SQLite and the core keep beside a store.
const COMPANIONS: [&str; 5] = ["", "-wal", "-shm", "-lock", "-journal"];

/// How many records one page of an export reads.
const PAGE: usize = 1_000;

/// Calls `line` with each record's JSON line, oldest first, until it returns `false`. Records
/// are read a page at a time, so an export's memory does not grow with the store.
pub(crate) fn write_records(
    store: &Store,
    mut line: impl FnMut(&str) -> CliResult<bool>,
) -> CliResult<usize> {
    let mut page = ListFilter {
        limit: Some(PAGE),
        ..ListFilter::default()
    };
    let mut count = 0;
    loop {
        let records = store.list(&page)?;
        let Some(last) = records.last() else {
            return Ok(count);
        };
        page.after = Some(last.id.clone());
        for h in &records {
            let mut json = h.to_json();
            json.push('\n');
            count += 1;
            if !line(&json)? {
                return Ok(count);
            }
        }
    }
}

/// The file `-o path` will replace, with symlinks followed, after checking that it is none of
/// the store's files.
pub(crate) fn target(store: &Location, path: &Path) -> CliResult<PathBuf> {
    let target = resolve(path)?;
    if target.is_dir() {
        return Err(refuse(path, "is a folder"));
    }
    let db = match store.on_disk() {
        Some(OnDisk::File(db)) => db,
        Some(OnDisk::Folder(dir)) => {
            if fs::canonicalize(dir).is_ok_and(|dir| target.starts_with(dir)) {
                return Err(refuse(
                    path,
                    "is inside the store's own folder (export to another file)",
                ));
            }
            return Ok(target);
        }
        None => return Ok(target),
    };
    let same_file = |candidate: &Path| {
        if fs::canonicalize(candidate).is_ok_and(|c| c == target) || candidate == target {
            return true;
        }
        same_inode(candidate, &target)
    };
    for base in store_bases(db) {
        for suffix in COMPANIONS {
            let mut name = base.as_os_str().to_owned();
            name.push(suffix);
            if same_file(Path::new(&name)) {
                return Err(refuse(
                    path,
                    &format!(
                        "is the store's own file {} (export to another file)",
                        Path::new(&name).display()
                    ),
                ));
            }
        }
    }
    Ok(target)
}

/// Writes the export to `target` through a temporary file in its folder; returns the count.
pub(crate) fn to_file(store: &Store, target: &Path) -> CliResult<usize> {
    let folder = target.parent().unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (temp_path, file) = temp_file(folder, &name)?;
    let written = (|| {
        let mut writer = BufWriter::new(file);
        let count = write_records(store, |line| {
            writer.write_all(line.as_bytes()).map_err(|e| {
                CliError::output(format!("cannot write {}", temp_path.display()), e)
            })?;
            Ok(true)
        })?;
        let file = writer.into_inner().map_err(|e| {
            CliError::output(
                format!("cannot write {}", temp_path.display()),
                e.into_error(),
            )
        })?;
        file.sync_all()
            .map_err(|e| CliError::output(format!("cannot write {}", temp_path.display()), e))?;
        fs::rename(&temp_path, target)
            .map_err(|e| CliError::output(format!("cannot replace {}", target.display()), e))?;
        Ok(count)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp_path);
    }
    written
}

/// A new file beside `name` in `folder`, readable by its owner only (an export holds every
/// record unredacted).
fn temp_file(folder: &Path, name: &str) -> CliResult<(PathBuf, File)> {
    let pid = std::process::id();
    for attempt in 0..100u32 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let path = folder.join(format!(".{name}.{pid}.{nanos:x}{attempt}.tmp"));
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        match options.open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(CliError::output(
                    format!("cannot create a file in {}", folder.display()),
                    e,
                ));
            }
        }
    }
    Err(Error::storage(format!(
        "cannot create a temporary file in {}",
        folder.display()
    ))
    .into())
}

/// `path` with every symlink followed: the file it names, or for a new file, its canonical
/// folder joined with its name.
fn resolve(path: &Path) -> CliResult<PathBuf> {
    if let Ok(canonical) = fs::canonicalize(path) {
        return Ok(canonical);
    }
    if path.symlink_metadata().is_ok() {
        return Err(refuse(path, "is a symbolic link to nothing"));
    }
    let name = path
        .file_name()
        .ok_or_else(|| refuse(path, "names no file"))?;
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let folder = fs::canonicalize(folder).map_err(|e| {
        CliError::input(
            "output",
            format!("cannot find the folder of {}", path.display()),
            e,
        )
    })?;
    Ok(folder.join(name))
}

/// The store's path as given, fully resolved, and with only its folder resolved: SQLite may
/// name its companion files after any of them.
fn store_bases(db: &Path) -> Vec<PathBuf> {
    let mut bases = vec![db.to_path_buf()];
    if let Ok(canonical) = fs::canonicalize(db) {
        bases.push(canonical);
    }
    if let Some(name) = db.file_name() {
        let folder = db
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if let Ok(folder) = fs::canonicalize(folder) {
            bases.push(folder.join(name));
        }
    }
    bases
}

#[cfg(unix)]
fn same_inode(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_inode(_: &Path, _: &Path) -> bool {
    false
}

fn refuse(path: &Path, why: &str) -> CliError {
    Error::invalid("output", format!("{} {why}", path.display())).into()
}
