"""OAuth for HTTP/SSE MCP servers, through the SDK's ``OAuthClientProvider``.

Tokens and the registered client live in the user data dir, ``mcp-auth/<server>-<hash
of the URL>.json``, written with mode 0600 in a 0700 folder; never in a session file.
A background connection never opens a browser: when the server wants a login it stops
with :class:`LoginRequired` and the server's state becomes ``needs_login``. The user
logs in with :meth:`McpManager.login`, given a :class:`LoginPrompt` (the UI opens or
shows the URL); the redirect comes back to a one-shot listener on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qs, urlsplit

from .config import ServerConfig

if TYPE_CHECKING:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken

LOGIN_TIMEOUT_S = 300.0
_PLACEHOLDER_REDIRECT = "http://127.0.0.1/callback"


class LoginRequired(Exception):
    """The server asked for a login during a background connection."""


class LoginPrompt(Protocol):
    async def __call__(self, url: str) -> None:
        """Show or open the authorization URL (it returns at once; the login finishes
        when the browser comes back to Loom)."""
        ...


def token_file(data_dir: Path, server: ServerConfig) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", server.name)[:40]
    digest = hashlib.sha256(server.url.encode("utf-8")).hexdigest()[:12]
    return data_dir / "mcp-auth" / f"{safe}-{digest}.json"


class FileTokenStorage:
    """The SDK's ``TokenStorage`` in one private JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.chmod(tmp, 0o600)  # an older file of the same name may have had other bits
        os.replace(tmp, self.path)

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        raw = self._read().get("tokens")
        return OAuthToken.model_validate(raw) if isinstance(raw, dict) else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        data = self._read()
        data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        self._write(data)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        raw = self._read().get("client")
        return OAuthClientInformationFull.model_validate(raw) if isinstance(raw, dict) else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        data = self._read()
        data["client"] = client_info.model_dump(mode="json", exclude_none=True)
        self._write(data)

    def has_tokens(self) -> bool:
        return isinstance(self._read().get("tokens"), dict)

    def registered_redirect(self) -> str | None:
        client = self._read().get("client")
        uris = client.get("redirect_uris") if isinstance(client, dict) else None
        return str(uris[0]) if isinstance(uris, list) and uris else None

    def forget_client(self) -> None:
        data = self._read()
        if data.pop("client", None) is not None:
            self._write(data)

    def logout(self) -> None:
        self.path.unlink(missing_ok=True)


def _provider(server: ServerConfig, storage: FileTokenStorage, redirect_uri: str,
              redirect: Callable[[str], Awaitable[None]],
              callback: Callable[[], Awaitable[AuthorizationCodeResult]]) -> OAuthClientProvider:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata
    from pydantic import AnyUrl

    metadata = OAuthClientMetadata(client_name="Loom", redirect_uris=[AnyUrl(redirect_uri)],
                                   grant_types=["authorization_code", "refresh_token"],
                                   response_types=["code"])
    return OAuthClientProvider(server_url=server.url, client_metadata=metadata, storage=storage,
                               redirect_handler=redirect, callback_handler=callback)


def background_auth(server: ServerConfig, storage: FileTokenStorage) -> OAuthClientProvider:
    """Auth for a connection nobody watches: stored tokens (refreshed when they expire);
    a new login stops it with LoginRequired."""

    async def refuse(_url: str) -> None:
        raise LoginRequired("the server needs a login")

    async def no_callback() -> AuthorizationCodeResult:
        raise LoginRequired("the server needs a login")

    return _provider(server, storage, storage.registered_redirect() or _PLACEHOLDER_REDIRECT, refuse,
                     no_callback)


class CallbackListener:
    """A one-shot HTTP listener on 127.0.0.1 for the authorization redirect."""

    def __init__(self) -> None:
        self._result: asyncio.Future[AuthorizationCodeResult] | None = None
        self._server: asyncio.Server | None = None
        self.redirect_uri = ""

    async def __aenter__(self) -> CallbackListener:
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.redirect_uri = f"http://127.0.0.1:{port}/callback"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        from mcp.shared.auth import AuthorizationCodeResult

        try:
            line = (await reader.readline()).decode("latin-1")
            target = line.split(" ")[1] if line.count(" ") >= 2 else "/"
            query = parse_qs(urlsplit(target).query)
            code = (query.get("code") or [""])[0]
            error = (query.get("error") or [""])[0]
            body = "Logged in. You can close this tab and go back to Loom." if code else \
                f"Login failed: {error or 'no code'}. You can close this tab."
            writer.write(f"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "
                         f"{len(body.encode())}\r\nConnection: close\r\n\r\n{body}".encode())
            await writer.drain()
            if self._result is not None and not self._result.done() and (code or error):
                if code:
                    self._result.set_result(AuthorizationCodeResult(code=code,
                                                                    state=next(iter(query.get("state") or []), None)))
                else:
                    self._result.set_exception(LoginRequired(f"the login was refused: {error}"))
        finally:
            writer.close()

    async def wait(self) -> AuthorizationCodeResult:
        assert self._result is not None
        async with asyncio.timeout(LOGIN_TIMEOUT_S):
            return await self._result


def login_auth(server: ServerConfig, storage: FileTokenStorage, listener: CallbackListener,
               prompt: LoginPrompt) -> OAuthClientProvider:
    """Auth for an interactive login: the URL goes to ``prompt``, the code comes back
    to ``listener``. A client registered for another redirect is registered again."""
    if storage.registered_redirect() not in (None, listener.redirect_uri):
        storage.forget_client()
    return _provider(server, storage, listener.redirect_uri, prompt, listener.wait)
