"""A project's hook runs in the sandbox, which hides Loom's folders (every session lies
there): it reads this session's transcript through a copy in the sandbox's temp folder,
gone when the hook ends, and still cannot read the session files themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_engine.events import AgentEvent, HookRan
from loom_engine.hooks.config import HookCommand, HookSet
from loom_engine.hooks.engine import HookEngine, HookSession
from loom_engine.sandbox import SandboxConfig
from loom_engine.sandbox.status import Backend
from loom_engine.workspace import Workspace
from tests.doubles.sandbox import BACKENDS, real_sandbox

READER = ('path=$(jq -r .transcript_path); tail -1 "$path" | jq -r .message.content > out/last.txt; '
          'echo "$path" > out/path.txt; cat {hidden} > out/hidden.txt 2>&1; true')


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_project_hook_reads_a_copy_of_the_transcript_not_the_session_folder(
        lab: tuple[Path, Path], backend: Backend) -> None:
    root, outside = lab
    sessions = outside / "data" / "sessions"
    (sessions / "claude-code").mkdir(parents=True)
    transcript = sessions / "claude-code" / "s1.jsonl"
    transcript.write_text('{"type":"user","message":{"role":"user","content":"the prompt"}}\n')
    (sessions / "other.jsonl").write_text("another session's secrets\n")
    sandbox = real_sandbox(Workspace.at(root), backend, SandboxConfig(deny_read=(outside / "data",)))
    (root / "out").mkdir()
    hook = HookCommand("Stop", "", READER.format(hidden=sessions / "other.jsonl"), source=".claude/settings.json",
                       in_project=True)
    engine = HookEngine(HookSet((hook,)), root, lambda: HookSession("s1", str(transcript)), sandbox=sandbox)
    events: list[AgentEvent] = []
    await engine.fire("Stop", {}, emit=events.append, stamp=dict)
    [ran] = [e for e in events if isinstance(e, HookRan)]
    assert ran.outcome == "ok", ran
    assert (root / "out" / "last.txt").read_text() == "the prompt\n"
    assert "another session's secrets" not in (root / "out" / "hidden.txt").read_text()
    seen = (root / "out" / "path.txt").read_text().strip()
    assert seen != str(transcript) and Path(seen).name.startswith("loom-transcript-")
    assert list(sandbox.temp_dir.glob("loom-transcript-*")) == []  # removed when the hook ended
    sandbox.close()
