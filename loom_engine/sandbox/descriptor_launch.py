"""Give a command the seccomp program bubblewrap reads from a file descriptor, then become it.

    python -I -S …/loom_engine/sandbox/descriptor_launch.py <fd> <program as base64> bwrap … --seccomp <fd> …

Loom passes ``bwrap`` its seccomp filter as an inherited descriptor, which only a
process Loom starts itself can inherit. When another program starts the command (an
editor's terminal over ACP), this launcher is run in front of ``bwrap``: it writes the
program (given in full on its own command line, which Loom built) into a memory file,
puts that at descriptor ``fd`` and ``exec``s the rest, so ``bwrap`` confines the command
exactly as when Loom starts it. Standard library only, from an interpreter started with
``-I -S``, for the reasons given in ``launch.py``. Any failure before ``exec`` exits
with status 126 and one line on stderr: the command never runs without its filter.
"""

from __future__ import annotations

import base64
import binascii
import os
import sys
from collections.abc import Sequence

FAILED = 126


def main(args: Sequence[str]) -> int:
    if len(args) < 3 or not args[0].isdigit():
        print("loom descriptor launcher: usage: <fd> <program as base64> <command> [args...]", file=sys.stderr)
        return FAILED
    fd = int(args[0])
    try:
        program = base64.b64decode(args[1], validate=True)
        memory = os.memfd_create("loom-seccomp", 0)
        os.write(memory, program)
        os.lseek(memory, 0, os.SEEK_SET)
        if memory != fd:
            os.dup2(memory, fd)  # the copy is inherited across exec
            os.close(memory)
        os.execvp(args[2], list(args[2:]))
    except (OSError, ValueError, binascii.Error) as error:
        print(f"loom descriptor launcher: cannot pass the seccomp program: {error}", file=sys.stderr)
    return FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
