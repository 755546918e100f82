"""Where the warm server's socket lives, which server a client may use, and whether to.

Imported by the `loom` entry point before anything else: standard library only, and
only the cheap parts of it (paths are strings here: pathlib and dataclasses, with what
they import, would double the entry point's own import time; tuples are immutable too).

The socket sits in a folder only this user can enter: ``$XDG_RUNTIME_DIR/loom`` when the
runtime folder is this user's and closed to others, else ``<cache>/loom/warm``. A folder
that exists with another owner or any access for group or others is not used (nothing
is fixed in a shared place an attacker could prepare first).

A server serves only clients confined as it is: a `loom` run inside a sandbox, another
namespace (``unshare``, a container sharing the folder), under seccomp, with no new
privileges or fewer capabilities must not have its command run by a server outside them.
The socket's name carries a hash of the process's confinement (:func:`confinement`), so
such a `loom` starts (or finds) a server of its own confinement, and the server checks
each client's confinement again from ``/proc`` before it serves it.

A server serves one exact build of Loom: its socket's name carries a hash of the Python
executable, and a fingerprint of Loom's installed files (each file's path, size and
modification time, and the name and version of every distribution installed on
``sys.path``). An upgrade, or an edit to an editable
install, changes the name, so the next `loom` starts a fresh server and never runs
stale code.
"""

from __future__ import annotations

import os
import stat
import sys
import zlib
from typing import NamedTuple

# Loom's top-level packages, installed side by side (pyproject's packages.find).
PACKAGES = ("loom_cli", "loom_engine", "builtin_tools", "skills")
SOCKET_PREFIX = "loom-"
SOCKET_SUFFIX = ".sock"
DEFAULT_IDLE_S = 600.0
# A server of this build started this recently and has no socket yet: it is still
# importing, or it failed; either way no client starts another before this has passed.
START_BACKOFF_S = 120.0
# sockaddr_un.sun_path is 108 bytes on Linux, with its terminating NUL.
MAX_SOCKET_PATH = 107
_OFF_WORDS = frozenset({"0", "false", "no", "off"})
# What confines a process (:func:`confinement`): its namespaces, and these lines of its status.
_NAMESPACES = ("cgroup", "ipc", "mnt", "net", "pid", "user", "uts")
_CONFINING_STATUS = (b"NoNewPrivs:", b"Seccomp:", b"CapEff:", b"CapBnd:")


class WarmChoice(NamedTuple):
    """Whether this `loom` may use a warm server, and with which idle time."""

    enabled: bool
    idle_s: float = DEFAULT_IDLE_S


def supported() -> bool:
    """The warm path needs SO_PEERCRED and SCM_RIGHTS as Linux has them."""
    return sys.platform.startswith("linux")


def choose(environ: os._Environ[str] | dict[str, str]) -> WarmChoice:
    """``LOOM_WARM=0`` (or false/no/off) turns it off; so does ``[warm] enabled = false``
    in the user's config.toml. A project's settings have no say (they are not read here)."""
    if environ.get("LOOM_WARM", "").strip().lower() in _OFF_WORDS:
        return WarmChoice(False)
    return _user_setting(user_config_file(environ))


def user_config_file(environ: os._Environ[str] | dict[str, str]) -> str | None:
    """The user's config.toml, found as loom_engine.paths finds it (without importing
    platformdirs: Linux's rule is XDG_CONFIG_HOME, else ~/.config)."""
    override = environ.get("LOOM_CONFIG_DIR")
    if override:
        return os.path.join(override, "config.toml")
    base = _xdg_folder(environ, "XDG_CONFIG_HOME", ".config")
    return None if base is None else os.path.join(base, "loom", "config.toml")


def _xdg_folder(environ: os._Environ[str] | dict[str, str], variable: str, under_home: str) -> str | None:
    """An XDG base folder: the variable when it holds an absolute path, else HOME's
    default (None without an absolute HOME)."""
    value = environ.get(variable, "")
    if os.path.isabs(value):
        return value
    home = environ.get("HOME", "")
    return os.path.join(home, under_home) if os.path.isabs(home) else None


def _user_setting(path: str | None) -> WarmChoice:
    try:
        with open(path or os.devnull, "rb") as handle:
            raw = handle.read()
    except OSError:
        return WarmChoice(True)
    if b"warm" not in raw:  # most files: no TOML parser loaded for them
        return WarmChoice(True)
    import tomllib

    try:
        table = tomllib.loads(raw.decode("utf-8")).get("warm", {})
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return WarmChoice(False)  # the cold path reports the broken file
    if not isinstance(table, dict):
        return WarmChoice(False)
    enabled = table.get("enabled", True)
    idle_minutes = table.get("idle_minutes", DEFAULT_IDLE_S / 60)
    if not isinstance(enabled, bool) or not isinstance(idle_minutes, int | float) or idle_minutes <= 0:
        return WarmChoice(False)
    return WarmChoice(enabled, float(idle_minutes) * 60)


def socket_folder(environ: os._Environ[str] | dict[str, str], create: bool) -> str | None:
    """This user's private folder for the socket (made when ``create``), or None when
    there is no safe one."""
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime) and private_folder(runtime):
        return _private_child(os.path.join(runtime, "loom"), create)
    cache = _xdg_folder(environ, "XDG_CACHE_HOME", ".cache")
    return None if cache is None else _private_child(os.path.join(cache, "loom", "warm"), create)


def _private_child(folder: str, create: bool) -> str | None:
    if create:
        try:
            os.makedirs(os.path.dirname(folder), mode=0o700, exist_ok=True)
            os.mkdir(folder, mode=0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    return folder if private_folder(folder) else None


def private_folder(folder: str) -> bool:
    """A real folder (not a symlink) owned by this user with no access for anyone else."""
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and stat.S_IMODE(info.st_mode) & 0o077 == 0)


def socket_name(executable: str, confined: str, fingerprint: str) -> str:
    """The socket of the server for this Python, this confinement and this build."""
    return f"{executable_prefix(executable, confined)}{fingerprint}{SOCKET_SUFFIX}"


def confinement(pid: int | None = None) -> str | None:
    """What confines a process (this one by default): its namespaces, its seccomp mode,
    its no-new-privileges flag and its capabilities, as ``/proc`` shows them; None when
    they cannot be read (then it shares no server). Landlock leaves no trace there, but
    an unprivileged process can only take it on with no-new-privileges set, which shows."""
    proc = f"/proc/{'self' if pid is None else pid}"
    parts: list[str] = []
    try:
        for name in _NAMESPACES:
            try:
                parts.append(os.readlink(f"{proc}/ns/{name}"))
            except FileNotFoundError:
                parts.append(f"{name}:none")  # a kernel without this kind of namespace
        with open(f"{proc}/status", "rb") as status:
            parts.extend(line.decode("ascii", "replace").strip() for line in status
                         if line.startswith(_CONFINING_STATUS))
    except OSError:
        return None
    return "\n".join(parts)


def lock_path(socket_path: str) -> str:
    """The lock file a server of this build holds while it lives (one server per build)."""
    return socket_path + ".lock"


def recently_started(socket_path: str, now: float) -> bool:
    """Whether a server for ``socket_path`` started less than START_BACKOFF_S ago."""
    try:
        return now - os.stat(lock_path(socket_path)).st_mtime < START_BACKOFF_S
    except OSError:
        return False


def executable_prefix(executable: str, confined: str) -> str:
    """The start of every socket name of servers of this Python and confinement (a newer
    build stops the older ones; servers of another confinement are not its to stop)."""
    return f"{SOCKET_PREFIX}{_hex(executable.encode())}-{zlib.crc32(confined.encode()):08x}-"


def install_root() -> str:
    """The folder Loom's packages are imported from (site-packages, or the checkout)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


def fingerprint(root: str | None = None, search_path: list[str] | None = None) -> str:
    """A hash of what Loom would run: every file of its packages (path, size,
    modification time) and the distributions installed on ``sys.path``."""
    root = install_root() if root is None else root
    parts: list[str] = [root]
    for package in PACKAGES:
        _walk(os.path.join(root, package), parts)
    # sys.path[0] is the script's folder (the entry point's bin/, the server's "/"): not code.
    for entry in sys.path[1:] if search_path is None else search_path:
        parts.extend(_installed(entry))
    return _hex("\n".join(parts).encode(errors="surrogateescape"))


def _installed(entry: str) -> list[str]:
    """The distributions installed in one folder of ``sys.path``, by name and version
    (their metadata folders' names): an install, removal or upgrade changes them. The
    folder's own modification time would not do: compiling a module there changes it."""
    try:
        names = os.listdir(entry or ".")
    except OSError:
        return []
    return sorted(f"{entry}:{name}" for name in names if name.endswith((".dist-info", ".egg-info", ".pth")))


def _walk(folder: str, parts: list[str]) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in sorted(entries, key=lambda e: e.name):
        if entry.is_dir(follow_symlinks=False):
            if entry.name != "__pycache__":
                _walk(entry.path, parts)
            continue
        try:
            info = entry.stat()
        except OSError:
            continue
        parts.append(f"{entry.path}:{info.st_size}:{info.st_mtime_ns}")


def _hex(data: bytes) -> str:
    """64 bits of checksum: enough to tell builds apart, cheaper to load than hashlib."""
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"
