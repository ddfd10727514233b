"""The dashboard of `handoff serve`: its pages over HTTP (readable without JavaScript, escaped,
redacted), and in headless Chromium driven by Playwright (JavaScript off): load the queue,
click through to a task's timeline, open it with its token, and take the screenshot the README
shows.

    HANDOFF_BIN=target/debug/handoff python -m pytest handoff-cli/tests/dashboard

Chromium is Debian's (`/usr/bin/chromium`, or `CHROMIUM`); without it, or without the
`playwright` package, the browser tests are skipped and say why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import handoff_core as hc

from demo_store import build

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(os.environ.get("HANDOFF_BIN", ROOT / "target" / "debug" / "handoff"))
TOKEN = "dashboard-test-token-0123456789abcdef"
SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"


class Server:
    def __init__(self, db: Path, *extra: str) -> None:
        self.process = subprocess.Popen([str(BIN), "--db", str(db), "serve", "--bind", "127.0.0.1:0", *extra],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert "listening on http://" in line, line + (self.process.stderr.read() if self.process.stderr else "")
        self.url = line.split("listening on ")[1].split()[0].rstrip("/")

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
        request = urllib.request.Request(self.url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("dashboard") / "demo.db"
    build(str(path))
    with hc.open(path) as store:
        store.create("escaping", f"<script>alert(1)</script> key {SECRET}", from_agent="claude", to_agent="gemini")
    return path


@pytest.fixture(scope="module")
def server(store_path: Path) -> Iterator[Server]:
    running = Server(store_path)
    yield running
    running.stop()


def test_the_queue_shows_counts_stalled_work_and_what_waits(server: Server) -> None:
    status, page = server.get("/")
    assert status == 200
    assert "<h1>Queue</h1>" in page and "By status and agent" in page
    assert 'href="/tasks/migrate-billing-2"' in page, "the stalled task is listed"
    assert "stalled</strong>" in page, "the quiet claim is marked"
    assert '<meta http-equiv="refresh"' in page
    assert '<meta http-equiv="refresh"' not in server.get("/?refresh=0")[1]


def test_text_is_escaped_and_secrets_redacted(server: Server) -> None:
    page = server.get("/?refresh=0")[1]
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert SECRET not in page and "[REDACTED:openai-api-key]" in page
    handoffs = hc.open(server.process.args[2]).list(task_id="escaping")  # type: ignore[index]
    status, record = server.get(f"/handoffs/{handoffs[0].id}")
    assert status == 200 and SECRET not in record and "## Current Goal" in record


def test_names_that_could_pass_for_ascii_show_their_code_points(tmp_path: Path) -> None:
    """`gemіni` (a Cyrillic і) would pass for `gemini` on the page: beside it, its code points."""
    path = tmp_path / "names.db"
    lookalike, cyrillic_ceo, genuine = "gem\u0456ni", "\u0441\u0435\u043e", "\u0410\u043d\u043d\u0430"
    with hc.open(path) as store:
        h = store.create("names", "review the fix", from_agent=lookalike, to_agent="claude")
        store.create("names", "plan the release", from_agent="codex", to_agent=cyrillic_ceo)
        store.create("names", "translate", from_agent="codex", to_agent=genuine)
        store.create("names", "<b>", from_agent="codex", to_agent="<\u0430>")
    running = Server(path)
    try:
        marked = f'{lookalike} <span class="cp">(U+0456 at 4)</span>'
        queue = running.get("/?refresh=0")[1]
        assert marked + " → claude" in queue, queue
        assert f'{cyrillic_ceo} <span class="cp">(U+0441 at 1, U+0435 at 2, U+043E at 3)</span>' in queue
        assert "&lt;\u0430&gt; <span class=\"cp\">(U+0430 at 2)</span>" in queue, "escaped like every name"
        # A name in another script is shown as it is.
        assert genuine in queue and f"{genuine} <span" not in queue
        assert marked in running.get(f"/handoffs/{h.id}")[1]
        task = running.get("/tasks/names")[1]
        assert f"<title>{lookalike} (U+0456 at 4) → claude</title>" in task, task
        assert marked in task, "the timeline"
    finally:
        running.stop()


def test_a_task_page_has_its_plan_chain_run_and_timeline(server: Server) -> None:
    tasks = server.get("/tasks")[1]
    assert "Write a post" in tasks
    with hc.open(server.process.args[2]) as store:  # type: ignore[index]
        (plan,) = store.list_tasks()
    page = server.get(f"/tasks/{plan.id}")[1]
    for part in ("<h2>Plan</h2>", "draft-ko", "<h2>Chain</h2>", "<svg", "Timeline, newest first", "task.step_completed"):
        assert part in page, part
    run = server.get("/tasks/auth-refactor")[1]
    assert "Manager/worker run" in run and "iteration 1 of" in run
    assert server.get("/tasks/no-such-task")[0] == 404


def test_bundles_show_their_share_links(server: Server) -> None:
    page = server.get("/bundles")[1]
    assert "Billing migration notes" in page and "/api/v1/bundles/shared/kb_" in page


def test_a_token_guards_the_dashboard(store_path: Path) -> None:
    guarded = Server(store_path, "--token", TOKEN)
    try:
        assert guarded.get("/")[0] == 401
        assert guarded.get("/", {"Authorization": f"Bearer {TOKEN}"})[0] == 200
        assert guarded.get("/", {"Cookie": f"handoff_token={TOKEN}"})[0] == 200
        assert guarded.get("/", {"Cookie": "handoff_token=wrong"})[0] == 401
    finally:
        guarded.stop()


def chromium() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("no Chromium here (Debian: apt-get install chromium): the browser test is skipped")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("the playwright package is not installed: the browser test is skipped")
    return path


def test_in_chromium_click_from_the_queue_to_a_task_timeline(store_path: Path, tmp_path: Path) -> None:
    executable = chromium()
    from playwright.sync_api import sync_playwright

    guarded = Server(store_path, "--token", TOKEN)
    shot = Path(os.environ.get("HANDOFF_SCREENSHOT", tmp_path / "dashboard.png"))
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
            page: Any = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 800}).new_page()
            # Opened once with its token, which moves into a cookie: the address bar loses it.
            page.goto(f"{guarded.url}/?token={TOKEN}&refresh=0")
            assert page.title() == "Queue · handoff"
            assert "token=" not in page.url
            page.click("text=Tasks")
            page.click("text=Write a post")
            page.wait_for_selector("h2:has-text('Timeline, newest first')")
            assert page.locator("table").first.locator("tr").count() == 5, "4 steps and the header"
            page.click("a[href^='/handoffs/']")
            page.wait_for_selector("h2:has-text('Handover record')")
            page.go_back()
            page.screenshot(path=str(shot), full_page=True)
            browser.close()
    finally:
        guarded.stop()
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 20_000
