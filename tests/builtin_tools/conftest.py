"""Shared fixtures for the built-in tool tests: a ToolContext over a temp workspace."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from loom_engine.execution import CancelToken
from loom_engine.tools.base import Tool, ToolContext, ToolOutput, ToolSessionState
from loom_engine.workspace import Workspace

MakeCtx = Callable[..., ToolContext]
CallTool = Callable[..., Awaitable[ToolOutput]]


@pytest.fixture
def make_ctx(tmp_path: Path) -> MakeCtx:
    """``make_ctx(root=None, **fields)``: a fresh ToolContext; the root defaults to tmp_path."""

    def factory(root: Path | None = None, **fields: Any) -> ToolContext:
        folder = root or tmp_path
        folder.mkdir(parents=True, exist_ok=True)
        return ToolContext(workspace=Workspace.at(folder), cancel=CancelToken(), state=ToolSessionState(),
                           **fields)

    return factory


@pytest.fixture
def ctx(make_ctx: MakeCtx) -> ToolContext:
    return make_ctx()


@pytest.fixture
def call_tool() -> CallTool:
    """``await call_tool(tool, ctx, **arguments)``: validate like the pipeline does, then run."""

    async def call(tool: Tool, context: ToolContext, **arguments: Any) -> ToolOutput:
        return await tool.run(tool.input_model.model_validate(arguments), context)

    return call
