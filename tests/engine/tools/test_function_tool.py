from pathlib import Path

import pytest
from pydantic import ValidationError

from loom_engine.execution import CancelToken
from loom_engine.tools.base import ToolContext, ToolSessionState, tool_spec
from loom_engine.tools.function_tool import tool
from loom_engine.workspace import Workspace


@tool(read_only=True)
async def word_count(path: str, unique: bool = False, ctx: ToolContext | None = None) -> str:
    """Count the words in a file.

    Args:
        path: File to read, relative to the workspace.
        unique: Count distinct words only.
    """
    words = (ctx.workspace.root / path).read_text().split()
    return str(len(set(words)) if unique else len(words))


def test_schema_comes_from_signature_and_docstring() -> None:
    spec = tool_spec(word_count)
    assert spec.name == "word_count"
    assert spec.description == "Count the words in a file."
    props = spec.input_schema["properties"]
    assert props["path"]["description"] == "File to read, relative to the workspace."
    assert props["unique"]["default"] is False
    assert spec.input_schema["required"] == ["path"]
    assert "ctx" not in props
    assert word_count.is_concurrency_safe and word_count.is_read_only


async def test_function_tool_runs_with_context(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a b a c")
    ctx = ToolContext(workspace=Workspace.at(tmp_path), cancel=CancelToken(), state=ToolSessionState())
    args = word_count.input_model.model_validate({"path": "a.txt", "unique": True})
    assert (await word_count.run(args, ctx)).content == "3"
    with pytest.raises(ValidationError):
        word_count.input_model.model_validate({"path": "a.txt", "bogus": 1})
