//! Manager/worker protocol runs in the store (docs/design.md §8). A run is a document keyed by its
//! task; each message is a handoff (of the message's kind, addressed to the agent whose turn
//! it is, its body in `protocol`), so each side takes its messages with `claim_next`, leases,
//! fencing and crash recovery like any handoff. Every call is made with the claim of the
//! message it answers: the claim is settled, the run advanced and the next message created in
//! one transaction, or nothing is written.
//!
//! The transitions themselves are [`crate::protocol`]'s; this module checks that the claimed
//! message is the run's current one, and stores what the transition asks for.

use chrono::{DateTime, Utc};

use crate::error::{Error, Result};
use crate::machine::{Command, transition};
use crate::protocol::{
    ContextUpdates, Decision, ErrorReport, EscalationDetails, HandoffType, Initialize, Message,
    Outcome, ProtocolError, ProtocolStats, Recipient, RecoveryInstructions, Run, WorkerReport,
    wire_name,
};
use crate::record::{Handoff, NewHandoff, Status};
use crate::store::{ClaimRef, Doc, ListFilter, Store, Tx, insert_handoff, persist, prove_claim};
use crate::store::{body, parsed};
use crate::validate::{self, Limits};

/// A call's transition of the run: the message it sends, if any.
type Step<'a> = dyn FnMut(&mut Run, DateTime<Utc>) -> Outcome<Option<Message>> + 'a;

/// The kind of a run's document, keyed by its task's id.
const RUN: &str = "protocol_run";

/// At most this much of the worker's last error is added to an escalation's description.
const LAST_ERROR_CHARS: usize = 500;

/// How many runs [`Store::protocol_stats`] reads per page.
const STATS_PAGE: usize = 500;

fn no_run(task_id: &str) -> Error {
    Error::NotFound {
        what: "protocol run",
        id: task_id.to_owned(),
    }
}

/// The run of `task_id` and its document's version, locked for the transaction.
fn read_run(tx: &mut dyn Tx, task_id: &str) -> Result<Option<(Run, u64)>> {
    tx.doc(RUN, task_id)?
        .map(|doc| Ok((parsed("protocol run", &doc)?, doc.version)))
        .transpose()
}

/// What the recipient of `message` is to do, in words: the record's `instructions`, so that
/// its Markdown (and an agent reading it over MCP) says which call answers it.
fn what_to_do(message: &Message) -> String {
    let body = &message.body;
    match (message.to, body.handoff_type) {
        (Recipient::Worker, HandoffType::ErrorRecovery) => {
            let strategy = body
                .recovery_instructions
                .as_ref()
                .map(|r| r.strategy.as_str())
                .unwrap_or_default();
            format!(
                "Recover: {strategy}. Then answer with `report` (or `report_error`) on this claim."
            )
        }
        (Recipient::Worker, _) => {
            let instructions = body
                .continuation_instructions
                .as_deref()
                .or(body.instructions.as_deref())
                .unwrap_or_default();
            format!("{instructions}\n\nAnswer with `report` (or `report_error`) on this claim.")
        }
        (Recipient::Manager, HandoffType::ErrorRecovery) => {
            "The worker met an error: answer with `recover` (recovery steps) or `escalate` on \
             this claim."
                .to_owned()
        }
        (Recipient::Manager, _) if body.resume_instructions.is_some() => {
            "A human resolved the escalation (see Resume Instructions): answer with `decide` \
             (COMPLETE, CONTINUE, REFINE or ESCALATE) on this claim."
                .to_owned()
        }
        (Recipient::Manager, _) => {
            "Review the worker's report: answer with `decide` (COMPLETE, CONTINUE, REFINE or \
             ESCALATE) on this claim."
                .to_owned()
        }
        (Recipient::Human, _) => {
            "Decide how the run goes on: answer with `resolve` on this claim; the manager then \
             takes it up."
                .to_owned()
        }
    }
}

/// The worker's answers (reports and error reports) in the run that the message `last`
/// continues, oldest first, read back along the messages' parent links: the k-th answers the
/// k-th entry of the run's history. Only an escalation reads them.
fn answers(tx: &mut dyn Tx, last: Option<&str>) -> Result<Vec<serde_json::Value>> {
    let mut found = Vec::new();
    let mut next = last.map(str::to_owned);
    while let Some(id) = next {
        let Some(h) = tx.get(&id)? else { break };
        if let Some(body) = &h.protocol {
            let answer = match (&body.worker_report, &body.error_report) {
                (Some(report), _) => Some(serde_json::to_value(report)),
                (None, Some(report)) => Some(serde_json::to_value(report)),
                (None, None) => None,
            };
            if let Some(answer) = answer {
                found.push(answer.map_err(|e| Error::storage(e.to_string()))?);
            }
        }
        next = h.parent_id;
    }
    found.reverse();
    Ok(found)
}

impl Store {
    /// Starts a protocol run on a task: the initialization, iteration 1, goes to the worker
    /// (returned). The manager → worker checks run first, every problem at once; a task runs
    /// the protocol once, so a second `initialize` for it is refused and writes nothing.
    pub fn initialize(&self, new: Initialize) -> Result<Handoff> {
        let now = self.clock.now();
        let (run, message) = Run::initialize(new, now)?;
        let mut sent = None;
        self.backend.write(&mut |tx| {
            if let Some((existing, _)) = read_run(tx, &run.task_id)? {
                return Err(Error::invalid(
                    "task_id",
                    format!(
                        "task {} has a protocol run already (started {}): a task runs the \
                         protocol once",
                        existing.task_id,
                        crate::clock::to_text(&existing.started_at)
                    ),
                ));
            }
            let mut run = run.clone();
            let manager = run.manager.clone();
            let record = send(
                tx,
                &self.limits,
                &mut run,
                message.clone(),
                &manager,
                None,
                now,
            )?;
            let doc = Doc {
                version: 1,
                body: body(&run)?,
            };
            tx.insert_doc(RUN, &run.task_id, &doc)?;
            sent = Some(record);
            Ok(())
        })?;
        sent.ok_or_else(|| Error::storage("write returned no record"))
    }

    /// The worker's report on the instructions it holds: a `progress` message for the
    /// manager (returned). The worker → manager checks run first (every changed file
    /// documented, issues described unless the work is complete).
    pub fn report(&self, claim: impl Into<ClaimRef>, report: WorkerReport) -> Result<Handoff> {
        let outcome = format!("reported {}", wire_name(&report.status));
        self.answer_sending(claim.into(), "report", outcome, &mut |run, now| {
            run.report(report.clone(), now)
        })
    }

    /// The manager's decision on the report (or the human's resolution) it holds. CONTINUE
    /// and REFINE send `instructions` to the worker for the next iteration (returned), or an
    /// escalation once the run has had `max_iterations`; COMPLETE ends the run (nothing
    /// returned); ESCALATE sends `details` to whoever the run escalates to. `summary`, the
    /// manager's words on the report, becomes the answered message's outcome beside the
    /// decision.
    pub fn decide(
        &self,
        claim: impl Into<ClaimRef>,
        decision: Decision,
        instructions: Option<String>,
        context_updates: Option<ContextUpdates>,
        details: Option<EscalationDetails>,
        summary: Option<&str>,
    ) -> Result<Option<Handoff>> {
        let outcome = match summary.map(str::trim) {
            Some(summary) if !summary.is_empty() => {
                format!("{}: {summary}", wire_name(&decision))
            }
            _ => wire_name(&decision),
        };
        self.answer(claim.into(), "decide", outcome, &mut |run, now| {
            run.decide(
                decision,
                instructions.clone(),
                context_updates.clone(),
                details.clone(),
                now,
            )
        })
    }

    /// The worker's error report on the instructions it holds: an `error_recovery` message
    /// for the manager (returned).
    pub fn report_error(&self, claim: impl Into<ClaimRef>, report: ErrorReport) -> Result<Handoff> {
        let outcome = format!(
            "error reported: {} ({})",
            wire_name(&report.error_type),
            wire_name(&report.severity)
        );
        self.answer_sending(claim.into(), "report_error", outcome, &mut |run, now| {
            run.report_error(report.clone(), now)
        })
    }

    /// The manager's recovery steps for the error report it holds: an `error_recovery`
    /// message for the worker, one retry more (returned); past `max_retries` an escalation
    /// instead.
    pub fn recover(
        &self,
        claim: impl Into<ClaimRef>,
        recovery: RecoveryInstructions,
    ) -> Result<Handoff> {
        self.answer_sending(
            claim.into(),
            "recover",
            "recovery sent".to_owned(),
            &mut |run, now| run.recover(recovery.clone(), now),
        )
    }

    /// The manager hands the run to a human: an `escalation` (returned) with the whole
    /// history and where the work stands.
    pub fn escalate(
        &self,
        claim: impl Into<ClaimRef>,
        details: EscalationDetails,
    ) -> Result<Handoff> {
        self.answer_sending(
            claim.into(),
            "escalate",
            "escalated".to_owned(),
            &mut |run, now| run.escalate(details.clone(), now),
        )
    }

    /// A human's answer to the escalation they hold: a `progress` message for the manager
    /// carrying `resolution` (and how to resume, when given) as its `resume_instructions`
    /// (returned); the run's iteration and retry allowances start afresh.
    pub fn resolve(
        &self,
        claim: impl Into<ClaimRef>,
        resolution: &str,
        resume_instructions: Option<&str>,
    ) -> Result<Handoff> {
        if resolution.trim().is_empty() {
            return Err(Error::invalid("resolution", "must not be empty"));
        }
        let answer = match resume_instructions.map(str::trim) {
            Some(resume) if !resume.is_empty() => format!("{resolution}\n\nTo resume: {resume}"),
            _ => resolution.to_owned(),
        };
        self.answer_sending(
            claim.into(),
            "resolve",
            "resolved".to_owned(),
            &mut |run, now| run.resolve(&answer, now),
        )
    }

    /// The run of a task as it stands: who holds its latest message, iterations, retries,
    /// history.
    pub fn protocol_run(&self, task_id: &str) -> Result<Run> {
        validate::ident("task_id", task_id)?;
        let doc = self
            .backend
            .doc(RUN, task_id)?
            .ok_or_else(|| no_run(task_id))?;
        parsed("protocol run", &doc)
    }

    /// The messages of a task's run, oldest first, each with its `protocol` body.
    pub fn protocol_history(&self, task_id: &str) -> Result<Vec<Handoff>> {
        validate::ident("task_id", task_id)?;
        if self.backend.doc(RUN, task_id)?.is_none() {
            return Err(no_run(task_id));
        }
        let filter = ListFilter {
            task_id: Some(task_id.to_owned()),
            ..ListFilter::default()
        };
        let mut records = self.backend.list(&filter)?;
        records.retain(|h| h.protocol.is_some());
        Ok(records)
    }

    /// How the store's runs went: iterations per run, first-try completion rate, escalation
    /// rate, retries, the median time per iteration.
    pub fn protocol_stats(&self) -> Result<ProtocolStats> {
        let mut runs = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self.backend.docs(RUN, "", after.as_deref(), STATS_PAGE)?;
            let full = page.len() == STATS_PAGE;
            after = page.last().map(|(key, _)| key.clone());
            for (_, doc) in &page {
                runs.push(parsed::<Run>("protocol run", doc)?);
            }
            if !full {
                break;
            }
        }
        Ok(ProtocolStats::of(&runs))
    }

    /// [`Store::answer`] for the calls whose transition always sends a message: that
    /// message.
    fn answer_sending(
        &self,
        claim: ClaimRef,
        call: &'static str,
        outcome: String,
        step: &mut dyn FnMut(&mut Run, DateTime<Utc>) -> Outcome<Message>,
    ) -> Result<Handoff> {
        self.answer(claim, call, outcome, &mut |run, now| {
            step(run, now).map(Some)
        })?
        .ok_or_else(|| Error::storage(format!("{call} sent no message")))
    }

    /// Answers the message `claim` holds with `step`, in one transaction: the message must be
    /// its run's current one; the claim is settled (completed with `outcome`), the run
    /// advanced, and the message `step` asks for created and returned.
    fn answer(
        &self,
        claim: ClaimRef,
        call: &'static str,
        outcome: String,
        step: &mut Step<'_>,
    ) -> Result<Option<Handoff>> {
        validate::ident("handoff_id", &claim.handoff_id)?;
        let now = self.clock.now();
        let command = Command::Complete {
            token: claim.token,
            outcome,
            tokens_used: None,
        };
        let mut sent = None;
        self.change_one(&claim.handoff_id, &mut |tx, h| {
            prove_claim(tx, &h, &claim)?;
            let (id, status) = (h.id.clone(), h.status);
            let refuse = |reason: String| Error::InvalidTransition {
                id: id.clone(),
                status,
                event: call,
                reason,
            };
            if h.protocol.is_none() {
                return Err(refuse("it carries no protocol message".to_owned()));
            }
            let (mut run, version) = read_run(tx, &h.task_id)?
                .ok_or_else(|| refuse(format!("task {} has no protocol run", h.task_id)))?;
            if run.message_id.as_deref() != Some(h.id.as_str()) {
                return Err(refuse(
                    "it is not its run's current message: the run has moved on".to_owned(),
                ));
            }
            // The claim first: a stale one is refused before the run is asked.
            let settled = transition(h, &command, now)?;
            let message = step(&mut run, now).map_err(|err| match err {
                ProtocolError::OutOfTurn(refusal) => refuse(refusal.to_string()),
                ProtocolError::Invalid(err) => err,
            })?;
            let settled = persist(tx, settled)?;
            run.updated_at = now;
            run.message_id = None;
            sent = match message {
                Some(message) => {
                    let from = settled.claimed_by.clone().unwrap_or_default();
                    Some(send(
                        tx,
                        &self.limits,
                        &mut run,
                        message,
                        &from,
                        Some(&settled.id),
                        now,
                    )?)
                }
                None => None,
            };
            let doc = Doc {
                version: version + 1,
                body: body(&run)?,
            };
            tx.update_doc(RUN, &run.task_id, &doc)?;
            Ok(settled)
        })?;
        Ok(sent)
    }
}

/// Creates `message` as a handoff from `from` (continuing `parent`), and makes it the
/// run's current message.
fn send(
    tx: &mut dyn Tx,
    limits: &Limits,
    run: &mut Run,
    message: Message,
    from: &str,
    parent: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Handoff> {
    let to = match message.to {
        Recipient::Manager => &run.manager,
        Recipient::Worker => &run.worker,
        Recipient::Human => &run.escalate_to,
    };
    let mut new = NewHandoff::new(run.task_id.clone(), run.goal.clone())
        .kind(message.body.handoff_type.kind())
        .to_agent(to.clone())
        .instructions(what_to_do(&message))
        .files(run.files_modified.clone());
    new.success_criteria.clone_from(&run.success_criteria);
    if !from.is_empty() {
        new = new.from_agent(from);
    }
    if let Some(parent) = parent {
        new = new.parent_id(parent);
    }
    let mut body = message.body;
    if body.handoff_type == HandoffType::Escalation {
        let answers = answers(tx, parent)?;
        // The human reads the worker's last error in the escalation's own words (seed 004:
        // "technical details and error information").
        let last_error = answers
            .iter()
            .rev()
            .find_map(|a| serde_json::from_value::<crate::protocol::ErrorReport>(a.clone()).ok())
            .map(|e| e.error_messages.last().cloned().unwrap_or(e.description));
        if let (Some(error), Some(details)) = (last_error, body.escalation_details.as_mut())
            && !details.description.contains(error.trim())
        {
            let error: String = error.trim().chars().take(LAST_ERROR_CHARS).collect();
            details.description = format!("{} Last error: {error}", details.description.trim_end());
        }
        for (item, answer) in body.complete_history.iter_mut().zip(answers) {
            item.worker_report = Some(answer);
        }
    }
    new.protocol = Some(Box::new(body));
    let actor = (!from.is_empty()).then(|| from.to_owned());
    let record = insert_handoff(tx, new, actor, limits, now)?;
    run.message_id = Some(record.id.clone());
    Ok(record)
}

/// Applies what happened to a protocol message (`record`, just written) to its run: a current
/// message that ended unanswered (failed after its last lapse, rejected, cancelled) escalates
/// the run to a human in the same transaction ([`Run::message_lost`]). Other changes, and
/// messages that are not their run's current one, change nothing.
pub(crate) fn follow(tx: &mut dyn Tx, record: &Handoff) -> Result<()> {
    if !matches!(
        record.status,
        Status::Failed | Status::Rejected | Status::Cancelled
    ) {
        return Ok(());
    }
    let Some((mut run, version)) = read_run(tx, &record.task_id)? else {
        return Ok(());
    };
    if run.message_id.as_deref() != Some(record.id.as_str()) {
        return Ok(());
    }
    let now = record.completed_at.unwrap_or(record.created_at);
    let what = format!(
        "({}, to {}) was {}{}",
        record.kind,
        record.to_agent.as_deref().unwrap_or("anyone"),
        record.status,
        record
            .outcome
            .as_deref()
            .map(|why| format!(": {why}"))
            .unwrap_or_default()
    );
    let Some(message) = run.message_lost(&what, now) else {
        return Ok(());
    };
    run.updated_at = now;
    run.message_id = None;
    // Handoffs changed by time or by name carry no store's limits: the defaults, as for a
    // task's step.
    send(
        tx,
        &Limits::default(),
        &mut run,
        message,
        "",
        Some(&record.id),
        now,
    )?;
    let doc = Doc {
        version: version + 1,
        body: body(&run)?,
    };
    tx.update_doc(RUN, &run.task_id, &doc)
}
