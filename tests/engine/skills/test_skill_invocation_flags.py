"""Skills only the user runs (disable-model-invocation) and skills only the model loads
(user-invocable: false)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_engine.commands.invoke import resolve
from loom_engine.skills.catalog import SkillCatalog, SkillNotFound


def _skill(root: Path, name: str, extra: str = "") -> None:
    folder = root / ".loom" / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: The {name} skill.\n{extra}---\nDo {name}.\n")


def _catalog(root: Path) -> SkillCatalog:
    return SkillCatalog.discover(root, user_config_dir=root / "none", builtin_dir=root / "none")


def test_disable_model_invocation_keeps_it_from_the_model_only(tmp_path: Path) -> None:
    _skill(tmp_path, "deploy", "disable-model-invocation: true\n")
    _skill(tmp_path, "lint")
    catalog = _catalog(tmp_path)
    index = catalog.index_text()
    assert "- lint:" in index and "deploy" not in index
    with pytest.raises(SkillNotFound):
        catalog.load("deploy")
    invocation = resolve("/deploy now", None, catalog)
    assert invocation is not None and "Do deploy." in invocation.body


def test_user_invocable_false_is_not_a_slash_command(tmp_path: Path) -> None:
    _skill(tmp_path, "house-style", "user-invocable: false\n")
    catalog = _catalog(tmp_path)
    assert resolve("/house-style", None, catalog) is None
    assert "- house-style:" in catalog.index_text()
    assert catalog.load("house-style")[0] == "Do house-style."


def test_a_flag_that_is_not_true_or_false_is_reported(tmp_path: Path) -> None:
    _skill(tmp_path, "odd", "user-invocable: sometimes\n")
    catalog = _catalog(tmp_path)
    assert "odd" not in catalog and any("'user-invocable' must be true or false" in w for w in catalog.warnings)


def test_only_user_skills_leave_no_index(tmp_path: Path) -> None:
    _skill(tmp_path, "deploy", "disable-model-invocation: true\n")
    assert _catalog(tmp_path).index_text() == ""


def test_a_custom_command_of_the_same_name_wins_over_a_skill(tmp_path: Path) -> None:
    from loom_engine.commands.catalog import CommandCatalog

    _skill(tmp_path, "review")
    (tmp_path / ".loom" / "commands").mkdir(parents=True)
    (tmp_path / ".loom" / "commands" / "review.md").write_text("Review my way: $ARGUMENTS\n")
    commands = CommandCatalog.discover(tmp_path, user_config_dir=tmp_path / "none")
    invocation = resolve("/review a.py", commands, _catalog(tmp_path))
    assert invocation is not None and invocation.kind == "command" and invocation.body == "Review my way: $ARGUMENTS"
    # The skill it hides is still reached, by /skill:name.
    hidden = resolve("/skill:review a.py", commands, _catalog(tmp_path))
    assert hidden is not None and hidden.kind == "skill" and hidden.name == "review" and hidden.arguments == "a.py"
    assert "Do review." in hidden.body
    assert resolve("/skill:nosuch", commands, _catalog(tmp_path)) is None
