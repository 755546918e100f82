"""What a sent prompt starts, and how the prompt looks while it is typed.

`/mcp__server__prompt args` sends the MCP server's prompt text instead of what was typed;
`/name args` naming a custom command or a skill sends its expansion
(loom_engine.commands), the transcript showing what was typed.
`!command` runs the command as the user's own (`Agent.run_user_command`): at once, as
their shell would (no permission question), drawn as a bash block, its output kept as context for the
next request, and no model turn. Any other prompt runs the model with the files and
folders it `@`-mentions attached (`Agent.attach`), and the MCP resources it names as
`@server:uri`; the run's notices list them. What `loom run` does alike (a command's
expansion, the attachments, the run) is `loom_cli.turns.start_turn`'s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from textual.widget import Widget

from loom_engine.events import AgentEvent
from loom_engine.mcp.names import is_prompt_command

from ..turns import start_turn

if TYPE_CHECKING:
    from ..chat_agent import ChatAgent

SHELL_PREFIX = "!"
SHELL_TITLE = "! shell command · Enter runs it"


def shell_command(text: str) -> str | None:
    """The command of a `!command` prompt; None for any other prompt (or a bare `!`)."""
    if not text.startswith(SHELL_PREFIX):
        return None
    command = text[len(SHELL_PREFIX):].strip()
    return command or None


async def user_turn(agent: ChatAgent, text: str) -> AsyncIterator[AgentEvent]:
    """The events of what ``text`` asks for: a shell command, or a model run."""
    from loom_cli.slash_commands import invocation_for

    from .commands.registry import BUILTIN_NAMES

    command = shell_command(text)
    if command is not None:
        stream = agent.run_user_command(command)
    elif text.startswith("/") and (invocation := invocation_for(agent, text, BUILTIN_NAMES)) is not None:
        # A custom command or a skill: the model gets its expansion, the transcript
        # keeps what was typed.
        stream = start_turn(agent, text, invocation)
    elif is_prompt_command(text):
        from .mcp_chat import expand_prompt_command

        # An MCP server's prompt: its text is what the model gets (ValueError: one line).
        expanded = await expand_prompt_command(agent, text)
        stream = start_turn(agent, expanded if expanded is not None else text)
    else:
        stream = start_turn(agent, text)
    async for event in stream:
        yield event


def show_prompt_mode(prompt: Widget, text: str) -> None:
    """A prompt starting with `!` says it will run as a shell command (title and border)."""
    shell = text.startswith(SHELL_PREFIX)
    if shell == prompt.has_class("shell-command"):
        return
    prompt.set_class(shell, "shell-command")
    if shell:
        colour = prompt.app.get_css_variables().get("warning", "#ffa62b")
        prompt.styles.border = ("round", colour)
        prompt.border_title = SHELL_TITLE
    else:
        # Back to the prompt's own stylesheet (its focus colour included).
        prompt.styles.clear_rule("border")
        prompt.border_title = None
