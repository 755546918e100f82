"""Secrets leaking out of Loom (issue 9, items 11, 12 and 13).

Private keys generated at test time (RSA, EC, OpenSSH, PKCS#8, encrypted) are shown
through the real tools in every presentation Loom produces — read_file whole and
through windows, `cat -n`, grep/rg with line numbers and context, the streamed progress
of a command — and no line of key material may come out of the redaction the
pipeline applies. The end-to-end tests run the installed `loom run` against the fake
LLM server and look at what the model got, the session file and stream-json stdout.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from builtin_tools.bash import BashTool
from builtin_tools.grep import GrepTool
from builtin_tools.read_file import ReadFileTool
from loom_engine.execution import CancelToken
from loom_engine.redact import Redactor, redact_secrets
from loom_engine.tools.base import Tool, ToolContext, ToolSessionState
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import LOOM_SCRIPT
from tests.doubles.loom_command import loom_env as command_env

# name -> the command that writes a fresh key to the path given last.
KEY_MAKERS: dict[str, list[str]] = {
    "rsa-pem": ["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-m", "PEM", "-N", "", "-f"],
    "openssh-ed25519": ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f"],
    "openssh-rsa": ["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f"],
    "openssh-encrypted": ["ssh-keygen", "-q", "-t", "ed25519", "-N", "correct horse", "-f"],
    "ec": ["openssl", "ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out"],
    "pkcs8": ["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out"],
    "pkcs8-encrypted": ["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                        "-aes256", "-pass", "pass:hunter22", "-out"],
    "rsa-encrypted": ["openssl", "genrsa", "-traditional", "-aes128", "-passout", "pass:hunter22",
                      "-out", "{path}", "2048"],
}


def make_key(kind: str, path: Path) -> str:
    argv = KEY_MAKERS[kind]
    if shutil.which(argv[0]) is None:
        pytest.skip(f"{argv[0]} is not installed")
    argv = [str(path) if a == "{path}" else a for a in argv] + ([] if "{path}" in argv else [str(path)])
    subprocess.run(argv, check=True, capture_output=True)
    text = path.read_text()
    assert "PRIVATE KEY-----" in text
    return text


def key_material(key: str) -> list[str]:
    """Every line of the key that is secret: the base64 body (not markers or headers)."""
    lines = [line.strip() for line in key.splitlines()]
    body = [line for line in lines if line and "-----" not in line and ":" not in line]
    assert len(body) >= 3
    return body


def leaks(text: str, key: str) -> list[str]:
    return [line for line in key_material(key) if len(line) >= 4 and line in text]


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("keys")
    return {kind: make_key(kind, folder / kind) for kind in KEY_MAKERS}


# --------------------------------------------------------------------------- presentations

def context(root: Path, progress: Callable[[str], None] = lambda line: None) -> ToolContext:
    return ToolContext(workspace=Workspace.at(root), cancel=CancelToken(), state=ToolSessionState(),
                       progress=progress)


# (tool, arguments) with {key} for the key file's name.
def presentations(key: str) -> list[tuple[str, dict[str, Any]]]:
    lines = key.splitlines()
    first_body = next(n for n, line in enumerate(lines, 1) if line in key_material(key))
    return [
        ("read_file", {"path": "{key}"}),
        ("read_file", {"path": "{key}", "offset": 3}),  # END without BEGIN
        ("read_file", {"path": "{key}", "limit": 3}),  # BEGIN without END
        ("read_file", {"path": "{key}", "offset": first_body + 1, "limit": 2}),  # only the middle
        ("read_file", {"path": "{key}", "offset": len(lines) - 1}),  # the last line and END
        ("bash", {"command": "cat -n {key}"}),
        ("bash", {"command": "cat {key}"}),
        ("bash", {"command": "grep -A3 BEGIN {key}"}),
        ("bash", {"command": "grep -n . {key}"}),
        ("bash", {"command": "grep -n -A3 BEGIN {key} other.txt"}),  # path:1: and path-2-
        ("bash", {"command": "grep -v -- ----- {key}"}),  # no marker at all
        ("bash", {"command": "tail -n 3 {key}"}),
        ("bash", {"command": "sed -n 3,6p {key}"}),
        ("bash", {"command": "tail -n 3 {key} | cat -n"}),
        ("bash", {"command": "diff /dev/null {key}"}),  # `> ` before each line
        ("bash", {"command": "rg -n -A3 BEGIN {key}"}),
        ("bash", {"command": "rg --no-heading -n -B2 END ."}),
        ("grep", {"pattern": "BEGIN", "output_mode": "content", "after": 3}),
        ("grep", {"pattern": ".", "output_mode": "content", "path": "{key}"}),
        ("grep", {"pattern": "END", "output_mode": "content", "before": 2}),
    ]


TOOLS: dict[str, Tool] = {"read_file": ReadFileTool(), "bash": BashTool(), "grep": GrepTool()}


def fill(arguments: dict[str, Any], key_name: str) -> dict[str, Any]:
    return {k: v.replace("{key}", key_name) if isinstance(v, str) else v for k, v in arguments.items()}


async def show(tool_name: str, arguments: dict[str, Any], root: Path) -> tuple[str, list[str]]:
    """The tool's raw result text and its raw progress lines."""
    progress: list[str] = []
    tool = TOOLS[tool_name]
    output = await tool.run(tool.input_model.model_validate(arguments), context(root, progress.append))
    return output.content, progress


@pytest.mark.parametrize("kind", sorted(KEY_MAKERS))
async def test_no_line_of_a_key_survives_any_presentation(kind: str, keys: dict[str, str],
                                                          tmp_path: Path) -> None:
    key = keys[kind]
    (tmp_path / "id_key").write_text(key)
    (tmp_path / "other.txt").write_text("nothing to see\n")
    redactor = Redactor()
    cases = [(tool_name, arguments) for tool_name, arguments in presentations(key)
             if not (tool_name == "bash" and arguments["command"].startswith("rg") and shutil.which("rg") is None)]
    failures = []
    for tool_name, arguments in cases:
        raw, progress = await show(tool_name, fill(arguments, "id_key"), tmp_path)
        assert leaks(raw, key) or "BEGIN" in raw or "END" in raw, (tool_name, arguments, raw)  # it showed the key
        shown = redactor.redact(raw)
        stream = redactor.lines()
        streamed = "\n".join(stream(line) for line in progress)
        if leaks(shown, key) or leaks(streamed, key):
            failures.append((tool_name, arguments, leaks(shown, key)[:1], leaks(streamed, key)[:1]))
    assert not failures, f"{len(failures)} of {len(cases)} presentations leaked: {failures}"


def _rewrapped(key: str, width: int) -> str:
    """The same key with its base64 wrapped at ``width`` columns (MIME encoders use 76)."""
    lines = key.splitlines()
    body = "".join(line for line in lines if line in key_material(key))
    wrapped = [body[i:i + width] for i in range(0, len(body), width)]
    return "\n".join([lines[0], *wrapped, lines[-1]]) + "\n"


@pytest.mark.parametrize("kind", [*sorted(KEY_MAKERS), "pkcs8-at-76-columns"])
async def test_every_window_that_starts_inside_a_key_is_redacted(kind: str, keys: dict[str, str],
                                                                 tmp_path: Path) -> None:
    """Issue 19, item 14: read_file with any offset and a limit of 1 to 3. A window that
    starts inside the block (its short last line alone, a stretch of a key wrapped at 76
    columns) has neither marker nor a line of PEM width to go by: read_file names the
    block's BEGIN above the window, and nothing of the key comes out of the redaction."""
    key = _rewrapped(keys["pkcs8"], 76) if kind == "pkcs8-at-76-columns" else keys[kind]
    (tmp_path / "id_key").write_text("# a deploy key\n" + key + "after the key\n")
    redactor = Redactor()
    total = len(key.splitlines()) + 2
    failures = []
    for offset in range(1, total + 1):
        for limit in (1, 2, 3):
            raw, _ = await show("read_file", {"path": "id_key", "offset": offset, "limit": limit}, tmp_path)
            if leaks(redactor.redact(raw), key):
                failures.append((offset, limit, leaks(redactor.redact(raw), key)[0]))
    assert not failures, f"{len(failures)} windows leaked: {failures[:5]}"
    raw, _ = await show("read_file", {"path": "id_key", "offset": 4, "limit": 1}, tmp_path)
    assert raw.startswith("(Line 4 is inside a private key block that starts above it: -----BEGIN ")
    after, _ = await show("read_file", {"path": "id_key", "offset": total, "limit": 1}, tmp_path)
    assert after == f"{total:>6}\tafter the key"  # past the END: no note


def test_rg_with_headings(keys: dict[str, str]) -> None:
    """rg's grouped form: the path on its own line, then `12:` matches and `13-` context."""
    key = keys["openssh-rsa"]
    lines = key.splitlines()
    shown = "id_key\n" + "\n".join(f"{n}{'-' if n > 2 else ':'}{line}" for n, line in enumerate(lines[1:6], 2))
    assert leaks(shown, key) and not leaks(redact_secrets(shown), key)


def test_the_same_key_in_a_json_transcript_line_is_redacted(keys: dict[str, str]) -> None:
    """The session file redacts each JSON line: numbered lines arrive with escaped breaks and tabs."""
    key = keys["rsa-pem"]
    numbered = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(key.splitlines()[2:], 3))
    line = json.dumps({"type": "message", "content": numbered})
    assert leaks(line, key)
    assert not leaks(redact_secrets(line), key)


def test_a_certificate_is_not_taken_for_a_key(tmp_path: Path) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(tmp_path / "k"), "-out", str(tmp_path / "c"), "-subj", "/CN=test", "-days", "1"],
                   check=True, capture_output=True)
    cert = (tmp_path / "c").read_text()
    numbered = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(cert.splitlines(), 1))
    assert redact_secrets(numbered) == numbered
    tail = "\n".join(numbered.splitlines()[3:])  # END CERTIFICATE with no BEGIN
    assert redact_secrets(tail) == tail


@pytest.mark.parametrize("text", [
    "\n".join(["a3f1" * 16] * 4),  # sha256 digests, one per line
    "\n".join(["abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl"] * 3),
    "Files start with '-----BEGIN RSA PRIVATE KEY-----'.\nThen comes the end of the story.",
])
def test_ordinary_lines_are_left_alone(text: str) -> None:
    assert redact_secrets(text) == text


# --------------------------------------------------------------------------- loom run, end to end

def loom_env(tmp_path: Path, server: FakeLLMServer, **extra: str) -> dict[str, str]:
    return command_env(tmp_path, server, api_key="test-key-0000", **extra)


def run_loom(tmp_path: Path, repo: Path, server: FakeLLMServer, **env: str) -> tuple[str, str, str, str]:
    """(stdout, stderr, the session files, what the model was sent) of one stream-json run."""
    done = subprocess.run([*LOOM_SCRIPT, "run", "go", "-o", "loom-stream-json", "--permission-mode", "bypass"],
                          cwd=repo, env=loom_env(tmp_path, server, **env), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    sessions = "".join(p.read_text() for p in (tmp_path / "data").rglob("*.jsonl"))
    assert sessions
    sent = json.dumps([request.body for request in server.requests])
    return done.stdout, done.stderr, sessions, sent


@pytest.fixture
def repo(workspace: Path) -> Path:
    return workspace


def test_stream_json_never_prints_the_api_keys_loom_holds(repo: Path, tmp_path: Path,
                                                          fake_llm: FakeLLMServer) -> None:
    # Values of no known shape: only the exact-value rule can find them.
    anthropic_key, openai_key = "LoomTestKey-5e1d9c7a3b", "OpenAiTestKey-8f2e6d4c0a"
    commands = ["printenv", 'echo "$ANTHROPIC_API_KEY"', "echo $ANTHROPIC_API_KEY | tr a-z A-Z",
                'echo "https://x/?k=$OPENAI_API_KEY"', "env | grep -i key; echo done"]
    fake_llm.enqueue(*[Reply.tool("bash", {"command": c}) for c in commands], Reply.text("all done"))
    stdout, stderr, sessions, sent = run_loom(tmp_path, repo, fake_llm, ANTHROPIC_API_KEY=anthropic_key,
                                              OPENAI_API_KEY=openai_key)
    events = [json.loads(line) for line in stdout.splitlines()]
    assert sum(e["type"] == "tool_progress" for e in events) >= len(commands)
    assert "[REDACTED:api-key]" in stdout
    for where, text in (("stdout", stdout), ("stderr", stderr), ("session", sessions), ("model", sent)):
        for key in (anthropic_key, openai_key):
            assert key.lower() not in text.lower(), f"{key} reached {where}"


def test_a_key_the_model_streams_in_pieces_is_redacted_whole(repo: Path, tmp_path: Path,
                                                             fake_llm: FakeLLMServer) -> None:
    # Each piece alone is no key: the deltas go out in whole lines, redacted as one.
    key = "LoomTestKey-5e1d9c7a3b"
    fake_llm.enqueue(Reply.text(f"Your key is {key}.\nAnd a last line", chunk_size=4))
    stdout, _, _, _ = run_loom(tmp_path, repo, fake_llm, ANTHROPIC_API_KEY=key)
    events = [json.loads(line) for line in stdout.splitlines()]
    streamed = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert streamed == "Your key is [REDACTED:api-key].\nAnd a last line", streamed


def test_private_keys_never_reach_the_model_the_session_or_stdout(repo: Path, tmp_path: Path,
                                                                   fake_llm: FakeLLMServer,
                                                                   keys: dict[str, str]) -> None:
    replies = []
    for kind, key in keys.items():
        (repo / kind).write_text(key)
        calls = [(name, fill(arguments, kind)) for name, arguments in presentations(key)
                 if name != "bash" or not arguments["command"].startswith("rg")]
        replies.append(Reply.tools(*calls))
    fake_llm.enqueue(*replies, Reply.text("seen them"))
    stdout, stderr, sessions, sent = run_loom(tmp_path, repo, fake_llm)
    assert stdout.count('"type": "tool_progress"') > 50 and "[REDACTED:private-key]" in sent
    found = {where: [kind for kind, key in keys.items() if leaks(text, key)]
             for where, text in (("stdout", stdout), ("stderr", stderr), ("session", sessions), ("model", sent))}
    assert found == {"stdout": [], "stderr": [], "session": [], "model": []}


def test_the_session_file_drops_the_exact_api_key_from_prompts_and_answers(tmp_path: Path) -> None:
    """A key of no known shape, typed by the user or echoed by the model, never reaches disk."""
    from loom_engine.messages import Message, TextPart
    from loom_engine.redact import Redactor
    from loom_engine.sessions.store import SessionStore

    key = "zz-custom-Key-0123456789abcdef"
    store = SessionStore(tmp_path / "sessions")
    writer = store.create(tmp_path, provider="anthropic", model="m", redactor=Redactor.for_values([key]))
    writer.append_message(Message.user(f"my key is {key.upper()}"))
    writer.append_message(Message.assistant(TextPart(f"noted: {key}")))
    writer.close()
    saved = (tmp_path / "sessions").rglob("*.jsonl")
    text = "".join(p.read_text() for p in saved)
    assert key.lower() not in text.lower()
    assert "REDACTED" in text
