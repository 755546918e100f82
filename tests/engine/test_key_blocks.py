"""key_blocks.OpenBlock: the private-key block a text leaves open, read in pieces cut anywhere."""

from __future__ import annotations

import pytest

from loom_engine.key_blocks import OpenBlock

BEGIN = "-----BEGIN OPENSSH PRIVATE KEY-----"
TEXT = ("intro\n-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
        f"{BEGIN}\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n")


def _fed(*pieces: str) -> str | None:
    block = OpenBlock()
    for piece in pieces:
        block.feed(piece)
    return block.marker


def test_the_open_block_is_the_last_begin_of_a_private_key() -> None:
    assert _fed(TEXT) == BEGIN
    assert _fed(TEXT + "-----END OPENSSH PRIVATE KEY-----\nafter\n") is None
    assert _fed(TEXT[:TEXT.index(BEGIN)]) is None  # a certificate's block holds no secret
    assert _fed("-----BEGIN CERTIFICATE-----\nMIIB\n") is None


@pytest.mark.parametrize("cut", range(len(TEXT) + 1))
def test_a_marker_cut_between_two_pieces_is_still_seen(cut: int) -> None:
    assert _fed(TEXT[:cut], TEXT[cut:]) == BEGIN
    closed = TEXT + "-----END OPENSSH PRIVATE KEY-----\n"
    assert _fed(*(closed[i:i + 7] for i in range(0, len(closed), 7))) is None
