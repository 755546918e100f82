"""A skill whose description is over the 1,024-character limit is loaded with a warning
(its description cut for the index, with a visible cut mark), not skipped: skills
published for other agents are that long (one of Anthropic's public skills has 1,068)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from loom_engine.skills.catalog import CUT_MARK, MAX_DESCRIPTION, SkillCatalog
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env

# Written for this test: a plausible description of a client-library skill, 1,068 characters.
LONG = (
    "Build, debug and review programs that call the Weaver REST service and its Python and TypeScript "
    "client libraries. Use this skill when the code imports weaver_client or @weaver/sdk, when the user asks "
    "how to stream partial results, page through long listings, retry requests that were rate limited, or "
    "upload large files in parts, and when an error message names a Weaver status code. It explains how "
    "to choose between the synchronous and the asynchronous client, how to set timeouts and retries, how "
    "to read the request identifiers that support staff ask for, and how to keep secrets out of logs and "
    "source files. It also covers migrating from the first version of the service, where endpoints were "
    "named differently and pagination used page numbers instead of cursors. Do not use it for general "
    "networking questions, for other vendors' services, or for the Weaver web dashboard, which has its own "
    "help page; answer those from general knowledge. If unsure, look at the imports of the edited file "
    "first, then read the reference files of this skill that match the task.")


def write_skill(root: Path, name: str, description: str, body: str = "Read reference.md first.\n") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    # Folded over several lines, as such front matter usually is (YAML ">" block).
    wrapped = textwrap.indent(textwrap.fill(description, 90), "  ")
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: >-\n{wrapped}\n---\n{body}")
    return folder / "SKILL.md"


def catalog_with(tmp_path: Path, name: str, description: str, body: str = "Read reference.md first.\n"
                 ) -> tuple[SkillCatalog, Path]:
    project = tmp_path / "project"
    path = write_skill(project / ".loom" / "skills", name, description, body)
    return SkillCatalog.discover(project, user_config_dir=tmp_path / "config", builtin_dir=tmp_path / "none"), path


def test_the_text_is_1068_characters() -> None:
    assert len(LONG) == 1068


def test_a_long_description_is_loaded_cut_with_a_warning(tmp_path: Path) -> None:
    catalog, path = catalog_with(tmp_path, "weaver-api", LONG)
    skill = catalog.get("weaver-api")
    assert skill is not None, catalog.warnings
    assert catalog.warnings == (f"{path}: description is 1,068 characters, over the limit of 1,024; "
                                "loaded with the description cut to that length",)
    assert len(skill.description) <= MAX_DESCRIPTION
    assert skill.description.endswith(CUT_MARK) and CUT_MARK.strip() == "[\u2026]"
    kept = skill.description[:-len(CUT_MARK)]
    assert LONG.startswith(kept) and len(kept) > MAX_DESCRIPTION - 80
    assert LONG[len(kept)] == " "  # cut between words
    index = catalog.index_text()
    assert f"- weaver-api: {skill.description}" in index
    assert catalog.load("weaver-api")[0] == "Read reference.md first."


def test_a_description_of_exactly_the_limit_is_kept_whole(tmp_path: Path) -> None:
    catalog, _ = catalog_with(tmp_path, "at-limit", LONG[:MAX_DESCRIPTION])
    assert catalog.warnings == ()
    assert catalog.get("at-limit").description == LONG[:MAX_DESCRIPTION]  # type: ignore[union-attr]


def test_a_long_description_on_a_broken_skill_reports_only_the_skip(tmp_path: Path) -> None:
    catalog, path = catalog_with(tmp_path, "no-body", LONG, body="\n")
    assert len(catalog) == 0
    assert catalog.warnings == (f"{path}: skipped: no instructions after the front matter",)


def test_loom_skills_lists_it_and_prints_a_warning_not_a_skip(tmp_path: Path, workspace: Path,
                                                              fake_llm: FakeLLMServer) -> None:
    path = write_skill(tmp_path / "config" / "skills", "weaver-api", LONG)
    done = loom(["skills"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert "weaver-api" in done.stdout
    assert (f"loom: warning: {path}: description is 1,068 characters, over the limit of 1,024; loaded with "
            "the description cut to that length") in done.stderr
    assert "skipped" not in done.stderr


@pytest.mark.usefixtures("workspace")
def test_the_model_sees_the_cut_description_in_a_headless_run(tmp_path: Path, workspace: Path,
                                                               fake_llm: FakeLLMServer) -> None:
    write_skill(tmp_path / "config" / "skills", "weaver-api", LONG)
    fake_llm.enqueue(Reply.text("done"))
    done = loom(["run", "hello"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert "description is 1,068 characters" in done.stderr
    system = str(fake_llm.last_request.body.get("system"))
    assert "- weaver-api: Build, debug and review programs" in system
    assert CUT_MARK in system and "match the task." not in system
