"""The Tool protocol, what a tool receives when it runs, and what it returns."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, runtime_checkable

from pydantic import BaseModel
from typing_extensions import TypeVar  # a default (PEP 696) before Python 3.13

from ..events import AgentEvent
from ..execution import CancelToken
from ..messages import ImagePart
from ..permissions.targets import PermissionTarget
from ..tool_spec import ToolSpec
from ..workspace import Workspace

if TYPE_CHECKING:
    from ..memory.entries import MemoryStore, Scope
    from ..sandbox.sandbox import Sandbox
    from ..skills.catalog import SkillCatalog
    from .io import CommandRunner, FileAccess


@dataclass(frozen=True)
class ToolOutput:
    """What a tool returns: text for the model, plus an optional rendering hint for UIs."""

    content: str
    is_error: bool = False
    # e.g. {"kind": "diff", "path": "a.py", "diff": "<unified diff>"}
    display: Mapping[str, Any] | None = None
    # Images for the model (an MCP tool's image result), sent after the text result.
    images: tuple[ImagePart, ...] = ()


class ToolError(Exception):
    """Raised by a tool to return an error result the model can act on."""


@dataclass
class FileRecord:
    """What a read saw, so later writes can tell whether the file changed since."""

    mtime_ns: int
    size: int
    read_at: float = field(default_factory=time.time)


@dataclass
class ToolSessionState:
    """Mutable state tools share across calls within one session."""

    read_files: dict[str, FileRecord] = field(default_factory=dict)  # key: resolved path
    todos: list[dict[str, Any]] = field(default_factory=list)
    # Working directory for bash; `cd` persists while it stays inside the workspace.
    cwd: Path | None = None
    # The version of each memory entry this agent last saw ("scope:path" -> version), so
    # an edit based on an outdated view is refused (builtin_tools/memory.py).
    memory_seen: dict[str, str] = field(default_factory=dict)

    def record_read(self, resolved: Path) -> None:
        st = resolved.stat()
        self.read_files[str(resolved)] = FileRecord(st.st_mtime_ns, st.st_size)

    def was_read(self, resolved: Path) -> bool:
        return str(resolved) in self.read_files

    def changed_since_read(self, resolved: Path) -> bool:
        record = self.read_files.get(str(resolved))
        if record is None:
            return True
        try:
            st = resolved.stat()
        except FileNotFoundError:
            return True
        return (st.st_mtime_ns, st.st_size) != (record.mtime_ns, record.size)


class ReadRules(Protocol):
    """What the permission rules say about reading single files, for tools that read many
    at once (grep, glob, ls): a search cannot stop to ask about each file it finds, so it
    leaves out what a deny or an ask rule covers. The permission manager answers."""

    def withheld_reads(self, tool: str) -> Callable[[Path], bool] | None:
        """A test for the paths (as found on disk) a deny or ask rule covers for reading
        by ``tool``; None when no rule limits reading, so nothing need be checked."""
        ...


# The task tool starts a child agent through this; the engine provides it.
SpawnSubagent = Callable[..., Awaitable[ToolOutput]]


@dataclass
class ToolContext:
    workspace: Workspace
    cancel: CancelToken
    state: ToolSessionState
    call_id: str = ""
    # Streams a line of progress (e.g. bash output) to the UI.
    progress: Callable[[str], None] = lambda text: None
    # Sends an engine event (e.g. TodosUpdated) to the UI.
    emit: Callable[[AgentEvent], None] = lambda event: None
    skills: SkillCatalog | None = None
    spawn_subagent: SpawnSubagent | None = None
    # Paths as this call resolved them (raw -> resolved), so the permission check, the
    # preview and the run all act on the same place even if a symlink changes meanwhile.
    resolved_paths: dict[str, Path] = field(default_factory=dict)
    # The OS sandbox commands run in (bash, a command's `!cmd`); None: unconfined.
    sandbox: Sandbox | None = None
    # The rules a search leaves files out by; None: no rules (nothing is left out).
    read_rules: ReadRules | None = None
    # Variables the commands this call starts get besides the user's own: ``TRACEPARENT``
    # of the call's span when telemetry is on (see loom_engine/telemetry).
    command_env: Mapping[str, str] = field(default_factory=dict)
    # The session this call is part of (None: not saved), so a search of past sessions
    # can leave it out.
    session_id: str | None = None
    # Where file contents are read and written, and commands run (an editor's, over
    # ACP); None: Loom's own. Every check happens before either is called (see io.py).
    files: FileAccess | None = None
    commands: CommandRunner | None = None
    # The memory scopes this agent may use, for the memory tool (None: no memory here).
    memory_scopes: Mapping[Scope, MemoryStore] | None = None

    @property
    def cwd(self) -> Path:
        return self.state.cwd or self.workspace.root

    def resolve(self, path: str) -> Path:
        return self.workspace.resolve(path)


# The validated arguments a tool's ``run`` receives: its own ``input_model``. A bare
# ``Tool`` (a registry's, a pipeline's: tools of every kind) means ``Tool[Any]``, so an
# embedder's strict type checker accepts it as written.
ArgsT = TypeVar("ArgsT", bound=BaseModel, default=Any)


@runtime_checkable
class Tool(Protocol[ArgsT]):
    """A capability the model can call.

    ``input_model`` validates the arguments (and gives the JSON schema the model sees);
    ``run`` receives the validated model instance. The facts below are what the rest of
    Loom knows about a tool, so no other module keeps lists of tool names:

    ``guidance``       the tool's note in the system prompt ("" for none).
    ``reads_files``    its permission target reads files at paths: the ``read`` rule
                       group covers it, and a bash command reading a file is checked
                       against its rules too.
    ``writes_files``   its target writes files at paths: the ``edit`` group covers it.
    ``session_only``   it changes nothing outside the session (the todo list, a
                       sub-agent whose own calls are checked, a loaded skill), so plan
                       mode allows it even when it is not read-only.
    """

    name: str
    description: str
    input_model: type[ArgsT]
    is_concurrency_safe: bool
    is_read_only: bool
    guidance: str
    reads_files: bool
    writes_files: bool
    session_only: bool

    def permission_target(self, args: ArgsT, ctx: ToolContext) -> PermissionTarget | None:
        """What the call touches; ``None`` means it needs no permission."""
        ...

    def reads_only(self, args: ArgsT) -> bool:
        """Whether this call only reads (plan mode allows it): ``is_read_only``, or a
        read command of a tool that also writes (memory's ``view``)."""
        ...

    async def preview(self, args: ArgsT, ctx: ToolContext) -> Mapping[str, Any] | None:
        """What the call will do, for a permission prompt (a diff, the command...)."""
        ...

    async def run(self, args: ArgsT, ctx: ToolContext) -> ToolOutput: ...


class BaseTool(ABC, Generic[ArgsT]):
    """Convenient defaults for implementing :class:`Tool`; subclasses set the class
    attributes and write ``run``."""

    name: str
    description: str
    input_model: type[ArgsT]
    is_concurrency_safe: bool = False
    is_read_only: bool = False
    guidance: str = ""
    reads_files: bool = False
    writes_files: bool = False
    session_only: bool = False

    def permission_target(self, args: ArgsT, ctx: ToolContext) -> PermissionTarget | None:
        return None

    def reads_only(self, args: ArgsT) -> bool:
        return self.is_read_only

    async def preview(self, args: ArgsT, ctx: ToolContext) -> Mapping[str, Any] | None:
        return None

    @abstractmethod
    async def run(self, args: ArgsT, ctx: ToolContext) -> ToolOutput: ...


def changes_workspace(tool: Tool) -> bool:
    """Whether a call may change what is on disk (so facts about the workspace, such as
    the context estimate, are worth refreshing after it)."""
    return not (tool.is_read_only or tool.session_only)


def subagent_tool_names(tools: Iterable[Tool]) -> tuple[str, ...]:
    """The tools a sub-agent gets when the task call names none: those that only read
    files (read_file, glob, grep and ls among the built-ins), in the given order."""
    return tuple(t.name for t in tools if t.is_read_only and t.reads_files)


def tool_spec(tool: Tool) -> ToolSpec:
    # A tool described by a JSON schema of its own (an MCP server's) passes it on as is.
    raw: Mapping[str, Any] | None = getattr(tool, "json_schema", None)
    if raw is not None:
        return ToolSpec(tool.name, tool.description, raw)
    schema = tool.input_model.model_json_schema()
    schema.pop("title", None)
    return ToolSpec(tool.name, tool.description, schema)
