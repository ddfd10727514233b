//! The metrics of a [`Store`]: read through the [`Backend`] trait by default (what the memory
//! and files backends do), or in one SQL statement that the SQL backends share
//! ([`sql`]), aggregated by the database so that no record is loaded.

use std::collections::HashMap;

use crate::error::Result;
use crate::machine::Change;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
use crate::metrics::{BUCKETS_SECONDS, bound_micros};
use crate::metrics::{Metrics, Tally, bucket_of};
use crate::record::{Kind, Status};
use crate::store::{Backend, EventFilter, ListFilter, Store};
use crate::task::store::STEP;

/// How many step documents the default reads at a time.
const PAGE: usize = 500;

impl Store {
    /// The state of the store at a glance (see [`Metrics`]): handoffs by status and addressee,
    /// events by kind, the claim wait and work time histograms, open escalations and task steps
    /// by status, all computed from the store.
    pub fn metrics(&self) -> Result<Metrics> {
        self.backend.metrics()
    }

    /// Whether the store answers and its schema is the one this build writes: `Ok` when a
    /// server may take requests, else the error says why not (`handoff serve`'s `/readyz`).
    pub fn ready(&self) -> Result<()> {
        self.backend.ready()
    }
}

/// [`Backend::metrics`]'s default: every record and event read through the trait, one at a
/// time into a [`Tally`].
pub(crate) fn through_trait<B: Backend + ?Sized>(backend: &B) -> Result<Metrics> {
    let mut tally = Tally::default();
    let mut created = HashMap::new();
    for h in backend.list(&ListFilter::default())? {
        if h.kind == Kind::Checkpoint {
            continue;
        }
        tally.handoffs(h.status.as_str(), h.to_agent.clone(), 1);
        if h.kind == Kind::Escalation && matches!(h.status, Status::Pending | Status::Claimed) {
            tally.open_escalations(1);
        }
        created.insert(h.id, h.created_at);
    }
    // The latest claim of each handoff, while its settling is awaited.
    let mut claimed = HashMap::new();
    for event in backend.events(&EventFilter::default())? {
        let kind = event.change.kind();
        tally.events(kind, 1);
        match &event.change {
            Change::Claimed { .. } => {
                if let Some(at) = created.remove(&event.handoff_id) {
                    let micros = (event.at - at).num_microseconds().unwrap_or(i64::MAX);
                    tally.claim_wait(bucket_of(micros), 1, micros);
                }
                claimed.insert(event.handoff_id, event.at);
            }
            _ if SETTLES.contains(&kind) => {
                if let Some(at) = claimed.remove(&event.handoff_id) {
                    let micros = (event.at - at).num_microseconds().unwrap_or(i64::MAX);
                    tally.work_time(bucket_of(micros), 1, micros);
                }
            }
            _ => {}
        }
    }
    let mut after: Option<String> = None;
    loop {
        let page = backend.docs(STEP, "", after.as_deref(), PAGE)?;
        for (_, doc) in &page {
            // A step that does not read is `check`'s to report, not a metric's.
            if let Ok(step) = serde_json::from_str::<StepStatusOnly>(&doc.body) {
                tally.steps(&step.status, 1);
            }
        }
        match page.last() {
            Some((key, _)) if page.len() == PAGE => after = Some(key.clone()),
            _ => break,
        }
    }
    Ok(tally.finish())
}

/// The event kinds by which a holder settles its claim: the end of a work time.
const SETTLES: [&str; 4] = ["completed", "failed", "attempt_failed", "released"];

/// Only the status of a step's document.
#[derive(serde::Deserialize)]
struct StepStatusOnly {
    status: String,
}

/// The one statement the SQL backends compute the metrics with, in one snapshot: rows of
/// `(section, label, agent, count, sum of microseconds)`, read back by [`tally_row`].
/// `step_status` is the dialect's expression for a step document's status (from `body`).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn sql(step_status: &str) -> String {
    let settles = SETTLES.map(|k| format!("'{k}'")).join(", ");
    // The bucket of a duration `d`, as text (the label column is text in every branch).
    let mut bucket = String::from("CASE");
    for (i, bound) in BUCKETS_SECONDS.iter().enumerate() {
        bucket.push_str(&format!(" WHEN d <= {} THEN '{i}'", bound_micros(*bound)));
    }
    bucket.push_str(&format!(" ELSE '{}' END", BUCKETS_SECONDS.len()));
    format!(
        "SELECT 'handoffs', status, to_agent, count(*), 0 FROM handoffs \
           WHERE kind <> 'checkpoint' GROUP BY status, to_agent \
         UNION ALL SELECT 'events', kind, NULL, count(*), 0 FROM events GROUP BY kind \
         UNION ALL SELECT 'escalations', NULL, NULL, count(*), 0 FROM handoffs \
           WHERE kind = 'escalation' AND status IN ('pending', 'claimed') \
         UNION ALL SELECT 'steps', {step_status}, NULL, count(*), 0 FROM docs \
           WHERE kind = '{STEP}' GROUP BY 2 \
         UNION ALL SELECT 'claim_wait', {bucket}, NULL, count(*), CAST(sum(d) AS BIGINT) FROM ( \
           SELECT f.at - h.created_at AS d FROM handoffs AS h JOIN ( \
             SELECT handoff_id, min(at) AS at FROM events WHERE kind = 'claimed' \
             GROUP BY handoff_id) AS f ON f.handoff_id = h.id) AS w GROUP BY 2 \
         UNION ALL SELECT 'work_time', {bucket}, NULL, count(*), CAST(sum(d) AS BIGINT) FROM ( \
           SELECT at - claimed AS d FROM ( \
             SELECT kind, at, max(CASE WHEN kind = 'claimed' THEN at END) \
               OVER (PARTITION BY handoff_id ORDER BY seq) AS claimed \
             FROM events WHERE kind IN ('claimed', {settles})) AS s \
           WHERE kind <> 'claimed' AND claimed IS NOT NULL) AS w GROUP BY 2"
    )
}

/// Adds one row of [`sql`]'s result to `tally`.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn tally_row(
    tally: &mut Tally,
    section: &str,
    label: Option<&str>,
    agent: Option<String>,
    count: i64,
    sum_micros: i64,
) {
    let count = u64::try_from(count).unwrap_or_default();
    let label = label.unwrap_or_default();
    let bucket = || label.parse::<usize>().unwrap_or(BUCKETS_SECONDS.len());
    match section {
        "handoffs" => tally.handoffs(label, agent, count),
        "events" => tally.events(label, count),
        "escalations" => tally.open_escalations(count),
        "steps" => tally.steps(label, count),
        "claim_wait" => tally.claim_wait(bucket(), count, sum_micros),
        "work_time" => tally.work_time(bucket(), count, sum_micros),
        _ => {}
    }
}
