"""Issue 19 §1: what a confined bash command can and cannot do, run for real.

Every test runs the real bash tool inside a real sandbox, once per backend
(bubblewrap, and the Landlock fallback forced), and checks the host afterwards: a
file outside the workspace that a command tried to write is not there, a secret it
tried to read did not reach its output, a listener it tried to reach saw no one.
Each wall is shown to matter by the same command run outside the sandbox
(``dangerously_disable_sandbox``), which gets through.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from loom_engine.sandbox import Sandbox, SandboxConfig
from loom_engine.sandbox.status import Backend
from loom_engine.workspace import Workspace
from tests.doubles.sandbox import BACKENDS, bash, real_path, real_sandbox, tool_context

PY = sys.executable


@pytest.fixture
def lab(tmp_path: Path) -> tuple[Path, Path]:
    root = real_path(tmp_path) / "ws"
    (root / "src").mkdir(parents=True)
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (root / "README.md").write_text("# demo\n")
    outside = real_path(tmp_path) / "outside"
    outside.mkdir()
    return root, outside


def _sandbox(root: Path, backend: Backend, **config: object) -> Sandbox:
    return real_sandbox(Workspace.at(root), backend, SandboxConfig(**config))  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_writes_outside_the_workspace_fail_and_inside_succeed(lab: tuple[Path, Path], backend: Backend
                                                                    ) -> None:
    root, outside = lab
    ctx = tool_context(Workspace.at(root), _sandbox(root, backend))
    out = await bash(ctx, f"echo kept > src/new.txt; cat src/new.txt; echo pwned > {outside}/marker")
    assert not (outside / "marker").exists(), out.content
    assert (root / "src" / "new.txt").read_text() == "kept\n"
    assert "kept" in out.content and out.is_error
    # In words the model can act on (bubblewrap's /tmp is private: the host's is not there).
    assert ("private /tmp" if backend == "bubblewrap" else "Landlock fallback") in out.content
    home_write = await bash(ctx, f"touch {real_path(Path.home())}/loom-sandbox-test-marker")
    assert not (Path.home() / "loom-sandbox-test-marker").exists()
    assert ("The sandbox made this fail" if backend == "bubblewrap" else "Landlock fallback") in home_write.content
    # The wall is what stopped it: outside the sandbox the same write goes through.
    await bash(ctx, f"echo pwned > {outside}/marker", unsandboxed=True)
    assert (outside / "marker").read_text() == "pwned\n"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_private_temp_folder_is_writable(lab: tuple[Path, Path], backend: Backend) -> None:
    root, _ = lab
    ctx = tool_context(Workspace.at(root), _sandbox(root, backend))
    out = await bash(ctx, 'echo scratch > "$TMPDIR/s.txt" && cat "$TMPDIR/s.txt"')
    assert not out.is_error and "scratch" in out.content


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("target", [".git/hooks/pre-commit", ".git/config", ".loom/settings.toml",
                                    ".claude/settings.json"])
async def test_protected_paths_stay_read_only_inside_the_workspace(lab: tuple[Path, Path], backend: Backend,
                                                                   target: str) -> None:
    root, _ = lab
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    ctx = tool_context(Workspace.at(root), _sandbox(root, backend))
    folder = os.path.dirname(target)
    out = await bash(ctx, f"mkdir -p {folder}; echo 'evil' >> {target}; rm -rf .loom .claude .git/hooks; "
                          f"mv .git/config .git/c2; ln -s /tmp/x {target}")
    assert out.is_error
    after = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert after == before, out.content
    # Where a protected path was missing, an empty placeholder stood in, gone with the session.
    assert not any((root / ".loom").rglob("*")) and not any((root / ".claude").rglob("*"))
    ctx.sandbox.close()  # type: ignore[union-attr]
    assert not (root / ".loom").exists() and not (root / ".claude").exists()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_repository_without_git_cannot_be_given_hooks(tmp_path: Path, backend: Backend) -> None:
    root = real_path(tmp_path) / "plain"
    root.mkdir()
    ctx = tool_context(Workspace.at(root), _sandbox(root, backend))
    out = await bash(ctx, "mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch /tmp/x\\n' > .git/hooks/pre-commit")
    assert out.is_error and not any((root / ".git").rglob("*")), out.content  # nothing was written
    ctx.sandbox.close()  # type: ignore[union-attr]
    assert not (root / ".git").exists()  # and the placeholder is gone with the session


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_symlinked_settings_folder_cannot_be_swapped(lab: tuple[Path, Path], backend: Backend) -> None:
    root, _ = lab
    real_settings = root / "dotfiles-loom"
    real_settings.mkdir()
    (real_settings / "settings.toml").write_text("# mine\n")
    (root / ".loom").symlink_to(real_settings)
    ctx = tool_context(Workspace.at(root), _sandbox(root, backend))
    out = await bash(ctx, "echo evil >> .loom/settings.toml; rm .loom; mkdir .loom; echo evil > .loom/settings.toml; "
                          "echo ok > src/still.txt")
    assert (root / ".loom").is_symlink()
    assert (real_settings / "settings.toml").read_text() == "# mine\n"
    assert (root / "src" / "still.txt").read_text() == "ok\n", out.content


class _Listener:
    """A TCP listener on the host's loopback that records whether anyone connected."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.accepted = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.server.accept()
        except OSError:
            return
        self.accepted.set()
        conn.close()

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def listener() -> Iterator[_Listener]:
    server = _Listener()
    yield server
    server.close()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_path_hidden_in_a_crowded_folder(lab: tuple[Path, Path], backend: Backend) -> None:
    # Landlock grants each neighbour of a hidden path by name: 1,500 long names make a
    # plan far over the kernel's 128 KiB limit for one argument.
    root, outside = lab
    for n in range(1500):
        (outside / f"neighbour-{n:04d}-{'x' * 100}").touch()
    (outside / "token").write_text("TOKEN-MATERIAL\n")
    ctx = tool_context(Workspace.at(root), _sandbox(root, backend, deny_read=(outside / "token",)))
    out = await bash(ctx, f"ls {outside} | wc -l; cat {outside}/token")
    assert "TOKEN-MATERIAL" not in out.content and "Could not start" not in out.content, out.content
    if backend == "landlock":  # bubblewrap's /tmp is private: the folder is not there at all
        assert "1501" in out.content, out.content


@pytest.mark.parametrize("backend", BACKENDS)
async def test_network_off_cannot_reach_a_listener_on_the_hosts_loopback(lab: tuple[Path, Path], backend: Backend,
                                                                          listener: _Listener) -> None:
    root, _ = lab
    ctx = tool_context(Workspace.at(root), _sandbox(root, backend))
    connect = f"{PY} -c \"import socket; socket.create_connection(('127.0.0.1', {listener.port}), timeout=5)\""
    out = await bash(ctx, connect)
    assert out.is_error and not listener.accepted.is_set(), out.content
    assert ("cannot be reached" if backend == "bubblewrap" else "network sockets") in out.content
    outside = await bash(ctx, connect, unsandboxed=True)
    assert not outside.is_error, outside.content
    assert listener.accepted.wait(10)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_docker_style_unix_socket_cannot_be_connected(lab: tuple[Path, Path], backend: Backend) -> None:
    root, outside = lab
    path = outside / "docker.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(os.fspath(path))
    server.listen(1)
    try:
        ctx = tool_context(Workspace.at(root), _sandbox(root, backend))
        connect = f"{PY} -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{path}')\""
        out = await bash(ctx, connect)
        assert out.is_error and "Operation not permitted" in out.content
        assert "refuses Unix sockets" in out.content
        # socketpair() makes a connected pair that reaches nothing: it stays allowed.
        pair = await bash(ctx, f"{PY} -c \"import socket; a, b = socket.socketpair(); a.send(b'x'); "
                               "print(b.recv(1))\"")
        assert not pair.is_error and "b'x'" in pair.content
        reached = await bash(ctx, connect, unsandboxed=True)
        assert not reached.is_error, reached.content
    finally:
        server.close()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_deny_read_paths_are_unreadable(lab: tuple[Path, Path], backend: Backend) -> None:
    root, outside = lab
    secrets = outside / "ssh"
    secrets.mkdir()
    (secrets / "id_rsa").write_text("PRIVATE-KEY-MATERIAL\n")
    token = outside / "netrc"
    token.write_text("machine x password TOKEN-MATERIAL\n")
    ctx = tool_context(Workspace.at(root), _sandbox(root, backend, deny_read=(secrets, token)))
    out = await bash(ctx, f"cat {secrets}/id_rsa; cat {token}; grep -r MATERIAL {outside}")
    assert "PRIVATE-KEY-MATERIAL" not in out.content and "TOKEN-MATERIAL" not in out.content
    assert out.is_error and "hides" in out.content
    shown = await bash(ctx, f"cat {secrets}/id_rsa", unsandboxed=True)
    assert "PRIVATE-KEY-MATERIAL" in shown.content


@pytest.mark.parametrize("backend", BACKENDS)
async def test_output_exit_code_and_cd_are_as_without_the_sandbox(lab: tuple[Path, Path], backend: Backend
                                                                  ) -> None:
    root, _ = lab
    ctx = tool_context(Workspace.at(root), _sandbox(root, backend))
    out = await bash(ctx, "echo out; echo err >&2; cd src; exit 3")
    assert out.content.splitlines()[:3] == ["out", "err", "Exit code: 3"]
    assert ctx.state.cwd == root / "src"
    killed = await bash(ctx, "kill -KILL $$")
    assert killed.content.endswith("Killed by SIGKILL.")
    code = await bash(ctx, "exit 137")
    assert "Exit code: 137" in code.content
