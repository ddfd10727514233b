//! One function per subcommand: open the store, call the core, describe the result.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use handoff_core::{
    ChainPolicy, Claim, ClaimRef, ClaimSecret, Error, EventFilter, Handoff, NewHandoff, Problem,
    SqliteOptions, Store, validate,
};
use serde_json::json;

use crate::args::{
    ClaimProof, Command, CreateCmd, DEFAULT_LEASE_SECONDS, EventsArgs, PolicyAction,
};
use crate::error::{CliError, CliResult, code};
use crate::fields::{CheckpointArgs, CreateArgs};
use crate::output::{self, Output, Reply, to_json};
use crate::policy::Overrides;
use crate::spawn::{self, SpawnConfig};

/// What every command needs besides its own arguments: the store's path and how to open it,
/// the policy options (read and checked before any store is opened) and how records are shown.
pub(crate) struct Ctx {
    pub db: PathBuf,
    pub options: SqliteOptions,
    pub policy: Overrides,
    pub out: Output,
}

impl Ctx {
    /// Opens (or creates) the store for a command that may write, under the run's policy.
    pub(crate) fn open(&self) -> CliResult<Store> {
        self.policy.apply(open(&self.db, &self.options)?)
    }

    /// Opens an existing store for a command that writes; a missing file is an error.
    fn open_existing(&self) -> CliResult<Store> {
        if !self.db.exists() {
            return Err(CliError::MissingStore(self.db.clone()));
        }
        self.open()
    }

    /// Opens an existing store for reading only: nothing on disk is created or changed, so a
    /// read-only file or folder can be read and a file that is not a store is left as it is.
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
    fn printed() -> Done {
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

/// Opens the store for a command that may write: the file is created when missing.
pub(crate) fn open(db: &Path, options: &SqliteOptions) -> CliResult<Store> {
    // A refused open must leave nothing behind: remove a `<db>-lock` turnstile it created.
    let mut lock = db.as_os_str().to_owned();
    lock.push("-lock");
    let lock = PathBuf::from(lock);
    let lock_existed = lock.exists();
    Store::open_with(db, options).map_err(|e| {
        if !lock_existed {
            let _ = std::fs::remove_file(&lock);
        }
        e.into()
    })
}

/// Opens an existing store for reading only; a missing file is an error, never created.
pub(crate) fn open_read(db: &Path, options: &SqliteOptions) -> CliResult<Store> {
    if !db.exists() {
        return Err(CliError::MissingStore(db.to_path_buf()));
    }
    Ok(Store::open_read_only(db, options)?)
}

/// The claim a caller proves with the token and secret `claim` gave it. The record is not
/// read again: the core checks both in the transaction that settles the claim.
pub(crate) fn claim_ref(
    id: &str,
    token: u64,
    secret: &str,
    lease_seconds: u64,
) -> CliResult<ClaimRef> {
    Ok(ClaimRef {
        handoff_id: id.to_owned(),
        token,
        secret: ClaimSecret::parse(secret)?,
        lease: Duration::from_secs(lease_seconds),
    })
}

fn proven(id: &str, proof: &ClaimProof, lease_seconds: u64) -> CliResult<ClaimRef> {
    claim_ref(id, proof.token, &proof.secret, lease_seconds)
}

/// The most events read at once: `events` pages through a log of any length in this much.
pub(crate) const EVENTS_PAGE: usize = 1000;

/// The event filter `args` describe, checked.
pub(crate) fn event_filter(args: &EventsArgs) -> CliResult<EventFilter> {
    if args.handoff_id.is_some() && args.task_id.is_some() {
        return Err(Error::invalid("task_id", "give a handoff id or a task id, not both").into());
    }
    Ok(EventFilter {
        handoff_id: args.handoff_id.clone(),
        task_id: args.task_id.clone(),
        after: args.after,
        limit: args.limit,
    })
}

/// Streams the events `args` select to stdout, a page at a time: memory stays flat however
/// long the log is.
fn events(ctx: &Ctx, args: &EventsArgs, as_json: bool) -> CliResult<Done> {
    let mut filter = event_filter(args)?;
    let store = ctx.open_read()?;
    let mut left = filter.limit;
    let mut sink = output::Sink::stdout();
    let mut table = output::EventsTable::default();
    let mut any = false;
    if as_json {
        sink.write("[")?;
    }
    loop {
        let page = left.map_or(EVENTS_PAGE, |n| n.min(EVENTS_PAGE));
        if page == 0 || sink.closed() {
            break;
        }
        filter.limit = Some(page);
        let events = store.events_page(&filter)?;
        let Some(last) = events.last() else { break };
        filter.after = Some(last.seq);
        left = left.map(|n| n - events.len());
        if as_json {
            for e in &events {
                sink.write(if any { "," } else { "" })?;
                sink.write(&ctx.out.event_json(e).to_string())?;
                any = true;
            }
        } else {
            any = true;
            sink.write(&table.rows(&ctx.out, &events))?;
        }
        if events.len() < page {
            break;
        }
    }
    if as_json {
        sink.write("]\n")?;
    } else if !any {
        sink.write("no events\n")?;
    }
    sink.finish()?;
    Ok(Done::printed())
}

pub(crate) fn run(ctx: &Ctx, command: Command, as_json: bool) -> CliResult<Done> {
    let out = &ctx.out;
    let record_reply =
        |h: Handoff| -> Done { Reply::new(out.record_line(&h), out.record(&h)).into() };
    match command {
        Command::List(args) => {
            let records = ctx.open_read()?.list(&args.into_filter())?;
            if !as_json {
                return Ok(Reply::new(out.handoff_table(&records), json!(null)).into());
            }
            // One record at a time: the JSON text of a large store is never held whole.
            let mut sink = output::Sink::stdout();
            sink.write("[")?;
            for (i, h) in records.iter().enumerate() {
                if sink.closed() {
                    break;
                }
                sink.write(if i == 0 { "" } else { "," })?;
                sink.write(&out.record(h).to_string())?;
            }
            sink.write("]\n")?;
            sink.finish()?;
            Ok(Done::printed())
        }
        Command::Show { id } => {
            let h = ctx.open_read()?.get(&id)?;
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
            proof,
            lease_seconds,
        } => {
            let claim = proven(&id, &proof, lease_seconds)?;
            Ok(record_reply(ctx.open_existing()?.heartbeat(claim)?))
        }
        Command::Release { id, proof, reason } => {
            let claim = proven(&id, &proof, DEFAULT_LEASE_SECONDS)?;
            Ok(record_reply(ctx.open_existing()?.release(claim, &reason)?))
        }
        Command::Complete { id, proof, outcome } => {
            let claim = proven(&id, &proof, DEFAULT_LEASE_SECONDS)?;
            Ok(record_reply(
                ctx.open_existing()?.complete(claim, &outcome)?,
            ))
        }
        Command::Reject { id, agent, reason } => Ok(record_reply(
            ctx.open_existing()?.reject(&id, &agent, &reason)?,
        )),
        Command::Cancel {
            id,
            by,
            secret,
            token,
            reason,
        } => {
            let h = match (by, secret, token) {
                (_, Some(secret), Some(token)) => {
                    let claim = claim_ref(&id, token, &secret, DEFAULT_LEASE_SECONDS)?;
                    ctx.open_existing()?
                        .cancel_claim(claim, reason.as_deref())?
                }
                (Some(by), _, _) => ctx.open_existing()?.cancel(&id, &by, reason.as_deref())?,
                // clap requires --by, or --secret with --token.
                _ => return Err(Error::invalid("by", "give --by, or --token and --secret").into()),
            };
            Ok(record_reply(h))
        }
        Command::Chain { task_id } => {
            let chain = ctx.open_read()?.chain(&task_id)?;
            Ok(Reply::new(output::chain_text(&chain), output::chain_json(&chain)).into())
        }
        Command::Events(args) => events(ctx, &args, as_json),
        Command::Stats => {
            let stats = ctx.open_read()?.stats()?;
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
                .open_read()?
                .stalled(Duration::from_secs(older_than_seconds))?;
            Ok(Reply::new(
                output::stalled_text(&tasks, older_than_seconds),
                json!(tasks),
            )
            .into())
        }
        Command::Export { output } => export(ctx, output),
        Command::Backup { path } => {
            let store = ctx.open_read()?;
            store.backup(&path)?;
            let text = format!("backed up {} to {}\n", ctx.db.display(), path.display());
            let json = json!({ "backup": path.display().to_string() });
            Ok(Reply::new(text, json).into())
        }
        Command::Import {
            file,
            unfinished_only,
        } => import(ctx, file, unfinished_only),
        Command::Policy { action } => policy(ctx, &action),
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
fn read_text(field: &str, source: Option<&Path>, limit: usize) -> CliResult<String> {
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

fn read_new_handoff(source: &str) -> CliResult<NewHandoff> {
    let path = (source != "-").then(|| Path::new(source));
    let limit = validate::Limits::default().max_record_bytes;
    let text = read_text("json-input", path, limit)?;
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

/// `policy show` and `policy save`.
fn policy(ctx: &Ctx, action: &PolicyAction) -> CliResult<Done> {
    let policy_json = |store: &Store| json!({ "chain_policy": to_json(store.policy()), "limits": to_json(store.limits()) });
    match action {
        PolicyAction::Show => {
            let store = ctx.open_read()?;
            let saved = store.saved_policy()?.map(|(policy, limits)| {
                json!({ "chain_policy": to_json(&policy), "limits": to_json(&limits) })
            });
            let in_force = policy_json(&store);
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
            let saved = policy_json(&store);
            let text = format!(
                "saved in {}: {saved}\nevery process that opens it without its own policy applies it\n",
                ctx.db.display()
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
