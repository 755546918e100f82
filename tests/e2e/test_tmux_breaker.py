"""End to end in tmux: once the server failed five times in a row, the next message is
refused at once (nothing is sent) with one line saying why and when Loom tries again."""

from __future__ import annotations

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import Terminal, drawn_to_the_edge


def _final_error(terminal: Terminal, count: int) -> str:
    screen = terminal.wait_for(lambda s: s.count("✗") >= count and "esc to interrupt" not in s,
                               f"final error #{count}", timeout=120)
    return " ".join(screen[screen.rindex("✗"):].split())


def test_after_repeated_server_errors_the_next_message_is_refused_without_a_request(
        terminal: Terminal, fake_llm: FakeLLMServer) -> None:
    # Each asks for a short pause (retry-after), which the retry loop keeps to instead of
    # its backoff (1 + 2 + 4 + 8 s): still five server failures in a row.
    fake_llm.enqueue(*[Reply.error(503, "upstream unavailable", retry_after=0.1) for _ in range(5)])
    terminal.ask("hello")
    first = _final_error(terminal, 1)
    assert "tried 5 times" in first and "not answering" not in first
    assert len(fake_llm.requests) == 5

    terminal.keys("Enter")  # the message came back into the prompt: send it again
    refused = _final_error(terminal, 2)
    assert "the anthropic server is not answering (5 failed requests in a row" in refused
    assert "503: upstream unavailable" in refused and "Loom tries it again from" in refused
    assert len(fake_llm.requests) == 5
    for width in (120, 60):
        terminal.resize(width, 40)
        screen = terminal.wait_for(lambda s: "tries it again from" in " ".join(s.split()) and drawn_to_the_edge(s),
                                   f"the line at {width}")
        assert "Traceback" not in screen and "internal error" not in screen
