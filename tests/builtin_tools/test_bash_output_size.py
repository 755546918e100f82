"""bash reports the real size of its output, not the size of the copy the model gets."""

from __future__ import annotations

from builtin_tools.bash import BashInput, BashTool
from loom_engine.tools.base import ToolContext


async def test_huge_output_reports_its_real_line_count_and_that_it_was_cut(make_ctx) -> None:  # type: ignore[no-untyped-def]
    ctx: ToolContext = make_ctx()
    out = await BashTool().run(BashInput(command="seq -f 'line %05g' 1 20000"), ctx)
    display = out.display or {}
    assert display["output_lines"] == 20_000
    assert display["truncated"] is True
    head, tail = display["shown_head_lines"], display["shown_tail_lines"]
    kept = out.content.splitlines()
    # What the model saw: exactly that many whole lines from the start and from the end.
    assert kept[:head][-1] == f"line {head:05d}" and kept[head].startswith("[... ")
    assert kept[head + 1] == f"line {20_000 - tail + 1:05d}"
    assert 0 < head < 20_000 and 0 < tail < 20_000


async def test_small_output_is_not_marked_cut(make_ctx) -> None:  # type: ignore[no-untyped-def]
    out = await BashTool().run(BashInput(command="printf 'a\\nb\\nc'"), make_ctx())
    display = out.display or {}
    assert display["output_lines"] == 3 and display["truncated"] is False
