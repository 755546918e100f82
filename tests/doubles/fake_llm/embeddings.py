"""A deterministic stand-in for an embeddings model: a hashed bag of words.

Each lower-cased word adds 1 to one of :data:`DIMENSIONS` slots (chosen by its hash);
the vector is normalised. Texts sharing words are near; it needs no weights, and the
same text always gets the same vector, so recall by meaning is testable offline.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

DIMENSIONS = 64
_WORD = re.compile(r"[a-z0-9]+")


def embed(text: str) -> list[float]:
    vector = [0.0] * DIMENSIONS
    for word in _WORD.findall(text.lower()):
        vector[int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big") % DIMENSIONS] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def embeddings_answer(body: Any) -> tuple[int, dict[str, Any]]:
    """The status and JSON of ``POST /v1/embeddings`` for ``body``, as OpenAI answers."""
    if not isinstance(body, dict) or "input" not in body or not isinstance(body.get("model"), str):
        return 400, {"error": {"message": "model and input are required", "type": "invalid_request_error"}}
    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
    if not all(isinstance(t, str) for t in texts):
        return 400, {"error": {"message": "input must be strings", "type": "invalid_request_error"}}
    data = [{"object": "embedding", "index": i, "embedding": embed(t)} for i, t in enumerate(texts)]
    tokens = sum(len(t.split()) for t in texts)
    return 200, {"object": "list", "data": data, "model": body["model"],
                 "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
