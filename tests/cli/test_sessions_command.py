"""`loom sessions search`: ranked hits as plain lines or JSON, every query safe, grep's
exit codes; and `loom sessions` alone still lists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom_cli.main import app as cli
from tests.doubles.saved_sessions import Exchange, save_session


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOOM_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def _search(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, ["sessions", "search", *args])


def test_plain_lines_rank_the_better_match_first(data: Path, tmp_path: Path) -> None:
    shop = tmp_path / "shop"
    best = save_session(data / "sessions", shop, [Exchange("the invoice totals are wrong",
                                                           answer="Rounded each invoice line before summing.")])
    other = save_session(data / "sessions", tmp_path / "blog", [Exchange("add an invoice link to the footer")])
    result = _search("invoice")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split("  ")[0] for line in lines] == [best.id, other.id]
    assert f"  {shop}  " in lines[0] and "«invoice»" in lines[0]
    assert lines[0].split("  ")[1][:4].isdigit()  # the date


def test_json_gives_every_field(data: Path, tmp_path: Path) -> None:
    writer = save_session(data / "sessions", tmp_path / "shop", [Exchange("the invoice totals are wrong")])
    result = _search("invoice", "-o", "json")
    assert result.exit_code == 0, result.output
    [hit] = json.loads(result.output)
    assert hit["session_id"] == writer.id and hit["project"] == str(tmp_path / "shop")
    assert hit["title"] == "the invoice totals are wrong" and hit["prompts"] == 1
    assert hit["snippet"] == "the «invoice» totals are wrong" and hit["updated"][:2] == "20"


def test_the_project_option_takes_the_folders_repository(data: Path, tmp_path: Path) -> None:
    shop = tmp_path / "shop"
    (shop / ".git").mkdir(parents=True)
    (shop / "src").mkdir()
    mine = save_session(data / "sessions", shop, [Exchange("invoice bug")])
    save_session(data / "sessions", tmp_path / "blog", [Exchange("invoice bug")])
    result = _search("invoice", "--project", str(shop / "src"), "--limit", "5")
    assert result.exit_code == 0 and [line.split("  ")[0] for line in result.output.splitlines()] == [mine.id]


def test_no_match_says_so_and_exits_1_as_grep_does(data: Path, tmp_path: Path) -> None:
    save_session(data / "sessions", tmp_path, [Exchange("hello")])
    result = _search('NEAR("x" AND')
    assert result.exit_code == 1 and result.output == "no session matches 'NEAR(\"x\" AND'\n"
    empty = _search("zzz", "-o", "json")
    assert empty.exit_code == 1 and empty.output == "[]\n"


def test_a_query_without_words_is_a_usage_error(data: Path) -> None:
    result = _search("  \x00 ")
    assert result.exit_code == 2
    assert "nothing to search for" in result.output


def test_sessions_alone_still_lists_this_workspaces_sessions(data: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    writer = save_session(data / "sessions", tmp_path.resolve(), [Exchange("list me")])
    result = CliRunner().invoke(cli, ["sessions"])
    assert result.exit_code == 0 and writer.id in result.output and "list me" in result.output
    assert "no sessions" in CliRunner().invoke(cli, ["sessions", "--all"], env={
        "LOOM_DATA_DIR": str(tmp_path / "none")}).output
