"""Agent files in Claude Code's format: fields, names mapped, problems reported, precedence."""

from __future__ import annotations

from pathlib import Path

from loom_engine.config import AgentConfig
from loom_engine.subagents.definitions import AgentCatalog, AgentDefinition
from loom_engine.subagents.spawn import child_config

PARENT_TOOLS = ("read_file", "write_file", "edit_file", "glob", "grep", "ls", "bash", "task", "skill",
                "mcp__github__issues", "mcp__db__query")


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def _catalog(tmp_path: Path) -> AgentCatalog:
    return AgentCatalog.discover(tmp_path / "repo", user_config_dir=tmp_path / "config")


def test_every_field_is_read_and_claude_names_map_to_loom_names(tmp_path: Path) -> None:
    _write(tmp_path / "repo/.claude/agents", "reviewer.md", """---
name: reviewer
description: Reviews code
  for bugs.
tools: Read, Grep, Glob, Bash, Edit, Write, MultiEdit, LS, WebFetch, Task
disallowedTools: [Bash]
model: haiku
permissionMode: acceptEdits
maxTurns: 7
skills: fix-tests, commit
mcpServers: [github]
---
You review code.
""")
    catalog = _catalog(tmp_path)
    agent = catalog.get("reviewer")
    assert agent is not None and catalog.problems == ()
    assert agent.description == "Reviews code for bugs."
    assert agent.prompt == "You review code."
    assert agent.tools == ("read_file", "grep", "glob", "bash", "edit_file", "write_file", "multi_edit", "ls",
                           "web_fetch", "task")
    assert agent.disallowed_tools == ("bash",)
    assert (agent.model, agent.permission_mode, agent.max_turns) == ("claude-haiku-4-5", "accept-edits", 7)
    assert agent.skills == ("fix-tests", "commit") and agent.mcp_servers == ("github",)
    assert agent.source == ".claude"


def test_broken_files_are_skipped_with_their_problem_and_unknown_keys_warn(tmp_path: Path) -> None:
    agents = tmp_path / "repo/.loom/agents"
    _write(agents, "good.md", "---\nname: good\ndescription: Fine.\nflavour: mint\n---\nBody.\n")
    _write(agents, "nodesc.md", "---\nname: nodesc\n---\nBody.\n")
    _write(agents, "yaml.md", "---\nname: [oops\ndescription: x\n---\nBody.\n")
    _write(agents, "nofront.md", "Just text.\n")
    _write(agents, "turns.md", "---\nname: turns\ndescription: d\nmaxTurns: many\n---\nBody.\n")
    catalog = _catalog(tmp_path)
    assert catalog.names() == ["good"]
    problems = {p.path.name: (p.message, p.skipped) for p in catalog.problems}
    assert problems["good.md"] == ("unknown field 'flavour' ignored", False)
    assert problems["nodesc.md"] == ("missing 'description'", True)
    assert problems["yaml.md"][0].startswith("invalid YAML front matter (line 3)")
    assert "front matter" in problems["nofront.md"][0]
    assert "maxTurns" in problems["turns.md"][0]


def test_the_project_overrides_the_user_and_loom_overrides_claude(tmp_path: Path) -> None:
    for folder in ("config/agents", "repo/.claude/agents", "repo/.loom/agents"):
        _write(tmp_path / folder, "helper.md", f"---\nname: helper\ndescription: from {folder}\n---\nBody.\n")
    _write(tmp_path / "config/agents", "mine.md", "---\nname: mine\ndescription: only mine\n---\nBody.\n")
    catalog = _catalog(tmp_path)
    helper = catalog.get("helper")
    assert helper is not None and helper.source == ".loom" and helper.description == "from repo/.loom/agents"
    assert [a.source for a in catalog.overridden] == ["user", ".claude"]
    mine = catalog.get("mine")
    assert mine is not None and mine.source == "user"


def test_the_index_is_sorted_and_identical_on_every_discovery(tmp_path: Path) -> None:
    agents = tmp_path / "repo/.loom/agents"
    _write(agents, "zeta.md", "---\nname: zeta\ndescription: Last.\n---\nBody.\n")
    _write(agents, "alpha.md", "---\nname: alpha\ndescription: First.\n---\nBody.\n")
    first = _catalog(tmp_path).index_text()
    assert first == "- alpha: First.\n- zeta: Last."
    assert _catalog(tmp_path).index_text() == first


def _agent(**fields: object) -> AgentDefinition:
    base: dict[str, object] = dict(name="a", description="d", prompt="p", path=Path("a.md"), source=".loom")
    base.update(fields)
    return AgentDefinition(**base)  # type: ignore[arg-type]


def _child(agent: AgentDefinition, parent: AgentConfig | None = None,
           tools: tuple[str, ...] | None = None) -> AgentConfig:
    config, _ = child_config(parent or AgentConfig(model="claude-sonnet-4-6"), parent_tools=PARENT_TOOLS,
                             default_tools=("read_file",), tools=tools, definition=agent)
    return config


def test_a_child_never_gets_a_tool_its_parent_lacks() -> None:
    config, unknown = child_config(AgentConfig(model="m"), parent_tools=("read_file", "grep"),
                                   default_tools=(), tools=None, definition=_agent(tools=("read_file", "bash")))
    assert config.tool_names == ("read_file",) and unknown == []  # the file's business, not the model's
    narrowed = AgentConfig(model="m").inherit(tools=("read_file",))  # a parent already narrowed
    config, _ = child_config(narrowed, parent_tools=PARENT_TOOLS, default_tools=(), tools=None,
                             definition=_agent(tools=("read_file", "bash")))
    assert config.tool_names == ("read_file",)


def test_no_tools_field_gives_the_parents_tools_less_task_and_disallowed_ones() -> None:
    config = _child(_agent(disallowed_tools=("bash",)))
    assert config.tool_names == tuple(t for t in PARENT_TOOLS if t not in ("task", "bash"))
    assert config.agent_type == "a"
    assert config.inherit().agent_type is None  # its own general sub-agent is not "a"


def test_the_task_call_can_only_narrow_an_agents_tools() -> None:
    assert _child(_agent(tools=("read_file", "grep")), tools=("grep", "bash")).tool_names == ("grep",)


def test_mcp_servers_keep_only_those_servers_tools() -> None:
    config = _child(_agent(mcp_servers=("github",)))
    names = config.tool_names or ()
    assert "mcp__github__issues" in names and "mcp__db__query" not in names and "read_file" in names


def test_task_is_taken_away_where_nesting_would_be_refused() -> None:
    agent = _agent(tools=("read_file", "task"))
    assert _child(agent).tool_names == ("read_file", "task")  # depth 1 of 2: may delegate
    at_one = AgentConfig(model="m").inherit(tools=PARENT_TOOLS)
    assert _child(agent, parent=at_one).tool_names == ("read_file",)  # depth 2 of 2: may not


def test_model_skills_and_turns() -> None:
    parent = AgentConfig(model="claude-sonnet-4-6", provider="anthropic", max_turns=20, context_window=50_000)
    config = _child(_agent(model="gpt-4o", max_turns=50, skills=("commit",)), parent=parent)
    assert (config.model, config.provider, config.context_window) == ("gpt-4o", "openai", None)
    assert config.max_turns == 20 and config.skill_names == ("commit",)
    same = _child(_agent(model="claude-haiku-4-5", max_turns=5), parent=parent)
    assert (same.model, same.provider, same.max_turns) == ("claude-haiku-4-5", "anthropic", 5)
    inherited = _child(_agent(), parent=parent)
    assert (inherited.model, inherited.context_window) == ("claude-sonnet-4-6", 50_000)
    narrowed = parent.inherit(skills=("commit",))
    assert _child(_agent(skills=("commit", "deploy")), parent=narrowed).skill_names == ("commit",)


SECOND_OPINION = "---\nname: second-opinion\ndescription: Another view.\nmodel: gpt-4o\n---\nYou GIVE ONE.\n"


def test_a_project_agents_model_is_kept_only_when_trusted(tmp_path: Path) -> None:
    """Issue 19 §2 item 11: the catalog's builder says which project models are trusted; any
    other one is left out (the session's model runs the agent) and remembered, to be said."""
    path = _write(tmp_path / "repo/.claude/agents", "second-opinion.md", SECOND_OPINION)
    _write(tmp_path / "config/agents", "mine.md", SECOND_OPINION.replace("second-opinion", "mine"))
    catalog = _catalog(tmp_path)
    untrusted = catalog.with_trusted_models(frozenset())
    project, user = untrusted.get("second-opinion"), untrusted.get("mine")
    assert project is not None and user is not None
    assert (project.model, project.untrusted_model) == (None, "gpt-4o")
    assert (user.model, user.untrusted_model) == ("gpt-4o", None)  # the user's own file may choose
    trusted = catalog.with_trusted_models(frozenset({(path, "gpt-4o")})).get("second-opinion")
    assert trusted is not None and (trusted.model, trusted.untrusted_model) == ("gpt-4o", None)
    other = catalog.with_trusted_models(frozenset({(path, "o3")})).get("second-opinion")  # trusted another model
    assert other is not None and other.model is None
    config, _ = child_config(AgentConfig(model="claude-sonnet-4-6", provider="anthropic"), parent_tools=PARENT_TOOLS,
                             default_tools=(), tools=None, definition=project)
    assert (config.provider, config.model) == ("anthropic", "claude-sonnet-4-6")
