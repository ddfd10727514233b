//! The operations of retention and backup (seed 003): `prune`, `backup`, `restore`.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::Result;
use crate::ops::{Access, Arguments, Operation};
use crate::store::{DEFAULT_KEEP_DETAILS_DAYS, DEFAULT_KEEP_LAST, Store};

/// Keeps the details (steps, log and handoff records) of the newest `keep_last` finished tasks
/// (default 100) finished less than `keep_details_days` ago (default 30); older finished tasks
/// keep only their history entry, and their handoffs go with their events. Unfinished tasks
/// are never touched. Returns how many tasks were pruned.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PruneArgs {
    /// How many finished tasks keep their details (default 100).
    #[serde(default)]
    pub keep_last: Option<usize>,
    /// How many days a finished task keeps its details (default 30).
    #[serde(default)]
    pub keep_details_days: Option<u32>,
}

impl Arguments for PruneArgs {}

/// The `prune` operation.
pub struct Prune;

impl Operation for Prune {
    const NAME: &'static str = "prune";
    const ACCESS: Access = Access::Writes;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("task", "prune"));
    const POSITIONAL: &'static [&'static str] = &["keep_last", "keep_details_days"];
    type Args = PruneArgs;
    type Output = usize;

    fn run(store: &Store, args: PruneArgs) -> Result<usize> {
        store.prune(
            args.keep_last.unwrap_or(DEFAULT_KEEP_LAST),
            args.keep_details_days.unwrap_or(DEFAULT_KEEP_DETAILS_DAYS),
        )
    }
}

/// Writes a portable backup of the whole store to `path` (a new file: an existing one is
/// refused) while others keep working: settings, handoffs with their claim digests, events and
/// every document, one consistent snapshot, checksummed. `restore` reads it into any store.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BackupArgs {
    /// Where the backup goes.
    pub path: String,
}

impl Arguments for BackupArgs {}

/// The `backup` operation.
pub struct Backup;

impl Operation for Backup {
    const NAME: &'static str = "backup";
    const ACCESS: Access = Access::Reads;
    const POSITIONAL: &'static [&'static str] = &["path"];
    type Args = BackupArgs;
    type Output = ();

    fn run(store: &Store, args: BackupArgs) -> Result<()> {
        store.backup(&args.path).map(drop)
    }
}

/// Restores the backup at `path` (written by `backup` on any kind of store) into this store,
/// which must be empty. The whole file is checked first: a damaged, cut or foreign file is
/// refused, naming what is wrong, and nothing is written.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreArgs {
    /// The backup to read.
    pub path: String,
}

impl Arguments for RestoreArgs {}

/// The `restore` operation.
pub struct Restore;

impl Operation for Restore {
    const NAME: &'static str = "restore";
    const ACCESS: Access = Access::Creates;
    const POSITIONAL: &'static [&'static str] = &["path"];
    type Args = RestoreArgs;
    type Output = ();

    fn run(store: &Store, args: RestoreArgs) -> Result<()> {
        store.restore(&args.path).map(drop)
    }
}
