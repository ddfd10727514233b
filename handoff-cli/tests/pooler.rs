//! `handoff` through PgBouncer, the pooler teams put between many clients and one server.
//!
//! The store keeps its schema, its settings, its prepared statements and its `LISTEN` in its
//! server session. Session pooling gives each client one session while it is connected, so
//! several stores on several schemas work through one pooler. Transaction pooling hands a
//! session to another client between transactions, which the store cannot work with (a
//! client finds another's statements, or runs on another's schema): the error says so, naming
//! the pooler's mode. Needs `pgbouncer` (`make test` installs it where it can); skips, saying
//! so, without it.

mod common;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::Env;
use common::pg_schema::{PgSchema, test_server, through};
use serde_json::Value;

const STORAGE: i32 = 6;

/// A PgBouncer in front of the test server, stopped when dropped.
struct Pooler {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Pooler {
    /// PgBouncer in `mode` with one server session for `database` as `user` on `server`;
    /// `None` when it is not installed.
    fn start(server: SocketAddr, database: &str, user: &str, mode: &str) -> Option<Pooler> {
        let binary = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"]
            .into_iter()
            .map(Path::new)
            .find(|path| path.exists())?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let dir = tempfile::tempdir().expect("temp dir");
        let path = |name: &str| dir.path().join(name);
        let config = format!(
            "[databases]\n\
             {database} = host={host} port={server_port} dbname={database} user={user}\n\
             [pgbouncer]\n\
             listen_addr = 127.0.0.1\n\
             listen_port = {port}\n\
             unix_socket_dir =\n\
             auth_type = trust\n\
             auth_file = {users}\n\
             pool_mode = {mode}\n\
             default_pool_size = 1\n\
             ignore_startup_parameters = extra_float_digits\n\
             logfile = {log}\n",
            host = server.ip(),
            server_port = server.port(),
            users = path("users.txt").display(),
            log = path("pgbouncer.log").display(),
        );
        std::fs::write(path("pgbouncer.ini"), config).expect("write the config");
        std::fs::write(path("users.txt"), format!("\"{user}\" \"\"\n")).expect("write users");
        // PgBouncer will not run as root: it then takes the server's own user's identity,
        // who must be able to read its files and write its log here.
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|out| out.stdout.trim_ascii() == b"0");
        let mut command = Command::new(binary);
        if root {
            use std::os::unix::fs::PermissionsExt;
            let open = std::fs::Permissions::from_mode(0o777);
            std::fs::set_permissions(dir.path(), open).expect("open the folder");
            command.args(["-u", "postgres"]);
        }
        let child = command
            .arg(path("pgbouncer.ini"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start pgbouncer");
        let pooler = Pooler {
            child,
            port,
            _dir: dir,
        };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "pgbouncer did not listen within 30 s: {}",
                pooler.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(pooler)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("pgbouncer.log")).unwrap_or_default()
    }

    /// `schema`'s store URL through this pooler.
    fn url(&self, schema: &PgSchema) -> PathBuf {
        PathBuf::from(through(&schema.url(), &format!("127.0.0.1:{}", self.port)))
    }
}

impl Drop for Pooler {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn task_ids(env: &Env) -> Vec<String> {
    let listed = env.run(&["list", "--json"]).expect(0).json();
    listed
        .as_array()
        .expect("a list")
        .iter()
        .map(|h| h["task_id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn session_pooling_serves_several_stores_and_transaction_pooling_is_named() {
    let Some(server) = test_server() else {
        return;
    };
    let (a, b) = (PgSchema::new(&server), PgSchema::new(&server));
    // Set but unreachable fails here.
    let mut client = a.client();
    let Some(address) = PgSchema::tcp_address(&mut client) else {
        eprintln!("skipped: HANDOFF_TEST_POSTGRES does not connect over TCP");
        return;
    };
    let row = client
        .query_one("SELECT current_database(), current_user::text", &[])
        .expect("who");
    let (database, user): (String, String) = (row.get(0), row.get(1));
    let Some(pooler) = Pooler::start(address, &database, &user, "session") else {
        eprintln!("skipped: pgbouncer is not installed (make test installs it where it can)");
        return;
    };

    // Session pooling, one server session taken in turn: two stores on two schemas, each
    // seeing only its own records.
    let (mut env_a, mut env_b) = (Env::new(), Env::new());
    env_a.db = pooler.url(&a);
    env_b.db = pooler.url(&b);
    for _ in 0..3 {
        env_a.create(&["--task-id", "a", "--goal", "Through the pooler"]);
        env_b.create(&["--task-id", "b", "--goal", "Through the pooler"]);
    }
    assert_eq!(task_ids(&env_a), ["a", "a", "a"]);
    assert_eq!(task_ids(&env_b), ["b", "b", "b"]);
    let claim: Value = env_b
        .run(&["claim-next", "--agent", "w", "--json"])
        .expect(0)
        .json();
    assert!(claim["handoff_id"].is_string(), "{claim}");
    drop(pooler);

    // Transaction pooling: the second store's client gets the session the first one's left,
    // prepared statements and all, and the error names the pooler's mode.
    let pooler = Pooler::start(address, &database, &user, "transaction").expect("pgbouncer");
    env_a.db = pooler.url(&a);
    env_b.db = pooler.url(&b);
    let _ = env_a.run(&["list", "--json"]);
    let run = env_b.run(&["create", "--task-id", "b", "--goal", "Shared", "--json"]);
    assert_eq!(run.code, STORAGE, "{run:?}\n{}", pooler.log());
    assert!(run.stderr.contains("pool_mode=transaction"), "{run:?}");
    assert!(
        run.stderr
            .contains("shared with other clients between transactions"),
        "{run:?}"
    );
}
