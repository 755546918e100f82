"""Turn a plain Python function into a Tool: its signature and docstring give the schema.

    @tool
    async def word_count(path: str, unique: bool = False) -> str:
        '''Count the words in a file.

        Args:
            path: File to read, relative to the workspace.
            unique: Count distinct words only.
        '''
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, get_type_hints, overload

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, create_model

from .base import BaseTool, ToolContext, ToolOutput


def _split_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Summary text and per-argument descriptions (Google, NumPy or reST docstrings)."""
    parsed = docstring_parser.parse(doc)
    summary = "\n\n".join(p for p in (parsed.short_description, parsed.long_description) if p)
    return summary.strip(), {p.arg_name: (p.description or "").strip() for p in parsed.params}


def model_from_signature(fn: Callable[..., Any], name: str) -> type[BaseModel]:
    """A pydantic model whose fields are ``fn``'s parameters (minus a ``ctx`` parameter)."""
    hints = get_type_hints(fn)
    _, param_docs = _split_docstring(fn.__doc__ or "")
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.name == "ctx" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(param.name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, Field(default, description=param_docs.get(param.name)))
    model_name = "".join(part.capitalize() for part in name.split("_")) + "Input"
    return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)


class FunctionTool(BaseTool[BaseModel]):
    """A tool made from a function; its arguments are a model built from the signature."""

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None,
                 description: str | None = None, read_only: bool = False, guidance: str = "") -> None:
        self._fn = fn
        self._wants_ctx = "ctx" in inspect.signature(fn).parameters
        self.name = name or fn.__name__
        summary, _ = _split_docstring(fn.__doc__ or "")
        self.description = description or summary or self.name
        self.input_model = model_from_signature(fn, self.name)
        self.is_read_only = read_only
        self.is_concurrency_safe = read_only
        self.guidance = guidance

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        kwargs = args.model_dump()
        if self._wants_ctx:
            kwargs["ctx"] = ctx
        result = self._fn(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, ToolOutput):
            return result
        return ToolOutput("" if result is None else str(result))


# What ``@tool`` accepts: a function, plain or async, returning text, a ToolOutput or
# anything ``str()`` turns into the result.
ToolFunction = Callable[..., Any]


@overload
def tool(fn: ToolFunction, *, name: str | None = None, description: str | None = None,
         read_only: bool = False, guidance: str = "") -> FunctionTool: ...


@overload
def tool(*, name: str | None = None, description: str | None = None, read_only: bool = False,
         guidance: str = "") -> Callable[[ToolFunction], FunctionTool]: ...


def tool(fn: ToolFunction | None = None, *, name: str | None = None, description: str | None = None,
         read_only: bool = False, guidance: str = "") -> FunctionTool | Callable[[ToolFunction], FunctionTool]:
    """Decorator: ``@tool`` or ``@tool(read_only=True, guidance="...")`` makes a FunctionTool
    (``guidance``: its note in the system prompt)."""

    def wrap(f: ToolFunction) -> FunctionTool:
        return FunctionTool(f, name=name, description=description, read_only=read_only, guidance=guidance)

    return wrap(fn) if fn is not None else wrap
