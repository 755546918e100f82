"""Attacks on the bash read-only allow list (issue 9, items 3, 4 and 5), run for real.

Item 3: `git status`/`git diff` read the repository's config, which can name programs.
Item 4: a program planted in a workspace folder on PATH shadows `ls`.
Item 5: read-only commands reaching outside the workspace through tildes, /proc, a
logical `cd`, globs and symlink-following recursion.

Each attack keeps a marker or secret outside the workspace; the test shows the check
asks (or denies), or that the command as the bash tool runs it leaves no marker.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from builtin_tools.apply_patch import ApplyPatchInput, ApplyPatchTool
from builtin_tools.bash import BashInput, BashTool
from loom_engine.execution import CancelToken
from loom_engine.permissions.git_config import git_environment, repository_doubt
from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.targets import CommandRun, FileAccess
from loom_engine.tools.base import ToolContext, ToolSessionState
from loom_engine.workspace import Workspace

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")


@dataclass
class Lab:
    root: Path
    outside: Path

    @property
    def marker(self) -> Path:
        return self.outside / "PWNED"

    def pm(self, mode: str = "default", allow: tuple[str, ...] = ()) -> PermissionManager:
        layers = [RuleLayer("cli", allow=allow)] if allow else []
        return PermissionManager(Workspace.at(self.root), mode=mode, layers=layers)  # type: ignore[arg-type]

    def check(self, command: str, mode: str = "default", allow: tuple[str, ...] = (),
              cwd: Path | None = None) -> str:
        decision = self.pm(mode, allow).check(
            "bash", CommandRun(command, str(cwd or self.root)), is_read_only=False)
        return decision.behavior

    async def run(self, command: str) -> str:
        ctx = ToolContext(workspace=Workspace.at(self.root), cancel=CancelToken(),
                          state=ToolSessionState())
        out = await BashTool().run(BashInput(command=command, timeout=30, description=None), ctx)
        return out.content


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s3cret\n")
    (root / "README.md").write_text("# hi\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('foo')\n")
    return Lab(Path(os.path.realpath(root)), Path(os.path.realpath(outside)))


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null"})


def make_repo(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", ".")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    (path / "f.txt").write_text("a\n")
    (path / ".gitattributes").write_text("*.txt filter=ev diff=dv\n")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "init")


def stale_stat(path: Path) -> None:
    """Make the index's stat data of ``path`` surely stale, whatever the clock: an mtime an
    hour before the recorded one differs from it and is older than the index, so git
    compares the content, finds it unchanged and writes the refreshed index (which is what
    runs ``post-index-change``). Touching it "now" could land within the index's own
    timestamp on a fast machine, and git would leave the index alone."""
    recorded = path.stat()
    past = recorded.st_mtime_ns - 3600 * 10**9
    os.utime(path, ns=(past, past))


def payload(lab: Lab) -> str:
    return f"sh -c 'touch {lab.marker}; cat'"


# -- item 3: git runs programs named in the repository's config ------------------------


@needs_git
async def test_bare_repository_layout_with_fsmonitor_runs_nothing(lab: Lab) -> None:
    evil = lab.root / "evil"
    evil.mkdir()
    git(evil, "init", "-q", "--bare", ".")
    git(evil, "config", "core.bare", "false")
    git(evil, "config", "core.worktree", str(evil))
    git(evil, "config", "core.fsmonitor", f"touch {lab.marker}")
    # The layout is real: plain git runs the payload.
    subprocess.run(["git", "status"], cwd=evil, capture_output=True, check=False)
    assert lab.marker.exists()
    lab.marker.unlink()
    for allow in ((), ("bash(git status:*)",)):
        assert lab.check("cd evil && git status", allow=allow) in ("allow", "ask")
        out = await lab.run("cd evil && git status")
        assert not lab.marker.exists(), out
        assert "bare repository" in out


@needs_git
async def test_fsmonitor_in_a_shipped_repository_config_is_turned_off(lab: Lab) -> None:
    make_repo(lab.root / "repo")
    git(lab.root / "repo", "config", "core.fsmonitor", f"touch {lab.marker}")
    assert lab.check("cd repo && git status") == "allow"  # neutralised, so still read-only
    out = await lab.run("cd repo && git status && git diff")
    assert "On branch" in out
    assert not lab.marker.exists()


@needs_git
async def test_post_index_change_hook_does_not_run_on_status_or_diff(lab: Lab) -> None:
    repo = lab.root / "repo"
    make_repo(repo)
    hook = repo / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {lab.marker}\n")
    hook.chmod(0o755)
    stale_stat(repo / "f.txt")  # status and diff would refresh the index and write it
    assert lab.check("cd repo && git status && git diff") == "allow"
    out = await lab.run("cd repo && git status && git diff")
    assert "On branch" in out
    assert not lab.marker.exists()


@needs_git
@pytest.mark.parametrize("key, command", [
    ("filter.ev.clean", "git status"),
    ("filter.ev.process", "git status"),
    ("diff.dv.textconv", "git log -p"),
    ("diff.dv.textconv", "git show HEAD"),
    ("diff.dv.command", "git diff"),
    ("diff.external", "git diff"),
    ("core.sshCommand", "git log"),
    ("gpg.program", "git log --show-signature"),
    ("core.pager", "git log"),
    ("alias.status", "git status"),
])
@pytest.mark.parametrize("allow", [(), ("bash(git status:*)", "bash(git diff:*)",
                                        "bash(git log:*)", "bash(git show:*)")])
def test_program_naming_keys_in_the_repository_config_ask(
        lab: Lab, key: str, command: str, allow: tuple[str, ...]) -> None:
    repo = lab.root / "repo"
    make_repo(repo)
    git(repo, "config", key, payload(lab))
    os.utime(repo / "f.txt")
    (repo / "f.txt").write_text("a\nb\n")
    for mode in ("default", "plan", "accept-edits"):
        assert lab.check(f"cd repo && {command}", mode, allow) in ("ask", "deny"), (key, mode)
        assert lab.check(command, mode, allow, cwd=repo) == "ask", (key, mode)
    assert not lab.marker.exists()


@needs_git
def test_included_config_is_checked_too(lab: Lab) -> None:
    repo = lab.root / "repo"
    make_repo(repo)
    (lab.root / "inc.cfg").write_text(f"[filter \"ev\"]\n\tclean = {payload(lab)}\n")
    git(repo, "config", "include.path", str(lab.root / "inc.cfg"))
    assert lab.check("git status", cwd=repo) == "ask"


@needs_git
def test_a_submodule_config_is_checked(lab: Lab, tmp_path: Path) -> None:
    sub_src = tmp_path / "subsrc"
    make_repo(sub_src)
    repo = lab.root / "repo"
    make_repo(repo)
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub_src), "s")
    git(repo, "commit", "-q", "-m", "sub")
    assert lab.check("git status", cwd=repo) == "allow"
    git(repo / "s", "config", "filter.ev.clean", payload(lab))
    decision = lab.pm().check("bash", CommandRun("git status", str(repo)), is_read_only=False)
    assert decision.behavior == "ask"
    assert "submodule s" in decision.reason and "filter.ev.clean" in decision.reason


@needs_git
def test_plain_repositories_still_run_read_only_git(lab: Lab) -> None:
    make_repo(lab.root / "repo")
    for command in ("git status", "git diff", "git log --oneline", "git show HEAD",
                    "git status && git diff | head"):
        assert lab.check(command, cwd=lab.root / "repo") == "allow", command
    assert lab.check("git status") == "allow"  # not a repository at all


def test_git_environment_keeps_what_the_user_set() -> None:
    env = git_environment({"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "user.name",
                           "GIT_CONFIG_VALUE_0": "me", "PATH": "/bin"})
    assert env["GIT_CONFIG_KEY_0"] == "user.name" and env["GIT_CONFIG_VALUE_0"] == "me"
    assert env["GIT_CONFIG_COUNT"] == "4"
    assert {env[f"GIT_CONFIG_KEY_{n}"]: env[f"GIT_CONFIG_VALUE_{n}"] for n in (1, 2, 3)} == {
        "core.fsmonitor": "false", "safe.bareRepository": "explicit", "core.hooksPath": os.devnull}
    assert env["GIT_OPTIONAL_LOCKS"] == "0" and env["PATH"] == "/bin"
    assert git_environment({"GIT_CONFIG_COUNT": "junk"})["GIT_CONFIG_COUNT"] == "junk"


@needs_git
def test_a_repository_that_cannot_be_read_asks(lab: Lab) -> None:
    assert GIT is not None
    assert "does not exist" not in repository_doubt(GIT, lab.root)
    assert lab.check("cd nowhere && git status") == "ask"


# -- item 4: PATH hijack -------------------------------------------------------------


def executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


async def test_path_hijack_through_apply_patch(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = lab.root / ".venv" / "bin"
    executable(bin_dir / "pip", "#!/bin/sh\necho pip\n")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert lab.check("ls") == "allow"  # nothing shadows ls yet
    tool = ApplyPatchTool()
    ctx = ToolContext(workspace=Workspace.at(lab.root), cancel=CancelToken(),
                      state=ToolSessionState())
    patch = ApplyPatchInput(patch=(
        "*** Begin Patch\n*** Update File: .venv/bin/pip\n*** Move to: .venv/bin/ls\n"
        f"@@\n-echo pip\n+touch {lab.marker}\n*** End Patch\n"))
    target = tool.permission_target(patch, ctx)
    for mode in ("default", "accept-edits"):
        decision = lab.pm(mode, allow=("edit(**)",)).check("apply_patch", target, is_read_only=False)
        assert decision.behavior == "ask", mode
        assert "folder on PATH" in decision.reason
    assert lab.pm("plan").check("apply_patch", target, is_read_only=False).behavior == "deny"
    assert lab.pm("bypass").check("apply_patch", target, is_read_only=False).behavior == "allow"
    # Say the user let it through: the planted `ls` is no longer auto-allowed.
    await tool.run(patch, ctx)
    assert (bin_dir / "ls").exists() and os.access(bin_dir / "ls", os.X_OK)
    for mode in ("default", "plan", "accept-edits"):
        for command in ("ls", "ls src", "timeout 5 ls", "cat README.md | ls"):
            assert lab.check(command, mode, allow=("bash(ls:*)",)) == "ask", (command, mode)
    assert lab.check("cat README.md") == "allow"
    assert not lab.marker.exists()


def test_hijack_through_a_relative_path_entry(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    executable(lab.root / "src" / "cat", "#!/bin/sh\ntouch /tmp/x\n")
    monkeypatch.setenv("PATH", f".{os.pathsep}{os.environ['PATH']}")
    assert lab.check("cat README.md") == "allow"
    assert lab.check("cd src && cat app.py") == "ask"
    assert lab.check("cat app.py", cwd=lab.root / "src") == "ask"


def test_redirecting_into_a_folder_on_path_asks(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = lab.root / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert lab.check("echo x > bin/ls", "accept-edits") == "ask"
    assert lab.check("echo x > src/notes", "accept-edits") == "allow"
    assert lab.check("echo x > bin/ls", "bypass") == "allow"


# -- item 5: reading outside the workspace -------------------------------------------


@pytest.fixture
def links(lab: Lab) -> Lab:
    (lab.root / "link_out").symlink_to(lab.outside, target_is_directory=True)
    (lab.root / "a" / "b" / "c").mkdir(parents=True)
    (lab.root / "deep").symlink_to(lab.root / "a" / "b" / "c", target_is_directory=True)
    return lab


ESCAPES = [
    "cat ~-/secret.txt", "cat ~+/../outside/secret.txt", "cat ~-", "ls ~+1", "cat ~root/x",
    "cat /proc/self/cwd/../outside/secret.txt", "cat /proc/self/root/etc/hostname",
    "cat /dev/fd/3", "cat /proc/thread-self/cwd/x",
    "cd deep/../.. && cat outside/secret.txt", "cd deep/../.. && ls outside",
    "cat */secret.txt", "cat *", "cat link_*/*", "echo link_out/*", "head -n1 */*",
    "grep -R x .", "grep -R s3cret", "grep -rR s3cret src ..", "find -L .", "find . -follow",
    "ls -RL .", "ls -LR", "du -L -a .", "stat -L *", "wc -c *", "rg -L s3cret", "rg --follow x",
    "diff -r src .",
]


@pytest.mark.parametrize("command", ESCAPES)
@pytest.mark.parametrize("mode", ["default", "plan"])
def test_reading_outside_asks(links: Lab, command: str, mode: str,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLDPWD", str(links.outside))
    monkeypatch.chdir(links.root / "a" / "b")  # Loom's own /proc/self/cwd is elsewhere
    assert links.check(command, mode) in ("ask", "deny"), command


async def test_the_escapes_are_real(links: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLDPWD", str(links.outside))
    for command in ("cat */secret.txt", "cat ~-/secret.txt",
                    "cd deep/../.. && cat outside/secret.txt", "grep -R s3cret .",
                    "cat /proc/self/cwd/../outside/secret.txt"):
        assert "s3cret" in await links.run(command), command


def test_legit_commands_still_run_without_asking(links: Lab) -> None:
    (links.root / "src" / "inner").symlink_to(links.root / "a", target_is_directory=True)
    for command in ("ls", "cat README.md", "grep -r foo src", "grep -R foo src", "cat src/*.py",
                    "wc -l src/*.py", "find -L src", "du -L -a src", "ls -RL src", "echo *",
                    "cd deep && ls", "cd deep/.. && ls", "cat ~+/README.md", "ls nothing*",
                    "cd src && cat *.py", "stat -L README.md src", "rg -L foo src"):
        assert links.check(command) == "allow", command
        if not command.startswith("cd"):  # plan mode refuses `cd` itself, as before
            assert links.check(command, "plan") == "allow", command


def test_an_inward_symlink_loop_is_walked_once(links: Lab) -> None:
    (links.root / "src" / "loop").symlink_to(links.root / "src", target_is_directory=True)
    assert links.check("grep -R foo src") == "allow"
    (links.root / "a" / "b" / "c" / "out").symlink_to(links.outside)
    assert links.check("grep -R foo src") == "allow"  # src does not reach a/b/c
    (links.root / "src" / "to_c").symlink_to(links.root / "a" / "b" / "c")
    assert links.check("grep -R foo src") == "ask"  # now it does, and c leads out
    assert links.check("grep -r foo src") == "allow"  # -r does not follow inner links


def test_a_file_named_like_an_option_is_checked_after_expansion(links: Lab) -> None:
    (links.root / "-delete").write_text("")
    assert links.check("find . *") == "ask"


# -- item 9: protected paths in another case or Unicode form -------------------------


@pytest.mark.parametrize("path", [
    ".LOOM/settings.local.toml", ".Loom/Settings.TOML", ".GIT/hooks/pre-commit", ".Git/config",
    "sub/.GIT/config", ".g\u200cit/hooks/pre-commit", ".loom/SETTINGS.local.toml",
    "\ufeff.git/config",
])
@pytest.mark.parametrize("tool", ["write_file", "edit_file", "apply_patch"])
def test_protected_paths_in_any_case_ask(lab: Lab, path: str, tool: str) -> None:
    for mode in ("accept-edits", "bypass"):
        decision = lab.pm(mode, allow=("edit(**)",)).check(
            tool, FileAccess((path,), write=True), is_read_only=False)
        assert decision.behavior == "ask", (path, mode)
    assert lab.check(f"echo x > '{path}'", "accept-edits") == "ask"


def test_deny_rules_match_any_case_and_normal_form(lab: Lab) -> None:
    pm = PermissionManager(Workspace.at(lab.root), layers=[RuleLayer("cli", deny=(
        "read(.env)", "read(caf\u00e9/**)"))])
    for path in (".ENV", ".Env", "cafe\u0301/x", "CAF\u00c9/x"):
        decision = pm.check("read_file", FileAccess((path,), write=False), is_read_only=True)
        assert decision.behavior == "deny", path
    assert pm.check("read_file", FileAccess(("env",), write=False),
                    is_read_only=True).behavior == "allow"


def test_allow_rules_stay_exact(lab: Lab) -> None:
    pm = lab.pm("default", allow=("edit(src/**)",))
    assert pm.check("edit_file", FileAccess(("src/x.py",), write=True),
                    is_read_only=False).behavior == "allow"
    assert pm.check("edit_file", FileAccess(("SRC/x.py",), write=True),
                    is_read_only=False).behavior == "ask"


@pytest.mark.parametrize("command", [
    "echo x > ~-/f", "echo x >> ~+/../outside/f", "cat < ~-/secret.txt",
    "echo x > /proc/self/cwd/../outside/f", "wc -l < /proc/self/cwd/../outside/secret.txt",
    "echo x > /dev/fd/5",
])
def test_redirections_through_tildes_and_proc(links: Lab, command: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLDPWD", str(links.outside))
    monkeypatch.chdir(links.root / "a" / "b")
    assert links.check(command, "accept-edits") in ("ask", "deny"), command
    assert links.check(command, "plan") in ("ask", "deny"), command


@needs_git
async def test_a_hooks_path_set_by_husky_still_runs_no_hook(lab: Lab) -> None:
    repo = lab.root / "repo"
    make_repo(repo)
    executable(repo / ".husky" / "post-index-change", f"#!/bin/sh\ntouch {lab.marker}\n")
    git(repo, "config", "core.hooksPath", ".husky")
    assert lab.check("git status", cwd=repo) == "allow"
    assert lab.check("git diff", cwd=repo) == "allow"
    stale_stat(repo / "f.txt")  # `git diff` refreshes the index and writes it
    out = await lab.run("cd repo && git status && git diff && git log -p && git show")
    assert "On branch" in out
    assert not lab.marker.exists()
