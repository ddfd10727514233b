//! The dashboard of `handoff serve` over HTTP (issue 49): its pages tell the truth about a
//! store with a live claim, a lapsed one, a failed attempt, a dead handoff and a rejected one;
//! its forms act through the catalog, only with the session's cookie *and* its form token, and
//! never for another site. The same in headless Chromium: `dashboard_browser.rs`.

mod common;
mod serving;

use std::process::Command;

use common::Env;
use serving::{
    ATTEMPT_ERROR, DEAD_ERROR, REJECT_REASON, Scene, Server, TOKEN, complete, form, status,
};

fn cookie() -> String {
    format!("handoff_token={TOKEN}")
}

#[test]
fn the_queue_tells_live_from_lapsed_and_shows_every_error() {
    let env = Env::new();
    let scene = Scene::build(&env);
    let server = Server::start(&env, &["--token", TOKEN]);
    let page = server.page("/?refresh=0");
    assert_eq!(page.status, 200, "{page:?}");
    let body = &page.body;
    for text in [
        "ends in 4 min",
        "lapsed ",
        "ago — reclaimable",
        ATTEMPT_ERROR,
        DEAD_ERROR,
        REJECT_REASON,
        "Dead handoffs (attempts used up)",
        // The holder's progress, escaped.
        "{&quot;done&quot;:3,&quot;of&quot;:10}",
        "acting as operator",
    ] {
        assert!(body.contains(text), "the queue lacks {text:?}:\n{body}");
    }
    // Numbers sit under their headers: a numeric column's header is aligned as its cells.
    assert!(body.contains("<th class=\"n\">attempts</th>"), "{body}");
    // Each record is named by a link.
    for id in [&scene.live, &scene.lapsed, &scene.dead, &scene.rejected] {
        assert!(body.contains(&format!("href=\"/handoffs/{id}\"")), "{id}");
    }
    // The lapsed claim is not offered for release (anyone may take it); the live one is.
    let record = server.page(&format!("/handoffs/{}?refresh=0", scene.lapsed));
    assert!(record.body.contains("— reclaimable"), "{}", record.body);
    assert!(!record.body.contains("/actions/revoke_claim"));
    let live = server.page(&format!("/handoffs/{}?refresh=0", scene.live));
    assert!(live.body.contains("/actions/revoke_claim") && live.body.contains("ends in"));
    let dead = server.page(&format!("/handoffs/{}?refresh=0", scene.dead));
    assert!(dead.body.contains(DEAD_ERROR) && dead.body.contains("1/1"));
}

#[test]
fn a_retry_form_puts_a_dead_handoff_back_and_a_worker_completes_it() {
    let env = Env::new();
    let scene = Scene::build(&env);
    let server = Server::start(&env, &["--token", TOKEN]);
    let path = format!("/handoffs/{}", scene.dead);
    let page = server.page(&path);
    let csrf = page.form_field("retry", "csrf").expect("a retry form");
    let retry = |headers: &[(&str, &str)], fields: &[(&str, &str)]| {
        let mut all = vec![("content-type", "application/x-www-form-urlencoded")];
        all.extend_from_slice(headers);
        server.request("POST", "/actions/retry", &all, &form(fields))
    };
    let cookie = cookie();
    let fields = [
        ("csrf", csrf.as_str()),
        ("back", path.as_str()),
        ("id", scene.dead.as_str()),
        ("reason", "the card processor is back"),
    ];

    // Refused, and nothing changes: without the form token; with a wrong one; from another
    // site's page; with the token but no session; with a GET.
    let without: Vec<(&str, &str)> = fields
        .iter()
        .copied()
        .filter(|(k, _)| *k != "csrf")
        .collect();
    let answer = retry(&[("cookie", &cookie)], &without);
    assert_eq!(answer.status, 403, "{answer:?}");
    assert!(answer.body.contains("csrf"), "{}", answer.body);
    let mut wrong = fields;
    wrong[0].1 = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    assert_eq!(retry(&[("cookie", &cookie)], &wrong).status, 403);
    let foreign = retry(
        &[("cookie", &cookie), ("origin", "http://evil.example")],
        &fields,
    );
    assert_eq!(foreign.status, 403, "{foreign:?}");
    assert!(foreign.body.contains("origin"), "{}", foreign.body);
    let other_port = format!("http://127.0.0.1:{}", server.addr.port() + 1);
    assert_eq!(
        retry(&[("cookie", &cookie), ("origin", &other_port)], &fields).status,
        403
    );
    assert_eq!(
        retry(
            &[("cookie", &cookie), ("sec-fetch-site", "same-site")],
            &fields
        )
        .status,
        403
    );
    assert_eq!(
        retry(&[], &fields).status,
        401,
        "the token alone is no session"
    );
    let get = server.page(&format!("/actions/retry?csrf={csrf}&id={}", scene.dead));
    assert_ne!(get.status, 303, "a GET never acts");
    assert_eq!(status(&env, &scene.dead), "failed");

    // With the session and its token, from its own page: back in the queue.
    let origin = format!("http://{}", server.addr);
    let answer = retry(&[("cookie", &cookie), ("origin", &origin)], &fields);
    assert_eq!(answer.status, 303, "{answer:?}");
    let location = answer.header("location").expect("location");
    assert_eq!(
        location,
        format!("{path}?done=retry&id={}", scene.dead),
        "back to the page"
    );
    let record = env.show(&scene.dead);
    assert_eq!(record["status"], "pending");
    assert_eq!(record["attempts"], 0);
    let events = env.run(&["events", &scene.dead, "--json"]).expect(0).json();
    let retried = events
        .as_array()
        .and_then(|e| e.iter().find(|e| e["kind"] == "retried"))
        .unwrap_or_else(|| panic!("no retried event: {events}"));
    assert_eq!(retried["actor"], "operator");
    let flash = server.page(location);
    assert!(flash.body.contains("Back in the queue"), "{}", flash.body);

    // A worker takes it up and completes it.
    complete(&env, &scene.dead, "refunds");
    assert_eq!(status(&env, &scene.dead), "completed");

    // An action the record's state refuses: the page again, with the core's error.
    let again = retry(&[("cookie", &cookie)], &fields);
    assert_eq!(again.status, 409, "{again:?}");
    assert!(
        again.body.contains("<strong>INVALID_TRANSITION</strong>"),
        "{}",
        again.body
    );
}

#[test]
fn claims_priorities_and_cancels_act_through_the_catalog() {
    let env = Env::new();
    let scene = Scene::build(&env);
    let server = Server::start(&env, &["--token", TOKEN]);
    let cookie = cookie();
    let csrf = server
        .page("/")
        .form_field("cancel", "csrf")
        .expect("a cancel form");
    let post = |op: &str, fields: &[(&str, &str)]| {
        let mut all = vec![("csrf", csrf.as_str()), ("back", "/")];
        all.extend_from_slice(fields);
        server.request(
            "POST",
            &format!("/actions/{op}"),
            &[
                ("cookie", &cookie),
                ("content-type", "application/x-www-form-urlencoded"),
            ],
            &form(&all),
        )
    };
    let done = post(
        "revoke_claim",
        &[("id", &scene.live), ("reason", "the worker hangs")],
    );
    assert_eq!(done.status, 303, "{done:?}");
    assert_eq!(status(&env, &scene.live), "pending");
    // A reason is required to take a claim away: named as the core names it.
    let refused = post("revoke_claim", &[("id", &scene.attempt)]);
    assert_eq!(refused.status, 400, "{refused:?}");
    assert!(refused.body.contains("VALIDATION") && refused.body.contains("<code>reason</code>"));

    assert_eq!(
        post("set_priority", &[("id", &scene.attempt), ("priority", "7")]).status,
        303
    );
    assert_eq!(env.show(&scene.attempt)["priority"], 7);
    let waiting = server.page("/?refresh=0").body;
    let first_waiting = waiting
        .split("Waiting, next first")
        .nth(1)
        .and_then(|s| s.split("href=\"/handoffs/").nth(1))
        .expect("a waiting record");
    assert!(
        first_waiting.starts_with(&scene.attempt),
        "highest priority first"
    );

    assert_eq!(post("cancel", &[("id", &scene.live)]).status, 303);
    assert_eq!(status(&env, &scene.live), "cancelled");
    // No such action.
    assert_eq!(post("delete_everything", &[]).status, 404);
}

#[test]
fn the_acting_agent_is_the_sessions_own() {
    let env = Env::new();
    let scene = Scene::build(&env);
    let token = "ops-alice-token-0123456789abcdef";
    let digest = Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(token.as_bytes())?;
            child.wait_with_output()
        })
        .expect("sha256sum");
    let digest = String::from_utf8_lossy(&digest.stdout)
        .split_whitespace()
        .next()
        .expect("digest")
        .to_owned();
    let credentials = env.dir.path().join("credentials.json");
    std::fs::write(
        &credentials,
        format!(r#"{{"tokens": [{{"sha256": "{digest}", "agents": ["ops-alice"]}}]}}"#),
    )
    .expect("credentials");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&credentials, std::fs::Permissions::from_mode(0o600))
            .expect("chmod");
    }
    let credentials = credentials.to_string_lossy().into_owned();
    let server = Server::start(&env, &["--credentials", &credentials]);
    let cookie = format!("handoff_token={token}");
    let page = server.request(
        "GET",
        &format!("/handoffs/{}", scene.rejected),
        &[("cookie", &cookie)],
        b"",
    );
    assert!(page.body.contains("acting as ops-alice"), "{}", page.body);
    let csrf = page.form_field("retry", "csrf").expect("a retry form");
    let answer = server.request(
        "POST",
        "/actions/retry",
        &[
            ("cookie", &cookie),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        // A `by` in the form is not who acts: the session is.
        &form(&[("csrf", &csrf), ("id", &scene.rejected), ("by", "mallory")]),
    );
    assert_eq!(answer.status, 303, "{answer:?}");
    let events = env
        .run(&["events", &scene.rejected, "--json"])
        .expect(0)
        .json();
    let retried = events
        .as_array()
        .and_then(|e| e.iter().find(|e| e["kind"] == "retried"))
        .unwrap_or_else(|| panic!("no retried event: {events}"));
    assert_eq!(retried["actor"], "ops-alice");
}
