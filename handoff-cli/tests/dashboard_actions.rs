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

/// `handoff ARGS --json` on the store: its answer.
fn json(env: &Env, args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.push("--json");
    env.run(&all).expect(0).json()
}

/// Claims `id` as `agent`: its token and secret.
fn held(env: &Env, id: &str, agent: &str) -> (String, String) {
    let claim = json(env, &["claim", id, agent]);
    (
        claim["token"].to_string(),
        claim["claim_secret"].as_str().expect("secret").to_owned(),
    )
}

/// Posts the form of `op` found on `page` with `fields` added, as the operator.
fn post_form(server: &Server, page: &str, op: &str, fields: &[(&str, &str)]) -> serving::Answer {
    let csrf = server
        .page(page)
        .form_field(op, "csrf")
        .unwrap_or_else(|| panic!("no {op} form on {page}"));
    let mut all = vec![("csrf", csrf.as_str()), ("back", page)];
    all.extend_from_slice(fields);
    server.request(
        "POST",
        &format!("/actions/{op}"),
        &[
            ("cookie", &cookie()),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        &form(&all),
    )
}

#[test]
fn a_task_page_names_the_task_shows_who_works_and_answers_escalations() {
    let env = Env::new();
    let task = json(
        &env,
        &[
            "task",
            "create",
            "Ship the login",
            "ship the login form",
            r#"{"id":"a","name":"Build","agent":"claude","dependencies":[],"max_attempts":1}"#,
            r#"{"id":"b","name":"Test","agent":"gemini","dependencies":["a"]}"#,
        ],
    );
    let task = task["id"].as_str().expect("task id").to_owned();
    env.run(&["task", "start", &task]).expect(0);
    let step = json(&env, &["task", "get", &task])["plan"]["steps"][0]["handoff_id"]
        .as_str()
        .expect("step a's handoff")
        .to_owned();
    let (token, secret) = held(&env, &step, "claude");
    env.run(&[
        "heartbeat",
        "--token",
        &token,
        "--secret",
        &secret,
        &step,
        r#"{"phase":"compiling"}"#,
    ])
    .expect(0);
    let server = Server::start(&env, &["--token", TOKEN]);
    let path = format!("/tasks/{task}");
    let page = server.page(&format!("{path}?refresh=0")).body;
    assert!(page.contains("<h1>Task: Ship the login</h1>"), "{page}");
    assert!(
        page.contains("ends in ") && page.contains("{&quot;phase&quot;:&quot;compiling&quot;}")
    );
    assert!(
        page.contains(">claude</td>"),
        "the running step's holder: {page}"
    );

    // Paused, resumed, from the task's own forms.
    assert_eq!(
        post_form(&server, &path, "pause_task", &[("id", &task)]).status,
        303
    );
    assert_eq!(json(&env, &["task", "get", &task])["status"], "paused");
    assert_eq!(
        post_form(&server, &path, "resume_task", &[("id", &task)]).status,
        303
    );
    assert_eq!(json(&env, &["task", "get", &task])["status"], "in_progress");

    // The step's only attempt fails: the task pauses and waits for a human, who answers on
    // the page; the step is offered again.
    env.run(&[
        "fail",
        "--token",
        &token,
        "--secret",
        &secret,
        &step,
        "linker crashed",
    ])
    .expect(0);
    assert_eq!(json(&env, &["task", "get", &task])["status"], "paused");
    let page = server.page(&format!("{path}?refresh=0")).body;
    assert!(page.contains("Open escalations") && page.contains("/actions/resolve_escalation"));
    let escalation = json(&env, &["list", "--task-id", &task, "--kind", "escalation"])[0]["id"]
        .as_str()
        .expect("the escalation")
        .to_owned();
    let answered = post_form(
        &server,
        &path,
        "resolve_escalation",
        &[
            ("handoff_id", &escalation),
            ("resolution", "use the staging keys"),
            ("retry", "true"),
        ],
    );
    assert_eq!(answered.status, 303, "{answered:?}");
    assert_eq!(env.show(&escalation)["status"], "completed");
    let after = json(&env, &["task", "get", &task]);
    assert_eq!(after["status"], "in_progress", "{after}");
    assert_ne!(
        after["plan"]["steps"][0]["handoff_id"],
        step.as_str(),
        "offered again: {after}"
    );

    // Cancelled from the list of tasks.
    assert_eq!(
        post_form(&server, "/tasks", "cancel_task", &[("id", &task)]).status,
        303
    );
    assert_eq!(json(&env, &["task", "get", &task])["status"], "cancelled");
}

#[test]
fn a_run_page_shows_reports_and_decisions_and_resolves_its_escalation() {
    let env = Env::new();
    let init = json(
        &env,
        &[
            "protocol",
            "initialize",
            "run-1",
            "--manager",
            "boss",
            "--worker",
            "coder",
            "--instructions",
            "add the login form",
            "--success-criteria",
            "tests pass",
        ],
    )["id"]
        .as_str()
        .expect("init")
        .to_owned();
    let (t, s) = held(&env, &init, "coder");
    let report = json(
        &env,
        &[
            "protocol",
            "report",
            "--token",
            &t,
            "--secret",
            &s,
            &init,
            "PARTIAL",
            "--accomplished",
            "form markup",
            "--issues",
            "CSRF not wired",
        ],
    )["id"]
        .as_str()
        .expect("report")
        .to_owned();
    let (t, s) = held(&env, &report, "boss");
    let decided = json(
        &env,
        &[
            "protocol",
            "decide",
            "--token",
            &t,
            "--secret",
            &s,
            &report,
            "CONTINUE",
            "--instructions",
            "wire the CSRF token",
        ],
    )["id"]
        .as_str()
        .expect("decision")
        .to_owned();
    let (t, s) = held(&env, &decided, "coder");
    let second = json(
        &env,
        &[
            "protocol",
            "report",
            "--token",
            &t,
            "--secret",
            &s,
            &decided,
            "FAILED",
            "--issues",
            "the session store is missing",
        ],
    )["id"]
        .as_str()
        .expect("second report")
        .to_owned();
    let (t, s) = held(&env, &second, "boss");
    json(
        &env,
        &[
            "protocol",
            "escalate",
            "--token",
            &t,
            "--secret",
            &s,
            &second,
            "technical",
            "high",
            "high",
            "environment",
            "no session store",
            "login stays broken",
            "add redis",
        ],
    );
    let server = Server::start(&env, &["--token", TOKEN]);
    let page = server.page("/tasks/run-1?refresh=0").body;
    for text in [
        "PARTIAL",
        "accomplished: form markup",
        "issues: CSRF not wired",
        "wire the CSRF token",
        "issues: the session store is missing",
        "/actions/resolve\"",
    ] {
        assert!(
            page.contains(text),
            "the run's page lacks {text:?}:\n{page}"
        );
    }
    let escalation = json(
        &env,
        &["list", "--task-id", "run-1", "--kind", "escalation"],
    )[0]["id"]
        .as_str()
        .expect("the escalation")
        .to_owned();
    let answered = post_form(
        &server,
        "/tasks/run-1",
        "resolve",
        &[
            ("handoff_id", &escalation),
            ("resolution", "redis is up on port 6380"),
        ],
    );
    assert_eq!(answered.status, 303, "{answered:?}");
    assert_eq!(env.show(&escalation)["status"], "completed");
    let run = json(&env, &["protocol", "show", "run-1"]);
    assert_ne!(run["phase"], "escalated", "{run}");
}

#[test]
fn a_bundle_is_imported_by_its_share_token_or_refused_as_the_core_says() {
    let env = Env::new();
    env.create(&["notes", "take notes"]);
    let bundle = json(
        &env,
        &["bundle", "create", "Login notes", "--task-id", "notes"],
    );
    let id = bundle["id"].as_str().expect("bundle id").to_owned();
    let shared = json(&env, &["bundle", "visibility", &id, "team"]);
    let share = shared["share_token"]
        .as_str()
        .expect("share token")
        .to_owned();
    let server = Server::start(&env, &["--token", TOKEN]);
    let page = server.page("/bundles").body;
    assert!(page.contains("enctype=\"multipart/form-data\"") && page.contains("type=\"file\""));
    let imported = post_form(
        &server,
        "/bundles",
        "import_bundle",
        &[("share_token", &share)],
    );
    assert_eq!(imported.status, 303, "{imported:?}");
    let missing = post_form(
        &server,
        "/bundles",
        "import_bundle",
        &[("share_token", "kb_no_such_token")],
    );
    assert_eq!(missing.status, 404, "{missing:?}");
    assert!(missing.body.contains("<strong>NOT_FOUND</strong>"));
    let csrf = server
        .page("/bundles")
        .form_field("import_bundle", "csrf")
        .expect("form");
    let upload = |file: &str| {
        let body = format!(
            "--b0undary\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{csrf}\r\n\
             --b0undary\r\nContent-Disposition: form-data; name=\"back\"\r\n\r\n/bundles\r\n\
             --b0undary\r\nContent-Disposition: form-data; name=\"bundle\"; filename=\"b.json\"\r\n\
             Content-Type: application/json\r\n\r\n{file}\r\n--b0undary--\r\n"
        );
        server.request(
            "POST",
            "/actions/import_bundle",
            &[
                ("cookie", &cookie()),
                ("content-type", "multipart/form-data; boundary=b0undary"),
            ],
            body.as_bytes(),
        )
    };
    // The bundle's portable JSON, uploaded as a file.
    let file = upload(&bundle["data"].to_string());
    assert_eq!(file.status, 303, "{file:?}");
    assert_eq!(file.header("location"), Some("/bundles?done=import_bundle"));
    // A file that is not a bundle: refused by name.
    assert!(
        upload("{\"name\": \"not a bundle\"}")
            .body
            .contains("<code>schema_version</code>")
    );
    let body = format!(
        "--b0undary\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{csrf}\r\n\
         --b0undary\r\nContent-Disposition: form-data; name=\"back\"\r\n\r\n/bundles\r\n\
         --b0undary\r\nContent-Disposition: form-data; name=\"bundle\"; filename=\"b.json\"\r\n\
         Content-Type: application/json\r\n\r\n{{\"name\": \"not a bundle\"}}\r\n--b0undary--\r\n"
    );
    let uploaded = server.request(
        "POST",
        "/actions/import_bundle",
        &[
            ("cookie", &cookie()),
            ("content-type", "multipart/form-data; boundary=b0undary"),
        ],
        body.as_bytes(),
    );
    assert_eq!(uploaded.status, 400, "{uploaded:?}");
    assert!(
        uploaded.body.contains("<code>schema_version</code>"),
        "{}",
        uploaded.body
    );
}
