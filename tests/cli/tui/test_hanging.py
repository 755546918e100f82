"""Wrapped rows of a listed line stay under its first word."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from loom_cli.tui.hanging import Hanging, lead_width


def rows(text: str, width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None, legacy_windows=False)
    with console.capture() as captured:
        console.print(Hanging(Text(text)))
    return [row.rstrip() for row in captured.get().splitlines()]


def test_a_bullet_s_wrapped_rows_line_up_under_its_words() -> None:
    assert rows('  • allow rule "read"  — runs without asking', 24) == [
        '  • allow rule "read"  —',
        "    runs without asking",
    ]


def test_a_warning_sign_hangs_its_rows_and_each_line_keeps_its_own_lead() -> None:
    text = "⚠ project settings not applied (workspace not trusted)\n    npx -y server-everything --flag"
    assert rows(text, 26) == [
        "⚠ project settings not",
        "  applied (workspace not",
        "  trusted)",
        "    npx -y",
        "    server-everything",
        "    --flag",
    ]


def test_a_line_without_a_lead_and_a_blank_line_are_as_rich_draws_them() -> None:
    assert rows("plain words that wrap here\n\nend", 12) == ["plain words", "that wrap", "here", "", "end"]


def test_a_lead_wider_than_half_the_line_is_not_kept() -> None:
    assert rows("          • far in", 12) == ["          •", "far in"]


def test_what_counts_as_a_lead() -> None:
    assert [lead_width(line) for line in ("  • a", "⚠ a", "    a", "1. a", "-y a", "[new] a", "a")] == \
        [4, 2, 4, 3, 0, 0, 0]
