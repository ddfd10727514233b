//! The dashboard's forms and what keeps another site from posting them (cross-site request
//! forgery).
//!
//! A form is posted to `/actions/<operation>` with the fields of its operation's arguments, a
//! `back` path to return to and a `csrf` token. The token is an HMAC-SHA256, under a key drawn
//! from the operating system when the server starts, of the session the page was served to:
//! the dashboard's cookie (or the bearer token) that opened it, empty on a server without
//! tokens. A page of another site can make a browser post a form, and the browser sends the
//! cookie along (another port of the same host is the same site), but it cannot read this
//! server's pages, so it cannot know the token; the cookie alone never acts. The token is
//! checked in constant time ([`Mac::verify_slice`]). The `Origin` of another site is refused
//! before this ([`super::super::browsers::same_origin`]), and so is `Sec-Fetch-Site:
//! cross-site` ([`cross_site`]).

use std::fmt::Write;
use std::sync::OnceLock;

use axum::http::{HeaderMap, header};
use handoff_core::Error;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::html::esc;
use crate::credentials::Agents;
use crate::operations;

/// The field a form's token travels in.
pub(super) const CSRF_FIELD: &str = "csrf";
/// The field naming the page to go back to after the action.
pub(super) const BACK_FIELD: &str = "back";

/// Who a page was served to: the form token of its session and the agent its actions are
/// taken as.
#[derive(Clone, Debug)]
pub(super) struct Session {
    /// The token every form of the page carries; `None` when the server's key could not be
    /// drawn (then no form is shown, and every post is refused).
    pub csrf: Option<String>,
    /// The agent named as acting (`by`): the session's only agent, or `operator` for a
    /// session that may act as any agent.
    pub acting: String,
}

impl Session {
    /// The session of a request carrying `headers`, made by a caller acting as `caller`.
    pub(super) fn of(headers: &HeaderMap, caller: &Agents) -> Session {
        Session {
            csrf: csrf_for(session_token(headers)),
            acting: acting(caller),
        }
    }

    /// Whether `given` is this session's form token.
    pub(super) fn accepts(headers: &HeaderMap, given: &str) -> bool {
        let Some(mac) = mac_of(session_token(headers)) else {
            return false;
        };
        match hex_bytes(given) {
            Some(tag) => mac.verify_slice(&tag).is_ok(),
            None => false,
        }
    }
}

/// The agent a caller's actions name as acting: the only agent its token may act as, the
/// first of several, or `operator` for a caller who may act as any agent (no credentials, the
/// server's `--token`, a `"*"` entry of `--credentials`).
fn acting(caller: &Agents) -> String {
    match caller {
        Agents::Only(agents) => agents.first().cloned().unwrap_or_else(|| "operator".into()),
        Agents::Any => "operator".to_owned(),
    }
}

/// The token that opened the session: the dashboard's cookie, else a bearer token, else
/// nothing (a server without tokens).
fn session_token(headers: &HeaderMap) -> &str {
    super::super::dashboard_cookie(headers)
        .or_else(|| super::super::bearer_token(headers))
        .unwrap_or_default()
}

/// The server's key, drawn once: 256 bits from the operating system's generator.
fn key() -> Option<&'static str> {
    static KEY: OnceLock<Option<String>> = OnceLock::new();
    KEY.get_or_init(|| handoff_core::bundle::new_share_token().ok())
        .as_deref()
}

fn mac_of(session: &str) -> Option<Hmac<Sha256>> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key()?.as_bytes()).ok()?;
    // A domain of its own, so that the tag is of nothing else the key might sign.
    mac.update(b"handoff dashboard form\0");
    mac.update(session.as_bytes());
    Some(mac)
}

fn csrf_for(session: &str) -> Option<String> {
    let tag = mac_of(session)?.finalize().into_bytes();
    Some(tag.iter().fold(String::new(), |mut hex, b| {
        let _ = write!(hex, "{b:02x}");
        hex
    }))
}

fn hex_bytes(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// Refuses a post the browser says came from another site (`Sec-Fetch-Site: cross-site` or
/// `same-site`): another port or subdomain may not act here even with its `Origin` stripped.
pub(super) fn cross_site(headers: &HeaderMap) -> Option<String> {
    let site = headers.get("sec-fetch-site")?.to_str().ok()?;
    match site {
        "cross-site" | "same-site" => Some(format!(
            "is {site:?}: a form of another site may not act on this server"
        )),
        _ => None,
    }
}

/// A form that runs the catalog operation `op`: `hidden` fields, then `inputs` (HTML), then a
/// button. Nothing when this build's catalog has no such operation, or the session has no
/// token.
pub(super) fn form(
    session: &Session,
    op: &str,
    back: &str,
    hidden: &[(&str, &str)],
    inputs: &str,
    button: &str,
) -> String {
    let Some(csrf) = &session.csrf else {
        return String::new();
    };
    if operations::find(op).is_none() {
        return String::new();
    }
    let multipart = inputs.contains("type=\"file\"");
    let mut html = format!(
        "<form class=\"{}\" method=\"post\" action=\"/actions/{}\"{}>",
        if inputs.contains("<textarea") {
            "wide"
        } else {
            "act"
        },
        esc(op),
        if multipart {
            " enctype=\"multipart/form-data\""
        } else {
            ""
        }
    );
    let _ = write!(
        html,
        "<input type=\"hidden\" name=\"{CSRF_FIELD}\" value=\"{}\">\
         <input type=\"hidden\" name=\"{BACK_FIELD}\" value=\"{}\">",
        esc(csrf),
        esc(back)
    );
    for (name, value) in hidden {
        let _ = write!(
            html,
            "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
            esc(name),
            esc(value)
        );
    }
    html.push_str(inputs);
    let _ = write!(
        html,
        "<button type=\"submit\" name=\"do\" value=\"{}\">{}</button></form>",
        esc(op),
        esc(button)
    );
    html
}

/// A text input named `name`.
pub(super) fn text(name: &str, placeholder: &str, required: bool) -> String {
    format!(
        "<input type=\"text\" name=\"{}\" placeholder=\"{}\" aria-label=\"{}\"{}>",
        esc(name),
        esc(placeholder),
        esc(placeholder),
        if required { " required" } else { "" }
    )
}

/// The fields of a posted form, in order: `application/x-www-form-urlencoded` or
/// `multipart/form-data` (a file's content as text).
pub(super) fn fields(headers: &HeaderMap, body: &[u8]) -> Result<Vec<(String, String)>, Error> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "application/x-www-form-urlencoded" => Ok(form_urlencoded::parse(body)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()),
        "multipart/form-data" => {
            let boundary = content_type
                .split(';')
                .filter_map(|p| p.trim().strip_prefix("boundary="))
                .map(|b| b.trim_matches('"'))
                .next()
                .filter(|b| !b.is_empty() && b.len() <= 70)
                .ok_or_else(|| {
                    Error::invalid("content-type", "multipart/form-data needs its boundary")
                })?;
            multipart(body, boundary)
        }
        _ => Err(Error::invalid(
            "content-type",
            "must be application/x-www-form-urlencoded or multipart/form-data (a form's)",
        )),
    }
}

/// The parts of a `multipart/form-data` body (RFC 7578): each part's `name` and its content,
/// as UTF-8 text.
fn multipart(body: &[u8], boundary: &str) -> Result<Vec<(String, String)>, Error> {
    let bad = |rule: &str| Error::invalid("body", format!("multipart/form-data: {rule}"));
    let delimiter = format!("--{boundary}");
    let mut parts = Vec::new();
    let mut rest = match find(body, delimiter.as_bytes()) {
        Some(at) => &body[at + delimiter.len()..],
        None => return Err(bad("no part starts with the boundary")),
    };
    let next = format!("\r\n--{boundary}");
    loop {
        if rest.starts_with(b"--") {
            return Ok(parts);
        }
        rest = rest
            .strip_prefix(b"\r\n")
            .ok_or_else(|| bad("a boundary must end its line"))?;
        let head_end = find(rest, b"\r\n\r\n").ok_or_else(|| bad("a part has no headers"))?;
        let head = std::str::from_utf8(&rest[..head_end])
            .map_err(|_| bad("a part's headers must be UTF-8"))?;
        let content = &rest[head_end + 4..];
        let end = find(content, next.as_bytes()).ok_or_else(|| bad("the last part is cut"))?;
        let name = head
            .lines()
            .filter(|l| {
                l.to_ascii_lowercase()
                    .starts_with("content-disposition: form-data")
            })
            .flat_map(|l| l.split(';'))
            .filter_map(|p| p.trim().strip_prefix("name="))
            .map(|n| n.trim_matches('"').to_owned())
            .next()
            .ok_or_else(|| bad("a part has no name"))?;
        let text = String::from_utf8(content[..end].to_vec())
            .map_err(|_| Error::invalid(name.clone(), "must be UTF-8 text"))?;
        parts.push((name, text));
        rest = &content[end + next.len()..];
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `back` if it is a page of this dashboard (a path that starts with one `/`), else the queue:
/// a form may not send the browser elsewhere.
pub(super) fn back(given: Option<&str>) -> String {
    match given {
        Some(path)
            if path.starts_with('/')
                && !path.starts_with("//")
                && !path.starts_with("/\\")
                && !path.starts_with("/actions")
                && path
                    .bytes()
                    .all(|b| b.is_ascii_graphic() && b != b'\\' && b != b'"') =>
        {
            path.split(['?', '#']).next().unwrap_or("/").to_owned()
        }
        _ => "/".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(cookie: &str) -> HeaderMap {
        let mut map = HeaderMap::new();
        map.insert(
            header::COOKIE,
            HeaderValue::from_str(cookie).expect("cookie"),
        );
        map
    }

    #[test]
    fn a_form_token_is_its_sessions_alone() {
        let alice = headers("handoff_token=alice-token-0123456789");
        let bob = headers("other=1; handoff_token=bob-token-0123456789");
        let token = Session::of(&alice, &Agents::Any).csrf.expect("key");
        assert_eq!(token.len(), 64);
        assert!(Session::accepts(&alice, &token));
        assert!(!Session::accepts(&bob, &token));
        assert!(!Session::accepts(&alice, ""));
        assert!(!Session::accepts(&alice, &token[..62]));
        assert!(!Session::accepts(&alice, &"0".repeat(64)));
        assert!(!Session::accepts(&alice, "zz"));
        // Without a cookie or a bearer token (a server without tokens), one session.
        let none = HeaderMap::new();
        let open = Session::of(&none, &Agents::Any).csrf.expect("key");
        assert!(Session::accepts(&none, &open) && !Session::accepts(&alice, &open));
    }

    #[test]
    fn the_acting_agent_comes_from_the_credentials() {
        assert_eq!(acting(&Agents::Any), "operator");
        assert_eq!(acting(&Agents::Only(vec!["ops-alice".into()])), "ops-alice");
    }

    #[test]
    fn a_multipart_body_gives_its_fields() {
        let body = "--XyZ\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\nabc\r\n\
                    --XyZ\r\nContent-Disposition: form-data; name=\"bundle\"; filename=\"b.json\"\r\n\
                    Content-Type: application/json\r\n\r\n{\"a\":\r\n1}\r\n--XyZ--\r\n";
        let mut map = HeaderMap::new();
        map.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("multipart/form-data; boundary=XyZ"),
        );
        let fields = fields(&map, body.as_bytes()).expect("fields");
        assert_eq!(
            fields,
            vec![
                ("csrf".to_owned(), "abc".to_owned()),
                ("bundle".to_owned(), "{\"a\":\r\n1}".to_owned())
            ]
        );
        assert!(
            multipart(
                b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\ncut",
                "XyZ"
            )
            .is_err()
        );
    }

    #[test]
    fn back_is_a_page_of_this_dashboard() {
        assert_eq!(back(Some("/handoffs/abc")), "/handoffs/abc");
        assert_eq!(back(Some("/tasks/t?done=x")), "/tasks/t");
        for elsewhere in [
            "//evil.example/",
            "/\\evil",
            "https://evil.example",
            "",
            "/actions/retry",
        ] {
            assert_eq!(back(Some(elsewhere)), "/", "{elsewhere}");
        }
        assert_eq!(back(None), "/");
    }
}
