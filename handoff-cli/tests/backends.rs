//! `--db URL`: the CLI and the MCP server on every store `Store::connect` opens — a `files:`
//! folder, and PostgreSQL when `HANDOFF_TEST_POSTGRES` names a server — and
//! `claim-next --wait-seconds` taking work another process creates while it waits.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::pg_schema::{PgSchema, test_server};
use common::{Env, Mcp, Run};
use serde_json::{Value, json};

const INVALID: i32 = 2;
const STORAGE: i32 = 6;
const INVALID_TRANSITION: i32 = 7;
const BUSY: i32 = 8;

/// A temporary folder whose store is `files:<folder>/store`.
fn files_env() -> Env {
    let mut env = Env::new();
    env.db = PathBuf::from(format!("files:{}", env.dir.path().join("store").display()));
    env
}

fn kinds(events: &Value) -> Vec<&str> {
    events
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect()
}

/// Create, list, claim, heartbeat, complete, chain, events, stats, export, and a refused
/// second claim: the whole life of a handoff through the CLI, on `env`'s store.
fn lifecycle(env: &Env) {
    let id = env.create(&[
        "--task-id",
        "login",
        "--goal",
        "Fix the login bug",
        "--from-agent",
        "claude",
        "--to-agent",
        "gemini",
        "--pending",
        "run the suite",
    ]);
    let listed = env.run(&["list", "--json"]).expect(0).json();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["status"], "pending");

    let claim = env
        .run(&["claim", &id, "--agent", "gemini", "--json"])
        .expect(0)
        .json();
    let token = claim["token"].to_string();
    let secret = claim["claim_secret"]
        .as_str()
        .expect("claim secret")
        .to_owned();
    assert!(
        claim["markdown"]
            .as_str()
            .is_some_and(|m| m.contains("run the suite"))
    );
    env.run(&["heartbeat", &id, "--token", &token, "--secret", &secret])
        .expect(0);
    let done = env
        .run(&[
            "complete",
            &id,
            "--token",
            &token,
            "--secret",
            &secret,
            "--outcome",
            "fixed",
            "--json",
        ])
        .expect(0)
        .json();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(env.show(&id)["outcome"], "fixed");

    let chain = env.run(&["chain", "login"]).expect(0);
    assert!(chain.stdout.contains("claude → gemini"), "{chain:?}");
    let events = env.run(&["events", &id, "--json"]).expect(0).json();
    assert_eq!(
        kinds(&events),
        ["created", "claimed", "heartbeat", "completed"]
    );
    assert_eq!(
        events[0]["detail"],
        json!({"task_id": "login", "to_agent": "gemini"})
    );
    let table = env.run(&["events", &id]).expect(0).stdout;
    assert!(table.contains("task_id=login to_agent=gemini"), "{table}");
    let stats = env.run(&["stats", "--json"]).expect(0).json();
    assert_eq!(stats[0]["completed"], 1, "{stats}");
    let export = env.run(&["export"]).expect(0);
    assert_eq!(export.stdout.lines().count(), 1, "{export:?}");

    let again = env
        .run(&["claim", &id, "--agent", "codex", "--json"])
        .expect(INVALID_TRANSITION);
    assert_eq!(again.error()["code"], "INVALID_TRANSITION");
}

#[test]
fn the_lifecycle_runs_on_a_files_store() {
    let env = files_env();
    lifecycle(&env);
    let folder = env.dir.path().join("store");
    assert!(folder.join("handoffs").is_dir() && folder.join("events.jsonl").is_file());
    // Read from another process through HANDOFF_DB, as a successor does.
    let mut command = std::process::Command::new(common::binary());
    command
        .args(["list", "--json"])
        .env("HANDOFF_DB", &env.db)
        .current_dir(env.dir.path());
    let listed = common::finish(&mut command, None).expect(0).json();
    assert_eq!(listed[0]["status"], "completed");
}

/// `capabilities --json` of `env`'s store, which must exist.
fn capabilities(env: &Env) -> Value {
    env.run(&["capabilities", "--json"]).expect(0).json()
}

#[test]
fn capabilities_say_what_each_store_can_do() {
    let sqlite = Env::new();
    sqlite.run(&["policy", "save"]).expect(0);
    assert_eq!(
        capabilities(&sqlite),
        json!({"durable": true, "shared_by_processes": true, "shared_by_machines": false,
               "backup": true, "wakes_waiters": false})
    );
    let text = sqlite.run(&["capabilities"]).expect(0).stdout;
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().eq(["backup", "yes"])),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().eq(["shared_by_machines", "no"])),
        "{text}"
    );

    let files = files_env();
    files.run(&["policy", "save"]).expect(0);
    assert_eq!(
        capabilities(&files),
        json!({"durable": true, "shared_by_processes": true, "shared_by_machines": false,
               "backup": true, "wakes_waiters": false})
    );
    // A folder of files backs up too, into the one portable file every store restores.
    files.run(&["backup", "copy.backup"]).expect(0);

    let mut memory = Env::new();
    memory.db = PathBuf::from("memory:");
    assert_eq!(capabilities(&memory)["durable"], false);

    // Reading what a store can do does not create it.
    let missing = files_env();
    missing.run(&["capabilities"]).expect(STORAGE);
    assert_eq!(common::files_in(missing.dir.path()), Vec::<String>::new());

    // The MCP tool answers the same.
    let mut mcp = Mcp::start(&files, &[]);
    assert_eq!(
        mcp.ok("handoff_capabilities", json!({})),
        capabilities(&files)
    );
}

#[test]
fn check_names_the_damage_and_repair_moves_it_aside_on_every_store() {
    const DAMAGED: i32 = 9;
    let files = files_env();
    let id = files.create(&["--task-id", "t", "--goal", "emptied by hand"]);
    let kept = files.create(&["--task-id", "t", "--goal", "untouched"]);
    let folder = files.dir.path().join("store");
    assert_eq!(files.run(&["check"]).expect(0).stdout, "no damage\n");
    std::fs::write(folder.join(format!("handoffs/{id}.json")), "").expect("empty it");
    // The queue does not read as empty: the damage is named.
    let run = files.run(&["claim-next", "--agent", "b"]).expect(STORAGE);
    assert!(run.stderr.contains(&format!("{id}.json")), "{run:?}");
    let found = files.run(&["check", "--json"]).expect(DAMAGED).json();
    let whats: Vec<&str> = found["damage"]
        .as_array()
        .expect("damage")
        .iter()
        .filter_map(|d| d["what"].as_str())
        .collect();
    let file = format!("handoffs/{id}.json");
    assert!(whats.contains(&file.as_str()), "{found}");
    assert!(found["damage"][0]["repaired"].is_null(), "{found}");
    let text = files.run(&["check", "--repair"]).expect(0).stdout;
    assert!(text.contains("quarantine/"), "{text}");
    files.run(&["check"]).expect(0);
    let claim = files
        .run(&["claim-next", "--agent", "b", "--json"])
        .expect(0)
        .json();
    assert_eq!(claim["handoff_id"], kept.as_str());
    // The MCP tool answers the same.
    let mut mcp = Mcp::start(&files, &[]);
    assert_eq!(mcp.ok("handoff_check", json!({})), json!({"damage": []}));

    // SQLite (its integrity check) and memory: a sound store is clean.
    let sqlite = Env::new();
    sqlite.create(&["--task-id", "t", "--goal", "sound"]);
    assert_eq!(
        sqlite.run(&["check", "--json"]).expect(0).json(),
        json!({"damage": []})
    );
    let mut memory = Env::new();
    memory.db = PathBuf::from("memory:");
    assert_eq!(
        memory.run(&["check", "--json"]).expect(0).json(),
        json!({"damage": []})
    );
}

#[test]
fn read_only_is_for_sqlite_files_and_refused_by_name_elsewhere() {
    let files = files_env();
    let id = files.create(&["--task-id", "t", "--goal", "g"]);
    let before = common::files_in(&files.dir.path().join("store"));
    for args in [
        &["--read-only", "list", "--json"][..],
        &["--read-only", "show", &id, "--json"],
        &[
            "--read-only",
            "create",
            "--task-id",
            "t2",
            "--goal",
            "g",
            "--json",
        ],
    ] {
        let run = files.run(args).expect(INVALID);
        assert_eq!(run.error()["problems"][0]["field"], "read_only", "{run:?}");
    }
    // HANDOFF_READ_ONLY says the same as the flag; the MCP server refuses it too.
    let mut command = files.command(&["list", "--json"]);
    command.env("HANDOFF_READ_ONLY", "true");
    assert_eq!(
        common::finish(&mut command, None).expect(INVALID).error()["problems"][0]["field"],
        "read_only"
    );
    let mut command = files.command(&["--read-only", "mcp"]);
    assert_eq!(common::finish(&mut command, Some("")).code, INVALID);
    assert_eq!(common::files_in(&files.dir.path().join("store")), before);

    let mut memory = Env::new();
    memory.db = PathBuf::from("memory:");
    let run = memory
        .run(&["--read-only", "capabilities", "--json"])
        .expect(INVALID);
    assert_eq!(run.error()["problems"][0]["field"], "read_only");

    // An SQLite file opens read-only for every command: reads read, writes fail and change
    // nothing.
    let sqlite = Env::new();
    let id = sqlite.create(&["--task-id", "t", "--goal", "g"]);
    let before = std::fs::read(&sqlite.db).expect("read the store");
    let shown = sqlite
        .run(&["--read-only", "show", &id, "--json"])
        .expect(0)
        .json();
    assert_eq!(shown["id"], id.as_str());
    sqlite
        .run(&["--read-only", "claim", &id, "--agent", "a"])
        .expect(STORAGE);
    sqlite
        .run(&["--read-only", "create", "--task-id", "t2", "--goal", "g"])
        .expect(STORAGE);
    sqlite
        .run(&["--read-only", "policy", "save"])
        .expect(STORAGE);
    assert_eq!(std::fs::read(&sqlite.db).expect("read the store"), before);
    assert_eq!(sqlite.show(&id)["status"], "pending");
    // A missing file is not created by a read-only create.
    let empty = Env::new();
    empty
        .run(&["--read-only", "create", "--task-id", "t", "--goal", "g"])
        .expect(STORAGE);
    assert_eq!(common::files_in(empty.dir.path()), Vec::<String>::new());
}

#[test]
fn synchronous_and_lock_patience_reach_a_files_store() {
    let env = files_env();
    let id = env.create(&["--synchronous", "normal", "--task-id", "t", "--goal", "g"]);
    env.run(&["--synchronous", "full", "claim", &id, "--agent", "a"])
        .expect(0);
    let bad = env
        .run(&["--synchronous", "sometimes", "list", "--json"])
        .expect(INVALID);
    assert_eq!(bad.error()["code"], "VALIDATION", "{bad:?}");

    // A process holding the folder's lock, as a stopped writer does: a write waits
    // --lock-patience, then exits BUSY having changed nothing.
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(env.dir.path().join("store/.lock"))
        .expect("open the lock file");
    lock.lock().expect("take the lock");
    let started = Instant::now();
    let run = env
        .run(&[
            "--lock-patience",
            "1",
            "create",
            "--task-id",
            "t2",
            "--goal",
            "g",
            "--json",
        ])
        .expect(BUSY);
    assert_eq!(run.error()["code"], "BUSY", "{run:?}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(20),
        "{waited:?}"
    );
    drop(lock);
    let listed = env.run(&["list", "--json"]).expect(0).json();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
}

#[test]
fn commands_that_create_nothing_leave_a_missing_folder_missing() {
    let env = files_env();
    for args in [&["list"][..], &["get", "x"], &["reap"], &["policy", "show"]] {
        let run = env.run(&[args, &["--json"]].concat()).expect(STORAGE);
        assert_eq!(run.error()["code"], "STORAGE", "{run:?}");
        assert!(
            run.error()["message"]
                .as_str()
                .unwrap_or_default()
                .contains("no store at files:")
        );
    }
    assert_eq!(common::files_in(env.dir.path()), Vec::<String>::new());

    // A folder that holds something else is not laid out as a store by a read either.
    let other = env.dir.path().join("store");
    std::fs::create_dir(&other).expect("mkdir");
    std::fs::write(other.join("notes.txt"), "mine").expect("write");
    env.run(&["list"]).expect(STORAGE);
    assert_eq!(common::files_in(&other), ["notes.txt"]);
}

#[test]
fn an_export_is_never_written_into_the_store_folder() {
    let env = files_env();
    env.create(&["--task-id", "t", "--goal", "g"]);
    let inside = env.dir.path().join("store").join("export.jsonl");
    let run = env
        .run(&["export", "-o", &inside.display().to_string(), "--json"])
        .expect(INVALID);
    assert_eq!(run.error()["problems"][0]["field"], "output", "{run:?}");
    assert!(!inside.exists());
    env.run(&["export", "-o", "beside.jsonl"]).expect(0);
}

#[test]
fn a_wrong_url_is_refused_naming_url_and_creates_nothing() {
    let mut env = Env::new();
    let cases = [
        ("files:", "url"),
        ("sqlite:", "url"),
        ("mysql://root:hunter2@localhost/db", "url"),
        (
            "postgres://postgres:hunter2@127.0.0.1:5432/test?schema=Not-Valid",
            "url.schema",
        ),
    ];
    for (url, field) in cases {
        env.db = PathBuf::from(url);
        let run = env.run(&["create", "--task-id", "t", "--goal", "g", "--json"]);
        let run = run.expect(INVALID);
        assert_eq!(run.error()["problems"][0]["field"], field, "{url}: {run:?}");
        assert!(!run.stderr.contains("hunter2"), "{run:?}");
        let text = env.run(&["list"]).expect(INVALID);
        assert!(!text.stderr.contains("hunter2"), "{text:?}");
    }
    assert_eq!(common::files_in(env.dir.path()), Vec::<String>::new());
}

#[test]
fn a_password_in_the_url_is_never_printed() {
    // Nothing listens on port 1: the connection fails, and its message names the server.
    let mut env = Env::new();
    env.db = PathBuf::from("postgres://postgres:hunter2@127.0.0.1:1/test?schema=hc_cli_nowhere");
    for as_json in [false, true] {
        let mut args = vec!["--no-redact", "list"];
        if as_json {
            args.push("--json");
        }
        let run = env.run(&args).expect(STORAGE);
        assert!(!run.stderr.contains("hunter2"), "{run:?}");
        assert!(run.stderr.contains("127.0.0.1"), "{run:?}");
    }
}

/// Starts `claim-next --wait-seconds 30` on `env`'s store, creates a handoff from another
/// process while it waits, and checks that the waiting one claimed it, long before 30 s.
fn claim_next_waits_for(env: &Env) {
    // The store exists (claim-next does not create one) and has nothing for the worker.
    env.run(&["policy", "save"]).expect(0);
    let started = Instant::now();
    let waiting = env
        .command(&[
            "claim-next",
            "--agent",
            "worker",
            "--wait-seconds",
            "30",
            "--json",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start claim-next");
    std::thread::sleep(Duration::from_millis(700));
    let id = env.create(&["--task-id", "late", "--goal", "arrives while it waits"]);
    let output = waiting.wait_with_output().expect("claim-next");
    let run = Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
    .expect(0);
    let claim = run.json();
    assert_eq!(claim["handoff_id"], id, "{claim}");
    assert_eq!(claim["handoff"]["claimed_by"], "worker");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn claim_next_wait_seconds_takes_work_created_meanwhile_on_sqlite() {
    claim_next_waits_for(&Env::new());
}

#[test]
fn claim_next_wait_seconds_takes_work_created_meanwhile_on_files() {
    claim_next_waits_for(&files_env());
}

#[test]
fn claim_next_without_work_answers_nothing_after_its_wait() {
    let env = files_env();
    env.run(&["policy", "save"]).expect(0);
    let started = Instant::now();
    let run = env
        .run(&[
            "claim-next",
            "--agent",
            "w",
            "--wait-seconds",
            "0.3",
            "--json",
        ])
        .expect(0);
    assert_eq!(run.json(), Value::Null);
    assert!(started.elapsed() >= Duration::from_millis(300));
    let bad = env
        .run(&["claim-next", "--agent", "w", "--wait-seconds=-1", "--json"])
        .expect(INVALID);
    assert_eq!(bad.error()["problems"][0]["field"], "wait_seconds");
}

#[test]
fn the_mcp_server_serves_a_files_store_and_answers_while_a_claim_waits() {
    let env = files_env();
    let mut mcp = Mcp::start(&env, &[]);
    let created = mcp.ok(
        "handoff_create",
        json!({"task_id": "t1", "goal": "first", "to_agent": "worker"}),
    );
    let first = created["handoff"]["id"].as_str().expect("id").to_owned();
    let claim = mcp.ok(
        "handoff_claim_next",
        json!({"agent": "worker", "wait_seconds": 5}),
    );
    assert_eq!(claim["handoff_id"], first.as_str(), "{claim}");
    assert!(env.dir.path().join("store/handoffs").is_dir());

    // A claim that waits does not hold up the server: a create sent after it is answered,
    // and the waiting claim takes what it created.
    let tools = mcp.tools();
    let claim_next = tools
        .iter()
        .find(|t| t["name"] == "handoff_claim_next")
        .expect("handoff_claim_next");
    assert!(
        claim_next["inputSchema"]["properties"]["wait_seconds"].is_object(),
        "{claim_next}"
    );
    assert!(
        claim_next["description"]
            .as_str()
            .is_some_and(|d| d.contains("at most 50 seconds")),
        "{claim_next}"
    );
    mcp.send_request(
        9001,
        "tools/call",
        json!({"name": "handoff_claim_next", "arguments": {"agent": "worker", "wait_seconds": 30}}),
    );
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    mcp.send_request(
        9002,
        "tools/call",
        json!({"name": "handoff_create", "arguments": {"task_id": "t2", "goal": "second"}}),
    );
    // Either answer may come first: the waiting claim can see the record and answer before
    // the create's answer is written.
    let (first, then) = (mcp.answer(), mcp.answer());
    let (claimed, created) = if first["id"] == 9001 {
        (first, then)
    } else {
        (then, first)
    };
    assert_eq!(claimed["id"], 9001, "{claimed}");
    assert_eq!(created["id"], 9002, "{created}");
    let second = created["result"]["structuredContent"]["handoff"]["id"]
        .as_str()
        .expect("created");
    assert_eq!(
        claimed["result"]["structuredContent"]["handoff_id"], second,
        "{claimed}"
    );
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn a_cancelled_waiting_claim_stops_and_claims_nothing() {
    let env = files_env();
    let mut mcp = Mcp::start(&env, &[]);
    mcp.send_request(
        9101,
        "tools/call",
        json!({"name": "handoff_claim_next", "arguments": {"agent": "worker", "wait_seconds": 30}}),
    );
    std::thread::sleep(Duration::from_millis(300));
    mcp.notify(
        "notifications/cancelled",
        json!({"requestId": 9101, "reason": "the user gave up"}),
    );
    // The wait looks at its cancellation every second.
    std::thread::sleep(Duration::from_millis(1500));
    let id = env.create(&["--task-id", "after", "--goal", "nobody waits for it now"]);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(env.show(&id)["status"], "pending");
    // The server still serves.
    let claim = mcp.ok("handoff_claim_next", json!({"agent": "worker"}));
    assert_eq!(claim["handoff_id"], id.as_str(), "{claim}");
}

/// Holds SQLite's write lock on `db` from another process until dropped
/// (`tests/common/hold_write_lock.py`).
struct WriteLock(std::process::Child);

impl WriteLock {
    fn hold(db: &Path) -> WriteLock {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/common/hold_write_lock.py");
        let mut holder = Command::new("python3")
            .arg(script)
            .arg(db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 holds the lock");
        let mut line = String::new();
        let stdout = holder.stdout.as_mut().expect("stdout");
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
            .expect("the holder's word");
        assert_eq!(line.trim(), "locked");
        WriteLock(holder)
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        if let Some(stdin) = self.0.stdin.as_mut() {
            let _ = stdin.write_all(b"go\n");
        }
        let _ = self.0.wait();
    }
}

#[test]
fn a_claim_made_for_a_cancelled_call_is_given_back() {
    let env = Env::new();
    let id = env.create(&[
        "--task-id",
        "t",
        "--goal",
        "wanted once",
        "--to-agent",
        "worker",
    ]);
    let mut mcp = Mcp::start(&env, &[]);
    {
        let _lock = WriteLock::hold(&env.db);
        // The claim waits for the lock another process holds; the client gives up meanwhile.
        mcp.send_request(
            9201,
            "tools/call",
            json!({"name": "handoff_claim_next", "arguments": {"agent": "worker"}}),
        );
        std::thread::sleep(Duration::from_millis(300));
        mcp.notify(
            "notifications/cancelled",
            json!({"requestId": 9201, "reason": "the user gave up"}),
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    // The call now claims, for nobody: the claim is given back, not left to lapse.
    let deadline = Instant::now() + Duration::from_secs(60);
    let events = loop {
        let events = env.run(&["events", &id, "--json"]).expect(0).json();
        if kinds(&events).contains(&"released") || Instant::now() > deadline {
            break events;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        kinds(&events),
        ["created", "claimed", "released"],
        "{events}"
    );
    let claim = mcp.ok("handoff_claim_next", json!({"agent": "worker"}));
    assert_eq!(claim["handoff_id"], id.as_str(), "{claim}");
}

#[test]
fn the_lifecycle_runs_on_postgres_when_a_server_is_given() {
    let Some(server) = test_server() else {
        return;
    };
    let schema = PgSchema::new(&server);
    // Set but unreachable fails here, before the CLI is asked anything.
    let mut client = schema.client();
    let mut env = Env::new();
    env.db = PathBuf::from(schema.url());
    lifecycle(&env);
    claim_next_waits_for(&env);
    assert_eq!(
        capabilities(&env),
        json!({"durable": true, "shared_by_processes": true, "shared_by_machines": true,
               "backup": true, "wakes_waiters": true})
    );
    assert_eq!(
        env.run(&["check", "--json"]).expect(0).json(),
        json!({"damage": []})
    );
    let run = env.run(&["--read-only", "list", "--json"]).expect(INVALID);
    assert_eq!(run.error()["problems"][0]["field"], "read_only", "{run:?}");
    // The MCP server serves it, and ends cleanly when its session does (it drops the store
    // inside its async runtime, which a connection's runtime must not refuse with a panic).
    let mut mcp = Mcp::start(&env, &[]);
    mcp.ok(
        "handoff_create",
        json!({"task_id": "over-mcp", "goal": "Served over MCP"}),
    );
    assert!(mcp.close().success(), "handoff mcp did not exit cleanly");

    let exists: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM information_schema.schemata WHERE schema_name = $1)",
            &[&schema.name],
        )
        .expect("query")
        .get(0);
    assert!(exists, "the CLI did not write into {}", schema.name);
    // Nothing of the store lands on the local disk.
    assert_eq!(common::files_in(env.dir.path()), Vec::<String>::new());

    // `sslmode=` in the URL: encrypted when the server offers TLS, refused by name otherwise.
    let tls_on: String = client.query_one("SHOW ssl", &[]).expect("query").get(0);
    let encrypted = PgSchema::new(&server);
    env.db = PathBuf::from(format!("{}&sslmode=require", encrypted.url()));
    if tls_on == "on" {
        lifecycle(&env);
    } else {
        let run = env.run(&["list", "--json"]).expect(STORAGE);
        assert!(run.stderr.contains("TLS"), "{run:?}");
    }
    // A part of the URL that cannot be read is named.
    for (param, field) in [
        ("sslmode=verify", "url.sslmode"),
        ("bogus=1", "url.bogus"),
        ("reply_timeout=soon", "url.reply_timeout"),
        ("tcp_user_timeout=1.5", "url.tcp_user_timeout"),
        (
            "keepalives_count=3&keepalives_retries=3",
            "url.keepalives_retries",
        ),
    ] {
        env.db = PathBuf::from(format!("{}&{param}", schema.url()));
        let run = env.run(&["list", "--json"]).expect(INVALID);
        assert_eq!(run.error()["problems"][0]["field"], field, "{run:?}");
    }

    // A call the server does not answer within the URL's `reply_timeout` (here a session
    // holding the record's lock, the CLI's lock patience far longer) is a storage error naming
    // it; once the lock is gone the same call succeeds.
    env.db = PathBuf::from(schema.url());
    let id = env.create(&["--task-id", "stuck", "--goal", "Wait for a silent server"]);
    env.db = PathBuf::from(format!("{}&reply_timeout=0.3", schema.url()));
    let mut tx = client.transaction().expect("begin");
    tx.batch_execute(&format!(
        "SET LOCAL search_path TO \"{}\"; SELECT 1 FROM handoffs WHERE id = '{id}' FOR UPDATE",
        schema.name
    ))
    .expect("lock the record");
    let run = env
        .run(&["claim", &id, "--agent", "w", "--json"])
        .expect(STORAGE);
    assert!(run.stderr.contains("reply_timeout"), "{run:?}");
    tx.rollback().expect("rollback");
    env.run(&["claim", &id, "--agent", "w", "--json"]).expect(0);
}

/// The password `handoff list` sends to a server at `127.0.0.1` that asks for one in clear
/// text, connecting as `user_info@` to database `agents` with `vars` in its environment (and
/// no other password source): a fake server records it and hangs up. `None` when none came.
fn password_sent(user_info: &str, vars: &[(&str, &str)], home: &std::path::Path) -> Option<String> {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    let server = std::thread::spawn(move || -> Option<String> {
        let (mut socket, _) = listener.accept().ok()?;
        socket
            .set_read_timeout(Some(Duration::from_secs(60)))
            .ok()?;
        let read_message = |socket: &mut std::net::TcpStream| -> Option<Vec<u8>> {
            let mut len = [0u8; 4];
            socket.read_exact(&mut len).ok()?;
            let mut body = vec![
                0u8;
                usize::try_from(u32::from_be_bytes(len))
                    .ok()?
                    .checked_sub(4)?
            ];
            socket.read_exact(&mut body).ok()?;
            Some(body)
        };
        read_message(&mut socket)?; // the startup message
        // AuthenticationCleartextPassword.
        socket.write_all(&[b'R', 0, 0, 0, 8, 0, 0, 0, 3]).ok()?;
        let mut tag = [0u8; 1];
        socket.read_exact(&mut tag).ok()?;
        let mut password = read_message(&mut socket)?;
        password.pop(); // its terminating NUL
        String::from_utf8(password).ok()
    });
    let mut env = Env::new();
    env.db = PathBuf::from(format!(
        "postgres://{user_info}@127.0.0.1:{port}/agents?connect_timeout=30"
    ));
    let mut command = env.command(&["list", "--json"]);
    command
        .env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE")
        .env("HOME", home)
        .envs(vars.iter().copied());
    let _ = command.output().expect("run handoff");
    server.join().expect("the fake server")
}

/// A URL without a password takes it as libpq does: `PGPASSWORD`, else the password file's
/// first matching line; the URL's own password wins; nothing is sent when none is found.
#[test]
fn a_password_kept_out_of_the_url_comes_from_pgpassword_or_the_password_file() {
    let home = tempfile::tempdir().expect("temp dir");
    let file = home.path().join("pgpass");
    std::fs::write(
        &file,
        "# for the agents\n127.0.0.1:*:other:app:not-this\n127.0.0.1:*:agents:app:from-file\n",
    )
    .expect("write");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let file = file.display().to_string();
    let passfile = [("PGPASSFILE", file.as_str())];
    let both = [("PGPASSFILE", file.as_str()), ("PGPASSWORD", "from-env")];
    assert_eq!(
        password_sent("app", &passfile, home.path()).as_deref(),
        Some("from-file")
    );
    assert_eq!(
        password_sent("app", &both, home.path()).as_deref(),
        Some("from-env")
    );
    assert_eq!(
        password_sent("app:in-url", &both, home.path()).as_deref(),
        Some("in-url")
    );
    assert_eq!(password_sent("someone-else", &passfile, home.path()), None);
}
