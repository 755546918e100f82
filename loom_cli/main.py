"""The `loom` command: the root app (the chat, `run`, `acp` and the one-shot commands) and
``main()``, the console entry point; `loom mcp` and `loom server` are in their own modules."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Literal

from loom_engine.permissions.modes import PermissionMode
from loom_engine.providers.names import ProviderName
from loom_engine.providers.sdk_preload import likely_provider, start_sdk_import
from loom_engine.sandbox.config import SandboxMode

from .print_mode import PRINT_FLAGS
from .version import __version__


def _start_sdk_import_for_run(argv: list[str]) -> None:
    """`loom run` (and `loom acp`): the provider SDK (most of a second) starts importing now, before
    typer and the engine load, so that it overlaps with them, the settings, the git
    status and the files read; the agent's provider waits for it when it builds its client."""
    args = argv[1:]
    if (args[:1] in (["run"], ["acp"]) or any(arg in PRINT_FLAGS for arg in args)) and not {"--help", "-h"} & set(args):
        start_sdk_import(likely_provider(args))


_start_sdk_import_for_run(sys.argv)

import typer  # noqa: E402  (after the SDK import has started)

from .command_errors import fail, usage_line  # noqa: E402  (imports typer)

app = typer.Typer(add_completion=False, no_args_is_help=False, rich_markup_mode=None,
                  pretty_exceptions_enable=False,
                  help="Loom: a terminal coding assistant. `loom` opens the chat; `loom run TASK` (or `loom -p TASK`) "
                       "runs headless.")


OutputFormat = Literal["text", "json", "stream-json", "loom-stream-json"]
SANDBOX_HELP = ("auto: confine commands where this machine can; on: refuse to run them where it cannot; "
                "off: no sandbox. Beats LOOM_SANDBOX and [sandbox] mode.")

# The project-trust flags of `loom run` and `loom acp` (neither can ask the trust question).
TrustProject = Annotated[bool, typer.Option(
    "--trust-project", help="Use what the project's settings (.loom/settings*.toml, .claude/settings*.json) "
                            "and agent files would widen (allow rules, a looser mode, the model), "
                            "for this run only.")]
TrustProjectMcp = Annotated[bool, typer.Option(
    "--trust-project-mcp", help="Use the MCP servers of the project's .mcp.json without approval, "
                                "for this run only.")]
TrustProjectHooks = Annotated[bool, typer.Option(
    "--trust-project-hooks", help="Run the hooks of the project's settings files (.loom/, .claude/) "
                                  "that you have not trusted, for this run only.")]


def _task_text(prompt: str | None, code: int) -> str:
    """The task: the prompt argument, with piped standard input after it (as `claude -p`);
    '-' or no prompt: standard input is the prompt. Bytes that are not UTF-8 are refused
    with where they are, rather than guessed at (or crashing the session write later)."""
    from .piped_input import PromptInputError, task_text

    stdin = sys.stdin
    try:
        task = task_text(prompt, getattr(stdin, "buffer", None), lambda: stdin.isatty())
    except PromptInputError as error:
        fail(str(error), code)
        raise  # unreachable: fail exits
    if task.warning:
        sys.stderr.write(f"loom: warning: {task.warning}\n")
    return task.text


def _stream_json_prompts(code: int) -> list[str]:
    """``--input-format stream-json``: the user messages on standard input."""
    from .piped_input import PromptInputError, stream_json_prompts

    try:
        return stream_json_prompts(getattr(sys.stdin, "buffer", None))
    except PromptInputError as error:
        fail(str(error), code)
        raise  # unreachable: fail exits


def _tolerate_narrow_terminals() -> None:
    """A terminal whose encoding cannot show a character of the answer (LANG=C,
    latin-1) gets a replacement mark for it, not a crash after the work is done."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")


def _check_user_setup() -> None:
    """The user's own setup (config file, Loom's folders, endpoint variables): a mistake
    there is one line and exit 2, before anything starts."""
    from .user_setup import setup_problem

    problem = setup_problem()
    if problem:
        fail(problem, 2)


def _version(value: bool) -> None:
    if value:
        print(f"loom {__version__}")
        raise typer.Exit(0)


@app.callback(invoke_without_command=True)
def root(ctx: typer.Context,
         version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                               help="Print the version and exit.")] = False,
         continue_: Annotated[bool, typer.Option("--continue", "-c", help="Continue the newest session here.")] = False,
         resume: Annotated[str | None, typer.Option("--resume", "-r", help="Resume the session with this id.")] = None,
         fork_session: Annotated[bool, typer.Option(
             "--fork-session", help="With --continue/--resume: continue a copy, as a new session.")] = False,
         model: Annotated[str | None, typer.Option("--model", "-m", help="Model name.")] = None,
         provider: Annotated[ProviderName | None, typer.Option("--provider", help="LLM provider.")] = None,
         permission_mode: Annotated[PermissionMode | None, typer.Option(
             "--permission-mode", help="What may run without asking (Shift+Tab cycles it).")] = None,
         sandbox: Annotated[SandboxMode | None, typer.Option("--sandbox", help=SANDBOX_HELP)] = None) -> None:
    if ctx.invoked_subcommand is not None:
        return
    from .tui.launch import open_tui

    if fork_session and not (continue_ or resume):
        fail("--fork-session needs --continue or --resume", 2)
    _check_user_setup()
    open_tui(continue_session=continue_, resume_id=resume, fork_session=fork_session, model=model,
             provider=provider, permission_mode=permission_mode, sandbox=sandbox)


@app.command()
def run(prompt: Annotated[str | None, typer.Argument(
            help="The task; piped standard input is added after it. '-' or none: the task is standard input.",
            show_default=False)] = None,
        provider: Annotated[ProviderName | None, typer.Option("--provider", help="LLM provider.")] = None,
        model: Annotated[str | None, typer.Option("--model", "-m", help="Model name.")] = None,
        output_format: Annotated[OutputFormat, typer.Option(
            "--output-format", "-o", help="text: the answer; json: the result object; stream-json: a JSON line "
                                         "per message, then the result (both as claude -p prints them); "
                                         "loom-stream-json: a JSON line per Loom event.")
        ] = "text",
        input_format: Annotated[Literal["text", "stream-json"], typer.Option(
            "--input-format", help="text: the prompt (and what is piped in); stream-json: user messages on "
                                   "standard input, one JSON object a line, run in turn (with -o stream-json).")
        ] = "text",
        max_turns: Annotated[int | None, typer.Option(
            "--max-turns", min=1, help="Stop after this many turns (exit 3).")] = None,
        max_budget_usd: Annotated[float | None, typer.Option(
            "--max-budget-usd", min=0.0, help="Stop once the run has cost this much (exit 3).")] = None,
        continue_: Annotated[bool, typer.Option("--continue", "-c", help="Continue the newest session here.")] = False,
        resume: Annotated[str | None, typer.Option("--resume", "-r", help="Resume the session with this id.")] = None,
        fork_session: Annotated[bool, typer.Option(
            "--fork-session", help="With --continue/--resume: continue a copy, as a new session.")] = False,
        permission_mode: Annotated[PermissionMode | None, typer.Option(
            "--permission-mode", help="What may run without asking; a question is a denial here.")] = None,
        sandbox: Annotated[SandboxMode | None, typer.Option("--sandbox", help=SANDBOX_HELP)] = None,
        allow: Annotated[list[str] | None, typer.Option(
            "--allow", help="Allow rule, e.g. 'bash(git diff:*)'.")] = None,
        deny: Annotated[list[str] | None, typer.Option(
            "--deny", help="Deny rule, e.g. 'edit_file(secrets/**)'.")] = None,
        add_dir: Annotated[list[Path] | None, typer.Option(
            "--add-dir", help="Another folder the tools may use.")] = None,
        script: Annotated[Path | None, typer.Option("--script", help="Script file for --provider scripted.")] = None,
        trust_project: TrustProject = False,
        mcp_config: Annotated[list[Path] | None, typer.Option(
            "--mcp-config", help="A JSON file of MCP servers ({\"mcpServers\": ...}) to use too.")] = None,
        trust_project_mcp: TrustProjectMcp = False,
        trust_project_hooks: TrustProjectHooks = False,
        wait_for_reset: Annotated[bool, typer.Option(
            "--wait-for-reset", help="At a usage limit (a plan's 5-hour or weekly allowance, a spent quota), "
                                     "wait for it to reset and go on; without it the run stops (exit 5).")] = False,
        max_wait: Annotated[str | None, typer.Option(
            "--max-wait", help="With --wait-for-reset: the longest wait, e.g. 90s, 30m, 5h (default 5h); "
                               "a later reset stops the run (exit 5).")] = None,
        ) -> None:
    """Run one task headless and print the answer."""
    import asyncio

    from .bootstrap import RunOptions, UsageError, build_agent
    from .headless import EXIT_ERROR, EXIT_USAGE, run_headless
    from .settings import ConfigError

    more_prompts: list[str] = []
    if input_format == "stream-json":
        if output_format != "stream-json" or prompt is not None:
            fail("--input-format stream-json takes the messages on standard input, with -o stream-json and "
                 "no prompt argument", EXIT_USAGE)
        prompt, *more_prompts = _stream_json_prompts(EXIT_USAGE)
    else:
        prompt = _task_text(prompt, EXIT_USAGE)
    _tolerate_narrow_terminals()
    if not prompt.strip():
        fail("the prompt is empty", EXIT_USAGE)
    if continue_ and resume:
        fail("use --continue or --resume, not both", EXIT_USAGE)
    from .usage_limits import headless_policy

    try:
        usage_limits = headless_policy(wait_for_reset, max_wait)
    except ValueError as error:
        fail(str(error), EXIT_USAGE)
    _check_user_setup()
    options = RunOptions(provider=provider, model=model, max_turns=max_turns,
                         max_budget_usd=max_budget_usd, continue_session=continue_, resume_id=resume,
                         fork_session=fork_session,
                         permission_mode=permission_mode, sandbox=sandbox,
                         allow=tuple(allow or ()), deny=tuple(deny or ()), add_dirs=tuple(add_dir or ()),
                         script=script, trust_project=trust_project or None,
                         mcp_config=tuple(mcp_config or ()), trust_project_mcp=trust_project_mcp,
                         trust_project_hooks=trust_project_hooks, usage_limits=usage_limits,
                         proposes_memory=True)
    from loom_engine.providers.base import ProviderError

    try:
        built = build_agent(options, interactive=False)
    except UsageError as error:
        fail(str(error), EXIT_USAGE)
    except (ConfigError, ProviderError) as error:
        fail(str(error), EXIT_ERROR)
    if built.ignored:
        from .project_trust import ignored_line

        sys.stderr.write("loom: ignored from the project's settings (workspace not trusted; --trust-project "
                         f"to use): {ignored_line(built.ignored)}\n")
    for warning in built.warnings:
        sys.stderr.write(f"loom: warning: {warning}\n")
    if built.mcp_plan is not None:
        for line in built.mcp_plan.skipped_lines():
            sys.stderr.write(f"loom: {line}\n")
    skipped_hooks = built.hook_plan.skipped_line() if built.hook_plan is not None else None
    if skipped_hooks:
        sys.stderr.write(f"loom: {skipped_hooks}\n")
    from .mcp_setup import headless_wait_s

    code = asyncio.run(run_headless(built.agent, prompt, output_format,
                                    mcp_wait_s=headless_wait_s(), usage_limits=usage_limits,
                                    more_prompts=more_prompts, promoter=built.promoter))
    from .exit import exit_now

    exit_now(code, built.session)


@app.command()
def acp(provider: Annotated[ProviderName | None, typer.Option("--provider", help="LLM provider.")] = None,
        model: Annotated[str | None, typer.Option("--model", "-m", help="Model name.")] = None,
        permission_mode: Annotated[PermissionMode | None, typer.Option(
            "--permission-mode", help="The sessions' first mode (bypass is offered only when named here).")] = None,
        sandbox: Annotated[SandboxMode | None, typer.Option("--sandbox", help=SANDBOX_HELP)] = None,
        trust_project: TrustProject = False, trust_project_mcp: TrustProjectMcp = False,
        trust_project_hooks: TrustProjectHooks = False) -> None:
    """Serve Loom to an editor over the Agent Client Protocol on stdio (docs/editors.md)."""
    from .acp.command import serve
    from .bootstrap import RunOptions

    _check_user_setup()
    raise typer.Exit(serve(RunOptions(provider=provider, model=model, permission_mode=permission_mode,
                                      sandbox=sandbox, trust_project=trust_project or None,
                                      trust_project_mcp=trust_project_mcp,
                                      trust_project_hooks=trust_project_hooks)))


from .batch.cli import batch  # noqa: E402  (the body lives there)

app.command()(batch)
from .sessions_command import sessions_app  # noqa: E402  (the body lives there)

app.add_typer(sessions_app, name="sessions")
from .memory_command import memory_app  # noqa: E402  (the body lives there)

app.add_typer(memory_app, name="memory")


@app.command()
def rewind(to: Annotated[int | None, typer.Option("--to", min=1, help="Rewind to just before prompt N.")] = None,
           list_: Annotated[bool, typer.Option("--list", help="List the prompts (time, text, files changed).")] = False,
           undo: Annotated[bool, typer.Option("--undo", help="Undo the session's last rewind.")] = False,
           session: Annotated[str | None, typer.Option(
               "--session", help="The session's id (default: the newest of this workspace).")] = None,
           code: Annotated[bool, typer.Option("--code", help="Only the files.")] = False,
           conversation: Annotated[bool, typer.Option("--conversation", help="Only the conversation.")] = False,
           yes: Annotated[bool, typer.Option("--yes", "-y", help="Do it (without: only the preview).")] = False,
           include_conflicts: Annotated[bool, typer.Option(
               "--include-conflicts", help="Also restore files changed outside Loom since then.")] = False,
           output_format: Annotated[Literal["text", "json"], typer.Option(
               "--output-format", "-o", help="text or json.")] = "text") -> None:
    """Rewind the files and/or the conversation to just before a prompt (a preview unless --yes)."""
    from loom_engine.snapshots.model import RewindMode

    from .rewind_command import RewindCommandError, RewindRequest, run_rewind

    if code and conversation:
        fail("use --code or --conversation, not both (neither: both are rewound)", 2)
    mode = RewindMode.CODE if code else RewindMode.CONVERSATION if conversation else RewindMode.BOTH
    try:
        code_, text = run_rewind(RewindRequest(cwd=Path.cwd(), session_id=session, to=to, list_points=list_,
                                               undo=undo, mode=mode, yes=yes, include_conflicts=include_conflicts,
                                               json_output=output_format == "json"))
    except RewindCommandError as error:
        fail(str(error), error.code)
    from .visible_text import raw_stream

    print(text, file=raw_stream(sys.stdout) if output_format == "json" else sys.stdout)  # JSON is data
    raise typer.Exit(code_)


@app.command()
def export(session: Annotated[str, typer.Argument(help="A session id, a unique prefix of one, or 'last'.")],
           format_: Annotated[str, typer.Option("--format", "-f", help="The format: atif.")] = "atif",
           output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here (default: stdout).")] = None
           ) -> None:
    """Export a session as a trajectory (ATIF, the format Harbor and Terminal-Bench read)."""
    from .export_command import ExportError, ExportRequest, run_export

    try:
        text = run_export(ExportRequest(session=session, format=format_, cwd=Path.cwd(), output=output))
    except ExportError as error:
        fail(str(error), error.code)
    if output is None:
        from .visible_text import raw_stream

        raw_stream(sys.stdout).write(text)  # JSON is data


@app.command()
def config() -> None:
    """Show where config and sessions live, and each effective setting with its source."""
    from loom_engine.paths import config_dir, data_dir, sessions_dir, user_config_file
    from loom_engine.workspace import find_workspace_root

    from .config_report import config_report
    from .settings import ConfigError

    _check_user_setup()
    workspace = find_workspace_root(Path.cwd())
    try:
        lines = config_report(workspace, user_config_file(), config_dir=config_dir(), data_dir=data_dir(),
                              sessions_dir=sessions_dir())
    except ConfigError as error:
        fail(str(error), 1)
    print("\n".join(lines))


@app.command()
def skills() -> None:
    """List the skills Loom can load, with where each comes from."""
    from loom_engine.paths import builtin_skills_dir, config_dir
    from loom_engine.skills.catalog import SkillCatalog
    from loom_engine.workspace import find_workspace_root

    from .claude_folder import user_claude_home

    catalog = SkillCatalog.discover(find_workspace_root(Path.cwd()), user_config_dir=config_dir(),
                                    builtin_dir=builtin_skills_dir(), claude_home=user_claude_home())
    for warning in catalog.warnings:
        sys.stderr.write(f"loom: warning: {warning}\n")
    for skill in catalog:
        print(f"{skill.name:<20} {skill.source:<10} {skill.folder}")
        print(f"{'':<20} {skill.description[:100]}")


@app.command()
def agents() -> None:
    """List the custom sub-agents (.loom/agents, .claude/agents, the user's agents/) and the files not used."""
    from builtin_tools import default_tools
    from loom_engine.paths import config_dir
    from loom_engine.workspace import find_workspace_root

    from .agents_command import agents_lines

    known = [tool.name for tool in default_tools()]
    print("\n".join(agents_lines(find_workspace_root(Path.cwd()), config_dir(), known)))


@app.command("sandbox")
def sandbox_report(output_format: Annotated[Literal["text", "json"], typer.Option(
        "--output-format", "-o", help="text or json.")] = "text") -> None:
    """Whether commands run in the OS sandbox here and by what (or why not, and the fix);
    what they may write and read, and the network."""
    import json

    from .sandbox_command import describe_sandbox
    from .sandbox_report import report_lines
    from .settings import ConfigError

    try:
        report = describe_sandbox(Path.cwd())
    except ConfigError as error:
        fail(str(error), 1)
    for warning in report.warnings:
        sys.stderr.write(f"loom: warning: {warning}\n")
    if output_format == "json":
        print(json.dumps(report.facts.as_json()))
    else:
        print("\n".join(report_lines(report.facts)))


from .mcp_cli import mcp_app  # noqa: E402  (the body lives there)

app.add_typer(mcp_app, name="mcp")
from .server_cli import server_app  # noqa: E402  (the body lives there)

app.add_typer(server_app, name="server")


def _command_names() -> set[str]:
    """The subcommands' names (typer names an unnamed command after its function)."""
    names = {info.name or (info.callback.__name__.replace("_", "-") if info.callback else "")
             for info in app.registered_commands}
    return names | {group.name for group in app.registered_groups if group.name}


def main() -> None:
    from .visible_text import show_controls_on_standard_streams

    # What any command prints (file names, settings, session prompts, server errors, the
    # answer) may come from outside: no control character of it reaches the terminal.
    show_controls_on_standard_streams()
    try:
        from .print_mode import print_as_run

        code = app(args=print_as_run(sys.argv[1:], _command_names()), standalone_mode=False)
    except Exception as error:  # a bug must still end with one line, not a traceback
        line = usage_line(error)
        sys.stderr.write((line or f"loom: internal error: {type(error).__name__}: {error}") + "\n")
        sys.exit(int(getattr(error, "exit_code", 1)) if line else 1)
    sys.exit(code if isinstance(code, int) else 0)
