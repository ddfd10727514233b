//! A PostgreSQL schema for one test.

/// The server `HANDOFF_TEST_POSTGRES` names, or `None` after saying the test is skipped
/// (`.ci/run` always sets it).
pub fn test_server() -> Option<String> {
    let server = std::env::var("HANDOFF_TEST_POSTGRES").ok();
    if server.is_none() {
        eprintln!(
            "skipped: HANDOFF_TEST_POSTGRES is not set (e.g. \
             postgres://postgres@127.0.0.1:5432/test)"
        );
    }
    server
}

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

    /// The server's address over TCP, as the server sees this connection's end; `None` when
    /// `HANDOFF_TEST_POSTGRES` reaches it over a Unix socket.
    pub fn tcp_address(client: &mut postgres::Client) -> Option<std::net::SocketAddr> {
        let row = client
            .query_one("SELECT host(inet_server_addr()), inet_server_port()", &[])
            .expect("the server's address");
        let host: std::net::IpAddr = row.get::<_, Option<String>>(0)?.parse().ok()?;
        let port = u16::try_from(row.get::<_, Option<i32>>(1)?).ok()?;
        Some(std::net::SocketAddr::new(host, port))
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

/// `url` with its host and port replaced by `address`.
pub fn through(url: &str, address: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let user = authority
        .rsplit_once('@')
        .map(|(user, _)| format!("{user}@"))
        .unwrap_or_default();
    format!("{scheme}://{user}{address}{tail}")
}
