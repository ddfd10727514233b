//! Running a task again (seed 001's task-level replay, item 4): a new task with the plan of an
//! earlier one — other agents, instructions or parameters where the caller says so — whose
//! branch starts with the earlier run's verified knowledge, so that `compare` can set the two
//! runs side by side.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::{Error, Result};
use crate::record::Metadata;
use crate::store::{NewBundle, Store, Task};
use crate::task::NewTask;
use crate::validate::Collector;

/// Runs a task again: a new task (pending; `start_task` starts it) with the plan of `task_id`,
/// or of the task `bundle_id` was made from, with other `agents`, `instructions` or `context`
/// where given; its branch `task/<id>` starts with the earlier run's verified knowledge (the
/// bundle's, or a bundle made of the task's), and its metadata names the earlier run
/// (`rerun_of`), so that `compare` sets the two side by side.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rerun {
    /// The task whose plan runs again; its verified knowledge seeds the new run.
    #[serde(default)]
    pub task_id: Option<String>,
    /// A bundle of a task: its task's plan runs again, seeded with the bundle's knowledge.
    #[serde(default)]
    pub bundle_id: Option<String>,
    /// The new task's id (a time-ordered one when not given).
    #[serde(default)]
    pub id: Option<String>,
    /// The new task's name (the earlier one's, marked as a rerun, when not given).
    #[serde(default)]
    pub name: Option<String>,
    /// Other agents: by step id, or by the earlier agent's name, the agent that takes the step
    /// now.
    #[serde(default)]
    pub agents: BTreeMap<String, String>,
    /// Other instructions, by step id.
    #[serde(default)]
    pub instructions: BTreeMap<String, String>,
    /// Other parameters: merged over the earlier task's shared context.
    #[serde(default)]
    pub context: Option<Metadata>,
}

impl Store {
    /// Runs a task again: a new task (pending; `start_task` starts it) with the plan of the
    /// task named by `task_id`, or of the task `bundle_id` was made from, changed by the
    /// overrides, its metadata naming the earlier run (`rerun_of`). Its branch `task/<id>`
    /// receives the earlier run's verified knowledge: the bundle's, or a bundle made of the
    /// task's verified knowledge (kept, so that the seed is on record). An override naming
    /// neither a step nor an agent of the plan is refused, and nothing is written.
    pub fn rerun_task(&self, rerun: Rerun) -> Result<Task> {
        let mut c = Collector::default();
        match (&rerun.task_id, &rerun.bundle_id) {
            (Some(_), Some(_)) => c.push("bundle_id", "must not be given with task_id"),
            (None, None) => c.push("task_id", "must be given, or bundle_id"),
            _ => {}
        }
        c.opt_ident("task_id", rerun.task_id.as_deref());
        c.opt_ident("bundle_id", rerun.bundle_id.as_deref());
        c.finish()?;
        let bundle = match &rerun.bundle_id {
            Some(id) => Some(self.get_bundle(id)?),
            None => None,
        };
        let source_id = match (&rerun.task_id, &bundle) {
            (Some(task), _) => task.clone(),
            (None, Some(bundle)) => bundle
                .source_task_id
                .clone()
                .ok_or_else(|| Error::invalid("bundle_id", "must be a bundle made of a task"))?,
            (None, None) => return Err(Error::invalid("task_id", "must be given")),
        };
        let source = self.get_task(&source_id)?;
        if source.header.pruned {
            let field = if rerun.task_id.is_some() {
                "task_id"
            } else {
                "bundle_id"
            };
            return Err(Error::invalid(
                field,
                format!("must name a task whose plan is kept: {source_id} was pruned"),
            ));
        }
        let new = rerun_plan(&source, &rerun)?;
        // Checked before anything is written, the seed's bundle included.
        crate::task::create(
            new.clone(),
            "check".to_owned(),
            self.clock.now(),
            &self.limits,
        )?;
        if let Some(id) = &new.id
            && self.get_task(id).is_ok()
        {
            return Err(Error::invalid(
                "id",
                format!("must be free: a task {id} exists already"),
            ));
        }
        let seed = match bundle {
            Some(bundle) => bundle,
            None => self.create_bundle(NewBundle::of_task(
                format!("{} (verified knowledge)", source.header.name),
                source_id.clone(),
            ))?,
        };
        let json = seed.to_json()?;
        let task = self.create_task(new)?;
        self.import_bundle(&json, &format!("task/{}", task.header.id))?;
        Ok(task)
    }
}

/// The new task: the plan of `source` with the overrides of `rerun` applied, checked (every
/// override that names nothing in the plan, at once).
fn rerun_plan(source: &Task, rerun: &Rerun) -> Result<NewTask> {
    let mut c = Collector::default();
    let steps = &source.steps;
    for (key, agent) in &rerun.agents {
        let named = steps
            .iter()
            .any(|s| s.spec.id == *key || s.spec.agent.as_deref() == Some(key.as_str()));
        if !named {
            c.push(
                format!("agents.{key}"),
                "must name a step or an agent of the plan",
            );
        }
        c.opt_agent(&format!("agents.{key}"), Some(agent));
    }
    for key in rerun.instructions.keys() {
        if steps.iter().all(|s| s.spec.id != *key) {
            c.push(
                format!("instructions.{key}"),
                "must name a step of the plan",
            );
        }
    }
    c.finish()?;
    let specs = steps
        .iter()
        .map(|s| {
            let mut spec = s.spec.clone();
            let by_agent = spec.agent.as_ref().and_then(|a| rerun.agents.get(a));
            if let Some(agent) = rerun.agents.get(&spec.id).or(by_agent) {
                spec.agent = Some(agent.clone());
            }
            if let Some(instructions) = rerun.instructions.get(&spec.id) {
                spec.instructions = Some(instructions.clone());
            }
            spec
        })
        .collect();
    let h = &source.header;
    let mut context = h.context.clone();
    context.extend(rerun.context.clone().unwrap_or_default());
    let mut metadata = Metadata::new();
    metadata.insert("rerun_of".to_owned(), json!(h.id));
    if let Some(bundle) = &rerun.bundle_id {
        metadata.insert("seeded_from".to_owned(), json!(bundle));
    }
    Ok(NewTask {
        id: rerun.id.clone(),
        name: rerun
            .name
            .clone()
            .unwrap_or_else(|| format!("{} (rerun)", h.name)),
        goal: h.goal.clone(),
        steps: specs,
        objectives: Vec::new(),
        success_criteria: h.success_criteria.clone(),
        context,
        metadata,
        orchestrator: h.orchestrator.clone(),
        escalate_to: Some(h.escalate_to.clone()),
    })
}
