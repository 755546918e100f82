"""The engine asks for snapshots before each prompt, after each bash call, each file
edit and each sub-agent (whose own calls count too), and when a run ends."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.parts import AgentParts
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.snapshots.checkpoints import Checkpointer
from loom_engine.snapshots.restore import restore_points
from loom_engine.workspace import Workspace


class Recorder:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def before_prompt(self, session_id: str | None, prompt_id: str, text: str) -> None:
        self.calls.append(f"prompt:{text}")

    async def before_tool(self, tool_name: str, tool_input: object) -> None:
        self.calls.append(f"before:{tool_name}")

    async def after_tool(self, tool_name: str, tool_input: object) -> None:
        self.calls.append(f"tool:{tool_name}")

    async def after_run(self) -> None:
        self.calls.append("run_end")


def _agent(tmp_path: Path, script: list[dict], checkpoints: object) -> Agent:
    return Agent(AgentConfig(model="scripted", interactive=False),
                 AgentParts(provider=ScriptedProvider(script), tools=default_tools(),
                            workspace=Workspace.at(tmp_path), checkpoints=checkpoints))  # type: ignore[arg-type]


async def test_snapshots_are_asked_for_around_the_work(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("hello\n")
    recorder = Recorder()
    agent = _agent(tmp_path, [
        {"tool_calls": [{"name": "read_file", "input": {"path": "notes.md"}}]},
        {"tool_calls": [{"name": "bash", "input": {"command": "echo hi > out.txt"}}]},
        {"tool_calls": [{"name": "task", "input": {"description": "edit", "prompt": "write a file",
                                                   "tools": ["write_file", "bash"]}}]},
        {"tool_calls": [{"name": "bash", "input": {"command": "true"}}]},  # the sub-agent
        {"text": "child done"},
        {"tool_calls": [{"name": "write_file", "input": {"path": "new.md", "content": "x\n"}}]},
        {"text": "done"},
    ], recorder)
    agent.parts = replace(agent.parts, permissions=None)
    events = [e async for e in agent.run("do it")]
    assert events[-1].type == "finished"
    # read_file is read-only: no snapshot after it; the sub-agent's prompt is not a prompt.
    assert recorder.calls == ["prompt:do it", "before:bash", "tool:bash", "before:task", "before:bash", "tool:bash",
                              "tool:task", "before:write_file", "tool:write_file", "run_end"]


async def test_a_real_checkpointer_records_each_prompt(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    checkpointer = Checkpointer(workspace, tmp_path / "snapshots")
    agent = _agent(workspace, [
        {"tool_calls": [{"name": "bash", "input": {"command": "echo one > one.txt"}}]},
        {"text": "first"},
        {"text": "second"},
    ], checkpointer)
    [e async for e in agent.run("make one")]
    [e async for e in agent.run("just talk")]
    points = restore_points(checkpointer, agent.messages)
    assert [(p.text, p.files_changed) for p in points] == [("make one", ("one.txt",)), ("just talk", ())]
    assert checkpointer.last_failure is None
    # No run_end snapshot: the last call was followed by one, and the second run only talked.
    assert [s.kind for s in checkpointer.snapshots()] == ["prompt", "tool", "prompt"]


async def test_a_slow_prompt_snapshot_overlaps_the_request_and_tools_wait_for_it(tmp_path: Path) -> None:
    import threading

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("before\n")
    log: list[str] = []
    requested = threading.Event()

    class Slow(Checkpointer):
        def snapshot(self, kind, **fields):  # type: ignore[no-untyped-def,override]
            if kind == "prompt":
                log.append("snapshot starts")
                # A first snapshot of a big workspace: it lasts until the request has gone
                # out (a bound on a hang, should the request wait for it instead).
                requested.wait(60)
            result = super().snapshot(kind, **fields)
            if kind == "prompt":
                log.append("snapshot done")
            return result

    class Logged(ScriptedProvider):
        async def stream(self, request):  # type: ignore[no-untyped-def,override]
            log.append("request")
            requested.set()
            async for event in super().stream(request):
                yield event

    checkpointer = Slow(workspace, tmp_path / "snapshots")
    agent = Agent(AgentConfig(model="scripted", interactive=False),
                  AgentParts(provider=Logged([
        {"tool_calls": [{"name": "bash", "input": {"command": "echo after > a.txt"}}]},
        {"text": "done"},
    ]), tools=default_tools(), workspace=Workspace.at(workspace), checkpoints=checkpointer))
    [e async for e in agent.run("change it")]
    assert log[:3] == ["snapshot starts", "request", "snapshot done"]
    point = restore_points(checkpointer, agent.messages)[0]
    assert point.files_changed == ("a.txt",)  # the snapshot was taken before bash ran


def test_a_snapshot_killed_mid_write_does_not_block_the_next(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    checkpointer = Checkpointer(workspace, tmp_path / "snapshots")
    checkpointer.snapshot("prompt", prompt_id="p1")
    (checkpointer.git_dir / "index.lock").write_text("")  # git was killed while writing the index
    (workspace / "x.txt").write_text("x\n")
    assert "x.txt" in checkpointer.repo.tree_entries(checkpointer.snapshot("tool").tree)


async def test_a_workspace_with_too_many_files_turns_snapshots_off(tmp_path: Path) -> None:
    from loom_engine.snapshots.model import SnapshotCaps

    workspace = tmp_path / "ws"
    workspace.mkdir()
    for number in range(30):
        (workspace / f"f{number}.txt").write_text("x")
    checkpointer = Checkpointer(workspace, tmp_path / "snapshots", caps=SnapshotCaps(max_files=20))
    await checkpointer.before_prompt(None, "p1", "hi")
    await checkpointer.after_run()
    assert checkpointer.too_many_files and checkpointer.snapshots() == ()
    assert checkpointer.last_failure is not None and "30 files to look at" in checkpointer.last_failure.message
    await checkpointer.after_tool("bash", {})  # not tried again
    assert checkpointer.snapshots() == ()


async def test_the_snapshot_log_never_holds_a_key_and_the_copies_are_private(tmp_path: Path) -> None:
    """The snapshot log names each prompt: a key pasted into one is redacted there as in
    the session file; and the shadow repository holds copies of the user's files, so only
    the user may read it."""
    import stat

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".env").write_text("TOKEN=abc\n")
    checkpointer = Checkpointer(workspace, tmp_path / "snapshots")
    key = "sk-ant-api03-" + "Z" * 40
    agent = _agent(workspace, [{"text": "ok"}], checkpointer)
    [e async for e in agent.run(f"use this key {key} for the test")]
    logs = list((tmp_path / "snapshots").rglob("*.jsonl"))
    assert logs and all(key not in log.read_text() for log in logs)
    assert "use this key [REDACTED" in "".join(log.read_text() for log in logs)
    assert stat.S_IMODE(checkpointer.repo.git_dir.stat().st_mode) == 0o700
