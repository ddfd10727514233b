//! Issue 49's acceptance, in headless Chromium with JavaScript off, driven through
//! chromedriver's WebDriver HTTP API: the queue shows a lapsed claim, a live one, a failed
//! handoff with its error and a dead one; the retry form on the dead one puts it back to
//! `pending` and a worker then completes it; the same form posted from another site's page,
//! without the form token, is refused and changes nothing.
//!
//! Chromium and chromedriver are Debian's (`make chromium` installs them where it runs as
//! root), found as `CHROMIUM` and `CHROMEDRIVER` or on the `PATH`. Without them the test says
//! loudly that it is skipped, and fails instead when `HANDOFF_REQUIRE_BROWSER=1`.

mod common;
mod serving;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::Env;
use serde_json::{Value, json};
use serving::{ATTEMPT_ERROR, DEAD_ERROR, Scene, Server, TOKEN, complete, request, status};

/// A program on the `PATH`, or where `variable` says.
fn program(variable: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(variable) {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// chromedriver on a port of its own, stopped when dropped.
struct Driver {
    child: Child,
    addr: SocketAddr,
}

impl Driver {
    fn start(chromedriver: &PathBuf) -> Driver {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let driver = Driver { child, addr };
        let started = Instant::now();
        loop {
            let ready = std::net::TcpStream::connect(addr).is_ok()
                && driver.call("GET", "/status", None)["value"]["ready"] == true;
            if ready {
                return driver;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "chromedriver did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let answer = request(
            self.addr,
            method,
            path,
            &[("content-type", "application/json")],
            body.as_bytes(),
        );
        serde_json::from_str(&answer.body)
            .unwrap_or_else(|e| panic!("chromedriver answered {answer:?}: {e}"))
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A browser session of a driver.
struct Browser<'a> {
    driver: &'a Driver,
    id: String,
}

impl<'a> Browser<'a> {
    /// Headless Chromium with JavaScript off (the content setting every page obeys).
    fn open(driver: &'a Driver, chromium: &PathBuf, profile: &std::path::Path) -> Browser<'a> {
        let session = driver.call(
            "POST",
            "/session",
            Some(json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": chromium,
                    "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                             "--disable-dev-shm-usage", "--no-first-run",
                             format!("--user-data-dir={}", profile.display())],
                    "prefs": {"profile.managed_default_content_settings.javascript": 2}
                }
            }}})),
        );
        let id = session["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {session}"))
            .to_owned();
        Browser { driver, id }
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let answer = self
            .driver
            .call(method, &format!("/session/{}{path}", self.id), body);
        if answer["value"].get("error").is_some() {
            panic!("WebDriver {method} {path}: {answer}");
        }
        answer["value"].clone()
    }

    fn go(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url })));
    }

    fn source(&self) -> String {
        self.call("GET", "/source", None)
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    fn title(&self) -> String {
        self.call("GET", "/title", None)
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    fn url(&self) -> String {
        self.call("GET", "/url", None)
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The page's source once `ready` says it is the one expected: a click that submits a
    /// form returns before the answer's page has always been loaded.
    fn source_when(&self, ready: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let source = self.source();
            if ready(&source) || started.elapsed() > Duration::from_secs(15) {
                return source;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn element(&self, css: &str) -> String {
        let found = self.call(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        );
        found
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no element {css}: {found}"))
            .to_owned()
    }

    fn click(&self, css: &str) {
        let element = self.element(css);
        self.call(
            "POST",
            &format!("/element/{element}/click"),
            Some(json!({})),
        );
    }

    fn type_into(&self, css: &str, text: &str) {
        let element = self.element(css);
        self.call(
            "POST",
            &format!("/element/{element}/value"),
            Some(json!({ "text": text })),
        );
    }
}

impl Drop for Browser<'_> {
    fn drop(&mut self) {
        let _ = self
            .driver
            .call("DELETE", &format!("/session/{}", self.id), None);
    }
}

/// Another site: serves `page` to every request, on a port of its own.
fn other_site(page: String) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let mut stream = &stream;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    addr
}

#[test]
fn in_chromium_without_javascript_an_operator_sees_the_truth_and_retries_a_dead_handoff() {
    let (Some(chromium), Some(chromedriver)) = (
        program(
            "CHROMIUM",
            &["chromium", "chromium-browser", "google-chrome"],
        ),
        program("CHROMEDRIVER", &["chromedriver"]),
    ) else {
        let why = "no Chromium or chromedriver here (Debian: apt-get install chromium \
                   chromium-driver, or `make chromium` as root)";
        assert!(
            std::env::var("HANDOFF_REQUIRE_BROWSER").as_deref() != Ok("1"),
            "{why}, and HANDOFF_REQUIRE_BROWSER=1"
        );
        eprintln!("\n*** SKIPPED: the dashboard's browser test: {why} ***\n");
        return;
    };
    let env = Env::new();
    let scene = Scene::build(&env);
    let server = Server::start(&env, &["--token", TOKEN]);
    let driver = Driver::start(&chromedriver);
    let profile = env.dir.path().join("chromium-profile");
    let browser = Browser::open(&driver, &chromium, &profile);

    // JavaScript is off: a page's script does not run.
    browser.go("data:text/html,<title>off</title><script>document.title='on'</script>");
    assert_eq!(browser.title(), "off", "JavaScript runs");

    // Opened once with the token, which moves into the cookie.
    browser.go(&server.url(&format!("/?token={TOKEN}&refresh=0")));
    assert_eq!(browser.title(), "Queue · handoff");
    assert!(!browser.url().contains("token="), "{}", browser.url());
    browser.go(&server.url("/?refresh=0"));
    let queue = browser.source();
    for text in [
        "ends in ",
        "ago — reclaimable",
        ATTEMPT_ERROR,
        DEAD_ERROR,
        "Dead handoffs (attempts used up)",
    ] {
        assert!(queue.contains(text), "the queue lacks {text:?}:\n{queue}");
    }

    // Numbers sit under their headers: in the counts' table, a status column's header and its
    // cells are aligned alike, as Chromium lays them out.
    let align = |css: &str| {
        let element = browser.element(css);
        browser.call("GET", &format!("/element/{element}/css/text-align"), None)
    };
    let header = align("section table thead th:nth-child(2)");
    let cell = align("section table tbody td:nth-child(2)");
    assert_eq!(header, cell, "a count and its header are aligned alike");
    assert_eq!(cell, "right");

    // The dead handoff's page, its retry form, a reason typed and the button clicked.
    browser.go(&server.url(&format!("/handoffs/{}?refresh=0", scene.dead)));
    assert!(browser.source().contains(DEAD_ERROR));
    browser.type_into(
        "form[action='/actions/retry'] input[name=reason]",
        "the card processor is back",
    );
    browser.click("form[action='/actions/retry'] button");
    let after = browser.source_when(|s| s.contains("class=\"flash"));
    assert!(
        browser.url().ends_with(&format!(
            "/handoffs/{}?done=retry&id={}",
            scene.dead, scene.dead
        )),
        "{}",
        browser.url()
    );
    assert!(after.contains("Back in the queue"), "{after}");
    assert_eq!(status(&env, &scene.dead), "pending");
    complete(&env, &scene.dead, "refunds");
    assert_eq!(status(&env, &scene.dead), "completed");

    // Another site's page posts the same form, without the token: refused, nothing changes.
    let forged = format!(
        "<!doctype html><title>prize</title><form method=post action=\"{}\">\
         <input type=hidden name=id value=\"{}\"><input type=hidden name=back value=\"/\">\
         <button>Claim your prize</button></form>",
        server.url("/actions/retry"),
        scene.rejected
    );
    let site = other_site(forged);
    browser.go(&format!("http://{site}/"));
    browser.click("button");
    let refused = browser.source_when(|s| !s.contains("Claim your prize"));
    assert!(
        refused.contains("Refused") && refused.contains("origin"),
        "{refused}"
    );
    assert_eq!(status(&env, &scene.rejected), "rejected");
}
