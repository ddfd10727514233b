//! What a web page can make a browser send, refused before anything else is read (issue 45):
//!
//! - a `Host` that is not this server's: DNS rebinding points a name the attacker controls at
//!   this machine, and the browser then treats the server as that name's, free to read it;
//! - an `Origin` of another site or port: a page that posts to the API, or reads it, from
//!   anywhere else (another port of 127.0.0.1 is the same *site*, so the dashboard's
//!   `SameSite=Strict` cookie goes along; only the origin tells them apart);
//! - for the API, a body that is not `application/json`: an HTML form and a "simple" `fetch`
//!   send one without asking the server first, `application/json` needs a preflight that this
//!   server never grants.
//!
//! Programs (curl, `requests`, the bindings' HTTP clients) send no `Origin` and this server's
//! address as `Host`, and go on as before.

use std::net::IpAddr;

use axum::http::{HeaderMap, StatusCode, Uri, header};
use handoff_core::Error;

use super::Refusal;
use crate::output::clip;

/// The names a request's `Host` may carry: the address the server is bound to (any address
/// when it is bound to all of them), `localhost` when it listens on loopback, and the names
/// given with `--allow-host`. Only the name is compared for the server's own addresses, not the
/// port: a rebinding attack needs a name of its own, whatever the port, while a tunnel or a
/// container's port map changes the port and not the name.
#[derive(Debug)]
pub(crate) struct Hosts {
    bound: IpAddr,
    allowed: Vec<Allowed>,
}

/// A name given with `--allow-host`, with the port it was given with, if any.
#[derive(Debug)]
struct Allowed {
    name: String,
    port: Option<u16>,
}

impl Hosts {
    /// The hosts of a server bound to `bound`, with `allowed` names (`NAME` or `NAME:PORT`).
    pub(crate) fn new(bound: IpAddr, allowed: &[String]) -> Result<Hosts, Error> {
        let allowed = allowed
            .iter()
            .map(|given| {
                let parsed = split_host(given.trim())
                    .filter(|(name, _)| !name.is_empty() && name.bytes().all(is_name_byte));
                match parsed {
                    Some((name, port)) => Ok(Allowed { name, port }),
                    None => Err(Error::invalid(
                        "allow_host",
                        format!(
                            "must be a host name or address, optionally with :PORT (no scheme \
                             or path), not {:?}",
                            clip(given, 80)
                        ),
                    )),
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(Hosts { bound, allowed })
    }

    /// Whether `host` (a `Host` header's value) names this server.
    fn allows(&self, host: &str) -> bool {
        let Some((name, port)) = split_host(host) else {
            return false;
        };
        if let Ok(ip) = name.parse::<IpAddr>()
            && (self.bound.is_unspecified() || ip == self.bound)
        {
            return true;
        }
        if name == "localhost" && (self.bound.is_loopback() || self.bound.is_unspecified()) {
            return true;
        }
        self.allowed
            .iter()
            .any(|a| a.name == name && a.port.is_none_or(|p| Some(p) == port))
    }

    /// Refuses a request whose `Host` (or the authority of an absolute URI) is not this
    /// server's. A request with neither (HTTP/1.0) is not a browser's and goes on.
    pub(super) fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), Refusal> {
        let hosts = headers.get_all(header::HOST).iter();
        let given: Vec<String> = hosts
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .chain(uri.authority().map(|a| a.as_str().to_owned()))
            .collect();
        match given.iter().find(|host| !self.allows(host)) {
            None => Ok(()),
            Some(host) => Err(Refusal::forbidden(
                "host",
                format!(
                    "must name this server: its address ({}){}, or a name given with \
                     --allow-host (or HANDOFF_SERVE_ALLOW_HOST), not {:?}; a name that is not \
                     the server's is how a web page reaches it through DNS rebinding",
                    self.bound,
                    if self.bound.is_loopback() || self.bound.is_unspecified() {
                        " or localhost"
                    } else {
                        ""
                    },
                    clip(host, 100)
                ),
            )),
        }
    }
}

/// Refuses a request whose `Origin` is not this server's own: `http://` or `https://` and the
/// request's own `Host`. A request with no `Origin` (a program, a link followed, a page's own
/// `GET`) goes on.
pub(super) fn same_origin(headers: &HeaderMap, uri: &Uri) -> Result<(), Refusal> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = String::from_utf8_lossy(origin.as_bytes()).into_owned();
    let host = headers
        .get(header::HOST)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .or_else(|| uri.authority().map(|a| a.as_str().to_owned()));
    let same = host.is_some_and(|host| {
        origin
            .split_once("://")
            .and_then(|(scheme, authority)| {
                let default = match scheme.to_ascii_lowercase().as_str() {
                    "http" => ":80",
                    "https" => ":443",
                    _ => return None,
                };
                let bare = |a: &str| {
                    let a = a.to_ascii_lowercase();
                    a.strip_suffix(default).map(str::to_owned).unwrap_or(a)
                };
                Some(bare(authority) == bare(&host))
            })
            .unwrap_or(false)
    });
    if same {
        Ok(())
    } else {
        Err(Refusal::forbidden(
            "origin",
            format!(
                "must be this server's own page when given, not {:?}: a page of another site \
                 or port may not use this server",
                clip(&origin, 100)
            ),
        ))
    }
}

/// Refuses an API request that carries a body, or says it does, other than `application/json`
/// (with parameters, such as `; charset=utf-8`). A request with no `Content-Type` and no body
/// (`curl -X POST`) goes on.
pub(super) fn json_body(headers: &HeaderMap) -> Result<(), Refusal> {
    let refused = || {
        Refusal::invalid(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "content-type",
            "must be application/json: the API reads JSON only, and a web page cannot send it \
             without this server's leave"
                .to_owned(),
        )
    };
    match headers.get(header::CONTENT_TYPE) {
        Some(value) => {
            let essence = value
                .to_str()
                .ok()
                .and_then(|v| v.split(';').next())
                .map(str::trim);
            match essence {
                Some(e) if e.eq_ignore_ascii_case("application/json") => Ok(()),
                _ => Err(refused()),
            }
        }
        None => {
            let empty = match headers.get(header::CONTENT_LENGTH) {
                Some(length) => length.as_bytes() == b"0",
                None => !headers.contains_key(header::TRANSFER_ENCODING),
            };
            if empty { Ok(()) } else { Err(refused()) }
        }
    }
}

/// `host` or `host:port`, `[v6]` or `[v6]:port`: the name (lower case, without a final dot)
/// and the port. `None` when it is not one.
fn split_host(given: &str) -> Option<(String, Option<u16>)> {
    let (name, port) = if let Some(rest) = given.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        match after {
            "" => (inside, None),
            _ => (inside, Some(after.strip_prefix(':')?)),
        }
    } else {
        match given.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (given, None),
        }
    };
    let port = match port {
        None | Some("") => None,
        Some(p) => Some(p.parse::<u16>().ok()?),
    };
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    Some((name, port))
}

/// A byte a host name or address may hold (letters, digits, `-`, `.`, `_`, and `:` inside an
/// IPv6 address).
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b':')
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn hosts(bound: &str, allowed: &[&str]) -> Hosts {
        let allowed: Vec<String> = allowed.iter().map(|s| (*s).to_owned()).collect();
        Hosts::new(bound.parse().expect("ip"), &allowed).expect("hosts")
    }

    #[test]
    fn a_loopback_server_is_its_address_and_localhost() {
        let h = hosts("127.0.0.1", &[]);
        for ok in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "localhost:8080",
            "LocalHost.",
            "localhost",
        ] {
            assert!(h.allows(ok), "{ok}");
        }
        for no in [
            "rebind.evil.example",
            "localhost.evil.example:8080",
            "127.0.0.2:8080",
            "[::1]:8080",
            "127.0.0.1:x",
            "",
            "a:b:c",
        ] {
            assert!(!h.allows(no), "{no}");
        }
        let v6 = hosts("::1", &[]);
        assert!(v6.allows("[::1]:8080") && v6.allows("localhost") && !v6.allows("127.0.0.1"));
    }

    #[test]
    fn a_server_on_every_address_takes_any_address_and_the_names_given() {
        let h = hosts("0.0.0.0", &["handoff.internal", "Queue.Example:8443"]);
        for ok in [
            "10.1.2.3:8080",
            "[fe80::1]",
            "localhost",
            "handoff.internal:8080",
            "queue.example:8443",
        ] {
            assert!(h.allows(ok), "{ok}");
        }
        for no in [
            "queue.example:8080",
            "queue.example",
            "evil.handoff.internal",
            "myhost:8080",
        ] {
            assert!(!h.allows(no), "{no}");
        }
        let public = hosts("192.0.2.7", &[]);
        assert!(
            public.allows("192.0.2.7:8080")
                && !public.allows("localhost")
                && !public.allows("10.0.0.1")
        );
    }

    #[test]
    fn allowed_names_are_checked() {
        for bad in ["", "http://x", "x/y", "x:port", "a b", "[::1"] {
            let given = vec![bad.to_owned()];
            assert!(
                Hosts::new("127.0.0.1".parse().expect("ip"), &given).is_err(),
                "{bad:?}"
            );
        }
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(name.clone(), HeaderValue::from_str(value).expect("value"));
        }
        map
    }

    #[test]
    fn the_origin_must_be_the_servers_own() {
        let uri = Uri::from_static("/api/v1/handoffs");
        let host = (header::HOST, "127.0.0.1:8080");
        let with =
            |origin: &str| same_origin(&headers(&[host.clone(), (header::ORIGIN, origin)]), &uri);
        assert!(
            same_origin(&headers(std::slice::from_ref(&host)), &uri).is_ok(),
            "no Origin"
        );
        assert!(with("http://127.0.0.1:8080").is_ok());
        assert!(with("HTTP://127.0.0.1:8080").is_ok());
        for no in [
            "http://127.0.0.1:8081",
            "http://evil.example",
            "null",
            "file://",
            "http://127.0.0.1",
            "ftp://127.0.0.1:8080",
        ] {
            assert!(with(no).is_err(), "{no}");
        }
        let default = headers(&[
            (header::HOST, "handoff.test"),
            (header::ORIGIN, "http://handoff.test:80"),
        ]);
        assert!(same_origin(&default, &uri).is_ok());
        let no_host = headers(&[(header::ORIGIN, "http://127.0.0.1:8080")]);
        assert!(same_origin(&no_host, &uri).is_err());
    }

    #[test]
    fn the_api_reads_json_only() {
        let typed = |t: &str| {
            json_body(&headers(&[
                (header::CONTENT_TYPE, t),
                (header::CONTENT_LENGTH, "2"),
            ]))
        };
        assert!(typed("application/json").is_ok());
        assert!(typed("application/json; charset=utf-8").is_ok());
        assert!(typed("APPLICATION/JSON").is_ok());
        for no in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data",
            "application/jsonx",
            "",
        ] {
            assert_eq!(
                typed(no).map_err(|r| r.status),
                Err(StatusCode::UNSUPPORTED_MEDIA_TYPE),
                "{no}"
            );
        }
        assert!(json_body(&headers(&[])).is_ok(), "no type, no body");
        assert!(json_body(&headers(&[(header::CONTENT_LENGTH, "0")])).is_ok());
        assert!(json_body(&headers(&[(header::CONTENT_LENGTH, "2")])).is_err());
        assert!(json_body(&headers(&[(header::TRANSFER_ENCODING, "chunked")])).is_err());
    }
}
