"""The streaming markdown widget: block splitting, coalescing, fences, static blocks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.style import Style
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll

from loom_cli.tui.markdown_blocks import Block, BlockSplitter
from loom_cli.tui.markdown_stream import MarkdownStream
from tests.cli.tui.helpers import wait_for

DOC = """# Title
Intro line one
line two

- item 1
- item 2
  continued

  para in item
- item 3

```python
def f():

    return 1
```
After code.
1. one
2. two

| a | b |
|---|---|
| 1 | 2 |

> quoted
text
"""


def split_all(text: str, cuts: list[int]) -> list[Block]:
    splitter = BlockSplitter()
    blocks: list[Block] = []
    start = 0
    for cut in sorted(set(cuts)):
        blocks += splitter.feed(text[start:cut])
        start = cut
    blocks += splitter.feed(text[start:])
    return blocks + splitter.finish()


def test_blocks_of_a_document() -> None:
    blocks = split_all(DOC, [])
    assert [(b.kind, b.tight) for b in blocks] == [
        ("heading", False), ("prose", False), ("list", False), ("list", True), ("list", True),
        ("fence", False), ("prose", False), ("list", False), ("list", True), ("table", False),
        ("quote", False)]
    assert blocks[3].text == "- item 2\n  continued\n\n  para in item"
    assert blocks[5].text == "```python\ndef f():\n\n    return 1\n```" and blocks[5].lang == "python"


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(DOC)), max_size=40))
def test_chunking_never_changes_the_blocks(cuts: list[int]) -> None:
    assert split_all(DOC, cuts) == split_all(DOC, [])


def test_a_fence_is_a_finished_block_only_when_it_closes() -> None:
    splitter = BlockSplitter()
    assert splitter.feed("Text.\n\n```js\nlet a = 1;\n\nlet b = 2;\n") == [Block("Text.", "prose")]
    assert splitter.in_top_fence and splitter.open_lines[1:] == ["let a = 1;", "", "let b = 2;"]
    [fence] = splitter.feed("```\n")
    assert fence.kind == "fence" and not splitter.in_top_fence


class Host(App[None]):
    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield MarkdownStream(id="md")


async def test_chunks_are_coalesced_into_few_refreshes() -> None:
    app = Host()
    async with app.run_test(size=(80, 40)) as pilot:
        md = app.query_one(MarkdownStream)
        await pilot.pause()
        before = md.flushes
        for i in range(300):
            md.append(f"word{i} ")
        # 300 chunks in one burst: at most one immediate refresh, the rest coalesced.
        assert md.flushes - before <= 1
        await wait_for(pilot, lambda: "word299" in md.plain_text())
        assert md.flushes - before <= 2


def _code_styles(md: MarkdownStream, needle: str) -> set[Style]:
    strip = next(s for s in md._lines if needle in s.text)
    return {seg.style for seg in strip if seg.text.strip()}


async def test_open_fence_is_plain_and_highlighted_once_closed() -> None:
    app = Host()
    async with app.run_test(size=(80, 40)) as pilot:
        md = app.query_one(MarkdownStream)
        md.append("Code:\n\n```python\ndef greet(name):\n    return 'hi ' + name\n")
        await wait_for(pilot, lambda: any("return 'hi '" in s.text for s in md._lines))
        plain = _code_styles(md, "def greet")
        assert len(plain) == 1  # one style: not highlighted while open
        row = next(i for i, s in enumerate(md._lines) if "def greet" in s.text)
        md.append("```\n")
        await wait_for(pilot, lambda: len(_code_styles(md, "def greet")) > 1)  # keywords, names, strings
        # closing recolours in place: nothing above or at the code moved
        assert next(i for i, s in enumerate(md._lines) if "def greet" in s.text) == row


async def test_finished_blocks_are_not_rendered_again() -> None:
    app = Host()
    async with app.run_test(size=(80, 40)) as pilot:
        md = app.query_one(MarkdownStream)
        md.append("First paragraph.\n\nSecond")
        await wait_for(pilot, lambda: bool(md._done_lines))
        first = md._done_lines[0]
        assert first.text.startswith("First paragraph.")
        for i in range(20):
            md.append(f" more{i}")
            await pilot.pause(0.02)
        await wait_for(pilot, lambda: "more19" in md.plain_text())
        assert md._done_lines[0] is first
        assert md.flushes > 2  # the tail was redrawn several times meanwhile


async def test_streamed_rendering_equals_rendering_the_whole_text() -> None:
    class Both(App[None]):
        def compose(self) -> ComposeResult:
            with VerticalScroll():
                yield MarkdownStream(id="streamed")
                yield MarkdownStream(DOC, id="whole")

    app = Both()
    async with app.run_test(size=(80, 80)) as pilot:
        streamed = app.query_one("#streamed", MarkdownStream)
        for i in range(0, len(DOC), 7):
            streamed.append(DOC[i:i + 7])
            await pilot.pause(0.005)
        streamed.finish()
        await pilot.pause()
        whole = app.query_one("#whole", MarkdownStream)
        assert streamed.plain_text() == whole.plain_text()
        assert "Title" in whole.plain_text() and "def f():" in whole.plain_text()


async def test_selection_copies_plain_text() -> None:
    app = Host()
    async with app.run_test(size=(80, 20)) as pilot:
        md = app.query_one(MarkdownStream)
        md.append("Alpha **beta** gamma.\n\n- one\n- two\n")
        md.finish()
        await pilot.pause()
        md.text_select_all()
        await pilot.pause()
        assert app.screen.get_selected_text() == "Alpha beta gamma.\n\n • one\n • two"
        # selected cells are drawn reversed
        line = md.render_line(0)
        assert any(seg.style and seg.style.reverse for seg in line if seg.text.strip())


async def test_reset_drops_partial_output() -> None:
    app = Host()
    async with app.run_test(size=(80, 20)) as pilot:
        md = app.query_one(MarkdownStream)
        md.append("partial answer that will be retried")
        await pilot.pause(0.1)
        md.reset()
        md.append("fresh")
        md.finish()
        await pilot.pause()
        assert md.plain_text().strip() == "fresh" and md.source == "fresh"


TASKS = """Plan:

- [ ] write the test
- [x] read the code, a line long enough to wrap at forty columns
- a plain bullet
- [y] not a task

1. [ ] numbered
2. [X] numbered and done
"""


async def test_a_task_list_shows_its_boxes_streamed_or_whole() -> None:
    class Narrow(App[None]):
        def compose(self) -> ComposeResult:
            with VerticalScroll():
                yield MarkdownStream(id="streamed")

    app = Narrow()
    async with app.run_test(size=(42, 30)) as pilot:
        md = app.query_one(MarkdownStream)
        for i in range(0, len(TASKS), 3):  # "[", " ", "]" arrive in different chunks
            md.append(TASKS[i:i + 3])
            await pilot.pause(0.005)
        md.finish()
        await wait_for(pilot, lambda: "numbered and done" in md.plain_text())
        assert [line.rstrip() for line in md.plain_text().splitlines()] == [
            "Plan:", "",
            " ☐ write the test",
            " ☑ read the code, a line long enough to",
            "   wrap at forty columns",
            " • a plain bullet",
            " • [y] not a task", "",
            " 1. ☐ numbered",
            " 2. ☑ numbered and done"]
