"""End to end: the installed `loom run` against the fake LLM server, in a temp git repo."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.fake_web import local_site
from tests.doubles.loom_command import LOOM, loom, loom_env
from tests.doubles.processes import marked_sleep, running_with


@pytest.fixture
def repo(workspace: Path) -> Path:
    (workspace / "hello.py").write_text("print('hello from the repo')\n")
    return workspace


def test_read_bash_answer_json_and_continue(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool("read_file", {"path": "hello.py"}),
                     Reply.tool("bash", {"command": "python hello.py"}),
                     Reply.text("The script prints a greeting."))
    env = loom_env(tmp_path, fake_llm)
    done = loom(["run", "what does hello.py print?", "--output-format", "json",
                 "--allow", "bash(python hello.py)"], repo, env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["result"] == "The script prints a greeting."
    assert result["is_error"] is False and result["num_turns"] == 3
    assert result["usage"]["input_tokens"] > 0 and result["session_id"]
    assert set(result) >= {"total_cost_usd", "duration_ms", "usage", "session_id", "subtype", "permission_denials"}
    tool_results = [b for m in fake_llm.requests[2].body["messages"] for b in m["content"]
                    if isinstance(b, dict) and b.get("type") == "tool_result"]
    contents = json.dumps([b["content"] for b in tool_results])
    assert "print('hello from the repo')" in contents and "hello from the repo" in contents

    fake_llm.enqueue(Reply.text("Still a greeting."))
    again = loom(["run", "and now?", "--continue"], repo, env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "Still a greeting."
    history = fake_llm.requests[-1].body["messages"]
    texts = json.dumps(history)
    assert "what does hello.py print?" in texts and "The script prints a greeting." in texts
    assert "and now?" in texts


def test_stream_json_prints_one_typed_object_per_line(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("hi there"))
    done = loom(["run", "hi", "-o", "stream-json"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    messages = [json.loads(line) for line in done.stdout.splitlines()]
    assert [m["type"] for m in messages] == ["system", "assistant", "result"]  # as claude -p prints them
    assert messages[1]["message"]["content"] == [{"type": "text", "text": "hi there"}]
    assert messages[-1]["result"] == "hi there" and messages[-1]["subtype"] == "success"


def test_loom_stream_json_prints_loom_s_events(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("hi there"))
    done = loom(["run", "hi", "-o", "loom-stream-json"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "system" and types[1] == "turn_started" and types[-1] == "finished"
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == "hi there"


def test_headless_denial_names_the_flag(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool("bash", {"command": "touch made.txt"}), Reply.text("could not"))
    done = loom(["run", "make a file"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0
    assert not (repo / "made.txt").exists()
    assert "--allow" in done.stderr or "--permission-mode" in done.stderr


def test_web_fetch_is_denied_headless_until_the_host_is_allowed(repo: Path, tmp_path: Path,
                                                                  fake_llm: FakeLLMServer) -> None:
    page = b"<html><head><title>Release notes</title></head><body><main><p>Version 2 is out.</p></main></body></html>"
    with local_site({"/notes": (200, {"Content-Type": "text/html"}, page)}) as site:
        url = f"{site}/notes"
        fake_llm.enqueue(Reply.tool("web_fetch", {"url": url}), Reply.text("could not read it"))
        done = loom(["run", "what is new?"], repo, loom_env(tmp_path, fake_llm))
        assert done.returncode == 0
        assert "--allow 'web_fetch(domain:127.0.0.1)'" in done.stderr
        assert "Refused: this is a non-interactive run" in json.dumps(fake_llm.requests[-1].body["messages"][-1])

        fake_llm.enqueue(Reply.tool("web_fetch", {"url": url}), Reply.text("Version 2 is out."))
        done = loom(["run", "what is new?", "--allow", "web_fetch(domain:127.0.0.1)"], repo,
                    loom_env(tmp_path, fake_llm))
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "Version 2 is out."
        sent = json.dumps(fake_llm.requests[-1].body["messages"][-1])
        assert "# Release notes" in sent and "Version 2 is out." in sent


@pytest.mark.parametrize("args,env_extra,code,message", [
    (["run", "x", "--output-format", "yaml"], {}, 2, "yaml"),
    (["run", "x", "--allow", "bash("], {}, 2, "bash("),
    (["run", "x"], {"ANTHROPIC_API_KEY": ""}, 1, "ANTHROPIC_API_KEY"),
    (["run", "x", "--resume", "nope"], {}, 1, "nope"),
    (["run", "x"], {"LOOM_PROVIDER": "bogus"}, 1, "LOOM_PROVIDER"),
    (["run", "x", "--provider", "bogus"], {}, 2, "bogus"),
    (["run", "x", "--provider", "openai", "--model", "m"], {"OPENAI_BASE_URL": "ftp://x"}, 2, "ftp://x"),
])
def test_bad_input_is_one_line_no_traceback(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer,
                                            args: list[str], env_extra: dict[str, str], code: int,
                                            message: str) -> None:
    env = loom_env(tmp_path, fake_llm, **env_extra)
    if env_extra.get("ANTHROPIC_API_KEY") == "":
        # Anthropic's own API needs a key (a custom base URL, like the fake server's, does not).
        del env["ANTHROPIC_API_KEY"], env["ANTHROPIC_BASE_URL"]
    done = loom(args, repo, env)
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    assert message in done.stderr


def test_unreachable_base_url_and_unknown_model(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    env = loom_env(tmp_path, fake_llm, ANTHROPIC_BASE_URL="http://127.0.0.1:9")
    done = loom(["run", "x"], repo, env, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "127.0.0.1:9" in done.stderr
    fake_llm.enqueue(Reply.error(404, "model: no-such-model", type="not_found_error"))
    done = loom(["run", "x", "--model", "no-such-model"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 1 and "no-such-model" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_max_turns_exits_3(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool("read_file", {"path": "hello.py"}), Reply.tool("read_file", {"path": "hello.py"}))
    done = loom(["run", "x", "--max-turns", "1"], repo, loom_env(tmp_path, fake_llm))
    assert done.returncode == 3 and "limit of 1 turn\n" in done.stderr


def _interrupt(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer, wait_for: str, marker: str = "") -> None:
    """Interrupt `loom run` once ``wait_for`` has streamed (and, with ``marker``, once that
    command is running). What is interrupted lasts far longer than the bounds here, so an
    exit within them is the interrupt's doing, however slow the machine."""
    env = loom_env(tmp_path, fake_llm)
    proc = subprocess.Popen([*LOOM, "run", "go", "--allow", "bash(sleep:*)", "-o", "loom-stream-json"], cwd=repo,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60  # a bound on a hang
    seen = ""
    assert proc.stdout is not None
    while wait_for not in seen and time.monotonic() < deadline:
        seen += proc.stdout.readline()
    assert wait_for in seen
    while marker and not running_with(marker):  # the command itself is running, not just announced
        assert time.monotonic() < deadline, f"{marker!r} never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=60)  # the stream and the command each last minutes
    assert code == 130
    if marker:
        assert running_with(marker) == []
    fake_llm.enqueue(Reply.text("resumed"))
    done = loom(["run", "continue please", "--continue"], repo, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "resumed"
    assert "interrupted" in json.dumps(fake_llm.requests[-1].body["messages"]).lower()


def test_sigint_during_stream(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    # 200 s of stream; text_delta comes a line at a time (held whole for the redactor).
    fake_llm.enqueue(Reply.text("word\n" * 400, chunk_size=5, chunk_delay=0.5))
    _interrupt(repo, tmp_path, fake_llm, "text_delta")


def test_sigint_during_bash(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    marker = marked_sleep()  # this test's own sleep
    fake_llm.enqueue(Reply.tool("bash", {"command": marker}))
    _interrupt(repo, tmp_path, fake_llm, "tool_call_started", marker)


def test_version_and_sessions(repo: Path, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    env = loom_env(tmp_path, fake_llm)
    assert loom(["--version"], repo, env).stdout.startswith("loom ")
    fake_llm.enqueue(Reply.text("ok"))
    assert loom(["run", "list me"], repo, env).returncode == 0
    bad = tmp_path / "data" / "sessions" / "garbage.jsonl"
    bad.write_text("nonsense\n")
    listing = loom(["sessions"], repo, env)
    assert listing.returncode == 0 and "list me" in listing.stdout
    assert "garbage.jsonl" in listing.stderr
    shown = loom(["config"], repo, env)
    assert "sessions dir" in shown.stdout and str(tmp_path / "data") in shown.stdout
