//! `--judge-cmd`: a judge outside code (docs/design.md §9). The verification gate, a verified
//! cherry-pick, a bundle's verification and the drawing of facts from a conversation ask a
//! command the operator names, beside the MCP client's own model (`sampling.rs`): any program
//! (a script around an LLM's API, a test suite, a human's prompt) that reads one item as JSON
//! on its standard input and answers on its standard output.
//!
//! The item is what a verifier in any face reads (`kind`, `text`, its fields, a conversation's
//! `messages`) with `ask` beside it: `score` wants a number from 0 to 1 or `{"score",
//! "explanation"}`; `facts` wants a list of facts (texts or `{"text", "confidence"?,
//! "source"?}`) or `{"facts": [...]}`. One process per item, run through `sh -c`, killed (its
//! whole process group) when it outlives its timeout. Secrets in the item are redacted before
//! it leaves the store unless the CLI runs with `--no-redact`, and what the command printed is
//! redacted before an error quotes it. A command that fails, times out or answers nothing
//! readable fails its item (a branch's verification reports it and goes on) or the call (a
//! pick, a bundle, the facts: nothing written), with a [`JudgeFailure`] naming `judge_cmd`.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use clap::Args;
use handoff_core::ops::{self, Arguments, JsonExtractor, JsonVerifier};
use handoff_core::{Error, Result, Store};
use serde_json::Value;

use crate::results::Outcome;

/// The operations a judge serves: as the verifier (`verify`, `verify_bundle`, `cherry_pick`
/// with `verify`) or as the extractor (`cherry_pick_to_facts`).
pub(crate) const JUDGED: &[&str] = &[
    "verify",
    "cherry_pick",
    "verify_bundle",
    "cherry_pick_to_facts",
];

/// The longest a judge command may be given per item (an hour).
pub(crate) const MAX_JUDGE_TIMEOUT_SECONDS: u64 = 60 * 60;

/// How long a judge command may take per item when `--judge-timeout` is not given.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The most a judge command may print: an answer is a score or a list of facts.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// How much of its standard error an error quotes.
const QUOTED_BYTES: usize = 400;

/// How often a running judge is looked at.
const POLL: Duration = Duration::from_millis(10);

/// `--judge-cmd` and `--judge-timeout`, on the commands that can use a judge.
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct JudgeOpts {
    /// A judge outside code, run through `sh -c` once per item: it reads the item as JSON on
    /// standard input (`kind`, `text`, its fields; `ask` is `score` or `facts`) and prints a
    /// score from 0 to 1 or {"score", "explanation"} (for `facts`: a list of facts, or
    /// {"facts": [...]}). Secrets in the item are redacted unless --no-redact is given.
    #[arg(long, value_name = "CMD", env = "HANDOFF_JUDGE_CMD")]
    pub judge_cmd: Option<String>,
    /// Kill the judge command and fail its item after this many seconds (1 to 3600; default
    /// 60).
    #[arg(
        long,
        value_name = "SECONDS",
        requires = "judge_cmd",
        value_parser = clap::value_parser!(u64).range(1..=MAX_JUDGE_TIMEOUT_SECONDS)
    )]
    pub judge_timeout: Option<u64>,
}

impl JudgeOpts {
    /// The judge these options name, if any.
    pub(crate) fn judge(&self, redact: bool) -> Option<JudgeCmd> {
        let command = self.judge_cmd.as_deref()?.trim();
        (!command.is_empty()).then(|| JudgeCmd {
            command: command.to_owned(),
            timeout: self
                .judge_timeout
                .map_or(DEFAULT_TIMEOUT, Duration::from_secs),
            redact,
        })
    }
}

/// A judge command, as the operator gave it.
#[derive(Clone, Debug)]
pub(crate) struct JudgeCmd {
    command: String,
    timeout: Duration,
    /// Whether secrets in an item are replaced before the command reads it.
    redact: bool,
}

/// Why a judge command gave no answer.
#[derive(Debug, PartialEq)]
pub(crate) enum JudgeFailure {
    /// `sh` could not be started.
    Start(String),
    /// It ran past its timeout and was killed.
    TimedOut(Duration),
    /// It exited with a failure (its code, or the signal that ended it, and the end of what it
    /// printed on standard error).
    Exited { status: String, stderr: String },
    /// It printed more than an answer can be.
    TooLong,
    /// What it printed is no answer of the kind asked.
    Unreadable { asked: &'static str, said: String },
}

impl std::fmt::Display for JudgeFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JudgeFailure::Start(e) => write!(f, "could not be started: {e}"),
            JudgeFailure::TimedOut(after) => write!(
                f,
                "timed out after {}s and was killed (--judge-timeout)",
                after.as_secs()
            ),
            JudgeFailure::Exited { status, stderr } if stderr.is_empty() => {
                write!(f, "failed ({status})")
            }
            JudgeFailure::Exited { status, stderr } => write!(f, "failed ({status}): {stderr}"),
            JudgeFailure::TooLong => write!(f, "printed more than {MAX_ANSWER_BYTES} bytes"),
            JudgeFailure::Unreadable { asked, said } => {
                write!(f, "must print {asked}, printed {said:?}")
            }
        }
    }
}

impl From<JudgeFailure> for Error {
    fn from(failure: JudgeFailure) -> Error {
        Error::invalid("judge_cmd", failure.to_string())
    }
}

/// What is asked of the judge: a score, or the facts of a conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ask {
    Score,
    Facts,
}

impl Ask {
    fn word(self) -> &'static str {
        match self {
            Ask::Score => "score",
            Ask::Facts => "facts",
        }
    }

    fn wanted(self) -> &'static str {
        match self {
            Ask::Score => "a score from 0 to 1 or {\"score\", \"explanation\"}",
            Ask::Facts => "a JSON list of facts or {\"facts\": [...]}",
        }
    }

    /// What `item` asks, by its `ask` (a score unless it says `facts`).
    pub(crate) fn of(item: &Value) -> Ask {
        match item.get("ask").and_then(Value::as_str) {
            Some("facts") => Ask::Facts,
            _ => Ask::Score,
        }
    }
}

impl JudgeCmd {
    /// The name the judge's verdicts are stored under (`verified_by`).
    pub(crate) const NAME: &'static str = "judge-cmd";

    /// Asks the command about `item` (which says what it asks): its answer, as JSON.
    pub(crate) fn ask(&self, item: &Value) -> std::result::Result<Value, JudgeFailure> {
        let asked = Ask::of(item);
        let mut item = item.clone();
        if self.redact {
            redact_strings(&mut item);
        }
        let printed = self.run(item.to_string())?;
        read_answer(asked, &printed)
    }

    /// Runs the command once with `input` on its standard input: what it printed.
    fn run(&self, input: String) -> std::result::Result<String, JudgeFailure> {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(&self.command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own process group, so that a timeout kills what it started too.
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            command.process_group(0);
        }
        let mut child = command
            .spawn()
            .map_err(|e| JudgeFailure::Start(e.to_string()))?;
        if let Some(mut stdin) = child.stdin.take() {
            // A judge that does not read its input closes the pipe: not an error of ours.
            thread::spawn(move || {
                let _ = stdin.write_all(input.as_bytes());
            });
        }
        let stdout = read_capped(child.stdout.take(), MAX_ANSWER_BYTES + 1);
        let stderr = read_capped(child.stderr.take(), 64 * 1024);
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) => {}
                Err(e) => {
                    crate::spawn::kill(&mut child);
                    return Err(JudgeFailure::Start(e.to_string()));
                }
            }
            if started.elapsed() >= self.timeout {
                crate::spawn::kill(&mut child);
                return Err(JudgeFailure::TimedOut(self.timeout));
            }
            thread::sleep(POLL);
        };
        // The pipes close when it exits; a grandchild that keeps them open is not waited for
        // past the timeout.
        let left = self.timeout.saturating_sub(started.elapsed()) + POLL;
        let printed = stdout.recv_timeout(left).unwrap_or_default();
        if !status.success() {
            let said = stderr.recv_timeout(POLL * 10).unwrap_or_default();
            let said = String::from_utf8_lossy(&said);
            return Err(JudgeFailure::Exited {
                status: match status.code() {
                    Some(code) => format!("exit code {code}"),
                    None => "killed by a signal".to_owned(),
                },
                stderr: quoted(said.trim(), self.redact),
            });
        }
        if printed.len() > MAX_ANSWER_BYTES {
            return Err(JudgeFailure::TooLong);
        }
        let printed = String::from_utf8_lossy(&printed).into_owned();
        if self.redact {
            Ok(handoff_core::redact(&printed).0)
        } else {
            Ok(printed)
        }
    }
}

/// Reads `stream` to its end (at most `cap` bytes) on a thread: the bytes come through the
/// channel when it closes.
fn read_capped(stream: Option<impl Read + Send + 'static>, cap: usize) -> mpsc::Receiver<Vec<u8>> {
    let (done, bytes) = mpsc::channel();
    thread::spawn(move || {
        let mut kept = Vec::new();
        if let Some(stream) = stream {
            let _ = stream
                .take(u64::try_from(cap).unwrap_or(u64::MAX))
                .read_to_end(&mut kept);
        }
        let _ = done.send(kept);
    });
    bytes
}

/// What an error quotes of a judge's output: its first [`QUOTED_BYTES`], redacted.
fn quoted(text: &str, redact: bool) -> String {
    let mut end = text.len().min(QUOTED_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let clipped = if end < text.len() {
        format!("{}…", &text[..end])
    } else {
        text.to_owned()
    };
    if redact {
        handoff_core::redact(&clipped).0
    } else {
        clipped
    }
}

/// A judge's printed answer to `asked`, as JSON: for a score, a bare number or a JSON
/// object or pair; for facts, a JSON list or object.
fn read_answer(asked: Ask, printed: &str) -> std::result::Result<Value, JudgeFailure> {
    let text = printed.trim();
    let unreadable = || JudgeFailure::Unreadable {
        asked: asked.wanted(),
        said: quoted(text, false),
    };
    let value: Value = serde_json::from_str(text).map_err(|_| unreadable())?;
    let fits = match asked {
        Ask::Score => matches!(value, Value::Number(_) | Value::Object(_) | Value::Array(_)),
        Ask::Facts => matches!(value, Value::Array(_) | Value::Object(_)),
    };
    fits.then_some(value).ok_or_else(unreadable)
}

/// Replaces the secrets in every string of `value`.
fn redact_strings(value: &mut Value) {
    match value {
        Value::String(text) => {
            let (redacted, found) = handoff_core::redact(text);
            if !found.is_empty() {
                *text = redacted;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_strings),
        Value::Object(fields) => fields.values_mut().for_each(redact_strings),
        _ => {}
    }
}

/// `item` with what is asked of it (`ask`).
pub(crate) fn asking(mut item: Value, asked: Ask) -> Value {
    if let Value::Object(fields) = &mut item {
        fields.insert("ask".to_owned(), asked.word().into());
    }
    item
}

/// Runs `op` (one of [`JUDGED`]) with `ask` as its judge: `ask` gets each item with its `ask`
/// and answers as a judge command prints (a score; for `cherry_pick_to_facts`, facts). The
/// verdicts are stored under `name`. `cherry_pick` asks only when its `verify` is true.
pub(crate) fn run(
    store: &Store,
    op: &str,
    args: Value,
    name: &str,
    ask: &mut dyn FnMut(Value) -> Result<Value>,
) -> Result<Outcome> {
    let mut verifier = JsonVerifier::new(name, |item: Value| ask(asking(item, Ask::Score)));
    match op {
        "verify" => {
            let args = ops::VerifyArgs::read(args, store.limits())?;
            Ok(Outcome::new(ops::Verify::run_with(
                store,
                args,
                Some(&mut verifier),
            )?))
        }
        "cherry_pick" => {
            let args = ops::CherryPickArgs::read(args, store.limits())?;
            let verifier = (args.verify == Some(true))
                .then_some(&mut verifier as &mut dyn handoff_core::curation::Verifier);
            Ok(Outcome::new(ops::CherryPick::run_with(
                store, args, verifier,
            )?))
        }
        "verify_bundle" => {
            let args = ops::VerifyBundleArgs::read(args, store.limits())?;
            Ok(Outcome::new(ops::VerifyBundle::run_with(
                store,
                args,
                Some(&mut verifier),
            )?))
        }
        "cherry_pick_to_facts" => {
            drop(verifier);
            let args = ops::CherryPickToFactsArgs::read(args, store.limits())?;
            let mut extractor =
                JsonExtractor::new(name, |item: Value| ask(asking(item, Ask::Facts)));
            Ok(Outcome::new(ops::CherryPickToFacts::run_with(
                store,
                args,
                Some(&mut extractor),
            )?))
        }
        other => Err(Error::invalid(
            "judge_cmd",
            format!("{other} takes no judge"),
        )),
    }
}

/// Runs `op` with the judge command as its judge.
pub(crate) fn run_with_command(
    store: &Store,
    op: &str,
    args: Value,
    judge: &JudgeCmd,
) -> Result<Outcome> {
    run(store, op, args, JudgeCmd::NAME, &mut |item| {
        judge.ask(&item).map_err(Error::from)
    })
}

/// What the CLI says when `verify` runs without a judge: every score is the neutral 0.5.
pub(crate) const NEUTRAL_NOTE: &str = "no judge was given (--judge-cmd): every item scored \
     the neutral 0.5, so nothing was verified or invalidated";

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn judge(command: &str, seconds: u64) -> JudgeCmd {
        JudgeCmd {
            command: command.to_owned(),
            timeout: Duration::from_secs(seconds),
            redact: true,
        }
    }

    #[test]
    fn a_judge_reads_the_item_and_answers_a_score() {
        let item = json!({"kind": "fact", "text": "tokens last 1h", "ask": "score"});
        // It reads the item on its standard input.
        let echo = judge(
            r#"grep -q '"tokens last 1h"' && echo '{"score": 0.9, "explanation": "ok"}'"#,
            10,
        );
        assert_eq!(
            echo.ask(&item),
            Ok(json!({"score": 0.9, "explanation": "ok"}))
        );
        assert_eq!(judge("echo ' 0.25 '", 10).ask(&item), Ok(json!(0.25)));
        let facts = json!({"kind": "conversation", "ask": "facts"});
        assert_eq!(
            judge(r#"echo '["a fact"]'"#, 10).ask(&facts),
            Ok(json!(["a fact"]))
        );
    }

    #[test]
    fn a_judge_that_fails_is_named_and_one_that_hangs_is_killed() {
        let item = json!({"kind": "fact", "text": "x"});
        let failure = judge("echo 'no model key' >&2; exit 3", 10)
            .ask(&item)
            .unwrap_err();
        assert_eq!(
            failure,
            JudgeFailure::Exited {
                status: "exit code 3".into(),
                stderr: "no model key".into()
            }
        );
        let err = Error::from(failure);
        assert_eq!(err.problems()[0].field, "judge_cmd");
        let started = Instant::now();
        let hung = judge("sleep 30", 1).ask(&item).unwrap_err();
        assert_eq!(hung, JudgeFailure::TimedOut(Duration::from_secs(1)));
        assert!(started.elapsed() < Duration::from_secs(10));
        let prose = judge("echo 'looks right to me'", 10)
            .ask(&item)
            .unwrap_err();
        assert!(
            matches!(prose, JudgeFailure::Unreadable { .. }),
            "{prose:?}"
        );
        let word = judge("echo '\"yes\"'", 10).ask(&item).unwrap_err();
        assert!(matches!(word, JudgeFailure::Unreadable { .. }), "{word:?}");
    }

    #[test]
    fn secrets_stay_in_the_store() {
        let key = "sk-proj-aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7n";
        let item = json!({"kind": "fact", "text": format!("the key is {key}")});
        // The judge prints what it read: the secret never reached it.
        let read = judge("cat >&2; exit 1", 10).ask(&item).unwrap_err();
        let JudgeFailure::Exited { stderr, .. } = read else {
            panic!("{read:?}")
        };
        assert!(
            !stderr.contains(key) && stderr.contains("[REDACTED"),
            "{stderr}"
        );
        let mut plain = judge("cat >&2; exit 1", 10);
        plain.redact = false;
        let JudgeFailure::Exited { stderr, .. } = plain.ask(&item).unwrap_err() else {
            panic!()
        };
        assert!(stderr.contains(key));
    }
}
