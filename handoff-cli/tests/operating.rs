//! Issue 12 as the shell meets it: claim secrets (a forged completion with the public token
//! changes nothing), cancel rights, BUSY when a writer is stuck, read-only use, exports that
//! never land on the store, the saved policy, and the event log read in pages.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Env, FAKE_SECRET, secret_in};
use serde_json::{Value, json};

const OK: i32 = 0;
const INVALID: i32 = 2;
const CONFLICT: i32 = 4;
const CHAIN_VIOLATION: i32 = 5;
const STORAGE: i32 = 6;
const INVALID_TRANSITION: i32 = 7;
const BUSY: i32 = 8;

/// A pending handoff from claude to gemini, claimed by gemini: (id, token, secret).
fn claimed(env: &Env) -> (String, String, String) {
    let id = env.create(&[
        "--task-id",
        "t1",
        "--goal",
        "Ship it",
        "--from-agent",
        "claude",
        "--to-agent",
        "gemini",
    ]);
    let claim = env
        .run(&["claim", &id, "--agent", "gemini", "--json"])
        .expect(OK)
        .json();
    let secret = claim["claim_secret"].as_str().expect("claim_secret");
    assert!(secret.starts_with("hcs_") && secret.len() == 68, "{secret}");
    (id, claim["token"].to_string(), secret.to_owned())
}

/// Everything a reader of the store can see: every record, the whole log, the export.
fn observable(env: &Env) -> String {
    let mut seen = String::new();
    for args in [
        &["list", "--json"][..],
        &["events", "--json"],
        &["export"],
        &["stats", "--json"],
        &["chain", "t1", "--json"],
    ] {
        seen.push_str(&env.run(args).expect(OK).stdout);
    }
    seen
}

/// Each file's name and a digest of its bytes (never the bytes: a failure would print them).
fn file_bytes(paths: &[PathBuf]) -> Vec<(String, Option<u64>)> {
    use std::hash::{Hash, Hasher};
    paths
        .iter()
        .map(|p| {
            let digest = std::fs::read(p).ok().map(|bytes| {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                bytes.hash(&mut h);
                h.finish()
            });
            (p.display().to_string(), digest)
        })
        .collect()
}

fn store_files(db: &Path) -> Vec<PathBuf> {
    ["", "-wal", "-shm", "-lock"]
        .iter()
        .map(|suffix| {
            let mut name = db.as_os_str().to_owned();
            name.push(suffix);
            PathBuf::from(name)
        })
        .collect()
}

#[test]
fn a_forged_completion_with_the_public_token_fails_and_changes_nothing() {
    let env = Env::new();
    let (id, token, secret) = claimed(&env);
    // The token is public: anyone can read it.
    let shown = env.show(&id);
    assert_eq!(shown["claim_token"].to_string(), token);
    // Nothing but the claim itself ever prints the secret.
    let before = observable(&env);
    assert!(!before.contains(&secret), "the secret leaked: {before}");
    let text = env.run(&["show", &id]).expect(OK).stdout;
    assert!(!text.contains(&secret));

    for (command, extra) in [
        ("complete", &["--outcome", "forged"][..]),
        ("release", &["--reason", "forged"]),
        ("heartbeat", &[]),
    ] {
        let mut args = vec![
            command,
            id.as_str(),
            "--token",
            &token,
            "--secret",
            FAKE_SECRET,
        ];
        args.extend_from_slice(extra);
        args.push("--json");
        let run = env.run(&args).expect(CONFLICT);
        assert_eq!(run.error()["code"], "LEASE_LOST", "{command}");
        assert!(!run.stderr.contains(&secret));
    }
    // Through the environment variable too.
    let mut forged = env.command(&["complete", &id, "--token", &token]);
    forged.env("HANDOFF_CLAIM_SECRET", FAKE_SECRET);
    common::finish(&mut forged, None).expect(CONFLICT);
    // A secret of the wrong form is refused before the store is touched.
    let run = env
        .run(&[
            "complete", &id, "--token", &token, "--secret", "1", "--json",
        ])
        .expect(INVALID);
    assert_eq!(run.error()["problems"][0]["field"], "secret");
    // Without a secret at all, clap refuses.
    env.run(&["complete", &id, "--token", &token])
        .expect(INVALID);
    assert_eq!(
        observable(&env),
        before,
        "a refused settle changed the store"
    );

    // The claimer settles with it, on the command line or in HANDOFF_CLAIM_SECRET.
    let mut beat = env.command(&["heartbeat", &id, "--token", &token, "--json"]);
    beat.env("HANDOFF_CLAIM_SECRET", &secret);
    assert_eq!(
        common::finish(&mut beat, None).expect(OK).json()["status"],
        "claimed"
    );
    let done = env
        .run(&[
            "complete",
            &id,
            "--token",
            &token,
            "--secret",
            &secret,
            "--outcome",
            "shipped",
            "--json",
        ])
        .expect(OK)
        .json();
    assert_eq!(done["status"], "completed");
    assert!(!observable(&env).contains(&secret));
}

#[test]
fn the_claim_text_shows_the_secret_to_the_claimer() {
    let env = Env::new();
    let id = env.create(&["--task-id", "t1", "--goal", "g"]);
    let run = env.run(&["claim", &id, "--agent", "a"]).expect(OK);
    let secret = secret_in(&run.stdout);
    env.run(&["release", &id, "--token", "1", "--secret", &secret])
        .expect(OK);
    let next = env.run(&["claim-next", "--agent", "b"]).expect(OK);
    let second = secret_in(&next.stdout);
    assert_ne!(second, secret, "every claim has its own secret");
    // The first claim's secret does not settle the second claim.
    env.run(&["complete", &id, "--token", "2", "--secret", &secret])
        .expect(CONFLICT);
    env.run(&["complete", &id, "--token", "2", "--secret", &second])
        .expect(OK);
}

#[test]
fn cancel_by_the_creator_or_the_holder_with_its_claim() {
    let env = Env::new();
    let (id, token, secret) = claimed(&env);
    let run = env
        .run(&["cancel", &id, "--by", "mallory", "--json"])
        .expect(INVALID_TRANSITION);
    assert_eq!(run.error()["code"], "INVALID_TRANSITION");
    env.run(&["cancel", &id, "--token", &token, "--secret", FAKE_SECRET])
        .expect(CONFLICT);
    // --by and --secret are two ways, not one.
    env.run(&["cancel", &id]).expect(INVALID);
    env.run(&["cancel", &id, "--secret", &secret])
        .expect(INVALID);
    let cancelled = env
        .run(&[
            "cancel",
            &id,
            "--token",
            &token,
            "--secret",
            &secret,
            "--reason",
            "done elsewhere",
            "--json",
        ])
        .expect(OK)
        .json();
    assert_eq!(cancelled["status"], "cancelled");

    let other = env.create(&["--task-id", "t2", "--goal", "g", "--from-agent", "claude"]);
    env.run(&["cancel", &other, "--by", "gemini"])
        .expect(INVALID_TRANSITION);
    env.run(&["cancel", &other, "--by", "claude"]).expect(OK);
}

/// Holds `<db>-lock` the way a stopped writer does, until dropped.
fn hold_turnstile(db: &Path) -> std::fs::File {
    let mut name = db.as_os_str().to_owned();
    name.push("-lock");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(PathBuf::from(name))
        .expect("open the lock file");
    file.lock().expect("take the write turnstile");
    file
}

#[test]
fn a_stuck_writer_costs_others_their_patience_then_busy_and_readers_never_wait() {
    let env = Env::new();
    let id = env.create(&["--task-id", "t1", "--goal", "g"]);
    let held = hold_turnstile(&env.db);

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
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(10), "waited {waited:?}");
    assert_eq!(run.error()["code"], "BUSY");
    let mut patient = env.command(&["claim", &id, "--agent", "a"]);
    patient.env("HANDOFF_LOCK_PATIENCE", "1");
    let run = common::finish(&mut patient, None).expect(BUSY);
    assert!(run.stderr.contains("busy"), "{}", run.stderr);

    // Reads do not queue behind the writer.
    let started = Instant::now();
    for args in [
        &["list"][..],
        &["show", &id],
        &["events"],
        &["stats"],
        &["export"],
    ] {
        env.run(args).expect(OK);
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    drop(held);

    // Nothing was changed by the refused writes; the next write goes through.
    assert_eq!(env.show(&id)["status"], "pending");
    let list = env.run(&["list", "--json"]).expect(OK).json();
    assert_eq!(list.as_array().map(Vec::len), Some(1));
    env.run(&["claim", &id, "--agent", "a"]).expect(OK);
}

#[test]
fn a_writer_holding_the_sqlite_lock_gives_busy_too() {
    let env = Env::new();
    env.create(&["--task-id", "t1", "--goal", "g"]);
    let script = "import sqlite3, sys, time\n\
                  c = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
                  c.execute('BEGIN IMMEDIATE')\n\
                  print('locked', flush=True)\n\
                  time.sleep(30)\n";
    let Ok(mut holder) = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&env.db)
        .stdout(std::process::Stdio::piped())
        .spawn()
    else {
        eprintln!("python3 is not available: skipped");
        return;
    };
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("read");
    assert_eq!(line.trim(), "locked");
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
    assert_eq!(run.error()["code"], "BUSY");
    assert!(started.elapsed() < Duration::from_secs(10));
    env.run(&["list"]).expect(OK);
    let _ = holder.kill();
    let _ = holder.wait();
    env.run(&["create", "--task-id", "t2", "--goal", "g"])
        .expect(OK);
}

#[cfg(unix)]
#[test]
fn read_commands_open_read_only_and_change_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let (id, _, _) = claimed(&env);
    // The database, its log and the lock file; `-shm` is the WAL index in shared memory, where
    // readers keep their read marks (when they may write it), not content.
    let paths: Vec<PathBuf> = store_files(&env.db)
        .into_iter()
        .filter(|p| !p.to_string_lossy().ends_with("-shm"))
        .collect();
    let before = file_bytes(&paths);
    let names = env.files();
    let set_mode = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    };
    for path in store_files(&env.db).iter().filter(|p| p.exists()) {
        set_mode(path, 0o444);
    }
    set_mode(env.dir.path(), 0o555);
    let reads: &[&[&str]] = &[
        &["list"],
        &["list", "--json"],
        &["show", &id],
        &["events"],
        &["events", "--json", "--limit", "1"],
        &["chain", "t1"],
        &["stats"],
        &["export"],
        &["stalled", "--older-than-seconds", "60"],
        &["policy", "show"],
    ];
    for args in reads {
        env.run(args).expect(OK);
    }
    set_mode(env.dir.path(), 0o755);
    for path in store_files(&env.db).iter().filter(|p| p.exists()) {
        set_mode(path, 0o600);
    }
    assert_eq!(file_bytes(&paths), before, "a read changed the store");
    assert_eq!(env.files(), names, "a read created files");
}

#[test]
fn a_zero_length_file_is_never_turned_into_a_store_by_a_read() {
    let env = Env::new();
    std::fs::write(&env.db, b"").expect("touch");
    for args in [
        &["list"][..],
        &["show", "h1"],
        &["events"],
        &["stats"],
        &["export"],
        &["chain", "t1"],
        &["stalled", "--older-than-seconds", "1"],
        &["policy", "show"],
    ] {
        let run = env.run(args).expect(STORAGE);
        assert!(!run.stderr.is_empty());
        let json = env.run(&[args, &["--json"]].concat()).expect(STORAGE);
        assert_eq!(json.error()["code"], "STORAGE");
    }
    assert_eq!(std::fs::read(&env.db).expect("read"), b"");
    assert_eq!(env.files(), ["handoff.db"]);
}

#[test]
fn store_files_are_private() {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let env = Env::new();
        claimed(&env);
        for path in store_files(&env.db).iter().filter(|p| p.exists()) {
            let mode = std::fs::metadata(path).expect("stat").permissions().mode();
            assert_eq!(mode & 0o077, 0, "{} is {mode:o}", path.display());
        }
        let out = env.dir.path().join("export.jsonl");
        env.run(&["export", "-o", out.to_str().expect("path")])
            .expect(OK);
        let mode = std::fs::metadata(&out).expect("stat").permissions().mode();
        assert_eq!(mode & 0o077, 0, "the export is {mode:o}");
    }
}

#[test]
fn export_never_overwrites_the_store() {
    let env = Env::new();
    let (id, token, secret) = claimed(&env);
    env.run(&["heartbeat", &id, "--token", &token, "--secret", &secret])
        .expect(OK);
    let before = observable(&env);
    let dir = env.dir.path();
    std::fs::create_dir(dir.join("sub")).expect("mkdir");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&env.db, dir.join("link.jsonl")).expect("symlink");
        std::os::unix::fs::symlink(dir.join("handoff.db-wal"), dir.join("wal-link"))
            .expect("symlink");
    }
    std::fs::hard_link(&env.db, dir.join("hard.jsonl")).expect("hard link");
    let absolute = env.db.to_str().expect("path").to_owned();
    let targets = [
        "handoff.db",
        "./handoff.db",
        "sub/../handoff.db",
        absolute.as_str(),
        "handoff.db-wal",
        "handoff.db-shm",
        "handoff.db-lock",
        "sub/../handoff.db-wal",
        "handoff.db-journal",
        "link.jsonl",
        "wal-link",
        "hard.jsonl",
    ];
    for target in targets {
        if cfg!(not(unix)) && (target == "link.jsonl" || target == "wal-link") {
            continue;
        }
        let run = env.run(&["export", "-o", target, "--json"]).expect(INVALID);
        assert_eq!(run.error()["code"], "VALIDATION", "{target}");
        assert_eq!(run.error()["problems"][0]["field"], "output", "{target}");
    }
    assert_eq!(observable(&env), before, "the store changed");
    assert_eq!(env.show(&id)["status"], "claimed");
    // The claim still settles: the store is whole.
    env.run(&["complete", &id, "--token", &token, "--secret", &secret])
        .expect(OK);
    // No temporary file was left behind.
    assert!(
        env.files().iter().all(|name| !name.ends_with(".tmp")),
        "{:?}",
        env.files()
    );
}

#[test]
fn export_replaces_its_file_whole() {
    let env = Env::new();
    claimed(&env);
    let out = env.dir.path().join("out.jsonl");
    std::fs::write(
        &out,
        "old content that is much longer than nothing\n".repeat(100),
    )
    .expect("write");
    let run = env
        .run(&["export", "-o", out.to_str().expect("path"), "--json"])
        .expect(OK);
    assert_eq!(run.json()["exported"], 1);
    let written = std::fs::read_to_string(&out).expect("read");
    assert_eq!(written, env.run(&["export"]).expect(OK).stdout);
    // Into a folder that does not exist: refused, nothing left behind.
    env.run(&["export", "-o", "no/such/folder/out.jsonl"])
        .expect(INVALID);
    assert!(
        env.files().iter().all(|name| !name.ends_with(".tmp")),
        "{:?}",
        env.files()
    );
}

#[test]
fn a_saved_policy_applies_to_every_later_run_without_flags() {
    let env = Env::new();
    let show = env.run(&["policy", "show", "--json"]).expect(STORAGE);
    assert_eq!(show.error()["code"], "STORAGE");
    env.run(&["--max-revisits", "1", "policy", "save"])
        .expect(OK);
    let shown = env.run(&["policy", "show", "--json"]).expect(OK).json();
    assert_eq!(shown["saved"]["chain_policy"]["max_revisits"], 1);
    assert_eq!(shown["saved"]["chain_policy"]["max_handoffs"], 5);
    assert_eq!(shown["in_force"], shown["saved"]);
    let text = env.run(&["policy", "show"]).expect(OK).stdout;
    assert!(text.contains("\"max_revisits\":1"), "{text}");

    // manager → worker → manager is one revisit: the saved policy lets it through.
    let first = env.create(&[
        "--task-id",
        "loop",
        "--goal",
        "plan",
        "--from-agent",
        "manager",
        "--to-agent",
        "worker",
    ]);
    let back = [
        "create",
        "--task-id",
        "loop",
        "--goal",
        "report",
        "--from-agent",
        "worker",
        "--to-agent",
        "manager",
        "--parent-id",
        first.as_str(),
    ];
    // A flag on top of the saved policy still wins for its run.
    env.run(&[&back[..], &["--max-revisits", "0"]].concat())
        .expect(CHAIN_VIOLATION);
    let with_flags = env
        .run(&[&["policy", "show", "--json", "--max-revisits", "0"][..]].concat())
        .expect(OK)
        .json();
    assert_eq!(with_flags["in_force"]["chain_policy"]["max_revisits"], 0);
    assert_eq!(with_flags["saved"]["chain_policy"]["max_revisits"], 1);
    env.run(&back).expect(OK);

    // A policy file goes over the saved policy key by key.
    let file = env.dir.path().join("policy.json");
    std::fs::write(&file, r#"{"max_handoffs": 9}"#).expect("write");
    let over = env
        .run(&[
            "--policy",
            file.to_str().expect("path"),
            "policy",
            "show",
            "--json",
        ])
        .expect(OK)
        .json();
    assert_eq!(over["in_force"]["chain_policy"]["max_handoffs"], 9);
    assert_eq!(over["in_force"]["chain_policy"]["max_revisits"], 1);

    // And the MCP server, started without flags, applies it too.
    let mut mcp = common::Mcp::start(&env, &[]);
    let policy = mcp.ok("handoff_policy", serde_json::json!({}));
    assert_eq!(policy["in_force"]["chain_policy"]["max_revisits"], 1);
    let third = mcp.ok(
        "handoff_create",
        serde_json::json!({"task_id": "loop2", "goal": "plan", "from_agent": "manager", "to_agent": "worker"}),
    );
    let back = mcp.ok(
        "handoff_create",
        serde_json::json!({"task_id": "loop2", "goal": "report", "from_agent": "worker",
                           "to_agent": "manager", "parent_id": third["handoff"]["id"]}),
    );
    assert_eq!(back["handoff"]["status"], "pending");
}

#[test]
fn an_unreadable_input_is_a_documented_error() {
    let env = Env::new();
    let run = env
        .run(&["--policy", "/no/such/policy.json", "list", "--json"])
        .expect(INVALID);
    assert_eq!(run.error()["code"], "VALIDATION");
    assert_eq!(run.error()["problems"][0]["field"], "policy");
    let run = env
        .run(&["import", "/no/such/file", "--json"])
        .expect(INVALID);
    assert_eq!(run.error()["code"], "VALIDATION");
    let run = env
        .run(&["create", "--json-input", "/no/such/file", "--json"])
        .expect(INVALID);
    assert_eq!(run.error()["code"], "VALIDATION");
    assert!(env.files().is_empty());
}

#[test]
fn events_are_read_in_pages_across_page_boundaries() {
    let env = Env::new();
    // 2,500 records from one exported line, in one import (one created event each).
    let source = Env::new();
    source.create(&["--task-id", "t0", "--goal", "step"]);
    let line: Value =
        serde_json::from_str(source.run(&["export"]).expect(OK).stdout.trim()).expect("a record");
    let lines: String = (0..2500)
        .map(|i| {
            let mut h = line.clone();
            h["id"] = Value::from(format!("h{i:05}"));
            h["task_id"] = Value::from(format!("t{}", i % 3));
            h["goal"] = Value::from(format!("step {i}"));
            format!("{h}\n")
        })
        .collect();
    env.run_with_input(&["import"], Some(&lines)).expect(OK);
    let all = env.run(&["events", "--json"]).expect(OK).json();
    let seqs: Vec<u64> = all
        .as_array()
        .expect("array")
        .iter()
        .map(|e| e["seq"].as_u64().expect("seq"))
        .collect();
    assert_eq!(seqs.len(), 2500);
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    let page = env
        .run(&[
            "events",
            "--json",
            "--after",
            &seqs[999].to_string(),
            "--limit",
            "1200",
        ])
        .expect(OK)
        .json();
    let page: Vec<u64> = page
        .as_array()
        .expect("array")
        .iter()
        .map(|e| e["seq"].as_u64().expect("seq"))
        .collect();
    assert_eq!(page, seqs[1000..2200]);
    let task = env
        .run(&["events", "--task-id", "t1", "--json"])
        .expect(OK)
        .json();
    assert_eq!(task.as_array().map(Vec::len), Some(833));
    let text = env.run(&["events"]).expect(OK).stdout;
    assert_eq!(text.lines().count(), 2501, "one header, one line per event");
    assert_eq!(text.matches("SEQ").count(), 1);
    let none = env
        .run(&["events", "--after", &seqs[2499].to_string()])
        .expect(OK);
    assert_eq!(none.stdout, "no events\n");
    let empty = env
        .run(&["events", "--json", "--limit", "0"])
        .expect(OK)
        .json();
    assert_eq!(empty, Value::Array(vec![]));
}

#[test]
fn backup_copies_a_store_in_use_and_never_overwrites() {
    let env = Env::new();
    let (id, token, secret) = claimed(&env);
    let copy = env.dir.path().join("copy.backup");
    let copy_arg = copy.to_str().expect("path");
    let run = env.run(&["backup", copy_arg, "--json"]).expect(OK);
    assert_eq!(run.json()["backup"], copy_arg);
    assert_eq!(run.json()["records"], 1);
    // Restored into a new store, a files store here: the claim is there, and its holder can
    // settle it.
    let mut restored = Env::new();
    restored.db = restored.dir.path().join("moved");
    restored.db = format!("files:{}", restored.db.display()).into();
    let run = restored.run(&["restore", copy_arg]).expect(OK);
    assert!(run.stdout.contains("1 handoffs"), "{run:?}");
    // Into a store that holds something already: refused, naming the store.
    let again = restored
        .run(&["restore", copy_arg, "--json"])
        .expect(INVALID);
    assert_eq!(again.error()["problems"][0]["field"], "store", "{again:?}");
    let shown = restored.run(&["show", &id, "--json"]).expect(OK).json();
    assert_eq!(shown["status"], "claimed");
    restored
        .run(&["complete", &id, "--token", &token, "--secret", &secret])
        .expect(OK);
    // Onto an existing file, above all the store itself: refused, nothing changed.
    let before = std::fs::read(&env.db).expect("read");
    env.run(&["backup", env.db.to_str().expect("path")])
        .expect(INVALID);
    env.run(&["backup", copy_arg]).expect(INVALID);
    assert_eq!(std::fs::read(&env.db).expect("read"), before);
}

#[test]
fn restore_refuses_a_damaged_or_foreign_file_and_writes_nothing() {
    let env = Env::new();
    claimed(&env);
    let good = env.dir.path().join("good.backup");
    env.run(&["backup", good.to_str().expect("path")])
        .expect(OK);
    let text = std::fs::read_to_string(&good).expect("read");
    let cut = env.dir.path().join("cut.backup");
    std::fs::write(&cut, &text[..text.len() / 2]).expect("write");
    let foreign = env.dir.path().join("foreign.backup");
    std::fs::write(&foreign, "id,goal\n1,hello\n").expect("write");
    for (file, says) in [(&cut, "cut short"), (&foreign, "not a handoff backup")] {
        let target = Env::new();
        let run = target
            .run(&["restore", file.to_str().expect("path"), "--json"])
            .expect(INVALID);
        let problem = &run.error()["problems"][0];
        assert_eq!(problem["field"], "path", "{run:?}");
        assert!(
            problem["rule"].as_str().is_some_and(|r| r.contains(says)),
            "{run:?}"
        );
        let listed = target.run(&["list", "--json"]).expect(OK).json();
        assert_eq!(listed, json!([]), "nothing written");
    }
}

/// Exports read the store a page at a time: more records than one page come out whole and
/// in order.
#[test]
fn exports_page_through_large_stores() {
    let env = Env::new();
    let lines: String = (0..2_500)
        .map(|i| {
            let h = handoff_core::NewHandoff::new("bulk", format!("item {i}"))
                .into_record(format!("item-{i:05}"), chrono::Utc::now());
            h.to_json() + "\n"
        })
        .collect();
    let input = env.dir.path().join("bulk.jsonl");
    std::fs::write(&input, lines).expect("write");
    env.run(&["import", input.to_str().expect("path")])
        .expect(OK);
    let exported = env.run(&["export"]).expect(OK).stdout;
    let ids: Vec<String> = exported
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).expect("json")["id"]
                .as_str()
                .expect("id")
                .to_owned()
        })
        .collect();
    assert_eq!(ids.len(), 2_500);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "out of order");
}
