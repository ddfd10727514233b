//! `handoff serve`: the store over HTTP (docs/design.md §12) — a JSON API whose routes are thin over
//! the core's operations ([`api`]), its OpenAPI document ([`openapi`]), and a dashboard for
//! operators ([`dashboard`]).
//!
//! Loopback by default. Beyond loopback a bearer token is required (`--token` or
//! `HANDOFF_SERVE_TOKEN`, or the agent-scoped tokens of `--credentials`); given on loopback,
//! it is required there too. With credentials, each request's token also says which agents
//! it may act as ([`crate::credentials`]). What a web page could make a browser send is
//! refused first ([`browsers`]). Every answer leaves through [`Output`], which redacts.

mod api;
mod bodies;
mod browsers;
mod connections;
mod dashboard;
mod health;
mod metrics;
mod openapi;
mod receipt;
mod requests;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use handoff_core::{Error, Store};
use serde_json::Value;

use crate::credentials::{Agents, Credentials};
use crate::error::{CliError, CliResult};
use crate::location::Location;
use crate::output::Output;
use browsers::Hosts;
use connections::Stop;

/// What the server needs besides the store.
pub(crate) struct Config {
    /// Where it listens.
    pub bind: SocketAddr,
    /// The bearer token every request must carry, if any.
    pub token: Option<String>,
    /// How long a connection may take to send a request's head, counted from its opening or
    /// its last answer, before it is closed; and then its body.
    pub idle_timeout: Duration,
    /// Names a request's `Host` may carry besides the server's own address (`--allow-host`).
    pub allow_hosts: Vec<String>,
    /// Agent-scoped tokens (`--credentials`): with them every request needs one of these
    /// tokens (or `token`, the operator's), and acts only as its agents.
    pub credentials: Option<Credentials>,
    /// The judge the curation routes ask (`--judge-cmd`), if any.
    pub judge: Option<crate::judge::JudgeCmd>,
}

/// The shared state of every request.
pub(crate) struct App {
    pub store: Store,
    pub db: Location,
    pub out: Output,
    pub token: Option<String>,
    /// Agent-scoped tokens, if any ([`Config::credentials`]).
    pub credentials: Option<Credentials>,
    /// What a request's `Host` may name.
    pub hosts: Hosts,
    /// How long a request's body may take to arrive after its head.
    pub body_timeout: Duration,
    /// Begins when the server is told to stop: waiting claims end early.
    pub stop: Stop,
    /// The judge of the curation routes (`--judge-cmd`): without one, verifying is refused.
    pub judge: Option<crate::judge::JudgeCmd>,
}

/// The cookie a browser keeps the token in, once it has opened the dashboard with `?token=`.
pub(crate) const TOKEN_COOKIE: &str = "handoff_token";

impl Config {
    /// Checks the configuration before the store is opened or anything listens: a server
    /// reachable from other machines must have a token.
    pub(crate) fn check(&self) -> CliResult<()> {
        if let Some(token) = &self.token
            && token.trim().len() < 16
        {
            return Err(Error::invalid("token", "must be at least 16 characters").into());
        }
        if !self.bind.ip().is_loopback() && self.token.is_none() && self.credentials.is_none() {
            return Err(Error::invalid(
                "bind",
                "a bind address beyond loopback needs a bearer token: give --token or \
                 HANDOFF_SERVE_TOKEN, or agent-scoped tokens with --credentials",
            )
            .into());
        }
        Hosts::new(self.bind.ip(), &self.allow_hosts)?;
        Ok(())
    }
}

/// Serves `store` until the process is interrupted or terminated. The caller has checked
/// `config` ([`Config::check`]) before opening the store.
pub(crate) fn serve(store: Store, db: Location, config: Config, out: Output) -> CliResult<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::storage(format!("cannot start the server's runtime: {e}")))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(config.bind)
            .await
            .map_err(|e| CliError::input("bind", config.bind, e))?;
        let local = listener
            .local_addr()
            .map_err(|e| CliError::input("bind", config.bind, e))?;
        // The one line a script waits for (the port, when --bind asked for port 0).
        println!("handoff serve: listening on http://{local}/ (API at /api/v1, OpenAPI at /api/v1/openapi.json)");
        let stop = Stop::on(stopped());
        let app = Arc::new(App {
            store,
            db,
            out,
            token: config.token,
            credentials: config.credentials,
            hosts: Hosts::new(local.ip(), &config.allow_hosts)?,
            body_timeout: config.idle_timeout,
            stop: stop.clone(),
            judge: config.judge,
        });
        let router = Router::new().fallback(requests::logged).with_state(app);
        connections::serve(listener, router, stop, config.idle_timeout).await;
        Ok(())
    })
}

/// Until Ctrl-C or SIGTERM (what service managers and `kill` send): requests under way finish,
/// new ones are not taken.
async fn stopped() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Every request: refused if a web page could have sent it ([`browsers`]), authenticated,
/// then the API or a dashboard page.
async fn handle(State(app): State<Arc<App>>, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or_default().to_owned();
    let api = path == "/api/v1" || path.starts_with("/api/v1/");
    if let Some(answer) = health::probe(&app, request.method(), &path).await {
        return answer;
    }
    let (headers, uri) = (request.headers(), request.uri());
    let browser = app
        .hosts
        .check(headers, uri)
        .and_then(|()| browsers::same_origin(headers, uri));
    if let Err(refusal) = browser {
        return if api {
            api::refused(&refusal)
        } else {
            dashboard::refused(&app, &refusal)
        };
    }
    let caller = match (app.authorized(request.headers(), &query, api), api) {
        (Access::Granted(caller), _) => caller,
        (Access::FromQuery(token), false) => {
            return dashboard::remember_token(&path, &token);
        }
        // A token in a URL ends up in logs and histories: the API takes it in a header only.
        (Access::FromQuery(_) | Access::Denied, true) => return api::unauthorized(),
        (Access::Denied, false) => return dashboard::unauthorized(),
    };
    if path == "/metrics" {
        return metrics::scrape(app, request.method(), &caller).await;
    }
    if api {
        api::handle(app, request, caller).await
    } else if request.method() == Method::GET || request.method() == Method::HEAD {
        dashboard::handle(app, &path, &query, request.headers(), &caller).await
    } else if request.method() == Method::POST && path.starts_with("/actions/") {
        // A dashboard form: acts only with its session's form token (dashboard::forms).
        dashboard::act(app, request, caller).await
    } else {
        (
            StatusCode::METHOD_NOT_ALLOWED,
            "the dashboard reads with GET and acts with its forms' POST to /actions/\n",
        )
            .into_response()
    }
}

/// A request refused by the HTTP layer: its status, its error code, the header or part of
/// the request refused and the rule it broke.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub status: StatusCode,
    pub code: &'static str,
    pub field: &'static str,
    pub rule: String,
}

impl Refusal {
    /// A request this server will not serve whatever its token (403, `FORBIDDEN`).
    pub(crate) fn forbidden(field: &'static str, rule: String) -> Refusal {
        Refusal {
            status: StatusCode::FORBIDDEN,
            code: "FORBIDDEN",
            field,
            rule,
        }
    }

    /// A request whose `field` broke `rule` (`VALIDATION`, as the store's own input errors).
    pub(crate) fn invalid(status: StatusCode, field: &'static str, rule: String) -> Refusal {
        Refusal {
            status,
            code: "VALIDATION",
            field,
            rule,
        }
    }

    /// What it says, as every error's message does.
    pub(crate) fn message(&self) -> String {
        match self.code {
            "VALIDATION" => format!("invalid input: {}: {}", self.field, self.rule),
            _ => format!("refused: {}: {}", self.field, self.rule),
        }
    }
}

/// Whether a request may go on.
enum Access {
    /// Yes, acting as these agents.
    Granted(Agents),
    /// The token (given here) came in the query string: fine once; the dashboard moves it to a
    /// cookie.
    FromQuery(String),
    Denied,
}

impl App {
    /// Whether the request carries a token: as a bearer token, or (for the dashboard's pages
    /// only) in the dashboard's cookie or the query string. The cookie never opens the API: a
    /// browser sends it along with whatever another page of the same site asks of the server.
    /// `--token` acts as any agent; a token of `--credentials` as its agents.
    fn authorized(&self, headers: &HeaderMap, query: &str, api: bool) -> Access {
        if self.token.is_none() && self.credentials.is_none() {
            return Access::Granted(Agents::Any);
        }
        let agents = |given: &str| -> Option<Agents> {
            let operator = self
                .token
                .as_deref()
                .is_some_and(|expected| handoff_core::bundle::same_token(given, expected));
            if operator {
                return Some(Agents::Any);
            }
            self.credentials.as_ref()?.agents_of(given).cloned()
        };
        let bearer = bearer_token(headers);
        let cookie = (!api).then(|| dashboard_cookie(headers)).flatten();
        if let Some(caller) = bearer.or(cookie).and_then(agents) {
            return Access::Granted(caller);
        }
        match query_pairs(query).find(|(name, _)| name == "token") {
            Some((_, token)) if agents(&token).is_some() => Access::FromQuery(token),
            _ => Access::Denied,
        }
    }

    /// Runs a blocking store call off the async threads.
    async fn blocking<T: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce(&App) -> T + Send + 'static,
    ) -> Result<T, Error> {
        let app = Arc::clone(self);
        // The request's span goes along: the operation's own opens under it.
        let span = tracing::Span::current();
        tokio::task::spawn_blocking(move || span.in_scope(|| work(&app)))
            .await
            .map_err(|e| Error::storage(format!("a request's worker stopped: {e}")))
    }
}

/// The token in the dashboard's cookie ([`TOKEN_COOKIE`]), if the request carries it.
pub(crate) fn dashboard_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .into_iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().strip_prefix(TOKEN_COOKIE)?.strip_prefix('='))
        .next()
}

/// The token of an `Authorization: Bearer …` header (the scheme is case-insensitive, RFC 9110
/// §11.1).
pub(super) fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
}

/// `name=value` pairs of a query string, decoded (`%XX`, `+`).
pub(crate) fn query_pairs(query: &str) -> impl Iterator<Item = (String, String)> + '_ {
    form_urlencoded::parse(query.as_bytes())
        .map(|(name, value)| (name.into_owned(), value.into_owned()))
}

/// A path segment, `%XX` decoded (a malformed escape stays as it is).
pub(crate) fn path_segment(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// A JSON answer.
pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
