//! The rules every input obeys, all reported at once: ids and agent names, texts and lists
//! against the [`Limits`], JSON nesting and size. A handoff record's own rules, which use these,
//! are in `handoff/check.rs`; this module uses nothing above the error type.

use serde_json::Value;

use crate::error::{Error, Problem, Result};

/// The deepest nesting a limit may allow. Every reader must read back what was written:
/// serde_json stops at 128 levels, and a record travels inside envelopes (an event, an export,
/// a bundle), so stores refuse to allow more than this.
pub const MAX_DEPTH: usize = 100;

/// Size and shape limits applied to everything that comes from outside.
///
/// `max_depth` is at most [`MAX_DEPTH`]: [`Limits::check`] refuses more, and a store given more
/// uses [`MAX_DEPTH`].
#[derive(
    Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// The whole record in its JSON form, in bytes.
    pub max_record_bytes: usize,
    /// One text field or list item, in bytes.
    pub max_field_bytes: usize,
    /// Items in one list field.
    pub max_list_items: usize,
    /// Nesting depth of JSON text and of `metadata`.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_record_bytes: 256 * 1024,
            max_field_bytes: 64 * 1024,
            max_list_items: 1024,
            max_depth: 64,
        }
    }
}

impl Limits {
    /// Checks that every reader can read back what these limits let through.
    pub fn check(&self) -> Result<()> {
        let mut c = Collector::default();
        if self.max_depth > MAX_DEPTH {
            c.push(
                "max_depth",
                format!("must be at most {MAX_DEPTH}, so that every reader can read records back"),
            );
        }
        if self.max_depth == 0 {
            c.push("max_depth", "must be at least 1");
        }
        c.finish()
    }
}

/// The rule for ids and agent names.
pub const IDENT_RULE: &str =
    "must be 1 to 128 characters from A-Z a-z 0-9 . _ : @ - and not only dots";

/// Whether `text` is a valid id or agent name: `[A-Za-z0-9._:@-]{1,128}`, not `.` or `..`-like,
/// so that an id can never name a path outside a store's folder.
pub fn is_ident(text: &str) -> bool {
    (1..=128).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'@' | b'-'))
        && !text.bytes().all(|b| b == b'.')
}

/// Checks an id or agent name given as a call argument.
pub fn ident(field: &str, text: &str) -> Result<()> {
    if is_ident(text) {
        Ok(())
    } else {
        Err(Error::invalid(field, IDENT_RULE))
    }
}

/// The rule for agent names.
pub const AGENT_RULE: &str = "must be 1 to 128 printable characters, with no control, \
     bidirectional or zero-width characters and no space at either end";

/// Whether `text` is a valid agent name. Agents are named as people and SDKs name them
/// ("Tech Support", "Billing agent"), so any printable text will do; unlike ids, agent names
/// never name files. Characters that are not seen are refused: a name could otherwise pass for
/// another (`gem\u{202e}ini` and `gemini\u{200b}` both show as `gemini`).
pub fn is_agent_name(text: &str) -> bool {
    let count = text.chars().count();
    (1..=128).contains(&count)
        && !text.chars().any(|c| c.is_control() || is_unseen(c))
        && text.trim() == text
}

/// Bidirectional controls and zero-width characters: they change how a name shows, or do not
/// show at all.
fn is_unseen(c: char) -> bool {
    matches!(c,
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        | '\u{00ad}' | '\u{180e}' | '\u{200b}'..='\u{200d}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
}

/// Checks an agent name given as a call argument.
pub fn agent(field: &str, text: &str) -> Result<()> {
    if is_agent_name(text) {
        Ok(())
    } else {
        Err(Error::invalid(field, AGENT_RULE))
    }
}

/// Collects problems so that all of them are reported together.
#[derive(Default)]
pub(crate) struct Collector {
    problems: Vec<Problem>,
}

impl Collector {
    pub(crate) fn push(&mut self, field: impl Into<String>, rule: impl Into<String>) {
        self.problems.push(Problem::new(field, rule));
    }

    pub(crate) fn ident(&mut self, field: &str, text: &str) {
        if !is_ident(text) {
            self.push(field, IDENT_RULE);
        }
    }

    pub(crate) fn opt_ident(&mut self, field: &str, text: Option<&str>) {
        if let Some(text) = text {
            self.ident(field, text);
        }
    }

    pub(crate) fn opt_agent(&mut self, field: &str, text: Option<&str>) {
        if let Some(text) = text
            && !is_agent_name(text)
        {
            self.push(field, AGENT_RULE);
        }
    }

    /// The problems found, for a caller that reports them with others.
    pub(crate) fn into_problems(self) -> Vec<Problem> {
        self.problems
    }

    pub(crate) fn finish(self) -> Result<()> {
        if self.problems.is_empty() {
            Ok(())
        } else {
            Err(Error::Validation {
                problems: self.problems,
            })
        }
    }
}

pub(crate) fn text(c: &mut Collector, limits: &Limits, field: &str, value: &str) {
    text_named(c, limits, || field.to_owned(), value);
}

/// Names the field only when it breaks the rule, so that valid lists cost no formatting.
pub(crate) fn text_named(
    c: &mut Collector,
    limits: &Limits,
    field: impl FnOnce() -> String,
    value: &str,
) {
    if value.len() > limits.max_field_bytes {
        c.push(
            field(),
            format!(
                "must be at most {} bytes, is {}",
                limits.max_field_bytes,
                value.len()
            ),
        );
    }
}

/// A list of `len` items against `limits`.
pub(crate) fn count(c: &mut Collector, limits: &Limits, field: &str, len: usize) {
    if len > limits.max_list_items {
        c.push(
            field,
            format!(
                "must have at most {} items, has {len}",
                limits.max_list_items
            ),
        );
    }
}

pub(crate) fn list(c: &mut Collector, limits: &Limits, field: &str, items: &[String]) {
    count(c, limits, field, items.len());
    for (i, item) in items.iter().enumerate() {
        text_named(c, limits, || format!("{field}[{i}]"), item);
    }
}

/// The length of a value's JSON form, counted without building it.
pub(crate) fn json_size(value: &impl serde::Serialize) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    }
}

/// The depth at which `metadata` first exceeds `max`, walking iteratively so that a hostile
/// value cannot exhaust the stack.
/// Every text and list inside `value` that breaks `limits`, named by its path under `prefix`
/// (`protocol.worker_report.accomplished[2]`; with an empty prefix, `accomplished[2]`), and
/// the nesting when it is too deep. For typed bodies whose every text a person writes: each
/// string is a field.
pub(crate) fn sizes(prefix: &str, value: &Value, limits: &Limits) -> Vec<Problem> {
    let mut c = Collector::default();
    let mut stack: Vec<(String, &Value, usize)> = vec![(prefix.to_owned(), value, 0)];
    let mut too_deep = false;
    while let Some((path, value, depth)) = stack.pop() {
        if depth > limits.max_depth {
            too_deep = true;
            continue;
        }
        match value {
            Value::String(text) => text_named(&mut c, limits, || path.clone(), text),
            Value::Array(items) => {
                if items.len() > limits.max_list_items {
                    c.push(
                        path.clone(),
                        format!(
                            "must have at most {} items, has {}",
                            limits.max_list_items,
                            items.len()
                        ),
                    );
                }
                stack.extend(
                    items
                        .iter()
                        .enumerate()
                        .rev()
                        .map(|(i, item)| (format!("{path}[{i}]"), item, depth + 1)),
                );
            }
            Value::Object(map) => stack.extend(
                map.iter()
                    .rev()
                    .map(|(key, item)| (joined(&path, key), item, depth + 1)),
            ),
            _ => {}
        }
    }
    if too_deep {
        c.push(
            if prefix.is_empty() {
                "(arguments)"
            } else {
                prefix
            },
            format!("must nest at most {} levels", limits.max_depth),
        );
    }
    c.into_problems()
}

fn joined(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

pub(crate) fn deeper_than(metadata: &serde_json::Map<String, Value>, max: usize) -> Option<usize> {
    let mut stack: Vec<(&Value, usize)> = metadata.values().map(|v| (v, 1)).collect();
    while let Some((value, depth)) = stack.pop() {
        if depth > max {
            return Some(depth);
        }
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|v| (v, depth + 1))),
            _ => {}
        }
    }
    None
}

impl Collector {
    /// Checks JSON a caller gives beside a record (a task's context, metadata, artifacts,
    /// issues): nested at most `max_depth` levels (counted as a record's `metadata` is) and at
    /// most `max_record_bytes` as JSON, so that every reader can read it back.
    pub(crate) fn json(&mut self, field: &str, values: &[&Value], limits: &Limits) {
        let mut stack: Vec<(&Value, usize)> = values.iter().map(|v| (*v, 1)).collect();
        while let Some((value, depth)) = stack.pop() {
            if depth > limits.max_depth {
                self.push(
                    field,
                    format!("must nest at most {} levels", limits.max_depth),
                );
                return;
            }
            match value {
                Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth + 1))),
                Value::Object(map) => stack.extend(map.values().map(|v| (v, depth + 1))),
                _ => {}
            }
        }
        let size: usize = values.iter().map(json_size).sum();
        if size > limits.max_record_bytes {
            self.push(
                field,
                format!(
                    "must be at most {} bytes as JSON, is {size}",
                    limits.max_record_bytes
                ),
            );
        }
    }
}

/// Where a field of a parsed document is named from: the document's own fields as they are
/// (`goal`, `metadata.x`), or under the document's name (`policy.max_handoffs`).
#[derive(Clone, Copy)]
pub(crate) enum FieldNames {
    Bare,
    Prefixed,
}

/// Parses JSON text into `T` after [`check_json_text`]; a type error names the field by its
/// path (the document itself is `root`), and trailing text is refused.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(
    root: &str,
    names: FieldNames,
    json: &str,
    limits: &Limits,
) -> Result<T> {
    check_json_text(root, json, limits)?;
    // The plain parser first: naming a broken field's path costs every field of a good
    // document, so it is paid only when the document turns out to be broken.
    if let Ok(value) = serde_json::from_str(json) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_str(json);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|err| {
        let path = err.path().to_string();
        let field = match names {
            _ if path == "." => root.to_owned(),
            FieldNames::Bare => path,
            FieldNames::Prefixed => format!("{root}.{path}"),
        };
        Error::invalid(field, err.into_inner().to_string())
    })?;
    de.end()
        .map_err(|err| Error::invalid(root, err.to_string()))?;
    Ok(value)
}

/// Checks JSON text for size and nesting before anything parses it, so that neither a huge
/// document nor a deeply nested one costs more than one linear scan.
pub fn check_json_text(field: &str, json: &str, limits: &Limits) -> Result<()> {
    if json.len() > limits.max_record_bytes {
        return Err(Error::invalid(
            field,
            format!(
                "must be at most {} bytes as JSON, is {}",
                limits.max_record_bytes,
                json.len()
            ),
        ));
    }
    let bytes = json.as_bytes();
    // Text cannot nest deeper than it has brackets. Counting them is one vectorised search, so
    // a typical document (a provider response has a dozen) skips the exact scan below.
    if fewer_openers_than(bytes, limits.max_depth + 2) {
        return Ok(());
    }
    let mut depth = 0usize;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                // Skip the string's body in one search for its closing quote or an escape.
                at += 1;
                loop {
                    match memchr::memchr2(b'"', b'\\', &bytes[at.min(bytes.len())..]) {
                        Some(offset) if bytes[at + offset] == b'\\' => at += offset + 2,
                        Some(offset) => {
                            at += offset;
                            break;
                        }
                        None => return Ok(()), // unterminated: the parser will say so
                    }
                }
            }
            b'[' | b'{' => {
                depth += 1;
                // The record itself is one level; its fields may nest `max_depth` more.
                if depth > limits.max_depth + 1 {
                    return Err(Error::invalid(
                        field,
                        format!("JSON must nest at most {} levels", limits.max_depth),
                    ));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        at += 1;
    }
    Ok(())
}

/// Whether `bytes` holds fewer than `limit` of `[` and `{`, in or out of strings; the search
/// stops at the `limit`th.
fn fewer_openers_than(bytes: &[u8], limit: usize) -> bool {
    memchr::memchr2_iter(b'[', b'{', bytes).take(limit).count() < limit
}

/// A JSON value's kind, in words (`a string`, `an array`, `null`, ...), for a rule that names
/// what it was given.
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idents() {
        for good in [
            "a",
            "claude",
            "gemini-2.5@google",
            "task:42",
            "A_b.c",
            &"x".repeat(128),
        ] {
            assert!(is_ident(good), "{good}");
        }
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "a/b",
            "a b",
            "é",
            "a\0",
            &"x".repeat(129),
        ] {
            assert!(!is_ident(bad), "{bad:?}");
        }
    }

    #[test]
    fn nesting_is_measured_outside_strings() {
        let limits = Limits {
            max_depth: 2,
            ..Limits::default()
        };
        assert!(check_json_text("r", r#"{"a":{"b":{"c":1}}}"#, &limits).is_ok());
        assert!(check_json_text("r", r#"{"a":{"b":{"c":[1]}}}"#, &limits).is_err());
        assert!(check_json_text("r", r#"{"a":"[[[[[[\"[[[["}"#, &limits).is_ok());
        // With few brackets the exact scan is skipped; at the limit it decides.
        assert!(check_json_text("r", "[[[]]]", &limits).is_ok());
        assert!(check_json_text("r", "[[[[]]]]", &limits).is_err());
        assert!(check_json_text("r", "[[[]]][[[]]]", &limits).is_ok());
        assert!(fewer_openers_than(b"[{]}", 3));
        assert!(!fewer_openers_than(b"[{[", 3));
        assert!(!fewer_openers_than(&[b'['; 10_000], 5_000));
    }
}
