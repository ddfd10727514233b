//! The harness of the multi-process benches: a bench re-runs its own binary as worker
//! processes, which get ready, start together when a "go" file appears, and each write a
//! report (how many units, first start and last finish in Unix microseconds, errors, and the
//! ids they handled) for the parent to read.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The variable that tells a re-run binary it is a worker, and which one.
const ROLE: &str = "TEAM_WORKER";

/// Microseconds since the Unix epoch: comparable across processes.
pub fn micros_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

/// The role this process was started with, when it is a worker.
pub fn worker_role() -> Option<String> {
    std::env::var(ROLE).ok()
}

/// A variable the parent set for this worker.
pub fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("the worker needs {name}"))
}

/// Worker processes of one run, spawned and ready, not yet started.
pub struct Team {
    dir: PathBuf,
    children: Vec<Option<Child>>,
}

/// What one worker did.
#[derive(Debug)]
pub struct Report {
    pub count: u64,
    /// Unix microseconds.
    pub start: u64,
    pub end: u64,
    pub errors: u64,
    pub ids: Vec<String>,
}

impl Team {
    /// Starts `processes` copies of this binary as `role`, each with the variables
    /// `env(n)`, and waits until every one is ready. `dir` holds the go, ready and report
    /// files.
    pub fn spawn(
        dir: &Path,
        role: &str,
        processes: usize,
        env: impl Fn(usize) -> Vec<(&'static str, OsString)>,
    ) -> Team {
        let exe = std::env::current_exe().unwrap();
        let children = (0..processes)
            .map(|n| {
                let mut command = Command::new(&exe);
                command
                    .env(ROLE, role)
                    .env("TEAM_GO", dir.join("go"))
                    .env("TEAM_READY", dir.join(format!("ready-{n}")))
                    .env("TEAM_OUT", dir.join(format!("out-{n}")))
                    .env("TEAM_AGENT", format!("p{n}"))
                    .stdout(Stdio::null());
                for (name, value) in env(n) {
                    command.env(name, value);
                }
                Some(command.spawn().unwrap())
            })
            .collect();
        let mut team = Team {
            dir: dir.to_path_buf(),
            children,
        };
        while !(0..processes).all(|n| dir.join(format!("ready-{n}")).exists()) {
            for child in team.children.iter_mut().flatten() {
                if let Some(status) = child.try_wait().unwrap() {
                    panic!("a worker exited before it was ready: {status}");
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        team
    }

    /// Lets every worker start.
    pub fn go(&self) {
        std::fs::write(self.dir.join("go"), b"go").unwrap();
    }

    /// Whether worker `n` is still running.
    pub fn running(&mut self, n: usize) -> bool {
        self.children[n]
            .as_mut()
            .is_some_and(|child| child.try_wait().unwrap().is_none())
    }

    /// Kills worker `n` with SIGKILL (what `Child::kill` sends on Unix); its report is `None`.
    pub fn kill(&mut self, n: usize) {
        if let Some(mut child) = self.children[n].take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Waits for every worker; the reports of those that were not killed. A worker that
    /// fails fails the run (after all have ended).
    pub fn wait(self) -> Vec<Option<Report>> {
        let statuses: Vec<_> = self
            .children
            .into_iter()
            .map(|child| child.map(|mut child| child.wait().unwrap()))
            .collect();
        statuses
            .into_iter()
            .enumerate()
            .map(|(n, status)| {
                let status = status?;
                assert!(status.success(), "worker {n} failed: {status}");
                Some(read_report(&self.dir.join(format!("out-{n}"))))
            })
            .collect()
    }
}

fn read_report(path: &Path) -> Report {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let fields: Vec<u64> = lines
        .next()
        .unwrap()
        .split_whitespace()
        .map(|f| f.parse().unwrap())
        .collect();
    Report {
        count: fields[0],
        start: fields[1],
        end: fields[2],
        errors: fields[3],
        ids: lines.map(str::to_owned).collect(),
    }
}

/// Total units per second (from the first start to the last finish) and each worker's share.
#[derive(Debug)]
pub struct Outcome {
    pub total: u64,
    pub rate: f64,
    /// Per worker, in percent of the total.
    pub shares: Vec<f64>,
    pub errors: u64,
}

impl Outcome {
    pub fn of(reports: &[Report]) -> Outcome {
        let total: u64 = reports.iter().map(|r| r.count).sum();
        let first = reports.iter().map(|r| r.start).min().unwrap_or(0);
        let last = reports.iter().map(|r| r.end).max().unwrap_or(0);
        Outcome {
            total,
            rate: total as f64 / ((last.saturating_sub(first)).max(1) as f64 / 1e6),
            shares: reports
                .iter()
                .map(|r| r.count as f64 * 100.0 / total.max(1) as f64)
                .collect(),
            errors: reports.iter().map(|r| r.errors).sum(),
        }
    }

    /// The smallest share over the fair one (1.0: perfectly even).
    pub fn min_over_fair(&self) -> f64 {
        let fair = 100.0 / self.shares.len() as f64;
        self.shares.iter().copied().fold(f64::INFINITY, f64::min) / fair
    }

    /// The shares as `25 / 24 / …`.
    pub fn shares_text(&self) -> String {
        self.shares
            .iter()
            .map(|s| format!("{s:.0}"))
            .collect::<Vec<_>>()
            .join(" / ")
    }
}

/// How many errors in a row end a worker (with a failure): its store is gone.
const MAX_ERRORS_IN_A_ROW: u64 = 100;

/// The body of a worker: says it is ready, waits for go, then runs `step` until it returns
/// `Ok(None)` (nothing left) and writes its report. `Ok(Some(id))` is one unit done; an error
/// is counted and the loop goes on, unless there were `MAX_ERRORS_IN_A_ROW` (100).
pub fn work(mut step: impl FnMut() -> Result<Option<String>, String>) {
    std::fs::write(var("TEAM_READY"), b"").unwrap();
    let go = PathBuf::from(var("TEAM_GO"));
    while !go.exists() {
        std::thread::sleep(Duration::from_micros(200));
    }
    let (mut count, mut errors, mut in_a_row, mut ids) = (0u64, 0u64, 0u64, Vec::new());
    let start = micros_now();
    // When the last unit was done: finding out that nothing is left (a waiting claim that
    // times out) is not work.
    let mut end = start;
    loop {
        match step() {
            Ok(Some(id)) => {
                count += 1;
                end = micros_now();
                in_a_row = 0;
                ids.push(id);
            }
            Ok(None) => break,
            Err(e) => {
                errors += 1;
                in_a_row += 1;
                if errors <= 3 {
                    eprintln!("worker {}: {e}", var("TEAM_AGENT"));
                }
                assert!(
                    in_a_row < MAX_ERRORS_IN_A_ROW,
                    "{in_a_row} errors in a row: {e}"
                );
            }
        }
    }
    let mut out = format!("{count} {start} {end} {errors}\n");
    for id in ids {
        out.push_str(&id);
        out.push('\n');
    }
    std::fs::write(var("TEAM_OUT"), out).unwrap();
}
