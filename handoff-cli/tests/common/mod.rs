//! Runs the built `handoff` binary on a temporary store.
#![allow(dead_code, unreachable_pub)] // Each test binary uses part of this module.

pub mod pg_schema;

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

/// A claim secret of the right form that no claim handed out.
pub const FAKE_SECRET: &str =
    "hcs_0000000000000000000000000000000000000000000000000000000000000000";

/// The claim secret in `claim`'s text output.
pub fn secret_in(text: &str) -> String {
    text.lines()
        .find_map(|line| line.strip_prefix("claim secret: "))
        .unwrap_or_else(|| panic!("no claim secret in {text}"))
        .trim()
        .to_owned()
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
            .env_remove("HANDOFF_CREDENTIALS")
            .env_remove("HANDOFF_AGENT_TOKEN")
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

/// A `handoff mcp` server on a test store, spoken to in raw JSON-RPC over its stdio (one JSON
/// message per line, as the MCP stdio transport frames them). The Python end-to-end test
/// (`mcp_e2e.py`) covers the official client; this one keeps `cargo test` self-contained.
pub struct Mcp {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl Mcp {
    /// Starts `handoff --db <db> mcp EXTRA...` and initialises the session.
    pub fn start(env: &Env, extra: &[&str]) -> Mcp {
        Mcp::start_with(env.command(&[]), extra)
    }

    /// Starts the server from a prepared command (its environment, its `--db`).
    pub fn start_with(mut command: Command, extra: &[&str]) -> Mcp {
        // Every tool, unless the test chooses its sets: the cases call tools of every set.
        if !command
            .get_envs()
            .any(|(key, _)| key == "HANDOFF_MCP_TOOLS")
        {
            command.env("HANDOFF_MCP_TOOLS", "all");
        }
        command
            .arg("mcp")
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command.spawn().expect("start handoff mcp");
        let stdin = child.stdin.take();
        let stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let mut mcp = Mcp {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        let init = mcp.request(
            "initialize",
            serde_json::json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "handoff-cli-tests", "version": "0"}
            }),
        );
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        mcp.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write to the server");
        stdin.flush().expect("flush");
    }

    /// Sends a request and returns its response (skipping notifications).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        use std::io::BufRead;
        self.next_id += 1;
        let id = self.next_id;
        self.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        loop {
            let mut line = String::new();
            let n = self
                .stdout
                .read_line(&mut line)
                .expect("read from the server");
            assert!(
                n > 0,
                "the server closed its output while {method} was pending"
            );
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            if message.get("id") == Some(&Value::from(id)) {
                return message;
            }
        }
    }

    /// Sends a request without waiting for its answer (read it with [`Mcp::answer`]).
    pub fn send_request(&mut self, id: u64, method: &str, params: Value) {
        self.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
    }

    /// Sends a notification (no answer comes).
    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next answer the server writes (notifications skipped).
    pub fn answer(&mut self) -> Value {
        use std::io::BufRead;
        loop {
            let mut line = String::new();
            let n = self
                .stdout
                .read_line(&mut line)
                .expect("read from the server");
            assert!(n > 0, "the server closed its output");
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            if message.get("id").is_some() {
                return message;
            }
        }
    }

    /// Writes `line` (raw bytes, a newline added) and returns the next message the server
    /// writes: the answer to a line that carries no readable id, or to one that does.
    pub fn raw(&mut self, line: &[u8]) -> Value {
        use std::io::BufRead;
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line).expect("write to the server");
        stdin.write_all(b"\n").expect("write to the server");
        stdin.flush().expect("flush");
        let mut answer = String::new();
        let n = self
            .stdout
            .read_line(&mut answer)
            .expect("read from the server");
        assert!(n > 0, "the server closed its output");
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("not JSON ({e}): {answer}"))
    }

    /// The tools the server lists.
    pub fn tools(&mut self) -> Vec<Value> {
        let listed = self.request("tools/list", serde_json::json!({}));
        listed["result"]["tools"].as_array().expect("tools").clone()
    }

    /// A `tools/call`'s result: `{content, structuredContent, isError}`.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self.request(
            "tools/call",
            serde_json::json!({"name": tool, "arguments": arguments}),
        );
        response
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{tool}: no result: {response}"))
    }

    /// The readable text of a tool result.
    pub fn text(result: &Value) -> String {
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Calls a tool that must succeed; returns its structured content. Asserts readable text.
    pub fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments);
        assert_ne!(result["isError"], true, "{tool} failed: {result}");
        assert!(!Mcp::text(&result).is_empty(), "{tool}: no text: {result}");
        assert!(
            result["structuredContent"].is_object(),
            "{tool}: no structuredContent: {result}"
        );
        result["structuredContent"].clone()
    }

    /// Calls a tool that must fail; returns the `{"code", "message", ...}` error object.
    pub fn err(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments);
        assert_eq!(
            result["isError"], true,
            "{tool} should have failed: {result}"
        );
        let error = result["structuredContent"]["error"].clone();
        let message = error["message"].as_str().expect("message");
        assert!(Mcp::text(&result).contains(message), "{result}");
        error
    }

    /// Ends the session (closes the server's input) and returns how the server exited.
    pub fn close(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        for _ in 0..600 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("the server did not exit within a minute of its input closing");
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        // Closing stdin ends the session; the server then exits.
        drop(self.stdin.take());
        for _ in 0..200 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
