"""The permission question in a real terminal: the installed `loom` in tmux, the fake LLM server."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import Terminal, loom_in_tmux, open_loom, terminal_env

READ = Reply.tool("read_file", {"path": "src/app.py"}, text="Fixing the greeting.")
EDIT = Reply.tool("edit_file", {"path": "src/app.py", "old_string": "hello", "new_string": "howdy"})
CHOICES = ("y  allow once", "a  allow always this session", "p  allow always in this project",
           "e  allow all edits this session", "n  no, stop here (esc)", "d  no, and tell Loom why (it goes on)")


def ask(term: Terminal, prompt: str, what: str = "allow once") -> str:
    term.type(prompt)
    term.keys("Enter")
    screen = term.wait_for(lambda s: what in s, "the permission question")
    time.sleep(1.3)  # answer keys are ignored for a second (typing guard); not an assertion
    return screen


@pytest.mark.parametrize("width", [60, 50])
def test_every_choice_is_visible_in_a_narrow_terminal(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer,
                                                      width: int) -> None:
    fake_llm.enqueue(READ, EDIT, Reply.text("Changed."))
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm), width=width, height=40)
    try:
        term.wait_ready()
        ask(term, "change the greeting")
        # Docked under the transcript: the prompt and what the assistant said stay visible
        # above the question, and every choice fits.
        expected = (*CHOICES, "change the greeting", "Fixing the greeting.", "edit_file wants to change src/app.py")
        screen = term.wait_for(lambda s: all(text in s for text in expected), "the whole question and the transcript")
        print(f"--- the question at {width} columns ---\n{screen}")
        term.keys("y")
        term.wait_for(lambda s: "Changed." in s, "the final answer")
    finally:
        term.close()


def test_esc_denies_and_ends_the_turn(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(READ, EDIT, Reply.text("Okay, I will use sed."))
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm))
    try:
        term.wait_ready()
        ask(term, "change the greeting")
        term.keys("Escape")
        term.wait_for(lambda s: "refused, not applied — tell Loom what to do instead" in s,
                      "the note that the turn stopped")
        # The question's box leaves in the frame after the note arrives: read the screen once
        # the prompt is back.
        screen = term.wait_for(lambda s: "Ask Loom" in s and "esc to interrupt" not in s, "the prompt back")
        assert "allow once" not in screen and "refused, not applied" in screen
        assert 'return f"hello {name}"' in (workspace / "src" / "app.py").read_text()
        # The next request is the user's next message: nothing was sent after the denial.
        term.type("use sed instead")
        term.keys("Enter")
        term.wait_for(lambda s: "Okay, I will use sed." in s, "the answer to the next message")
        assert len(fake_llm.requests) == 3
        assert "use sed instead" in json.dumps(fake_llm.requests[2].messages[-1])
    finally:
        term.close()


def test_an_edit_that_cannot_apply_is_not_asked_about(tmp_path: Path, workspace: Path,
                                                      fake_llm: FakeLLMServer) -> None:
    bad = Reply.tool("edit_file", {"path": "src/app.py", "old_string": "goodbye", "new_string": "howdy"})
    fake_llm.enqueue(READ, bad, Reply.text("The text was not there; re-reading."))
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm))
    try:
        term.wait_ready()
        term.type("change the greeting")
        term.keys("Enter")
        screen = term.wait_for(lambda s: "re-reading" in s, "the model's next answer, with no question asked")
        assert "allow once" not in screen
        result = json.dumps(fake_llm.requests[2].messages[-1])
        assert "old_string was not found in src/app.py" in result
    finally:
        term.close()


def test_allow_in_this_project_leaves_git_status_clean(tmp_path: Path, workspace: Path,
                                                       fake_llm: FakeLLMServer) -> None:
    git = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    subprocess.run(["git", "add", "-A"], cwd=workspace, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=workspace, check=True, env={**git, "PATH": "/usr/bin:/bin"})
    command = "python3 -c 'print(6 * 7)'"
    fake_llm.enqueue(Reply.tool("bash", {"command": command}), Reply.text("It printed 42."))
    env = terminal_env(tmp_path, fake_llm)
    term = open_loom(workspace, env)
    try:
        term.wait_ready()
        screen = ask(term, "compute")
        assert "p  allow always in this project" in screen
        term.keys("p")
        term.wait_for(lambda s: "It printed 42." in s, "the answer")
    finally:
        term.close()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=workspace,
                            capture_output=True, text=True, check=True).stdout
    assert status == ""
    # The answer was kept, outside the repository.
    saved = json.loads((Path(env["LOOM_DATA_DIR"]) / "workspaces.json").read_text())
    assert any("python3" in rule for entry in saved["workspaces"].values() for rule in entry.get("allow", []))


def test_no_always_allow_when_no_rule_can_cover_the_command(tmp_path: Path, workspace: Path,
                                                            fake_llm: FakeLLMServer) -> None:
    loop = 'for f in src/*.py; do wc -l "$f"; done'
    fake_llm.enqueue(Reply.tool("bash", {"command": loop}), Reply.text("Counted."))
    with loom_in_tmux(workspace, terminal_env(tmp_path, fake_llm)) as term:
        term.wait_ready()
        screen = ask(term, "count the lines")
        # A `for` loop cannot be saved as a rule: only the answers that work are offered, and why.
        assert "no rule can cover this command" in screen
        assert "y  allow once" in screen and "n  no, stop here (esc)" in screen
        assert "allow always" not in screen
        term.keys("a")  # not a choice here: nothing happens
        time.sleep(0.5)
        assert "y  allow once" in term.screen()
        term.keys("y")
        term.wait_for(lambda s: "Counted." in s, "the answer")


def test_the_transcript_scrolls_while_the_question_is_open(tmp_path: Path, workspace: Path,
                                                          fake_llm: FakeLLMServer) -> None:
    story = "\n\n".join(f"Paragraph {i} of the long answer." for i in range(1, 61))
    fake_llm.enqueue(Reply.text(story), READ, EDIT, Reply.text("Changed."))
    with loom_in_tmux(workspace, terminal_env(tmp_path, fake_llm), width=100, height=40) as term:
        term.ask("tell me a long story")
        term.wait_for(lambda s: "Paragraph 60 of the long answer." in s, "the long answer")
        ask(term, "now change the greeting")
        term.wait_for(lambda s: "Paragraph 1 of the long answer." not in s and "Fixing the greeting." in s,
                      "the question under the end of the transcript")
        term.keys("PPage")
        term.wait_for(lambda s: "Paragraph 60 of" not in s, "the transcript scrolled up a page")
        for _ in range(60):  # the transcript keeps the rows the docked question leaves it
            if "Paragraph 1 of the long answer." in term.screen():
                break
            term.keys("PPage")
            time.sleep(0.1)
        scrolled = term.wait_for(lambda s: "Paragraph 1 of the long answer." in s, "the top of the transcript")
        # The question stays docked and answerable while the transcript is scrolled.
        assert "y  allow once" in scrolled
        term.keys("y")
        term.wait_for(lambda s: "Changed." in s, "the answer after approving")
