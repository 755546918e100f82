"""An ACP prompt (content blocks) as Loom's: the text, with files the client links read
by Loom's own tools (``@path``, under the permission rules) and the context it embeds
attached as the chat attaches a file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from loom_engine.attachments import Attachment

from .sdk import (
    EmbeddedResourceContentBlock,
    PromptBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)


class UnsupportedContent(ValueError):
    """A block Loom said it does not take (an image, audio)."""


@dataclass(frozen=True)
class LoomPrompt:
    text: str
    attachments: tuple[Attachment, ...] = ()


def loom_prompt(blocks: Sequence[PromptBlock], root: Path) -> LoomPrompt:
    pieces: list[str] = []
    attachments: list[Attachment] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            pieces.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            path = _file_path(block.uri)
            # A linked file is read as an @mention is: by read_file, under the rules.
            pieces.append(f"@{_shown(path, root)}" if path is not None else f"[{block.name}]({block.uri})")
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if not isinstance(resource, TextResourceContents):
                raise UnsupportedContent(f"{resource.uri}: Loom takes embedded text, not binary data")
            path = _file_path(resource.uri)
            shown = _shown(path, root) if path is not None else resource.uri
            lines = resource.text.count("\n") + (0 if resource.text.endswith("\n") else 1)
            label = f"📎 {shown} ({lines} line{'' if lines == 1 else 's'}, from the editor)"
            attachments.append(Attachment(path=shown, kind="file", content=resource.text, label=label))
        else:
            raise UnsupportedContent(f"Loom does not take {block.type} content in a prompt")
    return LoomPrompt(" ".join(piece for piece in pieces if piece), tuple(attachments))


def _file_path(uri: str) -> Path | None:
    parts = urlsplit(uri)
    if parts.scheme != "file":
        return None
    return Path(unquote(parts.path))


def _shown(path: Path, root: Path) -> str:
    """Relative to the workspace when inside it (what the model and the rules read)."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
