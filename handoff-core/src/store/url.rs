//! Store URLs: which store one names, and how messages show it (never with its password).

use std::path::PathBuf;

use crate::error::{Error, Result};

/// The store a URL names (docs/design.md §10), read without opening anything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// `memory:`: in the process.
    Memory,
    /// A path, or `sqlite:PATH` (a name with `://` in it must be written `sqlite:PATH`).
    Sqlite(PathBuf),
    /// `files:DIR`: a folder of JSON files.
    Files(PathBuf),
    /// `postgres://…` or `postgresql://…`, as given (a password included).
    Postgres(String),
}

impl Location {
    /// Reads `url`; a URL that names no store is refused with a problem on `url`.
    ///
    /// ```
    /// use handoff_core::store::Location;
    /// assert_eq!(Location::parse("files:.handoff")?, Location::Files(".handoff".into()));
    /// assert_eq!(Location::parse("agents.db")?, Location::Sqlite("agents.db".into()));
    /// assert!(Location::parse("mysql://db/agents").is_err());
    /// # Ok::<(), handoff_core::Error>(())
    /// ```
    pub fn parse(url: &str) -> Result<Location> {
        if url == "memory:" {
            return Ok(Location::Memory);
        }
        if let Some(dir) = url.strip_prefix("files:") {
            if dir.is_empty() {
                return Err(Error::invalid("url", "files: needs a folder (files:DIR)"));
            }
            return Ok(Location::Files(dir.into()));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Location::Postgres(url.to_owned()));
        }
        let path = url.strip_prefix("sqlite:").unwrap_or(url);
        if path.is_empty() || (path.contains("://") && !url.starts_with("sqlite:")) {
            return Err(Error::invalid(
                "url",
                "must be a path, sqlite:PATH, files:DIR, memory: or postgres://…",
            ));
        }
        Ok(Location::Sqlite(path.into()))
    }
}

/// The password of `url` (`scheme://user:PASSWORD@host…`, or libpq's `?password=…`), if it
/// has one.
pub fn url_password(url: &str) -> Option<&str> {
    userinfo_password(url).or_else(|| query_password(url))
}

fn userinfo_password(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?']).next()?;
    let (userinfo, _) = authority.rsplit_once('@')?;
    let (_, password) = userinfo.split_once(':')?;
    (!password.is_empty()).then_some(password)
}

fn query_password(url: &str) -> Option<&str> {
    let (_, query) = url.split_once('?')?;
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("password="))
        .filter(|password| !password.is_empty())
}

/// `url` with its password, if any, replaced by `***`: what every message and `repr` shows.
///
/// ```
/// use handoff_core::store::display_url;
/// assert_eq!(
///     display_url("postgres://app:s3cret@db.internal/agents?schema=swarm1"),
///     "postgres://app:***@db.internal/agents?schema=swarm1"
/// );
/// assert_eq!(
///     display_url("postgres://app@db.internal/agents?password=s3cret&schema=swarm1"),
///     "postgres://app@db.internal/agents?password=***&schema=swarm1"
/// );
/// assert_eq!(display_url("files:.handoff"), "files:.handoff");
/// ```
pub fn display_url(url: &str) -> String {
    hide_url_passwords(url, url)
}

/// `text` (a message that may quote `url`) with each password of `url` replaced by `***`
/// wherever it stands as a URL spells it: `:PASSWORD@` or `password=PASSWORD`.
pub fn hide_url_passwords(text: &str, url: &str) -> String {
    let mut shown = text.to_owned();
    for password in [userinfo_password(url), query_password(url)]
        .into_iter()
        .flatten()
    {
        shown = shown
            .replace(&format!(":{password}@"), ":***@")
            .replace(&format!("password={password}"), "password=***");
    }
    shown
}
