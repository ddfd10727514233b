"""`handoff serve` opened with `?token=`: the token moves into a cookie and the browser is sent
back to the page it asked for, and only ever to a page of this server."""

from __future__ import annotations

import urllib.parse
import uuid

import pytest

from conftest import Server, Servers

TOKEN = "browser-test-token-0123456789abcdef"


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
