"""The bytes between a `loom` client and the warm server.

A client connects and sends one request: an 8-byte length, with its standard streams
attached as file descriptors (SCM_RIGHTS) when it asks to run, then that many bytes of
JSON. The server answers with one byte: ``ACCEPTED`` or ``REFUSED`` (then the client
runs cold). While the child runs, the client sends one byte per signal it received
(the signal's number) and the server sends ``STOPPED`` when the child stops (Ctrl+Z)
and ``EXITED`` plus a 4-byte status at the end: the exit code, or minus the signal that
killed the child (the client then dies of the same signal).

Records are NamedTuples, not dataclasses: the entry point imports this module, and
dataclasses would bring inspect with it.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import NamedTuple

ACCEPTED = b"A"
REFUSED = b"R"
STOPPED = b"S"
EXITED = b"X"
_LENGTH = struct.Struct("!Q")
_STATUS = struct.Struct("!i")
MAX_REQUEST = 4 * 1024 * 1024  # an environment and a command line, with room to spare
STREAMS = 3


class ProtocolError(Exception):
    """The other end sent something this end does not understand, or went away."""


class Stream(NamedTuple):
    """How the caller's Python would wrap one standard stream (what the child copies)."""

    encoding: str
    errors: str


class RunRequest(NamedTuple):
    """One `loom` command line, as the client's process would run it."""

    socket_name: str  # which build the client expects (the server checks it is its own)
    argv: list[str]
    cwd: str
    env: dict[str, str]
    umask: int
    streams: list[Stream]


class ControlRequest(NamedTuple):
    """``status`` or ``stop``: from `loom server`, or from a newer server."""

    action: str


Request = RunRequest | ControlRequest


def send_request(conn: socket.socket, request: Request, fds: list[int]) -> None:
    if isinstance(request, RunRequest):
        body = {"kind": "run", "socket_name": request.socket_name, "argv": request.argv, "cwd": request.cwd,
                "env": request.env, "umask": request.umask,
                "streams": [[s.encoding, s.errors] for s in request.streams]}
    else:
        body = {"kind": "control", "action": request.action}
    payload = json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogateescape")
    socket.send_fds(conn, [_LENGTH.pack(len(payload))], fds)
    conn.sendall(payload)


def receive_request(conn: socket.socket) -> tuple[Request, list[int]]:
    """The request and the descriptors that came with it (the caller owns and closes them)."""
    head, fds, _flags, _address = socket.recv_fds(conn, _LENGTH.size, STREAMS)
    try:
        if len(head) != _LENGTH.size:
            raise ProtocolError("short request header")
        (size,) = _LENGTH.unpack(head)
        if size > MAX_REQUEST:
            raise ProtocolError(f"request of {size} bytes")
        body = json.loads(receive_exactly(conn, size).decode("utf-8", "surrogateescape"))
        return _request_from(body), fds
    except (ProtocolError, ValueError, KeyError, TypeError) as error:
        for fd in fds:
            _close(fd)
        raise ProtocolError(str(error)) from None


def _request_from(body: dict[str, object]) -> Request:
    if body["kind"] == "control":
        return ControlRequest(str(body["action"]))
    argv, env, streams = body["argv"], body["env"], body["streams"]
    if not (isinstance(argv, list) and isinstance(env, dict) and isinstance(streams, list)):
        raise ProtocolError("malformed run request")
    return RunRequest(socket_name=str(body["socket_name"]), argv=[str(a) for a in argv], cwd=str(body["cwd"]),
                      env={str(k): str(v) for k, v in env.items()}, umask=int(str(body["umask"])),
                      streams=[Stream(str(s[0]), str(s[1])) for s in streams])


def receive_exactly(conn: socket.socket, size: int) -> bytes:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = conn.recv(min(remaining, 65536))
        if not chunk:
            raise ProtocolError("the other end went away")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def exited(status: int) -> bytes:
    return EXITED + _STATUS.pack(status)


def read_status(conn: socket.socket) -> int:
    (status,) = _STATUS.unpack(receive_exactly(conn, _STATUS.size))
    return int(status)


def send_json(conn: socket.socket, value: object) -> None:
    payload = json.dumps(value).encode()
    conn.sendall(_LENGTH.pack(len(payload)) + payload)


def receive_json(conn: socket.socket) -> object:
    (size,) = _LENGTH.unpack(receive_exactly(conn, _LENGTH.size))
    if size > MAX_REQUEST:
        raise ProtocolError(f"answer of {size} bytes")
    return json.loads(receive_exactly(conn, size))


def peer_uid(conn: socket.socket) -> int:
    """The user id of the process at the other end (SO_PEERCRED: pid, uid, gid)."""
    return _peer_credentials(conn)[1]


def peer_pid(conn: socket.socket) -> int:
    """The process id at the other end, in this process's pid namespace (0: not seen in it)."""
    return _peer_credentials(conn)[0]


def _peer_credentials(conn: socket.socket) -> tuple[int, int, int]:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", creds)
    return int(pid), int(uid), int(gid)


def _close(fd: int) -> None:
    import os

    try:
        os.close(fd)
    except OSError:
        pass
