"""Finding custom command files: places, names, front matter, problems."""

from __future__ import annotations

from pathlib import Path

from loom_engine.commands.catalog import CommandCatalog


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _discover(root: Path, config: Path, reserved: tuple[str, ...] = ()) -> CommandCatalog:
    return CommandCatalog.discover(root, user_config_dir=config, reserved=reserved)


def test_places_names_and_namespaces(tmp_path: Path) -> None:
    root, config = tmp_path / "repo", tmp_path / "config"
    _write(config / "commands" / "hello.md", "Say hello.\n")
    _write(root / ".claude" / "commands" / "git" / "commit.md", "Commit.\n")
    _write(root / ".loom" / "commands" / "fix.md", "Fix $ARGUMENTS.\n")
    _write(root / ".loom" / "commands" / "notes.txt", "not a command\n")
    catalog = _discover(root, config)
    assert sorted(c.name for c in catalog) == ["fix", "git:commit", "hello"]
    assert catalog.get("git:commit").source == "project" and catalog.get("hello").source == "user"
    assert catalog.get("FIX") is not None  # typed in any case
    assert catalog.warnings == ()


def test_the_project_wins_over_the_user_and_loom_over_claude(tmp_path: Path) -> None:
    root, config = tmp_path / "repo", tmp_path / "config"
    _write(config / "commands" / "fix.md", "user\n")
    _write(root / ".claude" / "commands" / "fix.md", "claude\n")
    _write(root / ".loom" / "commands" / "fix.md", "loom\n")
    assert _discover(root, config).get("fix").read_body() == "loom"


def test_front_matter_as_claude_code_writes_it(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _write(root / ".claude" / "commands" / "review-pr.md",
           "---\ndescription: Review a pull request\nargument-hint: [pr-number] [priority]\n"
           "allowed-tools: Bash(git diff:*), Read, Grep\nmodel: claude-haiku-4-5\n---\nReview PR #$0.\n")
    _write(root / ".claude" / "commands" / "one.md", "---\nargument-hint: [message]\n---\nCommit: $ARGUMENTS\n")
    catalog = _discover(root, tmp_path / "none")
    review = catalog.get("review-pr")
    assert review.description == "Review a pull request"
    assert review.argument_hint == "[pr-number] [priority]"  # not valid YAML, read as written
    assert review.allowed_tools == ("bash(git diff:*)", "read_file", "grep")  # Claude Code's names translated
    assert review.model == "claude-haiku-4-5"
    assert catalog.get("one").argument_hint == "[message]"  # a YAML list, read as written
    assert review.read_body() == "Review PR #$0."


def test_without_front_matter_the_first_line_describes_it(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _write(root / ".loom" / "commands" / "plain.md", "\n# Explain the build\n\nThen more.\n")
    assert _discover(root, tmp_path / "none").get("plain").description == "Explain the build"


def test_broken_files_are_reported_and_skipped(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _write(root / ".loom" / "commands" / "open.md", "---\ndescription: never closed\n")
    _write(root / ".loom" / "commands" / "empty.md", "---\ndescription: nothing\n---\n\n")
    _write(root / ".loom" / "commands" / "bad name!.md", "x\n")
    _write(root / ".loom" / "commands" / "good.md", "ok\n")
    catalog = _discover(root, tmp_path / "none")
    assert [c.name for c in catalog] == ["good"]
    text = "\n".join(catalog.warnings)
    assert "open.md: skipped: the front matter is not closed" in text
    assert "empty.md: skipped: no prompt" in text
    assert "bad name!.md: skipped" in text


def test_a_built_in_name_wins_and_the_file_is_warned_about(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _write(root / ".loom" / "commands" / "clear.md", "Clear the cache.\n")
    _write(root / ".loom" / "commands" / "mcp__x.md", "no\n")
    catalog = _discover(root, tmp_path / "none", reserved=("clear",))
    assert len(catalog) == 0
    [clear, mcp] = sorted(catalog.warnings)
    assert "/clear is a built-in command, which wins" in clear and "/mcp__x is a built-in command" in mcp


def test_an_unusable_allowed_tools_rule_is_left_out_with_a_warning(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _write(root / ".loom" / "commands" / "x.md", "---\nallowed-tools: Read, Bash(\n---\nDo it.\n")
    catalog = _discover(root, tmp_path / "none")
    assert catalog.get("x").allowed_tools == ("read_file",)
    assert any("allowed-tools" in w and "left out" in w for w in catalog.warnings)
