//! One function per subcommand: open the store, call the core, describe the result.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use handoff_core::{
    ChainPolicy, Claim, Error, Handoff, ListFilter, NewHandoff, Problem, Store, validate,
};
use serde_json::json;

use crate::args::{Command, CreateCmd, EventsArgs};
use crate::error::{CliError, CliResult, code};
use crate::fields::{CheckpointArgs, CreateArgs};
use crate::output::{self, Output, Reply, to_json};
use crate::policy::Overrides;
use crate::spawn::{self, SpawnConfig};

/// What every command needs besides its own arguments: the store's path, the policy options
/// (read and checked before any store is opened) and how records are shown.
pub(crate) struct Ctx {
    pub db: PathBuf,
    pub policy: Overrides,
    pub out: Output,
}

impl Ctx {
    /// Opens the store for a command that may write, under the run's chain policy.
    pub(crate) fn open(&self) -> CliResult<Store> {
        Ok(self.policy.apply(open(&self.db)?))
    }

    /// Opens an existing store under the run's chain policy; a missing file is an error.
    fn open_existing(&self) -> CliResult<Store> {
        Ok(self.policy.apply(open_existing(&self.db)?))
    }
}

/// What a command leaves to print, and the exit code.
pub(crate) struct Done {
    /// `None` when the command wrote its output itself (`export` to stdout).
    pub reply: Option<Reply>,
    pub exit: u8,
}

impl From<Reply> for Done {
    fn from(reply: Reply) -> Self {
        Done {
            reply: Some(reply),
            exit: code::OK,
        }
    }
}

/// Opens the store for a command that may write: the file is created when missing.
pub(crate) fn open(db: &Path) -> CliResult<Store> {
    // The core creates its `<db>-lock` turnstile before it finds out that a file is not a
    // store; a refused open must leave nothing behind, so remove the lock file if it was ours.
    let mut lock = db.as_os_str().to_owned();
    lock.push("-lock");
    let lock = PathBuf::from(lock);
    let lock_existed = lock.exists();
    Store::open(db).map_err(|e| {
        if !lock_existed {
            let _ = std::fs::remove_file(&lock);
        }
        e.into()
    })
}

/// Opens the store for a command on existing handoffs: a missing file is an error, never
/// created (only `create`, `import` and `mcp` create a store).
fn open_existing(db: &Path) -> CliResult<Store> {
    if !db.exists() {
        return Err(CliError::MissingStore(db.to_path_buf()));
    }
    open(db)
}

/// A claim rebuilt from a token given on the command line; the core checks the token.
pub(crate) fn claim_from_token(
    store: &Store,
    id: &str,
    token: u64,
    lease: u64,
) -> CliResult<Claim> {
    Ok(Claim {
        handoff: store.get(id)?,
        token,
        lease: Duration::from_secs(lease),
    })
}

/// The events `args` select, oldest first: one handoff's, a task's, or all; after a
/// sequence number and at most a number of them.
pub(crate) fn select_events(
    store: &Store,
    args: &EventsArgs,
) -> CliResult<Vec<handoff_core::Event>> {
    if args.handoff_id.is_some() && args.task_id.is_some() {
        return Err(Error::invalid("task_id", "give a handoff id or a task id, not both").into());
    }
    let mut events = store.events(args.handoff_id.as_deref())?;
    if let Some(task_id) = &args.task_id {
        let ids: std::collections::BTreeSet<String> = store
            .list(&ListFilter {
                task_id: Some(task_id.clone()),
                ..ListFilter::default()
            })?
            .into_iter()
            .map(|h| h.id)
            .collect();
        events.retain(|e| ids.contains(&e.handoff_id));
    }
    if let Some(after) = args.after {
        events.retain(|e| e.seq > after);
    }
    if let Some(limit) = args.limit {
        events.truncate(limit);
    }
    Ok(events)
}

pub(crate) fn run(ctx: &Ctx, command: Command) -> CliResult<Done> {
    let out = &ctx.out;
    let record_reply =
        |h: Handoff| -> Done { Reply::new(out.record_line(&h), out.record(&h)).into() };
    match command {
        Command::List(args) => {
            let records = ctx.open_existing()?.list(&args.into_filter())?;
            Ok(Reply::new(out.handoff_table(&records), out.records(&records)).into())
        }
        Command::Show { id } => {
            let h = ctx.open_existing()?.get(&id)?;
            Ok(Reply::new(out.markdown(&h), out.record(&h)).into())
        }
        Command::Create(cmd) => create(ctx, *cmd),
        Command::Claim { id, claim } => {
            let store = ctx.open_existing()?;
            let claimed =
                store.claim(&id, &claim.agent, Duration::from_secs(claim.lease_seconds))?;
            let spawn = SpawnConfig::from_opts(&claim.spawn);
            Ok(after_claim(
                ctx,
                &store,
                claimed,
                spawn,
                claim.additional_instructions.as_deref(),
            ))
        }
        Command::ClaimNext { task_id, claim } => {
            let store = ctx.open_existing()?;
            let lease = Duration::from_secs(claim.lease_seconds);
            match store.claim_next(&claim.agent, task_id.as_deref(), lease)? {
                Some(claimed) => {
                    let spawn = SpawnConfig::from_opts(&claim.spawn);
                    Ok(after_claim(
                        ctx,
                        &store,
                        claimed,
                        spawn,
                        claim.additional_instructions.as_deref(),
                    ))
                }
                None => Ok(Reply::new("nothing to claim\n", serde_json::Value::Null).into()),
            }
        }
        Command::Heartbeat {
            id,
            token,
            lease_seconds,
        } => {
            let store = ctx.open_existing()?;
            let claim = claim_from_token(&store, &id, token.token, lease_seconds)?;
            Ok(record_reply(store.heartbeat(&claim)?))
        }
        Command::Release { id, token, reason } => {
            let store = ctx.open_existing()?;
            let claim = claim_from_token(&store, &id, token.token, 0)?;
            Ok(record_reply(store.release(&claim, &reason)?))
        }
        Command::Complete { id, token, outcome } => {
            let store = ctx.open_existing()?;
            let claim = claim_from_token(&store, &id, token.token, 0)?;
            Ok(record_reply(store.complete(&claim, &outcome)?))
        }
        Command::Reject { id, agent, reason } => Ok(record_reply(
            ctx.open_existing()?.reject(&id, &agent, &reason)?,
        )),
        Command::Cancel { id, by, reason } => Ok(record_reply(ctx.open_existing()?.cancel(
            &id,
            &by,
            reason.as_deref(),
        )?)),
        Command::Chain { task_id } => {
            let chain = ctx.open_existing()?.chain(&task_id)?;
            Ok(Reply::new(output::chain_text(&chain), output::chain_json(&chain)).into())
        }
        Command::Events(args) => {
            let events = select_events(&ctx.open_existing()?, &args)?;
            Ok(Reply::new(out.events_text(&events), out.events_json(&events)).into())
        }
        Command::Stats => {
            let stats = ctx.open_existing()?.stats()?;
            Ok(Reply::new(output::stats_text(&stats), to_json(&stats)).into())
        }
        Command::Checkpoint(cmd) => {
            let (task_id, agent, content) = CheckpointArgs::from_flags(*cmd)?.into_parts()?;
            let h = ctx.open_existing()?.checkpoint(&task_id, &agent, content)?;
            let text = format!("checkpoint {}", out.record_line(&h));
            Ok(Reply::new(text, out.record(&h)).into())
        }
        Command::Stalled { older_than_seconds } => {
            let tasks = ctx
                .open_existing()?
                .stalled(Duration::from_secs(older_than_seconds))?;
            Ok(Reply::new(
                output::stalled_text(&tasks, older_than_seconds),
                json!(tasks),
            )
            .into())
        }
        Command::Export { output } => export(&ctx.db, output),
        Command::Import {
            file,
            unfinished_only,
        } => import(&ctx.db, file, unfinished_only),
        Command::Mcp { .. } => unreachable_mcp(),
    }
}

/// `mcp` is dispatched by `main` before a command runs; reaching here is a usage error.
fn unreachable_mcp() -> CliResult<Done> {
    Err(Error::invalid("command", "mcp is not a one-shot command").into())
}

fn create(ctx: &Ctx, cmd: CreateCmd) -> CliResult<Done> {
    let new = match &cmd.json_input {
        Some(source) => read_new_handoff(source)?,
        None => CreateArgs::from_flags(cmd)?.into_new()?,
    };
    // Refuse bad input before the store is opened, so that it creates no file. The core
    // validates again on create (with the store's own limits, and the parent and chain).
    let id = new.id.clone().unwrap_or_else(|| "unsaved".to_owned());
    new.clone()
        .into_record(id, chrono::Utc::now())
        .validate(&validate::Limits::default())?;
    let h = ctx.open()?.create(new)?;
    let text = format!("created {}\n", ctx.out.record_line(&h).trim_end());
    Ok(Reply::new(text, ctx.out.record(&h)).into())
}

/// Reads all of `source` (a path, or `-` for stdin), refusing more than `limit` bytes.
fn read_text(source: Option<&Path>, limit: usize) -> CliResult<String> {
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
    read.map_err(|e| CliError::io(format!("cannot read {name}"), e))?;
    if text.len() > limit {
        return Err(Error::invalid("input", format!("{name} is larger than {limit} bytes")).into());
    }
    Ok(text)
}

fn read_new_handoff(source: &str) -> CliResult<NewHandoff> {
    let path = (source != "-").then(|| Path::new(source));
    let limit = validate::Limits::default().max_record_bytes;
    let text = read_text(path, limit)?;
    serde_json::from_str(&text).map_err(|e| {
        Error::invalid("json-input", format!("not a NewHandoff JSON object: {e}")).into()
    })
}

/// Prints the claim, or runs the successor on it.
fn after_claim(
    ctx: &Ctx,
    store: &Store,
    claim: Claim,
    spawn: Option<SpawnConfig>,
    additional_instructions: Option<&str>,
) -> Done {
    let out = &ctx.out;
    let Some(config) = spawn else {
        return Reply::new(out.claim_text(&claim), out.claim_json(&claim)).into();
    };
    let prompt = out.prompt(&claim.handoff, additional_instructions);
    let report = spawn::run(store, &ctx.db, &claim, &config, prompt);
    let exit = if report.succeeded() {
        code::OK
    } else if let Some(e) = report.lease_lost.as_ref().or(report.settle_error.as_ref()) {
        e.exit_code()
    } else {
        code::SPAWN_FAILED
    };
    Done {
        reply: Some(report.reply(out)),
        exit,
    }
}

fn export(db: &Path, output: Option<PathBuf>) -> CliResult<Done> {
    let records = open_existing(db)?.list(&ListFilter::default())?;
    let mut lines = String::new();
    for h in &records {
        lines.push_str(&h.to_json());
        lines.push('\n');
    }
    match output {
        None => {
            output::write_stdout(&lines)?;
            Ok(Done {
                reply: None,
                exit: code::OK,
            })
        }
        Some(path) => {
            std::fs::write(&path, lines)
                .map_err(|e| CliError::io(format!("cannot write {}", path.display()), e))?;
            let text = format!(
                "exported {} handoffs to {}\n",
                records.len(),
                path.display()
            );
            let json = json!({ "exported": records.len(), "path": path.display().to_string() });
            Ok(Reply::new(text, json).into())
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
fn import(db: &Path, file: Option<PathBuf>, unfinished_only: bool) -> CliResult<Done> {
    let path = file.filter(|p| p.as_os_str() != "-");
    let text = read_text(path.as_deref(), MAX_IMPORT_BYTES)?;
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
    let store = open(db)?.with_policy(ChainPolicy::unlimited());
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
