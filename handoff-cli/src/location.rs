//! Where the store is: `--db` / `HANDOFF_DB`, else `handoff.db`. The core reads the URL: it
//! opens it with [`Store::connect_with`] and the global options, refusing a URL it does not
//! know with a problem named `url` before anything is opened or created.
//!
//! The CLI adds one rule of its own, that only commands that create records create a store,
//! and so it must know where on disk a URL's store would be made ([`Location::on_disk`], from
//! the core's own reading of the URL, `store::Location`): an SQLite file (which reads open
//! read-only), or a `files:` folder (which reads must not lay out). That knowledge also keeps
//! an export off the store's own files. `memory:`, a server, and a URL the core will refuse
//! have no place on disk.

use std::path::Path;

use handoff_core::store::{self, display_url, hide_url_passwords, url_password};
use handoff_core::{ConnectOptions, Error, Store};

/// The store `--db` names, as given (a password included: never shown).
#[derive(Clone, Debug)]
pub(crate) struct Location {
    url: String,
    /// The core's reading of it; `None` for a URL the core refuses when connecting.
    parsed: Option<store::Location>,
}

/// Where on disk a store lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnDisk<'a> {
    /// An SQLite file: a path, or `sqlite:PATH`.
    File(&'a Path),
    /// A folder of JSON files: `files:DIR`.
    Folder(&'a Path),
}

impl Location {
    pub(crate) fn new(url: impl Into<String>) -> Location {
        let url = url.into();
        let parsed = store::Location::parse(&url).ok();
        Location { url, parsed }
    }

    /// Where on disk the store is, or would be created; `None` for `memory:`, a server, and
    /// a URL the core does not take (it refuses that one when connecting).
    pub(crate) fn on_disk(&self) -> Option<OnDisk<'_>> {
        match self.parsed.as_ref()? {
            store::Location::Sqlite(path) => Some(OnDisk::File(path)),
            store::Location::Files(dir) => Some(OnDisk::Folder(dir)),
            store::Location::Memory | store::Location::Postgres(_) => None,
        }
    }

    /// The SQLite file, when the store is one.
    pub(crate) fn sqlite_file(&self) -> Option<&Path> {
        match self.on_disk() {
            Some(OnDisk::File(path)) => Some(path),
            _ => None,
        }
    }

    /// Whether the store is there without creating it. A store with no place on disk counts
    /// as there: connecting is how to find out (and how a wrong URL is refused), and reading
    /// an empty one is harmless. A folder is a store once it has its `handoffs` folder, so
    /// that a read or a write never lays a store out in a folder that holds something else.
    pub(crate) fn exists(&self) -> bool {
        match self.on_disk() {
            Some(OnDisk::File(path)) => path.exists(),
            Some(OnDisk::Folder(dir)) => dir.join("handoffs").is_dir(),
            None => true,
        }
    }

    /// What messages call it: the URL with any password replaced by `***`.
    pub(crate) fn shown(&self) -> String {
        display_url(&self.url)
    }

    /// What a successor finds in `HANDOFF_DB` to open the same store: the URL whole, since
    /// it must connect (the environment is not printed).
    pub(crate) fn for_successor(&self) -> &str {
        &self.url
    }

    /// Opens the store with `options` through the core. Errors never carry the URL's
    /// password.
    pub(crate) fn connect(&self, options: &ConnectOptions) -> Result<Store, Error> {
        Store::connect_with(&self.url, options).map_err(|e| redact_error(e, &self.url))
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
        let text = hide_url_passwords(text, url);
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

    #[test]
    fn what_is_on_disk_is_known() {
        let cases = [
            ("handoff.db", Some(OnDisk::File(Path::new("handoff.db")))),
            ("sqlite:a/b.db", Some(OnDisk::File(Path::new("a/b.db")))),
            (
                "sqlite:odd://name",
                Some(OnDisk::File(Path::new("odd://name"))),
            ),
            ("files:store", Some(OnDisk::Folder(Path::new("store")))),
        ];
        for (url, place) in cases {
            assert_eq!(Location::new(url).on_disk(), place, "{url:?}");
        }
        for elsewhere in [
            "memory:",
            "postgresql://u@h/db?schema=x",
            "mysql://u:pw@h/db",
            "files:",
            "sqlite:",
            "",
        ] {
            assert_eq!(Location::new(elsewhere).on_disk(), None, "{elsewhere:?}");
            assert!(Location::new(elsewhere).exists(), "{elsewhere:?}");
        }
    }

    #[test]
    fn a_wrong_url_is_the_core_s_to_refuse_naming_url() {
        for text in ["files:", "sqlite:", "", "mysql://u:pw@h/db"] {
            let Err(Error::Validation { problems }) =
                Location::new(text).connect(&ConnectOptions::default())
            else {
                panic!("{text:?} was accepted");
            };
            assert_eq!(problems[0].field, "url", "{text:?}");
            assert!(!problems[0].rule.contains("pw@"), "{problems:?}");
        }
    }

    #[test]
    fn passwords_are_never_shown() {
        let url = "postgres://alice:s3cr:et@db.example:5432/test?schema=x";
        assert_eq!(
            Location::new(url).shown(),
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
        // libpq's parameter form, with a password too short to be replaced on its own.
        let url = "postgres://alice@h/db?password=pw1&schema=x";
        assert_eq!(
            Location::new(url).shown(),
            "postgres://alice@h/db?password=***&schema=x"
        );
        let e = redact_error(Error::storage(format!("cannot reach {url}")), url);
        assert!(!e.to_string().contains("pw1"), "{e}");
    }
}
