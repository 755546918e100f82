"""Slash commands: parsing, help text, and the read-only reports they print.

The commands that change the app's state (/clear, /compact, /model, /resume, /mode,
/exit) are carried out by the app; the text they print is built here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .status_bar import StatusInfo, human_tokens

COMMANDS: tuple[tuple[str, str], ...] = (
    ("help", "commands and keys"),
    ("clear", "start a new session"),
    ("compact", "summarise the conversation now  [focus]"),
    ("model", "show or switch the model  [name]"),
    ("cost", "tokens and cost of this session"),
    ("skills", "list the available skills"),
    ("resume", "resume an earlier session of this workspace  [id]"),
    ("mode", "show or set the permission mode  [default|accept-edits|plan|bypass]"),
    ("permissions", "show the effective permission rules"),
    ("exit", "quit Loom"),
)
COMMAND_NAMES = frozenset(name for name, _ in COMMANDS)
PERMISSION_MODES = ("default", "accept-edits", "plan", "bypass")

KEYS_HELP = (
    ("Enter", "send (while a run streams, the message is queued)"),
    ("Shift+Enter / Ctrl+J", "newline"),
    ("Up / Down", "prompt history"),
    ("Esc", "interrupt the running turn"),
    ("Ctrl+C", "interrupt; on an idle prompt press twice to quit; copies selected text"),
    ("Ctrl+D", "quit"),
    ("Shift+Tab", "cycle the permission mode"),
    ("Ctrl+O", "expand / collapse tool output"),
    ("@path", "mention a workspace file (Tab completes)"),
)


@dataclass(frozen=True)
class ParsedCommand:
    name: str
    arg: str

    @property
    def known(self) -> bool:
        return self.name in COMMAND_NAMES


def parse_command(text: str) -> ParsedCommand | None:
    """A slash command, or None when the text is a prompt (``/path/like`` text is a prompt)."""
    stripped = text.strip()
    if not stripped.startswith("/") or len(stripped) < 2:
        return None
    head, _, rest = stripped[1:].partition(" ")
    if "/" in head:
        return None
    return ParsedCommand(head.lower(), rest.strip())


def help_text() -> str:
    width = max(len(name) for name, _ in COMMANDS) + 2
    lines = ["Commands:"]
    lines += [f"  /{name:<{width}}{text}" for name, text in COMMANDS]
    lines.append("Keys:")
    key_width = max(len(k) for k, _ in KEYS_HELP) + 2
    lines += [f"  {key:<{key_width}}{text}" for key, text in KEYS_HELP]
    return "\n".join(lines)


def cost_text(info: StatusInfo, metrics: Any) -> str:
    usage = info.usage
    lines = [
        f"Session cost: ${info.cost_usd:.4f}",
        f"  input {human_tokens(usage.input_tokens)}"
        f" · cache read {human_tokens(usage.cache_read_input_tokens)}"
        f" · cache write {human_tokens(usage.cache_creation_input_tokens)}"
        f" · output {human_tokens(usage.output_tokens)}",
        f"  prompt-cache hit rate {info.cache_hit_rate * 100:.0f}%",
    ]
    if metrics is not None:
        calls = getattr(metrics, "llm_calls", None)
        tools = getattr(metrics, "tool_calls", None)
        if calls is not None:
            lines.append(f"  LLM calls {calls} · tool calls {tools if tools is not None else 0}")
    if info.context_window:
        lines.append(f"  context {human_tokens(info.context_used)} of {human_tokens(info.context_window)}"
                     f" ({info.context_percent:.0f}%)")
    return "\n".join(lines)


def _field(obj: Any, *names: str) -> Any:
    for name in names:
        if isinstance(obj, Mapping) and name in obj:
            return obj[name]
        if hasattr(obj, name):
            return getattr(obj, name)
    return None


def _skills_of(catalog: Any) -> list[Any]:
    if catalog is None:
        return []
    for name in ("skills", "all", "list", "entries"):
        value = getattr(catalog, name, None)
        if callable(value):
            value = value()
        if isinstance(value, Mapping):
            return list(value.values())
        if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
            return list(value)
    if isinstance(catalog, Iterable):
        return list(catalog)
    return []


def skills_text(catalog: Any) -> str:
    skills = _skills_of(catalog)
    if not skills:
        return "No skills found (Loom's skills/, your config dir's skills/, .loom/skills/)."
    lines = [f"Skills ({len(skills)}):"]
    for skill in sorted(skills, key=lambda s: str(_field(s, "name") or "")):
        name = _field(skill, "name") or "?"
        description = str(_field(skill, "description") or "").strip().splitlines()
        source = _field(skill, "source")
        line = f"  {name}  {description[0] if description else ''}"
        if source:
            line += f"  [{source}]"
        lines.append(line)
    return "\n".join(lines)


def permissions_text(manager: Any) -> str:
    if manager is None:
        return "No permission manager: every tool call is allowed."
    mode = _field(manager, "mode")
    lines = [f"Permission mode: {mode}"]
    describe = getattr(manager, "describe", None)
    if callable(describe):
        described = describe()
        if isinstance(described, str):
            return "\n".join([lines[0], described]) if described.strip() else lines[0]
        if isinstance(described, Iterable):
            lines += [f"  {line}" for line in described]
            return "\n".join(lines)
    effective = getattr(manager, "effective_rules", None)
    if callable(effective):
        rows = list(effective())
        order = {"deny": 0, "ask": 1, "allow": 2}
        rows.sort(key=lambda row: order.get(str(row[0]), 3))
        lines += [f"  {behavior:<5} {rule}   ({source})" for behavior, rule, source in rows]
        if not rows:
            lines.append("  no rules: the mode decides")
        lines.append("Order: deny beats ask beats allow.")
        return "\n".join(lines)
    layers = _field(manager, "layers") or ()
    rules = 0
    for layer in layers:
        source = _field(layer, "source") or "rules"
        for kind in ("deny", "ask", "allow"):
            values = _field(layer, kind) or ()
            for rule in values:
                lines.append(f"  {kind:<5} {rule}   ({source})")
                rules += 1
    session_rules = _field(manager, "session_rules", "session_allow") or ()
    for rule in session_rules:
        lines.append(f"  allow {rule}   (this session)")
        rules += 1
    if rules == 0:
        lines.append("  no rules: the mode decides (reads in the workspace allowed, edits and bash ask)")
    lines.append("Order: deny beats ask beats allow.")
    return "\n".join(lines)


def session_label(info: Any) -> str:
    import time

    updated = _field(info, "updated")
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(updated)) if isinstance(updated, (int, float)) else ""
    prompt = str(_field(info, "first_prompt") or "").strip().splitlines()
    first = prompt[0] if prompt else "(no prompt)"
    if len(first) > 60:
        first = first[:59] + "…"
    return f"{when}  {_field(info, 'turns') or 0:>3} turns  {first}  [{_field(info, 'id')}]"


def next_mode(current: str, modes: Sequence[str]) -> str:
    if current not in modes:
        return modes[0]
    return modes[(modes.index(current) + 1) % len(modes)]
