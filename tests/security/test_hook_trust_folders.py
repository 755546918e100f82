"""Issue 19, item 1: a trusted project hook's trust covers the folder its code lives in.

Trust used to pin only the files a hook's command names word for word, so a change to
what the named script sources, imports or runs — or to a script named in a way the word
scan missed — ran new code without a question. Each variant below is a hook that really
runs a second file (the test sees it run); after the user trusted it, that file changes
between sessions (a `git pull`): the chat must ask again and `loom run` must skip the hook
— the changed code never runs. During a session the hook's folders are protected from
the model's file tools (edits ask, in accept-edits and bypass too), and a change that
gets in anyway (the user allowed it) keeps the hook from running.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from loom_cli.bootstrap import HOOK_FOLDERS_SOURCE, RunOptions, build_agent
from loom_cli.hook_setup import HookPlan, read_hook_plan
from loom_cli.workspace_records import WorkspaceRecords
from loom_engine.hooks.runner import hook_environment, run_hook
from loom_engine.permissions.manager import PermissionManager
from loom_engine.permissions.targets import FileAccess
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import LOOM_SCRIPT, isolate_loom
from tests.integration.hooks.helpers import agent, collect, hook_runs


@dataclass(frozen=True)
class Variant:
    """A hook whose command names one thing and whose code is also in the file a pull changes."""

    command: str
    files: dict[str, str]  # path -> content; "{log}" stands for the log every run appends to
    pulled: tuple[str, str]  # the file a pull changes (or adds), and what it holds then
    needs: str = ""  # a program the variant needs


def _mark(version: str) -> str:
    return f'echo {version} >> "{{log}}"\n'


def _py_mark(version: str) -> str:
    return f"def mark():\n    open('{{log}}', 'a').write('{version}\\n')\n"


VARIANTS = {
    "sources lib.sh": Variant(
        '"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh',
        {".claude/hooks/guard.sh": '. "$(dirname "$0")/lib.sh"\nmark\n',
         ".claude/hooks/lib.sh": "mark() { " + _mark("v1").strip() + "; }\n"},
        (".claude/hooks/lib.sh", "mark() { " + _mark("v2").strip() + "; }\n")),
    "imports a Python module": Variant(
        'python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.py',
        {".claude/hooks/guard.py": "import helper\nhelper.mark()\n", ".claude/hooks/helper.py": _py_mark("v1")},
        (".claude/hooks/helper.py", _py_mark("v2")), needs="python3"),
    "runs a make target": Variant(
        '"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh',
        {".claude/hooks/guard.sh": 'make -s -C "$(dirname "$0")" check\n',
         ".claude/hooks/Makefile": "check:\n\t@" + _mark("v1")},
        (".claude/hooks/Makefile", "check:\n\t@" + _mark("v2")), needs="make"),
    "cd dir && ./x": Variant(
        "cd .claude/hooks && ./guard.sh",
        {".claude/hooks/guard.sh": _mark("v1")},
        (".claude/hooks/guard.sh", _mark("v2"))),
    "a glob": Variant(
        'for check in "$CLAUDE_PROJECT_DIR"/tools/checks/*.sh; do sh "$check"; done',
        {"tools/checks/one.sh": _mark("v1")},
        ("tools/checks/one.sh", _mark("v2"))),
    "${CLAUDE_PROJECT_DIR:-.}": Variant(
        "${CLAUDE_PROJECT_DIR:-.}/.claude/hooks/guard.sh",
        {".claude/hooks/guard.sh": _mark("v1")},
        (".claude/hooks/guard.sh", _mark("v2"))),
    "a path in a variable": Variant(
        'GUARD="$CLAUDE_PROJECT_DIR/tools/guard.sh"; sh "$GUARD"',
        {"tools/guard.sh": _mark("v1")},
        ("tools/guard.sh", _mark("v2"))),
    "a module run by name": Variant(
        "python3 -m tools.guard",
        {"tools/guard.py": "from tools import common\ncommon.mark()\n", "tools/common.py": _py_mark("v1")},
        ("tools/common.py", _py_mark("v2")), needs="python3"),
    "a file added beside the script": Variant(
        '"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh',
        {".claude/hooks/guard.sh": 'for part in "$(dirname "$0")"/parts/*; do . "$part"; done\n',
         ".claude/hooks/parts/10-first.sh": _mark("v1")},
        (".claude/hooks/parts/20-added.sh", _mark("v2"))),
    "a command substitution": Variant(
        '"$CLAUDE_PROJECT_DIR"/$(echo .claude/hooks)/guard.sh',
        {".claude/hooks/guard.sh": _mark("v1")},
        (".claude/hooks/guard.sh", _mark("v2"))),
}


@pytest.fixture
def env(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_loom(monkeypatch, tmp_path, script=[{"text": "done"}])
    return Path(os.path.realpath(workspace))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _set_up(env: Path, log: Path, variant: Variant, event: str = "UserPromptSubmit", matcher: str = "") -> None:
    if variant.needs and shutil.which(variant.needs) is None:
        pytest.skip(f"{variant.needs} is not installed")
    # In the workspace (a sandboxed hook may write only there), outside every covered folder.
    log.parent.mkdir(exist_ok=True)
    for name, text in variant.files.items():
        _write(env / name, text.replace("{log}", str(log)))
    settings = {"hooks": {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": variant.command}]}]}}
    _write(env / ".claude" / "settings.json", json.dumps(settings))


def _plan(env: Path, tmp_path: Path) -> HookPlan:
    return read_hook_plan(env, tmp_path / "config" / "config.toml", WorkspaceRecords(tmp_path / "data"))


def _say_yes(env: Path, tmp_path: Path) -> HookPlan:
    """What the chat's "yes" records: the keys of the hooks as the question showed them."""
    plan = _plan(env, tmp_path)
    assert len(plan.untrusted) == 1
    WorkspaceRecords(tmp_path / "data").trust_hooks(env, plan.trust_keys(plan.untrusted))
    return _plan(env, tmp_path)


async def _run_trusted(plan: HookPlan, env: Path) -> None:
    """The hook as the agent would run it: pinned to what the user trusted."""
    (hook,) = plan.use.hooks
    done = await run_hook(hook, b"{}", cwd=env, env=hook_environment(env, hook))
    assert done.exit_code == 0 and not done.failure, (done.stderr, done.failure)


def _pull(env: Path, variant: Variant, log: Path) -> None:
    """What a `git pull` brings: the second file now does something else."""
    name, text = variant.pulled
    _write(env / name, text.replace("{log}", str(log)))


@pytest.mark.parametrize("name", list(VARIANTS))
async def test_a_change_between_sessions_asks_again(env: Path, tmp_path: Path, name: str) -> None:
    variant, log = VARIANTS[name], env / "logs" / "ran.log"
    _set_up(env, log, variant)
    plan = _say_yes(env, tmp_path)
    assert not plan.untrusted
    await _run_trusted(plan, env)
    assert log.read_text() == "v1\n"  # the hook really runs the second file

    _pull(env, variant, log)
    again = _plan(env, tmp_path)
    assert again.untrusted == again.found, f"{name}: the changed code would run without a question"
    # Had the session started before the pull, the pinned hook would not run the new code either.
    (hook,) = plan.use.hooks
    refused = await run_hook(hook, b"{}", cwd=env, env=hook_environment(env, hook))
    assert "changed since you trusted this hook" in refused.failure
    assert log.read_text() == "v1\n"


def _loom_run(env: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "LOOM_"))}
    environ.update(LOOM_DATA_DIR=str(tmp_path / "data"), LOOM_CONFIG_DIR=str(tmp_path / "config"),
                   LOOM_SCRIPT=os.environ["LOOM_SCRIPT"])
    return subprocess.run([*LOOM_SCRIPT, "run", "--provider", "scripted", "-m", "scripted", *args, "hi"], cwd=env,
                          env=environ, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name", ["sources lib.sh", "cd dir && ./x"])
def test_headless_skips_the_hook_after_a_pull(env: Path, tmp_path: Path, name: str) -> None:
    variant, log = VARIANTS[name], env / "logs" / "ran.log"
    _set_up(env, log, variant)
    _say_yes(env, tmp_path)
    first = _loom_run(env, tmp_path)
    assert first.returncode == 0, first.stderr
    assert log.read_text() == "v1\n" and "hook" not in first.stderr

    _pull(env, variant, log)
    second = _loom_run(env, tmp_path)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "done"
    assert log.read_text() == "v1\n"  # the pulled code did not run
    assert [line for line in second.stderr.splitlines() if "hook" in line] == [
        "loom: 1 project hook (.claude/settings.json) not trusted: skipped "
        "(--trust-project-hooks runs it for this run; `loom` asks to trust them)"]


# -- during a session ------------------------------------------------------------------


def _built_permissions(env: Path, mode: str) -> PermissionManager:
    built = build_agent(RunOptions(cwd=env, provider="scripted", model="scripted",
                                   permission_mode=mode),  # type: ignore[arg-type]
                        interactive=False)
    built.agent.session.close()
    return built.agent.permissions  # type: ignore[no-any-return]


@pytest.mark.parametrize("mode", ["default", "accept-edits", "bypass"])
def test_the_hook_folders_are_read_only_to_the_model_in_every_mode(env: Path, tmp_path: Path, mode: str) -> None:
    variant, log = VARIANTS["sources lib.sh"], env / "logs" / "ran.log"
    _set_up(env, log, variant)
    _write(env / "tools" / "checks" / "one.sh", "true\n")
    _say_yes(env, tmp_path)
    permissions = _built_permissions(env, mode)
    edits = {"write_file": ".claude/hooks/lib.sh", "edit_file": ".claude/hooks/guard.sh",
             "multi_edit": ".claude/hooks/lib.sh", "apply_patch": ".claude/hooks/new.sh"}
    for tool, path in edits.items():
        decision = permissions.check(tool, FileAccess((str(env / path),), write=True), is_read_only=False)
        assert decision.behavior == "ask", (tool, mode)
        assert HOOK_FOLDERS_SOURCE in decision.reason
    read = permissions.check("read_file", FileAccess((str(env / ".claude/hooks/lib.sh"),), write=False),
                             is_read_only=True)
    assert read.behavior == "allow"
    elsewhere = permissions.check("write_file", FileAccess((str(env / "src" / "app.py"),), write=True),
                                  is_read_only=False)
    assert elsewhere.behavior == ("ask" if mode == "default" else "allow")


def test_an_untrusted_hooks_folder_is_protected_too(env: Path, tmp_path: Path) -> None:
    """A yes at the next start would otherwise trust what the model wrote there."""
    _set_up(env, env / "logs" / "ran.log", VARIANTS["a glob"])
    plan = _plan(env, tmp_path)
    assert plan.untrusted
    assert set(plan.protected_paths()) == {env / ".claude" / "hooks", env / "tools" / "checks"}
    permissions = _built_permissions(env, "accept-edits")
    decision = permissions.check("write_file", FileAccess((str(env / "tools/checks/two.sh"),), write=True),
                                 is_read_only=False)
    assert decision.behavior == "ask"


def test_headless_accept_edits_cannot_change_lib_sh_and_the_hook_runs_what_was_trusted(
        env: Path, tmp_path: Path) -> None:
    variant, log = VARIANTS["sources lib.sh"], env / "logs" / "ran.log"
    _set_up(env, log, variant, event="PreToolUse", matcher="Bash")
    _say_yes(env, tmp_path)
    lib = (env / ".claude" / "hooks" / "lib.sh").read_text()
    script = [{"tool_calls": [{"name": "read_file", "input": {"path": ".claude/hooks/lib.sh"}}]},
              {"tool_calls": [{"name": "write_file", "input": {
                  "path": ".claude/hooks/lib.sh", "content": "mark() { echo v2 >> " + str(log) + "; }\n"}}]},
              {"tool_calls": [{"name": "bash", "input": {"command": "echo hi"}}]},
              {"text": "done"}]
    Path(os.environ["LOOM_SCRIPT"]).write_text(json.dumps(script))
    done = _loom_run(env, tmp_path, "--permission-mode", "accept-edits", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert (env / ".claude" / "hooks" / "lib.sh").read_text() == lib  # asked, so refused headless
    assert f"from {HOOK_FOLDERS_SOURCE} always asks; a headless run cannot allow it" in done.stderr
    assert log.read_text() == "v1\n"  # the bash call's hook ran the trusted code


async def test_an_edit_that_got_in_keeps_the_hook_from_running(env: Path, tmp_path: Path,
                                                               fake_llm: FakeLLMServer) -> None:
    """The user allowed the model's edit of lib.sh (or bash wrote it): the hook does not run
    the changed code for the rest of the session."""
    variant, log = VARIANTS["sources lib.sh"], env / "logs" / "ran.log"
    _set_up(env, log, variant, event="PreToolUse", matcher="Bash")
    plan = _say_yes(env, tmp_path)
    evil = "mark() { echo v2 >> " + str(log) + "; }\n"
    fake_llm.enqueue(
        Reply.tool("bash", {"command": "echo one"}),
        Reply.tool("read_file", {"path": ".claude/hooks/lib.sh"}),
        Reply.tool("write_file", {"path": ".claude/hooks/lib.sh", "content": evil}),
        Reply.tool("bash", {"command": "echo two"}),
        Reply.text("done"))
    allowed = PermissionManager(Workspace.at(env), mode="bypass")  # as if the user said yes to the edit
    events = await collect(agent(env, fake_llm, plan.use, permissions=allowed), "go")
    assert (env / ".claude" / "hooks" / "lib.sh").read_text() == evil
    assert log.read_text() == "v1\n"  # ran once, before the edit; never the edited code
    first, second = hook_runs(events)
    assert first.outcome == "ok"
    assert "changed since you trusted this hook" in second.message


async def test_a_link_the_hook_is_named_through_is_pinned_too(env: Path, tmp_path: Path) -> None:
    """`./hook.sh` is a link to .claude/hooks/real.sh: pointing it at another script (a
    pull, or the model's `ln -sf` in bypass) changes what runs."""
    log = env / "logs" / "ran.log"
    _set_up(env, log, Variant("./hook.sh", {".claude/hooks/real.sh": _mark("v1"), "evil.sh": _mark("v2")},
                              ("evil.sh", _mark("v2"))))
    (env / "hook.sh").symlink_to(env / ".claude" / "hooks" / "real.sh")
    plan = _say_yes(env, tmp_path)
    await _run_trusted(plan, env)
    assert env / "hook.sh" in plan.protected_paths()
    (env / "hook.sh").unlink()
    (env / "hook.sh").symlink_to(env / "evil.sh")
    (hook,) = plan.use.hooks
    refused = await run_hook(hook, b"{}", cwd=env, env=hook_environment(env, hook))
    assert "changed since you trusted this hook" in refused.failure
    assert log.read_text() == "v1\n"
    assert _plan(env, tmp_path).untrusted
