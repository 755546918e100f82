"""Issue 19 §2 item 6: a project's `.claude/settings.json` permissions count.

Claude Code's own project files (`.claude/settings.json`, `.claude/settings.local.json`)
carry `permissions` in its rule syntax. Their deny and ask rules apply at once (they only
narrow); their allow rules, a looser `defaultMode` and `additionalDirectories` only once
the workspace is trusted, in the same trust question as `.loom/` settings. The runs are
the real `loom run` against the fake LLM server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env

TOKEN = "tok-0f1e2d3c4b5a69788796a5b4c3d2e1f0"
IGNORED_PREFIX = "loom: ignored from the project's settings (workspace not trusted; --trust-project to use): "
CLAUDE_FILES = [".claude/settings.json", ".claude/settings.local.json"]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _claude(repo: Path, file: str, permissions: dict[str, object]) -> None:
    _write(repo / file, json.dumps({"permissions": permissions}, indent=2))


@pytest.fixture
def repo(workspace: Path) -> Path:
    _write(workspace / "secrets" / "token.txt", TOKEN + "\n")
    return workspace


def _last_result(fake_llm: FakeLLMServer) -> str:
    return json.dumps(fake_llm.requests[-1].messages[-1])


@pytest.mark.parametrize("file", CLAUDE_FILES)
@pytest.mark.parametrize("call", [
    ("read_file", {"path": "secrets/token.txt"}),
    ("grep", {"pattern": "tok-", "path": "secrets/token.txt", "output_mode": "content"}),
    ("bash", {"command": "cat secrets/token.txt"}),
], ids=["read_file", "grep", "bash-cat"])
def test_a_deny_rule_keeps_the_secret_out_in_every_mode(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer,
                                                        file: str, call: tuple[str, dict[str, str]]) -> None:
    """The repro: `Read(./secrets/**)` denied, yet `read_file secrets/token.txt` returned
    the token. Bypass mode too: deny rules hold there."""
    _claude(repo, file, {"deny": ["Read(./secrets/**)"]})
    fake_llm.enqueue(Reply.tool(*call), Reply.text("done"))
    done = loom(["run", "show me the token", "--permission-mode", "bypass"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    result = _last_result(fake_llm)
    assert TOKEN not in result
    assert f"read(./secrets/**) from {file}" in result
    assert "loom: ignored" not in done.stderr  # a deny rule needs no trust


def test_loom_config_lists_the_rules_with_their_source(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    _claude(repo, ".claude/settings.json", {"deny": ["Read(./secrets/**)"], "ask": ["Bash(git push:*)"],
                                            "allow": ["Bash(npm run test:*)"]})
    done = loom(["config"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    rules = lines[lines.index("permission rules (deny beats ask beats allow):") + 1:]
    assert rules[:3] == [
        f"  deny  {'read(./secrets/**)':<40} (.claude/settings.json)",
        f"  ask   {'bash(git push:*)':<40} (.claude/settings.json)",
        f"  allow {'bash(npm run test:*)':<40} (.claude/settings.json, ignored (workspace not trusted))",
    ]
    assert "  none" not in rules
    assert any(line.strip().startswith("found") and line.endswith(".claude/settings.json  (in the project: "
                                                                  "widening settings need trust)")
               for line in lines)


@pytest.mark.parametrize("file", CLAUDE_FILES)
def test_an_allow_rule_needs_trust(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer, file: str) -> None:
    _claude(repo, file, {"allow": ["Bash(touch made.txt)"]})
    env = loom_env(tmp_path, fake_llm)
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch made.txt"}), Reply.text("done"))
    done = loom(["run", "make it"], repo, env)
    assert done.returncode == 0, done.stderr
    assert not (repo / "made.txt").exists()
    assert IGNORED_PREFIX + f'{file}: allow rule "bash(touch made.txt)"' in done.stderr.splitlines()
    # The control: trusted, the same rule lets the command run.
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch made.txt"}), Reply.text("done"))
    trusted = loom(["run", "make it", "--trust-project"], repo, env)
    assert trusted.returncode == 0, trusted.stderr
    assert (repo / "made.txt").exists()


def test_a_looser_default_mode_needs_trust_a_stricter_one_applies(repo: Path, tmp_path: Path,
                                                                  fake_llm: FakeLLMServer) -> None:
    env = loom_env(tmp_path, fake_llm)
    _claude(repo, ".claude/settings.json", {"defaultMode": "acceptEdits"})
    fake_llm.enqueue(Reply.tool("write_file", {"path": "new.txt", "content": "x"}), Reply.text("done"))
    done = loom(["run", "write"], repo, env)
    assert done.returncode == 0, done.stderr
    assert not (repo / "new.txt").exists()
    assert IGNORED_PREFIX + '.claude/settings.json: permission_mode = "accept-edits"' in done.stderr.splitlines()
    _claude(repo, ".claude/settings.json", {"defaultMode": "plan"})
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch planned.txt"}), Reply.text("done"))
    done = loom(["run", "run it", "--allow", "bash(touch planned.txt)"], repo, env)
    assert done.returncode == 0, done.stderr
    assert not (repo / "planned.txt").exists()
    assert "plan mode" in _last_result(fake_llm)


def test_additional_directories_need_trust(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    outside = tmp_path / "docs"
    _write(outside / "guide.md", "the outside guide\n")
    _claude(repo, ".claude/settings.json", {"additionalDirectories": ["../docs"]})
    env = loom_env(tmp_path, fake_llm)
    fake_llm.enqueue(Reply.tool("read_file", {"path": str(outside / "guide.md")}), Reply.text("done"))
    done = loom(["run", "read the guide"], repo, env)
    assert done.returncode == 0, done.stderr
    assert "the outside guide" not in _last_result(fake_llm)
    assert IGNORED_PREFIX + f'.claude/settings.json: additional directory "{outside}"' in done.stderr.splitlines()
    fake_llm.enqueue(Reply.tool("read_file", {"path": str(outside / "guide.md")}), Reply.text("done"))
    trusted = loom(["run", "read the guide", "--trust-project"], repo, env)
    assert trusted.returncode == 0, trusted.stderr
    assert "the outside guide" in _last_result(fake_llm)


def test_a_deny_rule_loom_cannot_spell_exactly_asks_instead(repo: Path, tmp_path: Path,
                                                            fake_llm: FakeLLMServer) -> None:
    """`Bash(git * --force)` (a wildcard inside the command) has no exact Loom rule: it
    becomes an ask rule for every `git` command (fail closed), and one line says so."""
    _claude(repo, ".claude/settings.json", {"deny": ["Bash(git * --force)"]})
    fake_llm.enqueue(Reply.tool("bash", {"command": "git status --short"}), Reply.text("done"))
    done = loom(["run", "status", "--permission-mode", "bypass"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert "bash(git:*) from .claude/settings.json" in _last_result(fake_llm)
    assert ("loom: warning: .claude/settings.json: deny rule 'Bash(git * --force)': a '*' inside a command "
            "cannot be matched exactly; every call of bash(git:*) asks instead") in done.stderr.splitlines()


def test_a_broken_claude_file_is_one_line_and_the_run_goes_on(repo: Path, tmp_path: Path,
                                                              fake_llm: FakeLLMServer) -> None:
    _write(repo / ".claude" / "settings.json", '{"permissions": {"deny": ["Read(./secrets/**)"]')
    fake_llm.enqueue(Reply.text("hello"))
    done = loom(["run", "hi"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hello"
    problems = [line for line in done.stderr.splitlines() if "not valid JSON" in line]
    assert len(problems) == 1 and problems[0].startswith("loom: warning: ") and "skipped" in problems[0]


@pytest.mark.parametrize("file", CLAUDE_FILES)
def test_an_edit_of_the_claude_files_asks_even_in_accept_edits(repo: Path, tmp_path: Path,
                                                               fake_llm: FakeLLMServer, file: str) -> None:
    """They hold deny rules now: a model that rewrote them would drop those for the next
    session, as with `.loom/settings.toml` (whose edits always ask)."""
    _claude(repo, file, {"deny": ["Read(./secrets/**)"]})
    before = (repo / file).read_text()
    fake_llm.enqueue(Reply.tool("write_file", {"path": file, "content": "{}"}), Reply.text("done"))
    done = loom(["run", "tidy the settings", "--permission-mode", "accept-edits"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert (repo / file).read_text() == before
    assert f"edit({file}) from defaults" in _last_result(fake_llm)
