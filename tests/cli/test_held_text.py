from __future__ import annotations

from loom_cli.held_text import HeldDeltas, HeldText
from loom_engine.redact import Redactor

KEY = "sk-ant-api03-" + "x" * 90
BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"
PEM = "-----BEGIN PRIVATE KEY-----\n" + "\n".join([BODY] * 3) + "\n-----END PRIVATE KEY-----\n"


def _stream(text: str, size: int) -> list[str]:
    held = HeldText()
    out = [held.take(text[i:i + size]) for i in range(0, len(text), size)]
    return [piece for piece in [*out, held.flush()] if piece]


def test_text_goes_out_in_whole_lines_and_the_rest_at_the_end() -> None:
    assert _stream("one two\nthree four\nfive", 3) == ["one two\n", "three four\n", "five"]


def test_a_key_split_between_pieces_is_redacted_whole() -> None:
    redact = Redactor.for_values([]).redact
    for size in (1, 7, 50):
        pieces = [redact(piece) for piece in _stream(f"Your key: {KEY} and more\nnext line", size)]
        assert not any("sk-ant" in piece for piece in pieces), size


def test_a_private_key_block_is_held_until_it_ends() -> None:
    redact = Redactor.for_values([]).redact
    pieces = _stream(f"Here:\n{PEM}done\n", 10)
    assert pieces[0] == "Here:\n" and pieces[1] == PEM and pieces[2] == "done\n"
    assert BODY not in redact(pieces[1])


def test_deltas_keep_the_streams_order_and_each_agents_text_apart() -> None:
    from loom_engine.events import Notice, TextDelta, ThinkingDelta

    held = HeldDeltas()
    stream = [ThinkingDelta(text="hm", agent_id="a"), ThinkingDelta(text="m\nso", agent_id="a"),
              TextDelta(text="Your key: sk-ant", agent_id="a"), TextDelta(text="sub", agent_id="b"),
              TextDelta(text="-api03-xyz\nok", agent_id="a"), Notice(level="info", message="n")]
    out = [event for item in stream for event in held.events(item)]
    said = [(type(e).__name__, e.agent_id, getattr(e, "text", "")) for e in out]
    assert said == [("ThinkingDelta", "a", "hmm\n"), ("ThinkingDelta", "a", "so"),
                    ("TextDelta", "a", "Your key: sk-ant-api03-xyz\n"), ("TextDelta", "a", "ok"),
                    ("TextDelta", "b", "sub"), ("Notice", "", "")]
