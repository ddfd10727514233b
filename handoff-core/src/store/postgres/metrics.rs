//! The metrics in one SQL statement (`metrics::store::sql`), and whether the database's schema
//! is the one this build writes.

use super::PostgresBackend;
use super::errors::storage;
use super::schema;
use crate::error::Result;
use crate::metrics::{Metrics, Tally, store};

impl PostgresBackend {
    /// One statement, so one snapshot: every server over the database reads the same counts,
    /// aggregated by the server (the records never travel).
    pub(super) fn metrics_in_sql(&self) -> Result<Metrics> {
        let sql = store::sql("(body::json ->> 'status')");
        self.reading(|client| {
            let rows = client
                .query(sql.as_str(), &[])
                .map_err(|e| storage("cannot compute the metrics", e))?;
            let mut tally = Tally::default();
            for row in &rows {
                let section: String = row.get(0);
                let label: Option<String> = row.get(1);
                store::tally_row(
                    &mut tally,
                    &section,
                    label.as_deref(),
                    row.get(2),
                    row.get(3),
                    row.get::<_, Option<i64>>(4).unwrap_or_default(),
                );
            }
            Ok(tally.finish())
        })
    }

    /// The server answers and the schema's version is [`schema::VERSION`]: another build may
    /// have migrated it since this one connected.
    pub(super) fn schema_ready(&self) -> Result<()> {
        let version: i32 = self.reading(|client| {
            Ok(client
                .query_one("SELECT version FROM handoff_schema", &[])
                .map_err(|e| storage("cannot read the schema version", e))?
                .get(0))
        })?;
        if version == schema::VERSION {
            Ok(())
        } else {
            Err(crate::store::backend::schema_moved(
                version,
                schema::VERSION,
            ))
        }
    }
}
