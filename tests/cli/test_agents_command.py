"""`loom agents` lists the custom sub-agents and the files it skipped; `loom run` uses them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env

REVIEWER = """---
name: reviewer
description: Reviews a change for bugs.
tools: Read, Grep, NotebookEdit
colour: blue
---
You are the REVIEWER.
"""


def _setup(tmp_path: Path, workspace: Path) -> None:
    claude = workspace / ".claude/agents"
    claude.mkdir(parents=True)
    (claude / "reviewer.md").write_text(REVIEWER)
    own = workspace / ".loom/agents"
    own.mkdir(parents=True)
    (own / "broken.md").write_text("---\nname: broken\ntools: Read\n---\nNo description.\n")
    (own / "bad-yaml.md").write_text("---\nname: x\ndescription: [unclosed\n---\nBody\n")
    user = tmp_path / "config/agents"
    user.mkdir(parents=True)
    (user / "reviewer.md").write_text("---\nname: reviewer\ndescription: The user's reviewer.\n---\nMine.\n")
    (user / "helper.md").write_text("---\nname: helper\ndescription: Helps.\nmodel: haiku\n---\nHelp.\n")


def test_agents_are_listed_with_source_and_description_and_broken_files_with_the_problem(
        tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer) -> None:
    _setup(tmp_path, workspace)
    done = loom(["agents"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split(None, 2) == ["helper", "user", "Helps."]
    assert "model: claude-haiku-4-5" in lines[1]
    assert lines[2].split(None, 2) == ["reviewer", ".claude", "Reviews a change for bugs."]
    assert "tools: read_file, grep, NotebookEdit (.claude/agents/reviewer.md)" in lines[3]
    assert "replaced: reviewer from user" in done.stdout
    skipped = done.stdout.split("skipped files:")[1].split("warnings:")[0]
    assert ".loom/agents/broken.md: missing 'description'" in skipped
    assert ".loom/agents/bad-yaml.md: invalid YAML front matter" in skipped
    warnings = done.stdout.split("warnings:")[1]
    assert ".claude/agents/reviewer.md: unknown field 'colour' ignored" in warnings
    assert ".claude/agents/reviewer.md: tools Loom does not have, left out: NotebookEdit" in warnings
    assert fake_llm.requests == []


def test_no_agents_says_where_they_go(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer) -> None:
    done = loom(["agents"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0
    assert ".claude/agents/" in done.stdout and ".loom/agents/" in done.stdout


def test_headless_run_offers_the_agents_and_runs_the_reviewer(tmp_path: Path, workspace: Path,
                                                             fake_llm: FakeLLMServer) -> None:
    _setup(tmp_path, workspace)
    fake_llm.enqueue(Reply.tool("task", {"description": "review", "prompt": "Review src/app.py",
                                         "subagent_type": "reviewer"}),
                     Reply.text("no bugs"), Reply.text("reviewed: no bugs"))
    done = loom(["run", "review it"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "reviewed: no bugs"
    assert "broken.md: skipped: missing 'description'" in done.stderr
    parent, child, _ = fake_llm.requests
    task = next(t for t in parent.body["tools"] if t["name"] == "task")
    assert "- helper: Helps.\n- reviewer: Reviews a change for bugs." in task["description"]
    assert json.dumps(child.body["system"]).count("You are the REVIEWER.") == 1
    assert sorted(t["name"] for t in child.body["tools"]) == ["grep", "read_file"]


SECOND_OPINION = ("---\nname: second-opinion\ndescription: Another vendor's view.\ntools: Read\nmodel: gpt-4o\n"
                  "---\nYou GIVE A SECOND OPINION.\n")


def test_an_agent_with_another_vendors_model_uses_that_provider(tmp_path: Path, workspace: Path,
                                                                fake_llm: FakeLLMServer) -> None:
    (workspace / ".loom/agents").mkdir(parents=True)
    (workspace / ".loom/agents/second-opinion.md").write_text(SECOND_OPINION)
    fake_llm.enqueue(Reply.tool("task", {"description": "ask", "prompt": "Look at src/app.py",
                                         "subagent_type": "second-opinion"}),
                     Reply.text("fine by me"), Reply.text("both agree"))
    env = loom_env(tmp_path, fake_llm, OPENAI_API_KEY="test-openai", OPENAI_BASE_URL=fake_llm.openai_base_url)
    done = loom(["run", "second opinion please", "--trust-project"], workspace, env)  # a project agent's model
    assert done.returncode == 0, done.stderr
    parent, child, _ = fake_llm.requests
    assert (parent.api, child.api, child.body["model"]) == ("anthropic", "openai", "gpt-4o")
    assert child.headers.get("authorization") == "Bearer test-openai"


def test_an_agent_whose_provider_is_not_configured_is_an_error_result(tmp_path: Path, workspace: Path,
                                                                      fake_llm: FakeLLMServer) -> None:
    (workspace / ".loom/agents").mkdir(parents=True)
    (workspace / ".loom/agents/second-opinion.md").write_text(SECOND_OPINION)
    fake_llm.enqueue(Reply.tool("task", {"description": "ask", "prompt": "Look",
                                         "subagent_type": "second-opinion"}), Reply.text("I will do it myself"))
    done = loom(["run", "second opinion please", "--trust-project"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    result = json.dumps(fake_llm.requests[1].messages[-1])
    assert "Could not start the second-opinion agent (model gpt-4o): OPENAI_API_KEY is not set" in result


def test_a_project_agents_model_is_shown_as_unused_until_trusted(tmp_path: Path, workspace: Path,
                                                                 fake_llm: FakeLLMServer) -> None:
    (workspace / ".loom/agents").mkdir(parents=True)
    (workspace / ".loom/agents/second-opinion.md").write_text(SECOND_OPINION)
    env = loom_env(tmp_path, fake_llm)
    done = loom(["agents"], workspace, env)
    assert done.returncode == 0, done.stderr
    assert ("model: gpt-4o (not used until you trust the workspace: the session's model runs it)"
            in done.stdout.splitlines()[1])
    from loom_cli.project_trust import changes_hash
    from loom_cli.settings import load_settings
    from loom_cli.workspace_records import WorkspaceRecords

    widening = load_settings(workspace, tmp_path / "config" / "config.toml", environ={}).widening
    WorkspaceRecords(tmp_path / "data").trust(workspace, changes_hash(widening))
    trusted = loom(["agents"], workspace, env)
    assert "tools: read_file; model: gpt-4o (.loom/agents/second-opinion.md)" in trusted.stdout.splitlines()[1]
