"""A call the user refused in stopping the turn ("n" to its question) reads as refused,
never as interrupted: the model must not take it for a half-done edit."""

from __future__ import annotations

from loom_engine.messages import Message, ToolResultPart, ToolUsePart
from loom_engine.transcript import REFUSED_KIND, close_interrupted_turn, refused_result_text

EDIT = ToolUsePart("c1", "edit_file", {"path": "a.py", "old_string": "x", "new_string": "y"})
READ = ToolUsePart("c2", "read_file", {"path": "b.py"})


def test_the_refused_call_gets_a_refusal_and_the_others_an_interruption() -> None:
    history = [Message.user("go"), Message.assistant(EDIT, READ)]
    added, what = close_interrupted_turn(history, partial_text="", completed={}, running={},
                                         reason="refused by user", refused=("c1",))
    results, note = added
    by_id = {r.tool_use_id: r for r in results.tool_results_parts}
    assert by_id["c1"].content == refused_result_text()
    assert by_id["c2"].content.startswith("Interrupted by user")  # it may have been cut off
    assert results.meta["displays"] == {"c1": {"kind": REFUSED_KIND}}
    assert what == "edit_file not run"
    assert note.meta == {"interruption": True, "refused": True}
    assert "refused a tool call" in note.text and "nothing it would have done was applied" in note.text
    assert "interrupted the previous turn" not in note.text


def test_a_refusal_whose_result_is_already_in_still_closes_as_a_refusal() -> None:
    # The answer reached the pipeline before the stop: its result is in the transcript.
    history = [Message.user("go"), Message.assistant(EDIT),
               Message.tool_results([ToolResultPart("c1", refused_result_text(), is_error=True)])]
    added, what = close_interrupted_turn(history, partial_text="", completed={}, running={},
                                         reason="refused by user", refused=("c1",))
    [note] = added
    assert what == "edit_file not run" and note.meta.get("refused")


def test_an_interruption_still_says_interrupted() -> None:
    history = [Message.user("go"), Message.assistant(EDIT)]
    added, _ = close_interrupted_turn(history, partial_text="", completed={}, running={},
                                      reason="interrupted by user")
    results, note = added
    assert results.tool_results_parts[0].content.startswith("Interrupted by user: the tool did not run or did not")
    assert "displays" not in results.meta and not note.meta.get("refused")
    assert "interrupted the previous turn" in note.text


def test_a_user_note_joins_the_refusal() -> None:
    assert refused_result_text("use sed").endswith("Their note: use sed")
