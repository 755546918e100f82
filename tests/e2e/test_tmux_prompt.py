"""The prompt in a real terminal: bursts of keys, /model, a large paste, Ctrl+G, the queue."""

from __future__ import annotations

import stat
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import Terminal, open_loom, terminal_env

READY = "Ask Loom"


def long_answer(n: int) -> str:
    body = "\n".join(f"    value_{i} = compute({i})  # step {i}" for i in range(60))
    return f"Answer {n}, with code:\n\n```python\ndef run():\n{body}\n```\n\n" + \
        "\n".join(f"- point {i} of answer {n}" for i in range(40))


def empty_prompt(screen: str) -> bool:
    return READY in screen


def send(term: Terminal, text: str) -> None:
    term.type(text)
    term.keys("Enter")


def fill_transcript(term: Terminal, fake_llm: FakeLLMServer, exchanges: int = 3) -> None:
    fake_llm.enqueue(*[Reply.text(long_answer(n)) for n in range(exchanges)])
    term.wait_for(lambda s: READY in s and "claude-sonnet-4-5" in s, "the prompt")
    for n in range(exchanges):
        send(term, f"question {n}")
        term.wait_for(lambda s, n=n: len(fake_llm.requests) > n and "esc to interrupt" not in s and READY in s,
                      f"answer {n}", timeout=60)


# What a burst gone wrong shows: /clear run (or asked about), /help run, an argument refused.
WIPED = ("new session started", "Clear this conversation", "usage:", "Commands:")


def test_cost_sent_as_one_burst_never_clears_the_session(tmp_path: Path, workspace: Path,
                                                         fake_llm: FakeLLMServer) -> None:
    # A big screen full of transcript: every frame is slow to paint, so the keys of one
    # write reach the prompt spread over several turns of the event loop, as on a laggy
    # link. On the code before the fix, about one burst in 15 ran as "/clear ost".
    terminal = open_loom(workspace, terminal_env(tmp_path, fake_llm), width=200, height=60)
    try:
        cost_bursts(terminal, fake_llm)
    finally:
        terminal.close()


def cost_bursts(terminal: Terminal, fake_llm: FakeLLMServer) -> None:
    fill_transcript(terminal, fake_llm, exchanges=6)
    for attempt in range(30):
        # A line of its own before each burst, so the burst's answer is the one after it.
        marker = f"unknown command /zz{attempt} "
        send(terminal, f"/zz{attempt}")
        terminal.wait_for(lambda s, m=marker: m in s and empty_prompt(s), f"marker {attempt}")
        terminal.keys("/cost", "Enter")  # the command and Enter in one write, as a paste or SSH delivers
        screen = terminal.wait_for(lambda s, m=marker: empty_prompt(s) and (
            "Session cost" in s.rsplit(m, 1)[-1] or any(w in s for w in WIPED)), f"/cost #{attempt}")
        assert not any(w in screen for w in WIPED), f"burst {attempt} did not run /cost:\n{screen}"
    assert len(fake_llm.requests) == 6  # no command went to the model either
    # The session is whole: the next request carries all six exchanges.
    fake_llm.enqueue(Reply.text("Still here."))
    send(terminal, "last question")
    terminal.wait_for(lambda s: "Still here." in s, "the last answer")
    assert len(fake_llm.requests[-1].messages) == 13


def test_model_and_mode_bursts_run_as_typed(terminal: Terminal, fake_llm: FakeLLMServer) -> None:
    fill_transcript(terminal, fake_llm, exchanges=2)
    for attempt in range(10):
        terminal.keys("/mode", "Enter")
        screen = terminal.wait_for(lambda s: empty_prompt(s) and "permission mode: default" in s, f"/mode #{attempt}")
        assert "Commands:" not in screen and not any(w in screen for w in WIPED)
        terminal.keys("/model", "Enter")
        screen = terminal.wait_for(lambda s: "Switch model" in s, f"the model picker #{attempt}")
        assert "switched" not in screen
        terminal.keys("Escape")
        terminal.wait_for(lambda s: "Switch model" not in s and empty_prompt(s), "the picker to close")


def test_model_picker_and_an_unknown_model_rejected_by_the_provider(terminal: Terminal,
                                                                    fake_llm: FakeLLMServer) -> None:
    terminal.wait_for(lambda s: READY in s and "claude-sonnet-4-5" in s, "the prompt")
    send(terminal, "/model")
    screen = terminal.wait_for(lambda s: "Switch model" in s and "claude-haiku-4-5" in s, "the picker")
    assert "200k  $1 / $5" in screen
    terminal.keys("Escape")
    terminal.wait_for(lambda s: "Switch model" not in s, "the picker to close")
    send(terminal, "/model del")
    terminal.wait_for(lambda s: "del is not a model Loom knows" in s, "the unknown-model warning")
    fake_llm.enqueue(Reply.error(404, "model: del", type="not_found_error"))
    send(terminal, "hello")
    terminal.wait_for(lambda s: "model 'del' not found" in s, "the provider's answer, plainly")


PASTED = "\n".join(f"traceback line {i}" for i in range(1, 301))


def test_a_large_paste_is_collapsed_in_the_input_and_the_transcript(terminal: Terminal,
                                                                    fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("I read all 300 lines."))
    terminal.wait_for(lambda s: READY in s and "claude-sonnet-4-5" in s, "the prompt")
    terminal.type("what fails here? ")
    terminal.paste(PASTED)
    screen = terminal.wait_for(lambda s: "what fails here? [pasted text: 300 lines]" in s, "the collapsed paste")
    assert "traceback line 2" not in screen
    terminal.keys("Enter")
    screen = terminal.wait_for(lambda s: "I read all 300 lines." in s, "the answer")
    assert "[pasted text: 300 lines]" in screen and "traceback line 150" not in screen
    sent = fake_llm.requests[-1].messages[-1]["content"]
    assert sent[0]["text"] == "what fails here? " + PASTED  # the model gets every line


def test_ctrl_g_edits_the_prompt_in_the_editor(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer) -> None:
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nsed -i "s/rough draft/edited in the editor/" "$1"\n')
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm, EDITOR=str(editor)), width=120, height=40)
    try:
        term.wait_for(lambda s: READY in s and "claude-sonnet-4-5" in s, "the prompt")
        term.type("a rough draft")
        term.wait_for(lambda s: "a rough draft" in s, "the typed text")
        term.keys("C-g")
        screen = term.wait_for(lambda s: "an edited in the editor" in s or "a edited in the editor" in s,
                               "the text the editor wrote")
        assert "claude-sonnet-4-5" in screen  # the app is back on screen
    finally:
        term.close()


def test_queued_prompts_are_shown_under_the_transcript(terminal: Terminal, fake_llm: FakeLLMServer) -> None:
    slow = " ".join(f"word{i}" for i in range(2000))
    fake_llm.enqueue(Reply.text(slow, chunk_size=6, chunk_delay=0.02), Reply.text("Second answer."))
    terminal.wait_for(lambda s: READY in s and "claude-sonnet-4-5" in s, "the prompt")
    send(terminal, "tell me a long story")
    terminal.wait_for(lambda s: "word20" in s, "streaming text")
    send(terminal, "and then summarise it")
    screen = terminal.wait_for(lambda s: "queued and then summarise it" in s, "the queued prompt")
    assert "↑ edits the last" in screen
    terminal.keys("Up")
    terminal.wait_for(lambda s: "queued and then" not in s and "│ and then summarise it" in s,
                      "the queued prompt back in the input")
    terminal.keys("Escape")
    terminal.wait_for(lambda s: "interrupted" in s, "the interrupt")


def test_ctrl_c_clears_a_prompt_with_text_and_twice_on_an_empty_one_quits(terminal: Terminal) -> None:
    terminal.wait_ready()
    terminal.type("a half-written thought")
    terminal.wait_for(lambda s: "a half-written thought" in s, "the typed text")
    terminal.keys("C-c")
    screen = terminal.wait_for(lambda s: "a half-written thought" not in s, "the prompt cleared")
    assert READY in screen  # still running, the placeholder is back
    terminal.keys("C-c")
    terminal.wait_for(lambda s: "again to quit" in s, "the quit hint")
    terminal.keys("C-c")
    terminal.wait_for(lambda s: READY not in s, "loom to exit")
