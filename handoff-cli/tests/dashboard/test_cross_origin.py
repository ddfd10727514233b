"""Another web page, open in the same browser, must not be able to use `handoff serve`: a page on
another port of 127.0.0.1 tries `fetch()` (a "simple" `text/plain` POST that needs no preflight,
a body with no type at all, and `application/json`) and an HTML form that posts JSON as
`text/plain`, against a server with no token, and against a token server whose dashboard the
browser has opened (so that its cookie, `SameSite=Strict`, goes along: another port is the same
site). In headless Chromium with JavaScript on, as a visitor's browser would be.

    HANDOFF_BIN=target/debug/handoff python -m pytest handoff-cli/tests/dashboard/test_cross_origin.py

Chromium is Debian's (`/usr/bin/chromium`, or `CHROMIUM`); without it, or without the
`playwright` package, the test is skipped and says why."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(os.environ.get("HANDOFF_BIN", ROOT / "target" / "debug" / "handoff"))
TOKEN = "cross-origin-test-token-0123456789abcdef"
TASK = "cross-origin"

# The attacker's page: every request it can make without the server's help, each reported in
# `window.results`; the title says when it is done.
FETCHES = """<!doctype html><title>working</title><script>
const api = "API/handoffs";
const body = JSON.stringify({task_id: "TASK", goal: "made by another page", to_agent: "victim"});
window.results = [];
const tries = [
  ["text/plain, no-cors", {method: "POST", mode: "no-cors", credentials: "include", headers: {"Content-Type": "text/plain"}, body}],
  ["no type, no-cors", {method: "POST", mode: "no-cors", credentials: "include", body: new Blob([body])}],
  ["application/json, cors", {method: "POST", mode: "cors", credentials: "include", headers: {"Content-Type": "application/json"}, body}],
  ["read the queue, cors", {method: "GET", mode: "cors", credentials: "include"}],
];
(async () => {
  for (const [name, init] of tries) {
    const url = init.method === "GET" ? "API/queue" : api;
    try {
      const answer = await fetch(url, init);
      let text = "";
      try { text = await answer.text(); } catch (e) {}
      window.results.push({name, type: answer.type, status: answer.status, text});
    } catch (e) {
      window.results.push({name, error: String(e)});
    }
  }
  document.title = "done";
})();
</script>"""

# JSON posted by a form as `text/plain`: the field's name and value join with `=` into an object
# (the `=` lands inside the goal).
FORM = """<!doctype html><title>form</title>
<form method="post" enctype="text/plain" action="API/handoffs">
<input name='{"task_id": "TASK", "to_agent": "victim", "goal": "made by a form' value='"}'>
</form><script>document.forms[0].submit()</script>"""


class Server:
    def __init__(self, db: Path, *extra: str) -> None:
        self.process = subprocess.Popen([str(BIN), "--db", str(db), "serve", "--bind", "127.0.0.1:0", *extra],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert "listening on http://" in line, line + (self.process.stderr.read() if self.process.stderr else "")
        self.url = line.split("listening on ")[1].split()[0].rstrip("/")

    def seed(self, token: str | None) -> None:
        """One handoff addressed to "victim", made by a program, for a page to try to read."""
        body = json.dumps({"task_id": "seeded", "goal": "not for other pages", "to_agent": "victim"}).encode()
        request = urllib.request.Request(f"{self.url}/api/v1/handoffs", data=body, method="POST")
        request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 201

    def made_by_pages(self, token: str | None) -> list[dict[str, Any]]:
        """The handoffs the pages made, read over the API as a program would."""
        request = urllib.request.Request(f"{self.url}/api/v1/handoffs?task_id={TASK}")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.load(answer)["handoffs"]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


class Attacker:
    """A page server on another port of 127.0.0.1, aimed at `api`."""

    def __init__(self, api: str) -> None:
        pages = {"/fetches.html": FETCHES, "/form.html": FORM}
        pages = {path: page.replace("API", api).replace("TASK", TASK).encode() for path, page in pages.items()}

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                page = pages.get(self.path)
                self.send_response(200 if page else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.end_headers()
                self.wfile.write(page or b"")

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def chromium() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("no Chromium here (Debian: apt-get install chromium): the browser test is skipped")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("the playwright package is not installed: the browser test is skipped")
    return path


@pytest.fixture
def browser() -> Iterator[Any]:
    executable = chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield launched
        launched.close()


def attack(browser: Any, server: Server, token: str | None) -> list[dict[str, Any]]:
    """Opens the dashboard (with its token, when there is one), then the attacker's pages in the
    same browser; what the fetches saw."""
    server.seed(token)
    attacker = Attacker(server.url + "/api/v1")
    try:
        page = browser.new_context().new_page()
        if token:
            page.goto(f"{server.url}/?token={token}&refresh=0")
            assert page.title() == "Queue · handoff", "the dashboard opened with its token"
            assert any(c["name"] == "handoff_token" for c in page.context.cookies()), "its cookie is kept"
        page.goto(f"{attacker.url}/fetches.html")
        page.wait_for_function("document.title === 'done'", timeout=30_000)
        results: list[dict[str, Any]] = page.evaluate("window.results")
        with page.expect_navigation(url=f"{server.url}/api/v1/handoffs", timeout=30_000):
            page.goto(f"{attacker.url}/form.html")
        page.wait_for_load_state()
        assert len(results) == 4, results
        return results
    finally:
        attacker.stop()


def test_a_page_on_another_port_cannot_use_a_server_without_a_token(browser: Any, tmp_path: Path) -> None:
    server = Server(tmp_path / "open.db")
    try:
        results = attack(browser, server, None)
        assert server.made_by_pages(None) == [], ([h["goal"] for h in server.made_by_pages(None)], results)
        read = next(r for r in results if r["name"] == "read the queue, cors")
        assert "victim" not in read.get("text", ""), read
    finally:
        server.stop()


def test_a_page_on_another_port_cannot_ride_the_dashboards_cookie(browser: Any, tmp_path: Path) -> None:
    server = Server(tmp_path / "guarded.db", "--token", TOKEN)
    try:
        results = attack(browser, server, TOKEN)
        assert server.made_by_pages(TOKEN) == [], results
        read = next(r for r in results if r["name"] == "read the queue, cors")
        assert "victim" not in read.get("text", ""), read
    finally:
        server.stop()
