"""bash: run a shell command in the workspace, streaming its output.

Each call is a fresh ``bash -c`` in its own session (so its own process group), with
stdin from /dev/null and stdout and stderr merged into one pipe Loom owns. Timeout
and abort end the whole group, SIGTERM first and SIGKILL for what is left, and so
does the end of the command: a background job still running when the shell exits
would otherwise be an orphan holding the output pipe open. What left the group
(``setsid``, a double fork) is found by the marker every process of the command
carries in its environment (``_process_tree``), and whatever is still marked as this
Loom's when Loom exits is killed then. The working directory
after the command comes back through a temp file written by an EXIT trap, not by
parsing the output, and is kept for the next call only while it stays inside the
workspace.

Inside the session's OS sandbox (``ctx.sandbox``) the same ``bash -c`` is started by the
sandbox's launcher: the workspace and a private /tmp writable, the rest read-only, no
network unless the user gave it, and the cwd file in that private /tmp. The sandbox's
PID namespace ends every process of the command with it. A call with
``dangerously_disable_sandbox`` runs outside (the permission check always asks the
user about it); in sandbox mode ``on`` with no working sandbox, commands are refused.
"""


from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shlex
import signal
import tempfile
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from loom_engine.permissions.git_config import git_environment
from loom_engine.permissions.targets import CommandRun, Confinement, PermissionTarget
from loom_engine.sandbox.failures import explain as explain_sandbox_failure
from loom_engine.sandbox.sandbox import Sandbox
from loom_engine.tools.base import BaseTool, ToolContext, ToolOutput
from loom_engine.tools.io import CommandRunner, CommandSpec, IOBackendError

from . import _process_tree as tree
from ._local_runner import LocalCommandRunner

MAX_TIMEOUT_S = 600
DEFAULT_TIMEOUT_S = 120
MAX_OUTPUT_CHARS = 30_000
# A line longer than this reaches the UI in pieces rather than after it ends.
MAX_PROGRESS_LINE = 4096


class BashInput(BaseModel):
    command: str = Field(description="The shell command to run with `bash -c`.")
    timeout: float = Field(DEFAULT_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S, description=(
        f"Seconds before the command is killed (default {DEFAULT_TIMEOUT_S}, "
        f"max {MAX_TIMEOUT_S})."))
    description: str | None = Field(None, description=(
        "A few words saying what the command does, shown to the user."))
    dangerously_disable_sandbox: bool = Field(False, description=(
        "Run this one command outside the OS sandbox. Only after it failed because of the sandbox "
        "(a read-only file system outside the workspace, no network, a hidden file), when it must run "
        "anyway; say why in description. The user is always asked, and a run without a user refuses it."))


class BashTool(BaseTool[BashInput]):
    name = "bash"
    description = (
        "Run a shell command with bash in the workspace and return its exit code and "
        "combined stdout/stderr (over 30,000 characters keeps the start and the end). "
        "stdin is empty, so interactive programs cannot prompt. A `cd` carries over to "
        "later calls while it stays inside the workspace; variables and other shell state "
        "do not. Background jobs are stopped when the command ends. Prefer the read_file, "
        "glob, grep and ls tools over cat, find, grep and ls."
    )
    input_model = BashInput
    is_concurrency_safe = False
    is_read_only = False
    guidance = (
        "bash runs a command with bash -c. A cd persists to the next call while it stays "
        "inside the workspace; environment variables do not. Nothing can be typed into a "
        "command: avoid interactive programs and pass flags like --yes or --no-pager. "
        "The default timeout is 120 s (timeout raises it, up to 600 s). Output beyond "
        "30,000 characters is cut in the middle, so filter noisy output (tail, grep) "
        "yourself.")

    def permission_target(self, args: BashInput, ctx: ToolContext) -> PermissionTarget | None:
        confined = _confining(args, ctx)
        confinement = Confinement(confined.config.network, confined.config.auto_allow_in_accept_edits) \
            if confined is not None else None
        escalation = (args.description or "") if args.dangerously_disable_sandbox else None
        return CommandRun(args.command, cwd=str(ctx.cwd), confinement=confinement, escalation=escalation)

    async def preview(self, args: BashInput, ctx: ToolContext) -> Mapping[str, Any] | None:
        preview: dict[str, Any] = {"kind": "command", "command": args.command, "cwd": str(ctx.cwd),
                                   "description": args.description}
        if args.dangerously_disable_sandbox:
            preview["outside_sandbox"] = True
        return preview

    async def run(self, args: BashInput, ctx: ToolContext) -> ToolOutput:
        sandbox = ctx.sandbox
        if sandbox is not None and sandbox.status.refuses_commands and not args.dangerously_disable_sandbox:
            fix = f" Fix: {sandbox.status.fix}." if sandbox.status.fix else ""
            return ToolOutput(f"Not run: the sandbox is required (sandbox mode on) but cannot start here: "
                              f"{sandbox.status.reason}.{fix} Tell the user; no command can run until it is "
                              "fixed.", is_error=True)
        notes: list[str] = []
        cwd = ctx.cwd
        if not cwd.is_dir() or not ctx.workspace.contains(Path(os.path.realpath(cwd))):
            notes.append(f"The previous working directory {cwd} is gone; started in the "
                         f"workspace root instead.")
            cwd = ctx.workspace.root
            ctx.state.cwd = None
        confined = _confining(args, ctx)
        try:
            run = await run_command(args.command, cwd, args.timeout, ctx, sandbox=confined)
        except OSError as exc:
            return ToolOutput(f"Could not start bash: {exc}", is_error=True)
        except IOBackendError as exc:
            return ToolOutput(f"Could not run the command: {exc}.", is_error=True)
        notes.extend(_follow_cd(run.final_cwd, cwd, ctx))
        if confined is not None and ((run.exit_code or 0) != 0 or run.refused):  # curl exits 0 on a 403
            layout = confined.layout()
            hint = explain_sandbox_failure(run.output, args.command, backend=confined.status.backend or "",
                                           network=confined.config.network,
                                           hidden=(*layout.hidden_dirs, *layout.hidden_files),
                                           allowed_domains=confined.config.allowed_domains, refused=run.refused)
            if hint:
                notes.append(hint)
        return _result(args, run, notes, ctx)


def _confining(args: BashInput, ctx: ToolContext) -> Sandbox | None:
    """The sandbox this call runs in, or None when it runs unconfined."""
    sandbox = ctx.sandbox
    if sandbox is None or not sandbox.active or args.dangerously_disable_sandbox:
        return None
    return sandbox


@dataclass(frozen=True)
class OutputSize:
    """How big the command's output really was, and how much of it the result kept."""

    lines: int
    chars: int
    truncated: bool
    head_lines: int  # whole lines kept from the start (all of them when not truncated)
    tail_lines: int  # ... and from the end


@dataclass(frozen=True)
class CommandResult:
    output: str
    exit_code: int | None  # None when it was killed by Loom
    timed_out: bool
    aborted: bool
    final_cwd: str | None
    stopped_background: bool
    size: OutputSize = OutputSize(0, 0, False, 0, 0)
    refused: tuple[str, ...] = ()  # what the sandbox's domain proxy refused the command
    terminal_id: str | None = None  # the editor terminal it ran in (None: Loom's own child)


async def run_command(command: str, cwd: Path, timeout: float, ctx: ToolContext, *,
                      sandbox: Sandbox | None = None) -> CommandResult:
    """Run ``command`` under bash (inside ``sandbox`` when given, an active one); never
    raises for the command's own failures."""
    prepare_process_cleanup()
    # The pid in the name lets a later Loom delete the file if this one is killed.
    fd, cwd_file = tempfile.mkstemp(prefix=f"loom-cwd-{os.getpid()}-",
                                    dir=sandbox.temp_dir if sandbox is not None else None)
    os.close(fd)
    # Inside the sandbox the private temp folder is /tmp.
    written_to = sandbox.inside(Path(cwd_file)) if sandbox is not None else cwd_file
    # All on the command's first line, so bash's error messages keep its line numbers.
    script = (
        f"__loom_exit() {{ printf '%s' \"$PWD\" > {shlex.quote(written_to)}; }}; "
        f"trap __loom_exit EXIT; {command}"
    )
    # git runs with the repository-config keys that name programs turned off, and bash
    # starts its logical $PWD where the permission check assumed (see git_config.py).
    env = git_environment(os.environ)
    env["PWD"] = os.fspath(cwd)
    marker = tree.new_marker()
    env[tree.MARKER_VARIABLE] = marker
    # Nothing can answer a pager or a credential prompt: stdin is /dev/null.
    env.update({"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"})
    env.update(ctx.command_env)  # TRACEPARENT of the call's span, when telemetry is on
    sink = _OutputSink(ctx.progress)
    argv: tuple[str, ...] = ("bash", "-c", script)
    pass_fds: tuple[int, ...] = ()
    portable: tuple[str, ...] | None = argv
    refused: list[str] = []
    try:
        with contextlib.ExitStack() as held:
            if sandbox is not None:  # what the launch holds lasts until the command has ended
                launch = held.enter_context(sandbox.launch(argv, cwd=cwd, env=env))
                argv, pass_fds, env, refused = launch.argv, launch.pass_fds, dict(launch.env), launch.refused
                portable = launch.portable_argv
            spec = CommandSpec(argv, cwd, env, call_id=ctx.call_id, marker=marker,
                               contained=sandbox is not None and sandbox.ends_processes_on_exit, pass_fds=pass_fds)
            runner, spec = _runner_for(spec, portable, ctx)
            ran = await runner.run(spec, output=sink.write, timeout=timeout, cancel=ctx.cancel)
        final_cwd = _read_text(cwd_file) or None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(cwd_file)
    sink.flush()
    output = sink.render()
    exit_code = ran.exit_code
    if sandbox is not None and exit_code is not None and final_cwd is None and 128 < exit_code <= 128 + 64:
        # The sandbox's launcher reports a shell killed by signal N as 128+N; the exit
        # trap did not run, so it was the signal and not an `exit 137`.
        exit_code = 128 - exit_code
    return CommandResult(
        output=output,
        size=sink.size(output),
        exit_code=exit_code if ran.how == "exited" else None,
        timed_out=ran.how == "timeout",
        aborted=ran.how == "aborted",
        final_cwd=final_cwd,
        stopped_background=ran.stopped_background,
        refused=tuple(refused),
        terminal_id=ran.terminal_id,
    )


def _runner_for(spec: CommandSpec, portable: tuple[str, ...] | None,
                ctx: ToolContext) -> tuple[CommandRunner, CommandSpec]:
    """Who starts the command, and as what. The front end's runner (an editor's
    terminal) cannot pass descriptors on: it gets the confined command line that needs
    none (``portable``, see Launch.portable_argv); when there is none, Loom starts the
    command itself. So no command the sandbox confines runs without what confines it."""
    runner = ctx.commands
    if runner is None:
        return LocalCommandRunner(), spec
    if spec.pass_fds and not runner.can_pass_descriptors():
        if portable is None:
            return LocalCommandRunner(), spec
        return runner, replace(spec, argv=portable, pass_fds=())
    return runner, spec


@functools.cache
def prepare_process_cleanup() -> None:
    """Once per process: adopt the commands' orphans, and kill what they left at exit."""
    tree.become_subreaper()
    atexit.register(tree.kill_own_leftovers)


class _OutputSink:
    """Keeps the first and last part of the output and streams lines to the UI."""

    def __init__(self, progress: Callable[[str], None], cap: int = MAX_OUTPUT_CHARS) -> None:
        self._progress = progress
        self._head_cap = cap // 2
        self._tail_cap = cap - self._head_cap
        self._cap = cap
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self._total = 0
        self._newlines = 0
        self._last = ""
        self._partial = ""

    def write(self, text: str) -> None:
        if not text:
            return
        text = text.replace("\r\n", "\n")
        self._newlines += text.count("\n")
        self._last = text[-1]
        self._keep(text)
        self._stream(text)

    def _keep(self, text: str) -> None:
        self._total += len(text)
        room = self._head_cap - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += min(room, len(text))
            text = text[room:]
        if text:
            self._tail.append(text)
            self._tail_len += len(text)
            while self._tail_len - len(self._tail[0]) >= self._tail_cap:
                self._tail_len -= len(self._tail.popleft())

    def _stream(self, text: str) -> None:
        pending = self._partial + text
        lines = pending.split("\n")
        self._partial = lines.pop()
        for line in lines:
            self._emit(line)
        while len(self._partial) > MAX_PROGRESS_LINE:
            self._emit(self._partial[:MAX_PROGRESS_LINE])
            self._partial = self._partial[MAX_PROGRESS_LINE:]

    def _emit(self, line: str) -> None:
        with contextlib.suppress(Exception):  # a UI callback must not kill the command
            self._progress(line.removesuffix("\r"))

    def flush(self) -> None:
        if self._partial:
            self._emit(self._partial)
            self._partial = ""

    def render(self) -> str:
        # A CRLF split across two reads survives write(); fold it here.
        head = "".join(self._head).replace("\r\n", "\n")
        tail = "".join(self._tail).replace("\r\n", "\n")
        if self._total <= self._cap:
            return head + tail
        tail = tail[-self._tail_cap:]
        # Cut on line boundaries when one is near, so no line arrives half-shown.
        nl = head.rfind("\n")
        if nl >= len(head) - 2000:
            head = head[:nl + 1]
        nl = tail.find("\n")
        if 0 <= nl < 2000:
            tail = tail[nl + 1:]
        cut = self._total - len(head) - len(tail)
        sep = "" if head.endswith("\n") else "\n"
        return f"{head}{sep}{_CUT_MARK.format(cut)}\n{tail}"

    def size(self, rendered: str) -> OutputSize:
        """The real size of the output; ``rendered`` is what render() made of it."""
        lines = self._newlines + (1 if self._total and self._last != "\n" else 0)
        truncated = self._total > self._cap
        if not truncated:
            return OutputSize(lines, self._total, False, lines, 0)
        head, _, tail = rendered.partition(_CUT_MARK.split("{", 1)[0])
        tail = tail.split("\n", 1)[1] if "\n" in tail else ""
        return OutputSize(lines, self._total, True, head.count("\n"),
                          tail.count("\n") + (1 if tail and not tail.endswith("\n") else 0))


# The line that stands for the middle of a long output, in what the model reads.
_CUT_MARK = "[... {:,} characters of output cut from the middle ...]"


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            return fh.read()
    except OSError:
        return ""


def _follow_cd(final_cwd: str | None, started_in: Path, ctx: ToolContext) -> list[str]:
    if not final_cwd:
        return []
    new = Path(os.path.realpath(final_cwd))
    if new == Path(os.path.realpath(started_in)):
        return []
    if ctx.workspace.contains(new) and new.is_dir():
        ctx.state.cwd = None if new == ctx.workspace.root else new
        return [f"Working directory is now {ctx.workspace.relative(new)}."]
    return [f"The command ended in {final_cwd}, outside the workspace; the next command "
            f"starts in {ctx.workspace.relative(started_in)} again."]


def _result(args: BashInput, run: CommandResult, notes: list[str], ctx: ToolContext) -> ToolOutput:
    parts = [run.output.rstrip("\n") if run.output.strip() else "(no output)"]
    if run.timed_out:
        parts.append(f"Timed out after {args.timeout:g} s; the command and everything it "
                     f"started were killed.")
    elif run.aborted:
        parts.append("Aborted by the user; the command and everything it started were killed.")
    elif run.exit_code is not None and run.exit_code < 0:
        try:
            name = signal.Signals(-run.exit_code).name
        except ValueError:
            name = f"signal {-run.exit_code}"
        parts.append(f"Killed by {name}.")
    else:
        parts.append(f"Exit code: {run.exit_code}")
    if run.stopped_background:
        notes.append("Background processes still running when the command finished were stopped.")
    parts.extend(notes)
    display = {
        "kind": "command", "command": args.command, "description": args.description,
        "exit_code": run.exit_code, "timed_out": run.timed_out, "aborted": run.aborted,
        "cwd": str(ctx.cwd),
        # The result text is the cut copy: the UI shows the real size from these.
        "output_lines": run.size.lines, "output_chars": run.size.chars,
        "truncated": run.size.truncated,
        "shown_head_lines": run.size.head_lines, "shown_tail_lines": run.size.tail_lines,
    }
    if run.terminal_id is not None:  # an editor's terminal: its tool call shows it
        display["terminal_id"] = run.terminal_id
    failed = run.timed_out or run.aborted or run.exit_code != 0
    return ToolOutput("\n".join(parts), is_error=failed, display=display)
