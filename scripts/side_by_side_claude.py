"""Run the same Claude Code-configured repository and ``~/.claude`` through `claude -p`
and `loom run`, both against the fake LLM server, and print a markdown table of what
each sent to the model and what each printed.

Not part of the test suite (each `claude -p` takes seconds); run it by hand after
changing how Loom reads Claude Code's files or prints its output shapes:

    .venv/bin/python scripts/side_by_side_claude.py [--claude PATH] [--out FILE]

The setup, built in a throwaway folder with its own HOME (the user's own files are never
read):

* ``~/.claude``: ``CLAUDE.md``, an agent, a command, ``settings.json`` (an allow rule and
  a UserPromptSubmit hook); ``~/.claude.json``: a user-scope MCP server (mcp-server-time)
  and the approval of the project's server, as `claude` records it;
* the repository: ``CLAUDE.md`` with an ``@import``, ``.claude/rules`` (one always, one
  with ``paths:``), ``.claude/settings.json`` (an allow rule and a hook), an agent, a
  command, and ``.mcp.json`` with the reference filesystem server (from
  ``~/.cache/loom-tests``: ``python -m tests.doubles.mcp_servers`` installs it).

Loom gets ``--trust-project-mcp`` where Claude Code reads the approval from its own
file (Loom keeps its approvals apart). Markers in each file show which reached the model.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.doubles.fake_llm import FakeLLMServer, Reply  # noqa: E402
from tests.doubles.mcp_servers import ReferenceServers, cache_dir  # noqa: E402

DEFAULT_CLAUDE = Path("/work/peers/node_modules/.bin/claude")
MODEL = "claude-sonnet-4-5"
MARKERS = {
    "~/.claude/CLAUDE.md": "MARK-USER-CLAUDE-MD",
    "CLAUDE.md": "MARK-PROJECT-CLAUDE-MD",
    "@docs/style.md (imported)": "MARK-IMPORTED-STYLE",
    ".claude/rules/always.md": "MARK-RULE-ALWAYS",
    ".claude/rules/py.md (paths: src/**/*.py)": "MARK-RULE-PY",
    "agent ~/.claude/agents/user-helper": "user-helper",
    "agent .claude/agents/auditor": "auditor",
}


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    hooks: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    @property
    def main(self) -> dict[str, Any]:
        """The conversation's request: the first that offers tools (side requests do not)."""
        return next((r for r in self.requests if r.get("tools")), self.requests[0] if self.requests else {})


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def build(tmp: Path, servers: ReferenceServers) -> tuple[Path, Path]:
    home, repo = tmp / "home", tmp / "repo"
    log = tmp / "hooks.log"
    claude = home / ".claude"
    _write(claude / "CLAUDE.md", "MARK-USER-CLAUDE-MD: answer briefly.\n")
    _write(claude / "agents" / "user-helper.md",
           "---\nname: user-helper\ndescription: The user's helper agent.\ntools: Read\n---\nHelp.\n")
    _write(claude / "commands" / "hello.md", "---\ndescription: Greet\n---\nMARK-CMD-HELLO greet $ARGUMENTS\n")
    _write(claude / "settings.json", json.dumps({
        "permissions": {"allow": ["Bash(touch:*)"]},
        "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": f"echo user-hook >> {log}"}]}]}}))
    _write(repo / "CLAUDE.md", "MARK-PROJECT-CLAUDE-MD: see @docs/style.md\n")
    _write(repo / "docs" / "style.md", "MARK-IMPORTED-STYLE: four spaces.\n")
    _write(repo / ".claude" / "rules" / "always.md", "MARK-RULE-ALWAYS\n")
    _write(repo / ".claude" / "rules" / "py.md", "---\npaths: \"src/**/*.py\"\n---\nMARK-RULE-PY\n")
    _write(repo / ".claude" / "settings.json", json.dumps({
        "permissions": {"allow": ["Read"]},
        "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
                                                   "command": f"echo project-hook >> {log}"}]}]}}))
    _write(repo / ".claude" / "agents" / "auditor.md",
           "---\nname: auditor\ndescription: Audits the code.\ntools: Read, Grep\n---\nMARK-AUDITOR-BODY\n")
    _write(repo / ".claude" / "commands" / "review.md",
           "---\ndescription: Review a file\n---\nMARK-CMD-REVIEW review $ARGUMENTS\n")
    _write(repo / "src" / "app.py", "print('hi')\n")
    _write(repo / ".mcp.json", json.dumps({"mcpServers": {"files": servers.filesystem(repo)}}))
    _write(home / ".claude.json", json.dumps({
        "hasCompletedOnboarding": True,
        "mcpServers": {"clock": servers.python_server("mcp_server_time", "--local-timezone", "UTC")},
        "projects": {str(repo): {"enabledMcpjsonServers": ["files"], "hasTrustDialogAccepted": True}}}))
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return home, repo


def _env(home: Path, server: FakeLLMServer, tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE", "LOOM_"))}
    env.update(HOME=str(home), ANTHROPIC_API_KEY="sk-ant-side-by-side", ANTHROPIC_BASE_URL=server.anthropic_base_url,
               DISABLE_TELEMETRY="1", DISABLE_ERROR_REPORTING="1", DISABLE_AUTOUPDATER="1",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
               LOOM_DATA_DIR=str(tmp / "loom-data"), LOOM_CONFIG_DIR=str(tmp / "loom-config"),
               LOOM_PROVIDER="anthropic", LOOM_MODEL=MODEL)
    return env


@dataclass(frozen=True)
class Scenario:
    name: str
    prompt: str
    claude_args: tuple[str, ...] = ()
    loom_args: tuple[str, ...] = ()
    stdin: str | None = None
    # The replies, given the client's name for the shell tool ("Bash" / "bash").
    replies: Callable[[str], list[Reply]] = lambda shell: [Reply(text="DONE")]


SCENARIOS = (
    Scenario("plain task", "say hi"),
    Scenario("piped stdin", "review this", stdin="MARK-PIPED-DIFF\n"),
    Scenario("-o json", "say hi", ("--output-format", "json"), ("-o", "json")),
    Scenario("-o stream-json", "say hi", ("--output-format", "stream-json", "--verbose"), ("-o", "stream-json")),
    Scenario("project /review", "/review src/app.py"),
    Scenario("user /hello", "/hello world"),
    Scenario("unknown /nosuchcmd", "/nosuchcmd now"),
    Scenario("allowed shell call (touch, ~/.claude allow rule)", "make the file",
             replies=lambda shell: [Reply.tool(shell, {"command": "touch made-by-tool.txt",
                                                       "description": "make a file"}), Reply(text="DONE")]),
    Scenario("sub-agent (auditor)", "audit the code",
             replies=lambda shell: [Reply.tool("Agent" if shell == "Bash" else "task", {
                 "description": "audit", "prompt": "audit src/app.py", "subagent_type": "auditor"}),
                 Reply(text="AUDITED"), Reply(text="DONE")]),
)


def run_one(which: str, scenario: Scenario, claude_bin: Path, servers: ReferenceServers) -> Outcome:
    with tempfile.TemporaryDirectory() as name, FakeLLMServer() as server:
        tmp = Path(name).resolve()
        home, repo = build(tmp, servers)
        shell = "Bash" if which == "claude" else "bash"
        server.enqueue(*scenario.replies(shell), *[Reply(text="DONE")] * 8)
        if which == "claude":
            argv = [str(claude_bin), "-p", scenario.prompt, "--model", MODEL, *scenario.claude_args]
        else:
            argv = [sys.executable, "-m", "loom_cli", "run", scenario.prompt, "--trust-project-mcp",
                    *scenario.loom_args]
        feed: dict[str, Any] = ({"input": scenario.stdin} if scenario.stdin is not None
                                else {"stdin": subprocess.DEVNULL})
        done = subprocess.run(argv, cwd=repo, env=_env(home, server, tmp), capture_output=True, text=True,
                              timeout=240, **feed)
        log = tmp / "hooks.log"

        def clean(text: str) -> str:
            return text.replace(str(repo), "<repo>").replace(str(home), "<home>")

        return Outcome(done.returncode, clean(done.stdout), clean(done.stderr),
                       [r.body for r in server.requests if isinstance(r.body, dict)],
                       log.read_text().split() if log.exists() else [],
                       sorted(p.name for p in repo.iterdir() if p.name.startswith("made")))


def _flat(request: dict[str, Any]) -> str:
    return json.dumps({k: request.get(k) for k in ("system", "messages", "tools")})


def _tools(request: dict[str, Any]) -> list[str]:
    return [t.get("name", "?") for t in request.get("tools") or []]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ⏎ ").strip() or "(nothing)"


def _short(text: str, most: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= most else text[:most - 1] + "…"


def _output_shape(stdout: str) -> str:
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        objects = [json.loads(line) for line in lines]
    except ValueError:
        return _short(stdout)
    if len(objects) == 1 and isinstance(objects[0], dict):
        return "one object: " + ", ".join(sorted(objects[0]))
    init = objects[0] if objects and objects[0].get("subtype") == "init" else {}
    servers = ", ".join(f"{s.get('name')} {s.get('status')}" for s in init.get("mcp_servers") or [])
    kinds = [f"{o.get('type')}/{o.get('subtype')}" if o.get("subtype") else str(o.get("type")) for o in objects]
    return (f"{len(objects)} lines: " + " → ".join(dict.fromkeys(kinds))
            + (f" (init's mcp_servers: {servers})" if servers else ""))


def _tools_line(outcome: Outcome) -> str:
    tools = _tools(outcome.main)
    mcp = [t for t in tools if t.startswith("mcp__")]
    servers = sorted({t.split("__")[1] for t in mcp})
    return (f"{len(tools) - len(mcp)} built-in tools; {len(mcp)} MCP tools, "
            f"from servers: {', '.join(servers) or 'none'}")


def _subagent_line(outcome: Outcome) -> str:
    child = next((r for r in outcome.requests if "MARK-AUDITOR-BODY" in json.dumps(r.get("system"))), None)
    if child is None:
        return f"no sub-agent request (exit {outcome.code})"
    text = _flat(child)
    carried = [label for label, marker in list(MARKERS.items())[:4] if marker in text]
    return "its body, " + (", ".join(carried) if carried else "no instruction file")


def _refusal_line(outcome: Outcome) -> str:
    last_err = outcome.stderr.strip().splitlines()[-1] if outcome.stderr.strip() else "(empty)"
    asked = sum(1 for r in outcome.requests if r.get("tools"))
    return (f"exit {outcome.code}; stdout: {_short(outcome.stdout) or '(empty)'}; stderr: {_short(last_err)}; "
            f"{asked} model requests")


def rows(results: dict[str, dict[str, Outcome]]) -> list[tuple[str, str, str]]:
    def each(name: str, show: Callable[[Outcome], str]) -> tuple[str, str]:
        return show(results["claude"][name]), show(results["loom"][name])

    def reaches(name: str, marker: str) -> tuple[str, str]:
        return each(name, lambda o: "yes" if marker in _flat(o.main) else "no")

    table = [(f"reaches the model: {label}", *reaches("plain task", marker)) for label, marker in MARKERS.items()]
    table.append(("tools offered (plain task)", *each("plain task", _tools_line)))
    table.append(("UserPromptSubmit hooks that ran (~/.claude, project)",
                  *each("plain task", lambda o: ", ".join(o.hooks) or "none")))
    table.append(("plain task: printed, exit", *each("plain task", lambda o: f"{_short(o.stdout)}; exit {o.code}")))
    table.append(("plain task: stderr", *each("plain task", lambda o: _short(o.stderr, 400) or "(empty)")))
    table.append(("piped stdin reaches the model", *reaches("piped stdin", "MARK-PIPED-DIFF")))
    for name in ("-o json", "-o stream-json"):
        table.append((f"{name}: what is printed", *each(name, lambda o: _output_shape(o.stdout))))
    table.append(("project /review: expanded for the model", *reaches("project /review", "MARK-CMD-REVIEW")))
    table.append(("user /hello (~/.claude/commands): expanded", *reaches("user /hello", "MARK-CMD-HELLO")))
    table.append(("unknown /nosuchcmd", *each("unknown /nosuchcmd", _refusal_line)))
    table.append(("shell call allowed by ~/.claude/settings.json ran without asking",
                  *each(SCENARIOS[-2].name, lambda o: "yes" if o.files else f"no (exit {o.code})")))
    table.append(("sub-agent (project agent auditor): its request carries",
                  *each("sub-agent (auditor)", _subagent_line)))
    return table


def markdown(table: Sequence[tuple[str, str, str]], version: str) -> str:
    lines = [f"Claude Code {version} and Loom, both against the fake LLM server "
             "(scripts/side_by_side_claude.py).", "",
             "| | `claude -p` | `loom run` |", "|---|---|---|"]
    lines += [f"| {_cell(a)} | {_cell(b)} | {_cell(c)} |" for a, b, c in table]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claude", type=Path, default=DEFAULT_CLAUDE)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not args.claude.exists():
        sys.exit(f"side_by_side_claude: no Claude Code at {args.claude} (npm install @anthropic-ai/claude-code)")
    servers = ReferenceServers(cache_dir())
    if not servers.filesystem_js.exists() or shutil.which("node") is None:
        sys.exit("side_by_side_claude: the reference MCP servers are missing: python -m tests.doubles.mcp_servers")
    version = subprocess.run([str(args.claude), "--version"], capture_output=True, text=True).stdout.split()[0]
    results: dict[str, dict[str, Outcome]] = {"claude": {}, "loom": {}}
    for scenario in SCENARIOS:
        for which in ("claude", "loom"):
            print(f"{which}: {scenario.name}", file=sys.stderr)
            results[which][scenario.name] = run_one(which, scenario, args.claude, servers)
    text = markdown(rows(results), version)
    if args.out is not None:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
