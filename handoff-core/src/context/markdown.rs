//! Renders a record as Markdown for a successor's prompt. Empty sections are left out.

use std::fmt::Write;

use crate::protocol::{ErrorReport, ProtocolBody, WorkerReport, wire_name};
use crate::record::Handoff;

impl Handoff {
    /// The record as Markdown, with secrets redacted ([`Handoff::redacted`]): Meta, Current
    /// Goal, Progress, Completed, Pending, Key Decisions, Assumptions, Warnings, Unresolved
    /// Errors, Blockers, Files, Instructions, the priorities and success criteria when there
    /// are any, and a protocol message's body as sections (report, decision, error, recovery,
    /// escalation, history, how to resume). The Markdown goes to an LLM or a terminal, so it
    /// is redacted by default; [`Handoff::to_markdown_unredacted`] is the owner's opt-out.
    ///
    /// ```
    /// use handoff_core::NewHandoff;
    /// use chrono::Utc;
    ///
    /// let h = NewHandoff::new("t1", "Fix the login bug")
    ///     .pending(["write a failing test"])
    ///     .into_record("h1".into(), Utc::now());
    /// let md = h.to_markdown();
    /// assert!(md.contains("## Current Goal\n\nFix the login bug"));
    /// assert!(md.contains("- [ ] write a failing test"));
    /// assert!(!md.contains("## Warnings"));
    /// ```
    pub fn to_markdown(&self) -> String {
        self.redacted().to_markdown_unredacted()
    }

    /// The record as Markdown exactly as written, secrets included.
    pub fn to_markdown_unredacted(&self) -> String {
        let mut md = String::with_capacity(1024);
        // Writing into a String cannot fail.
        let _ = self.write_markdown(&mut md);
        md
    }

    fn write_markdown(&self, md: &mut String) -> std::fmt::Result {
        writeln!(md, "# Handoff {}\n", self.id)?;
        writeln!(md, "## Meta\n")?;
        writeln!(md, "- Task: {}", self.task_id)?;
        if let Some(session) = &self.session_id {
            writeln!(md, "- Session: {session}")?;
        }
        if let Some(parent) = &self.parent_id {
            writeln!(md, "- Continues: {parent}")?;
        }
        let from = self.from_agent.as_deref().unwrap_or("unknown");
        let to = self.to_agent.as_deref().unwrap_or("any agent");
        writeln!(md, "- From: {from} → To: {to}")?;
        writeln!(md, "- Kind: {} · Reason: {}", self.kind, self.reason)?;
        if let Some(percent) = self.context_usage_percent {
            writeln!(md, "- Context used: {percent}%")?;
        }
        writeln!(
            md,
            "- Status: {} · Created: {}",
            self.status,
            crate::clock::to_text(&self.created_at)
        )?;
        if let Some(expires) = self.expires_at {
            writeln!(md, "- Expires: {}", crate::clock::to_text(&expires))?;
        }

        writeln!(md, "\n## Current Goal\n\n{}", self.goal.trim())?;
        if !self.progress_summary.trim().is_empty() {
            writeln!(md, "\n## Progress\n\n{}", self.progress_summary.trim())?;
        }
        checklist(md, "Completed", &self.completed_steps, "[x] ")?;
        checklist(md, "Pending", &self.pending_steps, "[ ] ")?;
        bullets(md, "Priorities", &self.priority_items)?;
        bullets(md, "Key Decisions", &self.key_decisions)?;
        bullets(md, "Assumptions", &self.assumptions)?;
        bullets(md, "Warnings", &self.warnings)?;
        bullets(md, "Unresolved Errors", &self.unresolved_errors)?;
        bullets(md, "Blockers", &self.blockers)?;
        if !self.modified_files.is_empty() || !self.locked_files.is_empty() {
            writeln!(md, "\n## Files\n")?;
            for file in &self.modified_files {
                writeln!(md, "- modified: `{file}`")?;
            }
            for file in &self.locked_files {
                writeln!(md, "- locked: `{file}`")?;
            }
        }
        bullets(md, "Success Criteria", &self.success_criteria)?;
        if let Some(instructions) = self.instructions.as_deref().map(str::trim)
            && !instructions.is_empty()
        {
            writeln!(md, "\n## Instructions\n\n{instructions}")?;
        }
        if let Some(body) = &self.protocol {
            write_protocol(md, body)?;
        }
        Ok(())
    }
}

/// A protocol message's body as [`write_protocol`] writes it, for a successor's packet.
pub(super) fn protocol_text(p: &ProtocolBody) -> String {
    let mut md = String::new();
    let _ = write_protocol(&mut md, p);
    md.trim().to_owned()
}

/// A worker's report on one line: its status, what it did, what it met.
pub(super) fn report_line(r: &WorkerReport) -> String {
    let mut line = format!(
        "{}; tests {} added, {} passing",
        wire_name(&r.status),
        r.tests.added,
        r.tests.passing
    );
    let parts = [
        ("accomplished", r.accomplished.clone()),
        (
            "files",
            r.files_modified.iter().map(|f| f.path.clone()).collect(),
        ),
        ("issues", r.issues.clone()),
    ];
    for (name, items) in parts {
        if !items.is_empty() {
            let _ = write!(line, "; {name}: {}", items.join(", "));
        }
    }
    one_line(&line)
}

/// A worker's error report on one line: its kind, what went wrong, the errors' own text.
pub(super) fn error_line(e: &ErrorReport) -> String {
    let mut line = format!(
        "error ({}, {}): {}",
        wire_name(&e.error_type),
        wire_name(&e.severity),
        e.description.trim()
    );
    if !e.error_messages.is_empty() {
        let _ = write!(line, "; error messages: {}", e.error_messages.join(" | "));
    }
    if !e.attempted_solutions.is_empty() {
        let _ = write!(line, "; tried: {}", e.attempted_solutions.join(", "));
    }
    one_line(&line)
}

/// What the worker answered in one iteration of an escalation's history, in words.
fn answer_line(answer: &serde_json::Value) -> Option<String> {
    if let Ok(report) = serde_json::from_value::<WorkerReport>(answer.clone()) {
        return Some(report_line(&report));
    }
    serde_json::from_value::<ErrorReport>(answer.clone())
        .ok()
        .map(|e| error_line(&e))
}

/// A protocol message's body as sections a model or a person reads in order: what was
/// reported or decided, then what to do.
fn write_protocol(md: &mut String, p: &ProtocolBody) -> std::fmt::Result {
    writeln!(
        md,
        "\n## Protocol: {} · iteration {}\n",
        wire_name(&p.handoff_type),
        p.iteration
    )?;
    writeln!(md, "- Sent: {}", crate::clock::to_text(&p.timestamp))?;
    if let (Some(retries), Some(max)) = (p.retry_count, p.max_retries) {
        writeln!(md, "- Recoveries: {retries} of {max}")?;
    }
    if let Some(context) = &p.context {
        if let Some(root) = &context.project_root {
            writeln!(md, "- Project root: `{root}`")?;
        }
        bullets(md, "Relevant Files", &context.relevant_files)?;
        bullets(md, "Patterns", &context.patterns)?;
        bullets(md, "Constraints", &context.constraints)?;
    }
    bullets(md, "Quality Gates", &p.quality_gates)?;
    if let Some(r) = &p.worker_report {
        writeln!(md, "\n## Worker Report: {}\n", wire_name(&r.status))?;
        writeln!(
            md,
            "- Tests: {} added, {} passing{}",
            r.tests.added,
            r.tests.passing,
            r.tests
                .coverage
                .as_deref()
                .map(|c| format!(", coverage {}", one_line(c)))
                .unwrap_or_default()
        )?;
        checklist(md, "Accomplished", &r.accomplished, "[x] ")?;
        if !r.files_modified.is_empty() {
            writeln!(md, "\n## Files Modified\n")?;
            for file in &r.files_modified {
                writeln!(md, "- `{}`: {}", file.path, one_line(&file.description))?;
            }
        }
        bullets(md, "Issues", &r.issues)?;
        bullets(md, "Validation", &r.validation)?;
    }
    if let Some(decision) = &p.manager_decision {
        writeln!(md, "\n## Manager Decision: {}", wire_name(decision))?;
    }
    if let Some(text) = &p.continuation_instructions {
        writeln!(md, "\n## Continuation Instructions\n\n{}", text.trim())?;
    }
    if let Some(updates) = &p.context_updates {
        bullets(md, "New Patterns", &updates.new_patterns)?;
        bullets(md, "Architecture Changes", &updates.architecture_changes)?;
        bullets(md, "Dependencies Added", &updates.dependencies_added)?;
    }
    if let Some(e) = &p.error_report {
        writeln!(
            md,
            "\n## Error Report: {} · {}\n\n{}",
            wire_name(&e.error_type),
            wire_name(&e.severity),
            e.description.trim()
        )?;
        if !e.context.trim().is_empty() {
            writeln!(md, "\nContext: {}", one_line(&e.context))?;
        }
        bullets(md, "Attempted Solutions", &e.attempted_solutions)?;
        bullets(md, "Error Messages", &e.error_messages)?;
        bullets(md, "Affected Files", &e.affected_files)?;
    }
    if let Some(r) = &p.recovery_instructions {
        writeln!(md, "\n## Recovery: {}\n", one_line(&r.strategy))?;
        for (i, step) in r.steps.iter().enumerate() {
            writeln!(md, "{}. {}", i + 1, one_line(step))?;
        }
        bullets(md, "Alternatives", &r.alternatives)?;
        bullets(md, "Success Indicators", &r.success_indicators)?;
        if let Some(trigger) = &r.escalation_trigger {
            writeln!(md, "\nEscalate when: {}", one_line(trigger))?;
        }
    }
    if let Some(d) = &p.escalation_details {
        writeln!(
            md,
            "\n## Escalation: {} · severity {} · urgency {} · blocked by {}\n",
            wire_name(&d.category),
            wire_name(&d.severity),
            wire_name(&d.urgency),
            wire_name(&d.blocker_type)
        )?;
        writeln!(md, "- Description: {}", one_line(&d.description))?;
        writeln!(md, "- Impact: {}", one_line(&d.impact))?;
        writeln!(md, "- Recommendation: {}", one_line(&d.recommendation))?;
    }
    if !p.complete_history.is_empty() {
        writeln!(md, "\n## Complete History\n")?;
        for item in &p.complete_history {
            writeln!(
                md,
                "- Iteration {} ({}): {}",
                item.iteration,
                item.outcome,
                one_line(&item.manager_instructions)
            )?;
            if let Some(answer) = item.worker_report.as_ref().and_then(answer_line) {
                writeln!(md, "  - Worker: {answer}")?;
            }
        }
    }
    if let Some(state) = &p.current_state {
        writeln!(
            md,
            "\n## Current State\n\n{}",
            one_line(&state.project_status)
        )?;
        for file in &state.files_modified {
            writeln!(md, "- modified: `{file}`")?;
        }
        for dependency in &state.dependencies {
            writeln!(md, "- dependency: {}", one_line(dependency))?;
        }
        for setting in &state.configuration {
            writeln!(md, "- {}", one_line(setting))?;
        }
    }
    if let Some(text) = &p.resume_instructions {
        writeln!(md, "\n## Resume Instructions\n\n{}", text.trim())?;
    }
    Ok(())
}

fn checklist(md: &mut String, title: &str, items: &[String], mark: &str) -> std::fmt::Result {
    if items.is_empty() {
        return Ok(());
    }
    writeln!(md, "\n## {title}\n")?;
    for item in items {
        writeln!(md, "- {mark}{}", one_line(item))?;
    }
    Ok(())
}

fn bullets(md: &mut String, title: &str, items: &[String]) -> std::fmt::Result {
    checklist(md, title, items, "")
}

/// Keeps a multi-line item inside its bullet.
fn one_line(item: &str) -> String {
    item.trim().replace('\n', "\n  ")
}
