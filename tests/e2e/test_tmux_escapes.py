"""End to end in tmux: escape sequences from outside never reach the terminal (issue 19 §2.3).

A hostile model answer, a command's output and a repository file name each carry an OSC 0
(set the pane title) and an OSC 52 (write the clipboard). The chat must show them as
visible text; tmux must see neither: the pane title stays what it was and no paste
buffer appears (the tmux server here accepts OSC 52 from applications, so a clipboard
write would land in a buffer).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import Terminal, loom_in_tmux, terminal_env

CLIP = base64.b64encode(b"clip").decode()


def _attack(title: str) -> str:
    """An OSC 0 that sets the title to ``title`` (ended by BEL), then an OSC 52 that writes
    the clipboard (ended by ST: ESC backslash)."""
    return f"\x1b]0;{title}\x07 \x1b]52;c;{CLIP}\x1b\\"


def _shown(title: str) -> str:
    """How the chat shows ``_attack(title)``."""
    return f"^[]0;{title}^G ^[]52;c;{CLIP}^[\\"


def _pane_title(term: Terminal) -> str:
    return term.tmux("display-message", "-p", "-t", "loom", "#{pane_title}").strip()


def _buffers(term: Terminal) -> str:
    return term.tmux("list-buffers").strip()


@pytest.fixture(params=[120, 60], ids=["120-columns", "60-columns"])
def terminal(request: pytest.FixtureRequest, tmp_path: Path, workspace: Path,
             fake_llm: FakeLLMServer) -> Iterator[Terminal]:
    # A repository file whose name carries the attack (Linux allows ESC and BEL in names).
    (workspace / f"notes{_attack('PWNED-NAME')}.txt").write_text("hi\n")
    # bypass: the command runs without a question; the question is not what is tested here.
    with loom_in_tmux(workspace, terminal_env(tmp_path, fake_llm), args=["--permission-mode", "bypass"],
                      width=request.param) as term:
        term.tmux("set-option", "-g", "set-clipboard", "on")  # an OSC 52 would make a buffer
        yield term


def _unharmed(term: Terminal, title: str) -> None:
    now = _pane_title(term)
    assert now == title, f"the pane title changed from {title!r} to {now!r}"
    assert _buffers(term) == "", "an OSC 52 wrote tmux's clipboard"


def test_no_escape_from_the_model_a_command_or_a_file_name_reaches_the_terminal(
        terminal: Terminal, fake_llm: FakeLLMServer) -> None:
    terminal.wait_ready()
    title = _pane_title(terminal)
    assert "PWNED" not in title and _buffers(terminal) == ""

    # A repository file name, shown by the @-completion menu.
    terminal.type("@notes")
    terminal.wait_for(lambda s: any(row.strip().startswith("notes") for row in s.splitlines()),
                      "the completion menu")
    _unharmed(terminal, title)
    terminal.wait_for(lambda s: f"notes{_shown('PWNED-NAME')}" in s, "the file name, its ESC shown")
    terminal.keys("Escape")
    terminal.keys("C-u")

    # A command's output; the model's answer waits until the output has been checked.
    answer, go_on = Reply.text(f"Answer start {_attack('PWNED-MODEL')} answer end.").held()
    # printf's own escapes, so the command line itself carries no ESC: only its output does.
    command = r"printf 'before\033]0;PWNED-BASH\007 \033]52;c;%s\033\\after\n' " + CLIP
    fake_llm.enqueue(Reply.tool("bash", {"command": command}), answer)
    terminal.ask("go")
    screen = terminal.wait_for(lambda s: "Exit code: 0" in s, "the command's end")
    _unharmed(terminal, title)
    assert f"before{_shown('PWNED-BASH')}after" in screen, screen

    # The model's own text.
    go_on.set()
    screen = terminal.wait_for(lambda s: "Answer start" in s and "esc to interrupt" not in s, "the run's end")
    _unharmed(terminal, title)
    # At 60 columns the sentence wraps (at a space): read the rows as one flowing text.
    flowing = " ".join(row.strip() for row in screen.splitlines() if row.strip())
    assert f"start {_shown('PWNED-MODEL')} answer end." in flowing, screen


@pytest.mark.parametrize("width", [120, 60])
def test_loom_run_prints_the_models_escapes_visibly(width: int, tmp_path: Path, workspace: Path,
                                                    fake_llm: FakeLLMServer) -> None:
    answer, go_on = Reply.text(f"Answer start {_attack('PWNED-RUN')} answer end.").held()
    fake_llm.enqueue(answer)
    with loom_in_tmux(workspace, terminal_env(tmp_path, fake_llm), args=["run", "hi"], width=width) as term:
        term.tmux("set-option", "-g", "set-clipboard", "on")
        title = _pane_title(term)
        go_on.set()  # the answer comes once tmux would turn an OSC 52 into a buffer

        def unwrapped(screen: str) -> str:  # the terminal cuts a long line at its last column
            return "".join(screen.splitlines())

        screen = term.wait_for(lambda s: "answer end." in unwrapped(s), "the answer")
        _unharmed(term, title)
        assert f"Answer start {_shown('PWNED-RUN')} answer end." in unwrapped(screen)
