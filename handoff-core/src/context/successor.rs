//! What a successor is given: one packet, built from every part of the store that knows
//! something about the handoff (the seed's HandoffContext).
//!
//! - **Task state**: the task's goal, success criteria and plan with each step's status, the
//!   current step marked; for a protocol message, the message itself and the run's previous
//!   report and decision.
//! - **Agent history**: who handed the task on before, in order, with why and how it ended.
//! - **Outputs**: the outcome of each finished step the current one depends on, and the
//!   errors of earlier attempts.
//! - **Knowledge**: the task's verified facts and key conversations; the predecessor's own
//!   findings (the facts and the latest conversation on `task/<task>/<from_agent>`), marked
//!   unverified; and the facts on `main` most relevant to the handoff (an index, not a scan).
//! - **Unresolved** (the handoff's pending steps, blockers, errors), its instructions and
//!   priorities, and the branch to continue on.
//!
//! Each part is read with its own keys (the task's, the handoff's chain, the predecessor's
//! branch) plus one relevance lookup on `main`, so the cost follows what the packet holds,
//! not what the store holds. The [`ContextBuilder`] then fits it to the budget.

use serde_json::Value;

use crate::context::knowledge;
use crate::context::relevance;
use crate::context::{Budget, ContextBuilder, ItemKind, Message, Packet, Summarizer};
use crate::curation::{Branch, Conversation, Fact, FactStatus, Verdict};
use crate::error::{Error, Result};
use crate::machine::Change;
use crate::protocol::wire_name;
use crate::record::Handoff;
use crate::store::Store;
use crate::task::store::Task;

/// The budget a packet gets when the caller does not choose one.
pub const DEFAULT_BUDGET_TOKENS: usize = 2000;
/// The seed's packet: 2,000 characters.
pub const DEFAULT_BUDGET_CHARS: usize = 2000;
/// At most this many facts of `main` are offered to a packet.
const MAIN_FACTS: usize = 12;
/// At most this many messages of the predecessor's latest conversation are offered.
const TAIL_MESSAGES: u64 = 20;
/// At most this many earlier handoffs of the task are offered, the most recent.
const HISTORY: usize = 50;
/// At most this many messages a protocol message's ancestors are followed for.
const ANCESTORS: usize = 32;

/// How a successor's packet is built ([`Store::context_for`]).
pub struct ContextOptions {
    /// Its budget (default 2,000 tokens).
    pub budget: Budget,
    /// The framework's own transcript of the run (an adapter's), offered as one more
    /// conversation under the same budget and redaction.
    pub transcript: Vec<Message>,
    /// Compresses what does not fit whole instead of cutting it.
    pub summarizer: Option<Box<dyn Summarizer>>,
}

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions::tokens(DEFAULT_BUDGET_TOKENS)
    }
}

impl std::fmt::Debug for ContextOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextOptions")
            .field("budget", &self.budget)
            .field("transcript", &self.transcript.len())
            .field("summarize", &self.summarizer.is_some())
            .finish()
    }
}

impl ContextOptions {
    /// A packet of at most `n` tokens.
    pub fn tokens(n: usize) -> Self {
        Self::with_budget(Budget::Tokens(n))
    }

    /// A packet whose Markdown is at most `n` characters.
    pub fn chars(n: usize) -> Self {
        Self::with_budget(Budget::Chars(n))
    }

    /// A packet within `budget`.
    pub fn with_budget(budget: Budget) -> Self {
        ContextOptions {
            budget,
            transcript: Vec::new(),
            summarizer: None,
        }
    }

    /// Adds the framework's transcript.
    pub fn transcript(mut self, messages: Vec<Message>) -> Self {
        self.transcript = messages;
        self
    }

    /// Compresses with `summarizer`.
    pub fn summarizer(mut self, summarizer: impl Summarizer + 'static) -> Self {
        self.summarizer = Some(Box::new(summarizer));
        self
    }
}

impl Store {
    /// The successor's packet for a handoff: everything the store knows that the next agent
    /// needs (see the module's parts), within the budget, redacted, with the manifest of what
    /// was kept, cut, summarised and left out.
    pub fn context_for(&self, handoff_id: &str, options: ContextOptions) -> Result<Packet> {
        if options.budget.limit() == 0 {
            let field = match options.budget {
                Budget::Tokens(_) => "budget_tokens",
                Budget::Chars(_) => "budget_chars",
            };
            return Err(Error::invalid(field, "must be at least 1"));
        }
        let handoff = self.get(handoff_id)?;
        let task_branch = Branch::of_task(&handoff.task_id)?;
        let mut b =
            ContextBuilder::with_budget(options.budget).boxed_summarizer(options.summarizer);
        b.add_handoff(&handoff);
        let task = match self.get_task(&handoff.task_id) {
            Ok(task) => Some(task),
            Err(Error::NotFound { .. }) => None,
            Err(err) => return Err(err),
        };
        let step = handoff
            .metadata
            .get("step_id")
            .and_then(Value::as_str)
            .and_then(|id| task.as_ref()?.steps.iter().find(|s| s.spec.id == id));
        if let Some(task) = &task {
            add_task(&mut b, task, step.map(|s| s.spec.id.as_str()));
        }
        if let Some(step) = step {
            self.add_step_outputs(&mut b, task.as_ref(), step)?;
        }
        if handoff.attempts > 0 {
            self.add_attempts(&mut b, &handoff)?;
        }
        self.add_protocol(&mut b, &handoff)?;
        self.add_history(&mut b, &handoff)?;
        self.add_knowledge(&mut b, &handoff, &task_branch, task.as_ref())?;
        if !options.transcript.is_empty() {
            b.add_conversation(Some("this run"), options.transcript);
        }
        let successor = handoff
            .to_agent
            .as_deref()
            .or(handoff.claimed_by.as_deref())
            .and_then(|agent| Branch::parse(&format!("{task_branch}/{agent}")).ok());
        let pointer = match successor {
            Some(branch) => format!("Continue on `{branch}` (its parent is `{task_branch}`)."),
            None => {
                format!("Continue on `{task_branch}/<your name>` (its parent is `{task_branch}`).")
            }
        };
        b.add_block(
            ItemKind::Note,
            format!("{}#branch", handoff.id),
            "Branch",
            pointer,
            99,
            false,
        );
        Ok(b.build())
    }

    /// The outcomes of the finished steps `step` depends on, and its earlier errors.
    fn add_step_outputs(
        &self,
        b: &mut ContextBuilder,
        task: Option<&Task>,
        step: &crate::task::StepState,
    ) -> Result<()> {
        let Some(task) = task else { return Ok(()) };
        for dependency in &step.spec.dependencies {
            let Some(done) = task.steps.iter().find(|s| s.spec.id == *dependency) else {
                continue;
            };
            let outcome = done.output.as_deref().unwrap_or("(no outcome reported)");
            b.add_bullet(
                ItemKind::Output,
                format!("step:{}#output", done.spec.id),
                "Outputs of the Steps This One Depends On",
                format!(
                    "{} ({}, by {}, {}): {}",
                    done.spec.id,
                    done.spec.name,
                    done.spec.addressee(),
                    wire_name(&done.status),
                    outcome
                ),
                92,
                done.completed_at,
            );
        }
        if let Some(error) = &step.error {
            b.add_bullet(
                ItemKind::Output,
                format!("step:{}#error", step.spec.id),
                "Errors So Far",
                format!("after {} failed attempt(s): {error}", step.attempts),
                90,
                None,
            );
        }
        for (i, artifact) in task.header.artifacts.iter().enumerate() {
            b.add_bullet(
                ItemKind::Output,
                format!("task:{}#artifact-{i}", task.header.id),
                "Task Artifacts",
                compact(artifact),
                78,
                None,
            );
        }
        Ok(())
    }

    /// How the earlier claims of this handoff ended (failed, released, lapsed), from its own
    /// events: what the successor of a failed attempt must not repeat.
    fn add_attempts(&self, b: &mut ContextBuilder, handoff: &Handoff) -> Result<()> {
        for event in self.events(Some(&handoff.id))? {
            let what = match &event.change {
                Change::AttemptFailed { token, error } => {
                    format!("the claim with token {token} failed: {error}")
                }
                Change::Released { reason } => format!("a claim was given back: {reason}"),
                Change::LeaseExpired { token } => {
                    format!("the claim with token {token} lapsed (its holder stopped renewing it)")
                }
                _ => continue,
            };
            b.add_bullet(
                ItemKind::Output,
                format!("{}#event-{}", handoff.id, event.seq),
                "Errors So Far",
                format!("{} {what}", crate::clock::to_text(&event.at)),
                90,
                Some(event.at),
            );
        }
        Ok(())
    }

    /// A protocol message: its body, and the run's previous report and decision.
    fn add_protocol(&self, b: &mut ContextBuilder, handoff: &Handoff) -> Result<()> {
        let Some(body) = &handoff.protocol else {
            return Ok(());
        };
        b.add_block(
            ItemKind::Task,
            format!("{}#protocol", handoff.id),
            "Protocol Message",
            crate::context::markdown::protocol_text(body),
            97,
            false,
        );
        let (mut report, mut decision) = (None, None);
        let mut next = handoff.parent_id.clone();
        for _ in 0..ANCESTORS {
            let Some(id) = next else { break };
            let Ok(parent) = self.get(&id) else { break };
            if let Some(body) = &parent.protocol {
                if report.is_none()
                    && let Some(r) = &body.worker_report
                {
                    report = Some((parent.id.clone(), body.iteration, r.clone()));
                }
                if decision.is_none()
                    && let Some(d) = &body.manager_decision
                {
                    let text = match &body.continuation_instructions {
                        Some(next) => format!("{}: {}", wire_name(d), next.trim()),
                        None => wire_name(d),
                    };
                    decision = Some((parent.id.clone(), body.iteration, text));
                }
            }
            if report.is_some() && decision.is_some() {
                break;
            }
            next = parent.parent_id;
        }
        if body.worker_report.is_none()
            && let Some((id, iteration, r)) = report
        {
            b.add_block(
                ItemKind::Task,
                format!("{id}#worker_report"),
                &format!("Previous Report (iteration {iteration})"),
                crate::context::markdown::report_line(&r),
                88,
                false,
            );
        }
        if body.manager_decision.is_none()
            && let Some((id, iteration, text)) = decision
        {
            b.add_block(
                ItemKind::Task,
                format!("{id}#manager_decision"),
                &format!("Previous Decision (iteration {iteration})"),
                text,
                87,
                false,
            );
        }
        Ok(())
    }

    /// Who worked on the task before, in order: every earlier handoff of the task (the most
    /// recent kept first), with why it was handed on and how it ended.
    fn add_history(&self, b: &mut ContextBuilder, handoff: &Handoff) -> Result<()> {
        let filter = crate::store::ListFilter {
            task_id: Some(handoff.task_id.clone()),
            ..crate::store::ListFilter::default()
        };
        let earlier: Vec<Handoff> = self
            .list(&filter)?
            .into_iter()
            .filter(|h| h.id != handoff.id && h.created_at <= handoff.created_at)
            .collect();
        let skip = earlier.len().saturating_sub(HISTORY);
        for h in earlier.into_iter().skip(skip) {
            let mut line = format!(
                "{} → {} ({}, {}): {}",
                h.from_agent.as_deref().unwrap_or("*"),
                h.to_agent
                    .as_deref()
                    .or(h.claimed_by.as_deref())
                    .unwrap_or("*"),
                h.kind,
                h.reason,
                one_line(&h.goal)
            );
            line.push_str(&format!(" — {}", h.status));
            if let Some(outcome) = h.outcome.as_deref().filter(|o| !o.trim().is_empty()) {
                line.push_str(&format!(": {}", one_line(outcome)));
            } else if !h.progress_summary.trim().is_empty() {
                line.push_str(&format!("; progress: {}", one_line(&h.progress_summary)));
            }
            b.add_bullet(
                ItemKind::History,
                format!("{}#history", h.id),
                "Agent History",
                line,
                65,
                Some(h.created_at),
            );
        }
        Ok(())
    }

    /// The task's verified facts and key conversations, the predecessor's unverified
    /// findings, and the relevant knowledge on `main`.
    fn add_knowledge(
        &self,
        b: &mut ContextBuilder,
        handoff: &Handoff,
        task_branch: &Branch,
        task: Option<&Task>,
    ) -> Result<()> {
        let verified = self
            .facts_under(&crate::curation::store::task_facts_of(task_branch), |f| {
                f.status == FactStatus::Verified
            })?;
        for fact in verified {
            b.add_bullet(
                ItemKind::Fact,
                format!("fact:{}", fact.id),
                "Verified Facts",
                provenance(&fact),
                75,
                Some(fact.created_at),
            );
        }
        let predecessor = handoff
            .from_agent
            .as_deref()
            .and_then(|agent| Branch::parse(&format!("{task_branch}/{agent}")).ok());
        if let Some(branch) = &predecessor {
            let agent = handoff.from_agent.as_deref().unwrap_or_default();
            let group = format!("Unverified Findings of {agent} (on {branch})");
            let unverified = self
                .facts_under(&[crate::curation::store::facts_of(branch)], |f| {
                    f.status == FactStatus::Active
                })?;
            for fact in unverified {
                b.add_bullet(
                    ItemKind::Fact,
                    format!("fact:{}", fact.id),
                    &group,
                    format!("{} (unverified)", fact.text),
                    72,
                    Some(fact.created_at),
                );
            }
        }
        let conversations = self.list_conversations(None, Some(&handoff.task_id))?;
        let latest = predecessor.as_ref().and_then(|branch| {
            conversations
                .iter()
                .filter(|c| c.branch == *branch && c.verification_status != Verdict::Invalidated)
                .max_by(|a, b| a.created_at.cmp(&b.created_at))
        });
        let key = |c: &Conversation| {
            c.verification_status == Verdict::Verified
                || (c.cherry_picked_from.is_some() && c.verification_status != Verdict::Invalidated)
        };
        for conversation in conversations.iter().filter(|c| key(c)) {
            let name = format!(
                "{} ({})",
                conversation.title.as_deref().unwrap_or(&conversation.id),
                match conversation.verification_status {
                    Verdict::Verified => "verified",
                    _ => "cherry-picked",
                }
            );
            let messages = self.messages(&conversation.id, None, None)?;
            b.add_conversation(
                Some(&name),
                messages.into_iter().map(|m| Message {
                    id: Some(format!("{}#{}", conversation.id, m.seq)),
                    priority: Some(55),
                    ..m.message
                }),
            );
        }
        if let Some(conversation) = latest.filter(|c| !key(c)) {
            let from = conversation
                .message_count
                .saturating_sub(TAIL_MESSAGES - 1)
                .max(1);
            let name = format!(
                "{} by {}, unverified",
                conversation.title.as_deref().unwrap_or(&conversation.id),
                conversation
                    .agent
                    .as_deref()
                    .or(handoff.from_agent.as_deref())
                    .unwrap_or("*"),
            );
            let messages = if conversation.message_count == 0 {
                Vec::new()
            } else {
                self.messages(&conversation.id, Some(from), None)?
            };
            b.add_conversation(
                Some(&name),
                messages.into_iter().map(|m| Message {
                    id: Some(format!("{}#{}", conversation.id, m.seq)),
                    priority: Some(60),
                    ..m.message
                }),
            );
        }
        let mut query: Vec<&str> = vec![handoff.goal.as_str()];
        query.extend(handoff.instructions.as_deref());
        query.extend(handoff.pending_steps.iter().map(String::as_str));
        query.extend(handoff.blockers.iter().map(String::as_str));
        if let Some(task) = task {
            query.push(&task.header.goal);
            query.extend(
                task.steps
                    .iter()
                    .filter(|s| !s.status.is_done())
                    .map(|s| s.spec.name.as_str()),
            );
        }
        let terms = relevance::query_terms(query, knowledge::QUERY_TERMS);
        // Verified here only: an unsigned bundle's verdicts are its claim, not this store's.
        let relevant = knowledge::relevant_facts(&*self.backend, &terms, MAIN_FACTS, |f| {
            f.status == FactStatus::Verified
        })?;
        for (rank, fact) in relevant.into_iter().enumerate() {
            b.add_bullet(
                ItemKind::Fact,
                format!("main:{}", fact.id),
                "Relevant Knowledge on main",
                provenance(&fact),
                // The most relevant first when the budget is short.
                68 - i32::try_from(rank).unwrap_or(0).min(8),
                Some(fact.created_at),
            );
        }
        Ok(())
    }
}

/// The task as its plan stands: goal, success criteria, each step's status, the current one
/// marked, and its shared context.
fn add_task(b: &mut ContextBuilder, task: &Task, current: Option<&str>) {
    let h = &task.header;
    let mut text = format!("{} — {}\n", h.name, h.goal.trim());
    if !h.success_criteria.is_empty() {
        text.push_str("\nSuccess criteria:\n");
        for c in &h.success_criteria {
            text.push_str(&format!("- {}\n", one_line(c)));
        }
    }
    if !task.steps.is_empty() {
        text.push_str("\nPlan:\n");
        for s in &task.steps {
            let mark = if s.status.is_done() { "[x]" } else { "[ ]" };
            let here = if current == Some(s.spec.id.as_str()) {
                " ← this handoff"
            } else {
                ""
            };
            text.push_str(&format!(
                "- {mark} {} {} ({}, {}){here}\n",
                s.spec.id,
                one_line(&s.spec.name),
                s.spec.addressee(),
                wire_name(&s.status)
            ));
        }
    }
    b.add_block(
        ItemKind::Task,
        format!("task:{}", h.id),
        "Task",
        text,
        95,
        false,
    );
    if !h.context.is_empty() {
        let context: Vec<String> = h
            .context
            .iter()
            .map(|(k, v)| format!("- {k}: {}", compact(v)))
            .collect();
        b.add_block(
            ItemKind::Task,
            format!("task:{}#context", h.id),
            "Task Context",
            context.join("\n"),
            85,
            true,
        );
    }
    for (i, issue) in h.issues.iter().enumerate() {
        b.add_bullet(
            ItemKind::Output,
            format!("task:{}#issue-{i}", h.id),
            "Task Issues",
            compact(issue),
            76,
            None,
        );
    }
}

/// A verified fact's text, with whose word it is when a signed bundle brought it.
fn provenance(fact: &Fact) -> String {
    match fact.verified_by.as_deref() {
        Some(by) if by.starts_with("bundle:") => format!("{} (verified by {by})", fact.text),
        _ => fact.text.clone(),
    }
}

/// A JSON value on one line: a string as itself, anything else as JSON.
fn compact(value: &Value) -> String {
    match value {
        Value::String(s) => one_line(s),
        other => other.to_string(),
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
