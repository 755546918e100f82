"""One sentence for the model when a confined command failed because of the sandbox.

Read from what the command printed (and from what Loom's domain proxy refused it): a
host not in the allow-list, a read-only file system, no network, a hidden file, a refused
Unix socket, and (under the Landlock fallback) a refused write in the workspace root or
in ``.git``. The sentence says what the wall is and what the model
can do: work inside the workspace, or ask the user to run the one command outside
the sandbox (``dangerously_disable_sandbox``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

_ESCALATE = ("if it really must, call bash again with dangerously_disable_sandbox: true and say why in "
             "description (the user is asked).")

_READ_ONLY = re.compile(r"read-only file system|EROFS", re.IGNORECASE)
_BUSY = re.compile(r"device or resource busy|EBUSY", re.IGNORECASE)
_NETWORK = re.compile(
    r"network is unreachable|could not resolve host|temporary failure in name resolution|"
    r"name or service not known|no address associated with hostname|failed to resolve|"
    r"getaddrinfo|ENETUNREACH|EAI_AGAIN|nodename nor servname|unable to resolve|"
    r"could not resolve|name resolution", re.IGNORECASE)
_REFUSED = re.compile(r"connection refused|ECONNREFUSED", re.IGNORECASE)
_NOT_PERMITTED = re.compile(r"operation not permitted|EPERM", re.IGNORECASE)
_SOCKET = re.compile(r"socket|\.sock\b|connect", re.IGNORECASE)
_MISSING_TMP = re.compile(r"/tmp/\S*: no such file or directory|no such file or directory[^\n]*/tmp/", re.IGNORECASE)
_DENIED = re.compile(r"permission denied|EACCES", re.IGNORECASE)
# The proxy's 403 as the command printed it (a plain-http body, Python's tunnel error).
_PROXY_REFUSAL = re.compile(r"Loom's sandbox (?:refused|closed the tunnel to) [^\n>]*")


def explain(output: str, command: str, *, backend: str, network: str, hidden: Sequence[Path],
            allowed_domains: Sequence[str] = (), refused: Sequence[str] = ()) -> str:
    """The sentence for a failed confined command, or "" when nothing points at the sandbox.
    ``refused``: what Loom's proxy refused this command (under ``network = "allowlist"``)."""
    text = output[-20_000:]
    if network == "allowlist" and backend != "bubblewrap":
        network = "off"  # the allow-list needs bubblewrap's private network: without it, none
    for path in hidden:
        if _mentions(text, path) or _mentions(command, path):
            return (f"The sandbox hides {path} from commands (the user's deny_read list), so it reads as empty "
                    f"or missing; do without it, or {_ESCALATE}")
    if network == "allowlist":
        said = refused[0] if refused else (found.group(0) if (found := _PROXY_REFUSAL.search(text)) else "")
        if said:
            listed = ", ".join(allowed_domains) or "none"
            return (f"{said.rstrip('.')}. Commands reach only the hosts in the user's allow-list "
                    f"([sandbox] allowed_domains: {listed}) over http and https; do without this host, ask the "
                    f"user to add it to allowed_domains in their Loom config, or {_ESCALATE}")
    if _READ_ONLY.search(text) or _BUSY.search(text):
        return ("The sandbox made this fail: commands may write only in the workspace and the temp folder "
                "/tmp, and .git/hooks, .git/config, .loom and .claude stay read-only even there; write "
                f"inside the workspace instead, or {_ESCALATE}")
    if network != "on" and _NETWORK.search(text):
        what = "no network" if network == "off" else "network only to the allowed domains"
        return (f"The sandbox gives commands {what}, so this could not reach the host; work offline "
                f"(use files already here), or {_ESCALATE}")
    if network != "on" and backend == "bubblewrap" and _REFUSED.search(text):
        return ("The sandbox gives commands a network of their own, so servers running on this machine "
                f"(its localhost) cannot be reached; start the server in the same command, or {_ESCALATE}")
    if _NOT_PERMITTED.search(text) and (_SOCKET.search(text) or _SOCKET.search(command)):
        return ("The sandbox refuses Unix sockets (docker, ssh-agent, D-Bus)"
                + (" and, under the Landlock fallback, network sockets" if backend == "landlock" and
                   network != "on" else "")
                + f"; do without them, or {_ESCALATE}")
    if backend == "bubblewrap" and _MISSING_TMP.search(text):
        return ("The sandbox gives commands a private /tmp, so files in the machine's own /tmp are not there; "
                f"keep work files in the workspace or in $TMPDIR, or {_ESCALATE}")
    if backend == "landlock" and _DENIED.search(text):
        return ("The sandbox (the Landlock fallback) made this fail: commands may change files in the "
                "workspace's folders but cannot add, remove or rename entries at the workspace's top level "
                "or directly in .git, and cannot write outside the workspace and the temp folder "
                f"$TMPDIR; use the file tools for new top-level files, or {_ESCALATE}")
    return ""


def _mentions(text: str, path: Path) -> bool:
    shown = os.fspath(path)
    if shown in text:
        return True
    home = os.path.expanduser("~")
    if home != "~" and shown.startswith(home + os.sep):
        return "~" + shown[len(home):] in text or "$HOME" + shown[len(home):] in text
    return False
