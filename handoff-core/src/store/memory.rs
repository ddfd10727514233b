//! The in-memory backend: the reference implementation of the [`Backend`] contract, for tests
//! and ephemeral swarms. Everything lives behind one mutex; a failed write is undone.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use chrono::{DateTime, Utc};

use crate::chain::Hop;
use crate::error::Result;
use crate::machine::{Event, NewEvent};
use crate::record::{Handoff, Kind, Status};
use crate::store::{Backend, ListFilter, Tx, hop_of};

/// Keeps handoffs and events in process memory.
#[derive(Debug, Default)]
pub struct MemoryBackend {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Records by id, each with its insertion position.
    records: HashMap<String, (u64, Handoff)>,
    /// Every id by insertion position.
    order: BTreeMap<u64, String>,
    /// Pending and claimed ids by insertion position: the only ones time or claims can change.
    live: BTreeMap<u64, String>,
    /// Insertion positions of each task's records.
    tasks: HashMap<String, Vec<u64>>,
    events: Vec<Event>,
}

impl MemoryBackend {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic inside a write leaves the undo log unapplied only if the panic came from this
        // module; the data is still structurally sound, so carry on with it.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// What to do to take one write back.
enum Undo {
    Insert(String),
    Update(Box<Handoff>),
    Append,
}

struct MemoryTx<'a> {
    state: &'a mut State,
    undo: Vec<Undo>,
}

impl Backend for MemoryBackend {
    fn write(&self, work: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        let mut guard = self.lock();
        let mut tx = MemoryTx {
            state: &mut guard,
            undo: Vec::new(),
        };
        let result = work(&mut tx);
        if result.is_ok() {
            tx.undo.clear();
        }
        // Dropping `tx` undoes whatever is left: an error's writes, or a panic's.
        result
    }

    fn get(&self, id: &str) -> Result<Option<Handoff>> {
        Ok(self.lock().records.get(id).map(|(_, h)| h.clone()))
    }

    fn list(&self, filter: &ListFilter) -> Result<Vec<Handoff>> {
        let state = self.lock();
        let limit = filter.limit.unwrap_or(usize::MAX);
        let matches = |h: &&Handoff| {
            filter.status.is_none_or(|s| h.status == s)
                && filter.kind.is_none_or(|k| h.kind == k)
                && filter.to_agent.as_ref().is_none_or(|a| h.to_agent.as_ref() == Some(a))
        };
        let records: Vec<Handoff> = match &filter.task_id {
            Some(task) => state
                .tasks
                .get(task)
                .into_iter()
                .flatten()
                .filter_map(|pos| state.by_position(*pos))
                .filter(matches)
                .take(limit)
                .cloned()
                .collect(),
            None => state
                .order
                .values()
                .filter_map(|id| state.records.get(id).map(|(_, h)| h))
                .filter(matches)
                .take(limit)
                .cloned()
                .collect(),
        };
        Ok(records)
    }

    fn events(&self, handoff_id: Option<&str>) -> Result<Vec<Event>> {
        let state = self.lock();
        Ok(state
            .events
            .iter()
            .filter(|e| handoff_id.is_none_or(|id| e.handoff_id == id))
            .cloned()
            .collect())
    }

    fn hops(&self, task_id: &str) -> Result<Vec<Hop>> {
        Ok(self.lock().hops(task_id))
    }
}

impl State {
    fn by_position(&self, pos: u64) -> Option<&Handoff> {
        let id = self.order.get(&pos)?;
        self.records.get(id).map(|(_, h)| h)
    }

    fn hops(&self, task_id: &str) -> Vec<Hop> {
        self.tasks
            .get(task_id)
            .into_iter()
            .flatten()
            .filter_map(|pos| self.by_position(*pos))
            .map(hop_of)
            .collect()
    }

    fn set_live(&mut self, pos: u64, h: &Handoff) {
        if h.status.is_terminal() {
            self.live.remove(&pos);
        } else {
            self.live.insert(pos, h.id.clone());
        }
    }
}

impl Drop for MemoryTx<'_> {
    fn drop(&mut self) {
        while let Some(undo) = self.undo.pop() {
            match undo {
                Undo::Insert(id) => {
                    if let Some((pos, h)) = self.state.records.remove(&id) {
                        self.state.order.remove(&pos);
                        self.state.live.remove(&pos);
                        if let Some(positions) = self.state.tasks.get_mut(&h.task_id) {
                            positions.retain(|p| *p != pos);
                        }
                    }
                }
                Undo::Update(previous) => {
                    if let Some((pos, h)) = self.state.records.get_mut(&previous.id) {
                        *h = *previous;
                        let (pos, h) = (*pos, h.clone());
                        self.state.set_live(pos, &h);
                    }
                }
                Undo::Append => {
                    self.state.events.pop();
                }
            }
        }
    }
}

impl Tx for MemoryTx<'_> {
    fn get(&mut self, id: &str) -> Result<Option<Handoff>> {
        Ok(self.state.records.get(id).map(|(_, h)| h.clone()))
    }

    fn insert(&mut self, record: &Handoff) -> Result<()> {
        let pos = self.state.order.last_key_value().map_or(0, |(pos, _)| pos + 1);
        self.state.order.insert(pos, record.id.clone());
        self.state.set_live(pos, record);
        self.state
            .tasks
            .entry(record.task_id.clone())
            .or_default()
            .push(pos);
        self.state
            .records
            .insert(record.id.clone(), (pos, record.clone()));
        self.undo.push(Undo::Insert(record.id.clone()));
        Ok(())
    }

    fn update(&mut self, record: &Handoff) -> Result<()> {
        if let Some((pos, stored)) = self.state.records.get_mut(&record.id) {
            let previous = std::mem::replace(stored, record.clone());
            let pos = *pos;
            self.state.set_live(pos, record);
            self.undo.push(Undo::Update(Box::new(previous)));
        }
        Ok(())
    }

    fn append(&mut self, event: &NewEvent) -> Result<()> {
        let seq = self.state.events.last().map_or(1, |e| e.seq + 1);
        self.state.events.push(Event {
            seq,
            handoff_id: event.handoff_id.clone(),
            at: event.at,
            actor: event.actor.clone(),
            change: event.change.clone(),
        });
        self.undo.push(Undo::Append);
        Ok(())
    }

    fn hops(&mut self, task_id: &str) -> Result<Vec<Hop>> {
        Ok(self.state.hops(task_id))
    }

    fn next_claimable(
        &mut self,
        agent: &str,
        task_id: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Option<Handoff>> {
        let state = &*self.state;
        let found = state
            .live
            .values()
            .filter_map(|id| state.records.get(id).map(|(_, h)| h))
            .find(|h| {
                h.status == Status::Pending
                    && h.kind != Kind::Checkpoint
                    && h.to_agent.as_deref().is_none_or(|to| to == agent)
                    && task_id.is_none_or(|task| h.task_id == task)
                    && h.expires_at.is_none_or(|at| at > now)
            });
        Ok(found.cloned())
    }

    fn lapsed(&mut self, now: DateTime<Utc>, limit: usize) -> Result<Vec<Handoff>> {
        let state = &*self.state;
        Ok(state
            .live
            .values()
            .filter_map(|id| state.records.get(id).map(|(_, h)| h))
            .filter(|h| match h.status {
                Status::Claimed => h.lease_until.is_some_and(|at| at <= now),
                Status::Pending => h.expires_at.is_some_and(|at| at <= now),
                _ => false,
            })
            .take(limit)
            .cloned()
            .collect())
    }
}

#[cfg(test)]
mod tests {
    crate::conformance_tests!(crate::Store::memory());
}
