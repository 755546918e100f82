"""The tasks file: every bad line named by number before anything runs; defaults filled."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_cli.batch.tasks import BatchTask, TaskFileError, is_clone_url, parse_tasks


def test_a_good_file_gives_its_tasks_with_the_batch_defaults_left_open(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "prompt": "do a"}\n\n'
                     f'{{"id": "b", "prompt": "do b", "repo": "{tmp_path / "other"}", "base": "v1", '
                     '"model": "m", "max_turns": 3, "max_budget_usd": 1, "permission_mode": "plan"}\n'
                     '{"id": "c", "prompt": "do c", "cwd": "https://example.com/x.git"}\n')
    a, b, c = parse_tasks(tasks, default_repo=str(tmp_path))
    assert a == BatchTask(id="a", prompt="do a", repo=str(tmp_path), line=1)
    assert b == BatchTask(id="b", prompt="do b", repo=str(tmp_path / "other"), base="v1", model="m", max_turns=3,
                          max_budget_usd=1.0, permission_mode="plan", line=3)
    assert c.repo == "https://example.com/x.git" and c.line == 4


def test_every_bad_line_is_named_in_one_error(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join([
        '{"id": "ok", "prompt": "fine"}',
        'not json',
        '["a list"]',
        '{"id": "x"}',
        '{"id": "ok", "prompt": "again"}',
        '{"id": "y", "prompt": "p", "colour": "red", "shade": 1}',
        '{"id": "../up", "prompt": "p"}',
        '{"id": "z", "prompt": 5, "max_turns": 0, "max_budget_usd": "1", "permission_mode": "yolo"}',
        '{"id": "w", "prompt": "p", "repo": ".", "cwd": "."}',
    ]) + "\n")
    with pytest.raises(TaskFileError) as raised:
        parse_tasks(tasks, default_repo=str(tmp_path))
    assert str(raised.value).splitlines() == [
        f"{tasks}: 8 bad lines",
        "line 2: not JSON (Expecting value: line 1 column 1 (char 0))",
        "line 3: not a JSON object but list",
        "line 4: missing prompt",
        "line 5: duplicate id 'ok' (first on line 1)",
        "line 6: unknown keys colour, shade (known: base, cwd, id, max_budget_usd, max_turns, model, "
        "permission_mode, prompt, repo)",
        "line 7: id '../up': use letters, digits, '.', '_' and '-' (at most 128, not first)",
        'line 8: prompt must be a string, not 5; max_turns must be a whole number of 1 or more, not 0; '
        'max_budget_usd must be a number of 0 or more, not "1"; permission_mode "yolo": use one of default, '
        'accept-edits, plan, bypass',
        "line 9: give repo or cwd, not both",
    ]


def test_outside_a_repository_a_task_must_name_one(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "prompt": "p"}\n')
    with pytest.raises(TaskFileError, match="line 1: no repo"):
        parse_tasks(tasks, default_repo=None)
    tasks.write_text("\n\n")
    with pytest.raises(TaskFileError, match="no tasks"):
        parse_tasks(tasks, default_repo=str(tmp_path))


@pytest.mark.parametrize(("repo", "url"), [("https://github.com/o/r.git", True), ("git@github.com:o/r.git", True),
                                           ("ssh://host/r", True), ("file:///srv/r.git", True),
                                           ("/srv/r", False), ("../r", False), ("C:/r", False)])
def test_clone_urls_are_told_from_paths(repo: str, url: bool) -> None:
    assert is_clone_url(repo) is url
