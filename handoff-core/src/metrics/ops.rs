//! The `metrics` operation.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::Result;
use crate::ops::{Access, Arguments, Operation};
use crate::store::Store;

/// The store at a glance, for operators and their monitoring: handoffs by status and
/// addressee, events by kind (created, claimed, completed, failed, retried, revoked,
/// lease_expired, ...), the time from creation to first claim and from claim to settling as
/// histograms, open escalations and task steps by status. Computed from the store, so every
/// server over one database reports the same.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricsArgs {}

impl Arguments for MetricsArgs {}

/// The `metrics` operation.
pub struct Metrics;

impl Operation for Metrics {
    const NAME: &'static str = "metrics";
    const ACCESS: Access = Access::Reads;
    const POSITIONAL: &'static [&'static str] = &[];
    type Args = MetricsArgs;
    type Output = crate::metrics::Metrics;

    fn run(store: &Store, _: MetricsArgs) -> Result<crate::metrics::Metrics> {
        store.metrics()
    }
}
