"""Issue 9, item 15: every built-in tool, fed arguments from the whole of Unicode.

The calls go through the real pipeline (validate, authorize, execute, format) in a
temporary workspace. Whatever the model sends - NUL bytes, lone surrogates, control
characters, huge integers, wrong types - must come back as a result the model reads:
never an exception out of the pipeline, never a tool crash ("failed: TypeError ..."),
and never text the session file or the next request could not encode.

Nothing dangerous runs: the mode is accept-edits (files inside the temporary
workspace may change; anything outside it would be asked about, which a
non-interactive run denies), and deny rules stop bash and web_fetch after their
arguments have been parsed and checked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builtin_tools import default_tools
from loom_engine.bus import EventBus
from loom_engine.events import AgentEvent
from loom_engine.execution import CancelToken
from loom_engine.messages import ToolUsePart
from loom_engine.metrics import RunMetrics
from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.tools.base import Tool, ToolContext, ToolSessionState
from loom_engine.tools.pipeline import ToolPipeline, ToolRun
from loom_engine.tools.registry import ToolRegistry
from loom_engine.workspace import Workspace

TOOLS = {tool.name: tool for tool in default_tools()}
# Every character, surrogates and NUL included.
ANY_CHAR = st.characters(exclude_categories=())
TRICKY = st.sampled_from([
    "", ".", "..", "/", "~", "~/x", "\x00", "a\x00b", "src/\x00app.py", "\ud83d", "x\udcff.txt", "../../etc/passwd",
    "/etc/passwd", "README.md", "src/app.py", "src", "new.txt", "**/*", "*", "[", "(?", "\\", "a" * 5000,
    "\u202egnp.exe", "con", "nul", "\r\n", "file:///etc/passwd", "http://127.0.0.1:1/", "$(id)", "`id`",
    "*** Begin Patch\n*** Add File: p.txt\n+hi\n*** End Patch",
    "*** Begin Patch\n*** Update File: README.md\n@@\n-# demo\n+# d\x00mo\n*** End Patch",
    "*** Begin Patch\n*** Delete File: \x00\n*** End Patch",
])
TEXT = st.one_of(st.text(ANY_CHAR, max_size=40), TRICKY)
HUGE = st.one_of(st.integers(), st.sampled_from([0, -1, 2**63, -(2**63), 10**100, -(10**100)]))
SCALAR = st.one_of(TEXT, HUGE, st.booleans(), st.none(), st.floats(allow_nan=True, allow_infinity=True))
JSON = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                    st.dictionaries(TEXT, inner, max_size=4)), max_leaves=12)


def _strategy(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values shaped like ``schema`` most of the time, anything at all some of the time."""
    if "$ref" in schema:
        return _strategy(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, depth)
    if "anyOf" in schema:
        return st.one_of([_strategy(s, defs, depth) for s in schema["anyOf"]])
    if "enum" in schema:
        return st.one_of(st.sampled_from(schema["enum"]), TEXT)
    if "const" in schema:
        return st.one_of(st.just(schema["const"]), TEXT)
    kind = schema.get("type")
    if kind == "string":
        shaped: st.SearchStrategy[Any] = TEXT
    elif kind == "integer":
        shaped = HUGE
    elif kind == "number":
        shaped = st.one_of(HUGE, st.floats(allow_nan=True, allow_infinity=True))
    elif kind == "boolean":
        shaped = st.booleans()
    elif kind == "array" and depth < 3:
        shaped = st.lists(_strategy(schema.get("items", {}), defs, depth + 1), max_size=4)
    elif kind == "object" and depth < 3:
        shaped = _arguments(schema, defs, depth + 1)
    else:
        shaped = JSON
    return st.one_of(shaped, shaped, shaped, JSON)  # mostly the right shape


def _arguments(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    properties = schema.get("properties", {})
    required = list(schema.get("required", []))
    optional = [name for name in properties if name not in required]
    fixed = st.fixed_dictionaries({name: _strategy(properties[name], defs, depth) for name in required},
                                  optional={name: _strategy(properties[name], defs, depth) for name in optional})
    return st.one_of(fixed, fixed, fixed, st.dictionaries(TEXT, JSON, max_size=4))


def arguments_for(tool: Tool) -> st.SearchStrategy[Any]:
    schema = tool.input_model.model_json_schema()
    return _arguments(schema, schema.get("$defs", {}))


def _pipeline(root: Path, events: list[AgentEvent], metrics: RunMetrics) -> ToolPipeline:
    workspace = Workspace.at(root)
    permissions = PermissionManager(
        workspace, mode="accept-edits",
        layers=[RuleLayer(source="test", deny=("bash", "web_fetch"))])
    state = ToolSessionState()

    def make_context(call_id: str) -> ToolContext:
        return ToolContext(workspace=workspace, cancel=CancelToken(), state=state, call_id=call_id,
                           emit=events.append)

    return ToolPipeline(registry=ToolRegistry(list(TOOLS.values())), bus=EventBus(), metrics=metrics,
                        make_context=make_context, emit=events.append, stamp=dict, permissions=permissions,
                        interactive=False, timeout_s=20.0)


def _workspace(base: Path) -> Path:
    root = base / "ws"
    if not root.exists():
        (root / "src").mkdir(parents=True)
        (root / "README.md").write_text("# demo\n\nA small project.\n")
        (root / "src" / "app.py").write_text("def greet(name):\n    return name\n")
    return root


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_tool_answers_any_arguments_with_a_result(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    tool = TOOLS[name]
    base = tmp_path_factory.mktemp(f"fuzz_{name}")
    crashes: list[str] = []

    @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
    @given(arguments=arguments_for(tool))
    def one_call(arguments: Any) -> None:
        root = _workspace(base)
        events: list[AgentEvent] = []
        metrics = RunMetrics()
        pipeline = _pipeline(root, events, metrics)
        call = ToolUsePart("call_fuzz", name, arguments if isinstance(arguments, dict) else {"value": arguments})
        outcome = asyncio.run(pipeline.run(call))
        assert isinstance(outcome, ToolRun)
        result = outcome.result
        assert isinstance(result.content, str) and isinstance(result.is_error, bool)
        result.content.encode("utf-8")  # the session file and the next request can carry it
        internal = [key for key in metrics.errors if key.startswith(("tool:", "permission:"))]
        if internal:
            crashes.append(f"{name}({arguments!r}): {result.content[:300]}")
        assert not internal, result.content

    one_call()
    assert crashes == []
