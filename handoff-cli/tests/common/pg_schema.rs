//! A PostgreSQL schema for one test.

/// A PostgreSQL schema of its own, dropped when the test ends however it ends.
pub struct PgSchema {
    pub server: String,
    pub name: String,
}

impl PgSchema {
    pub fn new(server: &str) -> PgSchema {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let name = format!("hc_cli_{:x}{:x}", std::process::id(), nanos);
        PgSchema {
            server: server.to_owned(),
            name,
        }
    }

    pub fn url(&self) -> String {
        let joiner = if self.server.contains('?') { '&' } else { '?' };
        format!("{}{joiner}schema={}", self.server, self.name)
    }

    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.server, postgres::NoTls).unwrap_or_else(|e| {
            panic!("HANDOFF_TEST_POSTGRES is set but the server cannot be reached: {e}")
        })
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.server, postgres::NoTls) {
            let _ =
                client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name));
        }
    }
}
