//! `Store::check`: what in a store is damaged, and with `repair`, the damage moved aside.
//!
//! Damage comes from outside the store's own writes: a file deleted, emptied or edited by hand
//! in a files store, a bad disk, a planted file in a folder pulled from git. Each backend
//! reports what it can see; a files store can also repair, by moving what is damaged into
//! `quarantine/` (never deleting it) and mending what refers to it.

use schemars::JsonSchema;
use serde::Serialize;

use super::{Backend, EventFilter, ListFilter, Store};
use crate::error::Result;

/// One piece of damage [`Store::check`] found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct Damage {
    /// What is damaged: a file of a files store (`handoffs/<id>.json`, `events.jsonl line
    /// 7`), or a part of a database store (`handoffs`, `integrity`).
    pub what: String,
    /// What is wrong with it.
    pub problem: String,
    /// What the repair did about it (`moved to quarantine/...`); `None` when it was not
    /// repaired (not asked to, or a damage no repair in place can mend).
    pub repaired: Option<String>,
}

/// What [`Store::check`] found: nothing damaged when `damage` is empty.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct CheckReport {
    /// Each damage, in the order it was found.
    pub damage: Vec<Damage>,
}

impl CheckReport {
    /// Whether nothing is damaged.
    pub fn is_clean(&self) -> bool {
        self.damage.is_empty()
    }

    pub(crate) fn found(&mut self, what: impl Into<String>, problem: impl Into<String>) {
        self.damage.push(Damage {
            what: what.into(),
            problem: problem.into(),
            repaired: None,
        });
    }

    pub(crate) fn repaired(
        &mut self,
        what: impl Into<String>,
        problem: impl Into<String>,
        repair: impl Into<String>,
    ) {
        self.damage.push(Damage {
            what: what.into(),
            problem: problem.into(),
            repaired: Some(repair.into()),
        });
    }
}

/// Reads every record and event of `backend` through the contract, reporting what cannot be
/// read: what any backend can check.
pub(crate) fn read_everything<B: Backend + ?Sized>(backend: &B, report: &mut CheckReport) {
    if let Err(e) = backend.list(&ListFilter::default()) {
        report.found("handoffs", e.to_string());
    }
    if let Err(e) = backend.events(&EventFilter::default()) {
        report.found("events", e.to_string());
    }
}

impl Store {
    /// Looks through the whole store for damage and reports each piece by name. With
    /// `repair`, a files store moves what is damaged into its `quarantine/` folder and mends
    /// what referred to it (its index, its event log); a database store reports only (restore
    /// a backup: see [`Store::backup`]).
    ///
    /// ```
    /// let store = handoff_core::Store::memory();
    /// assert!(store.check(false)?.is_clean());
    /// # Ok::<(), handoff_core::Error>(())
    /// ```
    pub fn check(&self, repair: bool) -> Result<CheckReport> {
        self.backend.check(repair)
    }
}
