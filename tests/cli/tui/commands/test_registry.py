"""The one table of built-in commands: /help, the / menu, usage errors and the reserved
names are read from it, and it loads without Textual (`loom run` reads its names)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from loom_cli.slash_commands import ParsedCommand, SlashCommand, SlashRegistry, parse_command
from loom_cli.tui.commands.registry import BUILTIN_NAMES, REGISTRY, help_text
from loom_cli.tui.transcript import Notice
from tests.cli.tui.helpers import Harness, wait_for


def _nothing(_host: object, _command: ParsedCommand) -> None:
    return None


def outputs(app) -> list[str]:
    return [n.text for n in app.transcript.query(Notice)]


def test_help_text_has_a_line_for_every_entry_in_the_registrys_order() -> None:
    lines = help_text().splitlines()
    listed = [line.split()[0] for line in lines[1:1 + len(REGISTRY.commands)]]
    assert lines[0] == "Commands:"
    assert listed == [f"/{command.name}" for command in REGISTRY.commands]
    for command in REGISTRY.commands:
        assert any(line.startswith(f"  /{command.name} ") and line.endswith(command.description) for line in lines)


def test_every_name_and_alias_finds_its_entry() -> None:
    for command in REGISTRY.commands:
        for name in (command.name, *command.aliases):
            assert REGISTRY.find(name) is command
    assert REGISTRY.find("quit") is REGISTRY.find("exit")
    assert BUILTIN_NAMES == {c.name for c in REGISTRY.commands} | {a for c in REGISTRY.commands for a in c.aliases}
    assert REGISTRY.find("fix") is None


def test_a_usage_error_is_the_entrys_usage_line() -> None:
    for command in REGISTRY.commands:
        if command.max_words is None:
            assert REGISTRY.usage_problem(ParsedCommand(command.name, "a b c d e f")) is None
            continue
        too_many = " ".join(["word"] * (command.max_words + 1))
        expected = f"usage: {command.usage or '/' + command.name} · not run"
        assert REGISTRY.usage_problem(ParsedCommand(command.name, too_many)) == expected
        assert REGISTRY.usage_problem(ParsedCommand(command.name, " ".join(["w"] * command.max_words))) is None
    assert REGISTRY.usage_problem(ParsedCommand("quit", "now")) == "usage: /quit · not run"  # the alias as typed


def test_a_name_registered_twice_is_refused() -> None:
    first = SlashCommand("go", "one", _nothing)
    with pytest.raises(ValueError, match="/go is registered twice"):
        SlashRegistry((first, SlashCommand("run", "two", _nothing, aliases=frozenset({"go"}))))


def test_the_registry_loads_without_textual() -> None:
    code = ("import sys, loom_cli.tui.commands.registry as r; "
            "assert r.BUILTIN_NAMES; print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


async def test_help_in_the_chat_lists_every_entry(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(120, 50)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        app.prompt.set_text("/help")
        await pilot.press("enter")
        await wait_for(pilot, lambda: any(text.startswith("Commands:") for text in outputs(app)))
        shown = next(text for text in outputs(app) if text.startswith("Commands:"))
        for command in REGISTRY.commands:
            assert f"/{command.name}" in shown and command.description in shown


async def test_a_usage_error_in_the_chat_comes_from_the_registry(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None)
        for typed in ("/resume one two", "/mode plan now", "/rewind back"):
            parsed = parse_command(typed)
            assert parsed is not None
            expected = REGISTRY.usage_problem(parsed)
            assert expected is not None
            app.prompt.set_text(typed)
            await pilot.press("enter")
            await wait_for(pilot, lambda expected=expected: outputs(app)[-1] == expected)
        assert app.mode == "default"  # /mode plan now was not run
