"""The prompt: bursts of keys, command arguments, /clear and /model, pastes, the queue, Ctrl+C/R/G."""

from __future__ import annotations

from textual import events

from loom_cli.tui.app import LoomApp
from loom_cli.tui.confirm import Confirm
from loom_cli.tui.model_picker import ModelPicker, model_name_problem
from loom_cli.tui.paste import Draft, Paste, merge_drafts, paste_label
from loom_cli.tui.transcript import Notice, UserMessage
from loom_engine.messages import TextPart
from tests.cli.tui.helpers import Harness, screen_text, wait_for, wait_idle


async def send(pilot, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


def outputs(app: LoomApp) -> list[str]:
    return [n.text for n in app.transcript.query(Notice)]


async def started(pilot, app: LoomApp) -> None:
    await wait_for(pilot, lambda: app.agent is not None)


def burst(app: LoomApp, text: str, enter: bool = True) -> None:
    """Keys delivered faster than the prompt handles its `Changed` messages (a paste, SSH lag).

    All the keys land in the prompt's queue before it handles the first one, so the
    `Changed` message of each key is handled only after every key, Enter included.
    """
    for char in text:
        app.prompt.post_message(events.Key(char, char))
    if enter:
        app.prompt.post_message(events.Key("enter", "\r"))


def last_user_text(agent) -> str:
    users = [m for m in agent.messages if m.role == "user"]
    return "".join(p.text for p in users[-1].parts if isinstance(p, TextPart))


# --- item 2: Enter sends exactly what the input holds ------------------------------------


async def test_a_burst_after_a_stale_menu_runs_the_typed_command_not_the_menu_one(harness: Harness) -> None:
    harness.script = [{"text": "An answer."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await send(pilot, "hello")
        await wait_idle(pilot, app)
        await pilot.press("/", "c")  # the menu opens for "/c": /clear first
        await pilot.pause()
        assert app.prompt.menu.is_open
        burst(app, "ost")
        await wait_for(pilot, lambda: any(t.startswith("Session cost") for t in outputs(app)))
        assert len(harness.agents) == 1 and "new session started" not in outputs(app)
        assert app.prompt.text == ""


async def test_model_and_mode_bursts_run_as_typed(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await pilot.press("/", "m", "o")  # menu for "/mo": /model first
        await pilot.pause()
        burst(app, "de")
        await wait_for(pilot, lambda: any(t.startswith("permission mode: default") for t in outputs(app)))
        await pilot.press("/")  # menu for "/": /help first
        await pilot.pause()
        burst(app, "model")
        await wait_for(pilot, lambda: isinstance(app.screen, ModelPicker))
        assert harness.agent.config.model == "claude-sonnet-4-5"
        assert not any(t.startswith("Commands:") or "switched" in t for t in outputs(app))


async def test_enter_on_a_current_menu_still_completes_and_tab_completes(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await pilot.press("/", "c", "o", "s")
        await pilot.pause()
        await pilot.press("enter")  # the menu is for "/cos": Enter picks /cost and runs it
        await wait_for(pilot, lambda: any(t.startswith("Session cost") for t in outputs(app)))
        await pilot.press("/", "s", "k")
        burst(app, "", enter=False)
        await pilot.press("tab")
        await pilot.pause()
        assert app.prompt.text == "/skills "


async def test_a_command_with_unexpected_arguments_is_refused_with_its_usage(harness: Harness) -> None:
    harness.script = [{"text": "An answer."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await send(pilot, "hello")
        await wait_idle(pilot, app)
        await send(pilot, "/clear ost")
        await pilot.pause()
        assert outputs(app)[-1] == "usage: /clear · not run"
        assert len(harness.agents) == 1 and len(harness.agent.messages) == 2
        await send(pilot, "/cost now")
        await pilot.pause()
        assert outputs(app)[-1] == "usage: /cost · not run"
        await send(pilot, "/model del x")
        await pilot.pause()
        assert outputs(app)[-1] == "usage: /model [name] · not run"
        assert harness.agent.config.model == "claude-sonnet-4-5"
        await send(pilot, "/compact keep the decisions")  # free text: accepted
        await pilot.pause()
        assert "usage" not in outputs(app)[-1]


# --- /clear confirms a longer conversation -------------------------------------------------


async def test_clear_asks_first_when_there_is_more_than_one_exchange(harness: Harness) -> None:
    harness.script = [{"text": "One."}, {"text": "Two."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        for prompt in ("first", "second"):
            await send(pilot, prompt)
            await wait_idle(pilot, app)
        await send(pilot, "/clear")
        await wait_for(pilot, lambda: isinstance(app.screen, Confirm))
        text = screen_text(app)
        assert "Clear this conversation (2 prompts)" in text and "/resume reopens it" in text
        await pilot.press("enter")  # not an answer: a burst of keys cannot confirm
        await pilot.press("n")
        await wait_for(pilot, lambda: not isinstance(app.screen, Confirm))
        assert len(harness.agents) == 1 and "/clear cancelled: the conversation is kept" in outputs(app)
        await send(pilot, "/clear")
        await wait_for(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("y")
        await wait_for(pilot, lambda: len(harness.agents) == 2 and app.agent is harness.agents[1]
                       and "the previous session can be reopened with /resume" in outputs(app))
        assert "new session started" in outputs(app)


# --- item 13: /model --------------------------------------------------------------------


def test_model_names_are_checked_for_shape() -> None:
    assert model_name_problem("claude-opus-4-1") is None
    assert model_name_problem("anthropic/claude-sonnet-4-5") is None
    assert model_name_problem("us.anthropic.claude-3-5-sonnet-20241022-v2:0") is None
    assert model_name_problem("del x") is not None
    assert model_name_problem("del!") is not None
    assert model_name_problem("---") is not None
    assert model_name_problem("1234") is not None


async def test_model_picker_lists_known_models_and_enter_picks(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 40)) as pilot:
        await started(pilot, app)
        await send(pilot, "/model")
        await wait_for(pilot, lambda: isinstance(app.screen, ModelPicker))
        text = screen_text(app)
        assert "claude-opus-4-1" in text and "200k  $15 / $75" in text and "$ per Mtok in / out" in text
        assert "gpt-4o" not in text  # only the models of this session's provider
        await pilot.press("up")  # the current model is highlighted; the one above it
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, ModelPicker))
        assert harness.agent.config.model == "claude-sonnet-4-6"
        assert outputs(app)[-1] == "model switched to claude-sonnet-4-6"


async def test_unknown_and_malformed_model_names(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(120, 30)) as pilot:
        await started(pilot, app)
        await send(pilot, "/model del!")
        await pilot.pause()
        assert harness.agent.config.model == "claude-sonnet-4-5"
        assert "is not a model name" in outputs(app)[-1] and "stays claude-sonnet-4-5" in outputs(app)[-1]
        await send(pilot, "/model my-local-model")
        await pilot.pause()
        assert harness.agent.config.model == "my-local-model"
        assert "my-local-model is not a model Loom knows" in outputs(app)[-1]
        await send(pilot, "/model gpt-4o")
        await pilot.pause()
        assert "gpt-4o is an openai model and this session talks to" in screen_text(app) or \
            harness.agent.config.provider not in ("anthropic", "openai")


# --- item 10: large pastes ----------------------------------------------------------------


PASTED = "\n".join(f"line {i} of the log" for i in range(1, 301))


def test_paste_labels_and_drafts() -> None:
    assert paste_label(PASTED, []) == "[pasted text: 300 lines]"
    assert paste_label(PASTED, ["[pasted text: 300 lines]"]) == "[pasted text #2: 300 lines]"
    draft = Draft("look: [pasted text: 300 lines] why?", (Paste("[pasted text: 300 lines]", PASTED),))
    assert draft.expanded == f"look: {PASTED} why?"
    merged = merge_drafts([draft, draft])
    assert merged.text.count("[pasted text: 300 lines]") == 1 and "[pasted text #2: 300 lines]" in merged.text
    assert merged.expanded == f"look: {PASTED} why?\n\nlook: {PASTED} why?"


async def test_a_large_paste_is_collapsed_and_the_model_gets_all_of_it(harness: Harness) -> None:
    harness.script = [{"text": "Seen it."}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await pilot.press(*"why does this fail? ")
        app.post_message(events.Paste(PASTED))
        await pilot.pause()
        assert app.prompt.text == "why does this fail? [pasted text: 300 lines]"
        await pilot.press("enter")
        await wait_idle(pilot, app)
        assert last_user_text(harness.agent) == f"why does this fail? {PASTED}"
        message = app.transcript.query_one(UserMessage)
        assert "[pasted text: 300 lines]" in screen_text(app) and "line 150 of the log" not in screen_text(app)
        await pilot.click(UserMessage)  # a click shows the whole paste
        await pilot.pause()
        assert message.expanded and "line 280 of the log" in screen_text(app)
        await pilot.press("ctrl+o")  # Ctrl+O toggles every long block
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert not message.expanded
        app.post_message(events.Paste("a short paste\nof two lines"))  # small: inserted as is
        await pilot.pause()
        assert app.prompt.text == "a short paste\nof two lines", repr(app.prompt.text)


# --- item 14: Ctrl+C ------------------------------------------------------------------------


async def test_ctrl_c_clears_a_prompt_with_text_and_quits_only_from_an_empty_one(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await pilot.press(*"half a thought")
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.prompt.text == "" and app.is_running
        assert "prompt cleared" in app.activity.message
        await pilot.press("up")  # a prompt cleared by mistake comes back
        assert app.prompt.text == "half a thought"
        await pilot.press("ctrl+c")
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running and "again to quit" in app.activity.message
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_value == 0


# --- Ctrl+R -------------------------------------------------------------------------------


async def test_ctrl_r_searches_the_prompt_history(harness: Harness) -> None:
    app = harness.app()
    for entry in ("fix the parser", "run the tests", "fix the lexer", "explain the diff"):
        app.history.add(entry)
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await pilot.press(*"draft")
        await pilot.press("ctrl+r")
        await pilot.press(*"fix")
        await pilot.pause()
        assert "search history: fix" in screen_text(app) and "→ fix the lexer" in screen_text(app)
        await pilot.press("ctrl+r")  # the next older match
        await pilot.pause()
        assert "→ fix the parser" in screen_text(app)
        await pilot.press("enter")
        await pilot.pause()
        assert app.prompt.text == "fix the parser" and app.prompt.has_focus
        await pilot.press("ctrl+r", *"tests", "escape")
        await pilot.pause()
        assert app.prompt.text == "fix the parser" and "search history" not in screen_text(app)
        await pilot.press("ctrl+r", *"nothing like it")
        await pilot.pause()
        assert "no match" in screen_text(app)


# --- queued messages --------------------------------------------------------------------------


async def test_queued_prompts_are_shown_up_edits_the_last_and_esc_gives_them_back(harness: Harness) -> None:
    harness.gated = True
    harness.script = [{"text": "streaming"}, {"text": "after"}]
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await started(pilot, app)
        await send(pilot, "first")
        await wait_for(pilot, lambda: app.running)
        await send(pilot, "second prompt")
        await send(pilot, "third prompt")
        await pilot.pause()
        text = screen_text(app)
        assert "queued second prompt" in text and "queued third prompt" in text
        assert "↑ edits the last" in text
        await pilot.press("up")  # the last queued prompt comes back to be edited
        await pilot.pause()
        assert app.prompt.text == "third prompt"
        assert [d.text for d in app.queue] == ["second prompt"]
        assert "queued third prompt" not in screen_text(app)
        await pilot.press(*" edited")
        await pilot.press("escape")  # interrupt: the queue goes back, before the draft
        await pilot.pause()
        assert not app.running and not app.queue
        assert app.prompt.text == "second prompt\n\nthird prompt edited"
        assert "queued" not in screen_text(app)


# --- Ctrl+G (the editor itself is tested in tests/e2e/test_tmux_prompt.py) -------------------


async def test_ctrl_g_where_the_terminal_cannot_be_handed_over_says_so(harness: Harness) -> None:
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:  # the test driver cannot suspend
        await started(pilot, app)
        await pilot.press(*"keep me")
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert app.prompt.text == "keep me" and app.is_running
        assert "cannot open the editor" in outputs(app)[-1]
