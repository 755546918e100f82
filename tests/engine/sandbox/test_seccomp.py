"""The socket filter: its checks in order, and what it does to a real process.

The real runs go through the bash tool in each backend and make the system calls
directly (ctypes), the way a hostile program would, rather than through Python's
socket module.
"""

from __future__ import annotations

import platform
import struct
import sys
from pathlib import Path

import pytest

from loom_engine.sandbox import SandboxConfig
from loom_engine.sandbox.seccomp import SeccompUnsupported, instruction_count, socket_filter
from loom_engine.sandbox.status import Backend
from loom_engine.workspace import Workspace
from tests.doubles.sandbox import BACKENDS, bash, real_path, real_sandbox, tool_context

X86_64 = 0xC000003E


def _decode(program: bytes) -> list[tuple[int, int, int, int]]:
    return [struct.unpack("=HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]


def test_the_architecture_is_checked_first_and_x32_is_refused() -> None:
    code = _decode(socket_filter(machine="x86_64"))
    assert code[0] == (0x20, 0, 0, 4)  # load the architecture
    assert code[1][0] == 0x15 and code[1][3] == X86_64  # not x86-64: to the kill
    assert code[2] == (0x20, 0, 0, 0)  # load the number
    assert code[3][0] == 0x35 and code[3][3] == 0x40000000  # x32 numbers: to the kill
    kill = len(code) - 1
    assert code[kill] == (0x06, 0, 0, 0x80000000)
    assert 1 + 1 + code[1][2] == kill and 3 + 1 + code[3][1] == kill


def test_only_the_low_word_of_the_domain_is_compared() -> None:
    code = _decode(socket_filter(machine="x86_64", block_inet=True))
    loads = [k for op, _, _, k in code if op == 0x20]
    assert loads == [4, 0, 16]  # arch, nr, the low half of args[0]; never the high half at 20
    compared = [k for op, _, _, k in code[code.index((0x20, 0, 0, 16)):] if op == 0x15]
    assert compared == [1, 2, 10]


def test_arm64_has_no_x32_check_and_other_machines_none() -> None:
    assert instruction_count(socket_filter(machine="aarch64")) == instruction_count(
        socket_filter(machine="x86_64")) - 1
    with pytest.raises(SeccompUnsupported):
        socket_filter(machine="riscv64")


def _syscall(nr: int, *args: int) -> str:
    return (f"{sys.executable} -c \"import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
            f"r = libc.syscall(ctypes.c_long({nr}), {', '.join(f'ctypes.c_long({a})' for a in args)}); "
            "print('result', r, os.strerror(ctypes.get_errno()) if r < 0 else '')\"")


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 system call numbers")
@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_real_process_cannot_slip_past(tmp_path: Path, backend: Backend) -> None:
    root = real_path(tmp_path)
    ctx = tool_context(Workspace.at(root), real_sandbox(Workspace.at(root), backend, SandboxConfig()))
    high_bits = await bash(ctx, _syscall(41, 1 | (1 << 32), 1, 0))  # AF_UNIX with the high half set
    assert "result -1 Operation not permitted" in high_bits.content
    x32 = await bash(ctx, _syscall(41 | 0x40000000, 1, 1, 0))
    assert "result -1" not in x32.content and "Exit code: 159" in x32.content  # killed by SIGSYS (128 + 31)
    uring = await bash(ctx, _syscall(425, 8, 0))
    assert "result -1 Function not implemented" in uring.content
    inet = await bash(ctx, _syscall(41, 2, 1, 0))
    # bubblewrap leaves Internet sockets to its empty network namespace; Landlock refuses them.
    assert ("Operation not permitted" in inet.content) == (backend == "landlock")
