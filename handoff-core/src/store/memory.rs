//! The in-memory backend: the reference implementation of the [`Backend`] contract, for tests
//! and ephemeral swarms. Everything lives behind one mutex; a failed write is undone.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};

use chrono::{DateTime, Utc};

use crate::chain::Hop;
use crate::error::Result;
use crate::machine::{Event, NewEvent};
use crate::record::{Handoff, Kind, Lifecycle, Status};
use crate::store::{Backend, Capabilities, Doc, EventFilter, Exported, ListFilter, Tx, hop_of};

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
    /// Pending ids in claim order (the highest priority first, then by insertion position):
    /// what `claim_next` walks.
    pending: BTreeMap<ClaimOrder, String>,
    /// Positions of claimed records by lease end, and of expiring pending records by expiry:
    /// what time can change.
    due: BTreeSet<(DateTime<Utc>, u64)>,
    /// Insertion positions of each task's records.
    tasks: HashMap<String, Vec<u64>>,
    events: Vec<Event>,
    /// Store-wide settings.
    settings: HashMap<String, String>,
    /// Digests of the current claims' secrets, by record id.
    secrets: HashMap<String, [u8; 32]>,
    /// Documents by kind and key, in key order within a kind.
    docs: BTreeMap<(String, String), Doc>,
}

/// A pending record's place in claim order: the highest priority first, then the oldest.
type ClaimOrder = (std::cmp::Reverse<i32>, u64);

fn doc_key(kind: &str, key: &str) -> (String, String) {
    (kind.to_owned(), key.to_owned())
}

impl MemoryBackend {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic inside a write leaves the undo log unapplied only if the panic came from this
        // module; the data is still structurally sound, so carry on with it.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// What to do to take one write back.
enum Undo {
    Insert(String),
    Update(u64, Lifecycle),
    Append,
    Setting(String, Option<String>),
    Secret(String, Option<[u8; 32]>),
    Doc((String, String), Option<Doc>),
    /// A removed record: its place, itself, its claim digest and its events.
    Delete(u64, Box<Handoff>, Option<[u8; 32]>, Vec<Event>),
}

struct MemoryTx<'a> {
    state: &'a mut State,
    undo: Vec<Undo>,
}

impl Backend for MemoryBackend {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            durable: false,
            shared_by_processes: false,
            shared_by_machines: false,
            backup: true,
            wakes_waiters: false,
        }
    }

    /// Under the one lock, so the snapshot is consistent (writers wait meanwhile).
    fn export(&self, sink: &mut dyn FnMut(Exported) -> Result<()>) -> Result<()> {
        let state = self.lock();
        let settings: BTreeMap<&String, &String> = state.settings.iter().collect();
        for (key, value) in settings {
            sink(Exported::Setting {
                key: key.clone(),
                value: value.clone(),
            })?;
        }
        for id in state.order.values() {
            if let Some((_, record)) = state.records.get(id) {
                sink(Exported::Record {
                    record: Box::new(record.clone()),
                    claim_secret: state.secrets.get(id).copied(),
                })?;
            }
        }
        for event in &state.events {
            sink(Exported::Event(event.clone()))?;
        }
        for ((kind, key), doc) in &state.docs {
            sink(Exported::Doc {
                kind: kind.clone(),
                key: key.clone(),
                doc: doc.clone(),
            })?;
        }
        Ok(())
    }

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
                && filter
                    .to_agent
                    .as_ref()
                    .is_none_or(|a| h.to_agent.as_ref() == Some(a))
        };
        let from = match &filter.after {
            None => 0,
            Some(id) => match state.records.get(id) {
                Some((pos, _)) => pos + 1,
                None => return Ok(Vec::new()),
            },
        };
        let records: Vec<Handoff> = match &filter.task_id {
            Some(task) => state
                .task_records_from(task, from)
                .filter(matches)
                .take(limit)
                .cloned()
                .collect(),
            None => state
                .order
                .range(from..)
                .filter_map(|(_, id)| state.records.get(id).map(|(_, h)| h))
                .filter(matches)
                .take(limit)
                .cloned()
                .collect(),
        };
        Ok(records)
    }

    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>> {
        let state = self.lock();
        // Events are in `seq` order, so a cursor is a binary search.
        let start = filter
            .after
            .map_or(0, |after| state.events.partition_point(|e| e.seq <= after));
        let task_of = |id: &str| state.records.get(id).map(|(_, h)| h.task_id.clone());
        Ok(state.events[start..]
            .iter()
            .filter(|e| filter.matches(e, || task_of(&e.handoff_id)))
            .take(filter.limit.unwrap_or(usize::MAX))
            .cloned()
            .collect())
    }

    fn hops(&self, task_id: &str) -> Result<Vec<Hop>> {
        Ok(self.lock().hops(task_id))
    }

    fn setting(&self, key: &str) -> Result<Option<String>> {
        Ok(self.lock().settings.get(key).cloned())
    }

    fn doc(&self, kind: &str, key: &str) -> Result<Option<Doc>> {
        Ok(self.lock().docs.get(&doc_key(kind, key)).cloned())
    }

    fn docs(
        &self,
        kind: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Doc)>> {
        Ok(self.lock().docs_of(kind, prefix, after, limit))
    }
}

impl State {
    /// See [`Backend::docs`].
    fn docs_of(
        &self,
        kind: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Doc)> {
        let start = match after {
            Some(after) if after > prefix => after,
            _ => prefix,
        };
        self.docs
            .range(doc_key(kind, start)..)
            .filter(|((_, key), _)| after.is_none_or(|after| key.as_str() > after))
            .take_while(|((k, key), _)| k == kind && key.starts_with(prefix))
            .take(limit)
            .map(|((_, key), doc)| (key.clone(), doc.clone()))
            .collect()
    }
}

impl State {
    fn by_position(&self, pos: u64) -> Option<&Handoff> {
        let id = self.order.get(&pos)?;
        self.records.get(id).map(|(_, h)| h)
    }

    /// A task's records, oldest first.
    fn task_records(&self, task_id: &str) -> impl Iterator<Item = &Handoff> {
        self.tasks
            .get(task_id)
            .into_iter()
            .flatten()
            .filter_map(|pos| self.by_position(*pos))
    }

    /// A task's records inserted at or after position `from`, oldest first.
    /// The insertion position of the record `id` (0 when there is none).
    fn position(&self, id: &str) -> u64 {
        self.records.get(id).map_or(0, |(pos, _)| *pos)
    }

    fn task_records_from(&self, task_id: &str, from: u64) -> impl Iterator<Item = &Handoff> {
        let positions = self.tasks.get(task_id).map_or(&[][..], Vec::as_slice);
        let start = positions.partition_point(|pos| *pos < from);
        positions[start..]
            .iter()
            .filter_map(|pos| self.by_position(*pos))
    }

    fn hops(&self, task_id: &str) -> Vec<Hop> {
        self.task_records(task_id).map(hop_of).collect()
    }

    /// Where `h` belongs in the indexes: among the pending (with its priority) or not, and
    /// when time next changes it, if ever.
    fn slots(h: &Handoff) -> (Option<i32>, Option<DateTime<Utc>>) {
        let due = match h.status {
            Status::Claimed => h.lease_until,
            Status::Pending => h.expires_at,
            _ => None,
        };
        ((h.status == Status::Pending).then_some(h.priority), due)
    }

    /// Adds the record `id` at `pos` to the indexes `slots` names, or removes it.
    fn index(
        &mut self,
        pos: u64,
        id: &str,
        (pending, due): (Option<i32>, Option<DateTime<Utc>>),
        add: bool,
    ) {
        if let Some(priority) = pending {
            let place = (std::cmp::Reverse(priority), pos);
            if add {
                self.pending.insert(place, id.to_owned());
            } else {
                self.pending.remove(&place);
            }
        }
        if let Some(at) = due {
            if add {
                self.due.insert((at, pos));
            } else {
                self.due.remove(&(at, pos));
            }
        }
    }

    /// Puts `lifecycle` on the record at `pos`, keeping the indexes right; returns the old one.
    fn set_lifecycle(&mut self, pos: u64, lifecycle: Lifecycle) -> Option<Lifecycle> {
        let id = self.order.get(&pos)?.clone();
        let (_, stored) = self.records.get_mut(&id)?;
        let before = State::slots(stored);
        let previous = stored.replace_lifecycle(lifecycle);
        let after = State::slots(stored);
        self.index(pos, &id, before, false);
        self.index(pos, &id, after, true);
        Some(previous)
    }
}

impl Drop for MemoryTx<'_> {
    fn drop(&mut self) {
        while let Some(undo) = self.undo.pop() {
            match undo {
                Undo::Insert(id) => {
                    if let Some((pos, h)) = self.state.records.remove(&id) {
                        self.state.order.remove(&pos);
                        self.state.index(pos, &id, State::slots(&h), false);
                        if let Some(positions) = self.state.tasks.get_mut(&h.task_id) {
                            positions.retain(|p| *p != pos);
                        }
                    }
                }
                Undo::Update(pos, previous) => {
                    self.state.set_lifecycle(pos, previous);
                }
                Undo::Append => {
                    self.state.events.pop();
                }
                Undo::Setting(key, previous) => match previous {
                    Some(value) => {
                        self.state.settings.insert(key, value);
                    }
                    None => {
                        self.state.settings.remove(&key);
                    }
                },
                Undo::Secret(id, previous) => match previous {
                    Some(digest) => {
                        self.state.secrets.insert(id, digest);
                    }
                    None => {
                        self.state.secrets.remove(&id);
                    }
                },
                Undo::Delete(pos, record, secret, events) => {
                    let id = record.id.clone();
                    self.state.order.insert(pos, id.clone());
                    self.state.index(pos, &id, State::slots(&record), true);
                    let positions = self.state.tasks.entry(record.task_id.clone()).or_default();
                    let at = positions.partition_point(|p| *p < pos);
                    positions.insert(at, pos);
                    self.state.records.insert(id.clone(), (pos, *record));
                    if let Some(digest) = secret {
                        self.state.secrets.insert(id, digest);
                    }
                    for event in events {
                        let at = self.state.events.partition_point(|e| e.seq < event.seq);
                        self.state.events.insert(at, event);
                    }
                }
                Undo::Doc(key, previous) => match previous {
                    Some(doc) => {
                        self.state.docs.insert(key, doc);
                    }
                    None => {
                        self.state.docs.remove(&key);
                    }
                },
            }
        }
    }
}

impl MemoryTx<'_> {
    fn put_doc(&mut self, kind: &str, key: &str, doc: &Doc) {
        let key = doc_key(kind, key);
        let previous = self.state.docs.insert(key.clone(), doc.clone());
        self.undo.push(Undo::Doc(key, previous));
    }
}

impl Tx for MemoryTx<'_> {
    fn get(&mut self, id: &str) -> Result<Option<Handoff>> {
        Ok(self.state.records.get(id).map(|(_, h)| h.clone()))
    }

    fn insert(&mut self, record: &Handoff) -> Result<()> {
        let pos = self
            .state
            .order
            .last_key_value()
            .map_or(0, |(pos, _)| pos + 1);
        self.state.order.insert(pos, record.id.clone());
        self.state
            .index(pos, &record.id, State::slots(record), true);
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
        let Some(&(pos, _)) = self.state.records.get(&record.id) else {
            return Ok(());
        };
        if let Some(previous) = self.state.set_lifecycle(pos, record.lifecycle()) {
            self.undo.push(Undo::Update(pos, previous));
        }
        Ok(())
    }

    fn set_setting(&mut self, key: &str, value: &str) -> Result<()> {
        let previous = self.state.settings.insert(key.to_owned(), value.to_owned());
        self.undo.push(Undo::Setting(key.to_owned(), previous));
        Ok(())
    }

    fn claim_secret(&mut self, id: &str) -> Result<Option<[u8; 32]>> {
        Ok(self.state.secrets.get(id).copied())
    }

    fn set_claim_secret(&mut self, id: &str, digest: Option<[u8; 32]>) -> Result<()> {
        let previous = match digest {
            Some(digest) => self.state.secrets.insert(id.to_owned(), digest),
            None => self.state.secrets.remove(id),
        };
        self.undo.push(Undo::Secret(id.to_owned(), previous));
        Ok(())
    }

    fn append(&mut self, event: NewEvent) -> Result<()> {
        let seq = self.state.events.last().map_or(1, |e| e.seq + 1);
        self.state.events.push(Event {
            seq,
            handoff_id: event.handoff_id,
            at: event.at,
            actor: event.actor,
            change: event.change,
        });
        self.undo.push(Undo::Append);
        Ok(())
    }

    fn delete_record(&mut self, id: &str) -> Result<()> {
        let Some((pos, record)) = self.state.records.remove(id) else {
            return Ok(());
        };
        self.state.order.remove(&pos);
        self.state.index(pos, id, State::slots(&record), false);
        if let Some(positions) = self.state.tasks.get_mut(&record.task_id) {
            positions.retain(|p| *p != pos);
        }
        let secret = self.state.secrets.remove(id);
        let (gone, kept): (Vec<Event>, Vec<Event>) = std::mem::take(&mut self.state.events)
            .into_iter()
            .partition(|e| e.handoff_id == id);
        self.state.events = kept;
        self.undo
            .push(Undo::Delete(pos, Box::new(record), secret, gone));
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
        after: Option<&str>,
    ) -> Result<Option<Handoff>> {
        let state = &*self.state;
        // The first place in claim order after the refused record's, if one was refused.
        let from: ClaimOrder = after
            .and_then(|id| state.records.get(id))
            .map_or((std::cmp::Reverse(i32::MAX), 0), |(pos, h)| {
                (std::cmp::Reverse(h.priority), *pos + 1)
            });
        let claimable = |h: &&Handoff| {
            h.status == Status::Pending
                && h.kind != Kind::Checkpoint
                && h.to_agent.as_deref().is_none_or(|to| to == agent)
                && h.expires_at.is_none_or(|at| at > now)
        };
        let found = match task_id {
            // A task has few records: the best of them in claim order.
            Some(task) => state
                .task_records_from(task, 0)
                .filter(claimable)
                .filter(|h| (std::cmp::Reverse(h.priority), state.position(&h.id)) >= from)
                .min_by_key(|h| (std::cmp::Reverse(h.priority), state.position(&h.id))),
            None => state
                .pending
                .range(from..)
                .map(|(_, id)| id)
                .filter_map(|id| state.records.get(id).map(|(_, h)| h))
                .find(claimable),
        };
        Ok(found.cloned())
    }

    fn lapsed(&mut self, now: DateTime<Utc>, limit: usize) -> Result<Vec<Handoff>> {
        let state = &*self.state;
        let mut due: Vec<u64> = state
            .due
            .iter()
            .take_while(|(at, _)| *at <= now)
            .take(limit)
            .map(|(_, pos)| *pos)
            .collect();
        due.sort_unstable();
        Ok(due
            .into_iter()
            .filter_map(|pos| state.by_position(pos).cloned())
            .collect())
    }

    fn doc(&mut self, kind: &str, key: &str) -> Result<Option<Doc>> {
        Ok(self.state.docs.get(&doc_key(kind, key)).cloned())
    }

    fn insert_doc(&mut self, kind: &str, key: &str, doc: &Doc) -> Result<()> {
        self.put_doc(kind, key, doc);
        Ok(())
    }

    fn update_doc(&mut self, kind: &str, key: &str, doc: &Doc) -> Result<()> {
        self.put_doc(kind, key, doc);
        Ok(())
    }

    fn docs(&mut self, kind: &str, prefix: &str) -> Result<Vec<(String, Doc)>> {
        Ok(self.state.docs_of(kind, prefix, None, usize::MAX))
    }

    fn delete_doc(&mut self, kind: &str, key: &str) -> Result<()> {
        let key = doc_key(kind, key);
        let previous = self.state.docs.remove(&key);
        self.undo.push(Undo::Doc(key, previous));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    crate::conformance_tests!(crate::Store::memory());
}
