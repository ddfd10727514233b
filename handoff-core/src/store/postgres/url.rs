//! `postgres://` URLs: the driver's configuration, the schema, TLS, the reply timeout and the
//! limits for a lost peer, each read as libpq reads it, and every refusal naming the part of the
//! URL it concerns.

use super::*;

/// The parts of a `postgres://` URL: the driver's configuration, the schema, TLS, the reply
/// timeout when it names one, and the URL without its password for messages.
pub(super) struct Target {
    pub(super) config: tokio_postgres::Config,
    pub(super) schema: String,
    pub(super) tls: Option<MakeRustlsConnect>,
    pub(super) reply_timeout: Option<Option<Duration>>,
    pub(super) shown: String,
}

pub(super) fn parse_url(url: &str) -> Result<Target> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut schema = "public".to_owned();
    let mut reply_timeout = None;
    let mut tls = TlsParams::default();
    let mut peers = PeerLimits::default();
    let mut fallback_name = None;
    let mut rest = Vec::new();
    let mut seen = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let Some((key, raw)) = pair.split_once('=') else {
            rest.push(pair);
            continue;
        };
        let ours = ["schema", "reply_timeout", "fallback_application_name"].contains(&key)
            || PeerLimits::KEYS.contains(&key)
            || TlsParams::KEYS.contains(&key);
        if !ours {
            rest.push(pair);
            continue;
        }
        // Which of two schemas (or TLS modes) was meant cannot be guessed.
        let setting = PeerLimits::setting(key);
        if seen.contains(&setting) {
            return Err(Error::invalid(format!("url.{key}"), "is given twice"));
        }
        seen.push(setting);
        let value = percent_decoded(raw).ok_or_else(|| {
            Error::invalid(
                format!("url.{key}"),
                "has a malformed %-escape or is not UTF-8",
            )
        })?;
        if key == "schema" {
            schema = value;
        } else if key == "reply_timeout" {
            reply_timeout = Some(seconds("url.reply_timeout", &value)?);
        } else if key == "fallback_application_name" {
            fallback_name = Some(value);
        } else if PeerLimits::KEYS.contains(&key) {
            peers.take(key, &value)?;
        } else {
            tls.take(key, &value)?;
        }
    }
    if !is_schema_name(&schema) {
        return Err(Error::invalid(
            "url.schema",
            "must be 1 to 63 characters from a-z 0-9 _, starting with a letter or _",
        ));
    }
    // The store creates and drops its tables there: never among PostgreSQL's own catalogs.
    if schema == "information_schema" || schema.starts_with("pg_") {
        return Err(Error::invalid(
            "url.schema",
            format!("must not be a system schema ({schema}): PostgreSQL keeps its catalogs there"),
        ));
    }
    let driver_url = if rest.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    let mut config = tokio_postgres::Config::from_str(&driver_url).map_err(|e| unreadable(&e))?;
    peers.apply(&mut config, &rest);
    // What `pg_stat_activity` shows an operator for these sessions, unless the URL names it:
    // libpq's `fallback_application_name`, which the driver does not know, else `handoff`.
    if config.get_application_name().is_none() {
        config.application_name(fallback_name.as_deref().unwrap_or(DEFAULT_APPLICATION_NAME));
    }
    let tls = tls.apply(&mut config)?;
    let shown = crate::store::display_url(url);
    Ok(Target {
        config,
        schema,
        tls,
        reply_timeout,
        shown,
    })
}

/// The driver's refusal of a URL, naming the part it could not read: `url.NAME` for an option
/// it does not know or whose value it cannot read (its reason names the option between
/// backticks), `url` otherwise.
pub(super) fn unreadable(e: &tokio_postgres::Error) -> Error {
    let Some(cause) = std::error::Error::source(e).map(ToString::to_string) else {
        return Error::invalid("url", format!("is not a PostgreSQL URL: {e}"));
    };
    let named = cause.split('`').nth(1).filter(|name| {
        name.len() <= 63 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    });
    match named {
        Some(name) if cause.starts_with("unknown option") => Error::invalid(
            format!("url.{name}"),
            "is not a parameter of a PostgreSQL URL",
        ),
        Some(name) => Error::invalid(format!("url.{name}"), format!("cannot be read ({cause})")),
        None => Error::invalid("url", format!("is not a PostgreSQL URL: {cause}")),
    }
}

/// A URL parameter given in seconds (decimals allowed): `0` for no limit.
pub(super) fn seconds(field: &str, value: &str) -> Result<Option<Duration>> {
    let rule = "must be 0 (no limit) or a number of seconds from 0.001 to 4294967295";
    let seconds: f64 = value
        .trim()
        .parse()
        .map_err(|_| Error::invalid(field, rule))?;
    if seconds == 0.0 {
        return Ok(None);
    }
    if !(0.001..=f64::from(u32::MAX)).contains(&seconds) {
        return Err(Error::invalid(field, rule));
    }
    Ok(Some(Duration::from_secs_f64(seconds)))
}

/// The `application_name` of the store's sessions when the URL names none.
pub(super) const DEFAULT_APPLICATION_NAME: &str = "handoff";

/// How long a statement sent on a connection may go unacknowledged before the connection is
/// taken for lost (the server's machine gone, the network between cut); the operating system's
/// default is about 15 minutes, which a call would spend blocked.
pub(super) const LOST_AFTER: Duration = Duration::from_secs(30);
/// When an idle connection starts being probed, how often, and how many unanswered probes
/// lose it: about a minute, where the operating system's default is over two hours.
pub(super) const PROBE_AFTER: Duration = Duration::from_secs(30);
pub(super) const PROBE_EVERY: Duration = Duration::from_secs(10);
pub(super) const PROBES: u32 = 3;

/// The URL's own limits for a lost peer, read as libpq reads them: the driver takes
/// `tcp_user_timeout` in seconds where libpq takes milliseconds (a URL written for libpq would
/// wait a thousand times longer), and knows `keepalives_count` only as `keepalives_retries`.
/// `None`: not given; `Some(None)`: `0`, the operating system's default.
#[derive(Default)]
pub(super) struct PeerLimits {
    pub(super) unacknowledged: Option<Option<Duration>>,
    pub(super) probes: Option<Option<u32>>,
}

impl PeerLimits {
    const KEYS: [&'static str; 3] = ["tcp_user_timeout", "keepalives_count", "keepalives_retries"];

    /// The setting `key` sets: `keepalives_retries` is the driver's name for libpq's
    /// `keepalives_count`, so the two may not both be given.
    fn setting(key: &str) -> &str {
        if key == "keepalives_retries" {
            "keepalives_count"
        } else {
            key
        }
    }

    fn take(&mut self, key: &str, value: &str) -> Result<()> {
        // A whole number of `unit`; `None` for 0.
        let whole = |unit: &str| -> Result<Option<u32>> {
            let number: u32 = value.trim().parse().map_err(|_| {
                Error::invalid(
                    format!("url.{key}"),
                    format!("must be a whole number of {unit} (0: the operating system's default)"),
                )
            })?;
            Ok((number > 0).then_some(number))
        };
        if key == "tcp_user_timeout" {
            let millis = whole("milliseconds")?;
            self.unacknowledged = Some(millis.map(|ms| Duration::from_millis(ms.into())));
        } else {
            self.probes = Some(whole("probes")?);
        }
        Ok(())
    }

    /// Sets the limits the URL gave, and the store's own where it named none (`params`: the
    /// parameters the driver read).
    fn apply(&self, config: &mut tokio_postgres::Config, params: &[&str]) {
        let named = |key: &str| params.iter().any(|p| p.split('=').next() == Some(key));
        if let Some(limit) = self.unacknowledged.unwrap_or(Some(LOST_AFTER)) {
            config.tcp_user_timeout(limit);
        }
        if !named("keepalives_idle") {
            config.keepalives_idle(PROBE_AFTER);
        }
        if !named("keepalives_interval") {
            config.keepalives_interval(PROBE_EVERY);
        }
        if let Some(probes) = self.probes.unwrap_or(Some(PROBES)) {
            config.keepalives_retries(probes);
        }
    }
}

/// `text` with its `%XX` escapes decoded; `None` when one is malformed or the result is not
/// UTF-8.
pub(super) fn percent_decoded(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, after)) = rest.split_first() {
        if byte == b'%' {
            let hex = std::str::from_utf8(after.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &after[2..];
        } else {
            bytes.push(byte);
            rest = after;
        }
    }
    String::from_utf8(bytes).ok()
}

pub(super) fn is_schema_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= 63
}
