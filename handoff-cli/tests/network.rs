//! `handoff mcp` on a PostgreSQL store whose network is cut under it, then comes back.
//!
//! The server runs in a network namespace of the test's own, joined to this one by a veth pair
//! and a forwarding proxy (PostgreSQL listens on loopback only). Taking the pair's outer end
//! down drops every packet silently, as a dead switch or a pulled cable does: no reset, no
//! refusal, so only TCP's own limits (`tcp_user_timeout`, keepalives) can end a call, which is
//! what this checks, end to end. Needs root for `ip netns`; elsewhere it says so and skips.

mod common;

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::time::Duration;

use common::Mcp;
use common::pg_schema::{PgSchema, test_server, through};
use serde_json::{Value, json};

/// Far longer than any limit the store is given here: reaching it means a hang.
const HANG: Duration = Duration::from_secs(120);

/// A network namespace joined to this one by a veth pair, removed with the pair when dropped.
struct Island {
    name: String,
    /// The pair's end on this side, and its address (the inner end has the next one).
    outside: String,
    here: Ipv4Addr,
}

impl Island {
    /// `None` when this machine or process cannot make one (not root, no `ip`, no veth).
    fn new() -> Option<Island> {
        let id = std::process::id();
        let name = format!("hc_cut_{id}");
        // Interface names are at most 15 bytes; process ids at most 7 digits.
        let (outside, inside) = (format!("hcc{id}a"), format!("hcc{id}b"));
        // A /30 of 10.231.0.0/16 picked by the process id, so parallel runs do not meet.
        let block = (id % 16_384) * 4;
        let here = Ipv4Addr::new(10, 231, (block >> 8) as u8, (block & 0xff) as u8 + 1);
        let there = Ipv4Addr::new(10, 231, (block >> 8) as u8, (block & 0xff) as u8 + 2);
        let made = |args: &[&str]| {
            Command::new("ip")
                .args(args)
                .output()
                .is_ok_and(|out| out.status.success())
        };
        if !made(&["netns", "add", &name]) {
            return None;
        }
        let island = Island {
            name,
            outside,
            here,
        };
        let ns = island.name.as_str();
        let outer = island.outside.as_str();
        if !made(&[
            "link", "add", outer, "type", "veth", "peer", "name", &inside, "netns", ns,
        ]) {
            return None;
        }
        ip(&["addr", "add", &format!("{here}/30"), "dev", &island.outside]);
        ip(&["link", "set", &island.outside, "up"]);
        ip(&[
            "-n",
            ns,
            "addr",
            "add",
            &format!("{there}/30"),
            "dev",
            &inside,
        ]);
        ip(&["-n", ns, "link", "set", &inside, "up"]);
        ip(&["-n", ns, "link", "set", "lo", "up"]);
        Some(island)
    }

    /// Packets between the two sides are dropped from now on, without a word to either.
    fn cut(&self) {
        ip(&["link", "set", &self.outside, "down"]);
    }

    fn mend(&self) {
        ip(&["link", "set", &self.outside, "up"]);
    }

    /// `program ARGS...` run inside the namespace.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.name, program]);
        command
    }
}

impl Drop for Island {
    fn drop(&mut self) {
        // Removing the namespace removes the pair's inner end, and with it the outer one.
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
        let _ = Command::new("ip")
            .args(["link", "del", &self.outside])
            .output();
    }
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Forwards every connection made to `at` (port chosen here) to `server`; returns the port.
fn proxy(at: Ipv4Addr, server: SocketAddr) -> u16 {
    let listener = TcpListener::bind((at, 0)).expect("bind the proxy");
    let port = listener.local_addr().expect("address").port();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(upstream) = TcpStream::connect(server) else {
                continue;
            };
            for (mut from, mut to) in [
                (client.try_clone(), upstream.try_clone()),
                (upstream.try_clone(), client.try_clone()),
            ]
            .into_iter()
            .filter_map(|(a, b)| Some((a.ok()?, b.ok()?)))
            {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Both);
                });
            }
        }
    });
    port
}

/// Runs `call` on the server in a thread of its own; a hang fails the test instead of
/// blocking it.
fn bounded(mcp: Mcp, call: impl FnOnce(&mut Mcp) -> Value + Send + 'static) -> (Mcp, Value) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut mcp = mcp;
        let answer = call(&mut mcp);
        let _ = tx.send((mcp, answer));
    });
    rx.recv_timeout(HANG)
        .expect("the call hung over a cut network")
}

fn error_code(result: &Value) -> &str {
    assert_eq!(result["isError"], true, "should have failed: {result}");
    result["structuredContent"]["error"]["code"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn a_cut_network_fails_calls_by_tcp_limits_and_the_store_recovers_when_it_returns() {
    let Some(server) = test_server() else {
        return;
    };
    let schema = PgSchema::new(&server);
    // Set but unreachable fails here.
    let mut client = schema.client();
    let Some(server_address) = PgSchema::tcp_address(&mut client) else {
        eprintln!("skipped: HANDOFF_TEST_POSTGRES does not connect over TCP");
        return;
    };
    let Some(island) = Island::new() else {
        eprintln!("skipped: cannot make a network namespace here (`ip netns add` needs root)");
        return;
    };
    let forwarded = proxy(island.here, server_address);
    // libpq's parameters: a statement unacknowledged for 1 s (milliseconds, as libpq reads
    // them) or an idle connection unanswered by 2 probes 1 s apart loses its connection. No
    // reply timeout, so that nothing but TCP's limits can end a call.
    let url = format!(
        "{}&tcp_user_timeout=1000&keepalives_idle=1&keepalives_interval=1&keepalives_count=2\
         &connect_timeout=2&reply_timeout=0",
        through(&schema.url(), &format!("{}:{forwarded}", island.here))
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let mut command = island.command(common::binary());
    command
        .arg("--db")
        .arg(&url)
        .env_remove("HANDOFF_DB")
        .current_dir(dir.path());
    let mut mcp = Mcp::start_with(command, &[]);
    let created = mcp.ok(
        "handoff_create",
        json!({"task_id": "cut", "goal": "Outlive a cut network", "to_agent": "w"}),
    );
    let id = created["handoff"]["id"].as_str().expect("id").to_owned();

    // A call over the cut network: its connection is given up on, and the call is a
    // storage error (a read tries one new connection, which cannot connect either).
    island.cut();
    let asked = id.clone();
    let (mut mcp, answer) = bounded(mcp, move |mcp| {
        mcp.call("handoff_get", json!({"handoff_id": asked}))
    });
    assert_eq!(error_code(&answer), "STORAGE", "{answer}");

    // The network back, the same server process goes on: nothing was half-written, the
    // record is claimed and completed once.
    island.mend();
    let record = (0..50)
        .find_map(|_| {
            let result = mcp.call("handoff_get", json!({"handoff_id": id}));
            if result["isError"] == true {
                std::thread::sleep(Duration::from_millis(200));
                return None;
            }
            Some(result["structuredContent"].clone())
        })
        .expect("the store did not recover when the network came back");
    assert_eq!(record["handoff"]["status"], "pending", "{record}");
    let claim = mcp.ok("handoff_claim", json!({"handoff_id": id, "agent": "w"}));
    mcp.ok(
        "handoff_complete",
        json!({"handoff_id": id, "token": claim["token"], "claim_secret": claim["claim_secret"],
               "outcome": "done"}),
    );

    // A worker waiting for work on an idle connection: keepalives find the network gone and
    // the wait ends in a storage error instead of lasting its 50 s or longer.
    mcp.send_request(
        7001,
        "tools/call",
        json!({"name": "handoff_claim_next", "arguments": {"agent": "w", "wait_seconds": 50}}),
    );
    std::thread::sleep(Duration::from_millis(500));
    island.cut();
    let (mut mcp, answer) = bounded(mcp, |mcp| mcp.answer());
    assert_eq!(answer["id"], 7001, "{answer}");
    assert_eq!(error_code(&answer["result"]), "STORAGE", "{answer}");

    // Mended, a new wait is woken by work created from this side of the network.
    island.mend();
    std::thread::sleep(Duration::from_millis(300));
    mcp.send_request(
        7002,
        "tools/call",
        json!({"name": "handoff_claim_next", "arguments": {"agent": "w", "wait_seconds": 50}}),
    );
    std::thread::sleep(Duration::from_millis(500));
    let mut env = common::Env::new();
    env.db = std::path::PathBuf::from(schema.url());
    let second = env.create(&["--task-id", "cut", "--goal", "Once more", "--to-agent", "w"]);
    let (mcp, answer) = bounded(mcp, |mcp| mcp.answer());
    assert_eq!(answer["id"], 7002, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["handoff_id"], second,
        "{answer}"
    );
    assert!(mcp.close().success(), "the server did not exit cleanly");
}
