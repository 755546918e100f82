"""Hooks as scripts written for Claude Code expect them: UserPromptSubmit for the user's
prompts only, a formatter run by PostToolUse that the next edit does not trip over, and
a ``transcript_path`` in Claude Code's format."""

from __future__ import annotations

import json
import re
from pathlib import Path

from loom_engine.events import Finished, HookRan
from loom_engine.redact import Redactor
from loom_engine.sessions.store import SessionStore
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
        workspace: Path, fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    """A blocking UserPromptSubmit hook guards what the user types; the task the model
    gives a sub-agent is not a user prompt, so the hook neither sees nor stops it. The
    sub-agent's hooks name the user's session and its transcript, as in Claude Code."""
    guard = script(workspace, "guard.py", GUARD)
    writer = SessionStore(tmp_path / "sessions").create(workspace, provider="anthropic", model="claude-haiku-4-5")
    table = {**on("UserPromptSubmit", str(guard)), **on("SubagentStop", "cat > subagent-stop.json")}
    fake_llm.enqueue(Reply.tool("task", {"description": "read docs", "prompt": "What does README.md say?"}),
                     Reply.text("It says hello."), Reply.text("The readme says hello."))
    events = await collect(agent(workspace, fake_llm, hooks(table), session=writer), "summarise the docs")
    writer.close()
    assert (workspace / "prompts.log").read_text() == "summarise the docs\n"
    assert len(fake_llm.requests) == 3  # the sub-agent's request was sent
    assert result_text(tool_results(fake_llm.requests[2])[0]).startswith("It says hello.")
    assert [(e.event, e.outcome) for e in events if isinstance(e, HookRan)] == [
        ("UserPromptSubmit", "ok"), ("SubagentStop", "ok")]
    assert isinstance(events[-1], Finished) and events[-1].result == "The readme says hello."
    payload = json.loads((workspace / "subagent-stop.json").read_text())
    assert payload["session_id"] == writer.id and payload["agent_type"] == "general-purpose"
    [prompt, call] = [json.loads(line) for line in Path(payload["transcript_path"]).read_text().splitlines()]
    assert prompt["message"]["content"] == "summarise the docs"
    assert call["message"]["content"][0]["name"] == "Task"  # the user's conversation, in the call


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


# A Stop hook as Claude Code users write it: the last line of the transcript is the
# assistant's answer.
LAST_ANSWER = r"""#!/usr/bin/env bash
transcript=$(jq -r .transcript_path)
tail -1 "$transcript" | jq -r '.message.content[] | select(.type == "text") | .text' > last-answer.txt
cp "$transcript" transcript-at-stop.jsonl
"""


async def test_transcript_path_is_a_claude_code_transcript_a_stop_hook_can_read(
        workspace: Path, fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "K" * 40
    (workspace / "hello.py").write_text(f"print('hello')  # {key}\n")
    writer = SessionStore(tmp_path / "sessions").create(workspace, provider="anthropic", model="claude-haiku-4-5",
                                                        redactor=Redactor())
    stop = script(workspace, "last.sh", LAST_ANSWER)
    fake_llm.enqueue(Reply.tool("read_file", {"path": "hello.py"}), Reply.text("It prints hello."))
    loom = agent(workspace, fake_llm, hooks(on("Stop", str(stop))), session=writer)
    await collect(loom, "what does hello.py do?")
    writer.close()
    assert (workspace / "last-answer.txt").read_text() == "It prints hello.\n"
    lines = [json.loads(line) for line in (workspace / "transcript-at-stop.jsonl").read_text().splitlines()]
    assert [(line["type"], line["message"]["role"]) for line in lines] == [
        ("user", "user"), ("assistant", "assistant"), ("user", "user"), ("assistant", "assistant")]
    prompt, call, result, answer = lines
    assert prompt["message"]["content"] == "what does hello.py do?" and prompt["parentUuid"] is None
    assert [line["parentUuid"] for line in lines[1:]] == [line["uuid"] for line in lines[:-1]]
    assert {line["sessionId"] for line in lines} == {writer.id}
    assert {line["cwd"] for line in lines} == {str(workspace)}
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", line["timestamp"]) for line in lines)
    [use] = call["message"]["content"]
    assert use["type"] == "tool_use" and use["name"] == "Read"
    assert use["input"] == {"file_path": str(workspace / "hello.py")}
    [block] = result["message"]["content"]
    assert block["type"] == "tool_result" and block["tool_use_id"] == use["id"] and "print('hello')" in block["content"]
    assert answer["message"]["model"] == "claude-haiku-4-5"
    transcript = (tmp_path / "sessions" / "claude-code" / f"{writer.id}.jsonl").read_text()
    assert key not in transcript and "[REDACTED" in transcript  # the file was read with a key in it
    assert (tmp_path / "sessions" / "claude-code" / f"{writer.id}.jsonl").stat().st_mode & 0o777 == 0o600
