"""skill: load a skill's instructions on demand (level 2 of progressive disclosure).

The system prompt lists each skill's name and description only (level 1). This tool
returns the body of one SKILL.md and the absolute paths of the other files in its
folder, which the model reads with read_file when the instructions call for them
(level 3).

``allowed-tools`` in a skill is guidance, never a grant: it is shown to the model as the
tools the skill expects to use, and every call — inside the list or not — goes through
the permission manager exactly as it would without the skill. Nothing is widened while
a skill is in use.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from loom_engine.permissions.targets import PermissionTarget
from loom_engine.skills.catalog import SkillError, SkillNotFound
from loom_engine.skills.wrapper import wrap
from loom_engine.tools.base import BaseTool, ToolContext, ToolOutput


class SkillInput(BaseModel):
    name: str = Field(description="The skill's name, exactly as listed under Skills in your instructions.")


class SkillTool(BaseTool[SkillInput]):
    name = "skill"
    description = (
        "Load the full instructions of a skill listed under Skills in your instructions. Call it "
        "when a request matches a skill's description, before starting the work, and follow what "
        "it says. It also lists the files in the skill's folder; read those with read_file only "
        "when the instructions need them.")
    input_model = SkillInput
    is_concurrency_safe = True
    is_read_only = True
    guidance = (
        "skill(name) loads the full instructions of one of the skills listed under "
        "Skills. When a task matches a skill's description, call skill first and follow "
        "what it says; read the files it lists with read_file only when you need them.")
    session_only = True

    def permission_target(self, args: SkillInput, ctx: ToolContext) -> PermissionTarget | None:
        return None  # reads only Loom's own skill files, which the user installed

    async def run(self, args: SkillInput, ctx: ToolContext) -> ToolOutput:
        catalog = ctx.skills
        if catalog is None or len(catalog) == 0:
            return ToolOutput("No skills are installed, so there is nothing to load. Continue without one.",
                              is_error=True)
        try:
            body, files = catalog.load(args.name)
        except SkillNotFound as error:
            return ToolOutput(str(error), is_error=True)
        except (OSError, UnicodeDecodeError, SkillError) as error:
            return ToolOutput(f"Skill {args.name!r} could not be read: {error}", is_error=True)
        skill = catalog.get(args.name.strip())
        assert skill is not None
        lines = [wrap(skill.name, skill.source, skill.path, body)]
        if files:
            lines += ["", f"Files in {skill.folder} (read them with read_file when the instructions call for them):"]
            lines += [f"- {skill.folder / relative}" for relative in files]
        if skill.allowed_tools is not None:
            listed = ", ".join(skill.allowed_tools) or "none"
            lines += ["", f"Tools this skill expects to use: {listed}. This is guidance only: every call is "
                          "still checked against the user's permissions as usual."]
        return ToolOutput("\n".join(lines), display={"kind": "skill", "name": skill.name, "path": str(skill.path)})
