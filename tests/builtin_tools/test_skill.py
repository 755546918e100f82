from __future__ import annotations

from pathlib import Path

from builtin_tools import default_tools
from builtin_tools.skill import SkillInput, SkillTool
from loom_engine.skills.catalog import SkillCatalog

from .conftest import CallTool, MakeCtx


def catalog_with_skills(tmp_path: Path) -> SkillCatalog:
    root = tmp_path / "project" / ".loom" / "skills"
    folder = root / "release"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: release\ndescription: Cut a release. Use when asked to release.\n"
        "allowed-tools: Bash(git tag:*), Read\n---\n# Release\nRun scripts/bump.py, then tag.\n")
    (folder / "scripts" / "bump.py").write_text("print('bump')\n")
    (folder / "CHECKLIST.md").write_text("- changelog\n")
    plain = root / "notes"
    plain.mkdir()
    plain.joinpath("SKILL.md").write_text("---\nname: notes\ndescription: Take notes.\n---\nWrite notes.\n")
    return SkillCatalog.discover(tmp_path / "project", user_config_dir=tmp_path / "config",
                                 builtin_dir=tmp_path / "builtin")


async def test_skill_returns_the_body_and_absolute_file_paths(
        tmp_path: Path, make_ctx: MakeCtx, call_tool: CallTool) -> None:
    catalog = catalog_with_skills(tmp_path)
    result = await call_tool(SkillTool(), make_ctx(skills=catalog), name="release")
    assert not result.is_error
    folder = tmp_path / "project" / ".loom" / "skills" / "release"
    assert "# Release\nRun scripts/bump.py, then tag." in result.content
    assert f"- {folder / 'CHECKLIST.md'}" in result.content
    assert f"- {folder / 'scripts' / 'bump.py'}" in result.content
    assert "SKILL.md\n" not in result.content.split("</skill>")[1]
    assert "Tools this skill expects to use: bash(git tag:*), read_file." in result.content
    assert "guidance only" in result.content
    assert result.display == {"kind": "skill", "name": "release", "path": str(folder / "SKILL.md")}


async def test_a_skill_without_files_or_tools_says_only_the_body(
        tmp_path: Path, make_ctx: MakeCtx, call_tool: CallTool) -> None:
    result = await call_tool(SkillTool(), make_ctx(skills=catalog_with_skills(tmp_path)), name="notes")
    assert not result.is_error
    assert "Write notes." in result.content
    assert "Files in" not in result.content and "Tools this skill" not in result.content


async def test_an_unknown_skill_lists_the_available_ones(
        tmp_path: Path, make_ctx: MakeCtx, call_tool: CallTool) -> None:
    result = await call_tool(SkillTool(), make_ctx(skills=catalog_with_skills(tmp_path)), name="deploy")
    assert result.is_error
    assert result.content == "Unknown skill 'deploy'. Available skills: notes, release."


async def test_without_skills_the_tool_says_so(make_ctx: MakeCtx, call_tool: CallTool) -> None:
    for catalog in (None, SkillCatalog()):
        result = await call_tool(SkillTool(), make_ctx(skills=catalog), name="commit")
        assert result.is_error and "No skills are installed" in result.content


async def test_a_skill_file_removed_after_discovery_is_an_error(
        tmp_path: Path, make_ctx: MakeCtx, call_tool: CallTool) -> None:
    catalog = catalog_with_skills(tmp_path)
    (tmp_path / "project" / ".loom" / "skills" / "notes" / "SKILL.md").unlink()
    result = await call_tool(SkillTool(), make_ctx(skills=catalog), name="notes")
    assert result.is_error and "could not be read" in result.content


def test_the_tool_is_read_only_parallel_and_needs_no_permission(make_ctx: MakeCtx) -> None:
    tool = SkillTool()
    assert tool.is_read_only and tool.is_concurrency_safe
    assert tool.permission_target(SkillInput(name="x"), make_ctx()) is None
    assert "skill" in [t.name for t in default_tools()]
