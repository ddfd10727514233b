#![cfg(unix)] // The successors are shell scripts.
//! `handoff claim --spawn`: a small shell script stands in for the successor agent.

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::Env;
use serde_json::Value;

/// Writes an executable script into the test folder; returns its path.
fn script(env: &Env, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = env.dir.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

fn event_kinds(env: &Env, id: &str) -> Vec<String> {
    env.run(&["events", id, "--json"])
        .expect(0)
        .json()
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["kind"].as_str().map(str::to_owned))
        .collect()
}

fn handoff(env: &Env) -> String {
    env.create(&[
        "--task-id",
        "t1",
        "--goal",
        "Summarise the logs",
        "--from-agent",
        "claude",
        "--pending",
        "read the logs",
    ])
}

#[test]
fn exit_0_completes_with_the_output_and_the_dna_on_stdin() {
    let env = Env::new();
    let id = handoff(&env);
    let agent = script(
        &env,
        "agent.sh",
        r#"grep -q "Summarise the logs" || exit 9
echo "working on $HANDOFF_ID with token $HANDOFF_TOKEN as $HANDOFF_AGENT" >&2
echo "summary written to notes.md""#,
    );
    let report = env
        .run(&[
            "claim",
            &id,
            "--agent",
            "local",
            "--spawn",
            agent.to_str().expect("path"),
            "--json",
        ])
        .expect(0)
        .json();
    assert_eq!(report["succeeded"], true);
    assert_eq!(report["exit_code"], 0);
    assert_eq!(report["stdout"], "summary written to notes.md\n");
    assert_eq!(
        report["stderr"],
        format!("working on {id} with token 1 as local\n")
    );
    assert_eq!(report["handoff"]["status"], "completed");
    assert_eq!(report["handoff"]["outcome"], "summary written to notes.md");
    assert_eq!(env.show(&id)["status"], "completed");
    assert_eq!(event_kinds(&env, &id), ["created", "claimed", "completed"]);
}

/// The successor reads the store's packet, not the bare record: what its predecessor found
/// on its own branch (marked unverified), the branch to continue on, then the caller's
/// additional instructions last.
#[test]
fn the_successor_reads_the_packet_with_the_predecessors_findings() {
    let env = Env::new();
    env.run(&[
        "facts",
        "add",
        "task/t1/claude",
        "the rotation job writes logs/app.log.1 every hour",
    ])
    .expect(0);
    let id = handoff(&env);
    let agent = script(&env, "agent.sh", "cat > prompt.txt; echo done");
    env.run(&[
        "claim",
        &id,
        "--agent",
        "local",
        "--spawn",
        agent.to_str().expect("path"),
        "--additional-instructions",
        "Answer in French.",
    ])
    .expect(0);
    let prompt = std::fs::read_to_string(env.dir.path().join("prompt.txt")).expect("prompt");
    for expected in [
        "Summarise the logs",
        "read the logs",
        "the rotation job writes logs/app.log.1 every hour (unverified)",
        "## Unverified Findings of claude (on task/t1/claude)",
        "Continue on `task/t1/local`",
    ] {
        assert!(prompt.contains(expected), "{expected}: {prompt}");
    }
    assert!(
        prompt
            .trim_end()
            .ends_with("## Additional Instructions\n\nAnswer in French."),
        "{prompt}"
    );
    // `handoff context` prints the same packet.
    let packet = env.run(&["context", &id]).expect(0).stdout;
    assert!(
        packet.contains("the rotation job writes logs/app.log.1 every hour (unverified)"),
        "{packet}"
    );
}

#[test]
fn the_dna_can_be_passed_as_the_last_argument() {
    let env = Env::new();
    let id = handoff(&env);
    let agent = script(
        &env,
        "agent.sh",
        r#"[ "$1" = "--model" ] && [ "$2" = "small" ] || exit 8
case "$3" in *"Current Goal"*"Summarise the logs"*) echo ok ;; *) exit 7 ;; esac"#,
    );
    let command = format!("{} --model small", agent.display());
    let run = env
        .run(&[
            "claim-next",
            "--agent",
            "local",
            "--spawn",
            &command,
            "--spawn-dna",
            "arg",
        ])
        .expect(0);
    assert!(
        run.stdout.contains("exited with status 0"),
        "{}",
        run.stdout
    );
    assert_eq!(env.show(&id)["outcome"], "ok");
}

#[test]
fn a_successor_may_settle_the_handoff_itself_with_its_token() {
    let env = Env::new();
    let id = handoff(&env);
    // HANDOFF_DB, HANDOFF_ID, HANDOFF_TOKEN and HANDOFF_CLAIM_SECRET (read by --secret from
    // the environment) are all a successor needs to finish on its own.
    let command = format!(
        "{} complete \"$HANDOFF_ID\" --token \"$HANDOFF_TOKEN\" --outcome 'done by the successor'",
        common::binary()
    );
    let report = env
        .run(&[
            "claim", &id, "--agent", "local", "--spawn", &command, "--json",
        ])
        .expect(0)
        .json();
    assert_eq!(report["succeeded"], true, "{report}");
    assert_eq!(report["error"], Value::Null);
    assert_eq!(report["handoff"]["outcome"], "done by the successor");
    assert_eq!(event_kinds(&env, &id), ["created", "claimed", "completed"]);

    // One that gives the handoff back and exits 0 did not complete it.
    let other = env.create(&["--task-id", "t2", "--goal", "g"]);
    let command = format!(
        "{} release \"$HANDOFF_ID\" --token \"$HANDOFF_TOKEN\" --reason 'not for me'",
        common::binary()
    );
    let report = env
        .run(&[
            "claim", &other, "--agent", "local", "--spawn", &command, "--json",
        ])
        .expect(1)
        .json();
    assert_eq!(report["succeeded"], false);
    assert_eq!(report["handoff"]["status"], "pending");
}

#[test]
fn the_claim_secret_reaches_the_successor_in_its_environment_only() {
    let env = Env::new();
    let id = handoff(&env);
    let agent = script(
        &env,
        "agent.sh",
        r#"cat > prompt.txt
printf '%s' "$HANDOFF_CLAIM_SECRET" > secret.txt
case "$HANDOFF_CLAIM_SECRET" in hcs_*) echo "has a secret" ;; *) exit 9 ;; esac"#,
    );
    let report = env
        .run(&[
            "claim",
            &id,
            "--agent",
            "local",
            "--spawn",
            agent.to_str().expect("path"),
            "--json",
        ])
        .expect(0);
    let secret = std::fs::read_to_string(env.dir.path().join("secret.txt")).expect("secret");
    assert_eq!(secret.len(), 68, "{secret}");
    let prompt = std::fs::read_to_string(env.dir.path().join("prompt.txt")).expect("prompt");
    assert!(prompt.contains("Summarise the logs"));
    assert!(!prompt.contains(&secret), "the prompt holds the secret");
    // The report and everything else leave it out.
    assert!(
        !report.stdout.contains(&secret),
        "the report shows the secret"
    );
    for args in [&["events", "--json"][..], &["list", "--json"], &["export"]] {
        assert!(
            !env.run(args).expect(0).stdout.contains(&secret),
            "{args:?}"
        );
    }
    assert_eq!(env.show(&id)["status"], "completed");
}

#[test]
fn a_failing_successor_releases_the_handoff_with_its_error() {
    let env = Env::new();
    let id = handoff(&env);
    let agent = script(
        &env,
        "agent.sh",
        "echo 'partial work' \necho 'boom: no API key' >&2\nexit 3",
    );
    let run = env
        .run(&[
            "claim",
            &id,
            "--agent",
            "local",
            "--spawn",
            agent.to_str().expect("path"),
        ])
        .expect(1);
    assert!(
        run.stdout.contains("exited with status 3"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("boom: no API key"), "{}", run.stdout);
    let h = env.show(&id);
    assert_eq!(h["status"], "pending");
    assert_eq!(h["attempts"], 1);
    let events = env.run(&["events", &id, "--json"]).expect(0).json();
    let released = events
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["kind"] == "released")
        .expect("a released event");
    assert_eq!(
        released["detail"]["reason"],
        "successor exited with status 3: boom: no API key"
    );
    // Released means claimable again, at once.
    env.run(&["claim", &id, "--agent", "other"]).expect(0);
}

#[test]
fn a_successor_killed_by_a_signal_releases_the_handoff() {
    let env = Env::new();
    let id = handoff(&env);
    // The whole group, so that the shell running the script dies of the signal too.
    let agent = script(&env, "agent.sh", "kill -9 0");
    let report = env
        .run(&[
            "claim",
            &id,
            "--agent",
            "local",
            "--spawn",
            agent.to_str().expect("path"),
            "--json",
        ])
        .expect(1)
        .json();
    assert_eq!(report["signal"], 9);
    assert_eq!(report["handoff"]["status"], "pending");
    env.run(&["claim-next", "--agent", "other"]).expect(0);
}

#[test]
fn heartbeats_keep_a_successor_alive_past_its_lease() {
    let env = Env::new();
    let id = handoff(&env);
    // Runs for well over its 2-second lease (heartbeats every third of it keep the claim: a
    // beat may come 1.3 s late on a loaded machine before the claim could lapse).
    let agent = script(&env, "agent.sh", "sleep 3.5\necho finished");
    let mut claim = env.command(&[
        "claim",
        &id,
        "--agent",
        "slow",
        "--lease-seconds",
        "2",
        "--spawn",
        agent.to_str().expect("path"),
        "--json",
    ]);
    let running = claim
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start");
    // Wait until the lease of the claim itself has run out: only heartbeats hold it now.
    wait_until(|| event_kinds(&env, &id).contains(&"claimed".to_owned()));
    let events = env.run(&["events", &id, "--json"]).expect(0).json();
    let first_lease: chrono::DateTime<chrono::Utc> = events
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["kind"] == "claimed")
        .and_then(|e| e["detail"]["lease_until"].as_str())
        .expect("lease_until")
        .parse()
        .expect("a time");
    wait_until(|| chrono::Utc::now() > first_lease);
    let taken = env
        .run(&["claim-next", "--agent", "thief", "--json"])
        .expect(0);
    assert_eq!(
        taken.json(),
        Value::Null,
        "a kept-alive claim is not claimable"
    );
    let output = running.wait_with_output().expect("wait");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report: Value = serde_json::from_slice(&output.stdout).expect("report");
    assert!(
        report["heartbeats"].as_u64().is_some_and(|n| n >= 2),
        "{report}"
    );
    assert_eq!(report["handoff"]["status"], "completed");
    assert_eq!(report["handoff"]["attempts"], 0, "the lease never lapsed");
    let kinds = event_kinds(&env, &id);
    assert!(!kinds.contains(&"lease_expired".to_owned()), "{kinds:?}");
    assert_eq!(kinds.first().map(String::as_str), Some("created"));
    assert_eq!(kinds.last().map(String::as_str), Some("completed"));
    assert!(
        kinds.iter().filter(|k| *k == "heartbeat").count() >= 2,
        "{kinds:?}"
    );
}

#[test]
fn a_timed_out_successor_is_killed_and_the_handoff_released() {
    let env = Env::new();
    let id = handoff(&env);
    let group_file = env.dir.path().join("group");
    // Records its process group, then waits on a background child of its own.
    let agent = script(
        &env,
        "agent.sh",
        &format!(
            "ps -o pgid= -p $$ > {}\nsleep 30 & wait",
            group_file.display()
        ),
    );
    let report = env
        .run(&[
            "claim",
            &id,
            "--agent",
            "local",
            "--spawn",
            agent.to_str().expect("path"),
            "--spawn-timeout",
            "1",
            "--json",
        ])
        .expect(1)
        .json();
    assert_eq!(report["timed_out"], true);
    assert_eq!(report["handoff"]["status"], "pending");
    // The whole process group went, the background `sleep` included.
    let group: u32 = std::fs::read_to_string(&group_file)
        .expect("group")
        .trim()
        .parse()
        .expect("a process group id");
    assert!(
        !running_in_group(group),
        "the successor's process group is still running"
    );
}

/// Whether any process of the group is still running (zombies left for an init that does
/// not reap them do not count), from `ps`.
fn running_in_group(group: u32) -> bool {
    let ps = Command::new("ps")
        .args(["-e", "-o", "pgid=,stat="])
        .output()
        .expect("ps");
    String::from_utf8_lossy(&ps.stdout).lines().any(|line| {
        let mut fields = line.split_whitespace();
        fields.next().and_then(|g| g.parse::<u32>().ok()) == Some(group)
            && fields.next().is_some_and(|stat| !stat.starts_with('Z'))
    })
}

#[test]
fn killing_handoff_leaves_the_handoff_reclaimable_once_the_lease_lapses() {
    let env = Env::new();
    let id = handoff(&env);
    let pid_file = env.dir.path().join("pid");
    let agent = script(
        &env,
        "agent.sh",
        &format!("echo $$ > {}\nexec sleep 30", pid_file.display()),
    );
    let mut claim = env.command(&[
        "claim",
        &id,
        "--agent",
        "doomed",
        "--lease-seconds",
        "1",
        "--spawn",
        agent.to_str().expect("path"),
    ]);
    let mut running = claim
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start");
    wait_until(|| pid_file.exists() && env.show(&id)["status"] == "claimed");
    running.kill().expect("kill handoff");
    running.wait().expect("reap");
    // The successor is an orphan now; end it so that it outlives no test.
    let pid = std::fs::read_to_string(&pid_file).expect("pid");
    let _ = Command::new("kill").args(["-KILL", pid.trim()]).status();

    // No more heartbeats: once the lease lapses, another agent claims it.
    wait_until(|| {
        env.run(&["claim-next", "--agent", "rescuer", "--json"])
            .expect(0)
            .json()
            != Value::Null
    });
    let h = env.show(&id);
    assert_eq!(h["claimed_by"], "rescuer");
    assert_eq!(h["claim_token"], 2);
    assert_eq!(h["attempts"], 1);
    assert!(event_kinds(&env, &id).contains(&"lease_expired".to_owned()));
}

/// Polls `done` every 50 ms until it holds; fails after a generous 30 s so a broken build
/// cannot hang the suite (the bound is a safety net, not a measurement).
fn wait_until(mut done: impl FnMut() -> bool) {
    for _ in 0..600 {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("condition not reached within 30 s");
}
