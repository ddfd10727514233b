//! Renders a record as Markdown for a successor's prompt. Empty sections are left out.

use std::fmt::Write;

use crate::record::Handoff;

impl Handoff {
    /// The record as Markdown, with secrets redacted ([`Handoff::redacted`]): Meta, Current
    /// Goal, Progress, Completed, Pending, Key Decisions, Assumptions, Warnings, Unresolved
    /// Errors, Blockers, Files, Instructions, and the priorities and success criteria when
    /// there are any. The Markdown goes to an LLM or a terminal, so it is redacted by default;
    /// [`Handoff::to_markdown_unredacted`] is the owner's opt-out.
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
            self.created_at.to_rfc3339()
        )?;
        if let Some(expires) = self.expires_at {
            writeln!(md, "- Expires: {}", expires.to_rfc3339())?;
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
        Ok(())
    }
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
