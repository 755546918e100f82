"""The tag a loaded skill's text travels in to the model, and that text without it.

The model reads ``<skill name=… source=… path=…>`` … ``</skill>`` (where the skill's
instructions start and end, and where the skill lives); the user sees the skill's
name and path in the call's header already, so the chat shows the text alone — live and
in a resumed session alike.
"""

from __future__ import annotations

import re
from pathlib import Path

_OPENING = re.compile(r'\A<skill name="[^"\n]*" source="[^"\n]*" path="[^"\n]*">\n')
_CLOSING = "\n</skill>"


def wrap(name: str, source: str, path: Path, body: str) -> str:
    return f'<skill name="{name}" source="{source}" path="{path}">\n{body}{_CLOSING}'


def unwrap(content: str) -> str:
    """``content`` without the skill's tag: the instructions and what follows them (the
    files of its folder); unchanged when it does not open with the tag."""
    opening = _OPENING.match(content)
    if opening is None:
        return content
    body, closing, rest = content[opening.end():].partition(_CLOSING)
    return body + rest if closing else content
