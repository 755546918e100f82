"""Custom slash commands and skills run as /name, against the fake LLM server: what
reached the model, and what the conversation keeps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.commands.catalog import CommandCatalog
from loom_engine.commands.invoke import Invocation, resolve, run_invocation
from loom_engine.config import AgentConfig
from loom_engine.context.assembler import ContextAssembler
from loom_engine.events import AgentEvent, Finished, PermissionRequested
from loom_engine.parts import AgentParts
from loom_engine.paths import builtin_skills_dir
from loom_engine.permissions.answer import PermissionAnswer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.providers.factory import create_provider
from loom_engine.skills.catalog import SkillCatalog
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply

BUILTINS = ("help", "clear", "model")


def _command(root: Path, relative: str, text: str, *, user: bool = False) -> None:
    """A project command, or with ``user`` one in the user's own commands folder (the
    config dir the catalogs below are given)."""
    path = (root / "no-config" / "commands" if user else root / ".loom" / "commands") / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _agent(root: Path, server: FakeLLMServer, *, interactive: bool = False) -> Agent:
    workspace = Workspace.at(root)
    skills = SkillCatalog.discover(root, user_config_dir=root / "no-config", builtin_dir=builtin_skills_dir())
    provider = create_provider("anthropic", api_key="test", base_url=server.anthropic_base_url)
    return Agent(AgentConfig(model="claude-sonnet-4-6", interactive=interactive),
                 AgentParts(provider=provider, tools=default_tools(), workspace=workspace,
                            permissions=PermissionManager(workspace), skills=skills),
                 context=ContextAssembler(workspace, skills=skills))


def _invocation(agent: Agent, text: str) -> Invocation:
    commands = CommandCatalog.discover(agent.workspace.root, user_config_dir=agent.workspace.root / "no-config",
                                       reserved=BUILTINS)
    invocation = resolve(text, commands, agent.skills, BUILTINS)
    assert invocation is not None, text
    return invocation


async def _run(agent: Agent, text: str) -> list[AgentEvent]:
    return [event async for event in run_invocation(agent, _invocation(agent, text))]


def _user_texts(message: dict) -> list[str]:
    content = message["content"]
    return [content] if isinstance(content, str) else [b["text"] for b in content if b.get("type") == "text"]


async def test_fix_123_arguments_shell_output_and_file_reach_the_model(workspace: Path,
                                                                       fake_llm: FakeLLMServer) -> None:
    (workspace / "notes.txt").write_text("untracked notes\n")
    _command(workspace, "fix.md",
             "---\ndescription: Fix an issue\nargument-hint: [issue]\nallowed-tools: Bash(git status:*)\n---\n"
             "Fix issue #$ARGUMENTS (number $0).\nStatus:\n!`git status --short`\nThe code: @src/app.py\n")
    fake_llm.enqueue(Reply.text("Fixed."))
    agent = _agent(workspace, fake_llm)
    events = await _run(agent, "/fix 123")
    assert isinstance(events[-1], Finished)
    [user] = fake_llm.last_request.messages
    texts = _user_texts(user)
    assert texts[0].startswith("Fix issue #123 (number 123).\nStatus:\n")
    assert "?? notes.txt" in texts[0] and "Exit code" not in texts[0]  # git status's own output
    assert texts[1].startswith('<attached path="src/app.py"') and "def greet(name):" in texts[1]
    # The conversation keeps what was typed: shown on resume, given back if the request fails.
    assert agent.messages[0].meta["prompt"] == "/fix 123"
    # The grant was for that turn only.
    assert not [r for r in agent.permissions.effective_rules() if "/fix" in r[2]]


async def test_a_namespaced_command(workspace: Path, fake_llm: FakeLLMServer) -> None:
    _command(workspace, "git/commit.md", "---\ndescription: Commit staged work\n---\nWrite a commit message: $0\n")
    fake_llm.enqueue(Reply.text("ok"))
    agent = _agent(workspace, fake_llm)
    await _run(agent, '/git:commit "tidy the parser"')
    [user] = fake_llm.last_request.messages
    assert _user_texts(user) == ["Write a commit message: tidy the parser"]


async def test_the_shipped_commit_skill_runs_as_slash_commit(workspace: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("Committed."))
    agent = _agent(workspace, fake_llm)
    events = await _run(agent, "/commit only the parser change")
    assert isinstance(events[-1], Finished)
    [text] = _user_texts(fake_llm.last_request.messages[0])
    assert text.startswith(f"Base directory for this skill: {builtin_skills_dir() / 'commit'}\n\n")
    assert "# Commit the current changes" in text  # the skill's instructions
    assert text.endswith("\n\nARGUMENTS: only the parser change")
    assert agent.messages[0].meta["prompt"] == "/commit only the parser change"


async def test_a_denied_shell_command_says_so_in_the_expansion(workspace: Path, fake_llm: FakeLLMServer) -> None:
    _command(workspace, "mk.md", "Made: !`touch made.txt`\n")
    fake_llm.enqueue(Reply.text("ok"))
    agent = _agent(workspace, fake_llm)  # headless: a question is a denial
    await _run(agent, "/mk")
    [text] = _user_texts(fake_llm.last_request.messages[0])
    assert text.startswith("Made: [`touch made.txt` was not run: Refused: this is a non-interactive run")
    assert not (workspace / "made.txt").exists()


async def test_allowed_tools_hold_for_the_commands_turn_only(workspace: Path, fake_llm: FakeLLMServer) -> None:
    _command(workspace, "mk.md", "---\nallowed-tools: Bash(touch made.txt)\n---\nMake the file.\n", user=True)
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch made.txt"}), Reply.text("made"),
                     Reply.tool("bash", {"command": "touch made.txt"}), Reply.text("could not"))
    agent = _agent(workspace, fake_llm)
    await _run(agent, "/mk")
    assert (workspace / "made.txt").exists()
    (workspace / "made.txt").unlink()
    events = [e async for e in agent.run("make it again")]
    assert isinstance(events[-1], Finished)
    assert not (workspace / "made.txt").exists()
    results = json.dumps(fake_llm.requests[3].body["messages"][-1])
    assert "Refused: this is a non-interactive run" in results


async def test_in_the_chat_a_second_prompt_asks_again(workspace: Path, fake_llm: FakeLLMServer) -> None:
    _command(workspace, "mk.md", "---\nallowed-tools: Bash(touch made.txt)\n---\nMake the file.\n", user=True)
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch made.txt"}), Reply.text("made"),
                     Reply.tool("bash", {"command": "touch made.txt"}), Reply.text("done again"))
    agent = _agent(workspace, fake_llm, interactive=True)
    asked = [e for e in await _run(agent, "/mk") if isinstance(e, PermissionRequested)]
    assert asked == []  # granted by the command
    questions = []
    async for event in agent.run("make it again"):
        if isinstance(event, PermissionRequested):
            questions.append(event)
            agent.answer_permission(event.request_id, PermissionAnswer("allow_once"))
    assert [q.input["command"] for q in questions] == ["touch made.txt"]


async def test_the_grant_is_removed_when_the_turn_fails(workspace: Path, fake_llm: FakeLLMServer) -> None:
    _command(workspace, "mk.md", "---\nallowed-tools: Bash(touch made.txt)\n---\nMake the file.\n", user=True)
    fake_llm.enqueue(Reply.error(400, "bad request"))
    agent = _agent(workspace, fake_llm)
    rules = agent.permissions.effective_rules()
    await _run(agent, "/mk")
    assert agent.permissions.effective_rules() == rules


async def test_the_grant_is_removed_when_the_consumer_stops(workspace: Path, fake_llm: FakeLLMServer) -> None:
    _command(workspace, "mk.md", "---\nallowed-tools: Bash(touch made.txt)\n---\nMake the file.\n", user=True)
    fake_llm.enqueue(Reply.text("a long answer " * 50))
    agent = _agent(workspace, fake_llm)
    rules = agent.permissions.effective_rules()
    stream = run_invocation(agent, _invocation(agent, "/mk"))
    async for _event in stream:
        assert len(agent.permissions.effective_rules()) == len(rules) + 1
        break
    await stream.aclose()
    assert agent.permissions.effective_rules() == rules and not agent.is_running


async def test_the_model_field_holds_for_that_turn(workspace: Path, fake_llm: FakeLLMServer) -> None:
    _command(workspace, "quick.md", "---\nmodel: claude-haiku-4-5\n---\nAnswer quickly.\n")
    fake_llm.enqueue(Reply.text("quick"), Reply.text("normal"))
    agent = _agent(workspace, fake_llm)
    await _run(agent, "/quick")
    _ = [e async for e in agent.run("and now?")]
    assert [r.body["model"] for r in fake_llm.requests] == ["claude-haiku-4-5", "claude-sonnet-4-6"]


@pytest.mark.parametrize("name", ["help", "clear"])
def test_a_built_in_name_is_never_a_custom_command(workspace: Path, name: str) -> None:
    _command(workspace, f"{name}.md", "Something else.\n")
    commands = CommandCatalog.discover(workspace, user_config_dir=workspace / "none", reserved=BUILTINS)
    assert resolve(f"/{name}", commands, None, BUILTINS) is None


async def test_the_user_is_told_what_the_command_allows_and_of_an_unknown_model(workspace: Path,
                                                                                 fake_llm: FakeLLMServer) -> None:
    from loom_engine.events import Notice

    _command(workspace, "mk.md", "---\nallowed-tools: Bash(touch made.txt), Read\nmodel: llama-7b\n---\nMake it.\n",
             user=True)
    fake_llm.enqueue(Reply.text("ok"))
    agent = _agent(workspace, fake_llm)
    notices = [(e.level, e.message) for e in await _run(agent, "/mk") if isinstance(e, Notice)]
    assert ("info", "/mk allows for this turn: bash(touch made.txt), read_file") in notices
    assert ("warning", "/mk uses llama-7b for this turn (a model Loom does not know: the request may fail)") in notices
    assert agent.config.model == "claude-sonnet-4-6"


async def test_a_project_commands_allowed_tools_are_not_granted(workspace: Path, fake_llm: FakeLLMServer) -> None:
    """A repository's command file may not widen permissions: its allowed-tools are
    named to the user and not granted, and the call is denied headless as usual."""
    from loom_engine.events import Notice

    _command(workspace, "mk.md", "---\nallowed-tools: Bash(touch made.txt)\n---\nMake the file.\n")
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch made.txt"}), Reply.text("could not"))
    agent = _agent(workspace, fake_llm)
    rules = agent.permissions.effective_rules()
    events = await _run(agent, "/mk")
    assert not (workspace / "made.txt").exists()
    assert "Refused: this is a non-interactive run" in json.dumps(fake_llm.requests[1].body["messages"][-1])
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert any("bash(touch made.txt)) are not granted: the command comes from the project" in n for n in notices)
    assert agent.permissions.effective_rules() == rules
    # Said once a conversation, not on every use.
    fake_llm.enqueue(Reply.text("again"))
    again = [e.message for e in await _run(agent, "/mk") if isinstance(e, Notice)]
    assert not any("are not granted" in n for n in again)


async def test_withheld_allowed_tools_that_never_ask_are_not_mentioned(workspace: Path,
                                                                       fake_llm: FakeLLMServer) -> None:
    from loom_engine.events import Notice

    _command(workspace, "look.md", "---\nallowed-tools: Bash(git status:*), Read, Grep(src/**)\n---\nLook.\n")
    _command(workspace, "mixed.md", "---\nallowed-tools: Bash(git status:*), Edit(src/**)\n---\nChange.\n")
    fake_llm.enqueue(Reply.text("looked"), Reply.text("changed"))
    agent = _agent(workspace, fake_llm)
    looked = [e.message for e in await _run(agent, "/look") if isinstance(e, Notice)]
    assert not any("allowed-tools" in n for n in looked)  # none of them is ever asked about
    mixed = [e.message for e in await _run(agent, "/mixed") if isinstance(e, Notice)]
    # Only the rule that would have spared a question is named.
    assert any(n.startswith("/mixed: its allowed-tools (edit_file(src/**)) are not granted") for n in mixed), mixed
