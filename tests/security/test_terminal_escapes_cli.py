"""Issue 19 §2.3 on the command line: `loom run` text output, its stderr lines and the
other commands show control characters from outside (``^[``) instead of sending them;
JSON output stays data, escaped by JSON and equal to what the model said."""

from __future__ import annotations

import io
import json
from pathlib import Path

from loom_cli.headless import EXIT_ERROR, EXIT_OK, run_headless
from loom_cli.visible_text import UNSAFE_CHARACTER
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.parts import AgentParts
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env

HOSTILE = ("title \x1b]0;PWNED\x07 clip \x1b]52;c;Y2xpcA==\x1b\\ c1 \x9b2J bidi \u202eevil\u202c "
           "cr one\rtwo crlf\r\nend")
SHOWN = ("title ^[]0;PWNED^G clip ^[]52;c;Y2xpcA==^[\\ c1 <U+009B>2J bidi <U+202E>evil<U+202C> "
         "cr one^Mtwo crlf\nend")


def _agent(tmp_path: Path, *turns: dict[str, object]) -> Agent:
    return Agent(AgentConfig(model="scripted", interactive=False),
                 AgentParts(provider=ScriptedProvider(list(turns)), tools=[], workspace=Workspace.at(tmp_path)))


async def test_text_output_shows_the_answers_control_characters(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert await run_headless(_agent(tmp_path, {"text": HOSTILE}), "hi", "text", out, err) == EXIT_OK
    assert out.getvalue() == SHOWN + "\n"
    assert UNSAFE_CHARACTER.search(out.getvalue()) is None


async def test_json_output_is_left_to_json(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert await run_headless(_agent(tmp_path, {"text": HOSTILE}), "hi", "json", out, err) == EXIT_OK
    assert UNSAFE_CHARACTER.search(out.getvalue()) is None  # JSON escapes them itself ...
    assert json.loads(out.getvalue())["result"] == HOSTILE  # ... and the data is what the model said

    out = io.StringIO()
    assert await run_headless(_agent(tmp_path, {"text": HOSTILE}), "hi", "loom-stream-json", out, err) == EXIT_OK
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == HOSTILE


async def test_stderr_lines_show_the_control_characters_of_an_error(tmp_path: Path) -> None:
    turn = {"error": {"kind": "bad_request", "message": "refused \x1b]0;PWNED\x07 here"}}
    out, err = io.StringIO(), io.StringIO()
    assert await run_headless(_agent(tmp_path, turn), "hi", "text", out, err) == EXIT_ERROR
    assert "refused ^[]0;PWNED^G here" in err.getvalue()
    assert UNSAFE_CHARACTER.search(err.getvalue()) is None


def test_loom_run_prints_the_models_escapes_visibly(workspace: Path, tmp_path: Path,
                                                    fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text(HOSTILE))
    done = loom(["run", "hi"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert done.stdout == SHOWN + "\n"

    fake_llm.enqueue(Reply.text(HOSTILE))
    done = loom(["run", "hi", "-o", "json"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert "\\u001b]0;PWNED\\u0007" in done.stdout
    assert json.loads(done.stdout)["result"] == HOSTILE


def test_other_commands_show_a_projects_escapes_visibly(workspace: Path, tmp_path: Path,
                                                        fake_llm: FakeLLMServer) -> None:
    (workspace / ".mcp.json").write_text(json.dumps(
        {"mcpServers": {"tools\x1b]0;PWNED\x07": {"command": "run\x1b]52;c;Y2xpcA==\x1b\\"}}}))
    done = loom(["mcp", "list"], workspace, loom_env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    assert "tools^[]0;PWNED^G" in done.stdout and "run^[]52;c;Y2xpcA==^[\\" in done.stdout
    assert UNSAFE_CHARACTER.search(done.stdout + done.stderr) is None
