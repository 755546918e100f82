from __future__ import annotations

from pathlib import Path

import pytest

from loom_engine.paths import builtin_skills_dir
from loom_engine.skills.catalog import SkillCatalog, SkillNotFound


def write_skill(root: Path, folder: str, front: str, body: str = "Do the thing carefully.\n",
                filename: str = "SKILL.md") -> Path:
    directory = root / folder
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / filename
    path.write_text(f"---\n{front}\n---\n{body}")
    return path


def good(name: str, description: str = "Does something. Use when asked.") -> str:
    return f"name: {name}\ndescription: {description}"


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    project = tmp_path / "project"
    project.mkdir()
    return {"project": project, "config": tmp_path / "config", "builtin": tmp_path / "builtin"}


def discover(places: dict[str, Path]) -> SkillCatalog:
    return SkillCatalog.discover(places["project"], user_config_dir=places["config"],
                                 builtin_dir=places["builtin"])


def test_later_places_override_earlier_ones(places: dict[str, Path]) -> None:
    locations = [places["builtin"], places["config"] / "skills", places["project"] / ".agents" / "skills",
                 places["project"] / ".claude" / "skills", places["project"] / ".loom" / "skills"]
    for depth, root in enumerate(locations):
        write_skill(root, "shared", good("shared", f"Version from place {depth}."))
        write_skill(root, f"only-{depth}", good(f"only-{depth}"))
    catalog = discover(places)
    assert catalog.warnings == ()
    shared = catalog.get("shared")
    assert shared is not None
    assert shared.description == "Version from place 4."
    assert shared.path == locations[4] / "shared" / "SKILL.md"
    assert shared.source == "project"
    assert sorted(catalog.names()) == ["only-0", "only-1", "only-2", "only-3", "only-4", "shared"]
    assert catalog.get("only-0").source == "builtin"  # type: ignore[union-attr]
    assert catalog.get("only-1").source == "user"  # type: ignore[union-attr]
    assert [s.description for s in catalog.overridden] == [f"Version from place {i}." for i in range(4)]


def test_each_user_config_skill_beats_builtin(places: dict[str, Path]) -> None:
    write_skill(places["builtin"], "commit", good("commit", "Builtin commit."))
    write_skill(places["config"] / "skills", "commit", good("commit", "My own commit."))
    assert discover(places).get("commit").description == "My own commit."  # type: ignore[union-attr]


BROKEN = {
    "no-front": ("Just instructions, no front matter.\n", "no YAML front matter"),
    "unclosed": ("---\nname: unclosed\ndescription: x\nbody without end\n", "not closed"),
    "bad-yaml": ("---\nname: bad-yaml\ndescription: [unclosed\n---\nbody\n", "invalid YAML front matter"),
    "not-mapping": ("---\n- a\n- b\n---\nbody\n", "must be a YAML mapping"),
    "no-name": ("---\ndescription: nameless\n---\nbody\n", "missing 'name'"),
    "Bad_Name": ("---\nname: Bad_Name\ndescription: x\n---\nbody\n", "lowercase letters, digits and single hyphens"),
    "mismatch": ("---\nname: other-name\ndescription: x\n---\nbody\n", "does not match its folder name 'mismatch'"),
    "no-description": ("---\nname: no-description\n---\nbody\n", "missing 'description'"),
    "bad-tools": ("---\nname: bad-tools\ndescription: x\nallowed-tools: {a: 1}\n---\nbody\n",
                  "'allowed-tools' must be"),
    "empty-body": ("---\nname: empty-body\ndescription: x\n---\n\n  \n", "no instructions"),
    "a" * 65: ("---\nname: " + "a" * 65 + "\ndescription: x\n---\nbody\n", "longer than 64"),
    "-dash": ("---\nname: -dash\ndescription: x\n---\nbody\n", "single hyphens"),
}


def test_each_kind_of_broken_skill_is_reported_and_skipped(places: dict[str, Path]) -> None:
    root = places["project"] / ".loom" / "skills"
    for folder, (text, _) in BROKEN.items():
        (root / folder).mkdir(parents=True)
        (root / folder / "SKILL.md").write_text(text)
    (root / "binary").mkdir()
    (root / "binary" / "SKILL.md").write_bytes(b"---\nname: binary\n\xff\xfe\n---\n")
    write_skill(root, "lowercase-file", good("lowercase-file"), filename="skill.md")
    write_skill(root, "fine", good("fine"))

    catalog = discover(places)
    assert catalog.names() == ["fine"]
    expected = {folder: problem for folder, (_, problem) in BROKEN.items()}
    expected["binary"] = "not valid UTF-8"
    expected["lowercase-file"] = "must be named SKILL.md"
    assert len(catalog.warnings) == len(expected)
    for folder, problem in expected.items():
        matching = [w for w in catalog.warnings if w.startswith(str(root / folder) + "/")]
        assert len(matching) == 1, (folder, catalog.warnings)
        assert problem in matching[0] and "skipped" in matching[0], matching[0]


def test_a_broken_override_keeps_the_earlier_skill(places: dict[str, Path]) -> None:
    write_skill(places["builtin"], "review", good("review", "The shipped review."))
    write_skill(places["project"] / ".loom" / "skills", "review", "name: review")
    catalog = discover(places)
    assert catalog.get("review").description == "The shipped review."  # type: ignore[union-attr]
    assert len(catalog.warnings) == 1 and "missing 'description'" in catalog.warnings[0]


def test_index_has_names_and_descriptions_but_no_bodies(places: dict[str, Path]) -> None:
    root = places["project"] / ".agents" / "skills"
    write_skill(root, "zeta", good("zeta", "Last one.\n  Spread over\n  lines."), body="ZETA BODY\n")
    write_skill(root, "alpha", good("alpha", "First one."), body="ALPHA BODY\n")
    index = discover(places).index_text()
    assert "- alpha: First one.\n- zeta: Last one. Spread over lines." in index
    assert "BODY" not in index
    assert SkillCatalog().index_text() == ""


def test_load_returns_the_body_and_the_folders_files(places: dict[str, Path]) -> None:
    root = places["project"] / ".loom" / "skills"
    path = write_skill(root, "pdf", good("pdf"), body="# PDF\nSee reference.md and scripts/fill.py.\n")
    (path.parent / "reference.md").write_text("ref")
    (path.parent / "scripts").mkdir()
    (path.parent / "scripts" / "fill.py").write_text("print()")
    (path.parent / ".hidden").write_text("no")
    (path.parent / "__pycache__").mkdir()
    (path.parent / "__pycache__" / "x.pyc").write_bytes(b"")
    catalog = discover(places)
    body, files = catalog.load("pdf")
    assert body == "# PDF\nSee reference.md and scripts/fill.py."
    assert files == ["reference.md", "scripts/fill.py"]


def test_the_body_is_read_only_when_loaded(places: dict[str, Path]) -> None:
    path = write_skill(places["project"] / ".loom" / "skills", "lazy", good("lazy"), body="old body\n")
    catalog = discover(places)
    path.write_text(f"---\n{good('lazy')}\n---\nnew body\n")
    assert catalog.load("lazy")[0] == "new body"


def test_unknown_skill_names_the_available_ones(places: dict[str, Path]) -> None:
    write_skill(places["builtin"], "commit", good("commit"))
    write_skill(places["builtin"], "review", good("review"))
    with pytest.raises(SkillNotFound) as error:
        discover(places).load("deploy")
    assert str(error.value) == "Unknown skill 'deploy'. Available skills: commit, review."


def test_allowed_tools_in_every_accepted_form(places: dict[str, Path]) -> None:
    root = places["project"] / ".claude" / "skills"
    write_skill(root, "claude-style", good("claude-style") + "\nallowed-tools: Read, Grep, Bash(git diff:*, git log:*)")
    write_skill(root, "spec-style", good("spec-style") + "\nallowed-tools: Bash(git status:*) Read")
    write_skill(root, "list-style", good("list-style") + "\nallowed-tools:\n  - read_file\n  - bash(make test)")
    write_skill(root, "none", good("none"))
    catalog = discover(places)
    assert catalog.warnings == ()
    assert catalog.get("claude-style").allowed_tools == ("read_file", "grep", "bash(git diff:*, git log:*)")  # type: ignore[union-attr]
    assert catalog.get("spec-style").allowed_tools == ("bash(git status:*)", "read_file")  # type: ignore[union-attr]
    assert catalog.get("list-style").allowed_tools == ("read_file", "bash(make test)")  # type: ignore[union-attr]
    assert catalog.get("none").allowed_tools is None  # type: ignore[union-attr]


def test_restricted_keeps_only_named_skills(places: dict[str, Path]) -> None:
    for name in ("a", "b", "c"):
        write_skill(places["builtin"], name, good(name))
    catalog = discover(places)
    assert catalog.restricted(["a", "c", "zzz"]).names() == ["a", "c"]
    assert catalog.restricted(None) is catalog
    assert "a" in catalog and len(catalog) == 3


def test_missing_places_are_fine(tmp_path: Path) -> None:
    catalog = SkillCatalog.discover(tmp_path / "nowhere", user_config_dir=tmp_path / "nope",
                                    builtin_dir=tmp_path / "none")
    assert len(catalog) == 0 and catalog.warnings == ()


def test_the_shipped_skills_are_valid() -> None:
    catalog = SkillCatalog.discover(Path("/nonexistent-project"), user_config_dir=Path("/nonexistent-config"),
                                    builtin_dir=builtin_skills_dir())
    assert catalog.warnings == ()
    assert catalog.names() == ["commit", "fix-tests", "review"]
    for skill in catalog:
        assert skill.source == "builtin"
        assert 50 < len(skill.description) <= 1024
        body, _ = catalog.load(skill.name)
        assert len(body) > 1000
    commit_body = catalog.load("commit")[0]
    for must in ("git status", "git diff --staged", "git diff", "secret", "push"):
        assert must in commit_body.lower()
    assert "weaken an assertion" in catalog.load("fix-tests")[0].lower()
    assert "file:line" in catalog.get("review").description  # type: ignore[union-attr]
