"""Issue 19 §2.3: no control character from outside reaches the terminal through the chat.

Each test puts hostile text where the outside world can: the model's answer, a command's
output, a repository file name, an MCP server's result, the command in a permission
question. It then takes the bytes the chat would write to the terminal for its whole
screen (the compositor's full update, as Textual sends it), and asserts that the only
escape sequences in them are the chat's own drawing, and that the hostile ones are on
screen as visible text (``^[``) instead.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loom_cli.bootstrap import RunOptions, build_agent
from loom_cli.tui.app import LoomApp
from loom_cli.tui.options import TuiOptions
from loom_cli.tui.trust_screen import ProjectTrustScreen
from loom_cli.visible_text import UNSAFE_CHARACTER
from tests.cli.tui.helpers import Harness, screen_text, wait_for, wait_idle
from tests.doubles.loom_command import isolate_loom

# A window title (OSC 0, ended by BEL), a clipboard write (OSC 52, ended by ST), a screen
# clear (CSI), the one-byte C1 CSI, a right-to-left override that would show "live" for
# "evil", a backspace over a character.
HOSTILE = ("title \x1b]0;PWNED\x07 clip \x1b]52;c;Y2xpcA==\x1b\\ clear \x1b[2J c1 \x9b2J "
           "bidi \u202eevil\u202c bs x\x08y end")
SHOWN = ("title ^[]0;PWNED^G clip ^[]52;c;Y2xpcA==^[\\ clear ^[[2J c1 <U+009B>2J "
         "bidi <U+202E>evil<U+202C> bs x^Hy end")

# What Textual itself writes: CSI sequences (colours, cursor moves) and OSC 8 hyperlinks.
_CHAT_OWN = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\]8;[^\x07\x1b]*\x1b\\")


def terminal_output(app: LoomApp) -> str:
    """What the chat writes to the terminal to draw its whole screen now."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    assert update is not None
    return update.render_segments(app.console)  # type: ignore[union-attr]


def outside_controls(app: LoomApp) -> list[str]:
    """The control characters in that output that are not part of the chat's own drawing."""
    return UNSAFE_CHARACTER.findall(_CHAT_OWN.sub("", terminal_output(app)))


def flowing(app: LoomApp) -> str:
    """The screen's text, rows joined by a space (a wrapped sentence reads as one)."""
    return " ".join(row.strip(" │") for row in screen_text(app).splitlines() if row.strip(" │"))


async def send(pilot: Any, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


@pytest.fixture
def harness(workspace: Path, tmp_path: Path) -> Harness:
    return Harness(workspace=workspace, data_dir=tmp_path / "data", script=[])


@pytest.mark.parametrize("width", [120, 60])
async def test_a_hostile_model_answer_is_shown_not_obeyed(harness: Harness, width: int) -> None:
    harness.script = [{"text": f"Here: {HOSTILE}\n\n```\ncode {HOSTILE}\n```\n", "chunk_size": 7}]
    app = harness.app()
    async with app.run_test(size=(width, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "hi")
        await wait_idle(pilot, app)
        assert outside_controls(app) == []
        shown = flowing(app)
        assert f"Here: {SHOWN}" in shown
        assert f"code {SHOWN}" in shown, screen_text(app)  # inside a code block too


async def test_hostile_command_output_is_shown_not_obeyed(harness: Harness) -> None:
    harness.mode = "bypass"
    command = r"printf 'out \033]0;PWNED\007 clip \033]52;c;Y2xpcA==\033\\ x\by\n'"
    harness.script = [{"tool_calls": [{"name": "bash", "input": {"command": command}}]}, {"text": "done"}]
    app = harness.app(permission_mode="bypass")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "run it")
        await wait_idle(pilot, app)
        assert outside_controls(app) == []
        assert "out ^[]0;PWNED^G clip ^[]52;c;Y2xpcA==^[\\ x^Hy" in screen_text(app), screen_text(app)


async def test_a_hostile_file_name_is_shown_not_obeyed(harness: Harness, workspace: Path) -> None:
    harness.mode = "bypass"
    (workspace / "notes\x1b]0;PWNED\x07.txt").write_text("hi\n")
    harness.script = [{"tool_calls": [{"name": "glob", "input": {"pattern": "*.txt"}}]}, {"text": "done"}]
    app = harness.app(permission_mode="bypass")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "list")
        await wait_idle(pilot, app)
        assert outside_controls(app) == []
        assert "notes^[]0;PWNED^G.txt" in screen_text(app)  # in the glob call's output
        # And in the @-completion menu.
        await pilot.press(*"@notes")
        await wait_for(pilot, lambda: "notes^[]0;PWNED^G.txt" in screen_text(app).split("glob")[-1])
        assert outside_controls(app) == []


async def test_a_hostile_command_in_the_permission_question_is_shown_not_obeyed(harness: Harness) -> None:
    command = "touch 'safe\x1b]0;PWNED\x07' \u202eexe.txt"
    harness.script = [{"tool_calls": [{"name": "bash", "input": {"command": command}}]}, {"text": "done"}]
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "go")
        await wait_for(pilot, lambda: app.permission_prompt.is_open)
        await wait_for(pilot, lambda: "touch 'safe^[]0;PWNED^G' <U+202E>exe.txt" in screen_text(app))
        assert outside_controls(app) == []
        await pilot.press("n")
        await wait_idle(pilot, app)


def _mcp_chat(workspace: Path, tmp_path: Path, turns: list[dict[str, Any]]) -> LoomApp:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(turns))

    def factory(options: TuiOptions) -> Any:
        return build_agent(RunOptions(cwd=options.workspace, provider="scripted", script=script,
                                      permission_mode="bypass"), interactive=True)

    return LoomApp(TuiOptions(workspace=workspace, agent_factory=factory, data_dir=tmp_path / "data",
                              permission_guard_s=0.0, manage_gc=False))


async def test_a_hostile_mcp_result_is_shown_not_obeyed(workspace: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_loom(monkeypatch, tmp_path)
    misbehaving = Path(__file__).parent.parent / "doubles" / "mcp_misbehaving.py"
    (tmp_path / "config").mkdir(parents=True, exist_ok=True)
    (tmp_path / "config" / "mcp.json").write_text(json.dumps(
        {"mcpServers": {"bad": {"command": sys.executable, "args": [str(misbehaving)]}}}))
    app = _mcp_chat(workspace, tmp_path, [{"tool_calls": [{"name": "mcp__bad__escapes", "input": {}}]},
                                         {"text": "done"}])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: "1 MCP server" in screen_text(app) and "connecting" not in screen_text(app),
                       timeout=40)
        await send(pilot, "call it")
        await wait_for(pilot, lambda: "done" in screen_text(app) and not app.busy, timeout=40)
        assert outside_controls(app) == []
        assert "title ^[]0;PWNED-MCP^G clip ^[]52;c;Y2xpcA==^[\\ end" in screen_text(app)


async def test_a_hostile_folder_name_and_setting_in_the_trust_question(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # "^[b]" (what the ESC becomes) and "[i]" would be markup tags if the title were markup.
    root = tmp_path / "ws\x1bb]x[i]y"
    (root / ".loom").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".loom" / "settings.toml").write_text(
        'permission_mode = "bypass"\n[anthropic]\nbase_url = "http://evil\\u001b]0;PWNED\\u0007"\n')
    isolate_loom(monkeypatch, tmp_path, script=[{"text": "hi"}])
    app = Harness(workspace=root, data_dir=tmp_path / "data", script=[]).app(
        agent_factory=None, provider="scripted", model="scripted")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ProjectTrustScreen) and "y trust all" in screen_text(app))
        shown = screen_text(app)
        assert "ws^[b]x[i]y?" in shown, shown
        assert "Loom · ws^[b]x[i]y ·" in shown  # the welcome line
        assert '"http://evil\\u001b]0;PWNED\\u0007"' in shown  # the question quotes values as JSON
        assert outside_controls(app) == []
        await pilot.press("n")


async def test_hostile_hook_output_is_shown_not_obeyed(workspace: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_loom(monkeypatch, tmp_path, script=[
        {"tool_calls": [{"name": "read_file", "input": {"path": "README.md"}}]}, {"text": "done"}])
    (tmp_path / "config").mkdir(parents=True, exist_ok=True)
    (tmp_path / "config" / "config.toml").write_text(  # the user's own hook: trusted, it runs
        '[[hooks.PostToolUse]]\nmatcher = "*"\n[[hooks.PostToolUse.hooks]]\ntype = "command"\n'
        "command = \"printf 'lint \\\\033]0;PWNED\\\\007 failed' >&2; exit 1\"\n")
    app = Harness(workspace=workspace, data_dir=tmp_path / "data", script=[]).app(
        agent_factory=None, provider="scripted", model="scripted")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        await send(pilot, "read")
        await wait_idle(pilot, app)
        assert "lint ^[]0;PWNED^G failed" in flowing(app), screen_text(app)
        assert outside_controls(app) == []
