//! The commands that are not store operations (`export`, `backup`, `import`, `policy`), and
//! what every command shares: the context, opening the store, what is left to print.

use std::io::Read;
use std::path::{Path, PathBuf};

use handoff_core::{
    ChainPolicy, ConnectOptions, Error, Handoff, NewHandoff, Problem, Store, validate,
};
use serde_json::{Value, json};

use crate::args::{Command, PolicyAction};
use crate::error::{CliError, CliResult, code};
use crate::location::Location;
use crate::output::{self, Output, Reply, to_json};
use crate::policy::Overrides;

/// What every command needs besides its own arguments: the store and how to open it (the
/// global options, `read_only` being `--read-only`), the policy options (read and checked
/// before any store is opened) and how records are shown.
pub(crate) struct Ctx {
    pub db: Location,
    pub options: ConnectOptions,
    pub policy: Overrides,
    pub out: Output,
}

impl Ctx {
    /// Opens (or creates) the store for a command that may write, under the run's policy.
    pub(crate) fn open(&self) -> CliResult<Store> {
        self.policy.apply(open(&self.db, &self.options)?)
    }

    /// Opens an existing store for a command that writes; a missing one is an error.
    pub(crate) fn open_existing(&self) -> CliResult<Store> {
        if !self.db.exists() {
            return Err(CliError::MissingStore(self.db.clone()));
        }
        self.open()
    }

    /// Opens an existing store for reading only: nothing on disk is created or changed, so a
    /// read-only SQLite file or folder can be read and a file that is not a store is left as
    /// it is. Other stores are connected to once they are known to exist (see
    /// [`Location::exists`]).
    pub(crate) fn open_read(&self) -> CliResult<Store> {
        self.policy.apply(open_read(&self.db, &self.options)?)
    }
}

/// What a command leaves to print, and the exit code.
pub(crate) struct Done {
    /// `None` when the command wrote its output itself (`export` to stdout, `events`).
    pub reply: Option<Reply>,
    pub exit: u8,
}

impl Done {
    /// The command printed everything itself.
    pub(crate) fn printed() -> Done {
        Done {
            reply: None,
            exit: code::OK,
        }
    }
}

impl From<Reply> for Done {
    fn from(reply: Reply) -> Self {
        Done {
            reply: Some(reply),
            exit: code::OK,
        }
    }
}

/// Opens the store for a command that may write: it is created when missing. With
/// `--read-only`, as [`open_read`]: a store is never created for reading.
pub(crate) fn open(db: &Location, options: &ConnectOptions) -> CliResult<Store> {
    if options.read_only {
        return open_read(db, options);
    }
    // A refused open must leave nothing behind: remove a `<db>-lock` turnstile it created.
    let lock = db.sqlite_file().and_then(|db| {
        let mut lock = db.as_os_str().to_owned();
        lock.push("-lock");
        let lock = PathBuf::from(lock);
        (!lock.exists()).then_some(lock)
    });
    db.connect(options).map_err(|e| {
        if let Some(lock) = lock {
            let _ = std::fs::remove_file(&lock);
        }
        e.into()
    })
}

/// Opens an existing store for reading only; a missing one is an error, never created. An
/// SQLite file is opened read-only, so that a `0444` file, one in a read-only folder or
/// another user's can be read; other stores have no read-only mode, and are opened as they
/// are unless `--read-only` asks for one (which they refuse).
pub(crate) fn open_read(db: &Location, options: &ConnectOptions) -> CliResult<Store> {
    if !db.exists() {
        return Err(CliError::MissingStore(db.clone()));
    }
    let options = ConnectOptions {
        read_only: options.read_only || db.sqlite_file().is_some(),
        ..options.clone()
    };
    Ok(db.connect(&options)?)
}

/// Runs a hand-written command.
pub(crate) fn run(ctx: &Ctx, command: Command) -> CliResult<Done> {
    match command {
        Command::Export { output } => export(ctx, output),
        Command::Backup { path } => {
            let store = ctx.open_read()?;
            let summary = store.backup(&path)?;
            let text = format!(
                "backed up {} to {}: {}\n",
                ctx.db.shown(),
                path.display(),
                counted(&summary)
            );
            let mut json = json!(summary);
            json["backup"] = json!(path.display().to_string());
            Ok(Reply::new(text, json).into())
        }
        Command::Restore { path } => {
            let store = ctx.open()?;
            let summary = store.restore(&path)?;
            let text = format!(
                "restored {} into {}: {}\n",
                path.display(),
                ctx.db.shown(),
                counted(&summary)
            );
            let mut json = json!(summary);
            json["restored"] = json!(path.display().to_string());
            Ok(Reply::new(text, json).into())
        }
        Command::Keygen { file } => keygen(&file),
        Command::Import {
            file,
            unfinished_only,
        } => import(ctx, file, unfinished_only),
        Command::Policy { action } => policy(ctx, &action),
        Command::Mcp { .. } | Command::Serve { .. } => servers_are_not_commands(),
    }
}

/// What a backup holds, in words.
fn counted(summary: &handoff_core::store::BackupSummary) -> String {
    format!(
        "{} handoffs, {} events, {} documents, {} settings",
        summary.records, summary.events, summary.documents, summary.settings
    )
}

/// `mcp` and `serve` are dispatched by `main` before a command runs; reaching here is a usage
/// error.
fn servers_are_not_commands() -> CliResult<Done> {
    Err(Error::invalid("command", "a server is not a one-shot command").into())
}

/// `handoff keygen FILE`: a key pair for signing bundles, the secret half in a new owner-only
/// file, the public half printed.
fn keygen(file: &Path) -> CliResult<Done> {
    let keys = handoff_core::bundle::BundleKeyPair::generate()?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(file).and_then(|mut f| {
        std::io::Write::write_all(&mut f, format!("{}\n", keys.secret_key).as_bytes())
    });
    if let Err(e) = written {
        let rule = match e.kind() {
            std::io::ErrorKind::AlreadyExists => {
                "must not exist: a key file is never overwritten".to_owned()
            }
            _ => format!("cannot be written: {e}"),
        };
        return Err(
            handoff_core::Error::invalid("file", format!("{} {rule}", file.display())).into(),
        );
    }
    let text = format!(
        "secret key written to {} (keep it as you would a password)\npublic key: {}\n",
        file.display(),
        keys.public_key
    );
    let json =
        json!({ "public_key": keys.public_key, "secret_key_file": file.display().to_string() });
    Ok(Reply::new(text, json).into())
}

/// Reads all of `source` (a path, or `-` for stdin), refusing more than `limit` bytes.
pub(crate) fn read_text(field: &str, source: Option<&Path>, limit: usize) -> CliResult<String> {
    let name = source.map_or_else(|| "standard input".to_owned(), |p| p.display().to_string());
    let mut text = String::new();
    let read = match source {
        None => std::io::stdin()
            .lock()
            .take(limit as u64 + 1)
            .read_to_string(&mut text),
        Some(path) => std::fs::File::open(path)
            .and_then(|f| f.take(limit as u64 + 1).read_to_string(&mut text)),
    };
    read.map_err(|e| CliError::input(field, format!("cannot read {name}"), e))?;
    if text.len() > limit {
        return Err(Error::invalid("input", format!("{name} is larger than {limit} bytes")).into());
    }
    Ok(text)
}

pub(crate) fn read_new_handoff(source: &str) -> CliResult<NewHandoff> {
    let path = (source != "-").then(|| Path::new(source));
    let limit = validate::Limits::default().max_record_bytes;
    let text = read_text("json-input", path, limit)?;
    serde_json::from_str(&text).map_err(|e| {
        Error::invalid("json-input", format!("not a NewHandoff JSON object: {e}")).into()
    })
}

fn export(ctx: &Ctx, output: Option<PathBuf>) -> CliResult<Done> {
    match output {
        None => {
            let store = ctx.open_read()?;
            let mut sink = output::Sink::stdout();
            crate::export::write_records(&store, |line| {
                sink.write(line)?;
                Ok(!sink.closed())
            })?;
            sink.finish()?;
            Ok(Done::printed())
        }
        Some(path) => {
            let target = crate::export::target(&ctx.db, &path)?;
            let store = ctx.open_read()?;
            let count = crate::export::to_file(&store, &target)?;
            let text = format!("exported {count} handoffs to {}\n", path.display());
            let json = json!({ "exported": count, "path": path.display().to_string() });
            Ok(Reply::new(text, json).into())
        }
    }
}

/// The chain policy and limits saved in `store`, if any, and the ones it applies: what `policy
/// show` and the MCP tool `handoff_policy` answer.
pub(crate) fn policies(store: &Store) -> CliResult<(Option<Value>, Value)> {
    let pair = |policy: &ChainPolicy, limits: &validate::Limits| json!({ "chain_policy": to_json(policy), "limits": to_json(limits) });
    let saved = store
        .saved_policy()?
        .map(|(policy, limits)| pair(&policy, &limits));
    Ok((saved, pair(store.policy(), store.limits())))
}

/// `policy show` and `policy save`.
fn policy(ctx: &Ctx, action: &PolicyAction) -> CliResult<Done> {
    match action {
        PolicyAction::Show => {
            let (saved, in_force) = policies(&ctx.open_read()?)?;
            let mut text = match &saved {
                Some(saved) => format!("saved in the store: {saved}\n"),
                None => "no policy is saved in the store: the default applies\n".to_owned(),
            };
            if saved.as_ref() != Some(&in_force) {
                text.push_str(&format!("this run applies: {in_force}\n"));
            }
            Ok(Reply::new(text, json!({ "saved": saved, "in_force": in_force })).into())
        }
        PolicyAction::Save => {
            let store = ctx.open()?;
            store.save_policy()?;
            let (_, saved) = policies(&store)?;
            let text = format!(
                "saved in {}: {saved}\nevery process that opens it without its own policy applies it\n",
                ctx.db.shown()
            );
            Ok(Reply::new(text, json!({ "saved": saved })).into())
        }
    }
}

/// The most `import` reads at once.
const MAX_IMPORT_BYTES: usize = 1 << 30;

/// Creates the records of an export file in one transaction.
///
/// What is carried over is each record's content and id (so parent links and chains survive
/// and importing the same file again changes nothing). The lifecycle is not: the core has no
/// write that restores one, so every imported record starts pending, with a `created` event at
/// import time. `--unfinished-only` leaves out records that were finished in the source.
/// Imported hops are history, not new hand-offs: the chain policy is not applied to them.
fn import(ctx: &Ctx, file: Option<PathBuf>, unfinished_only: bool) -> CliResult<Done> {
    let path = file.filter(|p| p.as_os_str() != "-");
    let text = read_text("file", path.as_deref(), MAX_IMPORT_BYTES)?;
    let mut records = Vec::new();
    let mut skipped = 0usize;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let h = Handoff::from_json(line).map_err(|e| at_line(i + 1, e))?;
        if unfinished_only && h.status.is_terminal() {
            skipped += 1;
            continue;
        }
        records.push(h);
    }
    let store = open(&ctx.db, &ctx.options)?.with_policy(ChainPolicy::unlimited());
    let mut existing = 0usize;
    for h in &records {
        match store.get(&h.id) {
            Ok(_) => existing += 1,
            Err(e) if e.kind() == handoff_core::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    let reopened = records.iter().filter(|h| h.status.is_terminal()).count();
    let news = records
        .into_iter()
        .map(NewHandoff::from)
        .collect::<Vec<_>>();
    let total = news.len();
    store.create_many(news)?;
    let created = total - existing;
    let mut text =
        format!("imported {total} handoffs: {created} created, {existing} already present");
    if skipped > 0 {
        text.push_str(&format!(", {skipped} finished ones skipped"));
    }
    text.push('\n');
    if reopened > 0 && created > 0 {
        text.push_str(&format!(
            "note: {reopened} were finished in the source; import keeps content, not lifecycle, \
             so new ones start pending (use --unfinished-only to leave them out)\n"
        ));
    }
    let json = json!({
        "imported": total, "created": created, "already_present": existing,
        "skipped": skipped, "finished_in_source": reopened,
    });
    Ok(Reply::new(text, json).into())
}

fn at_line(line: usize, e: Error) -> CliError {
    match e {
        Error::Validation { problems } => Error::Validation {
            problems: problems
                .into_iter()
                .map(|p| Problem::new(format!("line {line}: {}", p.field), p.rule))
                .collect(),
        }
        .into(),
        other => other.into(),
    }
}
