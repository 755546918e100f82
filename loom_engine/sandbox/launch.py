"""The Landlock launcher: confine this process, then become the command.

    python -I -S …/loom_engine/sandbox/launch.py <plan as JSON> <program> [args...]

Run by the Landlock backend (:mod:`.landlock`) in place of the command: it sets
``no_new_privs``, builds a Landlock ruleset from the plan (the paths readable, the
paths writable, each with its rights), restricts itself to it, installs the seccomp
filter, and ``exec``s the program, which inherits all of it. Only the standard
library is imported (ctypes for the three Landlock system calls and ``prctl``), from
an interpreter started with ``-I -S``: no site folders, no environment variables, no
working directory on the path, since nothing here is confined yet. That is also why
it is run as a file rather than with ``-m``: ``-I`` leaves Loom's package off the path,
and importing the package would load far more than these few standard modules.

Rights are as in ``linux/landlock.h``; a path that is gone by now is skipped (a rule
that cannot be added only ever leaves less allowed). Any failure before ``exec``
exits with status 126 and one line on stderr: the command never runs unconfined.
"""

from __future__ import annotations

import base64
import ctypes
import json
import os
import platform
import struct
import sys
from collections.abc import Sequence

# Generic system call numbers (the same on x86-64 and arm64).
_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_O_PATH = getattr(os, "O_PATH", 0o10000000)
FAILED = 126

# The file rights, by the ABI that brought them.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
# Rights a rule on a file (not a folder) may carry.
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE
# Scopes (ABI 6): signals and abstract Unix sockets stay inside the domain.
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI, or 0 without Landlock (or off this platform)."""
    if not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "aarch64"):
        return 0
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(ctypes.c_long(_SYS_CREATE_RULESET), None, ctypes.c_size_t(0),
                           ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def handled_rights(abi: int) -> int:
    """Every file right this ABI knows (device ioctls are left alone)."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    return rights


def _check(result: int, what: str) -> int:
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")
    return result


def restrict(rules: Sequence[tuple[str, int]], *, handled: int, scoped: int) -> None:
    """Confine this process (and what it execs) to ``rules``; raises OSError."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    attr = struct.pack("=QQQ", handled, 0, scoped) if scoped else struct.pack("=Q", handled)
    buffer = ctypes.create_string_buffer(attr, len(attr))
    ruleset = _check(libc.syscall(ctypes.c_long(_SYS_CREATE_RULESET), buffer, ctypes.c_size_t(len(attr)),
                                  ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        for path, rights in rules:
            try:
                fd = os.open(path, _O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
            except OSError:
                continue  # gone since the plan was made: nothing to allow there
            try:
                is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
                allowed = rights & handled if is_dir else rights & handled & FILE_RIGHTS
                beneath = ctypes.create_string_buffer(struct.pack("=Qi", allowed, fd), 12)
                _check(libc.syscall(ctypes.c_long(_SYS_ADD_RULE), ctypes.c_int(ruleset),
                                    ctypes.c_int(_RULE_PATH_BENEATH), beneath, ctypes.c_uint32(0)),
                       f"landlock_add_rule({path})")
            finally:
                os.close(fd)
        _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        _check(libc.syscall(ctypes.c_long(_SYS_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)),
               "landlock_restrict_self")
    finally:
        os.close(ruleset)


def install_seccomp(program: bytes) -> None:
    """Load a classic BPF seccomp program (``struct sock_filter[]`` bytes); raises OSError."""
    libc = _libc()
    count = len(program) // 8
    filters = ctypes.create_string_buffer(program, len(program))

    class _Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = _Fprog(count, ctypes.cast(filters, ctypes.c_void_p))
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    _check(libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")


def main(args: Sequence[str]) -> int:
    """``args``: how many pieces the plan's JSON comes in, the pieces, then the command
    to exec."""
    count = int(args[0]) if args and args[0].isdigit() else 0
    if count < 1 or len(args) < count + 2:
        print("loom sandbox launcher: usage: <pieces> <plan piece>... <program> [args...]", file=sys.stderr)
        return FAILED
    command = list(args[count + 1:])
    try:
        plan = json.loads("".join(args[1:count + 1]))
        restrict([(str(p), int(r)) for p, r in plan["rules"]], handled=int(plan["handled"]),
                 scoped=int(plan.get("scoped", 0)))
        if plan.get("seccomp"):
            install_seccomp(base64.b64decode(plan["seccomp"]))
        os.execvp(command[0], command)
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"loom sandbox launcher: cannot confine the command: {error}", file=sys.stderr)
    return FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
