//! The command line, as clap parses it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use handoff_core::Limits;
use handoff_core::ops::{Arguments, ConnectArgs};

/// Inspect and fix a handoff-core store, or serve it to coding agents over MCP.
#[derive(Debug, Parser)]
// The global options are listed after a subcommand's own.
#[command(name = "handoff", version, about, after_help = EXIT_CODES, next_display_order = 1000)]
pub(crate) struct Cli {
    /// The store: an SQLite file (a path, or sqlite:PATH), files:DIR (a folder of JSON
    /// files), memory: (empty, for this process only) or postgres://USER@HOST/DB?schema=NAME.
    /// Only commands that create records create it.
    #[arg(
        long,
        global = true,
        env = "HANDOFF_DB",
        default_value = "handoff.db",
        value_name = "PATH|URL"
    )]
    pub db: String,

    /// Print machine-readable JSON (errors as {"error": {...}} on stderr).
    #[arg(long, global = true)]
    pub json: bool,

    /// Show records as written, secrets included. By default every record text the CLI prints
    /// (and, for `handoff mcp --no-redact`, every tool result and successor prompt) has its
    /// secrets replaced by `[REDACTED:<rule>]`. `export` is always lossless.
    #[arg(long, global = true)]
    pub no_redact: bool,

    /// How long a write waits for another process's write lock on an SQLite file or a files:
    /// folder (default 60) before it gives up with exit code 8 (BUSY); a stopped or stuck
    /// writer costs the others at most this. Reads of an SQLite file never wait.
    #[arg(
        long,
        global = true,
        env = "HANDOFF_LOCK_PATIENCE",
        value_name = "SECONDS",
        value_parser = clap::value_parser!(u64).range(0..=MAX_LOCK_PATIENCE_SECONDS)
    )]
    pub lock_patience: Option<u64>,

    /// How durable each write is on an SQLite file or a files: folder: full survives a power
    /// loss; normal is faster, and may lose the last writes before one, never corrupting the
    /// store. Other stores leave it.
    #[arg(
        long,
        global = true,
        env = "HANDOFF_SYNCHRONOUS",
        value_enum,
        default_value_t = Synchronous::Full
    )]
    pub synchronous: Synchronous,

    /// Open the store for reading only, whatever the command: nothing on disk is created,
    /// migrated or changed, and a command that writes fails with exit code 6 (STORAGE). Only
    /// an SQLite file opens read-only; any other store refuses it with exit code 2, naming
    /// read_only. (Read commands open an SQLite file read-only anyway.)
    #[arg(long, global = true, env = "HANDOFF_READ_ONLY")]
    pub read_only: bool,

    /// How log lines are written on stderr: text, or one JSON object a line. Which lines is
    /// RUST_LOG's to say (info, handoff_core=debug, ...); by default warnings, and for serve
    /// also one line per request.
    #[arg(
        long,
        global = true,
        env = "HANDOFF_LOG_FORMAT",
        value_enum,
        default_value_t = crate::logging::LogFormat::Text
    )]
    pub log_format: crate::logging::LogFormat,

    #[command(flatten)]
    pub policy: PolicyOpts,

    /// A hand-written command; `None` for a store operation's subcommand.
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// The global options that say how the store opens, read by the core's
    /// [`ConnectArgs`] under its names, as every face reads them.
    pub(crate) fn connect_args(&self) -> handoff_core::Result<ConnectArgs> {
        let synchronous = self
            .synchronous
            .to_possible_value()
            .map(|value| value.get_name().to_owned());
        let args = serde_json::json!({
            "synchronous": synchronous,
            "lock_patience_seconds": self.lock_patience,
            "read_only": self.read_only,
        });
        ConnectArgs::read(args, &Limits::default())
    }
}

/// `--synchronous`: the core's `synchronous` option, with its values listed in the help.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Synchronous {
    /// Every write survives a power loss.
    Full,
    /// Faster; the last writes before a power loss may be lost, never corrupted.
    Normal,
}

/// The longest `--lock-patience` (a day).
pub(crate) const MAX_LOCK_PATIENCE_SECONDS: u64 = 24 * 60 * 60;

pub(crate) const EXIT_CODES: &str = "\
Exit codes (and the error's code, which --json prints as {\"error\": {\"code\", ...}} on stderr):
  0  ok
  1  the spawned successor command failed (the handoff was released)
  2  invalid input: bad arguments, an unreadable input file, an export onto the store
     (VALIDATION); `handoff mcp --credentials` without a token they list (UNAUTHORIZED)
  3  no handoff has this id (NOT_FOUND)
  4  conflict: claimed by someone else, a stale token or wrong claim secret, an id reused
     with other content (ALREADY_CLAIMED, LEASE_LOST, CONFLICT)
  5  the new hop breaks the chain policy (CHAIN_VIOLATION)
  6  storage: a missing, corrupt, foreign or read-only database file, or an output file that
     cannot be written (STORAGE)
  7  not allowed in the handoff's state, or not by this agent (INVALID_TRANSITION)
  8  another process held the store's write lock longer than --lock-patience; nothing was
     changed, try again (BUSY)
  9  `handoff check` found damage it did not repair (`--repair` moves it aside)";

/// The commands that are not store operations. The store operations' subcommands are derived
/// from the core's catalog (`subcommands.rs`).
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Write every record as one canonical JSON object per line.
    Export {
        /// Write here instead of standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Write a portable backup of the whole store (every handoff, event, document and
    /// setting, checksummed; owner-only) to a new file while the store stays in use; `handoff
    /// restore` reads it into any store, SQLite, files or PostgreSQL.
    Backup {
        /// The new file; it must not exist.
        path: PathBuf,
    },
    /// Restore a backup written by `handoff backup` into the store (`--db`), which must be
    /// empty (a new one is created); a damaged, cut or foreign file is refused and nothing
    /// is written.
    Restore {
        /// The backup to read.
        path: PathBuf,
    },
    /// Make a key pair for signing bundles: the secret key goes into FILE (owner-only; it must
    /// not exist), for `handoff bundle sign ID --secret-key FILE`; the public key is printed,
    /// for the stores that are to trust your bundles (`handoff bundle trust --trust KEY`).
    Keygen {
        /// Where the secret key goes.
        file: PathBuf,
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
        #[command(flatten)]
        credentials: CredentialOpts,
        /// The judge of `verify`, `cherry_pick` with `verify`, `bundle_verify` and
        /// `cherry_pick_to_facts`; without it, the client's own model when it can sample.
        #[command(flatten)]
        judge: crate::judge::JudgeOpts,
        /// The tool sets to offer, separated by commas: handoffs (the default: hand work on
        /// and take it over), tasks, protocol, memory, curation, bundles, admin, or all. A
        /// client reads every offered tool's schema in every conversation: offer what its
        /// agent needs.
        #[arg(long, env = "HANDOFF_MCP_TOOLS", value_name = "SET,...")]
        tools: Option<String>,
    },
    /// Serve the store over HTTP: the JSON API (/api/v1, OpenAPI at /api/v1/openapi.json)
    /// and a dashboard (/). Loopback by default; any other address needs a bearer token.
    Serve {
        /// Where to listen (port 0: any free port, printed on start).
        #[arg(long, default_value = "127.0.0.1:8080")]
        bind: std::net::SocketAddr,
        /// The bearer token every request must carry (at least 16 characters); required
        /// beyond loopback unless --credentials is given, beside whose tokens it is the
        /// operator's, acting as any agent. A browser opens the dashboard once with `?token=`.
        #[arg(long, env = "HANDOFF_SERVE_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// Seconds a connection may take to send a request's head, from its opening or its
        /// last answer, before it is closed (a client that connects and sends nothing holds
        /// nothing for long); and then as long again for the request's body. Behind a proxy
        /// that keeps connections open, make it longer than the proxy's idle timeout.
        #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=86_400))]
        idle_timeout: u64,
        /// A name (or NAME:PORT) clients reach this server by, besides its own address and
        /// `localhost`: every request's `Host` must be one of them, so that a web page cannot
        /// reach the server through a name of its own (DNS rebinding). Needed behind a proxy
        /// that passes its own name on, or for clients that use this machine's name. Repeat
        /// it; in the environment, separate names with commas.
        #[arg(
            long = "allow-host",
            value_name = "NAME",
            env = "HANDOFF_SERVE_ALLOW_HOST",
            value_delimiter = ','
        )]
        allow_host: Vec<String>,
        #[command(flatten)]
        credentials: CredentialOpts,
        /// The judge of `POST /branches/{name}/verify`, `/bundles/{id}/verify`, a cherry-pick
        /// with `verify` and `/conversations/{id}/cherry-pick-to-facts`; without it, verifying
        /// is refused.
        #[command(flatten)]
        judge: crate::judge::JudgeOpts,
    },
}

/// Who an agent is, for the servers. (`--agents` is the folder of agent Markdown files that
/// gives the chain policy its collaborators, hence another name.)
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct CredentialOpts {
    /// Agent-scoped credentials: a JSON file listing tokens (by their SHA-256) and the agents
    /// each may act as, {"tokens": [{"sha256": "...", "agents": ["gemini"]}]} ("*": any
    /// agent). Every argument naming the agent acting (claim's agent, cancel's by, create's
    /// from_agent, ...) must then be one of the caller's. `serve`: each request carries its
    /// token as `Authorization: Bearer`; `mcp`: the token is in HANDOFF_AGENT_TOKEN. Without
    /// it, an agent is whoever a call names.
    #[arg(long, env = "HANDOFF_CREDENTIALS", value_name = "FILE")]
    pub credentials: Option<PathBuf>,
}

impl CredentialOpts {
    /// The credentials file, read and checked, if one was given.
    pub(crate) fn load(&self) -> crate::error::CliResult<Option<crate::credentials::Credentials>> {
        self.credentials
            .as_deref()
            .map(crate::credentials::Credentials::load)
            .transpose()
    }
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

/// What the subcommands of operations that claim add: a successor to start on the claim.
#[derive(Clone, Debug, Args)]
pub(crate) struct SuccessorOpts {
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
