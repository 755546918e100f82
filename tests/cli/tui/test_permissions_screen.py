"""/permissions: the rules by layer, with keys to add and remove the user's own."""

from __future__ import annotations

from loom_cli.tui.permissions_screen import PermissionsScreen, parse_typed_rule
from tests.cli.tui.helpers import Harness, screen_text, wait_for


async def send(pilot, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


async def open_screen(pilot, app) -> PermissionsScreen:
    await wait_for(pilot, lambda: app.agent is not None)
    await send(pilot, "/permissions")
    await wait_for(pilot, lambda: isinstance(app.screen, PermissionsScreen))
    screen = app.screen
    assert isinstance(screen, PermissionsScreen)
    return screen


async def select(pilot, screen: PermissionsScreen, text: str) -> None:
    for _ in range(40):
        if screen.selected is not None and screen.selected.text == text:
            return
        await pilot.press("down")
    raise AssertionError(f"{text} not found in the list")


def test_parse_typed_rule() -> None:
    assert parse_typed_rule("deny read(*.pem)") == ("deny", "read(*.pem)")
    assert parse_typed_rule(" bash(make test:*) ") == ("allow", "bash(make test:*)")
    assert parse_typed_rule("ask bash") == ("ask", "bash")


async def test_the_rules_are_listed_by_layer(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        harness.agent.permissions.allow_for_session(["bash(git diff:*)"])
        await open_screen(pilot, app)
        shown = screen_text(app)
        assert "Permissions · mode: default" in shown
        assert "built-in" in shown and "ask   edit(**/.git)" in shown
        assert "this session (your answers) · x removes" in shown and "allow bash(git diff:*)" in shown
        assert shown.index("built-in") < shown.index("this session")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, PermissionsScreen))
        assert app.screen.focused is app.prompt


async def test_add_and_remove_a_session_rule(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_screen(pilot, app)
        await pilot.press("a", *"deny bash(rm:*)", "enter")
        await pilot.pause()
        rules = harness.agent.permissions.effective_rules()
        assert ("deny", "bash(rm:*)", "session") in rules
        assert "added deny bash(rm:*)" in screen_text(app)
        await select(pilot, screen, "bash(rm:*)")
        await pilot.press("x")
        await pilot.pause()
        assert ("deny", "bash(rm:*)", "session") not in harness.agent.permissions.effective_rules()
        assert "removed deny bash(rm:*)" in screen_text(app)


async def test_a_typo_is_refused_with_the_reason(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_screen(pilot, app)
        before = harness.agent.permissions.effective_rules()
        await pilot.press("a", *"bash(unclosed", "enter")
        await pilot.pause()
        assert "✗ invalid permission rule" in screen_text(app)
        assert harness.agent.permissions.effective_rules() == before
        assert screen.typing  # the text stays to be fixed


async def test_built_in_rules_cannot_be_removed(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_screen(pilot, app)
        await select(pilot, screen, "edit(**/.git)")
        await pilot.press("x")
        await pilot.pause()
        assert ("ask", "edit(**/.git)", "defaults") in harness.agent.permissions.effective_rules()
        assert "comes from built-in: change it there" in screen_text(app)


async def test_save_a_rule_for_the_project_and_remove_it(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_screen(pilot, app)
        await pilot.press("s", *"bash(make test:*)", "enter")
        await pilot.pause()
        assert harness.saved_rules == ["bash(make test:*)"]
        assert "this project (your saved answers)" in screen_text(app)
        forgotten: list[str] = []
        # The application tells the manager where saved answers are removed (bootstrap:
        # the workspace records); the harness manager has no such place, so give it one.
        harness.agent.permissions._forget_rules = forgotten.extend
        await select(pilot, screen, "bash(make test:*)")
        await pilot.press("x")
        await pilot.pause()
        assert forgotten == ["bash(make test:*)"]
        assert ("allow", "bash(make test:*)", "saved answers") not in harness.agent.permissions.effective_rules()
