"""A machine where no OS sandbox can start, made for real for one process tree.

The command runs in a user namespace of its own whose ``user.max_user_namespaces`` is 0,
without capabilities, so bubblewrap can create none of the namespaces it needs (what
Ubuntu 24.04's AppArmor rule or a sysctl do to a whole machine); and under a seccomp
filter that answers ``landlock_create_ruleset`` with ENOSYS, as a kernel older than 5.13
does, so the Landlock fallback finds no Landlock. Nothing on the host changes. Where
this cannot be arranged (no ``unshare``/``setpriv``, user namespaces refused already, an
architecture the filter does not know) :func:`available` is False and the tests that
need it skip.

Run as a program, this file is the second half: ``python no_sandbox.py CMD ARGS…``
installs the filter and executes CMD.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import shutil
import struct
import subprocess
import sys

_NAMESPACES_OFF = ('echo 0 > /proc/sys/user/max_user_namespaces && exec setpriv --bounding-set=-all --inh-caps=-all '
                   '--securebits=+noroot,+noroot_locked,+no_setuid_fixup,+no_setuid_fixup_locked "$@"')
# Put in front of a command line: ``[*WITHOUT_SANDBOX, "loom", "run", ...]``.
WITHOUT_SANDBOX: tuple[str, ...] = ("unshare", "--user", "--map-root-user", "sh", "-c", _NAMESPACES_OFF, "sh",
                                    sys.executable, os.path.abspath(__file__))

_LANDLOCK_CREATE_RULESET = 444  # the same number on x86_64 and aarch64
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_ENOSYS = 38


def _filter(arch: int) -> bytes:
    """Classic BPF: landlock_create_ruleset fails with ENOSYS; every other call is allowed."""
    load, jump_eq, ret = 0x20, 0x15, 0x06
    program = [
        (load, 0, 0, 4),  # seccomp_data.arch
        (jump_eq, 0, 3, arch),  # another architecture: allow
        (load, 0, 0, 0),  # seccomp_data.nr
        (jump_eq, 0, 1, _LANDLOCK_CREATE_RULESET),
        (ret, 0, 0, 0x00050000 | _ENOSYS),  # SECCOMP_RET_ERRNO
        (ret, 0, 0, 0x7FFF0000),  # SECCOMP_RET_ALLOW
    ]
    return b"".join(struct.pack("HBBI", *instruction) for instruction in program)


def _exec_without_landlock(argv: list[str]) -> None:
    arch = _AUDIT_ARCH[platform.machine()]
    code = _filter(arch)
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(code, len(code))

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    program = Program(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(program), 0, 0) != 0:  # NNP, SECCOMP
        raise OSError(ctypes.get_errno(), "cannot install the seccomp filter")
    os.execvp(argv[0], argv)


@functools.cache
def available() -> bool:
    """Whether the wrapper works here and really leaves no sandbox to make."""
    if platform.machine() not in _AUDIT_ARCH or not (shutil.which("unshare") and shutil.which("setpriv")):
        return False
    landlock = "import ctypes; print(ctypes.CDLL(None).syscall(444, None, 0, 1))"
    try:
        namespaces = subprocess.run([*WITHOUT_SANDBOX, "unshare", "--user", "true"], capture_output=True, timeout=30)
        abi = subprocess.run([*WITHOUT_SANDBOX, sys.executable, "-c", landlock], capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return namespaces.returncode != 0 and abi.returncode == 0 and abi.stdout.strip() == "-1"


if __name__ == "__main__":
    _exec_without_landlock(sys.argv[1:])
