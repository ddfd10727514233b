//! The command line, as clap parses it.

use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use handoff_core::{Kind, ListFilter, Status};
use schemars::JsonSchema;
use serde::Deserialize;

/// Inspect and fix a handoff-core store, or serve it to coding agents over MCP.
#[derive(Debug, Parser)]
#[command(name = "handoff", version, about, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    /// The SQLite store. Read-only commands never create it.
    #[arg(
        long,
        global = true,
        env = "HANDOFF_DB",
        default_value = "handoff.db",
        value_name = "PATH"
    )]
    pub db: PathBuf,

    /// Print machine-readable JSON (errors as {"error": {...}} on stderr).
    #[arg(long, global = true)]
    pub json: bool,

    /// Show records as written, secrets included. By default every record text the CLI prints
    /// (and, for `handoff mcp --no-redact`, every tool result and successor prompt) has its
    /// secrets replaced by `[REDACTED:<rule>]`. `export` is always lossless.
    #[arg(long, global = true)]
    pub no_redact: bool,

    /// How long a write waits for another process's write lock before it gives up with exit
    /// code 8 (BUSY); a stopped or stuck writer costs the others at most this. Reads never wait.
    #[arg(
        long,
        global = true,
        env = "HANDOFF_LOCK_PATIENCE",
        value_name = "SECONDS",
        value_parser = clap::value_parser!(u64).range(0..=MAX_LOCK_PATIENCE_SECONDS)
    )]
    pub lock_patience: Option<u64>,

    #[command(flatten)]
    pub policy: PolicyOpts,

    #[command(subcommand)]
    pub command: Command,
}

/// The longest `--lock-patience` (a day).
pub(crate) const MAX_LOCK_PATIENCE_SECONDS: u64 = 24 * 60 * 60;

pub(crate) const EXIT_CODES: &str = "\
Exit codes (and the error's code, which --json prints as {\"error\": {\"code\", ...}} on stderr):
  0  ok
  1  the spawned successor command failed (the handoff was released)
  2  invalid input: bad arguments, an unreadable input file, an export onto the store
     (VALIDATION)
  3  no handoff has this id (NOT_FOUND)
  4  conflict: claimed by someone else, a stale token or wrong claim secret, an id reused
     with other content (ALREADY_CLAIMED, LEASE_LOST, CONFLICT)
  5  the new hop breaks the chain policy (CHAIN_VIOLATION)
  6  storage: a missing, corrupt, foreign or read-only database file, or an output file that
     cannot be written (STORAGE)
  7  not allowed in the handoff's state, or not by this agent (INVALID_TRANSITION)
  8  another process held the store's write lock longer than --lock-patience; nothing was
     changed, try again (BUSY)";

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List handoffs, oldest first.
    List(ListArgs),
    /// Show one handoff as the Markdown DNA a successor reads (--json: the record).
    Show {
        /// The handoff id.
        id: String,
    },
    /// Create a pending handoff.
    Create(Box<CreateCmd>),
    /// Claim a handoff; prints its fencing token, its claim secret (to you only) and its DNA.
    Claim {
        /// The handoff id.
        id: String,
        #[command(flatten)]
        claim: ClaimOpts,
    },
    /// Claim the oldest handoff the agent may take.
    ClaimNext {
        /// Only within this task.
        #[arg(long)]
        task_id: Option<String>,
        #[command(flatten)]
        claim: ClaimOpts,
    },
    /// Extend a claim's lease.
    Heartbeat {
        /// The handoff id.
        id: String,
        #[command(flatten)]
        proof: ClaimProof,
        /// The new lease, counted from now.
        #[arg(long, default_value_t = DEFAULT_LEASE_SECONDS)]
        lease_seconds: u64,
    },
    /// Give a claimed handoff back; it becomes pending again.
    Release {
        /// The handoff id.
        id: String,
        #[command(flatten)]
        proof: ClaimProof,
        /// Why.
        #[arg(long, default_value = "released")]
        reason: String,
    },
    /// Finish a claimed handoff.
    Complete {
        /// The handoff id.
        id: String,
        #[command(flatten)]
        proof: ClaimProof,
        /// The result.
        #[arg(long, default_value = "")]
        outcome: String,
    },
    /// Refuse a handoff addressed to you.
    Reject {
        /// The handoff id.
        id: String,
        /// The refusing agent (the addressee).
        #[arg(long)]
        agent: String,
        /// Why.
        #[arg(long)]
        reason: String,
    },
    /// Withdraw a pending or claimed handoff: as its creator (--by), or as its holder
    /// (--token and --secret of the claim).
    #[command(group(ArgGroup::new("who").required(true).args(["by", "secret"])))]
    Cancel {
        /// The handoff id.
        id: String,
        /// The creator (from_agent); anyone when the handoff names no creator.
        #[arg(long)]
        by: Option<String>,
        /// The holder's claim secret (with --token).
        #[arg(long, requires = "token", value_name = "SECRET")]
        secret: Option<String>,
        /// The holder's fencing token (with --secret).
        #[arg(long, requires = "secret")]
        token: Option<u64>,
        /// Why.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Show a task's chain of hops.
    Chain {
        /// The task id.
        task_id: String,
    },
    /// Show the event log of one handoff, a task, or the whole store, oldest first.
    Events(EventsArgs),
    /// Per from→to pair: totals, outcomes and median times.
    Stats,
    /// Save an agent's progress on a task without handing it over.
    Checkpoint(Box<CheckpointCmd>),
    /// Tasks in progress with no claim, heartbeat or checkpoint for this long.
    Stalled {
        /// How long without a sign of life, in seconds.
        #[arg(long, value_name = "SECONDS")]
        older_than_seconds: u64,
    },
    /// Write every record as one canonical JSON object per line.
    Export {
        /// Write here instead of standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Write a consistent copy of the store (an SQLite snapshot, owner-only) to a new file,
    /// while the store stays in use; the copy opens like any store.
    Backup {
        /// The new file; it must not exist.
        path: PathBuf,
    },
    /// Read records written by `export` (JSON lines) and create them.
    Import {
        /// The file to read; `-` or absent for standard input.
        file: Option<PathBuf>,
        /// Import only records that were pending or claimed in the source.
        #[arg(long)]
        unfinished_only: bool,
    },
    /// The chain policy and limits saved in the store, which every process that opens it
    /// applies unless it is given its own.
    Policy {
        #[command(subcommand)]
        action: PolicyAction,
    },
    /// Serve the store to MCP clients over stdio.
    Mcp {
        #[command(flatten)]
        spawn: SpawnOpts,
    },
}

/// `handoff policy ...`
#[derive(Debug, Subcommand)]
pub(crate) enum PolicyAction {
    /// Print the saved policy (and the one this run applies, with the global options).
    Show,
    /// Save the policy the global options give (--policy, --agents, --max-handoffs,
    /// --max-revisits, over the policy saved so far) into the store; creates the store if need be.
    Save,
}

pub(crate) const DEFAULT_LEASE_SECONDS: u64 = 300;

/// The longest a spawned successor may be given (24 hours).
pub(crate) const MAX_SPAWN_TIMEOUT_SECONDS: u64 = 24 * 60 * 60;

/// The chain policy for this run: a JSON file, an agents folder, and flags that override both.
/// Without any of them the store's own policy applies (the saved one, or the default).
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct PolicyOpts {
    /// Most hops along one path of a task (overrides the policy file).
    #[arg(long, global = true, env = "HANDOFF_MAX_HANDOFFS", value_name = "N")]
    pub max_handoffs: Option<usize>,
    /// How often an agent may reappear on a path, e.g. 1 for manager → worker → manager
    /// (overrides the policy file).
    #[arg(long, global = true, env = "HANDOFF_MAX_REVISITS", value_name = "N")]
    pub max_revisits: Option<usize>,
    /// A JSON policy file: {"max_handoffs": 10, "max_revisits": 3, "collaborators":
    /// {"manager": ["worker"], "worker": ["manager"]}}; every key optional, unknown keys refused.
    #[arg(
        long = "policy",
        global = true,
        env = "HANDOFF_POLICY",
        value_name = "FILE"
    )]
    pub policy_file: Option<PathBuf>,
    /// A folder of agent Markdown files: their `## Collaborations` sections say who may hand
    /// off to whom (overrides the policy file's collaborators).
    #[arg(long, global = true, env = "HANDOFF_AGENTS", value_name = "DIR")]
    pub agents: Option<PathBuf>,
}

/// `events`' filters: the CLI flags, and the `handoff_events` tool's arguments.
#[derive(Debug, Default, Args, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventsArgs {
    /// Only this handoff's events.
    #[arg(value_name = "ID")]
    #[serde(default)]
    pub handoff_id: Option<String>,
    /// Only the events of this task's handoffs.
    #[arg(long)]
    #[serde(default)]
    pub task_id: Option<String>,
    /// Only events after this sequence number (to page through the log).
    #[arg(long, value_name = "SEQ")]
    #[serde(default)]
    pub after: Option<u64>,
    /// At most this many.
    #[arg(long)]
    #[serde(default)]
    pub limit: Option<usize>,
}

/// `list`'s filters: the CLI flags, and the `handoff_list` tool's arguments.
#[derive(Debug, Args, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListArgs {
    /// Only handoffs in this status.
    #[arg(long)]
    #[serde(default)]
    pub status: Option<Status>,
    /// Only handoffs of this task.
    #[arg(long)]
    #[serde(default)]
    pub task_id: Option<String>,
    /// Only handoffs addressed to this agent.
    #[arg(long)]
    #[serde(default)]
    pub to_agent: Option<String>,
    /// Only handoffs of this kind.
    #[arg(long)]
    #[serde(default)]
    pub kind: Option<Kind>,
    /// At most this many.
    #[arg(long)]
    #[serde(default)]
    pub limit: Option<usize>,
}

impl ListArgs {
    pub(crate) fn into_filter(self) -> ListFilter {
        ListFilter {
            status: self.status,
            task_id: self.task_id,
            to_agent: self.to_agent,
            kind: self.kind,
            limit: self.limit,
            after: None,
        }
    }
}

/// What settles a claim: its fencing token and its secret, both printed by `claim`.
#[derive(Debug, Args)]
pub(crate) struct ClaimProof {
    /// The fencing token the claim returned.
    #[arg(long)]
    pub token: u64,
    /// The claim secret the claim returned (hcs_...); a `--spawn` successor finds it in
    /// HANDOFF_CLAIM_SECRET. Prefer the variable: a command line is visible to other users.
    #[arg(
        long,
        env = "HANDOFF_CLAIM_SECRET",
        hide_env_values = true,
        value_name = "SECRET"
    )]
    pub secret: String,
}

#[derive(Debug, Args)]
pub(crate) struct ClaimOpts {
    /// The claiming agent.
    #[arg(long)]
    pub agent: String,
    /// How long the claim lasts without a heartbeat.
    #[arg(long, default_value_t = DEFAULT_LEASE_SECONDS)]
    pub lease_seconds: u64,
    #[command(flatten)]
    pub spawn: SpawnOpts,
    /// With --spawn: more guidance for the successor, appended to its prompt under
    /// "## Additional Instructions" (redacted like the rest).
    #[arg(long, value_name = "TEXT", requires = "spawn")]
    pub additional_instructions: Option<String>,
}

/// How to start a successor on a claimed handoff.
#[derive(Clone, Debug, Args)]
pub(crate) struct SpawnOpts {
    /// After claiming, run this command (through `sh -c`) with the DNA, heartbeat while it
    /// runs, complete on exit 0 and release otherwise.
    #[arg(long, value_name = "CMD")]
    pub spawn: Option<String>,
    /// How the command receives the Markdown DNA.
    #[arg(long, value_enum, default_value_t = DnaMode::Stdin, requires = "spawn")]
    pub spawn_dna: DnaMode,
    /// Kill the command and release the handoff after this many seconds (1 to 86400).
    #[arg(
        long,
        value_name = "SECONDS",
        requires = "spawn",
        value_parser = clap::value_parser!(u64).range(1..=MAX_SPAWN_TIMEOUT_SECONDS)
    )]
    pub spawn_timeout: Option<u64>,
}

/// Where a spawned command finds the DNA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum DnaMode {
    /// On its standard input.
    Stdin,
    /// As its last argument.
    Arg,
}

/// `create`: the fields under their Python names, or a whole NewHandoff JSON.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("fields").multiple(true)))]
pub(crate) struct CreateCmd {
    /// Read a NewHandoff JSON object (the record's field names) from FILE, or `-` for stdin.
    #[arg(long, value_name = "FILE", conflicts_with = "fields")]
    pub json_input: Option<String>,
    /// The task this handoff belongs to.
    #[arg(long, group = "fields", required_unless_present = "json_input")]
    pub task_id: Option<String>,
    /// What the successor must achieve.
    #[arg(long, group = "fields", required_unless_present = "json_input")]
    pub goal: Option<String>,
    /// The agent handing over.
    #[arg(long, group = "fields")]
    pub from_agent: Option<String>,
    /// The agent addressed; any agent may claim when absent.
    #[arg(long, group = "fields")]
    pub to_agent: Option<String>,
    /// full, partial, escalation, checkpoint, initialization, progress, error_recovery.
    #[arg(long, group = "fields")]
    pub kind: Option<Kind>,
    /// explicit, task_complete, context_limit_<pct>, timeout_<secs>s, "error: <message>"; or
    /// bare context_limit with --context-pct, bare timeout with --timeout-seconds.
    #[arg(long, group = "fields")]
    pub reason: Option<String>,
    /// How full the handing-over agent's context was (0..=100).
    #[arg(long, group = "fields")]
    pub context_pct: Option<u8>,
    /// With a bare --reason timeout: how long the agent ran, in seconds.
    #[arg(long, group = "fields")]
    pub timeout_seconds: Option<u64>,
    /// Where the work stands.
    #[arg(long, group = "fields")]
    pub progress: Option<String>,
    /// A step already done (repeat for more).
    #[arg(long, group = "fields")]
    pub completed: Vec<String>,
    /// A step still to do (repeat for more).
    #[arg(long, group = "fields")]
    pub pending: Vec<String>,
    /// A decision taken (repeat for more).
    #[arg(long = "decision", alias = "decisions", group = "fields")]
    pub decisions: Vec<String>,
    /// An assumption (repeat for more).
    #[arg(long = "assumption", alias = "assumptions", group = "fields")]
    pub assumptions: Vec<String>,
    /// A warning for the successor (repeat for more).
    #[arg(long = "warning", alias = "warnings", group = "fields")]
    pub warnings: Vec<String>,
    /// An unresolved error (repeat for more).
    #[arg(long = "error", alias = "errors", group = "fields")]
    pub errors: Vec<String>,
    /// A modified file (repeat for more).
    #[arg(long = "file", alias = "files", group = "fields")]
    pub files: Vec<String>,
    /// A blocker (repeat for more).
    #[arg(long = "blocker", alias = "blockers", group = "fields")]
    pub blockers: Vec<String>,
    /// A locked file (repeat for more).
    #[arg(long = "locked-file", alias = "locked-files", group = "fields")]
    pub locked_files: Vec<String>,
    /// A priority item (repeat for more).
    #[arg(long = "priority-item", alias = "priority-items", group = "fields")]
    pub priority_items: Vec<String>,
    /// A success criterion (repeat for more).
    #[arg(
        long = "success-criterion",
        alias = "success-criteria",
        group = "fields"
    )]
    pub success_criteria: Vec<String>,
    /// Guidance for the successor.
    #[arg(long, group = "fields")]
    pub instructions: Option<String>,
    /// A JSON object carried along unchanged.
    #[arg(long, group = "fields", value_name = "JSON")]
    pub metadata: Option<String>,
    /// A caller-chosen id: creating again with the same content returns the same record.
    #[arg(long, group = "fields")]
    pub id: Option<String>,
    /// The handoff this one continues.
    #[arg(long, group = "fields")]
    pub parent_id: Option<String>,
    /// The handing-over agent's session.
    #[arg(long, group = "fields")]
    pub session_id: Option<String>,
    /// When an unclaimed handoff expires (RFC 3339).
    #[arg(long, group = "fields")]
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
    /// How many claims may lapse before the handoff fails.
    #[arg(long, group = "fields")]
    pub max_attempts: Option<u32>,
}

/// `checkpoint`: an agent's progress on a task, saved without a hand-over.
#[derive(Debug, Args)]
pub(crate) struct CheckpointCmd {
    /// The task.
    #[arg(long)]
    pub task_id: String,
    /// The agent saving its progress.
    #[arg(long)]
    pub agent: String,
    /// What the agent is achieving.
    #[arg(long)]
    pub goal: String,
    /// Where the work stands.
    #[arg(long)]
    pub progress: Option<String>,
    /// A step already done (repeat for more).
    #[arg(long)]
    pub completed: Vec<String>,
    /// A step still to do (repeat for more).
    #[arg(long)]
    pub pending: Vec<String>,
    /// A decision taken (repeat for more).
    #[arg(long = "decision", alias = "decisions")]
    pub decisions: Vec<String>,
    /// An assumption (repeat for more).
    #[arg(long = "assumption", alias = "assumptions")]
    pub assumptions: Vec<String>,
    /// A warning (repeat for more).
    #[arg(long = "warning", alias = "warnings")]
    pub warnings: Vec<String>,
    /// An unresolved error (repeat for more).
    #[arg(long = "error", alias = "errors")]
    pub errors: Vec<String>,
    /// A modified file (repeat for more).
    #[arg(long = "file", alias = "files")]
    pub files: Vec<String>,
    /// A blocker (repeat for more).
    #[arg(long = "blocker", alias = "blockers")]
    pub blockers: Vec<String>,
    /// Notes for whoever resumes.
    #[arg(long)]
    pub instructions: Option<String>,
    /// How full the agent's context is (0..=100).
    #[arg(long)]
    pub context_pct: Option<u8>,
    /// A JSON object carried along unchanged.
    #[arg(long, value_name = "JSON")]
    pub metadata: Option<String>,
    /// A caller-chosen id (an idempotency key).
    #[arg(long)]
    pub id: Option<String>,
    /// The record this checkpoint follows (default: the task's latest).
    #[arg(long)]
    pub parent_id: Option<String>,
    /// The agent's session.
    #[arg(long)]
    pub session_id: Option<String>,
}
