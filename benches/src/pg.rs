//! Schemas of a bench's own on the PostgreSQL server the benches use.

/// The server: `HANDOFF_BENCH_POSTGRES`, or the local one.
pub fn url() -> String {
    std::env::var("HANDOFF_BENCH_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// The store URL of `schema` on the server, the schema emptied first (a run may have been
/// stopped before it dropped it).
pub fn fresh_schema(schema: &str) -> String {
    drop_schema(schema);
    let url = url();
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}schema={schema}")
}

/// Drops `schema` and everything in it.
pub fn drop_schema(schema: &str) {
    let mut client = postgres::Client::connect(&url(), postgres::NoTls).unwrap();
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
        .unwrap();
}
