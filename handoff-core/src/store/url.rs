//! Store URLs as messages may show them: never with their password.

/// The password of `url` (`scheme://user:PASSWORD@host…`), if it has one.
pub fn url_password(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?']).next()?;
    let (userinfo, _) = authority.rsplit_once('@')?;
    let (_, password) = userinfo.split_once(':')?;
    (!password.is_empty()).then_some(password)
}

/// `url` with its password, if any, replaced by `***`: what every message and `repr` shows.
///
/// ```
/// use handoff_core::store::display_url;
/// assert_eq!(
///     display_url("postgres://app:s3cret@db.internal/agents?schema=swarm1"),
///     "postgres://app:***@db.internal/agents?schema=swarm1"
/// );
/// assert_eq!(display_url("files:.handoff"), "files:.handoff");
/// ```
pub fn display_url(url: &str) -> String {
    match url_password(url) {
        Some(password) => url.replacen(&format!(":{password}@"), ":***@", 1),
        None => url.to_owned(),
    }
}
