"""What a web page can make a browser send to `handoff serve`, refused: a body that is not
`application/json` (an HTML form, a "simple" `fetch`), a `Host` that is not this server's (DNS
rebinding), an `Origin` of another site or port, the dashboard's cookie on the API, and a
redirect to another server from `?token=`. Clients that are not browsers (no `Origin`, the
server's own address in `Host`) go on as before. The same attacks from a real page in Chromium
are in `tests/dashboard/test_cross_origin.py`."""

from __future__ import annotations

import urllib.parse
import uuid

import pytest

import conftest
from conftest import Server, Servers

TOKEN = "browser-test-token-0123456789abcdef"
CREATE = {"task_id": "browser", "goal": "made by a web page", "to_agent": "victim"}


def count(server: Server) -> int:
    return server.ok("GET", "/handoffs")["count"]


def refused(reply, status: int, field: str) -> None:  # type: ignore[no-untyped-def]
    """`reply` is the typed error with `status` whose one problem names `field` and its rule."""
    assert reply.status == status, reply
    error = reply.error()
    assert error["code"] and error["message"], error
    problems = error.get("problems") or []
    assert [p["field"] for p in problems] == [field], error
    assert problems[0]["rule"], error


# --- Content-Type ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx"],
)
def test_a_body_that_is_not_application_json_is_refused(server: Server, content_type: str) -> None:
    reply = server.post("/handoffs", CREATE, headers={"Content-Type": content_type})
    refused(reply, 415, "content-type")
    assert "application/json" in reply.error()["message"], reply
    assert count(server) == 0


def test_json_with_its_parameters_and_a_post_without_a_body_are_taken(server: Server) -> None:
    for content_type in ("application/json", "application/json; charset=utf-8", "Application/JSON"):
        reply = server.post("/handoffs", CREATE, headers={"Content-Type": content_type})
        assert reply.status == 201, (content_type, reply)
    # No body and no Content-Type (`curl -X POST`): no arguments, as before.
    assert server.request("POST", "/reap").status == 200
    assert count(server) == 3


# --- Host ------------------------------------------------------------------------------------


def test_a_host_that_is_not_this_servers_is_refused(server: Server) -> None:
    """DNS rebinding: a name the attacker controls, pointed at 127.0.0.1, reaches the server
    with that name in `Host`; the API and the dashboard refuse it."""
    server.ok("POST", "/handoffs", CREATE)
    for host in ("rebind.evil.example", f"rebind.evil.example:{server.port}", "localhost.evil.example", "127.0.0.1.evil.example"):
        reply = server.get("/queue", headers={"Host": host})
        refused(reply, 403, "host")
        assert "--allow-host" in reply.error()["message"], reply
        assert "victim" not in reply.text, reply
        page = server.get(server.url + "/", headers={"Host": host})
        assert page.status == 403 and "victim" not in page.text, page
        refused(server.post("/handoffs", CREATE, headers={"Host": host}), 403, "host")
    assert count(server) == 1


def test_the_servers_own_addresses_are_its_hosts(server: Server) -> None:
    for host in (f"127.0.0.1:{server.port}", "127.0.0.1", f"localhost:{server.port}", "LOCALHOST", "localhost."):
        assert server.get("/queue", headers={"Host": host}).status == 200, host
        assert server.get(server.url + "/", headers={"Host": host}).status == 200, host


def test_a_name_given_with_allow_host_is_taken(servers: Servers) -> None:
    server = servers.start(None, "--allow-host", "handoff.test", "--allow-host", "queue.internal:8443")
    assert server.get("/queue", headers={"Host": f"handoff.test:{server.port}"}).status == 200
    assert server.get("/queue", headers={"Host": "Handoff.Test"}).status == 200
    assert server.get("/queue", headers={"Host": "queue.internal:8443"}).status == 200
    refused(server.get("/queue", headers={"Host": "queue.internal:9999"}), 403, "host")
    refused(server.get("/queue", headers={"Host": "evil.handoff.test"}), 403, "host")
    assert server.get("/queue").status == 200, "its own address still works"


def test_allow_host_from_the_environment(servers: Servers, monkeypatch: pytest.MonkeyPatch) -> None:
    original = conftest.server_env
    monkeypatch.setattr(conftest, "server_env", lambda: {**original(), "HANDOFF_SERVE_ALLOW_HOST": "a.test,b.test"})
    server = servers.start(None)
    assert server.get("/queue", headers={"Host": "a.test"}).status == 200
    assert server.get("/queue", headers={"Host": "b.test"}).status == 200
    refused(server.get("/queue", headers={"Host": "c.test"}), 403, "host")


# --- Origin ----------------------------------------------------------------------------------


def test_a_cross_origin_request_is_refused(server: Server) -> None:
    """The issue's repro (a `text/plain` POST from `http://evil.example`) and every other origin
    that is not this server's: another port of the same machine, `null` (a sandboxed frame, a
    file), a name that only starts like this server's."""
    other = f"http://127.0.0.1:{server.port + 1 if server.port < 65535 else server.port - 1}"
    for origin in ("http://evil.example", other, "null", f"http://localhost:{server.port}.evil.example"):
        refused(server.post("/handoffs", CREATE, headers={"Origin": origin}), 403, "origin")
        refused(server.get("/queue", headers={"Origin": origin}), 403, "origin")
    reply = server.post("/handoffs", CREATE, headers={"Origin": "http://evil.example", "Content-Type": "text/plain"})
    assert reply.status in (403, 415), reply
    assert count(server) == 0


def test_this_servers_own_origin_is_taken(server: Server) -> None:
    assert server.post("/handoffs", CREATE, headers={"Origin": server.url}).status == 201
    host = f"localhost:{server.port}"
    assert server.post("/handoffs", CREATE, headers={"Origin": f"http://{host}", "Host": host}).status == 201
    assert count(server) == 2


# --- The dashboard's cookie ------------------------------------------------------------------


def test_the_dashboards_cookie_does_not_open_the_api(servers: Servers) -> None:
    server = servers.start(None, token=TOKEN)
    cookie = {"Cookie": f"handoff_token={TOKEN}"}
    assert server.get(server.url + "/", auth=False, headers=cookie).status == 200
    for method, path, body in (("GET", "/queue", None), ("GET", "/handoffs", None), ("POST", "/handoffs", CREATE)):
        reply = server.request(method, path, body, auth=False, headers=cookie)
        assert reply.status == 401 and reply.error()["code"] == "UNAUTHORIZED", (path, reply)
    assert count(server) == 0
    # The bearer token still opens it, and the dashboard still links to the API's document.
    assert server.post("/handoffs", CREATE).status == 201
    document = server.get(server.url + "/openapi.json", auth=False, headers=cookie)
    assert document.status == 200 and document.json["openapi"].startswith("3.1"), document
    assert 'href="/openapi.json"' in server.get(server.url + "/?refresh=0", auth=False, headers=cookie).text


# --- ?token= redirects -----------------------------------------------------------------------


@pytest.mark.parametrize("path", ["//evil.example/x", "///evil.example/x", "//evil.example", "/%2F/evil.example"])
def test_opening_with_a_token_redirects_only_to_a_path_of_this_server(servers: Servers, path: str) -> None:
    """The issue's repro: `GET //evil.example/x?token=T` was sent on to `//evil.example/x`,
    which a browser reads as another server."""
    server = servers.start(None, token=TOKEN)
    location = _location(server, path)
    parsed = urllib.parse.urlsplit(location)
    assert parsed.scheme == "" and parsed.netloc == "", location
    assert location.startswith("/") and not location.startswith("//") and "\\" not in location, location


def _location(server: Server, path: str) -> str:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.putrequest("GET", f"{path}?token={TOKEN}", skip_host=True)
        connection.putheader("Host", f"127.0.0.1:{server.port}")
        connection.endheaders()
        answer = connection.getresponse()
        answer.read()
        assert answer.status == 303, (answer.status, answer.getheaders())
        assert "handoff_token=" in (answer.getheader("Set-Cookie") or "")
        return answer.getheader("Location") or ""
    finally:
        connection.close()


def test_a_redirect_keeps_the_page_it_was_asked_for(servers: Servers) -> None:
    server = servers.start(None, token=TOKEN)
    assert _location(server, "/tasks") == "/tasks"
    assert _location(server, "/") == "/"
    assert _location(server, "/handoffs/" + str(uuid.uuid4())).startswith("/handoffs/")
