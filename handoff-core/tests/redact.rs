//! The redaction golden set: every true positive redacted, no false positive touched, and
//! redaction is idempotent and total (never panics, offsets always valid).
#![allow(clippy::unwrap_used)]

use handoff_core::redact;
use proptest::prelude::*;

fn rep(c: char, n: usize) -> String {
    std::iter::repeat_n(c, n).collect()
}

/// (rule, text, the secret inside it)
fn true_positives() -> Vec<(&'static str, String, String)> {
    let mixed36 = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8".to_owned();
    let cases = [
        ("openai-api-key", format!("sk-proj-{}", "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk6l")),
        ("openai-api-key", format!("sk-{}", "T3BlbkFJ4fGh7jKl0mNp3qRs6tUv9wXy2zAb5cDe8fGh1iJk")),
        ("anthropic-api-key", format!("sk-ant-api03-{}AA", "x9Yz_8Wv-7Ut6Sr5Qp4On3Ml2Kj1Ih0Gf9Ed8Cb7Az6Yx5Wv4Ut3Sr2Qp1On0Ml9Kj8Ih7Gf6Ed5Cb4Az3Yx2Wv1Ut0Sr9Qp8On7")),
        ("aws-access-key-id", "AKIAZ3MSJV6WIBXQNJKH".to_owned()),
        ("aws-access-key-id", "ASIAY34FZKBOKMUTVV7A".to_owned()),
        ("github-token", format!("ghp_{mixed36}")),
        ("github-token", format!("github_pat_11ABCDEFG0{}", rep('x', 72))),
        ("slack-token", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx".to_owned()),
        ("slack-webhook", "https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/aBcDeFgHiJkLmNoPqRsTuVwX".to_owned()),
        ("google-api-key", "AIzaSyD3x9-Q8w7E6r5T4y3U2i1O0p9A8s7D6f5".to_owned()),
        ("stripe-key", "sk_live_51Hx9aBcDeFgHiJkLmNoPqRsT".to_owned()),
        ("jwt", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U".to_owned()),
    ];
    let mut out: Vec<(&'static str, String, String)> = cases
        .into_iter()
        .map(|(rule, secret)| (rule, format!("the key is {secret} — keep it safe"), secret))
        .collect();
    let pem = format!(
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA{}\n{}\n-----END RSA PRIVATE KEY-----",
        rep('Q', 48),
        rep('z', 64)
    );
    out.push(("private-key", format!("key file:\n{pem}\nend"), pem));
    let keyed = [
        (
            "aws-secret-access-key",
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Xt3Lm9Q",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Xt3Lm9Q",
        ),
        (
            "url-password",
            "DATABASE_URL=postgres://admin:s3cr3tP4ss@db.internal:5432/app",
            "s3cr3tP4ss",
        ),
        (
            "url-password",
            "fetch https://bot:Zx81-kk_99@git.example.org/repo.git",
            "Zx81-kk_99",
        ),
        (
            "bearer-token",
            "curl -H 'Authorization: Bearer abcdef0123456789abcdef' https://api",
            "abcdef0123456789abcdef",
        ),
        (
            "password-assignment",
            "login with password=hunter2hunter2 tonight",
            "hunter2hunter2",
        ),
        ("password-assignment", "secret: \"abc123xyz\"", "abc123xyz"),
        (
            "password-assignment",
            "api_key='0123456789abcdef'",
            "0123456789abcdef",
        ),
        (
            "password-assignment",
            "PASSWD: correcthorsebatterystaple",
            "correcthorsebatterystaple",
        ),
    ];
    out.extend(keyed.map(|(rule, text, secret)| (rule, text.to_owned(), secret.to_owned())));
    // Glued to a name by `_`, which `\b` counts as part of a word.
    let glued = [
        (
            "github-token",
            format!("context_limit_ghp_{mixed36}"),
            format!("ghp_{mixed36}"),
        ),
        (
            "aws-access-key-id",
            "x_AKIAZ3MSJV6WIBXQNJKH_prod".to_owned(),
            "AKIAZ3MSJV6WIBXQNJKH".to_owned(),
        ),
        (
            "password-assignment",
            "DB_PASSWORD=hunter2hunter2".to_owned(),
            "hunter2hunter2".to_owned(),
        ),
        (
            "openai-api-key",
            "OPENAI_sk-T3BlbkFJ4fGh7jKl0mNp3qRs6tUv9wXy2z".to_owned(),
            "sk-T3BlbkFJ4fGh7jKl0mNp3qRs6tUv9wXy2z".to_owned(),
        ),
    ];
    out.extend(glued);
    out
}

const FALSE_POSITIVES: &[&str] = &[
    "We ran a risk-assessment on the task-sk-12 ticket.",
    "Use sk-learn for the baseline model.",
    "The password field must not be empty.",
    "password: <your password here>",
    "secret: true",
    "password: ${DB_PASSWORD}",
    "api_key = %(key)s",
    "See https://example.com/path@v1 and git@github.com:org/repo.git",
    "The bearer of this letter is our agent.",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqh\n-----END PUBLIC KEY-----",
    "ghp_short is not a token, nor is xoxb- alone",
    "AKIAN is a word; so is ASIATIC.",
    "eyJ alone is not a JWT.",
    "Stripe test keys start with sk_test_ and that is all.",
    "Set token expiry to 300 seconds; the tokenizer counts tokens.",
    "Run `pip install pydantic-settings` then read docs://local/readme",
    "Order a desk-organizer-for-the-whole-office-floor and a task-planner-for-everyone-here.",
    "The password_policy: strict-enough-for-us",
];

#[test]
fn every_true_positive_is_redacted() {
    for (rule, text, secret) in true_positives() {
        let (clean, found) = redact(&text);
        assert!(
            !clean.contains(&secret),
            "{rule}: secret survived in {clean:?}"
        );
        assert!(
            clean.contains(&format!("[REDACTED:{rule}]")),
            "{rule}: {clean:?}"
        );
        let r = found
            .iter()
            .find(|r| r.rule == rule)
            .unwrap_or_else(|| panic!("{rule}: {found:?}"));
        assert_eq!(&text[r.start..r.end], secret, "{rule}: span");
    }
}

#[test]
fn no_false_positive_is_touched() {
    for text in FALSE_POSITIVES {
        let (clean, found) = redact(text);
        assert!(found.is_empty(), "{text:?} gave {found:?}");
        assert_eq!(&clean, text);
    }
}

#[test]
fn redacting_twice_changes_nothing() {
    for (_, text, _) in true_positives() {
        let (once, _) = redact(&text);
        let (twice, found) = redact(&once);
        assert_eq!(twice, once);
        assert!(found.is_empty(), "{once:?} gave {found:?}");
    }
}

#[test]
fn several_secrets_in_one_text() {
    let text = "OPENAI=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z and password=Pa55w0rd! and AKIAZ3MSJV6WIBXQNJKH";
    let (clean, found) = redact(text);
    let rules: Vec<&str> = found.iter().map(|r| r.rule.as_str()).collect();
    assert_eq!(
        rules,
        ["openai-api-key", "password-assignment", "aws-access-key-id"]
    );
    assert_eq!(
        clean,
        "OPENAI=[REDACTED:openai-api-key] and password=[REDACTED:password-assignment] and [REDACTED:aws-access-key-id]"
    );
}

proptest! {
    #[test]
    fn never_panics_and_spans_are_valid(text in ".{0,400}") {
        let (clean, found) = redact(&text);
        let mut last = 0;
        for r in &found {
            prop_assert!(r.start >= last && r.start < r.end && r.end <= text.len());
            prop_assert!(text.is_char_boundary(r.start) && text.is_char_boundary(r.end));
            last = r.end;
        }
        prop_assert_eq!(found.is_empty(), clean == text);
        prop_assert_eq!(redact(&clean).0, clean);
    }

    #[test]
    fn secrets_inside_noise_are_found(prefix in "[ a-z.,\n]{0,40}", suffix in "[ a-z.,\n]{0,40}") {
        let text = format!("{prefix} ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 {suffix}");
        let (clean, _) = redact(&text);
        prop_assert!(!clean.contains("ghp_a1B2"));
    }
}

/// Inputs the fuzzer minimised (`fuzz/regressions/redact/`): each left a secret in clear text.
#[test]
fn fuzzer_regressions() {
    let cases = [
        // Adjacent URLs: the first match must not swallow the start of the second.
        (
            "ab://u:pw@cd://u:pw@e",
            "ab://u:[REDACTED:url-password]@cd://u:[REDACTED:url-password]@e",
        ),
        // A marker gives `password=` the word boundary it lacked.
        (
            "AIzaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaapassword=hunter22",
            "[REDACTED:google-api-key]password=[REDACTED:password-assignment]",
        ),
        // A key longer than usual is redacted whole.
        (
            "sk_live_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "[REDACTED:stripe-key]",
        ),
    ];
    for (text, expected) in cases {
        let (clean, found) = redact(text);
        assert_eq!(clean, expected, "{text:?}");
        assert_eq!(redact(&clean).0, clean, "not idempotent on {text:?}");
        for r in &found {
            assert!(r.start < r.end && r.end <= text.len());
        }
    }
    for file in ["marker-makes-word-boundary", "url-password-adjacent-urls"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz/regressions/redact")
            .join(file);
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let (once, _) = redact(&text);
        assert_eq!(redact(&once).0, once, "{file}");
    }
}

/// docs/design.md §2: what leaves for an LLM or a terminal is redacted by default; the stored record
/// and its JSON keep what the caller wrote.
#[test]
fn records_leave_redacted_and_stay_whole() {
    const KEY: &str = "sk-proj-Zq3mN8vR2xT7bK4pL9wY1cH6fJ0dS5gA2eU8iO3nM7rV";
    let secret = |field: &str| format!("{field} uses {KEY}");
    let mut metadata = handoff_core::Metadata::new();
    metadata.insert(
        "nested".into(),
        serde_json::json!({"deep": [secret("metadata")]}),
    );
    let mut new = handoff_core::NewHandoff::new("t1", secret("goal"))
        .from_agent("a")
        .to_agent("b")
        .reason(handoff_core::Reason::FatalError {
            message: secret("reason"),
        })
        .progress(secret("progress"))
        .completed([secret("completed")])
        .pending([secret("pending")])
        .decisions([secret("decisions")])
        .assumptions([secret("assumptions")])
        .warnings([secret("warnings")])
        .errors([secret("errors")])
        .blockers([secret("blockers")])
        .files([secret("files")])
        .instructions(secret("instructions"))
        .metadata(metadata);
    new.locked_files = vec![secret("locked")];
    new.priority_items = vec![secret("priorities")];
    new.success_criteria = vec![secret("criteria")];
    let mut h = new.into_record("h1".into(), chrono::Utc::now());
    h.outcome = Some(secret("outcome"));
    let redacted = h.redacted();
    let json = redacted.to_json();
    assert!(!json.contains(KEY), "{json}");
    assert_eq!(json.matches("[REDACTED:").count(), 17, "{json}");
    assert!(!h.to_markdown().contains(KEY));
    assert!(h.to_markdown().contains("[REDACTED:"));
    assert!(h.to_markdown_unredacted().contains(KEY));
    assert!(h.to_json().contains(KEY));
    assert_eq!(redacted.id, h.id);
}
