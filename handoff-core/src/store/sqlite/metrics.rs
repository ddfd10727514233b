//! The metrics in one SQL statement (`metrics::store::sql`), and whether the file's schema is
//! the one this build writes.

use super::{Contended, SqliteBackend, schema};
use crate::error::Result;
use crate::metrics::{Metrics, Tally, store};

impl SqliteBackend {
    /// One statement on the reader, so one snapshot: the counts agree with each other.
    pub(super) fn metrics_in_sql(&self) -> Result<Metrics> {
        let sql = store::sql("json_extract(body, '$.status')");
        self.reading(|conn| {
            let mut stmt = conn.prepare_cached(&sql)?;
            let mut rows = stmt.query([])?;
            let mut tally = Tally::default();
            while let Some(row) = rows.next()? {
                let section: String = row.get(0)?;
                let label: Option<String> = row.get(1)?;
                store::tally_row(
                    &mut tally,
                    &section,
                    label.as_deref(),
                    row.get(2)?,
                    row.get(3)?,
                    row.get::<_, Option<i64>>(4)?.unwrap_or_default(),
                );
            }
            Ok(tally.finish())
        })
    }

    /// The reader answers and `user_version` is [`schema::VERSION`]. Opening migrates a file,
    /// so a different version means another build changed it since.
    pub(super) fn schema_ready(&self) -> Result<()> {
        let version = self.reading(|conn| {
            conn.pragma_query_value(None, "user_version", |row| row.get::<_, i64>(0))
                .map_err(Contended::from)
        })?;
        if version == i64::from(schema::VERSION) {
            Ok(())
        } else {
            Err(crate::store::backend::schema_moved(
                version,
                schema::VERSION,
            ))
        }
    }
}
