"""A tool result cut by the pipeline's cap still tells the UI its real size."""

from __future__ import annotations

from loom_engine.tools.pipeline import cap_text, cut_size


def test_cut_size_reports_the_original_lines_and_what_was_kept() -> None:
    original = "".join(f"row {i:06d}\n" for i in range(20_000))  # 220,000 characters
    capped = cap_text(original)
    assert len(capped) < len(original) and "elided" not in capped
    size = cut_size(original, capped)
    assert size["output_lines"] == 20_000 and size["truncated"] is True
    assert 0 < size["shown_head_lines"] < 20_000 and 0 < size["shown_tail_lines"] < 20_000
