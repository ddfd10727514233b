//! Where the store is: `--db` / `HANDOFF_DB`, any URL [`Store::connect`] takes.
//!
//! A plain path (or `sqlite:PATH`) keeps the SQLite behaviour the CLI has always had: read
//! commands open it read-only, only creating commands create it, `--lock-patience` applies.
//! `files:DIR` and `postgres://…` are opened by [`Store::connect`]; `memory:` is a fresh,
//! empty store for the process's lifetime.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use handoff_core::store::{display_url, url_password};
use handoff_core::{Error, Store};

/// The store `--db` names.
#[derive(Clone, Debug)]
pub(crate) enum Location {
    /// An SQLite file.
    Sqlite(PathBuf),
    /// A folder of JSON files (`files:DIR`).
    Files(PathBuf),
    /// `memory:`.
    Memory,
    /// `postgres://…` or `postgresql://…`, as given (password included: never shown).
    Postgres(String),
}

impl Location {
    /// Reads `--db`. A URL of no known kind is a validation error naming `url`, before
    /// anything is opened; a PostgreSQL URL's own problems (`url.schema`) are found by the
    /// core when it connects, also before anything is created.
    pub(crate) fn parse(db: &Path) -> Result<Location, Error> {
        // A path that is not UTF-8 is no URL: a file name.
        let Some(text) = db.to_str() else {
            return Ok(Location::Sqlite(db.to_path_buf()));
        };
        if text == "memory:" {
            return Ok(Location::Memory);
        }
        if let Some(dir) = text.strip_prefix("files:") {
            if dir.is_empty() {
                return Err(Error::invalid("url", "files: needs a folder (files:DIR)"));
            }
            return Ok(Location::Files(PathBuf::from(dir)));
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Ok(Location::Postgres(text.to_owned()));
        }
        let path = text.strip_prefix("sqlite:").unwrap_or(text);
        // The core's rule: `x://…` names a server of a kind it does not know, not a file.
        if path.is_empty() || (path.contains("://") && !text.starts_with("sqlite:")) {
            return Err(Error::invalid(
                "url",
                format!(
                    "must be a path, sqlite:PATH, files:DIR, memory: or postgres://…, not {}",
                    display_url(text)
                ),
            ));
        }
        Ok(Location::Sqlite(PathBuf::from(path)))
    }

    /// The SQLite file, when the store is one.
    pub(crate) fn sqlite_path(&self) -> Option<&Path> {
        match self {
            Location::Sqlite(path) => Some(path),
            _ => None,
        }
    }

    /// Whether the store is there without creating it. A server's schema and `memory:` count
    /// as there: connecting is how to find out, and reading an empty one is harmless. A
    /// folder is a store once it has its `handoffs` folder, so that a read or a write never
    /// lays a store out in a folder that holds something else.
    pub(crate) fn exists(&self) -> bool {
        match self {
            Location::Sqlite(path) => path.exists(),
            Location::Files(dir) => dir.join("handoffs").is_dir(),
            Location::Memory | Location::Postgres(_) => true,
        }
    }

    /// What messages call it: the URL with any password replaced by `***`.
    pub(crate) fn shown(&self) -> String {
        match self {
            Location::Sqlite(path) => path.display().to_string(),
            Location::Files(dir) => format!("files:{}", dir.display()),
            Location::Memory => "memory:".to_owned(),
            Location::Postgres(url) => display_url(url),
        }
    }

    /// What a successor finds in `HANDOFF_DB` to open the same store: the URL whole, since
    /// it must connect (the environment is not printed).
    pub(crate) fn for_successor(&self) -> OsString {
        match self {
            Location::Sqlite(path) => path.as_os_str().to_owned(),
            Location::Files(dir) => {
                let mut url = OsString::from("files:");
                url.push(dir.as_os_str());
                url
            }
            Location::Memory => OsString::from("memory:"),
            Location::Postgres(url) => OsStr::new(url).to_owned(),
        }
    }

    /// Connects to a store that is not an SQLite file (those are opened with the CLI's
    /// options, see `commands.rs`). Errors never carry the URL's password.
    pub(crate) fn connect(&self) -> Result<Store, Error> {
        let url = self.for_successor();
        let url = url.to_string_lossy();
        Store::connect(&url).map_err(|e| redact_error(e, &url))
    }
}

/// `e` with `url`'s password replaced by `***`: a driver's message may quote the URL, and
/// `--no-redact` is about records, never about the store's credentials. The password alone is
/// replaced too once it is long enough not to be a piece of ordinary words.
fn redact_error(e: Error, url: &str) -> Error {
    let Some(password) = url_password(url) else {
        return e;
    };
    let clean = |text: &str| {
        let text = text.replace(&format!(":{password}@"), ":***@");
        if password.chars().count() >= 6 {
            text.replace(password, "***")
        } else {
            text
        }
    };
    match e {
        Error::Validation { problems } => Error::Validation {
            problems: problems
                .into_iter()
                .map(|p| handoff_core::Problem::new(clean(&p.field), clean(&p.rule)))
                .collect(),
        },
        Error::Storage { message, .. } if clean(&message) != message => {
            Error::storage(clean(&message))
        }
        Error::Busy { message } => Error::Busy {
            message: clean(&message),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Location, Error> {
        Location::parse(Path::new(text))
    }

    #[test]
    fn every_connect_url_is_read() {
        assert!(
            matches!(parse("handoff.db"), Ok(Location::Sqlite(p)) if p == Path::new("handoff.db"))
        );
        assert!(
            matches!(parse("sqlite:a/b.db"), Ok(Location::Sqlite(p)) if p == Path::new("a/b.db"))
        );
        assert!(matches!(parse("files:store"), Ok(Location::Files(p)) if p == Path::new("store")));
        assert!(matches!(parse("memory:"), Ok(Location::Memory)));
        assert!(matches!(
            parse("postgresql://u@h/db?schema=x"),
            Ok(Location::Postgres(_))
        ));
    }

    #[test]
    fn a_wrong_url_names_url() {
        for text in ["files:", "sqlite:", "", "mysql://u:pw@h/db"] {
            let Err(Error::Validation { problems }) = parse(text) else {
                panic!("{text:?} was accepted");
            };
            assert_eq!(problems[0].field, "url", "{text:?}");
            assert!(!problems[0].rule.contains("pw@"), "{problems:?}");
        }
    }

    #[test]
    fn passwords_are_never_shown() {
        let url = "postgres://alice:s3cr:et@db.example:5432/test?schema=x";
        let location = parse(url).expect("a PostgreSQL URL");
        assert_eq!(
            location.shown(),
            "postgres://alice:***@db.example:5432/test?schema=x"
        );
        assert_eq!(
            display_url("postgres://alice@h/db"),
            "postgres://alice@h/db"
        );
        let e = redact_error(Error::storage(format!("cannot reach {url}")), url);
        assert!(!e.to_string().contains("s3cr:et"), "{e}");
        let e = redact_error(Error::storage("must be a path"), "postgres://a:b@h/db");
        assert_eq!(e.to_string(), Error::storage("must be a path").to_string());
    }
}
