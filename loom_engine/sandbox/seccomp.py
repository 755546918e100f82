"""A seccomp filter that refuses the sockets a mount cannot stop, as classic BPF.

A read-only mount does not stop ``connect()`` to a Unix socket that is already there
(``/var/run/docker.sock`` is root on the host for whoever reaches it; the user's ssh
agent and D-Bus are others), so every confined command runs under this filter:

* ``socket(AF_UNIX, …)`` fails with EPERM (``socketpair`` stays allowed: it makes an
  unnamed, already connected pair and reaches nothing outside);
* with ``block_inet`` (the Landlock fallback, which has no network namespace to
  leave behind), ``socket(AF_INET / AF_INET6, …)`` fails too;
* ``io_uring_setup`` fails with ENOSYS, so a program falls back to plain system calls
  (io_uring can make a socket without the ``socket`` system call this filter sees);
* a system call made through another ABI kills the process: a 32-bit ``int 0x80`` on
  x86-64, or the x32 ABI (numbers with bit 30 set), would otherwise reach ``socket``
  under a number this filter does not look at.

The program is written out by hand (no libseccomp): each instruction is a
``struct sock_filter`` in the machine's byte order. The domain is the low 32 bits of
the first argument only, as the kernel reads it (an ``int``): comparing the whole
64-bit value would let a caller set the high half to slip past.
"""

from __future__ import annotations

import platform
import struct
from dataclasses import dataclass

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
_NR_OFFSET = 0
_ARCH_OFFSET = 4
_ARG0_LOW_OFFSET = 16  # little-endian: the low word of args[0] comes first

# Classic BPF opcodes (linux/filter.h).
_LD_W_ABS = 0x00 | 0x00 | 0x20
_JMP_JEQ_K = 0x05 | 0x10 | 0x00
_JMP_JGE_K = 0x05 | 0x30 | 0x00
_RET_K = 0x06 | 0x00

_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_EPERM = 1
_ENOSYS = 38

_X32_SYSCALL_BIT = 0x40000000

AF_UNIX = 1
AF_INET = 2
AF_INET6 = 10


@dataclass(frozen=True)
class _Abi:
    audit_arch: int
    socket: int
    io_uring_setup: int
    x32_bit: bool  # whether numbers with bit 30 set are another ABI (x86-64 only)


_ABIS = {
    "x86_64": _Abi(audit_arch=0xC000003E, socket=41, io_uring_setup=425, x32_bit=True),
    "aarch64": _Abi(audit_arch=0xC00000B7, socket=198, io_uring_setup=425, x32_bit=False),
}


class SeccompUnsupported(Exception):
    """This machine's architecture has no filter here."""


def supported() -> bool:
    return platform.machine() in _ABIS


def socket_filter(*, block_inet: bool = False, machine: str | None = None) -> bytes:
    """The BPF program (``struct sock_filter[]`` bytes) for this machine's architecture.

    Raises SeccompUnsupported on an architecture it does not know."""
    arch = machine or platform.machine()
    abi = _ABIS.get(arch)
    if abi is None:
        raise SeccompUnsupported(f"no socket filter for the {arch} architecture")
    domains = (AF_UNIX, AF_INET, AF_INET6) if block_inet else (AF_UNIX,)
    program = _Program()
    program.load(_ARCH_OFFSET)
    program.jump_unless(abi.audit_arch, "kill")
    program.load(_NR_OFFSET)
    if abi.x32_bit:
        program.jump_if_at_least(_X32_SYSCALL_BIT, "kill")
    program.jump_if(abi.io_uring_setup, "nosys")
    program.jump_unless(abi.socket, "allow")
    program.load(_ARG0_LOW_OFFSET)
    for domain in domains:
        program.jump_if(domain, "eperm")
    program.label("allow")
    program.ret(_RET_ALLOW)
    program.label("eperm")
    program.ret(_RET_ERRNO | _EPERM)
    program.label("nosys")
    program.ret(_RET_ERRNO | _ENOSYS)
    program.label("kill")
    program.ret(_RET_KILL_PROCESS)
    return program.assemble()


class _Program:
    """A few instructions with forward jumps to named labels (BPF jumps only forward)."""

    def __init__(self) -> None:
        # (code, jump-if-true label, jump-if-false label, k); None: fall through
        self._code: list[tuple[int, str | None, str | None, int]] = []
        self._labels: dict[str, int] = {}

    def load(self, offset: int) -> None:
        self._code.append((_LD_W_ABS, None, None, offset))

    def jump_if(self, value: int, label: str) -> None:
        self._code.append((_JMP_JEQ_K, label, None, value))

    def jump_unless(self, value: int, label: str) -> None:
        self._code.append((_JMP_JEQ_K, None, label, value))

    def jump_if_at_least(self, value: int, label: str) -> None:
        self._code.append((_JMP_JGE_K, label, None, value))

    def ret(self, value: int) -> None:
        self._code.append((_RET_K, None, None, value))

    def label(self, name: str) -> None:
        self._labels[name] = len(self._code)

    def assemble(self) -> bytes:
        out = bytearray()
        for index, (code, when_true, when_false, k) in enumerate(self._code):
            out += struct.pack("=HBBI", code, self._offset(index, when_true), self._offset(index, when_false), k)
        return bytes(out)

    def _offset(self, index: int, label: str | None) -> int:
        if label is None:
            return 0
        offset = self._labels[label] - index - 1
        if not 0 <= offset <= 255:
            raise ValueError(f"jump to {label} out of range")
        return offset


def instruction_count(program: bytes) -> int:
    return len(program) // struct.calcsize("=HBBI")
