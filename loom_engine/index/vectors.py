"""Embedding vectors as the index keeps them: unit length, float32, one BLOB each.

Stored normalised, so cosine similarity is a dot product. No numpy: the dot product of
two 1,536-dimension vectors in pure Python is ~60 µs (what recall over a project's past
sessions costs per exchange embedded; see ``bench/bench_recall.py``).
"""

from __future__ import annotations

import math
import operator
from array import array
from collections.abc import Callable, Sequence

# Embeds texts (a batch) into vectors: the recall tool's embeddings client.
Embed = Callable[[Sequence[str]], list[list[float]]]


def pack(vector: Sequence[float]) -> bytes:
    """``vector`` scaled to unit length, as float32 bytes (the machine's order: the index is a local cache)."""
    norm = math.sqrt(math.fsum(x * x for x in vector)) or 1.0
    packed = array("f", (x / norm for x in vector))
    if packed.itemsize != 4:  # pragma: no cover - every platform CPython runs on today
        raise RuntimeError("float32 arrays are not 4 bytes here")
    return packed.tobytes()


def unpack(blob: bytes) -> array[float]:
    vector = array("f")
    vector.frombytes(blob)
    return vector


def unit(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to unit length (a query, compared with packed vectors)."""
    return list(unpack(pack(vector)))


def similarity(query: Sequence[float], blob: bytes) -> float:
    """Cosine similarity of a unit ``query`` with a packed vector (0 when the sizes differ)."""
    vector = unpack(blob)
    if len(vector) != len(query):
        return 0.0
    return float(sum(map(operator.mul, query, vector)))
