"""The preview of a code rewind: what happens to each file, diffs on demand, conflicts
(files changed outside Loom since the snapshot) left alone unless ticked, files left out
listed; Enter/y applies, Esc cancels. Pilot tests on the screen alone and in the chat
with real snapshots, and snapshots at 120 and 60 columns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.app import App

from loom_cli.tui.rewind_preview import PreviewAnswer, RewindPreview
from loom_engine.snapshots.model import FileChange, LeftOut, RestorePlan, Snapshot
from tests.cli.tui.helpers import screen_text, wait_for
from tests.cli.tui.test_rewind_picker import ORIGINAL, SnapshotHarness, open_list, two_prompts


def snap(id_: int, left_out: tuple[LeftOut, ...] = ()) -> Snapshot:
    return Snapshot(id=id_, tree="t" * 40, time=1_700_000_000.0 + id_, kind="prompt", left_out=left_out)


APP_DIFF = ('--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,2 @@\n def greet(name):\n'
            '-    return f"hi {name}"\n+    return f"hello {name}"\n')
PLAN = RestorePlan(target=snap(1, (LeftOut("data/dump.sql", 3_500_000, "too_big"),)), current=snap(7), changes=(
    FileChange("src/app.py", "modify", APP_DIFF),
    FileChange("notes.txt", "delete", "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +0,0 @@\n-made by the assistant\n"),
    FileChange("src/util.py", "modify", "--- a/src/util.py\n+++ b/src/util.py\n@@ -1 +1 @@\n-X = 2\n+X = 1\n",
               conflict=True),
    FileChange("docs/old.md", "recreate", "--- a/docs/old.md\n+++ b/docs/old.md\n@@ -0,0 +1 @@\n+old docs\n"),
    FileChange("scratch.txt", "delete", "", blocked="the assistant did not create it"),
))


class Host(App[None]):
    def __init__(self, plan: RestorePlan = PLAN, guard_s: float = 0.0) -> None:
        super().__init__()
        self.plan = plan
        self.guard_s = guard_s
        self.answers: list[PreviewAnswer | None] = []

    def on_mount(self) -> None:
        self.push_screen(RewindPreview(self.plan, "Restore code and conversation to before prompt 1",
                                       subtitle="“make greet say hi”", guard_s=self.guard_s),
                         callback=self.answers.append)


async def test_every_file_is_listed_with_what_will_happen_to_it() -> None:
    app = Host()
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "will be" in screen_text(app))
        text = screen_text(app)
        assert "src/app.py  will be restored" in text
        assert "notes.txt  will be deleted (created since)" in text
        assert "docs/old.md  will be recreated" in text
        assert "[ ] src/util.py" in text and "changed outside Loom since: left alone (c includes it)" in text
        assert "scratch.txt  left alone: the assistant did not create it" in text
        assert "data/dump.sql  3.3 MB" in text  # too big to be kept: listed, left alone
        assert "3 files will change · 1 conflict left alone · 1 never touched" in text


async def test_space_shows_and_hides_the_diff_of_the_highlighted_file() -> None:
    app = Host()
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "will be" in screen_text(app))
        assert 'return f"hello {name}"' not in screen_text(app)
        await pilot.press("space")
        await wait_for(pilot, lambda: 'return f"hello {name}"' in screen_text(app))
        assert "▾ src/app.py" in screen_text(app)
        await pilot.press("space")
        await wait_for(pilot, lambda: 'return f"hello {name}"' not in screen_text(app))


async def test_c_includes_the_conflict_and_y_applies_with_it() -> None:
    app = Host()
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "will be" in screen_text(app))
        await pilot.press("down", "down", "c")
        await wait_for(pilot, lambda: "[x] src/util.py" in screen_text(app))
        assert "included, that change will be lost" in screen_text(app)
        assert "4 files will change · conflicts included" in screen_text(app)
        await pilot.press("y")
        await wait_for(pilot, lambda: bool(app.answers))
    assert app.answers == [PreviewAnswer(frozenset({"src/util.py"}))]


async def test_enter_applies_without_the_conflict_and_esc_cancels() -> None:
    app = Host()
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "will be" in screen_text(app))
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(app.answers))
    assert app.answers == [PreviewAnswer()]
    app = Host()
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "will be" in screen_text(app))
        await pilot.press("escape")
        await wait_for(pilot, lambda: bool(app.answers))
    assert app.answers == [None]


async def test_an_enter_at_once_is_not_taken_as_the_answer() -> None:
    app = Host(guard_s=60.0)  # an Enter held since the menu must not apply the restore
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "will be" in screen_text(app))
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert app.answers == [] and isinstance(app.screen, RewindPreview)
        app.screen.guard_s = 0.0  # the moment has passed
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(app.answers))


async def test_in_the_chat_a_file_changed_outside_loom_is_left_alone(repo: Path, tmp_path: Path) -> None:
    harness = _harness(repo, tmp_path)
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await two_prompts(pilot, app)
        mine = (repo / "src" / "app.py").read_text() + "# my own edit\n"
        (repo / "src" / "app.py").write_text(mine)  # in an editor, after the assistant's edit
        await _preview_for_prompt_1(pilot, app)
        assert "[ ] src/app.py" in screen_text(app)
        await pilot.press("y")
        await wait_for(pilot, lambda: "rewound code and conversation" in screen_text(app))
        assert (repo / "src" / "app.py").read_text() == mine  # left alone
        assert not (repo / "notes.txt").exists()  # the rest was restored
        assert "1 file changed outside Loom left alone" in screen_text(app)


async def test_in_the_chat_a_ticked_conflict_is_restored_too(repo: Path, tmp_path: Path) -> None:
    harness = _harness(repo, tmp_path)
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await two_prompts(pilot, app)
        (repo / "src" / "app.py").write_text((repo / "src" / "app.py").read_text() + "# my own edit\n")
        await _preview_for_prompt_1(pilot, app)
        await pilot.press("c")  # not on the conflict's row: c includes every conflict
        await wait_for(pilot, lambda: "[x] src/app.py" in screen_text(app))
        await pilot.press("y")
        await wait_for(pilot, lambda: "rewound code and conversation" in screen_text(app))
        assert (repo / "src" / "app.py").read_text() == ORIGINAL


async def test_in_the_chat_esc_in_the_preview_changes_nothing(repo: Path, tmp_path: Path) -> None:
    harness = _harness(repo, tmp_path)
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await two_prompts(pilot, app)
        count = len(app.agent.messages)
        await _preview_for_prompt_1(pilot, app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: "rewind cancelled: nothing was changed" in screen_text(app))
        assert (repo / "notes.txt").exists() and len(app.agent.messages) == count
        assert 'f"hi {name}"' in (repo / "src" / "app.py").read_text()


def _harness(repo: Path, tmp_path: Path) -> SnapshotHarness:
    from tests.cli.tui.test_rewind_picker import EDIT, READ, WRITE

    return SnapshotHarness(workspace=repo, data_dir=tmp_path / "data", mode="bypass", script=[
        {"text": "Reading first.", "tool_calls": [READ]}, {"tool_calls": [EDIT]}, {"text": "Greeting changed."},
        {"tool_calls": [WRITE]}, {"text": "Notes written."}])


async def _preview_for_prompt_1(pilot: Any, app: Any) -> None:
    await open_list(pilot, app)
    await pilot.press("up", "enter")
    await wait_for(pilot, lambda: "Never mind" in screen_text(app))
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, RewindPreview) and "will be" in screen_text(app))


@pytest.mark.parametrize("width", [120, 60])
def test_the_preview_with_a_conflict(snap_compare: Any, width: int) -> None:
    assert snap_compare(Host(), terminal_size=(width, 30))


@pytest.mark.parametrize("width", [120, 60])
def test_the_preview_with_a_diff_open_and_the_conflict_ticked(snap_compare: Any, width: int) -> None:
    assert snap_compare(Host(), press=["space", "down", "down", "c"], terminal_size=(width, 30))


async def test_in_the_chat_a_file_changed_while_the_preview_is_open_stops_the_restore(
        repo: Path, tmp_path: Path) -> None:
    harness = _harness(repo, tmp_path)
    app = harness.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await two_prompts(pilot, app)
        await _preview_for_prompt_1(pilot, app)
        (repo / "notes.txt").write_text("edited while the preview was open\n")
        await pilot.press("y")
        await wait_for(pilot, lambda: "files changed while the preview was open" in screen_text(app))
        assert (repo / "notes.txt").read_text() == "edited while the preview was open\n"
        assert 'f"hi {name}"' in (repo / "src" / "app.py").read_text()
        assert "Notes written." in screen_text(app)  # the conversation was not rewound either
