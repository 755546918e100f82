"""`loom run` ends at once after its last event, and loses nothing doing so: the session
file is complete and on disk, every byte of output is there, the exit code is the
run's, and the exit handlers (which stop what commands left running) still run; only
the interpreter's teardown of every imported module is skipped."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env

ROOT = Path(__file__).resolve().parents[2]

# A sitecustomize for `loom`: one marker file when the exit handlers run, another when
# the interpreter tears its modules down (an object in a module's globals is finalized).
_MARKERS = '''
import atexit, os
_where = os.environ.get("LOOM_TEST_EXIT_MARKERS")
if _where:
    def _exit_handlers_ran():
        open(os.path.join(_where, "atexit"), "w").close()
    atexit.register(_exit_handlers_ran)

    class _TornDown:
        # Bound now: by the time a torn-down module's globals go, builtins may be gone.
        def __del__(self, join=os.path.join, where=_where, create=open):
            create(join(where, "teardown"), "w").close()

    _witness = _TornDown()
'''


def marker_env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_MARKERS)
    markers = tmp_path / "markers"
    markers.mkdir()
    code = os.environ.get("PYTHONPATH") or str(ROOT)
    return ({"LOOM_TEST_EXIT_MARKERS": str(markers), "PYTHONPATH": os.pathsep.join((str(hook), code)),
             "LOOM_WARM": "0"}, markers)  # the hook runs in a fresh interpreter only


def session_records(tmp_path: Path) -> list[dict]:
    files = sorted((tmp_path / "data" / "sessions").rglob("*.jsonl"))
    assert len(files) == 1, files
    return [json.loads(line) for line in files[0].read_text().splitlines()]


def test_exit_skips_teardown_but_runs_exit_handlers(workspace: Path, tmp_path: Path,
                                                    fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("all done"))
    extra, markers = marker_env(tmp_path)
    done = loom(["run", "finish up"], workspace, loom_env(tmp_path, fake_llm, **extra))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "all done\n"
    assert (markers / "atexit").exists(), "the exit handlers did not run"
    assert not (markers / "teardown").exists(), "the interpreter tore its modules down after the run"


def test_long_output_and_session_are_complete(workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    answer = "".join(f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(5000))
    fake_llm.enqueue(Reply.tool("read_file", {"path": "README.md"}), Reply(text=answer, chunk_size=4096))
    done = loom(["run", "print a lot", "-o", "loom-stream-json"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-1]["type"] == "finished" and events[-1]["result"] == answer
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == answer

    records = session_records(tmp_path)
    texts = [part.get("text") for r in records if r["type"] == "message"
             for part in r["message"].get("parts", []) if isinstance(part, dict)]
    assert answer in texts, "the final answer is missing from the session file"
    assert records[-1]["type"] == "turn_state" and records[-1].get("run_end"), records[-1]


def test_text_output_through_a_pipe_and_the_exit_code_of_a_failed_run(workspace: Path, tmp_path: Path,
                                                                       fake_llm: FakeLLMServer) -> None:
    answer = "".join(f"row {i}: lorem ipsum dolor sit amet, consectetur adipiscing elit\n" for i in range(3000))
    fake_llm.enqueue(Reply(text=answer, chunk_size=4096))  # more than a pipe holds
    done = loom(["run", "big"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert done.stdout == answer

    fake_llm.enqueue(Reply.tool("read_file", {"path": "README.md"}), Reply.text("never reached"))
    limited = loom(["run", "again", "--max-turns", "1"], workspace, loom_env(tmp_path, fake_llm))
    assert limited.returncode == 3, (limited.stdout, limited.stderr)
    assert "loom:" in limited.stderr


def test_an_answer_cut_off_by_the_output_limit_exits_4(workspace: Path, tmp_path: Path,
                                                       fake_llm: FakeLLMServer) -> None:
    """The installed `loom run`, against the fake server's OpenAI wire (finish_reason
    "length"): the partial answer on stdout, the reason on stderr, exit code 4."""
    fake_llm.enqueue(Reply(text="half an answer", stop_reason="max_tokens"))
    done = loom(["run", "--provider", "openai", "--model", "gpt-4.1-mini", "write a lot"], workspace,
                loom_env(tmp_path, fake_llm, OPENAI_BASE_URL=fake_llm.openai_base_url))
    assert done.returncode == 4, done.stderr
    assert done.stdout == "half an answer\n"
    assert "cut off at the output limit (8,192 tokens" in done.stderr
