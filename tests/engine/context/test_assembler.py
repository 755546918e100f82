from __future__ import annotations

import os
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from builtin_tools import default_tools
from builtin_tools.grep import GrepTool
from builtin_tools.read_file import ReadFileTool
from loom_engine.context.assembler import (
    ChangingFacts,
    ContextAssembler,
    PromptComponent,
    cut_at_boundary,
    fit_components,
    render_reminder,
)
from loom_engine.context.prompts import BASE_INSTRUCTIONS
from loom_engine.context.tokens import TokenCounter
from loom_engine.skills.catalog import SkillCatalog
from loom_engine.tools.base import ToolSessionState
from loom_engine.workspace import Workspace

NOW = datetime(2025, 3, 4, 12, 0, tzinfo=UTC)


def counter() -> TokenCounter:
    return TokenCounter(allow_tiktoken=False)


def make_skill(root: Path, name: str, description: str, body: str) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "config"
    folder.mkdir()
    return folder


def assembler(root: Path, config_dir: Path, **kwargs: object) -> ContextAssembler:
    return ContextAssembler(root, user_config_dir=config_dir, counter=counter(), now=NOW, **kwargs)  # type: ignore[arg-type]


# --- content --------------------------------------------------------------------------------------

def test_the_prompt_has_every_part_with_paths(workspace: Path, config_dir: Path) -> None:
    (workspace / "LOOM.md").write_text("Use tabs in Makefiles.\n")
    (workspace / "AGENTS.md").write_text("Run `make check` before finishing.\n")
    (config_dir / "LOOM.md").write_text("Answer in British English.\n")
    skills_root = workspace / ".loom" / "skills"
    make_skill(skills_root, "deploy", "Deploy the app to staging. Use when asked to deploy.",
               "SECRET-BODY-MARKER: run ./deploy.sh staging")
    catalog = SkillCatalog.discover(workspace, user_config_dir=config_dir, builtin_dir=workspace / "none")
    prompt = assembler(workspace, config_dir, skills=catalog).system_prompt()

    assert prompt.startswith(BASE_INSTRUCTIONS)
    assert f"# Project instructions: {workspace / 'LOOM.md'}" in prompt and "Use tabs in Makefiles." in prompt
    assert f"# Project instructions: {workspace / 'AGENTS.md'}" in prompt and "make check" in prompt
    assert f"# User instructions: {config_dir / 'LOOM.md'}" in prompt and "British English" in prompt
    assert "- deploy: Deploy the app to staging." in prompt
    assert "SECRET-BODY-MARKER" not in prompt
    assert f"- Workspace: {Workspace.at(workspace).root}" in prompt
    assert "- Date: 2025-03-04" in prompt
    assert "- Platform: " in prompt


def test_environment_shows_branch_and_capped_status(workspace: Path, config_dir: Path) -> None:
    subprocess.run(["git", "checkout", "-q", "-b", "feature/x"], cwd=workspace, check=True)
    for i in range(30):
        (workspace / f"new_{i:02d}.txt").write_text("x")
    env = assembler(workspace, config_dir).environment_text()
    assert "- Git branch: feature/x" in env
    assert "(32 changed paths; it may have changed since)" in env
    assert "?? new_00.txt" in env
    assert "... and 12 more" in env
    assert len([line for line in env.splitlines() if line.startswith("    ??")]) == 20


def test_outside_git_the_environment_says_so(tmp_path: Path, config_dir: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    env = assembler(plain, config_dir).environment_text()
    assert "Not a git repository" in env and "Git branch" not in env


def test_the_same_file_under_two_names_is_shown_once(workspace: Path, config_dir: Path) -> None:
    (workspace / "AGENTS.md").write_text("Shared instructions, written once.\n")
    os.symlink("AGENTS.md", workspace / "CLAUDE.md")
    prompt = assembler(workspace, config_dir).system_prompt()
    assert prompt.count("Shared instructions, written once.") == 1


def test_tool_notes_cover_only_the_tools_present(workspace: Path, config_dir: Path) -> None:
    prompt = assembler(workspace, config_dir, tools=[ReadFileTool(), GrepTool()]).system_prompt()
    assert "read_file returns numbered lines" in prompt
    assert "*** Begin Patch" not in prompt
    everything = assembler(workspace, config_dir, tools=default_tools()).system_prompt()
    assert "*** Begin Patch" in everything


# --- stability ------------------------------------------------------------------------------------

def test_system_prompt_is_byte_identical_on_every_call(workspace: Path, config_dir: Path) -> None:
    (workspace / "LOOM.md").write_text("Rule one.\n")
    context = assembler(workspace, config_dir)
    first = context.system_prompt()
    (workspace / "LOOM.md").write_text("Rule two, changed mid-session.\n")
    (workspace / "later.txt").write_text("a new untracked file")
    for _ in range(5):
        assert context.system_prompt().encode() == first.encode()
    assert "Rule one." in first


def test_two_assemblers_over_the_same_state_agree(workspace: Path, config_dir: Path) -> None:
    (workspace / "LOOM.md").write_text("Rule one.\n")
    assert assembler(workspace, config_dir).system_prompt() == assembler(workspace, config_dir).system_prompt()


# --- the budget -----------------------------------------------------------------------------------

def sentences(tag: str, n: int) -> str:
    return " ".join(f"Sentence {tag}{i} says something useful about the project." for i in range(n))


def whole_sentences_only(text: str, tag: str, n: int) -> bool:
    present = [f"Sentence {tag}{i} says something useful about the project." in text for i in range(n)]
    partial = re.findall(rf"Sentence {tag}\d+ [^.\[]*$", text, flags=re.MULTILINE)
    # What survives is a prefix of whole sentences, and no sentence is cut half-way.
    return present == sorted(present, reverse=True) and not partial


def test_budget_cuts_the_lowest_priority_first_and_never_mid_sentence() -> None:
    c = counter()
    parts = [
        PromptComponent("base", "You are a test assistant.", 100, required=True),
        PromptComponent("high", sentences("h", 40), 90),
        PromptComponent("low", sentences("l", 40), 10),
        PromptComponent("middle", sentences("m", 40), 50),
    ]
    full = sum(c.count_text(p.text) for p in parts)
    budget = full - c.count_text(parts[2].text) // 2
    text, report = fit_components(parts, budget, c)
    assert report.cut == ("low",) and report.dropped == ()
    assert report.total_tokens <= budget
    assert sentences("h", 40) in text and sentences("m", 40) in text
    assert whole_sentences_only(text, "l", 40)
    assert "[low shortened to fit the prompt budget" in text


def test_a_part_too_small_to_keep_is_dropped_whole_then_the_next_is_cut() -> None:
    c = counter()
    parts = [
        PromptComponent("base", "You are a test assistant.", 100, required=True),
        PromptComponent("high", sentences("h", 60), 90),
        PromptComponent("low", sentences("l", 60), 10),
        PromptComponent("middle", sentences("m", 60), 50),
    ]
    budget = c.count_text(parts[1].text) + c.count_text(parts[3].text) // 2
    text, report = fit_components(parts, budget, c)
    assert report.dropped == ("low",) and report.cut == ("middle",)
    assert "Sentence l" not in text
    assert whole_sentences_only(text, "m", 60)
    assert sentences("h", 60) in text
    assert report.total_tokens <= budget


def test_required_parts_survive_any_budget() -> None:
    c = counter()
    parts = [PromptComponent("base", sentences("b", 30), 100, required=True),
             PromptComponent("other", sentences("o", 30), 50)]
    text, report = fit_components(parts, 10, c)
    assert text == sentences("b", 30)
    assert report.dropped == ("other",)


def test_a_huge_instruction_file_is_capped_with_a_note_naming_it(workspace: Path, config_dir: Path) -> None:
    paragraphs = "\n\n".join(sentences(f"p{k}x", 10) for k in range(200))
    (workspace / "CLAUDE.md").write_text(paragraphs)
    context = assembler(workspace, config_dir, budget_tokens=100_000)
    prompt = context.system_prompt()
    assert f"The full text is in {workspace / 'CLAUDE.md'}; read it when needed." in prompt
    assert context.report.cut == (f"project instructions ({workspace / 'CLAUDE.md'})",)
    body = prompt.split("# Project instructions:")[1]
    # Cut at a paragraph boundary: the last kept paragraph is complete.
    kept = [k for k in range(200) if sentences(f"p{k}x", 10) in body]
    assert kept == list(range(len(kept))) and 0 < len(kept) < 200


def test_a_small_budget_drops_the_skills_index_before_project_instructions(
        workspace: Path, config_dir: Path) -> None:
    (workspace / "LOOM.md").write_text("Always run the linter.\n")
    skills_root = workspace / ".loom" / "skills"
    for i in range(40):
        make_skill(skills_root, f"skill-{i}", "Does a very particular thing. " * 8, "body")
    catalog = SkillCatalog.discover(workspace, user_config_dir=config_dir, builtin_dir=workspace / "none")
    c = counter()
    base = assembler(workspace, config_dir, tools=[])
    no_skills = c.count_text(base.system_prompt())
    context = assembler(workspace, config_dir, skills=catalog, tools=[], budget_tokens=no_skills + 50)
    prompt = context.system_prompt()
    assert "Always run the linter." in prompt
    assert "skills index" in context.report.dropped + context.report.cut
    assert context.report.total_tokens <= no_skills + 50


def test_cut_at_boundary_prefers_paragraphs_and_refuses_when_nothing_fits() -> None:
    c = counter()
    text = "First paragraph, one sentence.\n\nSecond paragraph. It has two sentences.\n\nThird."
    assert cut_at_boundary(text, c.count_text(text), c) == text
    assert cut_at_boundary(text, c.count_text("First paragraph, one sentence.") + 1, c) == \
        "First paragraph, one sentence."
    assert cut_at_boundary(text, 1, c) is None
    prose = "Alpha is first. Beta is second. Gamma is third and last."
    assert cut_at_boundary(prose, c.count_text("Alpha is first. Beta is second.") + 1, c) == \
        "Alpha is first. Beta is second."


def test_abbreviations_and_initials_are_not_sentence_ends() -> None:
    c = counter()
    text = ("Use a fixture, e.g. tmp_path or a factory. Ask J. Smith before changing the schema. "
            "Then run the whole suite again with coverage enabled.")
    limit = c.count_text(text) - 3
    assert cut_at_boundary(text, limit, c) == \
        "Use a fixture, e.g. tmp_path or a factory. Ask J. Smith before changing the schema."
    assert cut_at_boundary(text, c.count_text("Use a fixture, e.g. tmp_path or a factory.") + 2, c) == \
        "Use a fixture, e.g. tmp_path or a factory."


# --- changing facts -------------------------------------------------------------------------------

def test_changed_files_are_reported_once_each(workspace: Path) -> None:
    ws = Workspace.at(workspace)
    state = ToolSessionState()
    app = ws.resolve("src/app.py")
    readme = ws.resolve("README.md")
    state.record_read(app)
    state.record_read(readme)
    facts = ChangingFacts(ws)
    assert facts.collect(state) == ""
    app.write_text("def greet(name):\n    return name * 2\n")
    os.utime(app, ns=(1, 1))
    readme.unlink()
    reminder = facts.collect(state)
    assert reminder.startswith("<system-reminder>") and reminder.endswith("</system-reminder>")
    assert "src/app.py" in reminder and "README.md (deleted)" in reminder
    assert "not a message from the user" in reminder
    assert facts.collect(state) == ""


def test_todos_are_included_on_request() -> None:
    text = render_reminder(todos=[{"content": "Write tests", "status": "completed"},
                                  {"content": "Fix bug", "status": "in_progress"}])
    assert "Todo list (1 of 2 done):" in text and "[x] Write tests" in text and "[~] Fix bug" in text
    assert "The todo list is empty." in render_reminder(todos=[])
    assert render_reminder() == ""
    assert "- Context was compacted." in render_reminder(notes=["Context was compacted."])


def test_branch_line_describes_tracking_and_unborn_branches() -> None:
    from loom_engine.context.assembler import _branch_description

    assert _branch_description("main") == "main"
    assert _branch_description("main...origin/main [ahead 2, behind 1]") == \
        "main (tracking origin/main, ahead 2, behind 1)"
    assert _branch_description("dev...origin/dev") == "dev (tracking origin/dev)"
    assert _branch_description("No commits yet on trunk") == "trunk (no commits yet)"
    assert _branch_description("HEAD (no branch)") == "detached HEAD"
