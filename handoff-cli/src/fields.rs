//! The `create` fields under their Python argument names: the MCP tool's input schema is
//! generated from [`CreateArgs`], and the CLI's `create` flags are turned into one too, so both
//! doors lead through the same conversion to the core's [`NewHandoff`].

use chrono::{DateTime, Utc};
use handoff_core::{Error, Kind, Metadata, NewHandoff, Reason};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::args::{CheckpointCmd, CreateCmd};

/// The content of a new handoff (the Python `store.create` arguments).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateArgs {
    /// The task this handoff belongs to; a task's handoffs form its chain.
    pub task_id: String,
    /// What the successor must achieve. Never empty.
    pub goal: String,
    /// The agent handing over.
    #[serde(default)]
    pub from_agent: Option<String>,
    /// The agent addressed; any agent may claim when absent.
    #[serde(default)]
    pub to_agent: Option<String>,
    /// What kind of handoff this is (default `full`).
    #[serde(default)]
    pub kind: Option<Kind>,
    /// Why the agent hands over (default `explicit`): `explicit`, `task_complete`,
    /// `context_limit_85`, `timeout_300s`, `error: <message>`, or the bare `context_limit`
    /// (with `context_pct`) and `timeout` (with `timeout_seconds`).
    #[serde(default)]
    pub reason: Option<String>,
    /// How full the handing-over agent's context window was, in percent.
    #[serde(default)]
    #[schemars(range(max = 100))]
    pub context_pct: Option<u8>,
    /// With the bare reason `timeout`: how long the agent ran, in seconds.
    #[serde(default)]
    pub timeout_seconds: Option<u64>,
    /// Where the work stands, in prose.
    #[serde(default)]
    pub progress: Option<String>,
    /// Steps already done.
    #[serde(default)]
    pub completed: Vec<String>,
    /// Steps still to do, in order.
    #[serde(default)]
    pub pending: Vec<String>,
    /// Decisions taken, and why.
    #[serde(default)]
    pub decisions: Vec<String>,
    /// Assumptions the work rests on.
    #[serde(default)]
    pub assumptions: Vec<String>,
    /// Things the successor must be careful about.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Errors seen and not yet fixed.
    #[serde(default)]
    pub errors: Vec<String>,
    /// Files changed so far.
    #[serde(default)]
    pub files: Vec<String>,
    /// Guidance for the successor.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Free-form JSON object, carried along unchanged.
    #[serde(default)]
    pub metadata: Option<Metadata>,
    /// A caller-chosen id: creating again with the same content returns the same record.
    #[serde(default)]
    pub id: Option<String>,
    /// The handoff this one continues.
    #[serde(default)]
    pub parent_id: Option<String>,
    /// The handing-over agent's session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// What stops progress right now.
    #[serde(default)]
    pub blockers: Vec<String>,
    /// Files the work holds locks on.
    #[serde(default)]
    pub locked_files: Vec<String>,
    /// What matters most, first.
    #[serde(default)]
    pub priority_items: Vec<String>,
    /// How the successor knows it is done.
    #[serde(default)]
    pub success_criteria: Vec<String>,
    /// When an unclaimed handoff expires (RFC 3339).
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
    /// How many claims may lapse before the handoff fails (default 3).
    #[serde(default)]
    pub max_attempts: Option<u32>,
}

impl CreateArgs {
    /// The core's input; the core validates it on create. The reason is read here, by the
    /// core's rules: the bare `context_limit` / `timeout` take their number from
    /// `context_pct` / `timeout_seconds`.
    pub(crate) fn into_new(self) -> Result<NewHandoff, Error> {
        let reason = Reason::from_input(
            self.reason.as_deref(),
            self.context_pct,
            self.timeout_seconds,
        )?;
        Ok(NewHandoff {
            id: self.id,
            task_id: self.task_id,
            session_id: self.session_id,
            parent_id: self.parent_id,
            kind: self.kind.unwrap_or_default(),
            reason,
            from_agent: self.from_agent,
            to_agent: self.to_agent,
            goal: self.goal,
            progress_summary: self.progress.unwrap_or_default(),
            completed_steps: self.completed,
            pending_steps: self.pending,
            key_decisions: self.decisions,
            assumptions: self.assumptions,
            warnings: self.warnings,
            unresolved_errors: self.errors,
            blockers: self.blockers,
            modified_files: self.files,
            locked_files: self.locked_files,
            instructions: self.instructions,
            priority_items: self.priority_items,
            success_criteria: self.success_criteria,
            context_usage_percent: self.context_pct,
            metadata: self.metadata.unwrap_or_default(),
            expires_at: self.expires_at,
            max_attempts: self.max_attempts,
        })
    }

    /// The CLI's flags (without `--json-input`); `--metadata` is parsed here.
    pub(crate) fn from_flags(cmd: CreateCmd) -> Result<CreateArgs, Error> {
        let metadata = metadata_flag(cmd.metadata.as_deref())?;
        Ok(CreateArgs {
            task_id: cmd.task_id.unwrap_or_default(),
            goal: cmd.goal.unwrap_or_default(),
            from_agent: cmd.from_agent,
            to_agent: cmd.to_agent,
            kind: cmd.kind,
            reason: cmd.reason,
            context_pct: cmd.context_pct,
            timeout_seconds: cmd.timeout_seconds,
            progress: cmd.progress,
            completed: cmd.completed,
            pending: cmd.pending,
            decisions: cmd.decisions,
            assumptions: cmd.assumptions,
            warnings: cmd.warnings,
            errors: cmd.errors,
            files: cmd.files,
            instructions: cmd.instructions,
            metadata,
            id: cmd.id,
            parent_id: cmd.parent_id,
            session_id: cmd.session_id,
            blockers: cmd.blockers,
            locked_files: cmd.locked_files,
            priority_items: cmd.priority_items,
            success_criteria: cmd.success_criteria,
            expires_at: cmd.expires_at,
            max_attempts: cmd.max_attempts,
        })
    }
}

/// `--metadata JSON`: an object, or a validation error naming the field.
fn metadata_flag(text: Option<&str>) -> Result<Option<Metadata>, Error> {
    let Some(text) = text else { return Ok(None) };
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => Ok(Some(map)),
        Ok(_) => Err(Error::invalid("metadata", "must be a JSON object")),
        Err(e) => Err(Error::invalid(
            "metadata",
            format!("must be a JSON object: {e}"),
        )),
    }
}

/// A checkpoint's content (the Python `store.checkpoint(task_id, agent, **fields)`): the
/// `handoff_checkpoint` tool's input schema, and the `checkpoint` command's flags.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CheckpointArgs {
    /// The task.
    pub task_id: String,
    /// The agent saving its progress; it keeps the work.
    pub agent: String,
    /// What the agent is achieving. Never empty.
    pub goal: String,
    /// Where the work stands, in prose.
    #[serde(default)]
    pub progress: Option<String>,
    /// Steps already done.
    #[serde(default)]
    pub completed: Vec<String>,
    /// Steps still to do, in order.
    #[serde(default)]
    pub pending: Vec<String>,
    /// Decisions taken, and why.
    #[serde(default)]
    pub decisions: Vec<String>,
    /// Assumptions the work rests on.
    #[serde(default)]
    pub assumptions: Vec<String>,
    /// Things to be careful about.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Errors seen and not yet fixed.
    #[serde(default)]
    pub errors: Vec<String>,
    /// Files changed so far.
    #[serde(default)]
    pub files: Vec<String>,
    /// What stops progress right now.
    #[serde(default)]
    pub blockers: Vec<String>,
    /// Notes for whoever resumes.
    #[serde(default)]
    pub instructions: Option<String>,
    /// How full the agent's context window is, in percent.
    #[serde(default)]
    #[schemars(range(max = 100))]
    pub context_pct: Option<u8>,
    /// Free-form JSON object, carried along unchanged.
    #[serde(default)]
    pub metadata: Option<Metadata>,
    /// A caller-chosen id: saving again with the same content returns the same record.
    #[serde(default)]
    pub id: Option<String>,
    /// The record this checkpoint follows (default: the task's latest).
    #[serde(default)]
    pub parent_id: Option<String>,
    /// The agent's session.
    #[serde(default)]
    pub session_id: Option<String>,
}

impl CheckpointArgs {
    /// The task, the agent, and the content the core's `checkpoint` takes.
    pub(crate) fn into_parts(self) -> Result<(String, String, NewHandoff), Error> {
        let content = CreateArgs {
            task_id: self.task_id.clone(),
            goal: self.goal,
            progress: self.progress,
            completed: self.completed,
            pending: self.pending,
            decisions: self.decisions,
            assumptions: self.assumptions,
            warnings: self.warnings,
            errors: self.errors,
            files: self.files,
            blockers: self.blockers,
            instructions: self.instructions,
            context_pct: self.context_pct,
            metadata: self.metadata,
            id: self.id,
            parent_id: self.parent_id,
            session_id: self.session_id,
            ..CreateArgs::default()
        };
        Ok((self.task_id, self.agent, content.into_new()?))
    }

    /// The CLI's flags.
    pub(crate) fn from_flags(cmd: CheckpointCmd) -> Result<CheckpointArgs, Error> {
        Ok(CheckpointArgs {
            metadata: metadata_flag(cmd.metadata.as_deref())?,
            task_id: cmd.task_id,
            agent: cmd.agent,
            goal: cmd.goal,
            progress: cmd.progress,
            completed: cmd.completed,
            pending: cmd.pending,
            decisions: cmd.decisions,
            assumptions: cmd.assumptions,
            warnings: cmd.warnings,
            errors: cmd.errors,
            files: cmd.files,
            blockers: cmd.blockers,
            instructions: cmd.instructions,
            context_pct: cmd.context_pct,
            id: cmd.id,
            parent_id: cmd.parent_id,
            session_id: cmd.session_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_names_map_to_record_fields() {
        let args: CreateArgs = serde_json::from_value(serde_json::json!({
            "task_id": "t1", "goal": "g", "decisions": ["d"], "errors": ["e"],
            "files": ["f.rs"], "context_pct": 85, "progress": "half", "reason": "context_limit_85"
        }))
        .expect("valid args");
        let new = args.into_new().expect("valid reason");
        assert_eq!(new.key_decisions, ["d"]);
        assert_eq!(new.unresolved_errors, ["e"]);
        assert_eq!(new.modified_files, ["f.rs"]);
        assert_eq!(new.context_usage_percent, Some(85));
        assert_eq!(new.progress_summary, "half");
        assert_eq!(new.reason, Reason::ContextLimit { percent: 85 });
    }

    #[test]
    fn the_seeds_bare_reasons_take_their_numbers() {
        // MASC's `masc_handover_create` example, as the seed sends it.
        let args: CreateArgs = serde_json::from_value(serde_json::json!({
            "task_id": "task-001", "session_id": "session-xyz", "reason": "context_limit",
            "context_pct": 85, "goal": "g", "progress": "p", "completed": ["a"],
            "pending": ["b"], "decisions": ["c"], "assumptions": ["d"], "warnings": ["e"],
            "errors": [], "files": ["f.ts"]
        }))
        .expect("the seed payload parses");
        let new = args.into_new().expect("the seed payload is valid");
        assert_eq!(new.reason, Reason::ContextLimit { percent: 85 });
        assert_eq!(new.session_id.as_deref(), Some("session-xyz"));

        let args: CreateArgs = serde_json::from_value(serde_json::json!({
            "task_id": "t", "goal": "g", "reason": "timeout", "timeout_seconds": 300
        }))
        .expect("parses");
        let new = args.into_new().expect("valid");
        assert_eq!(new.reason, Reason::Timeout { seconds: 300 });
        assert_eq!(new.reason.to_string(), "timeout_300s");

        let args: CreateArgs = serde_json::from_value(serde_json::json!({
            "task_id": "t", "goal": "g", "reason": "sleepy"
        }))
        .expect("parses");
        let err = args.into_new().expect_err("unknown reason");
        assert_eq!(err.kind(), handoff_core::ErrorKind::Validation);
        assert!(err.to_string().contains("reason"), "{err}");
    }

    #[test]
    fn unknown_fields_are_refused() {
        let err = serde_json::from_value::<CreateArgs>(serde_json::json!({
            "task_id": "t1", "goal": "g", "completed_steps": []
        }))
        .expect_err("unknown field");
        assert!(err.to_string().contains("completed_steps"), "{err}");
    }
}
