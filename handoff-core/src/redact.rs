//! Secret redaction: replaces API keys, tokens, private keys and password pairs with
//! `[REDACTED:<rule>]` before text reaches another agent.
//!
//! The built-in rules follow the shape of the rule set maintained by the gitleaks project
//! (<https://github.com/gitleaks/gitleaks>, MIT licence, © Zachary Rice): each rule has
//! keywords, and a rule's regular expression runs only when one of its keywords occurs in the
//! text. One Aho-Corasick pass finds the keywords, so text with no secrets costs a single
//! linear scan however many rules there are. The expressions here are our own, written for
//! the same token formats.

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::protocol::ProtocolBody;
use crate::record::{Handoff, Reason};

/// One secret found and replaced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct Redaction {
    /// The rule that found it (`openai-api-key`, ...).
    pub rule: String,
    /// Byte offset of the secret in the input text.
    pub start: usize,
    /// Byte offset just past the secret in the input text.
    pub end: usize,
}

/// A redaction rule: keywords that must occur for the rule to run, and an expression whose
/// first capture group (or whole match, when it has none) is the secret.
#[derive(Clone, Debug)]
pub struct Rule {
    id: String,
    keywords: Vec<String>,
    regex: Regex,
}

impl Rule {
    /// A rule named `id` (`[a-z0-9-]+`); `keywords` are matched case-insensitively, and a rule
    /// without keywords runs on every text.
    pub fn new(id: &str, pattern: &str, keywords: &[&str]) -> Result<Rule> {
        if id.is_empty()
            || !id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(Error::invalid(
                "rule.id",
                "must be 1 or more characters from a-z 0-9 -",
            ));
        }
        let regex = regex::RegexBuilder::new(pattern)
            .size_limit(1 << 22)
            .build()
            .map_err(|e| Error::invalid("rule.pattern", e.to_string()))?;
        Ok(Rule {
            id: id.to_owned(),
            keywords: keywords.iter().map(|k| k.to_ascii_lowercase()).collect(),
            regex,
        })
    }

    /// The rule's name, as it appears in `[REDACTED:<id>]`.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// What replaces a secret; redacting a marker again leaves it alone.
const MARKER_PREFIX: &str = "[REDACTED:";

/// Finds and replaces secrets. Build once and reuse: construction compiles every rule.
#[derive(Clone, Debug)]
pub struct Redactor {
    rules: Vec<Rule>,
    /// Every rule's keywords, for one pass over the text.
    keywords: AhoCorasick,
    /// For each keyword pattern, the rule it belongs to.
    keyword_rule: Vec<usize>,
    /// Rules without keywords, run on every text.
    unconditional: Vec<usize>,
}

impl Default for Redactor {
    fn default() -> Self {
        DEFAULT.clone()
    }
}

static DEFAULT: LazyLock<Redactor> = LazyLock::new(|| {
    // Constants, compiled by a test on every build: a failure here is a bug in this file.
    Redactor::with_rules(builtin_rules()).expect("the built-in redaction rules compile")
});

/// Redacts `text` with the built-in rules.
pub fn redact(text: &str) -> (String, Vec<Redaction>) {
    DEFAULT.redact(text)
}

impl Redactor {
    /// A redactor with exactly these rules.
    pub fn with_rules(rules: Vec<Rule>) -> Result<Redactor> {
        let mut patterns = Vec::new();
        let mut keyword_rule = Vec::new();
        let mut unconditional = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            if rule.keywords.is_empty() {
                unconditional.push(i);
            }
            for keyword in &rule.keywords {
                patterns.push(keyword.clone());
                keyword_rule.push(i);
            }
        }
        let keywords = AhoCorasickBuilder::new()
            // A full DFA: the fastest scan, and the keyword set is small.
            .kind(Some(AhoCorasickKind::DFA))
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(&patterns)
            .map_err(|e| Error::invalid("rule.keywords", e.to_string()))?;
        Ok(Redactor {
            rules,
            keywords,
            keyword_rule,
            unconditional,
        })
    }

    /// The built-in rules plus `rule`.
    pub fn with_rule(&self, rule: Rule) -> Result<Redactor> {
        let mut rules = self.rules.clone();
        rules.push(rule);
        Redactor::with_rules(rules)
    }

    /// The ids of the rules, in order.
    pub fn rule_ids(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().map(Rule::id)
    }

    /// Replaces every secret in `text` with `[REDACTED:<rule>]` and reports where each was.
    /// When two findings overlap, the one starting first wins (the longer one on a tie).
    pub fn redact(&self, text: &str) -> (String, Vec<Redaction>) {
        let found = self.find(text);
        (replace(text, &found), found)
    }

    /// Where the secrets in `text` are, without replacing them: ordered, never overlapping.
    ///
    /// A marker can give a rule the word boundary it needs (`…key]password=…`), so the
    /// redacted text is searched again until nothing new appears; what a later pass finds is
    /// reported at its place in `text`. Redacting the result again therefore changes nothing.
    pub fn find(&self, text: &str) -> Vec<Redaction> {
        const PASSES: usize = 4;
        let mut found = self.find_once(text);
        for _ in 0..PASSES {
            if found.is_empty() {
                break;
            }
            let clean = replace(text, &found);
            let more: Vec<Redaction> = self
                .find_once(&clean)
                .into_iter()
                .filter_map(|r| {
                    let (start, end) = to_original(&found, r.start, r.end)?;
                    Some(Redaction { start, end, ..r })
                })
                .collect();
            if more.is_empty() {
                break;
            }
            found.extend(more);
            found = without_overlaps(found);
        }
        found
    }

    fn find_once(&self, text: &str) -> Vec<Redaction> {
        let mut wanted = vec![false; self.rules.len()];
        for i in &self.unconditional {
            wanted[*i] = true;
        }
        // Overlapping keyword matches are needed: `sk-ant-` must also see `sk-`.
        for hit in self.keywords.find_overlapping_iter(text) {
            wanted[self.keyword_rule[hit.pattern().as_usize()]] = true;
        }
        let mut found: Vec<Redaction> = Vec::new();
        for (i, rule) in self.rules.iter().enumerate().filter(|(i, _)| wanted[*i]) {
            // Each search resumes where the last secret ended, not where its match ended: what
            // a pattern needs after a secret (`@` and a host) may begin the next one.
            let mut at = 0;
            while let Some(caps) = rule.regex.captures_at(text, at) {
                let Some(whole) = caps.get(0) else { break };
                let secret = caps.get(1).unwrap_or(whole);
                at = if secret.end() > at {
                    secret.end()
                } else if whole.end() > at {
                    whole.end()
                } else {
                    // An empty match: step over one character.
                    at + text[at..].chars().next().map_or(1, char::len_utf8)
                };
                if secret.is_empty()
                    || secret.as_str().starts_with(MARKER_PREFIX)
                    || is_placeholder(secret.as_str())
                {
                    continue;
                }
                found.push(Redaction {
                    rule: self.rules[i].id.clone(),
                    start: secret.start(),
                    end: secret.end(),
                });
                if at >= text.len() {
                    break;
                }
            }
        }
        without_overlaps(found)
    }
}

impl Redactor {
    /// Replaces the secrets in `text`, in place.
    fn clean(&self, text: &mut String) {
        let found = self.find(text);
        if !found.is_empty() {
            *text = replace(text, &found);
        }
    }

    /// Redacts every string inside a JSON value; keys are left alone (they name, not carry).
    fn clean_json(&self, value: &mut serde_json::Value) {
        // Iterative, so that nesting depth costs heap, not stack.
        let mut pending = vec![value];
        while let Some(value) = pending.pop() {
            match value {
                serde_json::Value::String(text) => self.clean(text),
                serde_json::Value::Array(items) => pending.extend(items.iter_mut()),
                serde_json::Value::Object(map) => pending.extend(map.values_mut()),
                _ => {}
            }
        }
    }
}

impl Redactor {
    /// A protocol body with every text redacted (enum values and times hold no secret and
    /// come back as they were). A body that would not read back is left out rather than
    /// let through unredacted.
    fn clean_protocol(&self, body: &ProtocolBody) -> Option<ProtocolBody> {
        let mut value = serde_json::to_value(body).ok()?;
        self.clean_json(&mut value);
        serde_json::from_value(value).ok()
    }
}

impl Handoff {
    /// A copy with secrets redacted by the built-in rules in every field a person or a model
    /// reads: the goal and progress, every list item, the instructions, the outcome, the
    /// message of an `error:` reason, agent names and every string inside `metadata` and the
    /// `protocol` body. Ids are kept, so the copy still names the record.
    ///
    /// This is what leaves the library for an LLM or a terminal (docs/design.md §2); stored records,
    /// [`Handoff::to_json`] and exports keep what the caller wrote.
    pub fn redacted(&self) -> Handoff {
        self.redacted_with(&DEFAULT)
    }

    /// [`Handoff::redacted`] with the rules of `redactor`.
    pub fn redacted_with(&self, redactor: &Redactor) -> Handoff {
        let mut h = self.clone();
        for text in [&mut h.goal, &mut h.progress_summary] {
            redactor.clean(text);
        }
        for text in [
            &mut h.instructions,
            &mut h.outcome,
            &mut h.from_agent,
            &mut h.to_agent,
            &mut h.claimed_by,
        ]
        .into_iter()
        .flatten()
        {
            redactor.clean(text);
        }
        for list in [
            &mut h.completed_steps,
            &mut h.pending_steps,
            &mut h.key_decisions,
            &mut h.assumptions,
            &mut h.warnings,
            &mut h.unresolved_errors,
            &mut h.blockers,
            &mut h.modified_files,
            &mut h.locked_files,
            &mut h.priority_items,
            &mut h.success_criteria,
        ] {
            list.iter_mut().for_each(|text| redactor.clean(text));
        }
        if let Reason::FatalError { message } = &mut h.reason {
            redactor.clean(message);
        }
        for value in h.metadata.values_mut() {
            redactor.clean_json(value);
        }
        if let Some(body) = h.protocol.take() {
            h.protocol = redactor.clean_protocol(&body).map(Box::new);
        }
        h
    }
}

/// Orders findings; where two overlap, the one starting first wins (the longer on a tie).
fn without_overlaps(mut found: Vec<Redaction>) -> Vec<Redaction> {
    found.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    let mut kept: Vec<Redaction> = Vec::with_capacity(found.len());
    for r in found {
        if kept.last().is_none_or(|last| r.start >= last.end) {
            kept.push(r);
        }
    }
    kept
}

/// Where `start..end` of the text redacted with `found` lies in the original text; `None` when
/// it touches a marker.
fn to_original(found: &[Redaction], start: usize, end: usize) -> Option<(usize, usize)> {
    let mut shift: isize = 0;
    for r in found {
        let marker_start = (r.start as isize + shift) as usize;
        let marker_end = marker_start + MARKER_PREFIX.len() + r.rule.len() + 1;
        if end <= marker_start {
            break;
        }
        if start < marker_end {
            return None;
        }
        shift += (marker_end - marker_start) as isize - (r.end - r.start) as isize;
    }
    Some((
        (start as isize - shift) as usize,
        (end as isize - shift) as usize,
    ))
}

/// `text` with each of `found` (ordered, not overlapping) replaced by its marker.
pub fn replace(text: &str, found: &[Redaction]) -> String {
    let mut clean = String::with_capacity(text.len());
    let mut at = 0;
    for r in found {
        clean.push_str(&text[at..r.start]);
        clean.push_str(MARKER_PREFIX);
        clean.push_str(&r.rule);
        clean.push(']');
        at = r.end;
    }
    clean.push_str(&text[at..]);
    clean
}

/// Values that assignment-style rules meet in configuration and prose but that are never
/// secrets (`secret: true`, `password: required`).
fn is_placeholder(value: &str) -> bool {
    const WORDS: [&str; 12] = [
        "true",
        "false",
        "null",
        "none",
        "nil",
        "undefined",
        "required",
        "optional",
        "empty",
        "string",
        "example",
        "redacted",
    ];
    WORDS.iter().any(|w| value.eq_ignore_ascii_case(w))
}

/// The built-in rules: `(id, pattern, keywords)`. A secret starts after anything but a letter
/// or a digit, not at a `\b`: for `\b`, `_` is part of a word, and secrets are glued to names
/// by it (`DB_PASSWORD=...`, `context_limit_ghp_...`, `x_AKIA...`).
const BUILTIN: &[(&str, &str, &[&str])] = &[
    (
        "private-key",
        r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S]{16,}?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----",
        &["private key"],
    ),
    (
        "anthropic-api-key",
        r"(?:^|[^A-Za-z0-9])(sk-ant-(?:api|admin|sid)\d{2}-[A-Za-z0-9_-]{20,})",
        &["sk-ant-"],
    ),
    (
        "openai-api-key",
        r"(?:^|[^A-Za-z0-9])(sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,})",
        &["sk-"],
    ),
    (
        "aws-access-key-id",
        r"(?:^|[^A-Za-z0-9])((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})(?:[^A-Za-z0-9]|$)",
        &["akia", "asia", "abia", "acca", "a3t"],
    ),
    (
        "aws-secret-access-key",
        r#"(?i)aws_?secret_?(?:access_?)?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})(?:[^A-Za-z0-9/+=]|$)"#,
        &["aws_secret", "awssecret", "aws_secret_access_key"],
    ),
    (
        "github-token",
        r"(?:^|[^A-Za-z0-9])((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
    ),
    (
        "slack-token",
        r"(?:^|[^A-Za-z0-9])(xox[abposr]-(?:[0-9A-Za-z]+-){1,4}[0-9A-Za-z]{6,}|xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+)",
        &[
            "xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xapp-",
        ],
    ),
    (
        "slack-webhook",
        r"(https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,})",
        &["hooks.slack.com"],
    ),
    // Google keys have exactly 35 characters after `AIza`.
    (
        "google-api-key",
        r"(?:^|[^A-Za-z0-9])(AIza[0-9A-Za-z_-]{35})",
        &["aiza"],
    ),
    (
        "stripe-key",
        r"(?:^|[^A-Za-z0-9])((?:sk|rk|pk)_(?:test|live|prod)_[0-9A-Za-z]{10,})",
        &[
            "sk_test_", "sk_live_", "sk_prod_", "rk_test_", "rk_live_", "rk_prod_", "pk_live_",
            "pk_test_",
        ],
    ),
    (
        "bundle-secret-key",
        r"(?:^|[^A-Za-z0-9])(ed25519-secret:[0-9A-Fa-f]{64})",
        &["ed25519-secret:"],
    ),
    (
        "jwt",
        r"(?:^|[^A-Za-z0-9])(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})",
        &["eyj"],
    ),
    (
        "url-password",
        r"(?:^|[^A-Za-z0-9])[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@\[\]]{1,100}:([^\s/@\[\]]{1,200})@[^\s]",
        &["://"],
    ),
    (
        "bearer-token",
        r"(?i)(?:^|[^A-Za-z0-9])authorization\b[\s:=\x22']{1,5}bearer\s+([A-Za-z0-9._~+/=-]{8,})",
        &["bearer"],
    ),
    (
        "password-assignment",
        r#"(?i)(?:^|[^A-Za-z0-9])(?:password|passwd|pwd|secret|client_secret|api_?key|access_?token|auth_?token)\b["']?\s*[:=]\s*["']?([^\s"'`,;&<>${}%*][^\s"'`,;&]{3,199})"#,
        &[
            "password",
            "passwd",
            "pwd",
            "secret",
            "api_key",
            "apikey",
            "access_token",
            "accesstoken",
            "auth_token",
            "authtoken",
        ],
    ),
];

/// The built-in rules, compiled.
pub fn builtin_rules() -> Vec<Rule> {
    BUILTIN
        .iter()
        .filter_map(|(id, pattern, keywords)| Rule::new(id, pattern, keywords).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn every_builtin_rule_compiles() {
        for (id, pattern, keywords) in BUILTIN {
            Rule::new(id, pattern, keywords).unwrap();
        }
        assert_eq!(builtin_rules().len(), BUILTIN.len());
    }

    #[test]
    fn custom_rules_are_validated() {
        assert!(Rule::new("Bad Id", "x", &[]).is_err());
        assert!(Rule::new("ok", "(unclosed", &[]).is_err());
        let redactor = Redactor::default()
            .with_rule(Rule::new("internal-ticket", r"\b(TCK-\d{6})\b", &["tck-"]).unwrap())
            .unwrap();
        let (clean, found) = redactor.redact("see TCK-123456 for the key");
        assert_eq!(clean, "see [REDACTED:internal-ticket] for the key");
        assert_eq!(found[0].start, 4);
    }
}
