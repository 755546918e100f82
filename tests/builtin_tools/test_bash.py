"""bash: exit codes, output capping and streaming, cwd persistence, and no orphans."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from builtin_tools.bash import MAX_OUTPUT_CHARS, BashInput, BashTool
from loom_engine.permissions.targets import CommandRun
from loom_engine.tools.base import ToolContext, ToolOutput
from tests.doubles.processes import alive

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="process checks read /proc")


def read_pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()]


async def bash(ctx: ToolContext, command: str, **extra: object) -> ToolOutput:
    return await BashTool().run(BashInput(command=command, **extra), ctx)


@pytest.fixture
def progress() -> list[str]:
    return []


@pytest.fixture
def sh(make_ctx, progress):  # type: ignore[no-untyped-def]
    return make_ctx(progress=progress.append)


# --------------------------------------------------------------------------- results

async def test_exit_code_and_merged_output(sh):
    out = await bash(sh, "echo out; echo err >&2; echo again; exit 3")
    assert out.is_error
    assert out.content == "out\nerr\nagain\nExit code: 3"
    assert out.display is not None and out.display["exit_code"] == 3


async def test_success_and_no_output(sh):
    out = await bash(sh, "true", description="does nothing")
    assert not out.is_error
    assert out.content == "(no output)\nExit code: 0"
    assert out.display is not None and out.display["description"] == "does nothing"


async def test_syntax_error_reports_bash_message(sh):
    out = await bash(sh, "if then fi (")
    assert out.is_error
    assert "syntax error" in out.content and out.content.endswith("Exit code: 2")


async def test_killed_by_a_signal(sh):
    out = await bash(sh, "kill -KILL $$")
    assert out.is_error and out.content.endswith("Killed by SIGKILL.")


async def test_stdin_is_empty(sh):
    out = await bash(sh, "cat; read -r line || echo 'no input'")
    assert out.content == "no input\nExit code: 0"


async def test_runs_in_its_own_process_group(sh):
    out = await bash(sh, "echo $$ $(cut -d' ' -f5 /proc/$$/stat)")
    pid, pgid = out.content.splitlines()[0].split()
    assert pid == pgid


async def test_invalid_utf8_is_replaced(sh):
    out = await bash(sh, r"printf 'caf\xe9 \xff\xfe ok\n'")
    assert out.content == "caf\ufffd \ufffd\ufffd ok\nExit code: 0"


async def test_crlf_output_is_normalised(sh):
    out = await bash(sh, r"printf 'a\r\nb\r\n'")
    assert out.content == "a\nb\nExit code: 0"


async def test_output_over_the_cap_keeps_head_and_tail(sh):
    out = await bash(sh, "seq -f 'line %05g' 0 19999")  # 20,000 lines of 11 characters
    total = 20_000 * 11
    body, status = out.content.rsplit("\n", 1)
    assert status == "Exit code: 0"
    match = re.search(r"\n?\[\.\.\. ([\d,]+) characters of output cut from the middle \.\.\.\]\n", body)
    assert match is not None
    head, tail = body[:match.start()], body[match.end():]
    assert head.startswith("line 00000\nline 00001\n")
    assert tail.endswith("line 19998\nline 19999")
    assert len(head) + len(tail) <= MAX_OUTPUT_CHARS
    # The elided count is exact: kept head and its newline + elided + tail and the final newline.
    assert len(head) + 1 + int(match.group(1).replace(",", "")) + len(tail) + 1 == total
    # Cut on line boundaries: every kept line is whole.
    assert all(re.fullmatch(r"line \d{5}", line) for line in (head + "\n" + tail).splitlines())


async def test_output_lines_are_streamed_as_progress(sh, progress):
    await bash(sh, "echo one; echo two >&2; printf three")
    assert progress == ["one", "two", "three"]


# --------------------------------------------------------------------------- working directory

async def test_cd_persists_inside_the_workspace(sh, tmp_path):
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    out = await bash(sh, "cd sub")
    assert out.content.endswith("Working directory is now sub.")
    assert sh.state.cwd == tmp_path / "sub"
    assert (await bash(sh, "pwd")).content == f"{tmp_path}/sub\nExit code: 0"
    assert BashTool().permission_target(BashInput(command="ls"), sh) == CommandRun("ls", f"{tmp_path}/sub")
    await bash(sh, "cd deeper && cd ../..")
    assert sh.state.cwd is None and sh.cwd == tmp_path


async def test_cd_persists_even_when_the_command_fails(sh, tmp_path):
    (tmp_path / "sub").mkdir()
    out = await bash(sh, "cd sub; exit 7")
    assert out.content.startswith("(no output)\nExit code: 7")
    assert sh.state.cwd == tmp_path / "sub"


async def test_cd_outside_the_workspace_is_not_kept(sh, tmp_path_factory, tmp_path):
    outside = tmp_path_factory.mktemp("outside")
    (tmp_path / "sub").mkdir()
    (tmp_path / "escape").symlink_to(outside)
    await bash(sh, "cd sub")
    for command in (f"cd {outside}", "cd ../escape", "cd /"):
        out = await bash(sh, command)
        assert "outside the workspace; the next command starts in sub again." in out.content
        assert sh.state.cwd == tmp_path / "sub"
    assert (await bash(sh, "pwd")).content == f"{tmp_path}/sub\nExit code: 0"


async def test_environment_does_not_persist(sh):
    await bash(sh, "export LOOM_TEST_VAR=1; LOOM_OTHER=2")
    out = await bash(sh, "echo ${LOOM_TEST_VAR:-unset} ${LOOM_OTHER:-unset}")
    assert out.content == "unset unset\nExit code: 0"


async def test_a_deleted_working_directory_falls_back_to_the_root(sh, tmp_path):
    (tmp_path / "gone").mkdir()
    await bash(sh, "cd gone")
    (tmp_path / "gone").rmdir()
    out = await bash(sh, "pwd")
    assert out.content.startswith(f"{tmp_path}\nExit code: 0\nThe previous working directory")
    assert sh.state.cwd is None


# --------------------------------------------------------------------------- no orphans

# The timeout these commands run under: it must fire only after the shell has started its
# children and written their pids, which on a loaded machine can take far more than the
# milliseconds it takes on an idle one.
GROUP_STARTED_S = 3

async def test_timeout_kills_the_whole_group(sh, tmp_path):
    pids = tmp_path / "pids"
    out = await bash(sh, f"echo $$ > {pids}; sleep 30 & echo $! >> {pids}; "
                         f"(sleep 30; echo never) & echo $! >> {pids}; sleep 30", timeout=GROUP_STARTED_S)
    assert out.is_error
    assert out.content.endswith("Timed out after 3 s; the command and everything it started "
                                "were killed.")
    assert "never" not in out.content
    assert len(read_pids(pids)) == 3
    assert not any(alive(pid) for pid in read_pids(pids))


async def test_timeout_kills_processes_that_ignore_sigterm(sh, tmp_path):
    pids = tmp_path / "pids"
    out = await bash(sh, f"trap '' TERM; sleep 30 & echo $! > {pids}; echo $$ >> {pids}; sleep 30",
                     timeout=GROUP_STARTED_S)
    assert out.display is not None and out.display["timed_out"]
    assert not any(alive(pid) for pid in read_pids(pids))


async def _start(sh: ToolContext, progress: list[str], pids: Path) -> asyncio.Task[ToolOutput]:
    task = asyncio.ensure_future(bash(sh, f"sleep 30 & echo $! > {pids}; echo $$ >> {pids}; "
                                          f"echo started; sleep 30"))
    while "started" not in progress:
        await asyncio.sleep(0.01)
    return task


async def test_abort_through_the_cancel_token_kills_the_group(sh, progress, tmp_path):
    pids = tmp_path / "pids"
    task = await _start(sh, progress, pids)
    sh.cancel.cancel()
    out = await task
    assert out.is_error
    # The shell may live long enough to report its foreground child's death by our
    # SIGTERM ("Terminated") before the signal ends the shell itself.
    assert out.content in (f"started\n{line}Aborted by the user; the command and everything it started were killed."
                           for line in ("", "Terminated\n"))
    assert not any(alive(pid) for pid in read_pids(pids))


async def test_task_cancellation_kills_the_group(sh, progress, tmp_path):
    pids = tmp_path / "pids"
    task = await _start(sh, progress, pids)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not any(alive(pid) for pid in read_pids(pids))


async def test_background_jobs_are_stopped_when_the_command_ends(sh, tmp_path):
    pids = tmp_path / "pids"
    out = await bash(sh, f"sleep 30 & echo $! > {pids}; echo done")
    assert not out.is_error
    assert out.content == ("done\nExit code: 0\nBackground processes still running when the "
                           "command finished were stopped.")
    assert not any(alive(pid) for pid in read_pids(pids))


async def test_finished_background_jobs_are_not_reported(sh):
    out = await bash(sh, "true & wait; echo done")
    assert out.content == "done\nExit code: 0"


# --------------------------------------------------------------------------- contract

def test_timeout_is_bounded():
    assert BashInput(command="x").timeout == 120
    assert BashInput(command="x", timeout=600).timeout == 600
    for bad in (601, 0, -1):
        with pytest.raises(ValidationError, match="timeout"):
            BashInput(command="x", timeout=bad)


async def test_tool_contract(sh, tmp_path):
    tool = BashTool()
    assert tool.name == "bash" and not tool.is_read_only and not tool.is_concurrency_safe
    args = BashInput(command="make test")
    assert tool.permission_target(args, sh) == CommandRun("make test", str(tmp_path))
    assert await tool.preview(args, sh) == {"kind": "command", "command": "make test",
                                            "cwd": str(tmp_path), "description": None}
    schema = BashInput.model_json_schema()
    assert list(schema["properties"]) == ["command", "timeout", "description", "dangerously_disable_sandbox"]
    assert schema["required"] == ["command"]
    assert all(p.get("description") for p in schema["properties"].values())
