"""Our diff renderer: parsing, line numbers, colours."""

from __future__ import annotations

from textual.app import App, ComposeResult

from builtin_tools._files.diff import diff_labels, unified_diff
from loom_cli.tui.diff_view import DiffView, parse_unified_diff

OLD = "import os\n\ndef greet(name):\n    return 'hello ' + name\n\n\ndef main():\n    print(greet('x'))\n"
NEW = "import os\n\ndef greet(name):\n    return 'hi ' + name\n\n\ndef main():\n    print(greet('y'))\n    return 0\n"


def test_parse_counts_and_numbers() -> None:
    parsed = parse_unified_diff(unified_diff(OLD, NEW, *diff_labels("src/app.py"), context=1))
    assert parsed.path == "src/app.py"
    assert (parsed.added, parsed.removed) == (3, 2)
    kinds = [row.kind for row in parsed.rows]
    assert kinds.count("hunk") == 2
    removed = [row for row in parsed.rows if row.kind == "remove"]
    added = [row for row in parsed.rows if row.kind == "add"]
    assert [(r.old_no, r.text) for r in removed] == [(4, "    return 'hello ' + name"), (8, "    print(greet('x'))")]
    assert [(r.new_no, r.text) for r in added] == [(4, "    return 'hi ' + name"), (8, "    print(greet('y'))"),
                                                  (9, "    return 0")]


def test_no_newline_marker_and_new_file() -> None:
    diff = unified_diff("", "one\ntwo", *diff_labels("new.txt"))
    parsed = parse_unified_diff(diff)
    assert [(r.kind, r.text) for r in parsed.rows if r.kind != "hunk"] == [
        ("add", "one"), ("add", "two"), ("note", "No newline at end of file")]


class Host(App[None]):
    def __init__(self, diff: str) -> None:
        super().__init__()
        self.diff = diff

    def compose(self) -> ComposeResult:
        yield DiffView(self.diff)


async def test_rendered_rows_have_gutter_signs_and_tints() -> None:
    app = Host(unified_diff(OLD, NEW, *diff_labels("src/app.py"), context=1))
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        view = app.query_one(DiffView)
        lines = list(view.plain_lines())
        assert lines[0].startswith("        ⋯")  # under the sign column
        assert "  4     - " in lines[2] and "'hello '" in lines[2]
        assert "      4 + " in lines[3] and "'hi '" in lines[3]
        add_strip = view._lines[3]
        remove_strip = view._lines[2]
        add_bg = {seg.style.bgcolor for seg in add_strip if seg.style and seg.style.bgcolor}
        remove_bg = {seg.style.bgcolor for seg in remove_strip if seg.style and seg.style.bgcolor}
        assert add_bg and remove_bg and add_bg != remove_bg
        # highlighted: the code part has more than one colour
        colours = {seg.style.color for seg in add_strip if seg.style and seg.style.color and seg.text.strip()}
        assert len(colours) > 2


async def test_long_lines_fold_under_the_gutter() -> None:
    long = "x = '" + "a" * 120 + "'\n"
    app = Host(unified_diff("", long, *diff_labels("long.py")))
    async with app.run_test(size=(50, 20)) as pilot:
        await pilot.pause()
        lines = list(app.query_one(DiffView).plain_lines())
        # A new file's diff starts at line 1: no "⋯" row above it.
        assert lines[0].startswith("      1 + x = 'aaa")
        assert lines[1].startswith(" " * 10 + "aaa")
        assert sum(line.count("a") for line in lines) == 120


async def test_no_gap_marker_above_line_1_but_one_above_a_later_hunk() -> None:
    old = "".join(f"line {i}\n" for i in range(1, 30))
    new = old.replace("line 1\n", "line one\n").replace("line 25\n", "line twenty-five\n")
    app = Host(unified_diff(old, new, *diff_labels("f.txt")))
    async with app.run_test(size=(60, 30)) as pilot:
        await pilot.pause()
        lines = [line.strip() for line in app.query_one(DiffView).plain_lines()]
        assert not lines[0].startswith("⋯")
        assert sum(line.startswith("⋯") for line in lines) == 1  # the hunk at line 25
