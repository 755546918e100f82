"""/rewind and Esc Esc in the chat: the list of prompts, the menu, and a rewind carried out
(pilot tests against a real agent with workspace snapshots), plus snapshots of the list
and the menu at 120 and 60 columns."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.app import App
from textual.widgets import OptionList

from loom_cli.tui.key_hold import KeyHold
from loom_cli.tui.rewind_menu import RewindMenu, menu_choices
from loom_cli.tui.rewind_picker import RewindPicker
from loom_engine.snapshots.model import FileChange, RestorePlan, RestorePoint, Snapshot
from tests.cli.tui.helpers import Harness, screen_text, wait_for, wait_idle

EDIT = {"name": "edit_file", "input": {"path": "src/app.py", "old_string": "hello", "new_string": "hi"}}
READ = {"name": "read_file", "input": {"path": "src/app.py"}}
WRITE = {"name": "write_file", "input": {"path": "notes.txt", "content": "made by the assistant\n"}}
ORIGINAL = 'def greet(name):\n    return f"hello {name}"\n'


class SnapshotHarness(Harness):
    """The shared harness, with the workspace snapshots the real chat gets."""

    def __init__(self, *args: Any, snapshots: bool = True, git: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.snapshots = snapshots
        self.git = git  # False: the pre-images bootstrap falls back to when git is missing

    def factory(self, options: Any) -> Any:
        from loom_engine.snapshots.checkpoints import Checkpointer
        from loom_engine.snapshots.preimages import PreimageCheckpointer

        agent = super().factory(options)
        if self.snapshots:
            kind = Checkpointer if self.git else PreimageCheckpointer
            agent.parts = replace(agent.parts, checkpoints=kind(options.workspace, self.data_dir / "snapshots"))
        return agent


@pytest.fixture(autouse=True)
def patient_esc_esc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two Esc count as one double press within 5 s here: a loaded machine is slow between keys."""
    monkeypatch.setattr("loom_cli.tui.ctrl_keys.REWIND_ESC_S", 5.0)


@pytest.fixture
def harness(repo: Path, tmp_path: Path) -> SnapshotHarness:
    return SnapshotHarness(workspace=repo, data_dir=tmp_path / "data", mode="bypass", script=[
        {"text": "Reading first.", "tool_calls": [READ]}, {"tool_calls": [EDIT]}, {"text": "Greeting changed."},
        {"tool_calls": [WRITE]}, {"text": "Notes written."}])


async def send(pilot: Any, app: Any, text: str, answer: str) -> None:
    app.prompt.set_text(text)
    await pilot.press("enter")
    await wait_for(pilot, lambda: answer in screen_text(app))
    await wait_idle(pilot, app)


async def two_prompts(pilot: Any, app: Any) -> None:
    await wait_idle(pilot, app)
    await send(pilot, app, "make greet say hi", "Greeting changed.")
    await send(pilot, app, "write some notes", "Notes written.")


async def open_list(pilot: Any, app: Any) -> None:
    app.prompt.set_text("/rewind")
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, RewindPicker) and app.screen.is_mounted
                   and "Rewind:" in screen_text(app))


async def test_rewind_to_prompt_1_restores_the_files_and_the_conversation(harness: SnapshotHarness, repo: Path) -> None:
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await two_prompts(pilot, app)
        assert 'f"hi {name}"' in (repo / "src" / "app.py").read_text()
        assert (repo / "notes.txt").exists()
        await open_list(pilot, app)
        text = screen_text(app)
        assert "make greet say hi" in text and "write some notes" in text
        assert "1 file changed" in text
        await pilot.press("up", "enter")  # the newest is highlighted: up to prompt 1
        await wait_for(pilot, lambda: "Never mind" in screen_text(app))
        text = screen_text(app)
        assert "Restore code and conversation" in text
        await pilot.press("enter")
        await wait_for(pilot, lambda: "will be restored" in screen_text(app))
        text = screen_text(app)
        assert "src/app.py" in text
        assert "notes.txt" in text and "will be deleted (created since)" in text
        await pilot.press("y")
        await wait_for(pilot, lambda: "rewound" in screen_text(app))
        assert (repo / "src" / "app.py").read_text() == ORIGINAL
        assert not (repo / "notes.txt").exists()
        assert app.prompt.text == "make greet say hi"
        text = screen_text(app)
        assert "Greeting changed." not in text and "Notes written." not in text
        assert "restored 1 file, deleted 1 file" in text


async def test_esc_esc_on_an_empty_prompt_opens_the_list(harness: SnapshotHarness) -> None:
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await two_prompts(pilot, app)
        await pilot.press("escape")
        assert "Esc again to rewind" in screen_text(app)  # the first one says what a second does
        await pilot.press("escape")
        # Mounted: the screen is shown before its on_mount has picked the newest prompt.
        await wait_for(pilot, lambda: isinstance(app.screen, RewindPicker) and app.screen.is_mounted)
        options = app.screen.query_one(OptionList)
        assert options.option_count == 2 and options.highlighted == 1  # the newest prompt
        await pilot.press("escape")  # Esc closes it; nothing changed
        await wait_for(pilot, lambda: not isinstance(app.screen, RewindPicker))
        assert "Notes written." in screen_text(app)


async def test_keys_typed_while_the_list_opens_act_neither_in_it_nor_on_the_prompt(
        harness: SnapshotHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    from loom_cli.tui.commands import rewind as rewind_module

    read = threading.Event()  # the snapshots are being read: the list is on its way
    go_on = threading.Event()
    real = rewind_module.restore_points

    def slow_restore_points(*args: Any) -> Any:
        read.set()
        go_on.wait(60)
        return real(*args)

    monkeypatch.setattr(rewind_module, "restore_points", slow_restore_points)
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await two_prompts(pilot, app)
        await pilot.press("escape", "escape")
        await wait_for(pilot, read.is_set)
        # Up would bring the last prompt back into the input, Enter would send it.
        await pilot.press("up", "enter", "y")
        assert app.prompt.text == "" and app.key_hold.holding
        go_on.set()
        await wait_for(pilot, lambda: isinstance(app.screen, RewindPicker) and not app.key_hold.holding)
        options = app.screen.query_one(OptionList)
        assert options.highlighted == 1  # still the newest prompt: nothing picked, nothing moved
        await pilot.press("up")  # once it is shown, keys act in it
        assert options.highlighted == 0
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, RewindPicker))
        assert app.prompt.text == ""
        assert screen_text(app).count("write some notes") == 1  # not sent again
        await pilot.press("x")
        assert app.prompt.text == "x"  # the prompt takes keys again


async def test_keys_typed_in_one_burst_with_esc_esc_do_not_overtake_it(harness: SnapshotHarness) -> None:
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await two_prompts(pilot, app)
        # All queued before the first is handled, as a fast typist's keys reach the app:
        # the second Esc is seen as it arrives, so Up and Enter cannot reach the prompt first.
        for key, char in (("escape", "\x1b"), ("escape", "\x1b"), ("up", None), ("enter", "\r")):
            event = events.Key(key, char)
            event.set_sender(app)  # as the terminal's driver sends it (see Pilot.press)
            app.post_message(event)
        await wait_for(pilot, lambda: isinstance(app.screen, RewindPicker) and not app.key_hold.holding)
        assert app.screen.query_one(OptionList).highlighted == 1  # the newest: nothing moved, nothing picked
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, RewindPicker))
        assert app.prompt.text == "" and screen_text(app).count("write some notes") == 1


def test_a_key_stamped_before_the_release_is_dropped_even_when_handled_after() -> None:
    hold = KeyHold()
    early = events.Key("a", "a")
    assert not hold.drops(early)
    hold.hold()
    during = events.Key("enter", None)
    quit_key = events.Key("ctrl+c", None)
    hold.release()
    later = events.Key("enter", None)
    assert hold.drops(early) and hold.drops(during)  # still queued when the list showed
    assert not hold.drops(later) and not hold.drops(quit_key)


async def test_esc_esc_with_text_in_the_input_keeps_the_text_and_opens_nothing(harness: SnapshotHarness) -> None:
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await two_prompts(pilot, app)
        app.prompt.set_text("a draft")
        await pilot.press("escape", "escape")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, RewindPicker)
        assert app.prompt.text == "a draft"


async def test_esc_during_a_run_interrupts_it_and_a_second_esc_does_not_open_the_list(
        harness: SnapshotHarness) -> None:
    harness.gated = True
    harness.script = [{"text": "A long answer that is still streaming."}]
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_idle(pilot, app)
        app.prompt.set_text("tell me a story")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "still streaming" in screen_text(app))
        assert app.running
        await pilot.press("escape", "escape")
        await wait_for(pilot, lambda: "interrupted" in screen_text(app))
        await pilot.pause(0.2)
        assert not app.running
        assert not isinstance(app.screen, RewindPicker)


async def test_without_snapshots_the_code_choices_are_greyed_with_the_reason(repo: Path, tmp_path: Path) -> None:
    harness = SnapshotHarness(workspace=repo, data_dir=tmp_path / "data", mode="bypass", snapshots=False,
                              script=[{"tool_calls": [READ]}, {"tool_calls": [EDIT]}, {"text": "Greeting changed."}])
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_idle(pilot, app)
        await send(pilot, app, "make greet say hi", "Greeting changed.")
        await open_list(pilot, app)
        assert "no snapshot" in screen_text(app)
        await pilot.press("enter")
        await wait_for(pilot, lambda: "Never mind" in screen_text(app) and app.screen.is_mounted)
        options = app.screen.query_one(OptionList)
        assert [options.get_option_at_index(i).disabled for i in range(4)] == [True, False, True, False]
        assert options.highlighted == 1  # the first choice that can be made
        text = screen_text(app)
        assert "not possible: snapshots of the files are turned off" in text
        await pilot.press("enter")  # conversation only
        await wait_for(pilot, lambda: "rewound conversation" in screen_text(app))
        assert 'f"hi {name}"' in (repo / "src" / "app.py").read_text()


async def test_conversation_only_keeps_the_files_and_gives_the_prompt_back(
        harness: SnapshotHarness, repo: Path) -> None:
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await two_prompts(pilot, app)
        used_before = app.status.context_used
        await open_list(pilot, app)
        await pilot.press("enter")  # the newest: prompt 2
        await wait_for(pilot, lambda: isinstance(app.screen, RewindMenu))
        await pilot.press("down", "enter")  # Restore conversation only: no preview
        await wait_for(pilot, lambda: "rewound conversation to before prompt 2" in screen_text(app))
        text = screen_text(app)
        assert "Greeting changed." in text and "Notes written." not in text
        assert (repo / "notes.txt").exists()  # the files stay as they are
        assert app.prompt.text == "write some notes"
        assert app.status.context_used < used_before  # the status bar counts the shorter conversation
        # The model's next request has the conversation up to prompt 1 only.
        assert not any("write some notes" in m.text for m in app.agent.messages)


async def test_never_mind_and_esc_change_nothing(harness: SnapshotHarness, repo: Path) -> None:
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await two_prompts(pilot, app)
        count = len(app.agent.messages)
        await open_list(pilot, app)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RewindMenu))
        await pilot.press("escape")  # back to the prompts
        await wait_for(pilot, lambda: isinstance(app.screen, RewindPicker))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RewindMenu))
        await pilot.press("end", "enter")  # Never mind
        await wait_for(pilot, lambda: not isinstance(app.screen, (RewindMenu, RewindPicker)))
        assert len(app.agent.messages) == count and (repo / "notes.txt").exists()
        assert app.prompt.text == ""


async def test_the_last_rewind_can_be_undone_from_the_list(harness: SnapshotHarness, repo: Path) -> None:
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await two_prompts(pilot, app)
        edited = (repo / "src" / "app.py").read_text()
        await open_list(pilot, app)
        await pilot.press("up", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RewindMenu))
        await pilot.press("enter")
        from loom_cli.tui.rewind_preview import RewindPreview

        await wait_for(pilot, lambda: isinstance(app.screen, RewindPreview))
        await pilot.press("y")
        await wait_for(pilot, lambda: "/rewind to undo" in screen_text(app))
        assert (repo / "src" / "app.py").read_text() == ORIGINAL
        await open_list(pilot, app)
        assert "Undo the last rewind" in screen_text(app)
        await pilot.press("home", "enter")
        await wait_for(pilot, lambda: "will be recreated" in screen_text(app))  # notes.txt comes back
        await pilot.press("y")
        await wait_for(pilot, lambda: "rewind undone" in screen_text(app))
        assert (repo / "src" / "app.py").read_text() == edited and (repo / "notes.txt").exists()
        text = screen_text(app)
        assert "Greeting changed." in text and "Notes written." in text
        assert app.prompt.text == ""  # the prompt put back by the rewind goes again


async def test_rewind_with_no_prompt_yet_says_so(harness: SnapshotHarness) -> None:
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_idle(pilot, app)
        app.prompt.set_text("/rewind")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "nothing to rewind yet" in screen_text(app))


# --- what the list and the menu look like --------------------------------------------------

NOON = 1_700_000_000.0  # a fixed time (shown in UTC below)


def snap(id_: int, when: float) -> Snapshot:
    return Snapshot(id=id_, tree="t" * 40, time=when, kind="prompt", prompt_id=f"m{id_}")


POINTS = (
    RestorePoint(1, "m1", "make greet say hi", NOON, ("src/app.py",), snap(1, NOON)),
    RestorePoint(2, "m2", "write the release notes for version 2 and mention every fix since the last release, "
                          "with links to the issues\nand a second line", NOON + 300,
                 ("NOTES.md", "src/app.py", "src/util.py"), snap(2, NOON + 300)),
    RestorePoint(3, "m3", "what does util.py do?", NOON + 600, (), snap(3, NOON + 600)),
    RestorePoint(4, "m4", "an older prompt from before snapshots", None, (), None),
)
PLAN = RestorePlan(target=snap(1, NOON), current=snap(9, NOON + 900), changes=(
    FileChange("src/app.py", "modify", "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-hi\n+hello\n"),
    FileChange("NOTES.md", "delete", "--- a/NOTES.md\n+++ b/NOTES.md\n@@ -1 +0,0 @@\n-notes\n"),
    FileChange("src/util.py", "modify", "", conflict=True),
))


class ScreenHost(App[None]):
    def __init__(self, screen: Any) -> None:
        super().__init__()
        self.modal = screen

    def on_mount(self) -> None:
        self.push_screen(self.modal)


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("width", [120, 60])
def test_the_list_of_prompts(snap_compare: Any, utc: Any, width: int) -> None:
    assert snap_compare(ScreenHost(RewindPicker(POINTS)), terminal_size=(width, 20))


@pytest.mark.parametrize("width", [120, 60])
def test_the_list_with_an_undo_row(snap_compare: Any, utc: Any, width: int) -> None:
    picker = RewindPicker(POINTS[:2], "(to prompt 2): files and conversation come back")
    assert snap_compare(ScreenHost(picker), terminal_size=(width, 16))


@pytest.mark.parametrize("width", [120, 60])
def test_the_menu(snap_compare: Any, utc: Any, width: int) -> None:
    assert snap_compare(ScreenHost(RewindMenu(POINTS[1], menu_choices(None), PLAN)), terminal_size=(width, 20))


@pytest.mark.parametrize("width", [120, 60])
def test_the_menu_when_the_files_cannot_be_restored(snap_compare: Any, utc: Any, width: int) -> None:
    menu = RewindMenu(POINTS[3], menu_choices("no snapshot of the files from then"), None)
    assert snap_compare(ScreenHost(menu), terminal_size=(width, 20))


def test_a_resumed_session_does_not_show_the_note_for_the_model_as_a_prompt() -> None:
    from loom_cli.tui.transcript import entries_from_messages
    from loom_engine.messages import Message

    note = "[The user rewound files to how they were before prompt 1. Files reverted:\n- src/app.py: restored]"
    entries = entries_from_messages([Message.user("make greet say hi"), Message.user(note, reminder=True)])
    assert [(e.kind, e.text) for e in entries] == [("user", "make greet say hi")]


async def test_without_git_and_snapshots_the_menu_says_so(repo: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    harness = SnapshotHarness(workspace=repo, data_dir=tmp_path / "data", mode="bypass", snapshots=False,
                              script=[{"text": "Hello."}])
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_idle(pilot, app)
        await send(pilot, app, "hi", "Hello.")
        monkeypatch.setattr("loom_cli.tui.commands.rewind.shutil.which", lambda _name: None)
        await open_list(pilot, app)
        await pilot.press("enter")
        await wait_for(pilot, lambda: "Never mind" in screen_text(app))
        assert "not possible: snapshots of the files are turned off (and git is not installed)" in screen_text(app)


async def test_without_git_the_files_loom_edited_are_restored_from_their_pre_images(
        repo: Path, tmp_path: Path) -> None:
    harness = SnapshotHarness(workspace=repo, data_dir=tmp_path / "data", mode="bypass", git=False, script=[
        {"text": "Reading first.", "tool_calls": [READ]}, {"tool_calls": [EDIT]}, {"text": "Greeting changed."},
        {"tool_calls": [WRITE]}, {"text": "Notes written."}])
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await two_prompts(pilot, app)
        await open_list(pilot, app)
        assert "1 file changed" in screen_text(app)
        await pilot.press("up", "enter")
        await wait_for(pilot, lambda: "Never mind" in screen_text(app))
        assert "only files Loom's edit tools changed can be restored" in screen_text(app)
        await pilot.press("enter")
        await wait_for(pilot, lambda: "will be restored" in screen_text(app))
        await pilot.press("y")
        await wait_for(pilot, lambda: "rewound code and conversation" in screen_text(app))
        assert (repo / "src" / "app.py").read_text() == ORIGINAL
        assert not (repo / "notes.txt").exists()
