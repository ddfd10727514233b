//! Runs the built `handoff` binary on a temporary store.
#![allow(dead_code, unreachable_pub)] // Each test binary uses part of this module.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// A temporary folder with a store path in it (the file does not exist until a command
/// creates it).
pub struct Env {
    pub dir: tempfile::TempDir,
    pub db: PathBuf,
}

/// What a run of `handoff` left.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Stdout as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }

    /// The `{"error": {...}}` object `--json` prints on stderr.
    pub fn error(&self) -> Value {
        let v: Value = serde_json::from_str(self.stderr.trim())
            .unwrap_or_else(|e| panic!("stderr is not JSON ({e}): {self:?}"));
        v["error"].clone()
    }

    /// Asserts the exit code, showing the whole run when it differs.
    pub fn expect(self, code: i32) -> Run {
        assert_eq!(self.code, code, "unexpected exit code: {self:#?}");
        self
    }
}

pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_handoff")
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("handoff.db");
        Env { dir, db }
    }

    /// `handoff --db <db> ARGS...`
    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with_input(args, None)
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(binary());
        command
            .arg("--db")
            .arg(&self.db)
            .args(args)
            .env_remove("HANDOFF_DB")
            .current_dir(self.dir.path());
        command
    }

    pub fn run_with_input(&self, args: &[&str], input: Option<&str>) -> Run {
        let mut command = self.command(args);
        finish(&mut command, input)
    }

    /// Creates a handoff with `--json`; returns its id.
    pub fn create(&self, args: &[&str]) -> String {
        let mut all = vec!["create", "--json"];
        all.extend_from_slice(args);
        let run = self.run(&all).expect(0);
        run.json()["id"].as_str().expect("id").to_owned()
    }

    /// The record, through `show --json`.
    pub fn show(&self, id: &str) -> Value {
        self.run(&["show", id, "--json"]).expect(0).json()
    }

    /// The names of the files in the folder, sorted.
    pub fn files(&self) -> Vec<String> {
        files_in(self.dir.path())
    }
}

pub fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

pub fn finish(command: &mut Command, input: Option<&str>) -> Run {
    command
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("start handoff");
    if let Some(input) = input {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write stdin");
    }
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().expect("wait for handoff");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}
