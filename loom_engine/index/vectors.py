"""Embedding vectors as the index keeps them: unit length, float32, one BLOB each; and
their sign bits, a 1-bit-per-dimension sketch for a cheap first pass.

Stored normalised, so cosine similarity is a dot product. No numpy: the dot product of
two 1,536-dimension vectors in pure Python is 60-100 µs, too slow to do for every
exchange of a long-lived project at each recall. So a search compares sign bits first
(how many dimensions have the same sign: an XOR and a bit count, ~0.4 µs) and computes
the exact similarity only for the best few hundred (binary quantisation with rescoring).
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
    norm = math.hypot(*vector) or 1.0
    packed = array("f", map((1.0 / norm).__mul__, vector))
    if packed.itemsize != 4:  # pragma: no cover - every platform CPython runs on today
        raise RuntimeError("float32 arrays are not 4 bytes here")
    return packed.tobytes()


def sign_bits(vector: Sequence[float]) -> bytes:
    """One bit per dimension, set where the value is positive (little-endian bit order)."""
    if not vector:
        return b""
    as_int = int(bytes([49 if x > 0 else 48 for x in reversed(vector)]), 2)  # b"1" and b"0"
    return as_int.to_bytes((len(vector) + 7) // 8, "little")


def sign_distance(query_bits: int, blob: bytes) -> int:
    """How many dimensions differ in sign (``query_bits``: a query's sign bits as an int)."""
    return (query_bits ^ int.from_bytes(blob, "little")).bit_count()


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
