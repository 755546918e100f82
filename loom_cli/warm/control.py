"""`loom server status` and `loom server stop`: the warm servers of this user, asked
over their sockets."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from . import place
from .protocol import ControlRequest, ProtocolError, peer_uid, receive_json, send_request

ASK_TIMEOUT_S = 5.0


def ask(path: Path, action: str) -> dict[str, object] | None:
    """The server's answer to ``status`` or ``stop``; None when nobody (of this user) answers."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(ASK_TIMEOUT_S)
    try:
        conn.connect(str(path))
        if peer_uid(conn) != os.getuid():
            return None
        send_request(conn, ControlRequest(action), [])
        answer = receive_json(conn)
    except (OSError, ProtocolError, ValueError):
        return None
    finally:
        conn.close()
    return answer if isinstance(answer, dict) else None


def server_lines(action: str) -> list[str]:
    """One line per server for ``status`` (or ``stop``, which stops each), and where
    they live; the switches that turn the warm server off, when one does."""
    choice = place.choose(os.environ)
    lines: list[str] = []
    if not place.supported():
        lines.append("warm server: not available on this platform (every `loom` starts cold)")
    elif not choice.enabled:
        lines.append("warm server: off (LOOM_WARM=0 or [warm] enabled = false in the user config)")
    found_folder = place.socket_folder(os.environ, create=False)
    if found_folder is None:
        lines.append("warm server: no private folder for its socket (XDG_RUNTIME_DIR or ~/.cache/loom/warm)")
        return lines
    folder = Path(found_folder)
    found = sorted(folder.glob(f"{place.SOCKET_PREFIX}*{place.SOCKET_SUFFIX}"))
    for path in found:
        answer = ask(path, action)
        if answer is None:
            lines.append(f"{path}: not answering (stale)")
            continue
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(str(answer["started"]))))
        verb = "stopping" if action == "stop" or answer["stopping"] else "running"
        lines.append(f"{path}: {verb}, pid {answer['pid']}, since {started}, "
                     f"{answer['running']} command(s) running, exits after "
                     f"{float(str(answer['idle_s'])) / 60:g} min idle")
    if not found:
        lines.append(f"warm server: none running (its socket would be in {folder})")
    return lines
