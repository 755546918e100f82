"""Hooks as scripts written for Claude Code expect them: UserPromptSubmit for the user's
prompts only, a formatter run by PostToolUse that the next edit does not trip over, and
a ``transcript_path`` in Claude Code's format."""

from __future__ import annotations

from pathlib import Path

from loom_engine.events import Finished, HookRan
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.integration.hooks.helpers import agent, collect, hooks, on, result_text, script, tool_results

GUARD = r'''#!/usr/bin/env python3
import json, sys
prompt = json.load(sys.stdin)["prompt"]
with open("prompts.log", "a") as log:
    log.write(prompt + "\n")
if "README" in prompt:
    print("no README work today", file=sys.stderr)
    sys.exit(2)
'''


async def test_user_prompt_submit_fires_for_the_users_prompt_not_a_sub_agents_task(
        workspace: Path, fake_llm: FakeLLMServer) -> None:
    """A blocking UserPromptSubmit hook guards what the user types; the task the model
    gives a sub-agent is not a user prompt, so the hook neither sees nor stops it."""
    guard = script(workspace, "guard.py", GUARD)
    fake_llm.enqueue(Reply.tool("task", {"description": "read docs", "prompt": "What does README.md say?"}),
                     Reply.text("It says hello."), Reply.text("The readme says hello."))
    events = await collect(agent(workspace, fake_llm, hooks(on("UserPromptSubmit", str(guard)))), "summarise the docs")
    assert (workspace / "prompts.log").read_text() == "summarise the docs\n"
    assert len(fake_llm.requests) == 3  # the sub-agent's request was sent
    assert result_text(tool_results(fake_llm.requests[2])[0]).startswith("It says hello.")
    assert [(e.event, e.outcome) for e in events if isinstance(e, HookRan)] == [("UserPromptSubmit", "ok")]
    assert isinstance(events[-1], Finished) and events[-1].result == "The readme says hello."


FORMATTER = r'''#!/usr/bin/env python3
import json, re, sys
path = json.load(sys.stdin)["tool_input"]["file_path"]
with open(path) as file:
    text = file.read()
with open(path, "w") as file:
    file.write(re.sub(r" *= *", " = ", text))
'''


async def test_the_next_edit_goes_against_what_a_formatter_hook_made_of_the_file(
        workspace: Path, fake_llm: FakeLLMServer) -> None:
    """edit -> a PostToolUse formatter rewrites the file -> the model reads the file as
    it now is, and its next edit, made against that text, is applied (not refused as
    "changed on disk")."""
    (workspace / "app.py").write_text("x = 1\n")
    formatter = script(workspace, "fmt.py", FORMATTER)
    fake_llm.enqueue(Reply.tool("read_file", {"path": "app.py"}),
                     Reply.tool("edit_file", {"path": "app.py", "old_string": "x = 1", "new_string": "x=1\ny=2"}),
                     Reply.tool("edit_file", {"path": "app.py", "old_string": "y = 2", "new_string": "y = 3"}),
                     Reply.text("done"))
    events = await collect(agent(workspace, fake_llm, hooks(on("PostToolUse", str(formatter), "Edit|Write"))),
                           "set y")
    [formatted] = tool_results(fake_llm.requests[2])
    told = result_text(formatted)
    assert "A PostToolUse hook changed app.py after this call wrote it" in told
    assert "     1\tx = 1\n     2\ty = 2\n]" in told
    [second] = tool_results(fake_llm.requests[3])
    assert not second.get("is_error"), result_text(second)
    assert (workspace / "app.py").read_text() == "x = 1\ny = 3\n"
    assert isinstance(events[-1], Finished) and events[-1].result == "done"
