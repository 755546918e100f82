"""`loom run` with real MCP servers: tools, results, resources, failures."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.mcp_servers import ReferenceServers

from .helpers import result_text, run_loom, tool_names, tool_results, write_servers


def test_echo_tool_result_reaches_the_model(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer,
                                            reference_servers: ReferenceServers) -> None:
    fake_llm.enqueue(Reply.tool("mcp__everything__echo", {"message": "hello-mcp"}), Reply.text("echoed"))
    done = run_loom(tmp_path, workspace, fake_llm, ["say it"],
                    user_servers={"everything": reference_servers.everything()})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "echoed"
    first, second = fake_llm.requests
    assert "mcp__everything__echo" in tool_names(first)
    echo = next(t for t in first.body["tools"] if t["name"] == "mcp__everything__echo")
    assert echo["input_schema"]["required"] == ["message"]  # the server's schema, as is
    assert "Echo: hello-mcp" in result_text(second)


def test_structured_content_and_image_and_resource(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer,
                                                   reference_servers: ReferenceServers) -> None:
    fake_llm.enqueue(
        Reply.tool("mcp__everything__get-structured-content", {"location": "Chicago"}),
        Reply.tool("mcp__everything__get-tiny-image", {}),
        Reply.tool("read_mcp_resource", {"server": "everything",
                                         "uri": "demo://resource/static/document/architecture.md"}),
        Reply.text("done"))
    done = run_loom(tmp_path, workspace, fake_llm, ["look"],
                    user_servers={"everything": reference_servers.everything()})
    assert done.returncode == 0, done.stderr
    _, structured, image, resource = fake_llm.requests
    assert '"temperature"' in result_text(structured)
    blocks = tool_results(image)
    assert [b["type"] for b in blocks] == ["tool_result", "image"]
    assert blocks[1]["source"]["media_type"] == "image/png" and blocks[1]["source"]["data"].startswith("iVBOR")
    text = result_text(resource)
    assert "demo://resource/static/document/architecture.md" in text and len(text) > 200


def test_git_status_in_a_temp_repository(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer,
                                         reference_servers: ReferenceServers) -> None:
    (workspace / "new_file.txt").write_text("x\n")
    fake_llm.enqueue(Reply.tool("mcp__git__git_status", {"repo_path": str(workspace)}), Reply.text("ok"))
    done = run_loom(tmp_path, workspace, fake_llm, ["status?", "--allow", "mcp__git"],
                    user_servers={"git": reference_servers.python_server("mcp_server_git")})
    assert done.returncode == 0, done.stderr
    assert "new_file.txt" in result_text(fake_llm.requests[1])


def test_a_server_that_exits_mid_call_and_one_that_never_answers(
        tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer, reference_servers: ReferenceServers) -> None:
    servers = {"bad": {**reference_servers.misbehaving(), "timeout": 2000}}
    fake_llm.enqueue(Reply.tool("mcp__bad__crash", {}), Reply.tool("mcp__bad__peek", {}),
                     Reply.tool("mcp__bad__hang", {}), Reply.text("survived"))
    done = run_loom(tmp_path, workspace, fake_llm, ["try", "--allow", "mcp__bad__*"], user_servers=servers)
    assert done.returncode == 0, done.stderr
    crash, peek, hang = (fake_llm.requests[i] for i in (1, 2, 3))
    crashed = tool_results(crash)[0]
    assert crashed["is_error"] and "exited during the call" in result_text(crash)
    assert "peeked" in result_text(peek)  # restarted, and working again
    hung = tool_results(hang)[0]
    assert hung["is_error"] and "did not answer within 2 s" in result_text(hang)


def test_abort_during_a_call_stops_the_run(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer,
                                           reference_servers: ReferenceServers) -> None:
    from tests.doubles.loom_command import LOOM, loom_env

    mark = tmp_path / "called"
    write_servers(tmp_path / "config" / "mcp.json", {"bad": reference_servers.misbehaving()})
    fake_llm.enqueue(Reply.tool("mcp__bad__hang", {}), Reply.text("never"))
    env = loom_env(tmp_path, fake_llm, MCP_TIMEOUT="60000", MCP_DOUBLE_MARK=str(mark))
    proc = subprocess.Popen([*LOOM, "run", "wait", "--allow", "mcp__bad"], cwd=workspace, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        import time

        deadline = time.monotonic() + 60
        while not mark.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert mark.exists(), "the call never reached the server"
        proc.send_signal(2)  # Ctrl-C
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert len(fake_llm.requests) == 1  # no further request after the abort


def test_broken_project_file_names_each_server_and_others_load(
        tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer, reference_servers: ReferenceServers) -> None:
    write_servers(workspace / ".mcp.json", {
        "weird": {"type": "carrier-pigeon", "command": "x"},
        "untyped": {"url": "http://localhost:9/mcp"},
        "everything": {**reference_servers.everything(), "args": ["${EVERYTHING_JS:-/nowhere}"]},
    })
    fake_llm.enqueue(Reply.tool("mcp__everything__echo", {"message": "still-here"}), Reply.text("ok"))
    done = run_loom(tmp_path, workspace, fake_llm, ["go", "--trust-project-mcp"],
                    EVERYTHING_JS=str(reference_servers.everything_js))
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if ".mcp.json" in line]
    assert any("'weird'" in line and "unknown type 'carrier-pigeon'" in line for line in lines), done.stderr
    assert any("'untyped'" in line and '"url" without "type"' in line for line in lines), done.stderr
    assert "Echo: still-here" in result_text(fake_llm.requests[1])  # ${VAR:-default} expanded


def test_unapproved_project_servers_are_skipped_and_named(
        tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer, reference_servers: ReferenceServers) -> None:
    write_servers(workspace / ".mcp.json", {"everything": reference_servers.everything()})
    fake_llm.enqueue(Reply.text("no tools"))
    done = run_loom(tmp_path, workspace, fake_llm, ["go"])
    assert done.returncode == 0, done.stderr
    assert "project MCP server 'everything'" in done.stderr and "--trust-project-mcp" in done.stderr
    assert not any(n.startswith("mcp__") for n in tool_names(fake_llm.requests[0]))


def test_approved_project_server_is_used(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer,
                                         reference_servers: ReferenceServers) -> None:
    from loom_cli.workspace_records import WorkspaceRecords
    from loom_engine.mcp.config import load_mcp_config

    write_servers(workspace / ".mcp.json", {"everything": reference_servers.everything()})
    entry = load_mcp_config(workspace, tmp_path / "config").servers[0]
    WorkspaceRecords(tmp_path / "data").decide_mcp(workspace, entry.entry_hash, True)
    fake_llm.enqueue(Reply.text("tools"))
    done = run_loom(tmp_path, workspace, fake_llm, ["go"])
    assert done.returncode == 0, done.stderr
    assert "mcp__everything__echo" in tool_names(fake_llm.requests[0])
    assert "not approved" not in done.stderr


def test_mcp_config_file_flag(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer,
                              reference_servers: ReferenceServers) -> None:
    extra = write_servers(tmp_path / "servers.json", {"time": {**reference_servers.python_server("mcp_server_time"),
                                                               "disabled_tools": ["convert_time"]}})
    fake_llm.enqueue(Reply.text("ok"))
    done = run_loom(tmp_path, workspace, fake_llm, ["go", "--mcp-config", str(extra)])
    assert done.returncode == 0, done.stderr
    assert "mcp__time__get_current_time" in tool_names(fake_llm.requests[0])
    assert "mcp__time__convert_time" not in tool_names(fake_llm.requests[0])  # disabled_tools


def test_permissions_headless(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer,
                              reference_servers: ReferenceServers) -> None:
    servers = {"bad": reference_servers.misbehaving(),
               "time": reference_servers.python_server("mcp_server_time")}
    fake_llm.enqueue(Reply.tool("mcp__bad__poke", {"value": "x"}), Reply.tool("mcp__bad__peek", {}),
                     Reply.text("done"))
    done = run_loom(tmp_path, workspace, fake_llm, ["go"], user_servers=servers)
    assert done.returncode == 0, done.stderr
    poke, peek = fake_llm.requests[1], fake_llm.requests[2]
    assert tool_results(poke)[0]["is_error"] and "Refused: this is a non-interactive run" in result_text(poke)
    assert "--allow mcp__bad__poke" in done.stderr  # the flag that would allow it
    assert "peeked" in result_text(peek)  # readOnlyHint: runs in default mode
    fake_llm.enqueue(Reply.tool("mcp__bad__poke", {"value": "x"}), Reply.text("done"))
    done = run_loom(tmp_path, workspace, fake_llm, ["go", "--allow", "mcp__bad__*"], user_servers=servers)
    assert done.returncode == 0, done.stderr
    assert "poked x" in result_text(fake_llm.requests[-1])


def test_filesystem_server_lists_the_workspace(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer,
                                               reference_servers: ReferenceServers) -> None:
    fake_llm.enqueue(Reply.tool("mcp__filesystem__list_directory", {"path": str(workspace)}), Reply.text("ok"))
    done = run_loom(tmp_path, workspace, fake_llm, ["ls", "--allow", "mcp__filesystem"],
                    user_servers={"filesystem": reference_servers.filesystem(workspace)})
    assert done.returncode == 0, done.stderr
    assert "README.md" in result_text(fake_llm.requests[1])


def test_prompt_as_a_slash_command(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer,
                                   reference_servers: ReferenceServers) -> None:
    servers = {"everything": reference_servers.everything()}
    fake_llm.enqueue(Reply.text("sunny"))
    done = run_loom(tmp_path, workspace, fake_llm, ["/mcp__everything__args-prompt Paris state=Texas"],
                    user_servers=servers)
    assert done.returncode == 0, done.stderr
    sent = json.dumps(fake_llm.requests[0].messages[0])
    assert "Paris" in sent and "Texas" in sent and "args-prompt" not in sent
    done = run_loom(tmp_path, workspace, fake_llm, ["/mcp__everything__args-prompt"], user_servers=servers)
    assert done.returncode == 2
    assert "/mcp__everything__args-prompt needs city" in done.stderr


def test_resource_mention_attaches_the_resource(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer,
                                                reference_servers: ReferenceServers) -> None:
    fake_llm.enqueue(Reply.text("read it"))
    uri = "demo://resource/static/document/architecture.md"
    done = run_loom(tmp_path, workspace, fake_llm, [f"summarize @everything:{uri}, and @everything:nope://x"],
                    user_servers={"everything": reference_servers.everything()})
    assert done.returncode == 0, done.stderr
    sent = json.dumps(fake_llm.requests[0].messages[0])
    assert f'<attached path=\\"everything:{uri}\\">' in sent
    assert "everything:nope://x was not attached" in sent


def test_a_server_that_fails_to_start_is_named_with_what_it_said(
        tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer, reference_servers: ReferenceServers) -> None:
    import sys

    servers = {"broken": {"command": sys.executable, "args": ["-c", "import sys; sys.exit('no token given')"]},
               "everything": reference_servers.everything()}
    fake_llm.enqueue(Reply.text("fine"))
    done = run_loom(tmp_path, workspace, fake_llm, ["go"], user_servers=servers)
    assert done.returncode == 0, done.stderr
    assert "loom: MCP server 'broken' failed: the server exited: no token given" in done.stderr
    assert done.stderr.count("no token given") == 1  # the server's own stderr is not passed through
    assert "mcp__everything__echo" in tool_names(fake_llm.requests[0])


def test_big_output_is_saved_in_the_session_folder_and_readable(
        tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer, reference_servers: ReferenceServers,
        monkeypatch: pytest.MonkeyPatch) -> None:
    uri = "demo://resource/static/document/architecture.md"
    fake_llm.enqueue(Reply.tool("read_mcp_resource", {"server": "everything", "uri": uri}), Reply.text("ok"))
    done = run_loom(tmp_path, workspace, fake_llm, ["read"], MAX_MCP_OUTPUT_TOKENS="100",
                    user_servers={"everything": reference_servers.everything()})
    assert done.returncode == 0, done.stderr
    (saved,) = (tmp_path / "data" / "sessions").glob("*/mcp-output/*.txt")
    assert str(saved) in result_text(fake_llm.requests[1])
    # The model may read the file back without a question, in a headless run too.
    from loom_cli.bootstrap import RunOptions, build_agent
    from loom_engine.permissions.targets import FileAccess

    for name, value in loom_env_for(tmp_path, fake_llm).items():
        monkeypatch.setenv(name, value)
    built = build_agent(RunOptions(cwd=workspace), interactive=False)
    try:
        spill = Path(built.agent.session.path).with_suffix("") / "mcp-output" / "x.txt"
        decision = built.agent.permissions.check("read_file", FileAccess((str(spill),), write=False),
                                                 is_read_only=True)
        assert decision.behavior == "allow", decision.reason
    finally:
        built.agent.session.close()


def loom_env_for(tmp_path: Path, server: FakeLLMServer) -> dict[str, str]:
    from tests.doubles.loom_command import loom_env

    return {k: v for k, v in loom_env(tmp_path, server).items() if k.startswith(("LOOM_", "ANTHROPIC_"))}


def test_a_server_does_not_inherit_looms_own_credentials(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer,
                                                         reference_servers: ReferenceServers) -> None:
    # Loom's provider key would otherwise reach every MCP program; one the entry names
    # on purpose (`env`) still does, and the rest of the environment too.
    everything = {**reference_servers.everything(), "env": {"PASSED_ON_PURPOSE": "${OPENAI_API_KEY:-none}"}}
    fake_llm.enqueue(Reply.tool("mcp__everything__get-env", {}), Reply.text("seen"))
    done = run_loom(tmp_path, workspace, fake_llm, ["show the environment"], user_servers={"everything": everything},
                    OPENAI_API_KEY="sk-openai-for-this-test-0123456789", UNRELATED_SETTING="kept")
    assert done.returncode == 0, done.stderr
    seen = result_text(fake_llm.requests[1])
    assert "UNRELATED_SETTING" in seen and "PASSED_ON_PURPOSE" in seen
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "LOOM_DATA_DIR"):
        assert f'"{name}"' not in seen, name
