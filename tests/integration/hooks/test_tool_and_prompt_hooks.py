"""PostToolUse, UserPromptSubmit and Stop hooks, and hooks inside sub-agents: each
checked by what reached the model."""

from __future__ import annotations

import json
from pathlib import Path

from loom_engine.events import Finished, Notice
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.integration.hooks.helpers import (
    agent,
    collect,
    hook_runs,
    hooks,
    on,
    result_text,
    script,
    tool_results,
    user_texts,
)

# A formatter hook as people write it for Claude Code: re-format the file just edited.
FORMATTER = r'''#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
path = data["tool_input"].get("file_path", "")
if path.endswith(".py"):
    with open(path) as f:
        lines = [line.rstrip().replace("\t", "    ") for line in f.read().splitlines()]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
'''


async def test_a_formatter_rewrites_the_edited_file_and_the_next_read_sees_it(workspace: Path,
                                                                              fake_llm: FakeLLMServer) -> None:
    formatter = script(workspace, "format.py", FORMATTER)
    fake_llm.enqueue(Reply.tool("write_file", {"path": "src/util.py", "content": "def one():\n\treturn 1   \n"}),
                     Reply.tool("read_file", {"path": "src/util.py"}), Reply.text("done"))
    loom = agent(workspace, fake_llm, hooks(on("PostToolUse", str(formatter), "Write|Edit|MultiEdit")))
    events = await collect(loom, "add a helper")
    assert (workspace / "src" / "util.py").read_text() == "def one():\n    return 1\n"
    read = result_text(tool_results(fake_llm.requests[2])[0])
    assert "2\t    return 1" in read and "\t\treturn" not in read  # read_file's own tab follows the number
    assert [(r.event, r.outcome) for r in hook_runs(events)] == [("PostToolUse", "ok")]


async def test_post_tool_use_feedback_reaches_the_model(workspace: Path, fake_llm: FakeLLMServer) -> None:
    lint = script(workspace, "lint.sh", r'''#!/usr/bin/env bash
cat > /dev/null
echo "lint: line 1: missing docstring" >&2
exit 2
''')
    fake_llm.enqueue(Reply.tool("write_file", {"path": "a.py", "content": "x = 1\n"}), Reply.text("ok"))
    await collect(agent(workspace, fake_llm, hooks(on("PostToolUse", str(lint), "Write"))), "go")
    text = result_text(tool_results(fake_llm.requests[1])[0])
    assert "[PostToolUse hook: lint: line 1: missing docstring]" in text
    assert (workspace / "a.py").exists()  # PostToolUse cannot undo the call


async def test_a_failed_call_runs_post_tool_use_failure(workspace: Path, fake_llm: FakeLLMServer) -> None:
    log = workspace / "failures.log"
    hook = f"python3 -c 'import json,sys; d=json.load(sys.stdin); open(\"{log}\",\"a\").write(d[\"error\"][:40])'"
    fake_llm.enqueue(Reply.tool("bash", {"command": "exit 7"}), Reply.text("ok"))
    events = await collect(agent(workspace, fake_llm, hooks(on("PostToolUseFailure", hook, "Bash"))), "go")
    assert log.read_text()
    assert [r.event for r in hook_runs(events)] == ["PostToolUseFailure"]


async def test_user_prompt_submit_plain_stdout_is_context(workspace: Path, fake_llm: FakeLLMServer) -> None:
    hook = script(workspace, "context.sh", r'''#!/usr/bin/env bash
read -r input
echo "Sprint goal: ship the login page"
''')
    fake_llm.enqueue(Reply.text("noted"))
    await collect(agent(workspace, fake_llm, hooks(on("UserPromptSubmit", str(hook)))), "what next?")
    texts = user_texts(fake_llm.requests[0])
    assert texts[0] == "what next?"
    assert any("Sprint goal: ship the login page" in t for t in texts[1:])


async def test_user_prompt_submit_json_additional_context(workspace: Path, fake_llm: FakeLLMServer) -> None:
    hook = script(workspace, "context.py", r'''#!/usr/bin/env python3
import json, sys
prompt = json.load(sys.stdin)["prompt"]
print(json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                         "additionalContext": f"The prompt had {len(prompt.split())} words."}}))
''')
    fake_llm.enqueue(Reply.text("noted"))
    await collect(agent(workspace, fake_llm, hooks(on("UserPromptSubmit", str(hook)))), "fix the bug")
    assert any("The prompt had 3 words." in t for t in user_texts(fake_llm.requests[0]))


async def test_a_blocked_prompt_is_not_sent_and_not_kept(workspace: Path, fake_llm: FakeLLMServer) -> None:
    hook = script(workspace, "secrets.py", r'''#!/usr/bin/env python3
import json, sys
if "password" in json.load(sys.stdin)["prompt"]:
    print("prompts must not contain passwords", file=sys.stderr)
    sys.exit(2)
''')
    fake_llm.enqueue(Reply.text("answer to the second prompt"))
    loom = agent(workspace, fake_llm, hooks(on("UserPromptSubmit", str(hook))))
    events = await collect(loom, "my password is hunter2")
    assert fake_llm.requests == [] and loom.messages == ()
    [ran] = hook_runs(events)
    assert ran.outcome == "blocked" and ran.message == "prompts must not contain passwords"
    assert isinstance(events[-1], Finished)
    assert any(isinstance(e, Notice) and "not sent" in e.message for e in events)
    await collect(loom, "hello")
    assert "hunter2" not in json.dumps(fake_llm.requests[0].body)


STOP_ONCE = r'''#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
with open("stop.log", "a") as log:
    log.write(f"{data['hook_event_name']} active={data['stop_hook_active']}\n")
if not data["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": "Run the tests before you stop."}))
'''


async def test_a_stop_hook_makes_the_agent_continue_once(workspace: Path, fake_llm: FakeLLMServer) -> None:
    hook = script(workspace, "stop.py", STOP_ONCE)
    fake_llm.enqueue(Reply.text("done"), Reply.text("tests pass; done"))
    events = await collect(agent(workspace, fake_llm, hooks(on("Stop", str(hook)))), "fix it")
    assert len(fake_llm.requests) == 2
    assert "Run the tests before you stop." in user_texts(fake_llm.requests[1])[-1]
    assert isinstance(events[-1], Finished) and events[-1].result == "tests pass; done"
    assert (workspace / "stop.log").read_text() == "Stop active=False\nStop active=True\n"


async def test_a_stop_hook_cannot_keep_the_agent_going_forever(workspace: Path, fake_llm: FakeLLMServer) -> None:
    always = "cat >/dev/null; echo 'not yet' >&2; exit 2"
    fake_llm.enqueue(*[Reply.text(f"done {n}") for n in range(9)])
    events = await collect(agent(workspace, fake_llm, hooks(on("Stop", always))), "go")
    assert len(fake_llm.requests) == 9
    assert isinstance(events[-1], Finished) and events[-1].result == "done 8"
    assert any(isinstance(e, Notice) and "8 times in a row" in e.message for e in events)


SPY = r'''#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
with open("payloads.jsonl", "a") as log:
    log.write(json.dumps(data) + "\n")
if data["tool_name"] == "Read" and data["tool_input"]["file_path"].endswith("README.md"):
    print("README.md is off limits to sub-agents", file=sys.stderr)
    sys.exit(2)
'''


async def test_hooks_fire_for_a_sub_agents_tool_calls(workspace: Path, fake_llm: FakeLLMServer) -> None:
    spy = script(workspace, "spy.py", SPY)
    table = {**on("PreToolUse", str(spy), "Read"), **on("SubagentStop", "cat >/dev/null")}
    fake_llm.enqueue(Reply.tool("task", {"description": "read docs", "prompt": "What does README.md say?"}),
                     Reply.tool("read_file", {"path": "README.md"}), Reply.text("I could not read it"),
                     Reply.text("the sub-agent could not read it"))
    events = await collect(agent(workspace, fake_llm, hooks(table)), "summarise the readme")
    child_result = result_text(tool_results(fake_llm.requests[2])[0])
    assert "README.md is off limits to sub-agents" in child_result
    [payload] = [json.loads(line) for line in (workspace / "payloads.jsonl").read_text().splitlines()]
    assert payload["agent_type"] == "general-purpose" and payload["agent_id"].startswith("agent_")
    assert payload["loom_tool_name"] == "read_file" and payload["loom_tool_input"] == {"path": "README.md"}
    assert payload["tool_input"]["file_path"] == str(workspace / "README.md")
    runs = hook_runs(events)
    assert [(r.event, r.outcome, r.depth) for r in runs] == [("PreToolUse", "blocked", 1), ("SubagentStop", "ok", 1)]
    assert isinstance(events[-1], Finished)


async def test_what_a_hook_prints_reaches_the_model_with_secrets_redacted(workspace: Path,
                                                                          fake_llm: FakeLLMServer) -> None:
    """A hook that prints its environment (a key in it) adds context the model reads:
    the key must not leave in the request, as it would not from a tool's output."""
    key = "sk-ant-api03-" + "Q" * 40
    hook = script(workspace, "leak.sh", f'''#!/usr/bin/env bash
read -r input
echo "ANTHROPIC_API_KEY={key}"
echo "key is in stderr too: {key}" >&2
exit 2
''')
    fake_llm.enqueue(Reply.tool("bash", {"command": "echo hi"}), Reply.text("done"))
    hook_set = hooks({**on("UserPromptSubmit", str(hook.with_name("context.sh"))), **on("PreToolUse", str(hook))})
    script(workspace, "context.sh", f'''#!/usr/bin/env bash
read -r input
echo "ANTHROPIC_API_KEY={key}"
''')
    await collect(agent(workspace, fake_llm, hook_set), "go")
    sent = json.dumps([r.body for r in fake_llm.requests])
    assert key not in sent
    assert "ANTHROPIC_API_KEY=[REDACTED" in sent  # the context still arrived, the key cut out
    assert "key is in stderr too: [REDACTED" in sent  # and the block's reason
