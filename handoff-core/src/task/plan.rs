//! A task's plan (docs/design.md §7): steps that form a DAG by their dependencies, checked whole before
//! anything is stored, and the order in which they become ready.
//!
//! Pure: no store, no clock. The task aggregate keeps a validated [`Plan`] and asks it which
//! steps a completion makes ready, in time proportional to the steps that depend on the one
//! completed, not to the plan.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::validate::{AGENT_RULE, Collector, IDENT_RULE, Limits, is_agent_name, is_ident};

/// How often a step is tried before it is escalated, unless the step says otherwise.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// The most attempts a step may ask for.
pub const MAX_ATTEMPTS_LIMIT: u32 = 100;

/// The most steps one plan may have.
pub const MAX_STEPS: usize = 10_000;

/// One step of a plan as the caller gives it (the seed's `task-state.json` names).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    /// The step's id, unique in its plan (an id: `[A-Za-z0-9._:@-]{1,128}`).
    pub id: String,
    /// What the step is, in words.
    pub name: String,
    /// The agent that works on it: its handoff is addressed to this agent. Without one (an
    /// objective of the task), the step is offered to the task's members: any agent that
    /// joined the task may take it, and `join_task` can assign it to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The ids of the steps that must be completed before this one is offered.
    #[serde(default)]
    pub dependencies: Vec<String>,
    /// What the agent is to do, carried by the step's handoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How often the step is tried before it is escalated (default 3, at most 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// The group of agents the step belongs to, as the seed's plans name it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
}

impl StepSpec {
    /// A step `id` named `name` for `agent`, with no dependencies.
    pub fn new(id: impl Into<String>, name: impl Into<String>, agent: impl Into<String>) -> Self {
        StepSpec {
            id: id.into(),
            name: name.into(),
            agent: Some(agent.into()),
            dependencies: Vec::new(),
            instructions: None,
            max_attempts: None,
            cluster: None,
        }
    }

    /// A step `id` named `name` with no agent: an objective of the task, offered to its
    /// members.
    pub fn objective(id: impl Into<String>, name: impl Into<String>) -> Self {
        StepSpec {
            agent: None,
            ..StepSpec::new(id, name, "")
        }
    }

    /// Adds the steps this one waits for.
    pub fn after<I, S>(mut self, dependencies: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.dependencies
            .extend(dependencies.into_iter().map(Into::into));
        self
    }

    /// Who the step is for, in words: its agent, or the task's members.
    pub fn addressee(&self) -> &str {
        self.agent.as_deref().unwrap_or("any member")
    }

    /// How often the step is tried before it is escalated.
    pub fn attempts(&self) -> u32 {
        self.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS)
    }
}

/// A plan whose steps passed [`check`]: ids unique, dependencies known, no cycle. Steps are
/// referred to by their index in the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    steps: Vec<StepSpec>,
    index: HashMap<String, usize>,
    /// For each step, the steps that depend on it.
    dependents: Vec<Vec<usize>>,
}

impl Plan {
    /// Checks `steps` (see [`check`]) and indexes them.
    pub fn new(steps: Vec<StepSpec>, limits: &Limits) -> Result<Plan> {
        check(&steps, limits)?;
        Ok(Plan::checked(steps))
    }

    /// `steps` indexed, when the checks ([`check`], [`check_into`]) found no problem in them.
    pub(crate) fn checked(steps: Vec<StepSpec>) -> Plan {
        let index: HashMap<String, usize> = steps
            .iter()
            .enumerate()
            .map(|(i, step)| (step.id.clone(), i))
            .collect();
        let mut dependents = vec![Vec::new(); steps.len()];
        for (i, step) in steps.iter().enumerate() {
            for dependency in &step.dependencies {
                if let Some(&d) = index.get(dependency) {
                    dependents[d].push(i);
                }
            }
        }
        Plan {
            steps,
            index,
            dependents,
        }
    }

    /// The steps, in the order given.
    pub fn steps(&self) -> &[StepSpec] {
        &self.steps
    }

    /// The steps that depend on the step at `index`.
    pub fn dependents(&self, index: usize) -> &[usize] {
        self.dependents.get(index).map_or(&[], Vec::as_slice)
    }

    /// The index of the step with this id.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// The steps with no dependencies: what a started task offers first.
    pub fn roots(&self) -> Vec<usize> {
        (0..self.steps.len())
            .filter(|&i| self.steps[i].dependencies.is_empty())
            .collect()
    }

    /// The steps that `done` (just completed, or skipped) makes ready, given which steps are
    /// finished: those depending on it whose every dependency is finished. Costs the
    /// dependents' dependencies, not the plan.
    pub fn unblocked_by(&self, done: usize, finished: impl Fn(usize) -> bool) -> Vec<usize> {
        self.dependents
            .get(done)
            .map_or_else(Vec::new, |dependents| {
                dependents
                    .iter()
                    .copied()
                    .filter(|&i| {
                        self.steps[i]
                            .dependencies
                            .iter()
                            .all(|d| self.index.get(d).is_some_and(|&d| finished(d)))
                    })
                    .collect()
            })
    }

    /// The plan with `added` appended, checked together with the steps already there (new
    /// steps may depend on old ones, never the other way round, so no cycle can pass through
    /// an old step).
    pub fn extended(&self, added: Vec<StepSpec>, limits: &Limits) -> Result<Plan> {
        let mut c = Collector::default();
        check_added(&mut c, &added, &self.steps, limits);
        c.finish()?;
        let mut steps = self.steps.clone();
        steps.extend(added);
        Ok(Plan::checked(steps))
    }
}

/// Checks a plan's steps and reports every problem at once, each naming its field
/// (`steps[2].dependencies[0]`) and the rule: ids, names, agents and sizes; duplicate ids;
/// dependencies on unknown steps; cycles, named as the path that closes them (`a → b → a`).
pub fn check(steps: &[StepSpec], limits: &Limits) -> Result<()> {
    let mut c = Collector::default();
    check_into(&mut c, steps, limits);
    c.finish()
}

/// Checks `added` as steps appended to a plan of `existing` steps (named `add_steps` in
/// problems), adding the problems to `c`'s.
pub(super) fn check_added(
    c: &mut Collector,
    added: &[StepSpec],
    existing: &[StepSpec],
    limits: &Limits,
) {
    check_steps(c, "add_steps", added, existing, limits);
}

/// [`check`], adding the problems to those `c` has found already (a task's other fields).
pub(super) fn check_into(c: &mut Collector, steps: &[StepSpec], limits: &Limits) {
    check_steps(c, "steps", steps, &[], limits);
}

/// Checks `steps` (named `field` in problems) as additions to `existing`, which passed before.
fn check_steps(
    c: &mut Collector,
    field: &str,
    steps: &[StepSpec],
    existing: &[StepSpec],
    limits: &Limits,
) {
    let total = existing.len() + steps.len();
    if total > MAX_STEPS {
        c.push(
            field,
            format!("a plan must have at most {MAX_STEPS} steps, would have {total}"),
        );
        // Naming every problem of a plan this large would only bury that one.
        return;
    }
    let mut first: HashMap<&str, usize> = existing
        .iter()
        .enumerate()
        .map(|(i, step)| (step.id.as_str(), i))
        .collect();
    for (i, step) in steps.iter().enumerate() {
        let at = |part: &str| format!("{field}[{i}].{part}");
        if !is_ident(&step.id) {
            c.push(at("id"), IDENT_RULE);
        } else if first.contains_key(step.id.as_str()) {
            let other = first[step.id.as_str()];
            let previous = if other < existing.len() {
                format!("steps[{other}]")
            } else {
                format!("{field}[{}]", other - existing.len())
            };
            c.push(
                at("id"),
                format!("must be unique in the plan: {previous} has id {}", step.id),
            );
        } else {
            first.insert(&step.id, existing.len() + i);
        }
        if step.name.trim().is_empty() {
            c.push(at("name"), "must not be empty");
        }
        for (part, value) in [
            ("name", Some(&step.name)),
            ("instructions", step.instructions.as_ref()),
            ("cluster", step.cluster.as_ref()),
        ] {
            if let Some(value) = value
                && value.len() > limits.max_field_bytes
            {
                c.push(
                    at(part),
                    format!(
                        "must be at most {} bytes, is {}",
                        limits.max_field_bytes,
                        value.len()
                    ),
                );
            }
        }
        if let Some(agent) = &step.agent
            && !is_agent_name(agent)
        {
            c.push(at("agent"), AGENT_RULE);
        }
        if let Some(attempts) = step.max_attempts
            && !(1..=MAX_ATTEMPTS_LIMIT).contains(&attempts)
        {
            c.push(
                at("max_attempts"),
                format!("must be 1 to {MAX_ATTEMPTS_LIMIT}"),
            );
        }
        if step.dependencies.len() > limits.max_list_items {
            c.push(
                at("dependencies"),
                format!(
                    "must have at most {} items, has {}",
                    limits.max_list_items,
                    step.dependencies.len()
                ),
            );
        }
    }
    // Dependencies once every id is known, so that a step may name a later one.
    for (i, step) in steps.iter().enumerate() {
        for (j, dependency) in step.dependencies.iter().enumerate() {
            let at = || format!("{field}[{i}].dependencies[{j}]");
            if !is_ident(dependency) {
                c.push(at(), IDENT_RULE);
            } else if !first.contains_key(dependency.as_str()) {
                c.push(at(), format!("no step has id {dependency}"));
            } else if step.dependencies[..j].contains(dependency) {
                c.push(at(), format!("names {dependency} twice"));
            }
        }
    }
    for cycle in cycles(steps, &first, existing.len()) {
        let i = cycle[0];
        c.push(
            format!("{field}[{i}].dependencies"),
            format!("must not form a cycle: {}", cycle_path(steps, &cycle)),
        );
    }
}

/// The dependency cycles among `steps` (indexes into `steps`), each starting at its earliest
/// step; a step is on at most one of the cycles reported, so that one loop is named once. `ids` maps every known id to its
/// position in the whole plan, whose first `offset` steps came before `steps` (and cannot
/// be on a cycle: they never depend on a step added after them).
///
/// Iterative, so that a chain of ten thousand steps does not exhaust the stack.
fn cycles(steps: &[StepSpec], ids: &HashMap<&str, usize>, offset: usize) -> Vec<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    let local = |id: &String| {
        ids.get(id.as_str())
            .and_then(|&p| p.checked_sub(offset))
            .filter(|&p| p < steps.len())
    };
    let mut mark = vec![Mark::New; steps.len()];
    let mut reported = vec![false; steps.len()];
    let mut found = Vec::new();
    for start in 0..steps.len() {
        if mark[start] != Mark::New {
            continue;
        }
        // The path walked: each step with how many of its dependencies were looked at.
        let mut path: Vec<(usize, usize)> = vec![(start, 0)];
        mark[start] = Mark::OnPath;
        while let Some(top) = path.last_mut() {
            let step = top.0;
            let Some(dependency) = steps[step].dependencies.get(top.1) else {
                mark[step] = Mark::Done;
                path.pop();
                continue;
            };
            top.1 += 1;
            let Some(d) = local(dependency) else {
                continue;
            };
            match mark[d] {
                Mark::New => {
                    mark[d] = Mark::OnPath;
                    path.push((d, 0));
                }
                Mark::OnPath => {
                    // The path from `d` back round to `d`, in the order the steps wait: each
                    // one depends on the next.
                    let from = path.iter().position(|&(s, _)| s == d).unwrap_or(0);
                    let cycle: Vec<usize> = path[from..].iter().map(|&(s, _)| s).collect();
                    if !cycle.iter().any(|&s| reported[s]) {
                        for &s in &cycle {
                            reported[s] = true;
                        }
                        found.push(rotate_to_earliest(cycle));
                    }
                }
                Mark::Done => {}
            }
        }
    }
    found
}

/// A cycle as the path that closes it, `a → b → a`; a long one shows its ends and how many
/// steps lie between, so that the message stays readable.
fn cycle_path(steps: &[StepSpec], cycle: &[usize]) -> String {
    const SHOWN: usize = 8;
    let id = |&s: &usize| steps[s].id.as_str();
    let mut path: Vec<String> = Vec::new();
    if cycle.len() <= 2 * SHOWN {
        path.extend(cycle.iter().map(|s| id(s).to_owned()));
    } else {
        path.extend(cycle[..SHOWN].iter().map(|s| id(s).to_owned()));
        path.push(format!("… {} more …", cycle.len() - 2 * SHOWN));
        path.extend(
            cycle[cycle.len() - SHOWN..]
                .iter()
                .map(|s| id(s).to_owned()),
        );
    }
    path.push(id(&cycle[0]).to_owned());
    path.join(" → ")
}

/// The cycle started at its smallest index, so that it reads the same however it was found.
fn rotate_to_earliest(mut cycle: Vec<usize>) -> Vec<usize> {
    if let Some(at) = (0..cycle.len()).min_by_key(|&i| cycle[i]) {
        cycle.rotate_left(at);
    }
    cycle
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn step(id: &str, deps: &[&str]) -> StepSpec {
        StepSpec::new(id, format!("Step {id}"), "writer").after(deps.iter().copied())
    }

    fn problems(steps: &[StepSpec]) -> Vec<(String, String)> {
        check(steps, &Limits::default())
            .unwrap_err()
            .problems()
            .iter()
            .map(|p| (p.field.clone(), p.rule.clone()))
            .collect()
    }

    #[test]
    fn the_seeds_plan_passes_and_offers_its_roots_first() {
        let plan = Plan::new(
            vec![
                step("research", &[]),
                step("draft-ko", &["research"]),
                step("draft-en", &["research"]),
                step("review", &["draft-ko", "draft-en"]),
            ],
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(plan.roots(), [0]);
        let finished = |done: &[usize]| {
            let done = done.to_vec();
            move |i: usize| done.contains(&i)
        };
        assert_eq!(plan.unblocked_by(0, finished(&[0])), [1, 2]);
        assert!(plan.unblocked_by(1, finished(&[0, 1])).is_empty());
        assert_eq!(plan.unblocked_by(2, finished(&[0, 1, 2])), [3]);
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let mut bad_agent = step("c", &["nowhere", "a", "a"]);
        bad_agent.agent = Some(" ".into());
        bad_agent.max_attempts = Some(0);
        let got = problems(&[step("a", &[]), step("a", &[]), bad_agent, step("../x", &[])]);
        let fields: Vec<&str> = got.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "steps[1].id",
                "steps[2].agent",
                "steps[2].max_attempts",
                "steps[3].id",
                "steps[2].dependencies[0]",
                "steps[2].dependencies[2]",
            ],
            "{got:?}"
        );
        assert!(got[0].1.contains("steps[0] has id a"), "{got:?}");
        assert!(got[4].1.contains("no step has id nowhere"), "{got:?}");
    }

    #[test]
    fn cycles_are_named_as_paths() {
        let got = problems(&[
            step("a", &["b"]),
            step("b", &["c"]),
            step("c", &["a"]),
            step("d", &["d"]),
            step("e", &["a"]),
        ]);
        assert_eq!(
            got,
            [
                (
                    "steps[0].dependencies".to_owned(),
                    "must not form a cycle: a → b → c → a".to_owned()
                ),
                (
                    "steps[3].dependencies".to_owned(),
                    "must not form a cycle: d → d".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn a_long_chain_neither_overflows_nor_costs_the_square() {
        let steps: Vec<StepSpec> = (0..MAX_STEPS)
            .map(|i| {
                let deps: Vec<String> = if i == 0 {
                    Vec::new()
                } else {
                    vec![format!("s{}", i - 1)]
                };
                StepSpec::new(format!("s{i}"), "step", "w").after(deps)
            })
            .collect();
        let plan = Plan::new(steps.clone(), &Limits::default()).unwrap();
        assert_eq!(plan.unblocked_by(5, |i| i <= 5), [6]);

        let mut looped = steps;
        looped[0].dependencies.push(format!("s{}", MAX_STEPS - 1));
        let got = problems(&looped);
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].1,
            "must not form a cycle: s0 → s9999 → s9998 → s9997 → s9996 → s9995 → s9994 → s9993 \
             → … 9984 more … → s8 → s7 → s6 → s5 → s4 → s3 → s2 → s1 → s0"
        );
    }

    #[test]
    fn sizes_are_bounded() {
        let too_many: Vec<StepSpec> = (0..=MAX_STEPS)
            .map(|i| StepSpec::new(format!("s{i}"), "x", "w"))
            .collect();
        let got = problems(&too_many);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "steps");

        let mut huge = step("a", &[]);
        huge.instructions = Some("x".repeat(Limits::default().max_field_bytes + 1));
        assert_eq!(problems(&[huge])[0].0, "steps[0].instructions");
    }

    #[test]
    fn added_steps_may_depend_on_old_ones_and_are_checked_with_them() {
        let plan = Plan::new(vec![step("a", &[])], &Limits::default()).unwrap();
        let grown = plan
            .extended(vec![step("b", &["a"])], &Limits::default())
            .unwrap();
        assert_eq!(grown.unblocked_by(0, |i| i == 0), [1]);

        let err = plan
            .extended(vec![step("a", &[]), step("c", &["x"])], &Limits::default())
            .unwrap_err();
        let fields: Vec<&str> = err.problems().iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["add_steps[0].id", "add_steps[1].dependencies[0]"]);
        assert!(err.problems()[0].rule.contains("steps[0] has id a"));
    }

    #[test]
    fn steps_read_the_seeds_json() {
        let step: StepSpec = serde_json::from_str(
            r#"{"id": "draft-ko", "name": "Draft (ko)", "agent": "writer", "dependencies": ["research"]}"#,
        )
        .unwrap();
        assert_eq!(step.attempts(), DEFAULT_MAX_ATTEMPTS);
        assert!(
            serde_json::from_str::<StepSpec>(r#"{"id": "a", "name": "n", "agent": "w", "x": 1}"#)
                .is_err()
        );
    }
}
