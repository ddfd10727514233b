//! The line guard in front of the MCP server: every request gets an answer.
//!
//! rmcp's stdio transport drops a line it cannot parse (invalid UTF-8, a lone surrogate,
//! `1e400`, `NaN`, nesting past serde_json's 128 levels), a line longer than its limit, and
//! answers a well-formed line of the wrong shape (array `params`) without its id, so the client
//! waits forever. This layer reads stdin itself, a line at a time with a size cap, answers each
//! malformed request with the JSON-RPC error (`-32700` parse error, `-32600` invalid request,
//! `-32602` invalid params) and the request's id whenever it can be read, even from a line that
//! is not JSON, and passes every good line on to rmcp unchanged. The server keeps serving.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, JsonRpcRequest,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest line read as a message (8 MiB; a record is at most 256 KiB by default).
pub(crate) const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;
/// How much of an oversized line is kept to find its id.
const KEPT_PREFIX: usize = 64 * 1024;

pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// The standard output both the guard's answers and the server's messages go to, a whole line
/// at a time.
pub(crate) type SharedOut<W> = Arc<Mutex<W>>;

/// What to do with one line.
#[derive(Debug, PartialEq)]
pub(crate) enum Verdict {
    /// A message the server understands: pass it on.
    Pass,
    /// A malformed request: answer it with this error response.
    Answer(Value),
    /// Nothing to answer (an empty line, a malformed notification or response).
    Ignore,
}

/// One line read with a cap.
enum Read {
    Line,
    /// Longer than the cap: dropped, but for its first bytes.
    Oversized,
    Eof,
}

/// Reads a `\n`-terminated line into `line`, never holding more than `cap` bytes of it: the
/// rest of an oversized line is read and dropped (its first [`KEPT_PREFIX`] bytes are kept).
async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<Read> {
    line.clear();
    let mut oversized = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            // A last line without its newline is still a message.
            return Ok(if oversized {
                Read::Oversized
            } else if line.is_empty() {
                Read::Eof
            } else {
                Read::Line
            });
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let take = newline.map_or(available.len(), |at| at + 1);
        let body = &available[..newline.unwrap_or(take)];
        if !oversized && line.len() + body.len() > cap {
            oversized = true;
            line.truncate(KEPT_PREFIX);
        }
        if !oversized {
            line.extend_from_slice(body);
        } else if line.len() < KEPT_PREFIX {
            let room = KEPT_PREFIX - line.len();
            line.extend_from_slice(&body[..body.len().min(room)]);
        }
        reader.consume(take);
        if newline.is_some() {
            return Ok(if oversized {
                Read::Oversized
            } else {
                Read::Line
            });
        }
    }
}

/// Reads `input` line by line, answers malformed requests on `out` and passes the rest to
/// `server`. Returns at the end of the input (or when the server stops reading), dropping
/// `server` so that it sees the end too.
pub(crate) async fn guard<R, S, W>(input: R, mut server: S, out: SharedOut<W>)
where
    R: AsyncRead + Unpin,
    S: AsyncWrite + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut line = Vec::new();
    loop {
        let verdict = match read_line(&mut reader, &mut line, MAX_LINE_BYTES).await {
            Ok(Read::Eof) | Err(_) => break,
            Ok(Read::Oversized) => Verdict::Answer(error(
                scan_id(&line),
                INVALID_REQUEST,
                format!("Invalid Request: the message is longer than {MAX_LINE_BYTES} bytes"),
            )),
            Ok(Read::Line) => check(&line),
        };
        match verdict {
            Verdict::Pass => {
                line.push(b'\n');
                let passed = server.write_all(&line).await;
                if passed.is_err() || server.flush().await.is_err() {
                    break;
                }
            }
            Verdict::Answer(response) => {
                let mut text = response.to_string();
                text.push('\n');
                if write_line(&out, text.as_bytes()).await.is_err() {
                    break;
                }
            }
            Verdict::Ignore => {}
        }
    }
    let _ = server.shutdown().await;
}

/// Copies the server's messages to `out`, a whole line at a time (so that they never
/// interleave with the guard's answers).
pub(crate) async fn forward<R, W>(from_server: R, out: SharedOut<W>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::new(from_server);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                if write_line(&out, &line).await.is_err() {
                    break;
                }
            }
        }
    }
}

async fn write_line<W: AsyncWrite + Unpin>(out: &SharedOut<W>, line: &[u8]) -> std::io::Result<()> {
    let mut out = out.lock().await;
    out.write_all(line).await?;
    out.flush().await
}

/// A JSON-RPC error response.
fn error(id: Value, code: i64, message: String) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// Judges one line (without its newline).
pub(crate) fn check(line: &[u8]) -> Verdict {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Ignore;
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(e) => {
            let id = scan_id(line);
            return Verdict::Answer(if e.to_string().contains("recursion limit") {
                error(
                    id,
                    INVALID_REQUEST,
                    "Invalid Request: nested deeper than 128 levels".to_owned(),
                )
            } else {
                error(id, PARSE_ERROR, format!("Parse error: {e}"))
            });
        }
    };
    let Value::Object(map) = &value else {
        return Verdict::Answer(error(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: a message is one JSON object (batches are not supported)".to_owned(),
        ));
    };
    let id = map.get("id");
    let id_ok = match id {
        None | Some(Value::String(_)) => true,
        Some(Value::Number(n)) => n.is_i64() || n.is_u64(),
        Some(_) => false,
    };
    if !id_ok {
        return Verdict::Answer(error(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: id must be a string or an integer".to_owned(),
        ));
    }
    // A malformed notification or response gets no answer (JSON-RPC answers requests only).
    let answer = |code: i64, message: String| match id {
        Some(id) => Verdict::Answer(error(id.clone(), code, message)),
        None => Verdict::Ignore,
    };
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return answer(
            INVALID_REQUEST,
            "Invalid Request: jsonrpc must be \"2.0\"".to_owned(),
        );
    }
    match map.get("method") {
        Some(Value::String(_)) if map.get("params").is_some_and(|p| !p.is_object()) => {
            return answer(
                INVALID_PARAMS,
                "Invalid params: params must be an object".to_owned(),
            );
        }
        Some(Value::String(_)) => {}
        Some(_) => {
            return answer(
                INVALID_REQUEST,
                "Invalid Request: method must be a string".to_owned(),
            );
        }
        None if !(map.contains_key("result") || map.contains_key("error")) => {
            return answer(
                INVALID_REQUEST,
                "Invalid Request: neither a request nor a response".to_owned(),
            );
        }
        None => {}
    }
    // What rmcp would not take, it would drop or answer without the id; a standard method
    // whose params do not fit it, rmcp takes for an unknown method (-32601). Answer both here.
    match serde_json::from_value::<ClientJsonRpcMessage>(value.clone()) {
        Ok(JsonRpcMessage::Request(JsonRpcRequest {
            request: ClientRequest::CustomRequest(custom),
            ..
        })) if STANDARD_REQUESTS.contains(&custom.method.as_str()) => {
            let why = match (custom.method.as_str(), map.get("params")) {
                ("tools/call", Some(params)) => {
                    serde_json::from_value::<CallToolRequestParams>(params.clone())
                        .err()
                        .map_or_else(String::new, |e| format!(": {e}"))
                }
                ("tools/call", None) => ": missing params".to_owned(),
                _ => String::new(),
            };
            answer(
                INVALID_PARAMS,
                format!("Invalid params for {}{why}", custom.method),
            )
        }
        Ok(_) => Verdict::Pass,
        Err(e) => answer(INVALID_PARAMS, format!("Invalid params: {e}")),
    }
}

/// The client requests rmcp parses into their own types: one that comes out as a custom
/// request had params that did not fit.
const STANDARD_REQUESTS: &[&str] = &[
    "initialize",
    "ping",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/templates/list",
    "tools/call",
    "tools/list",
];

/// The top-level `"id"` of a message that could not be parsed (or was cut short), if it can
/// be read: a string, or an integer. Scans bytes, without recursion, so that any line will do.
pub(crate) fn scan_id(line: &[u8]) -> Value {
    let mut s = Scanner { bytes: line, at: 0 };
    s.id().unwrap_or(Value::Null)
}

struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn peek(&mut self) -> Option<u8> {
        while self.bytes.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
        self.bytes.get(self.at).copied()
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Skips a string starting at its opening quote; returns its raw bytes, quotes included.
    fn string(&mut self) -> Option<&[u8]> {
        let start = self.at;
        self.expect(b'"')?;
        loop {
            match self.bytes.get(self.at)? {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return self.bytes.get(start..self.at);
                }
                _ => self.at += 1,
            }
        }
    }

    /// Skips any value, nested ones included, without recursion.
    fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.at += 1;
                }
                b'}' | b']' => {
                    depth = depth.checked_sub(1)?;
                    self.at += 1;
                }
                b',' | b':' if depth > 0 => self.at += 1,
                _ => {
                    let start = self.at;
                    while self
                        .bytes
                        .get(self.at)
                        .is_some_and(|b| !b",:]} \t\r\n".contains(b))
                    {
                        self.at += 1;
                    }
                    if self.at == start {
                        return None;
                    }
                }
            }
            if depth == 0 {
                return Some(());
            }
        }
    }

    fn id(&mut self) -> Option<Value> {
        self.expect(b'{')?;
        loop {
            let key = self.string()?;
            let is_id = key == b"\"id\"";
            self.expect(b':')?;
            if is_id {
                self.peek()?;
                let start = self.at;
                self.skip_value()?;
                let value: Value = serde_json::from_slice(self.bytes.get(start..self.at)?).ok()?;
                return match &value {
                    Value::String(_) => Some(value),
                    Value::Number(n) if n.is_i64() || n.is_u64() => Some(value),
                    _ => None,
                };
            }
            self.skip_value()?;
            match self.peek()? {
                b',' => self.at += 1,
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &[u8]) -> Value {
        match check(line) {
            Verdict::Answer(response) => response,
            other => panic!("{}: {other:?}", String::from_utf8_lossy(line)),
        }
    }

    #[test]
    fn the_id_is_read_from_lines_that_are_not_json() {
        assert_eq!(
            scan_id(br#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"a":NaN}}"#),
            json!(7)
        );
        assert_eq!(
            scan_id(br#"{"method":"x","params":{"id":3,"a":[1,{"b":"}"}]},"id":"r-1"}"#),
            json!("r-1")
        );
        assert_eq!(
            scan_id(b"{\"id\":12,\"params\":{\"a\":\"\xff\"}}"),
            json!(12)
        );
        assert_eq!(
            scan_id(br#"{"jsonrpc":"2.0","params":{"a":1e400},"id":5}"#),
            json!(5)
        );
        assert_eq!(scan_id(br#"{"id":1.5}"#), Value::Null);
        assert_eq!(scan_id(br#"{"id":null}"#), Value::Null);
        assert_eq!(scan_id(b"garbage"), Value::Null);
        assert_eq!(
            scan_id(
                br#"{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"goal":"aaaa"#
            ),
            Value::Null
        );
        assert_eq!(
            scan_id(br#"{"jsonrpc":"2.0","id":9,"params":{"x":"aaaa"#),
            json!(9)
        );
    }

    #[test]
    fn every_malformed_request_is_answered_with_its_id() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"handoff_list","arguments":{{"x":{}1{}}}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let cases: Vec<(Vec<u8>, i64)> = vec![
            (b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\"}}".to_vec(), PARSE_ERROR),
            (br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"\ud800"}}"#.to_vec(), PARSE_ERROR),
            (br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","arguments":{"n":1e400}}}"#.to_vec(), PARSE_ERROR),
            (br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","arguments":{"n":NaN}}}"#.to_vec(), PARSE_ERROR),
            (br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":["handoff_list"]}"#.to_vec(), INVALID_PARAMS),
            (br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{}}"#.to_vec(), INVALID_PARAMS),
            (br#"{"jsonrpc":"1.0","id":4,"method":"tools/list"}"#.to_vec(), INVALID_REQUEST),
            (br#"{"jsonrpc":"2.0","id":4,"method":7}"#.to_vec(), INVALID_REQUEST),
            (deep.into_bytes(), INVALID_REQUEST),
        ];
        for (line, code) in cases {
            let response = answer(&line);
            assert_eq!(response["id"], 4, "{response}");
            assert_eq!(response["error"]["code"], code, "{response}");
        }
        assert_eq!(answer(b"[1,2]")["error"]["code"], INVALID_REQUEST);
        assert_eq!(
            answer(br#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#)["id"],
            Value::Null
        );
    }

    #[test]
    fn good_lines_pass_and_bad_notifications_are_not_answered() {
        assert_eq!(
            check(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#),
            Verdict::Pass
        );
        assert_eq!(
            check(br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#),
            Verdict::Pass
        );
        assert_eq!(
            check(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Verdict::Pass
        );
        assert_eq!(check(b"  \r"), Verdict::Ignore);
        assert_eq!(
            check(br#"{"jsonrpc":"2.0","method":"notifications/initialized","params":[1]}"#),
            Verdict::Ignore
        );
    }

    #[test]
    fn an_oversized_line_is_answered_and_the_next_one_passes() {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(oversized());
    }

    async fn oversized() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":21,\"method\":\"tools/call\",\"params\":{{\"name\":\"{}\"}}}}\n",
            "a".repeat(MAX_LINE_BYTES + 10)
        );
        let good = "{\"jsonrpc\":\"2.0\",\"id\":22,\"method\":\"ping\"}\n";
        let input = format!("{big}{good}");
        let (server_side, mut server_end) = tokio::io::duplex(1 << 16);
        let out = Arc::new(Mutex::new(Vec::<u8>::new()));
        let task = tokio::spawn(guard(
            std::io::Cursor::new(input.into_bytes()),
            server_side,
            out.clone(),
        ));
        let mut passed = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut server_end, &mut passed)
            .await
            .expect("read");
        task.await.expect("guard");
        assert_eq!(passed, good);
        let answered: Value =
            serde_json::from_slice(out.lock().await.as_slice()).expect("one answer");
        assert_eq!(answered["id"], 21);
        assert_eq!(answered["error"]["code"], INVALID_REQUEST);
    }
}
