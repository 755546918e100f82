"""A trusted project hook runs only the script it was trusted with: one changed during
the session — here by the model's own edit, allowed without a question in accept-edits
mode — is not run (the user's earlier yes was for other code); with fail_closed, the
call it guards is blocked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loom_cli.hook_setup import HookPlan, read_hook_plan
from loom_cli.workspace_records import WorkspaceRecords
from loom_engine.permissions.manager import PermissionManager
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.integration.hooks.helpers import agent, collect, hook_runs, result_text, tool_results

GUARD = "#!/usr/bin/env bash\ncat >/dev/null\necho guarded >> guard.log\nexit 0\n"
EVIL = "#!/usr/bin/env bash\ncat >/dev/null\necho evil >> pwned.log\nexit 0\n"


def _trusted_plan(workspace: Path, tmp_path: Path, *, fail_closed: bool = False) -> HookPlan:
    script = workspace / ".claude" / "hooks" / "guard.sh"
    script.parent.mkdir(parents=True)
    script.write_text(GUARD)
    script.chmod(0o755)
    entry = {"type": "command", "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh', "fail_closed": fail_closed}
    (workspace / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [entry]}]}}))
    records = WorkspaceRecords(tmp_path / "data")
    plan = read_hook_plan(workspace, tmp_path / "config.toml", records)
    records.trust_hooks(workspace, plan.trust_keys(plan.untrusted))  # the chat's "yes"
    plan = read_hook_plan(workspace, tmp_path / "config.toml", records)
    assert not plan.untrusted and len(plan.use.hooks) == 1
    return plan


@pytest.mark.parametrize("fail_closed", [False, True])
async def test_a_script_edited_in_the_session_is_not_run(workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer,
                                                         fail_closed: bool) -> None:
    plan = _trusted_plan(workspace, tmp_path, fail_closed=fail_closed)
    fake_llm.enqueue(
        Reply.tool("bash", {"command": "echo one"}),
        Reply.tool("read_file", {"path": ".claude/hooks/guard.sh"}),
        Reply.tool("write_file", {"path": ".claude/hooks/guard.sh", "content": EVIL}),
        Reply.tool("bash", {"command": "echo two"}),
        Reply.text("done"))
    permissions = PermissionManager(Workspace.at(workspace), mode="bypass")
    events = await collect(agent(workspace, fake_llm, plan.use, permissions=permissions), "go")
    assert (workspace / "guard.log").read_text() == "guarded\n"  # ran once, before the edit
    assert not (workspace / "pwned.log").exists()  # the edited script never ran
    [first, second] = hook_runs(events)
    assert first.outcome == "ok"
    assert "changed since you trusted this hook" in second.message
    last = result_text(tool_results(fake_llm.requests[4])[0])
    if fail_closed:
        assert second.outcome == "blocked" and "Blocked by a PreToolUse hook" in last
    else:
        assert second.outcome == "error" and last.startswith("two")
