"""What the user is asked about an edit that matched through the file's curly quotes and
deletes a line: the question's diff shows the file's own quotes and no blank line left,
and that is what gets written (the installed `loom` in tmux, the fake LLM server)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import open_loom, terminal_env

NOTES = "# Notes\r\nThe “fast” path isn’t default.\r\nObsolete line\r\nEnd"


@pytest.mark.parametrize("width", [120, 60])
def test_the_question_shows_the_files_quotes_and_what_is_written(tmp_path: Path, workspace: Path,
                                                                fake_llm: FakeLLMServer, width: int) -> None:
    path = workspace / "notes.md"
    path.write_bytes(NOTES.encode())
    fake_llm.enqueue(
        Reply.tool("read_file", {"path": "notes.md"}, text="Tidying the notes."),
        Reply.tool("multi_edit", {"path": "notes.md", "edits": [
            {"old_string": "The \"fast\" path isn't default.", "new_string": "The \"fast\" path isn't on."},
            {"old_string": "Obsolete line", "new_string": ""},
        ]}),
        Reply.text("Tidied."))
    term = open_loom(workspace, terminal_env(tmp_path, fake_llm), width=width, height=40)
    try:
        term.wait_ready()
        term.type("tidy the notes")
        term.keys("Enter")
        screen = term.wait_for(lambda s: "allow once" in s and "+ The “fast” path isn’t on." in s,
                               "the question with the file's quotes in its diff")
        print(f"--- the question at {width} columns ---\n{screen}")
        assert "- Obsolete line" in screen and '"fast"' not in screen
        # No blank line is added where the deleted line was: the diff goes straight on to "End".
        lines = [line.strip("│ ") for line in screen.splitlines()]
        added = next(i for i, line in enumerate(lines) if "+ The “fast” path isn’t on." in line)
        assert lines[added + 1].endswith("End"), lines[added:added + 2]
        time.sleep(1.3)  # answer keys are ignored for a second (typing guard); not an assertion
        term.keys("y")
        term.wait_for(lambda s: "Tidied." in s, "the final answer")
    finally:
        term.close()
    assert path.read_bytes() == "# Notes\r\nThe “fast” path isn’t on.\r\nEnd".encode()
    result = json.dumps(fake_llm.requests[2].messages[-1], ensure_ascii=False)
    assert "taken as the same" in result and "The “fast” path isn’t on." in result
