"""The Landlock backend: the fallback where bubblewrap cannot create namespaces.

Landlock needs no namespaces (it works under Ubuntu's AppArmor rule and in most
containers), so Loom falls back to it. The command is started through
:mod:`.launch`, which confines itself and then ``exec``s bash. Landlock only ever
*grants* rights, beneath a path, to a process that starts with none; what it cannot
express that bubblewrap can, and what Loom does instead:

* **A read-only folder inside a writable one.** A right granted on the workspace
  holds for everything beneath it, ``.git/hooks`` included, and a folder not there yet
  cannot be named at all. So a writable root holding a protected path is granted
  entry by entry: each of its entries is writable, except the protected ones, but the
  root itself is not — a command cannot add, remove or rename entries at the
  workspace's top level or directly in ``.git`` (``git commit`` needs
  ``.git/index.lock``). Fail closed: the failure sentence tells the model to use the
  file tools or ask for the command to run outside.
* **An unreadable path inside a readable one.** ``deny_read`` is done the same way:
  every entry along the way is granted except the hidden one. The folders along the
  way can still be listed (a listing right holds beneath), so the *names* in a hidden
  folder show; their contents do not.
* **A private /tmp.** There is no mount namespace: the private temp folder is a real
  folder, named in ``TMPDIR``; /tmp itself stays read-only.
* **No network namespace.** With network off (or an allow-list, not yet available),
  the seccomp filter refuses Internet sockets outright, loopback included.
* **No PID namespace.** Background jobs are ended by the bash tool's own process
  clean-up (the marker each process carries), and Landlock's scope keeps a command
  from signalling or tracing anything outside its domain (Loom itself included).

The launcher runs unconfined, so it must not be a file a confined command could
change: Loom's own folder and the interpreter must lie outside every writable root,
or this backend is not used.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import loom_engine.sandbox.launch as launch
import loom_engine.sandbox.seccomp as seccomp

from .layout import Layout

_READ = launch.EXECUTE | launch.READ_FILE | launch.READ_DIR
_WRITE_DIR = (launch.WRITE_FILE | launch.REMOVE_DIR | launch.REMOVE_FILE | launch.MAKE_CHAR | launch.MAKE_DIR
              | launch.MAKE_REG | launch.MAKE_SOCK | launch.MAKE_FIFO | launch.MAKE_BLOCK | launch.MAKE_SYM
              | launch.REFER | launch.TRUNCATE)
# Writing to the devices that are there (/dev/null, /dev/tty), making none.
_DEVICES = launch.WRITE_FILE | launch.TRUNCATE


@dataclass(frozen=True)
class LandlockCheck:
    abi: int
    reason: str = ""


def check(unsafe: Callable[[Path], bool]) -> LandlockCheck:
    """Whether this machine and this Loom can use the backend."""
    if not seccomp.supported():
        return LandlockCheck(0, "the seccomp filter has no program for this architecture")
    abi = launch.abi_version()
    if abi < 1:
        return LandlockCheck(0, "the kernel has no Landlock (Linux 5.13 or later, with lsm=landlock)")
    for what, path in (("Loom's sandbox launcher", _launcher()), ("the Python interpreter", _interpreter())):
        if unsafe(path):
            return LandlockCheck(abi, f"{what} ({path}) lies in a writable folder, and the launcher runs it "
                                      "before any wall is up")
    return LandlockCheck(abi)


def _launcher() -> Path:
    return Path(os.path.realpath(launch.__file__))


def _interpreter() -> Path:
    return Path(os.path.realpath(sys.executable))


# Characters of the plan per argument (its JSON is ASCII), well under the kernel's limit.
_PLAN_PART = 64 * 1024


def launcher_argv(layout: Layout, *, abi: int, temp_dir: Path, network: bool, argv: Sequence[str]) -> list[str]:
    """The command line that confines itself to ``layout`` and then runs ``argv``."""
    plan = {"rules": [[os.fspath(p), r] for p, r in rules(layout, temp_dir, abi)],
            "handled": launch.handled_rights(abi),
            "scoped": launch.SCOPE_ABSTRACT_UNIX_SOCKET | launch.SCOPE_SIGNAL if abi >= 6 else 0,
            "seccomp": base64.b64encode(seccomp.socket_filter(block_inet=not network)).decode("ascii")}
    text = json.dumps(plan, separators=(",", ":"))
    # One argument may hold at most 128 KiB (MAX_ARG_STRLEN), and hiding a path in a
    # crowded folder grants each of its neighbours by name: the plan goes in pieces.
    parts = [text[i:i + _PLAN_PART] for i in range(0, len(text), _PLAN_PART)] or [""]
    return [os.fspath(_interpreter()), "-I", "-S", os.fspath(_launcher()), str(len(parts)), *parts, *argv]


def rules(layout: Layout, temp_dir: Path, abi: int) -> list[tuple[Path, int]]:
    """(path, rights) to grant: reading everywhere but the hidden paths, writing in the
    writable roots but not their guarded paths, writing to existing devices."""
    write = _WRITE_DIR & launch.handled_rights(abi)
    hidden = (*layout.hidden_dirs, *layout.hidden_files)
    out = list(_cover(Path("/"), _READ, hidden, sealed=()))
    guarded = (*layout.guarded, *layout.sealed)
    for root in layout.writable:
        out.extend(_cover(root, write, guarded, sealed=layout.sealed))
    out.append((temp_dir, write))
    out.append((Path("/dev"), _DEVICES & write))
    return out


def _cover(folder: Path, rights: int, holes: Sequence[Path], *, sealed: Sequence[Path],
           depth: int = 0) -> Iterable[tuple[Path, int]]:
    """Rules granting ``rights`` on everything beneath ``folder`` but the ``holes``
    (and on a sealed folder, its entries but not the folder itself)."""
    if folder in holes and folder not in sealed:
        return
    inside = [h for h in holes if h != folder and folder in h.parents]
    if not inside and folder not in sealed:
        yield folder, rights
        return
    if rights & launch.READ_DIR:
        yield folder, launch.READ_DIR  # the way through: its listing, not its files
    if depth > 64:
        return
    try:
        with os.scandir(folder) as entries:
            found = sorted((Path(e.path), e.is_dir(follow_symlinks=False), e.is_symlink()) for e in entries)
    except OSError:
        return
    for path, is_dir, is_link in found:
        if is_link:
            continue  # where a link points is covered (or not) in its own right
        if is_dir:
            yield from _cover(path, rights, holes, sealed=sealed, depth=depth + 1)
        elif path not in holes:
            yield path, rights
