"""Issue 19: ``[sandbox] network = "allowlist"`` for real, through the bash tool.

Each test runs the real bash tool in a real bubblewrap sandbox. Only 127.0.0.1 can be
reached on this machine, so the sandbox's proxy is given (through the ``Machine`` test
seam) a resolver that maps the made-up ``allowed.test`` to local origins, and the ports
those origins listen on. Inside, the command's loopback is its own: the relay to Loom's
proxy is its only way out.
"""

from __future__ import annotations

import shutil
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from loom_engine.sandbox import Machine, Sandbox, SandboxConfig
from loom_engine.sandbox.network import AllowListGate
from loom_engine.workspace import Workspace
from tests.doubles.proxy_origin import Origin, StaticResolver, TlsFiles, make_certificate
from tests.doubles.sandbox import bash, real_path, real_sandbox, tool_context

PY = sys.executable
CA = "origin-ca.crt"  # the origins' certificate, in the workspace
REFUSAL = ("Loom's sandbox refused evil.test:{port}: evil.test is not in [sandbox] allowed_domains; "
           "add it there in your Loom config to allow it")


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_certificate(tmp_path_factory.mktemp("tls"), ["allowed.test", "evil.test"])


@pytest.fixture
def ws(tmp_path: Path, tls_files: TlsFiles) -> Workspace:
    root = real_path(tmp_path) / "ws"
    root.mkdir()
    shutil.copy(tls_files.cert, root / CA)  # the machine's /tmp, where pytest keeps it, is not seen inside
    return Workspace.at(root)


def _sandbox(ws: Workspace, network: str, *origins: Origin) -> Sandbox:
    # evil.test resolves too: what stops it must be the allow-list, not a failed lookup.
    machine = Machine(proxy_resolver=StaticResolver(["allowed.test", "evil.test"]),
                      proxy_ports=frozenset(origin.port for origin in origins))
    config = SandboxConfig(network=network, allowed_domains=("allowed.test",))  # type: ignore[arg-type]
    return real_sandbox(ws, "bubblewrap", config, machine=machine)


@pytest.fixture
def allowlist(ws: Workspace, http_origin: Origin, https_origin: Origin) -> Iterator[Sandbox]:
    sandbox = _sandbox(ws, "allowlist", http_origin, https_origin)
    yield sandbox
    sandbox.close()


def _gate(sandbox: Sandbox) -> AllowListGate:
    gate = sandbox.network_gate
    assert gate is not None
    return gate


async def test_an_allowed_host_is_reachable_over_http_and_https(
        ws: Workspace, allowlist: Sandbox, tls_files: TlsFiles, http_origin: Origin, https_origin: Origin) -> None:
    assert _gate(allowlist).proxy is None  # started by the first command that needs it, not before
    ctx = tool_context(ws, allowlist)
    result = await bash(ctx, f"curl -sS --cacert {CA} https://allowed.test:{https_origin.port}/secure;"
                             f" echo; curl -sS http://allowed.test:{http_origin.port}/plain")
    assert not result.is_error, result.content
    assert f"https origin: GET /secure for allowed.test:{https_origin.port}" in result.content
    assert f"http origin: GET /plain for allowed.test:{http_origin.port}" in result.content
    assert "sandbox" not in result.content  # nothing refused: no word about the sandbox
    proxy = _gate(allowlist).proxy
    assert proxy is not None and proxy.running
    allowlist.close()
    assert _gate(allowlist).proxy is None and not proxy.running and proxy.channel_count == 0


async def test_python_inside_reaches_an_allowed_host(
        ws: Workspace, allowlist: Sandbox, tls_files: TlsFiles, https_origin: Origin) -> None:
    url = f"https://allowed.test:{https_origin.port}/py"
    script = (f"import ssl, urllib.request; c = ssl.create_default_context(cafile='{CA}'); "
              f"print(urllib.request.urlopen('{url}', context=c).read().decode())")
    result = await bash(tool_context(ws, allowlist), f'{PY} -c "{script}"')
    assert not result.is_error, result.content
    assert f"https origin: GET /py for allowed.test:{https_origin.port}" in result.content


async def test_an_unlisted_host_is_refused_and_the_model_is_told_the_user_can_add_it(
        ws: Workspace, allowlist: Sandbox, tls_files: TlsFiles, http_origin: Origin, https_origin: Origin) -> None:
    ctx = tool_context(ws, allowlist)
    plain = await bash(ctx, f"curl -sS http://evil.test:{http_origin.port}/")
    # curl exits 0 on a 403: the proxy's own words reach the model, and the note after them.
    assert REFUSAL.format(port=http_origin.port) in plain.content
    assert ("Commands reach only the hosts in the user's allow-list ([sandbox] allowed_domains: allowed.test) "
            "over http and https; do without this host, ask the user to add it to allowed_domains in their "
            "Loom config") in plain.content
    tunnel = await bash(ctx, f"curl -sS --cacert {CA} https://evil.test:{https_origin.port}/")
    assert tunnel.is_error and "CONNECT tunnel failed, response 403" in tunnel.content
    # curl shows only the status of a refused tunnel: the host comes from the proxy itself.
    assert REFUSAL.format(port=https_origin.port) + ". Commands reach only" in tunnel.content
    assert http_origin.seen == [] and https_origin.seen == []


DIRECT_ATTEMPTS = """
import socket, sys
port = int(sys.argv[1])
for name, where in (("host loopback", ("127.0.0.1", port)), ("outside", ("10.1.2.3", 80))):
    try:
        socket.create_connection(where, timeout=10).close()
        print(name, "connected")
    except OSError as error:
        print(name, type(error).__name__, error.strerror)
"""


async def test_no_direct_connection_is_possible(
        ws: Workspace, allowlist: Sandbox, tls_files: TlsFiles, https_origin: Origin) -> None:
    (ws.root / "direct.py").write_text(DIRECT_ATTEMPTS)
    socket.create_connection(("127.0.0.1", https_origin.port), timeout=10).close()  # there, from outside
    result = await bash(tool_context(ws, allowlist), (
        f"{PY} direct.py {https_origin.port}; "
        f"curl -sS --noproxy '*' --resolve allowed.test:{https_origin.port}:127.0.0.1 --cacert {CA} "
        f"https://allowed.test:{https_origin.port}/; echo \"curl without the proxy: $?\""))
    lines = result.content.splitlines()
    assert "host loopback ConnectionRefusedError Connection refused" in lines  # the sandbox's own loopback
    assert "outside OSError Network is unreachable" in lines
    assert "curl without the proxy: 7" in lines
    assert https_origin.seen == []


async def test_network_off_still_has_no_network_and_no_proxy(
        ws: Workspace, tls_files: TlsFiles, http_origin: Origin) -> None:
    sandbox = _sandbox(ws, "off", http_origin)
    try:
        assert sandbox.network_gate is None
        result = await bash(tool_context(ws, sandbox), (
            "echo \"proxy=${HTTP_PROXY:-none}\"; "
            f"curl -sS --proxy http://127.0.0.1:3128 http://allowed.test:{http_origin.port}/; "
            f"curl -sS --resolve allowed.test:{http_origin.port}:127.0.0.1 http://allowed.test:{http_origin.port}/"))
    finally:
        sandbox.close()
    assert "proxy=none" in result.content
    assert result.is_error
    assert ("curl: (7) Failed to connect to 127.0.0.1 port 3128" in result.content  # no relay in there
            and f"curl: (7) Failed to connect to allowed.test port {http_origin.port}" in result.content)
    assert http_origin.seen == []


def test_a_command_in_a_later_event_loop_gets_a_proxy_of_its_own(
        ws: Workspace, allowlist: Sandbox, http_origin: Origin) -> None:
    import asyncio

    command = f"curl -sS http://allowed.test:{http_origin.port}/again"
    first = asyncio.run(bash(tool_context(ws, allowlist), command))
    proxy = _gate(allowlist).proxy
    second = asyncio.run(bash(tool_context(ws, allowlist), command))  # the first loop, and what it ran, are gone
    assert [first.is_error, second.is_error] == [False, False], (first.content, second.content)
    assert f"http origin: GET /again for allowed.test:{http_origin.port}" in second.content
    assert proxy is not None and not proxy.running and _gate(allowlist).proxy is not proxy
