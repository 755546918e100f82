"""OAuth login for HTTP MCP servers: a background connection never logs in by itself;
a login gets the URL to the UI, the code back on 127.0.0.1, and keeps the tokens in a
0600 file in the data dir."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path

import httpx

from loom_engine.mcp.config import parse_server
from loom_engine.mcp.manager import McpManager
from loom_engine.mcp.oauth import token_file
from tests.doubles.fake_oauth import TOKEN, FakeOAuthServer


async def test_needs_login_then_login_keeps_tokens_private(tmp_path: Path) -> None:
    with FakeOAuthServer() as server:
        config = parse_server("secure", {"type": "http", "url": f"{server.url}/mcp"}, Path("x"), "cli", {})
        manager = McpManager([config], auth_dir=tmp_path / "data", connect_timeout_s=20)
        manager.start()
        await manager.wait_ready(30)
        status = manager.status("secure")
        assert status.state == "needs_login" and status.reason == "the server needs a login"
        assert not any(path == "/authorize" for _, path, _ in server.requests)  # no browser opened

        opened: list[str] = []

        async def browser(url: str) -> None:  # what a user's browser does: follow to the callback
            opened.append(url)

            async def follow() -> None:
                async with httpx.AsyncClient(follow_redirects=True) as client:
                    await client.get(url)

            asyncio.get_running_loop().create_task(follow())

        status = await manager.login("secure", browser)
        await manager.aclose()
    assert opened and opened[0].startswith(f"{server.url}/authorize?")
    assert ("POST", "/mcp", f"Bearer {TOKEN}") in server.requests  # the token is used
    assert status.state == "failed"  # the double's /mcp is no MCP server: only the login is real
    path = token_file(tmp_path / "data", config)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert json.loads(path.read_text())["tokens"]["access_token"] == TOKEN
