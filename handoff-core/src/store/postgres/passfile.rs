//! The password libpq would use when the URL gives none: `PGPASSWORD`, else the first line of
//! the password file (`PGPASSFILE`, else `~/.pgpass`) that matches the server's host, port,
//! database and user (`*` matching anything), so that neither a URL, a command line nor
//! `HANDOFF_DB` has to carry it. As libpq does, a password file that others may read is
//! ignored. Nothing else of libpq's environment is read: the URL says where to connect.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use tokio_postgres::Config;
use tokio_postgres::config::Host;

/// The port libpq assumes when the URL names none.
const DEFAULT_PORT: u16 = 5432;

/// Password files larger than this are not read: no real one comes near it.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// Gives `config` the password from the environment or the password file, unless it has one.
pub(super) fn fill_in(config: &mut Config) {
    if config.get_password().is_some() {
        return;
    }
    if let Some(password) = lookup(config, &|name| std::env::var_os(name)) {
        config.password(password);
    }
}

/// The password for `config` from `env`'s `PGPASSWORD` or its password file.
fn lookup(config: &Config, env: &dyn Fn(&str) -> Option<OsString>) -> Option<String> {
    if let Some(password) = env("PGPASSWORD").and_then(|p| p.into_string().ok())
        && !password.is_empty()
    {
        return Some(password);
    }
    let file = match env("PGPASSFILE") {
        Some(file) => PathBuf::from(file),
        None => PathBuf::from(env("HOME")?).join(".pgpass"),
    };
    let text = read_private(&file)?;
    let user = config
        .get_user()
        .map(str::to_owned)
        .or_else(|| env("USER").or_else(|| env("LOGNAME"))?.into_string().ok())?;
    let wanted = Wanted {
        hosts: match config.get_hosts().first() {
            Some(Host::Tcp(name)) => vec![name.clone()],
            #[cfg(unix)]
            Some(Host::Unix(dir)) => vec!["localhost".to_owned(), dir.display().to_string()],
            None => vec!["localhost".to_owned()],
        },
        port: config
            .get_ports()
            .first()
            .copied()
            .unwrap_or(DEFAULT_PORT)
            .to_string(),
        database: config.get_dbname().unwrap_or(&user).to_owned(),
        user: user.clone(),
    };
    text.lines().find_map(|line| wanted.password_on(line))
}

/// The file's text, unless it cannot be read, is not a plain file, is too large, or (on Unix)
/// others than its owner may read or write it.
fn read_private(file: &Path) -> Option<String> {
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            return None;
        }
    }
    std::fs::read_to_string(file).ok()
}

/// What a line of the password file must match.
struct Wanted {
    /// The names the host goes by: a Unix socket is also `localhost`.
    hosts: Vec<String>,
    port: String,
    database: String,
    user: String,
}

impl Wanted {
    /// The line's password when its first four fields match; `None` for a comment, a line
    /// of fewer than five fields, or another server's.
    fn password_on(&self, line: &str) -> Option<String> {
        if line.starts_with('#') {
            return None;
        }
        let fields = split_fields(line);
        let [host, port, database, user, password] = fields.as_slice() else {
            return None;
        };
        let matches = |field: &str, value: &str| field == "*" || field == value;
        (self.hosts.iter().any(|h| matches(host, h))
            && matches(port, &self.port)
            && matches(database, &self.database)
            && matches(user, &self.user))
        .then(|| password.clone())
    }
}

/// A line's `:`-separated fields, with `\:` and `\\` read as the character escaped. The fifth
/// field runs to the end of the line.
fn split_fields(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => field.extend(chars.next()),
            ':' if fields.len() < 4 => fields.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    fields.push(field);
    fields
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::HashMap;
    use std::str::FromStr;

    use super::*;

    fn password(url: &str, env: &[(&str, &str)]) -> Option<String> {
        let env: HashMap<String, OsString> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
            .collect();
        lookup(&Config::from_str(url).unwrap(), &|name| {
            env.get(name).cloned()
        })
    }

    fn private_file(dir: &tempfile::TempDir, text: &str) -> String {
        let path = dir.path().join("pgpass");
        std::fs::write(&path, text).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        path.display().to_string()
    }

    #[test]
    fn pgpassword_comes_first() {
        assert_eq!(
            password("postgres://app@db/agents", &[("PGPASSWORD", "s3cret")]).as_deref(),
            Some("s3cret")
        );
        assert_eq!(password("postgres://app@db/agents", &[]), None);
    }

    #[test]
    fn the_first_matching_line_of_the_password_file_gives_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = private_file(
            &dir,
            "# host:port:database:user:password\n\
             other:5432:agents:app:not-this\n\
             db:5433:agents:app:nor-this\n\
             db:5432:*:app:p\\:w\\\\d:x\n\
             *:*:*:*:fallback\n",
        );
        let with = |url: &str| password(url, &[("PGPASSFILE", &file)]);
        assert_eq!(
            with("postgres://app@db/agents").as_deref(),
            Some("p:w\\d:x")
        );
        assert_eq!(
            with("postgres://app@db:5433/agents").as_deref(),
            Some("nor-this")
        );
        assert_eq!(
            with("postgres://app@elsewhere/x").as_deref(),
            Some("fallback")
        );
    }

    #[test]
    fn the_database_defaults_to_the_user_and_the_user_to_the_login() {
        let dir = tempfile::tempdir().unwrap();
        let file = private_file(&dir, "db:5432:ops:ops:theirs\n");
        let env = [("PGPASSFILE", file.as_str()), ("USER", "ops")];
        assert_eq!(password("postgres://db", &env).as_deref(), Some("theirs"));
        assert_eq!(password("postgres://db/agents", &env), None);
    }

    #[test]
    fn home_holds_the_default_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = private_file(&dir, "*:*:*:*:from-home\n");
        std::fs::rename(&file, dir.path().join(".pgpass")).unwrap();
        let home = dir.path().display().to_string();
        assert_eq!(
            password("postgres://app@db/agents", &[("HOME", &home)]).as_deref(),
            Some("from-home")
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_file_others_may_read_is_ignored() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = private_file(&dir, "*:*:*:*:exposed\n");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(
            password("postgres://app@db/agents", &[("PGPASSFILE", &file)]),
            None
        );
    }

    #[test]
    fn the_urls_password_is_kept() {
        let mut config = Config::from_str("postgres://app:given@db/agents").unwrap();
        fill_in(&mut config);
        assert_eq!(config.get_password(), Some(&b"given"[..]));
    }
}
