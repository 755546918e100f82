from __future__ import annotations

from pathlib import Path

import pytest
from acp.schema import (
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from loom_cli.acp.prompt_content import UnsupportedContent, loom_prompt

ROOT = Path("/w")


def test_text_and_a_linked_file_become_the_prompt_with_an_at_mention() -> None:
    prompt = loom_prompt([TextContentBlock(type="text", text="explain"),
                          ResourceContentBlock(type="resource_link", name="a.py", uri="file:///w/src/a%20b.py"),
                          ResourceContentBlock(type="resource_link", name="docs", uri="https://example.com/d")],
                         ROOT)
    assert prompt.text == "explain @src/a b.py [docs](https://example.com/d)"


def test_embedded_text_is_attached_as_a_file() -> None:
    block = EmbeddedResourceContentBlock(type="resource", resource=TextResourceContents(
        uri="file:///w/src/a.py", text="x = 1\ny = 2\n"))
    [attached] = loom_prompt([TextContentBlock(type="text", text="look"), block], ROOT).attachments
    assert (attached.path, attached.kind, attached.content) == ("src/a.py", "file", "x = 1\ny = 2\n")
    assert '<attached path="src/a.py">' in attached.block() and "(2 lines" in attached.label


def test_what_loom_cannot_take_is_refused_by_name() -> None:
    with pytest.raises(UnsupportedContent, match="image"):
        loom_prompt([ImageContentBlock(type="image", data="AAAA", mime_type="image/png")], ROOT)
    blob = EmbeddedResourceContentBlock(type="resource", resource=BlobResourceContents(uri="file:///w/x.bin",
                                                                                      blob="AAAA"))
    with pytest.raises(UnsupportedContent, match="binary"):
        loom_prompt([blob], ROOT)
