//! Tasks in the store (docs/design.md §7). A task's header and each of its steps are documents
//! ([`Doc`]); a step runs as a handoff (kind `initialization`, addressed to the step's agent,
//! `metadata.step_id` naming the step), so workers take steps with `claim_next`, leases,
//! fencing and crash recovery like any handoff. What happens to a step's handoff happens to the
//! step in the same transaction ([`follow`]): a completion offers the steps it unblocks, a
//! failure is retried, the last one escalates the step to a human and pauses the task.
//!
//! The transitions themselves are [`crate::task`]'s; this module reads what each needs, makes
//! the handoffs it asks for, and writes back what changed.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::clock::to_text;
use crate::error::{Error, Result};
use crate::machine::{Change, Command, NewEvent, transition};
use crate::record::{Handoff, Kind, Metadata, NewHandoff};
use crate::store::{Doc, Store, Tx, insert_handoff, new_id, persist};
use crate::store::{body, parsed};
use crate::task::{self, Effects, NewTask, StepState, TaskHeader, TaskRefusal, TaskStatus};
use crate::validate;

/// The kind of a task's header document.
const TASK: &str = "task";
/// The kind of a step's document, keyed `<task id>/<step id>`.
pub(crate) const STEP: &str = "step";
/// The kind of an entry of a task's log (the events of one transition, [`Logged`]), keyed
/// `<task id>/<seq of its first event, 20 digits>`.
pub(crate) const EVENT: &str = "task_event";

fn step_key(task: &str, step: &str) -> String {
    format!("{task}/{step}")
}

/// Steps read in a transaction, and their documents' versions (in the same order): the
/// states go to the transitions, the versions to the writes.
#[derive(Default)]
struct Steps {
    states: Vec<StepState>,
    versions: Vec<u64>,
}

impl Steps {
    fn extend(&mut self, other: Steps) {
        self.states.extend(other.states);
        self.versions.extend(other.versions);
    }
}

/// What a task transition did: its effects, and the steps it read (and may have changed).
type Changed = (Effects, Steps);

/// A task as a caller reads it: its header and its steps, in plan order.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    /// Everything but the steps.
    pub header: TaskHeader,
    /// The steps, in plan order.
    pub steps: Vec<StepState>,
}

/// A task as every face returns it: its header's fields, its steps, and the steps under way.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "Task")]
struct TaskView<'a> {
    #[serde(flatten)]
    header: &'a TaskHeader,
    /// The steps, in plan order.
    steps: &'a [StepState],
    /// The ids of the steps offered or in progress (`ready`, `in_progress`), in plan order.
    current_steps: Vec<&'a str>,
}

impl<'a> From<&'a Task> for TaskView<'a> {
    fn from(task: &'a Task) -> Self {
        TaskView {
            header: &task.header,
            steps: &task.steps,
            current_steps: task.current_steps(),
        }
    }
}

impl serde::Serialize for Task {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        TaskView::from(self).serialize(serializer)
    }
}

/// A task as a caller reads it: its header and its steps, in plan order.
impl schemars::JsonSchema for Task {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Task".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        TaskView::json_schema(generator)
    }
}

impl Task {
    /// The ids of the steps offered or in progress, in plan order.
    pub fn current_steps(&self) -> Vec<&str> {
        self.steps
            .iter()
            .filter(|s| {
                matches!(
                    s.status,
                    task::StepStatus::Ready | task::StepStatus::InProgress
                )
            })
            .map(|s| s.spec.id.as_str())
            .collect()
    }

    /// The steps in plan order, each in the seed's form (`id`, `name`, `agent`,
    /// `dependencies`, `status`, `attempts`, `max_attempts`, ...): the task's `plan.steps`.
    pub fn steps_values(&self) -> Vec<Value> {
        self.steps
            .iter()
            .map(|s| {
                json!({
                    "id": s.spec.id, "name": s.spec.name, "agent": s.spec.agent,
                    "cluster": s.spec.cluster, "status": s.status,
                    "dependencies": s.spec.dependencies, "attempts": s.attempts,
                    "max_attempts": s.spec.attempts(), "handoff_id": s.handoff_id,
                    "started_at": s.started_at.as_ref().map(to_text),
                    "completed_at": s.completed_at.as_ref().map(to_text),
                    "output": s.output, "error": s.error, "tokens_used": s.tokens_used,
                })
            })
            .collect()
    }

    /// The task in the seed's `task-state.json` form (`plan.goal`, `plan.steps[].dependencies`,
    /// ...).
    pub fn to_value(&self) -> Value {
        let h = &self.header;
        let steps = self.steps_values();
        let current = self.current_steps();
        json!({
            "id": h.id, "name": h.name, "status": h.status, "version": h.version,
            "started_at": h.started_at.as_ref().map(to_text), "updated_at": to_text(&h.updated_at),
            "completed_at": h.completed_at.as_ref().map(to_text), "orchestrator": h.orchestrator,
            "plan": {
                "goal": h.goal, "success_criteria": h.success_criteria,
                "steps": steps, "current_steps": current,
            },
            "context": h.context, "artifacts": h.artifacts, "issues": h.issues,
            "metadata": h.metadata, "tokens_used": h.tokens_used,
            "members": h.members, "result_summary": h.result_summary, "failure": h.failure,
        })
    }
}

/// A refused task transition as the store reports it: a rule about the task's state.
fn refused(refusal: TaskRefusal) -> Error {
    Error::invalid("status", refusal.to_string())
}

fn no_task(id: &str) -> Error {
    Error::NotFound {
        what: "task",
        id: id.to_owned(),
    }
}

/// A task's header and its document's version, locked for the transaction.
pub(crate) fn header(tx: &mut dyn Tx, id: &str) -> Result<Option<(TaskHeader, u64)>> {
    tx.doc(TASK, id)?
        .map(|doc| Ok((parsed("task", &doc)?, doc.version)))
        .transpose()
}

/// The steps named `ids` of task `task`, read together.
fn steps(tx: &mut dyn Tx, task: &str, ids: &[String]) -> Result<Steps> {
    if ids.is_empty() {
        return Ok(Steps::default());
    }
    let keys: Vec<String> = ids.iter().map(|id| step_key(task, id)).collect();
    let places: Vec<(&str, &str)> = keys.iter().map(|key| (STEP, key.as_str())).collect();
    let mut read = Steps::default();
    for (id, doc) in ids.iter().zip(tx.docs_at(&places)?) {
        let doc = doc.ok_or_else(|| Error::storage(format!("task {task} has no step {id}")))?;
        read.states.push(parsed("step", &doc)?);
        read.versions.push(doc.version);
    }
    Ok(read)
}

/// Every step of task `task`, for a transition that holds the task's lock. Only a worker's
/// claim changes a step without that lock (a ready step becomes in progress): the ready steps
/// are read again, locked, their offers' records first, in the order a claim locks them, so
/// that a claim that won reads as a step in progress and one that lost waits for this
/// transaction. Locking nothing else keeps clear of a completion, which locks its step before
/// the task.
fn all_steps(tx: &mut dyn Tx, task: &str) -> Result<Steps> {
    let mut all = Steps::default();
    for (_, doc) in tx.docs(STEP, &format!("{task}/"))? {
        all.states.push(parsed("step", &doc)?);
        all.versions.push(doc.version);
    }
    let ready: Vec<usize> = (0..all.states.len())
        .filter(|&i| all.states[i].status == task::StepStatus::Ready)
        .collect();
    for &i in &ready {
        if let Some(offer) = all.states[i].handoff_id.clone() {
            tx.get(&offer)?;
        }
    }
    let ids: Vec<String> = ready
        .iter()
        .map(|&i| all.states[i].spec.id.clone())
        .collect();
    let fresh = steps(tx, task, &ids)?;
    for ((&i, state), version) in ready.iter().zip(fresh.states).zip(fresh.versions) {
        all.states[i] = state;
        all.versions[i] = version;
    }
    Ok(all)
}

/// The steps of task `task` not done yet, read as [`all_steps`] reads them.
fn open_steps(tx: &mut dyn Tx, task: &str) -> Result<Steps> {
    let all = all_steps(tx, task)?;
    let mut open = Steps::default();
    for (step, version) in all.states.into_iter().zip(all.versions) {
        if !step.status.is_done() {
            open.states.push(step);
            open.versions.push(version);
        }
    }
    Ok(open)
}

/// Merges the verified knowledge of every branch of task `task` into `main`: its agents'
/// branches into `task/<task>` first, then that into `main`. How many facts and conversations
/// reached `main`.
fn merge_task(tx: &mut dyn Tx, task: &str, now: DateTime<Utc>) -> Result<(u64, u64)> {
    use crate::curation::store::{CONVERSATION, FACT, agents_facts_of, merge_in};
    use crate::curation::{Branch, Conversation, Fact};
    let task_branch = Branch::parse(&format!("task/{task}"))?;
    let mut agents = std::collections::BTreeSet::new();
    for (_, doc) in tx.docs(FACT, &agents_facts_of(&task_branch))? {
        agents.insert(parsed::<Fact>("fact", &doc)?.branch);
    }
    for (_, doc) in tx.docs(CONVERSATION, "")? {
        let conversation: Conversation = parsed("conversation", &doc)?;
        if conversation.branch.parent().as_ref() == Some(&task_branch) {
            agents.insert(conversation.branch);
        }
    }
    for agent in &agents {
        merge_in(tx, agent, &task_branch, now)?;
    }
    let report = merge_in(tx, &task_branch, &Branch::main(), now)?;
    Ok((report.facts, report.conversations))
}

pub(crate) fn write_header(tx: &mut dyn Tx, header: &TaskHeader, version: u64) -> Result<()> {
    let doc = Doc {
        version: version + 1,
        body: body(header)?,
    };
    tx.update_doc(TASK, &header.id, &doc)
}

fn write_steps(tx: &mut dyn Tx, task: &str, steps: &Steps) -> Result<()> {
    for (step, version) in steps.states.iter().zip(&steps.versions) {
        let doc = Doc {
            version: version + 1,
            body: body(step)?,
        };
        tx.update_doc(STEP, &step_key(task, &step.spec.id), &doc)?;
    }
    Ok(())
}

/// An entry of a task's log as stored: the events one transition logged, in one document
/// keyed by the first one's `seq` (a single event stands alone, as stores written before
/// batching hold every event).
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
enum Logged {
    One(task::TaskEvent),
    Many(Vec<task::TaskEvent>),
}

/// Appends `changes`, each with its actor and time, to the task's log (and counts them in its
/// header), as one document.
fn log(
    tx: &mut dyn Tx,
    header: &mut TaskHeader,
    changes: Vec<(task::TaskChange, Option<&str>, DateTime<Utc>)>,
) -> Result<()> {
    let Some(first) = header.events.checked_add(1) else {
        return Err(Error::storage(format!("task {} has a full log", header.id)));
    };
    let mut events: Vec<task::TaskEvent> = changes
        .into_iter()
        .map(|(change, actor, at)| {
            header.events += 1;
            task::TaskEvent {
                seq: header.events,
                task_id: header.id.clone(),
                at,
                actor: actor.map(str::to_owned),
                change,
            }
        })
        .collect();
    let logged = match events.len() {
        0 => return Ok(()),
        1 => Logged::One(events.remove(0)),
        _ => Logged::Many(events),
    };
    let key = format!("{}/{first:020}", header.id);
    let doc = Doc {
        version: 1,
        body: body(&logged)?,
    };
    tx.insert_doc(EVENT, &key, &doc)
}

/// Appends what a transition did to the task's log: first the starts it took from its steps,
/// each at its own time and by its worker, then its changes, at `at` by `actor`.
fn log_effects(
    tx: &mut dyn Tx,
    header: &mut TaskHeader,
    effects: task::Effects,
    actor: Option<&str>,
    at: DateTime<Utc>,
) -> Result<()> {
    let starts = effects.started.iter().map(|(step, start)| {
        let started = task::TaskChange::StepStarted {
            step: step.clone(),
            agent: start.agent.clone(),
        };
        (started, Some(start.agent.as_str()), start.at)
    });
    let changes = effects
        .changes
        .into_iter()
        .map(|change| (change, actor, at));
    let all = starts.chain(changes).collect();
    log(tx, header, all)
}

/// `text` cut to at most `max` bytes, on a character boundary: a reason made of a refusal's
/// words, which passed the limits alone, stays within them with ours around it.
fn clip(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

fn step_metadata(step: &str) -> Metadata {
    let mut metadata = Metadata::new();
    metadata.insert("step_id".to_owned(), json!(step));
    metadata
}

/// Makes the handoffs `effects` asks for: a withdrawal per offer nobody took (first, so that a
/// step offered again is withdrawn from its old offer), an offer per step to offer (found in
/// `touched`), an escalation for the step to escalate, a withdrawal per escalation left
/// without a decision.
fn carry_out(
    tx: &mut dyn Tx,
    header: &TaskHeader,
    touched: &mut [StepState],
    effects: &Effects,
    now: DateTime<Utc>,
) -> Result<()> {
    let actor = header.orchestrator.clone();
    let withdraw = |tx: &mut dyn Tx, handoff: &str, why: String| -> Result<()> {
        let Some(record) = tx.get(handoff)? else {
            return Ok(());
        };
        if record.status.is_terminal() {
            return Ok(());
        }
        let by = actor.clone().unwrap_or_else(|| "handoff-core".to_owned());
        let command = Command::Cancel {
            by: Some(record.from_agent.clone().unwrap_or(by)),
            reason: Some(why),
            claim_token: None,
        };
        // Written without `persist`: this transition is what withdrew it, and its step is
        // written with the task below; following the withdrawal would read them stale.
        let t = transition(record, &command, now)?;
        tx.update(&t.record)?;
        for event in t.events {
            tx.append(event)?;
        }
        Ok(())
    };
    let why = match header.status {
        TaskStatus::Paused => format!("task {} was paused", header.id),
        TaskStatus::Failed => format!("task {} failed", header.id),
        TaskStatus::Completed => format!("task {} was completed", header.id),
        TaskStatus::Cancelled => format!("task {} was cancelled", header.id),
        _ => format!("the step was offered again in task {}", header.id),
    };
    for escalation in &effects.withdraw_escalations {
        withdraw(tx, escalation, why.clone())?;
    }
    for step in touched.iter_mut() {
        let id = step.spec.id.clone();
        if effects.withdraw.contains(&id)
            && let Some(handoff) = step.handoff_id.clone()
        {
            withdraw(tx, &handoff, why.clone())?;
        }
        if effects.offer.contains(&id) {
            let mut new = NewHandoff::new(header.id.clone(), step.spec.name.clone())
                .kind(Kind::Initialization)
                .metadata(step_metadata(&id))
                .max_attempts(step.spec.attempts());
            new.to_agent.clone_from(&step.spec.agent);
            if let Some(instructions) = &step.spec.instructions {
                new = new.instructions(instructions.clone());
            }
            step.handoff_id =
                Some(insert_handoff(tx, new, actor.clone(), &validate::Limits::default(), now)?.id);
        }
        if effects.escalate.as_ref() == Some(&id) {
            // The goal names the step by its id (at most 128 bytes), so that it stays within
            // any limits whatever the step's name.
            let new = NewHandoff::new(
                header.id.clone(),
                format!("Decide on step {id}, which failed on every attempt"),
            )
            .to_agent(header.escalate_to.clone())
            .kind(Kind::Escalation)
            .errors(step.error.clone())
            .metadata(step_metadata(&id))
            // A decider's failure is its answer (the task fails), not an attempt to retry.
            .max_attempts(1);
            let escalation =
                insert_handoff(tx, new, actor.clone(), &validate::Limits::default(), now)?;
            step.escalation_id = Some(escalation.id);
        }
    }
    Ok(())
}

/// Whether `record` carries a task's step: the step's offer, the escalation its holder handed
/// it on as, or the escalation that waits for a decision on it. [`follow`] applies its changes
/// to the step.
pub(crate) fn carries_step(record: &Handoff) -> bool {
    step_of(record).is_some()
}

/// Why `agent` may not take the open handoff `h`, when it is a step without an agent (offered
/// to its task's members) and `agent` did not join the task. The task is looked at without a
/// lock: an agent that joins meanwhile may take it on its next try.
pub(crate) fn not_a_member(tx: &mut dyn Tx, h: &Handoff, agent: &str) -> Result<Option<String>> {
    if h.to_agent.is_some() || h.kind != Kind::Initialization {
        return Ok(None);
    }
    let Some(step) = step_of(h) else {
        return Ok(None);
    };
    let Some(doc) = tx.peek_doc(TASK, &h.task_id)? else {
        return Ok(None);
    };
    let header: TaskHeader = parsed("task", &doc)?;
    if header.members.iter().any(|m| m.agent == agent) {
        return Ok(None);
    }
    Ok(Some(format!(
        "step {step} of task {} is offered to the task's members: join_task first",
        h.task_id
    )))
}

/// The step a handoff carries, if any.
fn step_of(record: &Handoff) -> Option<&str> {
    matches!(record.kind, Kind::Initialization | Kind::Escalation)
        .then(|| record.metadata.get("step_id").and_then(Value::as_str))
        .flatten()
}

/// Applies what happened to a handoff (`events`, just written) to the step it carries, if it
/// carries one of a stored task's steps. A step whose state disagrees (its task was cancelled
/// while it ran, an older offer) is left as it is: the handoff is what happened.
pub(crate) fn follow(tx: &mut dyn Tx, record: &Handoff, events: &[NewEvent]) -> Result<()> {
    let Some(step_id) = step_of(record) else {
        return Ok(());
    };
    let step_key = step_key(&record.task_id, step_id);
    if let [event] = events
        && let Change::Claimed { agent, .. } = &event.change
    {
        return start_step(tx, record, &step_key, agent, event.at);
    }
    // A completion offers the step's dependents: they are read with the task and the step,
    // in one read that locks them all, so that the task stays locked only from there to the
    // commit. Which they are comes from a look at the step that locks nothing; should the
    // plan have grown meanwhile, the locked step says so and the rest are read after.
    let completes = events
        .iter()
        .any(|e| matches!(e.change, Change::Completed { .. }));
    let ahead: Vec<String> = match completes {
        true => match tx.peek_doc(STEP, &step_key)? {
            Some(doc) => parsed::<StepState>("step", &doc)?.dependents,
            None => return Ok(()),
        },
        false => Vec::new(),
    };
    let ahead_keys: Vec<String> = ahead
        .iter()
        .map(|id| self::step_key(&record.task_id, id))
        .collect();
    let mut places = vec![(TASK, record.task_id.as_str()), (STEP, step_key.as_str())];
    places.extend(ahead_keys.iter().map(|key| (STEP, key.as_str())));
    let mut read = tx.docs_at(&places)?.into_iter();
    let (Some(Some(header_doc)), Some(Some(doc))) = (read.next(), read.next()) else {
        return Ok(());
    };
    let (mut header, version): (TaskHeader, u64) =
        (parsed("task", &header_doc)?, header_doc.version);
    let step: StepState = parsed("step", &doc)?;
    let decides = step.escalation_id.as_deref() == Some(record.id.as_str());
    if step.handoff_id.as_deref() != Some(record.id.as_str()) && !decides {
        return Ok(());
    }
    let mut read_ahead = Steps::default();
    for (id, doc) in ahead.iter().zip(read) {
        let doc =
            doc.ok_or_else(|| Error::storage(format!("task {} has no step {id}", header.id)))?;
        read_ahead.states.push(parsed("step", &doc)?);
        read_ahead.versions.push(doc.version);
    }
    if decides {
        let step = Steps {
            states: vec![step],
            versions: vec![doc.version],
        };
        return decided(tx, (header, version), step, read_ahead, events);
    }
    // The step first, then (for a completion) its dependents.
    let mut touched = Steps {
        states: vec![step],
        versions: vec![doc.version],
    };
    let mut changed = false;
    for event in events {
        let now = event.at;
        if matches!(event.change, Change::Completed { .. }) && touched.states.len() == 1 {
            let dependents = touched.states[0].dependents.clone();
            if dependents == ahead {
                touched.extend(std::mem::take(&mut read_ahead));
            } else {
                touched.extend(steps(tx, &header.id, &dependents)?);
            }
        }
        let Some((step, dependents)) = touched.states.split_first_mut() else {
            return Ok(());
        };
        let outcome = match &event.change {
            Change::Claimed { agent, .. } => header.step_claimed(step, agent, now),
            Change::Completed {
                outcome,
                tokens_used,
            } => header.step_completed(step, dependents, outcome, *tokens_used, now),
            Change::AttemptFailed { error, .. } => header.step_failed(step, error, false, now),
            Change::LeaseExpired { .. } => {
                header.step_failed(step, "the worker's lease ran out", false, now)
            }
            Change::Failed { error, .. } => {
                let error = error.as_deref().unwrap_or("the worker's lease ran out");
                header.step_failed(step, error, true, now)
            }
            Change::Released { .. } | Change::Revoked { .. } => header.step_released(step, now),
            // The reason as given: it passed the limits the escalation's record must meet.
            Change::Rejected { reason } => header.step_failed(step, reason, true, now),
            Change::Expired => header.step_failed(step, "nobody claimed it in time", true, now),
            // Withdrawn by someone else than its task (a task's own withdrawals are not
            // followed): nobody will run the step unless someone decides.
            Change::Cancelled { reason, .. } => {
                let why = format!(
                    "its handoff was withdrawn: {}",
                    reason.as_deref().unwrap_or("no reason given")
                );
                header.step_failed(step, &why, true, now)
            }
            // (`retry` refuses a step's handoff: its task retries the step.)
            Change::Created { .. }
            | Change::Heartbeat { .. }
            | Change::PriorityChanged { .. }
            | Change::Retried { .. } => continue,
        };
        let Ok(mut effects) = outcome else {
            continue;
        };
        if effects.changes.contains(&task::TaskChange::Paused) {
            // The escalation paused the task: what it offered and nobody holds is withdrawn.
            let mut others = Steps::default();
            let all = all_steps(tx, &header.id)?;
            for (state, version) in all.states.into_iter().zip(all.versions) {
                if touched.states.iter().all(|t| t.spec.id != state.spec.id) {
                    others.states.push(state);
                    others.versions.push(version);
                }
            }
            header.withdraw_offers(&mut others.states, &mut effects);
            touched.extend(others);
        }
        changed = true;
        carry_out(tx, &header, &mut touched.states, &effects, now)?;
        log_effects(tx, &mut header, effects, event.actor.as_deref(), now)?;
    }
    if changed {
        write_header(tx, &header, version)?;
        write_steps(tx, &header.id, &touched)?;
    }
    Ok(())
}

/// What happened to the escalation that waits for a decision on a step (`step`, with its
/// dependents `ahead` when the escalation completed): a plain completion skips the step, as
/// `resolve_escalation` without retry does; its failure, refusal, expiry or withdrawal fails
/// the task, on which nobody would decide otherwise. Either way the task does not stay
/// paused for good.
fn decided(
    tx: &mut dyn Tx,
    (mut header, version): (TaskHeader, u64),
    mut touched: Steps,
    ahead: Steps,
    events: &[NewEvent],
) -> Result<()> {
    let settled = events.iter().find(|e| {
        matches!(
            e.change,
            Change::Completed { .. }
                | Change::Failed { .. }
                | Change::Rejected { .. }
                | Change::Expired
                | Change::Cancelled { .. }
        )
    });
    let Some(event) = settled else {
        return Ok(());
    };
    if header.status.is_finished() {
        return Ok(());
    }
    let (now, actor) = (event.at, event.actor.as_deref());
    let step_id = touched.states[0].spec.id.clone();
    let reason = match &event.change {
        Change::Completed { .. } => None,
        Change::Failed { error, .. } => Some(format!(
            "the escalation of step {step_id} failed: {}",
            error.as_deref().unwrap_or("its holder's lease ran out")
        )),
        Change::Rejected { reason } => Some(format!(
            "the escalation of step {step_id} was refused: {reason}"
        )),
        Change::Expired => Some(format!(
            "nobody took the escalation of step {step_id} in time"
        )),
        _ => Some(format!("the escalation of step {step_id} was withdrawn")),
    };
    let effects = match reason {
        None => {
            let dependents = ahead.states.len();
            touched.extend(ahead);
            resolve_step(tx, &mut header, &mut touched, dependents, false, now)?
        }
        Some(reason) => {
            let settled = touched.states[0].escalation_id.clone();
            touched = open_steps(tx, &header.id)?;
            // This escalation is settled already: nothing to withdraw. Any other step's
            // escalation is withdrawn with the task.
            for state in &mut touched.states {
                if state.escalation_id == settled {
                    state.escalation_id = None;
                }
            }
            let reason = clip(reason, validate::Limits::default().max_field_bytes);
            header
                .fail(&mut touched.states, &reason, now)
                .map_err(refused)?
        }
    };
    carry_out(tx, &header, &mut touched.states, &effects, now)?;
    log_effects(tx, &mut header, effects, actor, now)?;
    write_header(tx, &header, version)?;
    write_steps(tx, &header.id, &touched)
}

/// A decision on an escalated step: `touched` holds the step, then `dependents` of its
/// dependents (those a skip releases); the steps the task keeps waiting (a pause's) are read
/// here, for a resumed task to offer. What `resolve_escalation` and a plain completion of the
/// escalation both do.
fn resolve_step(
    tx: &mut dyn Tx,
    header: &mut TaskHeader,
    touched: &mut Steps,
    dependents: usize,
    retry: bool,
    now: DateTime<Utc>,
) -> Result<Effects> {
    touched.extend(steps(tx, &header.id, &header.waiting.clone())?);
    let Some((step, rest)) = touched.states.split_first_mut() else {
        return Err(Error::storage("a task step vanished"));
    };
    let (dependents, waiting) = rest.split_at_mut(dependents);
    header
        .resolve(step, dependents, waiting, retry, now)
        .map_err(refused)
}

/// A worker took the step `record` carries: the step alone changes (see
/// [`TaskHeader::step_claimed`]); its task is neither read nor locked. A step whose state
/// disagrees is left as it is, as in [`follow`].
fn start_step(
    tx: &mut dyn Tx,
    record: &Handoff,
    step_key: &str,
    agent: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let Some(doc) = tx.doc(STEP, step_key)? else {
        return Ok(());
    };
    let mut step: StepState = parsed("step", &doc)?;
    if step.handoff_id.as_deref() != Some(record.id.as_str())
        || task::start_step(&record.task_id, &mut step, agent, now).is_err()
    {
        return Ok(());
    }
    let doc = Doc {
        version: doc.version + 1,
        body: body(&step)?,
    };
    tx.update_doc(STEP, step_key, &doc)
}

impl Store {
    /// Creates a task (status `pending`) with its plan, checked whole: every problem at once,
    /// nothing written when there is one.
    pub fn create_task(&self, new: NewTask) -> Result<Task> {
        let now = self.clock.now();
        let (mut header, steps) = task::create(new, new_id(now), now, &self.limits)?;
        self.backend.write(&mut |tx| {
            if tx.doc(TASK, &header.id)?.is_some() {
                return Err(Error::invalid(
                    "id",
                    format!("must be free: a task {} exists already", header.id),
                ));
            }
            let mut logged = header.clone();
            log(
                tx,
                &mut logged,
                vec![(task::TaskChange::Created, None, now)],
            )?;
            tx.insert_doc(
                TASK,
                &logged.id,
                &Doc {
                    version: 1,
                    body: body(&logged)?,
                },
            )?;
            for step in &steps {
                let doc = Doc {
                    version: 1,
                    body: body(step)?,
                };
                tx.insert_doc(STEP, &step_key(&header.id, &step.spec.id), &doc)?;
            }
            Ok(())
        })?;
        header.events = 1;
        Ok(Task { header, steps })
    }

    /// The task with this id, with its steps.
    pub fn get_task(&self, id: &str) -> Result<Task> {
        validate::ident("id", id)?;
        let doc = self.backend.doc(TASK, id)?.ok_or_else(|| no_task(id))?;
        let header: TaskHeader = parsed("task", &doc)?;
        let mut steps: Vec<StepState> = self
            .backend
            .docs(STEP, &format!("{id}/"), None, usize::MAX)?
            .iter()
            .map(|(_, doc)| parsed("step", doc))
            .collect::<Result<_>>()?;
        steps.sort_by_key(|s| s.position);
        Ok(Task { header, steps })
    }

    /// The task's log, oldest first: created, started, each step offered, started, completed,
    /// failed, escalated or skipped, paused, resumed, cancelled, completed.
    pub fn task_events(&self, id: &str) -> Result<Vec<task::TaskEvent>> {
        validate::ident("id", id)?;
        if self.backend.doc(TASK, id)?.is_none() {
            return Err(no_task(id));
        }
        let mut events = Vec::new();
        for (_, doc) in self
            .backend
            .docs(EVENT, &format!("{id}/"), None, usize::MAX)?
        {
            match parsed("task event", &doc)? {
                Logged::One(event) => events.push(event),
                Logged::Many(batch) => events.extend(batch),
            }
        }
        Ok(events)
    }

    /// Finished tasks, newest first, in the seed's `task-history.json` form: how each ended
    /// (`success`, `partial` with skipped steps, `failure` when cancelled), its duration, steps
    /// and retries. At most `limit`.
    pub fn task_history(&self, limit: Option<usize>) -> Result<Vec<task::HistoryEntry>> {
        let mut history: Vec<task::HistoryEntry> = self
            .list_tasks(None, None, None)?
            .iter()
            .filter_map(TaskHeader::history)
            .collect();
        history.sort_by(|a, b| b.completed_at.cmp(&a.completed_at).then(b.id.cmp(&a.id)));
        history.truncate(limit.unwrap_or(usize::MAX));
        Ok(history)
    }

    /// Statistics over every finished task: how many, the share that succeeded, the mean
    /// duration, and how many ended each way.
    pub fn task_statistics(&self) -> Result<task::TaskStatistics> {
        Ok(task::TaskStatistics::of(&self.task_history(None)?))
    }

    /// Task headers, in id order (ids are time-ordered, so oldest first), optionally only
    /// those in `status`, at most `limit`, after the task `after` (a page's last id).
    pub fn list_tasks(
        &self,
        status: Option<TaskStatus>,
        limit: Option<usize>,
        after: Option<&str>,
    ) -> Result<Vec<TaskHeader>> {
        let mut found = Vec::new();
        let mut after: Option<String> = after.map(str::to_owned);
        let limit = limit.unwrap_or(usize::MAX);
        while found.len() < limit {
            let page = self.backend.docs(TASK, "", after.as_deref(), 1000)?;
            let Some((last, _)) = page.last() else {
                return Ok(found);
            };
            after = Some(last.clone());
            for (_, doc) in &page {
                let header: TaskHeader = parsed("task", doc)?;
                if status.is_none_or(|s| header.status == s) {
                    found.push(header);
                    if found.len() == limit {
                        break;
                    }
                }
            }
        }
        Ok(found)
    }

    /// Starts a pending task: the steps that wait for nothing are offered as handoffs, in
    /// the same transaction.
    pub fn start_task(&self, id: &str) -> Result<Task> {
        self.change_task(id, &mut |tx, header| {
            let mut roots = steps(tx, &header.id, &header.roots.clone())?;
            let effects = header
                .start(&mut roots.states, self.clock.now())
                .map_err(refused)?;
            Ok((effects, roots))
        })
    }

    /// A human's answer to an escalated step, given with the escalation's claim: the
    /// escalation is completed with `resolution` and, in the same transaction, the step is
    /// offered again with its attempts reset (`retry`) or skipped, its dependents going on
    /// without it; a task the escalation paused resumes.
    pub fn resolve_escalation(
        &self,
        claim: impl Into<crate::store::ClaimRef>,
        resolution: &str,
        retry: bool,
    ) -> Result<Task> {
        let claim = claim.into();
        self.check_text("resolution", resolution)?;
        validate::ident("handoff_id", &claim.handoff_id)?;
        let command = Command::Complete {
            token: claim.token,
            outcome: resolution.to_owned(),
            tokens_used: None,
        };
        let now = self.clock.now();
        let mut task_id = String::new();
        self.change_one(&claim.handoff_id, &mut |tx, record| {
            crate::store::prove_claim(tx, &record, &claim)?;
            let step_id = match (record.kind, record.metadata.get("step_id")) {
                (Kind::Escalation, Some(Value::String(step))) => step.clone(),
                _ => {
                    return Err(Error::invalid(
                        "claim",
                        "must be the claim of a step's escalation",
                    ));
                }
            };
            let (mut header, version) =
                header(tx, &record.task_id)?.ok_or_else(|| no_task(&record.task_id))?;
            // The decision is taken first: the step then no longer waits for this
            // escalation, and its completion below is not followed as a plain one (a skip).
            let mut touched = steps(tx, &header.id, &[step_id])?;
            if touched.states[0].escalation_id.as_deref() != Some(record.id.as_str()) {
                return Err(Error::invalid(
                    "claim",
                    format!(
                        "must be the claim of the escalation step {} waits for",
                        touched.states[0].spec.id
                    ),
                ));
            }
            let dependents = match retry {
                true => Vec::new(),
                false => touched.states[0].dependents.clone(),
            };
            touched.extend(steps(tx, &header.id, &dependents)?);
            let effects =
                resolve_step(tx, &mut header, &mut touched, dependents.len(), retry, now)?;
            carry_out(tx, &header, &mut touched.states, &effects, now)?;
            log_effects(tx, &mut header, effects, record.claimed_by.as_deref(), now)?;
            write_header(tx, &header, version)?;
            write_steps(tx, &header.id, &touched)?;
            task_id = header.id.clone();
            persist(tx, transition(record, &command, now)?)
        })?;
        self.get_task(&task_id)
    }

    /// Reports that a step's work failed, with its claim: [`Store::fail`], refused with
    /// [`Error::InvalidTransition`] when the handoff carries no step.
    pub fn fail_step(
        &self,
        claim: impl Into<crate::store::ClaimRef>,
        error: &str,
    ) -> Result<Handoff> {
        let claim = claim.into();
        // A handoff's kind and metadata never change, so reading them first is as good as
        // reading them in the failure's transaction.
        let record = self.get(&claim.handoff_id)?;
        if !carries_step(&record) {
            return Err(Error::InvalidTransition {
                id: record.id,
                status: record.status,
                event: "fail_step",
                reason: "it carries no task step".to_owned(),
            });
        }
        self.fail(claim, error)
    }

    /// The holder of a step hands it on, with its claim, as an `escalation` handoff to
    /// `to_agent`, linked to the step: the escalation's parent is the holder's handoff, it
    /// carries `instructions`, `blockers` and `priority_items`, and its packet what the holder
    /// knew; completing it completes the step. The holder's handoff completes, saying so.
    /// Returns the escalation.
    pub fn escalate_step(
        &self,
        claim: impl Into<crate::store::ClaimRef>,
        to_agent: &str,
        instructions: Option<&str>,
        blockers: &[String],
        priority_items: &[String],
    ) -> Result<Handoff> {
        let claim = claim.into();
        validate::ident("handoff_id", &claim.handoff_id)?;
        validate::agent("to_agent", to_agent)?;
        let now = self.clock.now();
        let mut escalation = None;
        self.change_one(&claim.handoff_id, &mut |tx, record| {
            crate::store::prove_claim(tx, &record, &claim)?;
            let not_a_step = |reason: &str| Error::InvalidTransition {
                id: record.id.clone(),
                status: record.status,
                event: "escalate_step",
                reason: reason.to_owned(),
            };
            let step_id = step_of(&record)
                .ok_or_else(|| not_a_step("it carries no task step"))?
                .to_owned();
            let (mut header, version) =
                header(tx, &record.task_id)?.ok_or_else(|| no_task(&record.task_id))?;
            let mut touched = steps(tx, &header.id, std::slice::from_ref(&step_id))?;
            if touched.states[0].handoff_id.as_deref() != Some(record.id.as_str()) {
                return Err(not_a_step("it is not the step's current handoff"));
            }
            let holder = record.claimed_by.clone();
            let effects = header
                .hand_on(&mut touched.states[0], to_agent, now)
                .map_err(refused)?;
            let step = &touched.states[0];
            let mut new = NewHandoff::new(header.id.clone(), record.goal.clone())
                .kind(Kind::Escalation)
                .to_agent(to_agent)
                .metadata(step_metadata(&step_id))
                .max_attempts(step.spec.attempts())
                .blockers(blockers.iter().cloned());
            new.parent_id = Some(record.id.clone());
            new.from_agent.clone_from(&holder);
            new.priority_items = priority_items.to_vec();
            new.instructions = instructions
                .map(str::to_owned)
                .or_else(|| step.spec.instructions.clone());
            let created = insert_handoff(tx, new, holder.clone(), &self.limits, now)?;
            touched.states[0].handoff_id = Some(created.id.clone());
            log_effects(tx, &mut header, effects, holder.as_deref(), now)?;
            write_header(tx, &header, version)?;
            write_steps(tx, &header.id, &touched)?;
            let command = Command::Complete {
                token: claim.token,
                outcome: format!("Handed on to {to_agent} as escalation {}", created.id),
                tokens_used: None,
            };
            escalation = Some(created);
            persist(tx, transition(record, &command, now)?)
        })?;
        escalation.ok_or_else(|| Error::storage("the escalation was not written"))
    }

    /// Changes a task if it is still at `expected_version` (compare-and-swap): its goal,
    /// criteria, context, metadata, artifacts or issues, and steps added to its plan (checked
    /// with the plan's, every problem at once). A task that moved meanwhile gives
    /// [`Error::VersionConflict`] naming both versions; a refused update changes nothing.
    pub fn update_task(
        &self,
        id: &str,
        expected_version: u64,
        update: task::TaskUpdate,
    ) -> Result<Task> {
        validate::ident("id", id)?;
        let now = self.clock.now();
        self.backend.write(&mut |tx| {
            let (mut header, version) = header(tx, id)?.ok_or_else(|| no_task(id))?;
            if header.version != expected_version {
                return Err(Error::VersionConflict {
                    id: id.to_owned(),
                    expected: expected_version,
                    actual: header.version,
                });
            }
            // The plan is read only to add to it.
            let mut existing = Steps::default();
            if !update.add_steps.is_empty() {
                existing = all_steps(tx, id)?;
            }
            let (mut added, changed) =
                task::check_update(&update, &mut existing.states, &self.limits)?;
            let effects = header
                .update(update.clone(), &mut added, now)
                .map_err(refused)?;
            carry_out(tx, &header, &mut added, &effects, now)?;
            log_effects(tx, &mut header, effects, None, now)?;
            write_header(tx, &header, version)?;
            let dependencies = Steps {
                states: changed
                    .iter()
                    .map(|&i| existing.states[i].clone())
                    .collect(),
                versions: changed.iter().map(|&i| existing.versions[i]).collect(),
            };
            write_steps(tx, id, &dependencies)?;
            for step in &added {
                let doc = Doc {
                    version: 1,
                    body: body(step)?,
                };
                tx.insert_doc(STEP, &step_key(id, &step.spec.id), &doc)?;
            }
            Ok(())
        })?;
        self.get_task(id)
    }

    /// Pauses a task: its offers nobody holds are withdrawn, and no step is offered until it
    /// resumes; claimed steps may finish.
    pub fn pause_task(&self, id: &str) -> Result<Task> {
        self.change_task(id, &mut |tx, header| {
            let mut all = all_steps(tx, &header.id)?;
            let effects = header
                .pause(&mut all.states, self.clock.now())
                .map_err(refused)?;
            Ok((effects, all))
        })
    }

    /// Resumes a paused task: the steps it withdrew or that became ready meanwhile are offered.
    /// A task that cannot go on (every open step waits for an escalation) is refused with
    /// the escalations to answer and what to call.
    pub fn resume_task(&self, id: &str) -> Result<Task> {
        self.change_task(id, &mut |tx, header| {
            let mut all = all_steps(tx, &header.id)?;
            let effects = header
                .resume(&mut all.states, self.clock.now())
                .map_err(refused)?;
            Ok((effects, all))
        })
    }

    /// `agent` joins the task, with an optional `role`; the steps named in `objectives` (steps
    /// without an agent, such as a task's objectives `"1"`, `"2"`, ...) are assigned to it. Its
    /// branch is `task/<id>/<agent>`; the task's log and replay show an `agent_join`.
    pub fn join_task(
        &self,
        id: &str,
        agent: &str,
        role: Option<&str>,
        objectives: &[String],
    ) -> Result<Task> {
        validate::ident("id", id)?;
        let branch = crate::curation::Branch::named("agent", &format!("task/{id}/{agent}"))?;
        let mut c = validate::Collector::default();
        if let Some(role) = role {
            if role.trim().is_empty() {
                c.push("role", "must not be empty");
            }
            validate::text(&mut c, &self.limits, "role", role);
        }
        for (i, objective) in objectives.iter().enumerate() {
            c.ident(&format!("objectives[{i}]"), objective);
            if objectives[..i].contains(objective) {
                c.push(
                    format!("objectives[{i}]"),
                    format!("names {objective} twice"),
                );
            }
        }
        c.finish()?;
        let member = task::Member {
            agent: agent.to_owned(),
            role: role.map(str::to_owned),
            objectives: objectives.to_vec(),
            branch: branch.as_str().to_owned(),
            joined_at: self.clock.now(),
        };
        self.change_task(id, &mut |tx, header| {
            let keys: Vec<String> = objectives.iter().map(|o| step_key(id, o)).collect();
            let places: Vec<(&str, &str)> = keys.iter().map(|k| (STEP, k.as_str())).collect();
            let mut assigned = Steps::default();
            for (i, doc) in tx.docs_at(&places)?.into_iter().enumerate() {
                let doc = doc.ok_or_else(|| {
                    Error::invalid(
                        format!("objectives[{i}]"),
                        format!("must name a step of task {id}"),
                    )
                })?;
                assigned.states.push(parsed("step", &doc)?);
                assigned.versions.push(doc.version);
            }
            let effects = header
                .join(member.clone(), &mut assigned.states, self.clock.now())
                .map_err(refused)?;
            Ok((effects, assigned))
        })
    }

    /// Fails a task for `reason`: like [`Store::cancel_task`] (offers and escalations nobody
    /// holds are withdrawn, claimed steps may finish), and its history says it failed.
    pub fn fail_task(&self, id: &str, reason: &str) -> Result<Task> {
        self.check_text("reason", reason)?;
        if reason.trim().is_empty() {
            return Err(Error::invalid("reason", "must not be empty"));
        }
        self.change_task(id, &mut |tx, header| {
            let mut open = open_steps(tx, &header.id)?;
            let effects = header
                .fail(&mut open.states, reason, self.clock.now())
                .map_err(refused)?;
            Ok((effects, open))
        })
    }

    /// Completes a task on its caller's word, with `result_summary`: the steps nobody holds
    /// that are not done are skipped (their offers and escalations withdrawn); a step a worker
    /// holds refuses it. With `merge_to_main`, in the same transaction, the verified facts and
    /// the verified or cherry-picked conversations of every branch of the task (its agents'
    /// branches into `task/<id>`, then that into `main`) reach `main`; the rest stays where it
    /// is. A task that completed by itself takes the summary and the merge.
    pub fn complete_task(
        &self,
        id: &str,
        result_summary: Option<&str>,
        merge_to_main: bool,
    ) -> Result<Task> {
        if let Some(summary) = result_summary {
            self.check_text("result_summary", summary)?;
        }
        self.change_task(id, &mut |tx, header| {
            let mut open = open_steps(tx, &header.id)?;
            let now = self.clock.now();
            let mut effects = header
                .complete(&mut open.states, result_summary, now)
                .map_err(refused)?;
            if merge_to_main {
                let (facts, conversations) = merge_task(tx, &header.id, now)?;
                effects.changes.push(task::TaskChange::Merge {
                    into: "main".to_owned(),
                    facts,
                    conversations,
                });
            }
            Ok((effects, open))
        })
    }

    /// Cancels a task: offers and escalations nobody took are withdrawn and its unfinished
    /// steps cancelled; claimed steps may finish.
    pub fn cancel_task(&self, id: &str, reason: Option<&str>) -> Result<Task> {
        if let Some(reason) = reason {
            self.check_text("reason", reason)?;
        }
        self.change_task(id, &mut |tx, header| {
            let mut open = open_steps(tx, &header.id)?;
            let effects = header
                .cancel(&mut open.states, reason, self.clock.now())
                .map_err(refused)?;
            Ok((effects, open))
        })
    }

    /// Runs one task transition in a write: `change` reads what it needs and says what it
    /// did; the header, the steps it returns and the handoffs its effects ask for are written
    /// together.
    fn change_task(
        &self,
        id: &str,
        change: &mut dyn FnMut(&mut dyn Tx, &mut TaskHeader) -> Result<Changed>,
    ) -> Result<Task> {
        validate::ident("id", id)?;
        self.backend.write(&mut |tx| {
            let (mut header, version) = header(tx, id)?.ok_or_else(|| no_task(id))?;
            let (effects, mut touched) = change(tx, &mut header)?;
            let now = self.clock.now();
            carry_out(tx, &header, &mut touched.states, &effects, now)?;
            log_effects(tx, &mut header, effects, None, now)?;
            write_header(tx, &header, version)?;
            write_steps(tx, &header.id, &touched)
        })?;
        self.get_task(id)
    }
}
