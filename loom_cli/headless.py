"""`loom run`: one task, no UI; prints text, Claude Code's result object or messages
(loom_cli/claude_output.py), or Loom's own events, a JSON line each."""

from __future__ import annotations

import asyncio
import datetime
import json
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO, TypeVar, assert_never

from loom_engine.mcp.names import is_prompt_command

from .held_text import HeldDeltas
from .turns import SessionHook, session_hook_failures, start_turn

if TYPE_CHECKING:
    from loom_engine.commands.invoke import Invocation
    from loom_engine.events import AgentEvent, Finished, HookRan
    from loom_engine.mcp.manager import McpManager
    from loom_engine.usage_wait import UsageLimitPolicy

    from .chat_agent import ChatAgent
    from .memory_setup import SessionPromoter
    from .stop_reason import StopEvent

# The exit codes of `loom run` (README.md, "Exit codes"). EXIT_CUT_OFF: the answer was
# printed, but the model's output limit (max_tokens) cut it off before its end.
# EXIT_USAGE_LIMIT: a plan's allowance or an account's quota is spent (and not waited for).
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_LIMIT, EXIT_CUT_OFF, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130
EXIT_USAGE_LIMIT = 5

# The output format of Loom's own events, a JSON line each (json and stream-json are
# Claude Code's shapes: claude_output.py).
LOOM_EVENTS = "loom-stream-json"

_T = TypeVar("_T")
# Read by name: SIGHUP does not exist on every platform.
_STOP_SIGNALS = tuple((getattr(signal, name), reason) for name, reason in (
    ("SIGINT", "interrupted by Ctrl-C"), ("SIGTERM", "terminated (SIGTERM)"),
    ("SIGHUP", "the terminal went away (SIGHUP)")) if hasattr(signal, name))


def _cleaner(agent: ChatAgent) -> Callable[[_T], _T]:
    """What everything printed goes through: the agent's redactor, as for the session file.

    Tool results are redacted already; this also covers progress lines, tool inputs,
    the model's own text and error messages.
    """
    config = agent.config
    if not config.redact_secrets:
        return lambda value: value
    return config.redactor.redact_tree


async def run_headless(agent: ChatAgent, prompt: str, output_format: str, out: TextIO | None = None,
                       err: TextIO | None = None, mcp_wait_s: float | None = None,
                       usage_limits: UsageLimitPolicy | None = None, more_prompts: Sequence[str] = (),
                       promoter: SessionPromoter | None = None) -> int:
    """``mcp_wait_s``: the longest wait for the MCP servers before the first request
    (None: their connect timeout); ``usage_limits``: the policy the agent was built with
    (for what the stop says); ``more_prompts``: the user's next messages, each run after
    the one before in the same session (``--input-format stream-json``) unless it was
    interrupted or stopped at a usage limit; ``promoter``: saves what the session proposes
    to remember, at its end (not after an interrupt). ``out``/``err`` default to the
    standard streams as they are at the call (a warm child has replaced the server's)."""
    from .visible_text import raw_stream, visible_stream

    # The answer, and every line on stderr, may carry the model's or a tool's control
    # characters: they are shown (^[), never sent. JSON escapes its own and is data.
    out = sys.stdout if out is None else out
    out = visible_stream(out) if output_format == "text" else raw_stream(out)
    err = visible_stream(sys.stderr if err is None else err)
    mcp = agent.mcp  # the servers Loom starts for this run, and stops after it
    try:
        if mcp is not None:
            await _start_mcp(mcp, mcp_wait_s, err)
        started = False
        said: set[str] = set()  # each reason the snapshots are off is said once
        code = EXIT_OK
        for text in (prompt, *more_prompts):
            expanded = await _expand(agent, text, err)
            if expanded is None:
                return EXIT_USAGE
            if not started:
                started = True
                await _session_hooks(agent, "session_started", "resume" if agent.messages else "startup", err)
                _snapshot_warnings(agent, err, said)  # git missing is known now; the others after the prompt
            code = await _run(agent, expanded[0], output_format, out, err, expanded[1], said, usage_limits)
            if code in (EXIT_INTERRUPTED, EXIT_USAGE_LIMIT):
                break
        if code != EXIT_INTERRUPTED:
            from .memory_setup import save_headless_proposals

            await save_headless_proposals(promoter, err)
        return code
    finally:
        await _session_hooks(agent, "session_ended", "other", err)
        if mcp is not None:
            await mcp.aclose()  # stops the servers Loom started
        await agent.aclose()  # the provider's connections belong to this event loop


async def _expand(agent: ChatAgent, prompt: str, err: TextIO) -> tuple[str, Invocation | None] | None:
    """The prompt as run: an MCP prompt's text, or a custom command or skill to invoke;
    None after an error (said on stderr)."""
    mcp = agent.mcp
    if mcp is not None and is_prompt_command(prompt):
        expanded = await _prompt_command(mcp, prompt, err)
        if expanded is None:
            return None
        prompt = expanded
    if not prompt.startswith("/"):
        return prompt, None
    # A custom command or a skill; a mistyped or chat-only name is refused before any
    # request; any other /text (a path: /etc/hosts) is the prompt.
    from loom_engine.commands.catalog import CommandError

    from .slash_commands import invocation_for
    from .tui.commands.registry import BUILTIN_NAMES
    try:
        invocation = invocation_for(agent, prompt, BUILTIN_NAMES)
    except CommandError as error:
        err.write(f"loom: {error}\n")
        return None
    if invocation is None:
        refused = _not_a_prompt(agent, prompt, BUILTIN_NAMES)
        if refused is not None:
            err.write(f"loom: {refused}\n")
            return None
    return prompt, invocation


def _not_a_prompt(agent: ChatAgent, prompt: str, builtins: frozenset[str]) -> str | None:
    """Why ``/name …`` is not sent: a chat command (no chat here) or a name no command,
    skill or server prompt has; None when the text is a prompt (``/usr/bin/foo is
    broken``). The same rule as the chat's, so a typo never costs a request."""
    from .slash_commands import discover_commands, parse_command, unknown_command_line
    from .tui.commands.custom import custom_entries
    from .tui.mcp_chat import prompt_commands

    parsed = parse_command(prompt)
    if parsed is None:
        return None
    if parsed.name in builtins:
        return f"/{parsed.name} is a command of the chat (`loom`); `loom run` does not run it"
    commands = discover_commands(agent.workspace.root, builtins)
    known = [*builtins, *(name for name, _ in custom_entries(agent, commands)),
             *(name for name, _ in prompt_commands(agent))]
    return unknown_command_line(parsed, known, listed_by="`loom skills` and /help in the chat list them")


def _snapshot_warnings(agent: ChatAgent, err: TextIO, said: set[str]) -> None:
    """A line on stderr when rewind's snapshots are off or limited in this workspace."""
    from .snapshot_notice import snapshot_notices

    for notice in snapshot_notices(agent.checkpoints, rewind="loom rewind"):
        if notice.key not in said:
            said.add(notice.key)
            err.write(f"loom: warning: {notice.text}\n")


async def _session_hooks(agent: ChatAgent, hook: SessionHook, argument: str, err: TextIO) -> None:
    """SessionStart / SessionEnd hooks; a hook that failed is said on stderr."""
    for event in await session_hook_failures(agent, hook, argument):
        err.write(f"loom: {_hook_line(event)}\n")


def _hook_line(event: HookRan) -> str:
    command = event.command if len(event.command) <= 60 else "..." + event.command[-57:]
    return f"{event.event} hook `{command}`: {event.message}"


async def _prompt_command(mcp: McpManager, prompt: str, err: TextIO) -> str | None:
    """``/mcp__server__prompt args`` as the server's prompt text; None after an error."""
    from loom_engine.mcp.prompts import parse_prompt_command, run_prompt_command

    try:
        command = parse_prompt_command(prompt, mcp.prompts())
    except ValueError as error:
        err.write(f"loom: {error}\n")
        return None
    if command is None:
        name = prompt.split()[0]
        err.write(f"loom: {name}: no such MCP prompt (is its server connected?)\n")
        return None
    try:
        return await run_prompt_command(mcp, command)
    except Exception as error:
        err.write(f"loom: {prompt.split()[0]}: the server could not give the prompt: {error}\n")
        return None


async def _start_mcp(mcp: McpManager, wait_s: float | None, err: TextIO) -> None:
    """Connect the servers and wait until each is up or failed (at most ``wait_s``, else
    their connect timeout): a one-shot run plans its first turn with every tool it will get.
    Each server that did not come up is named on stderr."""
    mcp.start()
    wait_s = mcp.connect_timeout_s if wait_s is None else wait_s
    await mcp.wait_ready(wait_s)
    for status in mcp.statuses():
        if status.state == "failed":
            err.write(f"loom: MCP server {status.name!r} failed: {status.reason}\n")
        elif status.state == "needs_login":
            err.write(f"loom: MCP server {status.name!r} needs a login ({status.reason}); run loom and "
                      "log in from /mcp\n")
        elif status.state == "connecting":
            err.write(f"loom: MCP server {status.name!r} did not come up within {wait_s:g} s; the run starts "
                      "without its tools\n")


async def _run(agent: ChatAgent, prompt: str, output_format: str, out: TextIO, err: TextIO,
               invocation: Invocation | None = None,
               snapshots_said: set[str] | None = None,
               usage_limits: UsageLimitPolicy | None = None) -> int:
    from loom_engine.events import (
        TERMINAL_EVENTS,
        Aborted,
        BudgetExceeded,
        CompactionApplied,
        Error,
        Finished,
        HookRan,
        MaxTurnsReached,
        Notice,
        Retrying,
        TurnStarted,
        UsageLimitWait,
    )
    from loom_engine.usage_wait import UsageLimitPolicy

    from .claude_output import ClaudeTranscript, Outcome, run_facts
    from .stop_reason import cut_off, retry_detail, retry_status, stop_reason
    from .usage_limits import StderrCountdown, stop_line
    from .visible_text import raw_stream
    from .wording import compaction_notice

    started = time.monotonic()
    clean = _cleaner(agent)
    loop = asyncio.get_running_loop()
    # A signal ends the run the way an abort does, so running commands and what they
    # started are stopped before Loom exits (dying on the spot would leave them).
    for sig, reason in _STOP_SIGNALS:
        try:
            loop.add_signal_handler(sig, agent.abort, reason)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread (tests)
            pass

    final: Finished | StopEvent | None = None
    num_turns = 0
    countdown = StderrCountdown(raw_stream(err), clean=clean)
    from .sandbox_report import status_of

    confinement = status_of(agent)
    sandbox = confinement.as_json() if confinement is not None else None
    loom_events = output_format == LOOM_EVENTS
    # Claude Code's messages and result object (json, stream-json); their facts are
    # gathered for json too (the denied calls, the time spent waiting for the model).
    transcript = ClaudeTranscript(agent.session_id or "", agent.config.model)
    # Deltas go out in whole lines, so a secret split between two is redacted whole.
    held = HeldDeltas()
    if loom_events:  # what the run is, before its first event
        out.write(json.dumps(clean({"type": "system", "subtype": "init", "session_id": agent.session_id,
                                    "model": agent.config.model, "sandbox": sandbox,
                                    "context_window": _window(agent)})) + "\n")
    elif output_format == "stream-json":
        facts = run_facts(agent, {"sandbox": sandbox, "context_window": _window(agent)})
        out.write(json.dumps(clean(transcript.init(facts))) + "\n")
        out.flush()
    try:
        # A custom command's or skill's expansion, or the prompt with its @path files
        # and @server:uri resources attached.
        stream = start_turn(agent, prompt, invocation)
        try:
            async for event in stream:
                countdown.stop()  # a wait for a usage limit ends with the next event
                for message in transcript.messages(event):
                    if output_format == "stream-json":
                        out.write(json.dumps(clean(message), default=str) + "\n")
                        out.flush()
                if loom_events:
                    _write_events(held.events(event), sandbox, clean, out)
                if isinstance(event, Notice) and event.level == "warning":
                    err.write(clean(f"loom: {event.message}\n"))
                elif isinstance(event, HookRan) and event.outcome in ("error", "timeout") and event.message:
                    err.write(clean(f"loom: {_hook_line(event)}\n"))  # blocks reach the model
                elif isinstance(event, CompactionApplied) and event.depth == 0 and event.reason != "auto":
                    said = compaction_notice(event.reason, event.method, event.tokens_before, event.tokens_after)
                    err.write(f"loom: {said}\n")
                elif isinstance(event, Retrying):
                    status = retry_status(event, event.delay_s).removeprefix("↻ ")
                    err.write(clean(f"loom: {status}: {retry_detail(event)}\n"))
                elif isinstance(event, UsageLimitWait):
                    countdown.start(event)
                # Sub-agents' events come through the same stream (depth > 0): only the
                # top-level agent's turns and its terminal event describe the run.
                if event.depth == 0:
                    if isinstance(event, TurnStarted):
                        num_turns += 1
                    elif isinstance(event, TERMINAL_EVENTS):
                        final = event
        finally:
            countdown.stop()
            await stream.aclose()  # a command's turn-only grants end with it
            if loom_events:
                _write_events(held.flush(), sandbox, clean, out)  # what a stream cut short held
    finally:
        for sig, _ in _STOP_SIGNALS:
            try:
                loop.remove_signal_handler(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass

    # The prompt's snapshot was tried by now (the stream ends after it): a failure is said
    # before the result's line.
    _snapshot_warnings(agent, err, snapshots_said if snapshots_said is not None else set())
    metrics = agent.metrics
    notice = ""  # a line for stderr about a result that is not the whole answer
    match final:
        case Finished():
            code, result, is_error, why = EXIT_OK, final.result, False, final.stop_reason
            if final.cut_off:
                code = EXIT_CUT_OFF
                notice = f"{cut_off(final)}; `loom run --continue \"continue\"` goes on"
        case MaxTurnsReached():
            code, result, is_error, why = EXIT_LIMIT, stop_reason(final), True, "max_turns"
        case BudgetExceeded():
            code, result, is_error, why = EXIT_LIMIT, stop_reason(final), True, "max_budget"
        case Aborted():
            code, result, is_error, why = EXIT_INTERRUPTED, stop_reason(final), True, "interrupted"
        case Error() if final.kind == "usage_limit":
            code, is_error, why = EXIT_USAGE_LIMIT, True, "usage_limit"
            result = stop_line(final, usage_limits or UsageLimitPolicy(), stop_reason(final, headless=True),
                               time.time())
        case Error():
            code, result, is_error, why = EXIT_ERROR, stop_reason(final, headless=True), True, "error"
        case None:
            code, result, is_error, why = EXIT_ERROR, "the run ended without a result", True, "error"
        case _:
            assert_never(final)

    result = clean(result)
    if output_format in ("json", "stream-json"):
        outcome = Outcome(final=final, result=result, is_error=is_error, why=why, num_turns=num_turns,
                          usage=metrics.usage, cost_usd=metrics.cost_usd,
                          extra={"metrics": metrics.to_dict(), "sandbox": sandbox,
                                 "context_window": clean(_window(agent)), **_limit_fields(final)})
        out.write(json.dumps(clean(transcript.result(outcome, int((time.monotonic() - started) * 1000)))) + "\n")
    elif output_format == "text" and not is_error:
        out.write(result + ("" if result.endswith("\n") else "\n"))
    if is_error:
        err.write(f"loom: {result}\n")
    elif notice:
        err.write(f"loom: {notice}\n")
    out.flush()
    return code


def _write_events(events: Sequence[AgentEvent], sandbox: object,
                  clean: Callable[[dict[str, object]], dict[str, object]], out: TextIO) -> None:
    """``loom-stream-json``'s lines: an event each."""
    from loom_engine.events import TERMINAL_EVENTS, Error

    for event in events:
        line = event.to_dict()
        if event.depth == 0 and isinstance(event, TERMINAL_EVENTS):
            line["sandbox"] = sandbox  # the final line says it again, for who reads only that
            if isinstance(event, Error) and event.kind == "usage_limit":
                line["stop_reason"] = "usage_limit"
        out.write(json.dumps(clean(line), default=str) + "\n")
        out.flush()


def _window(agent: ChatAgent) -> dict[str, object]:
    """The context window the run uses and where it came from (at the start, a probe of
    the server may still be out: the result line says what it settled on)."""
    window = agent.window_in_use()
    return {"tokens": window.tokens, "source": window.source}


def _limit_fields(final: object) -> dict[str, object]:
    """The result's fields for a usage limit: when it resets (unix seconds, and ISO 8601
    in UTC), or null when the server did not say."""
    from loom_engine.events import Error

    if not (isinstance(final, Error) and final.kind == "usage_limit"):
        return {}
    at = final.resets_at
    iso = None if at is None else datetime.datetime.fromtimestamp(at, datetime.UTC).isoformat(timespec="seconds")
    return {"resets_at": at, "resets_at_iso": iso}
