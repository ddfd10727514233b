//! What the dashboard's tests share: `handoff serve` on a temporary store, a small HTTP/1.1
//! client over a TCP stream (the workspace has no HTTP client, and these tests need no more),
//! and the store an operator should see the truth about — a live claim with progress, a
//! lapsed one, a failed attempt, a dead handoff and a rejected one.
#![allow(dead_code, unreachable_pub)] // Each test binary uses part of this module.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::Env;

/// The operator's token the server is started with.
pub const TOKEN: &str = "dashboard-operator-token-0123456789";

/// A running `handoff serve`, stopped when dropped.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
}

impl Server {
    /// `handoff --db <env's store> serve --bind 127.0.0.1:0 EXTRA...`, once it listens.
    pub fn start(env: &Env, extra: &[&str]) -> Server {
        let mut command = env.command(&["serve", "--bind", "127.0.0.1:0"]);
        command
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        Server::start_command(command)
    }

    pub fn start_command(mut command: Command) -> Server {
        let mut child = command.spawn().expect("start handoff serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read the listening line");
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no address in {line:?}"));
        Server { child, addr }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// A request to this server.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Answer {
        request(self.addr, method, path, headers, body)
    }

    /// `GET path` with the operator's cookie.
    pub fn page(&self, path: &str) -> Answer {
        let cookie = format!("handoff_token={TOKEN}");
        self.request("GET", path, &[("cookie", &cookie)], b"")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The value of the first `<input name="NAME" value="...">` of the form posting to
    /// `/actions/OP`.
    pub fn form_field(&self, op: &str, name: &str) -> Option<String> {
        let form = self
            .body
            .split(&format!("action=\"/actions/{op}\""))
            .nth(1)?
            .split("</form>")
            .next()?;
        let at = form.find(&format!("name=\"{name}\" value=\""))?;
        let rest = &form[at + name.len() + 15..];
        Some(rest[..rest.find('"')?].to_owned())
    }
}

/// One request on a connection of its own (`Connection: close`), read whole.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("write head");
    stream.write_all(body).expect("write body");
    // Read until the body is whole by its length (or its last chunk), not until the peer
    // closes: chromedriver keeps a connection open whatever the request says.
    let mut raw = Vec::new();
    let mut buffer = [0u8; 16 * 1024];
    loop {
        if whole(&raw) {
            break;
        }
        let n = stream.read(&mut buffer).expect("read answer");
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buffer[..n]);
    }
    parse(&raw)
}

/// Whether `raw` holds a whole answer: its head, and its body by `Content-Length` or to its
/// last chunk.
fn whole(raw: &[u8]) -> bool {
    let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    let body = &raw[end + 4..];
    let length = head
        .lines()
        .filter_map(|l| l.strip_prefix("content-length:"))
        .find_map(|v| v.trim().parse::<usize>().ok());
    match length {
        Some(n) => body.len() >= n,
        None if head.contains("transfer-encoding: chunked") => body.ends_with(b"0\r\n\r\n"),
        None => false,
    }
}

fn parse(raw: &[u8]) -> Answer {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an answer's head");
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[end + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    if chunked {
        body = unchunk(&body);
    }
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

fn unchunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(line_end) = body.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size_text = String::from_utf8_lossy(&body[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("0").trim(), 16)
            .unwrap_or(0);
        if size == 0 {
            return out;
        }
        let start = line_end + 2;
        out.extend_from_slice(&body[start..start + size]);
        body = &body[start + size + 2..];
    }
}

/// `name=value&...`, encoded as a form is.
pub fn form(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = String::new();
    for (k, v) in fields {
        if !out.is_empty() {
            out.push('&');
        }
        out.push_str(&encode(k));
        out.push('=');
        out.push_str(&encode(v));
    }
    out.into_bytes()
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                char::from(b).to_string()
            }
            b' ' => "+".to_owned(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// The store the dashboard is checked on, by id.
pub struct Scene {
    /// Claimed by `billing` for five minutes, with progress `{"done":3,"of":10}`.
    pub live: String,
    /// Claimed by `billing` for one second, long lapsed.
    pub lapsed: String,
    /// Failed once (`upstream 502 from the payments API`), pending again.
    pub attempt: String,
    /// Failed on its only attempt (`card processor refused: do_not_honor`).
    pub dead: String,
    /// Rejected by `refunds` (`not my queue`).
    pub rejected: String,
}

pub const ATTEMPT_ERROR: &str = "upstream 502 from the payments API";
pub const DEAD_ERROR: &str = "card processor refused: do_not_honor";
pub const REJECT_REASON: &str = "not my queue";

fn claim(env: &Env, id: &str, agent: &str, lease: &str) -> Value {
    env.run(&["claim", "--json", id, agent, lease])
        .expect(0)
        .json()
}

fn token_and_secret(claim: &Value) -> (String, String) {
    (
        claim["token"].to_string(),
        claim["claim_secret"].as_str().expect("secret").to_owned(),
    )
}

impl Scene {
    pub fn build(env: &Env) -> Scene {
        let create = |task: &str, goal: &str, from: &str, to: &str, extra: &[&str]| {
            let mut args = vec![task, goal, "--from-agent", from, "--to-agent", to];
            args.extend_from_slice(extra);
            env.create(&args)
        };
        let live = create(
            "billing",
            "settle the March invoices",
            "triage",
            "billing",
            &[],
        );
        let lapsed = create("billing", "reconcile the ledger", "triage", "billing", &[]);
        let attempt = create("refunds", "refund order 1182", "billing", "refunds", &[]);
        let dead = create(
            "refunds",
            "refund order 1183",
            "billing",
            "refunds",
            &["--max-attempts", "1"],
        );
        let rejected = create("refunds", "refund order 1184", "billing", "refunds", &[]);

        let held = claim(env, &live, "billing", "300");
        let (token, secret) = token_and_secret(&held);
        env.run(&[
            "heartbeat",
            "--token",
            &token,
            "--secret",
            &secret,
            &live,
            r#"{"done":3,"of":10}"#,
        ])
        .expect(0);
        claim(env, &lapsed, "billing", "1");
        for (id, error) in [(&attempt, ATTEMPT_ERROR), (&dead, DEAD_ERROR)] {
            let held = claim(env, id, "refunds", "300");
            let (token, secret) = token_and_secret(&held);
            env.run(&["fail", "--token", &token, "--secret", &secret, id, error])
                .expect(0);
        }
        env.run(&["reject", &rejected, "refunds", REJECT_REASON])
            .expect(0);
        // The one-second lease lapses.
        std::thread::sleep(Duration::from_millis(1500));
        Scene {
            live,
            lapsed,
            attempt,
            dead,
            rejected,
        }
    }
}

/// The record's status, through the CLI.
pub fn status(env: &Env, id: &str) -> String {
    env.show(id)["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A worker takes `id` as `agent` and completes it.
pub fn complete(env: &Env, id: &str, agent: &str) {
    let held = claim(env, id, agent, "60");
    let (token, secret) = token_and_secret(&held);
    env.run(&[
        "complete", "--token", &token, "--secret", &secret, id, "refunded",
    ])
    .expect(0);
}
