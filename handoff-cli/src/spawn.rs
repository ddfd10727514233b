//! Claim-and-spawn: run a successor command on a claimed handoff, held with the core's
//! [`Lease`] while it runs (heartbeats), completed on exit 0 and released otherwise.
//!
//! The command runs through `sh -c` in a process group of its own (on Unix), so that a timeout
//! or a lost lease kills everything it started, not just the shell.

use std::io::{Read, Write};
#[cfg(unix)]
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use handoff_core::store::Lease;
use handoff_core::{Claim, Error, Handoff, Store};
use serde_json::json;

use crate::args::{DnaMode, MAX_SPAWN_TIMEOUT_SECONDS, SpawnOpts};
use crate::error::CliError;
use crate::location::Location;
use crate::output::{Output, Reply};

/// How much of each output stream a report keeps (the end of it).
const KEEP_BYTES: usize = 64 * 1024;
/// How much of the output becomes the outcome or the release reason.
const SUMMARY_BYTES: usize = 4 * 1024;
/// How often the child (and its lease) is checked on.
const POLL: Duration = Duration::from_millis(20);
/// How long output readers get after the child exits (a background grandchild may hold the
/// pipes open; its output is not waited for).
const DRAIN: Duration = Duration::from_secs(1);

/// The successor command and how it gets the DNA.
#[derive(Clone, Debug)]
pub(crate) struct SpawnConfig {
    pub command: String,
    pub dna: DnaMode,
    pub timeout: Option<Duration>,
}

impl SpawnConfig {
    pub(crate) fn from_opts(opts: &SpawnOpts) -> Option<SpawnConfig> {
        opts.spawn.as_ref().map(|command| SpawnConfig {
            command: command.clone(),
            dna: opts.spawn_dna,
            timeout: opts.spawn_timeout.map(Duration::from_secs),
        })
    }

    /// This configuration with a caller's own timeout (`timeout_seconds` of one MCP call):
    /// 1 to 24 hours' worth of seconds, and never longer than the operator's `--spawn-timeout`.
    pub(crate) fn with_timeout(&self, seconds: Option<u64>) -> Result<SpawnConfig, Error> {
        let mut config = self.clone();
        if let Some(seconds) = seconds {
            if seconds == 0 || seconds > MAX_SPAWN_TIMEOUT_SECONDS {
                return Err(Error::invalid(
                    "timeout_seconds",
                    format!("must be between 1 and {MAX_SPAWN_TIMEOUT_SECONDS} (24 hours)"),
                ));
            }
            let asked = Duration::from_secs(seconds);
            config.timeout = Some(self.timeout.map_or(asked, |bound| bound.min(asked)));
        }
        Ok(config)
    }
}

/// What happened to the successor and to the handoff.
#[derive(Debug)]
pub(crate) struct SpawnReport {
    pub handoff_id: String,
    pub token: u64,
    pub command: String,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// The time limit the successor ran under, if any.
    pub timeout: Option<Duration>,
    /// The heartbeat error that ended the run (the lease was lost), if any.
    pub lease_lost: Option<CliError>,
    /// Completing or releasing failed with this.
    pub settle_error: Option<CliError>,
    pub heartbeats: u32,
    pub stdout: String,
    pub stderr: String,
    /// The record after the run.
    pub handoff: Option<Handoff>,
}

impl SpawnReport {
    /// Whether the command succeeded and the handoff was completed.
    pub(crate) fn succeeded(&self) -> bool {
        self.exit_code == Some(0)
            && !self.timed_out
            && self.lease_lost.is_none()
            && self.settle_error.is_none()
            && self
                .handoff
                .as_ref()
                .is_some_and(|h| h.status == handoff_core::Status::Completed)
    }

    /// The report as text and JSON; the record and the successor's output go through `out`.
    pub(crate) fn reply(&self, out: &Output) -> Reply {
        let timeout_seconds = self.timeout.map(|t| t.as_secs());
        let how = match (self.exit_code, self.signal) {
            _ if self.timed_out => format!(
                "timed out after {}s and was killed",
                timeout_seconds.unwrap_or_default()
            ),
            _ if self.lease_lost.is_some() => "was killed: the lease was lost".to_owned(),
            (Some(code), _) => format!("exited with status {code}"),
            (None, Some(signal)) => format!("was killed by signal {signal}"),
            (None, None) => "could not be started".to_owned(),
        };
        let mut text = format!(
            "successor `{}` on {} (token {}) {how} after {} heartbeat(s)\n",
            self.command, self.handoff_id, self.token, self.heartbeats
        );
        if let Some(h) = &self.handoff {
            text.push_str(&out.record_line(h));
        }
        for e in [&self.lease_lost, &self.settle_error].into_iter().flatten() {
            text.push_str(&format!("error: {}\n", e.shown_text(out)));
        }
        let stdout = out.text(&self.stdout);
        let stderr = out.text(&self.stderr);
        for (name, output) in [("stdout", &stdout), ("stderr", &stderr)] {
            if !output.is_empty() {
                text.push_str(&format!("--- {name} ---\n{output}"));
                if !output.ends_with('\n') {
                    text.push('\n');
                }
            }
        }
        let json = json!({
            "handoff_id": self.handoff_id,
            "token": self.token,
            "command": self.command,
            "succeeded": self.succeeded(),
            "exit_code": self.exit_code,
            "signal": self.signal,
            "timed_out": self.timed_out,
            "timeout_seconds": timeout_seconds,
            "heartbeats": self.heartbeats,
            "lease_lost": self.lease_lost.as_ref().map(|e| e.shown_json(out)["error"].clone()),
            "error": self.settle_error.as_ref().map(|e| e.shown_json(out)["error"].clone()),
            "stdout": stdout,
            "stderr": stderr,
            "handoff": self.handoff.as_ref().map(|h| out.record(h)),
        });
        Reply::new(text, json)
    }
}

/// Runs the successor for `claim` on `prompt` (the DNA, as [`Output::prompt`] makes it) and
/// settles the handoff by how it ended.
pub(crate) fn run(
    store: &Store,
    db: &Location,
    claim: &Claim,
    config: &SpawnConfig,
    prompt: String,
) -> SpawnReport {
    let h = &claim.handoff;
    let dna = prompt;
    let mut report = SpawnReport {
        handoff_id: h.id.clone(),
        token: claim.token,
        command: config.command.clone(),
        exit_code: None,
        signal: None,
        timed_out: false,
        timeout: config.timeout,
        lease_lost: None,
        settle_error: None,
        heartbeats: 0,
        stdout: String::new(),
        stderr: String::new(),
        handoff: None,
    };

    let mut command = Command::new("sh");
    match config.dna {
        DnaMode::Stdin => {
            command.arg("-c").arg(&config.command).stdin(Stdio::piped());
        }
        DnaMode::Arg => {
            // `"$@"` passes the DNA as one argument, however it is quoted.
            command
                .arg("-c")
                .arg(format!("{} \"$@\"", config.command))
                .arg("handoff-successor")
                .arg(&dna)
                .stdin(Stdio::null());
        }
    }
    command
        .env("HANDOFF_ID", &h.id)
        .env("HANDOFF_TOKEN", claim.token.to_string())
        // The claim's secret goes to the successor alone, in its environment (never in the
        // prompt, which may be logged or sent to a model): with it, the successor can
        // heartbeat, complete or release the handoff itself.
        .env("HANDOFF_CLAIM_SECRET", claim.secret.expose())
        .env("HANDOFF_TASK_ID", &h.task_id)
        .env("HANDOFF_AGENT", h.claimed_by.as_deref().unwrap_or_default())
        .env("HANDOFF_DB", db.for_successor())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    command.process_group(0);

    // Heartbeats from now until the claim is settled.
    let lease = match store.lease(claim) {
        Ok(lease) => lease,
        Err(e) => {
            report.settle_error = Some(e.into());
            let _ = store.release(claim, "the successor's lease could not be held");
            report.handoff = store.get(claim.handoff_id()).ok();
            return report;
        }
    };
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            report.stderr = format!("cannot start sh: {e}");
            settle(store, claim, lease, &mut report);
            return report;
        }
    };
    if config.dna == DnaMode::Stdin
        && let Some(mut stdin) = child.stdin.take()
    {
        // A successor that does not read its input closes the pipe: that is not an error.
        thread::spawn(move || {
            let _ = stdin.write_all(dna.as_bytes());
        });
    }
    let (done_tx, done_rx) = mpsc::channel();
    let stdout = capture(child.stdout.take(), done_tx.clone());
    let stderr = capture(child.stderr.take(), done_tx);

    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => break None,
        }
        if config.timeout.is_some_and(|t| started.elapsed() >= t) {
            report.timed_out = true;
            break kill(&mut child);
        }
        if lease.is_lost() {
            // The store says why, asked once more.
            let why = store
                .heartbeat(claim)
                .err()
                .unwrap_or_else(|| Error::LeaseLost {
                    id: claim.handoff_id().to_owned(),
                    token: claim.token,
                    reason: "a heartbeat found the claim gone".to_owned(),
                });
            report.lease_lost = Some(why.into());
            break kill(&mut child);
        }
        thread::sleep(POLL);
    };
    report.heartbeats = lease.heartbeats();
    if let Some(status) = status {
        report.exit_code = status.code();
        report.signal = signal_of(status);
    }
    // Both readers finish when the pipes close; a lingering grandchild is not waited for long.
    let deadline = Instant::now() + DRAIN;
    for _ in 0..2 {
        let left = deadline.saturating_duration_since(Instant::now());
        if done_rx.recv_timeout(left).is_err() {
            break;
        }
    }
    report.stdout = taken(&stdout);
    report.stderr = taken(&stderr);
    settle(store, claim, lease, &mut report);
    report
}

/// Completes or releases the handoff by how the run ended; records the final state.
fn settle(store: &Store, claim: &Claim, lease: Lease, report: &mut SpawnReport) {
    let current = store.get(claim.handoff_id());
    // The successor may have completed or released the handoff itself, with the token it was
    // given in HANDOFF_TOKEN and HANDOFF_CLAIM_SECRET: then there is nothing left to do.
    let settled_by_successor = current.as_ref().is_ok_and(|h| {
        h.claim_token == Some(claim.token) && h.status != handoff_core::Status::Claimed
    });
    let settled = if report.lease_lost.is_some() || settled_by_successor {
        // After a lost lease, someone else holds the handoff: it is theirs to settle.
        lease.forget();
        current
    } else if report.exit_code == Some(0) && !report.timed_out {
        let outcome = tail(report.stdout.trim(), SUMMARY_BYTES);
        let outcome = if outcome.is_empty() {
            "successor exited with status 0"
        } else {
            outcome
        };
        lease.complete(outcome)
    } else {
        let why = if report.timed_out {
            format!(
                "successor timed out after {}s",
                report.timeout.map(|t| t.as_secs()).unwrap_or_default()
            )
        } else {
            match (report.exit_code, report.signal) {
                (Some(code), _) => format!("successor exited with status {code}"),
                (None, Some(signal)) => format!("successor was killed by signal {signal}"),
                (None, None) => "successor could not be started".to_owned(),
            }
        };
        let last = report.stderr.trim().lines().last().unwrap_or_default();
        let reason = if last.is_empty() {
            why
        } else {
            format!("{why}: {}", tail(last, SUMMARY_BYTES))
        };
        lease.release(&reason)
    };
    match settled {
        Ok(h) => report.handoff = Some(h),
        Err(e) => {
            report.settle_error = Some(e.into());
            report.handoff = store.get(claim.handoff_id()).ok();
        }
    }
}

#[cfg(unix)]
fn signal_of(status: std::process::ExitStatus) -> Option<i32> {
    status.signal()
}

#[cfg(not(unix))]
fn signal_of(_: std::process::ExitStatus) -> Option<i32> {
    None
}

/// Kills the child's whole process group (on Unix), then reaps the child (also a judge
/// command's, `judge.rs`).
pub(crate) fn kill(child: &mut Child) -> Option<std::process::ExitStatus> {
    let group = format!("-{}", child.id());
    let killed = cfg!(unix)
        && Command::new("kill")
            .args(["-KILL", "--", &group])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if !killed {
        let _ = child.kill();
    }
    child.wait().ok()
}

type Captured = Arc<Mutex<Vec<u8>>>;

/// Reads `stream` to its end on a thread, keeping its last [`KEEP_BYTES`].
fn capture(stream: Option<impl Read + Send + 'static>, done: mpsc::Sender<()>) -> Captured {
    let kept: Captured = Arc::default();
    let Some(mut stream) = stream else {
        let _ = done.send(());
        return kept;
    };
    let sink = Arc::clone(&kept);
    thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = stream.read(&mut buf) {
            if n == 0 {
                break;
            }
            let mut kept = sink.lock().unwrap_or_else(|p| p.into_inner());
            kept.extend_from_slice(&buf[..n]);
            if kept.len() > 2 * KEEP_BYTES {
                let cut = kept.len() - KEEP_BYTES;
                kept.drain(..cut);
            }
        }
        let _ = done.send(());
    });
    kept
}

fn taken(captured: &Captured) -> String {
    let bytes = captured.lock().unwrap_or_else(|p| p.into_inner());
    let start = bytes.len().saturating_sub(KEEP_BYTES);
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

/// The last `max` bytes of `text`, cut at a character boundary.
fn tail(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_respects_char_boundaries() {
        assert_eq!(tail("abcdef", 3), "def");
        assert_eq!(tail("ab", 3), "ab");
        assert_eq!(tail("éé", 3), "é");
    }

    #[test]
    fn a_call_timeout_is_bounded_and_never_past_the_operators() {
        let config = SpawnConfig {
            command: "true".into(),
            dna: DnaMode::Stdin,
            timeout: None,
        };
        assert_eq!(config.with_timeout(None).expect("none").timeout, None);
        assert_eq!(
            config.with_timeout(Some(5)).expect("5s").timeout,
            Some(Duration::from_secs(5))
        );
        for bad in [0, MAX_SPAWN_TIMEOUT_SECONDS + 1, u64::MAX] {
            let err = config.with_timeout(Some(bad)).expect_err("out of range");
            assert!(err.to_string().contains("timeout_seconds"), "{err}");
        }
        let bounded = SpawnConfig {
            timeout: Some(Duration::from_secs(60)),
            ..config
        };
        assert_eq!(
            bounded.with_timeout(Some(3600)).expect("capped").timeout,
            Some(Duration::from_secs(60))
        );
    }
}
