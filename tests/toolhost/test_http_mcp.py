"""The host against real streamable-HTTP MCP servers on 127.0.0.1: bearer and OAuth."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from campaigns.basics import GlyphoxaError, Tier
from tools.config import McpServerConfig
from tools.host import ToolHost

sys.path.insert(0, str(Path(__file__).parent / "servers"))
from http_server import BearerMcpServer, OAuthMcpServer

ALL = ["*"]
TOKEN = "s3cret-bearer-token-value"
CLIENT_SECRET = "client-secret-value"


@pytest.fixture(scope="module")
def bearer_server() -> Iterator[BearerMcpServer]:
    server = BearerMcpServer(TOKEN)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def oauth_server() -> Iterator[OAuthMcpServer]:
    server = OAuthMcpServer("glyphoxa-test", CLIENT_SECRET)
    server.start()
    yield server
    server.stop()


def http_config(name: str, url: str, auth: dict | None) -> McpServerConfig:
    return McpServerConfig.model_validate(
        {
            "name": name,
            "transport": "streamable-http",
            "url": url,
            "auth": auth,
            "connect_timeout_s": 5,
        }
    )


async def test_bearer_server_tools_and_calls(
    make_host: Callable[..., ToolHost],
    bearer_server: BearerMcpServer,
    caplog: pytest.LogCaptureFixture,
):
    config = http_config("lore", bearer_server.url, {"type": "bearer", "token": TOKEN})
    assert TOKEN not in repr(config)
    host = make_host(config)
    with caplog.at_level(logging.DEBUG):
        await host.start()
        assert await host.wait_for_server("lore", 5)
        assert host.get_tool("lookup").tier is Tier.FAST
        assert host.get_tool("ponder").tier is Tier.STANDARD
        assert [t.name for t in host.visible_tools(ALL, Tier.FAST)] == ["lookup"]
        result = await host.call(
            "lookup", {"key": "Shadowfell"}, whitelist=["lookup"], tier=Tier.FAST, npc="Greymantle"
        )
        assert result.structured == {"result": "lore about Shadowfell"}
        refused = await host.call(
            "ponder", {"topic": "x"}, whitelist=ALL, tier=Tier.FAST, npc="Greymantle"
        )
        assert refused.status == "refused"
    assert all(TOKEN not in record.getMessage() for record in caplog.records)


async def test_wrong_bearer_token_is_reported_not_raised(
    make_host: Callable[..., ToolHost], bearer_server: BearerMcpServer
):
    before = bearer_server.rejected
    host = make_host(http_config("bad", bearer_server.url, {"type": "bearer", "token": "wrong"}))
    await host.start()
    assert host.server_states()["bad"]["state"] != "up"
    assert host.list_tools() == []
    assert bearer_server.rejected > before


async def test_oauth_client_credentials_and_refresh_on_revocation(
    make_host: Callable[..., ToolHost], oauth_server: OAuthMcpServer
):
    auth = {
        "type": "oauth_client_credentials",
        "token_url": oauth_server.token_url,
        "client_id": "glyphoxa-test",
        "client_secret": CLIENT_SECRET,
    }
    host = make_host(http_config("oauth", oauth_server.url, auth))
    await host.start()
    assert await host.wait_for_server("oauth", 5)
    requests_before = oauth_server.token_requests
    first = await host.call("lookup", {"key": "a"}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert first.status == "ok"
    assert oauth_server.token_requests == requests_before  # token reused while valid
    oauth_server.revoke_all()
    second = await host.call("lookup", {"key": "b"}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert second.status == "ok" and second.structured == {"result": "lore about b"}
    assert oauth_server.token_requests == requests_before + 1  # fetched a fresh one on 401


async def test_oauth_wrong_secret_fails_clearly(
    make_host: Callable[..., ToolHost], oauth_server: OAuthMcpServer
):
    auth = {
        "type": "oauth_client_credentials",
        "token_url": oauth_server.token_url,
        "client_id": "glyphoxa-test",
        "client_secret": "nope",
    }
    host = make_host()
    await host.start()
    with pytest.raises(GlyphoxaError, match="did not come up") as error:
        await host.add_server(http_config("oauth-bad", oauth_server.url, auth))
    assert "refused client 'glyphoxa-test': HTTP 401" in str(error.value)
    assert "nope" not in str(error.value)


async def test_add_remote_server_at_runtime(
    make_host: Callable[..., ToolHost],
    bearer_server: BearerMcpServer,
    new_builtins: Callable[[], list],
):
    host = make_host(builtins=new_builtins())
    await host.start()
    assert host.get_tool("lookup") is None
    tools = await host.add_server(
        http_config("late-lore", bearer_server.url, {"type": "bearer", "token": TOKEN})
    )
    assert sorted(t.name for t in tools) == ["lookup", "ponder"]
    assert "lookup" in [t.name for t in host.visible_tools(["lookup", "roll"], Tier.FAST)]
    result = await host.call("lookup", {"key": "c"}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert result.status == "ok"
    with pytest.raises(GlyphoxaError, match="already exists"):
        await host.add_server(http_config("late-lore", bearer_server.url, None))
    await host.remove_server("late-lore")
    assert host.get_tool("lookup") is None


async def test_http_server_outage_hides_tools_and_reconnects(make_host: Callable[..., ToolHost]):
    server = BearerMcpServer(TOKEN)
    server.start()
    port = server.port
    host = make_host(http_config("flaky-http", server.url, {"type": "bearer", "token": TOKEN}))
    await host.start()
    assert await host.wait_for_server("flaky-http", 5)
    server.stop()
    failed = await host.call("lookup", {"key": "a"}, whitelist=ALL, tier=Tier.FAST, npc="n")
    assert (failed.status, failed.is_error) == ("error", True)
    # The failure triggers a liveness check; the server is gone, so its tools are hidden.
    assert await host.wait_for(lambda h: not h.get_tool("lookup").healthy, 10)
    assert host.visible_tools(ALL, Tier.DEEP) == []
    again = BearerMcpServer(TOKEN, port=port)
    again.start()
    try:
        assert await host.wait_for(lambda h: h.server_states()["flaky-http"]["state"] == "up", 10)
        result = await host.call("lookup", {"key": "b"}, whitelist=ALL, tier=Tier.FAST, npc="n")
        assert result.status == "ok"
    finally:
        again.stop()


async def test_restart_server_after_giving_up(
    make_host: Callable[..., ToolHost], bearer_server: BearerMcpServer
):
    from tools.host import RestartPolicy

    policy = RestartPolicy(initial_backoff_s=0.01, max_backoff_s=0.01, max_restarts=1)
    wrong = http_config("gives-up", bearer_server.url, {"type": "bearer", "token": "wrong"})
    host = make_host(wrong, restart_policy=policy)
    await host.start()
    assert await host.wait_for(lambda h: h.server_states()["gives-up"]["state"] == "failed", 5)
    bearer_server.token, old = "wrong", bearer_server.token
    try:
        await host.restart_server("gives-up")
        assert await host.wait_for_server("gives-up", 5)
    finally:
        bearer_server.token = old


async def test_oauth_discovery_finds_the_token_endpoint(make_host: Callable[..., ToolHost]):
    """No token_url: the host follows the server's 401 to its protected-resource metadata, then
    to the authorization server's RFC 8414 metadata, and asks for a token for this resource."""
    from http_server import AuthorizationServer, ProtectedMcpServer

    authority = AuthorizationServer("glyphoxa-test", CLIENT_SECRET)
    authority.start()
    server = ProtectedMcpServer(authority)
    server.start()
    try:
        auth = {
            "type": "oauth_client_credentials",
            "client_id": "glyphoxa-test",
            "client_secret": CLIENT_SECRET,
            "issuer": authority.issuer,
        }
        host = make_host(http_config("guarded", server.url, auth))
        await host.start()
        assert host.server_states()["guarded"]["state"] == "up", host.server_states()
        result = await host.call("lookup", {"key": "x"}, whitelist=ALL, tier=Tier.FAST, npc="n")
        assert result.status == "ok" and result.structured == {"result": "lore about x"}
        assert authority.metadata_requests >= 1 and authority.token_requests == 1
        assert set(authority.issued.values()) == {server.url}  # RFC 8707 resource indicator
    finally:
        server.stop()
        authority.stop()


async def test_oauth_discovery_refuses_another_issuer(make_host: Callable[..., ToolHost]):
    from http_server import AuthorizationServer, ProtectedMcpServer

    authority = AuthorizationServer("glyphoxa-test", CLIENT_SECRET)
    authority.start()
    server = ProtectedMcpServer(authority)
    server.start()
    try:
        auth = {
            "type": "oauth_client_credentials",
            "client_id": "glyphoxa-test",
            "client_secret": CLIENT_SECRET,
            "issuer": "http://127.0.0.1:9/elsewhere",
        }
        host = make_host()
        await host.start()
        with pytest.raises(GlyphoxaError, match="not the configured issuer") as error:
            await host.add_server(http_config("guarded", server.url, auth))
        assert CLIENT_SECRET not in str(error.value)
        assert authority.token_requests == 0  # the secret was never sent anywhere
    finally:
        server.stop()
        authority.stop()
