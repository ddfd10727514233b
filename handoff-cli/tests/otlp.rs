//! Traces leave over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` names a collector: a command's
//! operation span reaches a collector (here a loopback listener that keeps what it is sent),
//! as protobuf on `/v1/traces`, and the command's own work is unchanged. Built with the `otlp`
//! feature, as `make test` builds the CLI.
#![cfg(feature = "otlp")]
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use common::Env;

/// One request a collector received: its request line, headers (lowercase names) and body.
struct Received {
    line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// A collector on loopback that answers every request 200 and hands each one to the test.
fn collector() -> (String, mpsc::Receiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let (sent, received) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let mut headers = Vec::new();
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                    break;
                }
                if let Some((name, value)) = header.split_once(':') {
                    headers.push((name.trim().to_lowercase(), value.trim().to_owned()));
                }
            }
            let length: usize = headers
                .iter()
                .find(|(name, _)| name == "content-length")
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
            let _ = sent.send(Received {
                line: line.trim().to_owned(),
                headers,
                body,
            });
        }
    });
    (address, received)
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

#[test]
fn a_commands_operation_span_reaches_the_collector() {
    let (endpoint, received) = collector();
    let env = Env::new();
    let mut command = env.command(&["create", "t-otlp", "ship the parser", "--json"]);
    command
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_SERVICE_NAME", "handoff-under-test");
    let run = common::finish(&mut command, None).expect(0);
    let id = run.json()["id"].as_str().unwrap().to_owned();
    // The export happens by the time the command exits (its last batch is sent at shutdown).
    let request = received.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(
        request.line.starts_with("POST /v1/traces"),
        "{}",
        request.line
    );
    assert!(
        request
            .headers
            .iter()
            .any(|(name, value)| name == "content-type" && value == "application/x-protobuf"),
        "{:?}",
        request.headers
    );
    // The span of the operation, named by it, with its fields; the service named as asked.
    for text in [
        "handoff-under-test",
        "create",
        "t-otlp",
        "sqlite",
        "outcome",
    ] {
        assert!(
            contains(&request.body, text),
            "{text} not in the exported spans"
        );
    }
    // The command did its work as without a collector.
    assert_eq!(env.show(&id)["status"], "pending");
}
