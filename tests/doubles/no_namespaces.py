"""A machine where the OS sandbox cannot start, made for real for one process tree.

The command runs in a user namespace of its own whose ``user.max_user_namespaces`` is 0,
without capabilities: bubblewrap can then create none of the namespaces it needs — what
Ubuntu 24.04's AppArmor rule or a sysctl do to a whole machine. Nothing on the host
changes. Where this cannot be arranged (no ``unshare``/``setpriv``, user namespaces
already refused) :func:`available` is False and the tests that need it skip.
"""

from __future__ import annotations

import functools
import shutil
import subprocess

_SCRIPT = ('echo 0 > /proc/sys/user/max_user_namespaces && exec setpriv --bounding-set=-all --inh-caps=-all '
           '--securebits=+noroot,+noroot_locked,+no_setuid_fixup,+no_setuid_fixup_locked "$@"')
# Put in front of a command line: ``[*WITHOUT_NAMESPACES, "loom", "run", ...]``.
WITHOUT_NAMESPACES: tuple[str, ...] = ("unshare", "--user", "--map-root-user", "sh", "-c", _SCRIPT, "sh")


@functools.cache
def available() -> bool:
    """Whether the wrapper works here and really leaves no namespace to make."""
    if not (shutil.which("unshare") and shutil.which("setpriv")):
        return False
    try:
        done = subprocess.run([*WITHOUT_NAMESPACES, "unshare", "--user", "true"], capture_output=True, timeout=30)
        runs = subprocess.run([*WITHOUT_NAMESPACES, "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return runs.returncode == 0 and done.returncode != 0
