"""`loom batch` on a terminal (tmux, against the fake server): the live panel with a line per
running task, cut to the window at 120 and at 60 columns, Ctrl+C at the keyboard, and what
stays when it ends."""

from __future__ import annotations

import re
import threading
from pathlib import Path

from tests.doubles.batch_tasks import ByTask, answered_tool, task_line, task_of, user_repository, write_tasks
from tests.doubles.fake_llm import FakeLLMServer, RecordedRequest, Reply
from tests.doubles.terminal import loom_in_tmux, terminal_env


def test_the_live_panel_at_120_and_60_columns(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    repo = user_repository(tmp_path / "repo")
    prompt = "Move every settings reader onto the new loader and delete the old one"
    tasks = write_tasks(tmp_path / "tasks.jsonl", [
        {**task_line(name), "prompt": f"{prompt} (batch-task:{name})"} for name in ("loader", "parser", "docs")])
    releases = {"loader": threading.Event(), "parser": threading.Event()}

    def held(request: RecordedRequest) -> Reply | None:
        name = task_of(request)
        return None if answered_tool(request) else Reply.tool(
            "write_file", {"path": "x.txt", "content": "x\n"}, gate=releases[name])

    fake_llm.respond_with(ByTask(special={"loader": held, "parser": held}))
    args = ["batch", str(tasks), "--out", str(tmp_path / "out"), "--workers", "2", "--permission-mode", "accept-edits"]
    try:
        with loom_in_tmux(repo, terminal_env(tmp_path, fake_llm, LOOM_MODEL="claude-sonnet-4-6"), args=args,
                          width=120, height=20) as term:
            wide = term.wait_for(lambda s: "0/3 done · 2 running · 0 failed · $0.00" in s and s.count("▸") == 2,
                                 "the panel with both running tasks")
            rows = sorted(row.rstrip() for row in wide.splitlines() if "▸" in row)  # in the order they started
            assert rows[0].startswith("  ▸ loader") and rows[0].endswith(f"{prompt} (batch-task:loader)"), wide
            assert rows[1].startswith("  ▸ parser") and rows[1].endswith("(batch-task:parser)"), wide

            term.resize(60, 20)
            narrow = term.wait_for(lambda s: sum(1 for row in s.splitlines() if "▸" in row and row.rstrip()
                                                 .endswith("…")) == 2
                                   and "0/3 done · 2 running · 0 failed · $0.00" in s,
                                   "the running lines cut at 60 columns")
            assert all(len(row.rstrip()) <= 60 for row in narrow.splitlines()), narrow

            releases["loader"].set()  # loader ends, docs takes its worker and ends too; parser still runs
            term.wait_for(lambda s: "2/3 done · 1 running · 0 failed" in s, "two tasks done")
            term.keys("C-c")  # at the terminal: every process of the batch gets it
            done = term.wait_for(lambda s: "2 done, 0 failed, 1 stopped" in s, "the summary after Ctrl+C")
            # The panel's last frame, whole (the cost fits at 60 columns), and no stale copy of it above.
            headlines = [row.rstrip() for row in done.splitlines() if "done ·" in row]
            assert len(headlines) == 1 and re.fullmatch(r"2/3 done · 0 running · 0 failed · 1 stopped · \$\d+\.\d\d",
                                                        headlines[0]), done
            assert "stopping: the running tasks end their" in done and "■ stopped parser: interrupted" in done, done
            assert "▸" not in done  # nothing is running at the end
    finally:
        for release in releases.values():
            release.set()
