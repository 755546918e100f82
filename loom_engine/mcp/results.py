"""An MCP result as a Loom tool result.

Text blocks are joined; structured content is added as JSON when the text does not
already carry it; images become image blocks the model sees; embedded resources give
their text (a binary one is named, not inlined); resource links are listed;
``isError`` makes an error result. Output over the cap (25,000 tokens by default) is
saved to a file in the session's folder and the model gets its head and the path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..messages import ImagePart
from ..private_files import private_folder, write_private
from ..tools.base import ToolOutput

if TYPE_CHECKING:
    from mcp.types import CallToolResult, ReadResourceResult

# The engine cuts any tool result to 60,000 characters (the middle goes); a spilled
# result's head stays under that, so the model sees the head and the path whole.
_MAX_HEAD_CHARS = 50_000
_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


@dataclass(frozen=True)
class ResultLimits:
    max_tokens: int = 25_000
    spill_dir: Path | None = None  # None: cut without saving
    call_id: str = ""


def resource_text(resource: Any) -> str:
    text = getattr(resource, "text", None)
    if isinstance(text, str):
        return f"[resource {resource.uri}]\n{text}"
    mime = getattr(resource, "mime_type", None) or "binary"
    size = len(getattr(resource, "blob", "") or "") * 3 // 4
    return f"[resource {resource.uri}: {mime}, about {size:,} bytes, not shown]"


def _blocks(content: Any) -> tuple[list[str], list[ImagePart]]:
    texts: list[str] = []
    images: list[ImagePart] = []
    for block in content:
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(block.text)
        elif kind == "image":
            if block.mime_type in _IMAGE_TYPES:
                images.append(ImagePart(block.mime_type, block.data))
                texts.append(f"[image {block.mime_type}, shown below]")
            else:
                texts.append(f"[image {block.mime_type}: a type the model cannot take]")
        elif kind == "audio":
            texts.append(f"[audio {block.mime_type}, not shown]")
        elif kind == "resource":
            texts.append(resource_text(block.resource))
        elif kind == "resource_link":
            texts.append(f"[resource link {block.uri}" + (f": {block.name}" if block.name else "") + "]")
    return texts, images


def call_result_output(result: CallToolResult, limits: ResultLimits, *, label: str) -> ToolOutput:
    texts, images = _blocks(result.content)
    text = "\n".join(texts)
    structured = result.structured_content
    if structured is not None:
        dumped = json.dumps(structured, indent=2, ensure_ascii=False)
        try:
            same = json.loads(text) == structured
        except ValueError:
            # A server that wraps a plain answer ({"result": "..."}) already said it in text.
            values = list(structured.values()) if isinstance(structured, dict) else []
            same = len(values) == 1 and str(values[0]) == text
        if not same:
            text = f"{text}\n\nStructured content:\n{dumped}" if text else dumped
    return ToolOutput(capped(text, limits, label=label), is_error=bool(result.is_error), images=tuple(images))


def resource_output(result: ReadResourceResult, limits: ResultLimits, *, label: str) -> ToolOutput:
    texts: list[str] = []
    images: list[ImagePart] = []
    for item in result.contents:
        blob = getattr(item, "blob", None)
        if blob is not None and (item.mime_type or "") in _IMAGE_TYPES:
            images.append(ImagePart(item.mime_type or "image/png", blob))
            texts.append(f"[image {item.uri}, shown below]")
        else:
            texts.append(resource_text(item))
    return ToolOutput(capped("\n".join(texts), limits, label=label), images=tuple(images))


def capped(text: str, limits: ResultLimits, *, label: str) -> str:
    """``text``, or when it is over the cap its head and where the whole of it was saved."""
    limit_chars = min(limits.max_tokens * 4, _MAX_HEAD_CHARS)
    if len(text) <= limit_chars:
        return text
    head = text[:limit_chars]
    tokens = len(text) // 4
    where = "it could not be saved"
    if limits.spill_dir is not None:
        try:
            private_folder(limits.spill_dir)
            name = "".join(c if c.isalnum() or c in "-_" else "_" for c in (limits.call_id or label))
            path = limits.spill_dir / f"{name}.txt"
            write_private(path, text)
            where = f"the whole output is in {path} (read it in parts with read_file, or grep it)"
        except OSError as error:
            where = f"it could not be saved ({error.strerror or error})"
    return (f"{head}\n\n[{label}: output of about {tokens:,} tokens is over the limit of "
            f"{limits.max_tokens:,}; above is its head; {where}]")
