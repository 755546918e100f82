"""Streamable HTTP and SSE, against server-everything started in those modes."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.mcp_servers import ReferenceServers

from .helpers import result_text, run_loom


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(params=["streamableHttp", "sse"])
def http_server(request: pytest.FixtureRequest, reference_servers: ReferenceServers) -> Iterator[dict[str, str]]:
    mode = str(request.param)
    port = _free_port()
    proc = subprocess.Popen(["node", str(reference_servers.everything_js), mode], env={**os.environ, "PORT": str(port)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        if mode == "sse":
            yield {"type": "sse", "url": "http://127.0.0.1:${EVERYTHING_PORT}/sse", "port": str(port)}
        else:
            yield {"type": "http", "url": "http://127.0.0.1:${EVERYTHING_PORT}/mcp", "port": str(port)}
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_echo_over_http_transports(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer,
                                   http_server: dict[str, str]) -> None:
    entry = {"type": http_server["type"], "url": http_server["url"], "headers": {"X-Test": "${EVERYTHING_PORT}"}}
    fake_llm.enqueue(Reply.tool("mcp__remote__echo", {"message": "over-the-wire"}), Reply.text("ok"))
    done = run_loom(tmp_path, workspace, fake_llm, ["go"], user_servers={"remote": entry},
                    EVERYTHING_PORT=http_server["port"])
    assert done.returncode == 0, done.stderr
    assert "Echo: over-the-wire" in result_text(fake_llm.requests[1])
