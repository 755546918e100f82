"""/resume's picker: typing filters the sessions by the search, best match first, with
the snippet that matched; Enter opens the highlighted one, arrows move, Esc cancels."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from textual.app import App
from textual.widgets import Input, OptionList

from loom_cli.tui.session_picker import SessionPicker
from loom_engine.index.query import SearchHit, SnippetPart
from loom_engine.index.session_index import SessionIndex
from loom_engine.sessions.store import SessionInfo
from tests.doubles.saved_sessions import Exchange, save_session


def _info(session_id: str, prompt: str) -> SessionInfo:
    return SessionInfo(id=session_id, path=Path(f"/s/{session_id}.jsonl"), workspace="/w", created=1.0e9,
                       updated=1.7e9, first_prompt=prompt, prompts=3, provider="anthropic", model="m")


def _hit(session_id: str, *parts: tuple[str, bool]) -> SearchHit:
    return SearchHit(session_id=session_id, project="/w", title="", created=1.0e9, updated=1.7e9, prompts=3,
                     path="", snippet=tuple(SnippetPart(t, m) for t, m in parts), rank=-1.0)


SESSIONS = [_info("s-newest", "tidy the readme"), _info("s-middle", "the login bug"), _info("s-oldest", "cache")]
TYPED: list[str] = []


def fake_search(typed: str) -> Sequence[SearchHit]:
    TYPED.append(typed)
    if "login" in typed:  # the oldest session matches best: the order is the search's
        return [_hit("s-oldest", ("fixed the ", False), ("login", True), (" redirect", False)),
                _hit("s-middle", ("the ", False), ("login", True), (" bug", False)),
                _hit("elsewhere", ("login", True))]  # not in this list: never shown
    return []


class PickerApp(App[None]):
    def __init__(self, screen: SessionPicker) -> None:
        super().__init__()
        self.picker = screen
        self.picked: list[str | None] = []

    def on_mount(self) -> None:
        self.push_screen(self.picker, callback=self.picked.append)


def _listed(picker: SessionPicker) -> list[str]:
    options = picker.query_one(OptionList)
    return [str(options.get_option_at_index(i).id) for i in range(options.option_count)]


async def test_typing_filters_by_the_search_best_first_and_enter_opens_the_top_one() -> None:
    picker = SessionPicker(SESSIONS, fake_search)
    app = PickerApp(picker)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert isinstance(picker.focused, Input) and _listed(picker) == ["s-newest", "s-middle", "s-oldest"]
        await pilot.press(*"login")
        await pilot.pause()
        assert TYPED[-1] == "login" and _listed(picker) == ["s-oldest", "s-middle"]
        options = picker.query_one(OptionList)
        assert options.highlighted == 0
        label, snippet = options.get_option_at_index(0).prompt.renderables  # type: ignore[union-attr]
        assert "cache" in str(label) and str(snippet) == "  fixed the login redirect"
        assert [str(snippet)[s.start:s.end] for s in snippet.spans if "bold" in str(s.style)] == ["login"]
        await pilot.press("down")
        assert options.highlighted == 1
        await pilot.press("up", "enter")
        await pilot.pause()
    assert app.picked == ["s-oldest"]


async def test_no_match_says_so_and_clearing_the_text_lists_every_session_again() -> None:
    picker = SessionPicker(SESSIONS, fake_search)
    app = PickerApp(picker)
    async with app.run_test(size=(60, 30)) as pilot:
        await pilot.pause()
        await pilot.press(*"zeppelin")
        await pilot.pause()
        assert _listed(picker) == []
        notice = picker.query_one("#no-match")
        assert notice.display and "no session of this workspace matches 'zeppelin'" in str(notice.render())
        await pilot.press("enter")  # nothing to open: the picker stays
        assert app.picked == []
        for _ in "zeppelin":
            await pilot.press("backspace")
        await pilot.pause()
        assert _listed(picker) == ["s-newest", "s-middle", "s-oldest"] and not notice.display
        await pilot.press("escape")
        await pilot.pause()
    assert app.picked == [None]


async def test_the_real_index_finds_a_session_by_a_word_being_typed(tmp_path: Path) -> None:
    sessions = tmp_path / "data" / "sessions"
    writer = save_session(sessions, "/w", [Exchange("the parser chokes on tabs", answer="normalised tabs")])
    other = save_session(sessions, "/w", [Exchange("unrelated")])
    index = SessionIndex.in_data_dir(tmp_path / "data")
    index.catch_up()

    def search(typed: str) -> Sequence[SearchHit]:
        return index.search(typed, project="/w", as_you_type=True, refresh=False)

    infos = [_info(other.id, "unrelated"), _info(writer.id, "the parser chokes on tabs")]
    picker = SessionPicker(infos, search)
    app = PickerApp(picker)
    async with app.run_test(size=(60, 30)) as pilot:
        await pilot.pause()
        await pilot.press(*"norma")  # half a word of the answer
        await pilot.pause()
        assert _listed(picker) == [writer.id]


def test_a_snippet_starts_near_its_first_match_so_a_narrow_picker_still_shows_it() -> None:
    from loom_cli.tui.session_picker import snippet_text

    long_lead = _hit("s", ("We fixed the flaky login test by waiting for the session ", False), ("cookie", True),
                     (" to be set.", False))
    assert snippet_text(long_lead).plain == "  …for the session cookie to be set."
    assert snippet_text(_hit("s", ("the ", False), ("cookie", True))).plain == "  the cookie"
