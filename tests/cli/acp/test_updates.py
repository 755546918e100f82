from __future__ import annotations

from pathlib import Path

from loom_cli.acp.updates import EventAdapter, prompt_usage, stop_reason_for
from loom_engine.events import (
    Aborted,
    BudgetExceeded,
    Error,
    Finished,
    MaxTurnsReached,
    PermissionAnswered,
    TextDelta,
    TodosUpdated,
    ToolCallStarted,
    ToolFinished,
    ToolProgress,
    TurnStarted,
    UsageUpdated,
)
from loom_engine.usage import Usage


def test_a_tool_call_goes_pending_in_progress_then_completed() -> None:
    adapter = EventAdapter(Path("/w"))
    [start] = adapter.updates(ToolCallStarted(call_id="c1", name="bash", input={"command": "ls"}))
    assert (start.session_update, start.kind, start.status) == ("tool_call", "execute", "pending")
    assert start.title == "Run `ls`"
    assert start.raw_input == {"command": "ls"}
    [running] = adapter.updates(PermissionAnswered(request_id="r", call_id="c1", decision="allow_once"))
    assert running.status == "in_progress"
    [output] = adapter.updates(ToolProgress(call_id="c1", text="a"))  # in progress is said once
    assert output.status is None and output.content[0].content.text == "a"
    for n in range(100):
        [output] = adapter.updates(ToolProgress(call_id="c1", text=f"line {n}"))
    shown = output.content[0].content.text.splitlines()
    assert len(shown) == 40 and shown[-1] == "line 99"  # the tail, live
    [done] = adapter.updates(ToolFinished(call_id="c1", name="bash", content="a\n", is_error=False, duration_ms=1))
    assert done.status == "completed" and done.content[0].content.text == "a\n"


def test_a_refused_call_fails_and_says_why() -> None:
    adapter = EventAdapter(Path("/w"))
    [done] = adapter.updates(ToolFinished(call_id="c", name="write_file", content="Refused by the user: …",
                                          is_error=True, duration_ms=0, denied=True))
    assert done.status == "failed"
    assert done.raw_output == {"output": "Refused by the user: …", "refused": True}  # Harbor's observation
    assert done.content[0].content.text.startswith("Refused by the user")


def test_a_command_the_editor_ran_keeps_its_terminal_and_an_edit_its_text_for_harnesses() -> None:
    adapter = EventAdapter(Path("/w"))
    [ran] = adapter.updates(ToolFinished(call_id="c", name="bash", content="ok", is_error=False, duration_ms=0,
                                         display={"kind": "command", "command": "make", "terminal_id": "t1"}))
    assert [item.type for item in ran.content] == ["terminal", "content"] and ran.content[0].terminal_id == "t1"
    diff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
    [edited] = adapter.updates(ToolFinished(call_id="e", name="edit_file", content="Edited x", is_error=False,
                                            duration_ms=0, display={"kind": "diff", "diff": diff, "path": "x"}))
    assert [item.type for item in edited.content] == ["diff"] and edited.raw_output == {"output": "Edited x"}


def test_text_todos_and_usage() -> None:
    adapter = EventAdapter(Path("/w"))
    assert adapter.updates(TextDelta(text="hi")) == []  # held: the line is not whole yet
    assert [u.content.text for u in adapter.updates(TextDelta(text=" there\nand"))] == ["hi there\n"]
    flushed = adapter.updates(ToolCallStarted(call_id="c", name="ls", input={}))  # the stream moved on
    assert [u.session_update for u in flushed] == ["agent_message_chunk", "tool_call"]
    assert flushed[0].content.text == "and"
    assert adapter.updates(TextDelta(text="sub-agent words", depth=1)) == []  # they reach the parent as a result
    [plan] = adapter.updates(TodosUpdated(todos=({"content": "Write tests", "status": "in_progress"},)))
    assert [(e.content, e.status) for e in plan.entries] == [("Write tests", "in_progress")]
    # The turn's usage waits for its tool calls (a harness ends a step at a usage update).
    assert adapter.updates(UsageUpdated(usage=Usage(), total=Usage(), cost_usd=0.01, total_cost_usd=0.25,
                                        context_tokens=1200, context_window=200_000)) == []
    assert [u.session_update for u in adapter.updates(ToolCallStarted(call_id="d", name="ls", input={}))] == \
           ["tool_call"]
    [usage] = adapter.updates(TurnStarted(turn=2))
    assert (usage.used, usage.size, usage.cost.amount, usage.cost.currency) == (1200, 200_000, 0.25, "USD")
    assert adapter.updates(TurnStarted(turn=3)) == []  # said once


def test_each_end_of_a_run_has_its_acp_stop_reason() -> None:
    def finished(why: str) -> Finished:
        return Finished(result="", num_turns=1, stop_reason=why)

    assert [stop_reason_for(finished(why)) for why in ("end_turn", "max_tokens", "refusal", "stop_sequence")] == \
           ["end_turn", "max_tokens", "refusal", "end_turn"]
    assert stop_reason_for(MaxTurnsReached(max_turns=3, num_turns=3)) == "max_turn_requests"
    assert stop_reason_for(Aborted(reason="refused by user")) == "cancelled"
    assert stop_reason_for(BudgetExceeded(max_budget_usd=1, cost_usd=1.2)) == "end_turn"
    assert stop_reason_for(Error(message="bad key", kind="auth")) is None
    assert stop_reason_for(None) is None


def test_prompt_usage_counts_cache_tokens_as_input() -> None:
    usage = prompt_usage(Usage(input_tokens=10, output_tokens=5, cache_read_input_tokens=100,
                               cache_creation_input_tokens=20))
    assert (usage.total_tokens, usage.cached_read_tokens, usage.cached_write_tokens, usage.thought_tokens) == \
           (135, 100, 20, None)
