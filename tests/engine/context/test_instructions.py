"""Which instruction files are read, in what order, with their @imports and rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_engine.context.assembler import ContextAssembler
from loom_engine.context.instructions import (
    MAX_IMPORT_BYTES,
    MAX_IMPORT_HOPS,
    PathRules,
    Rule,
    UserFolders,
    expand_imports,
    find_instructions,
    glob_matches,
    import_mentions,
    read_rules,
)

NO_USER = UserFolders(loom=None, claude=None)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_files_are_read_from_the_root_down_to_the_cwd(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root / "AGENTS.md", "root agents")
    write(root / "CLAUDE.md", "root claude")
    write(root / "pkg" / "AGENTS.md", "pkg agents")
    write(root / "pkg" / "sub" / "CLAUDE.md", "sub claude")
    write(root / "pkg" / "sub" / "CLAUDE.local.md", "sub local")
    write(root / "other" / "AGENTS.md", "a sibling folder: not on the way to the cwd")
    files, warnings = find_instructions(root, root / "pkg" / "sub", user_folders=NO_USER)
    assert [f.text for f in files] == ["root agents", "root claude", "pkg agents", "sub claude", "sub local"]
    assert {f.kind for f in files} == {"project"} and warnings == []


def test_a_cwd_outside_the_workspace_reads_only_the_root(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root / "AGENTS.md", "root")
    write(tmp_path / "elsewhere" / "AGENTS.md", "not the workspace's")
    files, _ = find_instructions(root, tmp_path / "elsewhere", user_folders=NO_USER)
    assert [f.text for f in files] == ["root"]


def test_user_files_come_first_claude_code_then_loom(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root / "CLAUDE.md", "project")
    claude = tmp_path / "home" / ".claude"
    write(claude / "CLAUDE.md", "claude user")
    write(tmp_path / "config" / "LOOM.md", "loom user")
    files, _ = find_instructions(root, root, user_folders=UserFolders(loom=tmp_path / "config", claude=claude))
    assert [(f.kind, f.text) for f in files] == [("user", "claude user"), ("user", "loom user"),
                                                 ("project", "project")]


def test_one_file_under_two_names_is_read_once(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root / "AGENTS.md", "shared")
    (root / "CLAUDE.md").symlink_to("AGENTS.md")
    files, _ = find_instructions(root, root, user_folders=NO_USER)
    assert [f.path.name for f in files] == ["AGENTS.md"]


def test_claude_local_md_is_read_after_the_shared_file(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root / "CLAUDE.local.md", "my own notes")
    write(root / "CLAUDE.md", "team notes")
    files, _ = find_instructions(root, root, user_folders=NO_USER)
    assert [f.text for f in files] == ["team notes", "my own notes"]


# --- imports ---------------------------------------------------------------------------------

def test_an_import_is_relative_to_the_importing_file(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root / "docs" / "style.md", "Use tabs.")
    write(root / "docs" / "nested" / "more.md", "See @../style.md for style.")
    write(root / "CLAUDE.md", "Read @docs/nested/more.md first.")
    files, warnings = find_instructions(root, root, user_folders=NO_USER)
    text = files[0].text
    assert text.startswith("Read @docs/nested/more.md first.")
    assert "See @../style.md for style." in text and "Use tabs." in text
    assert text.index("See @../style.md") < text.index("Use tabs.")
    assert warnings == []


def test_imports_stop_after_five_hops(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for index in range(MAX_IMPORT_HOPS + 2):
        write(root / f"f{index}.md", f"level {index} @f{index + 1}.md")
    write(root / f"f{MAX_IMPORT_HOPS + 2}.md", "too deep")
    write(root / "CLAUDE.md", "start @f0.md")
    files, warnings = find_instructions(root, root, user_folders=NO_USER)
    text = files[0].text
    assert f"level {MAX_IMPORT_HOPS - 1}" in text
    assert f"level {MAX_IMPORT_HOPS}" not in text
    assert any(f"at most {MAX_IMPORT_HOPS} levels deep" in w for w in warnings)


def test_a_big_import_is_cut_with_a_warning(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root / "big.md", "x" * (MAX_IMPORT_BYTES + 500) + "END")
    write(root / "CLAUDE.md", "@big.md")
    files, warnings = find_instructions(root, root, user_folders=NO_USER)
    assert "END" not in files[0].text and "x" * 1000 in files[0].text
    assert any("imported only its first" in w for w in warnings)


def test_an_import_cycle_stops(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root / "a.md", "A imports @b.md")
    write(root / "b.md", "B imports @a.md")
    write(root / "CLAUDE.md", "start @a.md")
    files, warnings = find_instructions(root, root, user_folders=NO_USER)
    assert files[0].text.count("A imports") == 1 and files[0].text.count("B imports") == 1
    assert warnings == []


def test_an_import_outside_the_workspace_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "a" / "b" / "repo"
    write(tmp_path / "a" / "secret.md", "SECRET-TEXT")
    write(tmp_path / "a" / "etc" / "passwd", "root:x:0:0")  # what @../../etc/passwd reaches from the repo
    (root / "link.md").parent.mkdir(parents=True, exist_ok=True)
    (root / "link.md").symlink_to(tmp_path / "a" / "secret.md")
    write(root / "CLAUDE.md", "@../../etc/passwd @../../secret.md @link.md @/etc/passwd @~/.ssh/id_rsa")
    files, warnings = find_instructions(root, root, user_folders=NO_USER)
    assert "SECRET-TEXT" not in files[0].text and "root:" not in files[0].text
    refused = [w for w in warnings if "outside the workspace" in w]
    assert any("@../../secret.md" in w for w in refused) and any("@link.md" in w for w in refused)
    assert any("@../../etc/passwd" in w for w in refused)
    if Path("/etc/passwd").is_file():
        assert any("@/etc/passwd" in w for w in refused)


def test_a_user_file_may_import_from_the_user_folder(tmp_path: Path) -> None:
    claude = tmp_path / "home" / ".claude"
    write(claude / "shared.md", "shared user text")
    write(claude / "CLAUDE.md", "@shared.md")
    root = tmp_path / "repo"
    root.mkdir()
    files, warnings = find_instructions(root, root, user_folders=UserFolders(loom=None, claude=claude))
    assert "shared user text" in files[0].text and warnings == []


def test_mentions_in_code_and_addresses_are_not_imports() -> None:
    text = "mail me@example.com\n```\n@inside.md\n```\nrun `@quoted.md` then @real.md."
    assert import_mentions(text) == ["real.md"]


def test_a_mention_of_no_file_stays_text(tmp_path: Path) -> None:
    warnings: list[str] = []
    path = write(tmp_path / "CLAUDE.md", "ping @someone about it")
    assert expand_imports("ping @someone about it", path, allowed=[tmp_path], warnings=warnings) == \
        "ping @someone about it"
    assert warnings == []


# --- rules -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("pattern", "path", "hit"), [
    ("src/**/*.py", "src/app.py", True),
    ("src/**/*.py", "src/a/b/app.py", True),
    ("src/**/*.py", "lib/app.py", False),
    ("*.ts", "web/deep/x.ts", True),
    ("src/*.py", "src/a/app.py", False),
    ("src/**/*.{ts,tsx}", "src/ui/x.tsx", True),
])
def test_rule_globs(pattern: str, path: str, hit: bool) -> None:
    assert glob_matches(pattern, path) is hit


def test_rules_with_paths_are_given_once_when_a_matching_file_is_touched(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root / ".claude" / "rules" / "api.md", "---\npaths:\n  - \"src/api/**/*.py\"\n---\nAPI rule text")
    write(root / ".claude" / "rules" / "always.md", "Always rule text")
    warnings: list[str] = []
    rules = read_rules([root / ".claude" / "rules"], allowed=[root], warnings=warnings)
    assert [(r.path.name, r.globs) for r in rules] == [("always.md", ()), ("api.md", ("src/api/**/*.py",))]
    pending = PathRules(root, rules)
    assert pending.matching([str((root / "README.md").resolve())]) == []
    first = pending.matching([str((root / "src" / "api" / "v1" / "users.py").resolve())])
    assert [r.text for r in first] == ["API rule text"]
    assert pending.matching([str((root / "src" / "api" / "other.py").resolve())]) == []  # once


def test_the_assembler_puts_unconditional_rules_in_the_prompt_and_keeps_the_others(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root / ".claude" / "rules" / "always.md", "ALWAYS-RULE")
    write(root / ".claude" / "rules" / "py.md", "---\npaths: \"**/*.py\"\n---\nPY-RULE")
    assembler = ContextAssembler(root, tools=(), user_config_dir=tmp_path / "config", cwd=root)
    prompt = assembler.system_prompt()
    assert "ALWAYS-RULE" in prompt and "PY-RULE" not in prompt
    assert [r.text for r in assembler.path_rules.matching([str((root / "x.py").resolve())])] == ["PY-RULE"]


def test_the_assembler_reads_the_claude_user_file_and_nested_files(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root / "AGENTS.md", "ROOT-AGENTS")
    write(root / "pkg" / "CLAUDE.md", "PKG-CLAUDE")
    claude = tmp_path / "home" / ".claude"
    write(claude / "CLAUDE.md", "CLAUDE-HOME")
    write(tmp_path / "config" / "LOOM.md", "LOOM-USER")
    prompt = ContextAssembler(root, tools=(), user_config_dir=tmp_path / "config", claude_home=claude,
                              cwd=root / "pkg").system_prompt()
    order = [prompt.index(text) for text in ("CLAUDE-HOME", "LOOM-USER", "ROOT-AGENTS", "PKG-CLAUDE")]
    assert order == sorted(order)
    without = ContextAssembler(root, tools=(), user_config_dir=tmp_path / "config", claude_home=None,
                               cwd=root).system_prompt()
    assert "CLAUDE-HOME" not in without and "PKG-CLAUDE" not in without


def test_a_rule_is_a_path_rule_only_with_globs(tmp_path: Path) -> None:
    assert len(PathRules(tmp_path, [Rule(tmp_path / "a.md", (), "x"), Rule(tmp_path / "b.md", ("*.py",), "y")])) == 1


def test_a_project_file_linked_out_of_the_workspace_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(tmp_path / "private" / "key.md", "PRIVATE-KEY")
    write(root / "AGENTS.md", "fine")
    (root / "CLAUDE.md").symlink_to(tmp_path / "private" / "key.md")
    (root / ".claude" / "rules").mkdir(parents=True)
    (root / ".claude" / "rules" / "leak.md").symlink_to(tmp_path / "private" / "key.md")
    files, warnings = find_instructions(root, root, user_folders=NO_USER)
    rules = read_rules([root / ".claude" / "rules"], allowed=[root], warnings=warnings)
    assert [f.text for f in files] == ["fine"] and rules == []
    assert sum("links outside the workspace" in w for w in warnings) == 2


def test_a_user_file_may_be_a_link_to_a_dotfiles_repository(tmp_path: Path) -> None:
    claude = tmp_path / "home" / ".claude"
    claude.mkdir(parents=True)
    write(tmp_path / "dotfiles" / "CLAUDE.md", "from dotfiles")
    (claude / "CLAUDE.md").symlink_to(tmp_path / "dotfiles" / "CLAUDE.md")
    root = tmp_path / "repo"
    root.mkdir()
    files, _ = find_instructions(root, root, user_folders=UserFolders(loom=None, claude=claude))
    assert [f.text for f in files] == ["from dotfiles"]
