"""An OAuth-protected endpoint for MCP login tests: protected-resource and
authorization-server metadata, dynamic registration, /authorize (redirects straight
back with a code) and /token. ``/mcp`` answers 401 without the issued token and 503
with it (the point is the login, not the MCP session); every request is recorded."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

TOKEN = "issued-access-token"


class FakeOAuthServer:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, str]] = []  # method, path, Authorization header
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, status: int, data: dict[str, Any]) -> None:
                body = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _handle(self) -> None:
                base = outer.url
                path = urlsplit(self.path).path
                outer.requests.append((self.command, path, self.headers.get("Authorization", "")))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if path.startswith("/.well-known/oauth-protected-resource"):
                    self._json(200, {"resource": f"{base}/mcp", "authorization_servers": [base]})
                elif path.startswith("/.well-known/oauth-authorization-server"):
                    self._json(200, {"issuer": base, "authorization_endpoint": f"{base}/authorize",
                                     "token_endpoint": f"{base}/token", "registration_endpoint": f"{base}/register",
                                     "response_types_supported": ["code"],
                                     "code_challenge_methods_supported": ["S256"]})
                elif path == "/register":
                    self._json(201, {**json.loads(body), "client_id": "loom-client"})
                elif path == "/authorize":
                    query = parse_qs(urlsplit(self.path).query)
                    target = query["redirect_uri"][0] + "?" + urlencode({"code": "the-code",
                                                                         "state": query["state"][0]})
                    self.send_response(302)
                    self.send_header("Location", target)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif path == "/token":
                    self._json(200, {"access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600,
                                     "refresh_token": "refresh-me"})
                elif self.headers.get("Authorization") == f"Bearer {TOKEN}":
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                else:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", f'Bearer resource_metadata="{base}/.well-known/'
                                     'oauth-protected-resource"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()

            do_GET = do_POST = do_DELETE = _handle

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeOAuthServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
