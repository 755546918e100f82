"""The installed `loom` through the warm server gives what the cold path gives.

Each test turns the warm server on for itself (the suite runs with LOOM_WARM=0), in a
private runtime folder, against the fake LLM server; it waits for events (the socket
appears, a process is gone), never for a clock. A server takes seconds to start (it
imports all of Loom and both SDKs), so the tests that only run `loom` through it share
one (``running``: each run carries its own environment, folder and fake server); the
tests that stop, kill or replace a server, or need a folder without one, have their own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.warm import (
    LOOM_SCRIPT,
    WarmPlace,
    run_loom,
    start_loom,
    until,
    warm_env,
    warm_place,
    warmed,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not LOOM_SCRIPT.exists(),
                                reason="the warm server needs Linux and the installed `loom`")


@dataclass(frozen=True)
class Running:
    place: WarmPlace  # the shared runtime folder, with this test's own log of cold runs
    env: dict[str, str]  # this test's: its data and config folders, its fake server


@pytest.fixture(scope="module")
def _shared_place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WarmPlace]:
    with warm_place(tmp_path_factory.mktemp("warm")) as place:
        yield place


@pytest.fixture
def running(_shared_place: WarmPlace, workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> Running:
    """The shared warm server, up (the first test to use it starts it), with no child of
    an earlier test still running."""
    place = replace(_shared_place, main_log=tmp_path / "main.log")
    env = warm_env(tmp_path, place, fake_llm)
    warmed(place, workspace, env)
    until(lambda: not _children_of_servers(place.folder), "an earlier test's child to end", timeout=60)
    return Running(place, env)


def test_a_warm_run_prints_and_exits_as_a_cold_one(workspace: Path, running: Running,
                                                   fake_llm: FakeLLMServer) -> None:
    place, env = running.place, running.env
    cold_env = {**env, "LOOM_WARM": "0"}
    results = {}
    for name, run_env in (("cold", cold_env), ("warm", env)):
        fake_llm.enqueue(Reply.text("hello there"))
        as_json = run_loom(["run", "say hello", "-o", "json"], workspace, run_env)
        bad_flag = run_loom(["run", "x", "--no-such-flag"], workspace, run_env)
        empty = run_loom(["run", "   "], workspace, run_env)
        results[name] = (as_json, bad_flag, empty)
        assert place.imported_main(as_json[3]) == (name == "cold"), f"the {name} run did not run {name}"
    (cold_json, cold_flag, cold_empty), (warm_json, warm_flag, warm_empty) = results["cold"], results["warm"]
    assert warm_json[0] == cold_json[0] == 0, warm_json[2]
    cold_result, warm_result = json.loads(cold_json[1]), json.loads(warm_json[1])
    assert warm_result["result"] == cold_result["result"] == "hello there"
    assert warm_result.keys() == cold_result.keys()
    assert warm_json[2] == cold_json[2]
    assert warm_flag[:3] == cold_flag[:3] and warm_flag[0] == 2
    assert warm_empty[:3] == cold_empty[:3] and warm_empty[0] == 2


def test_ctrl_c_reaches_the_child_and_the_run_ends_with_130(workspace: Path, running: Running,
                                                             fake_llm: FakeLLMServer) -> None:
    outcomes = []
    for run_env in ({**running.env, "LOOM_WARM": "0"}, running.env):
        fake_llm.reset()
        reply, gate = Reply.text("never sent").held()
        fake_llm.enqueue(reply)
        process = start_loom(["run", "wait for me"], workspace, run_env)
        assert fake_llm.wait_for_requests(1, timeout=120), "the run never asked the model"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
        gate.set()
        outcomes.append((process.returncode, out, err))
    cold, warm = outcomes
    assert warm[0] == cold[0] == 130, warm
    assert warm[1:] == cold[1:]


def test_the_child_ends_when_its_client_is_killed(workspace: Path, running: Running,
                                                 fake_llm: FakeLLMServer) -> None:
    reply, gate = Reply.text("never sent").held()
    fake_llm.enqueue(reply)
    process = start_loom(["run", "wait for me"], workspace, running.env)
    assert fake_llm.wait_for_requests(1, timeout=120)
    children = _children_of_servers(running.place.folder)
    assert len(children) == 1, children
    process.kill()
    process.communicate()
    until(lambda: not Path(f"/proc/{children[0]}").exists() or _is_zombie(children[0]),
          "the child to end", timeout=60)
    gate.set()


def test_a_warm_run_writes_in_the_callers_encoding(workspace: Path, running: Running,
                                                  fake_llm: FakeLLMServer) -> None:
    # The answer is written to the child's sys.stdout, never to the server's (whose
    # encoding a default argument once kept: UTF-8 reached an ASCII terminal).
    fake_llm.enqueue(Reply.text("done \u2713 caf\u00e9"))
    code, out, err, pid = run_loom(["run", "hi"], workspace, {**running.env, "PYTHONIOENCODING": "ascii"})
    assert code == 0, err
    assert not running.place.imported_main(pid)
    assert out == "done ? caf?\n"


def test_each_run_sees_its_own_environment(workspace: Path, tmp_path: Path, running: Running,
                                           fake_llm: FakeLLMServer) -> None:
    for name in ("first", "second"):
        fake_llm.enqueue(Reply.text(f"answer {name}"))
        data = tmp_path / f"data-{name}"
        code, out, err, pid = run_loom(["run", f"task {name}"], workspace, {**running.env, "LOOM_DATA_DIR": str(data)})
        assert code == 0, err
        assert out == f"answer {name}\n"
        assert not running.place.imported_main(pid)
        sessions = list((data / "sessions").rglob("*.jsonl"))
        assert len(sessions) == 1, f"{name}: the session was not written under its own LOOM_DATA_DIR"
        assert f"task {name}" in sessions[0].read_text()


def test_a_socket_folder_open_to_others_is_not_used(workspace: Path, tmp_path: Path,
                                                    fake_llm: FakeLLMServer) -> None:
    with warm_place(tmp_path) as place:
        place.folder.mkdir(mode=0o755)
        os.chmod(place.folder, 0o755)
        env = warm_env(tmp_path, place, fake_llm)
        # Two `loom --version`: the first would start a server in a safe folder, the
        # second would then run warm.
        first = run_loom(["--version"], workspace, env)
        second = run_loom(["--version"], workspace, env)
        assert (first[0], first[1]) == (0, "loom 0.1.0\n"), first[2]
        assert (second[0], second[1]) == (0, "loom 0.1.0\n"), second[2]
        assert place.imported_main(second[3]), "a loose folder was used"
        assert list(place.folder.iterdir()) == [], "a server was started in a folder others can enter"


def test_loom_warm_0_starts_no_server(workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    with warm_place(tmp_path) as place:
        env = {**warm_env(tmp_path, place, fake_llm), "LOOM_WARM": "0"}
        code, _out, err, _pid = run_loom(["--version"], workspace, env)
        assert code == 0, err
        assert not place.folder.exists()


def test_the_user_config_can_turn_it_off(workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    with warm_place(tmp_path) as place:
        config = tmp_path / "config"
        config.mkdir()
        (config / "config.toml").write_text("[warm]\nenabled = false\n")
        code, _out, err, _pid = run_loom(["--version"], workspace, warm_env(tmp_path, place, fake_llm))
        assert code == 0, err
        assert not place.folder.exists()


def test_loom_server_status_and_stop(workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    with warm_place(tmp_path) as place:
        env = warm_env(tmp_path, place, fake_llm)
        warmed(place, workspace, env)
        code, out, err, _pid = run_loom(["server", "status"], workspace, env)
        assert code == 0, err
        assert "running, pid" in out and str(place.sockets()[0]) in out
        code, out, err, _pid = run_loom(["server", "stop"], workspace, env)
        assert code == 0, err
        assert "stopping" in out
        until(lambda: not place.sockets(), "the socket to go", timeout=60)
        code, out, _err, _pid = run_loom(["server", "status"], workspace, env)
        assert "none running" in out


def test_the_server_exits_when_idle(tmp_path: Path) -> None:
    with warm_place(tmp_path) as place:
        from loom_cli.warm import place as where

        place.folder.mkdir(mode=0o700)
        confined = where.confinement()
        assert confined is not None
        socket_path = place.folder / where.socket_name(str(Path(sys.executable).with_name("python3")), confined,
                                                        _fingerprint_of_installed())
        server = subprocess.Popen([str(Path(sys.executable).with_name("python3")), "-m", "loom_cli.warm.server",
                                   str(socket_path), "0.5"], cwd="/", stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        until(lambda: socket_path.exists() or server.poll() is not None, "the socket")
        assert socket_path.exists(), server.stderr.read() if server.stderr else ""
        assert server.wait(timeout=60) == 0
        assert not socket_path.exists()


# A client confined otherwise (no new privileges) asking a server to run `loom --version`.
CONFINED_PROBE = """
import os, sys
from loom_cli.warm import client
conn = client._connect(sys.argv[1])
request = client._request(["loom", "--version"], os.path.basename(sys.argv[1]))
print("refused" if conn is not None and request is not None and client._run_through(conn, request) is None
      else "served")
"""


def test_a_loom_confined_otherwise_is_never_run_by_the_server(workspace: Path, running: Running,
                                                             fake_llm: FakeLLMServer) -> None:
    """`loom` under a restriction the server lacks (here no new privileges, as a sandbox or
    Landlock sets; namespaces, seccomp and capabilities count too) runs in its own process,
    confined as it is, never in the server outside; the server refuses such a client even
    at its own socket."""
    from loom_cli.warm.control import ask

    place, env = running.place, running.env
    [server_socket] = place.sockets()
    fake_llm.enqueue(Reply.text("ran"))
    confined = subprocess.Popen(["setpriv", "--no-new-privs", str(LOOM_SCRIPT), "run", "hi"], cwd=workspace, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = confined.communicate(timeout=120)
        assert confined.returncode == 0 and out.strip() == "ran", err
        assert place.imported_main(confined.pid)  # cold: in its own, confined, process (setpriv execs it)
        probe = subprocess.run(["setpriv", "--no-new-privs", sys.executable, "-c", CONFINED_PROBE,
                                str(server_socket)], cwd=workspace, env=env, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=60)
        assert probe.stdout.strip() == "refused", probe.stdout + probe.stderr
    finally:  # the server the confined `loom` started for its own next time: stopped once up
        until(lambda: len(place.sockets()) == 2, "the confined loom's own server")
        [own] = [path for path in place.sockets() if path != server_socket]
        ask(own, "stop")
        until(lambda: place.sockets() == [server_socket], "the confined loom's server to stop")


def _fingerprint_of_installed() -> str:
    probe = subprocess.run([str(Path(sys.executable).with_name("python3")), "-c",
                            "from loom_cli.warm import place; print(place.fingerprint())"],
                           cwd="/", capture_output=True, text=True, check=True, env={"PATH": os.environ["PATH"]})
    return probe.stdout.strip()


def _children_of_servers(folder: Path) -> list[int]:
    from tests.doubles.processes import children_of
    from tests.doubles.warm import _lock_holders

    return children_of({pid for lock in folder.glob("*.lock") for pid in _lock_holders(lock)})


def _is_zombie(pid: int) -> bool:
    try:
        return "State:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True


def test_a_request_for_another_build_is_refused_and_runs_cold(running: Running) -> None:
    import socket

    from loom_cli.warm.protocol import REFUSED, RunRequest, Stream, send_request

    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(running.place.sockets()[0]))
    stream = Stream("utf-8", "strict")
    send_request(conn, RunRequest("loom-0000000000000000-0000000000000000.sock", ["loom", "--version"], "/",
                                  {}, 0o022, [stream, stream, stream]), [0, 1, 2])
    assert conn.recv(1) == REFUSED
    conn.close()


SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.mark.skipif(os.getuid() != 0 or not Path(SYSTEM_PYTHON).exists(),
                    reason="connecting as another user needs root (and a Python that user may run)")
def test_another_user_gets_no_answer(running: Running) -> None:
    place = running.place
    socket_path = place.sockets()[0]
    opened = (place.runtime, place.folder, socket_path)
    modes = [os.stat(path).st_mode for path in opened]
    for folder in (place.runtime, place.folder):  # let the other user reach the socket at all
        os.chmod(folder, 0o711)
    os.chmod(socket_path, 0o777)
    try:
        # The system's Python (this venv's is not the other user's to run), speaking the
        # protocol by hand: a status request, which the server answers its own user.
        probe = ("import json, socket, struct, sys\n"
                 "c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1])\n"
                 "body = json.dumps({'kind': 'control', 'action': 'status'}).encode()\n"
                 # The server may hang up before the request is even sent: a broken pipe.
                 "try:\n    c.sendall(struct.pack('!Q', len(body)) + body)\n"
                 "    print(repr(c.recv(64)) if c.recv(1) else 'closed')\n"
                 "except (BrokenPipeError, ConnectionResetError):\n    print('closed')\n")
        done = subprocess.run([SYSTEM_PYTHON, "-I", "-c", probe, str(socket_path)], user=65534, group=65534,
                              cwd="/", capture_output=True, text=True, timeout=60, env={})
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "closed", "the server answered another user"
    finally:  # private again, for the next test that shares the server
        for path, mode in zip(opened, modes, strict=True):
            os.chmod(path, mode)


def test_an_edited_install_gets_a_fresh_server_and_the_old_one_stops(workspace: Path, tmp_path: Path,
                                                                     fake_llm: FakeLLMServer) -> None:
    import shutil

    from loom_cli.warm.place import PACKAGES

    root = Path(__file__).resolve().parents[3]
    install = tmp_path / "install"
    for package in PACKAGES:  # a copy of Loom to edit, first on the path
        shutil.copytree(root / package, install / package, ignore=shutil.ignore_patterns("__pycache__"))
    with warm_place(tmp_path) as place:
        env = warm_env(tmp_path, place, fake_llm)
        env["PYTHONPATH"] = os.pathsep.join((str(place.hook), str(install)))
        warmed(place, workspace, env)
        (old,) = place.sockets()
        code, _out, err, pid = run_loom(["--version"], workspace, env)
        assert code == 0 and not place.imported_main(pid), err
        with open(install / "loom_cli" / "version.py", "a") as version:
            version.write("# edited\n")
        code, out, err, pid = run_loom(["--version"], workspace, env)
        assert (code, out) == (0, "loom 0.1.0\n"), err
        assert place.imported_main(pid), "the edited install ran in the old server"
        until(lambda: place.sockets() not in ([], [old]) and old not in place.sockets(),
              "the fresh server, and the old one gone")
        code, _out, err, pid = run_loom(["--version"], workspace, env)
        assert code == 0 and not place.imported_main(pid), err


def test_when_the_server_dies_the_client_says_so_and_the_child_ends(workspace: Path, tmp_path: Path,
                                                                    fake_llm: FakeLLMServer) -> None:
    from tests.doubles.warm import _lock_holders

    with warm_place(tmp_path) as place:
        env = warm_env(tmp_path, place, fake_llm)
        warmed(place, workspace, env)
        reply, gate = Reply.text("never sent").held()
        fake_llm.enqueue(reply)
        process = start_loom(["run", "wait for me"], workspace, env)
        assert fake_llm.wait_for_requests(1, timeout=120)
        (child,) = _children_of_servers(place.folder)
        (server,) = {pid for lock in place.folder.glob("*.lock") for pid in _lock_holders(lock)}
        os.kill(server, signal.SIGKILL)
        _out, err = process.communicate(timeout=60)
        assert process.returncode == 1
        assert "loom: the warm server went away" in err.decode()
        # The model's answer is still held: the child ends because its server did.
        until(lambda: not Path(f"/proc/{child}").exists() or _is_zombie(child), "the child to end", timeout=60)
        gate.set()


def test_the_prompt_on_standard_input_reaches_the_child(workspace: Path, running: Running,
                                                         fake_llm: FakeLLMServer) -> None:
    fake_llm.reset()
    fake_llm.enqueue(Reply.text("read it"))
    done = subprocess.run([str(LOOM_SCRIPT), "run", "-"], cwd=workspace, env=running.env, input=b"the piped task\n",
                          capture_output=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, b"read it\n"), done.stderr
    (request,) = fake_llm.requests
    assert "the piped task" in json.dumps(request.body)

